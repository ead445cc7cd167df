"""Examples of the flagged forms (sparse, ragged) the frameworks declare for the conformance
kit (``FrameworkSpec.forms``): how each framework builds one from nested Python values, and
reads it back as arrays the kit can read itself.

Declarations only, importing nothing: each function imports its framework when the kit
calls it (never when this module is imported). Not a plugin: the framework plugins put
:func:`sparse_forms` and :func:`ragged_form` into their specs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from interop_core.plugin import Form

#: Rows of ragged examples hold these dtypes (JAX without x64 holds no 64-bit ones).
_RAGGED_DTYPES = ("float32", "int32")
_DENSIFY = (("densify", True),)
_PAD = (("ragged", "pad"), ("fill_value", 0))


def _dense(framework: str, values: Any, dtype: str) -> Any:
    """The framework's own dense example of ``values`` (its plugin's ``example``)."""
    from ..frameworks import jax, numpy, tensorflow, torch

    return {"numpy": numpy, "torch": torch, "jax": jax, "tensorflow": tensorflow}[
        framework
    ].example(values, dtype)


# -- sparse ----------------------------------------------------------------------------------


def _scipy(layout: str) -> Callable[[Any, str], Any]:
    def build(values: Any, dtype: str) -> Any:
        import scipy.sparse as sp

        dense = _dense("numpy", values, dtype)
        return sp.csr_array(dense) if layout == "csr" else sp.coo_array(dense)

    return build


def _torch(layout: str) -> Callable[[Any, str], Any]:
    def build(values: Any, dtype: str) -> Any:
        t = _dense("torch", values, dtype)
        return t.to_sparse_csr() if layout == "csr" else t.to_sparse().coalesce()

    return build


def _jax(layout: str) -> Callable[[Any, str], Any]:
    def build(values: Any, dtype: str) -> Any:
        from jax.experimental import sparse

        cls = sparse.BCSR if layout == "csr" else sparse.BCOO
        return cls.fromdense(_dense("jax", values, dtype))

    return build


def _tf(layout: str) -> Callable[[Any, str], Any]:
    def build(values: Any, dtype: str) -> Any:
        import tensorflow as tf

        return tf.sparse.from_dense(_dense("tensorflow", values, dtype))

    return build


def _sparse_read(framework: str) -> Callable[[Any], tuple[Any, ...]]:
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


def _sparse_buffers(framework: str) -> Callable[[Any], tuple[Any, ...]]:
    def buffers(x: Any) -> tuple[Any, ...]:
        if framework == "scipy":
            from ..frameworks.scipy import buffers as scipy_buffers

            return scipy_buffers(x)
        if framework == "torch":
            from ..frameworks.torch import sparse_buffers

            return sparse_buffers(x)
        if framework == "jax":
            return (x.data, x.indices, *((x.indptr,) if hasattr(x, "indptr") else ()))
        return (x.values, x.indices)

    return buffers


_SPARSE_BUILD = {"scipy": _scipy, "torch": _torch, "jax": _jax, "tensorflow": _tf}


def sparse_forms(framework: str, layouts: tuple[str, ...] = ("coo", "csr")) -> tuple[Form, ...]:
    """The sparse forms of ``framework`` ("scipy", "torch", "jax" or "tensorflow")."""
    return tuple(
        Form(
            name=f"sparse {layout}",
            build=_SPARSE_BUILD[framework](layout),
            flags=frozenset({"sparse", layout}),
            shapes=((3, 4), (4, 3)),
            read=_sparse_read(framework),
            buffers=_sparse_buffers(framework),
            dense=_DENSIFY,
            dtypes=("float32", "int32"),
        )
        for layout in layouts
    )


# -- ragged ----------------------------------------------------------------------------------


def _flat(rows: Any) -> tuple[list[Any], list[int]]:
    values = [v for row in rows for v in row]
    splits = [0]
    for row in rows:
        splits.append(splits[-1] + len(row))
    return values, splits


def _ragged_build(framework: str) -> Callable[[Any, str], Any]:
    def build(rows: Any, dtype: str) -> Any:
        import numpy as np

        values, splits = _flat(rows)
        if framework == "torch":
            import torch

            return torch.nested.nested_tensor_from_jagged(
                _dense("torch", values, dtype), torch.tensor(splits, dtype=torch.int64)
            )
        if framework == "tensorflow":
            import tensorflow as tf

            return tf.RaggedTensor.from_row_splits(
                _dense("tensorflow", values, dtype), tf.constant(splits, tf.int64)
            )
        if framework == "jax":
            import jax.numpy as jnp

            from .ragged import RaggedArray

            return RaggedArray(_dense("jax", values, dtype), jnp.asarray(splits, jnp.int32))
        import pyarrow as pa

        from ..frameworks.arrow import example

        flat = example(values, dtype)  # a numeric Arrow array of the dtype
        return pa.ListArray.from_arrays(pa.array(np.asarray(splits, np.int32)), flat)

    return build


def _ragged_read(framework: str) -> Callable[[Any], tuple[Any, ...]]:
    def read(x: Any) -> tuple[Any, ...]:
        if framework == "torch":
            return (x.values(), x.offsets())
        if framework == "tensorflow":
            return (x.values.numpy(), x.row_splits.numpy())
        if framework == "jax":
            return (x.values, x.row_splits)
        offsets = x.offsets.to_numpy()
        base, last = int(offsets[0]), int(offsets[-1])
        return (x.values.slice(base, last - base).to_numpy(), offsets - base)

    return read


def _ragged_buffers(framework: str) -> Callable[[Any], tuple[Any, ...]]:
    def buffers(x: Any) -> tuple[Any, ...]:
        if framework == "torch":
            return (x.values(), x.offsets())
        if framework == "tensorflow":
            return (x.values, x.row_splits)
        if framework == "jax":
            return (x.values, x.row_splits)
        return (x.values.to_numpy(), x.offsets.to_numpy())

    return buffers


def ragged_form(framework: str) -> tuple[Form, ...]:
    """The ragged form of ``framework`` ("torch", "tensorflow", "jax" or "pyarrow")."""
    return (
        Form(
            name="ragged", build=_ragged_build(framework), flags=frozenset({"ragged"}),
            shapes=((3, 0, 2, 1), (1, 2)), rows=True, read=_ragged_read(framework),
            buffers=_ragged_buffers(framework), dense=_PAD, dtypes=_RAGGED_DTYPES,
        ),
    )  # fmt: skip
