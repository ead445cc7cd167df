"""Devices keep their index in keys, nodes and routes (a toy two-device framework, no GPU).

The toy framework's arrays say which device they are on ("cpu", "cuda:0", "cuda:1"); its
one move edge counts its calls, so a test sees a move happen exactly when it must.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import types
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from conftest import available, need

from interop_core import (
    ConverterSpec,
    Device,
    DeviceError,
    FrameworkSpec,
    NoRouteError,
    TensorInfo,
    explain,
    hookimpl,
    to,
)
from interop_core.plugin import ArrayEdge, Devices, Package
from interop_core.testing import isolated_registry

MODULE = "interop_test_toydevices"


class ToyArray:
    """A fake array that lives on a named device."""

    def __init__(self, values: list[float], device: str = "cpu") -> None:
        self.values = list(values)
        self.device = device


class ToyDevicePlugin:
    """Framework "toydev" on cpu, cuda:0 and cuda:1, with a counting move edge."""

    def __init__(self) -> None:
        self.moves: list[str] = []

    @hookimpl
    def interop_frameworks(self) -> list[FrameworkSpec]:
        return [
            FrameworkSpec(
                name="toydev",
                array_types=(f"{MODULE}.ToyArray",),
                describe=lambda x: TensorInfo(
                    "toydev", "float32", Device.parse(x.device), (len(x.values),), "C", False, True
                ),
                key=lambda x: x.device,
                data_ptr=id,
                dtypes=frozenset({"float32"}),
                package=Package(module=MODULE),
            )
        ]

    @hookimpl
    def interop_converters(self) -> list[ConverterSpec]:
        def load() -> Any:
            def move(x: ToyArray, device: Device) -> ToyArray:
                self.moves.append(str(device))
                return ToyArray(x.values, str(device))

            return move

        return [
            ConverterSpec("toy to cuda", "toydev", "toydev", load, zero_copy=False,
                          devices=frozenset({"cpu", "cuda"}), array=ArrayEdge(to_device="cuda"), ),
            ConverterSpec("toy to cpu", "toydev", "toydev", load, zero_copy=False,
                          devices=frozenset({"cuda"}), array=ArrayEdge(to_device="cpu"), ),
        ]  # fmt: skip


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> Iterator[ToyDevicePlugin]:
    mod = types.ModuleType(MODULE)
    mod.ToyArray = ToyArray  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, MODULE, mod)
    plugin = ToyDevicePlugin()
    with isolated_registry(plugin):
        yield plugin


def test_another_index_of_the_same_kind_is_a_move(toy: ToyDevicePlugin) -> None:
    x = ToyArray([1.0, 2.0], "cuda:0")
    route = explain(x, "toydev", device="cuda:1")
    assert [(s.source, s.target) for s in route.steps] == [("toydev@cuda:0", "toydev@cuda:1")]
    assert route.copies == 1 and toy.moves == []  # explain converts nothing
    y = to(x, "toydev", device="cuda:1")
    assert y is not x and y.device == "cuda:1" and y.values == [1.0, 2.0]
    assert toy.moves == ["cuda:1"]


def test_same_device_is_no_move(toy: ToyDevicePlugin) -> None:
    x = ToyArray([1.0], "cuda:1")
    for device in ("cuda:1", None, Device("cuda", 1)):
        assert to(x, "toydev", device=device) is x
        assert explain(x, "toydev", device=device).steps == ()
    assert toy.moves == []


def test_warm_path_keeps_devices_apart(toy: ToyDevicePlugin) -> None:
    """The same request for arrays on different devices: each gets its own plan."""
    for _ in range(3):
        on0, on1 = ToyArray([1.0], "cuda:0"), ToyArray([2.0], "cuda:1")
        assert to(on1, "toydev", device="cuda:1") is on1
        moved = to(on0, "toydev", device="cuda:1")
        assert moved.device == "cuda:1" and moved.values == [1.0]
        assert to(on0, "toydev", device="cpu").device == "cpu"
    assert toy.moves == ["cuda:1", "cpu"] * 3


def test_moves_land_on_the_index_asked(toy: ToyDevicePlugin) -> None:
    x = ToyArray([3.0], "cpu")
    assert to(x, "toydev", device="cuda:1").device == "cuda:1"
    assert to(x, "toydev", device="cuda").device == "cuda:0"  # "cuda" is index 0
    assert toy.moves == ["cuda:1", "cuda:0"]


class KnowsXpu(ToyDevicePlugin):
    """ "toydev" that says it holds xpu arrays, with no edge that moves one there."""

    @hookimpl
    def interop_frameworks(self) -> list[FrameworkSpec]:
        toydev = super().interop_frameworks()[0]
        return [replace(toydev, devices=Devices(kinds=("cpu", "cuda", "xpu")))]


def test_no_plugin_moves_to_a_kind_no_edge_reaches(toy: ToyDevicePlugin) -> None:
    with (
        isolated_registry(KnowsXpu()),  # toydev holds xpu arrays, but nothing moves them there
        pytest.raises(NoRouteError, match="xpu:0 is reached only by a device move"),
    ):
        to(ToyArray([1.0], "cuda:0"), "toydev", device="xpu:0")


def test_a_device_kind_no_plugin_knows_is_a_device_error(toy: ToyDevicePlugin) -> None:
    with pytest.raises(DeviceError, match="no installed plugin knows the device kind 'xpu'"):
        to(ToyArray([1.0], "cuda:0"), "toydev", device="xpu:0")


# -- framework device objects and strings, parsed by their plugins ---------------------------


def test_torch_device_object(np: Any, torch: Any) -> None:
    a = np.zeros(3, dtype=np.float32)
    assert to(a, "torch", device=torch.device("cpu")).device == torch.device("cpu")
    assert explain(a, "torch", device=torch.device("cpu")).target == "torch@cpu"


def test_tensorflow_device_string(np: Any, tf: Any) -> None:
    a = np.zeros(3, dtype=np.float32)
    y = to(a, "tensorflow", device="/job:localhost/replica:0/task:0/device:CPU:0")
    assert isinstance(y, tf.Tensor) and y.device.endswith("CPU:0")


def test_jax_device_object(np: Any, jax: Any) -> None:
    a = np.zeros(3, dtype=np.float32)
    assert to(a, "jax", device=jax.devices("cpu")[0]).devices() == {jax.devices("cpu")[0]}


def test_bad_framework_device_string_is_a_device_error(np: Any, tf: Any) -> None:
    with pytest.raises(DeviceError):
        to(np.zeros(2), "numpy", device="/device:GPU:x")


# -- device=None, the devices a framework sees, and the host between devices -----------------


class HostOnlyMoves(ToyDevicePlugin):
    """ "toydev" whose moves go only between the host and a GPU (none from GPU to GPU), and
    "toyhost", a framework of host arrays only, reached from toydev on the host."""

    @hookimpl
    def interop_frameworks(self) -> list[FrameworkSpec]:
        toydev = super().interop_frameworks()[0]
        host = replace(toydev, name="toyhost", array_types=(f"{MODULE}.ToyHostArray",),
                       devices=Devices(kinds=("cpu",)))  # fmt: skip
        return [replace(toydev, devices=Devices(visible=lambda: ["cpu", "cuda:0", "cuda:1"])), host]

    @hookimpl
    def interop_converters(self) -> list[ConverterSpec]:
        to_cuda, to_cpu = super().interop_converters()
        to_host = ConverterSpec("toy to toyhost", "toydev", "toyhost", lambda: ToyHostArray,
                                zero_copy=True)  # fmt: skip
        return [replace(to_cuda, devices=frozenset({"cpu"})), to_cpu, to_host]


class ToyHostArray(ToyArray):
    def __init__(self, x: ToyArray) -> None:
        super().__init__(x.values, x.device)


@pytest.fixture
def hostonly(monkeypatch: pytest.MonkeyPatch) -> Iterator[ToyDevicePlugin]:
    mod = types.ModuleType(MODULE)
    mod.ToyArray = ToyArray  # type: ignore[attr-defined]
    mod.ToyHostArray = ToyHostArray  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, MODULE, mod)
    plugin = HostOnlyMoves()
    with isolated_registry(plugin):
        yield plugin


def test_between_gpus_through_the_host_only_when_nothing_else_exists(
    hostonly: ToyDevicePlugin,
) -> None:
    x = ToyArray([1.0, 2.0], "cuda:0")
    route = explain(x, "toydev", device="cuda:1")
    assert [s.target for s in route.steps] == ["toydev@cpu", "toydev@cuda:1"]
    assert route.copies == 2
    assert "goes through host memory" in str(route)
    y = to(x, "toydev", device="cuda:1")
    assert (y.device, y.values, hostonly.moves) == ("cuda:1", [1.0, 2.0], ["cpu", "cuda:1"])


def test_device_none_lands_where_the_target_can_hold_it(hostonly: ToyDevicePlugin) -> None:
    x = ToyArray([3.0], "cuda:1")
    route = explain(x, "toyhost")  # toyhost holds host arrays only: the array comes home
    assert route.target == "toyhost@cpu" and route.copies == 1
    y = to(x, "toyhost")
    assert isinstance(y, ToyHostArray) and y.device == "cpu" and hostonly.moves == ["cpu"]


def test_a_device_the_framework_does_not_see_is_refused_before_planning(
    hostonly: ToyDevicePlugin,
) -> None:
    with pytest.raises(NoRouteError) as info:
        to(ToyArray([1.0], "cpu"), "toydev", device="cuda:2")
    text = str(info.value)
    assert "toydev sees no cuda:2 device on this machine (it sees: cpu, cuda:0, cuda:1)" in text
    assert "Pass device= one of cpu, cuda:0, cuda:1." in text and hostonly.moves == []


# -- CPU device indexes (JAX's host devices) and strings that are no device ------------------

#: JAX makes this many host devices only when the flag is set before it starts: such checks
#: run in a child process, so every test session exercises them.
FOUR_CPUS = "--xla_force_host_platform_device_count=4"

#: What each child starts with: four JAX host devices, and arrays placed on them.
PRELUDE = """
import numpy as np
import jax
import jax.numpy as jnp
import pytest
from interop_core import (
    CopyRequiredError, DeviceError, NoRouteError, explain, testing, to,
)
from interop_plugins.frameworks.numpy import aligned_copy

cpus = jax.devices("cpu")
assert len(cpus) == 4, cpus
"""


def on_four_host_devices(code: str) -> None:
    """Run ``code`` (after :data:`PRELUDE`) where JAX sees four host devices; its asserts
    must hold."""
    need("numpy")
    need("jax")
    flags = f"{os.environ.get('XLA_FLAGS', '')} {FOUR_CPUS}".strip()
    env = {**os.environ, "XLA_FLAGS": flags, "JAX_PLATFORMS": "cpu"}
    script = textwrap.dedent(PRELUDE) + textwrap.dedent(code)
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300
    )
    assert run.returncode == 0, f"{run.stdout}\n{run.stderr}"


def test_an_array_sent_to_a_jax_host_device_lands_on_it() -> None:
    on_four_host_devices("""
    a = aligned_copy(np.arange(6, dtype=np.float32))
    for device in (cpus[2], "cpu:2"):
        route = explain(a, "jax", device=device)
        assert route.target == "jax@cpu:2" and route.zero_copy, route
        for _ in range(2):  # the cold path, then the warm one
            y = to(a, "jax", device=device)
            assert y.devices() == {cpus[2]} and y.dtype == jnp.float32
            # jax.device_put shares an aligned host buffer on any host device
            assert y.unsafe_buffer_pointer() == a.ctypes.data
            np.testing.assert_array_equal(np.asarray(y), a)
    assert to(a, "jax", device="cpu:2", copy=False).devices() == {cpus[2]}

    # A buffer JAX cannot share: one copy, reported, and still on the device asked.
    odd = np.empty(4 * 6 + 128, np.uint8)
    start = -odd.ctypes.data % 64 + 16
    b = odd[start : start + 24].view(np.float32)
    b[...] = np.arange(6)
    route = explain(b, "jax", device=cpus[2])
    assert route.target == "jax@cpu:2" and route.copies == 1, route
    y = to(b, "jax", device=cpus[2])
    assert y.devices() == {cpus[2]} and y.unsafe_buffer_pointer() != b.ctypes.data
    np.testing.assert_array_equal(np.asarray(y), b)
    with pytest.raises(CopyRequiredError):
        to(b, "jax", device="cpu:2", copy=False)

    # device=None and "cpu" (index 0) keep to JAX's first host device.
    assert to(a, "jax").devices() == {cpus[0]}
    assert to(a, "jax", device="cpu").devices() == {cpus[0]}
    """)


def test_a_jax_array_moves_between_host_devices() -> None:
    on_four_host_devices("""
    x = jax.device_put(jnp.arange(6, dtype=jnp.float32), cpus[3])
    route = explain(x, "jax", device="cpu:1")
    steps = [(s.source, s.target, s.zero_copy) for s in route.steps]
    assert steps == [("jax@cpu:3", "jax@cpu:1", True)], route
    for _ in range(2):  # the cold path, then the warm one
        y = to(x, "jax", device="cpu:1")
        assert y.devices() == {cpus[1]} and x.devices() == {cpus[3]}
        # host devices share memory: the move shares the (immutable) buffer
        assert y.unsafe_buffer_pointer() == x.unsafe_buffer_pointer()
        np.testing.assert_array_equal(np.asarray(y), np.arange(6))
    assert to(x, "jax", device="cpu:1", copy=False).devices() == {cpus[1]}
    z = to(x, "jax", device=cpus[1], copy=True)  # JAX's own device_put: one copy
    assert explain(x, "jax", device=cpus[1], copy=True).copies == 1
    assert z.devices() == {cpus[1]} and z.unsafe_buffer_pointer() != x.unsafe_buffer_pointer()
    np.testing.assert_array_equal(np.asarray(z), np.arange(6))
    assert to(x, "jax", device="cpu").devices() == {cpus[0]}  # "cpu" is index 0
    for device in (None, "cpu:3", cpus[3]):  # where it is already: nothing happens
        assert to(x, "jax", device=device) is x
        assert explain(x, "jax", device=device).steps == ()

    # numpy has one host device: the array crosses to it, sharing memory.
    route = explain(x, "numpy")
    assert route.target == "numpy@cpu" and route.zero_copy, route
    n = to(x, "numpy")
    assert n.ctypes.data == x.unsafe_buffer_pointer()
    """)


def test_other_frameworks_take_host_device_zero_only() -> None:
    frameworks = ["numpy"] + [n for n in ("torch", "tensorflow") if available(n)]
    on_four_host_devices(f"""
    frameworks = {frameworks!r}
    a = aligned_copy(np.arange(4, dtype=np.float32))
    x = jax.device_put(jnp.arange(4, dtype=jnp.float32), cpus[3])
    for name in frameworks:
        for device in ("cpu", "cpu:0"):
            y = to(a, name, device=device)
            assert testing.framework_of(y) == name
            assert testing.data_ptr(y) == a.ctypes.data  # nothing moved
            z = to(x, name, device=device)  # from jax's host device 3 to the one here
            assert testing.data_ptr(z) == x.unsafe_buffer_pointer()
        for src in (a, x):
            with pytest.raises(NoRouteError) as info:
                to(src, name, device="cpu:1")
            text = str(info.value)
            assert f"{{name}} sees no cpu:1 device on this machine (it sees: cpu)" in text, text
            assert "Pass device= one of cpu." in text, text

    # cpu:99 exists in no framework: the device itself is wrong.
    for name in ["jax", *frameworks]:
        with pytest.raises(DeviceError) as info:
            to(a, name, device="cpu:99")
        text = str(info.value)
        assert "'cpu:99'" in text and "jax: cpu, cpu:1, cpu:2, cpu:3" in text, text
    """)


def test_torch_tensor_to_a_jax_host_device() -> None:
    need("torch")
    on_four_host_devices("""
    import torch

    t = torch.arange(6, dtype=torch.float32)
    route = explain(t, "jax", device="cpu:2")
    assert route.target == "jax@cpu:2", route
    y = to(t, "jax", device="cpu:2")
    assert y.devices() == {cpus[2]}
    np.testing.assert_array_equal(np.asarray(y), t.numpy())
    if route.zero_copy:
        assert y.unsafe_buffer_pointer() == t.data_ptr()
    """)


def test_a_cpu_index_no_framework_has_is_a_device_error(np: Any) -> None:
    a = np.zeros(3, dtype=np.float32)
    for call in (to, explain):
        with pytest.raises(DeviceError) as info:
            call(a, "numpy", device="cpu:99")
        text = str(info.value)
        assert "'cpu:99'" in text and "numpy: cpu" in text, text


@pytest.mark.parametrize("device", ["gpu0", "cuda1", "cpu0", "banana", "cuda:0:1", "CUDA-1"])
def test_a_string_that_is_no_device_is_a_device_error(np: Any, device: str) -> None:
    a = np.zeros(3, dtype=np.float32)
    for call in (to, explain):
        with pytest.raises(DeviceError) as info:
            call(a, "numpy", device=device)
        text = str(info.value)
        assert f"{device!r} is not a device" in text, text
        assert "'cpu', 'cpu:N', 'cuda', 'cuda:N'" in text, text
        assert "sees no" not in text


def test_torch_says_gpu0_is_no_device(np: Any, torch: Any) -> None:
    with pytest.raises(DeviceError, match="'gpu0' is not a device"):
        to(np.zeros(2, dtype=np.float32), "torch", device="gpu0")
