"""DALI dynamic mode (``nvidia.dali.experimental.dynamic``): a Batch becomes one array.

An ``ndd.Tensor`` needs nothing here: it speaks DLPack, and the DLPack protocol takes it to
every framework without a copy (to JAX and TensorFlow only from a 64-byte aligned buffer:
what DALI allocates is; an ``ndd.as_tensor`` view of a numpy array is as aligned as numpy's
buffer, which often it is not).

An ``ndd.Batch`` is a source of its own (``dali.Batch``). Each conversion evaluates it once
(its snapshot) and makes one array of shape ``(batch, *sample)``:

- a view of DALI's buffer when the samples lie in it back to back, as DALI's operators and
  readers leave them and ``ndd.as_batch`` of one array does (zero-copy; DALI allocates 64-byte
  aligned buffers, so JAX and TensorFlow share them too);
- one copy that stacks them when they lie apart (``ndd.as_batch`` of a list of arrays), which
  ``explain()`` shows and ``copy=False`` refuses;
- nothing for samples of different shapes: no array holds them, and a list that only some
  batches turn into would break the code that reads the next one. The error says how to get
  one shape (padding) or a list (``to(list(batch), target)``: each sample an ``ndd.Tensor``).

A Batch on the GPU is refused with what to do: it is not converted here (untested without a
GPU). DALI is imported by none of this module's code: an object of it exists only once it is.
"""

from __future__ import annotations

from typing import Any

from interop_core.plugin import (
    ALIGNMENT,
    CPU,
    ArrayEdge,
    Casting,
    ConversionError,
    ConverterSpec,
    Flag,
    FrameworkSpec,
    Needs,
    Package,
    TensorInfo,
    hookimpl,
)

from ..frameworks.numpy import aligned_empty, numpy_dtype
from ..frameworks.numpy import aligned_key as numpy_aligned_key
from ..frameworks.numpy import describe as describe_ndarray
from ..frameworks.numpy import key as numpy_key
from .dali import INSTALL_HINT

#: Loaded once it is imported (docs/plugins.md, "Loaded when needed").
INTEROP_ABOUT = ("nvidia.dali.experimental.dynamic",)

NAME = "dali.Batch"
MODULE = "nvidia.dali.experimental.dynamic"
#: Flag: the samples lie in separate buffers, so one array of them is a copy.
SCATTERED = "scattered_samples"
#: The dtypes a CPU batch of DALI holds that frameworks share (no strings, no enums).
DTYPES = frozenset({
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64",
})  # fmt: skip


class BatchSnapshot:
    """One evaluated DALI Batch on the CPU, as numpy views of DALI's memory: ``array`` (the
    whole batch, when its samples lie back to back) or ``samples`` (each one, when not)."""

    __slots__ = ("array", "dtype", "samples", "shape")

    def __init__(self, array: Any, samples: tuple[Any, ...], shape: tuple[int, ...]) -> None:
        self.array = array
        self.samples = samples
        self.shape = shape
        self.dtype = (array if array is not None else samples[0]).dtype


def _shapes(shapes: list[tuple[int, ...]]) -> str:
    """The first few distinct sample shapes, for a message."""
    seen = list(dict.fromkeys(shapes))
    more = f" and {len(seen) - 3} more" if len(seen) > 3 else ""
    return ", ".join(map(str, seen[:3])) + more


def snapshot(obj: Any) -> BatchSnapshot:
    """Evaluate the Batch once and view its memory as numpy arrays (no copy)."""
    if isinstance(obj, BatchSnapshot):
        return obj
    import numpy as np

    device = obj.device
    if device.device_type != "cpu":
        raise ConversionError(
            f"This DALI Batch is on the GPU ({device}); to() converts DALI Batches on the CPU "
            "only.\nPass ndd.as_tensor(batch) (one tensor, which converts through DLPack), or "
            "batch.cpu() (a copy to the host)."
        )
    # The storage (a TensorListCPU) is what DALI's own Batch.torch() reads: the public API
    # does not say whether the samples are contiguous.
    storage = obj.evaluate()._storage
    shapes = [tuple(s) for s in storage.shape()]
    if not shapes:
        raise ConversionError(
            "This DALI Batch has no samples, so no array shape: convert a batch with at least "
            "one sample."
        )
    if len(set(shapes)) > 1:
        raise ConversionError(
            f"This DALI Batch's {len(shapes)} samples differ in shape ({_shapes(shapes)}), so "
            "no one array holds them.\nGive them one shape in DALI (ndd.as_tensor(batch, "
            "pad=True) pads them; or ndd.resize, ndd.crop, ndd.pad), or convert them one by "
            "one: to(list(batch), target) gives a list of arrays."
        )
    shape = (len(shapes), *shapes[0])
    if storage.is_dense_tensor():
        # One view of the whole buffer; it holds the storage's memory alive (its base).
        return BatchSnapshot(np.asarray(storage.as_tensor()), (), shape)
    return BatchSnapshot(None, tuple(np.asarray(storage[i]) for i in range(len(shapes))), shape)


def describe(snap: BatchSnapshot) -> TensorInfo:
    """The array the batch becomes: its view of DALI's buffer, or (samples apart) a
    C-contiguous array of the batch's shape that only a copy makes."""
    if snap.array is not None:
        return describe_ndarray(snap.array)._replace(framework=NAME)
    aligned = data_ptr(snap) % ALIGNMENT == 0
    return TensorInfo(
        NAME, snap.dtype.name, CPU, snap.shape, "C", False, aligned, frozenset({SCATTERED})
    )


def key(snap: BatchSnapshot) -> Any:
    """Warm-path key: the numpy view's key, or (samples apart) the dtype."""
    if snap.array is not None:
        return (numpy_key(snap.array), False)
    return (snap.dtype, True)


def aligned_key(snap: BatchSnapshot) -> Any:
    """key() plus the 64-byte alignment of the first element."""
    if snap.array is not None:
        return (numpy_aligned_key(snap.array), False)
    return (snap.dtype, True, data_ptr(snap) % ALIGNMENT == 0)


def data_ptr(snap: BatchSnapshot) -> int:
    """Address of the first element (of the first sample, when they lie apart)."""
    first = snap.array if snap.array is not None else snap.samples[0]
    return int(first.ctypes.data)


def _view(snap: BatchSnapshot) -> Any:
    return snap.array


def _load_stack() -> Any:
    import numpy as np

    def stack(snap: BatchSnapshot) -> Any:
        out = aligned_empty(snap.shape, snap.dtype)
        np.stack(snap.samples, out=out)  # the one copy
        return out

    return stack


def astype(snap: BatchSnapshot, dtype: str) -> BatchSnapshot:
    """The batch cast to canonical ``dtype`` (``to(..., dtype=)``), as a batch again:
    64-byte aligned numpy memory. Samples that lie apart are cast one by one and stay apart
    (the planner shows the cast's result keeping the source's flags, so stacking them here
    would make explain() count a copy that is not made)."""
    import numpy as np

    def cast(x: Any) -> Any:
        out = aligned_empty(x.shape, numpy_dtype(dtype))
        np.copyto(out, x, casting="unsafe")  # the user asked for this cast: any kind goes
        return out

    if snap.array is not None:
        return BatchSnapshot(cast(snap.array), (), snap.shape)
    return BatchSnapshot(None, tuple(map(cast, snap.samples)), snap.shape)


@hookimpl
def interop_frameworks() -> list[FrameworkSpec]:
    """DALI dynamic mode's Batch, a source converted into numpy (and on from there)."""
    return [
        FrameworkSpec(
            name=NAME, array_types=(f"{MODULE}.Batch", f"{__name__}.BatchSnapshot"),
            describe=describe, key=key, aligned_key=aligned_key, data_ptr=data_ptr,
            dtypes=DTYPES, target=False, snapshot=snapshot,
            flags=(Flag(SCATTERED, "its samples lie in separate buffers (ndd.as_batch of a "
                        "list), so one array of them is a copy; ndd.batch(b) makes one "
                        "contiguous copy in DALI"),),
            package=Package(module=MODULE, distribution="nvidia-dali-cuda120",
                            install_hint=INSTALL_HINT),
            casting=Casting(astype=astype),
        )
    ]  # fmt: skip


@hookimpl
def interop_converters() -> list[ConverterSpec]:
    """A contiguous batch as a numpy view of DALI's buffer; other batches stacked."""
    return [
        ConverterSpec(
            name="DALI Batch buffer as numpy", source=NAME, target="numpy",
            load=lambda: _view, zero_copy=True, cost=0.5,
            accepts=Needs(no_flags=frozenset({"requires_grad", SCATTERED})),
            note="the array views the Batch's DALI buffer (writes to it reach the Batch)",
            array=ArrayEdge(memory_note=True),
        ),
        ConverterSpec(
            name="stack DALI Batch samples", source=NAME, target="numpy",
            load=_load_stack, zero_copy=False, cost=2.0,
            accepts=Needs(flags=frozenset({SCATTERED})),
        ),
    ]  # fmt: skip
