"""Any Arrow producer (issue 33): objects with the Arrow PyCapsule interface
(``__arrow_c_stream__``, ``__arrow_c_array__``) convert as tables ({name: array}) or columns,
through the one source exchange/arrow_capsule.py makes (an array protocol): duckdb results,
nanoarrow and arro3 objects, and pyarrow, polars and pandas objects seen only through the
interface (:class:`Stream` and :class:`Batch` hide everything else).

Zero-copy claims are checked against the producer's buffer addresses read with pyarrow
(``Buffer.address``) or numpy (``ctypes.data``), never through the plugin under test.
"""

from __future__ import annotations

import mmap
from pathlib import Path
from typing import Any

import pytest
from conftest import need

from interop_core import ConversionError, InvalidArrayError, explain, to

np = need("numpy")
pa = need("pyarrow")


class Stream:
    """Only ``__arrow_c_stream__`` of ``obj``: what any library's object looks like here.
    Counts how often it is asked."""

    def __init__(self, obj: Any) -> None:
        self.obj, self.asked = obj, 0

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        self.asked += 1
        return self.obj.__arrow_c_stream__(requested_schema)


class Batch:
    """Only ``__arrow_c_array__`` of ``obj``."""

    def __init__(self, obj: Any) -> None:
        self.obj, self.asked = obj, 0

    def __arrow_c_array__(self, requested_schema: Any = None) -> Any:
        self.asked += 1
        return self.obj.__arrow_c_array__(requested_schema)


def table() -> Any:
    """A pyarrow table of four columns (32-bit: JAX takes them as they are), in 64-byte
    aligned buffers (pyarrow allocates them)."""
    n = 1000
    t = pa.table({
        "x": pa.array(range(n), pa.float32()),
        "i": pa.array(range(0, 3 * n, 3), pa.int32()),
        "b": pa.array([k % 3 == 0 for k in range(n)]),
        "v": pa.FixedSizeListArray.from_arrays(pa.array(range(2 * n), pa.float32()), 2),
    })  # fmt: skip
    assert all(address(t.column(c)) % 64 == 0 for c in ("x", "i", "v"))
    return t


def address(column: Any) -> int:
    """The address of a one-chunk pyarrow column's first value (pyarrow's own reading)."""
    arr = column.chunk(0) if isinstance(column, pa.ChunkedArray) else column
    while pa.types.is_fixed_size_list(arr.type):
        arr = arr.values
    return int(arr.buffers()[1].address) + arr.offset * arr.type.byte_width


def pointer(x: Any) -> int:
    """The data pointer of a framework's array, by that framework's own API."""
    if isinstance(x, np.ndarray):
        return int(x.ctypes.data)
    kind = type(x).__module__.partition(".")[0]
    if kind == "torch":
        return int(x.data_ptr())
    if kind in ("jax", "jaxlib"):
        return int(x.unsafe_buffer_pointer())
    return int(np.asarray(x).ctypes.data)  # tensorflow: the eager tensor's own view


def listed(x: Any) -> Any:
    return np.asarray(x).tolist()


TARGETS = ("numpy", "torch", "jax", "tensorflow")


# -- what a producer's table converts to ----------------------------------------------------


def producers() -> dict[str, Any]:
    """name -> a function making (producer, the pyarrow table it holds)."""

    def pyarrow_stream() -> Any:
        t = table()
        return Stream(t), t

    def pyarrow_batch() -> Any:
        t = table()
        return Batch(t.to_batches()[0]), t

    def nanoarrow_stream() -> Any:
        na = need("nanoarrow")
        t = table()
        return na.c_array_stream(t), t

    def arro3_table() -> Any:
        a3 = need("arro3.core")
        t = table()
        return a3.Table.from_arrow(t), t

    def arro3_batch() -> Any:
        a3 = need("arro3.core")
        t = table()
        return a3.RecordBatch.from_arrow(t.to_batches()[0]), t

    def polars_stream() -> Any:
        pl = need("polars")
        frame = pl.from_arrow(table())
        return Stream(frame), frame.to_arrow()

    def pandas_stream() -> Any:
        need("pandas")
        frame = table().drop_columns(["v"]).to_pandas()
        return Stream(frame), pa.table(frame)

    return {
        "pyarrow stream": pyarrow_stream, "pyarrow batch": pyarrow_batch,
        "nanoarrow stream": nanoarrow_stream, "arro3 table": arro3_table,
        "arro3 batch": arro3_batch, "polars stream": polars_stream,
        "pandas stream": pandas_stream,
    }  # fmt: skip


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("producer", list(producers()))
def test_a_producer_converts_column_by_column(producer: str, target: str) -> None:
    need(target)
    obj, expected = producers()[producer]()
    out = to(obj, target)
    assert list(out) == expected.column_names
    for name in expected.column_names:
        want = expected.column(name).to_numpy(zero_copy_only=False)
        if want.dtype == object:  # fixed-size lists: one array per row
            want = np.stack(want)
        got = out[name]
        assert type(got).__module__.partition(".")[0] in {
            "numpy": ("numpy",), "torch": ("torch",), "jax": ("jax", "jaxlib"),
            "tensorflow": ("tensorflow",),
        }[target]  # fmt: skip
        assert np.asarray(got).dtype == want.dtype, name
        assert np.asarray(got).shape == want.shape, name
        assert listed(got) == want.tolist(), name
    if isinstance(obj, (Stream, Batch)):
        assert obj.asked == 1  # asked once: a stream reads once, a query runs once


@pytest.mark.parametrize("target", TARGETS)
def test_one_chunk_without_nulls_is_shared(target: str) -> None:
    """numpy and torch share every null-free fixed-width column; JAX and TensorFlow the
    64-byte aligned ones (pyarrow allocates them so); booleans (bits) are one copy."""
    need(target)
    t = table()
    out = to(Stream(t), target)
    for name in ("x", "i", "v"):
        assert pointer(out[name]) == address(t.column(name)), name
    assert explain(Stream(t), target)["x"].zero_copy
    route = explain(Stream(t), target)["b"]
    assert not route.zero_copy and "boolean" in str(route)


def test_the_torch_alias_is_the_producers_memory_and_says_so() -> None:
    torch = need("torch")
    t = table()
    out = to(Stream(t), "torch")
    x = out["x"]
    assert isinstance(x, torch.Tensor) and x.dtype == torch.float32
    x[0] = 42.0  # the producer's memory: the Arrow column sees it
    assert t.column("x")[0].as_py() == 42.0
    assert "writable alias" in str(explain(Stream(t), "torch")["x"])


def test_the_memory_outlives_the_producer() -> None:
    """The imported buffers hold the producer's release callback: the producer object and
    its table may go, the arrays stay valid."""
    torch = need("torch")
    t = table()
    want = t.column("i").to_numpy().copy()
    out = to(Stream(t), "torch")
    del t
    import gc

    gc.collect()
    pa.table({"junk": np.full(10**6, 7, np.int32)})  # reuse freed memory if it were freed
    assert out["i"].tolist() == want.tolist() and out["i"].dtype == torch.int32


def test_a_read_only_memory_map_is_copied_for_torch(tmp_path: Path) -> None:
    """Rule 8: memory the pages say cannot be written (a read-only map exported through
    the interface) is copied for torch; numpy still views it."""
    torch = need("torch")
    path = tmp_path / "t.arrow"
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table().schema) as writer:
        writer.write_table(table())
    with pa.memory_map(str(path), "r") as source:
        mapped = pa.ipc.open_file(source).read_all()
        route = explain(Stream(mapped), "torch")["x"]
        assert not route.zero_copy and "read-only" in str(route)
        out = to(Stream(mapped), "torch")["x"]
        assert isinstance(out, torch.Tensor)
        assert out.data_ptr() != address(mapped.column("x"))
        assert out.tolist() == mapped.column("x").to_pylist()
        view = to(Stream(mapped), "numpy")["x"]
        assert view.ctypes.data == address(mapped.column("x")) and not view.flags.writeable
        with pytest.raises(ValueError):
            view[0] = 1
    assert mmap.PAGESIZE  # the map was read, not written


def test_nulls_need_nulls_and_are_filled_or_masked() -> None:
    t = pa.table({"a": pa.array([1.0, None, 3.0])})
    with pytest.raises(ConversionError, match=r"column 'a' of a .*Stream: it has nulls"):
        to(Stream(t), "numpy")
    filled = to(Stream(t), "numpy", nulls="fill", fill_value=-1)
    assert filled["a"].tolist() == [1.0, -1.0, 3.0]
    values, mask = to(Stream(t), "numpy", nulls="mask")["a"]
    assert values.tolist() == [1.0, 0.0, 3.0] and mask.tolist() == [True, False, True]


def test_null_rows_of_a_struct_become_nulls_of_its_fields() -> None:
    rows = pa.StructArray.from_arrays(
        [pa.array([1.0, 2.0, 3.0])], names=["a"], mask=pa.array([False, True, False])
    )
    out = to(Batch(rows), "numpy", nulls="fill", fill_value=0)
    assert out["a"].tolist() == [1.0, 0.0, 3.0]  # the null row is not read as its value


def test_several_chunks_are_one_copy() -> None:
    chunked = pa.table({"a": pa.chunked_array([[1.0, 2.0], [3.0]])})
    route = explain(Stream(chunked), "numpy")["a"]
    assert route.copies == 1 and "chunks" in str(route)
    assert to(Stream(chunked), "numpy")["a"].tolist() == [1.0, 2.0, 3.0]


def test_a_lone_array_or_chunked_array_is_one_column() -> None:
    a3 = need("arro3.core")
    arr = a3.Array.from_arrow(pa.array(np.arange(5, dtype=np.int16)))
    out = to(arr, "numpy")
    assert out.dtype == np.int16 and out.tolist() == [0, 1, 2, 3, 4]
    chunked = a3.ChunkedArray.from_arrow(pa.chunked_array([[1.5], [2.5, 3.5]]))
    assert to(chunked, "numpy").tolist() == [1.5, 2.5, 3.5]
    assert explain(chunked, "numpy").steps[0].source == "arrow_capsule@cpu"


def test_into_pyarrow_gives_the_imported_arrays() -> None:
    t = pa.table({"a": pa.array([1.0, None]), "b": pa.array([1, 2], pa.int8())})
    out = to(Stream(t), "pyarrow")
    assert out["a"].to_pylist() == [1.0, None] and out["b"].type == pa.int8()
    assert address(out["b"]) == address(t.column("b"))


def test_dtype_casts_a_producer_column() -> None:
    out = to(Stream(table()), "numpy", dtype={"int32": "int64"})
    assert out["i"].dtype == np.int64 and out["x"].dtype == np.float32
    assert out["i"][:3].tolist() == [0, 3, 6]


def test_ragged_columns_convert_as_pyarrow_list_arrays() -> None:
    torch = need("torch")
    t = pa.table({"r": pa.array([[1.0], [2.0, 3.0], []]), "x": pa.array([1.0, 2.0, 3.0])})
    out = to(Stream(t), "torch")
    assert out["r"].is_nested and [row.tolist() for row in out["r"].unbind()] == [
        [1.0], [2.0, 3.0], [],
    ]  # fmt: skip
    assert isinstance(out["x"], torch.Tensor)


def test_columns_no_array_holds_are_named() -> None:
    t = pa.table({"s": ["a", "b"], "d": pa.array([1, 2]).dictionary_encode(), "x": [1.0, 2.0]})
    with pytest.raises(ConversionError) as info:
        to(Stream(t), "numpy")
    message = str(info.value)
    assert "2 column(s)" in message and "'s': strings" in message
    assert "'d': dictionary-encoded" in message and "Stream" in message


def test_an_empty_stream_gives_empty_columns() -> None:
    empty = pa.RecordBatchReader.from_batches(pa.schema({"a": pa.float32()}), [])
    out = to(empty, "numpy")  # a RecordBatchReader: pyarrow's, seen only through the stream
    assert out["a"].shape == (0,) and out["a"].dtype == np.float32


# -- duckdb ---------------------------------------------------------------------------------


def test_a_duckdb_result_converts_with_its_dtypes() -> None:
    duckdb = need("duckdb")
    torch = need("torch")
    rel = duckdb.sql("select range::FLOAT as x, range as i, range % 2 = 0 as even from range(5000)")
    out = to(rel, "torch")
    assert list(out) == ["x", "i", "even"]
    assert out["x"].dtype == torch.float32 and out["i"].dtype == torch.int64
    assert out["even"].dtype == torch.bool
    assert out["x"][:3].tolist() == [0.0, 1.0, 2.0] and out["i"][-1].item() == 4999
    assert out["even"][:3].tolist() == [True, False, True]
    route = explain(rel, "torch")
    assert route["x"].zero_copy and route["i"].zero_copy  # duckdb's own buffers, shared
    assert route["x"].steps[0].source == "arrow_capsule@cpu"


def test_a_duckdb_result_matches_its_own_torch() -> None:
    duckdb = need("duckdb")
    need("torch")
    rel = duckdb.sql("select (range * 0.5)::DOUBLE as d, range::INTEGER as n from range(100)")
    ours, theirs = to(rel, "torch"), rel.torch()
    for name in ("d", "n"):
        assert ours[name].dtype == theirs[name].dtype
        assert ours[name].tolist() == theirs[name].tolist()


def test_a_duckdb_error_is_an_interop_error() -> None:
    duckdb = need("duckdb")
    rel = duckdb.sql("select 'abc'::INTEGER as n")  # fails when run, not when built
    with pytest.raises(InvalidArrayError, match="duckdb"):
        to(rel, "numpy")


def test_the_producer_is_detected_without_importing_pyarrow_first() -> None:
    """Detection reads the type's attributes; pyarrow is imported by the snapshot."""
    from hostile import run_child

    done = run_child(
        """
        import sys, nanoarrow, interop_core
        assert "pyarrow" not in sys.modules
        stream = nanoarrow.c_array_stream(nanoarrow.c_array([1.0, 2.0], nanoarrow.float64()))
        print(interop_core.to(stream, "numpy").tolist())
        """
    )
    if "No module named 'nanoarrow'" in done.stderr:
        need("nanoarrow")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[1.0, 2.0]"
