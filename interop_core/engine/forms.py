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

from collections.abc import Callable, Hashable, Iterable
from dataclasses import replace
from typing import Any

from ..declare.specs import ConverterSpec, FormSpec, FrameworkSpec, TensorInfo


def compose(base: FrameworkSpec, form: FormSpec) -> FrameworkSpec:
    """``base``'s spec for the objects of ``form``: its types, description and keys (for a
    form told apart per object, ``base`` is keyed through it already: :func:`keyed_with`)."""
    # A form that describes its objects sets the flags each carries; else every object of
    # it carries them all, added to the framework's description.
    describe = form.describe or _flagged(base.describe, form.flag_names)
    # A form keyed its own way says how alignment enters its key (None: always aligned).
    # Objects of one type share one key function on the warm path: a form told apart per
    # object has its framework's (which asks the form's).
    key, aligned_key = base.key, base.aligned_key
    if form.key is not None and form.test is None:
        key, aligned_key = form.key, form.aligned_key
    return replace(
        base,
        array_types=form.types,
        # Looked for only once the framework is imported, as its own types are.
        package=replace(base.package, module=base.import_name),
        describe=describe,
        key=key,
        aligned_key=aligned_key,
        data_ptr=form.data_ptr or base.data_ptr,
        casting=replace(base.casting, astype=form.astype or base.casting.astype),
    )


def _flagged(
    describe: Callable[[Any], TensorInfo], flags: frozenset[str]
) -> Callable[[Any], TensorInfo]:
    def flagged(x: Any) -> TensorInfo:
        info = describe(x)
        return info._replace(flags=info.flags | flags)

    return flagged


def keyed_with(base: FrameworkSpec, forms: Iterable[FormSpec]) -> FrameworkSpec:
    """``base`` keyed through its forms told apart per object (``FormSpec.test``), or
    ``base`` itself when it has none. Its key asks the framework's key first (the warm path
    calls that one alone, and this one only when it raises: engine/plancache.py); the
    framework's key raises on a form's object, and the first form whose test takes the
    object keys it, tagged with the form's name so that its keys never equal a dense
    array's."""
    split = [f for f in forms if f.test is not None and f.framework == base.name]
    if not split:
        return base
    aligned = None
    if base.aligned_key is not None or any(f.aligned_key is not None for f in split):
        aligned = _either(
            base.aligned_key or base.key, [(f, f.aligned_key or f.key) for f in split]
        )
    return replace(base, key=_either(base.key, [(f, f.key) for f in split]), aligned_key=aligned)


def _either(
    dense: Callable[[Any], Hashable],
    forms: list[tuple[FormSpec, Callable[[Any], Hashable] | None]],
) -> Callable[[Any], Hashable]:
    tests = tuple((f.name, f.test, fkey) for f, fkey in forms if fkey is not None)

    def key(x: Any) -> Hashable:
        try:
            return dense(x)
        except Exception:
            for name, test, fkey in tests:
                if test(x):  # type: ignore[misc]
                    return (name, fkey(x))
            raise

    # The warm path calls the framework's own key, and this one only when it raises
    # (engine/plancache.py); warnings about a key that fails name the framework's.
    key.dense = dense  # type: ignore[attr-defined]
    key.__qualname__ = getattr(dense, "__qualname__", "key")
    key.__module__ = getattr(dense, "__module__", __name__)
    return key


Split = tuple[tuple[Callable[[Any], bool], FrameworkSpec], ...]


def forms_by_framework(
    forms: Iterable[FormSpec], frameworks: dict[str, FrameworkSpec]
) -> tuple[dict[str, tuple[FrameworkSpec, ...]], dict[str, Split]]:
    """Framework name -> the composed specs of its forms found by type, in declaration
    order; and framework name -> (test, composed spec) of those told apart per object."""
    by_type: dict[str, list[FrameworkSpec]] = {}
    split: dict[str, list[tuple[Callable[[Any], bool], FrameworkSpec]]] = {}
    for form in forms:
        spec = compose(frameworks[form.framework], form)
        if form.test is None:
            by_type.setdefault(form.framework, []).append(spec)
        else:
            split.setdefault(form.framework, []).append((form.test, spec))
    return (
        {name: tuple(specs) for name, specs in by_type.items()},
        {name: tuple(pairs) for name, pairs in split.items()},
    )


def taken_flags(
    edge: ConverterSpec, forms: Iterable[FormSpec], opaque: frozenset[str] = frozenset()
) -> frozenset[str]:
    """The flags of the forms ``edge`` names (``ConverterSpec.array.forms``; a form's name means
    one thing whatever framework declares it: "ragged"), and the ``opaque`` flags it names
    itself (a framework's own: torch's "conj"): these do not keep the edge off an object."""
    named = frozenset().union(*(f.flag_names for f in forms if f.name in edge.array.forms))
    return named | (edge.array.forms & opaque)
