"""One rank of test_distributed.py: jax.distributed and torch.distributed (gloo) on the
loopback address, one CPU device per process.

Run as ``python distributed_worker.py RANK WORLD JAX_PORT TORCH_PORT FLAG_DIR``. Prints one
JSON line of what it checked; any failed check raises (exit status 1). A watchdog ends a
rank that waits longer than a minute, so a conversion that needed the other rank fails
the test instead of hanging it.
"""

from __future__ import annotations

import faulthandler
import gc
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from process_group import process_group_rank

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=1"


def wait_for(flag: Path) -> None:
    """Wait for ``flag`` to exist: a signal between ranks that is no collective."""
    while not flag.exists():
        time.sleep(0.05)


def checks(rank: int, world: int, flags: Path) -> dict[str, Any]:
    import jax
    import numpy as np
    import torch
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor, Replicate, Shard, distribute_tensor

    from interop_core import NoRouteError, explain, to

    facts: dict[str, Any] = {"rank": rank, "jax_process": jax.process_index()}
    full = np.arange(2 * world * 16, dtype=np.float32).reshape(2 * world, 16)
    block = full[2 * rank : 2 * rank + 2]
    sharding = NamedSharding(Mesh(np.array(jax.devices()), ("d",)), P("d"))
    local = jax.device_put(block, jax.local_devices()[0])
    x = jax.make_array_from_single_device_arrays(full.shape, sharding, [local])
    shard_ptr = x.addressable_shards[0].data.unsafe_buffer_pointer()
    mesh = init_device_mesh("cpu", (world,), mesh_dim_names=("d",))

    # Same-device routes with the other rank away: rank 0 converts while rank 1 waits on
    # a file, so a conversion that needed rank 1 (a collective) would never return.
    if rank == 1:
        wait_for(flags / "rank0-converted")
    d = to(x, "torch", mesh=mesh)
    y = to(d, "jax")
    if rank == 0:
        (flags / "rank0-converted").touch()
    facts["explain"] = [s.converter for s in explain(x, "torch", mesh=mesh).steps]
    assert isinstance(d, DTensor) and d.placements == (Shard(0),), d
    assert tuple(d.shape) == full.shape and d.dtype == torch.float32
    assert d.to_local().data_ptr() == shard_ptr, "the DTensor's local tensor is the jax shard"
    np.testing.assert_array_equal(d.to_local().numpy(), block)
    assert y.sharding.is_equivalent_to(x.sharding, 2) and not y.is_fully_addressable
    assert y.addressable_shards[0].data.unsafe_buffer_pointer() == shard_ptr
    del x, y, local
    gc.collect()
    np.testing.assert_array_equal(d.to_local().numpy(), block)  # the shard outlives them

    try:
        to(to(d, "jax"), "torch")
    except NoRouteError as exc:
        facts["gather_refused"] = "process_allgather" in str(exc)

    # Collectives: every rank makes the same calls.
    np.testing.assert_array_equal(to(d, "numpy"), full)
    facts["numpy_route"] = [s.converter for s in explain(d, "numpy").steps]

    # torch.tensor: torch memory is 64-byte aligned, as JAX needs to share it.
    cols = distribute_tensor(torch.tensor(full.T), mesh, [Shard(1)])
    a = to(cols, "jax")
    assert a.sharding.spec == P(None, "d"), a.sharding
    assert a.addressable_shards[0].data.unsafe_buffer_pointer() == cols.to_local().data_ptr()
    back = to(a, "torch", mesh=mesh)
    assert back.placements == (Shard(1),)
    np.testing.assert_array_equal(back.full_tensor().numpy(), full.T)

    rep = distribute_tensor(torch.tensor(full), mesh, [Replicate()])
    r = to(rep, "jax")
    assert r.is_fully_replicated and not r.is_fully_addressable
    assert r.addressable_shards[0].data.unsafe_buffer_pointer() == rep.to_local().data_ptr()
    assert to(r, "numpy").ctypes.data == rep.to_local().data_ptr()  # a replica, shared
    facts["ok"] = True
    return facts


def main() -> None:
    rank, world, jax_port, torch_port = (int(a) for a in sys.argv[1:5])
    flags = Path(sys.argv[5])
    faulthandler.dump_traceback_later(60, exit=True)
    with process_group_rank(rank, world, jax_port, torch_port):
        facts = checks(rank, world, flags)
    print(json.dumps(facts), flush=True)


if __name__ == "__main__":
    main()
