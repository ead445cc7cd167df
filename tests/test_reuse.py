"""A repeated to() of the same function is a lookup (Kind.reuse, engine/reuse.py): the result
made the first time is handed out again while both are alive; neither is kept alive by it."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest
from conftest import need

from interop_core.engine.reuse import KEEP, Reused, arguments


def test_a_result_is_handed_out_for_its_source_and_arguments_only() -> None:
    cache = Reused()

    def f() -> None: ...

    def g() -> None: ...

    def made() -> None: ...

    args = arguments("torch", None, None, {"source": "jax"})
    cache.put(f, args, made)
    assert cache.get(f, args) is made
    assert cache.get(g, args) is None
    assert cache.get(f, arguments("torch", None, None, {"source": "numpy"})) is None
    assert cache.get(f, arguments("TORCH", None, None, {"source": "jax"})) is None
    with pytest.raises(TypeError):
        arguments("torch", None, None, {"shapes": ["unhashable"]})


def test_neither_source_nor_result_is_kept_alive() -> None:
    """Once KEEP newer results have been handed out, a source and its result (which calls
    it) are collected; the entry goes with them."""
    cache = Reused()

    class Wrapper:  # a result references its source, as converted functions do
        def __init__(self, wrapped: Any) -> None:
            self.wrapped = wrapped

    def f() -> None: ...

    made = Wrapper(f)
    source, result = weakref.ref(f), weakref.ref(made)
    args = arguments("t", None, None, {})
    cache.put(f, args, made)
    del f, made
    for _ in range(KEEP):  # newer results push it out of the strongly held few

        def other() -> None: ...

        cache.put(other, args, lambda: None)
    gc.collect()
    assert source() is None and result() is None
    assert all(e[0]() is not None for by in cache.entries.values() for e in by.values())


def test_a_source_gone_is_never_mistaken_for_a_new_one_at_its_address() -> None:
    cache = Reused()
    args = arguments("t", None, None, {})

    class Source:
        pass

    class Made:
        pass

    s, m = Source(), Made()
    cache.put(s, args, m)
    cache.recent.clear()
    keep = m
    del s
    gc.collect()
    for _ in range(100):  # objects of the same size land where s was
        t = Source()
        assert cache.get(t, args) is None
    assert keep is m


def test_objects_without_weak_references_are_not_remembered() -> None:
    cache = Reused()
    args = arguments("t", None, None, {})
    cache.put(len, args, (1, 2))  # a tuple cannot be weakly referenced
    assert cache.get(len, args) is None and not cache.entries


# -- through to() -----------------------------------------------------------------------


@pytest.fixture
def jax_torch() -> tuple[Any, Any]:
    need("numpy")
    return need("jax"), need("torch")


def test_a_repeated_function_conversion_is_a_lookup(jax_torch: Any, monkeypatch: Any) -> None:
    import interop_core
    from interop_core import to

    jax, torch = jax_torch

    def f(x: Any) -> Any:
        return jax.numpy.tanh(x) * 2

    first = to(f, "torch", source="jax")
    st = interop_core.default_registry().state
    routed: list[Any] = []
    original = st.router.object_route
    monkeypatch.setattr(st.router, "object_route", lambda *a: routed.append(a) or original(*a))
    again = to(f, "torch", source="jax")
    assert again is first and routed == []  # no detection, routing or binding: counted
    x = torch.linspace(-1, 1, 5)
    assert torch.allclose(again(x), torch.tanh(x) * 2)
    # other arguments are other results
    other = to(f, "torch", source="jax", device="cpu")
    assert other is not first and len(routed) == 1
    assert to(f, "torch", source="jax", device="cpu") is other and len(routed) == 1
    # explain() is not to(): it routes
    interop_core.explain(f, "torch", source="jax")


@pytest.mark.usefixtures("jax_torch")
def test_a_new_registry_state_converts_again() -> None:
    from interop_core import Registry, to
    from interop_core.face.api import using_registry

    def f(x: Any) -> Any:
        return x + 1

    first = to(f, "torch", source="jax")
    with using_registry(Registry()):
        assert to(f, "torch", source="jax") is not first


def test_iterators_are_never_reused() -> None:
    need("numpy")
    import numpy as np

    from interop_core import to

    batches = [np.ones(2)]
    source = iter(batches)
    a, b = to(source, "numpy"), to(source, "numpy")
    assert a is not b


def test_each_edge_of_the_route_has_its_say() -> None:
    """An edge whose result holds state read at conversion (reuse=False) is never reused;
    an edge's reuse(obj) is asked when the result is made and again before each hand-out."""
    from interop_core.plugin import ConverterSpec

    def edge(reuse: Any) -> ConverterSpec:
        return ConverterSpec(
            name="e", source="a", target="b", load=lambda: None, zero_copy=True, reuse=reuse
        )

    def f() -> None: ...

    def made() -> None: ...

    args = arguments("b", None, None, {})
    cache = Reused()
    cache.put(f, args, made, [edge(True), edge(False)])
    assert cache.get(f, args) is None and not cache.entries
    allowed = {"now": True}
    asked: list[Any] = []

    def check(obj: Any) -> bool:
        asked.append(obj)
        return allowed["now"]

    cache.put(f, args, made, [edge(True), edge(check)])
    assert asked == [f] and cache.get(f, args) is made and asked == [f, f]
    allowed["now"] = False
    assert cache.get(f, args) is None  # asked again: not now
    allowed["now"] = True
    assert cache.get(f, args) is made
