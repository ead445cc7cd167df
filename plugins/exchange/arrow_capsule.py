"""Any Arrow producer: objects with the Arrow PyCapsule interface, as tables and columns.

The Arrow PyCapsule interface (``__arrow_c_stream__``, ``__arrow_c_array__``) is how Arrow
libraries hand their data to each other through the C data interface: duckdb results,
nanoarrow and arro3 objects, datafusion and ibis results, and (with plugins of their own
here) pyarrow, polars and pandas. An object that speaks it and that no framework types is
the source ``arrow_capsule``, an array protocol detected by structure (never by importing
its library) that exchange/protocols.py declares in its order of protocols:

- ``__arrow_c_array__`` (one array or record batch) is preferred, else ``__arrow_c_stream__``
  (a stream of them: read to the end). Either is asked once per conversion (the
  ``snapshot``): a stream can be read once, and a query result is computed again on each
  ask. pyarrow imports the answer, sharing the producer's buffers.
- A struct (a record batch, a table, a stream of batches) converts as ``{name: column}`` in
  column order, as a pyarrow Table does (null rows of a struct make nulls of its fields);
  any other type converts as one column. The columns are :class:`CapsuleColumn`\\ s, whose
  edges are exchange/columns.py's: a column without nulls in one chunk is shared (numpy's
  view, torch's alias; JAX and TensorFlow when 64-byte aligned), several chunks and booleans
  are one copy, nulls need ``nulls=``. List columns (ragged) stay pyarrow arrays, which the
  ragged form converts. ``to(obj, "pyarrow")`` gives the imported arrays as they are.

Read-only in rule 8's sense: the C data interface carries no read-only mark, and pyarrow
marks every buffer it imports immutable whoever owns it. The owner here is the producer
(duckdb's, polars' or arro3's heap, or a read-only memory map exported through it), so a
column's memory is asked once, as polars' is, whether it can be written
(exchange/columns.py's ``writable_memory``): memory that cannot is copied for torch, JAX and
TensorFlow. Arrow memory is immutable by convention: torch's alias says so (explain()).

What a producer declares is checked as pyarrow checks it (``validate()``) before any
framework reads it, and lying null counts are read through as exchange/columns.py reads
them. Buffer sizes are not part of the C data interface: an array whose length the producer
inflates reads past its buffers in every consumer, pyarrow included (FACTS: undetectable
from Python); the producer is trusted for them, as every Arrow consumer trusts it.
"""

from __future__ import annotations

import math
from typing import Any

from interop_core.plugin import (
    ALIGNMENT,
    ITEMSIZE,
    Casting,
    ConverterSpec,
    Detection,
    FrameworkSpec,
    InteropError,
    InvalidArrayError,
    Needs,
    Package,
    TensorInfo,
)

from .columns import (
    DTYPES,
    INSTALL_HINT,
    Access,
    column_edges,
    columns_dict,
    flags,
    mapped_memory,
    refuse_columns,
    unsupported,
    writable_memory,
)

NAME = "arrow_capsule"
PROTOCOL = "the Arrow PyCapsule interface (__arrow_c_array__, __arrow_c_stream__)"


#: frameworks/arrow.py (pyarrow's plugin module), imported with the first producer read:
#: a process that meets none never loads it.
_arrow_module: Any = None


def _arrow() -> Any:
    global _arrow_module
    if _arrow_module is None:
        from ..frameworks import arrow

        _arrow_module = arrow
    return _arrow_module


class CapsuleColumn:
    """A column read from an Arrow producer: the pyarrow Array or ChunkedArray imported
    from it, its name (None for a lone array), what it came from (for messages), and
    whether its memory is read-only (asked once, see the module's docstring)."""

    __slots__ = ("_readonly", "data", "name", "producer")

    def __init__(self, data: Any, name: Any, producer: str) -> None:
        self.data = data
        self.name = name
        self.producer = producer
        self._readonly: bool | None = None

    def __repr__(self) -> str:
        return f"<CapsuleColumn {self.name!r} {self.data.type} of a {self.producer}>"


def speaks_arrow(obj: Any) -> bool:
    """Whether ``obj``'s type has the Arrow PyCapsule interface's array or stream export
    (asked of the type: detection caches the answer per type)."""
    cls = type(obj)
    return hasattr(cls, "__arrow_c_array__") or hasattr(cls, "__arrow_c_stream__")


def _producer(obj: Any) -> str:
    cls = type(obj)
    return f"{cls.__module__.partition('.')[0]} {cls.__qualname__}"


def _read(obj: Any, what: str) -> Any:
    """The pyarrow Array (``__arrow_c_array__``) or ChunkedArray (``__arrow_c_stream__``)
    ``obj`` exports, asked once and validated; anything the producer gets wrong is an
    InvalidArrayError naming it."""
    import pyarrow as pa

    try:
        if hasattr(type(obj), "__arrow_c_array__"):
            answer = obj.__arrow_c_array__()
            if not (isinstance(answer, tuple) and len(answer) == 2):
                raise TypeError(
                    f"__arrow_c_array__() returned {type(answer).__name__}, not a "
                    "(schema, array) pair of capsules"
                )
            data = pa.Array._import_from_c_capsule(*answer)
        else:
            data = pa.ChunkedArray._import_from_c_capsule(obj.__arrow_c_stream__())
        data.validate()
    except InteropError:
        raise
    except Exception as exc:
        raise InvalidArrayError(
            f"Cannot read this {what} through {PROTOCOL}: {type(exc).__name__}: {exc}\n"
            "The producer's export failed or handed over data Arrow refuses; check the "
            "object with pyarrow (pyarrow.table(obj) or pyarrow.array(obj)), or convert it "
            "with its own library first."
        ) from exc
    _check_mapped(data, what)
    return data


def _check_mapped(data: Any, what: str) -> None:
    """Refuse data whose buffers reach memory that is not mapped: the C data interface
    carries no buffer sizes, so pyarrow sizes each imported buffer by the length and offset
    the producer declared, and a lie there would crash the first reader."""
    import pyarrow as pa

    chunks = data.chunks if isinstance(data, pa.ChunkedArray) else [data]
    for chunk in chunks:
        for buf in chunk.buffers():
            if buf is not None and not mapped_memory(buf.address, buf.size):
                raise InvalidArrayError(
                    f"Cannot read this {what} through {PROTOCOL}: it declares "
                    f"{len(chunk)} values of {chunk.type} from offset {chunk.offset}, whose "
                    f"{buf.size} bytes at {buf.address:#x} reach memory that is not mapped: "
                    "its length or offset is corrupt.\nCheck the producer's export."
                )


def _column(data: Any, name: Any, producer: str) -> Any:
    """A column of the snapshot: a :class:`CapsuleColumn`; a list column (ragged) as the
    pyarrow array the ragged form converts."""
    return data if _arrow().ragged(data.type) else CapsuleColumn(data, name, producer)


def snapshot(obj: Any) -> Any:
    """A producer's answer, asked once: a struct as ``{name: column}`` in column order (the
    columns no array holds refused, all named), anything else as one column; a
    :class:`CapsuleColumn` as it is."""
    arrow = _arrow()

    if type(obj) is CapsuleColumn:
        return obj
    import pyarrow as pa

    producer = _producer(obj)  # "duckdb DuckDBPyRelation": "Cannot convert this ..."
    data = _read(obj, producer)
    if not pa.types.is_struct(data.type):
        if arrow.element(data.type) is None and not arrow.ragged(data.type):
            kind, advice = arrow.why_not(data.type)
            raise unsupported(f"this {producer}", kind, f"{advice[0].upper()}{advice[1:]}.")
        if isinstance(data, pa.ChunkedArray) and data.num_chunks == 1:
            data = data.chunk(0)  # a column in one chunk holds that Array
        return _column(data, None, producer)
    # Null rows of a struct make nulls of its fields (pyarrow's flatten merges them).
    if isinstance(data, pa.ChunkedArray):
        table = pa.Table.from_struct_array(data)
    else:
        table = pa.RecordBatch.from_struct_array(data)
    names = table.schema.names
    columns = [table.column(i) for i in range(table.num_columns)]
    refuse_columns(
        ((n, *arrow.why_not(c.type)) for n, c in zip(names, columns, strict=True)
         if arrow.element(c.type) is None and not arrow.ragged(c.type)), producer,
    )  # fmt: skip
    held = [c.chunk(0) if getattr(c, "num_chunks", 0) == 1 else c for c in columns]
    return columns_dict(
        names, [_column(c, n, producer) for n, c in zip(names, held, strict=True)], producer
    )


def name_of(col: CapsuleColumn) -> str:
    """The column in words."""
    if col.name is None:
        return f"this Arrow array of a {col.producer}"
    return f"column {col.name!r} of a {col.producer}"


def readonly(col: CapsuleColumn) -> bool:
    """Whether a column's memory (one chunk, no nulls, not bits) cannot be written: asked
    of its pages once per column."""
    arrow = _arrow()

    found = col._readonly
    if found is None:
        arr = col.data  # one chunk: an Array (see snapshot)
        dtype, dims = arrow.element(arr.type)
        nbytes = len(arr) * ITEMSIZE[dtype] * math.prod(dims)
        found = col._readonly = not writable_memory(arrow.address(arr), nbytes)
    return found


def describe(col: CapsuleColumn) -> TensorInfo:
    """A column described as pyarrow's own, read-only by its pages."""
    arrow = _arrow()

    if type(col) is not CapsuleColumn:  # a producer: converted through its snapshot
        raise InvalidArrayError(f"An Arrow producer converts through its snapshot: {col!r}")
    info = arrow.describe(col.data)
    ro = info.readonly and readonly(col)  # pyarrow says True exactly where pages decide
    return info._replace(framework=NAME, readonly=ro)


def key(col: CapsuleColumn) -> Any:
    """Warm-path key: pyarrow's (type, nulls, chunks, read-only), read-only by its pages."""
    arrow = _arrow()

    found = arrow.key(col.data)
    if len(found) == 4 and found[3]:
        return (*found[:3], readonly(col))
    return found


def data_ptr(col: CapsuleColumn) -> int:
    """Address of the first element (of the first chunk)."""
    arrow = _arrow()

    return arrow.data_ptr(col.data)


def aligned_key(col: CapsuleColumn) -> Any:
    """key() plus whether the first element is 64-byte aligned."""
    return (*key(col), data_ptr(col) % ALIGNMENT == 0)


def astype(col: CapsuleColumn, dtype: str) -> CapsuleColumn:
    """A column cast to canonical ``dtype`` (``to(..., dtype=)``) in memory pyarrow
    allocates, keeping its chunks and nulls (see frameworks/arrow.py's ``astype``)."""
    arrow = _arrow()

    return CapsuleColumn(arrow.astype(col.data, dtype), col.name, col.producer)


def _view(col: CapsuleColumn) -> Any:
    arrow = _arrow()

    return arrow.view(col.data)


def _copy(col: CapsuleColumn) -> Any:
    arrow = _arrow()

    return arrow.copy(col.data)


def _parts(col: CapsuleColumn) -> tuple[Any, Any]:
    arrow = _arrow()

    return arrow.parts(col.data)


ACCESS = Access(view=_view, copy=_copy, parts=_parts, name=name_of)


def _imported() -> Any:
    def convert(col: CapsuleColumn) -> Any:
        return col.data

    return convert


def framework() -> FrameworkSpec:
    """Arrow producers (detected by the interface) and their columns: a source, read
    through pyarrow. Declared by exchange/protocols.py, which orders the protocols."""
    return FrameworkSpec(
        name=NAME, array_types=(f"{__name__}.CapsuleColumn",),
        describe=describe, key=key, aligned_key=aligned_key, data_ptr=data_ptr,
        dtypes=DTYPES, target=False, snapshot=snapshot, waypoint=False,
        flags=flags("pyarrow.table(obj).combine_chunks()"),
        package=Package(module="pyarrow", distribution="pyarrow", install_hint=INSTALL_HINT),
        detection=Detection(claims=speaks_arrow, protocol=PROTOCOL),
        casting=Casting(astype=astype),
    )  # fmt: skip


def converters() -> list[ConverterSpec]:
    """The column edges (exchange/columns.py), and the imported arrays into pyarrow."""
    return [
        *column_edges(NAME, ACCESS, "Arrow C stream column"),
        ConverterSpec(
            name="the imported pyarrow array",
            source=NAME,
            target="pyarrow",
            load=_imported,
            zero_copy=True,
            cost=0.5,
            accepts=Needs(no_flags=frozenset()),
            note="the pyarrow array shares the producer's buffers (nulls and chunks kept)",
        ),
    ]
