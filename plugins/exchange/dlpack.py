"""Zero-copy exchange edges between every producer/consumer pair, table-driven.

Each row uses the fastest zero-copy call the pair has (measured on this stack):
``torch.from_numpy`` beats ``torch.from_dlpack``; TensorFlow consumes only legacy
capsules; numpy's bfloat16/float8 cross as same-size unsigned views. What each consumer
imports safely (JAX and TF: compact, 64-byte aligned buffers; JAX: 64-bit dtypes only with
x64; torch: no negative strides, on which it aborts the interpreter through DLPack) its
framework declares once (``FrameworkSpec.rules.imports``, ``switches``) and the planner checks
on every row.
"""

from __future__ import annotations

import operator
import warnings
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from interop_core.plugin import (
    VARIANT,
    ArrayEdge,
    ConverterSpec,
    Needs,
    Reason,
    c_strides,
    hookimpl,
)

from ..frameworks.numpy import ML_DTYPES, has_ml_dtypes
from ..native import MISSING, chain, native, require_native

Loader = Callable[[], Callable[[Any], Any]]

_GRAD_NOTE = "the result is detached from torch's autograd graph"
_ALIAS_NOTE = (
    "the {dst} is a writable alias of {src} memory that {src} treats as immutable; "
    "writing to it changes the {src} array"
)
_RO_NOTE = "the numpy result is a read-only view"
_ALIASES = {
    "JAX": _ALIAS_NOTE.format(src="JAX", dst="torch tensor"),
    "TensorFlow": _ALIAS_NOTE.format(src="TensorFlow", dst="torch tensor"),
    "JAX to CuPy": _ALIAS_NOTE.format(src="JAX", dst="CuPy array"),
}
#: Notes about the memory a result shares: moot after a later copy (ConverterSpec.memory_note).
_MEMORY_NOTES = frozenset({_RO_NOTE, *_ALIASES.values()})

# -- loaders: each imports its frameworks and returns the conversion function ---------


def compact_strides(x: Any) -> Any:
    """``x`` without negative strides on size-1 dims or in an empty array, where strides
    address nothing (torch.from_numpy rejects them; the bytes are the same)."""
    from numpy.lib.stride_tricks import as_strided

    if x.size == 0:
        return as_strided(x, strides=c_strides(x.shape, x.itemsize))
    if any(s < 0 and n == 1 for n, s in zip(x.shape, x.strides, strict=True)):
        strides = zip(x.shape, x.strides, strict=True)
        return as_strided(x, strides=tuple(0 if n == 1 else s for n, s in strides))
    return x


def _torch_from_numpy_safe() -> Any:
    import torch

    from_numpy = torch.from_numpy

    def convert(x: Any) -> Any:
        try:
            return from_numpy(x)
        except ValueError:  # negative strides on size-1/empty dims of a contiguous array
            return from_numpy(compact_strides(x))

    return convert


def _torch_from_numpy_c() -> Any:
    """numpy -> torch through torch's DLPack C exchange table (interop_plugins._native)."""
    import torch

    return require_native().Importer(torch.Tensor)


def _numpy_from_c_exchange() -> Any:
    """torch -> numpy: the tensor exported through its type's C exchange table, wrapped in
    an ndarray whose base owns the export (torch's deleter runs when the ndarray goes)."""
    return require_native().to_numpy


def _torch_from_numpy_view() -> Any:
    """numpy bfloat16/float8 -> torch through a same-size unsigned view (zero-copy)."""
    import ml_dtypes
    import numpy as np
    import torch

    views = {np.dtype(getattr(ml_dtypes, n)): (_uint(n), getattr(torch, n)) for n in ML_DTYPES}

    def convert(x: Any) -> Any:
        uint, dtype = views[x.dtype]
        return torch.from_numpy(compact_strides(x).view(uint)).view(dtype)

    return convert


def _uint(name: str) -> Any:
    import numpy as np

    return np.uint16 if name == "bfloat16" else np.uint8


def _tensor_numpy() -> Any:
    import torch

    return torch.Tensor.numpy


def _tensor_numpy_detached() -> Any:
    import torch

    return detaching(torch.Tensor.numpy)


def _tensor_numpy_view() -> Any:
    """torch bfloat16/float8 -> numpy (ml_dtypes) through a same-size unsigned view."""
    import ml_dtypes
    import numpy as np
    import torch

    views = {
        getattr(torch, n): (_torch_uint(n), np.dtype(getattr(ml_dtypes, n))) for n in ML_DTYPES
    }

    def convert(t: Any) -> Any:
        uint, dtype = views[t.dtype]
        return t.detach().view(uint).numpy().view(dtype)

    return convert


def _torch_uint(name: str) -> Any:
    import torch

    return torch.uint16 if name == "bfloat16" else torch.uint8


def _np_asarray() -> Any:
    import numpy as np

    return np.asarray


def _tf_to_numpy() -> Any:
    """TF -> numpy, bfloat16/float8: np.asarray (zero-copy), made read-only."""
    import numpy as np
    import tensorflow as tf

    asarray, reshape = np.asarray, tf.reshape

    def convert(t: Any) -> Any:
        try:
            a = asarray(t)
        except ValueError:  # a 0-d bfloat16 tensor's __array__ returns a scalar
            a = asarray(reshape(t, [1])).reshape(())
        if a.flags.writeable:  # bfloat16 views come back writable: TF memory is immutable
            a.flags.writeable = False
        return a

    return convert


def _tf_view() -> Callable[[Any], Any]:
    """An eager TF tensor's own numpy view, writable: what ``np.asarray`` gets from TF's
    ``__array__`` (``EagerTensor._numpy()``, a fresh ndarray whose base keeps the tensor
    alive) without numpy's protocol and read-only marking around it (0.2-0.35 µs less than
    ``np.asarray``, which torch.from_numpy does not need). A 0-d tensor's ``_numpy()`` is a
    numpy scalar, and a TF without the method is asked through ``np.asarray``."""
    import numpy as np

    asarray, ndarray = np.asarray, np.ndarray

    def view(t: Any) -> Any:
        try:
            a = t._numpy()
        except AttributeError:  # a TensorFlow without EagerTensor._numpy
            return asarray(t)
        return a if type(a) is ndarray else asarray(t)

    return view


def spend_readonly_warning() -> None:
    """Spend torch's one warning that a tensor over read-only numpy memory is writable.

    torch warns once per process (TORCH_WARN_ONCE). The routes that alias such memory say
    so in their note already; the warning would leak a framework warning from to() (an
    exception under -W error). Every path around it adds 2-5 us a call to a ~2 us route,
    and a lasting filter would change the process's warnings state (rule 2). So the one
    warning torch ever gives is spent when such a route is loaded, under a catch_warnings
    block that restores the filters on exit."""
    import numpy as np
    import torch

    readonly = np.zeros(1, np.uint8)
    readonly.flags.writeable = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        torch.from_numpy(readonly)


def _torch_via_numpy() -> Any:
    """jax -> torch: np.asarray then torch.from_numpy (~3x faster than from_dlpack)."""
    import numpy as np
    import torch

    spend_readonly_warning()
    return chain(np.asarray, torch.from_numpy)


def _torch_via_tf_view() -> Any:
    """tf -> torch: the tensor's numpy view (:func:`_tf_view`), then torch.from_numpy."""
    import torch

    spend_readonly_warning()  # a 0-d tensor's view comes from np.asarray: read-only
    return chain(_tf_view(), torch.from_numpy)


def _torch_from_dlpack() -> Any:
    import torch

    return torch.from_dlpack


def _tf_from_capsule_of(export: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return chain(export, tf_importer())


def tf_importer() -> Callable[[Any], Any]:
    """TF's DLPack importer. ``tf.experimental.dlpack.from_dlpack`` makes sure the eager
    context is initialized, then passes the capsule and the context's handle to
    ``pywrap_tfe.TFE_FromDlpackCapsule``: here that call is made directly, with the handle
    read on every call (the context may be reset), 0.3 µs less a call; the public function
    is used while the context has no handle, and where TF lacks the names."""
    import tensorflow as tf

    public: Callable[[Any], Any] = tf.experimental.dlpack.from_dlpack
    try:
        from tensorflow.python import pywrap_tfe
        from tensorflow.python.eager import context

        direct = pywrap_tfe.TFE_FromDlpackCapsule
        current = context.context
        current()._context_handle  # noqa: B018 (the name this reads on every call)
    except (ImportError, AttributeError):
        return public

    def from_dlpack(capsule: Any) -> Any:
        handle = current()._context_handle
        if handle is None:
            return public(capsule)  # initializes the context, then imports
        return direct(capsule, handle)

    return from_dlpack


def _tf_from_protocol() -> Any:
    """numpy/jax -> TF: TF's importer takes only legacy capsules, so export one first."""
    return _tf_from_capsule_of(operator.methodcaller("__dlpack__"))


def _tf_from_torch() -> Any:
    import torch.utils.dlpack

    return _tf_from_capsule_of(torch.utils.dlpack.to_dlpack)


def detaching(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``convert`` applied to ``t.detach()``: the variant for tensors that require grad."""

    def detached(t: Any) -> Any:
        return convert(t.detach())

    return detached


def _tf_from_numpy_bitcast() -> Any:
    """numpy bfloat16 -> TF: a uint16 capsule, then tf.bitcast (which shares the buffer)."""
    import numpy as np
    import tensorflow as tf

    imported = _tf_from_capsule_of(lambda x: x.view(np.uint16).__dlpack__())

    def convert(x: Any) -> Any:
        return tf.bitcast(imported(x), tf.bfloat16)

    return convert


# A C-contiguous array may still carry odd strides on size-1 dims (a transposed (1, n)
# array); JAX would import those as a column-major layout that later exports copy. The
# importers below give JAX the canonical strides of the same bytes.


def _jax_from_tf() -> Any:
    """tf -> JAX: TF's legacy capsule into jaxlib's importer (the public call where that is
    missing)."""
    import jax.dlpack
    import tensorflow as tf

    from ..frameworks.jax import host_importer  # a call without JAX never imports it

    imported = host_importer()
    if imported is None:
        return jax.dlpack.from_dlpack
    to_dlpack = tf.experimental.dlpack.to_dlpack

    def convert(t: Any) -> Any:
        if not t._num_elements():  # no bytes: JAX's own call, which takes any address
            return jax.dlpack.from_dlpack(t)
        return imported(to_dlpack(t))

    return convert


def _jax_from_numpy() -> Any:
    import jax.dlpack
    from numpy.lib.stride_tricks import as_strided

    from ..frameworks.jax import host_importer  # a call without JAX never imports it

    imported = host_importer()
    from_dlpack = jax.dlpack.from_dlpack

    def convert(x: Any) -> Any:
        shape = x.shape
        if 1 in shape or 0 in shape:  # only size-1/empty dims can carry odd strides here
            if 0 in shape:  # no bytes: JAX's own call, which takes any address
                return from_dlpack(x)
            canonical = c_strides(shape, x.itemsize)
            if x.strides != canonical:
                x = as_strided(x, strides=canonical)
        return imported(x.__dlpack__()) if imported is not None else from_dlpack(x)

    return convert


def _jax_from_torch() -> Any:
    import jax.dlpack
    import torch
    import torch.utils.dlpack

    from ..frameworks.jax import host_importer  # a call without JAX never imports it

    from_dlpack = jax.dlpack.from_dlpack
    imported = host_importer()
    to_dlpack = torch.utils.dlpack.to_dlpack
    # Pinned host memory (only where CUDA is) is kDLCUDAHost to JAX's public call, which
    # places it on the GPU: it keeps that call.
    pinnable = torch.cuda.is_available()

    def convert(t: Any) -> Any:
        shape = t.shape
        if 1 in shape or 0 in shape:  # only size-1/empty dims can carry odd strides here
            if 0 in shape:  # no bytes: JAX's own call, which takes any address
                return from_dlpack(t)
            canonical = c_strides(tuple(shape), 1)
            if t.stride() != canonical:
                t = t.as_strided(shape, canonical)
        if t.is_cuda:
            if t.get_device() != torch.cuda.current_device():
                # torch exports only from its current device (BufferError otherwise).
                with torch.cuda.device(t.get_device()):
                    return from_dlpack(t)
            return from_dlpack(t)  # JAX passes its stream to torch's __dlpack__
        if imported is None or (pinnable and t.is_pinned()):
            return from_dlpack(t)
        return imported(to_dlpack(t))

    return convert


def _jax_from_numpy_bitcast() -> Any:
    """numpy bfloat16/float8 -> JAX: unsigned view in, then an XLA bitcast (a copy)."""
    import jax
    import jax.dlpack
    import jax.numpy as jnp
    import numpy as np

    def convert(x: Any) -> Any:
        raw = jnp.array(x.view(np.uint16 if x.dtype.itemsize == 2 else np.uint8))
        return jax.lax.bitcast_convert_type(raw, jnp.dtype(x.dtype))

    return convert


# CuPy speaks DLPack on CUDA only. Every importer below is the consumer's own from_dlpack,
# which passes its current stream to the producer's __dlpack__: the producer makes that
# stream wait for its own (an event, not a device synchronize), so the consumer never reads
# before the producer's kernels finish. CuPy and torch export from their current device
# only, so a CuPy array is exported with its device current.


def _cupy_from_dlpack() -> Any:
    import cupy

    return cupy.from_dlpack  # sets the producer's device current itself


def _torch_from_cupy() -> Any:
    import torch

    from ..frameworks.cupy import on_device_of

    return on_device_of(torch.from_dlpack)


def _jax_from_cupy() -> Any:
    import jax.dlpack
    from cupy.lib.stride_tricks import as_strided

    from ..frameworks.cupy import on_device_of

    from_dlpack = jax.dlpack.from_dlpack

    def convert(x: Any) -> Any:
        shape = x.shape
        if 1 in shape or 0 in shape:  # odd strides on size-1 dims, as for numpy
            canonical = c_strides(shape, x.itemsize)
            if x.strides != canonical:
                x = as_strided(x, strides=canonical)
        return from_dlpack(x)

    return on_device_of(convert)


# -- the table --------------------------------------------------------------------------

# What each consumer imports without copying is its framework's to say (FrameworkSpec.rules.imports
# and .switches: TF and JAX only C-contiguous, 64-byte aligned buffers, JAX 64-bit dtypes only
# with x64, torch no negative strides and no read-only memory, CuPy only its dtypes); the
# planner checks those on every row. A row says only what is its own: its dtype variants,
# the flags it takes, its producer's limits.
_NP_EXPORT_ML = "numpy cannot export bfloat16/float8 through DLPack"
_NO_ML = "ml_dtypes is not installed, so numpy has no bfloat16/float8 (pip install ml_dtypes)"
_DENSE_FLAGS = frozenset({"requires_grad"})
#: No flag refused but the opaque ones (which the planner keeps off every edge here).
_NONE: frozenset[str] = frozenset()


def _ml_dtypes_missing(key: Any) -> str | None:
    return None if has_ml_dtypes() else _NO_ML


def _row(
    source: str, target: str, name: str, load: Loader, cost: float, needs: Needs, *,
    readonly_result: bool | None = None, note: str = "", devices: tuple[str, ...] = ("cpu",),
) -> ConverterSpec:  # fmt: skip
    return ConverterSpec(
        name=name, source=source, target=target, load=load, zero_copy=True, accepts=needs,
        cost=cost, note=note, devices=frozenset(devices),
        array=ArrayEdge(readonly_result=readonly_result, memory_note=note in _MEMORY_NOTES),
    )  # fmt: skip


def _torch_rows(source: str, target: str, name: str, load: Loader, detached: Loader, cost: float,
                needs: Needs, **kw: Any) -> list[ConverterSpec]:  # fmt: skip
    """A torch export edge and its variant for tensors that require grad (detached)."""
    grad = replace(needs, no_flags=frozenset(), flags=frozenset({"requires_grad"}))
    return [
        _row(source, target, name, load, cost, needs, **kw),
        _row(source, target, f"{name} (detached)", detached, cost + 0.4, grad, note=_GRAD_NOTE,
             **{k: v for k, v in kw.items() if k != "note"}),
    ]  # fmt: skip


ML = frozenset(ML_DTYPES)
#: The dtypes interop_plugins._native builds on both sides (numpy's type numbers <-> DLPack).
_C_DTYPES = frozenset({
    "bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
})  # fmt: skip
_C_LAYOUTS = frozenset({"C", "F"})
#: The name explain() gives the C exchange edges.
C_EXCHANGE = "torch's C exchange API (DLPack 1.3)"
_C_OTHER = Reason("handles only C- or F-contiguous arrays", VARIANT)
_C_MISSING = Reason(MISSING, VARIANT)


def _c_exchange(key: Any) -> str | None:
    """The C edges take what the extension builds; where it is missing, the Python edge of
    the pair runs, and the refusal (in ``Route.refusals``) says why."""
    if native() is None:
        return _C_MISSING
    if key.traits.layout not in _C_LAYOUTS:
        return _C_OTHER
    return None


#: The C exchange edges: DLPack's C exchange API where the producer exposes it (torch).
#: Measured on torch 2.13: its export ignores the conjugate and negative bits (a conj view
#: exports the unconjugated values) and detaches tensors that require grad; the opaque
#: flags keep conj/neg/quantized tensors off these edges, and requires_grad takes the
#: detached variant, which says so.
_C_NEEDS = Needs(only_dtypes=_C_DTYPES, extra=_c_exchange)


def rows() -> list[ConverterSpec]:
    """Every zero-copy exchange edge between the built-in frameworks."""
    alias = _ALIASES
    gpu = ("cuda",)
    return [
        # numpy ->
        _row("numpy", "torch", C_EXCHANGE, _torch_from_numpy_c,
             0.45, _C_NEEDS),
        _row("numpy", "torch", "torch.from_numpy", _torch_from_numpy_safe, 0.5,
             Needs(no_dtypes=ML, dtype_reason="handled by the unsigned-view variant")),
        _row("numpy", "torch", "torch.from_numpy (unsigned view)", _torch_from_numpy_view, 1.5,
             Needs(only_dtypes=ML)),
        _row("numpy", "tensorflow", "tf from_dlpack(capsule)", _tf_from_protocol, 0.9,
             Needs(no_dtypes=ML, dtype_reason=_NP_EXPORT_ML, no_readonly=True)),
        _row("numpy", "tensorflow", "tf from_dlpack(uint16 capsule) + bitcast",
             _tf_from_numpy_bitcast, 3.0,
             Needs(only_dtypes=frozenset({"bfloat16"}), no_readonly=True)),
        _row("numpy", "jax", "jax.dlpack.from_dlpack", _jax_from_numpy, 30.0,
             Needs(no_dtypes=ML, dtype_reason=_NP_EXPORT_ML, no_readonly=True)),
        # torch ->
        *_torch_rows("torch", "numpy", C_EXCHANGE,
                     _numpy_from_c_exchange, _numpy_from_c_exchange, 0.6,
                     replace(_C_NEEDS, no_flags=_DENSE_FLAGS)),
        *_torch_rows("torch", "numpy", "Tensor.numpy()", _tensor_numpy, _tensor_numpy_detached,
                     0.65, Needs(no_dtypes=ML, dtype_reason="handled by the unsigned-view variant",
                                 no_flags=_DENSE_FLAGS)),
        _row("torch", "numpy", "Tensor.view(uint).numpy().view(ml_dtypes)", _tensor_numpy_view,
             2.0, Needs(only_dtypes=ML, no_flags=_NONE, extra=_ml_dtypes_missing)),
        *_torch_rows("torch", "tensorflow", "tf from_dlpack(torch.to_dlpack)", _tf_from_torch,
                     lambda: detaching(_tf_from_torch()), 1.2, Needs(no_flags=_DENSE_FLAGS)),
        *_torch_rows("torch", "jax", "jax.dlpack.from_dlpack", _jax_from_torch,
                     lambda: detaching(_jax_from_torch()), 36.0, Needs(no_flags=_DENSE_FLAGS),
                     devices=("cpu", "cuda")),
        # jax ->
        _row("jax", "numpy", "np.asarray", _np_asarray, 0.7,
             Needs(no_flags=_NONE), readonly_result=True, note=_RO_NOTE),
        _row("jax", "torch", "torch.from_numpy(np.asarray)", _torch_via_numpy, 1.35,
             Needs(no_dtypes=ML, dtype_reason="torch.from_numpy has no ml_dtypes support",
                   no_flags=_NONE), note=alias["JAX"]),
        _row("jax", "torch", "torch.from_dlpack", _torch_from_dlpack, 4.9,
             Needs(no_flags=_NONE), note=alias["JAX"], devices=("cpu", "cuda")),
        _row("jax", "tensorflow", "tf from_dlpack(capsule)", _tf_from_protocol, 3.3,
             Needs(no_flags=_NONE)),
        # tensorflow ->
        _row("tensorflow", "numpy", "np.asarray", _np_asarray, 0.6,
             Needs(no_dtypes=ML, dtype_reason="handled by the read-only variant",
                   no_flags=_NONE), readonly_result=True, note=_RO_NOTE),
        _row("tensorflow", "numpy", "np.asarray (made read-only)", _tf_to_numpy, 0.65,
             Needs(only_dtypes=ML, no_flags=_NONE), readonly_result=True, note=_RO_NOTE),
        _row("tensorflow", "torch", "torch.from_numpy(np.asarray)", _torch_via_tf_view, 1.3,
             Needs(no_dtypes=ML, dtype_reason="torch.from_numpy has no ml_dtypes support",
                   no_flags=_NONE), note=alias["TensorFlow"]),
        _row("tensorflow", "torch", "torch.from_dlpack", _torch_from_dlpack, 2.2,
             Needs(no_flags=_NONE), note=alias["TensorFlow"]),
        _row("tensorflow", "jax", "jax.dlpack.from_dlpack", _jax_from_tf, 30.0,
             Needs(no_flags=_NONE)),
        # cupy <-> torch, jax (CUDA only)
        _row("cupy", "torch", "torch.from_dlpack", _torch_from_cupy, 2.0, Needs(), devices=gpu),
        _row("cupy", "jax", "jax.dlpack.from_dlpack", _jax_from_cupy, 30.0, Needs(), devices=gpu),
        *_torch_rows("torch", "cupy", "cupy.from_dlpack", _cupy_from_dlpack,
                     lambda: detaching(_cupy_from_dlpack()), 1.5, Needs(no_flags=_DENSE_FLAGS),
                     devices=gpu),
        _row("jax", "cupy", "cupy.from_dlpack", _cupy_from_dlpack, 5.0,
             Needs(no_flags=_NONE), note=alias["JAX to CuPy"], devices=gpu),
    ]  # fmt: skip


def copy_rows() -> list[ConverterSpec]:
    """Copy edges for what no zero-copy edge can carry."""
    return [
        ConverterSpec(
            name="jax.lax.bitcast_convert_type(uint view)", source="numpy", target="jax",
            load=_jax_from_numpy_bitcast, zero_copy=False, cost=40.0,
            accepts=Needs(only_dtypes=ML, no_flags=_NONE),
        ),
    ]  # fmt: skip


@hookimpl
def interop_converters() -> list[ConverterSpec]:
    """Zero-copy exchange edges, plus the copies no framework copy can replace."""
    return rows() + copy_rows()
