"""Every hook a plugin may implement (pluggy hookspecs).

The registry calls these hooks when it is built and again after each
``register()``/``unregister()``; never on the warm path of ``to()``. Each hook returns
immutable specs and has no side effects.
"""

from __future__ import annotations

from collections.abc import Sequence

import pluggy

from .specs import ConverterSpec, FrameworkSpec, KindSpec

PROJECT = "interop_core"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def interop_frameworks() -> Sequence[FrameworkSpec]:
    """Declare the frameworks this plugin knows.

    Called by the registry once per build (at first use, and after a plugin is registered
    or unregistered). Return a sequence of :class:`FrameworkSpec`; names must be unique
    across plugins, and a conflict names both plugins. Must not import the framework.
    """


@hookspec
def interop_converters() -> Sequence[ConverterSpec]:
    """Declare converter edges of the route graph.

    Called by the registry once per build, after ``interop_frameworks``. Return a sequence
    of :class:`ConverterSpec`; each edge's ``source`` and ``target`` must name declared
    frameworks (edges to frameworks nobody declared are dropped with a warning). Must not
    import any framework: converters import inside their bodies.
    """


@hookspec
def interop_kinds() -> Sequence[KindSpec]:
    """Declare objects of kinds other than arrays that frameworks own (functions, ...).

    Called by the registry once per build, after ``interop_frameworks``. Return a sequence
    of :class:`KindSpec`; each names a declared framework, or "" for objects that do not
    say which framework they belong to (plain Python callables: the user passes
    ``source=``). A framework's arrays are its FrameworkSpec; this hook adds the rest.
    Must not import any framework.
    """
