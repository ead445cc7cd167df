"""A step that fails runs once per call at most; exclusions last until the registry changes.

Two fake frameworks (boxes of floats) and converters that count their calls: "flaky"
(cheap, the one planned first) and "fallback" (dearer), plus a two-step route.
"""

from __future__ import annotations

import sys
import types
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from interop_core import (
    ConversionError,
    ConverterSpec,
    FrameworkSpec,
    OptionError,
    Registry,
    TensorInfo,
    explain,
    hookimpl,
    to,
)
from interop_core.declare.errors import PluginWarning
from interop_core.declare.specs import CPU
from interop_core.plugin import Package
from interop_core.testing import isolated_registry

MODULE = "interop_test_failboxes"


class BoxA:
    def __init__(self, values: list[float]) -> None:
        self.values = list(values)


class BoxB(BoxA):
    pass


class BoxC(BoxA):
    pass


def spec(name: str, cls: str) -> FrameworkSpec:
    return FrameworkSpec(
        name=name,
        array_types=(f"{MODULE}.{cls}",),
        describe=lambda x: TensorInfo(name, "float32", CPU, (len(x.values),), "C", False, True),
        key=lambda x: "box",
        data_ptr=id,
        dtypes=frozenset({"float32"}),
        package=Package(module=MODULE),
    )


class Counting:
    """boxa -> boxb by "flaky" (cost 0.1) or "fallback" (cost 5); boxb -> boxc by "second"."""

    def __init__(self, flaky: Callable[[Any], Any], second: Callable[[Any], Any] | None = None):
        self.flaky, self.second = flaky, second
        self.calls: list[str] = []

    def counted(self, name: str, func: Callable[[Any], Any]) -> Callable[[], Any]:
        def load() -> Any:
            def run(x: Any) -> Any:
                self.calls.append(name)
                return func(x)

            return run

        return load

    @hookimpl
    def interop_frameworks(self) -> list[FrameworkSpec]:
        return [spec("boxa", "BoxA"), spec("boxb", "BoxB"), spec("boxc", "BoxC")]

    @hookimpl
    def interop_converters(self) -> list[ConverterSpec]:
        to_b = self.counted("fallback", lambda x: BoxB(x.values))
        to_c = self.counted("second", self.second or (lambda x: BoxC(x.values)))
        return [
            ConverterSpec("flaky", "boxa", "boxb", self.counted("flaky", self.flaky),
                          zero_copy=True, cost=0.1),
            ConverterSpec("fallback", "boxa", "boxb", to_b, zero_copy=True, cost=5.0),
            ConverterSpec("second", "boxb", "boxc", to_c, zero_copy=True),
        ]  # fmt: skip


def raising(exc: Exception) -> Callable[[Any], Any]:
    def run(x: Any) -> Any:
        raise exc

    return run


@contextmanager
def registry_of(plugin: Counting) -> Iterator[Registry]:
    with isolated_registry() as reg:
        reg.register(plugin, name="counting-plugin")
        yield reg


@pytest.fixture
def boxes(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    mod = types.ModuleType(MODULE)
    mod.BoxA, mod.BoxB, mod.BoxC = BoxA, BoxB, BoxC  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, MODULE, mod)
    yield


@pytest.mark.parametrize("exc", [ValueError("bad"), TypeError("t"), KeyError("k")])
def test_other_errors_run_the_step_once_per_call(boxes: None, exc: Exception) -> None:
    plugin = Counting(raising(exc))
    with registry_of(plugin):
        for call in range(1, 4):  # cold, then warm
            with warnings.catch_warnings():
                warnings.simplefilter("error", PluginWarning)
                with pytest.raises(ConversionError) as info:
                    to(BoxA([1.0]), "boxb")
            assert plugin.calls == ["flaky"] * call  # once per call, never re-run
            assert info.value.__cause__ is exc
            assert "'flaky'" in str(info.value) and "'counting-plugin'" in str(info.value)


@pytest.mark.parametrize("exc", [BufferError("gone"), NotImplementedError("no")])
def test_a_refusal_reroutes_that_object_only_and_warns_once(boxes: None, exc: Exception) -> None:
    """One object's refusal never changes the route of another: each call tries the
    cheapest converter again, falls back once, and only the first failure warns."""
    plugin = Counting(raising(exc))
    with registry_of(plugin):
        with pytest.warns(PluginWarning, match="flaky") as record:
            first = to(BoxA([1.0]), "boxb")
        assert len([w for w in record if issubclass(w.category, PluginWarning)]) == 1
        assert isinstance(first, BoxB) and plugin.calls == ["flaky", "fallback"]
        with warnings.catch_warnings():
            warnings.simplefilter("error", PluginWarning)  # no second warning
            for _ in range(4):
                assert to(BoxA([2.0]), "boxb").values == [2.0]
        assert plugin.calls == ["flaky", "fallback"] * 5  # each object is asked afresh
        assert [s.converter for s in explain(BoxA([1.0]), "boxb").steps] == ["flaky"]


def test_a_refusal_on_the_warm_path_leaves_the_cached_route(boxes: None) -> None:
    """A converter that refuses one object once its route is cached still gets the next."""
    state = {"fail": False}

    def sometimes(x: Any) -> Any:
        if state["fail"]:
            raise BufferError("now it fails")
        return BoxB(x.values)

    plugin = Counting(sometimes)
    with registry_of(plugin):
        to(BoxA([1.0]), "boxb")
        to(BoxA([1.0]), "boxb")
        state["fail"] = True
        with pytest.warns(PluginWarning, match="flaky"):
            assert to(BoxA([3.0]), "boxb").values == [3.0]
        state["fail"] = False
        assert to(BoxA([1.0]), "boxb").values == [1.0]
    assert plugin.calls == ["flaky", "flaky", "flaky", "fallback", "flaky"]


def test_an_item_that_fails_in_a_container_is_named_by_its_keys(boxes: None) -> None:
    """The error of an item says where it sits, on the slow path and on the warm walk of a
    batch whose leaves have runners (to() cold, then warm), and in explain()."""
    plugin = Counting(raising(ValueError("bad")))
    with registry_of(plugin):
        for call in range(1, 4):
            batch = {"ok": "not an array", "x": ["no array", (BoxA([2.0]),)]}
            with pytest.raises(ConversionError) as info:
                to(batch, "boxb")
            assert info.value.item_path == ("x", 1, 0)
            assert str(info.value).startswith("At ['x'][1][0]: ")
            assert "'flaky'" in str(info.value)
            assert plugin.calls == ["flaky"] * call
        with pytest.raises(OptionError) as unknown:  # no item takes it: the first one says
            explain({"a": {"b": BoxA([1.0])}}, "boxb", nosuch=1)
        assert unknown.value.unknown == ("nosuch",)
        assert str(unknown.value).startswith("Unknown option(s) nosuch for the route boxa")


def test_failure_in_the_second_step_runs_each_step_once(boxes: None) -> None:
    plugin = Counting(lambda x: BoxB(x.values), second=raising(ValueError("late")))
    with registry_of(plugin):
        for call in range(1, 3):
            with pytest.raises(ConversionError, match="'second'"):
                to(BoxA([1.0]), "boxc")
            assert plugin.calls == ["flaky", "second"] * call


@pytest.mark.illtyped
@pytest.mark.parametrize("bad", [1, 0, 1.0, 0.0, "yes"])
def test_copy_is_checked_on_the_warm_path(np: Any, bad: Any) -> None:
    """copy=1 and copy=0 hash like True and False: a warm entry must not take them."""
    a = np.arange(4.0)
    for _ in range(2):  # warm both entries
        assert to(a, "numpy", copy=True) is not a
        assert to(a, "numpy", copy=False) is a
    with pytest.raises(OptionError, match="copy must be None, True or False"):
        to(a, "numpy", copy=bad)
