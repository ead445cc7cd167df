"""pyarrow as a target (issue 21): ``to(x, "pyarrow")`` gives Arrow arrays.

Dense numpy arrays become Arrow arrays over the same memory (N-D ones nested FixedSizeLists),
other frameworks reach Arrow through numpy; ragged arrays become List (int32 row splits) or
LargeList (int64) arrays sharing values and offsets; a chunked list column is one reported
copy. Every zero-copy claim is checked with the frameworks' own pointers (numpy's
``__array_interface__``, Arrow's ``buffers()[1].address``, torch's ``data_ptr()``, JAX's
``unsafe_buffer_pointer()``, TensorFlow's DLPack export); every copy with explain()'s count.
"""

from __future__ import annotations

from typing import Any

import pytest
from adapters import own_ptr
from conftest import need

from interop_core import (
    ConversionError,
    CopyRequiredError,
    NoRouteError,
    explain,
    to,
)
from interop_core.testing import framework_of

np = need("numpy")
need("pyarrow")  # every test converts into Arrow

ROWS = [[1.0, 2.0, 3.0], [], [4.0, 5.0], [6.0]]
VALUES = [v for row in ROWS for v in row]
OFFSETS = [0, 3, 3, 5, 6]


def np_ptr(x: Any) -> int:
    return int(x.__array_interface__["data"][0])


def leaf(arr: Any) -> Any:
    """The primitive array inside nested FixedSizeLists."""
    pa = need("pyarrow")
    while pa.types.is_fixed_size_list(arr.type):
        arr = arr.values
    return arr


def arrow_ptr(arr: Any) -> int:
    """Address of an Arrow array's first element, from Arrow's own buffer."""
    inner = leaf(arr)
    return int(inner.buffers()[1].address) + inner.offset * inner.type.bit_width // 8


def aligned(values: Any, dtype: Any) -> Any:
    """A C-contiguous, 64-byte aligned numpy array of ``values``."""
    src = np.asarray(values, dtype)
    buf = np.empty(src.nbytes + 64, np.uint8)
    start = -buf.ctypes.data % 64
    out = buf[start : start + src.nbytes].view(src.dtype).reshape(src.shape)
    out[...] = src
    return out


# -- dense arrays ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype", ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
              "float16", "float32", "float64"],
)  # fmt: skip
def test_a_1d_numpy_array_becomes_an_arrow_array_over_its_memory(dtype: str) -> None:
    pa = need("pyarrow")
    x = np.arange(7).astype(dtype)
    route = explain(x, "pyarrow")
    assert route.zero_copy and route.copies == 0, str(route)
    y = to(x, "pyarrow")
    assert isinstance(y, pa.Array) and framework_of(y) == "pyarrow"
    assert y.type == pa.from_numpy_dtype(np.dtype(dtype)) and y.null_count == 0
    assert y.buffers()[1].address == np_ptr(x)
    back = to(y, "numpy")
    assert back.dtype == x.dtype and back.shape == x.shape and np.array_equal(back, x)
    assert y.to_pylist() == x.tolist()


def test_an_nd_array_becomes_nested_fixed_size_lists_over_its_memory() -> None:
    pa = need("pyarrow")
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    y = to(x, "pyarrow")
    assert y.type == pa.list_(pa.list_(pa.float32(), 4), 3) and len(y) == 2
    assert explain(x, "pyarrow").zero_copy
    assert arrow_ptr(y) == np_ptr(x)
    back = to(y, "numpy")
    assert back.shape == (2, 3, 4) and back.dtype == np.float32 and np.array_equal(back, x)
    # Empty shapes keep their dims too.
    for shape in [(0, 4), (3, 0)]:
        z = to(np.zeros(shape, np.int16), "pyarrow")
        assert len(z) == shape[0] and z.type.list_size == shape[1]
        assert to(z, "numpy").shape == shape


def test_the_arrow_array_keeps_the_numpy_array_alive() -> None:
    x = np.arange(1000, dtype=np.float64)
    y = to(x, "pyarrow")
    address = np_ptr(x)
    del x
    assert y.buffers()[1].address == address and y.to_pylist() == list(range(1000))


@pytest.mark.parametrize("layout", ["transposed", "step", "negative"])
def test_what_arrow_cannot_share_is_one_declared_copy(layout: str) -> None:
    pa = need("pyarrow")
    base = np.arange(12, dtype=np.int32).reshape(3, 4)
    x = {"transposed": base.T, "step": base[:, ::2], "negative": base[::-1]}[layout]
    route = explain(x, "pyarrow")
    assert route.copies == 1 and not route.zero_copy, str(route)
    y = to(x, "pyarrow")
    assert framework_of(y) == "pyarrow" and y.type.value_type == pa.int32()
    back = to(y, "numpy")
    assert back.shape == x.shape and back.dtype == x.dtype and np.array_equal(back, x)
    assert not np.shares_memory(back, base)
    with pytest.raises(CopyRequiredError):
        to(x, "pyarrow", copy=False)


def test_booleans_are_packed_into_bits_in_one_declared_copy() -> None:
    pa = need("pyarrow")
    x = np.array([[True, False, True], [False, False, True]])
    route = explain(x, "pyarrow")
    assert route.copies == 1 and "bits" in str(route), str(route)
    y = to(x, "pyarrow")
    assert y.type == pa.list_(pa.bool_(), 3)
    assert y.to_pylist() == x.tolist()
    back = to(y, "numpy")
    assert back.dtype == np.bool_ and np.array_equal(back, x)


def test_copy_true_shares_nothing() -> None:
    x = aligned(np.arange(6), np.float32)
    route = explain(x, "pyarrow", copy=True)
    assert route.copies == 1, str(route)
    y = to(x, "pyarrow", copy=True)
    assert arrow_ptr(y) != np_ptr(x) and arrow_ptr(y) % 64 == 0
    assert y.to_pylist() == x.tolist()


def test_copy_false_shares_or_raises() -> None:
    x = np.arange(6, dtype=np.float64)
    assert arrow_ptr(to(x, "pyarrow", copy=False)) == np_ptr(x)


def test_a_read_only_numpy_array_is_shared_and_stays_protected() -> None:
    torch = need("torch")
    x = aligned(np.arange(6), np.float32)
    x.flags.writeable = False
    y = to(x, "pyarrow")
    assert arrow_ptr(y) == np_ptr(x)
    assert not y.buffers()[1].is_mutable
    # Back to numpy: a read-only view; into torch (which cannot mark a tensor read-only): a copy.
    back = to(y, "numpy")
    assert np_ptr(back) == np_ptr(x) and not back.flags.writeable
    route = explain(y, "torch")
    assert route.copies == 1, str(route)
    t = to(y, "torch")
    assert isinstance(t, torch.Tensor) and t.data_ptr() != np_ptr(x)
    assert t.tolist() == x.tolist()


def test_dtypes_arrow_cannot_hold_raise_no_route_naming_them() -> None:
    need("pyarrow")
    for x in (np.zeros(3, np.complex64), np.zeros(3, np.complex128)):
        with pytest.raises(NoRouteError, match=str(x.dtype)):
            to(x, "pyarrow")
    ml_dtypes = need("ml_dtypes")
    for dtype in (ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn):
        with pytest.raises(NoRouteError, match=np.dtype(dtype).name):
            to(np.zeros(3, dtype), "pyarrow")


def test_a_0d_array_is_refused_with_what_to_do() -> None:
    need("pyarrow")
    with pytest.raises(ConversionError, match="reshape"):
        to(np.float32(1.5).reshape(()), "pyarrow")


def test_torch_jax_and_tensorflow_reach_arrow_through_numpy_without_copies() -> None:
    pa = need("pyarrow")
    torch = need("torch")
    jnp = need("jax").numpy
    tf = need("tensorflow")
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    y = to(t, "pyarrow")
    assert isinstance(y, pa.FixedSizeListArray) and arrow_ptr(y) == t.data_ptr()
    assert explain(t, "pyarrow").zero_copy
    assert to(y, "torch").data_ptr() == t.data_ptr()  # and back, shared
    j = jnp.arange(8, dtype=jnp.int32)
    route = explain(j, "pyarrow")
    yj = to(j, "pyarrow")
    assert yj.to_pylist() == list(range(8))
    assert (arrow_ptr(yj) == j.unsafe_buffer_pointer()) == route.zero_copy, str(route)
    c = tf.constant(np.arange(5, dtype=np.float16))
    route = explain(c, "pyarrow")
    yc = to(c, "pyarrow")
    assert yc.type == pa.float16() and to(yc, "numpy").tolist() == list(range(5))
    assert (arrow_ptr(yc) == own_ptr(c)) == route.zero_copy, str(route)


def test_a_table_column_round_trips_through_numpy() -> None:
    pa = need("pyarrow")
    col = pa.array([1.5, 2.5, 3.5], pa.float32())
    view = to(col, "numpy")
    again = to(view, "pyarrow")
    assert again.equals(col) and arrow_ptr(again) == arrow_ptr(col)


def test_the_conformance_kit_passes_for_pyarrow() -> None:
    need("pyarrow")
    from interop_core.testing import check_framework

    done = check_framework("pyarrow")
    assert any("NoRouteError" in line for line in done), done


# -- ragged arrays into Arrow ------------------------------------------------------------


def make(fw: str, splits: str, dtype: str = "float32") -> Any:
    """The test rows as a ragged array of ``fw`` with row splits of dtype ``splits``."""
    vals = np.asarray(VALUES, dtype)
    offs = np.asarray(OFFSETS, splits)
    if fw == "torch":
        torch = need("torch")
        return torch.nested.nested_tensor_from_jagged(torch.tensor(vals), torch.tensor(offs))
    if fw == "tensorflow":
        tf = need("tensorflow")
        return tf.RaggedTensor.from_row_splits(tf.constant(vals), tf.constant(offs))
    jnp = need("jax").numpy
    from interop_plugins.exchange.ragged import RaggedArray

    return RaggedArray(jnp.asarray(vals), jnp.asarray(offs))


def source_ptrs(x: Any) -> tuple[int, int]:
    """(values, row splits) addresses with the source framework's own API."""
    name = type(x).__module__
    if name.startswith("torch"):
        return x.values().data_ptr(), x.offsets().data_ptr()
    if name.startswith("tensorflow"):
        return own_ptr(x.values), own_ptr(x.row_splits)
    return x.values.unsafe_buffer_pointer(), x.row_splits.unsafe_buffer_pointer()


CASES = [("torch", "int64"), ("torch", "int32"), ("tensorflow", "int64"),
         ("tensorflow", "int32"), ("jax", "int32")]  # fmt: skip


@pytest.mark.parametrize(("source", "splits"), CASES)
def test_ragged_arrays_become_list_arrays_sharing_values_and_offsets(
    source: str, splits: str
) -> None:
    pa = need("pyarrow")
    x = make(source, splits)
    route = explain(x, "pyarrow")
    assert route.zero_copy and route.copies == 0, str(route)
    y = to(x, "pyarrow")
    assert framework_of(y) == "pyarrow"
    assert isinstance(y, pa.ListArray if splits == "int32" else pa.LargeListArray)
    assert y.type.value_type == pa.float32() and str(y.offsets.type) == splits
    assert y.to_pylist() == ROWS
    values, offsets = source_ptrs(x)
    assert y.values.buffers()[1].address == values
    assert y.buffers()[1].address == offsets
    # And back: the rows (the values shared again where the source's rules allow).
    back = to(y, source)
    assert framework_of(back) == source


def test_int64_row_splits_of_jax_become_a_large_list_with_x64() -> None:
    pa = need("pyarrow")
    jax = need("jax")
    if not jax.config.jax_enable_x64:
        pytest.skip("JAX holds int64 row splits only with jax_enable_x64")
    x = make("jax", "int64")
    y = to(x, "pyarrow")
    assert isinstance(y, pa.LargeListArray) and y.to_pylist() == ROWS
    assert y.buffers()[1].address == x.row_splits.unsafe_buffer_pointer()


def test_ragged_booleans_are_one_declared_copy() -> None:
    pa = need("pyarrow")
    torch = need("torch")
    x = torch.nested.nested_tensor_from_jagged(
        torch.tensor([True, False, True, True]), torch.tensor([0, 1, 1, 4])
    )
    route = explain(x, "pyarrow")
    assert route.copies == 1, str(route)
    y = to(x, "pyarrow")
    assert isinstance(y, pa.LargeListArray) and y.type.value_type == pa.bool_()
    assert y.to_pylist() == [[True], [], [False, True, True]]


def test_a_non_contiguous_jagged_tensor_is_copied_once_into_arrow() -> None:
    pa = need("pyarrow")
    torch = need("torch")
    base = torch.arange(12.0).view(3, 4)
    x = torch.nested.narrow(base, 1, torch.tensor([0, 1, 0]), torch.tensor([2, 3, 1]),
                            layout=torch.jagged)  # fmt: skip
    route = explain(x, "pyarrow")
    assert route.copies == 1, str(route)
    y = to(x, "pyarrow")
    assert isinstance(y, pa.LargeListArray)
    assert y.to_pylist() == [[0.0, 1.0], [5.0, 6.0, 7.0], [8.0]]


def test_copy_true_into_arrow_shares_nothing() -> None:
    torch = need("torch")
    need("pyarrow")
    x = make("torch", "int64")
    assert explain(x, "pyarrow", copy=True).copies == 1
    y = to(x, "pyarrow", copy=True)
    values, offsets = source_ptrs(x)
    assert y.values.buffers()[1].address != values and y.buffers()[1].address != offsets
    assert y.to_pylist() == ROWS and isinstance(x, torch.Tensor)


def test_a_list_array_copied_into_arrow_on_request() -> None:
    pa = need("pyarrow")
    x = pa.array(ROWS, pa.list_(pa.float32()))
    route = explain(x, "pyarrow", copy=True)
    assert route.copies == 1, str(route)
    y = to(x, "pyarrow", copy=True)
    assert y.equals(x) and y.values.buffers()[1].address != x.values.buffers()[1].address


# -- chunked list columns ----------------------------------------------------------------


def test_a_chunked_list_column_is_one_reported_copy() -> None:
    pa = need("pyarrow")
    torch = need("torch")
    one = pa.array(ROWS, pa.list_(pa.float32()))
    x = pa.chunked_array([one, one.slice(2)])
    route = explain(x, "torch")
    assert route.copies == 1 and "combine Arrow list chunks" in str(route), str(route)
    got = to(x, "torch")
    assert got.is_nested and [r.tolist() for r in got.unbind()] == ROWS + ROWS[2:]
    assert got.offsets().dtype == torch.int32
    with pytest.raises(CopyRequiredError):
        to(x, "torch", copy=False)
    # Into jax too; into Arrow it is already there (the column itself).
    assert explain(x, "jax").copies == 1 and to(x, "pyarrow") is x


def test_a_chunked_list_column_of_a_table_converts() -> None:
    pa = need("pyarrow")
    need("tensorflow")
    col = pa.chunked_array([pa.array(ROWS[:2], pa.list_(pa.float32())),
                            pa.array(ROWS[2:], pa.list_(pa.float32()))])  # fmt: skip
    table = pa.table({"rows": col})
    out = to(table, "tensorflow")
    assert out["rows"].to_list() == ROWS


def test_a_chunked_list_column_counts_every_chunk() -> None:
    pa = need("pyarrow")
    need("jax")
    typ = pa.list_(pa.float32())
    x = pa.chunked_array([pa.array([], typ), pa.array(ROWS, typ)])  # the first chunk empty
    got = to(x, "jax")
    assert [got.values[int(a) : int(b)].tolist() for a, b in zip(
        got.row_splits[:-1], got.row_splits[1:], strict=True)] == ROWS  # fmt: skip
    # Null rows in any chunk are refused, with what to do.
    nulls = pa.chunked_array([pa.array(ROWS, typ), pa.array([[1.0], None], typ)])
    with pytest.raises(NoRouteError, match="null rows"):
        to(nulls, "jax")
