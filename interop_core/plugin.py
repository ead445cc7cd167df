"""Everything a plugin author needs, from one module (as tox has ``tox.plugin``).

A plugin imports from here only: the :data:`~interop_core.hookimpl` marker, the specs its
hooks return (:class:`~interop_core.FrameworkSpec`, :class:`~interop_core.ConverterSpec`,
:class:`~interop_core.KindSpec`, ...), the declarative predicate :class:`Needs`, refusal
records (:class:`Reason` and its categories), the :class:`~interop_core.CallContext` a
converter may ask for, the errors a converter raises, and the readers of the standard array
protocols (DLPack, the buffer protocol, array interfaces)::

    from interop_core.plugin import ConverterSpec, FrameworkSpec, Needs, hookimpl

The names here are the plugin API: the modules behind them (``interop_core.declare``,
``interop_core.engine``, ``interop_core.kit``) may move. A name is here because plugins use
it (the built-in ones, or docs/plugins.md's examples) or it belongs to what they declare,
return or raise (every error, every refusal category, the records the readers return); the
engine's other helpers stay in their modules. Importing this module imports no
framework and nothing beyond the standard library, pluggy and interop_core itself; the
protocol readers (``read_buffer``, ``read_capsule``, ...) load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .declare.context import CallContext
from .declare.errors import (
    DEVICE,
    DTYPE,
    FLAG,
    GLOBAL_FLAG,
    LAYOUT,
    ON_REQUEST,
    OTHER,
    READONLY,
    UNALIGNED,
    VARIANT,
    CheckpointError,
    ContainerError,
    ConversionError,
    CopyRequiredError,
    DeviceError,
    FrameworkNotInstalledError,
    InteropError,
    InvalidArrayError,
    NoRouteError,
    NotAnArrayError,
    OptionError,
    PluginError,
    PluginWarning,
    Reason,
    RefusedEdge,
    TensorFileError,
    UnhashableTypeError,
    UnknownFrameworkError,
    UnsupportedTransformError,
    category,
)
from .declare.hookspecs import Checkpointer, WorkersPlan, hookimpl
from .declare.predicates import GlobalFlag, Needs
from .declare.specs import (
    ALIGNMENT,
    ANY,
    CPU,
    DTYPES,
    FUNCTION,
    ITEMSIZE,
    ITERATOR,
    MOVE_COST,
    PIPELINE,
    AlignedAllocator,
    Allocator,
    ArrayEdge,
    ArrayTraits,
    Casting,
    ConverterSpec,
    Detection,
    Device,
    Devices,
    Diagnostics,
    FileReader,
    Flag,
    Form,
    FormSpec,
    FrameworkSpec,
    ImportRules,
    Kind,
    KindSpec,
    KnownFramework,
    OrdinaryArrays,
    Package,
    PlanKey,
    TensorInfo,
    c_strides,
    classify_layout,
)
from .engine.casting import Cast, parse_dtype
from .engine.containers import map_leaves
from .native import PURE_PYTHON_ENV, pure_python

if TYPE_CHECKING:
    from .kit.buffers import (
        BufferInfo,
        DLPackInfo,
        InterfaceInfo,
        capsule_address,
        export_capsule,
        has_buffer,
        read_buffer,
        read_capsule,
        read_interface,
    )

#: The protocol readers, imported on first use (PEP 562): their ctypes structures cost
#: ~1.7 ms, and a first call that meets no object speaking a protocol never reads one.
_READERS = frozenset({
    "BufferInfo", "DLPackInfo", "InterfaceInfo", "capsule_address", "export_capsule",
    "has_buffer", "read_buffer", "read_capsule", "read_interface",
})  # fmt: skip


def __getattr__(name: str) -> Any:
    if name not in _READERS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from .kit import buffers

    globals().update({n: getattr(buffers, n) for n in _READERS})  # found directly from now on
    return getattr(buffers, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_READERS})


__all__ = [
    "ALIGNMENT",
    "ANY",
    "CPU",
    "DEVICE",
    "DTYPE",
    "DTYPES",
    "FLAG",
    "FUNCTION",
    "GLOBAL_FLAG",
    "ITEMSIZE",
    "ITERATOR",
    "LAYOUT",
    "MOVE_COST",
    "ON_REQUEST",
    "OTHER",
    "PIPELINE",
    "PURE_PYTHON_ENV",
    "READONLY",
    "UNALIGNED",
    "VARIANT",
    "AlignedAllocator",
    "Allocator",
    "ArrayEdge",
    "ArrayTraits",
    "BufferInfo",
    "CallContext",
    "Cast",
    "Casting",
    "CheckpointError",
    "ContainerError",
    "ConversionError",
    "ConverterSpec",
    "CopyRequiredError",
    "DLPackInfo",
    "Detection",
    "Device",
    "DeviceError",
    "Devices",
    "Diagnostics",
    "FileReader",
    "Flag",
    "Form",
    "FormSpec",
    "FrameworkNotInstalledError",
    "FrameworkSpec",
    "GlobalFlag",
    "ImportRules",
    "InterfaceInfo",
    "InteropError",
    "InvalidArrayError",
    "Kind",
    "KindSpec",
    "KnownFramework",
    "Needs",
    "NoRouteError",
    "NotAnArrayError",
    "OptionError",
    "OrdinaryArrays",
    "Package",
    "PlanKey",
    "PluginError",
    "PluginWarning",
    "Reason",
    "RefusedEdge",
    "TensorFileError",
    "TensorInfo",
    "UnhashableTypeError",
    "UnknownFrameworkError",
    "UnsupportedTransformError",
    "c_strides",
    "capsule_address",
    "category",
    "classify_layout",
    "export_capsule",
    "has_buffer",
    "hookimpl",
    "map_leaves",
    "parse_dtype",
    "pure_python",
    "read_buffer",
    "read_capsule",
    "read_interface",
]

# What the iterator kind's run-time hooks answer (``interop_checkpointer``,
# ``interop_worker_policy``), for the plugins that implement them.
__all__ += ["Checkpointer", "WorkersPlan"]
