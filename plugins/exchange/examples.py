"""Examples of ragged arrays for the conformance kit (``FormSpec.examples``,
``FrameworkSpec.diagnostics.forms``): how each framework builds one from nested Python values, and
reads it back as arrays the kit can read itself; and :func:`dense`, each framework's own
dense example (the sparse examples of :mod:`.sparse_forms` start from it too).

Declarations only, importing nothing: each function imports its framework when the kit
calls it (never when this module is imported). Not a plugin.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from interop_core.plugin import Form

#: Rows of ragged examples hold these dtypes (JAX without x64 holds no 64-bit ones).
_RAGGED_DTYPES = ("float32", "int32")
_PAD = (("ragged", "pad"), ("fill_value", 0))


def dense(framework: str, values: Any, dtype: str) -> Any:
    """The framework's own dense example of ``values`` (its plugin's ``example``)."""
    from ..frameworks import jax, numpy, tensorflow, torch

    return {"numpy": numpy, "torch": torch, "jax": jax, "tensorflow": tensorflow}[
        framework
    ].example(values, dtype)


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
                dense("torch", values, dtype), torch.tensor(splits, dtype=torch.int64)
            )
        if framework == "tensorflow":
            import tensorflow as tf

            return tf.RaggedTensor.from_row_splits(
                dense("tensorflow", values, dtype), tf.constant(splits, tf.int64)
            )
        if framework == "jax":
            import jax.numpy as jnp

            from .ragged import RaggedArray

            return RaggedArray(dense("jax", values, dtype), jnp.asarray(splits, jnp.int32))
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
