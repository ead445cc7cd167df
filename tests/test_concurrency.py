"""Conversions from many threads while another thread registers and unregisters a plugin.

A call in flight keeps the registry state it started with; a rebuild swaps the whole state,
so every conversion must return the right framework and values, and none may raise.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from interop_core import ConverterSpec, FrameworkSpec, TensorInfo, explain, hookimpl, to
from interop_core.specs import CPU
from interop_core.testing import isolated_registry, shares_memory

THREADS = 8
ROUNDS = 200


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
    errors: list[BaseException] = []
    stop = threading.Event()
    toggles = 0

    def convert(seed: int) -> None:
        try:
            for i in range(ROUNDS):
                value = float(seed * 1000 + i)
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
                assert route.steps[0].converter in ("torch.from_numpy", "toggled from_numpy")
                back = to(t, "numpy")
                assert isinstance(back, np.ndarray), type(back)
                assert back.dtype == dtype
                assert (back == value).all()
                assert shares_memory(t, back)
                c = to({"x": t, "n": i}, "np", copy=True)
                assert c["n"] == i
                assert (c["x"] == value).all()
                assert not shares_memory(t, c["x"])
        except BaseException as exc:  # reported from the main thread
            errors.append(exc)

    def toggle() -> None:
        nonlocal toggles
        plugin = Toggled()
        try:
            while not stop.is_set():
                reg.register(plugin, name="toggled")
                time.sleep(0.0005)
                reg.unregister(name="toggled")
                toggles += 1
        except BaseException as exc:
            errors.append(exc)

    with isolated_registry(builtins=True) as reg:
        workers = [threading.Thread(target=convert, args=(n,)) for n in range(THREADS)]
        toggler = threading.Thread(target=toggle)
        toggler.start()
        for w in workers:
            w.start()
        for w in workers:
            w.join(timeout=120)
        stop.set()
        toggler.join(timeout=30)
        assert not any(w.is_alive() for w in [*workers, toggler]), "a thread hung"
        if errors:
            raise errors[0]
        assert toggles > 10, "the plugin was hardly toggled: the test raced nothing"
        assert Toggled.calls > 0, "the toggled edge never ran: its plans were never used"
        assert reg.state.generation == reg.pm.generation
        assert reg.pm.get_plugin("toggled") is None
