# ruff: noqa: E501  (the "upstream: <repo>/<path>::<Class>::<test>" lines are longer than 100)
"""PyTorch's DTensor tests, re-expressed as conversions of DTensors with to() and explain().

Carries the cases on DTensor's public API (from_local / to_local, full_tensor, placements
Shard / Replicate / Partial, distribute_tensor, redistribute, uneven shards, requires_grad,
dtypes) of pytorch/pytorch test/distributed/tensor/test_dtensor.py (DTensorTest,
DTensorMeshTest), test_api.py (DTensorAPITest) and test_redistribute.py (RedistributeTest).
Upstream builds DTensors on 4 or 8 ranks and checks their sizes, placements, local shards
and full tensors. Here the same DTensors (built the same way) are converted, and the result
is checked against a numpy reference: ``to(dtensor, "jax")`` is a global jax.Array whose
NamedSharding is the DeviceMesh and placements and whose shard is the rank's local tensor
(shared: ``unsafe_buffer_pointer()`` == ``data_ptr()``); ``to(dtensor, "numpy")`` is
``full_tensor()`` (a collective), or the local tensor itself when the DTensor is replicated
(shared: ``ctypes.data``); ``to(jax_array, "torch", mesh=)`` is a DTensor whose local tensor
is the jax shard. Where the project refuses what DTensor allows (64-bit dtypes without x64,
tensors that require grad, Partial or uneven layouts into jax), the test says DIFFERS.

Most cases run in this process on a one-rank gloo group (conftest.one_rank_mesh) with 1-D,
2-D (1x1) and 3-D (1x1x1) CPU meshes, which keeps every placement meaningful except those
that need several ranks. Those (uneven shards, Partial sums, a replicated DTensor converted
by one rank alone) run once per module in two processes: this file run as a script is one
rank (:func:`_rank_main`), and the tests check what each rank reported.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import free_port, need, one_rank_mesh, rank_facts

from interop_core import (
    ConversionError,
    CopyRequiredError,
    NoRouteError,
    NotAnArrayError,
    OptionError,
    explain,
    to,
)

np = need("numpy")
torch = need("torch")
jax = need("jax")

Mesh, NamedSharding, P = jax.sharding.Mesh, jax.sharding.NamedSharding, jax.sharding.PartitionSpec

pytestmark = pytest.mark.skipif(
    not torch.distributed.is_available(), reason="torch.distributed is not available"
)

TO_JAX = "DTensor shards as a jax.Array"
FULL = "DTensor.full_tensor()"
LOCAL = "DTensor.to_local()"
TO_DTENSOR = "jax shards as a DTensor"
WORLD = 2  # ranks of the multi-process cases


# --- helpers ----------------------------------------------------------------------------


def values(shape: tuple[int, ...], dtype: Any = np.float32) -> Any:
    """The reference array of ``shape``: an arange (exact in every dtype used here)."""
    return np.arange(int(np.prod(shape))).reshape(shape).astype(dtype)


def tensor(shape: tuple[int, ...]) -> Any:
    """The reference arange as a float32 tensor in memory torch allocated (64-byte aligned,
    as JAX needs to share it; numpy's allocations mostly are not)."""
    return torch.from_numpy(values(shape)).clone()


def jptr(a: Any, i: int = 0) -> int:
    """The data pointer of shard ``i`` of a jax.Array, by JAX's own API."""
    return int(a.addressable_shards[i].data.unsafe_buffer_pointer())


def placements(*names: str) -> list[Any]:
    """DTensor placements from short names: "S0", "S-1", "R", "P"."""
    from torch.distributed.tensor import Partial, Replicate, Shard

    out: list[Any] = []
    for n in names:
        out.append(Replicate() if n == "R" else Partial() if n == "P" else Shard(int(n[1:])))
    return out


def distribute(mesh: Any, names: tuple[str, ...], shape: tuple[int, ...], dtype: Any) -> Any:
    """``distribute_tensor`` of the reference arange of ``shape`` in the torch ``dtype``."""
    from torch.distributed.tensor import distribute_tensor

    return distribute_tensor(tensor(shape).to(dtype), mesh, placements(*names))


def jax_mesh(names: tuple[str, ...]) -> Any:
    """A jax Mesh of this process's first CPU device, one size-1 axis per name."""
    return Mesh(np.array(jax.devices()[:1]).reshape((1,) * len(names)), names)


# --- meshes -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mesh() -> Iterator[Any]:
    """A one-rank gloo group and its 1-D CPU DeviceMesh ("d")."""
    with one_rank_mesh("cpu") as device_mesh:
        yield device_mesh


@pytest.fixture(scope="module")
def mesh2(mesh: Any) -> Any:
    """A 2-D (1x1) CPU DeviceMesh ("x", "y") on the same group."""
    from torch.distributed.device_mesh import init_device_mesh

    return init_device_mesh("cpu", (1, 1), mesh_dim_names=("x", "y"))


@pytest.fixture(scope="module")
def mesh3(mesh: Any) -> Any:
    """A 3-D (1x1x1) CPU DeviceMesh ("a", "b", "c") on the same group."""
    from torch.distributed.device_mesh import init_device_mesh

    return init_device_mesh("cpu", (1, 1, 1), mesh_dim_names=("a", "b", "c"))


# --- DTensor -> jax: from_local, distribute_tensor, placements ------------------------------


@pytest.mark.parametrize("name", ["S0", "R"])
def test_from_local_to_jax_shares_the_local_tensor(mesh: Any, name: str) -> None:
    """A DTensor from_local with Shard(0) or Replicate() is a jax.Array over the mesh whose
    only shard is the local tensor, shared; the global shape is from_local's.

    upstream: pytorch/pytorch/test/distributed/tensor/test_dtensor.py::DTensorTest::test_from_local
    """
    from torch.distributed.tensor import DTensor

    local = tensor((3, 3))
    d = DTensor.from_local(local, mesh, placements(name))
    route = explain(d, "jax")
    assert [s.converter for s in route.steps] == [TO_JAX] and route.copies == 0
    a = to(d, "jax")
    assert isinstance(a, jax.Array) and a.shape == (3, 3) and a.dtype == np.float32
    assert a.sharding.mesh.axis_names == ("d",)
    assert a.sharding.spec == (P("d", None) if name == "S0" else P(None, None))
    assert jptr(a) == local.data_ptr()
    np.testing.assert_array_equal(np.asarray(a), values((3, 3)))


def test_from_local_partial_to_jax_is_reduced_by_full_tensor(mesh: Any) -> None:
    """A Partial DTensor holds unreduced values, which no jax sharding holds: to() reduces it
    by full_tensor() (a stated copy) and the jax.Array holds the sum over ranks (one rank
    here: the local tensor's values).

    upstream: pytorch/pytorch/test/distributed/tensor/test_dtensor.py::DTensorTest::test_from_local
    """
    from torch.distributed.tensor import DTensor

    local = tensor((3, 3))
    d = DTensor.from_local(local, mesh, placements("P"))
    assert d.size() == local.size()
    route = explain(d, "jax")
    assert route.steps[0].converter == FULL and route.copies == 1
    assert any("Partial" in r.reason for r in route.refused)
    a = to(d, "jax")
    assert isinstance(a, jax.Array) and a.shape == (3, 3)
    np.testing.assert_array_equal(np.asarray(a), values((3, 3)))


@pytest.mark.parametrize("how", ["from_local", "redistribute"])
def test_negative_shard_dim_is_the_last_dimension(mesh: Any, how: str) -> None:
    """Shard(-1) is Shard(1) of a 2-D tensor: the jax.Array is split on its dimension 1.

    upstream: pytorch/pytorch/test/distributed/tensor/test_dtensor.py::DTensorTest::test_from_local_negative_dim
    upstream: pytorch/pytorch/test/distributed/tensor/test_redistribute.py::RedistributeTest::test_redistribute_negative_shard_dim
    """
    from torch.distributed.tensor import DTensor

    if how == "from_local":
        d = DTensor.from_local(tensor((3, 3)), mesh, placements("S-1"))
    else:
        d = distribute(mesh, ("S1",), (12, 3), torch.float32).redistribute(mesh, placements("S-1"))
    assert d.placements[0].dim == 1
    a = to(d, "jax")
    assert a.sharding.spec == P(None, "d")
    assert jptr(a) == d.to_local().data_ptr()
    np.testing.assert_array_equal(np.asarray(a), d.full_tensor().numpy())


@pytest.mark.parametrize(
    ("name", "spec"),
    [("S0", P("d", None)), ("S1", P(None, "d")), ("R", P(None, None))],
    ids=["Shard(0)", "Shard(1)", "Replicate()"],
)
def test_distribute_tensor_to_jax(mesh: Any, name: str, spec: Any) -> None:
    """distribute_tensor of a (3*ws, 3*ws) arange: the jax.Array keeps the layout (the
    PartitionSpec of the placement), the values, and shares the local shard.

    upstream: pytorch/pytorch/test/distributed/tensor/test_api.py::DTensorAPITest::test_distribute_tensor_rank
    upstream: pytorch/pytorch/test/distributed/tensor/test_dtensor.py::DTensorTest::test_shard_tensor
    """
    d = distribute(mesh, (name,), (3, 3), torch.float32)
    assert d.to_local().shape == (3, 3)
    a = to(d, "jax")
    assert a.sharding == NamedSharding(jax_mesh(("d",)), spec)
    assert jptr(a) == d.to_local().data_ptr()
    np.testing.assert_array_equal(np.asarray(a), values((3, 3)))
    np.testing.assert_array_equal(d.full_tensor().numpy(), values((3, 3)))  # source unchanged


TWO_D = [
    (("S0", "S1"), P("x", "y")),
    (("S0", "S0"), P(("x", "y"), None)),
    (("S0", "R"), P("x", None)),
    (("S1", "R"), P(None, "x")),
    (("R", "S0"), P("y", None)),
    (("R", "S1"), P(None, "y")),
    (("R", "R"), P(None, None)),
]


@pytest.mark.parametrize(("names", "spec"), TWO_D, ids=["-".join(n) for n, _ in TWO_D])
def test_two_dimensional_mesh_placements_and_back(mesh2: Any, names: Any, spec: Any) -> None:
    """On a 2-D mesh each placement pair is a PartitionSpec over the mesh axes (two mesh
    axes on one dimension: a tuple, major to minor); the shard is shared, and the jax.Array
    converts back (mesh=) to a DTensor with the same placements over the same memory.

    upstream: pytorch/pytorch/test/distributed/tensor/test_dtensor.py::DTensorMeshTest::test_dtensor_2d_mesh
    upstream: pytorch/pytorch/test/distributed/tensor/test_dtensor.py::DTensorTest::test_shard_tensor_2d
    upstream: pytorch/pytorch/test/distributed/tensor/test_dtensor.py::DTensorMeshTest::test_dtensor_spec_local_shard_offset
    """
    from torch.distributed.tensor import DTensor

    d = distribute(mesh2, names, (4, 6), torch.float32)
    a = to(d, "jax")
    assert a.sharding.mesh.axis_names == ("x", "y") and a.sharding.spec == spec
    assert jptr(a) == d.to_local().data_ptr()
    np.testing.assert_array_equal(np.asarray(a), values((4, 6)))
    back = to(a, "torch", mesh=mesh2)
    assert isinstance(back, DTensor) and back.placements == d.placements
    assert back.shape == d.shape and back.to_local().data_ptr() == d.to_local().data_ptr()


@pytest.mark.parametrize(
    ("names", "spec"),
    [(("S0", "S1", "S2"), P("a", "b", "c")), (("S0", "S0", "S2"), P(("a", "b"), None, "c"))],
    ids=["S0-S1-S2", "S0-S0-S2"],
)
def test_three_dimensional_mesh(mesh3: Any, names: Any, spec: Any) -> None:
    """A 3-D mesh: one mesh axis per dimension, or two on dimension 0.

    upstream: pytorch/pytorch/test/distributed/tensor/test_dtensor.py::DTensorMeshTest::test_device_mesh_nd
    """
    d = distribute(mesh3, names, (2, 3, 4), torch.float32)
    a = to(d, "jax")
    assert a.sharding.mesh.axis_names == ("a", "b", "c") and a.sharding.spec == spec
    assert jptr(a) == d.to_local().data_ptr()
    np.testing.assert_array_equal(np.asarray(a), values((2, 3, 4)))


# --- dtypes ------------------------------------------------------------------------------

SHARED_DTYPES = ["float32", "float16", "bfloat16", "int32", "int8", "uint8", "bool", "complex64"]


@pytest.mark.parametrize("dtype", SHARED_DTYPES)
def test_to_local_is_the_jax_shard_for_each_dtype(mesh: Any, dtype: str) -> None:
    """The jax.Array's shard is to_local()'s memory, with the DTensor's dtype, for every
    dtype JAX holds without x64 (upstream parametrizes float32 and cfloat).

    upstream: pytorch/pytorch/test/distributed/tensor/test_dtensor.py::DTensorTest::test_to_local
    upstream: pytorch/pytorch/test/distributed/tensor/test_redistribute.py::RedistributeTest::test_shard_to_replicate_forward_backward
    """
    d = distribute(mesh, ("S0",), (4, 4), getattr(torch, dtype))
    a = to(d, "jax")
    assert a.dtype == jax.numpy.dtype(dtype)
    assert jptr(a) == d.to_local().data_ptr()
    np.testing.assert_array_equal(np.asarray(a), values((4, 4)).astype(a.dtype))


@pytest.mark.parametrize("dtype", ["float64", "int64", "complex128"])
def test_64_bit_dtensor_to_jax_without_x64_is_refused(mesh: Any, dtype: str) -> None:
    """DIFFERS: a DTensor holds 64-bit dtypes; JAX without jax_enable_x64 would narrow them,
    so to() raises NoRouteError naming the flag (and dtype= casts first); with x64 on, the
    shard is shared as it is.

    upstream: pytorch/pytorch/test/distributed/tensor/test_dtensor.py::DTensorTest::test_to_local
    """
    d = distribute(mesh, ("S0",), (2, 4), getattr(torch, dtype))
    with jax.enable_x64(False), pytest.raises(NoRouteError, match="jax_enable_x64"):
        to(d, "jax")
    with jax.enable_x64(True):
        a = to(d, "jax")
        assert a.dtype == np.dtype(dtype) and jptr(a) == d.to_local().data_ptr()
        np.testing.assert_array_equal(np.asarray(a), values((2, 4), dtype))


def test_dtype_option_casts_a_dtensor_before_jax(mesh: Any) -> None:
    """dtype= casts the DTensor in torch (one stated copy) and keeps its layout.

    upstream: pytorch/pytorch/test/distributed/tensor/test_api.py::DTensorAPITest::test_distribute_module_casting
    """
    d = distribute(mesh, ("S1",), (2, 4), torch.float64)
    with jax.enable_x64(False):
        route = explain(d, "jax", dtype="float32")
        a = to(d, "jax", dtype="float32")
    assert route.copies == 1 and route.steps[-1].converter == TO_JAX
    assert a.dtype == np.float32 and a.sharding.spec == P(None, "d")
    np.testing.assert_array_equal(np.asarray(a), values((2, 4)))


def test_dtensor_cast_by_to_converts_as_bfloat16(mesh: Any) -> None:
    """A replicated DTensor cast by .to(torch.bfloat16) is a bfloat16 jax.Array over its
    (new) local tensor.

    upstream: pytorch/pytorch/test/distributed/tensor/test_api.py::DTensorAPITest::test_distribute_module_casting
    """
    d = distribute(mesh, ("R",), (10,), torch.float32).to(torch.bfloat16)
    assert d.dtype == torch.bfloat16 and d.to_local().dtype == torch.bfloat16
    a = to(d, "jax")
    assert a.dtype == jax.numpy.bfloat16 and jptr(a) == d.to_local().data_ptr()
    np.testing.assert_array_equal(np.asarray(a).astype(np.float32), values((10,)))


@pytest.mark.parametrize(
    "dtype", ["float32", "float64", "int64", "int32", "bfloat16", "bool", "complex64"]
)
def test_full_tensor_to_numpy_keeps_the_dtype(mesh: Any, dtype: str) -> None:
    """A sharded DTensor to numpy is its full_tensor() (a collective, one stated copy): a
    plain ndarray of the global shape, the dtype kept (bfloat16 as ml_dtypes').

    upstream: pytorch/pytorch/test/distributed/tensor/test_dtensor.py::DTensorTest::test_full_tensor_sync
    """
    d = distribute(mesh, ("S1",), (3, 4), getattr(torch, dtype))
    route = explain(d, "numpy")
    assert route.steps[0].converter == FULL and route.copies == 1
    assert "collective" in str(route)
    out = to(d, "numpy")
    assert type(out) is np.ndarray and out.shape == (3, 4)
    assert str(out.dtype) == dtype
    np.testing.assert_array_equal(out, values((3, 4)).astype(out.dtype))


def test_requires_grad_dtensor_is_refused_until_detached(mesh: Any) -> None:
    """DIFFERS: upstream full_tensor()s a DTensor that requires grad; to() refuses it
    (NoRouteError: the tensor requires grad), where a plain tensor would be detached with a
    note. dtensor.detach() converts.

    upstream: pytorch/pytorch/test/distributed/tensor/test_dtensor.py::DTensorTest::test_full_tensor_sync
    upstream: pytorch/pytorch/test/distributed/tensor/test_api.py::DTensorAPITest::test_distribute_tensor_rank
    """
    from torch.distributed.tensor import distribute_tensor

    g = torch.ones(8, 3, requires_grad=True)
    d = distribute_tensor(g, mesh, placements("S0"))
    assert d.requires_grad and d.is_leaf
    for target in ("jax", "numpy"):
        with pytest.raises(NoRouteError, match="requires grad"):
            to(d, target)
    np.testing.assert_array_equal(to(d.detach(), "numpy"), np.ones((8, 3), np.float32))
    a = to(d.detach(), "jax")
    assert jptr(a) == d.to_local().data_ptr()


def _gathered(mesh: Any, name: str) -> Any:
    """A DTensor that to() gathers with full_tensor(): Shard(1), or Partial."""
    from torch.distributed.tensor import DTensor

    if name == "P":
        return DTensor.from_local(tensor((3, 4)), mesh, placements("P"))
    return distribute(mesh, ("S1",), (3, 4), torch.float32)


def _pointer(x: Any) -> int:
    """The data pointer of a numpy array, torch tensor or single-device jax.Array."""
    if isinstance(x, np.ndarray):
        return int(x.ctypes.data)
    if isinstance(x, torch.Tensor):
        return int(x.data_ptr())
    return jptr(x)


@pytest.mark.parametrize(
    ("name", "target"),
    [
        pytest.param("S1", "numpy"),
        pytest.param("S1", "torch"),
        pytest.param("S1", "jax"),
        pytest.param("P", "numpy"),
        pytest.param("P", "torch"),
        pytest.param("P", "jax"),
    ],
)
def test_copy_true_never_shares_the_local_tensor(mesh: Any, name: str, target: str) -> None:
    """copy=True returns memory the DTensor does not share, and a write to it leaves the
    DTensor as it was (upstream's full_tensor() on several ranks is new memory).

    upstream: pytorch/pytorch/test/distributed/tensor/test_dtensor.py::DTensorTest::test_full_tensor_sync
    upstream: pytorch/pytorch/test/distributed/tensor/test_redistribute.py::RedistributeTest::test_partial_to_replicate_forward_backward
    """
    d = _gathered(mesh, name)
    out = to(d, target, copy=True)
    np.testing.assert_array_equal(np.asarray(out), values((3, 4)))
    assert _pointer(out) != d.to_local().data_ptr()


@pytest.mark.parametrize(("name", "target"), [("S1", "numpy"), ("P", "numpy"), ("P", "jax")])
def test_the_copy_explain_states_is_a_copy(mesh: Any, name: str, target: str) -> None:
    """Where explain() states the gather copies (copies == 1), the result is not the
    DTensor's local memory: writing to a gathered numpy array leaves the DTensor unchanged.

    upstream: pytorch/pytorch/test/distributed/tensor/test_dtensor.py::DTensorTest::test_full_tensor_sync
    """
    d = _gathered(mesh, name)
    assert explain(d, target).copies == 1
    out = to(d, target)
    assert _pointer(out) != d.to_local().data_ptr()


def test_distribute_module_parameters(mesh: Any) -> None:
    """distribute_module replicates every parameter: a dict of them converts as a dict of
    replicated jax.Arrays once detached (DIFFERS: as parameters they require grad, which
    to() refuses for DTensors).

    upstream: pytorch/pytorch/test/distributed/tensor/test_api.py::DTensorAPITest::test_distribute_module
    """
    from torch.distributed.tensor import DTensor, distribute_module

    torch.manual_seed(0)
    model = distribute_module(
        torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 2)), mesh
    )
    params = dict(model.named_parameters())
    assert all(isinstance(p, DTensor) for p in params.values())
    with pytest.raises(NoRouteError, match="requires grad") as err:
        to(params, "jax")
    assert err.value.item_path == ("0.weight",)
    out = to({k: p.detach() for k, p in params.items()}, "jax")
    assert list(out) == list(params)
    for k, a in out.items():
        assert a.sharding.is_fully_replicated and a.shape == tuple(params[k].shape)
        assert jptr(a) == params[k].to_local().data_ptr()
        np.testing.assert_array_equal(np.asarray(a), params[k].detach().full_tensor().numpy())


# --- layouts the frameworks store differently -----------------------------------------------


def _strided_local(kind: str) -> Any:
    """A local tensor that JAX cannot take as it is: permuted (not contiguous), or starting
    4 bytes past a 64-byte boundary."""
    if kind == "permuted":
        return torch.arange(64.0).reshape(8, 4, 2).permute(1, 2, 0)
    return torch.arange(17.0)[1:].reshape(4, 4)


@pytest.mark.parametrize("kind", ["permuted", "offset"])
def test_local_tensor_jax_cannot_share_converts_with_its_values(mesh: Any, kind: str) -> None:
    """from_local of a permuted local tensor keeps its strides in the DTensor; the jax.Array
    has the DTensor's values (its block copied: JAX takes only contiguous, aligned memory).

    upstream: pytorch/pytorch/test/distributed/tensor/test_dtensor.py::DTensorTest::test_dtensor_stride
    """
    from torch.distributed.tensor import DTensor

    local = _strided_local(kind)
    d = DTensor.from_local(local, mesh, placements("S1"))
    a = to(d, "jax")
    spec = P(None, "d", None) if kind == "permuted" else P(None, "d")
    assert a.shape == tuple(local.shape) and a.sharding.spec == spec
    assert jptr(a) != local.data_ptr()
    np.testing.assert_array_equal(np.asarray(a), local.numpy())


@pytest.mark.xfail(
    strict=True,
    reason="BUG: explain(dtensor, 'jax') says zero-copy (copies == 0) for a local tensor that "
    "to() then copies (not contiguous / not 64-byte aligned)",
)
@pytest.mark.parametrize("kind", ["permuted", "offset"])
def test_explain_counts_the_copy_of_a_block_jax_cannot_share(mesh: Any, kind: str) -> None:
    """explain() must count the copy to() makes, as it does for a plain torch tensor.

    upstream: pytorch/pytorch/test/distributed/tensor/test_dtensor.py::DTensorTest::test_dtensor_stride
    """
    from torch.distributed.tensor import DTensor

    local = _strided_local(kind)
    d = DTensor.from_local(local, mesh, placements("S1"))
    assert jptr(to(d, "jax")) != local.data_ptr()  # to() copied ...
    assert explain(d, "jax").copies == 1  # ... and explain() says so


@pytest.mark.parametrize("kind", ["permuted", "offset"])
def test_copy_false_raises_copy_required(mesh: Any, kind: str) -> None:
    """copy=False where the block must be copied is the Array API's refusal, CopyRequiredError
    (a BufferError), as for every other route.

    upstream: pytorch/pytorch/test/distributed/tensor/test_dtensor.py::DTensorTest::test_dtensor_stride
    """
    from torch.distributed.tensor import DTensor

    d = DTensor.from_local(_strided_local(kind), mesh, placements("S1"))
    with pytest.raises(CopyRequiredError):
        to(d, "jax", copy=False)


def test_local_tensor_disagreeing_with_the_metadata_is_refused(mesh: Any) -> None:
    """from_local(run_check=False) trusts shape= and stride=: a local tensor of 3 rows under a
    global shape of 4 is refused (ConversionError naming both), never read past its end.

    upstream: pytorch/pytorch/test/distributed/tensor/test_dtensor.py::DTensorMeshTest::test_metadata_consistency_check
    """
    from torch.distributed.tensor import DTensor

    d = DTensor.from_local(
        torch.ones(3, 2), mesh, placements("S0"), run_check=False,
        shape=torch.Size([4, 2]), stride=(2, 1),
    )  # fmt: skip
    with pytest.raises(ConversionError, match=r"local tensor has shape \(3, 2\).*\(4, 2\)"):
        to(d, "jax")


def test_meta_dtensor_has_no_data_until_materialized(mesh: Any) -> None:
    """DIFFERS: a DTensor on the meta device converts to nothing (NotAnArrayError: it has no
    data); materialized with empty_like on the CPU and filled, it converts with its values.

    upstream: pytorch/pytorch/test/distributed/tensor/test_dtensor.py::DTensorTest::test_meta_dtensor
    """
    from torch.distributed.tensor import distribute_tensor

    meta = distribute_tensor(torch.randn(16, 8, device="meta"), mesh, placements("S0"))
    assert meta.is_meta
    with pytest.raises(NotAnArrayError, match="meta"):
        to(meta, "jax")
    real = torch.empty_like(meta, device="cpu")
    torch.nn.init.constant_(real, 1.5)
    a = to(real, "jax")
    np.testing.assert_array_equal(np.asarray(a), np.full((16, 8), 1.5, np.float32))
    assert jptr(a) == real.to_local().data_ptr()


def test_saved_and_loaded_dtensor_converts(mesh: Any) -> None:
    """A DTensor through torch.save / torch.load(weights_only=True) converts like the one
    saved.

    upstream: pytorch/pytorch/test/distributed/tensor/test_dtensor.py::DTensorTest::test_dtensor_save_load
    """
    d = distribute(mesh, ("S0",), (3, 3), torch.float32)
    buffer = io.BytesIO()
    torch.save(d, buffer)
    buffer.seek(0)
    reloaded = torch.load(buffer, weights_only=True)
    a = to(reloaded, "jax")
    assert a.sharding.spec == P("d", None) and jptr(a) == reloaded.to_local().data_ptr()
    np.testing.assert_array_equal(np.asarray(a), values((3, 3)))


# --- redistribute, then convert ------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "complex64"])
@pytest.mark.parametrize("dim", [0, 1])
def test_shard_to_replicate_then_numpy_shares(mesh: Any, dim: int, dtype: str) -> None:
    """After redistribute(Shard -> Replicate) the rank's local tensor is the whole array:
    numpy gets it shared, with no collective (DTensor.to_local()).

    upstream: pytorch/pytorch/test/distributed/tensor/test_redistribute.py::RedistributeTest::test_shard_to_replicate_forward_backward
    """
    shape = (12, 3) if dim == 0 else (3, 12)
    d = distribute(mesh, (f"S{dim}",), shape, getattr(torch, dtype))
    r = d.redistribute(mesh, placements("R"))
    route = explain(r, "numpy")
    assert route.steps[0].converter == LOCAL and route.copies == 0
    out = to(r, "numpy")
    assert out.ctypes.data == r.to_local().data_ptr() and out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out, values(shape, dtype))


def test_replicate_to_replicate_shares_into_jax_and_numpy(mesh: Any) -> None:
    """A replicated DTensor (redistributed to Replicate again: the same local memory) is shared
    by JAX (its shard) and by numpy (through to_local(), no collective).

    upstream: pytorch/pytorch/test/distributed/tensor/test_redistribute.py::RedistributeTest::test_replicate_to_replicate_forward_backward
    """
    d = distribute(mesh, ("R",), (12, 3), torch.float32)
    r = d.redistribute(mesh, placements("R"))
    assert r.to_local().data_ptr() == d.to_local().data_ptr()
    assert jptr(to(r, "jax")) == d.to_local().data_ptr()
    route = explain(r, "numpy")
    assert route.zero_copy and route.steps[0].converter == LOCAL
    out = to(r, "numpy")
    assert out.ctypes.data == d.to_local().data_ptr() and out.dtype == np.float32
    np.testing.assert_array_equal(out, values((12, 3)))


@pytest.mark.parametrize(("dim", "spec"), [(0, P("d", None)), (1, P(None, "d"))])
def test_replicate_to_shard_then_jax(mesh: Any, dim: int, spec: Any) -> None:
    """redistribute(Replicate -> Shard(d)) gives a DTensor whose jax.Array is split on d.

    upstream: pytorch/pytorch/test/distributed/tensor/test_redistribute.py::RedistributeTest::test_replicate_to_shard_forward_backward
    """
    r = distribute(mesh, ("R",), (6, 4), torch.float32)
    s = r.redistribute(mesh, placements(f"S{dim}"))
    assert s.placements == tuple(placements(f"S{dim}"))
    a = to(s, "jax")
    assert a.sharding.spec == spec and jptr(a) == s.to_local().data_ptr()
    np.testing.assert_array_equal(np.asarray(a), values((6, 4)))


@pytest.mark.parametrize("dtype", ["float32", "complex64"])
def test_partial_to_numpy_is_reduced(mesh: Any, dtype: str) -> None:
    """A Partial DTensor to numpy is reduced by full_tensor() (the sum over ranks; one rank:
    its local values), one stated copy.

    upstream: pytorch/pytorch/test/distributed/tensor/test_redistribute.py::RedistributeTest::test_partial_to_replicate_forward_backward
    """
    from torch.distributed.tensor import DTensor

    local = torch.ones(12, 3, dtype=getattr(torch, dtype))
    p = DTensor.from_local(local, mesh, placements("P"))
    route = explain(p, "numpy")
    assert route.steps[0].converter == FULL and route.copies == 1
    out = to(p, "numpy")
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out, np.ones((12, 3), dtype))


def test_partial_to_torch_is_the_dtensor_itself(mesh: Any) -> None:
    """Partial -> Partial is a no-op upstream; to(partial, "torch") returns the DTensor as it
    is (no conversion, no collective), unreduced.

    upstream: pytorch/pytorch/test/distributed/tensor/test_redistribute.py::RedistributeTest::test_partial_to_partial_forward_backward
    """
    from torch.distributed.tensor import DTensor

    p = DTensor.from_local(torch.ones(12, 3), mesh, placements("P"))
    route = explain(p, "torch")
    assert route.steps == () and route.copies == 0
    assert to(p, "torch") is p


@pytest.mark.parametrize("dtype", ["float32", "complex64"])
def test_partial_with_sharding_is_refused(mesh: Any, dtype: str) -> None:
    """DIFFERS: upstream reduce-scatters Partial -> Shard in redistribute(); to() does not lay
    a Partial DTensor out with sharding= (OptionError saying to redistribute first), and
    after dtensor.redistribute(Shard(0)) it converts, shard shared.

    upstream: pytorch/pytorch/test/distributed/tensor/test_redistribute.py::RedistributeTest::test_partial_to_shard
    """
    from torch.distributed.tensor import DTensor

    p = DTensor.from_local(torch.ones(12, 3, dtype=getattr(torch, dtype)), mesh, placements("P"))
    rows = NamedSharding(jax_mesh(("x",)), P("x"))
    with pytest.raises(OptionError, match="Partial placements") as err:
        to(p, "jax", sharding=rows)
    assert "redistribute" in str(err.value)
    s = p.redistribute(mesh, placements("S0"))
    a = to(s, "jax", sharding=rows)
    assert a.sharding == rows and jptr(a) == s.to_local().data_ptr()
    np.testing.assert_array_equal(np.asarray(a), np.ones((12, 3), dtype))


@pytest.mark.parametrize("forward", ["bfloat16", "float32"])
def test_redistribute_forward_dtype_then_jax(mesh: Any, forward: str) -> None:
    """redistribute(forward_dtype=) casts the DTensor; the jax.Array has that dtype and shares
    the cast local tensor.

    upstream: pytorch/pytorch/test/distributed/tensor/test_redistribute.py::RedistributeTest::test_replicate_to_replicate_forward_backward_datatype_conversion
    """
    d = distribute(mesh, ("R",), (12, 3), torch.float32)
    r = d.redistribute(mesh, placements("R"), forward_dtype=getattr(torch, forward))
    a = to(r, "jax")
    assert a.dtype == jax.numpy.dtype(forward) and jptr(a) == r.to_local().data_ptr()
    np.testing.assert_array_equal(np.asarray(a).astype(np.float32), values((12, 3)))


@pytest.mark.parametrize("src", ["S1", "R", "P"])
def test_one_chunk_mesh_dimension(mesh2: Any, src: str) -> None:
    """A mesh dimension of size 1 holding Shard(1), Replicate() or Partial() beside Shard(0):
    the first two are jax layouts (shared); Partial is reduced by a stated copy.

    upstream: pytorch/pytorch/test/distributed/tensor/test_redistribute.py::RedistributeTest::test_one_chunk_mesh
    """
    from torch.distributed.tensor import DTensor

    local = tensor((16, 8))
    d = DTensor.from_local(local, mesh2, placements("S0", src))
    route = explain(d, "jax")
    a = to(d, "jax")
    np.testing.assert_array_equal(np.asarray(a), values((16, 8)))
    if src == "P":
        assert route.steps[0].converter == FULL and route.copies == 1
    else:
        assert route.copies == 0 and jptr(a) == local.data_ptr()
        assert a.sharding.spec == (P("x", "y") if src == "S1" else P("x", None))


def test_sharding_option_splits_the_rank_block_over_devices(mesh: Any) -> None:
    """sharding= over this process's jax devices gives each device its rows of the rank's
    block (its offset in the local tensor), shared.

    upstream: pytorch/pytorch/test/distributed/tensor/test_dtensor.py::DTensorMeshTest::test_dtensor_spec_local_shard_offset
    """
    devices = jax.devices()
    n = len(devices)
    d = distribute(mesh, ("S0",), (8 * n, 16), torch.float32)  # 8 rows: 512-byte blocks
    rows = NamedSharding(Mesh(np.array(devices), ("x",)), P("x"))
    a = to(d, "jax", sharding=rows)
    assert a.sharding == rows
    base = d.to_local().data_ptr()
    for shard in a.addressable_shards:
        start = shard.index[0].start or 0
        assert int(shard.data.unsafe_buffer_pointer()) == base + start * 16 * 4
        np.testing.assert_array_equal(np.asarray(shard.data), values((8 * n, 16))[shard.index])


def test_mesh_and_sharding_that_do_not_fit_are_refused(mesh: Any, mesh2: Any) -> None:
    """A layout with the wrong number of mesh dimensions is refused, saying so: a jax array
    over a 2-D mesh with a 1-D DeviceMesh, a DeviceMesh that is not one, a sharding= that
    is not a jax Sharding.

    upstream: pytorch/pytorch/test/distributed/tensor/test_api.py::DTensorAPITest::test_distribute_tensor_errors
    """
    x = jax.device_put(values((4, 4)), NamedSharding(jax_mesh(("x", "y")), P("x", "y")))
    with pytest.raises(ConversionError, match=r"DeviceMesh has shape \(1,\).*\(1, 1\)"):
        to(x, "torch", mesh=mesh)
    assert to(x, "torch", mesh=mesh2).placements == tuple(placements("S0", "S1"))
    with pytest.raises(OptionError, match="DeviceMesh"):
        to(x, "torch", mesh=[0])
    with pytest.raises(OptionError, match=r"jax\.sharding\.Sharding"):
        to(distribute(mesh, ("S0",), (4, 4), torch.float32), "jax", sharding="d")


def test_split_over_mesh_axes_out_of_order_is_refused(mesh2: Any) -> None:
    """DTensor splits a dimension over mesh dimensions in mesh order ([Shard(0), Shard(0)] is
    P(("x", "y"))); P(("y", "x")) has no placements and is refused, saying to reorder.

    upstream: pytorch/pytorch/test/distributed/tensor/test_dtensor.py::DTensorMeshTest::test_dtensor_2d_mesh
    """
    x = jax.device_put(values((4, 4)), NamedSharding(jax_mesh(("x", "y")), P(("y", "x"))))
    with pytest.raises(ConversionError, match="mesh order"):
        to(x, "torch", mesh=mesh2)


# --- jax -> DTensor: from_local of the jax shard ----------------------------------------------

JAX_SPECS = [(P("d"), ("S0",)), (P(None, "d"), ("S1",)), (P(), ("R",))]


@pytest.mark.parametrize(("spec", "names"), JAX_SPECS, ids=["P(d)", "P(None,d)", "P()"])
def test_jax_array_to_dtensor_shares_its_shard(mesh: Any, spec: Any, names: Any) -> None:
    """to(jax_array, "torch", mesh=) is DTensor.from_local of the jax shard: placements from
    the PartitionSpec, the global shape, the shard's memory; it converts back to the same
    layout over the same memory.

    upstream: pytorch/pytorch/test/distributed/tensor/test_dtensor.py::DTensorTest::test_from_local
    upstream: pytorch/pytorch/test/distributed/tensor/test_dtensor.py::DTensorTest::test_from_local_then_to_local
    """
    from torch.distributed.tensor import DTensor

    x = jax.device_put(values((4, 6)), NamedSharding(jax_mesh(("d",)), spec))
    route = explain(x, "torch", mesh=mesh)
    assert [s.converter for s in route.steps] == [TO_DTENSOR] and route.copies == 0
    d = to(x, "torch", mesh=mesh)
    assert isinstance(d, DTensor) and d.placements == tuple(placements(*names))
    assert d.shape == (4, 6) and d.stride() == (6, 1) and d.dtype == torch.float32
    assert d.to_local().data_ptr() == jptr(x)
    np.testing.assert_array_equal(d.full_tensor().numpy(), values((4, 6)))
    y = to(d, "jax")
    assert y.sharding.is_equivalent_to(x.sharding, 2) and jptr(y) == jptr(x)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "int32", "bool"])
def test_jax_array_to_dtensor_keeps_the_dtype(mesh: Any, dtype: str) -> None:
    """Every dtype crosses: the DTensor has the jax array's dtype over its memory.

    upstream: pytorch/pytorch/test/distributed/tensor/test_dtensor.py::DTensorTest::test_from_local
    """
    x = jax.device_put(
        values((4, 4), np.float32).astype(jax.numpy.dtype(dtype)),
        NamedSharding(jax_mesh(("d",)), P("d")),
    )
    d = to(x, "torch", mesh=mesh)
    assert d.dtype == getattr(torch, dtype) and d.to_local().data_ptr() == jptr(x)
    np.testing.assert_array_equal(
        d.full_tensor().to(torch.float32).numpy(), values((4, 4)).astype(dtype).astype(np.float32)
    )


def test_dtensor_made_from_jax_lives_on_the_mesh_device(mesh: Any) -> None:
    """A DTensor from a CPU jax array on a CPU DeviceMesh is on the CPU, local tensor too.

    upstream: pytorch/pytorch/test/distributed/tensor/test_dtensor.py::DTensorTest::test_dtensor_properties
    upstream: pytorch/pytorch/test/distributed/tensor/test_dtensor.py::DTensorMeshTest::test_dtensor_device_mesh_device_conversion
    """
    d = to(jax.numpy.arange(9.0).reshape(3, 3), "torch", mesh=mesh)
    assert d.device.type == "cpu" and d.to_local().device.type == "cpu"
    assert d.device_mesh is mesh and d.placements == tuple(placements("R"))


@pytest.mark.parametrize("source", ["numpy", "torch"])
def test_any_array_to_dtensor_through_jax(mesh: Any, source: str) -> None:
    """mesh= makes a replicated DTensor of any array: torch memory shared (through a jax
    array), numpy's too when it is 64-byte aligned, else copied once into aligned memory, as
    explain() says.

    upstream: pytorch/pytorch/test/distributed/tensor/test_dtensor.py::DTensorTest::test_from_local
    """
    from torch.distributed.tensor import DTensor

    ref = values((3, 4))
    x = ref.copy() if source == "numpy" else tensor((3, 4))
    route = explain(x, "torch", mesh=mesh)
    assert route.steps[-1].converter == TO_DTENSOR
    d = to(x, "torch", mesh=mesh)
    assert isinstance(d, DTensor) and d.placements == tuple(placements("R"))
    np.testing.assert_array_equal(d.to_local().numpy(), ref)
    pointer = x.data_ptr() if source == "torch" else x.ctypes.data
    # numpy's allocations are 64-byte aligned only sometimes: JAX shares only those.
    if source == "torch" or pointer % 64 == 0:
        assert route.copies == 0 and d.to_local().data_ptr() == pointer
    else:
        assert route.copies == 1 and d.to_local().data_ptr() != pointer


# --- several ranks ---------------------------------------------------------------------------

#: test_api.py::test_distribute_tensor_uneven_sharding: (shape, shard dim), world*3+1 rows.
UNEVEN = [((WORLD * 3 + 1, 3, 3), 0), ((3, WORLD * 3 + 1, 3), 1), ((3, 3, WORLD * 3 + 1), 2)]
#: test_redistribute.py::test_redistribute_uneven_sharding, on a (WORLD, 1) mesh.
UNEVEN_2D = [(10, 5), (9, 5), (3, 5), (1, 3)]
TWO_D_PLACEMENTS = [("S0", "S0"), ("S0", "S1")]


def _rank_checks(rank: int) -> dict[str, Any]:
    """What this rank of WORLD sees; every collective is made by every rank, in order."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor, distribute_tensor

    facts: dict[str, Any] = {"rank": rank}
    mesh = init_device_mesh("cpu", (WORLD,), mesh_dim_names=("d",))
    one = NamedSharding(jax_mesh(("x",)), P())
    for shape, dim in UNEVEN:
        d = distribute_tensor(tensor(shape), mesh, placements(f"S{dim}"))
        key = f"{shape}/S{dim}"
        facts[f"uneven {key} local"] = list(d.to_local().shape)
        facts[f"uneven {key} numpy"] = to(d, "numpy").tolist()
        try:
            to(d, "jax", sharding=one)
        except ConversionError as exc:
            facts[f"uneven {key} jax"] = str(exc)
        try:
            to(d, "jax")
        except ConversionError as exc:
            facts[f"uneven {key} jax default"] = str(exc)
    # from_local of uneven pieces, with the global shape and stride given.
    full = values((WORLD + 1, 2))
    piece = torch.from_numpy(np.array_split(full, WORLD)[rank].copy())
    d = DTensor.from_local(
        piece, mesh, placements("S0"), shape=torch.Size(full.shape), stride=(2, 1)
    )
    facts["from_local uneven numpy"] = to(d, "numpy").tolist()
    mesh2 = init_device_mesh("cpu", (WORLD, 1), mesh_dim_names=("x", "y"))
    for shape in UNEVEN_2D:
        for names in TWO_D_PLACEMENTS:
            d = distribute_tensor(tensor(shape), mesh2, placements(*names))
            facts[f"2d {shape} {'-'.join(names)}"] = to(d, "numpy").tolist()
    for dtype in ("float32", "complex64"):
        local = torch.full((2, 3), rank + 1, dtype=getattr(torch, dtype))
        p = DTensor.from_local(local, mesh, placements("P"))
        out = to(p, "numpy")
        facts[f"partial {dtype}"] = [str(out.dtype), out.real.tolist(), out.imag.tolist()]
    # Last, by rank 0 alone: a replicated DTensor to numpy needs no other rank (a collective
    # here would wait for rank 1, which goes on to the closing barrier).
    r = distribute_tensor(tensor((4, 3)), mesh, placements("R"))
    if rank == 0:
        n = to(r, "numpy")
        facts["replicated shared"] = n.ctypes.data == r.to_local().data_ptr()
        facts["replicated values"] = n.tolist()
        facts["replicated route"] = [s.converter for s in explain(r, "numpy").steps]
    return facts


def _rank_main(rank: int, port: int) -> None:
    """One rank of :func:`ranks`: a gloo group on the loopback address; prints its facts as
    one JSON line. A watchdog ends a rank left waiting for the other."""
    import faulthandler

    import torch.distributed as dist

    faulthandler.dump_traceback_later(120, exit=True)
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD
    )
    facts = _rank_checks(rank)
    dist.barrier()
    dist.destroy_process_group()
    print(json.dumps(facts), flush=True)


@pytest.fixture(scope="module", autouse=True)
def rank_processes() -> Iterator[list[Any]]:
    """WORLD processes, each running this file as one rank, started before this module's
    first test so that they run beside the one-process tests; killed if left running."""
    tests = Path(__file__).resolve().parent.parent
    path = os.pathsep.join(filter(None, [str(tests), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path}
    env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=1"
    port = str(free_port())
    procs = [
        subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), str(rank), port],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=str(tests.parent),
        )
        for rank in range(WORLD)
    ]
    yield procs
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.communicate()


@pytest.fixture(scope="module")
def ranks(rank_processes: list[Any]) -> list[dict[str, Any]]:
    """The facts each rank printed (rank_facts asserts that each exited 0)."""
    facts = rank_facts(rank_processes, 240)
    assert [f["rank"] for f in facts] == list(range(WORLD))
    return facts


@pytest.mark.parametrize(("shape", "dim"), UNEVEN, ids=[f"{s}-S{d}" for s, d in UNEVEN])
def test_uneven_shards_gather_to_numpy(ranks: list[dict[str, Any]], shape: Any, dim: int) -> None:
    """Uneven shards (torch.chunk's split: the last rank holds fewer) gather to the whole
    array on every rank.

    upstream: pytorch/pytorch/test/distributed/tensor/test_api.py::DTensorAPITest::test_distribute_tensor_uneven_sharding
    """
    chunks = np.array_split(values(shape), WORLD, axis=dim)
    for rank, f in enumerate(ranks):
        assert f[f"uneven {shape}/S{dim} local"] == list(chunks[rank].shape)
        np.testing.assert_array_equal(np.array(f[f"uneven {shape}/S{dim} numpy"]), values(shape))


@pytest.mark.parametrize(("shape", "dim"), UNEVEN, ids=[f"{s}-S{d}" for s, d in UNEVEN])
def test_uneven_shards_into_jax_are_refused(
    ranks: list[dict[str, Any]], shape: Any, dim: int
) -> None:
    """DIFFERS: DTensor pads uneven shards and a jax.Array cannot hold them: sharding= is
    refused with ConversionError naming the dimension; without it, a DTensor over two ranks
    needs jax.distributed (refused, saying so), never a hidden gather.

    upstream: pytorch/pytorch/test/distributed/tensor/test_api.py::DTensorAPITest::test_distribute_tensor_uneven_sharding
    """
    for f in ranks:
        msg = f[f"uneven {shape}/S{dim} jax"]
        assert f"Dimension {dim} (size {WORLD * 3 + 1}) does not split evenly" in msg
        assert "jax.distributed.initialize" in f[f"uneven {shape}/S{dim} jax default"]


def test_from_local_uneven_with_shape_and_stride(ranks: list[dict[str, Any]]) -> None:
    """from_local of uneven pieces with the global shape and stride gathers to the whole.

    upstream: pytorch/pytorch/test/distributed/tensor/test_dtensor.py::DTensorTest::test_from_local_uneven_sharding
    """
    for f in ranks:
        np.testing.assert_array_equal(
            np.array(f["from_local uneven numpy"]), values((WORLD + 1, 2))
        )


@pytest.mark.parametrize("names", TWO_D_PLACEMENTS, ids=["-".join(n) for n in TWO_D_PLACEMENTS])
@pytest.mark.parametrize("shape", UNEVEN_2D, ids=[str(s) for s in UNEVEN_2D])
def test_uneven_two_dimensional_mesh_gathers(
    ranks: list[dict[str, Any]], shape: Any, names: Any
) -> None:
    """Uneven on a 2-D mesh, and smaller than the mesh (a rank holds nothing): gathered to
    the whole array on every rank.

    upstream: pytorch/pytorch/test/distributed/tensor/test_redistribute.py::RedistributeTest::test_redistribute_uneven_sharding
    """
    for f in ranks:
        np.testing.assert_array_equal(np.array(f[f"2d {shape} {'-'.join(names)}"]), values(shape))


@pytest.mark.parametrize("dtype", ["float32", "complex64"])
def test_partial_over_ranks_is_summed(ranks: list[dict[str, Any]], dtype: str) -> None:
    """Partial: each rank holds rank + 1; every rank gets the sum (1 + 2), in its dtype.

    upstream: pytorch/pytorch/test/distributed/tensor/test_redistribute.py::RedistributeTest::test_partial_to_replicate_forward_backward
    """
    total = sum(range(1, WORLD + 1))
    for f in ranks:
        got_dtype, real, imag = f[f"partial {dtype}"]
        assert got_dtype == dtype
        np.testing.assert_array_equal(np.array(real), np.full((2, 3), total, np.float32))
        np.testing.assert_array_equal(np.array(imag), np.zeros((2, 3), np.float32))


def test_replicated_over_ranks_is_shared_without_a_collective(ranks: list[dict[str, Any]]) -> None:
    """A replicated DTensor is whole on each rank: rank 0 alone converts it to numpy, sharing
    the local tensor (DTensor.to_local(), no collective).

    upstream: pytorch/pytorch/test/distributed/tensor/test_dtensor.py::DTensorTest::test_from_local
    """
    f = ranks[0]
    assert f["replicated shared"] is True
    assert f["replicated route"][0] == LOCAL
    np.testing.assert_array_equal(np.array(f["replicated values"]), values((4, 3)))


if __name__ == "__main__":
    _rank_main(int(sys.argv[1]), int(sys.argv[2]))
