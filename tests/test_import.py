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

from interop_core import Registry

#: The built-in frameworks' modules and their native halves, named here too: a plugin
#: dropped at run time must not hide its framework from these checks.
BUILTIN_MODULES = (
    "numpy", "torch", "jax", "jaxlib", "tensorflow", "cupy", "nvidia.dali", "ml_dtypes",
)  # fmt: skip


def framework_modules() -> tuple[str, ...]:
    """The built-in modules, and the module of every framework the default registry
    declares (a plugin's included), less those a plugin defines itself (its arrays come
    with it, as the example plugin's pyarray does). A registry of its own with every
    plugin loaded: the default one loads a built-in once its framework is imported."""
    reg = Registry()
    found = set(BUILTIN_MODULES)
    for spec in reg.state.frameworks.values():
        module = spec.import_name
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
        lazy = sorted(reg.state.frameworks)  # none imported: their plugins wait
        reg.load_all()
        print(json.dumps({"import": after_import, "registry": frameworks(),
                          "lazy": lazy, "known": sorted(reg.state.frameworks)}))
        """,
        autoload=autoload,
    )
    assert result["import"] == []
    assert result["registry"] == []
    assert not {"numpy", "torch", "jax", "tensorflow"} & set(result["lazy"])
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
        loaded, missing = [], []
        for edge in st.graph.edges:
            try:
                edge.load()
            except ImportError:  # the C exchange edges, where the extension is off
                missing.append(edge.name)
            else:
                loaded.append(edge.name)
        after = (list(warnings.filters), get.restype, get.argtypes)
        print(json.dumps({"same": [before == after], "loaded": loaded, "missing": missing}))
    """
    out = run_python(code)
    assert out["same"] == [True]
    assert len(out["loaded"]) > 10
    assert all(name.startswith("torch's C exchange API") for name in out["missing"])


#: What ``import interop_core`` may load: the package and ``to()``'s module, and the
#: standard library pieces those need (issue 18: a light import).
LIGHT_IMPORT = {
    "interop_core", "interop_core.face", "interop_core.face.api", "interop_core.native",
}  # fmt: skip
#: to()'s warm path in C, where the optional extension is built (and not switched off).
LIGHT_OPTIONAL = {"interop_core._warm"}
LIGHT_STDLIB = {"__future__", "contextvars", "_contextvars"}


def test_import_loads_only_the_functions_not_the_engine_pluggy_or_plugins() -> None:
    """The engine, the specs (dataclasses), typing, pluggy and the plugins load when the first
    to() builds the registry, not at import; to() works after a bare import."""
    need("numpy")
    result = run_python(
        """
        before = set(sys.modules)
        import interop_core
        after_import = set(sys.modules) - before
        import numpy as np
        x = np.arange(6, dtype=np.int16)
        y = interop_core.to(x, "numpy")
        loaded = {m.partition(".")[0] for m in set(sys.modules) - before}
        print(json.dumps({"import": sorted(after_import), "frameworks": frameworks(),
                          "to": [y is x, y.dtype.name, y.tolist()],
                          "after_to": sorted(loaded)}))
        """
    )
    new = set(result["import"])
    assert new & LIGHT_IMPORT == LIGHT_IMPORT
    extra = new - LIGHT_IMPORT - LIGHT_STDLIB - LIGHT_OPTIONAL
    assert extra == set(), sorted(extra)
    assert not {"pluggy", "dataclasses", "typing", "interop_plugins"} & new
    assert result["frameworks"] == ["numpy"]  # the test's own numpy, imported after
    assert result["to"] == [True, "int16", [0, 1, 2, 3, 4, 5]]
    assert {"pluggy", "interop_plugins"} <= set(result["after_to"])


def test_every_public_name_loads_on_first_use_as_its_defining_modules_object() -> None:
    """Each name of __all__ resolves through ``interop_core.X``, ``from interop_core import X``
    and ``import *`` to the object its module defines, and dir() lists it before it loads."""
    result = run_python(
        """
        import importlib
        import interop_core
        lazy = dict(interop_core._LAZY)
        unloaded = sorted(n for n in lazy if n in vars(interop_core))
        listed = sorted(set(interop_core.__all__) - set(dir(interop_core)))
        wrong = []
        for name in interop_core.__all__:
            defining = importlib.import_module("interop_core." + lazy[name]) if name in lazy \
                else interop_core.face.api if name != "__version__" else interop_core
            ns = {}
            exec(f"from interop_core import {name}", ns)
            if not (ns[name] is getattr(interop_core, name) is getattr(defining, name)):
                wrong.append(name)
        star = {}
        exec("from interop_core import *", star)
        try:
            interop_core.no_such_name
            missing = "no error"
        except AttributeError as e:
            missing = str(e)
        print(json.dumps({"unloaded": unloaded, "listed": listed, "wrong": wrong,
                          "lazy": lazy, "star": sorted(set(interop_core.__all__) - set(star)),
                          "missing": missing}))
        """,
        autoload=False,
    )
    assert result["unloaded"] == []  # none was loaded by the import itself
    assert result["listed"] == []
    assert result["wrong"] == []
    assert result["star"] == []
    assert result["missing"] == "module 'interop_core' has no attribute 'no_such_name'"
    # the names type checkers see (the `if TYPE_CHECKING:` imports) are the lazy ones, from
    # the same modules, and together with the eager imports they are exactly __all__
    import ast
    from pathlib import Path

    import interop_core

    tree = ast.parse(Path(interop_core.__file__).read_text(encoding="utf-8"))
    checked: dict[str, str] = {}
    eager: set[str] = set()
    typed: set[str] = set()  # eager names whose overloads type checkers read in face/typed.py
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.level == 1
                names = [a.name for a in imp.names]
                if imp.module == "face.typed":
                    typed.update(names)
                else:
                    checked.update(dict.fromkeys(names, imp.module))
            for imp in node.orelse:  # what runs instead of the overloads: face/api.py's own
                assert isinstance(imp, ast.ImportFrom) and imp.level == 1
                assert imp.module == "face.api", imp.module
                eager.update(a.name for a in imp.names)
        elif isinstance(node, ast.ImportFrom):
            eager.update(a.name for a in node.names)
    assert checked == result["lazy"]
    assert typed == {"to", "explain"} and typed <= eager
    assert eager | set(checked) | {"__version__"} == set(interop_core.__all__)
    assert not eager & set(checked)


#: (source, target) pairs whose calls must load only the frameworks they name (rule 10).
_NAMED_PAIRS = [("numpy", "torch"), ("torch", "numpy"), ("numpy", "numpy"), ("torch", "torch")]


@pytest.mark.parametrize("x64_env", ["", "1"], ids=["x64-unset", "JAX_ENABLE_X64=1"])
@pytest.mark.parametrize(
    ("source", "target"), _NAMED_PAIRS, ids=[f"{s}-{t}" for s, t in _NAMED_PAIRS]
)
def test_a_call_loads_only_the_frameworks_it_names(source: str, target: str, x64_env: str) -> None:
    """Planning reads the switches of frameworks the call does not name (JAX's x64, which a
    route through JAX would need for 64-bit dtypes) without importing them: to() and
    explain() of every dtype, copied or not, in a container too, load only the two named."""
    need("numpy")
    need("torch")
    env = {"JAX_ENABLE_X64": x64_env} if x64_env else {}
    result = run_python(
        f"""
        import os
        os.environ.update({env!r})
        import numpy as np
        import torch
        from interop_core import explain, to
        loaded_before = frameworks()
        for dtype in ("float64", "int64", "complex128", "float32", "int32", "bool", "uint8"):
            x = np.arange(6).astype(dtype).reshape(2, 3)
            x = torch.from_numpy(x) if {source!r} == "torch" else x
            for copy in (None, True):
                y = to(x, {target!r}, copy=copy)
                assert type(y).__module__.partition(".")[0] == {target!r}, type(y)
                assert str(y.dtype).rpartition(".")[2] == dtype, (y.dtype, dtype)
                explain(x, {target!r}, copy=copy)
            to({{"a": x, "b": [x]}}, {target!r})
        print(json.dumps({{"before": loaded_before, "loaded": frameworks()}}))
        """
    )
    assert result["before"] == ["numpy", "torch"]
    assert result["loaded"] == ["numpy", "torch"]
