"""The edges of a tensor file's tensors (frameworks/safetensors.py's ``FileTensor``).

Each edge reads the tensor's bytes in the file's private mapping: numpy gets a read-only
view, torch a tensor over them (bfloat16/float8 through a same-size unsigned view, so no
ml_dtypes is needed), JAX and TensorFlow a DLPack import of them; the planner applies their
import rules (64-byte alignment, JAX's x64 switch), so an unaligned tensor reaches them by
one copy, which explain() counts. bfloat16 into JAX or TensorFlow goes through torch's
zero-copy view where torch is installed (numpy cannot export bfloat16 through DLPack).
``sharding=`` into JAX builds each global array from the mapped slices, one per device.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from interop_core.plugin import (
    ArrayEdge,
    CallContext,
    ConversionError,
    ConverterSpec,
    InteropError,
    Needs,
    OptionError,
    PlanKey,
)

from ..frameworks.numpy import ML_DTYPES, aligned_empty, has_ml_dtypes, numpy_dtype

#: Flags a sharded result carries (exchange/sharding.py's goal for ``sharding=``).
_LAID_OUT = frozenset({"sharded", "laid_out"})
_COW = (
    "the tensor views the file's private (copy-on-write) mapping: a write changes this "
    "process's copy of those pages, never the file; the file must stay in place, untruncated, "
    "while the tensor lives (values not yet read are read from it)"
)
_NO_ML = "ml_dtypes is not installed, so numpy has no bfloat16/float8 (pip install ml_dtypes)"
_NP_EXPORT_ML = "numpy cannot export bfloat16/float8 through DLPack (torch's view can)"


def _ml_missing(key: PlanKey) -> str | None:
    return _NO_ML if key.dtype in ML_DTYPES and not has_ml_dtypes() else None


def array(t: Any) -> Any:
    """A writable numpy view of a FileTensor's bytes, in its dtype and shape."""
    return t.data.view(numpy_dtype(t.dtype)).reshape(t.shape)


def _load_numpy() -> Callable[[Any], Any]:
    def convert(t: Any) -> Any:
        x = array(t)
        x.flags.writeable = False  # the file's values: numpy users get what they can mark
        return x

    return convert


def _load_torch() -> Callable[[Any], Any]:
    import numpy as np
    import torch

    # torch.from_numpy has no ml_dtypes: those cross as same-size unsigned views.
    ml = {n: (np.uint16 if n == "bfloat16" else np.uint8, getattr(torch, n)) for n in ML_DTYPES}
    from_numpy = torch.from_numpy

    def convert(t: Any) -> Any:
        found = ml.get(t.dtype)
        if found is None:
            return from_numpy(t.data.view(np.dtype(t.dtype)).reshape(t.shape))
        return from_numpy(t.data.view(found[0]).reshape(t.shape)).view(found[1])

    return convert


def _load_jax() -> Callable[[Any], Any]:
    import jax.dlpack

    from ..frameworks.jax import host_importer  # a call without JAX never imports it

    imported = host_importer()
    from_dlpack = jax.dlpack.from_dlpack

    def convert(t: Any) -> Any:
        x = array(t)
        if imported is None or not x.size:  # no bytes: JAX's own call takes any address
            return from_dlpack(x)
        return imported(x.__dlpack__())

    return convert


def _load_tf() -> Callable[[Any], Any]:
    from .dlpack import tf_importer

    from_dlpack = tf_importer()

    def convert(t: Any) -> Any:
        return from_dlpack(array(t).__dlpack__())  # a legacy capsule, as TF takes

    return convert


def _load_copy() -> Callable[[Any], Any]:
    import numpy as np

    def convert(t: Any) -> Any:
        x = array(t)
        out = aligned_empty(x.shape, x.dtype)
        np.copyto(out, x)
        return out

    return convert


def sharding_for(value: Any, t: Any) -> Any:
    """The jax Sharding ``sharding=`` gives tensor ``t``: the value itself, its entry in a
    dict (every tensor must have one), or a callable's answer for ``(name, shape)``."""
    import jax

    if isinstance(value, dict):
        if t.name not in value:
            raise OptionError(
                f"sharding= is a dict without an entry for tensor {t.name!r} of {t.file!r}.\n"
                "Give every tensor a Sharding (a replicated one for tensors kept whole), or "
                "pass a callable (name, shape) -> Sharding."
            )
        value = value[t.name]
    elif callable(value) and not isinstance(value, jax.sharding.Sharding):
        value = value(t.name, t.shape)
    if not isinstance(value, jax.sharding.Sharding):
        raise OptionError(
            f"sharding= gives tensor {t.name!r} a {type(value).__name__}, not a "
            "jax.sharding.Sharding: pass a Sharding, a dict name -> Sharding, or a callable "
            "(name, shape) -> Sharding."
        )
    return value


def _load_sharded() -> Callable[[Any, CallContext], Any]:
    import jax

    def convert(t: Any, ctx: CallContext) -> Any:
        sharding = sharding_for(ctx.option("sharding"), t)
        view = array(t)
        try:
            # The callback gets each addressable device's index (a tuple of slices) and
            # returns that slice of the mapping: only its bytes are read and copied.
            return jax.make_array_from_callback(t.shape, sharding, view.__getitem__)
        except InteropError:
            raise
        except Exception as exc:  # jax's own words for a sharding of another rank
            raise ConversionError(
                f"Cannot lay out tensor {t.name!r} of {t.file!r} ({t.dtype} {t.shape}) with "
                f"sharding {sharding}: {exc}\nGive it a sharding of its rank (a dict or a "
                "callable (name, shape) -> Sharding picks one per tensor)."
            ) from exc

    return convert


def edges(source: str, misaligned: str) -> list[ConverterSpec]:
    """The edges of ``source``'s tensors; ``misaligned`` is the flag of bytes no framework
    views (they take the copy edge)."""
    view = Needs(no_flags=frozenset({misaligned}), extra=_ml_missing)
    plain = Needs(no_flags=frozenset({misaligned}))
    shared = Needs(no_flags=frozenset({misaligned}), no_dtypes=frozenset(ML_DTYPES),
                   dtype_reason=_NP_EXPORT_ML)  # fmt: skip
    return [
        ConverterSpec(
            name="safetensors mapping as a numpy view", source=source, target="numpy",
            load=_load_numpy, zero_copy=True, accepts=view, cost=0.6,
            note="the numpy result is a read-only view of the file's mapping",
            array=ArrayEdge(readonly_result=True, memory_note=True),
        ),
        ConverterSpec(
            name="torch.from_numpy(safetensors mapping)", source=source, target="torch",
            load=_load_torch, zero_copy=True, accepts=plain, cost=1.2, note=_COW,
            array=ArrayEdge(memory_note=True),
        ),
        ConverterSpec(
            name="jax DLPack import (safetensors mapping)", source=source, target="jax",
            load=_load_jax, zero_copy=True, accepts=shared, cost=8.0,
        ),
        ConverterSpec(
            name="tf from_dlpack(safetensors mapping)", source=source, target="tensorflow",
            load=_load_tf, zero_copy=True, accepts=shared, cost=2.0,
        ),
        ConverterSpec(
            name="copy safetensors tensor", source=source, target="numpy", load=_load_copy,
            zero_copy=False, cost=20.0, accepts=Needs(no_flags=frozenset(), extra=_ml_missing),
        ),
        ConverterSpec(
            name="jax.make_array_from_callback(safetensors slices)", source=source,
            target="jax", load=_load_sharded, zero_copy=False, cost=3.0,
            accepts=Needs(no_flags=frozenset({misaligned})), options=("sharding",),
            context=True, opt_in="sharding", adds_flags=_LAID_OUT,
            note="sharding=: each device copies only its shard's slice of the mapped file "
            "(jax.make_array_from_callback)",
        ),
    ]  # fmt: skip
