"""The plugin author's kit: ``interop_core.plugin`` as the one import point, and hooks
checked against the hookspecs when a plugin is registered."""

from __future__ import annotations

import ast
import importlib
import sys
import types
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_import import FRAMEWORKS, run_python

import interop_core
import interop_core.plugin
from interop_core.declare import errors
from interop_core.declare.errors import PluginError, PluginWarning
from interop_core.engine.manager import DISABLE_AUTOLOAD_ENV, InteropPluginManager
from interop_core.plugin import FrameworkSpec, hookimpl
from interop_core.testing import isolated_registry

ROOT = Path(__file__).resolve().parent.parent
#: Every module a plugin author writes: the built-ins and the example plugin.
PLUGIN_SOURCES = sorted(
    [*(ROOT / "plugins").rglob("*.py"), *(ROOT / "examples/interop-example-plugin").rglob("*.py")]
)

# -- hooks are checked against the hookspecs ------------------------------------------------

MISSPELT_PLUGIN = '''
"""A third-party plugin whose converters hook lost its "s"."""
from interop_core.plugin import hookimpl


@hookimpl
def interop_converter():
    raise AssertionError("a hook no hookspec has is never called")
'''


def misspelt_module(name: str) -> types.ModuleType:
    """A plugin module with one correct hook and one no hookspec declares."""
    mod = types.ModuleType(name)

    @hookimpl
    def interop_frameworks() -> list[FrameworkSpec]:
        return []

    @hookimpl
    def interop_kind() -> list[Any]:  # interop_kinds, misspelt
        return []

    mod.interop_frameworks = interop_frameworks  # type: ignore[attr-defined]
    mod.interop_kind = interop_kind  # type: ignore[attr-defined]
    return mod


class Correct:
    """A correct plugin with things that are not hooks: helpers, an unmarked function in the
    ``interop_`` namespace, a module attribute, a hook optional by choice."""

    interop_core = interop_core  # a module imported by the plugin, not a hook

    @hookimpl
    def interop_frameworks(self) -> list[FrameworkSpec]:
        return []

    @hookimpl(optionalhook=True)
    def interop_from_a_later_version(self) -> list[Any]:
        return []

    def interop_helper(self) -> None:
        """Not marked @hookimpl: a plain method, whatever its name."""

    def describe(self) -> None:
        """A helper outside the interop_ namespace."""


@pytest.fixture
def misspelt_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A distribution on sys.path whose entry point is a plugin with a misspelt hook."""
    monkeypatch.delenv(DISABLE_AUTOLOAD_ENV, raising=False)
    info = tmp_path / "interop_test_misspelt-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: interop-test-misspelt\nVersion: 1.0\n"
    )
    (info / "entry_points.txt").write_text("[interop_core]\nmisspelt = interop_test_misspelt\n")
    (tmp_path / "interop_test_misspelt.py").write_text(MISSPELT_PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    sys.modules.pop("interop_test_misspelt", None)
    importlib.invalidate_caches()


def test_entry_point_with_a_misspelt_hook_is_dropped_with_a_warning(misspelt_site: None) -> None:
    pm = InteropPluginManager()
    with pytest.warns(PluginWarning) as record:
        pm.load_entry_points()
    assert pm.get_plugin("misspelt") is None
    assert "interop_converter" not in vars(pm.hook)  # nothing of it is left behind
    assert [(d.name, d.distribution) for d in pm.dropped] == [("misspelt", "interop-test-misspelt")]
    (message,) = [str(w.message) for w in record if "'misspelt'" in str(w.message)]
    assert "unknown hook 'interop_converter'" in message
    assert "did you mean 'interop_converters'?" in message
    assert "interop-test-misspelt" in message  # the distribution to blame


def test_builtin_with_a_misspelt_hook_is_dropped_and_the_others_load(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "interop_test_misspelt_builtin", misspelt_module("x"))
    pm = InteropPluginManager()
    with pytest.warns(PluginWarning, match="'interop_test_misspelt_builtin'") as record:
        pm.load_builtins(("interop_test_misspelt_builtin", "interop_plugins.frameworks.numpy"))
    assert pm.get_plugin("interop_test_misspelt_builtin") is None
    assert pm.get_plugin("interop_plugins.frameworks.numpy") is not None
    (message,) = [str(w.message) for w in record]
    assert "unknown hook 'interop_kind' (did you mean 'interop_kinds'?)" in message


def test_register_refuses_a_misspelt_hook_and_leaves_nothing_registered() -> None:
    with isolated_registry() as reg:
        generation = reg.pm.generation
        with pytest.raises(PluginError) as info:
            interop_core.register(misspelt_module("typo"), name="typo")
        message = str(info.value)
        assert message.startswith("Plugin 'typo' implements unknown hook 'interop_kind'")
        assert "(did you mean 'interop_kinds'?)" in message
        assert reg.pm.get_plugin("typo") is None
        assert "interop_kind" not in vars(reg.pm.hook)
        assert reg.pm.generation == generation
        # A correct plugin still registers, its non-hooks and optional hook unreported.
        with warnings.catch_warnings():
            warnings.simplefilter("error", PluginWarning)
            plugin = Correct()
            assert interop_core.register(plugin, name="correct") == "correct"
        assert reg.pm.get_plugin("correct") is plugin
        assert reg.pm.generation == generation + 1


def test_a_hook_with_no_close_name_is_reported_without_a_guess() -> None:
    class Stranger:
        @hookimpl
        def interop_zzz(self) -> None: ...

    pm = InteropPluginManager()
    with pytest.raises(PluginError, match=r"unknown hook 'interop_zzz'\.\n") as info:
        pm.register(Stranger(), name="stranger")
    assert "did you mean" not in str(info.value)
    # The hooks there are, listed:
    assert (
        "interop_checkpointer, interop_converters, interop_detect, interop_forms, "
        "interop_frameworks" in str(info.value)
    )


# -- interop_core.plugin: the one import point -------------------------------------------


def test_plugin_module_names_resolve_and_cover_every_error() -> None:
    names = interop_core.plugin.__all__
    assert len(names) == len(set(names))
    for name in names:
        assert getattr(interop_core.plugin, name) is not None, name
    raised = {
        n for n, v in vars(errors).items() if isinstance(v, type) and issubclass(v, Exception)
    }
    assert raised - set(names) == set()
    assert {"hookimpl", "Needs", "CallContext", "Reason", "read_capsule"} <= set(names)


def test_moved_errors_live_in_declare_errors_and_stay_at_the_top_level() -> None:
    for name in ("PluginWarning", "DeviceError", "ContainerError", "UnhashableTypeError"):
        cls = getattr(errors, name)
        assert cls.__module__ == "interop_core.declare.errors"
        assert getattr(interop_core.plugin, name) is cls
        assert cls.__doc__
    for name in ("DeviceError", "ContainerError", "UnhashableTypeError"):
        assert getattr(interop_core, name) is getattr(errors, name)
        assert name in interop_core.__all__
    assert issubclass(errors.DeviceError, errors.InteropError)
    assert issubclass(errors.DeviceError, ValueError)
    assert issubclass(errors.ContainerError, TypeError)
    assert issubclass(errors.UnhashableTypeError, TypeError)
    assert issubclass(errors.PluginWarning, UserWarning)


def test_importing_the_plugin_module_imports_no_framework() -> None:
    result = run_python(
        """
        before = set(sys.modules)
        import interop_core.plugin
        new = {m.partition(".")[0] for m in set(sys.modules) - before}
        print(json.dumps({"frameworks": frameworks(),
                          "new": sorted(new - set(sys.stdlib_module_names))}))
        """
    )
    assert result["frameworks"] == [], FRAMEWORKS
    assert set(result["new"]) <= {"interop_core", "pluggy"}, result["new"]


def _plugin_modules(tree: ast.Module) -> set[str]:
    """Local names bound to modules of other plugins (``from . import shards``)."""
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (
            node.level or (node.module or "").startswith("interop_plugins")
        ):
            bound.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.Import):
            bound.update(
                a.asname or a.name for a in node.names if a.name.startswith("interop_plugins")
            )
    return bound


def _import_faults(path: Path, root: Path = ROOT) -> list[str]:
    """What ``path`` imports from the core other than through the kit, and private names
    of other plugins it reaches for."""
    tree = ast.parse(path.read_text(), str(path))
    offered = set(interop_core.plugin.__all__)
    faults = []
    for node in ast.walk(tree):
        where = f"{path.relative_to(root)}:{node.lineno}" if hasattr(node, "lineno") else ""
        if isinstance(node, ast.Import):
            faults += [
                f"{where}: import {a.name}"
                for a in node.names
                if a.name.startswith("interop_core.") and a.name != "interop_core.plugin"
            ]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level == 0 and module.startswith("interop_core"):
                if module not in ("interop_core", "interop_core.plugin"):
                    faults.append(f"{where}: from {module} import ...")
                elif module == "interop_core":
                    # The top level is for to()/explain(); the plugin API comes from the kit.
                    faults += [
                        f"{where}: {a.name} from interop_core, not interop_core.plugin"
                        for a in node.names
                        if a.name in offered
                    ]
            elif node.level or module.startswith("interop_plugins"):
                faults += [
                    f"{where}: private {a.name} from {'.' * node.level}{module}"
                    for a in node.names
                    if a.name.startswith("_")
                ]
    modules = _plugin_modules(tree)
    faults += [
        f"{path.relative_to(root)}:{node.lineno}: {node.value.id}.{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in modules
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
    ]
    return faults


def test_plugins_import_the_core_only_through_interop_core_plugin() -> None:
    assert len(PLUGIN_SOURCES) > 15
    faults = [fault for path in PLUGIN_SOURCES for fault in _import_faults(path)]
    assert faults == []


def test_the_import_check_finds_what_it_forbids(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from interop_core import ConverterSpec, to\n"
        "from interop_core.declare.specs import DTYPES\n"
        "import interop_core.kit.buffers\n"
        "from ..frameworks.numpy import _private\n"
        "from . import shards\n"
        "shards._load()\n"
    )
    faults = _import_faults(bad, tmp_path)
    assert [f.partition(": ")[2] for f in faults] == [
        "ConverterSpec from interop_core, not interop_core.plugin",
        "from interop_core.declare.specs import ...",
        "import interop_core.kit.buffers",
        "private _private from ..frameworks.numpy",
        "shards._load",
    ]
