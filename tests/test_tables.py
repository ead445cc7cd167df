"""Tables as dicts of arrays (issue 21): pyarrow Tables and RecordBatches, polars and pandas
DataFrames, and their columns (Arrow Arrays and ChunkedArrays, polars and pandas Series).

Every zero-copy claim is checked with the frameworks' own pointers (Arrow's
``buffers()[1].address``, numpy's ``__array_interface__``, torch's ``data_ptr()``, JAX's
``unsafe_buffer_pointer()``, TensorFlow's DLPack export), every copy with explain()'s count.
Memory read-only in rule 8's sense (a read-only memory map) is written through in a child
process.
"""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
import textwrap
from typing import Any

import pytest
from adapters import own_ptr
from conftest import need

from interop_core import (
    ConversionError,
    CopyRequiredError,
    InvalidArrayError,
    OptionError,
    explain,
    to,
)

np = need("numpy")
pa = need("pyarrow")

#: Arrow types and the canonical dtype each converts as.
ARROW = {
    "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64", "uint8": "uint8",
    "float16": "float16", "float32": "float32", "float64": "float64",
}  # fmt: skip
#: What JAX holds with x64 off (64-bit dtypes are narrowed, so routes refuse them).
JAX_DTYPES = ("int8", "int16", "int32", "uint8", "float16", "float32")


def np_ptr(x: Any) -> int:
    return int(x.__array_interface__["data"][0])


def arrow_ptr(arr: Any) -> int:
    """Address of an Array's first element, from Arrow's own buffer (of a chunk's first)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.chunk(0)
    return int(arr.buffers()[1].address) + arr.offset * arr.type.bit_width // 8


def pool_table(n: int = 1000) -> Any:
    """A table of every numeric type, in memory pyarrow allocates (built from lists)."""
    ints = [v % 100 for v in range(n)]
    floats = [float(v) for v in ints]
    return pa.table({
        name: pa.array(floats if "float" in name else ints, getattr(pa, name)()) for name in ARROW
    })  # fmt: skip


def values_of(col: Any) -> list[Any]:
    return [float(v) for v in col.to_pylist()]


# -- pyarrow ---------------------------------------------------------------------------------


def test_buffers_pyarrow_allocates_are_shared_with_jax(jax: Any) -> None:
    """The measurement behind JAX/TF sharing Arrow columns: every buffer pyarrow allocates
    (from lists, casts, concatenation, Parquet) starts on a 64-byte boundary, so JAX shares
    each one."""
    import io

    pq = pytest.importorskip("pyarrow.parquet")
    made = []
    for n in (1, 7, 1000, 100_003):
        made.append(pa.array(list(range(n)), pa.int32()))
        made.append(pa.array(list(range(n)), pa.int64()).cast(pa.float32()))
        made.append(pa.concat_arrays([made[-1], made[-2].cast(pa.float32())]))
        sink = io.BytesIO()
        pq.write_table(pa.table({"x": made[-1]}), sink)
        made.extend(pq.read_table(io.BytesIO(sink.getvalue())).column("x").chunks)
    assert [arrow_ptr(a) % 64 for a in made] == [0] * len(made)
    assert [to(a, "jax").unsafe_buffer_pointer() for a in made] == [arrow_ptr(a) for a in made]


def test_arrow_table_is_a_dict_of_torch_views_in_column_order(torch: Any) -> None:
    t = pool_table()
    out = to(t, "torch")
    assert type(out) is dict and list(out) == t.column_names
    for name, tensor in out.items():
        assert isinstance(tensor, torch.Tensor)
        assert str(tensor.dtype) == f"torch.{ARROW[name]}"
        assert tensor.data_ptr() == arrow_ptr(t.column(name)), name
        assert [float(v) for v in tensor.tolist()] == values_of(t.column(name))
    routes = explain(t, "torch")
    assert [routes[n].copies for n in t.column_names] == [0] * len(ARROW)
    assert "writable alias" in str(routes)


def test_arrow_columns_into_numpy_are_read_only_views() -> None:
    t = pool_table()
    out = to(t, "numpy")
    assert list(out) == t.column_names
    for name, x in out.items():
        assert x.dtype == np.dtype(ARROW[name]) and not x.flags.writeable
        assert np_ptr(x) == arrow_ptr(t.column(name))
    single = pa.array([1.5, 2.5], pa.float64())
    x = to(single, "numpy")
    assert np_ptr(x) == arrow_ptr(single) and x.tolist() == [1.5, 2.5]
    assert explain(single, "numpy").zero_copy


def test_arrow_columns_share_aligned_buffers_with_jax_and_tensorflow(jax: Any, tf: Any) -> None:
    t = pool_table()
    keep = [n for n in t.column_names if n in JAX_DTYPES]
    out = to(t.select(keep), "jax")
    for name in keep:
        assert isinstance(out[name], jax.Array) and out[name].dtype == np.dtype(ARROW[name])
        assert out[name].unsafe_buffer_pointer() == arrow_ptr(t.column(name)), name
        assert explain(t.column(name), "jax").copies == 0
    out = to(t, "tensorflow")
    for name in t.column_names:
        assert out[name].dtype.name == ARROW[name]
        assert own_ptr(out[name]) == arrow_ptr(t.column(name)), name
        assert [float(v) for v in out[name].numpy()] == values_of(t.column(name))


def test_unaligned_slice_is_one_reported_copy_for_jax_and_shared_by_torch(
    jax: Any, torch: Any
) -> None:  # fmt: skip
    base = pa.array([float(i) for i in range(100)], pa.float32())
    aligned, unaligned = base.slice(16), base.slice(3)  # 64 and 12 bytes past the buffer
    assert arrow_ptr(aligned) % 64 == 0 and arrow_ptr(unaligned) % 64 == 12
    assert to(aligned, "jax").unsafe_buffer_pointer() == arrow_ptr(aligned)
    route = explain(unaligned, "jax")
    assert route.copies == 1 and "aligned" in str(route)
    got = to(unaligned, "jax")
    assert got.unsafe_buffer_pointer() != arrow_ptr(unaligned) and got.tolist() == list(
        map(float, range(3, 100))
    )
    assert to(unaligned, "torch").data_ptr() == arrow_ptr(unaligned)


def test_writing_through_the_torch_alias_changes_the_column(torch: Any) -> None:
    t = pa.table({"a": pa.array([1.0, 2.0, 3.0], pa.float64())})
    out = to(t, "torch")
    out["a"][0] = 99.0
    assert t.column("a").to_pylist() == [99.0, 2.0, 3.0]
    assert "writable alias" in str(explain(t, "torch")["a"])


def test_booleans_are_unpacked_by_one_reported_copy(torch: Any) -> None:
    col = pa.array([True, False, True, True])
    route = explain(col, "torch")
    assert route.copies == 1 and "unpack" in str(route)
    got = to(col, "torch")
    assert got.dtype == torch.bool and got.tolist() == [True, False, True, True]
    with pytest.raises(CopyRequiredError, match="one bit each"):
        to(col, "torch", copy=False)


def test_chunked_column_is_one_reported_copy(jax: Any) -> None:
    col = pa.chunked_array([[1.0, 2.0], [3.0], [4.0, 5.0]], pa.float32())
    for target in ("numpy", "jax"):  # the copy is aligned: JAX takes it as it is
        route = explain(col, target)
        assert route.copies == 1 and "concatenate" in str(route), target
    got = to(col, "jax")
    assert got.dtype == np.float32 and got.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]
    with pytest.raises(CopyRequiredError, match="several chunks"):
        to(col, "numpy", copy=False)
    one = pa.chunked_array([pa.array([1, 2, 3], pa.int32())])  # one chunk: a view
    assert np_ptr(to(one, "numpy")) == arrow_ptr(one)


def test_fixed_size_list_is_a_2d_view(torch: Any) -> None:
    col = pa.array([[1, 2], [3, 4], [5, 6], [7, 8]], pa.list_(pa.float32(), 2))
    got = to(col, "torch")
    assert tuple(got.shape) == (4, 2) and got.tolist() == [[1, 2], [3, 4], [5, 6], [7, 8]]
    assert got.data_ptr() == int(col.values.buffers()[1].address)
    sliced = col.slice(1, 2)
    got = to(sliced, "numpy")
    assert got.tolist() == [[3, 4], [5, 6]]
    assert np_ptr(got) == int(col.values.buffers()[1].address) + 2 * 4
    nested = pa.array([[[1, 2], [3, 4]], [[5, 6], [7, 8]]], pa.list_(pa.list_(pa.int16(), 2), 2))
    got = to(pa.table({"n": nested}), "numpy")["n"]
    assert got.shape == (2, 2, 2) and got.dtype == np.int16 and got[1, 1, 0] == 7
    assert explain(nested, "numpy").zero_copy


def test_record_batch_converts_like_a_table(torch: Any) -> None:
    rb = pa.record_batch({"x": pa.array([1, 2, 3], pa.int16()), "y": pa.array([0.5] * 3)})
    out = to(rb, "torch")
    assert list(out) == ["x", "y"] and out["x"].dtype == torch.int16
    assert out["x"].data_ptr() == arrow_ptr(rb.column(0))
    assert out["y"].data_ptr() == arrow_ptr(rb.column(1))


def test_a_table_inside_a_batch_converts() -> None:
    batch = {"features": pa.table({"a": pa.array([1, 2], pa.int32())}), "step": 3}
    out = to(batch, "numpy")
    assert out["step"] == 3 and out["features"]["a"].tolist() == [1, 2]


def test_empty_columns_convert(torch: Any) -> None:
    out = to(pa.table({"e": pa.array([], pa.int8())}), "torch")
    assert out["e"].dtype == torch.int8 and tuple(out["e"].shape) == (0,)
    got = to(pa.chunked_array([], pa.float32()), "numpy")
    assert got.dtype == np.float32 and got.shape == (0,)


# -- nulls -----------------------------------------------------------------------------------


def test_a_column_with_nulls_is_refused_naming_it() -> None:
    t = pa.table({"ok": pa.array([1, 2, 3]), "price": pa.array([1.0, None, 3.0])})
    with pytest.raises(ConversionError, match="column 'price'") as info:
        to(t, "numpy")
    assert "nulls='fill'" in str(info.value) and "nulls='mask'" in str(info.value)
    nested = pa.array([[1, 2], [None, 4]], pa.list_(pa.int32(), 2))  # a null element
    with pytest.raises(ConversionError, match="column 'v'"):
        to(pa.table({"v": nested}), "numpy")


def test_nulls_fill(torch: Any) -> None:
    t = pa.table({"i": pa.array([1, None, 3], pa.int32()), "f": pa.array([0.5, 1.5, None])})
    out = to(t, "torch", nulls="fill", fill_value=-1)
    assert out["i"].dtype == torch.int32 and out["i"].tolist() == [1, -1, 3]
    assert out["f"].dtype == torch.float64 and out["f"].tolist() == [0.5, 1.5, -1.0]
    routes = explain(t, "torch", nulls="fill", fill_value=-1)
    assert routes["i"].copies == 1 and routes["f"].copies == 1
    nan = to(t.column("f"), "numpy", nulls="fill", fill_value=float("nan"))
    assert np.isnan(nan[2]) and nan[:2].tolist() == [0.5, 1.5]
    with pytest.raises(OptionError, match="does not fit column 'i'"):
        to(t, "numpy", nulls="fill", fill_value=1.5)
    with pytest.raises(OptionError, match="needs fill_value="):
        to(t, "numpy", nulls="fill")
    with pytest.raises(OptionError, match="not one of 'fill' or 'mask'"):
        to(t, "numpy", nulls="drop")
    with pytest.raises(OptionError, match="did you mean nulls="):
        to(t, "numpy", null="fill")


def test_nulls_mask(jax: Any) -> None:
    t = pa.table({
        "b": pa.array([True, None, False]),
        "x": pa.chunked_array([[1.0, None], [3.0]], pa.float32()),
        "l": pa.array([[1, 2], None, [5, None]], pa.list_(pa.int8(), 2)),
    })  # fmt: skip
    out = to(t, "jax", nulls="mask")
    values, mask = out["x"]
    assert isinstance(values, jax.Array) and isinstance(mask, jax.Array)
    assert values.tolist() == [1.0, 0.0, 3.0] and mask.tolist() == [True, False, True]
    assert out["b"][0].tolist() == [True, False, False] and out["b"][1].tolist() == [1, 0, 1]
    values, mask = out["l"]
    assert values.shape == (3, 2) and values.tolist() == [[1, 2], [0, 0], [5, 0]]
    assert mask.tolist() == [[True, True], [False, False], [True, False]]
    assert explain(t, "jax", nulls="mask")["l"].copies == 1
    plain = to(pa.table({"y": pa.array([1.0, 2.0], pa.float32())}), "jax", nulls="mask")
    assert isinstance(plain["y"], jax.Array)  # a column without nulls converts as usual


def test_options_of_columns_are_unknown_to_other_arrays() -> None:
    with pytest.raises(OptionError, match="nulls") as info:
        to({"a": np.ones(2)}, "numpy", nulls="mask")
    takers = [line for line in str(info.value).splitlines() if line.startswith("  nulls=:")]
    assert len(takers) == 1 and "converter(s), e.g." in takers[0], str(info.value)


# -- columns no array holds ------------------------------------------------------------------


def test_columns_no_array_holds_are_refused_naming_each() -> None:
    t = pa.table({
        "n": pa.array([1, 2]),
        "s": pa.array(["a", "b"]),
        "d": pa.array(["x", "y"]).dictionary_encode(),
        "ts": pa.array([1, 2], pa.timestamp("s")),
        "l": pa.array([["a"], ["b", "c"]]),  # lists of numbers are ragged arrays (test_ragged)
    })  # fmt: skip
    for call in (to, explain):
        with pytest.raises(ConversionError) as info:
            call(t, "numpy")
        msg = str(info.value)
        for name in ("'s'", "'d'", "'ts'", "'l'"):
            assert name in msg, msg
        assert "'n'" not in msg and "strings" in msg and ".indices" in msg
    with pytest.raises(ConversionError, match="holds strings"):
        to(pa.array(["a"]), "numpy")


def test_duplicate_column_names_are_refused() -> None:
    t = pa.Table.from_arrays([pa.array([1]), pa.array([2])], names=["x", "x"])
    with pytest.raises(InvalidArrayError, match="'x' appear more than once"):
        to(t, "numpy")


# -- memory read-only in rule 8's sense ------------------------------------------------------


def test_immutable_foreign_memory_is_copied_for_torch(torch: Any) -> None:
    data = np.arange(4, dtype=np.int64).tobytes()
    col = pa.Array.from_buffers(pa.int64(), 4, [None, pa.py_buffer(data)])
    assert explain(col, "torch").copies == 1
    to(col, "torch").fill_(0)
    assert np.frombuffer(data, np.int64).tolist() == [0, 1, 2, 3]
    with pytest.raises(CopyRequiredError, match="read-only"):
        to(col, "torch", copy=False)
    x = to(col, "numpy")
    assert np_ptr(x) == arrow_ptr(col) and not x.flags.writeable
    shared = np.arange(4.0)  # Arrow shares a writable numpy array: so does torch
    assert to(pa.array(shared), "torch").data_ptr() == np_ptr(shared)


def test_read_only_memory_maps_are_copied_in_a_child_process(tmp_path: Any) -> None:
    """A write through a torch alias of a read-only memory map is a SIGSEGV: torch gets a
    copy (the map stays unchanged), copy=False raises, numpy gets a read-only view; a polars
    Series made from the mapped table shares the map, and is copied too."""
    need("torch")
    need("polars")
    path = tmp_path / "t.arrow"
    code = textwrap.dedent(
        f"""
        import json
        import numpy as np, pyarrow as pa, polars as pl
        from interop_core import CopyRequiredError, explain, to
        t = pa.table({{"a": pa.array([1.0, 2.0, 3.0], pa.float32())}})
        with pa.OSFile({str(path)!r}, "wb") as f:
            w = pa.ipc.new_file(f, t.schema); w.write_table(t); w.close()
        m = pa.ipc.open_file(pa.memory_map({str(path)!r})).read_all()
        addr = m.column("a").chunk(0).buffers()[1].address
        got = {{}}
        out = to(m, "torch")
        got["copies"] = explain(m, "torch")["a"].copies
        got["shared"] = out["a"].data_ptr() == addr
        out["a"].fill_(0)
        got["kept"] = m.column("a").to_pylist()
        try:
            to(m, "torch", copy=False)
            got["copy_false"] = "converted"
        except CopyRequiredError:
            got["copy_false"] = "refused"
        view = to(m, "numpy")["a"]
        got["numpy"] = [view.__array_interface__["data"][0] == addr, view.flags.writeable]
        s = pl.from_arrow(m)["a"]
        got["polars_shares_map"] = s.to_numpy().__array_interface__["data"][0] == addr
        got["polars_copies"] = explain(s, "torch").copies
        to(s, "torch").fill_(0)
        got["polars_kept"] = s.to_list()
        print(json.dumps(got))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got == {
        "copies": 1, "shared": False, "kept": [1.0, 2.0, 3.0], "copy_false": "refused",
        "numpy": [True, False], "polars_shares_map": True, "polars_copies": 1,
        "polars_kept": [1.0, 2.0, 3.0],
    }  # fmt: skip


# -- polars ----------------------------------------------------------------------------------


def aligned_numpy(values: Any, offset: int = 0) -> Any:
    """A copy of ``values`` starting ``offset`` bytes past a 64-byte boundary."""
    buf = np.empty(values.nbytes + 128, np.uint8)
    start = -np_ptr(buf) % 64 + offset
    out = buf[start : start + values.nbytes].view(values.dtype)
    out[...] = values
    return out


def test_polars_series_and_frame(torch: Any, jax: Any) -> None:
    pl = need("polars")
    s = pl.Series("x", [float(i) for i in range(2000)], dtype=pl.Float32)
    arrow = s.to_arrow()
    assert arrow_ptr(arrow) == np_ptr(s.to_numpy())  # to_arrow() shares polars' buffer
    got = to(s, "torch")
    assert got.dtype == torch.float32 and got.data_ptr() == arrow_ptr(arrow)
    assert explain(s, "torch").copies == 0
    df = pl.DataFrame({"b": [1, 2, 3], "a": [0.5, 1.5, 2.5], "c": [True, False, True]})
    out = to(df, "numpy")
    assert list(out) == ["b", "a", "c"]
    for name in ("b", "a"):
        assert np_ptr(out[name]) == arrow_ptr(df[name].to_arrow()) and not out[name].flags.writeable
    assert out["c"].tolist() == [True, False, True] and explain(df, "numpy")["c"].copies == 1
    # polars shares a numpy array it is made from: aligned, JAX shares it too; else one copy
    aligned = pl.Series("y", aligned_numpy(np.arange(64, dtype=np.float32)))
    assert to(aligned, "jax").unsafe_buffer_pointer() == arrow_ptr(aligned.to_arrow())
    unaligned = pl.Series("z", aligned_numpy(np.arange(64, dtype=np.float32), 16))
    assert explain(unaligned, "jax").copies == 1 and to(unaligned, "jax").tolist()[:2] == [0, 1]


def test_polars_series_are_read_alike_through_polars_rust_series_or_their_methods(
    torch: Any, monkeypatch: Any
) -> None:
    # A plain Series is asked through the Rust series it wraps (faster); a subclass, or a
    # polars whose Rust series answers otherwise, through the Series' methods: same keys,
    # same views, and changes made in place are seen either way.
    pl = need("polars")
    from interop_plugins.frameworks import polars as plugin

    class Column(pl.Series):
        pass

    def cases() -> list[Any]:
        data = [float(i) for i in range(2000)]
        return [
            pl.Series("f", data, dtype=pl.Float32),
            Column("sub", data, dtype=pl.Float32),
            pl.Series("n", [1.0, None, 3.0]),
            pl.concat([pl.Series("c", [1, 2]), pl.Series("c", [3])], rechunk=False),
            pl.Series("a", [[1.0, 2.0], [3.0, 4.0]], dtype=pl.Array(pl.Float64, 2)),
            pl.Series("b", [True, False]),
        ]

    def seen(s: Any) -> tuple[Any, int | None]:
        plain = s.n_chunks() == 1 and not s.has_nulls() and s.dtype != pl.Boolean
        return plugin.key(s), np_ptr(plugin.view(s)) if plain else None

    fast = [seen(s) for s in cases()]
    assert plugin._wrapped is pl.Series  # polars installed here answers as checked
    assert type(cases()[1]) is not plugin._wrapped  # a subclass: through its methods
    monkeypatch.setattr(plugin, "_wrapped", False)
    slow = [seen(s) for s in cases()]
    assert [k for k, _ in fast] == [k for k, _ in slow]
    monkeypatch.undo()
    for s in cases():
        if seen(s)[1] is not None:
            assert seen(s)[1] == np_ptr(s.to_numpy())
            assert to(s, "torch").data_ptr() == np_ptr(s.to_numpy())
    grown = pl.Series("g", [1.0, 2.0])
    assert to(grown, "torch").tolist() == [1.0, 2.0]
    grown.append(pl.Series("g", [None]))  # in place: a second chunk, with a null
    assert plugin.key(grown)[1:3] == (True, True)
    with pytest.raises(ConversionError, match="'g'"):
        to(grown, "torch")


def test_polars_array_chunks_nulls_and_strings(torch: Any) -> None:
    pl = need("polars")
    arr = pl.Series("arr", [[1.0, 2.0], [3.0, 4.0]], dtype=pl.Array(pl.Float64, 2))
    got = to(arr, "torch")
    assert tuple(got.shape) == (2, 2) and got.data_ptr() == int(
        arr.to_arrow().values.buffers()[1].address
    )
    chunked = pl.concat([pl.Series("c", [1, 2]), pl.Series("c", [3])], rechunk=False)
    assert chunked.n_chunks() == 2
    assert explain(chunked, "torch").copies == 1 and to(chunked, "torch").tolist() == [1, 2, 3]
    with pytest.raises(ConversionError, match="column 'n'"):
        to(pl.DataFrame({"n": [1, None]}), "torch")
    values, mask = to(pl.Series("n", [1, None, 3]), "torch", nulls="mask")
    assert values.tolist() == [1, 0, 3] and mask.tolist() == [True, False, True]
    with pytest.raises(ConversionError) as info:
        to(pl.DataFrame({"ok": [1], "s": ["a"], "t": [datetime.datetime(2020, 1, 1)]}), "numpy")
    assert "'s'" in str(info.value) and "'t'" in str(info.value) and "'ok'" not in str(info.value)


# -- pandas ----------------------------------------------------------------------------------


def test_pandas_numpy_backed_columns_are_views(torch: Any, jax: Any) -> None:
    pd = need("pandas")
    df = pd.DataFrame({"a": np.arange(4.0), "b": np.arange(4, dtype=np.int16)})
    own = {c: np_ptr(df[c].to_numpy()) for c in df.columns}
    out = to(df, "torch")
    assert list(out) == ["a", "b"] and out["b"].dtype == torch.int16
    assert {c: out[c].data_ptr() for c in out} == own
    out["a"][0] = 42.0  # the block under pandas' read-only view is written
    assert df["a"].tolist() == [42.0, 1.0, 2.0, 3.0]
    view = to(df, "numpy")["a"]
    assert np_ptr(view) == own["a"] and not view.flags.writeable
    s = pd.Series(aligned_numpy(np.arange(8, dtype=np.float32)), name="s", copy=False)
    assert to(s, "jax").unsafe_buffer_pointer() == np_ptr(s.to_numpy())
    protected = np.arange(3.0)
    protected.flags.writeable = False  # memory its owner marks read-only: rule 8
    s = pd.Series(protected, copy=False)
    assert explain(s, "torch").copies == 1 and to(s, "torch").data_ptr() != np_ptr(protected)


def test_pandas_arrow_and_nullable_columns_go_through_arrow(torch: Any) -> None:
    pd = need("pandas")
    s = pd.Series(pd.array([1, 2, 3], dtype="int32[pyarrow]"), name="p")
    chunk = s.array.__arrow_array__()
    assert to(s, "torch").data_ptr() == arrow_ptr(chunk)
    df = pd.DataFrame({"n": pd.array([1, None, 3], dtype="Int64"), "p": s})
    with pytest.raises(ConversionError, match="column 'n'"):
        to(df, "torch")
    out = to(df, "torch", nulls="fill", fill_value=0)
    assert out["n"].dtype == torch.int64 and out["n"].tolist() == [1, 0, 3]
    with pytest.raises(ConversionError) as info:
        to(
            pd.DataFrame({"x": [1], "s": ["a"], "o": [object()], "c": pd.Categorical(["u"])}),
            "numpy",
        )
    msg = str(info.value)
    assert "'s'" in msg and "'o'" in msg and "'c'" in msg and "'x'" not in msg


# -- dtype= ----------------------------------------------------------------------------------


def test_dtype_casts_64_bit_columns_for_jax(jax: Any) -> None:
    pl, pd = need("polars"), need("pandas")
    if jax.config.read("jax_enable_x64"):
        pytest.skip("x64 is on in this process: JAX takes int64 as it is")
    cast = {"int64": "int32", "float64": "float32"}
    tables = [
        pa.table({"i": pa.array([1, 2, 3]), "f": pa.array([0.5, 1.5, None])}),
        pl.DataFrame({"i": [1, 2, 3], "f": [0.5, 1.5, None]}),
        pd.DataFrame({"i": np.arange(1, 4), "f": pd.array([0.5, 1.5, None], dtype="Float64")}),
    ]
    for t in tables:
        with pytest.raises(Exception, match="jax_enable_x64"):
            to(t, "jax", nulls="fill", fill_value=0)
        out = to(t, "jax", dtype=cast, nulls="fill", fill_value=0)
        assert out["i"].dtype == np.int32 and out["i"].tolist() == [1, 2, 3]
        assert out["f"].dtype == np.float32 and out["f"].tolist() == [0.5, 1.5, 0.0]
        routes = explain(t, "jax", dtype=cast, nulls="fill", fill_value=0)
        assert "cast int64 -> int32" in str(routes["i"]) and routes["f"].copies == 2


def test_an_iterator_of_record_batches_takes_the_column_options() -> None:
    # A table-backed pipeline: to() of an iterator hands nulls=/fill_value= to each batch's
    # to(), as it does dtype= (before, the iterator edge refused them as unknown options).
    torch = need("torch")
    table = pa.table({"x": pa.array(np.arange(6, dtype=np.float32)), "y": [1, None, 3] * 2})
    batches = table.to_batches(max_chunksize=4)
    out = list(to(iter(batches), "torch", nulls="fill", fill_value=-1))
    assert [b["y"].tolist() for b in out] == [[1, -1, 3, 1], [-1, 3]]
    assert all(b["y"].dtype == torch.int64 for b in out)
    # the columns without nulls stay views of each batch's buffer
    assert [b["x"].data_ptr() for b in out] == [arrow_ptr(b.column(0)) for b in batches]
    with pytest.raises(OptionError, match="nulls='drop' is not one of"):
        next(to(iter(batches), "torch", nulls="drop"))  # checked where a column has nulls
    with pytest.raises(OptionError, match="did you mean nulls="):
        to(iter(batches), "torch", nuls="fill")


@pytest.mark.parametrize("name", ["pyarrow", "polars"])
def test_column_sources_pass_the_conformance_kit(name: str) -> None:
    # The kit builds (2, 3) and (3, 2) examples: FixedSizeList / Array columns, one buffer
    # each; it checks describe, keys (never the list width), pointers and every route into
    # numpy and torch (zero-copy where explain() says so). pandas Series are 1-D only.
    need(name)
    need("torch")
    from interop_core.testing import check_framework

    done = check_framework(name, others=["numpy", "torch"])
    assert done[0].startswith("spec: "), done
    # pyarrow is a target too: its lines go on with "; back: ..." (the round trip).
    assert any(line.startswith("float32 -> torch: zero-copy") for line in done), done
    assert any(line.startswith("bool -> torch: copy") for line in done), done  # bits unpacked


# -- warm-path keys --------------------------------------------------------------------------


def _in_a_row(cases: list[tuple[Any, str]], ptr: Any, torch: Any) -> None:
    """Convert ``cases`` (a column, what its route does) in turn, twice over: every call
    after the first of each runs the warm path, whose key must tell the columns apart."""
    for _ in range(2):
        for x, route in cases:
            if route == "nulls":
                with pytest.raises(ConversionError, match="has nulls"):
                    to(x, "torch")
                continue
            out = to(x, "torch")
            listed = x.to_pylist() if isinstance(x, (pa.Array, pa.ChunkedArray)) else x.to_list()
            assert isinstance(out, torch.Tensor) and out.tolist() == listed, route
            if route == "shared":
                assert out.data_ptr() == ptr(x), route
            elif route == "copied":
                assert out.data_ptr() != ptr(x), route


def test_warm_keys_follow_each_column_in_a_row(torch: Any) -> None:
    # Columns of one Python type differing in dtype, nulls, chunks or read-only memory,
    # converted alternately: each keeps its own plan (shared, copied, refused) and values.
    pl = need("polars")
    pd = need("pandas")
    data = np.arange(8, dtype=np.float32)
    frozen = pa.Array.from_buffers(pa.float32(), 8, [None, pa.py_buffer(data.tobytes())])
    chunked = pa.chunked_array([data[:3], data[3:]])
    arrow_cases = [
        (pa.array(data), "shared"),
        (pa.array(data.astype(np.int16)), "shared"),
        (chunked, "copied"),
        (frozen, "copied"),  # memory Arrow holds immutable (rule 8)
        (pa.array([True, False] * 4), "bits"),
        (pa.array([1.0, None] * 4, pa.float32()), "nulls"),
        (pa.array(data[::-1].copy()), "shared"),
    ]
    _in_a_row(arrow_cases, arrow_ptr, torch)

    polars_chunked = pl.concat([pl.Series("c", data[:3]), pl.Series("c", data[3:])], rechunk=False)
    polars_cases = [
        (pl.Series("a", data), "shared"),
        (pl.Series("b", data.astype(np.int64)), "shared"),
        (polars_chunked, "copied"),
        (pl.Series("d", [True, False] * 4), "bits"),
        (pl.Series("e", [1.0, None] * 4, pl.Float32), "nulls"),
        (pl.Series("f", data[::-1].copy()), "shared"),
    ]

    def polars_ptr(s: Any) -> int:
        return np_ptr(s.get_chunks()[0].to_numpy())

    _in_a_row(polars_cases, polars_ptr, torch)

    protected = data.copy()
    protected.flags.writeable = False  # memory its owner marks read-only: rule 8
    pandas_cases = [
        (pd.Series(data.copy(), copy=False), "shared"),
        (pd.Series(protected, copy=False), "copied"),
        (pd.Series(data.astype(np.int16), copy=False), "shared"),
        (pd.Series(pd.array([1, None] * 4, dtype="Int32")), "nulls"),
        (pd.Series(data[::-1].copy(), copy=False), "shared"),
    ]
    _in_a_row(pandas_cases, lambda s: np_ptr(s.to_numpy()), torch)
    view = to(pandas_cases[0][0], "numpy")  # still pandas' read-only view of its array
    assert not view.flags.writeable and np_ptr(view) == np_ptr(pandas_cases[0][0].to_numpy())


def test_a_polars_series_grown_in_place_over_a_memory_map_is_copied(
    torch: Any, tmp_path: Any
) -> None:
    # An empty Series appended to in place holds the other's chunk: here a read-only map.
    # Its read-only bit, once asked per Series, is asked again (no write is tried here: the
    # pointers say whether torch would alias the map).
    pl = need("polars")
    path = str(tmp_path / "x.arrow")
    with pa.ipc.new_file(path, pa.schema([("x", pa.float32())])) as writer:
        writer.write_batch(pa.record_batch([pa.array(np.arange(4096, dtype=np.float32))], ["x"]))
    mapped = pl.from_arrow(pa.ipc.open_file(pa.memory_map(path)).read_all())["x"]
    s = pl.Series("x", [], dtype=pl.Float32)
    assert to(s, "torch").shape == (0,)  # asked while empty: writable (nothing to write)
    s.append(mapped)
    assert s.n_chunks() == 1 and np_ptr(s.to_numpy()) == np_ptr(mapped.to_numpy())
    out = to(s, "torch")
    assert out.data_ptr() != np_ptr(s.to_numpy()) and explain(s, "torch").copies == 1
    assert out.tolist() == list(range(4096))
