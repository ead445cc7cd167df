"""Apache Arrow (pyarrow): Tables and RecordBatches as dicts of arrays, Arrays and
ChunkedArrays as arrays.

A Table or RecordBatch converts as ``{name: array}`` in column order: its snapshot is that
dict of its columns (pyarrow's own Arrays, remembered by name for messages), and the
container path converts each column (``to(table, "pyarrow")`` gives the dict of them).
Numeric and boolean columns convert, and FixedSizeList<T, n> columns as (length, n) arrays
(nested ones with more dims); the edges are exchange/columns.py's. Arrow buffers that
pyarrow allocates start on 64-byte boundaries, so JAX and TensorFlow share them too (a
slice starts where its first element is).

As a target (``to(x, "pyarrow")``) a C-contiguous array of numbers becomes an Arrow array
over its memory (N-D: nested FixedSizeLists, read back as the same shape), from numpy and,
through a numpy view, from torch, JAX and TensorFlow; other layouts and booleans are one
copy. A 0-d array has no Arrow form (refused). Ragged arrays become List or LargeList arrays
(exchange/ragged.py).

Read-only in rule 8's sense is what Arrow itself marks so: a column whose data buffer comes
from a buffer Arrow holds immutable (a memory map, a Python ``bytes``, memory another
library exported through the C data interface, as ``polars.DataFrame.to_arrow()`` does)
is copied for torch, JAX and TensorFlow. Memory pyarrow allocated, read from Parquet or
IPC streams, or shares with a writable numpy array is shared.
"""

from __future__ import annotations

import sys
import weakref
from typing import Any

from interop_core.plugin import (
    ALIGNMENT,
    CPU,
    ArrayEdge,
    CallContext,
    Casting,
    ConversionError,
    ConverterSpec,
    Devices,
    Diagnostics,
    FrameworkSpec,
    InvalidArrayError,
    Needs,
    Package,
    TensorInfo,
    hookimpl,
)

from ..exchange.columns import (
    CHUNKED,
    DTYPES,
    INSTALL_HINT,
    NULLS,
    PACKED,
    Access,
    column_edges,
    columns_dict,
    flags,
    refuse_columns,
    unsupported,
)
from .numpy import aligned_empty, file_reader, numpy_dtype

#: Loaded once it is imported (docs/plugins.md, "Loaded when needed").
INTEROP_ABOUT = ("pyarrow",)

#: The files the command line's ``explain`` reads with pyarrow (frameworks/file_readers.py).
ARROW_FILES = (
    file_reader((".parquet", ".pq"), "Parquet", "read_parquet",
                "pyarrow.parquet.read_table(path, memory_map=True)"),
    file_reader((".arrow", ".feather", ".ipc"), "Arrow IPC", "read_ipc",
                "pyarrow.ipc.open_file(pyarrow.memory_map(path)).read_all()"),
)  # fmt: skip

NAME = "pyarrow"


class ArrowColumn:
    """A column (a ChunkedArray or Array) with its name: how the pandas plugin hands the
    Arrow form of a Series to the functions here (a Table's own columns are named through
    :func:`name_of`'s record instead, so that they stay pyarrow's arrays)."""

    __slots__ = ("data", "name")

    def __init__(self, name: Any, data: Any) -> None:
        self.name = name
        self.data = data


#: Arrow type id -> canonical dtype of the primitive types that convert (filled on first use).
_primitive: dict[int, str] = {}
_fixed_id: list[int] = []
#: FixedSizeList types met -> their element (see element()).
_lists: dict[Any, tuple[str, tuple[int, ...]] | None] = {}
_numpy_dtypes: dict[str, Any] = {}


def _load_ids() -> None:
    import pyarrow as pa

    names = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
             "float16", "float32", "float64")  # fmt: skip
    _primitive.update({getattr(pa, n)().id: n for n in names})
    _primitive[pa.bool_().id] = "bool"
    _fixed_id.append(pa.list_(pa.int8(), 1).id)


def element(typ: Any) -> tuple[str, tuple[int, ...]] | None:
    """(canonical dtype, dims after the length) of an Arrow type, or None when no array
    holds it; FixedSizeList<T, n> adds the dim n. Read by type id (a type hashes and
    compares in C++ at ~0.4 us), the full type only for FixedSizeLists."""
    if not _primitive:
        _load_ids()
    tid = typ.id
    name = _primitive.get(tid)
    if name is not None:
        return (name, ())
    if tid != _fixed_id[0]:
        return None
    found = _lists.get(typ, False)
    if found is False:
        inner = element(typ.value_type)
        found = None if inner is None else (inner[0], (typ.list_size, *inner[1]))
        _lists[typ] = found
    return found  # type: ignore[return-value]


def is_list(typ: Any) -> bool:
    """Whether an Arrow type is a List or LargeList (rows of any lengths)."""
    import pyarrow.types as t

    return bool(t.is_list(typ) or t.is_large_list(typ))


def ragged(typ: Any) -> bool:
    """Whether an Arrow type is a List or LargeList of values an array holds (a ragged
    array: a form of Arrow's arrays, which exchange/ragged.py declares)."""
    return is_list(typ) and element(typ.value_type) is not None


def _type_key(typ: Any, found: tuple[str, tuple[int, ...]]) -> Any:
    """What the warm-path key holds of a type: its id for a primitive one (cheap to hash);
    for a FixedSizeList its element dtype and dims, never its sizes (a key must not read
    the shape: one per list size would grow the plan cache without bound)."""
    tid = typ.id
    return tid if tid in _primitive else (found[0], len(found[1]))


def why_not(typ: Any) -> tuple[str, str]:
    """What a column of an Arrow type no array holds contains, and what to do."""
    import pyarrow.types as t

    if t.is_string(typ) or t.is_large_string(typ) or t.is_string_view(typ):
        return "strings", "encode them as numbers first (e.g. col.dictionary_encode().indices)"
    if t.is_dictionary(typ):
        return "dictionary-encoded values", "convert its codes (.indices) or decode it first"
    if t.is_temporal(typ):
        return f"{typ} values", "cast them to integers first (col.cast(pyarrow.int64()))"
    if t.is_list(typ) or t.is_large_list(typ):  # of values no array holds (ragged())
        inner = typ.value_type
        if t.is_list(inner) or t.is_large_list(inner) or t.is_list_view(inner):
            return "lists of lists", (
                "only one ragged dimension converts: flatten the inner lists first "
                "(pyarrow.compute.list_flatten)"
            )
        if element(inner) is not None:  # ragged: its form describes it, when declared
            return "rows of different lengths", (
                "no registered plugin declares ragged Arrow arrays (the built-in "
                "interop_plugins.exchange.ragged does); convert col.flatten() and col.offsets"
            )
        return f"lists of {inner}", (
            "convert the values to numbers first (a list of numbers converts as a ragged array)"
        )
    if t.is_list_view(typ):
        return "list views", "cast it to a list type first (col.cast(pyarrow.list_(...)))"
    if t.is_decimal(typ):
        return f"{typ} values", "cast them to float64 or an integer type first"
    return f"{typ} values", "cast them to a numeric type first, or leave the column out"


_chunked: Any = None


def _chunks(obj: Any) -> list[Any]:
    """The Arrays a column is made of (one for an Array)."""
    global _chunked
    if type(obj) is ArrowColumn:
        obj = obj.data
    if _chunked is None:
        _chunked = sys.modules["pyarrow"].ChunkedArray  # imported: obj is its object
    if type(obj) is _chunked:
        return [obj.chunk(0)] if obj.num_chunks == 1 else obj.chunks  # type: ignore[no-any-return]
    return [obj]


def is_table(obj: Any) -> bool:
    """Whether ``obj`` is a Table or RecordBatch (converted through its snapshot)."""
    pa = sys.modules["pyarrow"]
    return isinstance(obj, (pa.Table, pa.RecordBatch))


class _Name(weakref.ref):
    """A weak reference to a table's column that holds the column's name; it leaves
    :data:`_names` with its column."""

    __slots__ = ("key", "name")
    key: int
    name: Any


def _gone(ref: _Name) -> None:
    if _names.get(ref.key) is ref:
        del _names[ref.key]


#: id(column) -> a :class:`_Name` of it: the columns a Table's snapshot holds are pyarrow's
#: own arrays (what to(table, "pyarrow") gives), and messages still name them.
_names: dict[int, _Name] = {}


def _named(name: Any, column: Any) -> Any:
    """``column``, remembered as the table's column ``name`` (for :func:`name_of`)."""
    ref = _Name(column, _gone)
    ref.key, ref.name = id(column), name
    _names[ref.key] = ref
    return column


def _name(obj: Any) -> Any:
    """The name :func:`_named` gave ``obj`` (None for none)."""
    ref = _names.get(id(obj))
    return ref.name if ref is not None and ref() is obj else None


def name_of(obj: Any) -> str:
    """The column in words."""
    if type(obj) is ArrowColumn:
        return f"column {obj.name!r}"
    name = _name(obj)
    return "this Arrow array" if name is None else f"column {name!r}"


def _fixed(typ: Any) -> bool:
    import pyarrow as pa

    return pa.types.is_fixed_size_list(typ)  # type: ignore[no-any-return]


def _dims(arr: Any) -> tuple[int, ...]:
    """The dims a (convertible) Array's FixedSizeLists add; () for a primitive one."""
    found = element(arr.type)
    return found[1] if found is not None else ()


def _leaf(arr: Any) -> tuple[Any, int]:
    """The innermost (primitive) array of ``arr`` and the index in its buffers of the first
    element (a FixedSizeList's child ignores the parent's offset)."""
    index = arr.offset
    for size in _dims(arr):
        arr = arr.values
        index = arr.offset + index * size
    return arr, index


def bitmap_has_nulls(buf: Any, offset: int, length: int) -> bool:
    """Whether ``length`` bits of a validity bitmap from bit ``offset`` hold a 0 (a null):
    the whole bytes by numpy's min() (~3 us for a million values), the partial ones at the
    ends by their masks. A bitmap shorter than they need is refused."""
    import numpy as np

    if length <= 0:
        return False
    first, last = offset // 8, (offset + length - 1) // 8
    if buf.size <= last:
        raise InvalidArrayError(
            f"Cannot convert this Arrow array: its validity bitmap holds {buf.size} bytes, "
            f"and {length} values from value {offset} need {last + 1}.\nRebuild it with "
            "a bitmap of one bit per value (arr.validate(full=True) says what Arrow finds "
            "wrong)."
        )
    data = np.frombuffer(buf, np.uint8, last - first + 1, first)
    low, high = offset % 8, (offset + length - 1) % 8 + 1  # bits used: [low, 8) .. [0, high)
    if first == last:
        mask = ((1 << high) - 1) & ~((1 << low) - 1)
        return int(data[0]) & mask != mask
    head, tail = 0xFF & ~((1 << low) - 1), (1 << high) - 1
    if int(data[0]) & head != head or int(data[-1]) & tail != tail:
        return True
    return len(data) > 2 and int(data[1:-1].min()) != 0xFF


def own_nulls(arr: Any) -> bool:
    """Whether an Array has nulls at its own level, as its validity bitmap says. Arrow's
    recorded ``null_count`` is believed when it counts some (the nulls edges then read the
    bitmap), never when it says none over a bitmap: an array imported through the C data
    interface may say 0 over a bitmap with nulls (Arrow itself reads the bitmap, and
    ``validate(full=True)`` refuses the count); the bitmap is then counted."""
    if arr.null_count:
        return True
    bitmap = arr.buffers()[0]
    return bitmap is not None and bitmap_has_nulls(bitmap, arr.offset, len(arr))


def has_nulls(arr: Any) -> bool:
    """Whether an Array has a null at any level (a list's or an element's)."""
    if own_nulls(arr):
        return True
    dims = _dims(arr)
    if dims:
        size = dims[0]
        return has_nulls(arr.values.slice(arr.offset * size, len(arr) * size))
    return False


def readonly(arr: Any) -> bool:
    """Whether Arrow holds the memory of an Array's data immutable at its root (see the
    module's docstring)."""
    leaf, _ = _leaf(arr)
    return _immutable(leaf.buffers()[1])


def _immutable(buf: Any) -> bool:
    """Whether Arrow holds the memory of ``buf`` (None: no buffer) immutable at its root."""
    if buf is None:
        return False
    while buf.parent is not None:
        buf = buf.parent
    return not buf.is_mutable


def address(arr: Any) -> int:
    """Address of the first element's bytes (0 for none; a bool's: its byte of bits)."""
    leaf, index = _leaf(arr)
    buf = leaf.buffers()[1]
    if buf is None:
        return 0
    found = element(leaf.type)
    width = numpy_dtype(found[0]).itemsize if found and found[0] != "bool" else 0
    return int(buf.address) + (index * width if width else index // 8)


def _bits(buf: Any, offset: int, length: int) -> Any:
    """``length`` bits of an Arrow bitmap from bit ``offset``, as bools (a copy)."""
    import numpy as np

    packed = np.frombuffer(buf, np.uint8)
    return np.unpackbits(packed, count=offset + length, bitorder="little")[offset:].view(np.bool_)


def raw(arr: Any) -> Any:
    """An Array's values as numpy, nulls ignored: a view of its data (read-only when Arrow
    holds the buffer immutable), booleans unpacked (a copy); FixedSizeLists add dims."""
    import numpy as np

    typ = arr.type
    found = element(typ)
    if found is None:  # never reached through the edges: describe() refuses it first
        raise ConversionError(f"Cannot read Arrow {typ} values as an array.")
    if found[1]:
        size = found[1][0]
        inner = raw(arr.values)[arr.offset * size : (arr.offset + len(arr)) * size]
        return inner.reshape(len(arr), size, *inner.shape[1:])
    buf = arr.buffers()[1]
    if found[0] == "bool":
        return _bits(buf, arr.offset, len(arr)) if len(arr) else np.zeros(0, np.bool_)
    dtype = _numpy_dtypes.get(found[0]) or _numpy_dtypes.setdefault(found[0], numpy_dtype(found[0]))
    if buf is None or not len(arr):
        return np.zeros(0, dtype)
    return np.frombuffer(buf, dtype, len(arr), arr.offset * dtype.itemsize)


def valid(arr: Any) -> Any:
    """True where an Array has a value, in the shape of :func:`raw` (a new array)."""
    import numpy as np

    n = len(arr)
    bitmap = arr.buffers()[0]  # read whatever null_count says (see own_nulls)
    top = _bits(bitmap, arr.offset, n) if bitmap is not None else None
    dims = _dims(arr)
    if dims:
        size = dims[0]
        inner = valid(arr.values.slice(arr.offset * size, n * size))
        inner = inner.reshape(n, size, *inner.shape[1:])
        return inner if top is None else inner & top.reshape(n, *(1,) * (inner.ndim - 1))
    return top if top is not None else np.ones(n, np.bool_)


def _element_or_refuse(obj: Any, typ: Any) -> tuple[str, tuple[int, ...]]:
    found = element(typ)
    if found is None:
        kind, advice = why_not(typ)
        raise unsupported(name_of(obj), kind, advice[0].upper() + advice[1:] + ".")
    return found


def _type(obj: Any) -> Any:
    return (obj.data if type(obj) is ArrowColumn else obj).type


def describe(obj: Any) -> TensorInfo:
    """Describe a column (Array, ChunkedArray, ArrowColumn) without converting it."""
    if is_table(obj):  # converted through its snapshot
        raise ConversionError(
            "An Arrow table converts column by column: to(table, target) gives a dict."
        )
    dtype, dims = _element_or_refuse(obj, _type(obj))
    chunks = _chunks(obj)
    found = set()
    if any(map(has_nulls, chunks)):
        found.add(NULLS)
    if len(chunks) > 1:
        found.add(CHUNKED)
    if dtype == "bool":
        found.add(PACKED)
    shape = (sum(map(len, chunks)), *dims)
    first = address(chunks[0]) if chunks else 0
    ro = len(chunks) == 1 and not found and readonly(chunks[0])
    return TensorInfo(NAME, dtype, CPU, shape, "C", ro, first % ALIGNMENT == 0, frozenset(found))


def key(obj: Any) -> Any:
    """Warm-path key: the Arrow type, nulls, chunks, and read-only memory."""
    typ = _type(obj)
    name = _primitive.get(typ.id)
    if name is not None and type(data := _data(obj)) is not _chunked_type():
        # One Array of a primitive type, the common case, spelled out: the same key as
        # below without reading the type's dims three times (~0.8 us of ~1.5).
        if data.null_count:
            return (typ.id, True, False, False)
        bitmap, values = data.buffers()
        if bitmap is not None and bitmap_has_nulls(bitmap, data.offset, len(data)):
            return (typ.id, True, False, False)  # a null_count of 0 that the bitmap belies
        return (typ.id, False, False, name != "bool" and _immutable(values))
    found = element(typ)
    if found is None:
        if is_list(typ):  # a list array is of the ragged form, which keys it
            raise TypeError("an Arrow list array is keyed by its form, not as a column")
        return (typ,)  # nothing converts it: the slow path says why
    chunks = _chunks(obj)
    if len(chunks) != 1:
        return (_type_key(typ, found), any(map(has_nulls, chunks)), len(chunks) > 1, False)
    arr = chunks[0]
    nulls = has_nulls(arr)
    ro = not nulls and found[0] != "bool" and readonly(arr)
    return (_type_key(typ, found), nulls, False, ro)


def _data(obj: Any) -> Any:
    """The Array or ChunkedArray of a column (``obj`` itself when it is one)."""
    return obj.data if type(obj) is ArrowColumn else obj


def _chunked_type() -> Any:
    """pyarrow's ChunkedArray class (pyarrow is imported: key() is asked of its objects)."""
    global _chunked
    if _chunked is None:
        _chunked = sys.modules["pyarrow"].ChunkedArray
    return _chunked


def aligned_key(obj: Any) -> Any:
    """key() plus whether the first element is 64-byte aligned."""
    return (*key(obj), data_ptr(obj) % ALIGNMENT == 0)


def data_ptr(obj: Any) -> int:
    """Address of the first element (of the first chunk)."""
    chunks = _chunks(obj)
    return address(chunks[0]) if chunks else 0


def _empty(obj: Any) -> Any:
    import numpy as np

    dtype, dims = _element_or_refuse(obj, _type(obj))
    return np.zeros((0, *dims), numpy_dtype(dtype))


def view(obj: Any) -> Any:
    """A column in one chunk without nulls as numpy (zero-copy but for booleans)."""
    chunks = _chunks(obj)
    return raw(chunks[0]) if chunks else _empty(obj)


def copy(obj: Any) -> Any:
    """A column without nulls as one C-contiguous, 64-byte aligned array."""
    import numpy as np

    dtype, dims = _element_or_refuse(obj, _type(obj))
    chunks = _chunks(obj)
    out = aligned_empty((sum(map(len, chunks)), *dims), numpy_dtype(dtype))
    start = 0
    for arr in chunks:
        np.copyto(out[start : start + len(arr)], raw(arr))
        start += len(arr)
    return out


def parts(obj: Any) -> tuple[Any, Any]:
    """(values, valid) of a column with nulls (see exchange/columns.py's Access)."""
    import numpy as np

    chunks = _chunks(obj)
    if len(chunks) == 1:
        return raw(chunks[0]), valid(chunks[0])
    if not chunks:
        empty = _empty(obj)
        return empty, np.ones(empty.shape, np.bool_)
    return np.concatenate([raw(c) for c in chunks]), np.concatenate([valid(c) for c in chunks])


ACCESS = Access(view=view, copy=copy, parts=parts, name=name_of)


def arrow_type(dtype: str, like: Any = None) -> Any:
    """The Arrow type of canonical ``dtype`` (in place of the elements of the
    FixedSizeList, List or LargeList type ``like``: a ragged column casts its values)."""
    import pyarrow as pa

    if like is not None and _fixed(like):
        return pa.list_(arrow_type(dtype, like.value_type), like.list_size)
    if like is not None and (pa.types.is_list(like) or pa.types.is_large_list(like)):
        kind = pa.list_ if pa.types.is_list(like) else pa.large_list
        return kind(arrow_type(dtype, like.value_type))
    return pa.bool_() if dtype == "bool" else getattr(pa, dtype)()


def astype(obj: Any, dtype: str) -> Any:
    """A column cast to canonical ``dtype`` (``to(..., dtype=)``) in memory pyarrow
    allocates (64-byte aligned), keeping its chunks and nulls; any cast goes, as numpy's
    casting="unsafe" (the user asked for it)."""
    named = type(obj) is ArrowColumn
    data = obj.data if named else obj
    out = data.cast(arrow_type(dtype, data.type), safe=False)
    if named:
        return ArrowColumn(obj.name, out)
    name = _name(obj)  # a table's column: the cast one keeps its name
    if name is not None:
        _named(name, out)
    return out


def snapshot(obj: Any) -> Any:
    """A Table or RecordBatch as ``{name: column}`` in column order, each column a pyarrow
    Array (one chunk) or ChunkedArray (several, or none), as ``to(table, "pyarrow")`` gives
    it; the columns no array holds refused, all named; any other object as it is."""
    if not is_table(obj):
        return obj
    names = obj.schema.names  # column_names costs ~12 us on a 17-column batch
    what = f"Arrow {type(obj).__name__}"
    columns = [obj.column(i) for i in range(obj.num_columns)]
    refuse_columns(
        ((n, *why_not(c.type)) for n, c in zip(names, columns, strict=True)
         if element(c.type) is None and not ragged(c.type)), what,
    )  # fmt: skip
    # A column in one chunk holds that Array: each read of it skips the ChunkedArray.
    held = [c.chunk(0) if getattr(c, "num_chunks", 0) == 1 else c for c in columns]
    return columns_dict(names, [_named(n, c) for n, c in zip(names, held, strict=True)], what)


def example(values: Any, dtype: str) -> Any:
    """An Arrow column of ``values`` (nested lists, as the conformance kit builds them): a
    FixedSizeList array for each dim after the first, over one buffer pyarrow allocates."""
    import numpy as np
    import pyarrow as pa

    data = np.asarray(values, dtype=numpy_dtype(dtype))
    if dtype == "bool":
        out = pa.array(data.ravel())  # bits: Arrow packs them into its own buffer
    else:
        # In a buffer Arrow allocates (64-byte aligned), never numpy's: pa.array() may wrap
        # numpy's memory, whose alignment varies from run to run, and the doctor's route
        # matrix must say the same every time.
        buf = pa.allocate_buffer(data.nbytes)
        np.frombuffer(buf, dtype=data.dtype)[:] = data.ravel()
        out = pa.Array.from_buffers(pa.from_numpy_dtype(data.dtype), data.size, [None, buf])
    return _nest(out, data.shape)  # from lengths: a dim of 0 too (from_arrays refuses it)


# -- into Arrow: numpy arrays as Arrow arrays ---------------------------------------------


def _nest(leaf: Any, shape: tuple[int, ...]) -> Any:
    """``leaf`` (the elements in C order) as an Array of ``shape``: a FixedSizeList for each
    dim after the first, the layout :func:`element` reads back (no copy: children only)."""
    import pyarrow as pa

    out = leaf
    for depth in range(len(shape) - 1, 0, -1):
        length = 1
        for d in shape[:depth]:  # the lists at this depth (the dims before it)
            length *= d
        typ = pa.list_(out.type, shape[depth])
        out = pa.Array.from_buffers(typ, length, [None], children=[out])
    return out


def _refuse_0d(arr: Any) -> None:
    if arr.ndim == 0:
        raise ConversionError(
            "Cannot convert a 0-d array to an Arrow array: an Arrow array has a length, and a "
            "0-d array has no dimension to give it.\nReshape it first (x.reshape(1))."
        )


def shared_array(arr: Any) -> Any:
    """A C-contiguous numpy array of numbers as an Arrow array over its memory (zero-copy;
    the Arrow buffer holds the numpy array alive). N-D: nested FixedSizeLists."""
    import pyarrow as pa

    _refuse_0d(arr)
    buf = pa.py_buffer(arr.reshape(-1))  # a view of a C-contiguous array (size-1 dims too)
    leaf = pa.Array.from_buffers(pa.from_numpy_dtype(arr.dtype), arr.size, [None, buf])
    return _nest(leaf, arr.shape)


def copied_array(arr: Any) -> Any:
    """A numpy array of any layout as an Arrow array in a buffer pyarrow allocates (64-byte
    aligned): the one copy. Booleans are packed into Arrow's bits."""
    import numpy as np
    import pyarrow as pa

    _refuse_0d(arr)
    if arr.dtype == np.bool_:
        leaf = pa.array(arr.ravel(), pa.bool_())  # packs the bits: Arrow's own buffer
    else:
        buf = pa.allocate_buffer(arr.nbytes)
        np.copyto(np.frombuffer(buf, arr.dtype, arr.size).reshape(arr.shape), arr)
        leaf = pa.Array.from_buffers(pa.from_numpy_dtype(arr.dtype), arr.size, [None, buf])
    return _nest(leaf, arr.shape)


def _through_numpy() -> Any:
    def convert(x: Any, ctx: CallContext) -> Any:
        # copy=False: a share that turns out impossible fails the edge (a BufferError), and
        # the router re-plans rather than copying unseen.
        return shared_array(ctx.to(x, "numpy", copy=False))

    return convert


_SHARE_NOTE = (
    "the Arrow array is a view of the source's memory, which Arrow treats as immutable: "
    "writing to the source array changes the Arrow array"
)


def into_edges() -> list[ConverterSpec]:
    """Into Arrow: C-contiguous numbers shared (from numpy, and from torch, JAX and
    TensorFlow through a numpy view of theirs); other layouts and booleans (Arrow packs them
    into bits) one copy, from numpy."""
    shared = Needs(
        layouts=frozenset({"C"}),
        layout_reason="Arrow shares only C-contiguous memory (this array is copied)",
        no_dtypes=frozenset({"bool"}),
        dtype_reason="Arrow holds booleans one bit each, so an Arrow array of them is a copy",
    )
    direct = [
        # One step from the frameworks whose arrays share with numpy: their refusals (a
        # sparse or traced array, a torch view with its negative bit) then name their advice.
        ConverterSpec(
            name=f"{source} buffer as an Arrow array (numpy view)", source=source, target=NAME,
            load=_through_numpy, zero_copy=True, accepts=shared, cost=4.0,
            context=True,
            note=_SHARE_NOTE if source == "torch" else "",
            array=ArrayEdge(
                readonly_result=True if source != "torch" else None,  # JAX's, TF's: read-only
                memory_note=source == "torch",
            ),
        )
        for source in ("torch", "jax", "tensorflow")
    ]  # fmt: skip
    return [
        *direct,
        ConverterSpec(
            name="numpy buffer as an Arrow array", source="numpy", target=NAME,
            load=lambda: shared_array, zero_copy=True, accepts=shared, cost=3.0,
            note=_SHARE_NOTE, array=ArrayEdge(memory_note=True),
        ),
        ConverterSpec(
            name="numpy copied into an Arrow array", source="numpy", target=NAME,
            load=lambda: copied_array, zero_copy=False, cost=6.0,
            accepts=Needs(no_dtypes=frozenset({"bool"}), dtype_reason="booleans are packed"),
            note="copied into a buffer Arrow allocates",
        ),
        # Arrow's booleans are bits: the result carries the flag describe() gives it.
        ConverterSpec(
            name="numpy booleans packed into Arrow bits", source="numpy", target=NAME,
            load=lambda: copied_array, zero_copy=False, cost=6.0,
            accepts=Needs(only_dtypes=frozenset({"bool"})), adds_flags=frozenset({PACKED}),
        ),
    ]  # fmt: skip


def _devices() -> list[str]:
    return ["cpu"]  # Arrow's arrays here are host memory


@hookimpl
def interop_frameworks() -> list[FrameworkSpec]:
    """pyarrow's tables and columns: sources converted through numpy views, and a target
    (numpy arrays become Arrow arrays, ragged arrays list arrays)."""
    return [
        FrameworkSpec(
            name=NAME, aliases=("arrow",),
            array_types=("pyarrow.Array", "pyarrow.ChunkedArray", "pyarrow.Table",
                         "pyarrow.RecordBatch", f"{__name__}.ArrowColumn"),
            describe=describe, key=key, aligned_key=aligned_key, data_ptr=data_ptr,
            dtypes=DTYPES, snapshot=snapshot, example=example,
            waypoint=False,  # Arrow is an end: no route between others
            flags=flags("combine_chunks()"),
            package=Package(module="pyarrow", distribution="pyarrow", install_hint=INSTALL_HINT),
            devices=Devices(visible=_devices, kinds=("cpu",)),
            casting=Casting(astype=astype),
            diagnostics=Diagnostics(constructor="pyarrow.array(values)", files=ARROW_FILES),
        )
    ]  # fmt: skip


@hookimpl
def interop_converters() -> list[ConverterSpec]:
    """The column edges (exchange/columns.py) of Arrow columns, and numpy into Arrow."""
    return [*column_edges(NAME, ACCESS, "Arrow column"), *into_edges()]
