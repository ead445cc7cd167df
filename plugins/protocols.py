"""Array protocols: objects of libraries no plugin knows, converted through what they speak.

Each protocol is a source-only node of the route graph (``target=False``, detected by
``claims``, asked in this order only when no framework's ``array_types`` match):

1. ``dlpack``: ``__dlpack__`` + ``__dlpack_device__``, imported zero-copy by each consumer's
   own ``from_dlpack`` (as the Array API's ``from_dlpack`` does). Described by reading the
   DLTensor of an exported capsule, so no framework is imported to describe it.
2. ``cuda_array_interface``: ``__cuda_array_interface__``, imported by torch on CUDA.
3. ``array_interface``: ``__array_interface__``, through numpy.
4. ``buffer``: the buffer protocol (not bytes or str: those are text far more often than
   arrays, and a bytes leaf in a container must pass through unchanged), through numpy.
5. ``array_like``: ``__array__``, through numpy; last, because only calling it tells
   whether it copies.

A protocol producer may copy where a framework would not: PIL builds a new buffer on each
``__array_interface__`` access, a mixed-dtype pandas DataFrame a new array on each
``__array__`` call. ``describe`` finds out by asking twice (two results at different
addresses are copies) and flags the object ``fresh``; the edges come in a zero-copy variant
and copy variants chosen by that flag, so ``explain()`` tells the truth and ``copy=True``
never shares memory. Asking twice is the cost of being right: ``describe`` and ``key`` of
those two protocols call the producer twice.

scipy.sparse matrices are claimed too, only to say what to do instead (``.toarray()``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from interop_core import (
    ConverterSpec,
    Device,
    FrameworkSpec,
    NotAnArrayError,
    TensorInfo,
    hookimpl,
)
from interop_core.buffers import (
    DLPackInfo,
    InterfaceInfo,
    has_buffer,
    interface_data,
    read_buffer,
    read_dlpack,
    read_interface,
)
from interop_core.errors import VARIANT
from interop_core.predicates import Needs
from interop_core.specs import ALIGNMENT, CPU, DTYPES, ITEMSIZE, PlanKey, c_strides, classify_layout

from .jax import X64
from .numpy import ML_DTYPES, aligned_copy
from .numpy import describe as describe_ndarray

#: Flag: the producer builds new memory on every access (its "zero-copy" export copies).
FRESH = "fresh"
#: Flag: the DLPack producer exports only legacy (pre-1.0) capsules, which cannot say
#: whether the memory is read-only: numpy marks what it imports from them read-only.
LEGACY = "legacy_dlpack"
#: Flag: C-contiguous, but size-1 dims carry strides other than the row-major ones (JAX
#: would import those as a column-major layout that later exports copy).
ODD_STRIDES = "odd_unit_strides"

_ML = frozenset(ML_DTYPES)
_NOT_NEGATIVE = frozenset({"C", "F", "strided", "broadcast"})
_NEG = "torch cannot hold negative strides (and aborts the interpreter on them via DLPack)"
_TF_LAYOUT = "TensorFlow imports only C-contiguous buffers"
_JAX_LAYOUT = "JAX shares only C-contiguous buffers here (an F-order JAX array copies on export)"


# -- dtypes and layouts ---------------------------------------------------------------------

#: (DLDataTypeCode, bits) -> canonical dtype (lanes must be 1).
_DL_DTYPES = {
    (0, 8): "int8", (0, 16): "int16", (0, 32): "int32", (0, 64): "int64",
    (1, 8): "uint8", (1, 16): "uint16", (1, 32): "uint32", (1, 64): "uint64",
    (2, 16): "float16", (2, 32): "float32", (2, 64): "float64",
    (4, 16): "bfloat16", (5, 64): "complex64", (5, 128): "complex128", (6, 8): "bool",
    (10, 8): "float8_e4m3fn", (12, 8): "float8_e5m2",
}  # fmt: skip


def _dl_dtype(info: DLPackInfo) -> str:
    """Canonical dtype of a DLPack tensor (a descriptive non-canonical name otherwise)."""
    name = _DL_DTYPES.get((info.code, info.bits)) if info.lanes == 1 else None
    return name or f"dlpack dtype (code={info.code}, bits={info.bits}, lanes={info.lanes})"


_NATIVE = "<" if sys.byteorder == "little" else ">"
_TYPESTR_KINDS = {"b": "bool", "i": "int", "u": "uint", "f": "float", "c": "complex"}


def typestr_dtype(typestr: str) -> str:
    """Canonical dtype of an array-interface typestr ("<f4" -> "float32")."""
    order, kind, size = typestr[:1], typestr[1:2], typestr[2:]
    base = _TYPESTR_KINDS.get(kind)
    if base is None or not size.isdigit():
        return f"typestr {typestr!r}"
    name = "bool" if (base, size) == ("bool", "1") else f"{base}{int(size) * 8}"
    if name not in ITEMSIZE:  # float128, a 2-byte bool, ...
        return f"typestr {typestr!r}"
    if order not in ("|", "=", _NATIVE) and ITEMSIZE[name] > 1:
        return f"{name} (non-native byte order)"
    return name


_SIGNED, _UNSIGNED = frozenset("bhilqn"), frozenset("BHILQNP")


def format_dtype(fmt: str, itemsize: int) -> str:
    """Canonical dtype of a buffer-protocol (struct) format with its item size."""
    code, order = fmt.lstrip("@=<>!"), fmt[:1]
    name = None
    if code == "?":
        name = "bool"
    elif code in _SIGNED:
        name = f"int{itemsize * 8}"
    elif code in _UNSIGNED:
        name = f"uint{itemsize * 8}"
    elif code in ("e", "f", "d"):
        name = f"float{itemsize * 8}"
    elif code in ("Zf", "Zd"):
        name = f"complex{itemsize * 8}"
    if name is None or ITEMSIZE.get(name) != itemsize:
        return f"buffer format {fmt!r}"
    if order in ("<", ">", "!") and order != _NATIVE and itemsize > 1:
        return f"{name} (non-native byte order)"
    return name


def _itemsize(dtype: str, fallback: int) -> int:
    return ITEMSIZE.get(dtype) or max(fallback, 1)


def _layout(shape: tuple[int, ...], strides: tuple[int, ...] | None, itemsize: int) -> str:
    """Layout class from byte strides (None: C-contiguous, as the protocols define it)."""
    return "C" if strides is None else classify_layout(shape, strides, itemsize)


# -- 1. DLPack ------------------------------------------------------------------------------


def _speaks_dlpack(obj: Any) -> bool:
    cls = type(obj)
    return hasattr(cls, "__dlpack__") and hasattr(cls, "__dlpack_device__") and _plain(obj)


def _dl_describe(x: Any) -> tuple[TensorInfo, int]:
    info = read_dlpack(x)  # the capsule is dropped unconsumed: it frees itself
    dtype = _dl_dtype(info)
    itemsize = _itemsize(dtype, info.itemsize)
    canonical = c_strides(info.shape, itemsize)
    strides = None if info.strides is None else tuple(s * itemsize for s in info.strides)
    layout = _layout(info.shape, strides, itemsize)
    flags = set()
    if layout == "C" and strides is not None and strides != canonical:
        flags.add(ODD_STRIDES)
    if info.legacy:
        flags.add(LEGACY)
    described = TensorInfo(
        framework="dlpack",
        dtype=dtype,
        device=info.device,
        shape=info.shape,
        layout=layout,
        readonly=info.readonly,
        aligned=info.address % ALIGNMENT == 0,
        flags=frozenset(flags),
    )
    return described, info.address


def describe_dlpack(x: Any) -> TensorInfo:
    """Describe a DLPack producer from the DLTensor of one exported capsule."""
    return _dl_describe(x)[0]


def dlpack_key(x: Any) -> Any:
    """Warm-path key: the whole PlanKey (an export per call; alignment included)."""
    return _dl_describe(x)[0].plan_key()


def dlpack_ptr(x: Any) -> int:
    """Address of the first element (data + byte_offset of an exported capsule)."""
    return _dl_describe(x)[1]


def _load_np_from_dlpack() -> Any:
    import numpy as np

    return np.from_dlpack


def _load_torch_from_dlpack() -> Any:
    import torch

    return torch.from_dlpack


def _load_jax_from_dlpack() -> Any:
    import jax.dlpack

    return jax.dlpack.from_dlpack


def _load_tf_from_dlpack() -> Any:
    import tensorflow as tf

    from_dlpack = tf.experimental.dlpack.from_dlpack

    def convert(x: Any) -> Any:
        return from_dlpack(x.__dlpack__())  # TF's importer takes only legacy capsules

    return convert


_NP_ML = "numpy cannot import bfloat16/float8 through DLPack"


def _versioned(key: PlanKey) -> str | None:
    return f"{VARIANT} versioned (DLPack 1.x) capsules" if LEGACY in key.flags else None


def _canonical_strides(key: PlanKey) -> str | None:
    if ODD_STRIDES in key.flags:
        return (
            "its size-1 dims carry odd strides, which JAX would keep as a column-major "
            "layout (later exports would copy); numpy re-strides them on the way"
        )
    return None


# -- 2. __cuda_array_interface__ --------------------------------------------------------------


def _speaks_cai(obj: Any) -> bool:
    return _has(obj, "__cuda_array_interface__")


def _interface_info(
    framework: str, info: InterfaceInfo, device: Device, flags: frozenset[str] = frozenset()
) -> TensorInfo:
    """A TensorInfo from what an (array or CUDA) interface dict says."""
    dtype = typestr_dtype(info.typestr)
    itemsize = _itemsize(dtype, info.itemsize or 1)
    if info.masked:
        flags |= {"masked"}
    return TensorInfo(
        framework, dtype, device, info.shape, _layout(info.shape, info.strides, itemsize),
        info.readonly, info.address % ALIGNMENT == 0, flags,
    )  # fmt: skip


def _cuda_device(x: Any) -> Device:
    # The interface carries no device index: CuPy says it as ``.device.id``; else cuda:0.
    index = getattr(getattr(x, "device", None), "id", None)
    return Device("cuda", index if isinstance(index, int) else 0)


def describe_cai(x: Any) -> TensorInfo:
    """Describe a ``__cuda_array_interface__`` object from its dict (no framework needed)."""
    info = read_interface(x.__cuda_array_interface__)
    return _interface_info("cuda_array_interface", info, _cuda_device(x))


def cai_key(x: Any) -> Any:
    """Warm-path key: the whole PlanKey."""
    return describe_cai(x).plan_key()


def cai_ptr(x: Any) -> int:
    """The device pointer of the first element."""
    return int(x.__cuda_array_interface__["data"][0])


def _load_torch_from_cai() -> Any:
    import torch

    as_tensor, cuda = torch.as_tensor, torch.cuda

    def convert(x: Any) -> Any:
        # The index the route planned for: "cuda" alone would mean torch's current device,
        # and torch moves (copies) memory that lives on another one.
        device = f"cuda:{_cuda_device(x).index}"
        stream = x.__cuda_array_interface__.get("stream")
        if stream is not None:  # version 3: the consumer waits for the producer's stream
            ready = cuda.Event()
            ready.record(cuda.ExternalStream(stream, device=device))
            cuda.current_stream(device).wait_event(ready)
        return as_tensor(x, device=device)

    return convert


# -- 3. __array_interface__ -------------------------------------------------------------------


def _speaks_array_interface(obj: Any) -> bool:
    return _has(obj, "__array_interface__")


def _ai_describe(x: Any) -> tuple[TensorInfo, int]:
    first = x.__array_interface__
    info = read_interface(first, x)
    fresh = False
    if first.get("data") is not None:
        # Ask again while the first answer is alive: a producer that builds a new buffer
        # per access (PIL's tobytes()) answers with another address.
        second = x.__array_interface__
        fresh = interface_data(second, x)[0] != info.address
        del second
    flags = frozenset({FRESH}) if fresh else frozenset()
    return _interface_info("array_interface", info, CPU, flags), info.address


def describe_array_interface(x: Any) -> TensorInfo:
    """Describe an ``__array_interface__`` object from its dict (asked twice: see module)."""
    return _ai_describe(x)[0]


def array_interface_key(x: Any) -> Any:
    """Warm-path key: the whole PlanKey."""
    return _ai_describe(x)[0].plan_key()


def array_interface_ptr(x: Any) -> int:
    """Address of the first element; TypeError when every access makes a new buffer."""
    info, address = _ai_describe(x)
    if FRESH in info.flags:
        raise TypeError("the object builds a new buffer on every access: no stable address")
    return address


class _Interface:
    """Carries an interface dict to numpy, keeping the object that owns the memory alive."""

    def __init__(self, d: dict[str, Any], owner: Any) -> None:
        self.__array_interface__ = d
        self.owner = owner


def _load_asarray_interface() -> Any:
    import numpy as np

    asarray = np.asarray

    def convert(x: Any) -> Any:
        # numpy prefers an object's buffer protocol to its __array_interface__; handing it
        # the dict alone makes it read what was described, whatever else the object speaks.
        d = x.__array_interface__
        if d.get("data") is None:  # the object itself exposes the buffer
            d = {**d, "data": x}
        return asarray(_Interface(d, x))

    return convert


# -- 4. the buffer protocol -------------------------------------------------------------------


def _speaks_buffer(obj: Any) -> bool:
    # What memoryview(obj) needs, asked of the type: detection caches the answer per type,
    # so it must not depend on one object's state (a closed mmap, a released memoryview),
    # and asking exports nothing.
    return _plain(obj) and has_buffer(obj)


def describe_buffer(x: Any) -> TensorInfo:
    """Describe a buffer-protocol object from one buffer export (released at once)."""
    buf = read_buffer(x)
    dtype = format_dtype(buf.format, buf.itemsize)
    return TensorInfo(
        framework="buffer",
        dtype=dtype,
        device=CPU,
        shape=buf.shape,
        layout=classify_layout(buf.shape, buf.strides, max(buf.itemsize, 1)),
        readonly=buf.readonly,
        aligned=buf.address % ALIGNMENT == 0,
    )


def buffer_key(x: Any) -> Any:
    """Warm-path key: the whole PlanKey."""
    return describe_buffer(x).plan_key()


def buffer_ptr(x: Any) -> int:
    """Address of the first element."""
    return read_buffer(x).address


def _load_asarray_buffer() -> Any:
    import numpy as np

    asarray = np.asarray

    def convert(x: Any) -> Any:
        return asarray(memoryview(x))  # the view keeps the export (and so x) alive

    return convert


# -- 5. __array__ -------------------------------------------------------------------------------


def _speaks_array(obj: Any) -> bool:
    return hasattr(type(obj), "__array__") and _plain(obj)


def _al_describe(x: Any) -> tuple[TensorInfo, int]:
    import numpy as np

    first = np.asarray(x)
    address = int(first.ctypes.data)
    # Only calling __array__ tells whether it copies: two calls that share memory return
    # the object's own memory (a pandas Series); two that do not, a new array each time
    # (a mixed-dtype DataFrame). Both arrays are alive, so their addresses cannot collide.
    fresh = int(np.asarray(x).ctypes.data) != address
    described = describe_ndarray(first)._replace(
        framework="array_like", flags=frozenset({FRESH}) if fresh else frozenset()
    )
    return described, address


def describe_array_like(x: Any) -> TensorInfo:
    """Describe an ``__array__`` object (calls it twice: see module)."""
    return _al_describe(x)[0]


def array_like_key(x: Any) -> Any:
    """Warm-path key: the whole PlanKey (two ``__array__`` calls)."""
    return _al_describe(x)[0].plan_key()


def array_like_ptr(x: Any) -> int:
    """Address of the first element; TypeError when ``__array__`` copies on every call."""
    info, address = _al_describe(x)
    if FRESH in info.flags:
        raise TypeError("__array__ makes a new array on every call: no stable address")
    return address


def _load_asarray() -> Any:
    import numpy as np

    return np.asarray


# -- 6. scipy.sparse: advice only -------------------------------------------------------------


def _is_sparse(obj: Any) -> bool:
    # Claimed rather than declared in array_types: resolving "scipy.sparse..." from an
    # imported scipy would import scipy.sparse (scipy loads submodules on attribute access),
    # and a sparse matrix exists only once scipy.sparse is imported.
    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and bool(sparse.issparse(obj))


def describe_sparse(x: Any) -> TensorInfo:
    """Never a TensorInfo: a sparse matrix has no dense buffer; says what to do instead."""
    kind = f"{type(x).__module__}.{type(x).__qualname__}"
    shape = "x".join(map(str, getattr(x, "shape", ()))) or "?"
    raise NotAnArrayError(
        f"Cannot convert a {kind} ({shape}, {getattr(x, 'nnz', '?')} stored values): a "
        "scipy.sparse matrix has no dense buffer to share. .toarray() gives a dense numpy "
        "array (then convert that); for a torch sparse tensor, build one from .tocoo(): "
        "c = m.tocoo(); torch.sparse_coo_tensor(numpy.vstack([c.row, c.col]), c.data, c.shape)."
    )


def _no_pointer(x: Any) -> int:
    raise TypeError(f"a {type(x).__qualname__} has no dense buffer")


# -- shared -------------------------------------------------------------------------------------


def _plain(obj: Any) -> bool:
    """Not text, not a class, and not a numpy scalar (numpy's plugin owns those it converts)."""
    if isinstance(obj, (str, bytes, type)):
        return False
    np = sys.modules.get("numpy")
    return np is None or not isinstance(obj, np.generic)


def _has(obj: Any, name: str) -> bool:
    """``name`` on the type (a property), or set on the instance; never on a class object.

    Detection caches the answer per type, so it must hold for the type: a class object
    whose class attribute is the interface would otherwise claim every class.
    """
    if not _plain(obj):
        return False
    return hasattr(type(obj), name) or name in getattr(obj, "__dict__", {})


def _not_fresh(reason: str) -> Callable[[PlanKey], str | None]:
    def accepts(key: PlanKey) -> str | None:
        return reason if FRESH in key.flags else None

    return accepts


def _fresh_variant(layout_c: bool, readonly: bool | None) -> Callable[[PlanKey], str | None]:
    """The copy variant for fresh memory of one layout class (and read-only, for C)."""
    if not layout_c:
        what = "memory not in C order"

        def accepts(key: PlanKey) -> str | None:
            return None if key.layout != "C" else f"{VARIANT} {what}"

        return accepts
    what = f"{'read-only' if readonly else 'writable'} C-contiguous memory"

    def accepts_c(key: PlanKey) -> str | None:
        if key.layout == "C" and key.readonly == readonly:
            return None
        return f"{VARIANT} {what}"

    return accepts_c


def _reordered(load: Callable[[], Callable[[Any], Any]]) -> Callable[[], Callable[[Any], Any]]:
    """``load``'s function followed by a C-order, 64-byte aligned copy."""

    def loader() -> Callable[[Any], Any]:
        convert = load()

        def reorder(x: Any) -> Any:
            return aligned_copy(convert(x))

        return reorder

    return loader


def _numpy_rows(
    source: str, load: Callable[[], Callable[[Any], Any]], name: str, copies: str, cost: float
) -> list[ConverterSpec]:
    """The zero-copy edge into numpy and its copy variants for producers that copy.

    A copy made by the producer keeps the producer's layout and read-only bit, which a
    copy edge cannot declare (the planner takes copies as C-contiguous and writable): C
    results come in a read-only and a writable variant, and others are copied once more
    into C order.
    """
    fresh = frozenset({FRESH})
    return [
        ConverterSpec(
            name=name, source=source, target="numpy", load=load, zero_copy=True, cost=cost,
            accepts=Needs(extra=_not_fresh(copies)),
        ),
        ConverterSpec(
            name=f"{name} (new memory each call)", source=source, target="numpy", load=load,
            zero_copy=False, cost=cost + 1.0, aligned_result=False,
            accepts=Needs(flags=fresh, extra=_fresh_variant(True, False)),
        ),
        ConverterSpec(
            name=f"{name} (new read-only memory each call)", source=source, target="numpy",
            load=load, zero_copy=False, cost=cost + 1.0, aligned_result=False,
            readonly_result=True, note="the numpy result is read-only", memory_note=True,
            accepts=Needs(flags=fresh, extra=_fresh_variant(True, True)),
        ),
        ConverterSpec(
            name=f"{name} + C-order copy (new memory each call)", source=source,
            target="numpy", load=_reordered(load), zero_copy=False, cost=cost + 2.0,
            note="the new array is not in C order: it is copied a second time, into C order",
            accepts=Needs(flags=fresh, extra=_fresh_variant(False, None)),
        ),
    ]  # fmt: skip


_SOURCE: dict[str, Any] = {"dtypes": frozenset(DTYPES), "target": False, "example": None}


@hookimpl
def interop_frameworks() -> list[FrameworkSpec]:
    """The protocols, in the order detection asks them, and scipy.sparse (advice only)."""
    return [
        FrameworkSpec(
            name="scipy.sparse", array_types=(), describe=describe_sparse,
            key=describe_sparse, data_ptr=_no_pointer, claims=_is_sparse,
            distribution="scipy", **_SOURCE,
        ),
        FrameworkSpec(
            name="dlpack", array_types=(), describe=describe_dlpack, key=dlpack_key,
            data_ptr=dlpack_ptr, claims=_speaks_dlpack,
            protocol="__dlpack__ with __dlpack_device__", **_SOURCE,
        ),
        FrameworkSpec(
            name="cuda_array_interface", array_types=(), describe=describe_cai, key=cai_key,
            data_ptr=cai_ptr, claims=_speaks_cai, protocol="__cuda_array_interface__",
            **_SOURCE,
        ),
        FrameworkSpec(
            name="array_interface", array_types=(), describe=describe_array_interface,
            key=array_interface_key, data_ptr=array_interface_ptr,
            claims=_speaks_array_interface, protocol="__array_interface__", **_SOURCE,
        ),
        FrameworkSpec(
            name="buffer", array_types=(), describe=describe_buffer, key=buffer_key,
            data_ptr=buffer_ptr, claims=_speaks_buffer,
            protocol="the buffer protocol (not bytes or str: wrap those in memoryview())",
            **_SOURCE,
        ),
        FrameworkSpec(
            name="array_like", array_types=(), describe=describe_array_like,
            key=array_like_key, data_ptr=array_like_ptr, claims=_speaks_array,
            protocol="__array__", **_SOURCE,
        ),
    ]  # fmt: skip


_BOTH = frozenset({"cpu", "cuda"})


@hookimpl
def interop_converters() -> list[ConverterSpec]:
    """Each protocol's imports: DLPack into every consumer, the rest through numpy."""
    return [
        # DLPack: each consumer's own importer, zero-copy.
        ConverterSpec(
            name="np.from_dlpack", source="dlpack", target="numpy",
            load=_load_np_from_dlpack, zero_copy=True, cost=1.0,
            accepts=Needs(no_dtypes=_ML, dtype_reason=_NP_ML, extra=_versioned),
        ),
        ConverterSpec(
            name="np.from_dlpack (legacy capsule)", source="dlpack", target="numpy",
            load=_load_np_from_dlpack, zero_copy=True, cost=1.0, readonly_result=True,
            note="numpy marks what it imports from a legacy (pre-1.0) DLPack capsule read-only",
            accepts=Needs(no_dtypes=_ML, dtype_reason=_NP_ML, flags=frozenset({LEGACY})),
        ),
        ConverterSpec(
            name="torch.from_dlpack", source="dlpack", target="torch",
            load=_load_torch_from_dlpack, zero_copy=True, cost=2.0, devices=_BOTH,
            accepts=Needs(layouts=_NOT_NEGATIVE, layout_reason=_NEG, writable=True),
        ),
        ConverterSpec(
            name="jax.dlpack.from_dlpack", source="dlpack", target="jax",
            load=_load_jax_from_dlpack, zero_copy=True, cost=30.0, devices=_BOTH,
            # JAX asks for a legacy capsule, which producers refuse for read-only memory.
            accepts=Needs(layouts=frozenset({"C"}), layout_reason=_JAX_LAYOUT, aligned=True,
                          no_readonly=True, flag=X64, extra=_canonical_strides),
        ),
        ConverterSpec(
            name="tf from_dlpack(__dlpack__())", source="dlpack", target="tensorflow",
            # CPU only: TF's importer takes a capsule and no stream, so on a GPU it could
            # read before the producer's kernels finish.
            load=_load_tf_from_dlpack, zero_copy=True, cost=3.0,
            accepts=Needs(layouts=frozenset({"C"}), layout_reason=_TF_LAYOUT, aligned=True,
                          no_readonly=True),
        ),
        # __cuda_array_interface__: torch on CUDA.
        ConverterSpec(
            name="torch.as_tensor(device='cuda')", source="cuda_array_interface",
            target="torch", load=_load_torch_from_cai, zero_copy=True, cost=5.0,
            devices=frozenset({"cuda"}),
            accepts=Needs(layouts=_NOT_NEGATIVE, layout_reason=_NEG, writable=True),
        ),
        # __array_interface__, the buffer protocol and __array__: through numpy.
        *_numpy_rows(
            "array_interface", _load_asarray_interface, "np.asarray(__array_interface__)",
            "the object builds a new buffer on every __array_interface__ access (as PIL "
            "does), so np.asarray copies", 2.0,
        ),
        ConverterSpec(
            name="np.asarray(memoryview)", source="buffer", target="numpy",
            load=_load_asarray_buffer, zero_copy=True, cost=1.0,
        ),
        *_numpy_rows(
            "array_like", _load_asarray, "np.asarray(__array__)",
            "__array__ returns a new array on every call (as a mixed-dtype pandas DataFrame "
            "does), so np.asarray copies", 2.0,
        ),
    ]  # fmt: skip
