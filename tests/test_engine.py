"""The engine of the third pass: the registry snapshot runs to()/explain(); kinds are
declared (a kind nobody declares is refused, a second different declaration conflicts);
per-object questions are firstresult hooks a third party can answer; one search per plan
when the other alignment cannot do better; a key function that fails is reported once.
Toy frameworks only: this runs in every session."""

from __future__ import annotations

import array
import warnings
from typing import Any

import pytest

from interop_core import (
    ConversionError,
    ConverterSpec,
    Device,
    DeviceError,
    FrameworkSpec,
    Kind,
    KindSpec,
    NotAnArrayError,
    PluginError,
    TensorInfo,
    explain,
    hookimpl,
    to,
)
from interop_core.declare.errors import PluginWarning
from interop_core.declare.predicates import Needs
from interop_core.declare.specs import CPU
from interop_core.engine.planner import Graph
from interop_core.testing import isolated_registry


class Arr:
    """A toy array: values in an array.array, an alignment it claims."""

    def __init__(
        self, values: Any = (), buf: Any = None, aligned: bool = True, state: str = "ok"
    ) -> None:
        self.buf = buf if buf is not None else array.array("d", values)
        self.aligned = aligned
        #: "ok"; "unkeyable": its framework cannot key it (a plugin bug the core reports);
        #: "dead": nothing can read it (a released buffer), neither key nor description.
        self.state = state


class AlphaArr(Arr):
    pass


class BetaArr(Arr):
    pass


def alpha_key(x: Any) -> Any:
    if x.state != "ok":
        raise RuntimeError("cannot key this one")
    return 0


def describe(name: str, x: Any) -> TensorInfo:
    if x.state == "dead":
        raise ValueError("the buffer was released")
    return TensorInfo(name, "float64", CPU, (len(x.buf),), "C", False, x.aligned)


def spec(name: str, cls: type[Arr], **kw: Any) -> FrameworkSpec:
    return FrameworkSpec(
        name=name,
        array_types=(f"{cls.__module__}.{cls.__qualname__}",),
        describe=lambda x: describe(name, x),
        key=kw.pop("key", lambda x: 0),
        aligned_key=lambda x: x.aligned,
        data_ptr=lambda x: x.buf.buffer_info()[0],
        dtypes=frozenset({"float64"}),
        **kw,
    )


def edge(name: str, cls: type[Arr], zero_copy: bool, cost: float, **kw: Any) -> ConverterSpec:
    def load() -> Any:
        if zero_copy:
            return lambda x: cls(buf=x.buf)
        return lambda x: cls(buf=array.array("d", x.buf))

    return ConverterSpec(
        name=name, source="alpha", target="beta", zero_copy=zero_copy, cost=cost, load=load, **kw
    )


class Toys:
    """alpha -> beta: a cheap view for any array, and a costly one only for aligned
    arrays (its refusal never changes the route: the cheap view wins either way)."""

    @hookimpl
    def interop_frameworks(self) -> list[FrameworkSpec]:
        return [spec("alpha", AlphaArr, key=alpha_key), spec("beta", BetaArr)]

    @hookimpl
    def interop_converters(self) -> list[ConverterSpec]:
        return [
            edge("view", BetaArr, True, 0.5),
            edge("aligned view", BetaArr, True, 30.0, accepts=Needs(aligned=True)),
        ]


class AlignedOnly:
    """alpha -> beta zero-copy only when aligned, else a copy: the route turns on it."""

    @hookimpl
    def interop_frameworks(self) -> list[FrameworkSpec]:
        return [spec("alpha", AlphaArr), spec("beta", BetaArr)]

    @hookimpl
    def interop_converters(self) -> list[ConverterSpec]:
        return [
            edge("aligned view", BetaArr, True, 0.5, accepts=Needs(aligned=True)),
            edge("copy", BetaArr, False, 5.0),
        ]


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts Graph.search calls."""
    calls: list[int] = []
    search = Graph.search

    def counting(self: Graph, *args: Any, **kw: Any) -> Any:
        calls.append(1)
        return search(self, *args, **kw)

    monkeypatch.setattr(Graph, "search", counting)
    return calls


def test_a_refusal_that_cannot_beat_the_route_found_costs_no_second_search(
    counted: list[int],
) -> None:
    with isolated_registry(Toys()):
        x = AlphaArr([1.0, 2.0], aligned=False)
        y = to(x, "beta")
        assert len(counted) == 1, "the first call plans once"
        assert y.buf.buffer_info()[0] == x.buf.buffer_info()[0]
        to(AlphaArr([3.0], aligned=True), "beta")
        assert len(counted) == 1, "the other alignment takes the same cached plan"


def test_a_route_that_turns_on_alignment_is_planned_for_each(counted: list[int]) -> None:
    with isolated_registry(AlignedOnly()):
        unaligned = AlphaArr([1.0, 2.0], aligned=False)
        aligned = AlphaArr([1.0, 2.0], aligned=True)
        assert to(unaligned, "beta").buf.buffer_info()[0] != unaligned.buf.buffer_info()[0]
        assert to(aligned, "beta").buf.buffer_info()[0] == aligned.buf.buffer_info()[0]
        assert to(unaligned, "beta").buf.buffer_info()[0] != unaligned.buf.buffer_info()[0]
        assert len(counted) >= 2


def test_a_key_function_that_fails_is_reported_once_and_converts_slowly() -> None:
    with isolated_registry(Toys()) as reg:
        to(AlphaArr([1.0]), "beta")  # plans the (type, target) slot
        bad = AlphaArr([5.0, 6.0], state="unkeyable")  # the same type: its warm entry fails
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            first, second = to(bad, "beta"), to(bad, "beta")
        assert [list(r.buf) for r in (first, second)] == [[5.0, 6.0]] * 2
        reported = [w for w in seen if issubclass(w.category, PluginWarning)]
        assert len(reported) == 1, [str(w.message) for w in seen]
        message = str(reported[0].message)
        assert "alpha_key" in message and "cannot key this one" in message
        assert reg.state.plain  # the healthy objects keep their warm path


def test_a_failing_key_is_not_reported_when_the_object_cannot_convert_anyway() -> None:
    with isolated_registry(Toys()):
        to(AlphaArr([1.0]), "beta")
        with warnings.catch_warnings():
            warnings.simplefilter("error", PluginWarning)
            with pytest.raises(ConversionError, match="released"):
                to(AlphaArr([1.0], state="dead"), "beta")


class Devices:
    """A third party that reads its own device objects (a firstresult hook)."""

    class Where:
        def __init__(self, index: int) -> None:
            self.index = index

    @hookimpl
    def interop_parse_device(self, device: Any) -> Device | None:
        return Device("cpu") if isinstance(device, Devices.Where) else None


def test_a_plugin_reads_its_own_device_objects() -> None:
    with isolated_registry(Toys()) as reg:
        with pytest.raises(DeviceError, match="Cannot understand device"):
            to(AlphaArr([1.0]), "beta", device=Devices.Where(0))
        reg.register(Devices(), name="devices")
        x = AlphaArr([1.0])
        assert (
            to(x, "beta", device=Devices.Where(0)).buf.buffer_info()[0] == (x.buf.buffer_info()[0])
        )
        assert explain(x, "beta", device=Devices.Where(0)).steps[0].target == "beta@cpu"


def test_a_device_hook_that_raises_counts_as_not_understood() -> None:
    class Raising:
        @hookimpl
        def interop_parse_device(self, device: Any) -> Device | None:
            raise RuntimeError("boom")

    with (
        isolated_registry(Toys(), Raising()),
        pytest.raises(DeviceError, match="Cannot understand device"),
    ):
        to(AlphaArr([1.0]), "beta", device=object())


def test_a_kind_declared_twice_alike_is_one_kind_and_differently_a_conflict() -> None:
    class Same:
        @hookimpl
        def interop_kinds(self) -> list[Kind]:
            return [Kind("thing", copy="items")]

    class Other:
        @hookimpl
        def interop_kinds(self) -> list[Kind]:
            return [Kind("thing", copy="")]

    with isolated_registry(Toys(), Same()) as reg:
        reg.register(Same(), name="same again")
        assert reg.state.graph.kinds["thing"].copy == "items"
        with pytest.raises(PluginError, match="kind 'thing'"):
            reg.register(Other(), name="other")
        assert "other" not in dict(reg.pm.list_name_plugin())


def test_specs_and_edges_of_an_undeclared_kind_are_dropped_with_a_warning() -> None:
    class Orphan:
        @hookimpl
        def interop_kinds(self) -> list[KindSpec]:
            return [KindSpec("gadget", "alpha", types=("builtins.complex",))]

        @hookimpl
        def interop_converters(self) -> list[ConverterSpec]:
            return [
                ConverterSpec("gadget edge", "alpha", "beta", load=lambda: None, zero_copy=True,
                              kind="gadget"),
            ]  # fmt: skip

    with pytest.warns(PluginWarning) as seen, isolated_registry(Toys(), Orphan()) as reg:
        assert not any(e.kind == "gadget" for e in reg.state.declared)
        assert not any(s.kind == "gadget" for s in reg.state.kinds)
    text = " ".join(str(w.message) for w in seen)
    assert "no plugin declares kind 'gadget'" in text


def test_explain_and_to_run_on_one_snapshot(counted: list[int]) -> None:
    with isolated_registry(Toys()) as reg:
        st = reg.state
        x = AlphaArr([1.0])
        assert st.explain(x, "beta").steps[0].converter == "view"
        assert st.to(x, "beta").buf.buffer_info()[0] == x.buf.buffer_info()[0]
        reg.register(Devices(), name="devices")
        assert reg.state is not st, "a registration builds a new snapshot"
        # The old snapshot still converts with what it was built from.
        assert st.to(x, "beta").buf.buffer_info()[0] == x.buf.buffer_info()[0]


class Claims:
    """A third party that says which framework some classes' arrays belong to."""

    @hookimpl
    def interop_detect(self, obj: Any) -> str | None:
        if isinstance(obj, Wrapper):
            return "alpha"  # a wrapper class the alpha framework's spec can read
        if isinstance(obj, AlphaArr) and obj.state == "claimed":
            return "beta"  # overrides the declared array_types
        return None


class Wrapper:
    """A class no spec declares, with what alpha's spec reads."""

    def __init__(self, values: Any) -> None:
        self.buf = array.array("d", values)
        self.aligned = True
        self.state = "ok"


def test_a_plugin_claims_a_class_for_a_framework() -> None:
    with isolated_registry(Toys()) as reg:
        w = Wrapper([1.0, 2.0])
        with pytest.raises(NotAnArrayError):
            to(w, "beta")
        reg.register(Claims(), name="claims")
        y = to(w, "beta")
        assert type(y) is BetaArr and y.buf.buffer_info()[0] == w.buf.buffer_info()[0]
        assert explain(w, "beta").source == "alpha@cpu"


def test_detection_asks_the_hook_before_the_declared_types() -> None:
    with isolated_registry(Toys(), Claims()) as reg:
        claimed = AlphaArr([1.0], state="claimed")
        # Asked once per class: the first object of AlphaArr decides for all of them.
        assert reg.state.detect(claimed).name == "beta"
        assert explain(AlphaArr([2.0]), "beta").steps == ()  # a beta array already


class _BadHashName(str):
    """A framework's name whose hash raises (a str subclass's own __hash__)."""

    def __hash__(self) -> int:
        raise RuntimeError("this name cannot be hashed")


def test_a_target_whose_hash_raises_is_planned_every_call_not_raised() -> None:
    """The plan cache cannot key such a target: the call is planned each time instead, and
    the result is the same as with the plain name."""
    from conftest import need

    need("numpy")
    a = array.array("f", [1.0, 2.0])
    for _ in range(2):  # the second call too: nothing was kept under the bad key
        out = to(a, _BadHashName("numpy"))
        assert type(out).__name__ == "ndarray" and out.tolist() == [1.0, 2.0]
