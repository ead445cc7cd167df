"""Iterators of batches: converted lazily, each batch by ``to()`` when it is pulled.

A generator, ``iter(anything)``, a torch DataLoader, a tf.data Dataset or a DALI iterator
becomes an iterator of the target framework's batches, with the batches' structure kept
(dicts, tuples, lists of arrays). Nothing is pulled before the user asks, so an endless
stream stays endless and a DataLoader's workers start when the user iterates. Imports no
framework.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from interop_core.plugin import ANY, ITERATOR, CallContext, ConverterSpec, Kind, KindSpec, hookimpl

#: Iterables that start a new pass (an epoch) each time they are iterated; any other
#: object must be an iterator (``iter(obj)`` makes one of any iterable).
RESTARTABLE = (
    "torch.utils.data.DataLoader",
    "tensorflow.python.data.ops.dataset_ops.DatasetV2",
)


class Batches:
    """The batches of ``source``, each converted by ``convert`` when it is pulled.

    Over an iterable that restarts (a DataLoader, a Dataset), every ``iter()`` is a new
    pass; over an iterator, there is one pass, as with the source itself. ``len()`` and
    ``reset()`` are the source's, where it has them (DALI iterators).
    """

    def __init__(self, source: Iterable[Any], convert: Callable[[Any], Any]) -> None:
        self.source = source
        self._convert = convert
        self._pass: Iterator[Any] | None = source if isinstance(source, Iterator) else None

    def __iter__(self) -> Batches:
        if isinstance(self.source, Iterator):
            self._pass = iter(self.source)  # a DALI iterator starts its next epoch here
            return self
        return Batches(iter(self.source), self._convert)

    def __next__(self) -> Any:
        if self._pass is None:  # next() on a restartable source: start its first pass
            self._pass = iter(self.source)
        return self._convert(next(self._pass))

    def __len__(self) -> int:
        return len(self.source)  # type: ignore[arg-type]

    def __bool__(self) -> bool:
        return True  # not len() != 0: an iterator is true, whether its source has a length

    def reset(self) -> None:
        """Reset the source (DALI iterators: start the next epoch)."""
        self.source.reset()  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return f"<Batches of {type(self.source).__qualname__}, converted when pulled>"


def each_batch(batches: Iterable[Any], ctx: CallContext) -> Batches:
    """The converter: wrap ``batches`` so each is converted to the target when pulled."""
    to, target, device, copy = ctx.to, ctx.target, ctx.device, ctx.copy
    # dtype= (a Cast, read once by to()) casts the arrays of each batch.
    cast = {} if ctx.option("dtype") is None else {"dtype": ctx.option("dtype")}

    def convert(batch: Any) -> Any:
        return to(batch, target, device=device, copy=copy, **cast)

    return Batches(batches, convert)


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
            options=("dtype",),
            note="each batch is converted when it is pulled, by its own route "
            "(explain(batch, target) shows it); copy= and dtype= apply to every batch",
        )
    ]
