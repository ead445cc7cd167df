"""A new kind is one plugin: a toy "model checkpoint" (a dict of named tensors, a dict
subclass as a torch ``state_dict`` or an HF ``DatasetDict`` is) declared, detected, routed,
explained and listed by doctor, with no change to the core. docs/plugins.md walks through
this plugin. Toy frameworks only: this runs in every session.
"""

from __future__ import annotations

import array
from collections.abc import Iterator
from typing import Any

import pytest
from toys import AlphaArr, Arr, BetaArr, share, toy

from interop_core import (
    ANY,
    ConverterSpec,
    FrameworkSpec,
    Kind,
    KindSpec,
    Registry,
    Route,
    RouteTree,
    explain,
    hookimpl,
    to,
)
from interop_core.declare.context import CallContext
from interop_core.testing import isolated_registry


class AlphaCheckpoint(dict[str, Any]):
    """alpha's model checkpoint: parameter name -> alpha array (a dict subclass)."""


class Checkpoint(dict[str, Any]):
    """A checkpoint of any framework's arrays: what the conversion returns."""


def copy_edge(name: str, cls: type[Arr]) -> ConverterSpec:
    return ConverterSpec(
        name=f"{name} copy", source=name, target=name, zero_copy=False,
        load=lambda: lambda x: cls(buf=array.array("d", x.buf)),
    )  # fmt: skip


class Toys:
    """Two toy frameworks whose arrays share memory both ways, and copy in each."""

    @hookimpl
    def interop_frameworks(self) -> list[FrameworkSpec]:
        return [toy("alpha", AlphaArr), toy("beta", BetaArr)]

    @hookimpl
    def interop_converters(self) -> list[ConverterSpec]:
        return [
            share("alpha", "beta", BetaArr), share("beta", "alpha", AlphaArr),
            copy_edge("alpha", AlphaArr), copy_edge("beta", BetaArr),
        ]  # fmt: skip


#: How many checkpoints the edge converted (a kind's edge runs once per to()).
CALLS: list[int] = []


def convert_checkpoint(ckpt: Any, ctx: CallContext) -> Checkpoint:
    """Each tensor through the router, to the request's target, with its copy=."""
    CALLS.append(len(ckpt))
    return Checkpoint({name: ctx.to(t, ctx.target, copy=ctx.copy) for name, t in ckpt.items()})


class CheckpointPlugin:
    """The whole new kind: what it is, how its objects are found, and one edge."""

    @hookimpl
    def interop_kinds(self) -> list[Kind | KindSpec]:
        path = f"{AlphaCheckpoint.__module__}.{AlphaCheckpoint.__qualname__}"
        return [
            # copy= reaches each tensor; no warm path (converted once per call, as a whole).
            Kind("checkpoint", copy="items", usage="to(ckpt, target): every tensor, zero-copy"),
            KindSpec("checkpoint", "alpha", types=(path,), description="an alpha checkpoint"),
        ]

    @hookimpl
    def interop_converters(self) -> list[ConverterSpec]:
        return [
            ConverterSpec(
                name="checkpoint tensors", source="alpha", target=ANY, kind="checkpoint",
                zero_copy=True, context=True, load=lambda: convert_checkpoint,
            ),
        ]  # fmt: skip


@pytest.fixture
def reg() -> Iterator[Registry]:
    CALLS.clear()
    with isolated_registry(Toys(), CheckpointPlugin()) as r:
        yield r


def checkpoint() -> AlphaCheckpoint:
    return AlphaCheckpoint(weight=AlphaArr([1.0, 2.0]), bias=AlphaArr([3.0]))


def test_a_dict_subclass_a_kind_declares_is_that_kind_not_a_container(reg: Registry) -> None:
    ckpt = checkpoint()
    route = explain(ckpt, "beta")
    assert isinstance(route, Route) and not isinstance(route, RouteTree)
    assert route.kind == "checkpoint"
    assert [s.converter for s in route.steps] == ["checkpoint tensors"]
    assert str(route).startswith("Route alpha checkpoint -> beta checkpoint: checkpoint in 1")

    out = to(ckpt, "beta")
    assert CALLS == [2], "the kind's edge ran once, on the whole checkpoint"
    assert type(out) is Checkpoint and list(out) == ["weight", "bias"]
    for name, t in out.items():
        assert type(t) is BetaArr
        assert t.buf.buffer_info()[0] == ckpt[name].buf.buffer_info()[0]  # shared
        assert list(t.buf) == list(ckpt[name].buf)


def test_copy_reaches_each_tensor_of_the_kind(reg: Registry) -> None:
    ckpt = checkpoint()
    out = to(ckpt, "beta", copy=True)
    for name, t in out.items():
        assert t.buf.buffer_info()[0] != ckpt[name].buf.buffer_info()[0]
        assert list(t.buf) == list(ckpt[name].buf)


def test_a_plain_dict_is_still_a_container(reg: Registry) -> None:
    plain = dict(checkpoint())
    out = to(plain, "beta")
    assert CALLS == [], "a dict is structure: its leaves are converted one by one"
    assert type(out) is dict and all(type(t) is BetaArr for t in out.values())
    assert isinstance(explain(plain, "beta"), RouteTree)


def test_doctor_lists_the_kind_and_its_routes(reg: Registry) -> None:
    from interop_core.face.doctor import doctor_report

    report = doctor_report(reg)
    kinds = {k["name"]: k for k in report["kinds"]}
    assert kinds["checkpoint"]["usage"] == "to(ckpt, target): every tensor, zero-copy"
    assert report["checkpoints"] == {"alpha": {"beta": ["checkpoint tensors"]}}


def test_only_arrays_have_traits_and_the_warm_path() -> None:
    """A plugin's kind cannot declare what works only for arrays (a warm path that would
    plan on every call): the fields are the array kind's alone."""
    from interop_core.declare.specs import ARRAYS, ArrayTraits

    with pytest.raises(TypeError, match="warm"):
        Kind("checkpoint", warm=True)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="traits"):
        Kind("checkpoint", traits=ArrayTraits)  # type: ignore[call-arg]
    kind = Kind("checkpoint")
    edge = copy_edge("alpha", AlphaArr)
    assert not kind.warm and kind.traits is None and kind.advance(None, edge) is None
    assert ARRAYS.warm and ARRAYS.traits is ArrayTraits


def test_a_kind_plans_once_for_repeated_calls(reg: Registry, monkeypatch: Any) -> None:
    """Objects of a plugin's kind are converted once per call; the route is searched once
    and found in the cache by option names after that (counted)."""
    from interop_core.engine import planner

    searches: list[int] = []
    search = planner.Graph.search

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        searches.append(1)
        return search(self, *args, **kwargs)

    monkeypatch.setattr(planner.Graph, "search", counted)
    for _ in range(5):
        out = to(checkpoint(), "beta")
        assert list(out) == ["weight", "bias"]
    assert len(CALLS) == 5
    assert len(searches) == 2, searches  # the checkpoint's route, the tensors' route
