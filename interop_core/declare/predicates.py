"""Declarative converter predicates: state what an edge needs, get a predicate with reasons.

``ConverterSpec(accepts=Needs(layouts={"C"}, aligned=True))`` refuses any PlanKey that
breaks a condition and says which one, in words a user can act on. A Needs reads only
PlanKey fields, so the plan cache stays faithful.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable

from .errors import DTYPE, FLAG, GLOBAL_FLAG, LAYOUT, READONLY, UNALIGNED, VARIANT, Reason
from .records import record
from .specs import ALIGNMENT, ArrayTraits, PlanKey

_UNALIGNED = Reason(
    f"shares memory only with {ALIGNMENT}-byte aligned buffers (this one is not)", UNALIGNED
)


@record
class GlobalFlag:
    """A process-wide switch of a consumer that must be on for some dtypes.

    JAX's ``jax_enable_x64`` is the model: without it JAX narrows 64-bit inputs. The plan
    cache keys a request by :meth:`value` only when its dtype is in ``dtypes``, so the flag
    costs nothing on routes that do not depend on it.
    """

    #: The flag's current value (True: the dtypes are accepted), read from the framework.
    read: Callable[[], bool]
    dtypes: frozenset[str]
    #: The refusal, with ``{dtype}`` filled in: what is off and how to turn it on.
    reason: str
    #: The switch's name, for records and messages ("jax_enable_x64").
    name: str = ""
    #: The module that holds the switch ("jax") and the value it will have when that module
    #: is imported (JAX's reads ``JAX_ENABLE_X64``): while the module is not imported,
    #: :meth:`value` asks ``unloaded`` instead of ``read``, so planning a call that does not
    #: name the framework never imports it to read its switch (rule 10).
    module: str = ""
    unloaded: Callable[[], bool] | None = None

    def value(self) -> bool:
        """The flag's value, read without importing :attr:`module` when it is not loaded."""
        if self.unloaded is not None and self.module not in sys.modules:
            return self.unloaded()
        return self.read()


@functools.cache
def _only(handled: frozenset[str], what: str = "") -> Reason:
    """The refusal of a variant that handles only ``handled``: made once per set (a plan
    search asks every variant of a pair, and most refuse)."""
    return Reason(f"handles only {what}{', '.join(sorted(handled))}", VARIANT)


_WRITABLE_ALIAS = (
    "the memory is read-only and the consumer cannot mark a result read-only: writes "
    "through it would reach protected memory (or crash, for a read-only memory map)"
)


@record
class Needs:
    """Conditions a converter needs of its input; calling it gives None or the refusal reason."""

    #: Layout classes accepted, and the reason given for the others.
    layouts: frozenset[str] = frozenset({"C", "F", "strided", "negative", "broadcast"})
    layout_reason: str = ""
    #: dtypes refused, and why.
    no_dtypes: frozenset[str] = frozenset()
    dtype_reason: str = ""
    #: When set, only these dtypes are accepted (for dtype-specific variants).
    only_dtypes: frozenset[str] | None = None
    #: The consumer shares memory only with 64-byte aligned buffers (JAX on CPU).
    aligned: bool = False
    #: The consumer cannot mark what it imports read-only, so sharing read-only memory
    #: would let writes reach memory its owner protects (a bytes object; a read-only mmap,
    #: where the write is a SIGSEGV): refused, whatever ``copy`` says (rule 8).
    writable: bool = False
    #: The producer cannot export read-only memory at all.
    no_readonly: bool = False
    #: Flags refused (beside the opaque ones, ``Flag.opaque``, which the planner keeps off
    #: every edge that does not name them) and flags that must all be present.
    no_flags: frozenset[str] = frozenset({"requires_grad"})
    flags: frozenset[str] = frozenset()
    #: A global flag that must be on for some dtypes (JAX's x64), see :class:`GlobalFlag`.
    flag: GlobalFlag | None = None
    #: An extra condition: returns a reason to refuse, or None.
    extra: Callable[[PlanKey], str | None] | None = None

    def __call__(self, key: PlanKey) -> str | None:
        """None when ``key`` meets every condition, else the first reason it does not.

        Array traits are read only on nodes that carry them (:class:`ArrayTraits`): on
        others (functions, pipelines) only the flags and ``extra`` apply."""
        traits = key.traits
        arrays = isinstance(traits, ArrayTraits)
        dtype = traits.dtype if arrays else ""
        # Variant mismatches first: another edge of the same pair handles those keys.
        other = self.other_variant(dtype, key.flags)
        if other is not None:
            return other
        if dtype in self.no_dtypes:
            return Reason(self.dtype_reason or f"cannot take dtype {dtype}", DTYPE)
        switch = self.flag
        if switch is not None and dtype in switch.dtypes and not switch.value():
            return Reason(switch.reason.format(dtype=dtype), GLOBAL_FLAG, switch.name)
        if key.flags:
            for flag in sorted(key.flags & self.no_flags):
                # The words are generic: the framework that sets the flag declares its
                # advice (FrameworkSpec.flags), which refusals shown to users carry.
                return Reason(f"the array has flag {flag!r}", FLAG, flag)
        if arrays:
            if traits.layout not in self.layouts:
                return Reason(
                    self.layout_reason or f"cannot take a {traits.layout}-layout array", LAYOUT
                )
            if self.aligned and not traits.aligned:
                return _UNALIGNED
            if self.no_readonly and traits.readonly:
                return Reason("the producer refuses to export read-only memory", READONLY)
            if self.writable and traits.readonly:
                return Reason(_WRITABLE_ALIAS, READONLY)
        if self.extra is not None:
            return self.extra(key)
        return None

    def other_variant(self, dtype: str, flags: frozenset[str]) -> Reason | None:
        """The refusal of every key of ``dtype`` (``""`` off arrays) and ``flags`` as one
        another variant of the pair handles (``only_dtypes``, ``flags``), or None: what the
        predicate checks first, and all the planner needs to leave the edge unvisited."""
        if self.only_dtypes is not None and dtype not in self.only_dtypes:
            return _only(self.only_dtypes)
        missing = self.flags - flags
        return _only(missing, "arrays with ") if missing else None


def reads_flag(accepts: Callable[[PlanKey], str | None], dtype: str) -> GlobalFlag | None:
    """The global flag the verdict of ``accepts`` on a ``dtype`` array turns on, if any."""
    flag = accepts.flag if isinstance(accepts, Needs) else None
    return flag if flag is not None and dtype in flag.dtypes else None


def reads_alignment(accepts: Callable[[PlanKey], str | None], reason: str | None) -> bool:
    """Could the verdict ``reason`` of ``accepts`` change with the key's alignment alone?

    Exact for a :class:`Needs` without ``extra``: an acceptance turns on alignment only if it
    needs it, and a refusal for any other reason stands either way. Any other predicate
    might read it, so the answer is yes.
    """
    if not isinstance(accepts, Needs) or accepts.extra is not None:
        return True
    return accepts.aligned and (reason is None or getattr(reason, "category", "") == UNALIGNED)
