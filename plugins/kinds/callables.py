"""Plain Python callables: a function kind whose framework the user names with source=.

A plain ``def`` (or lambda, functools.partial, jax.grad's result) does not say which
framework it computes with, so ``to(f, "tensorflow", source="jax")`` names it. Classes are
callable too, but they are not functions to convert.
"""

from __future__ import annotations

from typing import Any

from interop_core.plugin import FUNCTION, Kind, KindSpec, hookimpl

#: The function kind: converted once, used many times (no warm path); ``copy=`` is refused
#: (a function is wrapped); bound to no device unless ``device=`` asks. Declared here only:
#: the framework plugins (jax, tensorflow, torch) declare the KindSpecs that find their
#: functions and leave the kind to this plugin. Without it registered, those KindSpecs and
#: the function edges are ignored, each with a PluginWarning saying no plugin declares it.
FUNCTIONS = Kind(
    FUNCTION,
    label="bridge",
    usage="to(f, target, source=...); explain() has the caveats",
    reuse=True,
)


def _plain_callable(obj: Any) -> bool:
    return callable(obj) and not isinstance(obj, type)


@hookimpl
def interop_kinds() -> list[Kind | KindSpec]:
    """The function kind, and any other callable, framework unknown until the user names
    it."""
    return [
        FUNCTIONS,
        KindSpec(
            kind=FUNCTION,
            framework="",
            claims=_plain_callable,
            description="a Python function",
        ),
    ]
