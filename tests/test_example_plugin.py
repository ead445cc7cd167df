"""The example third-party plugin (examples/interop-example-plugin), installed as users would.

The conformance kit (``interop_core.testing.check_framework``) checks the pyarray framework
against every installed framework, as a plugin author's own tests would; the tests below it
check what is particular to this plugin: its entry point, its routes, the aliasing of its
buffer, and the doctor's report.

The nox session "plugins" installs it (``pip install ./examples/interop-example-plugin``) and
names it in INTEROP_REQUIRE, so there these tests must run; elsewhere they skip.
"""

from __future__ import annotations

import gc
import itertools
import os
import re
import subprocess
import sys
from typing import Any

import pytest
from conftest import required

from interop_core import NoRouteError, Registry, default_registry, explain, to
from interop_core.testing import check_framework

try:
    import interop_example_plugin as example
except ImportError:
    if "example" in required():  # INTEROP_REQUIRE names it: fail, don't skip
        raise
    pytest.skip(
        "interop-example-plugin is not installed (the nox session 'plugins' installs it)",
        allow_module_level=True,
    )
PyArray: Any = example.PyArray

DATA = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]


def _plugin_name() -> str:
    """The name the entry point gave the plugin in the default registry."""
    names = [n for n, p in default_registry().pm.list_name_plugin() if p is example]
    assert names, "interop_example_plugin was not loaded from its entry point"
    return names[0]


def test_pyarray_passes_the_conformance_kit(np: Any) -> None:
    """The kit, as the plugin's author runs it: the default registry, where the plugin was
    loaded from its entry point, against every installed framework."""
    done = check_framework("pyarray")
    assert "float32 -> numpy: zero-copy; back: copy" in done, done
    assert "float64 -> numpy: zero-copy; back: copy" in done, done
    assert any(line.startswith("dtypes it does not hold raise NoRouteError") for line in done)


def test_pyarray_passes_the_kit_in_a_registry_of_its_own(np: Any) -> None:
    """Registered by hand beside the built-ins (how a plugin's tests run when entry points
    are off), and checked against numpy only."""
    reg = Registry(entry_points=False)
    reg.register(example, name="example")
    done = check_framework("pylist", registry=reg, others=["numpy"], dtypes=["float32"])
    assert "float32 -> numpy: zero-copy; back: copy" in done, done
    assert not any("float64" in line for line in done), done


def test_loaded_from_its_entry_point_with_its_distribution() -> None:
    reg = default_registry()
    name = _plugin_name()
    assert name == "example"
    assert reg.pm.distribution_of(name) == "interop-example-plugin"
    spec = reg.state.frameworks["pyarray"]
    assert spec.plugin == "example"
    assert reg.resolve("PyList") is spec  # the alias, any case
    assert reg.state.detect(PyArray(DATA)) is spec


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_to_numpy_is_zero_copy(np: Any, dtype: str) -> None:
    a = PyArray(DATA, dtype)
    n = to(a, "numpy")
    assert isinstance(n, np.ndarray)
    assert n.dtype == np.dtype(dtype)
    assert n.shape == (2, 3)
    assert n.tolist() == DATA
    assert n.ctypes.data == a.data_ptr
    assert explain(a, "numpy").zero_copy
    a.buffer[0] = 42.0  # the numpy array is a view of the PyArray's buffer
    assert n[0, 0] == 42.0
    with pytest.raises(BufferError):
        a.buffer.append(1.0)  # the view pins the buffer: it cannot be moved under numpy
    del a
    gc.collect()
    assert n.tolist() == [[42.0, 2.0, 3.0], [4.0, 5.0, 6.0]]  # the view keeps the buffer alive


def test_to_torch_goes_through_numpy(torch: Any) -> None:
    a = PyArray(DATA, "float32")
    t = to(a, "torch")
    assert isinstance(t, torch.Tensor)
    assert t.dtype == torch.float32
    assert t.tolist() == DATA
    route = explain(a, "torch")
    assert [(s.source, s.target) for s in route.steps] == [
        ("pyarray@cpu", "numpy@cpu"),
        ("numpy@cpu", "torch@cpu"),
    ]
    first = route.steps[0]
    assert (first.converter, first.plugin, first.zero_copy) == ("np.frombuffer", "example", True)
    assert route.zero_copy
    assert t.data_ptr() == a.data_ptr


def test_back_to_pyarray_copies(torch: Any) -> None:
    t = torch.tensor(DATA, dtype=torch.float64)
    a = to(t, "pylist")
    assert isinstance(a, PyArray)
    assert (a.dtype, a.shape, a.tolist()) == ("float64", (2, 3), DATA)
    assert a.data_ptr != t.data_ptr()
    route = explain(t, "pyarray")
    assert route.copies == 1
    assert route.steps[-1].plugin == "example"


def test_dtypes_it_cannot_hold_raise_naming_the_dtype(np: Any) -> None:
    with pytest.raises(NoRouteError, match="pyarray has no dtype int64"):
        to(np.arange(3, dtype=np.int64), "pyarray")


def test_doctor_lists_the_plugin_and_measures_pyarray() -> None:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    env.pop("INTEROP_CORE_DISABLE_PLUGIN_AUTOLOAD", None)
    done = subprocess.run(
        [sys.executable, "-m", "interop_core", "doctor"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert "  example  (interop-example-plugin)" in lines, done.stdout
    framework = [ln.split() for ln in lines if ln.startswith("  pyarray ") and "[example]" in ln]
    assert framework, done.stdout
    assert framework[0][1:4] == ["0.1.0", "devices:", "cpu"]
    # The route matrix: a header of framework names, then one row of cells per source.
    header = next(i for i, ln in enumerate(lines) if ln.startswith("Route matrix"))
    # Cells and row labels may hold single spaces ("copy (alignment)"): columns are two apart.
    names = lines[header + 1].split()
    cells = [re.split(r"\s{2,}", ln.strip()) for ln in lines[header + 2 :]]
    rows = {c[0]: dict(zip(names, c[1:], strict=True))
            for c in itertools.takewhile(lambda c: len(c) == len(names) + 1, cells)}  # fmt: skip
    assert "pyarray" in names
    assert rows["pyarray"]["numpy"] == "zero-copy"
    assert rows["pyarray"]["pyarray"] == "zero-copy"
    assert rows["numpy"]["pyarray"] == "copy"
    if "torch" in names:
        assert rows["pyarray"]["torch"] == "zero-copy"
        assert rows["torch"]["pyarray"] == "copy"
    assert not any(c.endswith("*") for r in rows.values() for c in r.values()), done.stdout
