"""``sharding=`` for any iterator: each process's local batches become global jax.Arrays.

``to(batches, "jax", sharding=s)``, with ``s`` a ``jax.sharding.Sharding`` over the batch
axis: every array of every batch (dicts, tuples and lists kept) is this process's share of a
global batch, laid out on ``s``'s devices by ``jax.make_array_from_process_local_data``. In
one process the batch is the whole global batch; with ``jax.distributed`` each process feeds
its own batches and gets global arrays whose addressable shards hold them (the global batch
axis is the processes' local batches side by side, in process order), with no data sent
between processes. Each batch reaches the host as numpy first (``to(batch, "numpy")``:
zero-copy from torch, TF and JAX on the CPU), where ``dtype=`` casts it, then is copied once
onto the devices.

The edge is taken only when the call passes ``sharding=`` and marks its result, so such a
call returns global arrays or fails, never plain ones. A DALI pipeline is another kind: its
own edge (one pipeline per shard) stays its route with ``sharding=``. Imports no framework.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from interop_core.plugin import (
    ANY,
    ITERATOR,
    CallContext,
    ConversionError,
    ConverterSpec,
    OptionError,
    hookimpl,
    map_leaves,
)

from ..frameworks.jax import X64
from ..kinds.iterators import batches_for

#: Loaded once it is imported (docs/plugins.md, "Loaded when needed").
INTEROP_ABOUT = ("jax",)

NAME = "jax.make_array_from_process_local_data"
#: The marks of a jax.Array laid out as sharding= asks (as the array edges give theirs).
LAID_OUT = frozenset({"sharded", "laid_out"})


class GlobalLayout:
    """Lays out this process's arrays on ``sharding``: the global shape of each local shape
    (cached), checked to split evenly, then ``make_array_from_process_local_data``."""

    def __init__(self, sharding: Any) -> None:
        self.sharding = sharding
        self._shapes: dict[tuple[int, ...], tuple[int, ...]] = {}

    def __call__(self, leaf: Any) -> Any:
        import jax
        import numpy as np

        if not isinstance(leaf, np.ndarray):
            return leaf  # what to() leaves as it is (strings, ints) stays so
        if leaf.dtype.name in X64.dtypes and not X64.read():
            raise ConversionError(
                f"A batch array of dtype {leaf.dtype} cannot become a global jax.Array: "
                f"{X64.reason.format(dtype=leaf.dtype.name)}."
            )
        shape = tuple(leaf.shape)
        found = self._shapes.get(shape)
        if found is None:
            found = self._shapes[shape] = self.global_shape(shape)
        return jax.make_array_from_process_local_data(self.sharding, leaf, found)

    def global_shape(self, local: tuple[int, ...]) -> tuple[int, ...]:
        """The global shape whose share on this process's devices is ``local``.

        Along each dimension the sharding cuts ``parts`` blocks, of which this process's
        devices hold ``here``: ``local`` must split into ``here`` equal blocks, and the
        global dimension has ``parts`` of them (all of them here: the local dimension is
        the global one). Read from the sharding on a probe shape of ``n`` in every
        dimension (each dimension's block count divides the device count ``n``).
        """
        n = len(self.sharding.device_set)
        probe = (n,) * len(local)
        try:
            block = self.sharding.shard_shape(probe)
            indices = self.sharding.addressable_devices_indices_map(probe).values()
        except (ValueError, TypeError, IndexError) as exc:
            raise OptionError(
                f"sharding= cannot lay out a batch array of shape {local}: {exc}\nEvery array "
                "of a batch is laid out by it; give it the batch axis (and the dimensions the "
                "sharding names), or leave arrays it cannot split out of the batch."
            ) from exc
        out = []
        for dim, size in enumerate(local):
            parts = n // block[dim]
            here = len({index[dim].indices(n)[0] for index in indices})
            if size % here:
                devices = len(self.sharding.addressable_devices)
                raise OptionError(
                    f"A batch array of shape {local} does not split over sharding=: its "
                    f"dimension {dim} has {size} rows, and this process's {devices} device(s) "
                    f"hold {here} block(s) of it.\nGive every batch a multiple of {here} "
                    f"rows in dimension {dim} (a DataLoader's last batch: drop_last=True), "
                    "or a sharding that splits it so."
                )
            out.append(size // here * parts)
        return tuple(out)


def global_batches(source: Iterable[Any], ctx: CallContext) -> Any:
    """The converter: each batch of ``source`` as global jax.Arrays on ``sharding=``."""
    from .shards import jax_sharding  # with the converter: every JAX call loads this plugin

    sharding = jax_sharding(ctx.option("sharding"))
    if ctx.copy is False:
        raise OptionError(
            "copy=False cannot hold with sharding=: each batch is copied onto the sharding's "
            "devices.\nPass copy=None (or copy=True, which never lets a batch share memory "
            "with its source)."
        )
    if ctx.device is not None:
        raise OptionError(
            f"device={str(ctx.device)!r} and sharding= both say where batches go; the "
            "sharding names the devices. Leave device= out."
        )
    to, copy = ctx.to, ctx.copy
    # dtype= and the arrays' own options (a table's nulls=, ...) reach each batch's to().
    each = {
        k: v for k, v in ctx.options.items() if k not in ("sharding", "prefetch") and v is not None
    }
    layout = GlobalLayout(sharding)

    def convert(batch: Any) -> Any:
        # copy=True: new host arrays, so no global array can alias the source's memory.
        return map_leaves(to(batch, "numpy", copy=copy, **each), layout)

    return batches_for(source, convert, ctx)


@hookimpl
def interop_converters() -> list[ConverterSpec]:
    """One opt-in edge from any iterator to an iterator of global jax.Arrays."""
    return [
        ConverterSpec(
            name=NAME,
            source=ANY,
            target="jax",
            load=lambda: global_batches,
            kind=ITERATOR,
            zero_copy=False,
            context=True,
            rerun=False,
            cost=3.0,
            options=("sharding", "dtype", "prefetch"),
            opt_in="sharding",
            adds_flags=LAID_OUT,
            note="sharding=: each batch is this process's share of a global batch; each of "
            "its arrays (numpy on the host first, dtype= cast there) is copied onto the "
            "sharding's devices by jax.make_array_from_process_local_data, one global "
            "jax.Array whose batch axis holds every process's batches in process order",
        )
    ]
