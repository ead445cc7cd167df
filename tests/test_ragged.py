"""Ragged arrays (issue 21): tf.RaggedTensor, torch jagged nested tensors, Arrow List and
LargeList arrays and JAX ``RaggedArray(values, row_splits)`` pairs convert among each other.

Every zero-copy claim is checked with the frameworks' own pointers (torch's
``values().data_ptr()`` and ``offsets()``, TensorFlow's DLPack export of ``values`` and
``row_splits``, JAX's ``unsafe_buffer_pointer()``, Arrow's ``buffers()[1].address``); every
copy with explain()'s count and the step that makes it. Padding happens only on request
(``ragged="pad"``), never silently.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from adapters import own_ptr
from conftest import need

from interop_core import (
    ConversionError,
    CopyRequiredError,
    InvalidArrayError,
    NoRouteError,
    OptionError,
    explain,
    to,
)

np = need("numpy")

#: Four rows, one empty: the values of every test array.
ROWS = [[1.0, 2.0, 3.0], [], [4.0, 5.0], [6.0]]
VALUES = [v for row in ROWS for v in row]
OFFSETS = [0, 3, 3, 5, 6]
FRAMEWORKS = ("torch", "tensorflow", "jax", "pyarrow")
TARGETS = ("torch", "tensorflow", "jax")
#: Each source's own row splits dtype (jax: int32, as JAX holds without x64).
SPLITS = {"torch": "int64", "tensorflow": "int64", "jax": "int32", "pyarrow": "int32"}


def make(fw: str, splits: str = "", values: Any = None) -> Any:
    """The test rows as a ragged array of ``fw`` (row splits of dtype ``splits``)."""
    splits = splits or SPLITS[fw]
    vals = np.asarray(VALUES if values is None else values, np.float32)
    offs = np.asarray(OFFSETS, splits)
    if fw == "torch":
        torch = need("torch")
        # torch.tensor copies into torch's own (64-byte aligned) memory
        return torch.nested.nested_tensor_from_jagged(torch.tensor(vals), torch.tensor(offs))
    if fw == "tensorflow":
        tf = need("tensorflow")
        return tf.RaggedTensor.from_row_splits(tf.constant(vals), tf.constant(offs))
    if fw == "jax":
        jnp = need("jax").numpy
        from interop_plugins.exchange.ragged import RaggedArray

        return RaggedArray(jnp.asarray(vals), jnp.asarray(offs))
    pa = need("pyarrow")
    kind = pa.ListArray if splits == "int32" else pa.LargeListArray
    # From lists: in memory pyarrow allocates (64-byte aligned), as Parquet and IPC give.
    return kind.from_arrays(pa.array(offs.tolist(), getattr(pa, splits)()),
                            pa.array(vals.tolist(), pa.float32()))  # fmt: skip


def parts(x: Any) -> tuple[int, int, str, list[list[float]]]:
    """(values address, row splits address, row splits dtype, rows) read with ``x``'s
    framework's own API."""
    name = type(x).__module__
    if name.startswith("torch"):
        return (x.values().data_ptr(), x.offsets().data_ptr(), str(x.offsets().dtype)[6:],
                [r.tolist() for r in x.unbind()])  # fmt: skip
    if name.startswith("tensorflow"):
        return (own_ptr(x.values), own_ptr(x.row_splits), x.row_splits.dtype.name,
                x.to_list())  # fmt: skip
    if name.startswith("pyarrow"):
        values, width = x.values, 4 if str(x.offsets.type) == "int32" else 8
        first = values.buffers()[1].address + values.offset * 4
        return (first, x.buffers()[1].address + x.offset * width, str(x.offsets.type),
                x.to_pylist())  # fmt: skip
    values, splits = x  # a RaggedArray
    rows = [values[int(a) : int(b)].tolist() for a, b in itertools.pairwise(splits)]
    return (values.unsafe_buffer_pointer(), splits.unsafe_buffer_pointer(), str(splits.dtype),
            rows)  # fmt: skip


def kind_of(x: Any) -> str:
    """The framework of a result, by its type."""
    name = type(x).__module__.partition(".")[0]
    return {"interop_plugins": "jax", "tensorflow": "tensorflow", "torch": "torch"}.get(name, name)


def values_dtype(x: Any) -> str:
    if kind_of(x) == "torch":
        return str(x.values().dtype)[6:]
    if kind_of(x) == "tensorflow":
        return str(x.dtype.name)
    return str(x.values.dtype)


# -- every pair ------------------------------------------------------------------------------


@pytest.mark.parametrize("source", FRAMEWORKS)
@pytest.mark.parametrize("target", TARGETS)
def test_every_pair_shares_the_values(source: str, target: str) -> None:
    if source == target:
        pytest.skip("same framework")
    need(target)
    x = make(source)
    values_ptr, splits_ptr, splits, _ = parts(x)
    route = explain(x, target)
    for attempt in range(2):  # the second call takes the warm path
        got = to(x, target)
        assert kind_of(got) == target and values_dtype(got) == "float32"
        got_values, got_splits, got_dtype, got_rows = parts(got)
        assert got_rows == ROWS, (attempt, got_rows)
        assert got_values == values_ptr  # the values are shared, always
        if target == "jax" and splits == "int64":  # no x64: narrowed, the one copy
            assert route.copies == 1 and got_dtype == "int32" and got_splits != splits_ptr
            assert "row splits copied" in str(route) and "jax_enable_x64 is off" in str(route)
        else:
            assert route.copies == 0 and route.zero_copy and "(shared" in str(route)
            assert got_dtype == splits and got_splits == splits_ptr


@pytest.mark.parametrize("source", ("torch", "tensorflow", "pyarrow"))
def test_int64_row_splits_are_shared_with_jax_when_x64_is_on(source: str) -> None:
    jax = need("jax")
    x = make(source, "int64")
    values_ptr, splits_ptr, _, _ = parts(x)
    with jax.enable_x64(True):
        assert explain(x, "jax").copies == 0
        got = to(x, "jax")
        assert parts(got) == (values_ptr, splits_ptr, "int64", ROWS)
    # The plan cache is keyed by the switch: off again, the splits are narrowed again.
    assert str(to(x, "jax").row_splits.dtype) == "int32"


def test_int32_row_splits_stay_int32_in_torch_and_tensorflow() -> None:
    need("torch"), need("tensorflow")
    for source in ("tensorflow", "pyarrow"):
        x = make(source, "int32")
        ptr = parts(x)[1]
        for target in ("torch", "tensorflow"):
            if target != source:
                got = parts(to(x, target))
                assert got[1:] == (ptr, "int32", ROWS), (source, target)


def test_copy_false_refuses_the_row_splits_copy() -> None:
    need("jax")
    x = make("torch")  # int64 offsets: jax without x64 holds only int32
    with pytest.raises(CopyRequiredError) as info:
        to(x, "jax", copy=False)
    assert "jax_enable_x64" in str(info.value)
    assert parts(to(make("pyarrow"), "jax", copy=False))[3] == ROWS  # int32: nothing to copy


@pytest.mark.parametrize("source", FRAMEWORKS)
def test_copy_true_shares_nothing(source: str) -> None:
    x = make(source)
    values_ptr, splits_ptr, _, _ = parts(x)
    for target in TARGETS:
        need(target)
        route = explain(x, target, copy=True)
        got = to(x, target, copy=True)
        got_values, got_splits, _, rows = parts(got)
        assert rows == ROWS and kind_of(got) == target
        assert got_values != values_ptr and got_splits != splits_ptr
        assert route.copies == 1 and ("copied" in str(route) or "ragged copy" in str(route))


# -- padding, on request only ------------------------------------------------------------------


PADDED = [[1, 2, 3], [-1, -1, -1], [4, 5, -1], [6, -1, -1]]
MASK = [[True] * 3, [False] * 3, [True, True, False], [True, False, False]]


@pytest.mark.parametrize("source", FRAMEWORKS)
def test_a_dense_only_target_refuses_without_ragged_pad(source: str) -> None:
    with pytest.raises(NoRouteError) as info:
        to(make(source), "numpy")
    assert "ragged='pad'" in str(info.value).splitlines()[0]


@pytest.mark.parametrize("source", FRAMEWORKS)
def test_ragged_pad_pads_with_fill_value_and_gives_a_mask(source: str) -> None:
    x = make(source)
    route = explain(x, "numpy", ragged="pad", fill_value=-1)
    assert route.copies == 1 and "padded (ragged='pad')" in str(route)
    got = to(x, "numpy", ragged="pad", fill_value=-1)
    assert type(got) is np.ndarray and got.dtype == np.float32 and got.tolist() == PADDED
    values, mask = to(x, "numpy", ragged="pad", fill_value=-1, mask=True)
    assert values.tolist() == PADDED and mask.dtype == np.bool_ and mask.tolist() == MASK


def test_ragged_pad_into_frameworks_that_hold_ragged_arrays_pads() -> None:
    torch, tf = need("torch"), need("tensorflow")
    got = to(make("tensorflow"), "torch", ragged="pad", fill_value=-1)
    assert type(got) is torch.Tensor and not got.is_nested and got.tolist() == PADDED
    got, mask = to(make("torch"), "tensorflow", ragged="pad", fill_value=-1, mask=True)
    assert isinstance(got, tf.Tensor) and got.numpy().tolist() == PADDED
    assert mask.numpy().tolist() == MASK


def test_ragged_pad_passes_dense_arrays_of_a_batch_as_they_are() -> None:
    torch = need("torch")
    dense = np.arange(4, dtype=np.int64)
    out = to({"rows": make("tensorflow"), "ids": dense}, "torch", ragged="pad", fill_value=0)
    assert out["rows"].shape == (4, 3) and out["ids"].tolist() == [0, 1, 2, 3]
    assert out["ids"].data_ptr() == dense.ctypes.data and out["ids"].dtype == torch.int64


def test_ragged_pad_options_are_checked() -> None:
    x = make("pyarrow")
    with pytest.raises(OptionError, match="needs fill_value="):
        to(x, "numpy", ragged="pad")
    with pytest.raises(OptionError, match="does not fit"):
        to(make("pyarrow", values=[1, 2, 3, 4, 5, 6]), "numpy", ragged="pad", fill_value=1e40)
    with pytest.raises(OptionError, match="is not 'pad'"):
        to(x, "numpy", ragged="truncate", fill_value=0)


# -- Arrow: slices, nulls, chunks, tables ---------------------------------------------------------


def test_a_sliced_list_array_has_its_offsets_shifted_once() -> None:
    need("torch")
    pa = need("pyarrow")
    x = make("pyarrow").slice(2)  # offsets [3, 5, 6]: they start at 3
    route = explain(x, "torch")
    assert route.copies == 1 and "row splits copied" in str(route)
    assert "do not start at 0" in str(route)
    got = to(x, "torch")
    assert [r.tolist() for r in got.unbind()] == ROWS[2:]
    assert got.offsets().tolist() == [0, 2, 3]
    # The values are shared: the first one is the slice's first value.
    assert got.values().data_ptr() == x.values.buffers()[1].address + 3 * 4
    with pytest.raises(CopyRequiredError):
        to(x, "torch", copy=False)
    assert isinstance(x, pa.ListArray)


def test_a_list_array_with_null_rows_is_refused_with_what_to_do() -> None:
    pa = need("pyarrow")
    x = pa.array([[1.0], None, [2.0, 3.0]], pa.list_(pa.float32()))
    with pytest.raises(NoRouteError) as info:
        to(x, "torch")
    assert "null rows" in str(info.value) and "fill_null" in str(info.value)
    filled = x.fill_null(pa.scalar([], x.type))
    assert [r.tolist() for r in to(filled, "torch").unbind()] == [[1.0], [], [2.0, 3.0]]
    with pytest.raises(NoRouteError, match="null rows"):
        to(pa.array([[1.0, None]], pa.list_(pa.float32())), "torch")  # a null value


def test_a_chunked_list_array_is_one_copy_or_refused_naming_combine_chunks() -> None:
    pa = need("pyarrow")
    x = pa.chunked_array([make("pyarrow"), make("pyarrow")])
    with pytest.raises(CopyRequiredError, match="combine_chunks"):
        to(x, "torch", copy=False)
    assert explain(x, "torch").copies == 1  # joined (tests/test_arrow_target.py)
    one = x.combine_chunks()
    assert [r.tolist() for r in to(one, "torch").unbind()] == ROWS + ROWS


def test_a_table_with_a_list_column_converts_it_as_a_ragged_array() -> None:
    torch = need("torch")
    pa = need("pyarrow")
    table = pa.table({"ids": pa.array([1, 2, 3, 4], pa.int64()), "rows": make("pyarrow")})
    out = to(table, "torch")
    assert list(out) == ["ids", "rows"] and out["ids"].dtype == torch.int64
    assert out["rows"].is_nested and [r.tolist() for r in out["rows"].unbind()] == ROWS
    padded = to(table, "numpy", ragged="pad", fill_value=-1)
    assert padded["rows"].tolist() == PADDED and padded["ids"].tolist() == [1, 2, 3, 4]


def test_list_arrays_of_booleans_and_of_lists() -> None:
    need("torch")
    pa = need("pyarrow")
    bools = pa.array([[True, False], [True]], pa.list_(pa.bool_()))
    assert explain(bools, "torch").copies == 1  # bits: unpacked, one copy
    assert [r.tolist() for r in to(bools, "torch").unbind()] == [[True, False], [True]]
    nested = pa.array([[[1]], [[2, 3]]], pa.list_(pa.list_(pa.int32())))
    with pytest.raises(ConversionError, match="lists of lists"):
        to(nested, "torch")


# -- what is refused -------------------------------------------------------------------------------


def test_a_tf_ragged_tensor_of_ragged_rank_2_is_refused() -> None:
    tf = need("tensorflow")
    need("torch")
    x = tf.ragged.constant([[[1], [2, 3]], [[4]]])
    with pytest.raises(ConversionError, match="ragged_rank 2"):
        to(x, "torch")


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors:UserWarning")
def test_a_torch_nested_tensor_of_the_strided_layout_is_refused() -> None:
    torch = need("torch")
    need("tensorflow")
    x = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])
    with pytest.raises(ConversionError, match=r"layout=torch\.jagged"):
        to(x, "tensorflow")


def test_a_torch_jagged_tensor_is_ragged_not_sparse() -> None:
    x = make("torch")
    with pytest.raises(NoRouteError) as info:
        to(x, "numpy")
    assert "ragged" in str(info.value) and "sparse" not in str(info.value)


def test_a_non_contiguous_jagged_tensor_is_copied_once() -> None:
    torch = need("torch")
    need("tensorflow")
    base = torch.arange(12.0).view(3, 4)
    x = torch.nested.narrow(base, 1, torch.tensor([0, 1, 0]), torch.tensor([2, 3, 1]),
                            layout=torch.jagged)  # fmt: skip
    assert explain(x, "tensorflow").copies == 1
    assert to(x, "tensorflow").to_list() == [[0.0, 1.0], [5.0, 6.0, 7.0], [8.0]]


def test_a_jagged_tensor_requiring_grad_is_refused() -> None:
    torch = need("torch")
    need("tensorflow")
    values = torch.ones(6, requires_grad=True)
    x = torch.nested.nested_tensor_from_jagged(values, torch.tensor(OFFSETS))
    with pytest.raises(NoRouteError, match="requires grad") as info:
        to(x, "tensorflow")
    # Refused by the ragged edges over grad alone (it is no sparse tensor).
    assert "torch ragged -> tensorflow" in str(info.value) and "sparse" not in str(info.value)


def test_a_ragged_array_pair_is_checked() -> None:
    jnp = need("jax").numpy
    need("torch")
    from interop_plugins.exchange.ragged import RaggedArray

    with pytest.raises(ConversionError, match="holds jax arrays"):
        to(RaggedArray(np.ones(3), np.array([0, 3])), "torch")
    with pytest.raises(InvalidArrayError, match="start at 0"):
        to(RaggedArray(jnp.ones(3), jnp.asarray([1, 3])), "torch")
    with pytest.raises(InvalidArrayError, match="1-d int32 or int64"):
        to(RaggedArray(jnp.ones(3), jnp.asarray([0.0, 3.0])), "torch")


def test_arrow_list_keys_never_hold_the_width_and_follow_each_array() -> None:
    need("torch")
    pa = need("pyarrow")
    from interop_core.testing import spec_of

    def key(x: Any) -> Any:  # the key the warm path uses (the ragged form's, for a list)
        return spec_of(x).key(x)

    offsets = pa.array(np.array([0, 1, 1, 4], np.int32))  # one buffer: the same splits flags

    def lists(width: int) -> Any:
        """list<fixed_size_list<float32, width>>: rows of 1, 0 and 3 vectors."""
        flat = pa.array(np.arange(4 * width, dtype=np.float32))
        return pa.ListArray.from_arrays(offsets, pa.FixedSizeListArray.from_arrays(flat, width))

    narrow, wide = lists(2), lists(3)
    # One plan for every width: a key holding the Arrow type made one per width.
    assert key(narrow) == key(wide)
    for x, width in [(narrow, 2), (wide, 3), (narrow, 2)]:  # the warm path: each its own
        out = to(x, "torch")
        assert tuple(out.values().shape) == (4, width)
        assert out.values().data_ptr() == x.values.values.buffers()[1].address
        assert out.values().flatten().tolist() == list(range(4 * width))
        assert out.offsets().tolist() == [0, 1, 1, 4]

    # Arrays differing in splits, memory or nulls, in turn: their own keys and routes.
    values = np.array(VALUES, np.float32)
    plain = pa.ListArray.from_arrays(pa.array(np.array(OFFSETS, np.int32)), pa.array(values))
    large = pa.LargeListArray.from_arrays(pa.array(np.array(OFFSETS, np.int64)), pa.array(values))
    immutable = pa.Array.from_buffers(pa.float32(), 6, [None, pa.py_buffer(values.tobytes())])
    frozen = pa.ListArray.from_arrays(pa.array(np.array(OFFSETS, np.int32)), immutable)
    nulls = pa.array([[1.0, 2.0], None, [3.0]], pa.list_(pa.float32()))
    cases = [(plain, ROWS), (plain.slice(1), ROWS[1:]), (large, ROWS), (frozen, ROWS)]
    assert len({key(x) for x, _ in cases} | {key(nulls)}) == 5
    for _ in range(2):
        for x, rows in cases:
            out = to(x, "torch")
            assert [r.tolist() for r in out.unbind()] == rows
            first = x.values.buffers()[1].address + x.offsets[0].as_py() * 4  # row 0's
            shared = out.values().data_ptr() == first
            assert shared == (x is not frozen)  # read-only memory is copied (rule 8)
        with pytest.raises((ConversionError, NoRouteError), match="null"):
            to(nulls, "torch")


def test_arrow_list_keys_read_what_describe_reads() -> None:
    # The warm key reads the buffers itself: it must agree with the description the plan is
    # made from (dtype, read-only memory, every flag) on every kind of list array.
    pa = need("pyarrow")
    from interop_plugins.exchange.ragged_convert import arrow_describe, arrow_key
    from interop_plugins.frameworks.arrow import ArrowColumn

    values = np.arange(20, dtype=np.float32)
    immutable = pa.Array.from_buffers(pa.float32(), 20, [None, pa.py_buffer(values.tobytes())])
    with_nulls = pa.array([1.0, None, 2.0, 3.0, 4.0])
    pairs = pa.FixedSizeListArray.from_arrays(pa.array([1, 2, None, 4, 5, 6]), 2)
    found = []
    for kind, itype in ((pa.ListArray, np.int32), (pa.LargeListArray, np.int64)):

        def lists(offsets: list[int], child: Any, kind: Any = kind, itype: Any = itype) -> Any:
            return kind.from_arrays(pa.array(np.array(offsets, itype)), child)

        plain = lists([0, 3, 3, 7, 20], pa.array(values))
        found += [
            plain, plain.slice(1, 2), plain.slice(0, 0), plain.slice(2),
            pa.chunked_array([plain]), pa.chunked_array([plain, plain]),
            pa.chunked_array([], plain.type), ArrowColumn("c", plain),
            lists([0, 3, 5], with_nulls), lists([0, 3, 5], with_nulls).slice(1),
            lists([0, 2, 5], pa.array([True, False, True, True, False])),
            lists([0, 1, 3], pairs), lists([0, 1, 3], pairs).slice(0, 1),
            lists([0, 1, 3], pairs).slice(1, 1), lists([0, 3, 20], immutable),
        ]  # fmt: skip
    found.append(pa.array([[1, 2], None, [3]], pa.list_(pa.int16())))
    for x in found:
        info = arrow_describe(x)
        assert arrow_key(x)[1:] == (info.dtype, len(info.shape) - 1, info.readonly, info.flags)
