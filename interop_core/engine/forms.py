"""Forms of arrays (``interop_forms``): checked against the frameworks, composed with them.

A form names a framework and the types of its objects. The registry checks each against
the declared frameworks and composes it with its framework here: the result is the
framework's spec with the form's types and with the description and keys the form gives
(or the framework's own, the form's flags added). Detection hands that spec out for the
form's objects (:class:`~interop_core.engine.detect.Detector`), so describing, keying and
the warm path need nothing else; the planner keeps the edges that do not name an opaque
form off its flags (:class:`~interop_core.engine.planner.Graph`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from ..declare.specs import ConverterSpec, FormSpec, FrameworkSpec, TensorInfo


def compose(base: FrameworkSpec, form: FormSpec) -> FrameworkSpec:
    """``base``'s spec for the objects of ``form``: its types, description and keys."""
    # A form that describes its objects sets the flags each carries; else every object of
    # it carries them all, added to the framework's description.
    describe = form.describe or _flagged(base.describe, form.flag_names)
    # A form keyed its own way says how alignment enters its key (None: always aligned).
    key, aligned_key = (
        (form.key, form.aligned_key) if form.key is not None else (base.key, base.aligned_key)
    )
    return replace(
        base,
        array_types=form.types,
        # Looked for only once the framework is imported, as its own types are.
        module=base.import_name,
        describe=describe,
        key=key,
        aligned_key=aligned_key,
        data_ptr=form.data_ptr or base.data_ptr,
        astype=form.astype or base.astype,
    )


def _flagged(
    describe: Callable[[Any], TensorInfo], flags: frozenset[str]
) -> Callable[[Any], TensorInfo]:
    def flagged(x: Any) -> TensorInfo:
        info = describe(x)
        return info._replace(flags=info.flags | flags)

    return flagged


def forms_by_framework(
    forms: Iterable[FormSpec], frameworks: dict[str, FrameworkSpec]
) -> dict[str, tuple[FrameworkSpec, ...]]:
    """Framework name -> the composed specs of its forms, in declaration order."""
    out: dict[str, list[FrameworkSpec]] = {}
    for form in forms:
        out.setdefault(form.framework, []).append(compose(frameworks[form.framework], form))
    return {name: tuple(specs) for name, specs in out.items()}


def taken_flags(edge: ConverterSpec, forms: Iterable[FormSpec]) -> frozenset[str]:
    """The flags of the forms ``edge`` names (``ConverterSpec.forms``; a form's name means
    one thing whatever framework declares it: "ragged"): those of them an opaque form sets
    do not keep the edge off an object."""
    return frozenset().union(*(f.flag_names for f in forms if f.name in edge.forms))


def keeping_forms(edge: ConverterSpec, forms: Iterable[FormSpec]) -> ConverterSpec:
    """``edge`` with the flags of the forms it names kept on its result, for an edge within
    one framework (it takes such objects and gives back the same form)."""
    if not edge.forms or edge.source != edge.target:
        return edge
    return replace(edge, keeps_flags=edge.keeps_flags | taken_flags(edge, forms))
