"""TensorFlow: framework spec and the in-framework copy."""

from __future__ import annotations

import sys
from typing import Any

from interop_core.plugin import (
    DTYPES,
    Casting,
    ConverterSpec,
    Device,
    Devices,
    Diagnostics,
    Flag,
    FrameworkSpec,
    ImportRules,
    KindSpec,
    Needs,
    Package,
    TensorInfo,
    capsule_address,
    hookimpl,
)

from ..native import native

#: Loaded once it is imported (docs/plugins.md, "Loaded when needed").
INTEROP_ABOUT = ("tensorflow",)

#: TensorFlow holds float8 types but cannot exchange them through DLPack.
_NO_INTEROP = frozenset({"float8_e4m3fn", "float8_e5m2"})

#: What TensorFlow imports without copying (the spec's ``imports``, checked by the planner
#: on every zero-copy edge into TF): C-contiguous, 64-byte aligned buffers. TF's import takes
#: any offset, but its kernels then abort the interpreter ("Check failed: IsAligned()").
IMPORTS = Needs(
    layouts=frozenset({"C"}),
    layout_reason="TensorFlow imports only C-contiguous buffers",
    aligned=True,
    no_flags=frozenset(),
)


def device_of(name: str) -> Device:
    """Device of a TF device string ("/job:localhost/.../device:CPU:0")."""
    kind, _, index = name.rpartition("device:")[2].partition(":")
    kind = kind.lower()
    return Device("cuda" if kind == "gpu" else kind or "cpu", int(index or 0))


@hookimpl(trylast=True)
def interop_parse_device(device: Any) -> Device | None:
    """A TensorFlow device string ("/device:GPU:1", "/job:localhost/.../device:CPU:0") as
    a Device (None for anything else)."""
    if isinstance(device, str) and "device:" in device.lower():
        kind, _, index = device.lower().rpartition("device:")[2].partition(":")
        if kind and (not index or index.isdigit()):
            return Device("cuda" if kind == "gpu" else kind, int(index or 0))
    return None


def _symbolic(t: Any) -> bool:
    return type(t).__name__ != "EagerTensor"


def describe(t: Any) -> TensorInfo:
    """Describe an eager tf.Tensor (always C-contiguous)."""
    shape = tuple(int(d) if d is not None else -1 for d in t.shape)
    symbolic = _symbolic(t)
    return TensorInfo(
        framework="tensorflow",
        dtype=t.dtype.name,
        device=Device() if symbolic else device_of(t.device),
        shape=shape,
        layout="C",
        readonly=False,
        # TF's kernels require 64-byte alignment (they abort otherwise) and the router hands
        # TF only aligned buffers, so every usable TF tensor is aligned.
        aligned=True,
        flags=frozenset({"symbolic"}) if symbolic else frozenset(),
    )


def key(t: Any) -> Any:
    """Warm-path key: dtype enum and device string (DType objects hash slowly)."""
    try:
        return (t._datatype_enum(), t.device)
    except AttributeError:  # a symbolic tensor
        return (t.dtype, None)


def warm_key() -> Any:
    """key, read in C where the plugins' extension is built (the same tuples: the dtype enum
    and the device string; what raises, a symbolic tensor, goes to key), else key itself."""
    fast = native()
    if fast is None:
        return key
    return fast.AttrKey(("_datatype_enum", "device"), (True, False), key)


def data_ptr(t: Any) -> int:
    """Address of the first element (read through a DLPack capsule, CPU or GPU)."""
    import tensorflow as tf

    return capsule_address(tf.experimental.dlpack.to_dlpack(t))


def example(data: Any, dtype: str) -> Any:
    """A tf.Tensor of ``data`` with canonical ``dtype``."""
    import tensorflow as tf

    return tf.constant(data, dtype=getattr(tf, dtype))


def astype(t: Any, dtype: str) -> Any:
    """``t`` cast to canonical ``dtype`` (``to(..., dtype=)``): a new tensor on its device."""
    import tensorflow as tf

    return tf.cast(t, getattr(tf, dtype))


def _devices() -> list[str]:
    import tensorflow as tf

    return [str(device_of(d.name)) for d in tf.config.list_logical_devices()]


# A tf.Variable converts as its current value: read_value() shares the variable's buffer,
# and TensorFlow copies that buffer on the next assign() while the value is alive (measured:
# the value and its numpy view keep the old data, the variable moves to a new buffer).

_SNAPSHOT = (
    "a snapshot of the variable's current value, sharing its buffer: later assign() calls "
    "do not change the result (TensorFlow copies the variable's buffer on write)"
)


def describe_variable(v: Any) -> TensorInfo:
    """Describe a tf.Variable as the tensor its current value is."""
    return describe(v.read_value())._replace(framework="tensorflow.Variable")


def variable_key(v: Any) -> Any:
    """Warm-path key: dtype and device string."""
    return (v.dtype, v.device)


def variable_ptr(v: Any) -> int:
    """Address of the variable's current buffer."""
    return data_ptr(v.read_value())


def _read_value(v: Any) -> Any:
    return v.read_value()  # a method of each variable class (tf.Variable's own is abstract)


def _load_copy() -> Any:
    import tensorflow as tf

    deep_copy = tf.raw_ops.DeepCopy

    def copy(t: Any) -> Any:
        return deep_copy(x=t)  # tf.identity would return the same buffer

    return copy


def read_dtype(value: Any) -> str | None:
    """The canonical name of a tf.DType (tf.int32), or of a name written "tf.int32"; None
    for anything else. Imports nothing."""
    if isinstance(value, str):
        for prefix in ("tf.", "tensorflow."):
            if value.startswith(prefix):
                return value.removeprefix(prefix)
        return None
    if type(value).__module__.startswith("tensorflow") and hasattr(value, "as_numpy_dtype"):
        return str(value.name)
    return None


@hookimpl
def interop_frameworks() -> list[FrameworkSpec]:
    """TensorFlow: eager tf.Tensor (symbolic tensors inside tf.function are refused)."""
    return [
        FrameworkSpec(
            name="tensorflow",
            aliases=("tf",),
            array_types=("tensorflow.Tensor",),
            describe=describe,
            key=warm_key(),
            data_ptr=data_ptr,
            example=example,
            dtypes=frozenset(DTYPES) - _NO_INTEROP,
            flags=(
                Flag(
                    "symbolic",
                    "a symbolic TensorFlow tensor has no buffer (convert outside tf.function)",
                    opaque=True,
                ),
            ),
            package=Package(
                distribution="tensorflow",
                install_hint="pip install 'interop-core[tensorflow]' (or tensorflow-cpu)",
            ),
            rules=ImportRules(imports=IMPORTS),
            devices=Devices(visible=_devices, kinds=("cpu", "cuda")),
            casting=Casting(astype=astype, read_dtype=read_dtype),
            diagnostics=Diagnostics(constructor="tensorflow.constant"),
        ),
        FrameworkSpec(
            name="tensorflow.Variable",
            array_types=("tensorflow.Variable",),
            describe=describe_variable,
            key=variable_key,
            data_ptr=variable_ptr,
            dtypes=frozenset(DTYPES) - _NO_INTEROP,
            target=False,
            package=Package(distribution="tensorflow"),
        ),
    ]


@hookimpl
def interop_converters() -> list[ConverterSpec]:
    """The TensorFlow copy (DeepCopy: a new buffer, C-contiguous)."""
    return [
        ConverterSpec(
            name="tf.raw_ops.DeepCopy",
            source="tensorflow",
            target="tensorflow",
            load=_load_copy,
            zero_copy=False,
            # A ragged or sparse tensor (of an opaque form) is copied by its own edges.
            accepts=Needs(no_flags=frozenset()),
            devices=frozenset({"cpu", "cuda"}),
            cost=3.0,
        ),
        ConverterSpec(
            name="Variable.read_value()",
            source="tensorflow.Variable",
            target="tensorflow",
            load=lambda: _read_value,
            zero_copy=True,
            devices=frozenset({"cpu", "cuda"}),
            note=_SNAPSHOT,
        ),
    ]


@hookimpl
def interop_kinds() -> list[KindSpec]:
    """tf.function objects, restored SavedModel functions included, and concrete functions."""
    return [
        KindSpec(
            kind="function",
            framework="tensorflow",
            types=(
                "tensorflow.python.types.core.PolymorphicFunction",
                "tensorflow.python.types.core.ConcreteFunction",
            ),
            description="a tf.function",
        ),
        KindSpec(
            kind="function",
            framework="tensorflow",
            claims=_is_tf_keras_layer,
            description="a Keras model or layer on the TensorFlow backend",
        ),
    ]


def _is_tf_keras_layer(obj: Any) -> bool:
    """A Keras 3 layer or model whose backend is TensorFlow (one on the JAX or torch
    backend is that framework's code, not TensorFlow's). Imports nothing: without Keras
    imported no object can be a Keras layer."""
    keras: Any = sys.modules.get("keras")
    layer = getattr(keras, "Layer", None)
    if layer is None or not isinstance(obj, layer):
        return False
    return bool(keras.backend.backend() == "tensorflow")
