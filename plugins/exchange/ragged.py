"""Ragged arrays: tf.RaggedTensor, torch jagged nested tensors, Arrow list arrays and JAX
``RaggedArray(values, row_splits)`` pairs.

Each is an array of its framework carrying the flag "ragged" (an opaque flag: no dense edge
takes it), with "splits32" when its row splits (offsets) are int32 rather than int64; Arrow
list arrays and torch tensors may carry "splits_base" (the offsets do not start at 0: a
sliced list array), "splits_unaligned" (the offsets are not 64-byte aligned), and Arrow's
"null_rows", "chunked" and "bit_packed" (see the frameworks' ``describe``). The edges here
take them, between torch, tensorflow and jax (from Arrow too):

- shared: the values cross zero-copy (the target's import rules apply, as to any array) and
  so do the row splits, whose dtype every target keeps (torch and tensorflow hold int32 and
  int64 ones; jax int64 ones only with jax_enable_x64);
- row splits copied: the values are shared and only the row splits are made anew, the one
  copy explain() counts: narrowed to int32 for jax without x64, shifted to start at 0 (a
  sliced Arrow array), or into an aligned buffer for tensorflow and jax;
- copied: values and row splits (``copy=True``, a non-contiguous torch tensor, values
  another framework cannot share);
- into Arrow: a List array (int32 row splits) or LargeList array (int64) sharing the values
  and the row splits (offsets past 0 and unaligned ones too: Arrow takes them), or copied
  (booleans, which Arrow holds as bits; a non-contiguous torch tensor; ``copy=True``); a
  chunked Arrow list column is joined into one list array first, the one copy;
- ``ragged="pad"`` with ``fill_value=`` (and ``mask=True`` for a ``(padded, mask)`` pair)
  pads into a dense array of numpy, torch, jax or tensorflow: an opt-in edge whose result is
  marked "padded", so the option asks for a padded result (a dense array passes as it is).

Every ragged array's row splits are checked, fully, before any edge runs: describe() and
the warm-path key of each source call ``ragged_convert.check_splits`` (int32 or int64, from
0 or past it, never decreasing, within the values; TensorFlow's and RaggedArray's from 0 to
``len(values)``; a non-contiguous torch tensor's rows within its values), so no padding,
sharing or framework meets offsets that lie; a lie is an InvalidArrayError naming the row.
The options' values are checked when the route is found (:func:`check_options`).

Declarations only: the functions live in :mod:`.ragged_convert`, which imports the
frameworks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, NamedTuple

from interop_core.plugin import (
    DTYPES,
    ArrayEdge,
    ConverterSpec,
    Flag,
    FormSpec,
    GlobalFlag,
    Needs,
    OptionError,
    PlanKey,
    hookimpl,
)

from .columns import CHUNKED, PACKED
from .columns import check_options as check_column_options

#: Loaded once one is imported (docs/plugins.md, "Loaded when needed"): their ragged arrays.
INTEROP_ABOUT = ("tensorflow", "torch", "pyarrow", "jax")


class RaggedArray(NamedTuple):
    """A ragged array of JAX: row ``i`` is ``values[row_splits[i]:row_splits[i + 1]]``.

    ``values`` holds the rows one after another along axis 0 (any inner dims), and
    ``row_splits`` (int32, or int64 with jax_enable_x64) has one entry per row plus one,
    starting at 0 and ending at ``len(values)``, as tf.RaggedTensor's ``row_splits`` and a
    torch jagged tensor's ``offsets()``. ``to(x, "jax")`` gives one for a ragged ``x``, and
    ``to(pair, target)`` converts one as a ragged array.
    """

    values: Any
    row_splits: Any


#: The dotted path of :class:`RaggedArray`, among the jax plugin's array types.
RAGGED_TYPE = f"{__name__}.RaggedArray"

RAGGED = "ragged"
#: The row splits are int32 (absent: int64).
SPLITS32 = "splits32"
#: The offsets do not start at 0 (a sliced Arrow list array): they are shifted, one copy.
SPLITS_BASE = "splits_base"
#: The offsets are not 64-byte aligned: tensorflow and jax take them only as a copy.
SPLITS_UNALIGNED = "splits_unaligned"
#: An Arrow list array with null rows, or nulls among its values: no ragged array holds them.
NULL_ROWS = "null_rows"
#: The result of a ragged="pad" request (the goal of such a call).
PADDED = "padded"

#: The options every edge here takes: a call may pass them for a whole container (and
#: ``nulls=`` reaches Arrow list columns of a table converted with it).
OPTIONS = ("ragged", "fill_value", "mask", "nulls")


def check_options(options: Mapping[str, Any]) -> None:
    """The values given for :data:`OPTIONS` (``nulls=`` and ``fill_value=`` as
    exchange/columns.py checks them), checked when the route is found (to() and explain()
    alike): a value of another type is refused, never read as true or false."""
    if "ragged" in options and options["ragged"] not in ("pad", None, False):
        raise OptionError(
            f"ragged={options['ragged']!r} is not 'pad', the one value it takes (a ragged "
            "array padded into a dense one, with fill_value=); leave it out to keep arrays "
            "ragged."
        )
    if "mask" in options and not _is_bool(options["mask"]):
        raise OptionError(
            f"mask={options['mask']!r} is not a bool: pass mask=True for a (padded, mask) "
            "pair with ragged='pad', or leave it out."
        )
    check_column_options(options)


def _is_bool(value: Any) -> bool:
    """True, False, None (not given), or a numpy bool (a scalar or a 0-d array)."""
    if value is None or isinstance(value, bool):
        return True
    kind = getattr(getattr(value, "dtype", None), "kind", None)
    return kind == "b" and getattr(value, "ndim", None) == 0


RAGGED_ADVICE = (
    "the array is ragged (rows of different lengths), which a dense array cannot hold: pass "
    "ragged='pad' with fill_value= for a padded array (mask=True for a (padded, mask) pair), "
    "or convert it to torch, tensorflow or jax, which hold ragged arrays"
)

#: The flags ragged arrays may carry, for the frameworks' specs (their refusals' advice).
FLAGS = (
    Flag(RAGGED, RAGGED_ADVICE, opaque=True),
    Flag(SPLITS_BASE, "the offsets do not start at 0 (a sliced list array), so they are "
         "shifted into a new buffer (one copy; copy=False refuses it)"),
    Flag(SPLITS_UNALIGNED, "the offsets are not 64-byte aligned, so tensorflow and jax get "
         "a copy of them (copy=False refuses it)"),
    Flag(NULL_ROWS, "the list array has null rows or null values, which no ragged array "
         "holds: replace null rows with empty lists first (arr.fill_null(pyarrow.scalar([], "
         "arr.type))) or drop them (arr.drop_null()), and fill null values (pyarrow.compute."
         "fill_null on the values)"),
)  # fmt: skip

#: Grad, and what no ragged edge here takes (the planner keeps other opaque flags off).
_OTHER = frozenset({"requires_grad", NULL_ROWS, CHUNKED})
_KEEPS = frozenset({RAGGED, SPLITS32})


def _x64() -> bool:
    from ..frameworks.jax import x64_enabled

    return x64_enabled()


def _x64_unloaded() -> bool:
    from ..frameworks.jax import x64_from_environment

    return x64_from_environment()


#: int64 row splits cross into jax only with x64 on (whatever the values' dtype, so the plan
#: cache keys every such route by the switch).
_X64_SPLITS = GlobalFlag(
    name="jax_enable_x64", read=_x64, module="jax", unloaded=_x64_unloaded,
    dtypes=frozenset(DTYPES),
    reason="jax_enable_x64 is off, so JAX holds no int64 row splits (they are narrowed to "
    "int32, one copy)",
)  # fmt: skip

SOURCES = ("torch", "tensorflow", "jax", "pyarrow")
TARGETS = ("torch", "tensorflow", "jax")
#: Where ragged="pad" pads to (dense arrays).
PAD_TARGETS = ("numpy", "torch", "jax", "tensorflow")


def _not_asked_to_copy(key: PlanKey) -> str | None:
    # This edge shares the values: copy=True (no memory shared) needs the copying edge.
    return "it shares the values, and copy=True asks for no shared memory" if key.copy else None


def _values_rules(target: str, **more: Any) -> Needs:
    """What an edge that shares the values into ``target`` (but copies the row splits) must
    check itself: the target's import rules (the planner applies them only to edges that
    share everything) and rule 8 (torch cannot mark memory read-only; jax and tensorflow
    never get memory read-only in its sense)."""
    host = target != "torch"
    # Booleans are bits in Arrow: unpacking them is a copy of the values (the copying edge).
    return Needs(
        flags=frozenset({RAGGED}), no_flags=_OTHER | {PACKED}, layouts=frozenset({"C"}),
        layout_reason="a non-contiguous ragged array shares no values (it is copied)",
        aligned=host, no_readonly=host, writable=not host, **more,
    )  # fmt: skip


def _loader(name: str, source: str, target: str) -> Callable[[], Callable[..., Any]]:
    def load() -> Callable[..., Any]:
        from .ragged_convert import loaded

        return loaded(name, source, target)

    return load


_SHARED_NOTE = "the values and row splits are shared (zero-copy)"
_SPLITS_NOTE = (
    "the values are shared; the row splits are copied (the one copy): narrowed to int32 for "
    "jax without jax_enable_x64, shifted to start at 0 (a sliced list array), or made 64-byte "
    "aligned"
)
_COPY_NOTE = "the values and row splits are copied into new (64-byte aligned) buffers"
_PAD_NOTE = (
    "ragged='pad': the rows are padded to the longest with fill_value= (one copy); mask=True "
    "gives (padded, mask), the mask True where a row has a value"
)


def _edge(name: str, source: str, target: str, fn: str, zero_copy: bool, accepts: Any,
          note: str, *, copies: str = "", readonly_result: bool | None = None,
          aligned_result: bool | None = None, **more: Any) -> ConverterSpec:  # fmt: skip
    return ConverterSpec(
        name=name, source=source, target=target, load=_loader(fn, source, target),
        zero_copy=zero_copy, accepts=accepts, note=note, options=OPTIONS, context=True,
        validate=check_options, **more,
        array=ArrayEdge(forms=frozenset({RAGGED}), copies=copies,
                        readonly_result=readonly_result, aligned_result=aligned_result),
    )  # fmt: skip


def _between(source: str, target: str) -> list[ConverterSpec]:
    """The edges of ragged arrays from ``source`` to ``target``."""
    edges = []
    if source != target:
        refused = _OTHER | {SPLITS_BASE, PACKED}
        if target != "torch":  # tensorflow and jax import aligned buffers only
            refused |= {SPLITS_UNALIGNED}
        shared = Needs(
            flags=frozenset({RAGGED}), layouts=frozenset({"C"}), no_flags=refused,
            no_readonly=target != "torch",
        )  # fmt: skip
        variants = [("", shared)]
        if target == "jax":  # int64 row splits only with x64 on
            variants = [
                (" (int32 splits)", replace(shared, flags=frozenset({RAGGED, SPLITS32}))),
                (" (int64 splits)",
                 replace(shared, no_flags=refused | {SPLITS32}, flag=_X64_SPLITS)),
            ]  # fmt: skip
        edges += [
            _edge(f"{source} ragged -> {target} (shared{suffix})", source, target, "shared",
                  True, accepts, _SHARED_NOTE, cost=2.0,
                  # The offsets are shared: unaligned ones stay so (into torch, which takes them).
                  keeps_flags=_KEEPS | {SPLITS_UNALIGNED})
            for suffix, accepts in variants
        ]  # fmt: skip
        edges.append(
            _edge(f"{source} ragged -> {target} (row splits copied)", source, target,
                  "splits_copied", False,
                  _values_rules(target, extra=_not_asked_to_copy), _SPLITS_NOTE,
                  keeps_flags=_KEEPS, cost=3.0, copies="the row splits",
                  # The values keep their alignment (checked for jax and tensorflow).
                  aligned_result=None if target != "torch" else False)
        )  # fmt: skip
    name = f"{source} ragged copy" if source == target else f"{source} ragged -> {target} (copied)"
    edges.append(
        _edge(name, source, target, "copied", False,
              Needs(flags=frozenset({RAGGED}), no_flags=_OTHER), _COPY_NOTE,
              keeps_flags=_KEEPS, cost=5.0)
    )  # fmt: skip
    return edges


#: What an Arrow list array's describe() may say of its row splits, which the edges into
#: Arrow keep (Arrow takes offsets that start past 0, at any address).
_ARROW_KEEPS = _KEEPS | {SPLITS_BASE, SPLITS_UNALIGNED}
_ARROW_SHARED_NOTE = (
    "the values and row splits are shared (zero-copy): List for int32 row splits, LargeList "
    "for int64"
)
_ARROW_COPY_NOTE = "the values and row splits are copied into buffers Arrow allocates"
_COMBINE_NOTE = "the chunks are joined into one list array (the one copy)"


def _into_arrow(source: str) -> list[ConverterSpec]:
    """The edges of ragged arrays from ``source`` into Arrow list arrays."""
    edges = []
    if source != "pyarrow":
        # Booleans are bits in Arrow: their values are copied (the edges below).
        shared = Needs(
            flags=frozenset({RAGGED}), layouts=frozenset({"C"}), no_flags=_OTHER | {PACKED},
            no_dtypes=frozenset({"bool"}), dtype_reason="Arrow holds booleans one bit each",
        )  # fmt: skip
        edges.append(
            _edge(f"{source} ragged -> pyarrow (shared)", source, "pyarrow", "shared", True,
                  shared, _ARROW_SHARED_NOTE, keeps_flags=_ARROW_KEEPS, cost=3.0,
                  # The values cross through a numpy view, read-only but for torch's.
                  readonly_result=source != "torch")
        )  # fmt: skip
    name = "pyarrow ragged copy" if source == "pyarrow" else f"{source} ragged -> pyarrow (copied)"
    plain = Needs(flags=frozenset({RAGGED}), no_flags=_OTHER, no_dtypes=frozenset({"bool"}))
    bits = Needs(flags=frozenset({RAGGED}), no_flags=_OTHER, only_dtypes=frozenset({"bool"}))
    edges += [
        _edge(name, source, "pyarrow", "copied", False, plain, _ARROW_COPY_NOTE,
              keeps_flags=_KEEPS, cost=5.0),
        _edge(f"{name} (booleans into bits)", source, "pyarrow", "copied", False, bits,
              _ARROW_COPY_NOTE, keeps_flags=_KEEPS, adds_flags=frozenset({PACKED}),
              cost=5.0),
    ]  # fmt: skip
    return edges


def _combine() -> ConverterSpec:
    """A chunked Arrow list column joined into one list array: one copy, after which the
    edges above share it (the values of booleans stay bits)."""
    return _edge(
        "combine Arrow list chunks", "pyarrow", "pyarrow", "combined", False,
        Needs(flags=frozenset({RAGGED, CHUNKED}), no_flags=_OTHER - {CHUNKED, NULL_ROWS}),
        _COMBINE_NOTE, keeps_flags=_KEEPS | {PACKED, NULL_ROWS}, cost=4.0,
    )  # fmt: skip


def _convert(name: str) -> Callable[..., Any]:
    """``ragged_convert.<name>``, imported at its first call (that module imports the
    frameworks; this one must not)."""
    found: list[Callable[..., Any]] = []

    def call(*args: Any) -> Any:
        if not found:
            from . import ragged_convert

            found.append(getattr(ragged_convert, name))
        return found[0](*args)

    return call


def _torch_data_ptr(t: Any) -> int:
    """A jagged tensor's first row's first value (its own data_ptr() is 0)."""
    values, offsets = t.values(), t.offsets()
    base = int(offsets[0]) if len(offsets) else 0
    return int(values.data_ptr()) + base * values[:1].numel() * values.element_size()


def _tf_data_ptr(rt: Any) -> int:
    from ..frameworks.tensorflow import data_ptr

    return data_ptr(rt.values)


def _jax_data_ptr(pair: RaggedArray) -> int:
    return int(pair.values.unsafe_buffer_pointer())


@hookimpl
def interop_forms() -> list[FormSpec]:
    """The ragged arrays of torch (jagged nested tensors), TensorFlow (tf.RaggedTensor) and
    JAX (:class:`RaggedArray`), each described and keyed with its row splits checked."""
    from .examples import ragged_form

    def form(framework: str, types: tuple[str, ...], **functions: Any) -> FormSpec:
        return FormSpec(
            name=RAGGED, framework=framework, types=types, flags=FLAGS,
            examples=ragged_form(framework), **functions,
        )  # fmt: skip

    return [
        form(
            "torch", ("torch.nested._internal.nested_tensor.NestedTensor",),
            describe=_convert("torch_describe"), key=_convert("torch_key"),
            aligned_key=_convert("torch_aligned_key"), data_ptr=_torch_data_ptr,
        ),
        form(
            "tensorflow", ("tensorflow.RaggedTensor",), describe=_convert("tf_describe"),
            key=_convert("tf_key"), data_ptr=_tf_data_ptr,
        ),
        form(
            "jax", (RAGGED_TYPE,), describe=_convert("jax_describe"), key=_convert("jax_key"),
            data_ptr=_jax_data_ptr,
        ),
        # Arrow's list arrays are Arrays, ChunkedArrays and columns of a table: told apart
        # per object (by type), Arrow's own key raising on them.
        form(
            "pyarrow", ("pyarrow.Array", "pyarrow.ChunkedArray"),
            test=_convert("arrow_is_ragged"), describe=_convert("arrow_describe"),
            key=_convert("arrow_key"), aligned_key=_convert("arrow_aligned_key"),
            data_ptr=_convert("arrow_data_ptr"),
        ),
    ]  # fmt: skip


@hookimpl
def interop_converters() -> list[ConverterSpec]:
    """Ragged arrays between torch, tensorflow, jax, and into and out of Arrow; padding on
    request."""
    edges = [e for s in SOURCES for t in TARGETS for e in _between(s, t)]
    edges += [e for s in SOURCES for e in _into_arrow(s)]
    edges.append(_combine())
    edges += [
        _edge(f"{source} ragged padded (ragged='pad') into {target}", source, target, "padded",
              False, Needs(flags=frozenset({RAGGED}), no_flags=_OTHER), _PAD_NOTE,
              opt_in="ragged", adds_flags=frozenset({PADDED}), cost=5.0,
              copies="the rows, padded to the longest")
        for source in SOURCES for target in PAD_TARGETS
    ]  # fmt: skip
    # A dense array in a call that asks ragged="pad" (a batch of ragged and dense arrays):
    # it is already what the call asks for, so it passes as it is, in the target.
    edges += [
        _edge("not ragged (ragged='pad' passes it as it is)", target, target, "as_is", True,
              Needs(no_flags=frozenset({RAGGED})), "", opt_in="ragged",
              adds_flags=frozenset({PADDED}), cost=0.1, devices=frozenset({"cpu", "cuda"}))
        for target in PAD_TARGETS
    ]  # fmt: skip
    return edges
