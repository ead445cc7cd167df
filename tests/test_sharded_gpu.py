"""Sharded arrays on a CUDA GPU (marker ``gpu``; skipped where torch or JAX sees no GPU).

One process, one GPU: a one-rank cuda DeviceMesh and a jax Mesh of the same GPU. The CPU
tests (test_sharded.py, test_distributed.py) cover the layouts; these check that shards
stay on their GPU and are shared there.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from conftest import need, one_rank_mesh

from interop_core import to

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def cuda_mesh() -> Iterator[Any]:
    """A one-rank gloo group and a 1-D cuda DeviceMesh, or a skip."""
    torch = need("torch")
    jax = need("jax")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA GPU")
    try:
        jax.devices("gpu")
    except RuntimeError:
        pytest.skip("JAX sees no GPU")
    with one_rank_mesh("cuda") as device_mesh:
        yield device_mesh


def test_jax_gpu_shards_to_dtensor_and_back_stay_on_the_gpu(cuda_mesh: Any) -> None:
    import jax
    import numpy as np
    import torch
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P
    from torch.distributed.tensor import Shard

    gpu = jax.devices("gpu")[0]
    x = jax.device_put(
        np.arange(64.0, dtype=np.float32).reshape(8, 8),
        NamedSharding(Mesh(np.array([gpu]), ("d",)), P("d")),
    )
    d = to(x, "torch", mesh=cuda_mesh)
    local = d.to_local()
    assert local.is_cuda and d.placements == (Shard(0),)
    assert local.data_ptr() == x.addressable_shards[0].data.unsafe_buffer_pointer()
    y = to(d, "jax")
    assert next(iter(y.devices())).platform == "gpu"
    assert y.addressable_shards[0].data.unsafe_buffer_pointer() == local.data_ptr()
    torch.testing.assert_close(local.cpu(), torch.arange(64.0).reshape(8, 8))


def test_gather_of_gpu_shards_stays_on_the_gpu(cuda_mesh: Any) -> None:
    import jax
    import numpy as np
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    gpus = jax.devices("gpu")
    if len(gpus) < 2:
        pytest.skip("gathering shards across GPUs needs two GPUs")
    mesh = Mesh(np.array(gpus[:2]), ("d",))
    x = jax.device_put(np.arange(16.0, dtype=np.float32), NamedSharding(mesh, P("d")))
    t = to(x, "torch")
    assert t.is_cuda
    np.testing.assert_array_equal(t.cpu().numpy(), np.arange(16.0))
