"""GPU routes as the planner builds them from the built-in plugins' declarations.

Planning reads only declarations, so these run on any machine, without torch, JAX or CuPy:
the search is asked to pretend that each framework sees the host and two GPUs. What the
routes then do on a real GPU (pointers, streams, values) is tests/test_gpu.py's part.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from conftest import exchange_names

from interop_core.declare.specs import ARRAY, CPU, ArrayTraits, Device, PlanKey
from interop_core.engine.planner import Goal, Graph
from interop_core.engine.registry import Registry
from interop_core.engine.router import home
from interop_core.engine.routes import Route, make_route
from interop_core.engine.state import State

GPU_FRAMEWORKS = ("torch", "jax", "cupy")
TWO_GPUS = ("cpu", "cuda:0", "cuda:1")


@pytest.fixture(scope="module")
def st() -> State:
    """The built-in plugins' state, its graph made of every declared edge: the registry's own
    holds only the edges of installed frameworks, and these tests need none installed."""
    state = Registry(entry_points=False).state
    state.graph = Graph(state.declared, state.frameworks, state.graph.kinds)
    return state


def pretend(seen: dict[str, tuple[str, ...]]) -> Callable[[str, str], str | None]:
    """A ``sees`` for the search: frameworks see the devices listed (others all of them)."""

    def sees(framework: str, device: str) -> str | None:
        devices = seen.get(framework, TWO_GPUS)
        return None if device in devices else f"{framework} sees no {device} device"

    return sees


def plan(
    st: State, source: str, device: str, target: str, goal: str, *, dtype: str = "float32",
    layout: str = "C", copy: bool | None = None,
    sees: Callable[[str, str], str | None] | None = None,
) -> Route:  # fmt: skip
    start = array_node(source, device, dtype, layout, copy)
    found = st.graph.search(start, Goal(target, goal), sees=sees or pretend({}))
    assert found.found, f"no route {source}@{device} -> {target}@{goal}: {found.refused}"
    return make_route(st.graph, start, Goal(target, goal), found)


def array_node(
    framework: str, device: str, dtype: str = "float32", layout: str = "C",
    copy: bool | None = None,
) -> PlanKey:  # fmt: skip
    """The start node of a writable, aligned array."""
    return PlanKey(ARRAY, framework, device, ArrayTraits(dtype, layout, False, True), copy=copy)


def nodes(route: Route) -> list[str]:
    return [route.source, *(s.target for s in route.steps)]


# -- the five lines ------------------------------------------------------------------


def test_cupy_to_torch_on_the_same_gpu_is_zero_copy(st: State) -> None:
    route = plan(st, "cupy", "cuda:0", "torch", "cuda:0")
    assert route.zero_copy and [s.converter for s in route.steps] == ["torch.from_dlpack"]


def test_torch_to_jax_on_the_same_gpu_is_zero_copy(st: State) -> None:
    route = plan(st, "torch", "cuda:0", "jax", "cuda:0")
    assert route.zero_copy and [s.converter for s in route.steps] == ["jax.dlpack.from_dlpack"]


def test_jax_to_cupy_on_another_gpu_is_one_device_copy(st: State) -> None:
    route = plan(st, "jax", "cuda:0", "cupy", "cuda:1")
    assert route.copies == 1
    assert all(n.endswith(("cuda:0", "cuda:1")) for n in nodes(route)), nodes(route)
    # The CuPy array the route meets on cuda:0 aliases JAX memory; the result is a copy, so
    # that caveat is not the route's.
    assert not route.notes, route.notes


def test_gpu_to_host_is_one_copy(st: State) -> None:
    route = plan(st, "torch", "cuda:0", "numpy", "cpu")
    assert route.copies == 1
    assert [s.converter for s in route.steps] == ["Tensor.cpu()", exchange_names()[1]]


def test_host_to_gpu_is_one_copy(st: State) -> None:
    route = plan(st, "numpy", "cpu", "torch", "cuda:0")
    assert route.copies == 1 and nodes(route)[-1] == "torch@cuda:0"


# -- every pair ------------------------------------------------------------------------------

PAIRS = [(a, b) for a in GPU_FRAMEWORKS for b in GPU_FRAMEWORKS if a != b]


@pytest.mark.parametrize(("source", "target"), PAIRS)
def test_every_pair_shares_memory_on_one_gpu(st: State, source: str, target: str) -> None:
    route = plan(st, source, "cuda:1", target, "cuda:1")
    assert route.zero_copy and len(route.steps) == 1, str(route)


@pytest.mark.parametrize(("source", "target"), [*PAIRS, *((f, f) for f in GPU_FRAMEWORKS)])
def test_between_two_gpus_one_copy_and_never_the_host(st: State, source: str, target: str) -> None:
    route = plan(st, source, "cuda:0", target, "cuda:1")
    assert route.copies == 1, str(route)
    assert not any(n.endswith("@cpu") for n in nodes(route)), str(route)


@pytest.mark.parametrize("framework", GPU_FRAMEWORKS)
def test_host_and_gpu_one_copy_each_way(st: State, framework: str) -> None:
    for start, goal in (("cpu", "cuda:0"), ("cuda:0", "cpu")):
        source, target = ("numpy", framework) if start == "cpu" else (framework, "numpy")
        route = plan(st, source, start, target, goal)
        assert route.copies == 1, str(route)


def test_copy_true_on_one_gpu_stays_on_it(st: State) -> None:
    route = plan(st, "cupy", "cuda:0", "torch", "cuda:0", copy=True)
    assert route.copies == 1
    assert all(n.endswith("cuda:0") for n in nodes(route)), str(route)


def test_copy_false_between_gpus_has_no_route(st: State) -> None:
    start = array_node("torch", "cuda:0", copy=False)
    assert not st.graph.search(start, Goal("jax", "cuda:1"), sees=pretend({})).found


def test_a_layout_the_consumer_refuses_is_copied_on_the_gpu(st: State) -> None:
    # JAX imports C-contiguous buffers only: an F-order CuPy array is copied on its GPU.
    route = plan(st, "cupy", "cuda:0", "jax", "cuda:0", layout="F")
    assert route.copies == 1
    assert all(n.endswith("cuda:0") for n in nodes(route)), str(route)


# -- what the devices the frameworks see change ----------------------------------------------


def test_a_cpu_request_never_asks_about_gpus(st: State) -> None:
    asked: list[tuple[str, str]] = []

    def sees(framework: str, device: str) -> str | None:
        asked.append((framework, device))
        return None

    for target in ("torch", "jax", "numpy", "tensorflow"):
        plan(st, "numpy", "cpu", target, "cpu", sees=sees)
    assert asked == []


def test_a_framework_that_sees_no_gpu_is_routed_around(st: State) -> None:
    # JAX without a GPU backend: torch and CuPy still share memory on the GPU.
    no_jax_gpu = pretend({"jax": ("cpu",)})
    route = plan(st, "cupy", "cuda:0", "torch", "cuda:0", sees=no_jax_gpu)
    assert route.zero_copy
    start = array_node("torch", "cuda:0")
    found = st.graph.search(start, Goal("jax", "cuda:0"), sees=no_jax_gpu)
    assert not found.found
    assert any("jax sees no cuda:0 device" in r.reason for r in found.refused)


def test_the_host_is_taken_between_gpus_only_when_nothing_else_exists(st: State) -> None:
    # Pretend torch sees only cuda:0 and CuPy only cuda:1: no device-to-device route.
    split = pretend({"torch": ("cpu", "cuda:0"), "cupy": ("cuda:1",), "jax": ("cpu",)})
    route = plan(st, "torch", "cuda:0", "cupy", "cuda:1", sees=split)
    assert route.copies == 2 and any(n.endswith("@cpu") for n in nodes(route)), str(route)
    assert any("goes through host memory" in n for n in route.notes), str(route)
    assert "goes through host memory" in str(route)


# -- where device=None sends an array --------------------------------------------------------


def test_home_device(st: State) -> None:
    spec = st.frameworks
    assert home(spec["numpy"], Device("cuda", 1)) == CPU  # numpy holds host arrays only
    assert home(spec["cupy"], CPU) == Device("cuda", 0)  # CuPy, GPU arrays only
    assert home(spec["torch"], Device("cuda", 1)) == Device("cuda", 1)
    assert home(spec["jax"], CPU) == CPU


def test_gpu_spelled_as_jax_does_is_cuda() -> None:
    assert Device.parse("gpu:1") == Device("cuda", 1)
    assert Device.parse("GPU") == Device("cuda", 0)


def test_moves_cost_more_than_any_zero_copy_edge(st: State) -> None:
    moves = [e for e in st.graph.edges if e.array.to_device is not None]
    # (JAX's moves between host devices share the buffer: they are moves, not shares.)
    shares = [
        e for e in st.graph.edges if e.zero_copy and e.kind == "array" and not e.array.to_device
    ]
    assert moves and min(e.cost for e in moves) > max(e.cost for e in shares)
