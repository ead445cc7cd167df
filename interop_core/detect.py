"""Which framework owns an object, found without importing anything.

Modelled on array-api-compat's ``_helpers`` and narwhals' ``dependencies``: a framework
whose module is not in ``sys.modules`` cannot own a live object, so detection only
resolves array types from modules already imported, then caches the answer per type.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

from .specs import FrameworkSpec


def resolve_type(path: str) -> type | None:
    """Resolve a dotted path such as "torch.Tensor" from already-imported modules only."""
    top, _, rest = path.partition(".")
    obj: object = sys.modules.get(top)
    if obj is None:
        return None
    for part in rest.split(".") if rest else ():
        try:
            obj = getattr(obj, part)
        except Exception:  # a half-initialised module: treat as absent
            return None
    return obj if isinstance(obj, type) else None


class Detector:
    """Maps an object's type to the FrameworkSpec owning it, with a per-type cache."""

    def __init__(self, specs: Iterable[FrameworkSpec]) -> None:
        self.specs = tuple(specs)
        self.cache: dict[type, FrameworkSpec | None] = {}

    def __call__(self, obj: object) -> FrameworkSpec | None:
        """The owning framework's spec, or None when no registered framework owns ``obj``."""
        cls = type(obj)
        try:
            return self.cache[cls]
        except KeyError:
            pass
        found = None
        for spec in self.specs:
            if spec.import_name not in sys.modules:
                continue
            types = [t for t in map(resolve_type, spec.array_types) if t is not None]
            if types and issubclass(cls, tuple(types)):
                found = spec
                break
        # A negative answer is safe to cache too: an object exists only after its
        # framework was imported, so a later import cannot change who owns this type.
        self.cache[cls] = found
        return found
