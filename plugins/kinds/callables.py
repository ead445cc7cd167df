"""Plain Python callables: a function kind whose framework the user names with source=.

A plain ``def`` (or lambda, functools.partial, jax.grad's result) does not say which
framework it computes with, so ``to(f, "tensorflow", source="jax")`` names it. Classes are
callable too, but they are not functions to convert.
"""

from __future__ import annotations

from typing import Any

from interop_core import KindSpec, hookimpl


def _plain_callable(obj: Any) -> bool:
    return callable(obj) and not isinstance(obj, type)


@hookimpl
def interop_kinds() -> list[KindSpec]:
    """Any other callable, framework unknown until the user names it."""
    return [
        KindSpec(
            kind="function",
            framework="",
            claims=_plain_callable,
            description="a Python function",
        )
    ]
