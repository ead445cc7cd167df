"""Plans: a route bound to its conversion functions, and running it.

A :class:`Plan` is what the plan cache holds and the warm path runs: its :attr:`Plan.run`
performs every step, and a failure names the step (:class:`StepFailed`), so no step is
run twice to find out which failed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..declare.predicates import GlobalFlag
from ..declare.records import NamedTuple
from ..declare.specs import ConverterSpec
from .routes import Route

Runner = Callable[[Any], Any]


class StepFailed(Exception):
    """Raised by a multi-step runner: step ``index`` failed with ``error``."""

    def __init__(self, index: int, error: Exception) -> None:
        super().__init__(index, error)
        self.index = index
        self.error = error


class Plan(NamedTuple):
    """A route bound to its conversion functions: ``run(x)`` performs it."""

    route: Route
    funcs: tuple[Runner, ...]
    edges: tuple[ConverterSpec, ...]
    #: Does the array's 64-byte alignment change the route: "yes", "no" or "maybe".
    by_alignment: str = "maybe"
    #: Global flags the route turns on: their values join the plan key.
    flags: tuple[GlobalFlag, ...] = ()

    @property
    def run(self) -> Runner:
        """The fastest callable performing the route (the single function when one step).

        A one-step runner raises what its converter raises; a longer one raises
        :class:`StepFailed` naming the step, so no step is ever run twice to find out.
        """
        if not self.funcs:
            return _identity
        if len(self.funcs) == 1:
            return self.funcs[0]
        funcs = tuple(enumerate(self.funcs))

        def run(x: Any) -> Any:
            for i, f in funcs:
                try:
                    x = f(x)
                except Exception as exc:
                    raise StepFailed(i, exc) from exc
            return x

        return run

    def failed_step(self, exc: Exception) -> tuple[ConverterSpec, Exception]:
        """The edge whose step raised ``exc`` (as raised by :attr:`run`), and its error."""
        if isinstance(exc, StepFailed):
            return self.edges[exc.index], exc.error
        return self.edges[0], exc


def _identity(x: Any) -> Any:
    return x
