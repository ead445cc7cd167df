"""Sparse arrays between scipy.sparse, torch, JAX and TensorFlow: the converters.

The edges declared in :mod:`.sparse`. scipy.sparse is the hub on the host: every framework's
COO/CSR array becomes a scipy array sharing its buffers (numpy views), and a scipy array
becomes every framework's, sharing what the target can hold as it is and copying the rest
(the edge's note says which buffer and why). Imports the frameworks inside the functions.
"""

from __future__ import annotations

from typing import Any

from interop_core.plugin import ALIGNMENT, CallContext, ConversionError

from ..frameworks.jax import x64_enabled
from ..frameworks.numpy import aligned_copy, aligned_empty

_INT32_MAX = 2**31 - 1


# -- scipy arrays over buffers -------------------------------------------------------------------


def _coo(data: Any, coords: tuple[Any, ...], shape: tuple[int, ...], canonical: bool) -> Any:
    """A scipy coo_array over ``data`` and ``coords`` (no copy), marked canonical or not."""
    import scipy.sparse as sp

    m = sp.coo_array((data, coords), shape=shape, copy=False)
    m.has_canonical_format = canonical
    return m


def _csr(data: Any, indices: Any, indptr: Any, shape: tuple[int, ...], canonical: bool) -> Any:
    """A scipy csr_array over the three buffers (no copy; scipy keeps int64 indices)."""
    import scipy.sparse as sp

    m = sp.csr_array((data, indices, indptr), shape=shape, copy=False)
    # The constructor checked them; its prune() copies a buffer that is a view of one over
    # twice its size, which would break the sharing this edge promises: put them back.
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


def jax_to_scipy(x: Any) -> Any:
    """BCOO -> coo_array, BCSR -> csr_array: numpy views of JAX's buffers (read-only)."""
    import numpy as np

    canonical = bool(x.indices_sorted and x.unique_indices)
    data, indices = np.asarray(x.data), np.asarray(x.indices)
    if type(x).__name__ == "BCOO":
        return _coo(data, tuple(indices.T), tuple(x.shape), canonical)
    return _csr(data, indices, np.asarray(x.indptr), tuple(x.shape), canonical)


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
    import tensorflow as tf

    return tf.sparse.to_dense(t)


def as_is(x: Any) -> Any:
    """An array that is dense already (densify=True asks nothing of it)."""
    return x
