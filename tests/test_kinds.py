"""Kinds other than arrays on the graph: detection, source=, options, the call context,
composition, never re-running a callable. Toy frameworks only: this runs in every session.

The toy "functions" are callables of a toy framework; their bridges convert the toy arrays
they are called with through the context's ``to()``, as the real JAX/TF/torch bridges do.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from toys import AlphaArr, Arr, BetaArr, DeltaArr, GammaArr, share, toy

from interop_core import (
    ConversionError,
    ConverterSpec,
    Device,
    FrameworkSpec,
    KindSpec,
    NoRouteError,
    NotAnArrayError,
    OptionError,
    Registry,
    explain,
    hookimpl,
    to,
)
from interop_core.declare.context import CallContext
from interop_core.testing import isolated_registry


class AlphaFunction:
    """A function object that says it belongs to alpha (as jax.jit's result does)."""

    def __init__(self, f: Callable[..., Any]) -> None:
        self.f = f

    def __call__(self, *args: Any) -> Any:
        return self.f(*args)


#: What the bridges saw, in call order.
SEEN: list[tuple[str, Any]] = []


def bridge(name: str, source: str, target: str, **kw: Any) -> ConverterSpec:
    """A function edge: the result converts its arguments to ``source`` with ctx.to, calls
    the function, and converts the result to ``target``."""

    def load() -> Callable[[Any, CallContext], Any]:
        def convert(fn: Any, ctx: CallContext) -> Any:
            SEEN.append((name, ctx))
            if ctx.option("fail") == "buffer":
                raise BufferError("this bridge cannot take that function")

            def wrapped(*args: Any) -> Any:
                out = fn(*(ctx.to(a, source) for a in args))
                return ctx.to(out, target)

            return wrapped

        return convert

    return ConverterSpec(
        name=name, source=source, target=target, zero_copy=True, kind="function",
        context=True, rerun=False, load=load, **kw,
    )  # fmt: skip


class Toys:
    """Frameworks alpha, beta, gamma; array views between all; function edges
    alpha->beta (takes option "scale") and beta->gamma."""

    @hookimpl
    def interop_frameworks(self) -> list[FrameworkSpec]:
        return [toy("alpha", AlphaArr), toy("beta", BetaArr), toy("gamma", GammaArr)]

    @hookimpl
    def interop_kinds(self) -> list[KindSpec]:
        path = f"{AlphaFunction.__module__}.{AlphaFunction.__qualname__}"
        return [KindSpec("function", "alpha", types=(path,), description="an alpha function")]

    @hookimpl
    def interop_converters(self) -> list[ConverterSpec]:
        classes = {"alpha": AlphaArr, "beta": BetaArr, "gamma": GammaArr}
        views = [share(s, t, c) for s in classes for t, c in classes.items() if s != t]
        return [
            *views,
            bridge("alpha bridge", "alpha", "beta", options=("scale", "fail")),
            bridge("beta bridge", "beta", "gamma"),
            # Cheaper, but with side effects: taken only when asked for.
            bridge("traced", "alpha", "beta", options=("trace",), opt_in="trace", cost=0.1),
        ]


@pytest.fixture
def reg() -> Iterator[Registry]:
    import interop_plugins.kinds.callables as callables

    SEEN.clear()
    with isolated_registry(callables) as r:
        r.register(Toys(), name="toys")
        yield r


def double(x: Arr) -> AlphaArr:
    assert isinstance(x, AlphaArr), "the bridge hands the function its own arrays"
    return AlphaArr([2 * v for v in x.buf])


def test_a_function_object_is_detected_and_bridged(reg: Registry) -> None:
    g = to(AlphaFunction(double), "beta")
    x = BetaArr([1.0, 2.0])
    y = g(x)
    assert isinstance(y, BetaArr) and list(y.buf) == [2.0, 4.0]
    assert [name for name, _ in SEEN] == ["alpha bridge"]


def test_a_plain_function_needs_source(reg: Registry) -> None:
    with pytest.raises(OptionError, match=r"Pass source= naming it \(one of: alpha, beta\)"):
        to(double, "beta")
    g = to(double, "beta", source="alpha")
    assert list(g(BetaArr([3.0])).buf) == [6.0]


def test_source_must_agree_with_what_the_object_says(reg: Registry) -> None:
    with pytest.raises(OptionError, match="does not match"):
        to(AlphaFunction(double), "gamma", source="beta")
    with pytest.raises(OptionError, match="does not match"):
        to(AlphaArr([1.0]), "beta", source="gamma")
    assert isinstance(to(AlphaArr([1.0]), "beta", source="alpha"), BetaArr)


def test_functions_compose_over_a_planned_route(reg: Registry) -> None:
    route = explain(double, "gamma", source="alpha")
    assert [s.converter for s in route.steps] == ["alpha bridge", "beta bridge"]
    assert route.kind == "function" and route.copies == 0
    assert "alpha function -> beta function" in str(route)
    assert "1. alpha function -> beta function: alpha bridge [toys] bridge" in str(route)
    g = to(double, "gamma", source="alpha")
    y = g(GammaArr([1.5]))
    assert isinstance(y, GammaArr) and list(y.buf) == [3.0]


def test_options_reach_only_the_edge_that_declares_them(reg: Registry) -> None:
    to(double, "gamma", source="alpha", scale=3)
    contexts = dict(SEEN)
    assert dict(contexts["alpha bridge"].options) == {"scale": 3}
    assert dict(contexts["beta bridge"].options) == {}
    assert contexts["alpha bridge"].device is None


def test_unknown_options_name_the_edges_that_take_options(reg: Registry) -> None:
    with pytest.raises(OptionError) as err:
        to(double, "beta", source="alpha", polymorphic_shapes="(b,)")
    msg = str(err.value)
    assert "polymorphic_shapes" in msg
    assert "alpha bridge [alpha->beta function]: scale, fail" in msg
    assert "traced [alpha->beta function]: trace" in msg
    with pytest.raises(OptionError, match="scale"):  # an array route takes no options
        to(AlphaArr([1.0]), "beta", scale=2)
    with pytest.raises(OptionError, match="Unknown option"):
        explain(double, "gamma", source="alpha", colour="red")


def test_unhashable_option_values_are_planned_every_time(reg: Registry) -> None:
    g = to(double, "beta", source="alpha", scale=[1, 2])
    assert list(g(BetaArr([1.0])).buf) == [2.0]
    assert dict(SEEN)["alpha bridge"].options["scale"] == [1, 2]


def test_function_routes_are_cached_by_option_names_not_values(reg: Registry) -> None:
    first = to(double, "beta", source="alpha", scale=2)
    assert to(double, "beta", source="alpha", scale=2) is first  # handed out again (reuse)
    to(double, "beta", source="alpha", scale=5)
    to(double, "beta", source="alpha", scale=[5])  # unhashable values share the route too
    to(double, "beta", source="alpha", scale=[5])  # and, unhashable, are bound each time
    assert len(reg.state.cache.requests) == 1
    assert [c.options["scale"] for _, c in SEEN] == [2, 5, [5], [5]]  # each call's own values


def test_copy_does_not_apply_to_functions(reg: Registry) -> None:
    with pytest.raises(OptionError, match="wrapped, not copied"):
        to(double, "beta", source="alpha", copy=True)


def test_the_device_reaches_the_context(reg: Registry) -> None:
    to(double, "beta", source="alpha", device="cpu")
    assert SEEN[-1][1].device == Device("cpu")
    with pytest.raises(NoRouteError):
        to(double, "beta", source="alpha", device="cuda:1")  # the toy bridges work on cpu


def test_a_failed_function_edge_is_not_rerun_or_replanned(reg: Registry) -> None:
    with pytest.raises(ConversionError, match=r"alpha bridge.*BufferError"):
        to(double, "beta", source="alpha", fail="buffer")
    assert [name for name, _ in SEEN] == ["alpha bridge"]  # ran once, nothing else tried
    assert not reg.state.cache.failed  # nor recorded as a failure to route around


def test_arrays_never_take_function_edges_nor_functions_array_edges(reg: Registry) -> None:
    class Plugin:
        @hookimpl
        def interop_frameworks(self) -> list[FrameworkSpec]:
            return [toy("delta", DeltaArr)]

    reg.register(Plugin())
    # delta has no edge at all: neither the array views nor the bridges reach it.
    with pytest.raises(NoRouteError, match="to a delta function"):
        to(double, "delta", source="alpha")


def test_the_context_converts_in_the_snapshot_it_was_planned_in(reg: Registry) -> None:
    g = to(double, "beta", source="alpha")
    reg.unregister(
        name=reg.pm.get_name(next(p for p in reg.pm.get_plugins() if isinstance(p, Toys)))
    )
    # The registry changed, but the bridge keeps converting with the routes it was made in.
    assert list(g(BetaArr([2.0])).buf) == [4.0]


@pytest.mark.illtyped
def test_a_non_callable_non_array_says_what_it_looked_for(reg: Registry) -> None:
    with pytest.raises(NotAnArrayError, match="nor is it a function"):
        to(42, "beta", source="alpha")


def test_an_opt_in_edge_is_taken_only_when_asked(reg: Registry) -> None:
    route = explain(double, "beta", source="alpha")
    assert [s.converter for s in route.steps] == ["alpha bridge"]
    assert ("traced", "taken only on request: pass trace=") in [
        (r.converter, r.reason) for r in route.refusals
    ]
    assert [s.converter for s in explain(double, "beta", source="alpha", trace=True).steps] == [
        "traced"
    ]
    to(double, "beta", source="alpha", trace=False)  # False opts out: the bridge is taken
    assert [name for name, _ in SEEN] == ["alpha bridge"]
    with pytest.raises(OptionError, match=r"Unknown option\(s\) colour for the route"):
        to(double, "beta", source="alpha", trace=False, colour=1)
