"""interop_core: move arrays, functions and data pipelines between array frameworks over a
graph of converters that plugins declare, zero-copy first, saying which route it took.

What users import is here: ``to()``, ``explain()``, the errors, the specs and ``Route``.
Plugin authors import from :mod:`interop_core.plugin` and test with
:mod:`interop_core.testing`. ``import interop_core`` is light: it loads
``to()``, ``explain()`` and the other functions of ``interop_core.face.api``, which need
only ``contextvars``; every other name here (the errors, the specs, ``Route``, ``Registry``,
``hookimpl``) loads its module on first use (PEP 562), and the engine, pluggy and the
plugins load when the first ``to()`` builds the registry. The frameworks (which the
built-in plugins teach) are imported by converters when a route first needs them.
"""

from .face.api import default_registry, register, set_default_registry, unregister

# typing.TYPE_CHECKING without importing typing (see face/api.py): type checkers and IDEs
# read the imports below; at run time __getattr__ loads each name when first asked for.
# to() and explain() are face/api.py's at run time (the else: branch); type checkers read
# their overloads in face/typed.py instead (the result's type from target and source).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from .declare.context import CallContext
    from .declare.errors import (
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
        TensorFileError,
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
    from .engine.registry import Registry
    from .engine.routes import Route, RouteTree, Step
    from .face.memory import aligned_memory, set_aligned_memory
    from .face.typed import explain, to
    from .targets import Target
else:
    from .face.api import explain, to

#: The names loaded on first use, and the module (under interop_core) each comes from: the
#: same as the imports above (tests/test_import.py checks both against __all__).
_LAZY = {
    "CallContext": "declare.context",
    **dict.fromkeys(
        (
            "CheckpointError", "ContainerError", "ConversionError", "CopyRequiredError",
            "DeviceError",
            "FrameworkNotInstalledError", "InteropError", "InvalidArrayError", "NoRouteError",
            "NotAnArrayError", "OptionError", "PluginError", "TensorFileError",
            "UnhashableTypeError",
            "UnknownFrameworkError", "UnsupportedTransformError",
        ),
        "declare.errors",
    ),
    "hookimpl": "declare.hookspecs",
    "hookspec": "declare.hookspecs",
    **dict.fromkeys(
        (
            "ANY", "ConverterSpec", "Device", "FrameworkSpec", "Kind", "KindSpec",
            "KnownFramework", "PlanKey", "TensorInfo",
        ),
        "declare.specs",
    ),
    "Route": "engine.routes",
    "RouteTree": "engine.routes",
    "Step": "engine.routes",
    "Registry": "engine.registry",
    "aligned_memory": "face.memory",
    "set_aligned_memory": "face.memory",
    "Target": "targets",
}  # fmt: skip

__version__ = "0.1.0"

__all__ = [
    "ANY",
    "CallContext",
    "CheckpointError",
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
    "Target",
    "TensorFileError",
    "TensorInfo",
    "UnhashableTypeError",
    "UnknownFrameworkError",
    "UnsupportedTransformError",
    "__version__",
    "aligned_memory",
    "default_registry",
    "explain",
    "hookimpl",
    "hookspec",
    "register",
    "set_aligned_memory",
    "set_default_registry",
    "to",
    "unregister",
]


if not TYPE_CHECKING:  # hidden from type checkers: a misspelt name stays an error there

    def __getattr__(name: str) -> object:
        """Load a public name's module on first use (PEP 562) and keep the name here."""
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(__import__(f"{__name__}.{module}", fromlist=[name]), name)
        globals()[name] = value  # later lookups find it without calling __getattr__
        return value

    def __dir__() -> list[str]:
        """The module's names, the public ones not loaded yet included."""
        return sorted(set(globals()) | set(__all__))
