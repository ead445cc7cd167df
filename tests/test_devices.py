"""Devices keep their index in keys, nodes and routes (a toy two-device framework, no GPU).

The toy framework's arrays say which device they are on ("cpu", "cuda:0", "cuda:1"); its
one move edge counts its calls, so a test sees a move happen exactly when it must.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

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
                module=MODULE,
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
                          devices=frozenset({"cpu", "cuda"}), to_device="cuda"),
            ConverterSpec("toy to cpu", "toydev", "toydev", load, zero_copy=False,
                          devices=frozenset({"cuda"}), to_device="cpu"),
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


def test_no_plugin_moves_to_an_unknown_kind(toy: ToyDevicePlugin) -> None:
    with pytest.raises(NoRouteError, match="xpu:0 is reached only by a device move"):
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
                       device_kinds=("cpu",))  # fmt: skip
        return [replace(toydev, devices=lambda: ["cpu", "cuda:0", "cuda:1"]), host]

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
