"""Every hook a plugin may implement (pluggy hookspecs).

The registry calls the declaration hooks (``interop_frameworks``, ``interop_kinds``,
``interop_converters``) when it is built and again after each ``register()``/
``unregister()``; each returns immutable specs and has no side effects. Questions about one
object (``interop_detect``, ``interop_parse_device``) are ``firstresult`` hooks asked on the
slow path only: the first answer that is not None wins. The built-in plugins answer them
``trylast`` (or, for detection, through their declared specs, which are asked after every
implementation), so a third party's implementation overrides theirs. No hook is called on
the warm path of ``to()``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pluggy

from .specs import ConverterSpec, Device, FrameworkSpec, Kind, KindSpec

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
def interop_kinds() -> Sequence[Kind | KindSpec]:
    """Declare kinds of object (functions, iterators, ...) and the objects of them.

    Called by the registry once per build, after ``interop_frameworks``. Return a sequence
    of :class:`Kind` (what a kind is: its traits, how ``copy=`` and ``device=`` apply, ...;
    arrays are the core's own; several plugins may declare one kind alike, a different
    declaration of a taken name is a conflict) and :class:`KindSpec` (how objects of a kind
    are found; each names a declared framework, ``ANY`` for objects of none, or "" for
    objects that do not say which framework they belong to: plain Python callables, where
    the user passes ``source=``). A framework's arrays are its FrameworkSpec. Must not
    import any framework.
    """


@hookspec(firstresult=True)
def interop_detect(obj: Any) -> str | None:
    """Name the framework whose array ``obj`` is, or return None when it is not yours.

    Called by ``to()``/``explain()`` (slow path) the first time an object of ``obj``'s
    class is seen; the answer holds for every object of that class (it is cached per
    type). Asked before the frameworks' declared ``array_types`` and array protocols,
    which answer when every implementation returns None: so a third party can claim a
    class (a wrapper tensor) for a framework whose spec then describes and converts it.
    Must not import a framework.
    """


@hookspec(firstresult=True)
def interop_parse_device(device: Any) -> Device | None:
    """Read a framework's own device object or string as a :class:`Device`.

    Called by ``to()``/``explain()`` (slow path) for a ``device=`` that is neither a Device
    nor a string ``Device.parse`` reads ("cuda:1"), e.g. ``torch.device("cuda", 1)``, a JAX
    device or "/device:GPU:0". Return None for anything that is not yours; the first answer
    that is not None is used. Built-in plugins implement it with ``trylast=True``. Must not
    import a framework: an object of one exists only once it is imported.
    """
