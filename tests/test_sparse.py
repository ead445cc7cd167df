"""Sparse arrays: scipy.sparse, torch sparse, JAX BCOO/BCSR and tf.SparseTensor (issue 21).

Every pair for COO and CSR: values, dtype, shape and framework of the result; the data
pointers (each framework's own API) for every buffer a route says it shares; the copy count
of every route that copies; densify=, copy=, dtype=, duplicates, int64 indices, nnz=0,
bool/complex/float16, 3-D.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from conftest import need

from interop_core import CopyRequiredError, NoRouteError, explain, to
from interop_core.testing import data_ptr

np = need("numpy")
sp = pytest.importorskip("scipy.sparse")

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # torch: "sparse ... beta"

FRAMEWORKS = ("scipy", "torch", "jax", "tensorflow")
DENSE = np.array(
    [[0, 1.5, 0, 0, 2], [0, 0, 0, 0, 0], [-3, 0, 0, 4, 0], [0, 0, 5.25, 0, 0]], np.float32
)


def aligned(a: Any) -> Any:
    """A 64-byte aligned copy of ``a`` (what JAX and TF share)."""
    buf = np.empty(a.nbytes + 64, np.uint8)
    start = -buf.ctypes.data % 64
    out = buf[start : start + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


def make(fw: str, layout: str, dense: Any = DENSE) -> Any:
    """``dense`` as a sparse array of ``fw`` (canonical)."""
    need(fw)
    if fw == "scipy":
        return sp.csr_array(dense) if layout == "csr" else sp.coo_array(dense)
    if fw == "torch":
        import torch

        t = torch.from_numpy(np.ascontiguousarray(dense))
        return t.to_sparse_csr() if layout == "csr" else t.to_sparse().coalesce()
    if fw == "jax":
        import jax.numpy as jnp
        from jax.experimental import sparse as jsp

        cls = jsp.BCSR if layout == "csr" else jsp.BCOO
        return cls.fromdense(jnp.asarray(dense))
    import tensorflow as tf

    if layout == "csr":
        pytest.skip("TensorFlow has no public CSR sparse tensor")
    return tf.sparse.from_dense(dense)


def densified(x: Any) -> Any:
    """The dense numpy array of any framework's sparse array."""
    return np.asarray(to(x, "numpy", densify=True))


def owner(x: Any) -> str:
    top = type(x).__module__.partition(".")[0]
    return {"jaxlib": "jax"}.get(top, top)


def layout_of(x: Any) -> str:
    fw = owner(x)
    if fw == "scipy":
        return str(x.format)
    if fw == "torch":
        return "csr" if "csr" in str(x.layout) else "coo"
    if fw == "jax":
        return type(x).__name__[1:].lower()
    return "coo"


def values_ptr(x: Any) -> int:
    """Address of the stored values, by each framework's own API."""
    fw = owner(x)
    if fw == "scipy":
        return int(x.data.ctypes.data)
    if fw == "torch":
        return int((x._values() if "coo" in str(x.layout) else x.values()).data_ptr())
    if fw == "jax":
        return int(x.data.unsafe_buffer_pointer())
    return data_ptr(x.values)  # TF: the address its DLPack export gives


def index_ptrs(x: Any) -> tuple[int, ...]:
    """Addresses of a CSR array's (indices, indptr)."""
    fw = owner(x)
    if fw == "scipy":
        return (x.indices.ctypes.data, x.indptr.ctypes.data)
    if fw == "torch":
        return (x.col_indices().data_ptr(), x.crow_indices().data_ptr())
    return (x.indices.unsafe_buffer_pointer(), x.indptr.unsafe_buffer_pointer())


# -- every pair ----------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["coo", "csr"])
@pytest.mark.parametrize("dst", FRAMEWORKS)
@pytest.mark.parametrize("src", FRAMEWORKS)
def test_every_pair_converts_values_dtype_shape(src: str, dst: str, layout: str) -> None:
    need(dst)
    x = make(src, layout)
    route = explain(x, dst)
    y = to(x, dst)
    assert owner(y) == dst
    # Layouts are kept; TensorFlow holds COO only.
    assert layout_of(y) == ("coo" if dst == "tensorflow" else layout)
    assert tuple(y.shape) == DENSE.shape
    got = densified(y)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, DENSE)
    if route.copies == 0 and src != dst:  # a zero-copy claim: the values are shared
        assert values_ptr(y) == values_ptr(x)


def test_scipy_csr_and_torch_csr_share_every_buffer() -> None:
    torch = need("torch")
    m = make("scipy", "csr")
    t = to(m, "torch")
    assert explain(m, "torch").copies == 0
    assert t.values().data_ptr() == m.data.ctypes.data
    assert t.col_indices().data_ptr() == m.indices.ctypes.data
    assert t.crow_indices().data_ptr() == m.indptr.ctypes.data
    assert t.crow_indices().dtype == torch.int32  # torch CSR takes int32 indices as they are
    back = to(t, "scipy")
    assert explain(t, "scipy").copies == 0
    assert back.data.ctypes.data == m.data.ctypes.data
    assert index_ptrs(back) == index_ptrs(m)


def test_torch_coo_to_scipy_shares_values_and_index_rows() -> None:
    t = make("torch", "coo")
    m = to(t, "scipy")
    assert explain(t, "scipy").copies == 0
    assert m.data.ctypes.data == t._values().data_ptr()
    assert m.coords[0].ctypes.data == t._indices().data_ptr()
    assert m.coords[0].dtype == np.int64
    assert m.has_canonical_format


def test_scipy_coo_to_torch_copies_only_the_indices() -> None:
    torch = need("torch")
    m = make("scipy", "coo")
    route = explain(m, "torch")
    assert route.copies == 1
    assert "(ndim, nnz) int64" in str(route) and "values shared" in str(route)
    t = to(m, "torch")
    assert t._values().data_ptr() == m.data.ctypes.data
    assert t._indices().dtype == torch.int64
    assert t.is_coalesced()
    with pytest.raises(CopyRequiredError):
        to(m, "torch", copy=False)


def test_aligned_scipy_csr_to_jax_shares_every_buffer() -> None:
    need("jax")
    m0 = make("scipy", "csr")
    m = sp.csr_array(m0.shape)  # the constructor would copy views of larger buffers (prune)
    m.data, m.indices, m.indptr = aligned(m0.data), aligned(m0.indices), aligned(m0.indptr)
    assert explain(m, "jax").copies == 0
    x = to(m, "jax", copy=False)
    assert x.data.unsafe_buffer_pointer() == m.data.ctypes.data
    assert index_ptrs(x) == index_ptrs(m)


def test_unaligned_scipy_csr_to_jax_is_one_reported_copy() -> None:
    need("jax")
    m0 = make("scipy", "csr")
    data = np.empty(m0.nnz + 1, np.float32)[1:]  # 4 bytes past numpy's allocation
    data[...] = m0.data
    m = sp.csr_array((data, m0.indices, m0.indptr), shape=m0.shape)
    route = explain(m, "jax")
    assert route.copies == 1 and "64-byte aligned" in str(route)
    with pytest.raises(CopyRequiredError):
        to(m, "jax", copy=False)
    np.testing.assert_array_equal(densified(to(m, "jax")), DENSE)


def test_jax_to_scipy_is_read_only_views() -> None:
    x = make("jax", "csr")
    m = to(x, "scipy")
    assert explain(x, "scipy").copies == 0
    assert m.data.ctypes.data == x.data.unsafe_buffer_pointer()
    assert m.indices.ctypes.data == x.indices.unsafe_buffer_pointer()
    assert not m.data.flags.writeable


def test_jax_to_torch_copies_read_only_buffers_once() -> None:
    need("torch")
    x = make("jax", "csr")
    route = explain(x, "torch")
    assert route.copies == 1 and "read-only" in str(route)
    t = to(x, "torch")
    assert t.values().data_ptr() != x.data.unsafe_buffer_pointer()


def test_tf_to_scipy_shares_values() -> None:
    s = make("tensorflow", "coo")
    m = to(s, "scipy")
    assert explain(s, "scipy").copies == 0
    assert m.data.ctypes.data == data_ptr(s.values)
    assert m.coords[0].dtype == np.int64
    assert not m.has_canonical_format  # TF keeps no record of its order


def test_canonical_aligned_scipy_to_tf_shares_values() -> None:
    need("tensorflow")
    m0 = make("scipy", "coo")
    m = sp.coo_array((aligned(m0.data), tuple(aligned(c) for c in m0.coords)), shape=m0.shape)
    m.has_canonical_format = True
    route = explain(m, "tensorflow")
    assert route.copies == 1 and "(nnz, ndim) int64" in str(route)
    s = to(m, "tensorflow")
    assert data_ptr(s.values) == m.data.ctypes.data
    assert s.indices.dtype.name == "int64" and tuple(s.indices.shape) == (m.nnz, 2)


# -- duplicates, index dtypes, empty, dtypes, 3-D ----------------------------------------------


def _duplicates() -> Any:
    row, col = np.array([2, 0, 2, 1]), np.array([1, 0, 1, 3])
    return sp.coo_array((np.array([1.0, 2.0, 3.0, 4.0], np.float32), (row, col)), shape=(3, 4))


@pytest.mark.parametrize("dst", ["torch", "jax", "tensorflow"])
def test_uncoalesced_coo_sums_duplicates_everywhere(dst: str) -> None:
    need(dst)
    m = _duplicates()
    assert not m.has_canonical_format
    y = to(m, dst)
    np.testing.assert_array_equal(densified(y), m.toarray())
    if dst == "torch":
        assert not y.is_coalesced()  # kept uncoalesced: torch sums duplicates as scipy does
    if dst == "tensorflow":  # TF needs canonical indices: summed and sorted on the way
        assert "summed and sorted" in str(explain(m, dst))
        assert y.values.shape[0] == 3


def test_uncoalesced_torch_coo_round_trips() -> None:
    torch = need("torch")
    t = torch.sparse_coo_tensor(torch.tensor([[0, 0, 1], [1, 1, 2]]), torch.tensor([1.0, 2, 3]),
                                (2, 3))  # fmt: skip
    m = to(t, "scipy")
    assert not m.has_canonical_format
    np.testing.assert_array_equal(m.toarray(), t.to_dense().numpy())


def test_non_canonical_scipy_csr_to_torch_is_a_canonical_copy() -> None:
    need("torch")
    m = sp.csr_array((np.array([1.0, 2.0, 3.0]), np.array([2, 0, 0]), np.array([0, 2, 3])),
                     shape=(2, 3))  # fmt: skip
    route = explain(m, "torch")
    assert route.copies == 1 and "not canonical" in str(route)
    t = to(m, "torch")
    np.testing.assert_array_equal(t.to_dense().numpy(), m.toarray())
    assert t.col_indices().tolist() == [0, 2, 0]


def test_int64_csr_indices() -> None:
    torch = need("torch")
    jax = need("jax")
    m0 = make("scipy", "csr")
    m = sp.csr_array(
        (m0.data, m0.indices.astype(np.int64), m0.indptr.astype(np.int64)), shape=m0.shape
    )
    assert m.indices.dtype == np.int64
    t = to(m, "torch")
    assert t.crow_indices().dtype == torch.int64
    assert t.col_indices().data_ptr() == m.indices.ctypes.data
    if not jax.config.read("jax_enable_x64"):
        route = explain(m, "jax")
        assert route.copies == 1 and "int64 indices" in str(route)
        assert to(m, "jax").indices.dtype == np.int32


@pytest.mark.parametrize("layout", ["coo", "csr"])
@pytest.mark.parametrize("dst", FRAMEWORKS)
@pytest.mark.parametrize("src", FRAMEWORKS)
def test_empty_arrays(src: str, dst: str, layout: str) -> None:
    need(dst)
    x = make(src, layout, np.zeros((3, 4), np.float32))
    y = to(x, dst)
    assert owner(y) == dst and tuple(y.shape) == (3, 4)
    np.testing.assert_array_equal(densified(y), np.zeros((3, 4), np.float32))


@pytest.mark.parametrize("dtype", ["bool", "complex64", "float64", "int32"])
@pytest.mark.parametrize("dst", ["scipy", "jax", "tensorflow"])
def test_dtypes_from_torch(dtype: str, dst: str) -> None:
    need("torch")
    need(dst)
    dense = (DENSE != 0) if dtype == "bool" else DENSE.astype(dtype)
    t = make("torch", "coo", dense)
    if dst == "jax" and dtype == "float64" and not need("jax").config.read("jax_enable_x64"):
        with pytest.raises(NoRouteError, match="jax_enable_x64"):
            to(t, dst)
        return
    y = to(t, dst)
    got = densified(y)
    assert got.dtype == dense.dtype
    np.testing.assert_array_equal(got, dense)
    assert str(t.dtype) == f"torch.{dtype}"


def test_float16_has_no_route_through_scipy() -> None:
    need("jax")
    t = make("torch", "csr", DENSE.astype(np.float16))
    with pytest.raises(NoRouteError, match="float16"):
        to(t, "jax")
    assert densified(t).dtype == np.float16  # densify stays inside torch


@pytest.mark.parametrize("dst", ["scipy", "jax", "tensorflow"])
def test_three_dimensional_coo(dst: str) -> None:
    torch = need("torch")
    need(dst)
    dense = np.zeros((2, 3, 4), np.float32)
    dense[0, 1, 2], dense[1, 2, 3], dense[1, 0, 0] = 1.0, 2.0, 3.0
    t = torch.from_numpy(dense).to_sparse().coalesce()
    y = to(t, dst)
    assert tuple(y.shape) == (2, 3, 4)
    np.testing.assert_array_equal(densified(y), dense)
    np.testing.assert_array_equal(densified(to(y, "torch")), dense)


def test_batched_csr_is_refused_with_advice() -> None:
    torch = need("torch")
    t = torch.from_numpy(np.stack([DENSE, DENSE])).to_sparse_csr()
    assert t.ndim == 3
    with pytest.raises(NoRouteError, match="batched"):
        to(t, "scipy")
    np.testing.assert_array_equal(densified(t), np.stack([DENSE, DENSE]))


# -- densify, copy=, dtype= ------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["coo", "csr"])
@pytest.mark.parametrize("src", FRAMEWORKS)
def test_dense_only_target_refuses_without_densify(src: str, layout: str) -> None:
    x = make(src, layout)
    with pytest.raises(NoRouteError, match="densify=True") as info:
        to(x, "numpy")
    assert "densify=" in str(info.value)
    route = explain(x, "numpy", densify=True)
    assert route.copies == 1
    a = to(x, "numpy", densify=True)
    assert type(a) is np.ndarray
    np.testing.assert_array_equal(a, DENSE)


@pytest.mark.parametrize("src", ["torch", "jax", "tensorflow"])
def test_densify_in_the_same_framework(src: str) -> None:
    x = make(src, "coo")
    y = to(x, src, densify=True)
    assert owner(y) == src and explain(x, src, densify=True).copies == 1
    assert "sparse" not in type(y).__name__.lower() and getattr(y, "is_sparse", False) is False
    np.testing.assert_array_equal(np.asarray(to(y, "numpy")), DENSE)


def test_densify_takes_dense_leaves_as_they_are() -> None:
    torch = need("torch")
    dense = torch.ones(3)
    out = to({"x": make("scipy", "csr"), "y": dense}, "torch", densify=True)
    assert out["y"] is dense
    np.testing.assert_array_equal(out["x"].numpy(), DENSE)


def test_copy_true_shares_nothing() -> None:
    need("torch")
    m = make("scipy", "csr")
    t = to(m, "torch", copy=True)
    assert t.values().data_ptr() != m.data.ctypes.data
    assert t.col_indices().data_ptr() != m.indices.ctypes.data
    c = make("scipy", "coo")
    tc = to(c, "torch", copy=True)
    assert tc._values().data_ptr() != c.data.ctypes.data
    np.testing.assert_array_equal(tc.to_dense().numpy(), DENSE)


def test_dtype_casts_the_values_only() -> None:
    torch = need("torch")
    m = make("scipy", "csr")
    route = explain(m, "torch", dtype="float64")
    assert route.copies == 1 and "cast float32 -> float64" in str(route)
    t = to(m, "torch", dtype="float64")
    assert t.dtype == torch.float64 and t.layout == torch.sparse_csr
    np.testing.assert_array_equal(t.to_dense().numpy(), DENSE.astype(np.float64))


def test_warm_path_gives_the_same_result() -> None:
    need("torch")
    m = make("scipy", "csr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first, second = to(m, "torch"), to(m, "torch")
    assert first.values().data_ptr() == second.values().data_ptr() == m.data.ctypes.data


def test_other_scipy_formats_become_csr_first() -> None:
    torch = need("torch")
    m = sp.csc_array(DENSE)
    route = explain(m, "torch")
    assert route.copies == 1 and "converted to CSR" in str(route)
    t = to(m, "torch")
    assert t.layout == torch.sparse_csr
    np.testing.assert_array_equal(t.to_dense().numpy(), DENSE)
    np.testing.assert_array_equal(to(m, "numpy", densify=True), DENSE)


# -- layout=: the result in the layout asked for ---------------------------------------------

#: The layouts each target holds, as layout= names them.
LAYOUTS = {"scipy": ("coo", "csr", "csc"), "torch": ("coo", "csr"), "jax": ("coo", "csr"),
           "tensorflow": ("coo",)}  # fmt: skip


@pytest.mark.parametrize("src", FRAMEWORKS)
@pytest.mark.parametrize("src_layout", ["coo", "csr"])
@pytest.mark.parametrize("dst", FRAMEWORKS)
def test_layout_gives_the_layout_asked_for(src: str, src_layout: str, dst: str) -> None:
    x = make(src, src_layout)
    need(dst)
    for layout in LAYOUTS[dst]:
        out = to(x, dst, layout=layout)
        assert owner(out) == dst and layout_of(out) == layout, (layout, type(out))
        assert np.array_equal(densified(out), DENSE) and densified(out).dtype == np.float32
        route = explain(x, dst, layout=layout)
        if src == dst and src_layout == layout:
            assert route.steps == () or all("layout=" not in s.note for s in route.steps)


def test_layout_already_met_adds_no_step() -> None:
    need("jax")
    m = sp.coo_array(DENSE)
    route = explain(m, "jax", layout="coo")
    assert [s.converter for s in route.steps] == [s.converter for s in explain(m, "jax").steps]


def test_layout_is_a_reported_step_in_the_target() -> None:
    need("jax")
    m = sp.csr_array(DENSE)
    assert layout_of(to(m, "jax")) == "csr"  # without layout=: the layout it has
    route = explain(m, "jax", layout="coo")
    assert any("layout='coo'" in s.note for s in route.steps), route
    assert route.copies >= 1


def test_a_layout_the_target_does_not_hold_is_refused_naming_those_it_does() -> None:
    from interop_core import OptionError

    need("jax")
    m = sp.csr_array(DENSE)
    with pytest.raises(
        OptionError, match=r"layout='bsr' is not a value jax takes: one of 'coo', 'csr'"
    ):
        to(m, "jax", layout="bsr")
    with pytest.raises(OptionError, match="layout=3 is not a value jax takes"):
        to(m, "jax", layout=3)
    need("tensorflow")
    with pytest.raises(OptionError, match="one of 'coo'"):
        to(m, "tensorflow", layout="csr")
    with pytest.raises(OptionError, match="layout='csr'"):
        explain(m, "tensorflow", layout="csr")  # explain refuses what to() would


def test_layout_of_a_dense_array_says_which_converters_make_it() -> None:
    need("jax")
    with pytest.raises(NoRouteError, match="layout= asks for a result only these converters"):
        to(aligned(DENSE), "jax", layout="coo")


def test_a_dense_array_into_scipy_says_scipy_takes_sparse_arrays_only() -> None:
    """The search never visits the edges of another variant: when every edge into the
    target is one, the error says so, not what some other route refused on the way."""
    a = aligned(DENSE)  # writable and aligned: nothing about its memory is in the way
    with pytest.raises(NoRouteError) as info:
        to(a, "scipy")
    first = str(info.value).splitlines()[0]
    assert "no converter into scipy takes this array: each takes another variant" in first
    assert "sparse" in first and "read-only" not in first and "aligned" not in first
