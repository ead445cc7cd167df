"""Which framework owns an object, found without importing anything.

Modelled on array-api-compat's ``_helpers`` and narwhals' ``dependencies``: a framework
whose module is not in ``sys.modules`` cannot own a live object, so detection only
resolves array types from modules already imported, then caches the answer per type.
Array protocols (``__dlpack__``, ``__array_interface__``, ...) are specs with ``claims``:
asked only when no framework's types match, in registration order.
"""

from __future__ import annotations

import sys
import types
import warnings
import weakref
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any, TypeVar

from ..declare.errors import PluginWarning, UnhashableTypeError
from ..declare.specs import ANY, FrameworkSpec, KindSpec
from .forms import Split

_MISSING = object()
_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made by a class statement or type()

#: Classes made at run time (not named by their module) that one :class:`TypeTable` keeps
#: entries for at once, and of those, how many of one name per dict: ``MagicMock`` makes a
#: class per instance, all named ``unittest.mock.MagicMock``.
RUNTIME_CLASSES = 1024
SAME_NAME = 16


def resolve_type(path: str) -> type | None:
    """Resolve a dotted path such as "torch.Tensor" from already-imported modules only.

    Attributes of modules are read from the module's ``__dict__``, so a lazily loaded
    submodule (PEP 562 ``__getattr__``, as scipy's) is never imported to find out.
    """
    parts = path.split(".")
    # Start from the longest prefix that is an imported module ("tensorflow.python.types.core"
    # for a type deep inside a package whose top level does not expose it).
    for n in range(len(parts) - 1, 0, -1):
        obj: object = sys.modules.get(".".join(parts[:n]))
        if obj is not None:
            break
    else:
        return None
    for part in parts[n:]:
        try:
            if isinstance(obj, types.ModuleType):
                obj = vars(obj).get(part, _MISSING)
            else:
                obj = getattr(obj, part, _MISSING)
        except Exception:  # a half-initialised module: treat as absent
            return None
        if obj is _MISSING:
            return None
    return obj if isinstance(obj, type) else None


def imported(module: str) -> bool:
    """Whether ``module`` is in sys.modules and done importing (not half-initialised)."""
    mod = sys.modules.get(module)
    return mod is not None and not getattr(getattr(mod, "__spec__", None), "_initializing", False)


def unresolved_types(spec: FrameworkSpec) -> list[str]:
    """``spec.array_types`` entries that do not resolve although their module is imported
    (the module the path names, not only its top-level package: a namespace package such
    as ``nvidia`` is imported by others long before ``nvidia.dali.experimental.dynamic``)."""
    return [p for p in spec.array_types if imported(p.rpartition(".")[0]) and not resolve_type(p)]


def unhashable_type(cls: type, exc: BaseException) -> UnhashableTypeError:
    """The error for an object whose class raised ``exc`` from ``__hash__``."""
    meta = type(cls)
    return UnhashableTypeError(
        f"Cannot convert a {cls.__module__}.{cls.__qualname__}: hashing its class raised "
        f"{type(exc).__name__}: {exc}.\n{meta.__qualname__}.__hash__ (the metaclass of "
        f"{cls.__qualname__}) must work for the class: to() looks frameworks and routes up by "
        "the object's class. Fix or remove that __hash__ (classes hash by identity by "
        "default), or convert a plain array of its data instead."
    )


def lasting(cls: type) -> bool:
    """Whether ``cls`` lives as long as the process: a static type (int, numpy.ndarray) or a
    class its module names (torch.Tensor). A class made at run time (a MagicMock's, one
    defined in a function, ``type(...)``) is not: it may be collected."""
    if not cls.__flags__ & _HEAPTYPE:
        return True
    try:
        obj: Any = sys.modules.get(cls.__module__)
        qualname = cls.__qualname__
        if obj is None or "<" in qualname:
            return False
        for part in qualname.split("."):
            obj = vars(obj).get(part)  # a module's or class's own names: no __getattr__ runs
        return obj is cls
    except Exception:  # an odd __module__, a name bound to None on the way, ...
        return False


class _WeakType:
    """Stands in for a class in a dict key without keeping the class alive: it hashes as
    the class and equals it while it lives, so a plain ``table[cls]`` finds the entry.
    When the class is collected its entry is removed."""

    __slots__ = ("hash", "name", "owner", "ref", "stored", "table")

    def __init__(self, cls: type, owner: TypeTable, table: dict[Any, Any]) -> None:
        self.ref = weakref.ref(cls, self._died)
        self.hash = hash(cls)
        self.name = (id(table), f"{cls.__module__}.{cls.__qualname__}")
        self.owner = owner
        self.table = table
        self.stored: Hashable = self

    def __hash__(self) -> int:
        return self.hash

    def __eq__(self, other: object) -> bool:
        if type(other) is _WeakType:
            other = other.ref()
        return other is not None and other is self.ref()

    def _died(self, _: Any) -> None:
        self.owner.forget(self)


class TypeTable:
    """Puts entries keyed by a class (or by a tuple starting with one) into dicts that the
    warm path reads with a plain ``table[cls]``, without keeping classes made at run time
    alive.

    A class that lives as long as the process (:func:`lasting`) is the key itself: the
    lookup is one identity comparison. Another class is keyed by a :class:`_WeakType`
    (a lookup calls its ``__eq__``): its entries go when it is collected, and at most
    ``limit`` such entries are kept (``same_name`` per class name and dict), the oldest
    dropped first, so producers that make a class per object (``MagicMock``) cannot grow
    the caches. Safe from several threads: each step is one dict operation, and a lost
    race costs at most a cache miss.
    """

    def __init__(self, limit: int = RUNTIME_CLASSES, same_name: int = SAME_NAME) -> None:
        self.limit = limit
        self.same_name = same_name
        #: The entries of run-time classes, oldest first (by id of their _WeakType).
        self.held: dict[int, _WeakType] = {}
        self._named: dict[tuple[int, str], dict[int, _WeakType]] = {}

    def put(self, table: dict[Any, Any], cls: type, key: Any, value: Any) -> None:
        """``table[key] = value``, where ``key`` is ``cls`` or a tuple starting with it."""
        if lasting(cls):
            table[key] = value
            return
        weak = _WeakType(cls, self, table)
        stored: Hashable = weak if key is cls else (weak, *key[1:])
        weak.stored = stored
        if stored in table:  # the class has an entry: a new value under the same key
            table[stored] = value
            return
        named = self._named.setdefault(weak.name, {})
        if len(named) >= self.same_name:
            self._drop_oldest(named)
        if len(self.held) >= self.limit:
            self._drop_oldest(self.held)
        self.held[id(weak)] = named[id(weak)] = weak
        table[stored] = value

    def forget(self, weak: _WeakType) -> None:
        """Remove ``weak``'s entry (its class died, or it is the oldest)."""
        weak.table.pop(weak.stored, None)
        self.held.pop(id(weak), None)
        named = self._named.get(weak.name)
        if named is not None:
            named.pop(id(weak), None)
            if not named:
                self._named.pop(weak.name, None)

    def _drop_oldest(self, entries: dict[int, _WeakType]) -> None:
        try:
            oldest = entries[next(iter(entries))]
        except (StopIteration, RuntimeError, KeyError):  # emptied or changed by another thread
            return
        self.forget(oldest)


class Detector:
    """Maps an object's type to the FrameworkSpec owning it, with a per-type cache."""

    def __init__(
        self, specs: Iterable[FrameworkSpec], kinds: Iterable[KindSpec] = (),
        hook: Callable[[Any], str | None] | None = None,
        forms: Mapping[str, tuple[FrameworkSpec, ...]] | None = None,
        split: Mapping[str, Split] | None = None,
    ) -> None:  # fmt: skip
        specs = tuple(specs)
        #: Framework name -> its spec for each of its forms (``array_types``: the form's).
        self.forms = dict(forms or {})
        self.form_specs = tuple(spec for specs in self.forms.values() for spec in specs)
        self.by_name = {s.name: s for s in specs}
        #: id(a framework's spec) -> (test, spec) of its forms told apart per object (a
        #: torch sparse tensor is a torch.Tensor): asked of each object that spec is found for.
        self.split: dict[int, Split] = {
            id(self.by_name[name]): pairs for name, pairs in (split or {}).items()
        }
        #: The plugins' ``interop_detect`` hook, asked first (None: no plugin implements it).
        self.hook = hook
        self.specs = tuple(s for s in specs if s.array_types)
        self.protocols = tuple(s for s in specs if s.detection.claims is not None)
        self.kinds = tuple(kinds)
        # Structural checks of kinds owned by a framework come before the catch-alls (any
        # callable, any iterator), so a DALI pipeline_def is not taken for a plain function.
        self.kind_claims = tuple(
            sorted((k for k in self.kinds if k.claims is not None),
                   key=lambda k: k.framework in ("", ANY))
        )  # fmt: skip
        #: Per type (entries of classes made at run time go with them: see TypeTable).
        self.cache: dict[type, FrameworkSpec | None] = {}
        self.kind_cache: dict[type, KindSpec | None] = {}
        self.types = TypeTable()
        self._reported: set[str] = set()

    def __call__(self, obj: object) -> FrameworkSpec | None:
        """The owning framework's spec, or None when no registered framework owns ``obj``."""
        cls = type(obj)
        try:
            found = self.cache[cls]
        except KeyError:
            found = self._by_hook(obj)
            if found is not None:
                found = self._in_form(found, cls)
            else:
                found = self._by_type(cls) or self._by_protocol(obj)
            # A negative answer is safe to cache too: an object exists only after its
            # framework was imported, so a later import cannot change who owns this type.
            self.types.put(self.cache, cls, cls, found)
        except Exception as exc:  # the metaclass's __hash__ raised
            raise unhashable_type(cls, exc) from exc
        if self.split and id(found) in self.split:
            return self._split_form(found, obj)  # type: ignore[arg-type]
        return found

    def _split_form(self, spec: FrameworkSpec, obj: object) -> FrameworkSpec:
        """The spec of the form ``obj`` is of, told per object, else ``spec``; a test that
        raises counts as a no, as a claim does."""
        for test, form in self.split[id(spec)]:
            try:
                if test(obj):
                    return form
            except Exception:
                continue
        return spec

    def kind(self, obj: object) -> KindSpec | None:
        """The spec of a non-array object (a function, ...), or None; asked only of objects
        that are not arrays. Types of every spec first (cached per type), then their
        ``claims`` (those of kinds a framework owns first), asked of each object: objects
        of one type may differ (a DALI ``@pipeline_def`` and a plain function)."""
        found = self.kind_by_type(obj)
        return found if found is not None else first_claiming(self.kind_claims, obj)

    def kind_by_type(self, obj: object) -> KindSpec | None:
        """The spec whose declared ``types`` ``obj``'s class belongs to (cached per type),
        or None; structural ``claims`` are not asked."""
        cls = type(obj)
        try:
            found = self.kind_cache[cls]
        except KeyError:
            found = self._kind_by_type(cls)
            self.types.put(self.kind_cache, cls, cls, found)
        except Exception as exc:  # the metaclass's __hash__ raised
            raise unhashable_type(cls, exc) from exc
        return found

    def _kind_by_type(self, cls: type) -> KindSpec | None:
        for spec in self.kinds:
            found_types = tuple(t for t in map(resolve_type, spec.types) if t is not None)
            if found_types and issubclass(cls, found_types):
                return spec
        return None

    def _by_type(self, cls: type) -> FrameworkSpec | None:
        # A form's types first: they are more specific than its framework's (a masked
        # array is an ndarray), and may be no subclass of them (a ragged tensor).
        return self._first_of(self.form_specs, cls) or self._first_of(self.specs, cls)

    def _first_of(self, specs: Iterable[FrameworkSpec], cls: type) -> FrameworkSpec | None:
        for spec in specs:
            if spec.import_name not in sys.modules:
                continue
            types = []
            for path in spec.array_types:
                t = resolve_type(path)
                if t is not None:
                    types.append(t)
                elif imported(path.rpartition(".")[0]):
                    # The module the path names, not its top-level package: a type in a
                    # submodule loaded on demand (a framework's optional extras) is absent,
                    # not missing, until that submodule is imported.
                    self._report(spec, path)
            if types and issubclass(cls, tuple(types)):
                return spec
        return None

    def _in_form(self, spec: FrameworkSpec, cls: type) -> FrameworkSpec:
        """For a framework a plugin's ``interop_detect`` named: the spec of its form whose
        types ``cls`` belongs to, else ``spec``."""
        return self._first_of(self.forms.get(spec.name, ()), cls) or spec

    def _by_hook(self, obj: object) -> FrameworkSpec | None:
        """The framework a plugin's ``interop_detect`` names for ``obj`` (a hook that raises,
        or names no declared framework, has not answered)."""
        if self.hook is None:
            return None
        try:
            name = self.hook(obj)
        except Exception:
            return None
        return self.by_name.get(name) if name is not None else None

    def _by_protocol(self, obj: object) -> FrameworkSpec | None:
        return first_claiming(self.protocols, obj)

    def _report(self, spec: FrameworkSpec, path: str) -> None:
        """Warn once that a declared array type does not exist (a plugin bug)."""
        if path in self._reported:
            return
        self._reported.add(path)
        warnings.warn(
            f"Plugin {spec.plugin!r} declares array type {path!r} for framework {spec.name!r}, "
            "but the imported module has no such type; its objects cannot be detected. "
            "Fix the plugin's FrameworkSpec.array_types.",
            PluginWarning,
            stacklevel=4,
        )


Claiming = TypeVar("Claiming", FrameworkSpec, KindSpec)


def first_claiming(specs: Iterable[Claiming], obj: object) -> Claiming | None:
    """The first of ``specs`` whose ``claims`` check accepts ``obj``; a check that raises
    counts as a no (a structural check must never break detection)."""
    for spec in specs:
        claims = spec.detection.claims if isinstance(spec, FrameworkSpec) else spec.claims
        try:
            if claims(obj):  # type: ignore[misc]
                return spec
        except Exception:
            continue
    return None
