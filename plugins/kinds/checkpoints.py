"""Where a source of batches is, and how to start it again there: what ``state_dict()`` and
``load_state_dict()`` of a converted iterator are built on.

A :class:`Checkpointer` is made for one source (a DataLoader, a StatefulDataLoader, a Grain
iterator, a Hugging Face IterableDataset, ...) by :func:`checkpointer`. The converted
iterator (``Batches`` in iterators.py) asks it for each pass and, after batches are pulled,
for the position; it never looks inside the source itself. A source that cannot checkpoint
gets the reason instead, which ``state_dict()`` raises: never a state that resumes wrong.
Imports no framework at module level.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterator
from typing import Any, Protocol


class Checkpointer(Protocol):
    """The position of one source of batches, read and restored."""

    #: What the source is and how it is checkpointed, for messages and the state itself
    #: ("torch DataLoader: the sampler's order and position").
    name: str
    #: ``position(n)`` reads no live state of the source: it is right for any ``n`` up to
    #: the batches pulled, at any time. A prefetching iterator then asks it only when
    #: ``state_dict()`` is called, instead of after every batch.
    replayable: bool

    def begin(self, state: dict[str, Any] | None) -> Iterator[Any]:
        """Start a pass over the source. ``state`` None: a new pass, drawing its randomness
        exactly as iterating the source itself would (a user who never asks for a state sees
        the same batches as without interop_core). Else resume where :meth:`position` said:
        the pass yields the batch after the ones counted in the state."""
        ...

    def position(self, produced: int) -> dict[str, Any]:
        """The state of the current pass after it produced ``produced`` batches (the last
        ``begin`` included those a resumed pass skipped): a plain picklable dict that
        :meth:`begin` of a checkpointer of a source built the same way, in another process,
        resumes from. Called on the thread that pulls batches, right after a batch (or right
        after ``begin`` with the count it starts at), never while the pass is being
        advanced. Raises :class:`CheckpointError` where the source turns out, once asked,
        unable to record this pass (TensorFlow says so only when it saves an iterator): the
        converted iterator raises it from ``state_dict()``; the pass itself goes on."""
        ...


def checkpointer(source: Any) -> Checkpointer | str:
    """The checkpointer for ``source``, or the reason it cannot be checkpointed (said by
    ``state_dict()``: what the source is, why, and what the user can do).

    Sources are told apart by the paths of their classes (no framework is imported to look):
    torchdata's StatefulDataLoader, torch's DataLoader (map-style, or over a Hugging Face
    IterableDataset), a Hugging Face IterableDataset, Grain datasets and iterators,
    tf.data datasets and iterators, and DALI iterators over checkpointing pipelines."""
    paths = type_paths(source)
    for path, make in _CHECKPOINTERS:
        if path in paths:
            return make(source)
    if isinstance(source, types.GeneratorType):
        return (
            f"a generator ({source.__qualname__}) cannot be checkpointed: its position is "
            "inside a running Python function, which cannot be saved. Convert a source that "
            "can start again where it was: a map-style torch DataLoader, torchdata's "
            "StatefulDataLoader, a Grain dataset, a Hugging Face IterableDataset or a "
            "tf.data Dataset"
        )
    if any(p.startswith("torch.utils.data.dataloader._") and "Iter" in p for p in paths):
        return (
            "an iterator of a torch DataLoader (iter(loader)) cannot be checkpointed: its "
            "sampler has drawn its order already. Convert the DataLoader itself"
        )
    return (
        f"a {type(source).__module__}.{type(source).__qualname__} cannot be checkpointed: "
        "interop_core does not know how to record its position. Convert a source that can "
        "(a map-style torch DataLoader, torchdata's StatefulDataLoader, a Grain dataset or "
        "iterator, a Hugging Face IterableDataset, a tf.data Dataset, a DALI pipeline with "
        "enable_checkpointing=True)"
    )


def type_paths(obj: Any) -> frozenset[str]:
    """The ``module.qualname`` of the class of ``obj`` and of each of its bases."""
    return frozenset(f"{c.__module__}.{c.__qualname__}" for c in type(obj).__mro__)


# -- sources that keep their own state -----------------------------------------------------


class OwnState:
    """A source whose position is its own state (the StatefulDataLoader's ``state_dict()``,
    a Grain iterator's ``get_state()``): a state is ``{"state": <the source's own>}``.

    ``start(source)`` begins a pass; ``save(pass)`` reads the state of the pass in progress
    (``pass``: what ``start`` or ``restore`` returned); ``restore(source, state)`` begins a
    pass there."""

    def __init__(
        self,
        source: Any,
        name: str,
        start: Callable[[Any], Iterator[Any]],
        save: Callable[[Any], Any],
        restore: Callable[[Any, Any], Iterator[Any]],
    ) -> None:
        self.source, self.name = source, name
        self.replayable = False  # the source's own state, read live
        self._start, self._save, self._restore = start, save, restore
        self._pass: Any = None

    def begin(self, state: dict[str, Any] | None) -> Iterator[Any]:
        it = self._start(self.source) if state is None else self._restore(self.source, state)
        self._pass = it
        return it

    def position(self, produced: int) -> dict[str, Any]:
        return {"state": self._save(self._pass)}


def _stateful_loader(loader: Any) -> OwnState:
    """torchdata's StatefulDataLoader: its own ``state_dict()`` (of its iterator in
    progress), loaded by ``load_state_dict()`` for its next ``iter()``."""

    def restore(loader: Any, state: dict[str, Any]) -> Iterator[Any]:
        loader.load_state_dict(state["state"])
        return iter(loader)

    return OwnState(
        loader,
        "torchdata StatefulDataLoader: its own state_dict()",
        iter,
        lambda _: loader.state_dict(),
        restore,
    )


def _grain(source: Any) -> OwnState:
    """A Grain iterator (``DatasetIterator``, ``grain.DataLoader``'s), or a Grain dataset or
    DataLoader whose passes are such iterators: their own ``get_state()``/``set_state()``."""
    one_pass = isinstance(source, Iterator)

    def restore(source: Any, state: dict[str, Any]) -> Iterator[Any]:
        it = source if one_pass else iter(source)
        it.set_state(state["state"])
        return it  # type: ignore[no-any-return]

    return OwnState(
        source,
        "Grain iterator: its own get_state()",
        lambda s: s if one_pass else iter(s),
        lambda it: it.get_state(),
        restore,
    )


def _torch_loader(loader: Any) -> Checkpointer | str:
    from .checkpoints_hf import hf_loader_checkpointer
    from .checkpoints_torch import map_checkpointer

    if f"{type(loader).__module__}.{type(loader).__qualname__}" != DATALOADER:
        return (
            f"a {type(loader).__qualname__} (a subclass of torch's DataLoader) cannot be "
            "checkpointed: it may draw its order otherwise than torch's DataLoader. Use "
            "torch's DataLoader or torchdata's StatefulDataLoader"
        )
    dataset = loader.dataset
    if HF_DATASET in type_paths(dataset):
        return hf_loader_checkpointer(loader)
    if hasattr(dataset, "__getitem__") and not _is_iterable_dataset(dataset):
        return map_checkpointer(loader)
    return (
        f"a torch DataLoader over an IterableDataset ({type(dataset).__name__}) cannot "
        "be checkpointed: its position is inside the dataset's own iterator, which the "
        "DataLoader does not record. Use torchdata's StatefulDataLoader (with a dataset that "
        "has state_dict() and load_state_dict()), or a map-style dataset"
    )


def _is_iterable_dataset(dataset: Any) -> bool:
    return "torch.utils.data.dataset.IterableDataset" in type_paths(dataset)


def _hf_dataset(dataset: Any) -> Checkpointer | str:
    from .checkpoints_hf import hf_checkpointer

    return hf_checkpointer(dataset)


def _tf(source: Any) -> Checkpointer | str:
    from .checkpoints_tf import tf_checkpointer

    return tf_checkpointer(source)


def _dali(source: Any) -> Checkpointer | str:
    """A DALI iterator made by interop_core: DALI's ``checkpoints()``, restored by building
    its pipelines again from them (DALI restores readers and random generators only when a
    pipeline is built)."""
    if not source._enable_checkpointing:
        return (
            "this DALI pipeline's iterator cannot be checkpointed: the pipeline was built "
            "without enable_checkpointing=True, so DALI records neither its readers' "
            "positions nor its random generators. Build it with "
            "@pipeline_def(enable_checkpointing=True)"
        )
    if getattr(source, "_remake", None) is None:
        return (
            "this DALI iterator cannot be checkpointed by interop_core: its pipelines were "
            "built by the caller, and DALI restores a pipeline only when it is built. Pass "
            "the @pipeline_def function to to() (it is built again from the checkpoint), or "
            "build your pipelines with checkpoint= (from the iterator's checkpoints()) "
            "yourself"
        )
    return DaliCheckpointer(source)


class DaliCheckpointer:
    """A DALI iterator made by interop_core from a ``@pipeline_def`` with
    ``enable_checkpointing=True``: a state is DALI's serialized checkpoint of each pipeline
    (readers' positions, random generators, the iterator's counters), and resuming builds
    the pipelines again from them, in place (the iterator object stays the same)."""

    name = "DALI iterator: the pipelines' checkpoints()"
    replayable = False

    def __init__(self, source: Any) -> None:
        self.source = source

    def begin(self, state: dict[str, Any] | None) -> Iterator[Any]:
        if state is None:
            return iter(self.source)  # type: ignore[no-any-return]
        self.source._restore(list(state["checkpoints"]))
        # Never iter() of the source (not even by whoever iterates this pass): restored at
        # the end of an epoch, DALI's iterator counts as consumed, and its iter() would
        # start the next epoch instead of ending this one.
        return iter(self.source.__next__, _NEVER)

    def position(self, produced: int) -> dict[str, Any]:
        return {"checkpoints": list(self.source.checkpoints())}


#: What no ``__next__`` returns (the sentinel of a pass that only calls ``__next__``).
_NEVER = object()


class Watched:
    """The batches of iterator ``it``, with ``first()`` called right before its first
    ``next()`` and ``last()`` when it ends. Not a generator: an error of ``it`` passes
    through and the next ``next()`` goes on, as with ``it`` itself (a DataLoader's
    iterator goes on after a sample that failed to load)."""

    __slots__ = ("_first", "_it", "_last")

    def __init__(
        self,
        it: Iterator[Any],
        first: Callable[[], None] | None = None,
        last: Callable[[], None] | None = None,
    ) -> None:
        self._it, self._first, self._last = it, first, last

    def __iter__(self) -> Watched:
        return self

    def __next__(self) -> Any:
        if self._first is not None:
            first, self._first = self._first, None
            first()
        try:
            return next(self._it)
        except StopIteration:
            if self._last is not None:
                last, self._last = self._last, None
                last()
            raise


DATALOADER = "torch.utils.data.dataloader.DataLoader"
HF_DATASET = "datasets.iterable_dataset.IterableDataset"

#: Which checkpointer a source gets, by a class path of its type (the first that matches).
_CHECKPOINTERS: tuple[tuple[str, Callable[[Any], Checkpointer | str]], ...] = (
    ("torchdata.stateful_dataloader.stateful_dataloader.StatefulDataLoader", _stateful_loader),
    (DATALOADER, _torch_loader),
    (HF_DATASET, _hf_dataset),
    ("grain._src.python.dataset.dataset.DatasetIterator", _grain),
    ("grain._src.python.data_loader.DataLoaderIterator", _grain),
    ("grain._src.python.dataset.dataset._Dataset", _grain),
    ("grain._src.python.data_loader.DataLoader", _grain),
    ("tensorflow.python.data.ops.dataset_ops.DatasetV2", _tf),
    ("tensorflow.python.data.ops.iterator_ops.OwnedIterator", _tf),
    ("nvidia.dali.plugin.base_iterator._DaliBaseIterator", _dali),
    ("interop_plugins.kinds.dali_iterators.ShardedJaxBatches", lambda _: SHARDED_DALI),
)

SHARDED_DALI = (
    "DALI batches sharded by sharding= cannot be checkpointed yet: each shard's pipeline "
    "has its own checkpoint, which interop_core does not gather. Convert without sharding= "
    "(a DALI pipeline with enable_checkpointing=True), or save each pipeline's checkpoint()"
)
