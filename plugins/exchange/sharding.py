"""Sharded arrays: jax.Arrays over several devices and torch.distributed DTensors.

Both are a form of their framework's arrays (:mod:`.sharded_forms` declares how each is
found, described and keyed) carrying the flag "sharded" (with "replicated",
"multiprocess", and for DTensors "partial"), which every edge that does not name the form
refuses. The edges here take them:

- gathering, inside each framework: one copy onto one device (a replicated array shares
  a replica instead), after which every ordinary route applies;
- shard by shard across frameworks: ``to(jax_array, "torch", mesh=device_mesh)`` makes a
  DTensor, ``to(dtensor, "jax")`` a global jax.Array; each shard crosses zero-copy;
- ``sharding=`` into jax: any array laid out by ``jax.device_put(x, sharding)`` (a DTensor
  shard by shard instead).

Declarations only: the functions live in :mod:`.shards`, which imports the frameworks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from interop_core.plugin import ArrayEdge, ConverterSpec, FormSpec, Needs, hookimpl

from . import sharded_forms

#: Loaded once one is imported (docs/plugins.md, "Loaded when needed"): sharded arrays. A
#: DTensor exists only once torch.distributed.tensor is imported (``import torch`` does not).
INTEROP_ABOUT = ("torch.distributed.tensor", "jax")

#: Refused beside the opaque flags of other forms (the planner keeps those off): grad.
_OTHER_OPAQUE = frozenset({"requires_grad"})
#: The form every edge here takes (jax's and torch's sharded arrays).
_TAKES = frozenset({sharded_forms.SHARDED})


_SHARDED = frozenset({"sharded"})
_REPLICATED = frozenset({"sharded", "replicated"})
#: A jax.Array laid out as the call's sharding= asks (the goal of a call that passes it):
#: an array that is already sharded, some other way, is not such a result.
_LAID_OUT = frozenset({"sharded", "laid_out"})


# The functions live in .shards; each loader imports it when a route first needs its edge
# (never when this plugin is imported), and names its function, so a rename fails mypy.


def _load_replica() -> Callable[..., Any]:
    from .shards import jax_replica

    return jax_replica


def _load_gather() -> Callable[..., Any]:
    from .shards import jax_gather

    return jax_gather


def _load_local() -> Callable[..., Any]:
    from .shards import dtensor_local

    return dtensor_local


def _load_full() -> Callable[..., Any]:
    from .shards import dtensor_full

    return dtensor_full


def _load_lay_out() -> Callable[..., Any]:
    from .shards import jax_lay_out

    return jax_lay_out


def _load_to_dtensor() -> Callable[..., Any]:
    from .shards import jax_to_dtensor

    return jax_to_dtensor


def _check_mesh(options: Mapping[str, Any]) -> None:
    """mesh= must be a DeviceMesh (checked when the route is found: explain() refuses too)."""
    from .shards import device_mesh

    device_mesh(options["mesh"])


def _load_from_dtensor() -> Callable[..., Any]:
    from .shards import dtensor_to_jax

    return dtensor_to_jax


def _edge(
    name: str, source: str, target: str, load: Callable[[], Callable[..., Any]],
    zero_copy: bool, accepts: Needs, note: str, *, imports_checked: bool = False, **more: Any,
) -> ConverterSpec:  # fmt: skip
    """An edge of these arrays on the CPU and CUDA."""
    return ConverterSpec(
        name=name, source=source, target=target, load=load, zero_copy=zero_copy,
        accepts=accepts, devices=frozenset({"cpu", "cuda"}), note=note, **more,
        array=ArrayEdge(forms=_TAKES, imports_checked=imports_checked),
    )  # fmt: skip


@hookimpl
def interop_forms() -> list[FormSpec]:
    """The sharded form of JAX and torch (see :mod:`.sharded_forms`)."""
    return sharded_forms.forms()


@hookimpl
def interop_converters() -> list[ConverterSpec]:
    """Gathers and replicas in jax and torch; jax.Array <-> DTensor shard by shard."""
    return [
        _edge("one replica", "jax", "jax", _load_replica, True,
              Needs(flags=_REPLICATED, no_flags=_OTHER_OPAQUE),
              "the array is replicated: this process's first replica is shared, nothing is "
              "gathered"),
        # Dearer than jax's own copy (5.0), which keeps the sharding: a tie would go to
        # whichever plugin registered first.
        _edge("gather shards", "jax", "jax", _load_gather, False,
              Needs(flags=_SHARDED, no_flags=_OTHER_OPAQUE | {"multiprocess"}),
              "the shards are gathered once, into one buffer on the first shard's device",
              cost=6.0),
        _edge("DTensor.to_local()", "torch", "torch", _load_local, True,
              Needs(flags=_REPLICATED, no_flags=_OTHER_OPAQUE),
              "the DTensor is replicated: this rank's local tensor is the whole array"),
        # A collective: dearer than any route that stays shard by shard.
        # It takes sharding= only to refuse it where a layout cannot be kept (Partial).
        _edge("DTensor.full_tensor()", "torch", "torch", _load_full, False,
              Needs(flags=_SHARDED, no_flags=_OTHER_OPAQUE),
              "DTensor.full_tensor() is a collective: every rank of the mesh must make the "
              "same to() call, and each gets the whole array",
              cost=50.0, options=("sharding",), context=True),
        *(
            _edge("jax.device_put(sharding=)", source, "jax", _load_lay_out, False, accepts,
                  "sharding=: the array is laid out by jax.device_put(x, sharding), each "
                  "shard copied onto its devices",
                  cost=5.0, options=("sharding",), context=True, opt_in="sharding",
                  adds_flags=_LAID_OUT)
            # From numpy in one copy (and so from anything numpy views); JAX's x64 switch,
            # which the planner applies, keeps device_put from narrowing 64-bit arrays.
            for source, accepts in (
                ("jax", Needs(no_flags=_OTHER_OPAQUE | {"multiprocess"})),
                ("numpy", Needs()),
            )
        ),
        _edge("jax shards as a DTensor", "jax", "torch", _load_to_dtensor, True,
              Needs(no_flags=_OTHER_OPAQUE),
              "per shard: the shard at this rank's mesh coordinate -> torch.from_dlpack "
              "(zero-copy) -> DTensor.from_local(placements from the PartitionSpec); no data "
              "moves between processes",
              options=("mesh",), context=True, opt_in="mesh", adds_flags=_SHARDED,
              validate=_check_mesh),
        _edge("DTensor shards as a jax.Array", "torch", "jax", _load_from_dtensor, True,
              Needs(flags=_SHARDED, no_flags=_OTHER_OPAQUE | {"partial"}),
              "per shard: each of this process's devices gets its block of the rank's local "
              "tensor (zero-copy when the block is contiguous and 64-byte aligned) -> "
              "jax.make_array_from_single_device_arrays; sharding= defaults to the DTensor's "
              "mesh and placements",
              options=("sharding",), context=True, adds_flags=_LAID_OUT,
              # It hands JAX each block, not the DTensor, and copies the blocks JAX cannot
              # import (not contiguous or not 64-byte aligned): JAX's rules are its own.
              imports_checked=True),
    ]  # fmt: skip
