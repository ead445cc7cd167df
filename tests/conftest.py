"""Shared fixtures: framework availability with nox's "must run" rule.

A test that needs a framework calls ``need("torch")`` (or uses the fixture of the same
name). When the framework is missing the test is skipped with a reason, unless the
environment variable INTEROP_REQUIRE (set by nox sessions) names it: then it fails.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import socket
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

FRAMEWORKS = ("numpy", "torch", "jax", "tensorflow", "dali", "cupy", "tf2jax", "scipy")
#: Data loaders (the .[loaders] extra): the full-stack session requires them as well.
LOADERS = ("torchdata", "grain", "datasets")
#: Table libraries (the .[tables] extra): the full-stack session requires them as well.
TABLES = ("pyarrow", "polars", "pandas", "duckdb", "nanoarrow", "arro3.core")
#: What the .[files] extra brings (safetensors writes the files read; psutil reads resident
#: memory): the full-stack session requires them as well.
FILES = ("safetensors", "ml_dtypes", "psutil")
_MODULES = {
    "numpy": "numpy", "torch": "torch", "jax": "jax", "tensorflow": "tensorflow",
    "dali": "nvidia.dali", "cupy": "cupy", "tf2jax": "tf2jax", "scipy": "scipy.sparse",
    # Data loaders whose checkpoints are tested (need() imports them, nothing else).
    "torchdata": "torchdata.stateful_dataloader", "grain": "grain", "datasets": "datasets",
    "pyarrow": "pyarrow", "polars": "polars", "pandas": "pandas",
    # Arrow producers seen only through the PyCapsule interface.
    "duckdb": "duckdb", "nanoarrow": "nanoarrow", "arro3.core": "arro3.core",
    "safetensors": "safetensors", "ml_dtypes": "ml_dtypes", "psutil": "psutil",
}  # fmt: skip


@functools.cache
def _every() -> dict[str, Any]:
    """Every framework's spec by name, imported or not: a registry of its own with every
    plugin loaded (the default registry loads a built-in once a module it is about is
    imported, and the tests run it that way)."""
    from interop_core.engine.registry import Registry

    return dict(Registry().state.frameworks)


def framework_spec(name: str) -> Any:
    """The spec of framework ``name`` (a built-in's or an installed plugin's), whether or
    not its module is imported."""
    return _every()[name]


def frameworks(*, builtin: bool = False) -> tuple[str, ...]:
    """The frameworks the tests convert between, as the plugins declare them: those ``to()``
    converts into that build examples on the host (``target``, ``example``, "cpu" in
    ``device_kinds``), as the conformance kit picks the frameworks it checks a framework
    against; installed or not (their tests skip through :func:`need`), so a framework a
    plugin adds is tested too. ``builtin``: only those of interop_core's own plugins (for
    tests of what the built-ins promise, such as zero-copy between every pair)."""
    from interop_core.engine.manager import builtin_plugins

    return tuple(
        name
        for name, spec in _every().items()
        if spec.target
        and spec.example is not None
        and (not spec.devices.kinds or "cpu" in spec.devices.kinds)
        and (not builtin or spec.plugin in builtin_plugins())
    )


def _module(name: str) -> str:
    """The module to import for framework ``name``: its spec's in the default registry for a
    framework a plugin adds."""
    if name in _MODULES:
        return _MODULES[name]
    return str(framework_spec(name).import_name)


def required() -> set[str]:
    """Frameworks the current nox session names: their tests must run, never skip."""
    value = os.environ.get("INTEROP_REQUIRE", "")
    names = {n.strip() for n in value.split(",") if n.strip()}
    return set(FRAMEWORKS) | set(LOADERS) | set(TABLES) | set(FILES) if "all" in names else names


def need(name: str) -> Any:
    """Import and return framework ``name``; skip (or fail, if required) when it is missing.

    Usable at module level too: a test module that needs numpy starts with
    ``np = need("numpy")``.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return importlib.import_module(_module(name))
    except ImportError as exc:
        if name in required():
            pytest.fail(f"{name} is required by this test session but cannot be imported: {exc}")
        pytest.skip(f"{name} is not installed", allow_module_level=True)


def exchange_names() -> tuple[str, str]:
    """The converters a plain numpy -> torch and torch -> numpy conversion takes here: torch's
    DLPack C exchange table where the plugins' C extension is built (and not switched off by
    INTEROP_CORE_PURE_PYTHON), else ``torch.from_numpy`` and ``Tensor.numpy()``."""
    from interop_plugins.exchange.dlpack import C_EXCHANGE
    from interop_plugins.native import native

    if native() is not None:
        return C_EXCHANGE, C_EXCHANGE
    return "torch.from_numpy", "Tensor.numpy()"


def gpu_count(name: str) -> int:
    """How many CUDA GPUs framework ``name`` sees, as its plugin's ``devices()`` lists them;
    0 when it is missing."""
    if not available(name):
        return 0
    devices = framework_spec(name).devices.visible
    return sum(d.startswith("cuda:") for d in devices()) if devices else 0


def need_gpus(*names: str, count: int = 1) -> None:
    """Import the frameworks ``names`` and skip unless each sees ``count`` CUDA GPUs; a
    session whose INTEROP_REQUIRE names "gpu" (``nox -s gpu``) fails instead of skipping."""
    for name in names:
        need(name)
        seen = gpu_count(name)
        if seen < count:
            why = f"{name} sees {seen} CUDA GPU(s); this test needs {count}"
            if "gpu" in required() and count == 1:
                pytest.fail(f"the gpu session needs a GPU: {why}")
            pytest.skip(why)


def free_port() -> int:
    """A TCP port on the loopback address that nothing listens on (for process groups)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rank_facts(ranks: list[Any], timeout: float, what: str = "rank") -> list[Any]:
    """Wait for every process of a multi-process test (``subprocess.Popen`` objects with
    text pipes), kill those left waiting for a dead peer, assert each exited 0, and return
    the JSON object each printed on its last line."""
    import json

    outputs = []
    try:
        for p in ranks:
            out, err = p.communicate(timeout=timeout)
            outputs.append((p.returncode, out, err))
    finally:
        for p in ranks:  # a rank left waiting for a dead peer must not outlive the test
            if p.poll() is None:
                p.kill()
                p.wait()
    for rank, (code, out, err) in enumerate(outputs):
        assert code == 0, f"{what} {rank} exited {code}:\n{out[-3000:]}\n{err[-5000:]}"
    return [json.loads(out.strip().splitlines()[-1]) for _, out, _ in outputs]


@contextlib.contextmanager
def one_rank_mesh(device_type: str) -> Iterator[Any]:
    """A one-rank gloo process group on the loopback address, and its 1-D DeviceMesh
    ("d") of ``device_type``; the group is destroyed on exit."""
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh

    address = f"tcp://127.0.0.1:{free_port()}"
    dist.init_process_group("gloo", init_method=address, rank=0, world_size=1)
    try:
        yield init_device_mesh(device_type, (1,), mesh_dim_names=("d",))
    finally:
        dist.destroy_process_group()


def available(name: str) -> bool:
    """Whether framework ``name`` can be imported (without failing the test)."""
    try:
        need(name)
    except pytest.skip.Exception:
        return False
    return True


@pytest.fixture
def np() -> Any:
    return need("numpy")


@pytest.fixture
def torch() -> Any:
    return need("torch")


@pytest.fixture
def jax() -> Any:
    return need("jax")


@pytest.fixture
def tf() -> Any:
    return need("tensorflow")
