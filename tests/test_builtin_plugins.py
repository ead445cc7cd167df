"""The built-in plugins: found in their package without a list in the core, registered in an
order nothing depends on, and the function kind declared once, by its own plugin.

Imports no framework: the registries here are planned, not run.
"""

from __future__ import annotations

import ast
import re
import sys
import textwrap
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from interop_core import Registry
from interop_core.declare.errors import PluginWarning
from interop_core.declare.specs import ArrayTraits, Kind, KindSpec, PlanKey
from interop_core.engine.manager import (
    DISABLE_AUTOLOAD_ENV,
    InteropPluginManager,
    builtin_plugins,
)
from interop_core.engine.planner import Goal
from interop_core.testing import isolated_registry

ROOT = Path(__file__).resolve().parent.parent
PLUGINS = ROOT / "plugins"


def _hookimpl_functions(path: Path) -> list[str]:
    """The ``interop_*`` functions of ``path`` decorated with ``hookimpl`` (bare or called)."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.FunctionDef) and node.name.startswith("interop_"):
            for deco in node.decorator_list:
                target = deco.func if isinstance(deco, ast.Call) else deco
                if isinstance(target, ast.Name) and target.id == "hookimpl":
                    names.append(node.name)
    return names


def test_the_builtins_are_every_module_of_the_package_with_a_hookimpl() -> None:
    """Read from the files, not imported: a new built-in file with a hook is registered,
    helpers are not, and the order is the sorted module names."""
    expected = []
    for path in sorted(PLUGINS.rglob("*.py")):
        parts = path.relative_to(PLUGINS).with_suffix("").parts
        if any(p.startswith("_") for p in parts) or not _hookimpl_functions(path):
            continue
        expected.append(".".join(("interop_plugins", *parts)))
    found = builtin_plugins()
    assert list(found) == sorted(expected)
    assert len(found) > 20
    assert "interop_plugins.kinds.callables" in found
    assert "interop_plugins.exchange.ragged_convert" not in found  # a helper: no hooks


def test_the_default_load_registers_the_discovered_modules_in_order() -> None:
    pm = InteropPluginManager()
    pm.load_builtins()
    names = [name for name, _ in pm.list_name_plugin()]
    assert names == list(builtin_plugins())
    assert {pm.distribution_of(n) for n in names} == {"interop-core"}


def test_the_autoload_switch_leaves_the_builtins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DISABLE_AUTOLOAD_ENV, "1")
    reg = Registry(builtins=True, entry_points=True)
    assert [n for n, _ in reg.pm.list_name_plugin()] == list(builtin_plugins())
    assert "numpy" in reg.state.frameworks


@pytest.fixture
def toy_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A package ``toy_builtins`` with a plugin, a helper that must not be imported, a module
    that says ``hookimpl`` without implementing a hook, a private module and a subpackage."""
    root = tmp_path / "toy_builtins"
    (root / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "plugin.py": """
            from interop_core.plugin import hookimpl

            @hookimpl
            def interop_frameworks():
                return []
            """,
        "helper.py": "raise RuntimeError('a helper is not imported to look for hooks')\n",
        "mentions.py": "# the word hookimpl in a comment, and no hook\nVALUE = 1\n",
        "_private.py": "raise RuntimeError('private modules are not scanned')\n",
        "sub/__init__.py": "",
        "sub/nested.py": """
            from interop_core.plugin import hookimpl

            @hookimpl(trylast=True)
            def interop_converters():
                return []
            """,
    }
    for name, text in files.items():
        (root / name).write_text(textwrap.dedent(text))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "toy_builtins"
    for name in [m for m in sys.modules if m.partition(".")[0] == "toy_builtins"]:
        del sys.modules[name]


def test_discovery_imports_only_modules_that_may_have_hooks(toy_package: str) -> None:
    found = builtin_plugins(toy_package)
    assert found == ("toy_builtins.plugin", "toy_builtins.sub.nested")
    assert "toy_builtins.helper" not in sys.modules
    assert "toy_builtins._private" not in sys.modules
    assert "toy_builtins.mentions" in sys.modules  # imported to look, not registered


def _routes(reg: Registry) -> dict[tuple[str, str, str, bool | None], list[str] | None]:
    """The planned route (converter names) between every pair of frameworks, for a few
    array traits and copy requests."""
    st = reg.state
    routes = {}
    traits = {
        "aligned": ArrayTraits("float32", "C", False, True),
        "unaligned": ArrayTraits("int64", "C", False, False),
        "readonly F": ArrayTraits("float32", "F", True, True),
    }
    for src in st.frameworks:
        for dst in st.frameworks:
            for label, t in traits.items():
                for copy in (None, True, False):
                    found = st.graph.search(PlanKey("array", src, "cpu", t, copy=copy),
                                            Goal(dst, "cpu"))  # fmt: skip
                    path = [e.name for _, e, _ in found.path] if found.found else None
                    routes[src, dst, label, copy] = path
    return routes


def test_registration_order_changes_no_route() -> None:
    """pluggy calls later plugins first, so the order reaches the hooks' answers; the routes
    (ties included) do not depend on it."""
    forward = InteropPluginManager()
    forward.load_builtins()
    backward = InteropPluginManager()
    backward.load_builtins(tuple(reversed(builtin_plugins())))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PluginWarning)  # frameworks not installed here
        one, other = Registry(forward), Registry(backward)
    assert set(one.state.frameworks) == set(other.state.frameworks)
    assert _routes(one) == _routes(other)


# -- the function kind --------------------------------------------------------------------


def test_the_function_kind_is_declared_by_its_own_plugin_only() -> None:
    reg = Registry(builtins=True, entry_points=False)
    declaring = [
        name
        for name, plugin in reg.pm.list_name_plugin()
        if hasattr(plugin, "interop_kinds")
        and any(isinstance(k, Kind) and k.name == "function" for k in plugin.interop_kinds())
    ]
    assert declaring == ["interop_plugins.kinds.callables"]
    assert reg.state.graph.kinds["function"].plugin == "interop_plugins.kinds.callables"
    # The framework plugins still find their functions, through their KindSpecs.
    finders = {k.plugin for k in reg.state.kinds if k.kind == "function"}
    assert {
        "interop_plugins.frameworks.jax",
        "interop_plugins.frameworks.tensorflow",
        "interop_plugins.frameworks.torch",
        "interop_plugins.kinds.callables",
    } <= finders


def test_without_the_callables_plugin_function_specs_are_ignored_with_a_warning() -> None:
    import interop_plugins.frameworks.jax as jax_plugin
    import interop_plugins.frameworks.numpy as numpy_plugin
    import interop_plugins.kinds.callables as callables

    with pytest.warns(PluginWarning) as record, isolated_registry(numpy_plugin, jax_plugin) as reg:
        assert "function" not in reg.state.graph.kinds
        assert not [k for k in reg.state.kinds if k.kind == "function"]
        # Registered later, the kind is declared and the jax functions are found again.
        reg.register(callables)
        assert "function" in reg.state.graph.kinds
        jax_specs = [k for k in reg.state.kinds if k.plugin == jax_plugin.__name__]
        assert jax_specs and all(isinstance(k, KindSpec) for k in jax_specs)
    messages = [str(w.message) for w in record]
    assert (
        "Kind 'function' of plugin 'interop_plugins.frameworks.jax' ignored: "
        "no plugin declares kind 'function'."
    ) in messages


# -- interop_core.plugin: what plugins use ---------------------------------------------------


def _imported_from_the_kit(source: str) -> set[str]:
    """The names ``source`` imports from interop_core.plugin."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a docs block that is not a whole module
        return set()
    return {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "interop_core.plugin"
        for alias in node.names
    }


def test_the_plugin_module_exports_what_plugins_use() -> None:
    """Each name is imported by a built-in plugin or shown by the docs' examples, or belongs
    to what plugins return or raise: every error, every refusal category, the records the
    protocol readers return. Engine internals no plugin imports stay in their modules."""
    import interop_core.plugin
    from interop_core.declare import errors

    used: set[str] = set()
    for path in PLUGINS.rglob("*.py"):
        used |= _imported_from_the_kit(path.read_text())
    for doc in (ROOT / "docs" / "plugins.md", ROOT / "README.md"):
        for block in re.findall(r"```python\n(.*?)```", doc.read_text(), re.S):
            used |= _imported_from_the_kit(block)
    classes = {n for n, v in vars(errors).items() if isinstance(v, type)}
    raised = {n for n in classes if issubclass(getattr(errors, n), (Exception, Warning))}
    categories = {n for n, v in vars(errors).items() if n.isupper() and isinstance(v, str)}
    records = {"BufferInfo"}  # read_buffer()'s answer, beside DLPackInfo and InterfaceInfo
    unused = set(interop_core.plugin.__all__) - used - raised - categories - records
    assert unused == set(), f"interop_core.plugin exports names no plugin uses: {sorted(unused)}"


def test_every_plugin_subpackage_is_installed() -> None:
    """Discovery finds what is installed: a subpackage of plugins/ missing from
    pyproject.toml's package list would leave its plugins out of a wheel without a word."""
    import tomllib

    listed = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    packages = {
        ".".join(("interop_plugins", *init.parent.relative_to(PLUGINS).parts))
        for init in PLUGINS.rglob("__init__.py")
        if "__pycache__" not in init.parts
    }
    assert packages - listed == set()


def _imported_plugin_modules(path: Path) -> set[str]:
    """The interop_plugins modules ``path`` imports anywhere (module level or inside a
    function), as paths under plugins/ without ``.py`` ("exchange/columns")."""
    here = path.relative_to(PLUGINS).parent.parts
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:  # relative: from the module's package, up level - 1
            base = list(here[: len(here) - (node.level - 1)])
        elif (node.module or "").startswith("interop_plugins"):
            base = []
            node = ast.ImportFrom("".join(node.module.split(".", 1)[1:]), node.names, 0)
        else:
            continue
        parts = base + ([*node.module.split(".")] if node.module else [])
        for alias in node.names:  # "from . import sparse_forms" names a module
            candidate = "/".join([*parts, alias.name])
            found.add(candidate if (PLUGINS / f"{candidate}.py").exists() else "/".join(parts))
    return found


def test_framework_plugins_import_only_libraries_of_exchange() -> None:
    # Forms (sparse, ragged, masked, ...) are plugins of their own: a framework plugin
    # describes dense arrays and imports no form. Three libraries are shared one way: the
    # column edges of the table sources, the edges of a tensor file's tensors, and the
    # check of a scipy matrix's structure; and the plugins' optional C extension (native).
    allowed = {"exchange/columns", "exchange/tensor_files", "exchange/sparse_convert", "native"}
    graph = {
        str(p.relative_to(PLUGINS).with_suffix("")): _imported_plugin_modules(p)
        for p in PLUGINS.rglob("*.py")
    }
    for module, imports in graph.items():
        if module.startswith("frameworks/"):
            outside = {m for m in imports if not m.startswith("frameworks")} - allowed
            assert not outside, f"{module} imports {sorted(outside)}"

    def reach(module: str) -> set[str]:
        seen, todo = set(), [module]
        while todo:
            m = todo.pop()
            if m not in seen:
                seen.add(m)
                todo += graph.get(m, ())
        return seen

    # No cycle between the folders: nothing a framework plugin reaches outside its folder
    # reaches it back.
    for module in graph:
        if module.startswith("frameworks/"):
            for other in reach(module):
                if not other.startswith("frameworks"):
                    assert module not in reach(other), f"{module} <-> {other}"
