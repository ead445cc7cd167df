"""Plugin rule 1: importing interop_core (and building its registry) imports no framework.

Each check runs in a fresh interpreter, since this test process has the frameworks loaded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from conftest import need

from interop_core import default_registry

#: The built-in frameworks' modules and their native halves, named here too: a plugin
#: dropped at run time must not hide its framework from these checks.
BUILTIN_MODULES = (
    "numpy", "torch", "jax", "jaxlib", "tensorflow", "cupy", "nvidia.dali", "ml_dtypes",
)  # fmt: skip


def framework_modules() -> tuple[str, ...]:
    """The built-in modules, and the module of every framework the default registry
    declares (a plugin's included), less those a plugin defines itself (its arrays come
    with it, as the example plugin's pyarray does)."""
    reg = default_registry()
    found = set(BUILTIN_MODULES)
    for spec in reg.state.frameworks.values():
        module = spec.module or spec.import_name
        plugin = getattr(reg.pm.get_plugin(spec.plugin), "__name__", "")
        if module and module.partition(".")[0] != plugin.partition(".")[0]:
            found.add(module)
    return tuple(sorted(found))


#: Frameworks (and their native halves) that must never be imported behind the user's back.
FRAMEWORKS = framework_modules()


def run_python(code: str, *, autoload: bool = True) -> dict[str, list[str]]:
    """Run ``code`` in a fresh interpreter; it prints a JSON object as its last line."""
    env = dict(os.environ)
    env.pop("INTEROP_CORE_DISABLE_PLUGIN_AUTOLOAD", None)
    if not autoload:
        env["INTEROP_CORE_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    prelude = textwrap.dedent(
        f"""
        import json, sys
        FRAMEWORKS = {FRAMEWORKS!r}
        def frameworks():
            return sorted(
                f for f in FRAMEWORKS
                if any(m == f or m.startswith(f + ".") for m in list(sys.modules))
            )
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, list[str]] = json.loads(done.stdout.splitlines()[-1])
    return result


@pytest.mark.parametrize("autoload", [True, False], ids=["entry-points", "no-autoload"])
def test_import_and_default_registry_import_no_framework(autoload: bool) -> None:
    result = run_python(
        """
        import interop_core
        after_import = frameworks()
        reg = interop_core.default_registry()
        assert reg.state.frameworks, "the default registry declares no framework"
        print(json.dumps({"import": after_import, "registry": frameworks(),
                          "known": sorted(reg.state.frameworks)}))
        """,
        autoload=autoload,
    )
    assert result["import"] == []
    assert result["registry"] == []
    assert {"numpy", "torch", "jax", "tensorflow"} <= set(result["known"])


def test_import_pulls_in_only_the_standard_library_and_pluggy() -> None:
    result = run_python(
        """
        before = set(sys.modules)
        import interop_core
        interop_core.default_registry()
        new = {m.partition(".")[0] for m in set(sys.modules) - before}
        print(json.dumps({"new": sorted(new - set(sys.stdlib_module_names))}))
        """,
        autoload=False,
    )
    assert set(result["new"]) <= {"interop_core", "interop_plugins", "pluggy"}, result["new"]


def test_numpy_to_numpy_imports_no_other_framework() -> None:
    need("numpy")
    result = run_python(
        """
        import numpy as np
        from interop_core import explain, to
        x = np.arange(6.0).reshape(2, 3)
        y = to(x, "numpy")
        assert y is x
        assert to({"a": x, "b": [x, 1]}, "np")["b"][0] is x
        assert to(x, "numpy") is x  # the warm path too
        assert explain(x, "numpy").zero_copy
        print(json.dumps({"loaded": frameworks()}))
        """
    )
    assert result["loaded"] == ["numpy"]


def test_loading_every_converter_changes_no_process_wide_state() -> None:
    """Converter loaders leave the warnings filters and ctypes' shared prototypes alone."""
    need("numpy")
    code = """
        import ctypes, importlib, warnings
        import interop_core
        for name in ("numpy", "torch", "jax", "tensorflow", "pandas"):
            try:  # the frameworks add filters of their own when imported
                importlib.import_module(name)
            except ImportError:
                pass
        get = ctypes.pythonapi.PyCapsule_GetPointer
        before = (list(warnings.filters), get.restype, get.argtypes)
        st = interop_core.default_registry().state
        loaded = []
        for edge in st.graph.edges:
            edge.load()
            loaded.append(edge.name)
        after = (list(warnings.filters), get.restype, get.argtypes)
        print(json.dumps({"same": [before == after], "loaded": loaded}))
    """
    out = run_python(code)
    assert out["same"] == [True]
    assert len(out["loaded"]) > 10
