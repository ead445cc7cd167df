"""The default registry loads a built-in plugin when a call needs it (issue 32).

Each built-in declares the modules it is about (``INTEROP_ABOUT``, read from its source);
the process-wide registry loads it once one is imported (every module of an entry that is
a tuple), and every plugin when a call fails in a way one of them might mend. These tests
check the declarations against what each plugin declares, that a lazy registry plans the
routes an eager one plans, and the first call's bookkeeping (the collector, entry points),
in fresh interpreters where they need a process without the frameworks.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import available, need

from interop_core import PluginError, Registry
from interop_core.declare.errors import PluginWarning
from interop_core.engine.manager import (
    Builtin,
    InteropPluginManager,
    builtin_manifest,
    may_declare_entry_points,
)

MANIFEST = builtin_manifest()


def run(code: str) -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter; it prints a JSON object as its last line."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    env.pop("INTEROP_CORE_DISABLE_PLUGIN_AUTOLOAD", None)
    prelude = "import json, sys, warnings\n"
    done = subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def prefixes(path: str) -> set[str]:
    """Every module a dotted path's object may live in: "a.b.C" -> {"a", "a.b", "a.b.C"}."""
    parts = path.split(".")
    return {".".join(parts[:n]) for n in range(1, len(parts) + 1)}


@pytest.fixture(scope="module")
def eager() -> Registry:
    """Every built-in loaded (entry points left out: these tests are about the built-ins)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PluginWarning)  # frameworks not installed here
        return Registry(entry_points=False)


# -- the declarations ---------------------------------------------------------------------


def test_what_is_read_from_the_source_is_what_the_module_declares() -> None:
    """The manifest is read without importing; imported, each module says the same."""
    declared = [b for b in MANIFEST if b.about is not None]
    assert len(declared) > 15
    for b in declared:
        value = importlib.import_module(b.name).INTEROP_ABOUT
        as_read = tuple(frozenset((e,) if isinstance(e, str) else e) for e in value)
        assert as_read == b.about, b.name
    always = {b.name for b in MANIFEST if b.about is None}
    # Plugins whose objects exist without any framework: callables, iterables, paths and
    # the protocols' objects; the table of exchange edges every pair of frameworks uses.
    assert always == {
        "interop_plugins.exchange.dlpack", "interop_plugins.exchange.protocols",
        "interop_plugins.frameworks.safetensors", "interop_plugins.kinds.callables",
        "interop_plugins.kinds.iterators",
    }  # fmt: skip


def test_every_type_a_plugin_claims_makes_it_due(eager: Registry) -> None:
    """Detection never imports: an object of a plugin's types exists only once their module
    is imported, and then the plugin is loaded (its own types, made from those, aside)."""
    st = eager.state
    by_plugin = {b.name: b for b in MANIFEST}
    claims: list[tuple[str, str]] = []
    for spec in st.frameworks.values():
        claims += [(spec.plugin, t) for t in spec.array_types]
    for kind in st.kinds:
        claims += [(kind.plugin, t) for t in kind.types]
    for impl in eager.pm.hook.interop_forms.get_hookimpls():
        claims += [(impl.plugin_name, t) for form in impl.function() for t in form.types]
    checked = 0
    for plugin, path in claims:
        b = by_plugin.get(plugin)
        if b is None or path.startswith("interop_plugins."):
            continue
        assert b.due(prefixes(path.rpartition(".")[0])), (plugin, path)
        checked += 1
    assert checked > 15


def test_every_edge_is_loaded_with_the_frameworks_it_joins(eager: Registry) -> None:
    """Once the plugins of an edge's two frameworks are loaded, so is the edge's plugin: a
    lazy registry plans over the same edges between what it has loaded. An edge of a form's
    arrays joins them once the form's types are imported too. (An edge a call opts into by
    an option is left out: a call naming an option no loaded plugin takes loads them all.)"""
    st = eager.state
    by_plugin = {b.name: b for b in MANIFEST}
    modules = {n: s.import_name for n, s in st.frameworks.items()}
    form_modules: dict[str, set[str]] = {}
    for impl in eager.pm.hook.interop_forms.get_hookimpls():
        for form in impl.function():
            found = form_modules.setdefault(form.name, set())
            found.update(*(prefixes(t.rpartition(".")[0]) for t in form.types))
    checked = 0
    for edge in st.declared:
        b = by_plugin.get(edge.plugin)
        ends = [modules.get(f) for f in (edge.source, edge.target) if f != "*"]
        if b is None or None in ends or edge.opt_in:
            continue
        imported = set().union(*(prefixes(m) for m in ends if m))
        for form in edge.array.forms:
            imported |= form_modules.get(form, set())
        frameworks_due = all(
            by_plugin[st.frameworks[f].plugin].due(imported)
            for f in (edge.source, edge.target) if f != "*"
        )  # fmt: skip
        if frameworks_due:
            assert b.due(imported), (edge.plugin, edge.name, sorted(imported))
            checked += 1
    assert checked > 100


def test_an_entry_that_is_a_tuple_needs_all_its_modules() -> None:
    b = Builtin("p", (frozenset({"jax", "tensorflow"}), frozenset({"torch"})))
    assert not b.due({"jax"}) and b.due({"jax", "tensorflow"}) and b.due({"torch"})
    assert Builtin("q").due(set())


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "toy_lazy"
    root.mkdir()
    (root / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield root
    for name in [m for m in sys.modules if m.partition(".")[0] == "toy_lazy"]:
        del sys.modules[name]
    builtin_manifest.cache_clear()


@pytest.mark.parametrize(
    "line", ['INTEROP_ABOUT = "torch"', "INTEROP_ABOUT = ()", "INTEROP_ABOUT = (1,)",
             "INTEROP_ABOUT = ((),)", "INTEROP_ABOUT = torch_modules()"],
)  # fmt: skip
def test_a_declaration_that_is_not_a_tuple_of_names_is_refused(toy: Path, line: str) -> None:
    source = f"from interop_core.plugin import hookimpl\n{line}\n"
    source += "@hookimpl\ndef interop_frameworks():\n    return []\n"
    (toy / "plugin.py").write_text(source)
    with pytest.raises(PluginError, match=r"toy_lazy\.plugin.*INTEROP_ABOUT.*tuple of module"):
        builtin_manifest("toy_lazy")
    assert "toy_lazy.plugin" not in sys.modules  # read, never imported


def test_a_declared_module_is_listed_without_being_imported(toy: Path) -> None:
    (toy / "plugin.py").write_text(
        "raise RuntimeError('imported')\nhookimpl = None\n"
        'INTEROP_ABOUT = ("torch", ("jax", "tensorflow"))  # a comment\n'
    )
    found = builtin_manifest("toy_lazy")
    assert found == (
        Builtin("toy_lazy.plugin", (frozenset({"torch"}), frozenset({"jax", "tensorflow"}))),
    )
    assert "toy_lazy.plugin" not in sys.modules


# -- a lazy registry in a fresh process ---------------------------------------------------


def test_a_first_call_loads_the_plugins_of_what_is_imported_and_the_rest_when_needed() -> None:
    need("numpy")
    need("torch")
    need("jax")
    out = run(
        """
        import numpy as np, torch
        import interop_core as ic
        from interop_core.engine.manager import builtin_manifest
        warnings.simplefilter("error")  # no warning about frameworks not loaded yet
        a = np.arange(6, dtype=np.float32)
        t = ic.to(a, "torch")
        reg = ic.default_registry()
        first = sorted(n for n, _ in reg.pm.list_name_plugin())
        shared = t.data_ptr() == a.ctypes.data
        route = str(ic.explain(a, "torch"))
        import jax, jax.numpy as jnp
        x = jnp.arange(4.0)
        back = ic.to(x, "numpy")  # jax imported since: its plugins load on this call
        after_jax = sorted(n for n, _ in reg.pm.list_name_plugin())
        pending = sorted(reg.pending)
        print(json.dumps({"first": first, "shared": shared,
                          "route": route, "back": back.tolist(), "after_jax": after_jax,
                          "pending": pending,
                          "manifest": [b.name for b in builtin_manifest()]}))
        """
    )
    first = set(out["first"])
    assert {"interop_plugins.frameworks.numpy", "interop_plugins.frameworks.torch"} <= first
    assert not {
        "interop_plugins.frameworks.jax", "interop_plugins.frameworks.tensorflow",
        "interop_plugins.bridges.jax_torch", "interop_plugins.kinds.dali",
    } & first  # fmt: skip
    assert out["shared"]
    assert "numpy" in out["route"] and "torch" in out["route"]
    assert out["back"] == [0.0, 1.0, 2.0, 3.0]
    after = set(out["after_jax"])
    assert {"interop_plugins.frameworks.jax", "interop_plugins.bridges.jax_torch"} <= after
    assert first < after
    assert set(out["pending"]) == set(out["manifest"]) - after


def test_a_target_not_imported_yet_loads_everything_and_converts() -> None:
    need("numpy")
    need("torch")
    out = run(
        """
        import numpy as np
        import interop_core as ic
        a = np.arange(3, dtype=np.int32)
        t = ic.to(a, "pytorch")  # torch is imported by the conversion
        reg = ic.default_registry()
        print(json.dumps({"type": type(t).__module__, "values": t.tolist(),
                          "pending": sorted(reg.pending)}))
        """
    )
    assert out["type"] == "torch" and out["values"] == [0, 1, 2]
    assert out["pending"] == []


def test_errors_are_the_ones_every_plugin_gives() -> None:
    """A name, option or route that only a plugin not loaded yet might know makes the call
    load them all first: the error lists every framework and every option."""
    need("numpy")
    out = run(
        """
        import numpy as np
        import interop_core as ic
        from interop_core.engine.registry import Registry
        def error(reg, *args, **kw):
            try:
                reg.state.to(*args, **kw)
            except ic.InteropError as exc:
                return [type(exc).__name__, str(exc)]
        a = np.ones(3)
        eager = Registry()
        cases = [(a, "tensorflw"), (a, "numpy", {"no_such_option": 1})]
        lazy = []
        for case in cases:
            obj, target, kw = (case + ({},))[:3]
            ic.set_default_registry(None)
            reg = ic.default_registry()
            try:
                ic.to(obj, target, **kw)
            except ic.InteropError as exc:
                lazy.append([type(exc).__name__, str(exc), sorted(reg.pending)])
        expected = [error(eager, c[0], c[1], **(c[2] if len(c) > 2 else {})) for c in cases]
        print(json.dumps({"lazy": lazy, "eager": expected}))
        """
    )
    assert len(out["lazy"]) == 2
    for (kind, message, pending), (want_kind, want) in zip(out["lazy"], out["eager"], strict=True):
        assert (kind, message) == (want_kind, want)
        assert pending == []
    assert "tensorflow" in out["lazy"][0][1]  # the suggestion, from a plugin loaded late


@pytest.mark.parametrize(
    "modules",
    [("numpy",), ("numpy", "torch"), ("numpy", "jax"), ("numpy", "torch", "jax")],
    ids="+".join,
)
def test_a_lazy_registry_plans_the_routes_an_eager_one_plans(modules: tuple[str, ...]) -> None:
    """Between the frameworks a lazy registry has loaded, every route (each array trait and
    copy request) is the one the registry with every plugin plans."""
    for name in modules:
        need(name)
    out = run(
        f"""
        import importlib
        for name in {modules!r}:
            importlib.import_module(name)
        from interop_core.engine.registry import Registry
        from interop_core.engine.planner import Goal
        from interop_core.declare.specs import ArrayTraits, PlanKey
        traits = [ArrayTraits("float32", "C", False, True), ArrayTraits("int64", "C", False, False),
                  ArrayTraits("float32", "F", True, True)]
        def routes(st, names):
            found = {{}}
            for src in names:
                for dst in names:
                    for i, t in enumerate(traits):
                        for copy in (None, True, False):
                            r = st.graph.search(PlanKey("array", src, "cpu", t, copy=copy),
                                                Goal(dst, "cpu"))
                            key = f"{{src}}->{{dst}} {{i}} {{copy}}"
                            found[key] = [e.name for _, e, _ in r.path] if r.found else None
            return found
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lazy = Registry(lazy=True, entry_points=False)
            eager = Registry(entry_points=False)
        names = sorted(lazy.state.frameworks)
        print(json.dumps({{"names": names, "lazy": routes(lazy.state, names),
                          "eager": routes(eager.state, names),
                          "all": len(eager.state.frameworks)}}))
        """
    )
    assert len(out["names"]) < out["all"]
    assert "numpy" in out["names"]
    assert out["lazy"] == out["eager"]
    assert any(v for v in out["lazy"].values())


# -- the first call's bookkeeping ---------------------------------------------------------


def test_the_collector_is_paused_while_the_registry_builds_and_resumed_after() -> None:
    runs: list[int] = []

    def counted(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            runs.append(info["generation"])

    gc.collect()  # the counts start at zero: no collection is due before the build starts
    gc.callbacks.append(counted)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PluginWarning)
            reg = Registry(entry_points=False)
        during = len(runs)
        assert gc.isenabled()
        garbage = [[] for _ in range(5000)]
        for g in garbage:
            g.append(g)  # cycles: the collector runs again
        del garbage, g
        after = len(runs)
    finally:
        gc.callbacks.remove(counted)
    assert during == 0, f"{during} collections while the registry was built"
    assert after > 0
    assert reg.state.frameworks


def test_a_program_that_turned_the_collector_off_keeps_it_off() -> None:
    gc.disable()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PluginWarning)
            Registry(entry_points=False)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_entry_points_are_looked_for_only_where_a_distribution_names_the_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert may_declare_entry_points("console_scripts") or not available("pytest")
    assert not may_declare_entry_points("no_such_group_of_interop_core")
    dist = tmp_path / "toy_group-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-group\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[toy_group_of_interop]\nx = toy_lazy_ep\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert may_declare_entry_points("toy_group_of_interop")
    (tmp_path / "zipped.egg").write_bytes(b"PK")  # an egg importlib.metadata would read
    assert may_declare_entry_points("no_such_group_of_interop_core")


def test_a_plugin_from_an_entry_point_is_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dist = tmp_path / "toy_ep-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-ep\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[interop_core]\ntoy = toy_ep_plugin\n")
    (tmp_path / "toy_ep_plugin.py").write_text(
        "from interop_core.plugin import KnownFramework, hookimpl\n"
        "@hookimpl\ndef interop_frameworks():\n"
        "    return [KnownFramework('toyframework', install_hint='pip install toy')]\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("INTEROP_CORE_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    pm = InteropPluginManager()
    pm.load_entry_points()
    assert pm.get_plugin("toy") is not None
    sys.modules.pop("toy_ep_plugin", None)


def test_a_plugin_registered_at_run_time_may_name_a_framework_still_waiting() -> None:
    """Its converter into a framework whose built-in waits is held back without a warning,
    and taken once that framework is imported."""
    need("numpy")
    need("jax")
    out = run(
        """
        import numpy as np
        import interop_core as ic
        from interop_core.plugin import ConverterSpec, hookimpl
        calls = []

        def into_jax(a):
            import jax.numpy as jnp
            calls.append(1)
            return jnp.asarray(a)

        class Plugin:
            @hookimpl
            def interop_converters(self):
                return [ConverterSpec(name="toy numpy->jax", source="numpy", target="jax",
                                      zero_copy=False, cost=0.0, load=lambda: into_jax)]

        a = np.arange(4, dtype=np.float32)
        ic.to(a, "numpy")  # the registry, lazy, before JAX is imported
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            ic.register(Plugin(), name="toy")
        held = "interop_plugins.frameworks.jax" in ic.default_registry().pending
        import jax
        route = ic.explain(a, "jax", copy=True)
        y = ic.to(a, "jax", copy=True)
        print(json.dumps({"warnings": [str(w.message) for w in seen], "held": held,
                          "steps": [s.converter for s in route.steps], "calls": len(calls),
                          "values": [float(v) for v in y]}))
        """
    )
    assert out["warnings"] == []
    assert out["held"]
    assert out["steps"] == ["toy numpy->jax"]
    assert out["calls"] == 1 and out["values"] == [0.0, 1.0, 2.0, 3.0]


def test_threads_that_need_a_waiting_plugin_at_once_load_it_once() -> None:
    """Calls in several threads meet JAX, imported since the registry was built: one loads
    the plugins about JAX, the others run on the state it built."""
    need("numpy")
    need("torch")
    need("jax")
    out = run(
        """
        import threading
        import numpy as np, torch
        import interop_core as ic
        from interop_core.engine import manager
        loaded = []
        real = manager.InteropPluginManager.load_builtins
        def counted(self, modules=None):
            loaded.extend(modules or ())
            return real(self, modules)
        manager.InteropPluginManager.load_builtins = counted
        ic.to(np.ones(3, np.float32), "torch")  # the registry: JAX's plugins wait
        first = list(loaded)
        import jax.numpy as jnp
        xs = [jnp.ones(3), np.ones(3, np.float32), torch.ones(3)]
        results, errors = [], []
        start = threading.Barrier(9)
        def work(i):
            start.wait()
            try:
                y = ic.to(xs[i % 3], ["torch", "jax", "jax"][i % 3])
                results.append(float(y.sum()))
            except Exception as exc:
                errors.append(repr(exc))
        threads = [threading.Thread(target=work, args=(i,)) for i in range(9)]
        for t in threads: t.start()
        for t in threads: t.join()
        later = loaded[len(first):]
        print(json.dumps({"errors": errors, "results": results, "later": later}))
        """
    )
    assert out["errors"] == []
    assert out["results"] == [3.0] * 9
    assert "interop_plugins.frameworks.jax" in out["later"]
    assert len(out["later"]) == len(set(out["later"])), out["later"]


def test_a_built_in_that_fails_to_load_stays_waiting_and_fails_each_call_that_needs_it() -> None:
    """As an eager registry's every call would: nothing is lost silently, and once the
    failure is gone the plugin loads."""
    need("numpy")
    need("scipy")
    out = run(
        """
        import numpy as np
        import interop_core as ic
        from interop_core.engine import manager
        ic.to(np.ones(2), "numpy")
        reg = ic.default_registry()
        name = "interop_plugins.frameworks.scipy"
        waited = name in reg.pending
        real = manager.InteropPluginManager.load_builtins
        def broken(self, modules=None):
            if modules and name in modules:
                raise ImportError("simulated")
            return real(self, modules)
        manager.InteropPluginManager.load_builtins = broken
        import scipy.sparse  # due from now on
        failures = []
        for _ in range(2):
            try:
                ic.to(np.ones(2), "numpy", copy=True)
            except ImportError as exc:
                failures.append([str(exc), name in reg.pending])
        manager.InteropPluginManager.load_builtins = real
        y = ic.to(scipy.sparse.csr_array(np.eye(2)), "numpy", densify=True)
        print(json.dumps({"waited": waited, "failures": failures, "values": y.tolist(),
                          "loaded": reg.pm.get_plugin(name) is not None}))
        """
    )
    assert out["waited"]
    assert out["failures"] == [["simulated", True], ["simulated", True]]
    assert out["values"] == [[1.0, 0.0], [0.0, 1.0]]
    assert out["loaded"]


def _objects() -> list[tuple[str, Any]]:
    """Objects of every installed framework and form the built-ins detect, and functions of
    each kind (the frameworks missing here are left out)."""
    found: list[tuple[str, Any]] = []
    if available("numpy"):
        import numpy as np

        found += [("ndarray", np.ones(3)), ("masked", np.ma.masked_array([1.0], mask=[0])),
                  ("scalar", np.float32(1.0)), ("python function", lambda x: x)]  # fmt: skip
    if available("torch"):
        import torch

        found += [("tensor", torch.ones(3)), ("sparse", torch.eye(2).to_sparse()),
                  ("parameter", torch.nn.Parameter(torch.ones(2))),
                  ("module", torch.nn.Linear(2, 2)),
                  ("loader", torch.utils.data.DataLoader([1, 2]))]  # fmt: skip
    if available("jax"):
        import jax

        found += [("jax array", jax.numpy.ones(3)), ("jitted", jax.jit(lambda x: x))]
    if available("tensorflow"):
        import tensorflow as tf

        found += [("tf tensor", tf.ones(3)), ("variable", tf.Variable([1.0])),
                  ("ragged", tf.ragged.constant([[1], [2, 3]])),
                  ("tf sparse", tf.sparse.from_dense(tf.eye(2))),
                  ("tf function", tf.function(lambda x: x))]  # fmt: skip
    if available("scipy"):
        import scipy.sparse

        found.append(("csr", scipy.sparse.csr_array((2, 2))))
    if available("pyarrow"):
        import pyarrow as pa

        found += [("arrow", pa.array([1, 2])), ("arrow list", pa.array([[1], [2, 3]]))]
    return found


def test_what_an_object_is_does_not_depend_on_the_order_plugins_load_in() -> None:
    """A lazy registry registers the plugins it loads after the others (pluggy asks the
    later first): detection, of arrays, forms and kinds, gives the same answers in the
    sorted order and the reversed one."""
    objects = _objects()
    if not objects:
        pytest.skip("no framework installed")
    forward, backward = InteropPluginManager(), InteropPluginManager()
    forward.load_builtins()
    backward.load_builtins(tuple(reversed([b.name for b in MANIFEST])))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PluginWarning)
        one, other = Registry(forward), Registry(backward)

    def seen(st: Any, x: Any) -> tuple[str, str]:
        spec = st.detect(x)
        if spec is not None:  # the framework, and the form by the flags it describes
            return spec.name, ",".join(sorted(spec.describe(x).flags))
        kind = st.detect.kind(x)
        return "", "" if kind is None else f"{kind.kind} of {kind.framework or 'any'}"

    answers = {label: seen(one.state, x) for label, x in objects}
    assert answers == {label: seen(other.state, x) for label, x in objects}
    assert all(any(a) for a in answers.values()), answers
    if available("numpy"):
        assert answers["masked"] == ("numpy", "masked")
