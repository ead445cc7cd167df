"""Sharded arrays: jax.Arrays over several devices and torch.distributed DTensors.

Both are arrays of their framework carrying the flag "sharded" (with "replicated",
"multiprocess", and for DTensors "partial"; see the torch and jax plugins' ``describe``),
which every plain edge refuses. The edges here take them:

- gathering, inside each framework: one copy onto one device (a replicated array shares
  a replica instead), after which every ordinary route applies;
- shard by shard across frameworks: ``to(jax_array, "torch", mesh=device_mesh)`` makes a
  DTensor, ``to(dtensor, "jax")`` a global jax.Array; each shard crosses zero-copy.

Declarations only: the functions live in :mod:`.shards`, which imports the frameworks.
"""

from __future__ import annotations

from typing import Any

from interop_core import ConverterSpec, hookimpl
from interop_core.predicates import OPAQUE_FLAGS, Needs

from .jax import X64

_HERE_AND_GPU = frozenset({"cpu", "cuda"})
#: Opaque flags other than those of sharded arrays (a tracer, a sparse tensor, ...), and grad.
_OTHER_OPAQUE = (OPAQUE_FLAGS - {"sharded", "multiprocess"}) | {"requires_grad"}


def _shards(name: str) -> Any:
    from . import shards

    return getattr(shards, name)


@hookimpl
def interop_converters() -> list[ConverterSpec]:
    """Gathers and replicas in jax and torch; jax.Array <-> DTensor shard by shard."""
    return [
        ConverterSpec(
            name="one replica",
            source="jax",
            target="jax",
            load=lambda: _shards("jax_replica"),
            zero_copy=True,
            accepts=Needs(flags=frozenset({"sharded", "replicated"}), no_flags=_OTHER_OPAQUE),
            devices=_HERE_AND_GPU,
            note="the array is replicated: this process's first replica is shared, nothing "
            "is gathered",
        ),
        ConverterSpec(
            name="gather shards",
            source="jax",
            target="jax",
            load=lambda: _shards("jax_gather"),
            zero_copy=False,
            accepts=Needs(flags=frozenset({"sharded"}), no_flags=_OTHER_OPAQUE | {"multiprocess"}),
            devices=_HERE_AND_GPU,
            cost=5.0,
            note="the shards are gathered once, into one buffer on the first shard's device",
        ),
        ConverterSpec(
            name="DTensor.to_local()",
            source="torch",
            target="torch",
            load=lambda: _shards("dtensor_local"),
            zero_copy=True,
            accepts=Needs(flags=frozenset({"sharded", "replicated"}), no_flags=_OTHER_OPAQUE),
            devices=_HERE_AND_GPU,
            note="the DTensor is replicated: this rank's local tensor is the whole array",
        ),
        ConverterSpec(
            name="DTensor.full_tensor()",
            source="torch",
            target="torch",
            load=lambda: _shards("dtensor_full"),
            zero_copy=False,
            accepts=Needs(flags=frozenset({"sharded"}), no_flags=_OTHER_OPAQUE),
            devices=_HERE_AND_GPU,
            # A collective: dearer than any route that stays shard by shard.
            cost=50.0,
            note="DTensor.full_tensor() is a collective: every rank of the mesh must make "
            "the same to() call, and each gets the whole array",
        ),
        ConverterSpec(
            name="jax shards as a DTensor",
            source="jax",
            target="torch",
            load=lambda: _shards("jax_to_dtensor"),
            zero_copy=True,
            accepts=Needs(no_flags=_OTHER_OPAQUE),
            devices=_HERE_AND_GPU,
            options=("mesh",),
            context=True,
            opt_in="mesh",
            adds_flags=frozenset({"sharded"}),
            note="per shard: the shard at this rank's mesh coordinate -> torch.from_dlpack "
            "(zero-copy) -> DTensor.from_local(placements from the PartitionSpec); no data "
            "moves between processes",
        ),
        ConverterSpec(
            name="DTensor shards as a jax.Array",
            source="torch",
            target="jax",
            load=lambda: _shards("dtensor_to_jax"),
            zero_copy=True,
            accepts=Needs(
                flags=frozenset({"sharded"}), no_flags=_OTHER_OPAQUE | {"partial"}, flag=X64
            ),
            devices=_HERE_AND_GPU,
            options=("sharding",),
            context=True,
            adds_flags=frozenset({"sharded"}),
            note="per shard: each of this process's devices gets its block of the rank's "
            "local tensor (zero-copy when the block is contiguous and 64-byte aligned) -> "
            "jax.make_array_from_single_device_arrays; sharding= defaults to the DTensor's "
            "mesh and placements",
        ),
    ]
