"""The warm path of batches: a plain dict, list or tuple of arrays whose leaves were planned
before is converted without the slow path (no target resolved, no device parsed, no leaf
detected again), gives what the slow path gives, and hands everything else to it.

Toy frameworks only (tests/toys.py): these run in every session, the core one included.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

import pytest
from toys import AlphaArr, BetaArr, GammaArr, share, toy

from interop_core import (
    ANY,
    CallContext,
    ContainerError,
    ConversionError,
    ConverterSpec,
    FrameworkSpec,
    Kind,
    KindSpec,
    NotAnArrayError,
    hookimpl,
    to,
)
from interop_core.engine.containers import MAX_DEPTH
from interop_core.engine.detect import Detector
from interop_core.engine.state import State
from interop_core.testing import isolated_registry

#: Values of an AlphaArr that its converter to beta refuses (counted in ``calls``).
POISON = -1.0


class Toys:
    """alpha, beta, gamma; alpha -> beta and gamma -> beta share the buffer."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    @hookimpl
    def interop_frameworks(self) -> list[FrameworkSpec]:
        return [toy("alpha", AlphaArr), toy("beta", BetaArr), toy("gamma", GammaArr)]

    @hookimpl
    def interop_converters(self) -> list[ConverterSpec]:
        calls = self.calls

        def load() -> Any:
            def convert(x: AlphaArr) -> BetaArr:
                calls.append("alpha->beta")
                if x.buf and x.buf[0] == POISON:
                    raise ValueError("poisoned")
                return BetaArr(buf=x.buf)

            return convert

        return [
            ConverterSpec(
                name="alpha->beta view", source="alpha", target="beta", zero_copy=True, load=load
            ),
            share("gamma", "beta", BetaArr),
        ]


@pytest.fixture
def toys() -> Iterator[Toys]:
    import interop_plugins.kinds.iterators as iterators

    plugin = Toys()
    with isolated_registry(iterators) as reg:
        reg.register(plugin, name="toys")
        yield plugin


@pytest.fixture
def slow_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each call of the slow path and of detection, by name."""
    seen: list[str] = []
    slow, detect = State._slow, Detector.__call__

    def counted_slow(self: State, *args: Any) -> Any:
        seen.append("slow")
        return slow(self, *args)

    def counted_detect(self: Detector, obj: Any) -> Any:
        seen.append("detect")
        return detect(self, obj)

    monkeypatch.setattr(State, "_slow", counted_slow)
    monkeypatch.setattr(Detector, "__call__", counted_detect)
    return seen


def batch() -> dict[str, Any]:
    return {"images": AlphaArr([1.0, 2.0]), "meta": [AlphaArr([3.0]), 7, "name"], "n": (None,)}


def test_a_warm_batch_skips_the_slow_path_and_gives_what_it_gives(
    toys: Toys, slow_calls: list[str]
) -> None:
    first_batch = batch()
    first = to(first_batch, "beta")
    assert slow_calls, "the first call plans (slow path)"
    slow_calls.clear()
    b = batch()
    second = to(b, "beta")
    assert slow_calls == []  # nothing resolved, parsed or detected again
    for out, src in ((first, first_batch), (second, b)):
        assert list(out) == ["images", "meta", "n"]
        assert type(out["images"]) is BetaArr and out["images"].buf is src["images"].buf
        assert type(out["meta"]) is list and out["meta"][1:] == [7, "name"]
        assert type(out["meta"][0]) is BetaArr and out["meta"][0].buf is src["meta"][0].buf
        assert out["n"] == (None,) and type(out["n"]) is tuple
    assert toys.calls == ["alpha->beta"] * 4  # each leaf converted once per call


def test_a_batch_with_a_new_leaf_type_takes_the_slow_path_once(
    toys: Toys, slow_calls: list[str]
) -> None:
    to(batch(), "beta")
    slow_calls.clear()
    mixed = [AlphaArr([1.0]), GammaArr([2.0])]
    out = to(mixed, "beta")
    assert "slow" in slow_calls
    assert [type(y) for y in out] == [BetaArr, BetaArr]
    assert out[1].buf is mixed[1].buf
    slow_calls.clear()
    to([AlphaArr([4.0]), GammaArr([5.0])], "beta")
    assert slow_calls == []


def test_container_subclasses_keep_their_type_through_the_slow_path(toys: Toys) -> None:
    to(batch(), "beta")
    ordered = OrderedDict(a=AlphaArr([1.0]))
    out = to(ordered, "beta")
    assert type(out) is OrderedDict and type(out["a"]) is BetaArr


def test_container_subclasses_inside_a_warm_batch_are_converted_too(toys: Toys) -> None:
    to(batch(), "beta")
    to(OrderedDict(a=AlphaArr([1.0])), "beta")  # detection has seen the subclass itself
    inner = OrderedDict(a=AlphaArr([2.0]))
    out = to({"images": AlphaArr([1.0]), "inner": inner}, "beta")
    assert type(out["inner"]) is OrderedDict
    assert type(out["inner"]["a"]) is BetaArr and out["inner"]["a"].buf is inner["a"].buf


def test_a_warm_batch_with_no_array_still_raises(toys: Toys) -> None:
    to(batch(), "beta")  # int, str and None are known to be no arrays now
    with pytest.raises(NotAnArrayError):
        to({"n": 3, "s": ["x", None]}, "beta")


def test_cycles_and_deep_nesting_are_still_refused_once_warm(toys: Toys) -> None:
    to(batch(), "beta")
    loop: list[Any] = [AlphaArr([1.0])]
    loop.append(loop)
    with pytest.raises(ContainerError, match="contains itself"):
        to(loop, "beta")
    deep: Any = AlphaArr([1.0])
    for _ in range(MAX_DEPTH + 1):
        deep = [deep]
    with pytest.raises(ContainerError, match="nested"):
        to(deep, "beta")
    deepest: Any = AlphaArr([2.0])  # as deep as to() goes: MAX_DEPTH containers
    for _ in range(MAX_DEPTH):
        deepest = [deepest]
    for _ in range(2):  # planned, then warm
        out = to(deepest, "beta")
        for _ in range(MAX_DEPTH):
            out = out[0]
        assert type(out) is BetaArr


def test_a_leaf_whose_converter_fails_in_a_warm_batch_runs_it_once(toys: Toys) -> None:
    to(batch(), "beta")
    toys.calls.clear()
    with pytest.raises(ConversionError, match="poisoned"):
        to({"ok": AlphaArr([1.0]), "bad": AlphaArr([POISON])}, "beta")
    assert toys.calls == ["alpha->beta", "alpha->beta"]  # the failed step is never re-run


def test_an_iterator_of_batches_converts_each_on_the_warm_path(
    toys: Toys, slow_calls: list[str]
) -> None:
    batches = [batch() for _ in range(4)]
    it = to(iter(batches), "beta")
    first = next(it)
    assert type(first["images"]) is BetaArr
    slow_calls.clear()
    rest = list(it)
    assert slow_calls == []
    assert [r["images"].buf for r in rest] == [b["images"].buf for b in batches[1:]]


def _is_bundle(obj: Any) -> bool:
    """A list that starts with the marker "bundle": one object of the bundle kind."""
    return isinstance(obj, list) and bool(obj) and obj[0] == "bundle"


class Bundles:
    """A kind alpha owns that takes a whole list (as a list of pipelines is one object)."""

    @hookimpl
    def interop_kinds(self) -> list[Kind | KindSpec]:
        return [
            Kind("bundle", usage="to(bundle, target)"),
            KindSpec("bundle", "alpha", claims=_is_bundle, description="an alpha bundle"),
        ]

    @hookimpl
    def interop_converters(self) -> list[ConverterSpec]:
        def convert(bundle: list[Any], ctx: CallContext) -> tuple[str, int]:
            return ("converted bundle", len(bundle))

        return [
            ConverterSpec(
                name="bundle", source="alpha", target=ANY, kind="bundle", zero_copy=True,
                context=True, load=lambda: convert,
            )
        ]  # fmt: skip


def test_a_list_a_kind_takes_whole_is_that_kind_on_the_warm_path_too(toys: Toys) -> None:
    from interop_core import register

    register(Bundles(), name="bundles")
    to({"name": "bundle", "a": AlphaArr([1.0])}, "beta")  # a str is known to be no array
    plain = [AlphaArr([1.0]), AlphaArr([2.0])]
    for _ in range(2):  # planned, then warm
        out = to(plain, "beta")
        assert [type(y) for y in out] == [BetaArr, BetaArr]
    bundle = ["bundle", AlphaArr([1.0]), AlphaArr([2.0])]
    assert to(bundle, "beta") == ("converted bundle", 3)
