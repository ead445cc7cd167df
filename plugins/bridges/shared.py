"""What the built-in function bridges share: their edge declaration, the name messages give
a function, a bounded per-signature cache, and the checks every bridge makes the same way.

Imports no framework.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Generic, TypeVar

from interop_core.plugin import FUNCTION, ConversionError, ConverterSpec

V = TypeVar("V")


def function_edge(
    name: str, source: str, target: str, load: Callable[[], Any], *, note: str, **fields: Any
) -> ConverterSpec:
    """A function bridge: called with a context, copying nothing when it converts, and
    never re-run on another route when it fails."""
    return ConverterSpec(
        name=name, source=source, target=target, load=load, kind=FUNCTION, zero_copy=True,
        context=True, rerun=False, note=note, **fields,
    )  # fmt: skip


def function_name(fn: Any) -> str:
    """How messages name ``fn``: its qualified name, or its name for builtins."""
    qual = getattr(fn, "__qualname__", "")
    if qual and not qual.startswith("_"):
        return str(qual)
    return str(getattr(fn, "__name__", type(fn).__qualname__))


def first_line(exc: BaseException) -> str:
    """The first line of ``exc``'s message (TensorFlow, JAX and tf2jax append pages of
    context)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def is_forward_mode(x: Any) -> bool:
    """Whether ``x`` is traced by forward-mode autodiff (jax.jvp): JAX exports no public name
    for its forward-mode tracer class, so it is matched by name."""
    return type(x).__name__ == "JVPTracer"


def check_unmodified(
    tensors: Sequence[Any], versions: Sequence[int], name: str, owner: str
) -> None:
    """Raise if the torch function ``name`` wrote into its inputs, which share the
    buffers of ``owner``'s arrays (torch's version counters tell)."""
    if any(t._version != v for t, v in zip(tensors, versions, strict=True)):
        raise ConversionError(
            f"The torch function {name} modified an input tensor in place. Its inputs share "
            f"memory with {owner}, which are now corrupted. Clone inputs before modifying "
            "them (x = x.clone()) or use out-of-place ops."
        )


class SignatureCache(Generic[V]):
    """What a bridge builds once per input signature, for the ``size`` latest signatures.

    Thread-safe; a key that cannot be hashed (an unhashable static argument) is never
    cached: its value is built on every call.
    """

    def __init__(self, size: int = 128) -> None:
        self.size = size
        self.entries: OrderedDict[Hashable, V] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: Hashable) -> V | None:
        """The value cached for ``key``, or None."""
        with self.lock:
            found = self.entries.get(key)
            if found is not None:
                self.entries.move_to_end(key)
            return found

    def latest(self) -> V | None:
        """The value used or cached most recently, or None when there is none."""
        with self.lock:
            return next(reversed(self.entries.values()), None)

    def get_or_make(self, key: Any, make: Callable[[], V]) -> V:
        """The value cached for ``key``, else ``make()``, cached."""
        try:
            found = self.get(key)
        except TypeError:  # unhashable
            return make()
        if found is None:
            found = make()
            self.put(key, found)
        return found

    def put(self, key: Hashable, value: V) -> None:
        """Cache ``value`` for ``key``, evicting the least recently used beyond ``size``."""
        with self.lock:
            self.entries[key] = value
            while len(self.entries) > self.size:
                self.entries.popitem(last=False)
