"""Plugins: hookimpl modules and classes, run-time (un)registration, conflicts, broken plugins.

Most tests use toy frameworks defined here (a flat ``array.array`` buffer per array, so
zero-copy is checked by real data pointers) in a fresh registry without the built-ins; the
entry-point tests install fake distributions (``*.dist-info`` with ``entry_points.txt``) on
a temporary ``sys.path`` entry.
"""

from __future__ import annotations

import array
import dataclasses
import importlib
import sys
import textwrap
import types
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

import interop_core
from interop_core import (
    ConverterSpec,
    FrameworkSpec,
    NotAnArrayError,
    PluginError,
    Registry,
    TensorInfo,
    UnknownFrameworkError,
    explain,
    hookimpl,
    to,
)
from interop_core import __main__ as cli
from interop_core.declare.errors import PluginWarning
from interop_core.declare.specs import CPU
from interop_core.engine.manager import DISABLE_AUTOLOAD_ENV, InteropPluginManager
from interop_core.face.api import using_registry
from interop_core.face.doctor import doctor_report
from interop_core.testing import isolated_registry, shares_memory

# -- toy frameworks ----------------------------------------------------------------------


TYPECODES = {"float64": "d", "float32": "f"}
DTYPES = {code: dtype for dtype, code in TYPECODES.items()}


def flat(data: Any) -> list[float]:
    """The numbers of a number or nested lists, in order."""
    if isinstance(data, (list, tuple)):
        return [v for item in data for v in flat(item)]
    return [float(data)]


class Toy:
    """A 1-d float64/float32 toy array over an ``array.array``; each subclass is a framework."""

    def __init__(
        self,
        values: Sequence[float] = (),
        dtype: str = "float64",
        *,
        buf: array.array[float] | None = None,
        by: str = "",
    ) -> None:
        self.buf = buf if buf is not None else array.array(TYPECODES[dtype], values)
        #: The converter that made this array ("" for one the test built).
        self.by = by

    def tolist(self) -> list[float]:
        return self.buf.tolist()


class Alpha(Toy):
    """Toy framework "alpha"."""


class Beta(Toy):
    """Toy framework "beta"."""


class Delta(Toy):
    """Toy framework "delta"."""


def toy_framework(name: str, cls: type[Toy], aliases: tuple[str, ...] = ()) -> FrameworkSpec:
    """A FrameworkSpec for a Toy subclass (no ``distribution``: it is optional)."""

    def describe(x: Toy) -> TensorInfo:
        dtype = DTYPES[x.buf.typecode]
        return TensorInfo(name, dtype, CPU, (len(x.buf),), "C", False, True)

    return FrameworkSpec(
        name=name,
        aliases=aliases,
        array_types=(f"{cls.__module__}.{cls.__qualname__}",),
        describe=describe,
        key=lambda x: x.buf.typecode,
        data_ptr=lambda x: x.buf.buffer_info()[0],
        example=lambda data, dtype: cls(flat(data), dtype),
        dtypes=frozenset(TYPECODES),
    )


def share(name: str, source: str, target: str, cls: type[Toy], cost: float = 1.0) -> ConverterSpec:
    """A zero-copy toy converter: the result views the source's buffer."""
    return ConverterSpec(
        name=name, source=source, target=target, zero_copy=True, cost=cost,
        load=lambda: lambda x: cls(buf=x.buf, by=name),
    )  # fmt: skip


def copier(name: str, source: str, target: str, cls: type[Toy], cost: float = 1.0) -> ConverterSpec:
    """A copying toy converter."""
    return ConverterSpec(
        name=name, source=source, target=target, zero_copy=False, cost=cost,
        load=lambda: lambda x: cls(buf=array.array(x.buf.typecode, x.buf), by=name),
    )  # fmt: skip


ALPHA = toy_framework("alpha", Alpha, aliases=("a",))
BETA = toy_framework("beta", Beta)


def module_plugin(
    name: str,
    frameworks: Sequence[FrameworkSpec] = (),
    converters: Sequence[ConverterSpec] = (),
) -> types.ModuleType:
    """A plugin module, as a plugin author would write one, with both hooks."""
    mod = types.ModuleType(name)

    @hookimpl
    def interop_frameworks() -> list[FrameworkSpec]:
        return list(frameworks)

    @hookimpl
    def interop_converters() -> list[ConverterSpec]:
        return list(converters)

    mod.interop_frameworks = interop_frameworks  # type: ignore[attr-defined]
    mod.interop_converters = interop_converters  # type: ignore[attr-defined]
    return mod


class BetaPlugin:
    """A plugin written as a class: register an instance."""

    @hookimpl
    def interop_frameworks(self) -> list[FrameworkSpec]:
        return [BETA]

    @hookimpl
    def interop_converters(self) -> list[ConverterSpec]:
        return [copier("slow copy", "alpha", "beta", Beta, 5.0)]


class StaticPlugin:
    """A plugin written as a class of static hooks: register the class itself."""

    @staticmethod
    @hookimpl
    def interop_converters() -> list[ConverterSpec]:
        return [copier("beta->alpha copy", "beta", "alpha", Alpha)]


@pytest.fixture
def reg() -> Iterator[Registry]:
    """A fresh default registry with alpha (a module plugin) and beta (a class instance)."""
    with isolated_registry() as r:
        r.register(module_plugin("alpha_plugin", [ALPHA]), name="alpha-plugin")
        r.register(BetaPlugin(), name="beta-plugin")
        yield r


def route_of(x: Any, target: str, **kw: Any) -> list[tuple[str, str]]:
    """(converter, plugin) of each step explain() gives."""
    return [(s.converter, s.plugin) for s in explain(x, target, **kw).steps]


# -- plugins as modules and classes -------------------------------------------------------


def test_module_and_class_plugins_are_stamped_and_routed(reg: Registry) -> None:
    reg.register(StaticPlugin, name="static-plugin")
    st = reg.state
    assert st.frameworks["alpha"].plugin == "alpha-plugin"
    assert st.frameworks["beta"].plugin == "beta-plugin"
    assert {(e.name, e.plugin) for e in st.graph.edges} == {
        ("slow copy", "beta-plugin"),
        ("beta->alpha copy", "static-plugin"),
    }
    x = Alpha([1.0, 2.0, 3.0])
    y = to(x, "beta")
    assert isinstance(y, Beta)
    assert (y.tolist(), y.by) == ([1.0, 2.0, 3.0], "slow copy")
    assert not shares_memory(x, y)
    back = to(y, "A")  # an alias, in any case
    assert isinstance(back, Alpha)
    assert (back.tolist(), back.by) == ([1.0, 2.0, 3.0], "beta->alpha copy")
    assert route_of(x, "beta") == [("slow copy", "beta-plugin")]


def test_a_class_registered_instead_of_an_instance_is_refused(reg: Registry) -> None:
    before = dict(reg.state.frameworks)
    with pytest.raises(PluginError, match=r"'oops'.*interop_frameworks\(\) raised TypeError"):
        reg.register(BetaPlugin, name="oops")  # its hooks need ``self``
    assert reg.pm.get_plugin("oops") is None
    assert reg.state.frameworks == before
    assert to(Alpha([1.0]), "beta").tolist() == [1.0]


# -- run-time registration rebuilds the plans ---------------------------------------------


def test_register_bumps_generation_and_replans(reg: Registry) -> None:
    x = Alpha([1.0, 2.0])
    assert to(x, "beta").by == "slow copy"
    assert reg.state.plain, "the first call cached no plan"
    assert to(x, "beta").by == "slow copy"  # now from the warm path
    generation, state = reg.pm.generation, reg.state

    cheap = module_plugin("cheap", converters=[copier("cheap copy", "alpha", "beta", Beta, 1.0)])
    interop_core.register(cheap, name="cheap")
    assert reg.pm.generation > generation
    assert reg.state is not state
    assert reg.state.generation == reg.pm.generation
    assert route_of(x, "beta") == [("cheap copy", "cheap")]
    assert to(x, "beta").by == "cheap copy"

    sharing = module_plugin("sharing", converters=[share("view", "alpha", "beta", Beta, 50.0)])
    interop_core.register(sharing, name="sharing")
    assert route_of(x, "beta") == [("view", "sharing")]  # fewer copies beats a lower cost
    assert explain(x, "beta").zero_copy
    y = to(x, "beta")
    assert y.by == "view"
    assert shares_memory(x, y)

    interop_core.unregister(name="sharing")
    assert route_of(x, "beta") == [("cheap copy", "cheap")]
    assert to(x, "beta").by == "cheap copy"
    interop_core.unregister(cheap)
    assert route_of(x, "beta") == [("slow copy", "beta-plugin")]
    assert to(x, "beta").by == "slow copy"
    assert reg.state.generation == reg.pm.generation


def test_warm_plans_do_not_outlive_their_framework(reg: Registry) -> None:
    x = Alpha([1.0])
    assert to(x, "beta").by == "slow copy"
    assert to(x, "beta").by == "slow copy"
    alpha = reg.pm.get_plugin("alpha-plugin")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PluginWarning)  # "slow copy" now dangles: ignored
        reg.unregister(name="alpha-plugin")
    with pytest.raises(NotAnArrayError):
        to(x, "beta")  # no framework owns an Alpha any more
    reg.register(alpha, name="alpha-plugin")
    assert to(x, "beta").by == "slow copy"
    reg.unregister(name="beta-plugin")
    with pytest.raises(UnknownFrameworkError, match="'beta'"):
        to(x, "beta")


def test_a_framework_declared_later_validates_waiting_converters(reg: Registry) -> None:
    orphan = module_plugin(
        "orphan",
        converters=[
            share("to delta", "alpha", "delta", Delta),
            copier("also alpha->beta", "alpha", "beta", Beta, 9.0),
        ],
    )
    ignored = (
        "Converter 'to delta' of plugin 'orphan' ignored: no plugin declares framework 'delta'"
    )
    with pytest.warns(PluginWarning, match=ignored):
        reg.register(orphan, name="orphan")
    assert reg.pm.get_plugin("orphan") is orphan  # ignored edges do not drop the plugin
    assert {e.name for e in reg.state.graph.edges} == {"slow copy", "also alpha->beta"}
    with pytest.raises(UnknownFrameworkError):
        to(Alpha([1.0]), "delta")

    reg.register(module_plugin("delta", [toy_framework("delta", Delta)]), name="delta-plugin")
    x = Alpha([4.0, 5.0])
    y = to(x, "delta")
    assert isinstance(y, Delta)
    assert shares_memory(x, y)
    assert route_of(x, "delta") == [("to delta", "orphan")]


# -- conflicts --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("declared", "clash"),
    [
        ([toy_framework("alpha", Delta)], "'alpha'"),
        ([toy_framework("delta", Delta, aliases=("A",))], "'A'"),
        ([toy_framework("a", Delta)], "'a'"),
        ([toy_framework("delta", Delta), toy_framework("ALPHA", Delta)], "'ALPHA'"),
    ],
    ids=["same-name", "alias-vs-alias", "name-vs-alias", "second-of-two"],
)
def test_framework_conflict_names_both_plugins(
    reg: Registry, declared: list[FrameworkSpec], clash: str
) -> None:
    before = dict(reg.state.frameworks)
    intruder = module_plugin("intruder", declared)
    with pytest.raises(PluginError) as info:
        reg.register(intruder, name="intruder")
    message = str(info.value)
    assert "'intruder'" in message
    assert "'alpha-plugin'" in message
    assert clash in message
    # The registry is as it was, and works.
    assert reg.pm.get_plugin("intruder") is None
    assert reg.state.frameworks == before
    assert "delta" not in reg.state.names
    assert reg.state.generation == reg.pm.generation
    assert to(Alpha([2.0]), "a").tolist() == [2.0]
    assert to(Alpha([2.0]), "beta").by == "slow copy"


def test_conflict_found_at_build_drops_the_later_plugin() -> None:
    pm = InteropPluginManager()
    pm.register(module_plugin("first", [ALPHA]), name="first")
    pm.register(module_plugin("second", [toy_framework("alpha", Delta)]), name="second")
    with pytest.warns(PluginWarning) as record:
        reg = Registry(pm)
    messages = [str(w.message) for w in record]
    assert any("'second'" in m and "'first'" in m and "'alpha'" in m for m in messages), messages
    assert reg.state.frameworks["alpha"].plugin == "first"
    assert pm.get_plugin("second") is None
    assert [(d.name, d.distribution) for d in pm.dropped] == [("second", "registered at run time")]


# -- broken plugins -----------------------------------------------------------------------


class Exploding:
    """A plugin whose converter hook raises (on every call, or once ``armed``)."""

    def __init__(self, armed: bool = True) -> None:
        self.armed = armed

    @hookimpl
    def interop_converters(self) -> list[ConverterSpec]:
        if self.armed:
            raise RuntimeError("boom")
        return [copier("exploding copy", "alpha", "beta", Beta, 1.0)]


def test_plugin_whose_hook_raises_is_dropped_at_build() -> None:
    pm = InteropPluginManager()
    pm.register(module_plugin("alpha_plugin", [ALPHA]), name="alpha-plugin")
    pm.register(BetaPlugin(), name="beta-plugin")
    pm.register(Exploding(), name="exploding")
    with pytest.warns(PluginWarning, match=r"'exploding'.*RuntimeError: boom"):
        reg = Registry(pm)
    assert pm.get_plugin("exploding") is None
    assert [d.name for d in pm.dropped] == ["exploding"]
    assert "interop_converters() raised RuntimeError: boom" in pm.dropped[0].reason
    with using_registry(reg):
        assert to(Alpha([1.0]), "beta").by == "slow copy"


def test_plugin_returning_a_non_spec_is_dropped_at_build() -> None:
    bad = module_plugin("bad", converters=[{"name": "not a spec"}])  # type: ignore[list-item]
    pm = InteropPluginManager()
    pm.register(module_plugin("alpha_plugin", [ALPHA]), name="alpha-plugin")
    pm.register(bad, name="bad")
    with pytest.warns(PluginWarning, match=r"'bad'.*not a ConverterSpec"):
        reg = Registry(pm)
    assert pm.get_plugin("bad") is None
    assert list(reg.state.frameworks) == ["alpha"]


def test_plugin_whose_hook_raises_at_register_is_refused(reg: Registry) -> None:
    with pytest.raises(PluginError, match=r"'exploding'.*RuntimeError: boom"):
        reg.register(Exploding(), name="exploding")
    assert reg.pm.get_plugin("exploding") is None
    assert reg.pm.dropped == []  # refused, not dropped: the caller got the error
    assert to(Alpha([1.0]), "beta").by == "slow copy"


def test_a_rebuild_asks_only_the_plugins_new_to_it(reg: Registry) -> None:
    """Declarations are immutable: register() and unregister() ask the hooks of no plugin
    asked before (issue 32: a rebuild from the declarations kept, a few ms); a plugin whose
    hook would raise now keeps what it declared when it was asked."""
    flaky = Exploding(armed=False)
    reg.register(flaky, name="flaky")
    assert to(Alpha([1.0]), "beta").by == "exploding copy"
    flaky.armed = True  # asked again, it would raise
    reg.register(module_plugin("delta", [toy_framework("delta", Delta)]), name="delta-plugin")
    assert reg.pm.get_plugin("flaky") is flaky and "delta" in reg.state.frameworks
    assert to(Alpha([1.0]), "beta").by == "exploding copy"
    reg.unregister(name="delta-plugin")
    assert "delta" not in reg.state.frameworks
    assert to(Alpha([1.0]), "beta").by == "exploding copy"
    # registered again, a plugin is asked again: now it raises, and is refused
    reg.unregister(flaky)
    with pytest.raises(PluginError, match=r"'flaky'.*RuntimeError: boom"):
        reg.register(flaky, name="flaky")
    assert to(Alpha([1.0]), "beta").by == "slow copy"


# -- names ------------------------------------------------------------------------------


def test_duplicate_and_blocked_names_are_refused(reg: Registry) -> None:
    beta_plugin = reg.pm.get_plugin("beta-plugin")
    with pytest.raises(PluginError, match="beta-plugin"):
        reg.register(module_plugin("other"), name="beta-plugin")  # a name already taken
    with pytest.raises(PluginError):
        reg.register(beta_plugin, name="beta-again")  # the same object twice
    reg.pm.set_blocked("blocked")
    with pytest.raises(PluginError, match="'blocked' is blocked"):
        reg.register(module_plugin("blocked", [toy_framework("delta", Delta)]), name="blocked")
    assert "delta" not in reg.state.frameworks
    assert reg.pm.get_plugin("beta-plugin") is beta_plugin
    assert to(Alpha([3.0]), "beta").tolist() == [3.0]


@pytest.mark.parametrize("how", ["object", "name"])
def test_unregistering_an_unknown_plugin_raises_plugin_error(reg: Registry, how: str) -> None:
    generation = reg.pm.generation
    with pytest.raises(PluginError, match="not registered"):
        if how == "object":
            interop_core.unregister(module_plugin("stranger"))
        else:
            interop_core.unregister(name="stranger")
    assert reg.pm.generation == generation
    assert to(Alpha([1.0]), "beta").by == "slow copy"


# -- entry points -------------------------------------------------------------------------

GOOD_PLUGIN = '''
"""A third-party plugin: the "gamma" framework, with a zero-copy edge into numpy."""
import array
import dataclasses
from interop_core import ConverterSpec, FrameworkSpec, TensorInfo, hookimpl
from interop_core.declare.specs import CPU


class Gamma:
    def __init__(self, values=(), typecode="d"):
        self.buf = array.array(typecode, values)


def _dtype(x):
    return "float64" if x.buf.typecode == "d" else "float32"


def _describe(x):
    return TensorInfo("gamma", _dtype(x), CPU, (len(x.buf),), "C", False, True)


def _example(data, dtype):
    return Gamma([v for row in data for v in row], "d" if dtype == "float64" else "f")


def _to_numpy():
    import numpy as np

    return lambda x: np.frombuffer(x.buf, dtype=_dtype(x))


@hookimpl
def interop_frameworks():
    return [FrameworkSpec(
        name="gamma", array_types=("interop_test_good.Gamma",), describe=_describe,
        key=lambda x: x.buf.typecode, data_ptr=lambda x: x.buf.buffer_info()[0],
        example=_example, dtypes=frozenset({"float64", "float32"}),
    )]


@hookimpl
def interop_converters():
    return [ConverterSpec(name="gamma frombuffer", source="gamma", target="numpy",
                          load=_to_numpy, zero_copy=True)]
'''

BROKEN_PLUGIN = 'raise ImportError("interop_test_broken needs libfoo, which is missing")\n'

RAISING_PLUGIN = """
from interop_core import hookimpl


@hookimpl
def interop_frameworks():
    raise RuntimeError("kaboom")
"""

SHADOW_PLUGIN = """
from interop_core import hookimpl


@hookimpl
def interop_frameworks():
    raise AssertionError("a shadowed plugin must never be called")
"""

MODULES = (
    "interop_test_good",
    "interop_test_broken",
    "interop_test_raising",
    "interop_test_shadow",
)


def make_site(root: Path, dists: dict[str, dict[str, str]], modules: dict[str, str]) -> Path:
    """A directory with one ``*.dist-info`` per distribution and the modules' sources."""
    root.mkdir()
    for dist, entry_points in dists.items():
        info = root / f"{dist.replace('-', '_')}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
        lines = "".join(f"{name} = {target}\n" for name, target in entry_points.items())
        (info / "entry_points.txt").write_text(f"[interop_core]\n{lines}")
    for name, source in modules.items():
        (root / f"{name}.py").write_text(textwrap.dedent(source))
    return root


@pytest.fixture
def fake_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Path]]:
    """Puts fake distributions on sys.path; removes their modules afterwards."""
    monkeypatch.delenv(DISABLE_AUTOLOAD_ENV, raising=False)

    def install(name: str, dists: dict[str, dict[str, str]], modules: dict[str, str]) -> Path:
        site = make_site(tmp_path / name, dists, modules)
        monkeypatch.syspath_prepend(str(site))  # also invalidates importlib's caches
        return site

    for mod in MODULES:
        sys.modules.pop(mod, None)
    yield install
    for mod in MODULES:
        sys.modules.pop(mod, None)
    importlib.invalidate_caches()


@pytest.fixture
def third_party(fake_site: Callable[..., Path]) -> Path:
    """A good, a broken (ImportError) and a raising (hook raises) third-party plugin."""
    return fake_site(
        "site",
        {
            "interop-test-good": {"good": "interop_test_good"},
            "interop-test-broken": {"broken": "interop_test_broken"},
            "interop-test-raising": {"raising": "interop_test_raising"},
        },
        {
            "interop_test_good": GOOD_PLUGIN,
            "interop_test_broken": BROKEN_PLUGIN,
            "interop_test_raising": RAISING_PLUGIN,
        },
    )


def test_entry_points_load_good_plugins_and_drop_broken_ones(third_party: Path, np: Any) -> None:
    with (
        pytest.warns(PluginWarning) as record,
        isolated_registry(builtins=True, entry_points=True) as reg,
    ):
        good = sys.modules["interop_test_good"]
        assert reg.pm.get_plugin("good") is good
        assert reg.pm.distribution_of("good") == "interop-test-good"
        assert reg.state.frameworks["gamma"].plugin == "good"
        assert "numpy" in reg.state.frameworks  # the built-ins are there too

        dropped = {d.name: d for d in reg.pm.dropped}
        assert set(dropped) >= {"broken", "raising"}
        assert dropped["broken"].distribution == "interop-test-broken"
        assert dropped["broken"].reason.startswith("ImportError: interop_test_broken needs libfoo")
        assert dropped["raising"].distribution == "interop-test-raising"
        assert "RuntimeError: kaboom" in dropped["raising"].reason
        assert reg.pm.get_plugin("broken") is None
        assert reg.pm.get_plugin("raising") is None

        x = good.Gamma([1.0, 2.0, 3.0])
        y = to(x, "numpy")
        assert y.tolist() == [1.0, 2.0, 3.0]
        assert shares_memory(x, y)
        assert route_of(x, "numpy") == [("gamma frombuffer", "good")]
        z = np.arange(4.0)
        assert to(z, "np") is z

    messages = [str(w.message) for w in record]
    for name, dist in (("broken", "interop-test-broken"), ("raising", "interop-test-raising")):
        assert any(f"'{name}'" in m and f"'{dist}'" in m for m in messages), messages


def numpy_and_entry_points() -> Registry:
    """A registry of the numpy built-in and the installed entry points (imports no framework)."""
    pm = InteropPluginManager()
    pm.load_builtins(("interop_plugins.frameworks.numpy",))
    pm.load_entry_points()
    return Registry(pm)


def test_doctor_command_lists_loaded_and_dropped_plugins(
    third_party: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.warns(PluginWarning) as record:
        reg = numpy_and_entry_points()
    assert {"broken", "raising"} <= {d.name for d in reg.pm.dropped}, record
    with using_registry(reg):
        assert cli.main(["doctor"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "  good  (interop-test-good)" in out, out
    assert "  interop_plugins.frameworks.numpy  (interop-core)" in out, out
    assert any(ln.startswith("  broken (interop-test-broken): ImportError") for ln in out), out
    assert any(ln.startswith("  raising (interop-test-raising): ") for ln in out), out
    assert any(ln.split()[:1] == ["gamma"] and "[good]" in ln for ln in out), out


def test_doctor_report_lists_dropped_plugins() -> None:
    pm = InteropPluginManager()
    pm.register(module_plugin("quiet"), name="quiet")
    pm.register(Exploding(), name="exploding")
    with pytest.warns(PluginWarning, match="'exploding'"):
        reg = Registry(pm)
    report = doctor_report(reg)
    assert [(d["name"], d["distribution"]) for d in report["dropped"]] == [
        ("exploding", "registered at run time")
    ]
    assert "RuntimeError: boom" in report["dropped"][0]["reason"]
    assert report["plugins"] == [{"name": "quiet", "distribution": "registered at run time"}]


def test_doctor_report_measures_a_framework_without_a_distribution() -> None:
    # FrameworkSpec.package.distribution is optional (default ""); the doctor must still run.
    reg = Registry(builtins=False, entry_points=False)
    reg.register(module_plugin("alpha_plugin", [ALPHA]), name="alpha-plugin")
    report = doctor_report(reg)
    (row,) = report["frameworks"]
    assert (row["name"], row["plugin"], row["devices"]) == ("alpha", "alpha-plugin", [])
    assert isinstance(row["version"], str)
    assert report["matrix"] == {"alpha": {"alpha": {"result": "zero-copy", "steps": 0}}}


@pytest.mark.parametrize("value", ["1", "true", "yes"])
def test_autoload_switch_disables_entry_points(
    third_party: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv(DISABLE_AUTOLOAD_ENV, value)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PluginWarning)
        reg = Registry(builtins=True, entry_points=True)
    assert reg.pm.get_plugin("good") is None
    assert reg.pm.dropped == []
    assert "gamma" not in reg.state.frameworks
    assert "numpy" in reg.state.frameworks
    assert not {"interop_test_good", "interop_test_broken"} & set(sys.modules)
    # The plugin can still be registered by hand.
    reg.register(importlib.import_module("interop_test_good"), name="good")
    assert reg.state.frameworks["gamma"].plugin == "good"


@pytest.mark.parametrize("value", ["", "0", "false", "no"])
def test_autoload_switch_off_values_keep_entry_points(
    third_party: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv(DISABLE_AUTOLOAD_ENV, value)
    with pytest.warns(PluginWarning) as record:
        reg = Registry(builtins=True, entry_points=True)
    assert reg.pm.get_plugin("good") is sys.modules["interop_test_good"]
    assert any("'broken'" in str(w.message) for w in record)


def test_blocked_entry_points_are_not_imported(third_party: Path) -> None:
    pm = InteropPluginManager()
    pm.load_builtins()
    for name in ("good", "broken", "raising"):
        pm.set_blocked(name)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PluginWarning)
        pm.load_entry_points()
        reg = Registry(pm)
    assert not {"interop_test_good", "interop_test_broken", "interop_test_raising"} & set(
        sys.modules
    )
    assert "gamma" not in reg.state.frameworks
    assert pm.dropped == []


def test_duplicate_entry_point_name_keeps_the_first_and_warns(
    fake_site: Callable[..., Path], np: Any
) -> None:
    # sys.path order decides which comes first: "first" is prepended last, so it leads.
    fake_site(
        "second",
        {"interop-test-shadow": {"good": "interop_test_shadow",
                                 "interop_plugins.frameworks.numpy": "interop_test_shadow"}},
        {"interop_test_shadow": SHADOW_PLUGIN},
    )  # fmt: skip
    fake_site(
        "first",
        {"interop-test-good": {"good": "interop_test_good"}},
        {"interop_test_good": GOOD_PLUGIN},
    )
    with pytest.warns(PluginWarning) as record:
        reg = Registry(builtins=True, entry_points=True)
    assert reg.pm.get_plugin("good") is sys.modules["interop_test_good"]
    assert reg.pm.distribution_of("good") == "interop-test-good"
    assert reg.pm.distribution_of("interop_plugins.frameworks.numpy") == "interop-core"
    assert reg.state.frameworks["numpy"].plugin == "interop_plugins.frameworks.numpy"
    assert "interop_test_shadow" not in sys.modules
    # The shadowed entry points are not silently lost: each warning names it and both sides.
    messages = [str(w.message) for w in record]
    for name, owner in (
        ("good", "interop-test-good"),
        ("interop_plugins.frameworks.numpy", "interop-core"),
    ):
        assert any(
            f"'{name}'" in m and "'interop-test-shadow'" in m and f"'{owner}'" in m
            for m in messages
        ), messages


def test_an_array_type_is_checked_only_once_its_own_module_is_imported() -> None:
    """A framework whose array type lives in a submodule not imported yet is kept, even when
    the top-level package is (``nvidia`` is a namespace that other wheels import long before
    ``nvidia.dali.experimental.dynamic``); a type missing from an imported module drops it."""
    import email  # imported; email.interop_not_yet is no module at all

    assert email is not None
    later = dataclasses.replace(ALPHA, array_types=("email.interop_not_yet.Array",))
    pm = InteropPluginManager()
    pm.register(module_plugin("later_plugin", [later]), name="later")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PluginWarning)
        reg = Registry(pm)
    assert "alpha" in reg.state.frameworks
    wrong = dataclasses.replace(ALPHA, array_types=("email.NoSuchArray",))
    pm = InteropPluginManager()
    pm.register(module_plugin("wrong_plugin", [wrong]), name="wrong")
    with pytest.warns(PluginWarning, match="'email.NoSuchArray'.*does not exist"):
        Registry(pm)
