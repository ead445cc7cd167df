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
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from ..declare import records
from ..declare.errors import PluginError, PluginWarning, UnknownFrameworkError
from ..declare.specs import (
    ANY,
    ARRAY,
    ARRAYS,
    ArrayEdge,
    ConverterSpec,
    FormSpec,
    FrameworkSpec,
    Kind,
    KindSpec,
    KnownFramework,
)
from .collector import paused_collection
from .detect import unresolved_types
from .forms import forms_by_framework, keyed_with
from .manager import Builtin, InteropPluginManager, builtin_manifest
from .planner import Graph
from .state import Declared, Hooks, State

#: What an edge of another kind than arrays leaves ``ConverterSpec.array`` as.
_NOT_AN_ARRAY_EDGE = ArrayEdge()


class Registry:
    """Frameworks and converters from the plugins, and the caches planned from them.

    ``lazy`` (what :func:`~interop_core.default_registry` builds): a built-in plugin is
    loaded when a call needs it, that is once a module its ``INTEROP_ABOUT`` names is
    imported, and every one when a call fails in a way one of them might mend (see
    :meth:`grow`). Otherwise every built-in loads now.
    """

    def __init__(
        self,
        manager: InteropPluginManager | None = None,
        *,
        builtins: bool = True,
        entry_points: bool = True,
        lazy: bool = False,
    ) -> None:
        self.lock = threading.RLock()
        #: What each hook implementation declared, stamped with its plugin, by its HookImpl:
        #: declarations are immutable, so a rebuild (register(), unregister()) asks only the
        #: implementations it has not asked yet (a plugin registered again is asked again).
        self._declared: dict[Any, list[tuple[str, Any]]] = {}
        #: Built-in plugins not loaded yet (``lazy``), by module name: each loads once a
        #: module it is about is imported, and all of them when a call fails in a way one
        #: of them might mend (see :meth:`grow`).
        self.pending: dict[str, Builtin] = {}
        #: Each entry of their INTEROP_ABOUT: what every slow call checks against sys.modules.
        self._waiting: tuple[frozenset[str], ...] = ()
        #: How many times pending plugins were loaded (a state knows the count it was built at).
        self.loads = 0
        with paused_collection():
            self.pm = manager or InteropPluginManager()
            if manager is None:
                if builtins:
                    manifest = builtin_manifest()
                    self.pending = {
                        b.name: b for b in manifest if lazy and not b.due(sys.modules)
                    }  # fmt: skip
                    self.pm.load_builtins(
                        tuple(b.name for b in manifest if b.name not in self.pending)
                    )  # fmt: skip
                    self._waiting = _entries(self.pending)
                if entry_points:
                    self.pm.load_entry_points()
            self.state = self._build()

    # -- lazy loading --------------------------------------------------------------------

    def grow(self, state: State, everything: bool = False) -> State | None:
        """The state to run a call on instead of ``state``, or None to keep it.

        Loads the pending built-ins a call now needs (those about a module imported since;
        every one, ``everything``) and returns the new state, or the current one when it
        holds plugins ``state`` lacks (another thread loaded them); None when ``state`` has
        every plugin the call can use."""
        if everything or self._any_due():
            with self.lock:
                due = tuple(
                    b.name for b in self.pending.values() if everything or b.due(sys.modules)
                )  # fmt: skip
                if due:
                    self._load(due)
        current = self.state
        return current if current.loads > state.loads else None

    def _load(self, names: tuple[str, ...]) -> None:
        """Load the pending built-ins ``names`` and build the state on them. One whose
        import fails stays pending (the next call that needs it fails the same way, as an
        eager registry's every call would); one dropped for its hooks is not asked again."""
        with paused_collection():
            try:
                self.pm.load_builtins(names)
            finally:
                dropped = {d.name for d in self.pm.dropped}
                for name in names:
                    if self.pm.get_plugin(name) is not None or name in dropped:
                        del self.pending[name]
                self._waiting = _entries(self.pending)
                self.loads += 1
                self.state = self._build()

    def _any_due(self) -> bool:
        """Whether a pending built-in is due now: loops, not generators (every slow call of a
        lazy registry asks, ~1.5 µs with 15 entries waiting)."""
        modules = sys.modules
        for need in self._waiting:
            for module in need:
                if module not in modules:
                    break
            else:
                return True
        return False

    def ready(self) -> State:
        """The state with the pending built-ins about modules imported since loaded (what
        reading the state directly needs; a call's slow path does the same itself)."""
        return self.grow(self.state) or self.state

    def load_all(self) -> State:
        """Load every pending built-in plugin (what listings of all frameworks, such as
        doctor's, need); returns the state."""
        return self.grow(self.state, everything=True) or self.state

    # -- plugins -------------------------------------------------------------------

    def register(self, plugin: Any, name: str | None = None) -> str:
        """Register a plugin at run time; plans are rebuilt. Raises PluginError on conflict."""
        with self.lock:
            registered = self.pm.register(plugin, name)
            if registered is None:
                raise PluginError(f"Plugin {name or plugin!r} is blocked and was not registered.")
            try:
                with paused_collection():
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
            with paused_collection():
                self.state = self._build()

    def _collect(self, hook: str, strict: str | None) -> list[tuple[str, Any]]:
        """Call one declaration hook plugin by plugin, so a failure names its plugin."""
        results: list[tuple[str, Any]] = []
        for impl in getattr(self.pm.hook, hook).get_hookimpls():
            known = self._declared.get(impl)
            if known is not None:
                results.extend(known)
                continue
            name = impl.plugin_name
            try:
                specs = list(impl.function() or ())
            except Exception as exc:
                self._fail(name, f"{hook}() raised {type(exc).__name__}: {exc}", strict)
                continue
            expected: tuple[type, ...] = {
                "interop_frameworks": (FrameworkSpec, KnownFramework),
                "interop_kinds": (Kind, KindSpec),
                "interop_forms": (FormSpec,),
            }.get(hook, (ConverterSpec,))
            bad = [s for s in specs if not isinstance(s, expected)]
            if bad:
                wanted = " or ".join(t.__name__ for t in expected)
                self._fail(name, f"{hook}() returned {bad[0]!r}, not a {wanted}", strict)
                continue
            stamped = [(name, records.replace(s, plugin=name)) for s in specs]
            self._declared[impl] = stamped
            results.extend(stamped)
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
        registered = {id(p) for p in self.pm.get_plugins()}
        self._declared = {i: d for i, d in self._declared.items() if id(i.plugin) in registered}
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
            forms = self._validate_forms(self._collect("interop_forms", strict), frameworks, strict)
            if generation != self.pm.generation:
                continue
            declared = self._collect("interop_kinds", strict)
            kinds = self._declared_kinds(
                ((p, s) for p, s in declared if isinstance(s, Kind)), strict
            )  # fmt: skip
            if generation != self.pm.generation:
                continue
            finds = self._validate_kinds(
                ((p, s) for p, s in declared if isinstance(s, KindSpec)), frameworks, kinds
            )  # fmt: skip
            edges = self._validate_edges(
                self._collect("interop_converters", strict), frameworks, kinds, forms
            )  # fmt: skip
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
                # A framework whose forms are told apart per object is keyed through them.
                frameworks = {n: keyed_with(s, forms.values()) for n, s in frameworks.items()}
                specs = Declared(
                    frameworks, names, finds, tuple(edges), known,
                    *forms_by_framework(forms.values(), frameworks),
                )  # fmt: skip
                # The graph reads the kinds, the frameworks' import rules, switches and flag
                # advice, and the forms' opaque flags once, here: every plan of this build
                # uses them.
                graph = Graph(usable, frameworks, kinds, forms.values())
                hooks = Hooks(
                    self._hook("interop_detect", "obj"),
                    self._hook("interop_parse_device", "device"),
                    self.pm.hook,  # the relay converters ask hooks through (CallContext.hook)
                )
                grow = self.grow if self.pending else None
                return State(generation, specs, graph, installed, hooks, grow, self.loads)

    def _hook(self, name: str, arg: str) -> Callable[[Any], Any] | None:
        """The firstresult hook ``name`` as a function of its one argument (None: no plugin
        implements it, so asking costs nothing)."""
        hook = getattr(self.pm.hook, name)
        if not hook.get_hookimpls():
            return None
        return lambda value: hook(**{arg: value})

    def _conflict(self, plugin: str, other: str, what: str, strict: str | None) -> None:
        reason = f"{what} is already declared by plugin {other!r}"
        if plugin == strict or other == strict:
            raise PluginError(f"Plugins {plugin!r} and {other!r} conflict: {reason}.")
        self._fail(plugin, reason, strict)

    def _declared_kinds(
        self, declared: Iterable[tuple[str, Kind]], strict: str | None
    ) -> dict[str, Kind]:
        """The kinds: arrays (declared by the core) and each plugin's. Plugins that use one
        kind may each declare it (the function kind: every framework with functions), as
        long as they declare it alike; a different declaration of a name taken is a
        conflict that drops its plugin."""
        kinds: dict[str, Kind] = {ARRAYS.name: ARRAYS}
        for plugin, kind in declared:
            if kind.name in kinds:
                if kinds[kind.name] != kind:
                    what = f"kind {kind.name!r}, declared differently,"
                    self._conflict(plugin, kinds[kind.name].plugin, what, strict)
                continue
            kinds[kind.name] = kind
        return kinds

    def _validate_kinds(
        self, specs: Iterable[tuple[str, KindSpec]], frameworks: dict[str, FrameworkSpec],
        kinds: dict[str, Kind],
    ) -> tuple[KindSpec, ...]:  # fmt: skip
        valid = []
        for plugin, spec in specs:
            missing = (
                f"framework {spec.framework!r}"
                if spec.framework not in ("", ANY) and spec.framework not in frameworks
                else f"kind {spec.kind!r}" if spec.kind not in kinds else ""
            )  # fmt: skip
            if missing:
                self._ignored(f"Kind {spec.kind!r}", plugin, missing)
                continue
            valid.append(spec)
        return tuple(valid)

    def _ignored(self, what: str, plugin: str, missing: str) -> None:
        """Warn that a declaration is left out because no plugin declares what it names;
        not while built-ins are pending (one of them may: it is checked again when they
        load)."""
        if not self.pending:
            warnings.warn(
                f"{what} of plugin {plugin!r} ignored: no plugin declares {missing}.",
                PluginWarning,
                stacklevel=5,
            )

    def _validate_forms(
        self, declared: Iterable[tuple[str, FormSpec]], frameworks: dict[str, FrameworkSpec],
        strict: str | None,
    ) -> dict[tuple[str, str], FormSpec]:  # fmt: skip
        """The forms by (framework, name): those of declared frameworks, with types; a form
        two plugins declare for one framework is a conflict."""
        forms: dict[tuple[str, str], FormSpec] = {}
        for plugin, form in declared:
            if form.framework not in frameworks:
                self._ignored(f"Form {form.name!r}", plugin, f"framework {form.framework!r}")
                continue
            if not form.types or not form.flags or (form.test and form.key is None):
                what = "types" if not form.types else "flags" if not form.flags else "key"
                self._fail(plugin, f"form {form.name!r} declares no {what}", strict)
                continue
            other = forms.get((form.framework, form.name))
            if other is not None:
                what = f"form {form.name!r} of framework {form.framework!r}"
                self._conflict(plugin, other.plugin, what, strict)
                continue
            forms[form.framework, form.name] = form
            if form.examples:  # the kit checks them with the framework's own
                spec = frameworks[form.framework]
                kit = replace(spec.diagnostics, forms=spec.diagnostics.forms + form.examples)
                frameworks[form.framework] = replace(spec, diagnostics=kit)
        return forms

    def _validate_edges(
        self, edges: Iterable[tuple[str, ConverterSpec]], frameworks: dict[str, FrameworkSpec],
        kinds: dict[str, Kind], forms: dict[tuple[str, str], FormSpec],
    ) -> list[ConverterSpec]:  # fmt: skip
        valid: list[ConverterSpec] = []
        seen: dict[tuple[str, str, str], str] = {}
        # A form's name means one thing everywhere; a framework's opaque flag is named as one.
        named = {name for _, name in forms}
        named.update(f.name for s in frameworks.values() for f in s.flags if f.opaque)
        for plugin, edge in edges:
            kind = kinds.get(edge.kind)
            wild = kind is not None and kind.any_framework  # may it name any framework?
            missing = [
                f"framework {f!r}" for f in (edge.source, edge.target)
                if f not in frameworks and not (wild and f == ANY)
            ]  # fmt: skip
            missing += [
                f"kind {k!r}" for k in (edge.kind, edge.result_kind) if k and k not in kinds
            ]
            missing += [f"form {name!r}" for name in sorted(edge.array.forms - named)]
            if missing:
                self._ignored(f"Converter {edge.name!r}", plugin, missing[0])
                continue
            if edge.kind != ARRAY and edge.array != _NOT_AN_ARRAY_EDGE:
                warnings.warn(
                    f"Converter {edge.name!r} of plugin {plugin!r} ignored: it converts "
                    f"{edge.kind} objects but declares array= (ArrayEdge), which only edges of "
                    "arrays have (what its result's memory is like, device moves, forms).",
                    PluginWarning,
                    stacklevel=4,
                )
                continue
            if edge.inspects is not None and kind is not None and kind.warm:
                warnings.warn(
                    f"Converter {edge.name!r} of plugin {plugin!r} ignored: it inspects "
                    f"objects, but {kind.plural} take the warm path, which reads only their "
                    "key (declare what it needs as traits or flags).",
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

    def resolve(self, target: Any) -> FrameworkSpec:
        """The :class:`~interop_core.FrameworkSpec` a target (a framework's name or alias,
        any case, or its module) names now; a name no plugin loaded so far knows loads the
        pending ones first. Raises UnknownFrameworkError (with close names) where none does,
        FrameworkNotInstalledError where its framework is not installed."""
        try:
            return self.state.resolve(target)
        except UnknownFrameworkError:
            if not self.pending:
                raise
        return self.load_all().resolve(target)


def _entries(pending: dict[str, Builtin]) -> tuple[frozenset[str], ...]:
    """Every entry of the pending built-ins' INTEROP_ABOUT (each has one: the others are
    never pending)."""
    return tuple(need for b in pending.values() for need in b.about or ())


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
