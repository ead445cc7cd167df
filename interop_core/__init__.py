"""interop_core: move arrays, functions and data pipelines between array frameworks over a
graph of converters that plugins declare, zero-copy first, saying which route it took.

What users import is here: ``to()``, ``explain()``, the errors, the specs and ``Route``.
Plugin authors import from :mod:`interop_core.plugin` and test with
:mod:`interop_core.testing`. ``import interop_core`` imports the standard library and
pluggy only; the frameworks (which the built-in plugins teach) are imported by converters
when a route first needs them.
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
