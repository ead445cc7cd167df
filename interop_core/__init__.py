"""interop_core: route arrays between NumPy, PyTorch, JAX and TensorFlow, zero-copy first.

``import interop_core`` imports the standard library and pluggy only; frameworks are
imported by the plugins' converters when a route first needs them.
"""

from .declare.context import CallContext
from .declare.errors import (
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
    UnhashableTypeError,
    UnknownFrameworkError,
    UnsupportedTransformError,
)
from .declare.hookspecs import hookimpl, hookspec
from .declare.specs import (
    ANY,
    ConverterSpec,
    Device,
    FrameworkSpec,
    Kind,
    KindSpec,
    KnownFramework,
    PlanKey,
    TensorInfo,
)
from .engine.planner import Route, RouteTree, Step
from .engine.registry import Registry
from .face.api import (
    default_registry,
    explain,
    register,
    set_default_registry,
    to,
    unregister,
)

__version__ = "0.1.0"

__all__ = [
    "ANY",
    "CallContext",
    "ContainerError",
    "ConversionError",
    "ConverterSpec",
    "CopyRequiredError",
    "Device",
    "DeviceError",
    "FrameworkNotInstalledError",
    "FrameworkSpec",
    "InteropError",
    "InvalidArrayError",
    "Kind",
    "KindSpec",
    "KnownFramework",
    "NoRouteError",
    "NotAnArrayError",
    "OptionError",
    "PlanKey",
    "PluginError",
    "Registry",
    "Route",
    "RouteTree",
    "Step",
    "TensorInfo",
    "UnhashableTypeError",
    "UnknownFrameworkError",
    "UnsupportedTransformError",
    "__version__",
    "default_registry",
    "explain",
    "hookimpl",
    "hookspec",
    "register",
    "set_default_registry",
    "to",
    "unregister",
]
