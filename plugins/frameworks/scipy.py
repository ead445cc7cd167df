"""scipy.sparse: sparse arrays and matrices as arrays of the framework "scipy".

A sparse array is an array of its framework carrying flags, as a sharded one is: "sparse"
(opaque, so no dense edge takes it), its layout ("coo", "csr"; other formats by their own
name, e.g. "csc"), "canonical" (sorted indices without duplicates), "int64_indices" (else
int32). The edges of :mod:`interop_plugins.exchange.sparse` take them. describe() and
key() check the structure first, on every call (``sparse_convert.scipy_check``): scipy
checks indices only when asked, and its own lazily computed flags run C code over them.
scipy is never imported here: detection looks for ``scipy.sparse`` in ``sys.modules``
(importing scipy does not import scipy.sparse, and a sparse matrix exists only once it is).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from interop_core.plugin import (
    ALIGNMENT,
    CPU,
    DTYPES,
    Casting,
    Devices,
    Diagnostics,
    FrameworkSpec,
    Package,
    TensorInfo,
    hookimpl,
)

#: Loaded once it is imported (docs/plugins.md, "Loaded when needed").
INTEROP_ABOUT = ("scipy.sparse",)

#: scipy.sparse computes in none of these (its kernels reject float16: "Output dtype not
#: compatible with inputs").
_NO_DTYPES = frozenset({"float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"})


def buffers(m: Any) -> tuple[Any, ...]:
    """The numpy arrays a COO or CSR matrix is made of: values first, then its indices."""
    if m.format == "csr":
        return (m.data, m.indices, m.indptr)
    if m.format == "coo":
        return (m.data, *m.coords)
    return (m.data,) if hasattr(m, "data") else ()


def _index_dtype(m: Any) -> Any:
    if m.format == "csr":
        return m.indices.dtype
    if m.format == "coo":
        return m.coords[0].dtype if m.coords else None
    return None


def _checked(m: Any) -> bool:
    """Check ``m``'s structure before anything reads its buffers (indices in range, index
    pointers, lengths, a canonical flag that claims true: InvalidArrayError otherwise, see
    ``sparse_convert.scipy_check``); whether it is canonical (sorted, no duplicates)."""
    return _scipy_check()(m)


@functools.cache
def _scipy_check() -> Callable[[Any], bool]:
    """The check, imported on first use (it imports no framework either)."""
    from ..exchange.sparse_convert import scipy_check

    return scipy_check


def key(m: Any) -> Any:
    """Warm-path key: class, format, dtype, index dtype, canonical form, read-only values.

    Every call checks the structure first (O(nnz): scipy checks indices only when asked,
    and every framework crashes or errs on wrong ones); ``has_canonical_format`` is an
    attribute of COO matrices, and a CSR matrix's is computed by the check once and kept
    (verified on each call)."""
    canonical = _checked(m)
    data = getattr(m, "data", None)
    writable = data is None or not hasattr(data, "flags") or data.flags.writeable
    return (type(m), m.format, m.dtype, _index_dtype(m), canonical, writable)


def aligned_key(m: Any) -> Any:
    """key() plus whether every buffer is 64-byte aligned."""
    return (*key(m), _aligned(m))


def _aligned(m: Any) -> bool:
    return all(b.ctypes.data % ALIGNMENT == 0 for b in buffers(m))


def flags(m: Any, canonical: bool | None = None) -> frozenset[str]:
    """The flags of a sparse array (see the module's docstring); ``canonical`` as the
    check found it (checked here when not given)."""
    fmt = m.format
    out = {"sparse", fmt}
    if canonical is None:
        canonical = _checked(m)
    if fmt in ("coo", "csr") and canonical:
        out.add("canonical")
    if str(_index_dtype(m)) == "int64":
        out.add("int64_indices")
    return frozenset(out)


def describe(m: Any) -> TensorInfo:
    """Describe a scipy sparse array or matrix (values dtype, shape; host memory), its
    structure checked first."""
    canonical = _checked(m)
    data = getattr(m, "data", None)
    readonly = bool(data is not None and hasattr(data, "flags") and not data.flags.writeable)
    return TensorInfo(
        framework="scipy",
        dtype=str(m.dtype),
        device=CPU,
        shape=tuple(m.shape),
        layout="C",
        readonly=readonly,
        aligned=_aligned(m),
        flags=flags(m, canonical),
        stored=_stored(m),
    )


def _stored(m: Any) -> int:
    """Bytes the numpy arrays of ``m`` hold (values, indices); -1 for LIL and DOK, whose
    entries are Python objects."""
    if m.format in ("lil", "dok"):
        return -1
    names = ("data", "indices", "indptr", "offsets")
    parts: list[Any] = [getattr(m, name) for name in names if hasattr(m, name)]
    parts += list(getattr(m, "coords", ()))
    return sum(int(p.nbytes) for p in parts)


def data_ptr(m: Any) -> int:
    """Address of the first stored value."""
    return int(m.data.ctypes.data)


def astype(m: Any, dtype: str) -> Any:
    """``m`` cast to canonical ``dtype`` (``to(..., dtype=)``): a new matrix, same structure."""
    return m.astype(dtype)


@hookimpl
def interop_frameworks() -> list[FrameworkSpec]:
    """scipy.sparse: sparray and spmatrix (COO and CSR convert; other formats densify)."""
    return [
        FrameworkSpec(
            name="scipy",
            aliases=("scipy.sparse",),
            array_types=("scipy.sparse.sparray", "scipy.sparse.spmatrix"),
            describe=describe,
            key=key,
            aligned_key=aligned_key,
            data_ptr=data_ptr,
            example=None,
            dtypes=frozenset(DTYPES) - _NO_DTYPES,
            # Looked for only once scipy.sparse is imported (``module``); resolving these
            # never imports it (detection reads module dicts, not attributes). No dense
            # example: scipy holds sparse arrays only, so the dense conformance matrix (every
            # pair zero-copy) does not apply to it.
            package=Package(
                module="scipy.sparse", distribution="scipy", install_hint="pip install scipy"
            ),
            devices=Devices(kinds=("cpu",)),
            casting=Casting(astype=astype),
            diagnostics=Diagnostics(constructor="scipy.sparse.coo_array"),
        )
    ]
