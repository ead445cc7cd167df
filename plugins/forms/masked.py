"""numpy's masked arrays (``numpy.ma.MaskedArray``): a form of numpy's arrays, opaque.

A masked array is an ndarray whose entries a mask hides. No route may read its values as
an ordinary array's (the hidden entries would come back as values), so its flag "masked"
is opaque: every edge that does not name this form refuses it, with the advice below.
This plugin's own edges take it into torch and JAX on request, as JAX and torch code
takes such data: ``to(m, "torch", nulls="mask")`` gives the pair ``(values, mask)``, the
option and the pair of a table column's nulls: the values shared with the masked array
where the target can share them, the mask True where the array has a value (numpy's mask
inverted, a new array). Within numpy, a copy keeps the mask.

The whole form is this file: numpy's plugin describes the array (a subclass of ndarray),
the core adds the flag and keeps other edges off it. Imports no framework at module level.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from interop_core.plugin import (
    ArrayEdge,
    CallContext,
    ConverterSpec,
    Flag,
    FormSpec,
    Needs,
    OptionError,
    hookimpl,
)

#: Loaded once it is imported (docs/plugins.md, "Loaded when needed").
INTEROP_ABOUT = ("numpy.ma",)

MASKED = "masked"
#: The option that asks for the pair, and its one value (as for a column's nulls).
OPTION, PAIR = "nulls", "mask"

_ADVICE = (
    "a masked array would lose its mask: pass nulls='mask' for the pair (values, mask) "
    "into torch or JAX, x.filled(value) for an array with the masked entries set to value, "
    "or x.data for the values alone"
)


@hookimpl
def interop_forms() -> list[FormSpec]:
    """numpy's masked arrays, described as numpy describes them plus the opaque flag."""
    return [
        FormSpec(
            name=MASKED,
            framework="numpy",
            types=("numpy.ma.MaskedArray",),
            flags=(Flag(MASKED, _ADVICE, opaque=True),),
            astype=_astype,
        )
    ]


def _astype(m: Any, dtype: str) -> Any:
    """A masked copy of ``m`` cast to canonical ``dtype`` (``to(..., dtype=)``)."""
    import numpy as np

    return m.astype(np.dtype(dtype))


def check_options(options: Mapping[str, Any]) -> None:
    """``nulls=`` takes 'mask' here (the pair); anything else is refused, saying why."""
    value = options.get(OPTION)
    if value != PAIR:
        raise OptionError(
            f"{OPTION}={value!r} does not apply to a masked array: {OPTION}='mask' gives the "
            "pair (values, mask). To fill the masked entries, convert x.filled(value)."
        )


def _load_pair(target: str, shares: bool) -> Callable[[], Callable[[Any, CallContext], Any]]:
    """The converter into ``target``: the values (shared, or with ``shares`` False copied)
    and a new mask, True where the array has a value (numpy's mask inverted, as a table
    column's nulls give it), each through the context's ``to()``."""

    def load() -> Callable[[Any, CallContext], Any]:
        import numpy as np

        def pair(m: Any, ctx: CallContext) -> tuple[Any, Any]:
            values = ctx.to(m.data, target, copy=not shares)
            return values, ctx.to(~np.ma.getmaskarray(m), target)

        return pair

    return load


def _masked_copy(m: Any) -> Any:
    """A C-contiguous masked copy of ``m``, its mask copied too."""
    return m.copy(order="C")


_SHARED = (
    "the values are shared with the masked array; the mask is new, True where the array has "
    "a value (numpy's mask inverted)"
)


@hookimpl
def interop_converters() -> list[ConverterSpec]:
    """Into torch and JAX as (values, mask) on request; a masked copy within numpy."""
    # The pair's result keeps the flag: no later edge (a device move, a copy) may take the
    # pair for an array. The targets' import rules apply to the values as to any array.
    takes = Needs(flags=frozenset({MASKED}))
    edges = [
        ConverterSpec(
            name="numpy.ma masked copy", source="numpy", target="numpy", load=lambda: _masked_copy,
            zero_copy=False, accepts=takes,
            keeps_flags=frozenset({MASKED}),
            array=ArrayEdge(aligned_result=False, forms=frozenset({MASKED})),
        )
    ]  # fmt: skip
    for target, cost in (("torch", 2.0), ("jax", 3.0)):
        for shares in (True, False):
            edges.append(
                ConverterSpec(
                    name=f"numpy.ma as (values, mask) into {target}"
                    + ("" if shares else ", copied"),
                    source="numpy",
                    target=target,
                    load=_load_pair(target, shares),
                    zero_copy=shares,
                    accepts=takes,
                    keeps_flags=frozenset({MASKED}),
                    cost=cost if shares else cost + 2.0,
                    options=(OPTION,),
                    opt_in=OPTION,
                    validate=check_options,
                    context=True,
                    note=_SHARED if shares else "",
                    array=ArrayEdge(forms=frozenset({MASKED})),
                )
            )
    return edges
