"""pandas: DataFrames as dicts of arrays, Series as arrays.

A DataFrame converts as ``{name: array}`` in column order (its snapshot is the dict of its
columns; the container path converts each). A Series backed by numpy (numbers, booleans,
complex numbers) is shared through ``Series.to_numpy()``, the view pandas gives (read-only
under copy-on-write); one with Arrow or nullable dtypes (``int64[pyarrow]``, ``Int64``,
``boolean``) through Arrow (``__arrow_array__``, which shares the values), as pyarrow
columns are (frameworks/arrow.py). The edges are exchange/columns.py's.

Copy-on-write marks pandas' views read-only to keep its own semantics; the memory under them
is the block's. So read-only in rule 8's sense is what the numpy array owning the memory
says (a DataFrame over a read-only memory map or ``bytes`` is; one pandas allocated is not):
torch gets a writable alias of a writable block (explain() says writes change the frame),
and a copy of protected memory. NaN in a numpy float column is a value, as in numpy; nulls
are those of nullable and Arrow dtypes.
"""

from __future__ import annotations

import sys
from typing import Any

from interop_core.plugin import (
    ALIGNMENT,
    Casting,
    ConversionError,
    ConverterSpec,
    Diagnostics,
    Form,
    FrameworkSpec,
    Package,
    TensorInfo,
    hookimpl,
)

from ..exchange.columns import (
    DTYPES,
    INSTALL_HINT,
    Access,
    column_edges,
    columns_dict,
    flags,
    refuse_columns,
    unsupported,
)
from . import arrow
from .numpy import aligned_empty, numpy_dtype
from .numpy import describe as describe_ndarray
from .numpy import key as numpy_key

#: Loaded once it is imported (docs/plugins.md, "Loaded when needed").
INTEROP_ABOUT = ("pandas",)

NAME = "pandas"
#: numpy dtype kinds a column shares: booleans, integers, floats, complex numbers.
_KINDS = "biufc"


def _numpy(s: Any) -> bool:
    """Whether a Series is backed by a numpy array of a dtype that converts."""
    import numpy as np

    dtype = s.dtype
    return isinstance(dtype, np.dtype) and dtype.kind in _KINDS and dtype.isnative


def _arrow(s: Any) -> arrow.ArrowColumn | None:
    """A Series of an Arrow or nullable dtype as an Arrow column (sharing its values), or
    None for one that has no Arrow form."""
    if not hasattr(s.array, "__arrow_array__"):
        return None
    try:
        data = s.array.__arrow_array__()
    except Exception:  # an extension type without an Arrow form: no array holds it
        return None
    return arrow.ArrowColumn(s.name, data)


def name_of(s: Any) -> str:
    """The Series in words."""
    return f"column {s.name!r}" if s.name is not None else "this pandas Series"


def why_not(s: Any) -> tuple[str, str]:
    """What a Series no array holds contains, and what to do."""
    dtype = s.dtype
    kind = getattr(dtype, "kind", "")
    if str(dtype) in ("str", "string") or "string" in type(dtype).__name__.lower():
        return "strings", "encode them as numbers first (e.g. .astype('category').cat.codes)"
    if type(dtype).__name__ == "CategoricalDtype":
        return "categories", "convert their codes (.cat.codes)"
    if kind in "mM" and kind:
        return f"{dtype} values", "take their integers first (.astype('int64'))"
    if kind == "O":
        return "Python objects", "convert them to a numeric dtype first (pd.to_numeric)"
    return f"{dtype} values", "convert them to a numeric dtype first"


def _column(s: Any) -> arrow.ArrowColumn | None:
    """The Arrow column of a Series that converts through Arrow; None for numpy-backed
    ones; refused (named) when no array holds it."""
    if _numpy(s):
        return None
    col = _arrow(s)
    if col is None or arrow.element(col.data.type) is None:
        kind, advice = why_not(s)
        raise unsupported(name_of(s), kind, advice[0].upper() + advice[1:] + ".")
    return col


def root_readonly(x: Any) -> bool:
    """Whether the numpy array owning ``x``'s memory (the last ndarray of its bases) is
    read-only: a view pandas marks read-only over a writable block is not."""
    import numpy as np

    while isinstance(x.base, np.ndarray):
        x = x.base
    return not x.flags.writeable


def is_frame(obj: Any) -> bool:
    """Whether ``obj`` is a DataFrame (converted through its snapshot)."""
    return isinstance(obj, sys.modules["pandas"].DataFrame)  # imported: obj is its object


def describe(s: Any) -> TensorInfo:
    """Describe a Series without converting it."""
    if is_frame(s):
        raise ConversionError(
            "A pandas DataFrame converts column by column: to(df, target) gives a dict."
        )
    col = _column(s)
    if col is not None:
        return arrow.describe(col)._replace(framework=NAME)
    x = s.to_numpy()
    return describe_ndarray(x)._replace(framework=NAME, readonly=root_readonly(x))


def key(s: Any) -> Any:
    """Warm-path key: the numpy view's key and its owner's read-only bit, or the Arrow
    column's key. (Never asked of a DataFrame: it converts through its snapshot.)"""
    x = _held(s)
    if x is None and _numpy(s):
        x = s.to_numpy()
    if x is not None:
        return (numpy_key(x), root_readonly(x))
    col = _arrow(s)
    if col is None:
        return (s.dtype,)  # nothing converts it: the slow path says why
    return ("arrow", *arrow.key(col))


def aligned_key(s: Any) -> Any:
    """key() plus whether the first element is 64-byte aligned."""
    return (*key(s), data_ptr(s) % ALIGNMENT == 0)


def data_ptr(s: Any) -> int:
    """Address of the first element."""
    col = _column(s)
    return arrow.data_ptr(col) if col is not None else int(s.to_numpy().ctypes.data)


def _held(s: Any) -> Any:
    """The ndarray a numpy-backed Series of a dtype that converts holds (pandas'
    ``_values``: ``to_numpy()`` costs ~1.3 us more, to make copy-on-write's read-only view
    of it, and ``s.dtype`` ~0.3); None for any other Series (callers then ask pandas'
    public calls: an Arrow or nullable Series, a numpy subclass, another pandas version)."""
    import numpy as np

    x: Any = getattr(s, "_values", None)
    if type(x) is not np.ndarray:
        return None
    dtype = x.dtype
    return x if dtype.kind in _KINDS and dtype.isnative else None


def view(s: Any) -> Any:
    """A read-only numpy view of a numpy-backed Series (as ``to_numpy()`` gives), or the
    Arrow column's view."""
    x = _held(s)
    if x is None:
        col = _column(s)
        if col is not None:
            return arrow.view(col)
        x = s.to_numpy()
    if x.flags.writeable:  # the Series' own array: never handed out writable
        x = x.view()
        x.setflags(write=False)  # ~0.2 us less than through x.flags
    return x


def copy(s: Any) -> Any:
    """An Arrow-backed Series without nulls as one 64-byte aligned array."""
    col = _column(s)
    if col is None:  # never: numpy-backed Series have one chunk and whole bytes
        from .numpy import aligned_copy

        return aligned_copy(s.to_numpy())
    return arrow.copy(col)


def parts(s: Any) -> tuple[Any, Any]:
    """(values, valid) of a Series with nulls (always one of Arrow or nullable dtype)."""
    col = _column(s)
    if col is None:  # never: the NaN of a numpy-backed column is a value
        import numpy as np

        x = s.to_numpy()
        return x, np.ones(x.shape, np.bool_)
    return arrow.parts(col)


ACCESS = Access(view=view, copy=copy, parts=parts, name=name_of)


def astype(s: Any, dtype: str) -> Any:
    """A Series cast to canonical ``dtype`` (``to(..., dtype=)``): a numpy-backed one as
    numpy casts (any cast goes: the user asked for it) into 64-byte aligned memory the new
    Series shares; an Arrow-backed one by Arrow (frameworks/arrow.py's astype)."""
    import numpy as np
    import pandas as pd

    col = _column(s)
    if col is not None:
        cast = arrow.astype(col, dtype)
        return pd.Series(pd.arrays.ArrowExtensionArray(cast.data), name=s.name, copy=False)
    out = aligned_empty(s.shape, numpy_dtype(dtype))
    np.copyto(out, s.to_numpy(), casting="unsafe")
    return pd.Series(out, name=s.name, copy=False)


def _convertible(s: Any) -> bool:
    if _numpy(s):
        return True
    col = _arrow(s)
    return col is not None and arrow.element(col.data.type) is not None


def snapshot(obj: Any) -> Any:
    """A DataFrame as ``{name: Series}`` in column order (refusing the columns no array
    holds, all named); a Series as it is."""
    if not is_frame(obj):
        return obj
    names = list(obj.columns)
    columns = [obj.iloc[:, i] for i in range(len(names))]
    refuse_columns(
        ((n, *why_not(s)) for n, s in zip(names, columns, strict=True) if not _convertible(s)),
        "pandas DataFrame",
    )
    return columns_dict(names, columns, "pandas DataFrame")


def example(values: Any, dtype: str) -> Any:
    """A Series over numpy's 1-d example (the conformance kit's ``Form``; the doctor builds
    2-d examples, which a Series cannot hold)."""
    import pandas as pd

    from .numpy import example as numpy_example

    return pd.Series(numpy_example(values, dtype), copy=False)


@hookimpl
def interop_frameworks() -> list[FrameworkSpec]:
    """pandas' DataFrames and Series, sources converted through numpy views or Arrow."""
    return [
        FrameworkSpec(
            name=NAME, array_types=("pandas.Series", "pandas.DataFrame"),
            describe=describe, key=key, aligned_key=aligned_key, data_ptr=data_ptr,
            dtypes=DTYPES | {"complex64", "complex128"}, target=False, snapshot=snapshot,
            flags=flags("pyarrow's combine_chunks()"),
            package=Package(module="pandas", distribution="pandas", install_hint=INSTALL_HINT),
            casting=Casting(astype=astype),
            diagnostics=Diagnostics(forms=(Form("1-d Series", build=example,
                                                shapes=((6,), (4,))),)),
        )
    ]  # fmt: skip


@hookimpl
def interop_converters() -> list[ConverterSpec]:
    """The column edges (exchange/columns.py) of pandas Series."""
    return column_edges(NAME, ACCESS, "pandas Series")
