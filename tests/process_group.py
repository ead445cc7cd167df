"""This process as one rank of a ``jax.distributed`` and torch gloo group on the loopback
address, for routes of sharded arrays across processes on CPUs (tests/distributed_worker.py,
benchmarks/sharded.py). Test code, not interop_core: it imports jax and torch.distributed.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def process_group_rank(rank: int, world: int, jax_port: int, torch_port: int) -> Iterator[None]:
    """Run the ``with`` block as rank ``rank`` of ``world`` processes, each joined to a
    ``jax.distributed`` group and a torch gloo group on 127.0.0.1 (ports of rank 0).

    On leaving, the ranks meet at a barrier and both groups are shut down. An exception in
    the block prints its traceback and ends the process at once (exit status 1): its peers
    may wait for it in a collective, and a normal exit would wait for them.
    """
    import jax
    import torch.distributed as dist

    jax.distributed.initialize(f"127.0.0.1:{jax_port}", num_processes=world, process_id=rank)
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{torch_port}", rank=rank, world_size=world
    )
    try:
        yield
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)
    dist.barrier()
    dist.destroy_process_group()
    jax.distributed.shutdown()  # type: ignore[no-untyped-call]  # untyped in jax 0.10
