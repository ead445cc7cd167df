"""Where a source of batches is, and how to start it again there: what ``state_dict()`` and
``load_state_dict()`` of a converted iterator are built on.

A :class:`Checkpointer` (the protocol, in ``interop_core.plugin``) is made for one source
by the ``interop_checkpointer`` hook; :func:`checkpointer` is the built-in plugins' answer
(``trylast``, in iterators.py) for the sources they know (a DataLoader, a StatefulDataLoader,
a Grain iterator, a Hugging Face IterableDataset, ...), so a third party's overrides it. The
converted iterator (``Batches`` in batches.py) asks it for each pass and, after batches are
pulled, for the position; it never looks inside the source itself. A source that cannot
checkpoint gets the reason instead, which ``state_dict()`` raises: never a state that
resumes wrong. Imports no framework at module level.
"""

from __future__ import annotations

import hashlib
import math
import reprlib
import struct
import types
from collections.abc import Callable, Collection, Iterator
from typing import Any

from interop_core.plugin import Checkpointer, CheckpointError, InteropError


def checkpointer(source: Any) -> Checkpointer | str:
    """The built-in checkpointer for ``source``, or the reason it cannot be checkpointed
    (said by ``state_dict()``: what the source is, why, and what the user can do): the
    built-in plugins' answer to the ``interop_checkpointer`` hook.

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
        "enable_checkpointing=True), or register a plugin whose interop_checkpointer hook "
        "answers for this one"
    )


def type_paths(obj: Any) -> frozenset[str]:
    """The ``module.qualname`` of the class of ``obj`` and of each of its bases."""
    return frozenset(f"{c.__module__}.{c.__qualname__}" for c in type(obj).__mro__)


# -- checking positions (the one place per checkpointer: its check()) -----------------------

_SHOW = reprlib.Repr()
_SHOW.maxstring = _SHOW.maxother = 60
_SHOW.maxlong = 30

#: The largest count a state may hold (a 64-bit counter: TensorFlow's and torch's).
MOST = 2**64 - 1


def show(value: Any) -> str:
    """``value`` for a message, short whatever it is (a hostile state may hold anything: an
    int too long for ``repr()``, an object whose ``__repr__`` raises)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"{'a negative' if value < 0 else 'an'} integer of {value.bit_length()} bits"
    try:
        return _SHOW.repr(value)
    except Exception:  # an int too long inside a container, a failing __repr__
        return f"a {type(value).__name__}"


def damaged(what: str) -> CheckpointError:
    """The error for a position that no ``state_dict()`` made as it is: ``what`` is wrong."""
    return CheckpointError(
        f"This state is damaged: {what}.\nLoad the state state_dict() returned, whole and "
        "unchanged (pickle or torch.save it as it is), into an iterator over a source built "
        "the same way."
    )


def other_source(what: str, had: Any, has: Any, build: str) -> CheckpointError:
    """The error for a position made for another source of the same kind: its ``what`` was
    ``had``, this source's is ``has``."""
    return CheckpointError(
        f"This state was made for another source: its {what} is {show(had)}; this one's is "
        f"{show(has)}.\nLoad it into an iterator over the source it was saved from, built "
        f"the same way ({build})."
    )


def fields(value: Any, where: str, keys: Collection[str], optional: Collection[str] = ()) -> Any:
    """``value``, a dict with exactly the keys ``keys`` (and maybe ``optional``)."""
    if not isinstance(value, dict):
        raise damaged(f"{where} is a {type(value).__name__} ({show(value)}), not a dict")
    missing = [k for k in keys if k not in value]
    if missing:
        raise damaged(f"{where} has no {missing[0]!r}")
    extra = [k for k in value if k not in keys and k not in optional]
    if extra:
        raise damaged(f"{where} has {show(extra[0])}, which no such state has")
    return value


def count(value: Any, where: str, most: int | None = None, of: str = "") -> int:
    """``value``, a count (an int, not a bool) from 0 to ``most`` (``of``: what ``most``
    counts, for the message)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise damaged(f"{where} is {show(value)}, not a count")
    if value < 0:
        raise damaged(f"{where} is {show(value)}, a negative count")
    if value > (MOST if most is None else most):
        limit = str(MOST if most is None else most)
        if most is not None and of:
            limit = f"the {most} {of}"
        raise damaged(f"{where} is {show(value)}, beyond {limit}")
    return value


def flag(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise damaged(f"{where} is {show(value)}, not True or False")
    return value


def blob(value: Any, where: str) -> bytes:
    """``value``, non-empty bytes."""
    if not isinstance(value, bytes) or not value:
        got = "empty" if isinstance(value, bytes) else f"a {type(value).__name__}"
        raise damaged(f"{where} is {got}, not the bytes state_dict() wrote")
    return value


def length(obj: Any) -> int | None:
    """``len(obj)``, or None where it has none (or it fails: a length is only compared)."""
    try:
        return len(obj)
    except Exception:  # no __len__, an IterableDataset's TypeError, ...
        return None


def same(a: Any, b: Any) -> bool:
    """Whether two plain values read from a state are equal (types included: a hostile
    value's own ``__eq__`` is never called, nor an array's, whose ``==`` is not a bool)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return bool(a == b) if isinstance(a, (int, float, str, bytes, type(None))) else a is b


def restoring(what: str, exc: BaseException) -> CheckpointError:
    """The error of a framework that could not restore a position (its parser or its
    checks refused what passed ours): its words, with the cause kept by the caller."""
    words = str(exc).strip().splitlines()
    why = f"{type(exc).__name__}: {words[0][:300]}" if words else type(exc).__name__
    return CheckpointError(
        f"{what} could not resume from this state ({why}).\nThe state is damaged or was made "
        "for another source: load the state state_dict() returned, unchanged, into an "
        "iterator over a source built the same way."
    )


def walk(value: Any, where: str, visit: Callable[[str, Any, str], None], depth: int = 0) -> None:
    """Call ``visit(key, value, where)`` for every entry of the dicts and lists in
    ``value`` (a framework's own state), refusing nesting deeper than a state has."""
    if depth > 64:
        raise damaged(f"{where} nests deeper than any state does")
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, item in items:
        here = f"{where}[{key!r}]"
        visit(str(key), item, here)
        if isinstance(item, (dict, list)):
            walk(item, here, visit, depth + 1)


def digest(value: Any) -> str:
    """A checksum of ``value`` (a state's fields): dicts, lists, tuples, numbers, strings,
    bytes, numpy arrays and torch tensors by their contents (a dict's order aside), other
    objects by their class. A state damaged on the way (a truncated or garbled file, a
    value changed) no longer matches the digest ``state_dict()`` put in it. Not a
    signature: whoever changes a state on purpose can compute it again (a saved state is
    trusted input). Refuses a state that contains itself or nests deeper than any does."""
    return _Digest().of(value, 0).hex()


class _Digest:
    """One :func:`digest`: each container is digested once (a state may share one), a
    container met again inside itself is refused."""

    def __init__(self) -> None:
        self._done: dict[int, bytes] = {}
        self._open: set[int] = set()

    def of(self, value: Any, depth: int) -> bytes:
        h = hashlib.blake2b(digest_size=16)
        self._feed(h, value, depth)
        return h.digest()

    def _feed(self, h: Any, value: Any, depth: int) -> None:
        if value is None:
            h.update(b"N")
        elif isinstance(value, bool):
            h.update(b"T" if value else b"F")
        elif isinstance(value, int):
            data = value.to_bytes(value.bit_length() // 8 + 1, "little", signed=True)
            h.update(b"i%d:" % len(data) + data)
        elif isinstance(value, float):
            h.update(b"f" + struct.pack("<d", value))
        elif isinstance(value, str):
            data = value.encode("utf-8", "surrogatepass")
            h.update(b"s%d:" % len(data) + data)
        elif isinstance(value, (bytes, bytearray)):
            h.update(b"b%d:" % len(value))
            h.update(value)
        elif isinstance(value, (dict, list, tuple)):
            h.update(b"c" + self._container(value, depth))
        else:
            h.update(b"o" + _contents(value))

    def _container(self, value: Any, depth: int) -> bytes:
        key = id(value)
        done = self._done.get(key)
        if done is not None:
            return done
        if key in self._open:
            raise damaged("it contains itself")
        if depth > 100:
            raise damaged("it nests deeper than any state does")
        self._open.add(key)
        h = hashlib.blake2b(digest_size=16)
        if isinstance(value, dict):
            h.update(b"d%d:" % len(value))
            named = [(self.of(k, depth + 1), v) for k, v in value.items()]
            for name, item in sorted(named, key=lambda pair: pair[0]):
                h.update(name)
                self._feed(h, item, depth + 1)
        else:
            h.update(b"l%d:" % len(value))
            for item in value:
                self._feed(h, item, depth + 1)
        self._open.discard(key)
        self._done[key] = h.digest()
        return self._done[key]


def _contents(value: Any) -> bytes:
    """What :func:`digest` reads of an object that is not a plain value: a numpy array's or
    a torch tensor's dtype, shape and bytes; any other object's class."""
    kind = f"{type(value).__module__}.{type(value).__qualname__}".encode()
    try:
        module = type(value).__module__.split(".")[0]
        if module == "numpy":
            import numpy as np

            array = np.ascontiguousarray(value)
            if not array.dtype.hasobject:
                head = f"{array.dtype.str}{array.shape}".encode()
                data = array.reshape(-1).view(np.uint8).data
                return kind + head + hashlib.blake2b(data).digest()
        elif module == "torch" and hasattr(value, "detach"):
            import torch

            tensor = value.detach().cpu().contiguous()
            head = f"{tensor.dtype}{tuple(tensor.shape)}".encode()
            data = tensor.reshape(-1).view(torch.uint8).numpy().data
            return kind + head + hashlib.blake2b(data).digest()
    except Exception:  # a sparse or quantized tensor, an array numpy cannot view: its class
        return kind
    return kind


# -- sources that keep their own state -----------------------------------------------------


#: The key of a position that records what its source was (its length, type, ...).
MADE_FOR = "made_for"


def made_for(position: Any, has: dict[str, Any], build: str) -> None:
    """Refuse ``position`` unless its record of its source (:data:`MADE_FOR`) is ``has``,
    this source's, naming the first field that differs (``build``: what to build alike)."""
    had = fields(position[MADE_FOR], "its record of the source it was made for", has)
    for key, value in has.items():
        if not same(had[key], value):
            raise other_source(key.replace("_", " "), had[key], value, build)


class OwnState:
    """A source whose position is its own state (the StatefulDataLoader's ``state_dict()``,
    a Grain iterator's ``get_state()``): a position is ``{"state": <the source's own>,
    "made_for": <identity()>}``.

    ``start(source)`` begins a pass; ``save(pass)`` reads the state of the pass in progress
    (``pass``: what ``start`` or ``restore`` returned); ``restore(source, state)`` begins a
    pass there; ``identity()`` is what the source is (compared when resuming);
    ``check_own(state, batches)`` refuses what the framework's state cannot be (before the
    framework parses it). The framework's own errors restoring become CheckpointErrors."""

    def __init__(
        self,
        source: Any,
        name: str,
        start: Callable[[Any], Iterator[Any]],
        save: Callable[[Any], Any],
        restore: Callable[[Any, Any], Iterator[Any]],
        identity: Callable[[], dict[str, Any]],
        check_own: Callable[[Any, int | None], None],
        framework: str,
    ) -> None:
        self.source, self.name = source, name
        self.replayable = False  # the source's own state, read live
        self._start, self._save, self._restore = start, save, restore
        self._identity, self._check_own, self._framework = identity, check_own, framework
        self._pass: Any = None

    def begin(self, state: dict[str, Any] | None) -> Iterator[Any]:
        if state is None:
            it = self._start(self.source)
        else:
            self.check(state)
            try:
                it = self._restore(self.source, state["state"])
            except InteropError:
                raise
            except Exception as exc:  # the framework's words, as a CheckpointError
                raise restoring(self._framework, exc) from exc
        self._pass = it
        return it

    def position(self, produced: int) -> dict[str, Any]:
        return {"state": self._save(self._pass), MADE_FOR: self._identity()}

    def check(self, position: Any, batches: int | None = None) -> None:
        fields(position, "its position", ("state", MADE_FOR))
        made_for(position, self._identity(), "the same dataset, sampler and batch size")
        self._check_own(position["state"], batches)


#: The keys of a torchdata StatefulDataLoader's own state: single-process, then with
#: workers (its snapshot of the main process in ``_snapshot``).
_TORCHDATA_KEYS = (
    "_index_sampler_state", "_sampler_iter_state", "_sampler_iter_yielded", "_num_yielded",
    "_IterableDataset_len_called", "_shared_seed", "_iterator_finished",
)  # fmt: skip
_TORCHDATA_WORKERS_KEYS = ("_snapshot", "_steps_since_snapshot", "_iterator_finished")
_TORCHDATA_SNAPSHOT_KEYS = (
    "_main_snapshot", "_snapshot_step", "_worker_snapshots", "_last_yielded_worker_id",
)  # fmt: skip
TORCHDATA_RANDOM = "torchdata.stateful_dataloader.sampler.RandomSampler"


def _check_torchdata(loader: Any, state: Any, batches: int | None) -> None:
    """What a StatefulDataLoader's ``state_dict()`` holds, checked before torchdata reads it
    (it asserts, indexes and counts without checking: KeyError, AssertionError,
    StopIteration, or a pass restarted where a count is negative)."""
    where = "its StatefulDataLoader state"
    batches_most = length(loader)
    sampler = getattr(loader, "sampler", None)
    samples_most = length(sampler) if sampler is not None else None
    workers = loader.num_workers
    if not isinstance(state, dict):
        raise damaged(f"{where} is a {type(state).__name__} ({show(state)}), not a dict")
    keys = _TORCHDATA_KEYS if workers == 0 else _TORCHDATA_WORKERS_KEYS
    missing = [k for k in keys if k not in state]
    if missing:
        raise damaged(f"{where} has no {missing[0]!r}")
    if workers == 0:
        main = state
        yielded = count(state["_num_yielded"], f"{where}'s _num_yielded", batches_most, "batches")
        if batches is not None and yielded != batches:
            raise damaged(f"it counts {batches} batches handed out, and {where} {yielded}")
    else:
        snapshot = state["_snapshot"]
        if not isinstance(snapshot, dict):
            raise damaged(f"{where}'s _snapshot is {show(snapshot)}, not a dict")
        missing = [k for k in _TORCHDATA_SNAPSHOT_KEYS if k not in snapshot]
        if missing:
            raise damaged(f"{where}'s _snapshot has no {missing[0]!r}")
        count(state["_steps_since_snapshot"], f"{where}'s _steps_since_snapshot", batches_most)
        count(snapshot["_snapshot_step"], f"{where}'s _snapshot_step", batches_most, "batches")
        count(snapshot["_last_yielded_worker_id"], f"{where}'s _last_yielded_worker_id", workers)
        main = snapshot["_main_snapshot"]
        if not isinstance(main, dict):
            raise damaged(f"{where}'s _main_snapshot is {show(main)}, not a dict")
        if "_num_workers" in main and not same(main["_num_workers"], workers):
            raise other_source("num workers", main["_num_workers"], workers, "num_workers")
        if not isinstance(snapshot["_worker_snapshots"], dict):
            raise damaged(f"{where}'s _worker_snapshots is {show(snapshot['_worker_snapshots'])}")
        if len(snapshot["_worker_snapshots"]) != workers:
            raise damaged(f"{where} does not hold the states of its {workers} workers")
    flag(state["_iterator_finished"], f"{where}'s _iterator_finished")
    if "_sampler_iter_yielded" in main:
        count(main["_sampler_iter_yielded"], f"{where}'s _sampler_iter_yielded", batches_most)
    sampler_state = main.get("_sampler_iter_state")
    if isinstance(sampler_state, dict):
        count(
            sampler_state.get("samples_yielded"), f"{where}'s samples_yielded", samples_most,
            "samples",
        )  # fmt: skip
        inner = sampler_state.get("sampler_iter_state")
        random = sampler is not None and type_path(sampler) == TORCHDATA_RANDOM
        if inner is None and random and sampler_state["samples_yielded"] > 0:
            raise damaged(f"{where} has no sampler_iter_state (its RandomSampler's order)")
        if inner is not None:
            inner = fields(inner, f"{where}'s sampler_iter_state", ("generator", "yielded"))
            where_yielded = f"{where}'s sampler_iter_state yielded"
            count(inner["yielded"], where_yielded, samples_most, "samples")
            _check_generator(inner["generator"], f"{where}'s sampler generator")
    elif sampler_state is not None or (workers == 0 and _map_style(loader)):
        raise damaged(f"{where}'s _sampler_iter_state is {show(sampler_state)}, not a dict")


def _map_style(loader: Any) -> bool:
    return "torch.utils.data.dataset.IterableDataset" not in type_paths(loader.dataset)


def _check_generator(value: Any, where: str) -> None:
    """``value``: a torch.Generator's state (a uint8 tensor torch takes back)."""
    import torch

    if not isinstance(value, torch.Tensor) or value.dtype != torch.uint8 or value.dim() != 1:
        raise damaged(f"{where} is {show(value)}, not a torch generator's state")
    try:
        torch.Generator().set_state(value)
    except (RuntimeError, TypeError, ValueError) as exc:
        raise damaged(f"{where} is not a torch generator's state ({exc})") from exc


def _stateful_loader(loader: Any) -> OwnState:
    """torchdata's StatefulDataLoader: its own ``state_dict()`` (of its iterator in
    progress), loaded by ``load_state_dict()`` for its next ``iter()``."""

    def restore(loader: Any, state: dict[str, Any]) -> Iterator[Any]:
        loader.load_state_dict(state)
        return iter(loader)

    def identity() -> dict[str, Any]:
        return {
            "length": length(loader),
            "samples": length(loader.dataset),
            "batch_size": loader.batch_size,
            "sampler": type(loader.sampler).__qualname__,
            "num_workers": loader.num_workers,
        }

    return OwnState(
        loader,
        "torchdata StatefulDataLoader: its own state_dict()",
        iter,
        lambda _: loader.state_dict(),
        restore,
        identity,
        lambda state, batches: _check_torchdata(loader, state, batches),
        "torchdata's StatefulDataLoader",
    )


def _check_grain(source: Any, state: Any, batches: int | None) -> None:
    """A Grain state: a dict of plain values (a dataset iterator's ``get_state()``), or the
    JSON bytes of a ``grain.DataLoader``'s; every ``next_index`` a count (within the
    dataset, for a MapDataset's own iterator)."""
    where = "its Grain state"
    if isinstance(state, bytes):  # grain.DataLoader's: JSON, checked by Grain against itself
        import json

        try:
            parsed = json.loads(state.decode())
        except (UnicodeDecodeError, ValueError) as exc:
            raise damaged(f"{where} is not the JSON grain.DataLoader writes ({exc})") from exc
        if not isinstance(parsed, dict):
            raise damaged(f"{where} is JSON of a {type(parsed).__name__}, not of a dict")
        return
    if not isinstance(state, dict) or not state:
        raise damaged(f"{where} is {show(state)}, not the dict get_state() gives")
    most = None if isinstance(source, Iterator) else length(source)

    def visit(key: str, value: Any, here: str) -> None:
        if key == "next_index":
            count(value, here, most if here == f"{where}['next_index']" else None, "elements")
        elif isinstance(value, float) and not math.isfinite(value):
            raise damaged(f"{here} is {value}")

    walk(state, where, visit)


def _grain(source: Any) -> OwnState:
    """A Grain iterator (``DatasetIterator``, ``grain.DataLoader``'s), or a Grain dataset or
    DataLoader whose passes are such iterators: their own ``get_state()``/``set_state()``."""
    one_pass = isinstance(source, Iterator)

    def restore(source: Any, state: Any) -> Iterator[Any]:
        it = source if one_pass else iter(source)
        it.set_state(state)
        return it  # type: ignore[no-any-return]

    def identity() -> dict[str, Any]:
        return {"type": type_path(source), "length": length(source), "steps": _grain_steps(source)}

    return OwnState(
        source,
        "Grain iterator: its own get_state()",
        lambda s: s if one_pass else iter(s),
        lambda it: it.get_state(),
        restore,
        identity,
        lambda state, batches: _check_grain(source, state, batches),
        "Grain",
    )


def _grain_steps(source: Any) -> list[list[Any]]:
    """The steps of a Grain pipeline, from ``source`` to its data, with their lengths:
    datasets' ``parents``, iterators' ``_parents`` (and a prefetching iterator's dataset)."""
    steps: list[list[Any]] = []
    todo = [source]
    while todo and len(steps) < 1000:
        node = todo.pop()
        steps.append([type(node).__name__, length(node)])
        parents = getattr(node, "parents", None)
        if parents is None or callable(parents):
            parents = getattr(node, "_parents", None) or ()
        todo.extend(reversed(list(parents)))
        dataset = getattr(node, "_map_parent", None)
        if dataset is not None and not parents:
            todo.append(dataset)
    return steps


def type_path(obj: Any) -> str:
    """The ``module.qualname`` of ``obj``'s class."""
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


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
        return getattr(source, "_unrestorable", "") or (
            "this DALI iterator cannot be checkpointed by interop_core: its pipelines were "
            "built by the caller (pipe.build(), or run) before to(), and DALI restores a "
            "pipeline only when it is built. Pass the @pipeline_def function, or the "
            "pipeline it returns before it is built, to to() (it is built again from the "
            "checkpoint), or build your pipelines with checkpoint= (from the iterator's "
            "checkpoints()) yourself"
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
        self.restore(state)
        # Never iter() of the source (not even by whoever iterates this pass): restored at
        # the end of an epoch, DALI's iterator counts as consumed, and its iter() would
        # start the next epoch instead of ending this one.
        return iter(self.source.__next__, _NEVER)

    def restore(self, position: dict[str, Any]) -> None:
        """Build the pipelines again from ``position`` (checked), in place; DALI's refusal
        of a checkpoint (it parses them) is a CheckpointError."""
        self.check(position)
        try:
            self.source._restore(list(position["checkpoints"]))
        except CheckpointError:
            raise
        except InteropError as exc:  # DALI's words, through dali_errors()
            raise restoring("DALI", exc) from exc

    def position(self, produced: int) -> dict[str, Any]:
        return {"checkpoints": list(self.source.checkpoints()), MADE_FOR: self._identity()}

    def _identity(self) -> dict[str, Any]:
        pipes = self.source._pipes
        return {
            "pipelines": len(pipes),
            "batch_size": int(pipes[0].max_batch_size),
            "outputs": [str(n) for n in getattr(self.source, "output_map", None) or ()],
        }

    def check(self, position: Any, batches: int | None = None) -> None:
        fields(position, "its position", ("checkpoints", MADE_FOR))
        made_for(position, self._identity(), "the same @pipeline_def, batch_size and outputs")
        checkpoints = position["checkpoints"]
        if not isinstance(checkpoints, list):
            raise damaged(f"its checkpoints are a {type(checkpoints).__name__}, not a list")
        if len(checkpoints) != len(self.source._pipes):
            raise damaged(
                f"it holds the checkpoints of {len(checkpoints)} DALI pipeline(s), and says it "
                f"was made for an iterator over {len(self.source._pipes)}"
            )
        for i, checkpoint in enumerate(checkpoints):
            if not isinstance(checkpoint, (bytes, str)) or not checkpoint:
                raise damaged(
                    f"its checkpoint of pipeline {i} is {show(checkpoint)}, not the "
                    "serialized checkpoint DALI wrote"
                )


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
