"""Test matrix: `nox` runs the default sessions; `nox -s bench` runs the benchmark.

A session that names a framework sets INTEROP_REQUIRE so that tests needing it fail
instead of skipping when it is missing (einops' backend matrix is the model).
torch is pinned to 2.13.0: that spec takes the local CPU wheel; any other pulls CUDA.
"""

from __future__ import annotations

import nox

TORCH = "torch==2.13.0"
nox.options.sessions = [
    "lint", "typecheck", "core", "minimal", "torch", "jax", "tensorflow", "dali", "sharded",
    "tests", "typeguard", "plugins", "torchax", "docs",
]  # fmt: skip
#: torchax 0.0.13 fails on import with torch 2.13 (google/torchax#101); the nightlies from
#: 0.0.14.dev20260807 work. Pinned to the nightly tested here, without dependencies: it must
#: never move torch or jax.
TORCHAX = "torchax==0.0.14.dev20261026"
#: tf2jax asks for the full tensorflow package; beside tensorflow-cpu it goes in without its
#: dependencies (dm-tree comes with .[all-cpu]).
TF2JAX = "tf2jax==0.3.8"
nox.options.error_on_missing_interpreters = True


def install(session: nox.Session, *extras: str) -> None:
    """Install the project with ``extras`` (+ test tools), pinning torch when it is wanted."""
    pins = [TORCH] if any(e in ("torch", "all-cpu", "all") for e in extras) else []
    session.install(*pins, f".[{','.join((*extras, 'test'))}]")


def pytest(session: nox.Session, require: str, *args: str, **env: str) -> None:
    """Run pytest requiring the frameworks in ``require`` (comma-separated)."""
    session.run("pytest", *args, *session.posargs, env={"INTEROP_REQUIRE": require, **env})


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check and ruff format --check."""
    session.install("ruff>=0.5")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict over the core and the built-in plugins."""
    session.install("mypy>=1.8", ".")
    session.run("mypy")


@nox.session
def core(session: nox.Session) -> None:
    """The core alone (pluggy only, no numpy): plugin, import and error tests run."""
    install(session)
    session.run(
        "python", "-c",
        "import importlib.util as u, sys; "
        "found = [m for m in ('numpy', 'torch', 'jax', 'tensorflow') if u.find_spec(m)]; "
        "sys.exit(f'frameworks installed in the core session: {found}' if found else 0)",
    )  # fmt: skip
    pytest(session, "")


@nox.session
def minimal(session: nox.Session) -> None:
    """Core + numpy only: proves torch, JAX and TensorFlow are optional."""
    install(session, "numpy")
    pytest(session, "numpy")


#: The pure-Python paths (no C extension: the warm path, keys and exchanges in Python, as on
#: a machine without a compiler) run in these sessions; the others run the C ones.
PURE_PYTHON = {"INTEROP_CORE_PURE_PYTHON": "1"}


@nox.session(name="torch")
def torch_session(session: nox.Session) -> None:
    """numpy + torch, on the pure-Python paths (the C extensions built but switched off)."""
    install(session, "numpy", "torch")
    pytest(session, "numpy,torch", **PURE_PYTHON)


@nox.session(name="jax")
def jax_session(session: nox.Session) -> None:
    """numpy + JAX."""
    install(session, "numpy", "jax")
    pytest(session, "numpy,jax")


@nox.session(name="tensorflow")
def tensorflow_session(session: nox.Session) -> None:
    """numpy + TensorFlow (CPU build)."""
    install(session, "numpy", "tensorflow-cpu")
    pytest(session, "numpy,tensorflow")


@nox.session(name="dali")
def dali_session(session: nox.Session) -> None:
    """numpy + NVIDIA DALI (CPU pipelines): pipelines to numpy iterators, and the generic
    iterators, without torch, JAX or TensorFlow."""
    install(session, "numpy", "dali")
    pytest(
        session, "numpy,dali", "tests/test_pipelines.py", "tests/test_iterators.py",
        "tests/test_dali_hardening.py", "tests/upstream/test_dali_iterators.py",
        "tests/test_dali_options.py",
    )  # fmt: skip


@nox.session
def sharded(session: nox.Session) -> None:
    """numpy + torch + JAX with four jax host devices: sharded jax.Arrays and DTensors in one
    process, then two processes (jax.distributed + torch.distributed over gloo); global
    batches from any iterator (sharding=)."""
    install(session, "numpy", "torch", "jax")
    pytest(
        session, "numpy,torch,jax", "tests/test_sharded.py", "tests/test_distributed.py",
        "tests/test_global_batches.py", XLA_FLAGS="--xla_force_host_platform_device_count=4",
    )  # fmt: skip


@nox.session
def tests(session: nox.Session) -> None:
    """The full stack: numpy, torch, JAX, TensorFlow, DALI and CuPy together (CuPy imports
    without a GPU but cannot allocate: its GPU tests skip, its no-device errors run); the
    typed results checked with mypy and pyright against their golden files."""
    install(session, "all-cpu", "cupy-cuda12x", "typing")
    session.install("--no-deps", TF2JAX)
    pytest(session, "all,typing")


@nox.session
def typeguard(session: nox.Session) -> None:
    """The suite with typeguard checking every annotated call inside interop_core (on the
    pure-Python paths, whose every call typeguard sees)."""
    install(session, "numpy", "torch", "typeguard")
    pytest(
        session, "numpy,torch", "--typeguard-packages=interop_core", "-m", "not illtyped",
        # NamedTuple field annotations are strings typeguard cannot always resolve.
        "-W", "ignore::typeguard.TypeHintWarning", **PURE_PYTHON,
    )  # fmt: skip


@nox.session
def plugins(session: nox.Session) -> None:
    """The example third-party plugin, installed as its author ships it: doctor and a route."""
    install(session, "numpy", "torch")
    session.install("./examples/interop-example-plugin")
    pytest(session, "numpy,torch,example", "tests/test_example_plugin.py")
    session.run("python", "-m", "interop_core", "doctor")


@nox.session
def torchax(session: nox.Session) -> None:
    """The opt-in traced torch->jax function edge, in a session of its own: importing torchax
    changes torch process-wide (torch.compile stops working), so no other session has it."""
    install(session, "numpy", "torch", "jax")
    session.install("--no-deps", TORCHAX)
    pytest(session, "numpy,torch,jax,torchax", "tests/test_functions_torchax.py")


@nox.session
def docs(session: nox.Session) -> None:
    """The API reference (docs/api), built from the docstrings with warnings as errors and
    no framework installed, then tests/test_api_docs.py (every public name is in it).
    ``nox -s docs -- DIR`` keeps the HTML in DIR (default: the session's temp folder)."""
    session.install(".[docs,test]")
    out = session.posargs[0] if session.posargs else f"{session.create_tmp()}/api-html"
    session.run("sphinx-build", "-W", "--keep-going", "-b", "html", "docs/api", out)
    session.run("pytest", "tests/test_api_docs.py", env={"INTEROP_REQUIRE": "sphinx"})


@nox.session(default=False, venv_backend="none")
def gpu(session: nox.Session) -> None:
    """On a CUDA machine, in the environment at hand (GPU images have no network: install
    the project there with `pip install --no-index --no-deps -e .`): the GPU tests, which
    fail instead of skipping when torch, JAX or CuPy sees no GPU, then the GPU benchmark,
    which writes its section of docs/benchmarks.md."""
    session.run(
        "python", "-m", "pytest", "-m", "gpu", "tests", *session.posargs,
        env={"INTEROP_REQUIRE": "numpy,torch,jax,cupy,gpu"},
    )  # fmt: skip
    session.run("python", "benchmarks/gpu.py", "--write", "docs/benchmarks.md")


@nox.session(default=False)
def bench(session: nox.Session) -> None:
    """The benchmark: writes docs/benchmarks.md (pass --quick for a short run)."""
    install(session, "all-cpu")
    # The function rows compare with these; without dependencies, so they never move torch or
    # jax (torch-jax-interop imports chex and toolz without declaring them).
    session.install("--no-deps", "torch-jax-interop==0.0.8", "chex", "toolz")
    session.install("--no-deps", TORCHAX, TF2JAX)
    session.run("python", "benchmarks/bench.py", "--write", "docs/benchmarks.md", *session.posargs)
