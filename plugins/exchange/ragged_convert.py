"""Ragged arrays, the functions: what the edges declared in :mod:`.ragged` run, and how the
framework plugins describe and key their ragged arrays (they call in here on those only).

A ragged array is read as its parts: ``values`` (the rows one after another along axis 0),
``offsets`` (one per row plus one) and, for a non-contiguous torch jagged tensor, ``lengths``.
Each part crosses frameworks through the router (``ctx.to``), so every import rule of the
target applies to it; a part that should be shared is asked for with ``copy=False``, so a
share that turns out impossible fails the edge (a BufferError: the router re-plans) instead
of copying unseen. Imports the frameworks inside the functions.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from interop_core.plugin import (
    ALIGNMENT,
    CPU,
    CallContext,
    ConversionError,
    InvalidArrayError,
    OptionError,
    TensorInfo,
)

from ..frameworks.numpy import aligned_empty
from .columns import CHUNKED, PACKED
from .ragged import (
    NULL_ROWS,
    RAGGED,
    SPLITS32,
    SPLITS_BASE,
    SPLITS_UNALIGNED,
    RaggedArray,
)

_INT32_MAX = 2**31 - 1


# -- describing and keying (the ragged form's functions) ----------------------------------


def _flags(splits32: bool, base: bool = False, unaligned: bool = False,
           *more: str) -> frozenset[str]:  # fmt: skip
    found = {RAGGED, *more}
    if splits32:
        found.add(SPLITS32)
    if base:
        found.add(SPLITS_BASE)
    if unaligned:
        found.add(SPLITS_UNALIGNED)
    return frozenset(found)


def check_splits(
    offsets: Any, count: int, what: str, advice: str, lengths: Any = None, exact: bool = False
) -> None:
    """The one check of a ragged array's row splits (offsets), before anything reads the
    rows: every describe() and warm-path key of a ragged array calls it, so no edge, no
    padding and no framework meets offsets it has not passed.

    ``offsets`` (numpy, one per row plus one) must be int32 or int64, start at 0 or past it
    (``exact``: at 0), never decrease, and end within the ``count`` values (``exact``: at
    ``count``, as TensorFlow's and RaggedArray's row splits do). With ``lengths`` (a torch
    jagged tensor that is not contiguous: row ``i`` is ``lengths[i]`` values from
    ``offsets[i]``), each row must lie within the values instead. Vectorised: ~10 us for
    16,384 rows. Raises InvalidArrayError naming the first row that is wrong."""
    import numpy as np

    if offsets.ndim != 1 or not len(offsets) or offsets.dtype not in (np.int32, np.int64):
        raise InvalidArrayError(
            f"Cannot convert {what}: its row splits are {offsets.dtype} of shape "
            f"{offsets.shape}, and row splits are a 1-d int32 or int64 array of one entry per "
            f"row plus one.\n{advice}"
        )
    rows = len(offsets) - 1
    first, last = int(offsets[0]), int(offsets[-1])
    bad = ""
    if lengths is not None:
        bad = _check_lengths(offsets, lengths, count)
    elif first < 0 or (exact and first):
        bad = f"row 0 starts at offset {first}" + (", not 0" if exact and first > 0 else "")
    elif last > count or (exact and last != count):
        bad = (
            f"row {rows - 1} ends at offset {last}, and the values hold {count}" if rows
            else f"it has no rows, and its one offset is {last}, past its {count} values"
        )  # fmt: skip
    elif rows > 1:
        down = offsets[1:] < offsets[:-1]
        if down.any():
            i = int(down.argmax())
            bad = (f"row {i} runs from offset {int(offsets[i])} to {int(offsets[i + 1])}, "
                   "backwards (the offsets decrease)")  # fmt: skip
    if bad:
        rule = (
            f"start at 0, never decrease and end at {count}" if exact
            else f"start at 0 or past it, never decrease and end within the {count} values"
        )  # fmt: skip
        rule = f"Row splits (offsets) {rule}"
        if lengths is not None:
            rule = (
                f"Each row (offsets[i], lengths[i]) holds 0 values or more, from an offset of "
                f"0 or more, and ends within the {count} values"
            )
        raise InvalidArrayError(
            f"Cannot convert {what}: its row splits are not valid: {bad}. {rule}; these are "
            f"refused before anything reads the rows.\n{advice}"
        )


def _check_lengths(offsets: Any, lengths: Any, count: int) -> str:
    """What is wrong with the rows of a non-contiguous jagged tensor ("" for nothing)."""
    import numpy as np

    rows = len(offsets) - 1
    if lengths.ndim != 1 or len(lengths) != rows or lengths.dtype.kind not in "iu":
        return f"its lengths are {lengths.dtype} of shape {lengths.shape}, for {rows} rows"
    starts = offsets[:-1].astype(np.int64)
    sizes = lengths.astype(np.int64)
    wrong = (starts < 0) | (sizes < 0) | (starts > count - sizes)  # (no overflow)
    if not wrong.any():
        return ""
    i = int(wrong.argmax())
    return f"row {i} is {int(sizes[i])} values from offset {int(starts[i])}"


_TORCH_ADVICE = (
    "Build it from valid offsets: torch.nested.nested_tensor_from_jagged(values, offsets) "
    "with offsets from 0 to len(values), never decreasing (torch does not check them)."
)
_TF_ADVICE = (
    "Build it with tf.RaggedTensor.from_row_splits(values, row_splits) and validate=True "
    "(the default), which checks them."
)
_JAX_ADVICE = (
    "Build the RaggedArray from row splits that start at 0, never decrease and end at len(values)."
)
_ARROW_ADVICE = (
    "Rebuild it from valid offsets (pyarrow.ListArray.from_arrays(offsets, values) checks "
    "them), or find what wrote these: arr.validate(full=True) says what Arrow finds wrong."
)


def _host_ints(t: Any) -> Any:
    """A torch integer tensor as numpy (a view on the CPU; a copy from another device)."""
    return (t if t.device.type == "cpu" else t.cpu()).numpy()


def _torch_checked(t: Any) -> tuple[Any, Any, Any, Any]:
    """(values, offsets, lengths, the offsets as numpy) of a jagged tensor, checked."""
    values, offsets, lengths = _torch_parts(t)
    host = _host_ints(offsets)
    check_splits(
        host, values.shape[0] if values.dim() else 0, "this torch jagged tensor",
        _TORCH_ADVICE, None if lengths is None else _host_ints(lengths),
    )  # fmt: skip
    return values, offsets, lengths, host


def _torch_parts(t: Any) -> tuple[Any, Any, Any]:
    """(values, offsets, lengths) of a jagged tensor; the attributes, not the methods:
    ``values()`` is an autograd view op (~90 us), ``_values`` the tensor it views."""
    try:
        return t._values, t._offsets, t._lengths
    except AttributeError:  # a torch that renamed them: the public methods
        return t.values(), t.offsets(), t.lengths()


def torch_check(t: Any) -> None:
    """Refuse a jagged tensor no ragged edge holds: a ragged dimension other than 1 (torch's
    plugin refuses nested tensors of the strided layout, which are no NestedTensor)."""
    if getattr(t, "_ragged_idx", 1) != 1:
        raise ConversionError(
            f"Cannot convert this torch jagged tensor: its ragged dimension is "
            f"{t._ragged_idx}, and only a ragged dimension 1 (rows of different lengths) "
            "converts.\nTranspose it so that dimension 1 is the ragged one."
        )


def torch_describe(t: Any) -> TensorInfo:
    """A torch jagged nested tensor as a ragged array (its values' dtype, device, shape)."""
    from ..frameworks.torch import dtype_name

    torch_check(t)
    values, offsets, lengths, host = _torch_checked(t)
    base = int(host[0])
    contiguous = lengths is None and values.is_contiguous()
    first = values.data_ptr() + base * values[:1].numel() * values.element_size()
    flags = _flags(
        str(offsets.dtype) == "torch.int32", bool(base), offsets.data_ptr() % ALIGNMENT != 0,
        *(("requires_grad",) if t.requires_grad else ()),
    )  # fmt: skip
    return TensorInfo(
        "torch", dtype_name(values.dtype), _torch_device(values), tuple(values.shape),
        "C" if contiguous else "strided", False, first % ALIGNMENT == 0, flags,
    )  # fmt: skip


def _torch_device(x: Any) -> Any:
    from interop_core.plugin import Device

    return Device(x.device.type, x.device.index or 0)


def torch_key(t: Any, aligned: bool = False) -> Any:
    """Warm-path key of a jagged tensor (with the values' alignment when ``aligned``); its
    row splits checked (:func:`check_splits`)."""
    values, offsets, lengths, host = _torch_checked(t)
    base = int(host[0])
    k: tuple[Any, ...] = (
        RAGGED, values.dtype, values.get_device(), t.requires_grad, offsets.dtype,
        lengths is None and values.is_contiguous(), bool(base),
        offsets.data_ptr() % ALIGNMENT == 0, t.layout, getattr(t, "_ragged_idx", 1),
    )  # fmt: skip
    if aligned:
        first = values.data_ptr() + base * values[:1].numel() * values.element_size()
        k += (first % ALIGNMENT == 0,)
    return k


def torch_aligned_key(t: Any) -> Any:
    """:func:`torch_key` with the values' alignment."""
    return torch_key(t, aligned=True)


def tf_check(rt: Any) -> None:
    """Refuse a tf.RaggedTensor of ragged_rank > 1 (rows of rows of different lengths)."""
    if rt.ragged_rank != 1:
        raise ConversionError(
            f"Cannot convert a tf.RaggedTensor of ragged_rank {rt.ragged_rank}: only "
            "ragged_rank 1 (one ragged dimension) converts.\nConvert its parts instead "
            "(rt.values is a ragged array of one rank less, rt.row_splits its row splits), "
            "or pad it: to(rt, target, ragged='pad', fill_value=...) after "
            "rt.merge_dims(0, 1), or rt.to_tensor()."
        )


def _tf_checked(rt: Any) -> None:
    """Check the row splits of an eager tf.RaggedTensor (a symbolic one has none to read:
    its flag refuses it)."""
    splits = rt.row_splits
    read = getattr(splits, "_numpy", None) or getattr(splits, "numpy", None)
    if read is None:
        return
    values = rt.values
    count = int(values.shape[0]) if values.shape.rank else 0
    check_splits(read(), count, "this tf.RaggedTensor", _TF_ADVICE, exact=True)


def tf_describe(rt: Any) -> TensorInfo:
    """A tf.RaggedTensor (ragged_rank 1) as a ragged array (its row splits checked)."""
    from ..frameworks.tensorflow import describe

    tf_check(rt)
    _tf_checked(rt)
    info = describe(rt.values)
    flags = info.flags | _flags(rt.row_splits.dtype.name == "int32")
    return info._replace(flags=flags)


def tf_key(rt: Any) -> Any:
    """Warm-path key of a tf.RaggedTensor (its row splits checked)."""
    _tf_checked(rt)
    values = rt.values
    return (RAGGED, rt.ragged_rank, rt.row_splits.dtype, values.dtype, values.device)


def _check_pair(pair: RaggedArray) -> None:
    """Refuse a :class:`RaggedArray` no ragged array can be: parts other than jax arrays,
    row splits not 1-d int32/int64 from 0 to ``len(values)``, never decreasing. Read
    through a numpy view (indexing a jax.Array costs ~1 ms; the view ~3 us): the warm path's
    key checks too."""
    import numpy as np

    values, splits = pair
    jax = sys.modules.get("jax")
    if jax is None or not isinstance(values, jax.Array) or not isinstance(splits, jax.Array):
        raise ConversionError(
            f"Cannot convert this RaggedArray: it holds {type(values).__name__} values and "
            f"{type(splits).__name__} row splits, and a RaggedArray holds jax arrays.\nBuild "
            "it from jax arrays (jax.numpy.asarray), or convert the parts one by one."
        )
    if splits.ndim != 1 or str(splits.dtype) not in ("int32", "int64") or not len(splits):
        raise InvalidArrayError(
            f"This RaggedArray's row splits are {splits.dtype} of shape {splits.shape}: row "
            "splits are a 1-d int32 or int64 array of one entry per row plus one."
        )
    if values.ndim == 0:
        raise InvalidArrayError(
            "Cannot convert this RaggedArray: its values are 0-d, and a RaggedArray's values "
            "hold its rows one after another along axis 0.\n" + _JAX_ADVICE
        )
    check_splits(np.asarray(splits), values.shape[0], "this RaggedArray", _JAX_ADVICE,
                 exact=True)  # fmt: skip


def jax_describe(pair: RaggedArray) -> TensorInfo:
    """A :class:`RaggedArray` of jax arrays (checked: see :func:`_check_pair`)."""
    from ..frameworks.jax import describe

    _check_pair(pair)
    info = describe(pair.values)
    return info._replace(flags=info.flags | _flags(str(pair.row_splits.dtype) == "int32"))


def jax_key(pair: RaggedArray) -> Any:
    """Warm-path key of a :class:`RaggedArray` (checked: a bad one goes to the slow path,
    which says what is wrong)."""
    from ..frameworks.jax import key

    _check_pair(pair)
    return (RAGGED, key(pair.values), pair.row_splits.dtype)


_pa_list_ids: tuple[int, ...] = ()


def arrow_is_list(typ: Any) -> bool:
    """Whether an Arrow type is a list of variable length (List or LargeList), by id."""
    global _pa_list_ids
    if not _pa_list_ids:
        import pyarrow as pa

        _pa_list_ids = (pa.list_(pa.int8()).id, pa.large_list(pa.int8()).id)
    return typ.id in _pa_list_ids  # type: ignore[no-any-return]


def _arrow_data(obj: Any) -> Any:
    """The Array or ChunkedArray an ArrowColumn holds (or ``obj`` itself)."""
    return getattr(obj, "data", obj) if type(obj).__name__ == "ArrowColumn" else obj


def _arrow_chunks(obj: Any) -> list[Any]:
    data = _arrow_data(obj)
    return list(data.chunks) if hasattr(data, "chunks") else [data]


def _arrow_name(obj: Any) -> str:
    from ..frameworks.arrow import name_of

    return name_of(obj)


def arrow_element(obj: Any) -> tuple[str, tuple[int, ...]]:
    """(dtype, inner dims) of a list array's values; refused naming the column when no
    array holds them (strings, nested lists)."""
    from ..frameworks.arrow import element, why_not

    typ = _arrow_data(obj).type.value_type
    found = element(typ)
    if found is None:
        kind, advice = why_not(typ)
        if arrow_is_list(typ):
            kind, advice = (
                "lists of lists",
                "only one ragged dimension converts: flatten "
                "the inner lists first (pyarrow.compute.list_flatten)",
            )
        raise ConversionError(
            f"Cannot convert {_arrow_name(obj)}: it is a list array of {kind}, which no "
            f"array holds.\n{advice[0].upper()}{advice[1:]}."
        )
    return found


def _arrow_offsets(arr: Any) -> Any:
    """The offsets of one list Array as numpy (a view; the slice's own): ``len(arr) + 1``
    from its offsets buffer, which must hold them (an array imported through the C data
    interface may say a length its buffer does not hold)."""
    import numpy as np

    is32 = _is32(arr)
    width = 4 if is32 else 8
    buf = arr.buffers()[1]
    start, n = arr.offset * width, len(arr) + 1
    if buf is None and n == 1:  # no rows may come without an offsets buffer
        return np.zeros(1, np.int32 if is32 else np.int64)
    if buf is None or buf.size < start + n * width:
        raise InvalidArrayError(
            f"Cannot convert {_arrow_name(arr)}: it says {len(arr)} rows from row "
            f"{arr.offset}, and its offsets buffer holds {0 if buf is None else buf.size} "
            f"bytes, less than the {start + n * width} those need.\n{_ARROW_ADVICE}"
        )
    return np.frombuffer(buf, np.int32 if is32 else np.int64, n, start)


def _arrow_checked(arr: Any, name: Any = None) -> Any:
    """The offsets of one list Array (see :func:`_arrow_offsets`), checked against its
    values (:func:`check_splits`); ``name``: the column it is a chunk of, for messages."""
    offsets = _arrow_offsets(arr)
    check_splits(offsets, len(arr.values), _arrow_name(arr if name is None else name),
                 _ARROW_ADVICE)  # fmt: skip
    return offsets


def _arrow_offsets_address(arr: Any) -> int:
    itemsize = 4 if _is32(arr) else 8
    return int(arr.buffers()[1].address) + arr.offset * itemsize


def _arrow_values_address(arr: Any, base: int) -> int:
    from ..frameworks.arrow import address

    child = arr.values
    return address(child) + base * _row_bytes(child)


def _row_bytes(child: Any) -> int:
    from ..frameworks.arrow import element
    from ..frameworks.numpy import numpy_dtype

    found = element(child.type)
    if found is None or found[0] == "bool":
        return 0
    n = numpy_dtype(found[0]).itemsize
    for d in found[1]:
        n *= d
    return n


def _arrow_nulls(arr: Any, base: int, last: int) -> bool:
    """Null rows, or nulls among the rows' values, as the validity bitmaps say (never the
    recorded null counts alone: see frameworks/arrow.py's ``has_nulls``)."""
    from ..frameworks.arrow import has_nulls

    bufs = arr.buffers()  # the list's validity and offsets, then its values' buffers
    if all(b is None for b in (bufs[0], *bufs[2:-1])):  # no validity bitmap anywhere
        return False
    return has_nulls(arr) or has_nulls(arr.values.slice(base, last - base))


def arrow_describe(obj: Any) -> TensorInfo:
    """An Arrow List or LargeList array (or column) of numbers as a ragged array."""
    from ..frameworks.arrow import readonly

    dtype, dims = arrow_element(obj)
    chunks = _arrow_chunks(obj)
    if len(chunks) > 1:  # joined by one copy (the "combined" edge): all of them counts
        return _arrow_chunked(obj, chunks, dtype, dims)
    arr = chunks[0] if chunks else None
    if arr is None or not len(arr):  # no rows: its parts are made anew (see _parts)
        if arr is not None:
            _arrow_checked(arr, obj)
        flags = _flags(_is32(obj))
        return TensorInfo("pyarrow", dtype, CPU, (0, *dims), "C", False, True, flags)
    offsets = _arrow_checked(arr, obj)
    base, last = int(offsets[0]), int(offsets[-1])
    more = [NULL_ROWS] * _arrow_nulls(arr, base, last)
    if dtype == "bool":
        more.append(PACKED)
    flags = _flags(_is32(obj), bool(base), _arrow_offsets_address(arr) % ALIGNMENT != 0, *more)
    ro = bool(last > base) and dtype != "bool" and readonly(arr.values)
    aligned = _arrow_values_address(arr, base) % ALIGNMENT == 0
    return TensorInfo("pyarrow", dtype, CPU, (last - base, *dims), "C", ro, aligned, flags)


def _arrow_chunked(obj: Any, chunks: list[Any], dtype: str, dims: tuple[int, ...]) -> TensorInfo:
    """A list column in several chunks: its rows' values in all of them, null rows in any."""
    total, nulls = 0, False
    for arr in chunks:
        offsets = _arrow_checked(arr, obj)
        if len(arr):
            base, last = int(offsets[0]), int(offsets[-1])
            total += last - base
            nulls = nulls or _arrow_nulls(arr, base, last)
    more = [CHUNKED] + [NULL_ROWS] * nulls + [PACKED] * (dtype == "bool")
    aligned = arrow_data_ptr(obj) % ALIGNMENT == 0
    flags = _flags(_is32(obj), False, False, *more)
    return TensorInfo("pyarrow", dtype, CPU, (total, *dims), "C", False, aligned, flags)


def _is32(obj: Any) -> bool:
    import pyarrow as pa

    return bool(pa.types.is_list(_arrow_data(obj).type))


#: The Arrow plugin's module name: arrow_key() reads its functions from sys.modules (it is
#: loaded: it asks arrow_key), where an import statement would cost ~1 us a call.
_ARROW = __name__.rpartition(".")[0].rpartition(".")[0] + ".frameworks.arrow"


def arrow_key(obj: Any) -> Any:
    """Warm-path key of a list array: what :func:`arrow_describe` reads but the alignment
    and the shape (dtype, dims, read-only, flags), read straight off its buffers (describing
    it cost ~28 us a call). Never its type: a FixedSizeList's widths would grow the plan
    cache, one entry per width (the plan reads dtype, read-only and flags only)."""
    import numpy as np

    arrow = sys.modules[_ARROW]
    data = _arrow_data(obj)
    typ = data.type
    dtype, dims = arrow.element(typ.value_type)  # ragged(): it converts
    is32 = arrow_is_list(typ) and typ.id == _pa_list_ids[0]  # (the first fills the ids)
    if hasattr(data, "num_chunks"):  # a ChunkedArray
        count = data.num_chunks
        if count > 1:  # joined by a copy anyway: described whole, all chunks read
            info = arrow_describe(obj)
            return (RAGGED, dtype, len(dims), info.readonly, info.flags)
        arr = data.chunk(0) if count else None
    else:
        arr = data
    if arr is None:
        return (RAGGED, dtype, len(dims), False, _flags(is32))
    width = 4 if is32 else 8
    start = arr.offset * width
    bufs = arr.buffers()  # the list's validity and offsets, then its values' buffers
    buf, n = bufs[1], len(arr) + 1
    child = arr.values
    if buf is None or buf.size < start + n * width:  # none at all, or refused
        offsets = _arrow_offsets(arr)
    else:
        offsets = np.frombuffer(buf, np.int32 if is32 else np.int64, n, start)
    check_splits(offsets, len(child), _arrow_name(obj), _ARROW_ADVICE)
    if n == 1:
        return (RAGGED, dtype, len(dims), False, _flags(is32))
    base, last = int(offsets[0]), int(offsets[-1])
    nulls = any(b is not None for b in (bufs[0], *bufs[2:-1])) and _arrow_nulls(arr, base, last)
    more = [NULL_ROWS] * nulls + [PACKED] * (dtype == "bool")
    flags = _flags(is32, bool(base), (buf.address + start) % ALIGNMENT != 0, *more)
    ro = last > base and dtype != "bool" and arrow.readonly(child)
    return (RAGGED, dtype, len(dims), ro, flags)


def arrow_is_ragged(obj: Any) -> bool:
    """Whether an Arrow Array, ChunkedArray or column is a List or LargeList (the ragged
    form's test: of numbers, it converts; of anything else, describing it says why not)."""
    return arrow_is_list(_arrow_data(obj).type)


def arrow_aligned_key(obj: Any) -> Any:
    """:func:`arrow_key` plus whether the first value is 64-byte aligned."""
    return (*arrow_key(obj), arrow_data_ptr(obj) % ALIGNMENT == 0)


def arrow_data_ptr(obj: Any) -> int:
    """Address of a list array's first value (0 for none)."""
    chunks = _arrow_chunks(obj)
    if not chunks or not len(chunks[0]):
        return 0
    return _arrow_values_address(chunks[0], int(_arrow_offsets(chunks[0])[0]))


# -- reading a ragged array's parts ------------------------------------------------------


def _parts(source: str, obj: Any) -> tuple[Any, Any, Any]:
    """(values, offsets, lengths or None) in the source framework (numpy for Arrow: views
    of its buffers); values start at the first row's offset, which is 0 but for a sliced
    Arrow list array."""
    if source == "torch":
        return _torch_parts(obj)
    if source == "tensorflow":
        return obj.values, obj.row_splits, None
    if source == "jax":
        return obj.values, obj.row_splits, None
    from ..frameworks.arrow import raw

    chunks = _arrow_chunks(obj)
    # The edges refuse "chunked": no chunk is an empty ChunkedArray. An array of no rows
    # gets parts of its own (64-byte aligned, as JAX and TensorFlow take them).
    if len(chunks) != 1 or not len(chunks[0]):
        import numpy as np

        from ..frameworks.numpy import numpy_dtype

        dtype, dims = arrow_element(obj)
        splits = aligned_empty((1,), np.int32 if _is32(obj) else np.int64)
        splits[0] = 0
        return aligned_empty((0, *dims), numpy_dtype(dtype)), splits, None
    arr = chunks[0]
    values = raw(arr.values)
    if not values.size:  # rows all empty: no memory to share (and numpy's is not aligned)
        values = aligned_empty(values.shape, values.dtype)
    return values, _arrow_offsets(arr), None


def _host(source: str, obj: Any, ctx: CallContext) -> tuple[Any, Any, Any]:
    """The parts as numpy arrays (views where the source shares them)."""
    values, offsets, lengths = _parts(source, obj)
    if source == "pyarrow":
        return values, offsets, lengths
    to = ctx.to
    return (
        to(values, "numpy"),
        to(offsets, "numpy"),
        None if lengths is None else to(lengths, "numpy"),
    )


def _splits_dtype(dtype: Any, target: str) -> Any:
    """The row splits' dtype in ``target``: kept, but int64 narrowed to int32 for jax
    without jax_enable_x64 (JAX holds no int64 then)."""
    import numpy as np

    if target == "jax" and dtype == np.int64:
        from ..frameworks.jax import x64_enabled

        if not x64_enabled():
            return np.dtype(np.int32)
    return dtype


def _new_splits(lengths: Any, dtype: Any, target: str) -> Any:
    """Row splits for ``lengths`` in a new 64-byte aligned buffer (numpy)."""
    import numpy as np

    dtype = _splits_dtype(dtype, target)
    out = aligned_empty((len(lengths) + 1,), dtype)
    out[0] = 0
    total = int(lengths.sum(dtype=np.int64)) if len(lengths) else 0
    if dtype == np.int32 and total > _INT32_MAX:
        raise ConversionError(
            f"Cannot make int32 row splits for {total} values (more than 2**31 - 1).\n"
            "Enable jax_enable_x64 (jax.config.update('jax_enable_x64', True)) so JAX "
            "holds int64 row splits."
        )
    np.cumsum(lengths, out=out[1:], dtype=dtype)
    return out


def _lengths(offsets: Any, lengths: Any) -> Any:
    import numpy as np

    return np.diff(offsets) if lengths is None else lengths


def _gather(values: Any, offsets: Any, lengths: Any) -> Any:
    """The values of every row, one after another, in a new 64-byte aligned buffer."""
    import numpy as np

    n = len(offsets) - 1
    if lengths is None:  # contiguous rows: one block
        base, last = (int(offsets[0]), int(offsets[-1])) if n >= 0 else (0, 0)
        out = aligned_empty((last - base, *values.shape[1:]), values.dtype)
        np.copyto(out, values[base:last])
        return out
    starts = offsets[:-1].astype(np.int64)
    lengths = lengths.astype(np.int64)
    total = int(lengths.sum())
    ends = np.cumsum(lengths)
    index = np.arange(total, dtype=np.int64) + np.repeat(starts - (ends - lengths), lengths)
    out = aligned_empty((total, *values.shape[1:]), values.dtype)
    np.take(values, index, axis=0, out=out)
    return out


def _build(target: str, values: Any, splits: Any) -> Any:
    """The target's ragged array over ``values`` and ``splits`` (already its arrays)."""
    if target == "torch":
        import torch

        return torch.nested.nested_tensor_from_jagged(values, splits)
    if target == "tensorflow":
        import tensorflow as tf

        return tf.RaggedTensor.from_row_splits(values, splits, validate=False)
    if target == "pyarrow":
        return _arrow_list(values, splits)
    return RaggedArray(values, splits)


def _arrow_list(values: Any, splits: Any) -> Any:
    """A List (int32 offsets) or LargeList (int64) array over the Arrow arrays ``values``
    and ``splits``: their buffers, no copy (the offsets may start past 0: Arrow reads a
    sliced list array so)."""
    import pyarrow as pa

    kind = pa.list_ if splits.type == pa.int32() else pa.large_list
    offsets = splits.buffers()[1]
    if splits.offset:  # a slice of an offsets array: the buffer from its first entry
        offsets = offsets.slice(splits.offset * splits.type.bit_width // 8)
    rows = len(splits) - 1
    return pa.Array.from_buffers(kind(values.type), rows, [None, offsets], children=[values])


def _shareable(values: Any, source: str) -> Any:
    """Arrow's values as a writable numpy alias (the edges refuse memory Arrow holds
    read-only, so the alias never reaches protected memory)."""
    if source != "pyarrow":
        return values
    from .columns import writable

    return writable(values)


# -- the edges --------------------------------------------------------------------------


def shared(source: str, target: str) -> Callable[[Any, CallContext], Any]:
    """Values and offsets shared (dtype kept; the values sliced to the rows' end)."""

    def convert(obj: Any, ctx: CallContext) -> Any:
        values, offsets, _ = _parts(source, obj)
        if source in ("torch", "pyarrow"):
            last = int(offsets[-1])
            if values.shape[0] != last:
                values = values[:last]  # a view: TF and JAX want exactly the rows' values
        to = ctx.to
        return _build(
            target, to(_shareable(values, source), target, copy=False),
            to(_shareable(offsets, source), target, copy=False),
        )  # fmt: skip

    return convert


def splits_copied(source: str, target: str) -> Callable[[Any, CallContext], Any]:
    """Values shared, offsets made anew (shifted to 0, narrowed for jax, aligned)."""

    def convert(obj: Any, ctx: CallContext) -> Any:
        values, offsets, _ = _parts(source, obj)
        host = offsets if source == "pyarrow" else ctx.to(offsets, "numpy")
        base, last = int(host[0]), int(host[-1])
        if base or values.shape[0] != last:
            values = values[base:last]
        splits = _new_splits(_lengths(host, None), host.dtype, target)
        to = ctx.to
        return _build(
            target, to(_shareable(values, source), target, copy=False), to(splits, target)
        )

    return convert


def copied(source: str, target: str) -> Callable[[Any, CallContext], Any]:
    """Values and offsets copied into new aligned buffers (rows made contiguous)."""

    def convert(obj: Any, ctx: CallContext) -> Any:
        values, offsets, lengths = _host(source, obj, ctx)
        out = _gather(values, offsets, lengths)
        splits = _new_splits(_lengths(offsets, lengths), offsets.dtype, target)
        return _build(target, ctx.to(out, target), ctx.to(splits, target))

    return convert


def fill_scalar(value: Any, dtype: Any) -> Any:
    """``fill_value`` as a scalar of ``dtype``, checked as a table column's is (a value the
    dtype cannot hold exactly is refused: values never change silently)."""
    from .columns import fill_scalar as checked

    return checked(value, dtype, "the ragged array")


def _padding(shape: tuple[int, ...], dtype: Any) -> Any:
    """The padded array's buffer (64-byte aligned); one the machine cannot hold is refused
    saying how large it would be (the row splits are checked: the rows are as long as
    they say)."""
    try:
        return aligned_empty(shape, dtype)
    except MemoryError as exc:
        size = dtype.itemsize
        for d in shape:
            size *= d
        raise ConversionError(
            f"Cannot pad this ragged array: {shape[0]} rows padded to the longest, "
            f"{shape[1]} values, need {size:,} bytes, which could not be allocated.\nConvert "
            "it as a ragged array instead (to torch, tensorflow or jax), or pad it in parts."
        ) from exc


def padded(source: str, target: str) -> Callable[[Any, CallContext], Any]:
    """ragged="pad": the rows padded to the longest with fill_value= (and the mask)."""

    def convert(obj: Any, ctx: CallContext) -> Any:
        import numpy as np

        mode = ctx.option("ragged")
        if mode != "pad":
            raise OptionError(f"ragged={mode!r} is not 'pad' (the only way to make a ragged "
                              "array dense).")  # fmt: skip
        if "fill_value" not in ctx.options:
            raise OptionError(
                "ragged='pad' needs fill_value=: the value the padding holds, e.g. "
                "fill_value=0 (mask=True also gives a mask, True where a row has a value)."
            )
        values, offsets, lengths = _host(source, obj, ctx)
        fill = fill_scalar(ctx.options["fill_value"], values.dtype)
        rows = _lengths(offsets, lengths).astype(np.int64)
        n, width = len(rows), int(rows.max()) if len(rows) else 0
        out = _padding((n, width, *values.shape[1:]), values.dtype)
        out[...] = fill
        mask = np.arange(width) < rows[:, None]
        out[mask] = _gather(values, offsets, lengths)
        result = ctx.to(out, target, device=ctx.device)
        if not ctx.option("mask"):
            return result
        held = aligned_empty(mask.shape, np.bool_)
        np.copyto(held, mask)
        return (result, ctx.to(held, target, device=ctx.device))

    return convert


def combined(source: str, target: str) -> Callable[[Any, CallContext], Any]:
    """A chunked Arrow list column joined into one list array (the one copy)."""

    def convert(obj: Any, ctx: CallContext) -> Any:
        return _arrow_data(obj).combine_chunks()

    return convert


def as_is(source: str, target: str) -> Callable[[Any, CallContext], Any]:
    """A dense array in a ragged="pad" call: passed as it is."""

    def convert(obj: Any, ctx: CallContext) -> Any:
        return obj

    return convert


def loaded(name: str, source: str, target: str) -> Callable[[Any, CallContext], Any]:
    """The converter ``name`` of this module for the edge ``source`` -> ``target``."""
    make: Callable[[str, str], Callable[[Any, CallContext], Any]] = getattr(
        sys.modules[__name__], name
    )
    return make(source, target)
