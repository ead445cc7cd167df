"""Helpers for tests of interop_core and of third-party plugins.

- ``isolated_registry()`` makes a fresh registry the default for a ``with`` block, in the
  current thread (or asyncio task) only;
  ``spec_of()``, ``framework_of()``, ``data_ptr()`` and ``shares_memory()`` read through
  the framework specs.
- :func:`independent_data_ptr` and :func:`protocol_view` read an object's memory through a
  standard protocol (``__array_interface__``, ``__cuda_array_interface__``, DLPack, the
  buffer protocol), not through any plugin (from ``interop_core.kit.buffers``).
- :func:`check_framework` and :class:`ConformanceError`: the conformance kit (from
  ``interop_core.kit.conformance``).

This module imports no framework.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .declare.errors import NotAnArrayError
from .declare.specs import FrameworkSpec
from .engine.registry import Registry
from .face.api import default_registry, using_registry
from .kit.buffers import ProtocolView, independent_data_ptr, protocol_view
from .kit.conformance import ConformanceError, check_framework

__all__ = [
    "ConformanceError",
    "ProtocolView",
    "check_framework",
    "data_ptr",
    "framework_of",
    "independent_data_ptr",
    "isolated_registry",
    "protocol_view",
    "shares_memory",
    "spec_of",
]


@contextmanager
def isolated_registry(
    *plugins: Any, builtins: bool = False, entry_points: bool = False
) -> Iterator[Registry]:
    """A fresh Registry with only ``plugins`` (and the built-ins if asked) as the default.

    It is the default in this thread (or asyncio task) only, so tests in other threads
    keep theirs: threads started in the block run their target in
    ``contextvars.copy_context()`` to use it too.
    """
    reg = Registry(builtins=builtins, entry_points=entry_points)
    for plugin in plugins:
        reg.register(plugin)
    with using_registry(reg):
        yield reg


def spec_of(x: Any, registry: Registry | None = None) -> FrameworkSpec:
    """The spec of the framework owning ``x``; NotAnArrayError if none does."""
    spec = (registry or default_registry()).ready().detect(x)
    if spec is None:
        raise NotAnArrayError(f"{type(x).__qualname__} is not an array of a registered framework")
    return spec


def framework_of(x: Any, registry: Registry | None = None) -> str:
    """Name of the framework owning ``x``."""
    return spec_of(x, registry).name


def data_ptr(x: Any, registry: Registry | None = None) -> int:
    """Address of the first element of ``x``."""
    return spec_of(x, registry).data_ptr(x)


def shares_memory(a: Any, b: Any, registry: Registry | None = None) -> bool:
    """True when ``a`` and ``b`` start at the same address (a zero-copy result of ``to``)."""
    return data_ptr(a, registry) == data_ptr(b, registry)
