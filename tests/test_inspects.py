"""``ConverterSpec.inspects``: an edge of a kind converted once looks at the object itself
(what no key says: a TF function's graph has operations tf2jax cannot translate). A refusal
leaves the edge out for that object only, explain() names the reason, and the cached route
of other objects is untouched. Toy frameworks only: this runs in every session."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from toys import AlphaArr, BetaArr, share, toy

from interop_core import (
    ConversionError,
    ConverterSpec,
    FrameworkSpec,
    KindSpec,
    Registry,
    explain,
    hookimpl,
    to,
)
from interop_core.declare.context import CallContext
from interop_core.declare.errors import PluginWarning
from interop_core.testing import isolated_registry


class AlphaFunction:
    """An alpha function; ``blocked`` is what the picky edge refuses it for ("": nothing)."""

    def __init__(self, blocked: str = "") -> None:
        self.blocked = blocked

    def __call__(self, x: Any) -> Any:
        return x


#: Objects the picky edge inspected, in order.
INSPECTED: list[Any] = []


def picky(fn: AlphaFunction) -> str | None:
    INSPECTED.append(fn)
    if fn.blocked == "raise":
        raise RuntimeError("cannot read its graph")
    return fn.blocked or None


def bridge(name: str, cost: float, **kw: Any) -> ConverterSpec:
    """An alpha -> beta function edge whose result says which edge made it."""

    def load() -> Callable[[Any, CallContext], Any]:
        def convert(fn: Any, ctx: CallContext) -> Any:
            def wrapped(x: Any) -> Any:
                return fn(x)

            wrapped.made_by = name  # type: ignore[attr-defined]
            return wrapped

        return convert

    return ConverterSpec(
        name=name, source="alpha", target="beta", zero_copy=True, kind="function",
        context=True, rerun=False, load=load, cost=cost, **kw,
    )  # fmt: skip


class Toys:
    """alpha and beta; two function edges alpha -> beta: "native" (cheap, inspects) and
    "wrapped" (dearer, takes anything)."""

    def __init__(self, with_wrapped: bool = True) -> None:
        self.with_wrapped = with_wrapped

    @hookimpl
    def interop_frameworks(self) -> list[FrameworkSpec]:
        return [toy("alpha", AlphaArr), toy("beta", BetaArr)]

    @hookimpl
    def interop_kinds(self) -> list[KindSpec]:
        path = f"{AlphaFunction.__module__}.{AlphaFunction.__qualname__}"
        return [KindSpec("function", "alpha", types=(path,), description="an alpha function")]

    @hookimpl
    def interop_converters(self) -> list[ConverterSpec]:
        edges = [bridge("native", 0.5, inspects=picky)]
        if self.with_wrapped:
            edges.append(bridge("wrapped", 1.0))
        return edges


@pytest.fixture
def reg() -> Iterator[Registry]:
    import interop_plugins.kinds.callables as callables

    INSPECTED.clear()
    with isolated_registry(callables) as r:
        r.register(Toys(), name="toys")
        yield r


def test_an_accepted_object_takes_the_inspecting_edge(reg: Registry) -> None:
    fn = AlphaFunction()
    route = explain(fn, "beta")
    assert [s.converter for s in route.steps] == ["native"]
    assert route.refused == () and not any("not native" in n for n in route.notes)
    assert to(fn, "beta").made_by == "native"
    assert [fn, fn] == INSPECTED  # explain() and to() each looked once


def test_a_refused_object_takes_another_route_and_explain_says_why(reg: Registry) -> None:
    fn = AlphaFunction("it holds the operation StringLength")
    route = explain(fn, "beta")
    assert [s.converter for s in route.steps] == ["wrapped"]
    assert [r.converter for r in route.refused] == ["native"]
    assert route.refused[0].reason == "it holds the operation StringLength"
    assert any("not native [alpha->beta]" in n and "StringLength" in n for n in route.notes)
    assert "StringLength" in str(route)
    assert to(fn, "beta").made_by == "wrapped"


def test_a_refusal_is_for_that_object_only(reg: Registry) -> None:
    """The cached route of the next object is the cheap one again, and it is inspected."""
    bad, good, other = AlphaFunction("no"), AlphaFunction(), AlphaFunction("no")
    assert to(bad, "beta").made_by == "wrapped"
    assert to(good, "beta").made_by == "native"
    assert to(other, "beta").made_by == "wrapped"
    assert [bad, good, other] == INSPECTED
    # the same function again is handed the same result (Kind.reuse): nothing is inspected
    assert to(bad, "beta") is to(bad, "beta") and [bad, good, other] == INSPECTED


def test_an_inspection_that_raises_refuses_and_says_so(reg: Registry) -> None:
    fn = AlphaFunction("raise")
    route = explain(fn, "beta")
    assert [s.converter for s in route.steps] == ["wrapped"]
    assert "RuntimeError: cannot read its graph" in route.refused[0].reason


def test_with_no_other_route_the_refusal_is_the_error() -> None:
    import interop_plugins.kinds.callables as callables

    with isolated_registry(callables) as r:
        r.register(Toys(with_wrapped=False), name="toys")
        with pytest.raises(ConversionError, match=r"native \[alpha->beta\] refused it: nope"):
            to(AlphaFunction("nope"), "beta")
        assert to(AlphaFunction(), "beta").made_by == "native"


def test_an_array_edge_that_inspects_is_ignored_with_a_warning() -> None:
    """Arrays take the warm path, which reads only their key: an inspection there would
    never run, so the registry says so and leaves the edge out."""

    class Arrays:
        @hookimpl
        def interop_frameworks(self) -> list[FrameworkSpec]:
            return [toy("alpha", AlphaArr), toy("beta", BetaArr)]

        @hookimpl
        def interop_converters(self) -> list[ConverterSpec]:
            view = share("alpha", "beta", BetaArr)
            return [
                ConverterSpec(
                    name="looks", source="alpha", target="beta", zero_copy=True,
                    load=view.load, inspects=lambda x: None,
                ),
                view,
            ]  # fmt: skip

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with isolated_registry(Arrays()):
            route = explain(AlphaArr([1.0]), "beta")
    assert [s.converter for s in route.steps] == [share("alpha", "beta", BetaArr).name]
    found = [w for w in caught if issubclass(w.category, PluginWarning)]
    assert any("'looks'" in str(w.message) and "warm path" in str(w.message) for w in found)
