"""Columns of tables (Arrow, polars, pandas) as arrays: what every column source shares.

Each library's plugin (frameworks/arrow.py, polars.py, pandas.py) declares a source-only
framework for its columns, describing one without converting it, and a snapshot that turns a
table into a plain dict ``{name: column}`` in column order: the container path then converts
each column, and ``explain()`` gives a route per column. This module makes the edges of a
column source (:func:`column_edges`) from four functions of its plugin (:class:`Access`):

- a column without nulls in one chunk is shared: a read-only numpy view; a torch tensor over
  the same memory; a jax.Array or tf.Tensor over it when 64-byte aligned (the frameworks'
  import rules say so; else a route through a numpy copy, which explain() counts);
- several chunks, and Arrow's bit-packed booleans, are one copy into aligned memory;
- a column with nulls converts only with ``nulls="fill"`` (and ``fill_value=``) or
  ``nulls="mask"``: one copy with the nulls set (to ``fill_value``, or to zero beside a mask
  that is True where the column has a value); without it the error names the column.

Table memory is immutable by convention (as JAX's is): torch, which cannot mark a tensor
read-only, gets a writable alias, and explain() says so. Memory marked read-only in the sense
of rule 8 (a read-only memory map, a Python ``bytes``: see each plugin's ``readonly``) is
copied for torch, JAX and TensorFlow instead (``copy=False`` raises).
"""

from __future__ import annotations

import contextlib
import ctypes
import mmap
import numbers
import sys
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from interop_core.plugin import (
    ArrayEdge,
    CallContext,
    ConversionError,
    ConverterSpec,
    Flag,
    InvalidArrayError,
    Needs,
    OptionError,
)

from ..frameworks.numpy import aligned_empty
from .dlpack import spend_readonly_warning, tf_importer

#: Flags of a column node: it has nulls; it lies in several chunks; its booleans are bits.
NULLS = "nulls"
CHUNKED = "chunked"
PACKED = "bit_packed"
#: The options every column edge takes (so a table's call may pass them for all columns).
OPTIONS = ("nulls", "fill_value")


def check_options(options: Mapping[str, Any]) -> None:
    """The values given for :data:`OPTIONS` (the ragged edges take them too), checked when
    the route is found (to() and explain() alike): a value of another type is refused,
    never read as true or false."""
    if "nulls" in options and options["nulls"] not in ("fill", "mask", None):
        raise OptionError(
            f"nulls={options['nulls']!r} is not one of 'fill' or 'mask': nulls='fill' with "
            "fill_value= sets each null to that value, nulls='mask' gives (values, mask)."
        )
    if "fill_value" in options and not _scalar(options["fill_value"]):
        raise OptionError(
            f"fill_value={options['fill_value']!r} is not one number or bool: pass the value "
            "the padding (ragged='pad') or each null (nulls='fill') becomes, e.g. "
            "fill_value=0."
        )


def _scalar(value: Any) -> bool:
    """Whether ``value`` is one number or bool (a Python or numpy scalar, a 0-d array)."""
    if isinstance(value, (bool, numbers.Number)):
        return True
    kind = getattr(getattr(value, "dtype", None), "kind", None)
    return kind is not None and kind in "biufc" and getattr(value, "ndim", None) == 0


#: The canonical dtypes a column converts as (no strings, dates, decimals, dictionaries).
DTYPES = frozenset({
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64",
})  # fmt: skip
#: Where a column with nulls goes in one step (its values and mask made, then handed on).
NULL_TARGETS = ("numpy", "torch", "jax", "tensorflow")
INSTALL_HINT = "pip install 'interop-core[tables]'"

_ALIAS = (
    "the torch tensor is a writable alias of the column's memory, which the table treats as "
    "immutable: writing to it changes the column (and every table sharing it)"
)
_NULLS_NOTE = (
    "nulls='fill' sets each null to fill_value=; nulls='mask' gives (values, mask), the mask "
    "True where the column has a value and the values 0 at its nulls; without nulls= to() "
    "raises naming the column"
)


class Access:
    """How a plugin reads its columns, for the edges :func:`column_edges` makes. (A plain
    class: a NamedTuple costs every first call ~0.2 ms to make, and nothing unpacks it.)"""

    __slots__ = ("copy", "name", "parts", "view")

    def __init__(
        self,
        view: Callable[[Any], Any],
        copy: Callable[[Any], Any],
        parts: Callable[[Any], tuple[Any, Any]],
        name: Callable[[Any], str],
    ) -> None:
        #: A read-only numpy view of a column without nulls in one chunk (never a copy);
        #: its shape is the column's (length, then the dims of a fixed-size list).
        self.view = view
        #: A column without nulls as one C-contiguous, 64-byte aligned numpy array (chunks
        #: joined, bits unpacked).
        self.copy = copy
        #: ``(values, valid)``: numpy arrays of the column's shape, ``valid`` True where the
        #: column has a value (``values`` may share memory; anything may stand at the nulls).
        self.parts = parts
        #: The column in words, for messages: "column 'price'", "this Arrow array".
        self.name = name


def flags(chunks: str) -> tuple[Flag, ...]:
    """The flags a column source declares; ``chunks`` says how its user joins chunks."""
    return (
        Flag(NULLS, "the column has nulls, which no array holds: pass nulls='fill' with "
             "fill_value=, or nulls='mask' for (values, mask)"),
        Flag(CHUNKED, f"the column lies in several chunks, so one array of it is a copy "
             f"({chunks} makes one chunk)"),
        Flag(PACKED, "the column holds booleans one bit each, so an array of bools is a "
             "copy that unpacks them"),
    )  # fmt: skip


def unsupported(name: str, kind: str, advice: str) -> ConversionError:
    """The error for a column no array can hold."""
    return ConversionError(
        f"Cannot convert {name}: it holds {kind}, not numbers or booleans.\n{advice}"
    )


def refuse_columns(found: Iterable[tuple[str, str, str]], what: str) -> None:
    """Raise one error naming every column of a table that no array can hold, given as
    (name, what it holds, advice)."""
    found = list(found)
    if not found:
        return
    lines = [f"  {name!r}: {kind}; {advice}" for name, kind, advice in found]
    raise ConversionError(
        f"Cannot convert this {what}: {len(found)} column(s) hold neither numbers nor "
        f"booleans.\n" + "\n".join(lines) + "\nDrop or convert them first (to() converts a "
        "table column by column, each to one array)."
    )


#: What every NaN column name counts as (NaN equals nothing, itself included).
_NAN = object()


def _nan(name: Any) -> bool:
    try:
        return bool(name != name)
    except Exception:  # a name whose comparison fails or is no bool: not a NaN
        return False


def columns_dict(names: list[Any], columns: list[Any], what: str) -> dict[Any, Any]:
    """``{name: column}`` in column order. A name met twice would lose a column, or keep
    two no one can tell apart (two NaN names, which a dict keeps as two keys that
    ``d[nan]`` finds neither of): refused, NaN names counting as one name."""
    keys = [_NAN if _nan(n) else n for n in names]
    if len(set(keys)) != len(keys):
        seen: dict[Any, int] = {}
        for k in keys:
            seen[k] = seen.get(k, 0) + 1
        twice = ", ".join(repr(float("nan") if k is _NAN else k) for k, c in seen.items() if c > 1)
        raise InvalidArrayError(
            f"Cannot convert this {what}: the column name(s) {twice} appear more than once "
            "(NaN names count as one), and a dict of its columns keeps one value per name: "
            "a column would be lost or could not be told apart.\nRename the columns first "
            "(each name once)."
        )
    return dict(zip(names, columns, strict=True))


# -- what a column's memory allows -------------------------------------------------------

#: madvise(MADV_POPULATE_WRITE) (Linux 5.14): fails on memory that cannot be written (a
#: read-only memory map) without writing anything (it faults the pages in writable).
_POPULATE_WRITE = 23
_madvise: Any = None


def _load_madvise() -> Any:
    """The probe, checked once on writable memory (an older kernel refuses the advice with
    the same errno as read-only memory); False where it does not work."""
    global _madvise
    if _madvise is None:
        _madvise = False
        if sys.platform.startswith("linux"):
            with contextlib.suppress(Exception):
                fn = ctypes.CDLL(None, use_errno=True).madvise
                fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
                fn.restype = ctypes.c_int
                probe = mmap.mmap(-1, mmap.PAGESIZE)
                address = ctypes.addressof(ctypes.c_char.from_buffer(probe))
                if fn(address, mmap.PAGESIZE, _POPULATE_WRITE) == 0:
                    _madvise = fn
    return _madvise


def writable_memory(address: int, nbytes: int) -> bool:
    """Whether the memory at ``address`` can be written (its first and last page): False
    for a read-only memory map, and wherever the probe cannot tell."""
    if nbytes <= 0:
        return True  # nothing to write
    probe = _load_madvise()
    if not probe:
        return False
    page = mmap.PAGESIZE
    first, last = address // page * page, (address + nbytes - 1) // page * page
    return all(probe(p, page, _POPULATE_WRITE) == 0 for p in dict.fromkeys((first, last)))


_mincore: Any = None


def _load_mincore() -> Any:
    """libc's mincore, or False where there is none to call."""
    global _mincore
    if _mincore is None:
        _mincore = False
        with contextlib.suppress(Exception):
            fn = ctypes.CDLL(None, use_errno=True).mincore
            fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
            fn.restype = ctypes.c_int
            _mincore = fn
    return _mincore


def mapped_memory(address: int, nbytes: int) -> bool:
    """Whether the first and last page of ``nbytes`` at ``address`` are mapped in this
    process (mincore fails on an unmapped page, touching nothing): False means a read there
    would crash. True wherever the probe cannot tell, and for no bytes."""
    if nbytes <= 0:
        return True
    if address <= 0 or address + nbytes >= 1 << 63:
        return False
    probe = _load_mincore()
    if not probe:
        return True
    page = mmap.PAGESIZE
    first, last = address // page * page, (address + nbytes - 1) // page * page
    if last - first < len(_SEEN) * page:  # the whole span in one call
        return bool(probe(first, last - first + page, _SEEN) == 0)
    return probe(first, page, _SEEN) == 0 and probe(last, page, _SEEN) == 0


#: mincore's answer, one byte per page asked (read by no one: only its success counts).
_SEEN = ctypes.create_string_buffer(4096)


class _Interface:
    """An ``__array_interface__`` over another array's memory, holding that array."""

    __slots__ = ("__array_interface__", "base")
    __array_interface__: dict[str, Any]
    base: Any


def writable(x: Any) -> Any:
    """``x``, or a writable numpy alias of it when it is marked read-only by convention
    (an Arrow or polars view): DLPack exports of read-only numpy arrays are refused, and the
    edges that call this refuse memory that is read-only in rule 8's sense."""
    import numpy as np

    if x.flags.writeable:
        return x
    held = _Interface()
    held.__array_interface__ = {
        "data": (x.ctypes.data, False), "shape": x.shape, "typestr": x.dtype.str,
        "strides": x.strides, "version": 3,
    }  # fmt: skip
    held.base = x
    return np.asarray(held)


# -- loaders ---------------------------------------------------------------------------


def _load_numpy(access: Access) -> Callable[[Any], Any]:
    view = access.view

    def convert(col: Any) -> Any:
        x = view(col)
        if x.flags.writeable:  # np.frombuffer of a mutable Arrow buffer
            x = x.view()
            x.flags.writeable = False
        return x

    return convert


def _load_torch(access: Access) -> Callable[[Any], Any]:
    import torch

    spend_readonly_warning()  # the route's note says the tensor aliases the column
    from_numpy, view = torch.from_numpy, access.view

    def convert(col: Any) -> Any:
        return from_numpy(view(col))

    return convert


def _load_jax(access: Access) -> Callable[[Any], Any]:
    import jax.dlpack

    from ..frameworks.jax import host_importer  # a call without JAX never imports it

    imported = host_importer()
    from_dlpack, view = jax.dlpack.from_dlpack, access.view

    def convert(col: Any) -> Any:
        x = writable(view(col))
        if imported is None or not x.size:  # no bytes: JAX's own call takes any address
            return from_dlpack(x)
        return imported(x.__dlpack__())

    return convert


def _load_tf(access: Access) -> Callable[[Any], Any]:
    from_dlpack, view = tf_importer(), access.view

    def convert(col: Any) -> Any:
        return from_dlpack(writable(view(col)).__dlpack__())  # a legacy capsule, as TF takes

    return convert


def fill_scalar(value: Any, dtype: Any, name: str) -> Any:
    """``fill_value`` as a scalar of ``dtype``; a value the dtype cannot hold exactly (a
    float in an integer column, 300 in uint8) is refused: values never change silently."""
    import numpy as np

    given = np.asarray(value)
    if given.ndim or given.dtype.kind not in "biuf":
        raise OptionError(
            f"fill_value={value!r} for {name} must be one number or bool (its dtype is {dtype})."
        )
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        cast = given.astype(dtype)
        if dtype.kind == "f":  # a float narrows as a float does; only overflow is refused
            fits = bool(np.isfinite(cast) or not np.isfinite(given))
        else:
            fits = given.dtype.kind != "f" or bool(np.isfinite(given))
            fits = fits and bool(cast.astype(given.dtype) == given)
    if not fits:
        raise OptionError(
            f"fill_value={value!r} does not fit {name} (dtype {dtype}): pass a value that "
            "dtype holds exactly."
        )
    return cast


def _load_nulls(access: Access) -> Callable[[Any, CallContext], Any]:
    import numpy as np

    parts, name_of = access.parts, access.name

    def convert(col: Any, ctx: CallContext) -> Any:
        mode = ctx.option("nulls")
        name = name_of(col)
        if mode is None:
            raise ConversionError(
                f"Cannot convert {name}: it has nulls, which no array holds.\nPass "
                "nulls='fill' with fill_value= (each null becomes that value), or "
                "nulls='mask' for a (values, mask) pair, the mask True where the column has a "
                "value; or fill or drop the nulls in the table first."
            )
        if mode not in ("fill", "mask"):
            raise OptionError(f"nulls={mode!r} is not one of 'fill' or 'mask' (for {name}).")
        values, valid = parts(col)
        if mode == "fill" and "fill_value" not in ctx.options:
            raise OptionError(
                f"nulls='fill' needs fill_value= ({name} has nulls): the value each null "
                "becomes, e.g. fill_value=0."
            )
        if mode == "fill":
            value = fill_scalar(ctx.options["fill_value"], values.dtype, name)
        else:
            value = np.zeros((), values.dtype)  # a null's value beside the mask: 0 (False)
        out = aligned_empty(values.shape, values.dtype)  # the one copy
        np.copyto(out, values)
        np.copyto(out, value, where=~valid)

        def to(x: Any) -> Any:
            return ctx.to(x, ctx.target, device=ctx.device)

        if mode == "fill":
            return to(out)
        mask = aligned_empty(valid.shape, np.bool_)
        np.copyto(mask, valid)
        return (to(out), to(mask))

    return convert


# -- the edges -------------------------------------------------------------------------


def column_edges(source: str, access: Access, what: str) -> list[ConverterSpec]:
    """The edges of the column source ``source`` (``what``: its columns in a step's name,
    "Arrow column")."""
    plain = Needs(no_flags=frozenset({NULLS, CHUNKED, PACKED}))
    # JAX and TensorFlow never get memory read-only in rule 8's sense (a donated buffer
    # would be written); the numpy -> jax/tf rows refuse it alike.
    shared = Needs(no_flags=frozenset({NULLS, CHUNKED, PACKED}), no_readonly=True)
    whole = frozenset({NULLS})
    edges = [
        ConverterSpec(
            name=f"{what} as a numpy view", source=source, target="numpy",
            load=lambda: _load_numpy(access), zero_copy=True, accepts=plain, cost=0.6,
            options=OPTIONS, validate=check_options,
            note="the numpy result is a read-only view of the column",
            array=ArrayEdge(readonly_result=True, memory_note=True),
        ),
        ConverterSpec(
            name=f"torch.from_numpy({what} view)", source=source, target="torch",
            load=lambda: _load_torch(access), zero_copy=True, accepts=plain, cost=1.2,
            options=OPTIONS, validate=check_options, note=_ALIAS, array=ArrayEdge(memory_note=True),
        ),
        ConverterSpec(
            name=f"jax DLPack import ({what} view)", source=source, target="jax",
            load=lambda: _load_jax(access), zero_copy=True, accepts=shared, cost=8.0,
            options=OPTIONS, validate=check_options,
        ),
        ConverterSpec(
            name=f"tf from_dlpack({what} view)", source=source, target="tensorflow",
            load=lambda: _load_tf(access), zero_copy=True, accepts=shared, cost=2.0,
            options=OPTIONS, validate=check_options,
        ),
        ConverterSpec(
            name=f"concatenate {what} chunks", source=source, target="numpy",
            load=lambda: access.copy, zero_copy=False, cost=2.0, options=OPTIONS,
            validate=check_options,
            accepts=Needs(flags=frozenset({CHUNKED}), no_flags=whole),
        ),
        ConverterSpec(
            name=f"unpack {what} booleans", source=source, target="numpy",
            load=lambda: access.copy, zero_copy=False, cost=2.0, options=OPTIONS,
            validate=check_options,
            accepts=Needs(flags=frozenset({PACKED}), no_flags=whole | {CHUNKED}),
        ),
    ]  # fmt: skip
    edges += [
        ConverterSpec(
            name=f"{what} with nulls (nulls=) into {target}", source=source, target=target,
            load=lambda: _load_nulls(access), zero_copy=False, cost=3.0, options=OPTIONS,
            validate=check_options,
            context=True, accepts=Needs(flags=frozenset({NULLS}), no_flags=frozenset()),
            note=_NULLS_NOTE,
        )
        for target in NULL_TARGETS
    ]  # fmt: skip
    return edges
