"""interop_core: route arrays between NumPy, PyTorch, JAX and TensorFlow, zero-copy first.

``import interop_core`` imports the standard library and pluggy only; frameworks are
imported by the plugins' converters when a route first needs them.
"""

from .api import (
    DeviceError,
    default_registry,
    explain,
    register,
    set_default_registry,
    to,
    unregister,
)
from .containers import ContainerError
from .context import CallContext
from .detect import UnhashableTypeError
from .errors import (
    ConversionError,
    CopyRequiredError,
    FrameworkNotInstalledError,
    InteropError,
    InvalidArrayError,
    NoRouteError,
    NotAnArrayError,
    OptionError,
    PluginError,
    UnknownFrameworkError,
    UnsupportedTransformError,
)
from .hookspecs import hookimpl, hookspec
from .planner import Route, RouteTree, Step
from .registry import Registry
from .specs import (
    ANY,
    ConverterSpec,
    Device,
    FrameworkSpec,
    KindSpec,
    KnownFramework,
    PlanKey,
    TensorInfo,
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
