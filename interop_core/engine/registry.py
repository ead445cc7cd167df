"""The registry: specs gathered from the plugins, validated, and the caches built on them.

A :class:`Registry` owns a plugin manager. Building it calls the declaration hooks once
per plugin (so a failure is pinned on its plugin), stamps each spec with its plugin,
validates names and edges, and publishes an immutable-by-convention :class:`State`
snapshot. Every register/unregister builds a new snapshot, so plans are rebuilt; a call
in flight keeps the snapshot it started with.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
import threading
import warnings
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from ..declare.errors import (
    FrameworkNotInstalledError,
    PluginError,
    UnknownFrameworkError,
)
from ..declare.specs import ANY, ARRAY, ConverterSpec, FrameworkSpec, KindSpec, KnownFramework
from .detect import Detector, unresolved_types
from ..declare.errors import PluginWarning
from .manager import InteropPluginManager
from .plancache import PlanCache
from .planner import Graph


class State:
    """One consistent build of the registry; replaced wholesale on every change."""

    __slots__ = (
        "cache", "declared", "detect", "fast", "frameworks", "generation", "graph", "installed",
        "kinds", "known", "names", "plain", "registry", "visible",
    )  # fmt: skip

    def __init__(
        self,
        generation: int,
        frameworks: dict[str, FrameworkSpec],
        names: dict[str, str],
        graph: Graph,
        installed: dict[str, bool],
        declared: tuple[ConverterSpec, ...],
        known: dict[str, KnownFramework],
        kinds: tuple[KindSpec, ...] = (),
        registry: Registry | None = None,
    ) -> None:
        #: The registry this state was built by (bridges convert through it).
        self.registry = registry
        self.generation = generation
        self.frameworks = frameworks
        self.names = names
        self.graph = graph
        #: Specs of the non-array objects (functions, ...), in registration order.
        self.kinds = kinds
        self.detect = Detector(frameworks.values(), kinds)
        #: Framework name -> importable (checked once per build, without importing).
        self.installed = installed
        #: Valid converters declared, usable or not (the graph holds the usable ones).
        self.declared = declared
        #: Frameworks known by name only (no plugin converts them yet), by lower-case alias.
        self.known = known
        self.cache = PlanCache()
        #: Framework name -> the devices it sees (None: it does not say), asked on first need.
        self.visible: dict[str, tuple[str, ...] | None] = {}
        #: The warm path's tables, read on every call (the cache's own dicts).
        self.plain = self.cache.plain
        self.fast = self.cache.fast


class Registry:
    """Frameworks and converters from the plugins, and the caches planned from them."""

    def __init__(
        self,
        manager: InteropPluginManager | None = None,
        *,
        builtins: bool = True,
        entry_points: bool = True,
    ) -> None:
        self.pm = manager or InteropPluginManager()
        self.lock = threading.RLock()
        if manager is None:
            if builtins:
                self.pm.load_builtins()
            if entry_points:
                self.pm.load_entry_points()
        self.state = self._build()

    # -- plugins -------------------------------------------------------------------

    def register(self, plugin: Any, name: str | None = None) -> str:
        """Register a plugin at run time; plans are rebuilt. Raises PluginError on conflict."""
        with self.lock:
            registered = self.pm.register(plugin, name)
            if registered is None:
                raise PluginError(f"Plugin {name or plugin!r} is blocked and was not registered.")
            try:
                self.state = self._build(strict=registered)
            except PluginError:
                self.pm.unregister(name=registered)
                self.state = self._build()
                raise
            return registered

    def unregister(self, plugin: Any = None, name: str | None = None) -> None:
        """Unregister a plugin (by object or name); plans are rebuilt."""
        with self.lock:
            known = self.pm.get_plugin(name) if name is not None else None
            if (plugin is None and known is None) or (
                plugin is not None and not self.pm.is_registered(plugin)
            ):
                raise PluginError(f"Plugin {name or plugin!r} is not registered.")
            self.pm.unregister(plugin, name)
            self.state = self._build()

    def _collect(self, hook: str, strict: str | None) -> list[tuple[str, Any]]:
        """Call one declaration hook plugin by plugin, so a failure names its plugin."""
        results: list[tuple[str, Any]] = []
        for impl in getattr(self.pm.hook, hook).get_hookimpls():
            name = impl.plugin_name
            try:
                specs = list(impl.function() or ())
            except Exception as exc:
                self._fail(name, f"{hook}() raised {type(exc).__name__}: {exc}", strict)
                continue
            expected: tuple[type, ...] = {
                "interop_frameworks": (FrameworkSpec, KnownFramework),
                "interop_kinds": (KindSpec,),
            }.get(hook, (ConverterSpec,))
            bad = [s for s in specs if not isinstance(s, expected)]
            if bad:
                wanted = " or ".join(t.__name__ for t in expected)
                self._fail(name, f"{hook}() returned {bad[0]!r}, not a {wanted}", strict)
                continue
            results.extend((name, replace(s, plugin=name)) for s in specs)
        return results

    def _fail(self, plugin: str, reason: str, strict: str | None) -> None:
        if plugin == strict:
            raise PluginError(f"Plugin {plugin!r} is invalid: {reason}")
        self.pm.drop(plugin, self.pm.distribution_of(plugin) or "registered at run time", reason)

    def _build(self, strict: str | None = None) -> State:
        """Gather, stamp and validate the specs into a new state.

        ``strict`` names a plugin being registered now: its faults raise PluginError instead
        of dropping it with a warning.
        """
        while True:
            generation = self.pm.generation
            frameworks: dict[str, FrameworkSpec] = {}
            names: dict[str, str] = {}
            known: dict[str, KnownFramework] = {}
            for plugin, spec in self._collect("interop_frameworks", strict):
                if isinstance(spec, KnownFramework):
                    known.update((a.lower(), spec) for a in (spec.name, *spec.aliases))
                    continue
                missing = unresolved_types(spec)
                if missing:
                    self._fail(plugin, f"array type {missing[0]!r} of framework {spec.name!r} "
                               f"does not exist in the imported module", strict)  # fmt: skip
                    break
                for alias in (spec.name, *spec.aliases):
                    owner = names.get(alias.lower())
                    if owner is not None:
                        other = frameworks[owner].plugin if owner in frameworks else plugin
                        self._conflict(plugin, other, f"framework name {alias!r}", strict)
                        break
                else:
                    frameworks[spec.name] = spec
                    names.update((a.lower(), spec.name) for a in (spec.name, *spec.aliases))
                if generation != self.pm.generation:
                    break
            if generation != self.pm.generation:
                continue  # a plugin was dropped: gather again without it
            kinds = self._validate_kinds(self._collect("interop_kinds", strict), frameworks)
            edges = self._validate_edges(self._collect("interop_converters", strict), frameworks)
            if generation == self.pm.generation:
                installed = {  # protocols (no module) need nothing installed
                    name: not spec.import_name or importable(spec.import_name)
                    for name, spec in frameworks.items()
                }
                # Routes never pass through a framework that is not installed (its predicates
                # and converters would import it).
                usable = [
                    e for e in edges
                    if all(f == ANY or installed[f] for f in (e.source, e.target))
                ]  # fmt: skip
                return State(
                    generation, frameworks, names, Graph(usable), installed, tuple(edges), known,
                    kinds, self,
                )  # fmt: skip

    def _conflict(self, plugin: str, other: str, what: str, strict: str | None) -> None:
        reason = f"{what} is already declared by plugin {other!r}"
        if plugin == strict or other == strict:
            raise PluginError(f"Plugins {plugin!r} and {other!r} conflict: {reason}.")
        self._fail(plugin, reason, strict)

    @staticmethod
    def _validate_kinds(
        kinds: Iterable[tuple[str, KindSpec]], frameworks: dict[str, FrameworkSpec]
    ) -> tuple[KindSpec, ...]:
        valid = []
        for plugin, spec in kinds:
            if spec.framework not in ("", ANY) and spec.framework not in frameworks:
                warnings.warn(
                    f"Kind {spec.kind!r} of plugin {plugin!r} ignored: no plugin declares "
                    f"framework {spec.framework!r}.",
                    PluginWarning,
                    stacklevel=4,
                )
                continue
            valid.append(spec)
        return tuple(valid)

    def _validate_edges(
        self, edges: Iterable[tuple[str, ConverterSpec]], frameworks: dict[str, FrameworkSpec]
    ) -> list[ConverterSpec]:
        valid: list[ConverterSpec] = []
        seen: dict[tuple[str, str, str], str] = {}
        for plugin, edge in edges:
            wild = edge.kind != ARRAY  # only other kinds may name any framework
            missing = [
                f for f in (edge.source, edge.target)
                if f not in frameworks and not (wild and f == ANY)
            ]  # fmt: skip
            if missing:
                warnings.warn(
                    f"Converter {edge.name!r} of plugin {plugin!r} ignored: no plugin declares "
                    f"framework {missing[0]!r}.",
                    PluginWarning,
                    stacklevel=4,
                )
                continue
            ident = (edge.source, edge.target, edge.name)
            if ident in seen and seen[ident] != plugin:
                warnings.warn(
                    f"Converter {edge.name!r} [{edge.edge}] is declared by plugins "
                    f"{seen[ident]!r} and {plugin!r}; both are kept as separate edges.",
                    PluginWarning,
                    stacklevel=4,
                )
            seen[ident] = plugin
            valid.append(edge)
        return valid

    # -- names ---------------------------------------------------------------------

    def resolve(self, target: Any, state: State | None = None) -> FrameworkSpec:
        """The spec a target names: a name or alias (any case) or a framework module."""
        st = state or self.state
        if isinstance(target, str):
            name = st.names.get(target.lower())
            if name is None:
                raise self._unknown(target, st)
        elif type(target).__name__ == "module":
            top = target.__name__.partition(".")[0]
            found = [s.name for s in st.frameworks.values() if s.import_name == top and s.target]
            if not found:
                raise self._unknown(target.__name__, st)
            name = found[0]
        else:
            raise self._not_a_name(target, st)
        spec = st.frameworks[name]
        if not spec.target:
            raise UnknownFrameworkError(
                target,
                [n for n, f in st.names.items() if st.frameworks[f].target],
                f"{spec.name!r} is a source {'protocol' if spec.protocol else 'only'}, not a "
                "framework to convert to.",
            )
        if not self.installed(spec, st):
            raise FrameworkNotInstalledError(
                spec.name, spec.install_hint or f"pip install {spec.distribution or spec.name}"
            )
        return spec

    @staticmethod
    def _not_a_name(target: Any, st: State) -> UnknownFrameworkError:
        """The error for a target that is neither a name nor a module, without its repr (an
        array's runs to pages); an array or function there means to()'s arguments are swapped."""
        what = f"{type(target).__module__}.{type(target).__qualname__}"
        targets = [n for n, f in st.names.items() if st.frameworks[f].target]
        try:
            convertible = st.detect(target) is not None or st.detect.kind(target) is not None
        except Exception:  # an object that cannot even be looked up is no array either
            convertible = False
        why = (
            "It is what to() converts: the arguments look swapped. to() takes the object "
            "first, then the target: to(x, 'torch')."
            if convertible
            else "Pass a framework name such as 'torch', or the framework's module."
        )
        head = f"The target is a {what}, not a framework name."
        return UnknownFrameworkError(what, targets, why, head=head)

    @staticmethod
    def _unknown(name: str, st: State) -> Exception:
        """FrameworkNotInstalledError for a framework known by name only, else Unknown..."""
        known = st.known.get(name.lower())
        targets = [n for n, f in st.names.items() if st.frameworks[f].target]
        if known is None:
            return UnknownFrameworkError(name, targets)
        if importable(known.module or known.name):
            return UnknownFrameworkError(
                name, targets,
                f"{known.name} is installed, but no installed interop_core plugin converts its "
                f"arrays yet ({known.plugin!r} knows it by name only).",
            )  # fmt: skip
        return FrameworkNotInstalledError(known.name, known.install_hint)

    def installed(self, spec: FrameworkSpec, state: State | None = None) -> bool:
        """Whether the framework can be imported (checked when the registry was built)."""
        return (state or self.state).installed.get(spec.name, False)


def importable(module: str) -> bool:
    """Whether ``module`` is imported or can be found, without importing it (nor, for a
    dotted name such as "nvidia.dali", its parent package: find_spec would import that)."""
    if module in sys.modules:
        return True
    top, _, rest = module.partition(".")
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return False
    if spec is None or not rest:
        return spec is not None
    paths = list(spec.submodule_search_locations or [])
    for part in rest.split("."):
        found = importlib.machinery.PathFinder.find_spec(part, paths)
        if found is None:
            return False
        paths = list(found.submodule_search_locations or [])
    return True
