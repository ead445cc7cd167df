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
from collections.abc import Iterable
from typing import TypeVar

from .specs import ANY, FrameworkSpec, KindSpec

_MISSING = object()


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
    """``spec.array_types`` entries that do not resolve although their module is imported."""
    return [p for p in spec.array_types if imported(p.partition(".")[0]) and not resolve_type(p)]


class Detector:
    """Maps an object's type to the FrameworkSpec owning it, with a per-type cache."""

    def __init__(self, specs: Iterable[FrameworkSpec], kinds: Iterable[KindSpec] = ()) -> None:
        specs = tuple(specs)
        self.specs = tuple(s for s in specs if s.array_types)
        self.protocols = tuple(s for s in specs if s.claims is not None)
        self.kinds = tuple(kinds)
        # Structural checks of kinds owned by a framework come before the catch-alls (any
        # callable, any iterator), so a DALI pipeline_def is not taken for a plain function.
        self.kind_claims = tuple(
            sorted((k for k in self.kinds if k.claims is not None),
                   key=lambda k: k.framework in ("", ANY))
        )  # fmt: skip
        self.cache: dict[type, FrameworkSpec | None] = {}
        self.kind_cache: dict[type, KindSpec | None] = {}
        self._reported: set[str] = set()

    def __call__(self, obj: object) -> FrameworkSpec | None:
        """The owning framework's spec, or None when no registered framework owns ``obj``."""
        cls = type(obj)
        try:
            return self.cache[cls]
        except KeyError:
            pass
        found = self._by_type(cls) or self._by_protocol(obj)
        # A negative answer is safe to cache too: an object exists only after its
        # framework was imported, so a later import cannot change who owns this type.
        self.cache[cls] = found
        return found

    def kind(self, obj: object) -> KindSpec | None:
        """The spec of a non-array object (a function, ...), or None; asked only of objects
        that are not arrays. Types of every spec first (cached per type), then their
        ``claims`` (those of kinds a framework owns first), asked of each object: objects
        of one type may differ (a DALI ``@pipeline_def`` and a plain function)."""
        cls = type(obj)
        try:
            found = self.kind_cache[cls]
        except KeyError:
            found = self.kind_cache[cls] = self._kind_by_type(cls)
        return found if found is not None else first_claiming(self.kind_claims, obj)

    def _kind_by_type(self, cls: type) -> KindSpec | None:
        for spec in self.kinds:
            found_types = tuple(t for t in map(resolve_type, spec.types) if t is not None)
            if found_types and issubclass(cls, found_types):
                return spec
        return None

    def _by_type(self, cls: type) -> FrameworkSpec | None:
        for spec in self.specs:
            if spec.import_name not in sys.modules:
                continue
            types = []
            for path in spec.array_types:
                t = resolve_type(path)
                if t is not None:
                    types.append(t)
                elif imported(path.partition(".")[0]):
                    self._report(spec, path)
            if types and issubclass(cls, tuple(types)):
                return spec
        return None

    def _by_protocol(self, obj: object) -> FrameworkSpec | None:
        return first_claiming(self.protocols, obj)

    def _report(self, spec: FrameworkSpec, path: str) -> None:
        """Warn once that a declared array type does not exist (a plugin bug)."""
        if path in self._reported:
            return
        self._reported.add(path)
        from .manager import PluginWarning

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
        try:
            if spec.claims(obj):  # type: ignore[misc]
                return spec
        except Exception:
            continue
    return None
