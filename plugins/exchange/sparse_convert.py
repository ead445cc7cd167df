"""Sparse arrays between scipy.sparse, torch, JAX and TensorFlow: the converters.

The edges declared in :mod:`.sparse`. scipy.sparse is the hub on the host: every framework's
COO/CSR array becomes a scipy array sharing its buffers (numpy views), and a scipy array
becomes every framework's, sharing what the target can hold as it is and copying the rest
(the edge's note says which buffer and why). Imports the frameworks inside the functions.

Every sparse array's structure is checked before any framework reads its buffers: a
scipy array's by the scipy plugin's describe() and key() (:func:`scipy_check`: every call
passes one of them, and scipy's own lazily computed flags run C code over the buffers), the
other frameworks' by :func:`checked`, which the plugin's loader wraps around every edge's
function (:func:`torch_check`, :func:`jax_check`, :func:`tf_check`). None of the four
checks its indices when an array is built (scipy checks lengths only, torch nothing with
``check_invariants=False``, JAX and TF no index values), and each crashes, corrupts memory
or answers wrongly on indices out of range, so a lie becomes an :class:`InvalidArrayError`
here: what is wrong (which array, which position) and what to do. The rules are at the
head of the "structure checks" section below.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any, NamedTuple, NoReturn

from interop_core.plugin import (
    ALIGNMENT,
    CallContext,
    ConversionError,
    CopyRequiredError,
    InvalidArrayError,
    RefusedEdge,
)

from ..frameworks.jax import x64_enabled
from ..frameworks.numpy import aligned_copy, aligned_empty

_INT32_MAX = 2**31 - 1


# -- structure checks ----------------------------------------------------------------------------
#
# What every sparse input must be, whatever the framework: index arrays of int32 or int64
# (one dimension each; CSR's two of one dtype); as many values as indices; a shape of
# dimensions >= 0; every index in [0, dim); CSR row pointers (indptr) one per row plus one,
# starting at 0, never decreasing, ending at the count of indices. A flag claiming sorted
# ("canonical", "coalesced", "has_sorted_indices", "indices_sorted") or unique indices is
# checked when it claims true: the converters and the frameworks trust it. JAX pads on
# purpose with an index equal to its dimension (``fromdense(nse=...)``): such entries are
# padding, dropped on the way out of JAX, never an error.
#
# Cost: one pass over the indices for the bounds (min and max) and, where a flag claims
# order, one comparison of each index with the one before; O(rows) for indptr.


class _Advice(NamedTuple):
    """What to do, by problem, for one framework's arrays."""

    #: An index, a length or a pointer that is wrong.
    built: str
    #: A flag that claims sorted (or unique) indices that are not.
    order: str
    #: Index arrays that are not int32 or int64 (or of two dtypes).
    dtype: str


_SCIPY = _Advice(
    built="scipy checks indices only when asked, so the arrays were changed after the "
    "matrix was built: rebuild it from valid arrays; m.check_format(full_check=True) gives "
    "scipy's own diagnosis.",
    order="The indices were changed after scipy found them sorted: call "
    "m.has_sorted_indices = False (COO: m.has_canonical_format = False), then "
    "m.sum_duplicates() to sort them and sum duplicates, and convert again.",
    dtype="Call m.check_format(full_check=True), which casts the index arrays to one "
    "integer dtype, or rebuild the matrix.",
)
_TORCH = _Advice(
    built="torch checks none of this for a tensor built with check_invariants=False: build "
    "it with check_invariants=True (torch then says what is wrong), or fix its indices.",
    order="Build it without is_coalesced=True (then .coalesce() sorts the indices and sums "
    "duplicates); a CSR tensor needs sorted, unique column indices in each row "
    "(t.to_sparse_coo().coalesce().to_sparse_csr() makes them).",
    dtype="torch sparse tensors hold int32 or int64 indices: build it from those.",
)
_JAX = _Advice(
    built="JAX checks no index values when an array is built: fix the indices (an index "
    "equal to its dimension is padding, as fromdense(nse=...) makes, and is dropped; a "
    "negative index or one past the dimension is an error).",
    order="Build it without indices_sorted=True / unique_indices=True, or from indices "
    "x.sort_indices() / x.sum_duplicates() made.",
    dtype="BCOO and BCSR hold int32 or int64 indices: build it from those.",
)
_TF = _Advice(
    built="tf.SparseTensor checks no index values when it is built: fix the indices (each "
    "row of indices lies within dense_shape, each entry >= 0).",
    order="tf.sparse.reorder sorts the indices.",
    dtype="tf.SparseTensor holds int64 indices.",
)


class _What:
    """Names the array in a refusal: formatted only when one is made (the checks run on
    every call)."""

    __slots__ = ("name", "obj")

    def __init__(self, name: Callable[[Any], str], obj: Any) -> None:
        self.name, self.obj = name, obj

    def __str__(self) -> str:
        return self.name(self.obj)


def _refuse(what: object, problem: str, fix: str) -> NoReturn:
    raise InvalidArrayError(f"{what} {problem}.\n{fix}")


def _ints(a: Any, name: str, what: object, advice: _Advice, ndim: int = 1) -> Any:
    """``a`` as a numpy array (a view where it can be), checked to be int32 or int64 of
    ``ndim`` dimensions."""
    import numpy as np

    try:
        a = np.asarray(a)
    except Exception as exc:  # an object no numpy array can be made of
        _refuse(what, f"has {name} numpy cannot read ({type(exc).__name__}: {exc})", advice.dtype)
    dtype = a.dtype
    if dtype.kind != "i" or dtype.itemsize not in (4, 8):
        _refuse(what, f"has {name} of dtype {a.dtype}: indices are int32 or int64", advice.dtype)
    if a.ndim != ndim:
        _refuse(what, f"has {name} of shape {a.shape}: a {ndim}-d array expected", advice.built)
    return a


def _count(a: Any, name: str, what: object, advice: _Advice) -> int:
    """The length of a values array (its first dimension; a 0-d one has none)."""
    shape = getattr(a, "shape", None)
    if shape is None or not len(shape):
        _refuse(what, f"has {name} of shape {shape}: one value per index expected", advice.built)
    return int(shape[0])


def _shape(shape: Any, what: object, advice: _Advice, ndim: int | None = None) -> tuple[int, ...]:
    """``shape`` as a tuple of ints >= 0 (of ``ndim`` entries when given)."""
    usual = type(shape) is tuple and (ndim is None or len(shape) == ndim)
    if usual and all(type(d) is int and d >= 0 for d in shape):
        return shape  # type: ignore[no-any-return]
    try:
        out = tuple(int(d) for d in shape)
    except (TypeError, ValueError):
        _refuse(what, f"has shape {shape!r}: a tuple of integers expected", advice.built)
    if any(d < 0 for d in out):
        _refuse(what, "has a negative dimension: dimensions are >= 0", advice.built)
    if ndim is not None and len(out) != ndim:
        _refuse(what, f"has {len(out)} dimensions: {ndim} expected", advice.built)
    return out


def _out_of_range(
    what: object,
    name: str,
    idx: Any,
    hi: int,
    advice: _Advice,
    padded: bool,
    where: Callable[[int], str] = lambda p: "",
) -> NoReturn:
    """Refuse the first index of ``idx`` outside [0, hi) ([0, hi] when ``padded``)."""
    import numpy as np

    bad = (idx < 0) | ((idx > hi) if padded else (idx >= hi))
    p = int(np.flatnonzero(bad)[0])
    span = f"[0, {hi}] (an index equal to the dimension is padding)" if padded else f"[0, {hi})"
    _refuse(
        what, f"has {name} {int(idx[p])} at position {p}{where(p)}, outside {span}", advice.built
    )


#: Up to this many entries (and rows), checks run in Python: numpy's ~1 µs a call costs more.
_SMALL = 64


def _compressed_ok(
    indptr: list[int], indices: list[int], minor: int, order: tuple[bool, bool], padded: bool
) -> bool:
    """Is this (small) CSR structure right, as :func:`_compressed` checks it? Lengths and
    the ends of ``indptr`` are checked already."""
    is_sorted, is_unique = order
    top = minor if padded else minor - 1
    start = 0
    for end in indptr[1:]:
        if end < start:
            return False
        last = -1
        for c in indices[start:end]:
            if c < 0 or c > top or (is_sorted and (c <= last if is_unique else c < last)):
                return False
            last = c
        start = end
    return True


def _coords_ok(coords: list[list[int]], shape: tuple[int, ...], order: tuple[bool, bool]) -> bool:
    """Are these (few) COO coordinates right, as :func:`_coords` checks them, and free of
    padding? Their count is checked already."""
    for c, n in zip(coords, shape, strict=True):
        if c and (min(c) < 0 or max(c) >= n):
            return False
    is_sorted, is_unique = order
    if is_sorted:
        pairs = itertools.pairwise(zip(*coords, strict=True))
        return all(a < b for a, b in pairs) if is_unique else all(a <= b for a, b in pairs)
    if is_unique:
        return len(set(zip(*coords, strict=True))) == len(coords[0])
    return True


def _in_order(coords: list[Any], strict: bool) -> int:
    """The first position whose coordinates do not follow the previous ones in row-major
    order (strictly: no duplicates), or -1."""
    import numpy as np

    if not coords or len(coords[0]) < 2:
        return -1
    last = coords[-1]
    ok = (last[1:] > last[:-1]) if strict else (last[1:] >= last[:-1])
    tmp = np.empty_like(ok)
    for c in reversed(coords[:-1]):  # lexicographic: ok = b > a | (b == a & ok), in place
        a, b = c[:-1], c[1:]
        ok &= np.equal(b, a, out=tmp)
        ok |= np.greater(b, a, out=tmp)
    if ok.all():
        return -1
    return int(np.flatnonzero(~ok)[0]) + 1


def _unique(coords: list[Any]) -> int:
    """A position whose coordinates repeat an earlier entry's, or -1 (any order)."""
    import numpy as np

    if not coords or len(coords[0]) < 2:
        return -1
    order = np.lexsort(coords[::-1])
    same = np.ones(len(order) - 1, bool)
    for c in coords:
        s = c[order]
        same &= s[1:] == s[:-1]
    bad = np.flatnonzero(same)
    return int(order[bad[0] + 1]) if len(bad) else -1


def _coords(
    what: object,
    advice: _Advice,
    coords: list[Any],
    n_values: int,
    shape: tuple[int, ...],
    order: tuple[bool, bool],
    claim: str,
    padded: bool = False,
) -> Any:
    """Check COO coordinates (one array per dimension); ``order`` says what a flag claims:
    (sorted, unique). Returns what of the entries to keep: None (all), a count (those
    before it: JAX's padding at the end) or a boolean mask (padding between entries)."""
    import numpy as np

    if len(coords) != len(shape):
        _refuse(what, f"has {len(coords)} index arrays for {len(shape)} dimensions", advice.built)
    for d, c in enumerate(coords):
        if len(c) != n_values:
            _refuse(
                what,
                f"has {len(c)} indices along axis {d} for {n_values} values: the counts must agree",
                advice.built,
            )
    if not n_values:
        return None
    if n_values <= _SMALL and _coords_ok([c.tolist() for c in coords], shape, order):
        return None  # (only accepts, as in _compressed; padding goes the numpy way)
    pad: Any = None
    for d, (c, n) in enumerate(zip(coords, shape, strict=True)):
        lo, hi = int(c.min()), int(c.max())
        if lo < 0 or hi > n or (hi == n and not padded):
            _out_of_range(what, f"axis {d} index", c, n, advice, padded)
        if hi == n:
            pad = (c == n) if pad is None else (pad | (c == n))
    keep: Any = None
    if pad is not None:
        real = int(n_values - np.count_nonzero(pad))
        keep = real if not pad[:real].any() else ~pad
        coords = [c[keep] if not isinstance(keep, int) else c[:keep] for c in coords]
    is_sorted, is_unique = order
    if is_sorted:
        p = _in_order(coords, strict=is_unique)
        if p >= 0:
            at = tuple(int(c[p]) for c in coords)
            before = tuple(int(c[p - 1]) for c in coords)
            _refuse(
                what,
                f"is marked {claim}, but entry {p} at {at} does not follow entry "
                f"{p - 1} at {before} in row-major order",
                advice.order,
            )
    elif is_unique:
        p = _unique(coords)
        if p >= 0:
            at = tuple(int(c[p]) for c in coords)
            _refuse(
                what,
                f"is marked {claim}, but entry {p} at {at} repeats an earlier one",
                advice.order,
            )
    return keep


def _compressed(
    what: object,
    advice: _Advice,
    indptr: Any,
    indices: Any,
    n_values: int,
    major: int,
    minor: int,
    order: tuple[bool, bool],
    claim: str,
    axes: tuple[str, str] = ("row", "column"),
    padded: bool = False,
) -> int:
    """Check CSR structure (CSC with ``axes`` swapped): one pointer per row plus one,
    from 0, never decreasing, to the count of indices (JAX's padding may follow it), every
    index in [0, minor); order within each row where a flag claims it. Returns the count of
    stored entries (indptr[-1])."""
    import numpy as np

    row, col = axes
    if len(indptr) != major + 1:
        _refuse(
            what,
            f"has {len(indptr)} index pointers (indptr) for {major} {row}s: {major + 1} expected",
            advice.built,
        )
    first, nnz = int(indptr[0]), int(indptr[-1])
    if first != 0:
        _refuse(what, f"has indptr starting at {first}: it starts at 0", advice.built)
    n_idx = len(indices)
    if n_values != n_idx:
        _refuse(
            what,
            f"holds {n_values} values for {n_idx} {col} indices: the counts must agree",
            advice.built,
        )
    if nnz > n_idx or (nnz != n_idx and not padded):
        _refuse(
            what,
            f"has indptr ending at {nnz} over {n_idx} {col} indices: it ends at their count",
            advice.built,
        )
    is_sorted, is_unique = order
    # Few entries: Python beats numpy's cost per call. It only accepts; what it does not,
    # the numpy path below names.
    small = n_idx <= _SMALL and major <= _SMALL
    if small and _compressed_ok(indptr.tolist(), indices.tolist(), minor, order, padded):
        return nnz
    counts = indptr[1:] - indptr[:-1]
    if major and int(counts.min()) < 0:
        r = int(np.flatnonzero(counts < 0)[0])
        _refuse(
            what,
            f"has indptr decreasing at {row} {r} (indptr[{r}] = {int(indptr[r])}, "
            f"indptr[{r + 1}] = {int(indptr[r + 1])}): it never decreases",
            advice.built,
        )
    if not nnz:
        return 0
    idx = indices[:nnz] if nnz != n_idx else indices

    def where(p: int) -> str:
        return f" ({row} {int(np.searchsorted(indptr, p, 'right')) - 1})"

    if is_sorted:
        step = (idx[1:] > idx[:-1]) if is_unique else (idx[1:] >= idx[:-1])
        _row_starts(step, indptr, nnz)
        if not step.all():
            lo, hi = int(idx.min()), int(idx.max())
            if lo < 0 or hi > minor or (hi == minor and not padded):
                _out_of_range(what, f"{col} index", idx, minor, advice, padded, where)
            p = int(np.flatnonzero(~step)[0]) + 1
            _refuse(
                what,
                f"is marked {claim}, but {col} index {int(idx[p])} at position {p}"
                f"{where(p)} follows {int(idx[p - 1])}",
                advice.order,
            )
        # Sorted rows: each row's first and last index bound it. An empty row's pointer
        # names a neighbour's entry instead (clipped into range): one that is checked too.
        lo = int(idx[np.minimum(indptr[:-1], nnz - 1)].min())
        hi = int(idx[np.maximum(indptr[1:] - 1, 0)].max())
    else:
        lo, hi = int(idx.min()), int(idx.max())
    if lo < 0 or hi > minor or (hi == minor and not padded):
        _out_of_range(what, f"{col} index", idx, minor, advice, padded, where)
    return nnz


# -- the check of each framework's arrays ------------------------------------------------------


def _scipy_name(m: Any) -> str:
    kind = "array" if type(m).__name__.endswith("_array") else "matrix"
    return f"This scipy {m.format}_{kind} of shape {getattr(m, '_shape', '?')}"


def _torch_name(t: Any) -> str:
    layout = str(t.layout).rpartition("_")[2].upper()
    return f"This torch sparse {layout} tensor of shape {tuple(t.shape)}"


def _jax_name(x: Any) -> str:
    return f"This {type(x).__name__} of shape {tuple(x.shape)}"


def _tf_name(t: Any) -> str:
    import numpy as np

    return f"This tf.SparseTensor of dense_shape {np.asarray(t.dense_shape).tolist()}"


def scipy_check(m: Any) -> bool:
    """Check a scipy sparse array or matrix (every format); True when it is a COO, CSR, CSC
    or BSR array in canonical form (sorted indices, no duplicates).

    Run by the scipy plugin's describe() and key(), so before anything reads the buffers:
    scipy's own ``has_canonical_format`` runs C code over them. A CSR array whose form
    scipy has not computed yet gets it computed here (and cached, as scipy would); one it
    has computed is verified when it claims order."""
    fmt = m.format
    what = _What(_scipy_name, m)
    if fmt in ("csr", "csc", "bsr"):
        return _scipy_compressed(m, fmt, what)
    if fmt == "coo":
        shape = _shape(m.shape, what, _SCIPY)
        coords = [_ints(c, f"axis {d} indices", what, _SCIPY) for d, c in enumerate(m.coords)]
        n = _values(m.data, what, _SCIPY)
        canonical = bool(m.has_canonical_format)
        _coords(
            what,
            _SCIPY,
            coords,
            n,
            shape,
            (canonical, canonical),
            "canonical (has_canonical_format is True)",
        )
        return canonical
    shape = _shape(m.shape, what, _SCIPY, None if fmt == "dok" else 2)
    if fmt == "dia":
        offsets = _ints(m.offsets, "offsets", what, _SCIPY)
        data: Any = getattr(m, "data", None)
        if getattr(data, "ndim", 0) != 2 or data.shape[0] != len(offsets):
            _refuse(
                what,
                f"has data of shape {getattr(data, 'shape', None)} for "
                f"{len(offsets)} diagonals: ({len(offsets)}, n) expected",
                _SCIPY.built,
            )
    elif fmt == "lil":
        _scipy_lil(m, shape, what)
    elif fmt == "dok":
        _scipy_dok(m, shape, what)
    return False


def _values(data: Any, what: object, advice: _Advice) -> int:
    """The count of a 1-d values array (refused otherwise)."""
    if getattr(data, "ndim", None) != 1:
        _refuse(
            what,
            f"has values of shape {getattr(data, 'shape', None)}: a 1-d array expected",
            advice.built,
        )
    return int(data.shape[0])


def _scipy_compressed(m: Any, fmt: str, what: object) -> bool:
    shape = _shape(m.shape, what, _SCIPY, 2)
    indptr = _ints(m.indptr, "index pointers (indptr)", what, _SCIPY)
    indices = _ints(m.indices, "indices", what, _SCIPY)
    if indptr.dtype != indices.dtype:
        _refuse(
            what,
            f"has {indices.dtype} indices and {indptr.dtype} index pointers: "
            "scipy's routines take one dtype",
            _SCIPY.dtype,
        )
    major, minor = shape if fmt != "csc" else shape[::-1]
    axes = ("row", "column") if fmt != "csc" else ("column", "row")
    if fmt == "bsr":
        data = m.data  # its shape is the block size: scipy reads it from there
        if getattr(data, "ndim", None) != 3:
            _refuse(
                what,
                f"has data of shape {getattr(data, 'shape', None)}: (blocks, rows, columns) "
                "expected",
                _SCIPY.built,
            )
        r, c = data.shape[1:]
        if r <= 0 or c <= 0 or major % r or minor % c:
            _refuse(what, f"has blocks of {r} x {c}, which do not tile it", _SCIPY.built)
        n = int(data.shape[0])
        major, minor = major // r, minor // c
        axes = ("block row", "block column")
    else:
        n = _values(m.data, what, _SCIPY)
    # What scipy has cached (its getters compute it in C over the buffers: not yet).
    known = m.__dict__
    canonical = known.get("_has_canonical_format")
    in_order = known.get("_has_sorted_indices")
    if in_order is False:
        canonical = False  # scipy's rule: not sorted, so not canonical
    if canonical:
        order, claim = (True, True), "canonical (has_canonical_format is True)"
    elif in_order:
        order, claim = (True, False), "sorted (has_sorted_indices is True)"
    else:
        order, claim = (False, False), ""
    nnz = _compressed(what, _SCIPY, indptr, indices, n, major, minor, order, claim, axes)
    if canonical is None:  # found out here, as scipy would, and kept as it keeps it
        found = _compressed_canonical(indptr, indices[:nnz])
        m.has_canonical_format = found
        canonical = found
    return bool(canonical)


def _compressed_canonical(indptr: Any, idx: Any) -> bool:
    """Are the indices of each row strictly increasing (checked structure)?"""
    if len(idx) < 2:
        return True
    if len(idx) <= _SMALL and len(indptr) <= _SMALL:
        return _compressed_ok(indptr.tolist(), idx.tolist(), 1 << 62, (True, True), False)
    step = idx[1:] > idx[:-1]
    _row_starts(step, indptr, len(idx))
    return bool(step.all())


def _row_starts(step: Any, indptr: Any, nnz: int) -> None:
    """Mark in ``step`` (index i: does entry i + 1 follow entry i in its row?) every
    entry that starts a row as following: a row may start below the last one's end.
    ``indptr`` is checked (never decreasing), so the starts strictly inside are a run."""
    import numpy as np

    starts = indptr[1:-1]
    lo, hi = np.searchsorted(starts, 0, "right"), np.searchsorted(starts, nnz, "left")
    step[starts[lo:hi] - 1] = True


def _scipy_lil(m: Any, shape: tuple[int, ...], what: object) -> None:
    """LIL: a list of column indices and one of values per row (Python lists)."""
    import numpy as np

    rows, data = m.rows, m.data
    if len(rows) != shape[0] or len(data) != shape[0]:
        _refuse(
            what,
            f"has {len(rows)} index lists and {len(data)} value lists for {shape[0]} rows",
            _SCIPY.built,
        )
    lengths = np.fromiter(map(len, rows), np.int64, count=len(rows))
    if not np.array_equal(lengths, np.fromiter(map(len, data), np.int64, count=len(data))):
        r = int(np.flatnonzero(lengths != np.fromiter(map(len, data), np.int64))[0])
        _refuse(
            what,
            f"has {len(rows[r])} column indices and {len(data[r])} values in row {r}",
            _SCIPY.built,
        )
    flat = np.array(list(itertools.chain.from_iterable(rows)))  # fromiter would truncate 0.5
    if not flat.size:
        return
    if flat.dtype.kind not in "iu" or flat.ndim != 1:
        _refuse(what, f"has column indices that read as {flat.dtype}, not integers", _SCIPY.built)
    if int(flat.min()) < 0 or int(flat.max()) >= shape[1]:
        _out_of_range(what, "column index", flat, shape[1], _SCIPY, False)


def _scipy_dok(m: Any, shape: tuple[int, ...], what: object) -> None:
    """DOK: a dict of (row, column) keys (int keys when 1-d)."""
    import numpy as np

    keys = list(dict.keys(m)) if isinstance(m, dict) else list(m.keys())
    if not keys:
        return
    try:
        coords = np.array(keys).reshape(len(keys), -1)
    except (TypeError, ValueError, OverflowError) as exc:
        coords, problem = None, str(exc)
    if coords is None or coords.dtype.kind not in "iu":
        found = problem if coords is None else f"they read as {coords.dtype}"
        _refuse(
            what, f"has keys that are no tuples of {len(shape)} integers ({found})", _SCIPY.built
        )
    if coords.shape[1] != len(shape):
        _refuse(
            what, f"has keys of {coords.shape[1]} indices for {len(shape)} dimensions", _SCIPY.built
        )
    _coords(what, _SCIPY, list(coords.T), len(keys), shape, (False, False), "")


def torch_check(t: Any, cross: bool = True) -> Any:
    """Check a torch sparse tensor; returns it. COO and (unbatched) CSR on the host by
    numpy views of the indices; other layouts and devices by torch's own invariant check
    (what check_invariants=True runs)."""
    import torch

    layout = t.layout
    what = _What(_torch_name, t)
    shape = _shape(t.shape, what, _TORCH)
    host = t.device.type == "cpu"
    if host and layout == torch.sparse_coo:
        sd = t.sparse_dim()
        idx = _ints(t._indices(), "indices", what, _TORCH, 2)
        coalesced = bool(t.is_coalesced())
        _coords(
            what,
            _TORCH,
            list(idx),
            int(t._values().shape[0]),
            shape[:sd],
            (coalesced, coalesced),
            "coalesced (is_coalesced() is True)",
        )
        return t
    if host and layout == torch.sparse_csr and t.ndim - t.dense_dim() == 2:
        crow = _ints(t.crow_indices(), "crow_indices", what, _TORCH)
        col = _ints(t.col_indices(), "col_indices", what, _TORCH)
        if crow.dtype != col.dtype:
            _refuse(
                what,
                f"has {crow.dtype} crow_indices and {col.dtype} col_indices: torch takes one dtype",
                _TORCH.dtype,
            )
        _compressed(
            what,
            _TORCH,
            crow,
            col,
            int(t.values().shape[0]),
            shape[0],
            shape[1],
            (True, True),
            "CSR (torch's invariant: sorted, unique column indices in each row)",
        )
        return t
    try:
        if layout == torch.sparse_coo:
            torch._validate_sparse_coo_tensor_args(
                t._indices(), t._values(), t.shape, t.is_coalesced()
            )
        else:
            if layout in (torch.sparse_csr, torch.sparse_bsr):
                compressed, plain = t.crow_indices(), t.col_indices()
            else:
                compressed, plain = t.ccol_indices(), t.row_indices()
            torch._validate_sparse_compressed_tensor_args(
                compressed, plain, t.values(), t.shape, layout
            )
    except RuntimeError as exc:
        _refuse(what, f"fails torch's own check: {str(exc).strip().rstrip('.')}", _TORCH.built)
    return t


class _Parts(NamedTuple):
    """A JAX sparse array's entries as numpy arrays (views where they can be), its padding
    dropped: what the edges out of JAX read."""

    layout: str
    data: Any
    #: COO: one index array per dimension; CSR: (indices, indptr).
    indices: tuple[Any, ...]
    shape: tuple[int, ...]
    canonical: bool
    #: Dropping padding between entries copied them (padding at the end is sliced off).
    copied: bool


_JAX_FLAGS = ("indices_sorted", "unique_indices")


def jax_check(x: Any, cross: bool = True) -> Any:
    """Check a BCOO or BCSR; for an edge out of JAX, its :class:`_Parts` (padding dropped),
    else the array itself. Batched and hybrid arrays (which stay in JAX) are checked for
    their index bounds; their order flags are JAX's own business."""
    import numpy as np

    kind = type(x).__name__
    what = _What(_jax_name, x)
    shape = _shape(x.shape, what, _JAX)
    order = (bool(x.indices_sorted), bool(x.unique_indices))
    claim = " and ".join(f"{n}=True" for n, on in zip(_JAX_FLAGS, order, strict=True) if on)
    if x.n_batch or x.n_dense:
        _jax_batched(x, kind, shape, what)
        return x
    data = np.asarray(x.data)
    if kind == "BCOO":
        idx = _ints(x.indices, "indices", what, _JAX, 2)
        coords = [idx[:, d] for d in range(idx.shape[1])]
        keep = _coords(
            what, _JAX, coords, _count(data, "values", what, _JAX), shape, order, claim, padded=True
        )
        if not cross:
            return x
        if keep is not None:
            data = data[:keep] if isinstance(keep, int) else data[keep]
            coords = [c[:keep] if isinstance(keep, int) else c[keep] for c in coords]
        copied = keep is not None and not isinstance(keep, int)
        return _Parts("coo", data, tuple(coords), shape, all(order), copied)
    indptr = _ints(x.indptr, "index pointers (indptr)", what, _JAX)
    indices = _ints(x.indices, "indices", what, _JAX)
    n = _count(data, "values", what, _JAX)
    nnz = _compressed(what, _JAX, indptr, indices, n, shape[0], shape[1], order, claim, padded=True)
    if not cross:
        return x
    data, indices = data[:nnz], indices[:nnz]
    pad = indices == shape[1]
    copied = bool(pad.any())
    if copied:  # padding inside rows: drop it and count each row again
        keep = ~pad
        kept = np.concatenate([np.zeros(1, indptr.dtype), np.cumsum(keep, dtype=indptr.dtype)])
        data, indices, indptr = data[keep], indices[keep], kept[indptr]
    return _Parts("csr", data, (indices, indptr), shape, all(order), copied)


def _jax_batched(x: Any, kind: str, shape: tuple[int, ...], what: object) -> None:
    """Index bounds of a batched or hybrid BCOO/BCSR (padding allowed)."""
    idx = _ints(x.indices, "indices", what, _JAX, x.indices.ndim)
    if not idx.size:
        return
    nb = x.n_batch
    if kind == "BCOO":
        for d in range(idx.shape[-1]):
            c, n = idx[..., d], shape[nb + d]
            if int(c.min()) < 0 or int(c.max()) > n:
                _out_of_range(what, f"axis {nb + d} index", c.ravel(), n, _JAX, True)
        return
    import numpy as np

    indptr = _ints(x.indptr, "index pointers (indptr)", what, _JAX, x.indptr.ndim)
    n = shape[nb + 1]
    if int(idx.min()) < 0 or int(idx.max()) > n:
        _out_of_range(what, "column index", idx.ravel(), n, _JAX, True)
    steps = np.diff(indptr, axis=-1)
    if (
        indptr.shape[-1] != shape[nb] + 1
        or (steps.size and int(steps.min()) < 0)
        or (indptr.size and (int(indptr.min()) < 0 or int(indptr.max()) > idx.shape[-1]))
    ):
        _refuse(
            what,
            "has index pointers (indptr) that do not run from 0 up to at most "
            "the count of indices, one per row plus one",
            _JAX.built,
        )


def tf_shape(t: Any) -> tuple[int, ...]:
    """A tf.SparseTensor's dense_shape, checked (dimensions >= 0): for its description."""
    import numpy as np

    return _shape(np.asarray(t.dense_shape), _What(_tf_name, t), _TF)


def tf_check(t: Any, cross: bool = True) -> Any:
    """Check a tf.SparseTensor (it claims no order); returns it."""
    what = _What(_tf_name, t)
    shape = tf_shape(t)
    idx = _ints(t.indices, "indices", what, _TF, 2)
    _coords(
        what,
        _TF,
        [idx[:, d] for d in range(idx.shape[1])],
        _count(t.values, "values", what, _TF),
        shape,
        (False, False),
        "",
    )
    return t


_CHECKS: dict[str, Callable[[Any, bool], Any]] = {
    "torch": torch_check,
    "jax": jax_check,
    "tensorflow": tf_check,
}


def checked(fn: Callable[..., Any], source: str, target: str) -> Callable[..., Any]:
    """``fn``, an edge's function, behind the check of its input (the plugin's loader wraps
    every sparse edge in it). scipy's arrays are checked when described and keyed (see
    :func:`scipy_check`), and those the edges make are right by construction; an edge out
    of JAX gets the array's :class:`_Parts`."""
    if source not in _CHECKS:
        return fn
    cross = source != target

    def run(x: Any, *rest: Any) -> Any:
        return fn(_CHECKS[source](x, cross), *rest)  # looked up: benchmarks/sparse.py swaps it

    run.__name__ = run.__qualname__ = getattr(fn, "__name__", "run")
    run.__doc__ = fn.__doc__
    return run


# -- scipy arrays over buffers -------------------------------------------------------------------


def _coo(data: Any, coords: tuple[Any, ...], shape: tuple[int, ...], canonical: bool) -> Any:
    """A scipy coo_array over ``data`` and ``coords`` (no copy), marked canonical or not.

    The buffers were checked (:func:`check`): they are set on an empty array rather than
    passed to the constructor, which would scan them again (and copy index arrays it
    prefers narrower)."""
    import scipy.sparse as sp

    m = sp.coo_array(shape, dtype=data.dtype)
    m.coords, m.data = coords, data
    m.has_canonical_format = canonical
    return m


def _csr(data: Any, indices: Any, indptr: Any, shape: tuple[int, ...], canonical: bool) -> Any:
    """A scipy csr_array over the three (checked) buffers, no copy, set as :func:`_coo`
    sets them (the constructor's prune() would copy a view of a larger buffer, and its
    index dtype rule would narrow int64 indices)."""
    import scipy.sparse as sp

    m = sp.csr_array(shape, dtype=data.dtype)
    m.data, m.indices, m.indptr = data, indices, indptr
    m.has_canonical_format = canonical
    return m


def _readonly(a: Any) -> Any:
    """A read-only view of ``a`` (memory JAX and TensorFlow treat as immutable)."""
    if a.flags.writeable:
        a = a.view()
        a.flags.writeable = False
    return a


# -- torch -> scipy ---------------------------------------------------------------------------


def torch_coo_to_scipy(t: Any) -> Any:
    """torch COO -> scipy coo_array: values and each row of the (ndim, nnz) int64 indices
    shared (numpy views); uncoalesced stays uncoalesced (both sum duplicates)."""
    indices = t._indices().numpy()
    return _coo(t._values().numpy(), tuple(indices), tuple(t.shape), bool(t.is_coalesced()))


def torch_csr_to_scipy(t: Any) -> Any:
    """torch CSR -> scipy csr_array: values, col and crow indices shared."""
    return _csr(
        t.values().numpy(), t.col_indices().numpy(), t.crow_indices().numpy(), tuple(t.shape), True
    )


# -- scipy -> torch ---------------------------------------------------------------------------


_WARNED: list[bool] = []


def _torch() -> Any:
    """torch, with its once-per-process "sparse CSR support is in beta" warning spent here
    under catch_warnings (as the dlpack plugin spends its read-only one): to() must not leak
    a framework warning (an exception under -W error), and no filter is left behind."""
    import torch

    if not _WARNED:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            z = torch.zeros(1, dtype=torch.int64)
            torch.sparse_csr_tensor(z, z[:0], torch.zeros(0), size=(0, 1), check_invariants=False)
        _WARNED.append(True)
    return torch


def scipy_csr_to_torch(m: Any) -> Any:
    """scipy CSR (canonical, writable) -> torch CSR: the three buffers shared."""
    torch = _torch()
    return torch.sparse_csr_tensor(
        torch.from_numpy(m.indptr), torch.from_numpy(m.indices), torch.from_numpy(m.data),
        size=m.shape, check_invariants=False,
    )  # fmt: skip


def scipy_csr_to_torch_copy(m: Any) -> Any:
    """scipy CSR -> torch CSR through a canonical copy (sorted, duplicates summed)."""
    m = m.copy()
    m.sum_duplicates()
    return scipy_csr_to_torch(m)


def scipy_coo_to_torch(m: Any, ctx: CallContext) -> Any:
    """scipy COO -> torch COO: the coordinates stacked into torch's (ndim, nnz) int64
    indices (a copy); the values shared unless copy=True."""
    import numpy as np

    torch = _torch()
    indices = np.stack(m.coords).astype(np.int64, copy=False) if m.nnz else None
    if indices is None:
        indices = np.zeros((len(m.shape), 0), np.int64)
    elif any(np.shares_memory(indices, c) for c in m.coords):
        indices = indices.copy()  # one coordinate array (1-D): stack may return a view
    values = m.data.copy() if ctx.copy else m.data
    return torch.sparse_coo_tensor(
        torch.from_numpy(indices), torch.from_numpy(values), m.shape,
        is_coalesced=bool(m.has_canonical_format), check_invariants=False,
    )  # fmt: skip


def scipy_coo_to_torch_copy(m: Any) -> Any:
    """scipy COO -> torch COO, the values copied too (they are read-only)."""
    import numpy as np

    torch = _torch()
    indices = np.array(np.stack(m.coords) if m.nnz else np.zeros((len(m.shape), 0)), np.int64)
    return torch.sparse_coo_tensor(
        torch.from_numpy(indices), torch.from_numpy(m.data.copy()), m.shape,
        is_coalesced=bool(m.has_canonical_format), check_invariants=False,
    )  # fmt: skip


# -- jax <-> scipy ----------------------------------------------------------------------------


def jax_to_scipy(parts: _Parts, ctx: CallContext) -> Any:
    """BCOO -> coo_array, BCSR -> csr_array: numpy views of JAX's buffers (read-only), its
    padding left out (:func:`jax_check` made the parts: padding at the end is sliced off;
    padding between entries is dropped by a copy, which copy=False refuses)."""
    if parts.copied and ctx.copy is False:
        kind = "BCOO" if parts.layout == "coo" else "BCSR"
        raise CopyRequiredError(
            f"this {kind} of shape {parts.shape}",
            [RefusedEdge(f"{kind} as scipy {parts.layout}_array", "interop_plugins.exchange."
                         "sparse", "jax->scipy", "its padding (indices equal to the shape, as "
                         "JAX pads) lies between stored entries, and only a copy drops it; "
                         "x.sum_duplicates() moves padding to the end")],
        )  # fmt: skip
    data = _readonly(parts.data)
    if parts.layout == "coo":
        coords = tuple(_readonly(c) for c in parts.indices)
        return _coo(data, coords, parts.shape, parts.canonical)
    indices, indptr = (_readonly(a) for a in parts.indices)
    return _csr(data, indices, indptr, parts.shape, parts.canonical)


def _jax_index(a: Any, shape: tuple[int, ...], nnz: int) -> Any:
    """An index array as JAX holds it: int64 only with x64 on, else int32 (refused when a
    dimension or the count of values does not fit)."""
    import numpy as np

    if a.dtype == np.int64 and not x64_enabled():
        if max((*shape, nnz, 0)) > _INT32_MAX:
            raise ConversionError(
                f"A sparse array of shape {shape} with {nnz} values needs int64 indices, "
                "which JAX holds only with jax_enable_x64.\nEnable it: "
                "jax.config.update('jax_enable_x64', True)."
            )
        return a.astype(np.int32)
    return a


def _jax_import(a: Any, share: bool) -> Any:
    """A numpy buffer as a jax.Array: shared (64-byte aligned, C-contiguous) or copied."""
    import jax
    import jax.numpy as jnp

    if share:
        return jax.dlpack.from_dlpack(a)
    return jnp.array(a)


def scipy_csr_to_jax(m: Any) -> Any:
    """scipy CSR -> BCSR sharing the three buffers (the planner checked alignment)."""
    from jax.experimental import sparse as jsp

    canonical = bool(m.has_canonical_format)
    bufs = tuple(_jax_import(b, True) for b in (m.data, m.indices, m.indptr))
    return jsp.BCSR(bufs, shape=m.shape, indices_sorted=canonical, unique_indices=canonical)


def scipy_csr_to_jax_copy(m: Any, ctx: CallContext) -> Any:
    """scipy CSR -> BCSR: each buffer JAX cannot share copied (not 64-byte aligned, read-only,
    int64 indices without x64, or every buffer with copy=True)."""
    from jax.experimental import sparse as jsp

    canonical = bool(m.has_canonical_format)
    bufs = []
    for b in (m.data, m.indices, m.indptr):
        i = b if b is m.data else _jax_index(b, m.shape, m.nnz)
        bufs.append(_jax_import(i, i is b and _shareable(b) and not ctx.copy))
    return jsp.BCSR(tuple(bufs), shape=m.shape, indices_sorted=canonical, unique_indices=canonical)


def _shareable(a: Any) -> bool:
    return bool(a.flags.c_contiguous and a.flags.writeable and a.ctypes.data % ALIGNMENT == 0)


def scipy_coo_to_jax(m: Any, ctx: CallContext) -> Any:
    """scipy COO -> BCOO: coordinates stacked into BCOO's (nnz, ndim) indices (a copy); the
    values shared when 64-byte aligned and writable (and copy=True is not asked)."""
    import numpy as np
    from jax.experimental import sparse as jsp

    canonical = bool(m.has_canonical_format)
    coords = np.stack(m.coords, axis=1) if m.nnz else np.zeros((0, len(m.shape)), np.int32)
    indices = _jax_index(coords.astype(coords.dtype, copy=True), m.shape, m.nnz)
    data = _jax_import(m.data, _shareable(m.data) and not ctx.copy)
    return jsp.BCOO(
        (data, _jax_import(indices, False)), shape=m.shape, indices_sorted=canonical,
        unique_indices=canonical,
    )  # fmt: skip


# -- tensorflow <-> scipy ----------------------------------------------------------------------


def tf_to_scipy(t: Any) -> Any:
    """tf.SparseTensor -> coo_array: read-only numpy views of its values and of each column
    of its (nnz, ndim) int64 indices. TF does not record canonical order: not marked."""
    import numpy as np

    values, indices = _readonly(np.asarray(t.values)), _readonly(np.asarray(t.indices))
    return _coo(values, tuple(indices.T), tuple(int(d) for d in t.shape), False)


def _tf_share(a: Any) -> Any:
    import tensorflow as tf

    return tf.experimental.dlpack.from_dlpack(a.__dlpack__())


def _to_tf(m: Any, ctx: CallContext, share_values: bool) -> Any:
    import numpy as np
    import tensorflow as tf

    coo = m.tocoo() if m.format != "coo" else m
    if not coo.has_canonical_format:
        coo = coo.copy()
        coo.sum_duplicates()  # sorted row-major, duplicates summed: TF's canonical order
        share_values = False
    ndim = len(coo.shape)
    indices = aligned_empty((coo.nnz, ndim), np.int64)
    for d, c in enumerate(coo.coords):
        indices[:, d] = c
    values = coo.data if share_values and not ctx.copy else aligned_copy(coo.data)
    return tf.SparseTensor(_tf_share(indices), _tf_share(values), tf.constant(coo.shape, tf.int64))


def scipy_to_tf(m: Any, ctx: CallContext) -> Any:
    """scipy COO/CSR (canonical) -> tf.SparseTensor: indices into TF's (nnz, ndim) int64
    layout (a copy), values shared."""
    return _to_tf(m, ctx, True)


def scipy_to_tf_copy(m: Any, ctx: CallContext) -> Any:
    """scipy COO/CSR -> tf.SparseTensor, the values copied too."""
    return _to_tf(m, ctx, False)


# -- copies inside each framework (copy=True) and densify ---------------------------------------


def scipy_to_csr(m: Any) -> Any:
    """CSC, BSR, DIA, LIL or DOK -> CSR (one copy), int32 indices as the plan says."""
    import numpy as np

    r = m.tocsr()
    if r.indices.dtype != np.int32:
        if max((*r.shape, r.nnz)) > _INT32_MAX:
            raise ConversionError(
                f"A {m.format.upper()} matrix of shape {r.shape} needs int64 indices as CSR; "
                "call .tocsr() (or .tocoo()) yourself and convert that."
            )
        r.indices, r.indptr = r.indices.astype(np.int32), r.indptr.astype(np.int32)
    r.sum_duplicates()  # a new matrix already: canonical in place, as the plan says
    return r


# -- layout= ----------------------------------------------------------------------------------


def scipy_to_coo(m: Any) -> Any:
    """A scipy CSR (or other format) as COO (``layout="coo"``): new index arrays."""
    return m.tocoo()


def scipy_to_csr_layout(m: Any) -> Any:
    """A scipy COO as CSR (``layout="csr"``): duplicates summed, indices sorted."""
    r = m.tocsr()
    r.sum_duplicates()
    return r


def scipy_to_csc(m: Any) -> Any:
    """A scipy COO or CSR as CSC (``layout="csc"``): duplicates summed, indices sorted."""
    r = m.tocsc()
    r.sum_duplicates()
    return r


def torch_to_coo(t: Any) -> Any:
    """A torch CSR tensor as COO (``layout="coo"``), coalesced."""
    return t.to_sparse_coo().coalesce()


def torch_to_csr(t: Any) -> Any:
    """A torch COO tensor as CSR (``layout="csr"``): torch coalesces it first."""
    _torch()  # torch's "CSR is in beta" warning, spent
    return t.coalesce().to_sparse_csr()


def jax_to_bcoo(x: Any) -> Any:
    """A BCSR as a BCOO (``layout="coo"``)."""
    return x.to_bcoo()


def jax_to_bcsr(x: Any) -> Any:
    """A BCOO as a BCSR (``layout="csr"``): JAX sorts the indices (duplicates kept, as JAX
    keeps them; every consumer sums them)."""
    from jax.experimental import sparse as jsp

    return jsp.BCSR.from_bcoo(x.sort_indices())


def scipy_copy(m: Any) -> Any:
    return m.copy()


def torch_clone(t: Any) -> Any:
    return t.clone()


def jax_copy(x: Any) -> Any:
    import jax
    import jax.numpy as jnp

    return jax.tree_util.tree_map(lambda a: jnp.array(a, copy=True), x)


def tf_copy(t: Any) -> Any:
    import tensorflow as tf

    copy = tf.raw_ops.DeepCopy
    return tf.SparseTensor(copy(x=t.indices), copy(x=t.values), copy(x=t.dense_shape))


def scipy_densify(m: Any) -> Any:
    return m.toarray()


def torch_densify(t: Any) -> Any:
    return t.to_dense()


def jax_densify(x: Any) -> Any:
    return x.todense()


def tf_densify(t: Any) -> Any:
    """tf.sparse.to_dense, which takes indices in row-major order without duplicates only
    (TF's canonical form, which a SparseTensor does not record): others are scattered,
    duplicates summed as every other framework sums them."""
    import numpy as np
    import tensorflow as tf

    idx = np.asarray(t.indices)
    if _in_order([idx[:, d] for d in range(idx.shape[1])], strict=True) < 0:
        return tf.sparse.to_dense(t, validate_indices=False)  # checked: tf_check
    if t.dtype == tf.bool:
        summed = tf.scatter_nd(t.indices, tf.cast(t.values, tf.int32), t.dense_shape)
        return tf.not_equal(summed, 0)
    return tf.scatter_nd(t.indices, t.values, t.dense_shape)


def as_is(x: Any) -> Any:
    """An array that is dense already (densify=True asks nothing of it)."""
    return x
