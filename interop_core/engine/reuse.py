"""Results to() hands out again: the same object converted with the same arguments.

A kind that declares ``Kind.reuse`` (functions: a converted function is a wrapper with no
state but its caches) gets back the object to() made the first time, when the same source
object is converted with the same target, device, copy and options while that result is
still alive: a repeated ``to(f, "tensorflow", source="jax")`` is a lookup, not detection,
routing and binding again.

Each edge of the route has its say (``ConverterSpec.reuse``): an edge whose result holds
state read at conversion is never reused, and an edge's ``reuse(obj)`` is asked again each
time the result would be handed out. Neither side is kept alive by the cache: the source and
the result are held by weak references (an entry goes when either goes), as JAX's
``jax.jit`` cache keys functions weakly. A result references its source (it calls it), so a
result the cache held strongly would keep its source alive for good; instead the last
:data:`KEEP` results handed out are held strongly, so that ``to(f, ...)(x)`` in a loop, which
keeps no result, still hits, and those few (with their sources) live until newer ones push
them out. Objects that cannot be weakly referenced, and options that cannot be hashed, are
converted every time.
"""

from __future__ import annotations

import weakref
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any

from ..declare.specs import ConverterSpec

#: How many of the latest results are held strongly (see the module's docstring).
KEEP = 16
#: The edges' ``reuse(obj)`` functions, asked again before a result is handed out.
Checks = tuple[Callable[[Any], bool], ...]


class Reused:
    """One registry state's results of kinds that declare reuse (a new state, a new cache)."""

    __slots__ = ("entries", "recent")

    def __init__(self) -> None:
        #: id(source) -> {arguments: (weak source, weak result, the edges' reuse checks)}
        self.entries: dict[int, dict[Hashable, tuple[Any, Any, Checks]]] = {}
        self.recent: deque[Any] = deque(maxlen=KEEP)

    def get(self, obj: Any, args: Hashable) -> Any:
        """The result made for ``obj`` with ``args`` if both are alive, else None."""
        by_args = self.entries.get(id(obj))
        entry = None if by_args is None else by_args.get(args)
        if entry is None or entry[0]() is not obj:  # never made, or for an object now gone
            return None
        if not all(check(obj) for check in entry[2]):
            return None
        result = entry[1]()
        if result is not None and (not self.recent or self.recent[-1] is not result):
            self.recent.append(result)
        return result

    def put(
        self, obj: Any, args: Hashable, result: Any, edges: Iterable[ConverterSpec] = ()
    ) -> None:
        """Remember ``result`` as what ``obj`` with ``args`` gives through ``edges`` (where
        each edge allows it and both can be weakly referenced)."""
        if any(edge.reuse is False for edge in edges):
            return
        checks = tuple(edge.reuse for edge in edges if callable(edge.reuse))
        if not all(check(obj) for check in checks):
            return
        key = id(obj)

        def forget(_: Any) -> None:  # either side went: the entry goes
            by_args = self.entries.get(key)
            if by_args is not None and by_args.get(args) is entry:
                del by_args[args]
                if not by_args:
                    del self.entries[key]

        try:
            entry = (weakref.ref(obj, forget), weakref.ref(result, forget), checks)
        except TypeError:  # no weak references to one of them: not reused
            return
        self.entries.setdefault(key, {})[args] = entry
        self.recent.append(result)


def arguments(target: Any, device: Any, copy: Any, options: Mapping[str, Any]) -> Hashable:
    """What a result is remembered by: to()'s arguments as given (raises TypeError when an
    option's value cannot be hashed)."""
    args = (target, device, copy, tuple(sorted(options.items())))
    hash(args)
    return args
