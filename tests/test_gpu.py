"""torch, JAX and CuPy on CUDA GPUs (marker ``gpu``; skipped where a framework sees none).

Memory sharing is checked with each framework's own pointer API (``Tensor.data_ptr()``,
``cupy.ndarray.data.ptr``, ``jax.Array.unsafe_buffer_pointer()``), values on the host
through each framework's own copy (``adapters.to_numpy``). The stream tests hand a buffer
over while the kernel that writes it is still running (``torch.cuda._sleep`` ahead of it
on the producer's stream): a consumer that did not wait would read zeros. ``nox -s gpu`` runs them.
"""

from __future__ import annotations

from typing import Any

import pytest
from adapters import to_numpy
from conftest import gpu_count, need, need_gpus

from interop_core import explain, to

pytestmark = pytest.mark.gpu

GPU_FRAMEWORKS = ("torch", "jax", "cupy")
PAIRS = [(a, b) for a in GPU_FRAMEWORKS for b in GPU_FRAMEWORKS if a != b]
#: GPU clock cycles the producer's stream sleeps before writing (about 0.5 s at 2 GHz).
SLEEP = 1 << 30
N = 1 << 20


def make(name: str, n: int = N, device: int = 0) -> Any:
    """float32 0..n-1 on cuda:``device``, made by framework ``name`` itself."""
    if name == "torch":
        import torch

        return torch.arange(n, dtype=torch.float32, device=f"cuda:{device}")
    if name == "jax":
        import jax
        import jax.numpy as jnp
        from interop_plugins.frameworks.jax import gpus_by_index

        return jax.device_put(jnp.arange(n, dtype=jnp.float32), gpus_by_index()[device])
    import cupy

    with cupy.cuda.Device(device):
        return cupy.arange(n, dtype=cupy.float32)


def owner(x: Any) -> str:
    """Which framework's array ``x`` is, by its type's module."""
    top = type(x).__module__.partition(".")[0]
    return {"jaxlib": "jax"}.get(top, top)


def ptr(x: Any) -> int:
    """The address of the first element, read by the framework that owns ``x``."""
    name = owner(x)
    if name == "torch":
        return int(x.data_ptr())
    if name == "jax":
        return int(x.unsafe_buffer_pointer())
    return int(x.data.ptr)


def where(x: Any) -> str:
    """The CUDA device ``x`` lives on, as the framework says it."""
    name = owner(x)
    if name == "torch":
        return str(x.device)
    if name == "jax":
        (d,) = x.devices()
        return f"cuda:{d.local_hardware_id}" if d.platform == "gpu" else "cpu"
    return f"cuda:{x.device.id}"


# -- zero-copy on one GPU --------------------------------------------------------------------


@pytest.mark.parametrize(("source", "target"), PAIRS)
def test_same_gpu_shares_memory(source: str, target: str) -> None:
    need_gpus(source, target)
    x = make(source)
    route = explain(x, target)
    y = to(x, target)
    assert owner(y) == target and str(y.dtype).endswith("float32")
    assert route.zero_copy and len(route.steps) == 1, str(route)
    assert ptr(y) == ptr(x) and where(y) == where(x) == "cuda:0"
    assert (to_numpy(y) == to_numpy(x)).all()


def test_same_gpu_never_touches_the_host() -> None:
    need_gpus(*GPU_FRAMEWORKS)
    import jax

    t = make("torch")
    with (
        jax.transfer_guard_device_to_host("disallow_explicit"),
        jax.transfer_guard_host_to_device("disallow_explicit"),
    ):
        j = to(t, "jax")
        c = to(j, "cupy")
        back = to(c, "torch")
    assert ptr(j) == ptr(c) == ptr(back) == ptr(t)


def test_the_issue_lines() -> None:
    need_gpus(*GPU_FRAMEWORKS)
    import numpy as np

    c = make("cupy")
    t = to(c, "torch")  # same GPU: zero-copy
    j = to(t, "jax")  # same GPU: zero-copy, no host round trip
    assert ptr(t) == ptr(j) == ptr(c)
    h = to(t, "numpy")  # GPU -> host: one copy, stated in explain()
    assert explain(t, "numpy").copies == 1 and type(h) is np.ndarray
    assert (h == np.arange(N, dtype=np.float32)).all()
    g = to(h, "torch", device="cuda")  # host -> GPU: one copy
    assert str(g.device) == "cuda:0" and (to_numpy(g) == h).all()
    if gpu_count("cupy") > 1 and gpu_count("jax") > 1:
        moved = to(j, "cupy", device="cuda:1")  # another GPU: one device-to-device copy
        assert where(moved) == "cuda:1" and (to_numpy(moved) == h).all()


# -- stream safety: a producer kernel still running -------------------------------------------


def _torch_producer() -> tuple[Any, Any]:
    """A zero tensor and a side stream on which a sleep, then fill_(7), are queued."""
    import torch

    x = torch.zeros(N, device="cuda:0")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())  # the zeros are written first
    return x, side


@pytest.mark.parametrize("target", ["cupy", "jax"])
def test_consumer_waits_for_a_torch_kernel_still_running(target: str) -> None:
    need_gpus("torch", target)
    import torch

    x, side = _torch_producer()
    with torch.cuda.stream(side):  # the producer's current stream while it converts
        torch.cuda._sleep(SLEEP)
        x.fill_(7.0)
        y = to(x, target)
    assert float(to_numpy(y).sum()) == 7.0 * N


def test_without_the_stream_handoff_the_race_is_real() -> None:
    """The control: the same hand-over with no stream (``stream=-1``) reads zeros, so the
    test above would fail if to() did not pass the consumer's stream."""
    need_gpus("torch", "cupy")
    import cupy
    import torch

    x, side = _torch_producer()
    with torch.cuda.stream(side):
        torch.cuda._sleep(SLEEP)
        x.fill_(7.0)
        capsule = x.__dlpack__(stream=-1)
    early = float(cupy.from_dlpack(capsule).sum())
    torch.cuda.synchronize()
    assert early == 0.0, "the fill finished before the read: the stream tests prove nothing"


@pytest.mark.parametrize("target", ["torch", "jax"])
def test_consumer_waits_for_a_cupy_kernel_still_running(target: str) -> None:
    need_gpus("cupy", "torch", target)
    import cupy
    import torch

    x = cupy.zeros(N, dtype=cupy.float32)
    stream = cupy.cuda.Stream(non_blocking=True)
    stream.wait_event(cupy.cuda.get_current_stream().record())
    with stream:  # CuPy's current stream while it converts
        with torch.cuda.stream(torch.cuda.ExternalStream(stream.ptr)):
            torch.cuda._sleep(SLEEP)
        x.fill(7.0)
        y = to(x, target)
    assert float(to_numpy(y).sum()) == 7.0 * N


def test_consumer_waits_for_a_jax_computation_still_running() -> None:
    need_gpus("jax", "torch", "cupy")
    import jax
    import jax.numpy as jnp

    @jax.jit
    def slow(a: Any) -> Any:
        for _ in range(50):  # long enough to be running when the buffer is handed over
            a = jnp.tanh(a @ a.T) @ a / a.shape[0]  # stays 1.0
        return a[:, 0] * 0 + 7.0

    from interop_plugins.frameworks.jax import gpus

    a = jax.device_put(jnp.ones((2048, 2048), jnp.float32), gpus()[0])
    j = slow(a)  # dispatched, not finished
    t, c = to(j, "torch"), to(j, "cupy")
    assert float(t.sum()) == float(c.sum()) == 7.0 * 2048


def test_no_device_synchronize_on_the_warm_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Counting: the conversions on one GPU call no device-wide synchronize."""
    need_gpus(*GPU_FRAMEWORKS)
    import cupy
    import torch

    calls: list[str] = []
    # (CuPy's Device and Stream are extension types: their methods cannot be replaced.)
    for owner_, name in ((torch.cuda, "synchronize"), (cupy.cuda.runtime, "deviceSynchronize")):
        real = getattr(owner_, name)

        def counting(*a: Any, _real: Any = real, _name: str = name, **k: Any) -> Any:
            calls.append(_name)
            return _real(*a, **k)

        monkeypatch.setattr(owner_, name, counting)
    arrays = {name: make(name) for name in GPU_FRAMEWORKS}
    for _ in range(3):  # cold, then warm
        for source, target in PAIRS:
            to(arrays[source], target)
    assert calls == []


# -- copies: between GPUs, and between the host and a GPU -------------------------------------


@pytest.mark.parametrize(("source", "target"), [*PAIRS, *((f, f) for f in GPU_FRAMEWORKS)])
def test_another_gpu_is_one_device_to_device_copy(source: str, target: str) -> None:
    need_gpus(source, target, count=2)
    x = make(source)
    route = explain(x, target, device="cuda:1")
    assert route.copies == 1 and not any(s.target.endswith("@cpu") for s in route.steps)
    y = to(x, target, device="cuda:1")
    assert owner(y) == target and where(y) == "cuda:1" and ptr(y) != ptr(x)
    assert (to_numpy(y) == to_numpy(x)).all()


@pytest.mark.parametrize("framework", GPU_FRAMEWORKS)
def test_host_and_gpu_one_copy_each_way(framework: str) -> None:
    need_gpus(framework)
    np = need("numpy")
    a = np.arange(N, dtype=np.float32)
    assert explain(a, framework, device="cuda:0").copies == 1
    x = to(a, framework, device="cuda:0")
    assert owner(x) == framework and where(x) == "cuda:0" and (to_numpy(x) == a).all()
    assert explain(x, "numpy").copies == 1  # device=None: numpy holds host arrays only
    back = to(x, "numpy")
    assert type(back) is np.ndarray and (back == a).all()
    if framework == "cupy":  # downloaded into a 64-byte aligned buffer, for JAX and TF
        assert back.ctypes.data % 64 == 0
