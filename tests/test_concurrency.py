"""Races and leaks: conversions from many threads while another thread registers and
unregisters a plugin, registries made current per thread, and caches that must not keep
the classes they have seen alive.

A call in flight keeps the registry state it started with; a rebuild swaps the whole state,
so every conversion must return the right framework and values, and none may raise.
"""

from __future__ import annotations

import contextvars
import gc
import threading
import weakref
from typing import Any
from unittest import mock

import pytest
from conftest import exchange_names

from interop_core import (
    ConverterSpec,
    FrameworkSpec,
    TensorInfo,
    UnknownFrameworkError,
    default_registry,
    explain,
    hookimpl,
    set_default_registry,
    to,
)
from interop_core.declare.specs import CPU
from interop_core.engine.detect import SAME_NAME, TypeTable
from interop_core.engine.state import State
from interop_core.testing import isolated_registry, shares_memory

THREADS = 8
#: Register/unregister cycles of the toggled plugin, each raced by THREADS conversions.
TOGGLES = 25


class Marker:
    """A toy array type for the toggled plugin's framework (never converted here)."""


class Toggled:
    """A plugin that declares a framework and a cheaper numpy -> torch edge.

    While it is registered the edge wins the route; its result is a real torch tensor that
    shares memory (``torch.from_numpy``), so a correct result is the same either way, but
    the plans are rebuilt on every toggle.
    """

    calls = 0

    @hookimpl
    def interop_frameworks(self) -> list[FrameworkSpec]:
        return [
            FrameworkSpec(
                name="toggled",
                array_types=(f"{__name__}.Marker",),
                describe=lambda x: TensorInfo("toggled", "float32", CPU, (), "C", False, True),
                key=lambda x: 0,
                data_ptr=lambda x: id(x),
                example=lambda data, dtype: Marker(),
                dtypes=frozenset({"float32"}),
            )
        ]

    @hookimpl
    def interop_converters(self) -> list[ConverterSpec]:
        def load() -> Any:
            import torch

            def convert(x: Any) -> Any:
                Toggled.calls += 1
                return torch.from_numpy(x)

            return convert

        return [
            ConverterSpec(
                name="toggled from_numpy", source="numpy", target="torch", load=load,
                zero_copy=True, cost=0.01,
            )
        ]  # fmt: skip


def test_conversions_stay_correct_while_plugins_change(np: Any, torch: Any) -> None:
    """TOGGLES times, the plugin is registered and unregistered while THREADS threads convert
    without pause. The toggling thread and the converting threads hand off through a
    Condition, so the race is counted, not timed: each phase (plugin in, plugin out) lasts
    until THREADS conversions that started in it have finished (in a registered phase, one
    of them through the toggled edge), and only then does the next toggle come."""
    errors: list[BaseException] = []
    progress = threading.Condition()
    # phase p: 2k + 1 while the plugin is registered (toggle k), 2k + 2 after it is gone.
    phase = 0
    #: Conversions finished, by the phase they started in.
    finished: dict[int, int] = {}
    #: Calls of the toggled edge seen at the end of each registered phase.
    toggled_calls: list[int] = []
    done = threading.Event()
    toggles = 0
    Toggled.calls = 0

    def check(seed: int, i: int) -> None:
        value = float(seed * 1000 + i % 1000)
        dtype = (np.float32, np.float64, np.int64)[i % 3]
        a = np.full((4, 3), value, dtype=dtype)
        t = to(a, "torch")
        assert isinstance(t, torch.Tensor), type(t)
        assert t.shape == (4, 3)
        assert str(t.dtype) == f"torch.{np.dtype(dtype).name}"
        assert bool((t == value).all())
        assert shares_memory(a, t)
        route = explain(a, "torch")
        assert route.zero_copy
        assert route.steps[0].converter in (exchange_names()[0], "toggled from_numpy")
        back = to(t, "numpy")
        assert isinstance(back, np.ndarray), type(back)
        assert back.dtype == dtype
        assert (back == value).all()
        assert shares_memory(t, back)
        c = to({"x": t, "n": i}, "np", copy=True)
        assert c["n"] == i
        assert (c["x"] == value).all()
        assert not shares_memory(t, c["x"])

    def convert(seed: int) -> None:
        try:
            i = 0
            while not done.is_set():
                with progress:
                    started = phase
                check(seed, i)
                i += 1
                with progress:
                    finished[started] = finished.get(started, 0) + 1
                    progress.notify_all()
        except BaseException as exc:  # reported from the main thread
            errors.append(exc)
            with progress:
                progress.notify_all()

    def next_phase() -> int:
        nonlocal phase
        with progress:
            phase += 1
            return phase

    def wait_for(what: str, ready: Any) -> None:
        """Wait (a hang guard, not a timing) until ``ready()``, or a worker's error."""
        with progress:
            if not progress.wait_for(lambda: errors or ready(), timeout=60):
                raise AssertionError(f"never came: {what}")

    def toggle() -> None:
        nonlocal toggles
        plugin = Toggled()
        try:
            for _ in range(TOGGLES):
                reg.register(plugin, name="toggled")
                p, calls = next_phase(), Toggled.calls
                wait_for(
                    f"phase {p} (plugin registered): {THREADS} conversions started in it, and "
                    "a call of the toggled edge",
                    lambda p=p, calls=calls: (
                        finished.get(p, 0) >= THREADS and Toggled.calls > calls
                    ),
                )
                toggled_calls.append(Toggled.calls - calls)
                reg.unregister(name="toggled")
                p = next_phase()
                wait_for(
                    f"phase {p} (plugin unregistered): {THREADS} conversions started in it",
                    lambda p=p: finished.get(p, 0) >= THREADS,
                )
                toggles += 1
                if errors:
                    return
        except BaseException as exc:
            errors.append(exc)
        finally:
            done.set()

    with isolated_registry(builtins=True) as reg:
        # The isolated registry is this thread's: the workers run in a copy of its context.
        workers = [
            threading.Thread(target=contextvars.copy_context().run, args=(convert, n))
            for n in range(THREADS)
        ]
        toggler = threading.Thread(target=toggle)
        for w in workers:
            w.start()
        toggler.start()
        toggler.join(timeout=600)
        done.set()
        for w in workers:
            w.join(timeout=60)
        assert not any(w.is_alive() for w in [*workers, toggler]), "a thread hung"
        if errors:
            raise errors[0]
        assert toggles == TOGGLES
        # Every phase, plugin in and plugin out, raced THREADS conversions that started in it.
        assert all(finished.get(p, 0) >= THREADS for p in range(1, 2 * TOGGLES + 1)), finished
        # The toggled edge ran in every registered phase: its plans were rebuilt and used.
        assert len(toggled_calls) == TOGGLES and min(toggled_calls) >= 1, toggled_calls
        assert reg.state.generation == reg.pm.generation
        assert reg.pm.get_plugin("toggled") is None


# -- the registry of to() is per thread, and replacing the global one never breaks a call --


def test_isolated_registry_is_local_to_its_thread(np: Any, torch: Any) -> None:
    entered, leave = threading.Event(), threading.Event()
    seen: list[Any] = []

    def isolated() -> None:
        try:
            with isolated_registry() as reg:  # no plugin at all: nothing converts in here
                seen.append(default_registry() is reg)
                try:
                    to(np.ones(2, dtype=np.float32), "torch")
                except UnknownFrameworkError as exc:
                    seen.append(exc)
                entered.set()
                leave.wait(30)
        except BaseException as exc:
            seen.append(exc)
            entered.set()

    outer = default_registry()
    thread = threading.Thread(target=isolated)
    thread.start()
    try:
        assert entered.wait(30), "the isolated thread never entered its registry"
        a = np.arange(6, dtype=np.float32)
        for _ in range(3):  # while the other thread is inside isolated_registry()
            t = to(a, "torch")
            assert isinstance(t, torch.Tensor) and t.dtype == torch.float32
            assert t.tolist() == a.tolist()
            assert shares_memory(a, t)
            assert explain(a, "torch").zero_copy
            assert default_registry() is outer
    finally:
        leave.set()
        thread.join(30)
    assert seen[0] is True, seen
    assert isinstance(seen[1], UnknownFrameworkError), seen
    assert default_registry() is outer


def test_replacing_the_default_registry_never_breaks_a_call(
    np: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another thread's set_default_registry(None) lands just as to() has built the default
    registry and left its lock (the window of the race, made certain): the call goes on
    with the registry it built."""
    from interop_core.face import api

    class ClearedOnExit:
        def __init__(self) -> None:
            self.lock = threading.Lock()
            self.armed = True

        def __enter__(self) -> None:
            self.lock.acquire()

        def __exit__(self, *exc: object) -> None:
            self.lock.release()
            if self.armed:
                self.armed = False
                other = threading.Thread(target=set_default_registry, args=(None,))
                other.start()
                other.join(30)

    original = set_default_registry(None)
    try:
        monkeypatch.setattr(api, "_default_lock", ClearedOnExit())
        a = np.arange(4, dtype=np.float32)
        out = to(a, "numpy", copy=True)
        assert out.tolist() == [0.0, 1.0, 2.0, 3.0]
        assert not np.shares_memory(out, a)
        assert not api._default_lock.armed, "the race was not staged"
        assert isinstance(default_registry().state, State)
    finally:
        set_default_registry(original)


# -- caches keep no class alive, and stay bounded for classes made per object ---------------


def _sizes(st: State) -> dict[str, int]:
    return {
        "detect": len(st.detect.cache),
        "kinds": len(st.detect.kind_cache),
        "plain": sum(len(by_type) for by_type in st.plain.values()),
        "fast": len(st.fast),
        "slots": len(st.cache.slots),
    }


@pytest.mark.parametrize("count", [10, 300])
def test_caches_do_not_keep_dynamic_classes_alive(np: Any, count: int) -> None:
    with isolated_registry(builtins=True) as reg:
        base = np.arange(3, dtype=np.float32)
        to(base, "numpy"), to(base, "numpy", copy=True), to({"x": base}, "numpy")
        before = _sizes(reg.state)
        refs = []
        for i in range(count):
            cls = type(f"Made{i}", (np.ndarray,), {})
            x = base.view(cls)
            for _ in range(2):  # cold, then warm
                out = to(x, "numpy")
                assert out.tolist() == [0.0, 1.0, 2.0]
                assert np.shares_memory(out, base)
                copied = to(x, "numpy", copy=True)
                assert copied.tolist() == [0.0, 1.0, 2.0]
                assert not np.shares_memory(copied, base)
                assert to({"x": x}, "numpy")["x"].tolist() == [0.0, 1.0, 2.0]
            assert cls in reg.state.plain["numpy"], "a live class lost its warm entry"
            assert reg.state.detect.cache[cls] is not None
            refs.append(weakref.ref(cls))
            del cls, x, out, copied
        gc.collect()
        alive = sum(r() is not None for r in refs)
        assert alive == 0, f"{alive} of {count} classes kept alive"
        assert _sizes(reg.state) == before


def test_magicmock_leaves_keep_the_caches_bounded(np: Any) -> None:
    with isolated_registry(builtins=True) as reg:
        a = np.arange(2, dtype=np.float32)
        to([a, 1], "numpy")
        before = _sizes(reg.state)
        mocks = [mock.MagicMock() for _ in range(1000)]  # one class per mock, all alive
        for m in mocks:
            out = to([a, m], "numpy")
            assert out[1] is m
            assert out[0].tolist() == [0.0, 1.0]
        after = _sizes(reg.state)
        assert after["detect"] <= before["detect"] + SAME_NAME, after
        assert after["kinds"] <= before["kinds"] + SAME_NAME, after
        assert len(reg.state.detect.types.held) <= 2 * SAME_NAME
        del mocks, m, out
        gc.collect()
        assert _sizes(reg.state) == before


class _Base:
    """A class that lives as long as the module: keyed by itself."""


def test_type_table_bounds_run_time_classes_and_keys_lasting_ones_by_themselves() -> None:
    table: dict[Any, Any] = {}
    types = TypeTable(limit=8, same_name=3)
    types.put(table, _Base, _Base, "lasting")
    assert next(iter(table)) is _Base  # the class itself: the warm lookup is an identity
    same = [type("Same", (_Base,), {}) for _ in range(5)]
    for i, cls in enumerate(same):
        types.put(table, cls, cls, i)
    assert [cls in table for cls in same] == [False, False, True, True, True]
    assert [table[cls] for cls in same[2:]] == [2, 3, 4]
    others = [type(f"Other{i}", (_Base,), {}) for i in range(10)]
    for i, cls in enumerate(others):
        types.put(table, cls, (cls, "t"), i)
    assert len(types.held) <= 8
    assert len(table) <= 9
    assert table[others[-1], "t"] == 9 and table[_Base] == "lasting"
    types.put(table, others[-1], (others[-1], "t"), "again")  # replaces, adds no entry
    assert table[others[-1], "t"] == "again" and len(types.held) <= 8
    refs = [weakref.ref(c) for c in [*same, *others]]
    del same, others, cls
    gc.collect()
    assert all(r() is None for r in refs)
    assert table == {_Base: "lasting"} and not types.held
