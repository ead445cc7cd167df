"""The sharded form of JAX's and torch's arrays: how it is found, described and keyed.

A sharded array carries the flag "sharded" (opaque: only the edges of :mod:`.sharding` and
JAX's own copy, which name the form, take it), with "replicated" (every device holds all
of it), "multiprocess" (it spans processes, opaque too) and, for DTensors, "partial"
(unreduced placements). The framework plugins describe arrays on one device only; this
module declares the rest (``interop_forms`` in :mod:`.sharding`):

- JAX: a ``jax.Array`` whose sharding spans several devices, told apart per array (its
  sharding); JAX's key raises on it, and the key here keys it by the sharding's structure;
- torch: ``torch.distributed.tensor.DTensor``, by type.

A key holds the structure of a sharding, never the sharding (which keeps its mesh alive in
the plan cache). Imports no framework: the functions read the objects they are given.
"""

from __future__ import annotations

from typing import Any

from interop_core.plugin import Device, Flag, FormSpec, TensorInfo

SHARDED = "sharded"

_MULTIPROCESS = "multiprocess"


# -- JAX -------------------------------------------------------------------------------------


def jax_is_sharded(x: Any) -> bool:
    """Whether a jax.Array spans several devices (a tracer has no sharding: no)."""
    sharding = x.sharding
    return type(sharding).__name__ != "SingleDeviceSharding" and sharding.num_devices > 1


def jax_structure(x: Any) -> tuple[Any, bool, bool]:
    """What routes read of a sharded jax.Array: the device of its first local shard,
    whether it is fully replicated, whether this process holds all of it."""
    first = x.addressable_shards[0].device
    return (first, bool(x.is_fully_replicated), bool(x.is_fully_addressable))


def _jax_key(x: Any) -> Any:
    return (x.dtype, jax_structure(x))


def _jax_describe(x: Any) -> TensorInfo:
    from ..frameworks.jax import as_device

    first, replicated, addressable = jax_structure(x)
    flags = {SHARDED, *("replicated",) * replicated, *(_MULTIPROCESS,) * (not addressable)}
    return TensorInfo(
        framework="jax", dtype=str(x.dtype), device=as_device(first), shape=tuple(x.shape),
        layout="C", readonly=False, aligned=True, flags=frozenset(flags),
    )  # fmt: skip


# -- torch -----------------------------------------------------------------------------------


def dtensor_flags(t: Any) -> frozenset[str]:
    """A DTensor's flags: "sharded" always (plain edges must not read its wrapper), with
    "replicated" (every rank holds it all), "partial" (unreduced placements) and
    "multiprocess" (its mesh spans several ranks)."""
    placements = t.placements
    flags = {SHARDED}
    if all(p.is_replicate() for p in placements):
        flags.add("replicated")
    if any(p.is_partial() for p in placements):
        flags.add("partial")
    if t.device_mesh.size() > 1:
        flags.add(_MULTIPROCESS)
    if t.requires_grad:
        flags.add("requires_grad")
    return frozenset(flags)


def _dtensor_key(t: Any) -> Any:
    # Placements are small frozen dataclasses (no mesh): safe to keep in the plan cache.
    return (
        t.dtype, t.device, tuple(t.placements), t.device_mesh.size(), t.requires_grad,
        t.is_contiguous(),
    )  # fmt: skip


def _dtensor_describe(t: Any) -> TensorInfo:
    """A DTensor by its global shape and local device; its layout is that of its global
    strides, as a class (its key reads only whether it is contiguous)."""
    from ..frameworks.torch import dtype_name, refuse_meta

    refuse_meta(t)
    return TensorInfo(
        framework="torch", dtype=dtype_name(t.dtype),
        device=Device(t.device.type, t.device.index or 0), shape=tuple(t.shape),
        layout="C" if t.is_contiguous() else "strided", readonly=False, aligned=True,
        flags=dtensor_flags(t),
    )  # fmt: skip


def _dtensor_astype(t: Any, dtype: str) -> Any:
    from ..frameworks.torch import torch_dtype

    return t.to(torch_dtype(dtype))  # keeps its placements; autograd records the cast


# -- the forms -------------------------------------------------------------------------------


def forms() -> list[FormSpec]:
    """The sharded form of JAX and torch."""
    return [
        FormSpec(
            name=SHARDED,
            framework="jax",
            types=("jax.Array",),
            test=jax_is_sharded,
            flags=(
                Flag(SHARDED, "the array is sharded over several devices (gather it onto one "
                     "device first)", opaque=True),
                Flag("replicated", "every device holds the whole array"),
                Flag(_MULTIPROCESS, "the array spans several processes, so no one process "
                     "can gather it (pass mesh= for a DTensor, or gather it in every process "
                     "with jax.experimental.multihost_utils.process_allgather)", opaque=True),
            ),
            describe=_jax_describe,
            key=_jax_key,
        ),
        FormSpec(
            name=SHARDED,
            framework="torch",
            types=("torch.distributed.tensor.DTensor",),
            flags=(
                Flag(SHARDED, "the DTensor is sharded over several devices (gather it onto "
                     "one device first, e.g. with .full_tensor())", opaque=True),
                Flag("replicated", "every rank holds the whole tensor"),
                Flag("partial", "the DTensor holds unreduced partial values (a Partial "
                     "placement); reduce them first with dtensor.redistribute(placements="
                     "[Replicate()] * mesh.ndim)"),
                Flag(_MULTIPROCESS, "the DTensor spans several processes, so no one process "
                     "can gather it alone (call .full_tensor() in every process: it is a "
                     "collective)", opaque=True),
            ),
            describe=_dtensor_describe,
            key=_dtensor_key,
            astype=_dtensor_astype,
        ),
    ]  # fmt: skip
