"""Hostile and odd tables (issue 30): nulls are read from the validity bitmap, never from a
recorded null count alone, and never read as values; the slots under nulls hold garbage
that ``nulls=`` must replace; a table converts to a dict of its columns (of pyarrow arrays
for ``to(table, "pyarrow")``), a table of no columns to an empty dict, and duplicate
column names (two NaN names too) are refused; ``nulls=`` and ``fill_value=`` of another
type are OptionErrors.

Arrow zero-fills the slots under nulls when it builds an array from Python values, so a
conversion that skipped filling them passed every test; here the slots hold 999 (and the
bits under boolean nulls 1). An array imported through the C data interface may record a
null count of 0 over a bitmap with nulls: Arrow reads the bitmap (``to_pylist()`` gives
None, ``validate(full=True)`` refuses the count), and so does ``to()``.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from conftest import need

from interop_core import (
    ConversionError,
    InvalidArrayError,
    NoRouteError,
    NotAnArrayError,
    OptionError,
    explain,
    to,
)

np = need("numpy")
pa = need("pyarrow")

GARBAGE = 999
TARGETS = ("numpy", "torch", "jax", "tensorflow")


def bitmap(valid: list[int]) -> Any:
    """An Arrow validity bitmap of ``valid`` (1: a value, 0: a null)."""
    bits = list(valid) + [0] * (-len(valid) % 8)
    return pa.py_buffer(np.packbits(bits, bitorder="little"))


def with_garbage(values: list[Any], valid: list[int], dtype: str = "float32") -> Any:
    """An Arrow array of ``values`` whose null slots (``valid`` 0) hold GARBAGE: built from
    its buffers, as memory another library filled arrives (Arrow's own builders write 0)."""
    data = np.array(values, dtype)
    data[np.array(valid) == 0] = GARBAGE
    typ = pa.from_numpy_dtype(data.dtype)
    return pa.Array.from_buffers(typ, len(data), [bitmap(valid), pa.py_buffer(data)])


def bools_with_garbage(values: list[bool], valid: list[int]) -> Any:
    """Booleans whose bits under the nulls are 1 (True)."""
    bits = [1 if not ok else int(v) for v, ok in zip(values, valid, strict=True)]
    data = pa.py_buffer(np.packbits(bits + [0] * (-len(bits) % 8), bitorder="little"))
    return pa.Array.from_buffers(pa.bool_(), len(values), [bitmap(valid), data])


def lie_count(arr: Any, count: int = 0) -> Any:
    """``arr`` with its recorded null count replaced, through the C data interface (which
    carries it as given; pyarrow's from_buffers drops a bitmap given with null_count=0)."""
    cffi = pytest.importorskip("pyarrow.cffi")
    ffi = cffi.ffi
    c, s = ffi.new("struct ArrowArray*"), ffi.new("struct ArrowSchema*")
    pc, ps = int(ffi.cast("uintptr_t", c)), int(ffi.cast("uintptr_t", s))
    arr._export_to_c(pc, ps)
    c.null_count = count
    return pa.Array._import_from_c(pc, ps)


def listed(x: Any) -> Any:
    """Any framework's array (or a (values, mask) pair, or a dict) as Python lists."""
    if isinstance(x, dict):
        return {k: listed(v) for k, v in x.items()}
    if isinstance(x, tuple):
        return tuple(listed(v) for v in x)
    if hasattr(x, "numpy") and not isinstance(x, np.ndarray):
        x = x.numpy() if type(x).__module__.startswith("torch") else np.asarray(x)
    return np.asarray(x).tolist()


def of(target: str) -> None:
    need(target)


# -- the slots under nulls hold garbage ------------------------------------------------------

#: name -> (the array, filled with -1 (False for booleans), (values, mask) with nulls="mask")
GARBAGE_CASES = {
    "float32": (
        lambda: with_garbage([1, 2, 3, 4], [1, 0, 1, 1]),
        [1.0, -1.0, 3.0, 4.0], ([1.0, 0.0, 3.0, 4.0], [True, False, True, True]),
    ),
    "int32": (
        lambda: with_garbage([1, 2, 3, 4], [0, 1, 1, 0], "int32"),
        [-1, 2, 3, -1], ([0, 2, 3, 0], [False, True, True, False]),
    ),
    "bool": (
        lambda: bools_with_garbage([True, False, False, True], [1, 0, 1, 0]),
        [True, False, False, False], ([True, False, False, False], [True, False, True, False]),
    ),
    "sliced past a byte": (  # the bitmap read from bit 9
        lambda: with_garbage(list(range(20)), [1] * 10 + [0] + [1] * 9)[9:13],
        [9.0, -1.0, 11.0, 12.0], ([9.0, 0.0, 11.0, 12.0], [True, False, True, True]),
    ),
    "chunked": (
        lambda: pa.chunked_array([with_garbage([1, 2], [1, 0]), with_garbage([3, 4], [0, 1])]),
        [1.0, -1.0, -1.0, 4.0], ([1.0, 0.0, 0.0, 4.0], [True, False, False, True]),
    ),
    "fixed-size lists": (
        lambda: pa.FixedSizeListArray.from_arrays(with_garbage([1, 2, 3, 4], [1, 1, 0, 1]), 2),
        [[1.0, 2.0], [-1.0, 4.0]], ([[1.0, 2.0], [0.0, 4.0]], [[True, True], [False, True]]),
    ),
}  # fmt: skip


def _fill(case: str) -> Any:
    return False if case == "bool" else -1


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", list(GARBAGE_CASES))
def test_nulls_fill_replaces_the_garbage_under_nulls(case: str, target: str) -> None:
    of(target)
    make, filled, _ = GARBAGE_CASES[case]
    if case == "int32" or target != "jax":  # JAX without x64 holds float32, int32, bool
        for _ in range(2):  # cold, then planned
            assert listed(to(make(), target, nulls="fill", fill_value=_fill(case))) == filled


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", list(GARBAGE_CASES))
def test_nulls_mask_zeroes_the_garbage_under_nulls(case: str, target: str) -> None:
    of(target)
    make, _, masked = GARBAGE_CASES[case]
    for _ in range(2):
        assert listed(to(make(), target, nulls="mask")) == masked


def test_the_garbage_is_there_to_be_filled() -> None:
    """The test data is what it says: Arrow reads None at the nulls, and 999 under them."""
    arr = with_garbage([1, 2, 3, 4], [1, 0, 1, 1])
    assert arr.to_pylist() == [1.0, None, 3.0, 4.0]
    assert np.frombuffer(arr.buffers()[1], np.float32).tolist() == [1.0, 999.0, 3.0, 4.0]


def test_garbage_under_nulls_of_a_table_and_a_pandas_series() -> None:
    pd = need("pandas")
    table = pa.table({"a": with_garbage([1, 2, 3], [1, 0, 1]), "b": pa.array([1.0, 2.0, 3.0])})
    out = to(table, "numpy", nulls="fill", fill_value=-1)
    assert listed(out) == {"a": [1.0, -1.0, 3.0], "b": [1.0, 2.0, 3.0]}
    series = pd.Series(pd.arrays.ArrowExtensionArray(with_garbage([1, 2, 3], [0, 1, 1])))
    assert listed(to(series, "numpy", nulls="fill", fill_value=7)) == [7.0, 2.0, 3.0]


# -- a recorded null count that says 0 over a bitmap with nulls --------------------------------


def test_a_lying_null_count_is_what_arrow_itself_does_not_believe() -> None:
    arr = lie_count(with_garbage([1, 2, 3, 4], [1, 0, 1, 1]))
    assert arr.null_count == 0 and arr.to_pylist() == [1.0, None, 3.0, 4.0]
    with pytest.raises(pa.ArrowInvalid, match="null_count"):
        arr.validate(full=True)


LYING = {
    "float32": lambda: lie_count(with_garbage([1, 2, 3, 4], [1, 0, 1, 1])),
    "bool": lambda: lie_count(bools_with_garbage([True, True, False, False], [1, 0, 1, 1])),
    "sliced": lambda: lie_count(with_garbage(list(range(20)), [1] * 17 + [0, 1, 1]))[10:],
    "fixed-size lists": lambda: pa.FixedSizeListArray.from_arrays(
        lie_count(with_garbage([1, 2, 3, 4], [1, 1, 1, 0])), 2
    ),
    "chunked": lambda: pa.chunked_array(
        [pa.array([7.0], pa.float32()), lie_count(with_garbage([1, 2], [0, 1]))]
    ),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", list(LYING))
def test_nulls_under_a_null_count_of_0_are_never_read_as_values(case: str, target: str) -> None:
    """The 999 under the null was the value before (the count was believed)."""
    of(target)
    for _ in range(2):  # cold, then the warm path (the key reads the bitmap too)
        with pytest.raises(ConversionError, match="it has nulls, which no array holds"):
            to(LYING[case](), target)
    found = to(LYING[case](), target, nulls="mask")
    values, mask = listed(found)
    assert GARBAGE not in np.ravel(values).tolist() and not all(np.ravel(mask))


def test_a_lying_null_count_after_a_planned_clean_array_is_still_read() -> None:
    """The warm path keys a clean float32 array and a lying one alike unless the key reads
    the bitmap: it does."""
    torch = need("torch")
    clean = pa.array([1.0, 2.0, 3.0, 4.0], pa.float32())
    for _ in range(3):
        assert isinstance(to(clean, "torch"), torch.Tensor)
    with pytest.raises(ConversionError, match="has nulls"):
        to(LYING["float32"](), "torch")
    assert to(LYING["float32"](), "torch", nulls="fill", fill_value=0).tolist() == [1, 0, 3, 4]


def test_a_lying_null_count_in_a_table_names_the_column() -> None:
    table = pa.table({"price": LYING["float32"]()})
    with pytest.raises(ConversionError, match="column 'price'"):
        to(table, "numpy")
    pd = need("pandas")
    series = pd.Series(pd.arrays.ArrowExtensionArray(LYING["float32"]()), name="p")
    with pytest.raises(ConversionError, match="column 'p'"):
        to(series, "numpy")


def test_a_lying_null_count_in_a_list_array_is_read() -> None:
    values = lie_count(with_garbage([1, 2, 3, 4], [1, 0, 1, 1]))
    lists = pa.ListArray.from_arrays(pa.array([0, 2, 4], pa.int32()), values)
    with pytest.raises(NoRouteError, match="null rows or null values"):
        to(lists, "numpy", ragged="pad", fill_value=0)
    rows = pa.Array.from_buffers(
        pa.list_(pa.float32()), 2, [bitmap([1, 0]), pa.array([0, 1, 2], pa.int32()).buffers()[1]],
        children=[pa.array([1.0, 2.0], pa.float32())],
    )  # fmt: skip
    with pytest.raises(NoRouteError, match="null rows or null values"):
        to(lie_count(rows), "torch")


# -- a table converts to the dict of its columns ----------------------------------------------


def test_a_table_into_pyarrow_is_a_dict_of_pyarrow_arrays() -> None:
    """It was a dict of the plugin's internal column wrappers."""
    table = pa.table({
        "a": pa.array([1.0, 2.0], pa.float32()),
        "b": pa.chunked_array([[1], [2]], pa.int64()),
        "l": pa.array([[1.0], []], pa.list_(pa.float32())),
    })  # fmt: skip
    for source in (table, table.to_batches()[0]):
        out = to(source, "pyarrow")
        assert list(out) == ["a", "b", "l"]
        assert all(isinstance(v, (pa.Array, pa.ChunkedArray)) for v in out.values())
        for name in out:
            assert out[name].to_pylist() == source.column(name).to_pylist()
    out = to(table, "pyarrow")
    assert isinstance(out["a"], pa.Array) and isinstance(out["b"], pa.ChunkedArray)
    # The columns themselves: zero-copy (one chunk: that Array; several: the ChunkedArray).
    assert out["a"].buffers()[1].address == table.column("a").chunk(0).buffers()[1].address
    assert out["b"].num_chunks == 2
    assert set(explain(table, "pyarrow").routes) == {"['a']", "['b']", "['l']"}


def test_columns_keep_their_names_in_messages_through_a_cast() -> None:
    table = pa.table({"price": pa.array([1.0, None], pa.float64())})
    with pytest.raises(ConversionError, match="column 'price'"):
        to(table, "numpy", dtype="float32")


@pytest.mark.parametrize("library", ["pyarrow", "pyarrow batch", "pandas", "polars"])
def test_a_table_of_no_columns_is_an_empty_dict(library: str) -> None:
    """It was refused as "a builtins.dict"."""
    if library.startswith("pyarrow"):
        table = pa.table({}) if library == "pyarrow" else pa.RecordBatch.from_pydict({})
    else:
        table = need(library).DataFrame()
    for target in ("numpy", "torch"):
        need(target)
        assert to(table, target) == {}
    assert to({"t": table, "x": np.ones(1)}, "numpy")["t"] == {}
    assert dict(explain(table, "numpy").routes) == {}


def test_a_dict_of_nothing_is_still_refused() -> None:
    with pytest.raises(NotAnArrayError, match="no array anywhere"):
        to({}, "numpy")


# -- duplicate column names -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("names", "shown"),
    [
        ([float("nan"), float("nan")], "nan"),
        ([np.nan, np.nan], "nan"),
        (["a", "a"], "'a'"),
        ([1, 1.0], r"1(\.0)?"),
        (["a", float("nan"), "b", np.nan], "nan"),
    ],
)
def test_duplicate_pandas_column_names_are_refused(names: list[Any], shown: str) -> None:
    """Two NaN names were accepted: a dict keeps them as two keys neither of which d[nan]
    finds (NaN equals nothing), and 1 and 1.0 are one key."""
    pd = need("pandas")
    frame = pd.DataFrame(np.ones((2, len(names))), columns=names)
    for call in (to, explain):
        with pytest.raises(InvalidArrayError, match=rf"{shown} appear more than once"):
            call(frame, "numpy")


def test_one_nan_name_converts() -> None:
    pd = need("pandas")
    out = to(pd.DataFrame(np.ones((2, 2)), columns=["a", np.nan]), "numpy")
    assert len(out) == 2 and any(isinstance(k, float) and math.isnan(k) for k in out)


def test_duplicate_arrow_column_names_are_refused() -> None:
    columns = [pa.array([1.0]), pa.array([2.0])]
    for table in (pa.Table.from_arrays(columns, names=["x", "x"]),
                  pa.RecordBatch.from_arrays(columns, names=["x", "x"])):  # fmt: skip
        with pytest.raises(InvalidArrayError, match="'x' appear more than once"):
            to(table, "numpy")


def test_polars_refuses_duplicate_names_itself() -> None:
    pl = need("polars")
    with pytest.raises(Exception, match=r"(?i)duplicate|more than one"):
        pl.DataFrame([pl.Series("x", [1.0]), pl.Series("x", [2.0])])


# -- options of another type --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"nulls": 1}, r"nulls=1 is not one of 'fill' or 'mask'"),
        ({"nulls": True}, r"nulls=True is not one of"),
        ({"nulls": "Fill", "fill_value": 0}, r"nulls='Fill' is not one of"),
        ({"nulls": "fill", "fill_value": "0"}, r"fill_value='0' is not one number or bool"),
        ({"nulls": "fill", "fill_value": None}, r"fill_value=None is not one number or bool"),
        ({"nulls": "fill", "fill_value": [0]}, r"fill_value=\[0\] is not one number or bool"),
    ],
)
def test_column_options_of_another_type_are_refused(options: dict[str, Any], match: str) -> None:
    table = pa.table({"a": with_garbage([1, 2], [1, 0]), "b": pa.array([1.0, 2.0])})
    for call in (to, explain):
        with pytest.raises(OptionError, match=match):
            call(table, "numpy", **options)
