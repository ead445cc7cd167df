"""polars: DataFrames as dicts of arrays, Series as arrays.

A DataFrame converts as ``{name: array}`` in column order (its snapshot is the dict of its
Series; the container path converts each). Numeric and Boolean Series convert, and Array
(fixed-width) Series as arrays of more dims; the edges are exchange/columns.py's. A Series
in one chunk without nulls is shared through ``Series.to_numpy()`` (a read-only view); its
Arrow buffers are polars' own (``to_arrow()`` shares them). polars' allocator starts buffers
of 1000 elements and more on 64-byte boundaries (measured: 64 of 64 Series made four ways),
so JAX and TensorFlow share those; a small Series, or one made from a numpy array (which
polars shares), is as aligned as its memory is (else one copy, which explain() counts).

polars memory is not marked read-only (rule 8): it is the heap polars allocates, or memory it
shares with the Arrow data it was made from, which may be a read-only memory map
(``pl.from_arrow`` of a memory-mapped table shares it). So a Series' memory is asked once
(per Series object) whether it can be written (exchange/columns.py's ``writable_memory``);
memory that cannot is copied for torch, JAX and TensorFlow. Array Series with nulls, and the
nulls inside Arrays, are read through pyarrow.
"""

from __future__ import annotations

import sys
import weakref
from typing import Any

from interop_core.plugin import (
    ALIGNMENT,
    CPU,
    Casting,
    ConversionError,
    ConverterSpec,
    FrameworkSpec,
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
    writable_memory,
)
from . import arrow
from .numpy import aligned_empty, numpy_dtype

#: Loaded once it is imported (docs/plugins.md, "Loaded when needed").
INTEROP_ABOUT = ("polars",)

NAME = "polars"
_NAMES = {
    "Int8": "int8", "Int16": "int16", "Int32": "int32", "Int64": "int64",
    "UInt8": "uint8", "UInt16": "uint16", "UInt32": "uint32", "UInt64": "uint64",
    "Float16": "float16", "Float32": "float32", "Float64": "float64", "Boolean": "bool",
}  # fmt: skip
#: polars dtype class -> canonical dtype (filled on first use: classes of the imported polars).
_plain: dict[type, str] = {}


def element(dtype: Any) -> tuple[str, tuple[int, ...]] | None:
    """(canonical dtype, dims after the length) of a polars dtype, or None when no array
    holds it; an Array dtype adds its shape."""
    dims: tuple[int, ...] = ()
    if type(dtype).__name__ == "Array":
        dims = tuple(dtype.shape)
        while type(dtype).__name__ == "Array":
            dtype = dtype.inner
    name = _NAMES.get(type(dtype).__name__)
    return None if name is None else (name, dims)


def why_not(dtype: Any) -> tuple[str, str]:
    """What a Series of a dtype no array holds contains, and what to do."""
    kind = type(dtype).__name__
    if kind in ("String", "Categorical", "Enum", "Binary"):
        return f"{kind} values", (
            "encode them as numbers first (.cast(pl.Categorical).to_physical())"
        )
    if kind in ("Date", "Datetime", "Duration", "Time"):
        return f"{dtype} values", "take their integers first (.to_physical())"
    if kind in ("List",):
        return "lists of varying length", "make them fixed-width (.list.to_array(n)) or pad them"
    if kind in ("Struct",):
        return "structs", "unnest them into columns first (.struct.unnest())"
    return f"{dtype} values", "cast them to a numeric type first (.cast(pl.Float64))"


def name_of(s: Any) -> str:
    """The Series in words."""
    return f"column {s.name!r}" if s.name else "this polars Series"


def _refuse(s: Any) -> tuple[str, tuple[int, ...]]:
    found = element(s.dtype)
    if found is None:
        kind, advice = why_not(s.dtype)
        raise unsupported(name_of(s), kind, advice[0].upper() + advice[1:] + ".")
    return found


def _nulls(s: Any, dims: tuple[int, ...]) -> bool:
    """Nulls anywhere: the Series' own, and for an Array Series its elements' (via Arrow)."""
    if s.has_nulls():
        return True
    if not dims:
        return False
    chunks = s.get_chunks() if s.n_chunks() > 1 else [s]
    return any(arrow.has_nulls(c.to_arrow()) for c in chunks)


#: id(Series) -> (a weak reference to it, whether its memory is read-only): asked once each.
_probed: dict[int, tuple[Any, bool]] = {}


def _forget(key: int) -> Any:
    def gone(_: Any) -> None:
        _probed.pop(key, None)

    return gone


def readonly(s: Any) -> bool:
    """Whether a Series' memory (one chunk, no nulls) cannot be written: asked of the memory
    once per Series object. A Series moves to other memory in place only into memory polars
    allocates (``rechunk``, ``extend``, ``scatter``: writable), or, empty, by taking the
    chunk it is appended (which may be a read-only map): an empty one is never kept."""
    entry = _probed.get(id(s))
    if entry is not None and entry[0]() is s:
        return entry[1]
    x = _numpy_of(s, allow_copy=False)
    found = not writable_memory(x.ctypes.data, x.nbytes)
    if x.nbytes:  # (an empty Series' answer costs nothing to ask again)
        _probed[id(s)] = (weakref.ref(s, _forget(id(s))), found)
    return found


def _state(s: Any, found: tuple[str, tuple[int, ...]]) -> tuple[bool, bool, bool]:
    """(nulls, chunked, read-only memory) of a Series whose dtype converts."""
    nulls = _nulls(s, found[1])
    if s.n_chunks() > 1:
        return nulls, True, False
    return nulls, False, not nulls and found[0] != "bool" and readonly(s)


def is_frame(obj: Any) -> bool:
    """Whether ``obj`` is a DataFrame (converted through its snapshot)."""
    return isinstance(obj, sys.modules["polars"].DataFrame)  # imported: obj is its object


def key(s: Any) -> Any:
    """Warm-path key: the dtype (its class, for all but Array), nulls, chunks, read-only.
    (Never asked of a DataFrame: it converts through its snapshot.)"""
    if type(s) is _wrapped:  # polars' own Series: asked through its Rust series
        inner = s._s
        dtype, chunks, nulls = inner.dtype(), inner.n_chunks(), inner.has_nulls()
    else:
        _check_wrapped()
        dtype, chunks, nulls = s.dtype, s.n_chunks(), s.has_nulls()
    cls = type(dtype)
    name = _plain.get(cls)
    if name is None:
        found = element(dtype)
        if found is None:
            return (dtype,)  # nothing converts it: the slow path says why
        if not found[1]:
            _plain[cls] = found[0]
            return (cls, *_state(s, found))
        # An Array column by its element dtype and dims, never its widths (a key must not
        # read the shape: one per width would grow the plan cache without bound).
        return ((found[0], len(found[1])), *_state(s, found))
    # The common case spelled out (a call less on every warm conversion).
    if chunks > 1:
        return (cls, nulls, True, False)
    return (cls, nulls, False, not nulls and name != "bool" and readonly(s))


#: polars' Series class, when the Rust series it wraps (``Series._s``) answers ``dtype()``,
#: ``n_chunks()``, ``has_nulls()`` and ``to_numpy_view()`` as the Series' own methods do
#: (one-line calls of it): asked directly, it saves ~0.2-0.9 us a question, the public
#: wrappers costing more than the answers. Checked on first use (False when it does not);
#: a subclass, which may override the methods, is asked through them.
_wrapped: Any = None


def _check_wrapped() -> None:
    """Set ``_wrapped`` once: polars' Series class if its Rust series answers as checked."""
    global _wrapped
    if _wrapped is not None:
        return
    series = sys.modules["polars"].Series  # imported: a Series is being converted
    try:
        plain, nulls = series([1.0, 2.0]), series([1.0, None])
        inner = plain._s
        asked = (inner.dtype(), inner.n_chunks(), inner.has_nulls(), nulls._s.has_nulls())
        same = asked == (plain.dtype, plain.n_chunks(), False, True)
        same = same and inner.to_numpy_view().ctypes.data == plain.to_numpy().ctypes.data
    except Exception:  # another polars: the public methods are asked
        same = False
    _wrapped = series if same else False


def _address(s: Any) -> int:
    """Address of a plain Series' first element (0 when empty)."""
    return int(_numpy_of(s, allow_copy=False).ctypes.data) if len(s) else 0


def describe(s: Any) -> TensorInfo:
    """Describe a Series without converting it."""
    if is_frame(s):
        raise ConversionError(
            "A polars DataFrame converts column by column: to(df, target) gives a dict."
        )
    found = _refuse(s)
    nulls, chunked, ro = _state(s, found)
    flags_ = {n for n, on in ((NULLS, nulls), (CHUNKED, chunked)) if on}
    if found[0] == "bool":
        flags_.add(PACKED)
    at = _address(s) if not flags_ else 0
    shape = (len(s), *found[1])
    return TensorInfo(NAME, found[0], CPU, shape, "C", ro, at % ALIGNMENT == 0, frozenset(flags_))


def aligned_key(s: Any) -> Any:
    """key() plus whether the first element is 64-byte aligned."""
    return (*key(s), data_ptr(s) % ALIGNMENT == 0)


def data_ptr(s: Any) -> int:
    """Address of the first element (0 when the Series is not one plain chunk)."""
    found = element(s.dtype)
    if found is None or found[0] == "bool" or s.n_chunks() != 1 or _nulls(s, found[1]):
        return 0
    return _address(s)


#: (polars' Series class, its ``to_numpy`` as polars defines it): filled on first use.
_to_numpy: tuple[type, Any] | None = None


def _numpy_of(s: Any, allow_copy: bool = True) -> Any:
    """``s.to_numpy(allow_copy=)``, without the decorator polars wraps it in to refuse
    parameters it removed (~1.3 us a call: more than the view itself). A subclass of
    Series, which may override the method, is asked through its own."""
    global _to_numpy
    if _to_numpy is None:
        series = sys.modules["polars"].Series  # imported: s is its object
        method = series.to_numpy
        _to_numpy = (series, getattr(method, "__wrapped__", method))
    if type(s) is _to_numpy[0]:
        return _to_numpy[1](s, allow_copy=allow_copy)
    return s.to_numpy(allow_copy=allow_copy)


def view(s: Any) -> Any:
    """polars' own read-only numpy view of a Series in one chunk without nulls, of a dtype
    it shares (zero-copy: tests check the pointers; ``allow_copy=False`` would cost 0.3 us
    a call to say so again)."""
    found = s._s.to_numpy_view() if type(s) is _wrapped else None  # None: not viewable
    return _numpy_of(s) if found is None else found


def copy(s: Any) -> Any:
    """A Series without nulls as one C-contiguous, 64-byte aligned array."""
    import numpy as np

    name, dims = _refuse(s)
    out = aligned_empty((len(s), *dims), numpy_dtype(name))
    start = 0
    for chunk in s.get_chunks() if s.n_chunks() > 1 else [s]:
        np.copyto(out[start : start + len(chunk)], chunk.to_numpy())
        start += len(chunk)
    return out


def parts(s: Any) -> tuple[Any, Any]:
    """(values, valid) of a Series with nulls (see exchange/columns.py's Access)."""
    name, dims = _refuse(s)
    if dims:  # nulls may lie inside the Arrays: Arrow's bitmaps say where
        return arrow.parts(arrow.ArrowColumn(s.name, s.to_arrow()))
    filled = s.fill_null(False if name == "bool" else 0)
    return filled.to_numpy(), s.is_not_null().to_numpy()


ACCESS = Access(view=view, copy=copy, parts=parts, name=name_of)


def astype(s: Any, dtype: str) -> Any:
    """A Series cast to canonical ``dtype`` (``to(..., dtype=)``). One chunk without nulls
    is cast as numpy casts (any cast goes: the user asked for it) into 64-byte aligned
    memory that the new Series shares; otherwise polars casts it (keeping chunks and
    nulls, refusing values the dtype cannot hold)."""
    import numpy as np
    import polars as pl

    name, dims = _refuse(s)
    if s.n_chunks() == 1 and not _nulls(s, dims) and name != "bool" and dtype != "bool":
        out = aligned_empty((len(s), *dims), numpy_dtype(dtype))
        np.copyto(out, view(s), casting="unsafe")
        return pl.Series(s.name, out)
    target = getattr(pl, {v: k for k, v in _NAMES.items()}[dtype])
    if dims:
        target = pl.Array(target, dims)
    return s.cast(target, strict=True)


def snapshot(obj: Any) -> Any:
    """A DataFrame as ``{name: Series}`` in column order (refusing the columns no array
    holds, all named); a Series as it is."""
    if not is_frame(obj):
        return obj
    columns = obj.get_columns()
    refuse_columns(
        ((s.name, *why_not(s.dtype)) for s in columns if element(s.dtype) is None),
        "polars DataFrame",
    )
    return columns_dict([s.name for s in columns], columns, "polars DataFrame")


def example(values: Any, dtype: str) -> Any:
    """A polars Series of ``values`` (nested lists, as the conformance kit builds them): an
    ``Array`` column for each dim after the first, in one chunk polars allocates."""
    import polars as pl

    # Over Arrow's own (64-byte aligned) buffer, so routes into JAX and TensorFlow are the
    # same every run (the doctor's matrix prints them).
    return pl.Series("example", arrow.example(values, dtype))


@hookimpl
def interop_frameworks() -> list[FrameworkSpec]:
    """polars' DataFrames and Series, sources converted through numpy views."""
    return [
        FrameworkSpec(
            name=NAME, array_types=("polars.Series", "polars.DataFrame"),
            describe=describe, key=key, aligned_key=aligned_key, data_ptr=data_ptr,
            dtypes=DTYPES, target=False, snapshot=snapshot, flags=flags("rechunk()"),
            example=example,
            package=Package(module="polars", distribution="polars", install_hint=INSTALL_HINT),
            casting=Casting(astype=astype),
        )
    ]  # fmt: skip


@hookimpl
def interop_converters() -> list[ConverterSpec]:
    """The column edges (exchange/columns.py) of polars Series."""
    return column_edges(NAME, ACCESS, "polars Series")
