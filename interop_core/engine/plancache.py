"""The plan cache: what the warm path of ``to()`` looks up, and the code that fills it.

One :class:`PlanCache` belongs to one registry state (a register/unregister starts a new,
empty one). The warm path reads only :attr:`PlanCache.plain` (device=None, copy=None) or
:attr:`PlanCache.fast` (any other device or copy):

    plain[target as given][type(x)] -> (key function, runners, whole key function)
    fast[type(x), target as given, device as given, copy] -> (the same)
    runners[key(x)] -> the route's runner

The whole key function is the key function itself but for a framework keyed through its
forms told apart per object (``engine/forms.keyed_with``): there the first is the
framework's own key, which raises on the forms' objects, and the whole one is asked then,
so a dense array's warm path pays nothing for the forms.

The key function reads exactly what the converters' predicates read (rule: the cache is
faithful): the framework's ``key(x)``, or ``aligned_key(x)`` when the route turns on the
64-byte alignment of the data. A route that turns on a global flag (JAX's x64) gets a
runner guarded by the flag's value at planning time; other routes never read it.

Entries keyed by a class made at run time (a class defined in a function, a MagicMock's)
do not keep it alive and are bounded in number (:class:`~interop_core.engine.detect.TypeTable`);
classes their module names are keys themselves, so the warm lookup stays an identity test.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Hashable
from typing import Any

from ..declare.errors import PluginWarning
from ..declare.predicates import GlobalFlag
from ..declare.records import NamedTuple
from ..declare.specs import ConverterSpec, FrameworkSpec, PlanKey
from .detect import TypeTable
from .planner import Search
from .plans import Plan, Runner
from .routes import Route

KeyFn = Callable[[Any], Hashable]
#: (type(obj), target as given, device as given, copy): the warm path's first lookup.
FastKey = tuple[Any, ...]
#: What the warm path looks up: (key function, runners by key, whole key function).
Entry = tuple[KeyFn, dict[Hashable, Runner], KeyFn]
#: (start node, target name, goal device): what a route is planned for.
RouteKey = tuple[PlanKey, str, str]


class StalePlan(Exception):
    """A guarded runner found a global flag changed since its route was planned."""


class Slot(NamedTuple):
    """The plans of one (source type, target, device as asked, copy) request."""

    keyfn: KeyFn
    runners: dict[Hashable, Runner]
    plans: dict[Hashable, Plan]
    by_alignment: bool


class PlanCache:
    """Plans by request, loaded converter functions and converters that failed at run time."""

    __slots__ = ("bad_keys", "failed", "fast", "loaded", "plain", "requests", "slots", "types")

    def __init__(self) -> None:
        #: The warm path for device=None, copy=None: target -> type -> (key function, runners
        #: by key); one-object keys hash faster than a tuple.
        self.plain: dict[Any, dict[type, Entry]] = {}
        #: The warm path for the other requests: FastKey -> (key function, runners by key).
        self.fast: dict[FastKey, Entry] = {}
        #: (type, target name, device as asked, copy) -> Slot; shared by fast entries that
        #: name the target differently ("tf", "tensorflow", the module).
        self.slots: dict[tuple[Any, ...], Slot] = {}
        #: Converters that failed with BufferError/NotImplementedError, per route key: each
        #: failure is warned about once (the route is re-planned for that object only).
        self.failed: dict[RouteKey, frozenset[tuple[str, str]]] = {}
        #: id(edge) -> (edge, its function): ConverterSpec.load() runs once per edge. Keyed
        #: by identity (the edge kept alive with it): hashing a spec hashes all its fields.
        self.loaded: dict[int, tuple[ConverterSpec, Callable[..., Any]]] = {}
        #: Routes of non-array requests (functions, pipelines, ...) by (route key, the
        #: option names given, the options passed truthy, those passed False, the edges an
        #: object's inspection refused): what planning depends on.
        self.requests: dict[
            tuple[
                RouteKey, tuple[str, ...], frozenset[str], frozenset[str],
                frozenset[tuple[str, str]],
            ],
            tuple[Route, Search],
        ] = {}  # fmt: skip
        #: Writes the type-keyed entries of plain, fast and slots: a class made at run time
        #: is not kept alive by them, and only so many such classes are kept at once.
        self.types = TypeTable()
        #: (type, key function) pairs whose key raised, each warned about once.
        #: Kept through :attr:`types`, so a class made at run time is not kept alive.
        self.bad_keys: dict[tuple[Any, KeyFn], bool] = {}

    def store(
        self, obj: Any, spec: FrameworkSpec, target: str, fast_key: FastKey, plan: Plan,
        by_alignment: bool,
    ) -> None:  # fmt: skip
        """Cache ``plan`` for ``obj``'s key and point the warm-path entry at it."""
        typ, target_given, device, copy = fast_key
        slot_key = (typ, target, device, copy)
        slot = self.slots.get(slot_key)
        by_alignment = by_alignment and spec.aligned_key is not None
        if slot is None or (by_alignment and not slot.by_alignment):  # once by alignment, always
            keyfn = spec.aligned_key if by_alignment and spec.aligned_key else spec.key
            slot = Slot(keyfn, {}, {}, by_alignment)
            self.types.put(self.slots, typ, slot_key, slot)
        try:
            k = slot.keyfn(obj)
            slot.runners[k] = guarded(plan.run, plan.flags) if plan.flags else plan.run
            slot.plans[k] = plan
            entry = (getattr(slot.keyfn, "dense", slot.keyfn), slot.runners, slot.keyfn)
            if device is None and copy is None:
                self.types.put(self.plain.setdefault(target_given, {}), typ, typ, entry)
            else:
                self.types.put(self.fast, typ, fast_key, entry)
        except Exception as exc:  # an unreadable or unhashable key: the slow path, reported
            self.key_failed(slot.keyfn, obj, exc)

    def cached_plan(self, obj: Any, target: str, fast_key: FastKey) -> Plan | None:
        """The plan the warm path ran for ``obj`` (None when it has none)."""
        slot = self.slots.get((fast_key[0], target, fast_key[2], fast_key[3]))
        return slot.plans.get(slot.keyfn(obj)) if slot is not None else None

    def key_failed(self, keyfn: KeyFn, obj: Any, exc: BaseException) -> None:
        """A framework's key function raised on ``obj``: such objects are planned on every
        call (slow). Warn once per key function and type, naming the function."""
        cls = type(obj)
        try:
            if (cls, keyfn) in self.bad_keys:
                return
            self.types.put(self.bad_keys, cls, (cls, keyfn), True)
        except TypeError:  # an unhashable class was reported by detection already
            return
        warnings.warn(
            f"The key function {getattr(keyfn, '__qualname__', keyfn)!r} of module "
            f"{getattr(keyfn, '__module__', '?')!r} raised {type(exc).__name__}: {exc} on a "
            f"{type(obj).__module__}.{type(obj).__qualname__}, so such objects are planned "
            "on every call (slow). This is a bug in the plugin that declares the key; this "
            "warning is given once.",
            PluginWarning,
            stacklevel=4,
        )

    def first_failure(self, key: RouteKey, edge: ConverterSpec) -> bool:
        """Record that ``edge`` failed on a route for ``key``; True the first time."""
        ident = (edge.plugin, edge.name)
        known = self.failed.get(key, frozenset())
        if ident in known:
            return False
        self.failed[key] = known | {ident}
        return True

    def load(
        self, edge: ConverterSpec, loader: Callable[[ConverterSpec], Callable[..., Any]]
    ) -> Any:
        """``edge``'s conversion function, loaded once per registry state."""
        found = self.loaded.get(id(edge))
        if found is not None and found[0] is edge:
            return found[1]
        func = loader(edge)
        self.loaded[id(edge)] = (edge, func)
        return func


def guarded(run: Runner, flags: tuple[GlobalFlag, ...]) -> Runner:
    """``run`` checking first that the flags still hold the values it was planned with."""
    if len(flags) == 1:
        read, expected = flags[0].value, flags[0].value()

        def one(x: Any) -> Any:
            if read() != expected:
                raise StalePlan
            return run(x)

        return one
    values = tuple(f.value() for f in flags)

    def many(x: Any) -> Any:
        if tuple(f.value() for f in flags) != values:
            raise StalePlan
        return run(x)

    return many
