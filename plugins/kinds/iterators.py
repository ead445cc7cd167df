"""Iterators of batches: converted lazily, each batch by ``to()`` when it is pulled.

A generator, ``iter(anything)``, a torch DataLoader, a tf.data Dataset or a DALI iterator
becomes an iterator of the target framework's batches, with the batches' structure kept
(dicts, tuples, lists of arrays). Nothing is pulled before the user asks, so an endless
stream stays endless and a DataLoader's workers start when the user iterates. Imports no
framework.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from interop_core.plugin import (
    ANY,
    ITERATOR,
    CallContext,
    Checkpointer,
    ConverterSpec,
    Kind,
    KindSpec,
    OptionError,
    PluginError,
    WorkersPlan,
    hookimpl,
)

# batches.py and checkpoints.py are imported by the calls that use them: this plugin is
# loaded on every first call, most of which convert no iterator.
if TYPE_CHECKING:
    from .batches import Batches

#: Iterables that start a new pass (an epoch) each time they are iterated; any other
#: object must be an iterator (``iter(obj)`` makes one of any iterable).
RESTARTABLE = (
    "torch.utils.data.DataLoader",
    "tensorflow.python.data.ops.dataset_ops.DatasetV2",
    # Datasets whose every iter() is a new pass: Hugging Face's IterableDataset (and any
    # torch IterableDataset), Grain's datasets and DataLoader.
    "torch.utils.data.dataset.IterableDataset",
    "grain._src.python.dataset.dataset.MapDataset",
    "grain._src.python.dataset.dataset.IterDataset",
    "grain._src.python.data_loader.DataLoader",
)


def batches_for(source: Iterable[Any], convert: Callable[[Any], Any], ctx: CallContext) -> Batches:
    """The converted iterator over ``source``, each batch made by ``convert``, with what the
    call's options ask of the iterator itself (prefetch=, resuming: see :class:`Batches`).
    Every iterator edge builds its result with this. The loader's workers start as the
    ``interop_worker_policy`` hook plans, set here before any pass starts them (a torch
    DataLoader's: made safe by loader_workers.py); ``.workers`` says how. The source's
    checkpointer is the ``interop_checkpointer`` hook's answer, asked when first needed."""
    from .batches import Batches
    from .loader_workers import safe_workers

    ask = Asker(ctx.hook)
    batches = Batches(source, convert, prefetch_depth(ctx.option("prefetch")), ask.checkpointer)
    batches.workers = safe_workers(source, ctx.target, ask.worker_policy)
    return batches


class Asker:
    """The iterator kind's run-time hooks on one registry's hook relay (``ctx.hook``), each
    answer checked; without a relay (a context built by hand), the built-in answers."""

    __slots__ = ("_hook",)

    def __init__(self, hook: Any) -> None:
        self._hook = hook

    def checkpointer(self, source: Any) -> Checkpointer | str:
        """The ``interop_checkpointer`` hook's answer for ``source``."""
        from .checkpoints import checkpointer, show

        found = None if self._hook is None else self._hook.interop_checkpointer(source=source)
        if found is None:  # no plugin answered (the built-in one is not registered)
            return checkpointer(source)
        if not isinstance(found, str) and not all(
            hasattr(found, a) for a in ("name", "replayable", "begin", "position", "check")
        ):
            raise PluginError(
                f"A plugin's interop_checkpointer hook answered {show(found)} for a "
                f"{type(source).__qualname__}: neither a Checkpointer (name, replayable, "
                "begin, position, check) nor a sentence saying why it cannot be "
                "checkpointed.\nFix the plugin's hook, or unregister the plugin."
            )
        return found  # type: ignore[no-any-return]

    def worker_policy(self, loader: Any, target: str) -> WorkersPlan:
        """The ``interop_worker_policy`` hook's answer for ``loader`` and ``target``."""
        from .checkpoints import show
        from .loader_workers import plan_workers

        if self._hook is None:
            return plan_workers(loader, target)
        plan = self._hook.interop_worker_policy(loader=loader, target=target)
        if plan is None:  # no plugin answered (the built-in one is not registered)
            return plan_workers(loader, target)
        if not isinstance(plan, WorkersPlan):
            raise PluginError(
                f"A plugin's interop_worker_policy hook answered {show(plan)} for a "
                f"{type(loader).__qualname__}: not a WorkersPlan.\nReturn "
                "WorkersPlan(method, sentence) from interop_core.plugin, or None for a "
                "loader that is not the plugin's."
            )
        return plan


@hookimpl(trylast=True)
def interop_checkpointer(source: Any) -> Checkpointer | str:
    """The built-in checkpointers (checkpoints.py), told apart by the class paths of the
    source; the reason it cannot be checkpointed for any other."""
    from .checkpoints import checkpointer

    return checkpointer(source)


@hookimpl(trylast=True)
def interop_worker_policy(loader: Any, target: str) -> WorkersPlan:
    """The built-in policy (loader_workers.py): a torch DataLoader's workers start by
    forkserver instead of fork where JAX or TensorFlow is loaded or the target."""
    from .loader_workers import plan_workers

    return plan_workers(loader, target)


def prefetch_depth(value: Any) -> int:
    """``prefetch=`` checked: how many batches to convert ahead (0: none, None: none)."""
    if value is None or value is False:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise OptionError(
            f"Option prefetch={value!r} is not valid.\nprefetch= takes how many batches to "
            "convert ahead on a background thread: an int >= 0 (0 or None: none)."
        )
    return value


def each_batch(batches: Iterable[Any], ctx: CallContext) -> Batches:
    """The converter: wrap ``batches`` so each is converted to the target when pulled."""
    to, target, device, copy = ctx.to, ctx.target, ctx.device, ctx.copy
    # dtype= (a Cast, read once by to()) casts the arrays of each batch; the arrays' own
    # options (a table's nulls=, ...) reach each batch's to() too.
    each = {k: v for k, v in ctx.options.items() if k != "prefetch" and v is not None}

    def convert(batch: Any) -> Any:
        return to(batch, target, device=device, copy=copy, **each)

    return batches_for(batches, convert, ctx)


def _is_iterator(obj: Any) -> bool:
    return isinstance(obj, Iterator)


@hookimpl
def interop_kinds() -> list[Kind | KindSpec]:
    """The iterator kind (``copy=`` applies to each batch), and iterators and restartable
    loaders, whatever framework their batches belong to."""
    return [
        Kind(ITERATOR, copy="items"),
        KindSpec(
            kind=ITERATOR,
            framework=ANY,
            types=RESTARTABLE,
            claims=_is_iterator,
            description="an iterator of batches",
        ),
    ]


@hookimpl
def interop_converters() -> list[ConverterSpec]:
    """One edge from any framework's iterator to any other's."""
    return [
        ConverterSpec(
            name="to() on each batch",
            source=ANY,
            target=ANY,
            load=lambda: each_batch,
            kind=ITERATOR,
            zero_copy=True,
            context=True,
            rerun=False,
            cost=2.0,
            options=("dtype", "prefetch"),
            note="each batch is converted when it is pulled, by its own route "
            "(explain(batch, target) shows it); copy= and dtype= apply to every batch; "
            "the options of array converters (nulls=, ...) reach each batch too; "
            "prefetch=N converts N batches ahead on a thread; state_dict() and "
            "load_state_dict() resume mid-pass where the source can say where it is; a torch "
            "DataLoader's workers start by forkserver instead of fork when JAX or TensorFlow "
            "is loaded or the target (a forked worker running their code hangs, jax#9190), "
            "unless it names a multiprocessing_context or cannot be pickled: the iterator's "
            ".workers says which and why",
        )
    ]
