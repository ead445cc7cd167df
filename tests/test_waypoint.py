"""A framework that is no waypoint (FrameworkSpec.waypoint=False, as Arrow) is entered only
by routes that start or end there. Toy frameworks only: this runs in every session."""

from __future__ import annotations

import dataclasses

import pytest
from toys import AlphaArr, BetaArr, GammaArr, share, toy

from interop_core import ConverterSpec, FrameworkSpec, NoRouteError, explain, hookimpl, to
from interop_core.testing import isolated_registry


class Ends:
    """alpha -> gamma -> beta, the only way from alpha to beta; gamma an end or a way."""

    def __init__(self, waypoint: bool) -> None:
        self.waypoint = waypoint

    @hookimpl
    def interop_frameworks(self) -> list[FrameworkSpec]:
        gamma = dataclasses.replace(toy("gamma", GammaArr), waypoint=self.waypoint)
        return [toy("alpha", AlphaArr), toy("beta", BetaArr), gamma]

    @hookimpl
    def interop_converters(self) -> list[ConverterSpec]:
        return [share("alpha", "gamma", GammaArr), share("gamma", "beta", BetaArr)]


def test_a_waypoint_carries_routes_between_others() -> None:
    with isolated_registry(Ends(waypoint=True)):
        steps = [s.converter for s in explain(AlphaArr([1.0]), "beta").steps]
        assert steps == ["alpha->gamma view", "gamma->beta view"]


def test_an_end_is_entered_only_by_routes_to_or_from_it() -> None:
    with isolated_registry(Ends(waypoint=False)):
        with pytest.raises(NoRouteError) as info:
            to(AlphaArr([1.0]), "beta")
        assert "gamma" not in str(info.value)  # its edges are not even examined
        source = AlphaArr([1.0, 2.0])
        into = to(source, "gamma")
        assert isinstance(into, GammaArr) and into.buf is source.buf
        out = to(into, "beta")
        assert isinstance(out, BetaArr) and out.buf is source.buf
