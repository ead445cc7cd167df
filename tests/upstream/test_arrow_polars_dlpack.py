"""Arrow's DLPack tests and polars' array-export tests, re-expressed through ``to()``.

Carries:

- apache/arrow ``python/pyarrow/tests/test_dlpack.py``: ``test_dlpack`` (every numeric
  type, whole arrays, slices and empty arrays reach numpy equal, over Arrow's memory, and
  no Arrow memory is left allocated: upstream's ``check_bytes_allocated``) and
  ``test_dlpack_not_supported`` (nulls, lists, the null type, bit-packed booleans);
  ``test_dlpack_cuda_not_supported`` needs ``pyarrow.cuda`` and a GPU and is not carried.
  Upstream imports with ``np.from_dlpack(arr)``; here ``to(arr, target)`` for numpy, torch,
  JAX and TensorFlow.
- pola-rs/polars ``py-polars/tests/unit/interop/numpy/test_to_numpy_series.py``: the
  zero-copy and copy cases of ``Series.to_numpy`` (``allow_copy=False`` is ``copy=False``,
  ``writable=True`` is ``copy=True``), into every framework.
- pola-rs/polars ``py-polars/tests/unit/ml/test_to_torch.py`` and ``test_to_jax.py``: the
  Series and ``"dict"`` exports (a DataFrame converts as ``{column: array}``, as
  ``to_torch("dict")``/``to_jax("dict")`` return) and ``Array`` columns. polars' 2-D
  ``"tensor"``/``"array"`` and ``"dataset"`` return types have no counterpart in ``to()``
  (it keeps a frame's columns apart) and are not carried.

What the project promises (README "Tables"): a numeric column without nulls in one chunk
is shared with numpy (a read-only view) and torch, and with JAX and TensorFlow when it
starts on a 64-byte boundary, else through one reported copy; bit-packed booleans and
several chunks are one reported copy; nulls need ``nulls=``; strings, temporal and other
non-numeric columns are refused naming the column. Memory sharing is checked with each
framework's own pointer API (Arrow's ``buffers()[1].address``, polars' zero-copy
``to_numpy(allow_copy=False)``, numpy's ``__array_interface__``, ``Tensor.data_ptr()``,
``jax.Array.unsafe_buffer_pointer()``, TensorFlow's own DLPack export read with ctypes).
"""

from __future__ import annotations

import datetime
import decimal
import pathlib
from collections.abc import Callable
from typing import Any

import pytest
from conftest import need
from pointers import X64, host, ptr, tf_ptr, x64

from interop_core import (
    ConversionError,
    CopyRequiredError,
    NoRouteError,
    OptionError,
    explain,
    to,
)

np = need("numpy")
pa = need("pyarrow")
pl = need("polars")
torch = need("torch")
jax = need("jax")
tf = need("tensorflow")

TARGETS = ("numpy", "torch", "jax", "tensorflow")


def arrow_ptr(arr: Any) -> int:
    """Address of an Arrow array's first value, from Arrow's own buffer and offset."""
    return int(arr.buffers()[1].address) + arr.offset * arr.type.bit_width // 8


def polars_ptr(s: Any) -> int:
    """Address of a polars Series' first value: polars' own zero-copy export (it raises
    rather than copy)."""
    return ptr(s.to_numpy(allow_copy=False))


TYPES = {"numpy": np.ndarray, "torch": torch.Tensor, "jax": jax.Array, "tensorflow": tf.Tensor}


def dtype_name(x: Any) -> str:
    if isinstance(x, torch.Tensor):
        return str(x.dtype).removeprefix("torch.")
    return str(x.dtype.name)


def check_shared_or_one_copy(src: Any, y: Any, target: str, src_ptr: int, **kw: Any) -> None:
    """The Arrow/polars rule: numpy (a read-only view) and torch always share; JAX and
    TensorFlow share a buffer that starts on a 64-byte boundary, and copy any other once
    (``explain()`` counts it, ``copy=False`` refuses it)."""
    route = explain(src, target, **kw)
    if target == "numpy":
        assert not y.flags.writeable
    if target in ("numpy", "torch") or src_ptr % 64 == 0:
        assert ptr(y) == src_ptr, str(route)
        assert route.copies == 0, str(route)
    else:
        assert ptr(y) != src_ptr
        assert route.copies == 1 and "aligned" in str(route), str(route)
        with pytest.raises(CopyRequiredError):
            to(src, target, copy=False, **kw)


# -- apache/arrow test_dlpack.py::test_dlpack ------------------------------------------------

ARROW_TYPES = (
    "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
    "float16", "float32", "float64",
)  # fmt: skip


def _arrow_cases(arr: Any, empty: Any) -> list[tuple[str, Any, list[int]]]:
    """Upstream's arrays: the whole [1, 2, 3], slice(1, 1), slice(0, 1), slice(1), empty."""
    return [
        ("whole", arr, [1, 2, 3]),
        ("slice(1, 1)", arr.slice(1, 1), [2]),
        ("slice(0, 1)", arr.slice(0, 1), [1]),
        ("slice(1)", arr.slice(1), [2, 3]),
        ("empty", empty, []),
    ]


def _convert_every_case(type_name: str, target: str) -> list[str]:
    """Each of upstream's arrays into ``target``, checked; returns what each route did.
    Everything Arrow allocates here is released on return."""
    value_type = getattr(pa, type_name)()
    arr = pa.array([1, 2, 3], type=value_type)  # Arrow's own (aligned) allocation
    empty = pa.array([], type=value_type)
    assert arrow_ptr(arr) % 64 == 0
    done = []
    for name, a, expected in _arrow_cases(arr, empty):
        if target == "jax" and type_name in X64 and not x64():
            # DIFFERS: JAX would narrow the 64-bit dtype; to() refuses, naming the flag.
            with pytest.raises(NoRouteError, match="jax_enable_x64"):
                to(a, target)
            done.append(f"{name}: refused")
            continue
        before = pa.total_allocated_bytes()
        y = to(a, target)
        assert isinstance(y, TYPES[target]), name
        assert dtype_name(y) == type_name, name
        np.testing.assert_array_equal(
            host(y), np.array(expected, dtype=type_name), strict=True, err_msg=name
        )
        if len(expected):
            check_shared_or_one_copy(a, y, target, arrow_ptr(a))
        if explain(a, target).copies == 0:
            assert pa.total_allocated_bytes() == before, name  # a view allocates nothing
        done.append(f"{name}: {explain(a, target).copies} copies")
        del y
    return done


@pytest.mark.parametrize("type_name", ARROW_TYPES)
@pytest.mark.parametrize("target", TARGETS)
def test_dlpack(target: str, type_name: str) -> None:
    """upstream: apache/arrow/python/pyarrow/tests/test_dlpack.py::test_dlpack

    Every numeric Arrow type, the whole array, three slices and an empty array: equal
    values of the same dtype (``assert_array_equal(..., strict=True)``), over Arrow's
    memory, and ``pa.total_allocated_bytes()`` back where it was once the results are gone
    (upstream's ``check_bytes_allocated``). JAX and TensorFlow share the slices that start
    on a 64-byte boundary and copy the others once (reported).
    DIFFERS (int64, uint64, float64 into JAX without jax_enable_x64): NoRouteError naming
    the flag instead of a narrowed array."""
    baseline = pa.total_allocated_bytes()
    done = _convert_every_case(type_name, target)
    assert len(done) == 5
    assert pa.total_allocated_bytes() == baseline  # freed as the last reference goes


NOT_DLPACK: dict[str, Callable[[], Any]] = {
    "nulls": lambda: pa.array([1, None, 3]),
    "list": lambda: pa.array([[0, 1], [3, 4]], type=pa.list_(pa.int32())),
    "null-type": lambda: pa.array([]),
    "bit-packed-bool": lambda: pa.array([True, False, True]),
}


@pytest.mark.parametrize("case", list(NOT_DLPACK))
def test_dlpack_not_supported(case: str) -> None:
    """upstream: apache/arrow/python/pyarrow/tests/test_dlpack.py::test_dlpack_not_supported

    Arrow's DLPack export raises TypeError for arrays with nulls, lists, the null type and
    bit-packed booleans. DIFFERS, each in its own way:
    - nulls: ConversionError (a RuntimeError) saying to pass ``nulls=``; with
      ``nulls="fill"`` the nulls take ``fill_value``.
    - list<int32>: a ragged array, which numpy refuses (NoRouteError: pass ``ragged=``)
      and TensorFlow takes as a RaggedTensor over Arrow's values and int32 offsets.
    - the null type: ConversionError ("holds null values").
    - booleans: unpacked by one reported copy; ``copy=False`` raises CopyRequiredError."""
    arr = NOT_DLPACK[case]()
    if case == "nulls":
        for target in ("numpy", "torch"):
            with pytest.raises(ConversionError, match="nulls"):
                to(arr, target)
        filled = to(arr, "numpy", nulls="fill", fill_value=0)
        np.testing.assert_array_equal(filled, np.array([1, 0, 3]), strict=True)
    elif case == "list":
        with pytest.raises(NoRouteError, match="ragged"):
            to(arr, "numpy")
        rt = to(arr, "tensorflow")
        assert isinstance(rt, tf.RaggedTensor) and rt.to_list() == [[0, 1], [3, 4]]
        assert tf_ptr(rt.values) == arrow_ptr(arr.values)
        assert rt.row_splits.dtype == tf.int32
        assert tf_ptr(rt.row_splits) == int(arr.buffers()[1].address)
        assert explain(arr, "tensorflow").copies == 0
    elif case == "null-type":
        for target in ("numpy", "torch"):
            with pytest.raises(ConversionError, match="null values"):
                to(arr, target)
    else:
        for target in ("numpy", "torch"):
            y = to(arr, target)
            np.testing.assert_array_equal(host(y), np.array([True, False, True]), strict=True)
            assert explain(arr, target).copies == 1
            with pytest.raises(CopyRequiredError, match="one bit each"):
                to(arr, target, copy=False)


# -- polars test_to_numpy_series.py ----------------------------------------------------------

POLARS_NUMERIC = (
    "Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64",
    "Float32", "Float64",
)  # fmt: skip


@pytest.mark.parametrize("dtype", POLARS_NUMERIC)
@pytest.mark.parametrize("target", TARGETS)
def test_series_to_numpy_numeric_zero_copy(target: str, dtype: str) -> None:
    """upstream: pola-rs/polars/py-polars/tests/unit/interop/numpy/test_to_numpy_series.py::test_series_to_numpy_numeric_zero_copy

    ``pl.Series([1, 2, 3]).cast(dtype).to_numpy(allow_copy=False)``: polars' buffer, the
    values, the matching numpy dtype. Here into every framework: numpy and torch share
    polars' buffer (also with ``copy=False``); JAX and TensorFlow share it when it starts on
    a 64-byte boundary (polars' small buffers often do not) and copy it once otherwise.
    DIFFERS (Int64, UInt64, Float64 into JAX without jax_enable_x64): NoRouteError."""  # noqa: E501
    s = pl.Series([1, 2, 3]).cast(getattr(pl, dtype))
    name = dtype.lower()
    if target == "jax" and name in X64 and not x64():
        with pytest.raises(NoRouteError, match="jax_enable_x64"):
            to(s, target)
        return
    y = to(s, target)
    assert isinstance(y, TYPES[target]) and dtype_name(y) == name
    np.testing.assert_array_equal(host(y), np.array([1, 2, 3], dtype=name), strict=True)
    assert host(y).tolist() == s.to_list()
    check_shared_or_one_copy(s, y, target, polars_ptr(s))
    if target in ("numpy", "torch"):
        assert ptr(to(s, target, copy=False)) == polars_ptr(s)


@pytest.mark.parametrize("dtype", POLARS_NUMERIC)
def test_series_to_numpy_numeric_with_nulls(dtype: str) -> None:
    """upstream: pola-rs/polars/py-polars/tests/unit/interop/numpy/test_to_numpy_series.py::test_series_to_numpy_numeric_with_nulls

    DIFFERS: polars turns nulls into NaN (integers widened to floats) and refuses
    ``allow_copy=False``. to() never changes a dtype silently: it raises ConversionError
    until ``nulls=`` says what to do; ``nulls="fill", fill_value=nan`` keeps float dtypes
    (integers cannot hold NaN: OptionError), ``nulls="mask"`` keeps the dtype and adds the
    mask; ``copy=False`` raises CopyRequiredError, as upstream refuses allow_copy=False."""  # noqa: E501
    s = pl.Series([1, 2, None], dtype=getattr(pl, dtype), strict=False)
    name = dtype.lower()
    with pytest.raises(ConversionError, match="nulls"):
        to(s, "numpy")
    with pytest.raises(CopyRequiredError):
        to(s, "numpy", nulls="mask", copy=False)
    values, mask = to(s, "numpy", nulls="mask")
    assert values.dtype == np.dtype(name) and values[:2].tolist() == [1, 2]
    np.testing.assert_array_equal(mask, np.array([True, True, False]), strict=True)
    if name.startswith("float"):
        filled = to(s, "numpy", nulls="fill", fill_value=float("nan"))
        assert filled.dtype == np.dtype(name) and filled[:2].tolist() == s.to_list()[:2]
        assert np.isnan(filled[-1])
    else:
        with pytest.raises(OptionError, match="does not fit"):
            to(s, "numpy", nulls="fill", fill_value=float("nan"))


NOT_NUMERIC: dict[str, tuple[Any, list[Any]]] = {
    "Time": (pl.Time, [datetime.time(10, 30, 45), datetime.time(23, 59, 59)]),
    "Categorical": (pl.Categorical, ["a", "b", "a"]),
    "Enum": (pl.Enum(["a", "b", "c"]), ["a", "b", "a"]),
    "String": (pl.String, ["a", "bc", "def"]),
    "Binary": (pl.Binary, [b"a", b"bc", b"def"]),
    "Decimal": (pl.Decimal, [decimal.Decimal("1.234"), decimal.Decimal("-3.456")]),
    "Object": (pl.Object, [pathlib.Path(), pathlib.Path("abc")]),
}


@pytest.mark.parametrize("with_nulls", [False, True])
@pytest.mark.parametrize("dtype", list(NOT_NUMERIC))
def test_to_numpy_object_dtypes(dtype: str, with_nulls: bool) -> None:
    """upstream: pola-rs/polars/py-polars/tests/unit/interop/numpy/test_to_numpy_series.py::test_to_numpy_object_dtypes

    DIFFERS: polars returns a numpy object array (and refuses allow_copy=False); to()
    converts numbers and booleans only and raises ConversionError naming what the Series
    holds, into every framework (``explain()`` too)."""  # noqa: E501
    pl_dtype, values = NOT_NUMERIC[dtype]
    s = pl.Series([*values, None] if with_nulls else values, dtype=pl_dtype)
    for target in ("numpy", "torch"):
        with pytest.raises(ConversionError, match=f"holds {dtype}"):
            to(s, target)
    with pytest.raises(ConversionError, match="not numbers or booleans"):
        explain(s, "numpy")


TEMPORAL = {
    "Duration": pl.Duration,
    "Duration(ms)": pl.Duration("ms"),
    "Duration(us)": pl.Duration("us"),
    "Duration(ns)": pl.Duration("ns"),
    "Datetime": pl.Datetime,
    "Datetime(ms)": pl.Datetime("ms"),
    "Datetime(us)": pl.Datetime("us"),
    "Datetime(ns)": pl.Datetime("ns"),
}


@pytest.mark.parametrize("dtype", list(TEMPORAL))
def test_series_to_numpy_temporal_zero_copy(dtype: str) -> None:
    """upstream: pola-rs/polars/py-polars/tests/unit/interop/numpy/test_to_numpy_series.py::test_series_to_numpy_temporal_zero_copy

    DIFFERS: polars exports durations and datetimes as zero-copy ``timedelta64`` /
    ``datetime64`` arrays; no framework but numpy has those dtypes, and to() refuses
    temporal columns (ConversionError naming the dtype) rather than hand out their integer
    storage under another meaning."""  # noqa: E501
    s = pl.Series([0, 2_000, 1_000_000], dtype=TEMPORAL[dtype], strict=False)
    for target in ("numpy", "torch"):
        with pytest.raises(ConversionError, match=dtype.split("(")[0]):
            to(s, target)


def test_series_to_numpy_bool() -> None:
    """upstream: pola-rs/polars/py-polars/tests/unit/interop/numpy/test_to_numpy_series.py::test_series_to_numpy_bool

    Booleans are bit-packed: the numpy array of bools is a copy (values and dtype equal),
    ``allow_copy=False`` (``copy=False``) raises; the copy is reported by explain()."""  # noqa: E501
    s = pl.Series([True, False])
    result = to(s, "numpy")
    assert result.tolist() == s.to_list() and result.dtype == np.bool_
    assert explain(s, "numpy").copies == 1
    with pytest.raises(CopyRequiredError):
        to(s, "numpy", copy=False)


def test_series_to_numpy_bool_with_nulls() -> None:
    """upstream: pola-rs/polars/py-polars/tests/unit/interop/numpy/test_to_numpy_series.py::test_series_to_numpy_bool_with_nulls

    DIFFERS: polars gives an object array holding None; to() raises ConversionError until
    ``nulls=`` says what to do (``"mask"``: a bool array and its mask)."""  # noqa: E501
    s = pl.Series([True, False, None])
    with pytest.raises(ConversionError, match="nulls"):
        to(s, "numpy")
    values, mask = to(s, "numpy", nulls="mask")
    assert values.dtype == np.bool_ and values[:2].tolist() == [True, False]
    assert mask.tolist() == [True, True, False]


def test_series_to_numpy_array_of_int() -> None:
    """upstream: pola-rs/polars/py-polars/tests/unit/interop/numpy/test_to_numpy_series.py::test_series_to_numpy_array_of_int

    An ``Array(Int64, 2)`` Series is a (3, 2) int64 array: here a zero-copy view of the
    values buffer, in numpy and torch."""  # noqa: E501
    values = [[1, 2], [3, 4], [5, 6]]
    s = pl.Series(values, dtype=pl.Array(pl.Int64, 2))
    inner = arrow_ptr(s.to_arrow().values)
    result = to(s, "numpy")
    np.testing.assert_array_equal(result, np.array(values), strict=True)
    assert ptr(result) == inner and explain(s, "numpy").copies == 0
    t = to(s, "torch")
    assert tuple(t.shape) == (3, 2) and t.dtype == torch.int64 and t.data_ptr() == inner


def test_series_to_numpy_array_of_str() -> None:
    """upstream: pola-rs/polars/py-polars/tests/unit/interop/numpy/test_to_numpy_series.py::test_series_to_numpy_array_of_str

    DIFFERS: polars gives a (2, 3) object array of strings; to() refuses an Array of
    strings with ConversionError naming it."""  # noqa: E501
    s = pl.Series([["1", "2", "3"], ["4", "5", "10000"]], dtype=pl.Array(pl.String, 3))
    with pytest.raises(ConversionError, match="String"):
        to(s, "numpy")


def test_to_numpy_null() -> None:
    """upstream: pola-rs/polars/py-polars/tests/unit/interop/numpy/test_to_numpy_series.py::test_to_numpy_null

    DIFFERS: polars gives float32 NaNs for a Series of the Null dtype; to() refuses it
    (ConversionError: it holds Null values)."""  # noqa: E501
    s = pl.Series([None, None], dtype=pl.Null)
    with pytest.raises(ConversionError, match="Null"):
        to(s, "numpy")


@pytest.mark.parametrize("dtype", ["String", "Float32"])
def test_to_numpy_empty(dtype: str) -> None:
    """upstream: pola-rs/polars/py-polars/tests/unit/interop/numpy/test_to_numpy_series.py::test_to_numpy_empty

    An empty Series converts with ``allow_copy=False`` to shape (0,). DIFFERS for upstream's
    String Series (an empty object array there): refused as strings, empty or not. An
    empty Float32 Series is a (0,) float32 array with ``copy=False``."""  # noqa: E501
    s = pl.Series(dtype=getattr(pl, dtype))
    if dtype == "String":
        with pytest.raises(ConversionError, match="String"):
            to(s, "numpy", copy=False)
        return
    for target in TARGETS:
        y = to(s, target, copy=False)
        assert isinstance(y, TYPES[target]) and tuple(y.shape) == (0,)
        assert dtype_name(y) == "float32"


def test_to_numpy_chunked() -> None:
    """upstream: pola-rs/polars/py-polars/tests/unit/interop/numpy/test_to_numpy_series.py::test_to_numpy_chunked

    A Series of two chunks: one array of all values (a copy, reported), int64; copy=False
    (``allow_copy=False``) raises."""  # noqa: E501
    s = pl.concat([pl.Series([1, 2]), pl.Series([3, 4])], rechunk=False)
    assert s.n_chunks() == 2
    result = to(s, "numpy")
    assert result.tolist() == s.to_list() and result.dtype == np.int64
    assert explain(s, "numpy").copies == 1
    with pytest.raises(CopyRequiredError, match="copy=False"):
        to(s, "numpy", copy=False)


@pytest.mark.parametrize("writable", [False, True])
def test_to_numpy2(writable: bool) -> None:
    """upstream: pola-rs/polars/py-polars/tests/unit/interop/numpy/test_to_numpy_series.py::test_to_numpy2

    ``to_numpy(writable=False)`` is a read-only view; ``writable=True`` an array that can be
    written: here ``copy=None`` (a read-only view of polars' buffer) and ``copy=True`` (a
    writable array of its own; the write does not reach the Series). DIFFERS for the
    Series with a missing value: ConversionError, not a float array with NaN."""  # noqa: E501
    s = pl.Series("a", [1, 2, 3], pl.UInt8)
    np_array = to(s, "numpy", copy=True if writable else None)
    np.testing.assert_array_equal(np_array, np.array([1, 2, 3], dtype=np.uint8), strict=True)
    assert np_array.flags.writeable == writable
    assert (ptr(np_array) == polars_ptr(s)) != writable
    if writable:
        np_array[1] += 10
        np.testing.assert_array_equal(np_array, np.array([1, 12, 3], dtype=np.uint8))
        assert s.to_list() == [1, 2, 3]
    with pytest.raises(ConversionError, match="nulls"):
        to(pl.Series("a", [None, 2, 3], pl.UInt8), "numpy", copy=True if writable else None)


@pytest.mark.parametrize("case", ["view", "view_nulls_sliced"])
def test_view(case: str) -> None:
    """upstream: pola-rs/polars/py-polars/tests/unit/interop/numpy/test_to_numpy_series.py::test_view
    (and ::test_view_nulls_sliced)

    ``Series.view()``: a numpy view of the values; a slice that leaves the nulls out has
    no validity and is viewed too. Here a zero-copy to(), in numpy and torch."""  # noqa: E501
    if case == "view":
        s = pl.Series("a", [1.0, 2.5, 3.0])
        expected = [1.0, 2.5, 3.0]
    else:
        s = pl.Series("b", [1, 2, None])[:2]
        assert not s.has_nulls()
        expected = [1, 2]
    for target in ("numpy", "torch"):
        y = to(s, target)
        assert host(y).tolist() == expected
        assert ptr(y) == polars_ptr(s) and explain(s, target).copies == 0


# -- polars ml: test_to_torch.py -------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["Int8", "UInt16", "UInt32", "UInt64"])
def test_to_torch_from_series(dtype: str) -> None:
    """upstream: pola-rs/polars/py-polars/tests/unit/ml/test_to_torch.py::test_to_torch_from_series

    ``pl.Series("x", [1, 2, 3, 4], dtype=Int8).to_torch()``: shape [4], int8 values.
    DIFFERS for UInt16/32/64: polars widens them to signed int32/int64 ("torch doesn't
    natively support" them); torch here has uint16/uint32/uint64, and to() never changes a
    dtype silently: the tensor keeps the unsigned dtype, over polars' buffer."""
    s = pl.Series("x", [1, 2, 3, 4], dtype=getattr(pl, dtype))
    t = to(s, "torch")
    assert list(t.shape) == [4]
    assert t.dtype == getattr(torch, dtype.lower())
    assert t.tolist() == [1, 2, 3, 4]
    assert t.data_ptr() == polars_ptr(s)


def frame() -> Any:
    """upstream's fixture frame: x Int8, y Boolean, z Float32."""
    return pl.DataFrame(
        {"x": [1, 2, 2, 3], "y": [True, False, True, False], "z": [1.5, -0.5, 0.0, -2.0]},
        schema_overrides={"x": pl.Int8, "z": pl.Float32},
    )


def arrow_frame() -> Any:
    """The same frame built by pyarrow (Arrow's own allocations)."""
    return pa.table(
        {
            "x": pa.array([1, 2, 2, 3], pa.int8()),
            "y": pa.array([True, False, True, False]),
            "z": pa.array([1.5, -0.5, 0.0, -2.0], pa.float32()),
        }
    )


@pytest.mark.parametrize("source", ["polars", "pyarrow", "polars.to_arrow()"])
def test_to_torch_dict(source: str) -> None:
    """upstream: pola-rs/polars/py-polars/tests/unit/ml/test_to_torch.py::test_to_torch_dict

    ``df.to_torch("dict")``: keys x, y, z in order; int8, bool and float32 tensors with the
    frame's values. Here ``to(df, "torch")`` for the polars frame and for the same frame
    built by pyarrow: the numeric columns are views of their buffers, the bit-packed bool
    column one reported copy. The polars frame exported to Arrow (``df.to_arrow()``) is
    Arrow memory another library exported, which the project treats as read-only (README
    "Tables"): every column reaches torch through one reported copy."""
    table = {"polars": frame, "pyarrow": arrow_frame}.get(source, lambda: frame().to_arrow())()
    td = to(table, "torch")
    assert list(td) == ["x", "y", "z"]
    torch.testing.assert_close(td["x"], torch.tensor([1, 2, 2, 3], dtype=torch.int8))
    torch.testing.assert_close(td["y"], torch.tensor([True, False, True, False]))
    torch.testing.assert_close(td["z"], torch.tensor([1.5, -0.5, 0.0, -2.0]))
    routes = explain(table, "torch")
    if source == "polars.to_arrow()":
        assert [routes[n].copies for n in ("x", "y", "z")] == [1, 1, 1]
        for name in ("x", "z"):
            assert td[name].data_ptr() != arrow_ptr(table.column(name).chunk(0)), name
        return
    for name in ("x", "z"):
        col = table[name] if source == "polars" else table.column(name).chunk(0)
        want = polars_ptr(col) if source == "polars" else arrow_ptr(col)
        assert td[name].data_ptr() == want, name
    assert [routes[n].copies for n in ("x", "y", "z")] == [0, 1, 0]


def _array_frames() -> dict[str, Any]:
    return {
        "2d": pl.DataFrame(
            {"data": [[1, 1], [1, 2], [2, 2]]},
            schema_overrides={"data": pl.Array(pl.Int32, shape=(2,))},
        ),
        "nested": pl.DataFrame(
            {"data": [[[1, 1], [1, 2]], [[2, 2], [2, 3]]]},
            schema_overrides={"data": pl.Array(pl.Array(pl.Int32, shape=(2,)), shape=(2,))},
        ),
    }


def _check_array_columns(case: str, target: str) -> None:
    """Shared by the torch and JAX versions of upstream's ``test_2D_array_cols_to_*``."""
    frames = _array_frames()
    if case == "list":
        with pytest.raises(ConversionError, match="'data'"):
            to(pl.DataFrame({"data": [[1, 1], [1, 2], [2, 2]]}), target)
        return
    if case == "dict":
        df = frames["nested"].insert_column(0, pl.Series("lbl", [0, 1], dtype=pl.Int32))
        out = to(df, target)
        assert list(out) == ["lbl", "data"]
        np.testing.assert_array_equal(host(out["lbl"]), np.array([0, 1], np.int32), strict=True)
        expected = np.array([[[1, 1], [1, 2]], [[2, 2], [2, 3]]], np.int32)
        np.testing.assert_array_equal(host(out["data"]), expected, strict=True)
        return
    df = frames[case]
    out = to(df, target)["data"]
    expected = np.array(df["data"].to_list(), np.int32)
    assert isinstance(out, TYPES[target])
    np.testing.assert_array_equal(host(out), expected, strict=True)
    leaf = df["data"].to_arrow()
    while pa.types.is_fixed_size_list(leaf.type):
        leaf = leaf.values
    check_shared_or_one_copy(df["data"], out, target, arrow_ptr(leaf))


@pytest.mark.parametrize("case", ["2d", "nested", "dict", "list"])
def test_2D_array_cols_to_torch(case: str) -> None:
    """upstream: pola-rs/polars/py-polars/tests/unit/ml/test_to_torch.py::test_2D_array_cols_to_torch

    ``Array(Int32, 2)`` columns are (n, 2) tensors, nested Arrays (n, 2, 2), in a dict next
    to a label column; here views of the column's values buffer. A List column is refused,
    naming the column (DIFFERS only in the error: ConversionError, a RuntimeError, where
    polars raises TypeError)."""  # noqa: E501
    _check_array_columns(case, "torch")


# -- polars ml: test_to_jax.py ---------------------------------------------------------------

JAX_SERIES = {
    "Int8": "int8", "Int16": "int16", "Int32": "int32", "Int64": "int32",
    "UInt8": "uint8", "UInt16": "uint16", "UInt32": "uint32", "UInt64": "uint32",
}  # fmt: skip


@pytest.mark.parametrize("device", ["None", "cpu", "jax-device"])
@pytest.mark.parametrize("dtype", list(JAX_SERIES))
def test_to_jax_from_series(dtype: str, device: str) -> None:
    """upstream: pola-rs/polars/py-polars/tests/unit/ml/test_to_jax.py::test_to_jax_from_series

    ``s.to_jax(device=None | "cpu" | jax.devices("cpu")[0])``: a jax.Array with the values,
    on that device. DIFFERS for Int64 and UInt64 without jax_enable_x64: polars narrows
    them to 32 bits silently; to() raises NoRouteError naming the flag, and narrows only
    when asked (``dtype={"int64": "int32"}``), which gives upstream's int32/uint32."""
    s = pl.Series("x", [1, 2, 3, 4], dtype=getattr(pl, dtype))
    dvc = {"None": None, "cpu": "cpu", "jax-device": jax.devices("cpu")[0]}[device]
    kw: dict[str, Any] = {} if dvc is None else {"device": dvc}
    expected = JAX_SERIES[dtype]
    if dtype.lower() != expected and not x64():
        with pytest.raises(NoRouteError, match="jax_enable_x64"):
            to(s, "jax", **kw)
        kw["dtype"] = {dtype.lower(): expected}
        assert "cast" in str(explain(s, "jax", **kw))
    elif x64():
        expected = dtype.lower()
    a = to(s, "jax", **kw)
    assert isinstance(a, jax.Array) and a.dtype == np.dtype(expected)
    np.testing.assert_array_equal(np.asarray(a), np.array([1, 2, 3, 4], expected), strict=True)
    assert a.devices() == {jax.devices("cpu")[0]}


@pytest.mark.parametrize("cast", ["int64->int32", "float32"])
def test_to_jax_dict(cast: str) -> None:
    """upstream: pola-rs/polars/py-polars/tests/unit/ml/test_to_jax.py::test_to_jax_dict

    ``df.to_jax("dict")``: keys x, y, z; int8, int32 (polars narrows the Int64 column y)
    and float32 arrays; with ``dtype=pl.Float32`` every array is float32. Here
    ``to(df, "jax")`` with ``dtype=`` doing the narrowing (DIFFERS: without it the Int64
    column is refused while jax_enable_x64 is off) or the all-float32 cast."""
    df = pl.DataFrame(
        {"x": [1, 2, 2, 3], "y": [1, 0, 1, 0], "z": [1.5, -0.5, 0.0, -2.0]},
        schema_overrides={"x": pl.Int8, "z": pl.Float32},
    )
    if cast == "float32":
        out = to(df, "jax", dtype="float32")
        want = {"x": [1.0, 2.0, 2.0, 3.0], "y": [1.0, 0.0, 1.0, 0.0], "z": [1.5, -0.5, 0.0, -2.0]}
        assert list(out) == ["x", "y", "z"]
        for name, vals in want.items():
            np.testing.assert_array_equal(np.asarray(out[name]), np.array(vals, np.float32))
        return
    if not x64():
        with pytest.raises(NoRouteError, match="jax_enable_x64"):
            to(df, "jax")
    out = to(df, "jax", dtype={"int64": "int32"})
    assert list(out) == ["x", "y", "z"]
    assert all(isinstance(v, jax.Array) for v in out.values())
    np.testing.assert_array_equal(
        np.asarray(out["x"]), np.array([1, 2, 2, 3], np.int8), strict=True
    )
    np.testing.assert_array_equal(
        np.asarray(out["y"]), np.array([1, 0, 1, 0], np.int32), strict=True
    )
    np.testing.assert_array_equal(
        np.asarray(out["z"]), np.array([1.5, -0.5, 0.0, -2.0], np.float32), strict=True
    )


@pytest.mark.parametrize("case", ["2d", "nested", "dict", "list"])
def test_2D_array_cols_to_jax(case: str) -> None:
    """upstream: pola-rs/polars/py-polars/tests/unit/ml/test_to_jax.py::test_2D_array_cols_to_jax

    As the torch version: (n, 2) and (n, 2, 2) int32 arrays from Array columns, shared
    when the values buffer is 64-byte aligned (else one reported copy), a dict with a label
    column, and a List column refused naming it (DIFFERS only in the error type:
    ConversionError where polars raises TypeError)."""
    _check_array_columns(case, "jax")
