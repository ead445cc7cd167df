"""The call context handed to converters that declare ``context=True``.

Function bridges (and, later, pipelines) convert their arguments and results on every
call. They do it through :attr:`CallContext.to`, a ``to()`` bound to the registry snapshot
the route was planned in, so a bridge never imports the public API and never sees a
half-rebuilt registry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import field
from types import MappingProxyType
from typing import Any

from .records import record
from .specs import Device


@record
class CallContext:
    """What a converter is told about the request it serves."""

    #: The goal device with its index (for a function: where its results should live;
    #: None when the user asked for none).
    device: Device | None = None
    #: The options of the request that this converter declared (``ConverterSpec.options``).
    options: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    #: ``to(obj, target, *, device=None, copy=None, **options)`` on the same registry snapshot.
    to: Callable[..., Any] = field(default=lambda *a, **k: _unbound(), repr=False)
    #: The request's ``copy=`` (for kinds whose items are arrays: iterators).
    copy: bool | None = None
    #: The framework the request targets (an edge to ``ANY`` reaches it).
    target: str = ""
    #: The registry's hook relay (pluggy's ``pm.hook``), for the hooks a converter asks at
    #: run time: ``ctx.hook.interop_checkpointer(source=obj)``. None when the context was
    #: built without a registry: the converter uses its plugin's own answers then.
    hook: Any = field(default=None, repr=False, compare=False)

    def option(self, name: str, default: Any = None) -> Any:
        """The value the user gave for option ``name``, or ``default``."""
        return self.options.get(name, default)


def _unbound() -> Any:
    raise RuntimeError("this CallContext has no registry: build it with to=interop_core.to")
