"""The sparse form of each framework's arrays: how it is found, described and keyed.

A sparse array carries the flag "sparse" (opaque: only the edges of :mod:`.sparse` take
it), its layout ("coo", "csr"; scipy's other formats by their own name), "canonical"
(sorted indices without duplicates), "int64_indices", and "batched"/"hybrid" for layouts
only their own framework has. The framework plugins describe dense arrays only; this
module declares the rest (``interop_forms`` in :mod:`.sparse`):

- torch: the sparse layouts of a ``torch.Tensor``, told apart per tensor (its layout);
  torch's key raises on them, and the key here keys them;
- JAX: ``BCOO`` and ``BCSR``; TensorFlow: ``tf.SparseTensor``; scipy: every sparse array
  and matrix (scipy's plugin describes them: scipy holds nothing else).

Imports no framework at module level; the functions import theirs when given an object.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from interop_core.plugin import ALIGNMENT, Flag, Form, FormSpec, TensorInfo

from ..frameworks import scipy as scipy_plugin

SPARSE = "sparse"

_DENSIFY = (("densify", True),)


def _flags(advice: str, *more: Flag) -> tuple[Flag, ...]:
    """The sparse flag (opaque, with its framework's ``advice``) and the layout flags."""
    return (
        Flag(SPARSE, advice, opaque=True),
        Flag("coo", "a COO array converts only by the sparse edges"),
        Flag("csr", "a CSR array converts only by the sparse edges"),
        Flag("canonical", "its indices are sorted and unique"),
        Flag("int64_indices", "its indices are int64"),
        *more,
    )


# -- torch -----------------------------------------------------------------------------------

#: The layouts the sparse edges take (others only densify).
_TORCH_LAYOUTS = ("sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc")


def torch_is_sparse(t: Any) -> bool:
    """Whether a torch.Tensor is of a sparse layout (asked only off the warm path)."""
    import torch

    return t.layout in tuple(getattr(torch, name) for name in _TORCH_LAYOUTS)


def torch_layout_flags(t: Any) -> tuple[str, ...]:
    """A sparse COO or CSR tensor's layout flags ("coo"/"csr", "canonical": sorted and
    unique indices, "int64_indices", "batched", "hybrid": dense trailing dims); none for
    other layouts, which only densify."""
    import torch

    if t.layout == torch.sparse_coo:
        out = ["coo", "int64_indices"] + ["canonical"] * t.is_coalesced()
    elif t.layout == torch.sparse_csr:
        out = ["csr", "canonical"]  # torch's CSR invariants: sorted, unique per row
        out += ["int64_indices"] * (t.crow_indices().dtype == torch.int64)
        out += ["batched"] * (t.ndim - t.dense_dim() > 2)
    else:
        return ()
    return (*out, *["hybrid"] * (t.dense_dim() > 0))


def torch_buffers(t: Any) -> tuple[Any, ...]:
    """The tensors a COO or CSR tensor is made of: values first, then its indices."""
    import torch

    if t.layout == torch.sparse_coo:
        return (t._values(), t._indices())
    if t.layout == torch.sparse_csr:
        return (t.values(), t.crow_indices(), t.col_indices())
    return ()


def _torch_key(t: Any) -> Any:
    """Warm-path key of a sparse tensor: everything its flags read."""
    import torch

    layout = t.layout
    if layout == torch.sparse_coo:
        more: tuple[Any, ...] = (t.is_coalesced(),)
    elif layout == torch.sparse_csr:
        more = (t.crow_indices().dtype, t.ndim)
    else:
        more = ()
    return (t.dtype, t.device, t.requires_grad, layout, t.dense_dim(), *more)


def _torch_aligned(t: Any) -> bool:
    return all(b.data_ptr() % ALIGNMENT == 0 for b in torch_buffers(t))


def _torch_aligned_key(t: Any) -> Any:
    return (*_torch_key(t), _torch_aligned(t))


def _torch_describe(t: Any) -> TensorInfo:
    from ..frameworks.torch import dtype_name, refuse_meta

    refuse_meta(t)
    parts = torch_buffers(t)
    flags = {SPARSE, *torch_layout_flags(t)} | ({"requires_grad"} if t.requires_grad else set())
    return TensorInfo(
        framework="torch", dtype=dtype_name(t.dtype),
        device=_torch_device(t), shape=tuple(t.shape), layout="C", readonly=False,
        aligned=_torch_aligned(t), flags=frozenset(flags),
        stored=sum(p.numel() * p.element_size() for p in parts) if parts else -1,
    )  # fmt: skip


def _torch_device(t: Any) -> Any:
    from interop_core.plugin import Device

    return Device(t.device.type, t.device.index or 0)


def _torch_data_ptr(t: Any) -> int:
    """Address of the first stored value."""
    values = torch_buffers(t)
    if not values:
        raise TypeError(f"a torch tensor of layout {t.layout} exposes no values buffer")
    return int(values[0].data_ptr())


def _torch_astype(t: Any, dtype: str) -> Any:
    from ..frameworks.torch import torch_dtype

    return t.to(torch_dtype(dtype))  # keeps the layout; autograd records the cast


# -- JAX -------------------------------------------------------------------------------------


def jax_layout_flags(x: Any) -> frozenset[str]:
    """Flags of a BCOO/BCSR: "sparse", "coo"/"csr", "canonical" (sorted unique indices),
    "int64_indices", "batched" (n_batch > 0), "hybrid" (n_dense > 0)."""
    flags = {SPARSE, "coo" if type(x).__name__ == "BCOO" else "csr"}
    if x.indices_sorted and x.unique_indices:
        flags.add("canonical")
    if x.indices.dtype.itemsize == 8:
        flags.add("int64_indices")
    if x.n_batch:
        flags.add("batched")
    if x.n_dense:
        flags.add("hybrid")
    return frozenset(flags)


def _jax_buffers(x: Any) -> tuple[Any, ...]:
    return (x.data, x.indices, *((x.indptr,) if hasattr(x, "indptr") else ()))


def _jax_key(x: Any) -> Any:
    """Warm-path key of a BCOO/BCSR: class, dtypes, layout and the data's device."""
    return (
        type(x), x.data.dtype, x.indices.dtype, x.indices_sorted, x.unique_indices,
        x.n_batch, x.n_dense, next(iter(x.data.devices())),
    )  # fmt: skip


def _jax_describe(x: Any) -> TensorInfo:
    from ..frameworks.jax import as_device

    return TensorInfo(
        framework="jax", dtype=str(x.dtype), device=as_device(next(iter(x.data.devices()))),
        shape=tuple(x.shape), layout="C", readonly=False, aligned=True,
        flags=jax_layout_flags(x), stored=sum(int(b.nbytes) for b in _jax_buffers(x)),
    )  # fmt: skip


def _jax_data_ptr(x: Any) -> int:
    return int(x.data.unsafe_buffer_pointer())


def _jax_astype(x: Any, dtype: str) -> Any:
    from ..frameworks.jax import astype

    return astype(x, dtype)


# -- TensorFlow ------------------------------------------------------------------------------


def _tf_describe(t: Any) -> TensorInfo:
    """A tf.SparseTensor: COO with int64 (nnz, ndim) indices. TF keeps no record of
    whether its indices are sorted and unique, so it is never flagged "canonical"."""
    from ..frameworks.tensorflow import device_of
    from .sparse_convert import tf_shape  # InvalidArrayError for a dim < 0

    return TensorInfo(
        framework="tensorflow", dtype=t.dtype.name, device=device_of(t.values.device),
        shape=tf_shape(t), layout="C", readonly=False, aligned=True,
        flags=frozenset({SPARSE, "coo", "int64_indices"}),
        stored=_nbytes(t.values) + _nbytes(t.indices),
    )  # fmt: skip


def _nbytes(t: Any) -> int:
    """Bytes an eager tensor's elements occupy (read from its shape and dtype)."""
    n = t.dtype.size
    for d in t.shape:
        n *= int(d)
    return int(n)


def _tf_key(t: Any) -> Any:
    return (t.dtype, t.values.device)


def _tf_data_ptr(t: Any) -> int:
    from ..frameworks.tensorflow import data_ptr

    return data_ptr(t.values)  # its first value


# -- the kit's examples ----------------------------------------------------------------------


def _build(framework: str, layout: str) -> Callable[[Any, str], Any]:
    def build(values: Any, dtype: str) -> Any:
        from .examples import dense

        x = dense("numpy" if framework == "scipy" else framework, values, dtype)
        if framework == "scipy":
            import scipy.sparse as sp

            return sp.csr_array(x) if layout == "csr" else sp.coo_array(x)
        if framework == "torch":
            return x.to_sparse_csr() if layout == "csr" else x.to_sparse().coalesce()
        if framework == "jax":
            from jax.experimental import sparse

            return (sparse.BCSR if layout == "csr" else sparse.BCOO).fromdense(x)
        import tensorflow as tf

        return tf.sparse.from_dense(x)

    return build


def _read(framework: str) -> Callable[[Any], tuple[Any, ...]]:
    def read(x: Any) -> tuple[Any, ...]:
        if framework == "scipy":
            return (x.toarray(),)
        if framework == "torch":
            return (x.to_dense(),)
        if framework == "jax":
            return (x.todense(),)
        import tensorflow as tf

        return (tf.sparse.to_dense(x).numpy(),)

    return read


_BUFFERS: dict[str, Callable[[Any], tuple[Any, ...]]] = {
    "scipy": scipy_plugin.buffers,
    "torch": torch_buffers,
    "jax": _jax_buffers,
    "tensorflow": lambda t: (t.values, t.indices),
}


def examples(framework: str, layouts: tuple[str, ...] = ("coo", "csr")) -> tuple[Form, ...]:
    """The kit's sparse examples of ``framework`` ("scipy", "torch", "jax", "tensorflow")."""
    return tuple(
        Form(
            name=f"sparse {layout}",
            build=_build(framework, layout),
            flags=frozenset({SPARSE, layout}),
            shapes=((3, 4), (4, 3)),
            read=_read(framework),
            buffers=_BUFFERS[framework],
            dense=_DENSIFY,
            dtypes=("float32", "int32"),
        )
        for layout in layouts
    )


# -- the forms -------------------------------------------------------------------------------

_ONLY_HERE = "convert only within {0} (densify=True works{1})"


def forms() -> list[FormSpec]:
    """The sparse form of torch, JAX, TensorFlow and scipy."""
    return [
        FormSpec(
            name=SPARSE,
            framework="torch",
            types=("torch.Tensor",),
            test=torch_is_sparse,
            flags=_flags(
                "sparse tensors have no dense buffer to share: pass densify=True for one "
                "dense copy (or call .to_dense()); COO and CSR convert to other frameworks' "
                "sparse arrays",
                Flag("batched", "batched sparse CSR tensors " + _ONLY_HERE.format("torch", "")),
                Flag("hybrid", "hybrid sparse tensors (dense_dim() > 0) "
                     + _ONLY_HERE.format("torch", "")),
            ),
            describe=_torch_describe,
            key=_torch_key,
            aligned_key=_torch_aligned_key,
            data_ptr=_torch_data_ptr,
            astype=_torch_astype,
            examples=examples("torch"),
        ),
        FormSpec(
            name=SPARSE,
            framework="jax",
            types=("jax.experimental.sparse.BCOO", "jax.experimental.sparse.BCSR"),
            flags=_flags(
                "a BCOO/BCSR has no dense buffer to share: pass densify=True for one dense "
                "copy, or convert it to another framework's sparse arrays (torch, "
                "tensorflow, scipy)",
                Flag("batched", "batched BCOO/BCSR (n_batch > 0) " + _ONLY_HERE.format(
                    "JAX", "; or jax.experimental.sparse.bcoo_update_layout(x, n_batch=0)")),
                Flag("hybrid", "BCOO/BCSR with dense dimensions (n_dense > 0) "
                     + _ONLY_HERE.format("JAX", "")),
            ),
            describe=_jax_describe,
            key=_jax_key,
            data_ptr=_jax_data_ptr,
            astype=_jax_astype,
            examples=examples("jax"),
        ),
        FormSpec(
            name=SPARSE,
            framework="tensorflow",
            types=("tensorflow.SparseTensor",),
            flags=_flags(
                "a tf.SparseTensor has no dense buffer to share: pass densify=True for one "
                "dense copy, or convert it to another framework's sparse arrays",
            ),
            describe=_tf_describe,
            key=_tf_key,
            data_ptr=_tf_data_ptr,
            examples=examples("tensorflow", ("coo",)),
        ),
        FormSpec(
            name=SPARSE,
            framework="scipy",
            types=("scipy.sparse.sparray", "scipy.sparse.spmatrix"),
            flags=_flags(
                "a sparse array has no dense buffer to share: pass densify=True for one "
                "dense copy, or convert it to a framework with sparse arrays (torch, jax, "
                "tensorflow, scipy)",
                *(Flag(fmt, f"{fmt.upper()} converts only within scipy: call .tocsr() or "
                      ".tocoo() first") for fmt in ("csc", "bsr", "dia", "lil", "dok")),
            ),
            # scipy holds sparse arrays only: its plugin describes and keys them.
            describe=scipy_plugin.describe,
            key=scipy_plugin.key,
            aligned_key=scipy_plugin.aligned_key,
            examples=examples("scipy"),
        ),
    ]  # fmt: skip
