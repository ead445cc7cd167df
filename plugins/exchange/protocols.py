"""Array protocols: objects of libraries no plugin knows, converted through what they speak.

Each protocol is a source-only node of the route graph (``target=False``, detected by
``claims``, asked in this order only when no framework's ``array_types`` match):

1. ``dlpack``: ``__dlpack__`` + ``__dlpack_device__``, imported zero-copy by each consumer's
   own ``from_dlpack`` (as the Array API's ``from_dlpack`` does). Described by reading the
   DLTensor of an exported capsule, so no framework is imported to describe it.
2. ``cuda_array_interface``: ``__cuda_array_interface__``, imported by torch on CUDA.
3. ``arrow_capsule``: the Arrow PyCapsule interface (``__arrow_c_array__``,
   ``__arrow_c_stream__``): tables as dicts of columns, columns with their nulls (the
   module exchange/arrow_capsule.py). Before the host protocols below, which read values
   only (an object speaking both would lose its nulls through them).
4. ``array_interface``: ``__array_interface__``, through numpy.
5. ``buffer``: the buffer protocol (not bytes or str: those are text far more often than
   arrays, and a bytes leaf in a container must pass through unchanged), through numpy.
6. ``array_like``: ``__array__``, through numpy; last, because only calling it tells
   whether it copies.

A producer is asked exactly once per conversion. Its answer may change between calls (a
hostile or buggy producer can describe an aligned int32 buffer, then hand over an unaligned
int64 one; PIL builds a new buffer on each ``__array_interface__`` access), and frameworks
crash on what they did not expect. So each protocol's ``snapshot`` asks once and holds the
answer in an object of this module (a :class:`DLPackSnapshot` with its one capsule, an
:class:`InterfaceSnapshot` with its one dict, a ``memoryview``, an
:class:`ArrayLikeSnapshot` with the one array ``__array__`` gave); the router describes,
checks and converts that object, never the producer again. What a producer declares is
checked (:func:`interop_core.kit.buffers.check_memory`) before any framework sees it.

A producer may copy where a framework would not (PIL, a mixed-dtype pandas DataFrame that
builds a new array on each ``__array__`` call). The snapshot tells from the one answer: the
memory is new when nothing but the answer refers to the object that owns it (reference
counts), and the object is flagged ``fresh``; the edges come in a zero-copy variant and copy
variants chosen by that flag, so ``explain()`` tells the truth and ``copy=True`` never shares
memory.

scipy.sparse arrays are not protocols: the "scipy" framework plugin owns them.
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from interop_core.plugin import (
    ALIGNMENT,
    CPU,
    DTYPES,
    ITEMSIZE,
    VARIANT,
    ArrayEdge,
    Casting,
    ConverterSpec,
    Detection,
    Device,
    Flag,
    FrameworkSpec,
    InvalidArrayError,
    Needs,
    PlanKey,
    Reason,
    TensorInfo,
    c_strides,
    classify_layout,
    hookimpl,
)

from ..frameworks.numpy import ML_DTYPES, aligned_copy
from ..frameworks.numpy import astype as numpy_astype
from ..frameworks.numpy import describe as describe_ndarray
from . import arrow_capsule

# The readers (interop_core.plugin's, from kit/buffers.py) are imported by the functions
# that read: this plugin loads on every first call, most of which meet no protocol object.
if TYPE_CHECKING:
    from interop_core.plugin import DLPackInfo, InterfaceInfo

#: Flag: the producer builds new memory on every access (its "zero-copy" export copies).
FRESH = "fresh"
#: Flag: the DLPack producer exports only legacy (pre-1.0) capsules, which cannot say
#: whether the memory is read-only: numpy marks what it imports from them read-only.
LEGACY = "legacy_dlpack"
#: Flag: C-contiguous, but size-1 dims carry strides other than the row-major ones (JAX
#: would import those as a column-major layout that later exports copy).
ODD_STRIDES = "odd_unit_strides"
#: Flag: the DLPack capsule names no deleter (the spec allows it); JAX aborts the
#: interpreter when it frees an array imported from one, so JAX never takes such a capsule.
NO_DELETER = "no_dlpack_deleter"

_ML = frozenset(ML_DTYPES)


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
    if base is None or not (size.isascii() and size.isdigit()):
        return f"typestr {typestr!r}"
    name = "bool" if (base, size) == ("bool", "1") else f"{base}{int(size) * 8}"
    if name not in ITEMSIZE:  # float128, a 2-byte bool, ...
        return f"typestr {typestr!r}"
    if order not in ("|", "=", _NATIVE) and ITEMSIZE[name] > 1:
        return f"{name} (non-native byte order)"
    return name


_SIGNED, _UNSIGNED = frozenset("bhilqn"), frozenset("BHILQNP")


def format_dtype(fmt: str, itemsize: int) -> str:
    """Canonical dtype of a buffer-protocol (struct) format with its item size; none where
    the size the format means is not the item size the exporter gives (numpy reads the
    format, a framework handed the other size reads past the memory)."""
    code, order = fmt.lstrip("@=<>!"), fmt[:1]
    size = _format_size(fmt)
    if size is None:
        return f"buffer format {fmt!r}"
    if size != itemsize:
        return f"buffer format {fmt!r} with itemsize {itemsize}"
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


def _format_size(fmt: str) -> int | None:
    """The bytes of one item of struct format ``fmt`` (PEP 3118's "Zf"/"Zd" complex too);
    None for what the struct module cannot size."""
    found = _FORMAT_SIZES.get(fmt)
    if found is None:
        code = fmt.lstrip("@=<>!")
        twice = code in ("Zf", "Zd")  # complex: two of its floats
        found = -1
        # ctypes says "<P" for void*, which the struct module sizes only natively ("P").
        for form in (fmt, code):
            try:
                found = struct.calcsize(form.replace("Z", "")) * (2 if twice else 1)
                break
            except (struct.error, ValueError, TypeError):
                continue
        if len(_FORMAT_SIZES) < 256:
            _FORMAT_SIZES[fmt] = found
    return None if found < 0 else found


_FORMAT_SIZES: dict[str, int] = {}


def _itemsize(dtype: str, fallback: int) -> int:
    return ITEMSIZE.get(dtype) or max(fallback, 1)


def _layout(shape: tuple[int, ...], strides: tuple[int, ...] | None, itemsize: int) -> str:
    """Layout class from byte strides (None: C-contiguous, as the protocols define it)."""
    return "C" if strides is None else classify_layout(shape, strides, itemsize)


# -- 1. DLPack ------------------------------------------------------------------------------


def _speaks_dlpack(obj: Any) -> bool:
    cls = type(obj)
    return hasattr(cls, "__dlpack__") and hasattr(cls, "__dlpack_device__") and _plain(obj)


class DLPackSnapshot:
    """The one capsule a DLPack producer exported, and what its DLTensor says.

    Consumers call ``__dlpack__`` on it as on any producer and get that capsule (once: a
    capsule is consumed by its importer); ``__dlpack_device__`` answers from the capsule.
    """

    __slots__ = ("_capsule", "address", "described", "device", "owner")

    def __init__(self, capsule: Any, info: DLPackInfo, described: TensorInfo, owner: Any):
        self._capsule = capsule
        self.address = info.address
        self.described = described
        self.device = (info.device_type, info.device.index)
        #: The producer, kept alive while the capsule may point into it.
        self.owner = owner

    def __dlpack__(self, **_: Any) -> Any:
        capsule, self._capsule = self._capsule, None
        if capsule is None:
            raise BufferError("this DLPack snapshot's capsule was consumed already")
        return capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device


def snapshot_dlpack(x: Any) -> DLPackSnapshot:
    """Export one capsule of ``x`` (versioned when it can), check and describe it."""
    from interop_core.plugin import export_capsule, read_capsule

    if isinstance(x, DLPackSnapshot):
        return x
    capsule = export_capsule(x)
    info = read_capsule(capsule)
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
    if not info.has_deleter:
        flags.add(NO_DELETER)
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
    return DLPackSnapshot(capsule, info, described, x)


def describe_dlpack(x: Any) -> TensorInfo:
    """Describe a DLPack producer from the DLTensor of one exported capsule."""
    return snapshot_dlpack(x).described


def dlpack_key(x: Any) -> Any:
    """Warm-path key: the whole PlanKey (read from the snapshot)."""
    return snapshot_dlpack(x).described.plan_key()


def dlpack_ptr(x: Any) -> int:
    """Address of the first element (data + byte_offset of an exported capsule)."""
    return snapshot_dlpack(x).address


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
    from .dlpack import tf_importer

    from_dlpack = tf_importer()

    def convert(x: Any) -> Any:
        return from_dlpack(x.__dlpack__())  # the snapshot's (legacy) capsule

    return convert


_NP_ML = "numpy cannot import bfloat16/float8 through DLPack"


def _versioned(key: PlanKey) -> str | None:
    if LEGACY in key.flags:
        return Reason("handles only versioned (DLPack 1.x) capsules", VARIANT)
    return None


_LEGACY_ONLY = "{} imports only legacy (pre-1.0) capsules; numpy or torch takes this one first"
_NO_DELETER = (
    "the capsule names no deleter: JAX aborts the interpreter when it frees such an array, "
    "so numpy or torch takes it first"
)


def _legacy_only(consumer: str) -> Callable[[PlanKey], str | None]:
    """JAX and TF import only legacy capsules (and JAX never one without a deleter)."""
    reason = _LEGACY_ONLY.format(consumer)

    def accepts(key: PlanKey) -> str | None:
        if LEGACY not in key.flags:
            return reason
        if consumer == "JAX":
            return _NO_DELETER if NO_DELETER in key.flags else _canonical_strides(key)
        return None

    return accepts


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


class InterfaceSnapshot:
    """The one ``__array_interface__`` (or ``__cuda_array_interface__``) dict a producer
    gave, its memory resolved to an object that stays put, and what it says. Made as one of
    the two subclasses below, each speaking its protocol only, so that detection (by type)
    finds the protocol the snapshot was read through."""

    __slots__ = ("address", "described", "device", "interface", "owner")

    def __init__(
        self, interface: dict[str, Any], address: int, described: TensorInfo, owner: Any,
        device: Any = None,
    ) -> None:  # fmt: skip
        self.interface = interface
        self.address = address
        self.described = described
        self.owner = owner
        self.device = device


class ArrayInterfaceSnapshot(InterfaceSnapshot):
    """An :class:`InterfaceSnapshot` of ``__array_interface__``."""

    __slots__ = ()

    @property
    def __array_interface__(self) -> dict[str, Any]:
        return self.interface


class CudaInterfaceSnapshot(InterfaceSnapshot):
    """An :class:`InterfaceSnapshot` of ``__cuda_array_interface__``."""

    __slots__ = ()

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return self.interface


class _CudaDevice:
    """The device index a CUDA producer gave (CuPy's ``.device.id``), read once."""

    __slots__ = ("id",)

    def __init__(self, index: int) -> None:
        self.id = index


def snapshot_cai(x: Any) -> InterfaceSnapshot:
    """Read ``x.__cuda_array_interface__`` once, check and describe it."""
    from interop_core.plugin import read_interface

    if isinstance(x, CudaInterfaceSnapshot):
        return x
    d = _interface_dict(x, "__cuda_array_interface__")
    info = read_interface(d)
    device = _cuda_device(x)
    described = _interface_info("cuda_array_interface", info, device)
    return CudaInterfaceSnapshot(d, info.address, described, x, _CudaDevice(device.index))


def describe_cai(x: Any) -> TensorInfo:
    """Describe a ``__cuda_array_interface__`` object from its dict (no framework needed)."""
    return snapshot_cai(x).described


def cai_key(x: Any) -> Any:
    """Warm-path key: the whole PlanKey."""
    return snapshot_cai(x).described.plan_key()


def cai_ptr(x: Any) -> int:
    """The device pointer of the first element."""
    return snapshot_cai(x).address


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


def _interface_dict(x: Any, attr: str) -> dict[str, Any]:
    d = getattr(x, attr)
    if not isinstance(d, dict):
        raise InvalidArrayError(
            f"{type(x).__name__}.{attr} is a {type(d).__name__}, not a dict: it describes no array."
        )
    return d


def _only_held_here(obj: Any, others: int) -> bool:
    """Whether nothing holds ``obj`` but the caller's name for it and ``others`` references."""
    # getrefcount counts the caller's name, this function's parameter and its own argument.
    return sys.getrefcount(obj) <= others + 3


def snapshot_array_interface(x: Any) -> InterfaceSnapshot:
    """Read ``x.__array_interface__`` once, check and describe it.

    The memory stays what that one dict names: a buffer the object exports itself
    (``data`` None) is held as a memoryview, exported once.
    """
    from interop_core.plugin import read_interface

    if isinstance(x, ArrayInterfaceSnapshot):
        return x
    d = _interface_dict(x, "__array_interface__")
    data = d.get("data")
    # New memory: a buffer object that only this dict, itself held by no one but us, holds
    # (PIL builds both on every access). A producer that keeps either shares its memory.
    fresh = (
        data is not None and not isinstance(data, tuple) and _only_held_here(d, 0)
        and _only_held_here(data, 1)
    )  # fmt: skip
    if data is None:
        d = {**d, "data": memoryview(x)}
    del data
    info = read_interface(d)
    flags = frozenset({FRESH}) if fresh else frozenset()
    described = _interface_info("array_interface", info, CPU, flags)
    return ArrayInterfaceSnapshot(d, info.address, described, x)


def describe_array_interface(x: Any) -> TensorInfo:
    """Describe an ``__array_interface__`` object from its dict (asked once)."""
    return snapshot_array_interface(x).described


def array_interface_key(x: Any) -> Any:
    """Warm-path key: the whole PlanKey."""
    return snapshot_array_interface(x).described.plan_key()


def array_interface_ptr(x: Any) -> int:
    """Address of the first element; TypeError when the dict's memory is new each time."""
    snap = snapshot_array_interface(x)
    if FRESH in snap.described.flags:
        raise TypeError("the object builds a new buffer on every access: no stable address")
    return snap.address


def _load_asarray_interface() -> Any:
    import numpy as np

    # The snapshot speaks only __array_interface__, so numpy reads exactly the dict that
    # was described; the array keeps the snapshot (and so the memory) alive.
    return np.asarray


# -- 4. the buffer protocol -------------------------------------------------------------------


def _speaks_buffer(obj: Any) -> bool:
    from interop_core.plugin import has_buffer

    # What memoryview(obj) needs, asked of the type: detection caches the answer per type,
    # so it must not depend on one object's state (a closed mmap, a released memoryview),
    # and asking exports nothing.
    return _plain(obj) and has_buffer(obj)


def snapshot_buffer(x: Any) -> memoryview:
    """One buffer export of ``x``, held as a memoryview (what is described and converted)."""
    return x if type(x) is memoryview else memoryview(x)


def describe_buffer(x: Any) -> TensorInfo:
    """Describe a buffer-protocol object from one buffer export (released at once)."""
    from interop_core.plugin import read_buffer

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
    from interop_core.plugin import read_buffer

    return read_buffer(x).address


def _load_asarray_buffer() -> Any:
    import numpy as np

    return np.asarray  # the snapshot is a memoryview: it keeps the export (and x) alive


# -- 5. __array__ -------------------------------------------------------------------------------


def _speaks_array(obj: Any) -> bool:
    return hasattr(type(obj), "__array__") and _plain(obj)


class ArrayLikeSnapshot:
    """The one numpy array ``__array__`` returned, and whether it is new memory."""

    __slots__ = ("array", "described", "owner")

    def __init__(self, array: Any, described: TensorInfo, owner: Any) -> None:
        self.array = array
        self.described = described
        self.owner = owner

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        return self.array


def _new_memory(array: Any) -> bool:
    """Whether ``array`` (just returned by ``__array__``) and every base it rests on are
    held by nothing else: then no one else can see its memory."""
    import numpy as np

    if not _only_held_here(array, 1):  # the caller's name for it, and ours
        return False
    base = array.base
    while base is not None:
        if not _only_held_here(base, 1):  # the array below it holds it, and our name
            return False
        base = base.base if isinstance(base, np.ndarray) else None
    return True


def snapshot_array_like(x: Any) -> ArrayLikeSnapshot:
    """Call ``x.__array__`` once (through numpy) and describe what it returned."""
    if isinstance(x, ArrayLikeSnapshot):
        return x
    import numpy as np

    array = np.asarray(x)
    fresh = _new_memory(array)
    described = describe_ndarray(array)._replace(
        framework="array_like", flags=frozenset({FRESH}) if fresh else frozenset()
    )
    return ArrayLikeSnapshot(array, described, x)


def describe_array_like(x: Any) -> TensorInfo:
    """Describe an ``__array__`` object (called once)."""
    return snapshot_array_like(x).described


def array_like_key(x: Any) -> Any:
    """Warm-path key: the whole PlanKey."""
    return snapshot_array_like(x).described.plan_key()


def array_like_ptr(x: Any) -> int:
    """Address of the first element; TypeError when ``__array__`` copies on every call."""
    snap = snapshot_array_like(x)
    if FRESH in snap.described.flags:
        raise TypeError("__array__ makes a new array on every call: no stable address")
    return int(snap.array.ctypes.data)


def _load_asarray() -> Any:
    import numpy as np

    return np.asarray


# scipy.sparse arrays are the "scipy" framework's (plugins/frameworks/scipy.py), declared by
# type with ``module="scipy.sparse"``: detection looks only once scipy.sparse is imported, so
# importing scipy (which does not import scipy.sparse) never makes detection import it.


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
            return None if key.layout != "C" else Reason(f"handles only {what}", VARIANT)

        return accepts
    what = f"{'read-only' if readonly else 'writable'} C-contiguous memory"

    def accepts_c(key: PlanKey) -> str | None:
        if key.layout == "C" and key.readonly == readonly:
            return None
        return Reason(f"handles only {what}", VARIANT)

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
            zero_copy=False, cost=cost + 1.0,
            accepts=Needs(flags=fresh, extra=_fresh_variant(True, False)),
            array=ArrayEdge(aligned_result=False),
        ),
        ConverterSpec(
            name=f"{name} (new read-only memory each call)", source=source, target="numpy",
            load=load, zero_copy=False, cost=cost + 1.0,
            note="the numpy result is read-only",
            accepts=Needs(flags=fresh, extra=_fresh_variant(True, True)),
            array=ArrayEdge(readonly_result=True, aligned_result=False, memory_note=True),
        ),
        ConverterSpec(
            name=f"{name} + C-order copy (new memory each call)", source=source,
            target="numpy", load=_reordered(load), zero_copy=False, cost=cost + 2.0,
            note="the new array is not in C order: it is copied a second time, into C order",
            accepts=Needs(flags=fresh, extra=_fresh_variant(False, None)),
        ),
    ]  # fmt: skip


# -- dtype= ------------------------------------------------------------------------------------
# ``to(x, target, dtype=...)`` casts a protocol's array before the route, through numpy,
# into new 64-byte aligned memory, given back as the protocol's own snapshot: the route
# after the cast is the one explain() plans (from the same protocol, same flags).


def _cast(x: Any, described: TensorInfo, dtype: str) -> Any:
    """The values numpy reads from ``x`` (a snapshot ``described`` so), cast to ``dtype``."""
    import numpy as np

    if described.dtype not in DTYPES:  # numpy would read the format the route refused
        raise ValueError(f"its {described.dtype} is no dtype a cast starts from")
    if dtype in _ML:
        raise ValueError(
            f"{dtype} cannot be said through the buffer protocol or an array interface "
            "(numpy exports it as raw bytes); convert to torch or JAX first, then cast"
        )
    return numpy_astype(np.asarray(x), dtype)


def _astype_buffer(x: Any, dtype: str) -> memoryview:
    return memoryview(_cast(x, describe_buffer(x), dtype))


def _astype_interface(x: InterfaceSnapshot, dtype: str) -> InterfaceSnapshot:
    from interop_core.plugin import read_interface

    out = _cast(x, x.described, dtype)
    d = out.__array_interface__
    info = read_interface(d)
    described = _interface_info("array_interface", info, CPU, x.described.flags)
    return ArrayInterfaceSnapshot(d, info.address, described, out)


def _astype_array_like(x: ArrayLikeSnapshot, dtype: str) -> ArrayLikeSnapshot:
    out = _cast(x, x.described, dtype)
    described = describe_ndarray(out)._replace(framework="array_like", flags=x.described.flags)
    return ArrayLikeSnapshot(out, described, out)


_SOURCE: dict[str, Any] = {"dtypes": frozenset(DTYPES), "target": False, "example": None}
#: The protocols read through numpy cast (dtype=) into what they can say: not bfloat16 or
#: float8 (a cast to those happens after the route, in the target).
_THROUGH_NUMPY: dict[str, Any] = {**_SOURCE, "dtypes": frozenset(DTYPES) - _ML}


#: An interface dict with a "mask" entry: its values without the mask would be wrong.
_MASKED = Flag(
    "masked",
    "the interface has a mask, which no converter reads: the masked entries would come back "
    "as values (convert the data and the mask separately)",
    opaque=True,
)


@hookimpl
def interop_frameworks() -> list[FrameworkSpec]:
    """The protocols, in the order detection asks them."""
    return [
        FrameworkSpec(
            name="dlpack", array_types=(), describe=describe_dlpack, key=dlpack_key,
            snapshot=snapshot_dlpack, data_ptr=dlpack_ptr, **_SOURCE,
            detection=Detection(_speaks_dlpack, "__dlpack__ with __dlpack_device__"),
        ),
        FrameworkSpec(
            name="cuda_array_interface", array_types=(), describe=describe_cai, key=cai_key,
            snapshot=snapshot_cai, data_ptr=cai_ptr, flags=(_MASKED,), **_SOURCE,
            detection=Detection(_speaks_cai, "__cuda_array_interface__"),
        ),
        # Before the host protocols that read values only: Arrow carries nulls and tables.
        arrow_capsule.framework(),
        FrameworkSpec(
            name="array_interface", array_types=(), describe=describe_array_interface,
            key=array_interface_key, snapshot=snapshot_array_interface,
            data_ptr=array_interface_ptr, flags=(_MASKED,), **_THROUGH_NUMPY,
            detection=Detection(_speaks_array_interface, "__array_interface__"),
            casting=Casting(astype=_astype_interface),
        ),
        FrameworkSpec(
            name="buffer", array_types=(), describe=describe_buffer, key=buffer_key,
            snapshot=snapshot_buffer, data_ptr=buffer_ptr, **_THROUGH_NUMPY,
            detection=Detection(
                _speaks_buffer,
                "the buffer protocol (not bytes: wrap them in memoryview())",
            ),
            casting=Casting(astype=_astype_buffer),
        ),
        FrameworkSpec(
            name="array_like", array_types=(), describe=describe_array_like,
            key=array_like_key, snapshot=snapshot_array_like, data_ptr=array_like_ptr,
            **_THROUGH_NUMPY, detection=Detection(_speaks_array, "__array__"),
            casting=Casting(astype=_astype_array_like),
        ),
    ]  # fmt: skip


_BOTH = frozenset({"cpu", "cuda"})


@hookimpl
def interop_converters() -> list[ConverterSpec]:
    """Each protocol's imports: DLPack into every consumer, the rest through numpy."""
    return [
        # DLPack: each consumer's own importer, zero-copy (what the consumer imports safely,
        # its framework declares and the planner checks: FrameworkSpec.rules.imports, switches).
        ConverterSpec(
            name="np.from_dlpack", source="dlpack", target="numpy",
            load=_load_np_from_dlpack, zero_copy=True, cost=1.0,
            accepts=Needs(no_dtypes=_ML, dtype_reason=_NP_ML, extra=_versioned),
        ),
        ConverterSpec(
            name="np.from_dlpack (legacy capsule)", source="dlpack", target="numpy",
            load=_load_np_from_dlpack, zero_copy=True, cost=1.0,
            note="numpy marks what it imports from a legacy (pre-1.0) DLPack capsule read-only",
            accepts=Needs(no_dtypes=_ML, dtype_reason=_NP_ML, flags=frozenset({LEGACY})),
            array=ArrayEdge(readonly_result=True),
        ),
        ConverterSpec(
            name="torch.from_dlpack", source="dlpack", target="torch",
            load=_load_torch_from_dlpack, zero_copy=True, cost=2.0, devices=_BOTH,
        ),
        ConverterSpec(
            name="jax.dlpack.from_dlpack", source="dlpack", target="jax",
            load=_load_jax_from_dlpack, zero_copy=True, cost=30.0, devices=_BOTH,
            # JAX asks for a legacy capsule, which producers refuse for read-only memory.
            accepts=Needs(no_readonly=True, extra=_legacy_only("JAX")),
        ),
        ConverterSpec(
            name="tf from_dlpack(__dlpack__())", source="dlpack", target="tensorflow",
            # CPU only: TF's importer takes a capsule and no stream, so on a GPU it could
            # read before the producer's kernels finish.
            load=_load_tf_from_dlpack, zero_copy=True, cost=3.0,
            accepts=Needs(no_readonly=True, extra=_legacy_only("TensorFlow")),
        ),
        # __cuda_array_interface__: torch on CUDA.
        ConverterSpec(
            name="torch.as_tensor(device='cuda')", source="cuda_array_interface",
            target="torch", load=_load_torch_from_cai, zero_copy=True, cost=5.0,
            devices=frozenset({"cuda"}),
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
        *arrow_capsule.converters(),  # the Arrow PyCapsule interface: its column edges
    ]  # fmt: skip
