"""An edge with ``opt_out``: left out of the route only when the call passes its option as
False (``trace=False`` keeps TF functions off the tf2jax edge). Toy frameworks only."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from toys import AlphaArr, GammaArr, share, toy

from interop_core import ConverterSpec, FrameworkSpec, explain, hookimpl, to
from interop_core.testing import isolated_registry


class TwoWays:
    """alpha -> gamma by a cheap edge the user may opt out of, and by a dearer one."""

    @hookimpl
    def interop_frameworks(self) -> list[FrameworkSpec]:
        return [toy("alpha", AlphaArr), toy("gamma", GammaArr)]

    @hookimpl
    def interop_converters(self) -> list[ConverterSpec]:
        plain = share("alpha", "gamma", GammaArr)
        return [
            ConverterSpec(
                name="traced", source="alpha", target="gamma", zero_copy=True, cost=0.5,
                options=("trace",), opt_out="trace", load=plain.load,
            ),
            ConverterSpec(
                name="plain", source="alpha", target="gamma", zero_copy=True, cost=1.0,
                load=plain.load,
            ),
        ]  # fmt: skip


@pytest.fixture(autouse=True)
def registry() -> Iterator[None]:
    with isolated_registry(TwoWays()):
        yield


def test_an_opt_out_edge_is_taken_unless_its_option_is_false() -> None:
    x = AlphaArr([1.0])
    assert [s.converter for s in explain(x, "gamma").steps] == ["traced"]
    assert [s.converter for s in explain(x, "gamma", trace=True).steps] == ["traced"]
    assert [s.converter for s in explain(x, "gamma", trace=None).steps] == ["traced"]
    assert [s.converter for s in explain(x, "gamma", trace=False).steps] == ["plain"]
    y = to(x, "gamma", trace=False)
    assert type(y) is GammaArr and y.buf is x.buf
