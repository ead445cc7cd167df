"""Read an object's array description through the standard protocols, without any framework.

- DLPack: :func:`export_capsule` asks a producer for a capsule (versioned when it can);
  :func:`read_capsule` reads the DLTensor of a legacy or versioned capsule (address, i.e.
  data + byte_offset, device, shape, strides, dtype code/bits/lanes, read-only flag, legacy
  or not); :func:`capsule_address` reads only the address.
- The buffer protocol: :func:`has_buffer`, :func:`read_buffer` (address, shape, byte
  strides, format, itemsize, read-only).
- ``__array_interface__`` and ``__cuda_array_interface__`` dicts: :func:`read_interface`.
- :func:`protocol_view` and :func:`independent_data_ptr`: whichever of them an object speaks,
  as one :class:`ProtocolView` (what the conformance kit checks plugins against).

Standard library and ctypes only. The C API is called through ctypes prototypes of this
module's own: setting ``restype``/``argtypes`` on ``ctypes.pythonapi``'s shared function
objects would change them for every other user in the process. ``PYFUNCTYPE`` keeps the GIL
and raises the Python error a failing call sets. ``import interop_core`` does not import
this module; the plugins and the kit that read protocols do.
"""

from __future__ import annotations

import ctypes
import platform
import warnings
from operator import index
from typing import Any

from ..declare.errors import InvalidArrayError
from ..declare.records import NamedTuple
from ..declare.specs import Device, c_strides

__all__ = [
    "MAX_NDIM",
    "BufferInfo",
    "DLPackInfo",
    "InterfaceInfo",
    "ProtocolView",
    "capsule_address",
    "check_memory",
    "export_capsule",
    "has_buffer",
    "independent_data_ptr",
    "interface_data",
    "protocol_view",
    "read_buffer",
    "read_capsule",
    "read_dlpack",
    "read_interface",
]

# -- DLPack capsules -------------------------------------------------------------------------

_capsule_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_IsValid", ctypes.pythonapi)
)
_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi)
)


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _DLManagedTensor(ctypes.Structure):
    # DLPack 0.x: the tensor first, then the manager's context and deleter.
    _fields_ = [
        ("dl_tensor", _DLTensor),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
    ]


class _DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class _DLManagedTensorVersioned(ctypes.Structure):
    # DLPack 1.x: the version first, the tensor last (a legacy DLManagedTensor starts with
    # the tensor).
    _fields_ = [
        ("version", _DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", _DLTensor),
    ]


_VERSIONED, _LEGACY = b"dltensor_versioned", b"dltensor"
_DLPACK_READ_ONLY = 1  # DLPACK_FLAG_BITMASK_READ_ONLY

#: DLDeviceType -> Device kind. Host-visible kinds other than kDLCPU keep their own names;
#: a type not listed reads as "dldevice<N>".
_DL_DEVICES = {
    1: "cpu", 2: "cuda", 3: "cuda_host", 4: "opencl", 7: "vulkan", 8: "metal", 9: "vpi",
    10: "rocm", 11: "rocm_host", 12: "ext_dev", 13: "cuda_managed", 14: "oneapi",
    15: "webgpu", 16: "hexagon", 17: "maia",
}  # fmt: skip


class DLPackInfo(NamedTuple):
    """What a DLPack capsule says about its tensor (read before the capsule is dropped)."""

    #: Address of the first element: data + byte_offset.
    address: int
    device: Device
    shape: tuple[int, ...]
    #: In elements, as DLPack gives them; None: C-contiguous.
    strides: tuple[int, ...] | None
    #: DLDataType: type code (kDLInt, kDLFloat, ...), bits and lanes.
    code: int
    bits: int
    lanes: int
    #: The versioned capsule's read-only flag (False for legacy capsules: they cannot say).
    readonly: bool
    #: A legacy "dltensor" capsule (no version, no read-only flag).
    legacy: bool
    #: The capsule names a deleter. The spec allows NULL, but JAX aborts the interpreter
    #: when it frees an array imported from such a capsule.
    has_deleter: bool = True
    #: The DLDeviceType number (what ``__dlpack_device__`` answers first).
    device_type: int = 1

    @property
    def itemsize(self) -> int:
        """Bytes per element (bits x lanes / 8; 0 for sub-byte types)."""
        return self.bits * self.lanes // 8


def export_capsule(x: Any) -> Any:
    """A DLPack capsule of ``x``: a versioned one when the producer can, else legacy."""
    try:
        return x.__dlpack__(max_version=(1, 0))
    except TypeError:  # a producer older than DLPack 1.0 takes no max_version
        with warnings.catch_warnings():  # pyarrow warns that legacy capsules are deprecated
            warnings.simplefilter("ignore", DeprecationWarning)
            return x.__dlpack__()


def _dltensor(capsule: Any) -> tuple[_DLTensor, bool, bool, bool]:
    """The DLTensor of an unconsumed capsule, its read-only flag, whether it is legacy and
    whether it names a deleter."""
    if _capsule_is_valid(capsule, _VERSIONED):
        managed = _DLManagedTensorVersioned.from_address(_capsule_pointer(capsule, _VERSIONED))
        version = managed.version
        if version.major != 1:  # another major version may lay the struct out differently
            raise BufferError(f"DLPack version {version.major}.{version.minor} is not supported")
        readonly = bool(managed.flags & _DLPACK_READ_ONLY)
        return managed.dl_tensor, readonly, False, bool(managed.deleter)
    if _capsule_is_valid(capsule, _LEGACY):
        # A legacy capsule cannot say it is read-only; producers refuse read-only memory.
        legacy = _DLManagedTensor.from_address(_capsule_pointer(capsule, _LEGACY))
        return legacy.dl_tensor, False, True, bool(legacy.deleter)
    raise TypeError(f"{capsule!r} is not an unconsumed DLPack capsule")


def _address(tensor: _DLTensor) -> int:
    return (tensor.data or 0) + int(tensor.byte_offset)


def capsule_address(capsule: Any) -> int:
    """Address of the first element (data + byte_offset) of an unconsumed DLPack capsule."""
    return _address(_dltensor(capsule)[0])


#: The most dimensions a producer may declare (numpy's limit is 64; DLPack sets none).
MAX_NDIM = 64
#: Byte extents must stay below this: every framework indexes memory with int64.
_LIMIT = 1 << 63
#: No memory of a process lies at or past this address: user space has 47 bits on x86-64
#: (56 with 5-level paging), 48 or 52 on arm64 (CUDA's unified addresses lie within it).
#: A description reaching past it is corrupt, and frameworks handed one segfault.
_USER_SPACE = 1 << 57
#: arm64 carries pointer tags in the top byte (Android's heap, HWASan, MTE): ignored there.
_UNTAG = (1 << 56) - 1 if platform.machine().lower() in ("aarch64", "arm64") else (1 << 64) - 1


def check_memory(
    what: str,
    address: int,
    shape: tuple[int, ...],
    strides: tuple[int, ...] | None,
    itemsize: int,
    length: int | None = None,
) -> None:
    """Refuse a description no memory can match, before any framework reads it.

    ``strides`` in bytes (None: C-contiguous); ``length`` the bytes the exporter says it
    holds from ``address``, when it says. InvalidArrayError names what is wrong: frameworks
    handed such descriptions read past the memory, abort or segfault.
    """
    if len(shape) > MAX_NDIM:
        raise InvalidArrayError(f"{what} declares {len(shape)} dimensions (at most {MAX_NDIM}).")
    if strides is not None and len(strides) != len(shape):
        raise InvalidArrayError(
            f"{what} declares {len(shape)} dimensions but {len(strides)} strides."
        )
    if any(d < 0 for d in shape):
        raise InvalidArrayError(f"{what} declares a negative dimension: shape {shape}.")
    size = 1
    for d in shape:
        size *= d
    itemsize = max(itemsize, 1)
    if size * itemsize >= _LIMIT:
        raise InvalidArrayError(
            f"{what} declares shape {shape}: {size} elements of {itemsize} bytes overflow "
            "a 64-bit size."
        )
    if size == 0:
        return
    if strides is None:
        low, high = 0, size * itemsize
    else:
        low = sum(s * (d - 1) for s, d in zip(strides, shape, strict=True) if s < 0)
        high = sum(s * (d - 1) for s, d in zip(strides, shape, strict=True) if s > 0) + itemsize
    if not address:
        raise InvalidArrayError(
            f"{what} declares {size} elements at a NULL data pointer: there is no memory to read."
        )
    base = address & _UNTAG if 0 < address < 1 << 64 else -1
    if base < 0 or base + low < 0 or base + high > _USER_SPACE or high - low >= _LIMIT:
        raise InvalidArrayError(
            f"{what} declares memory outside the address space (address {address:#x}, "
            f"byte extent {low}..{high}; no memory lies past {_USER_SPACE:#x}): its pointer, "
            "shape, strides or byte_offset are corrupt."
        )
    if length is not None and (low < 0 or high > length):
        raise InvalidArrayError(
            f"{what} declares shape {shape} with strides {strides}, reaching bytes "
            f"{low}..{high}, but its exporter holds {length} bytes."
        )


def read_capsule(capsule: Any) -> DLPackInfo:
    """The DLTensor of an unconsumed DLPack capsule (versioned or legacy), as Python values.

    The capsule is not consumed: dropped unconsumed, it calls the producer's deleter itself.
    TypeError when ``capsule`` is no unconsumed DLPack capsule, BufferError for a DLPack
    major version other than 1.
    """
    tensor, readonly, legacy, has_deleter = _dltensor(capsule)
    ndim = int(tensor.ndim)
    what = "The DLPack capsule"
    if not 0 <= ndim <= MAX_NDIM:  # checked before the shape array is read
        raise InvalidArrayError(f"{what} declares ndim {ndim} (0 to {MAX_NDIM} are valid).")
    if ndim and not tensor.shape:
        raise InvalidArrayError(f"{what} declares {ndim} dims but no shape.")
    shape = tuple(int(tensor.shape[i]) for i in range(ndim))
    strides = tuple(int(tensor.strides[i]) for i in range(ndim)) if tensor.strides else None
    device_type = int(tensor.device.device_type)
    kind = _DL_DEVICES.get(device_type, f"dldevice{device_type}")
    bits, lanes = int(tensor.dtype.bits), int(tensor.dtype.lanes)
    itemsize = max(bits * lanes // 8, 1)
    address = _address(tensor)
    check_memory(
        what, address, shape, None if strides is None else tuple(s * itemsize for s in strides),
        itemsize,
    )  # fmt: skip
    return DLPackInfo(
        address=address,
        device=Device(kind, int(tensor.device.device_id)),
        shape=shape,
        strides=strides,
        code=int(tensor.dtype.code),
        bits=bits,
        lanes=lanes,
        readonly=readonly,
        legacy=legacy,
        has_deleter=has_deleter,
        device_type=device_type,
    )


def read_dlpack(x: Any) -> DLPackInfo:
    """Export a capsule of ``x`` and read it (dropped unconsumed, the capsule frees itself)."""
    return read_capsule(export_capsule(x))


# -- the buffer protocol ---------------------------------------------------------------------


class _PyBuffer(ctypes.Structure):
    # Py_buffer (Include/pybuffer.h); ``obj`` as a plain pointer: PyBuffer_Release owns it.
    _fields_ = [
        ("buf", ctypes.c_void_p),
        ("obj", ctypes.c_void_p),
        ("len", ctypes.c_ssize_t),
        ("itemsize", ctypes.c_ssize_t),
        ("readonly", ctypes.c_int),
        ("ndim", ctypes.c_int),
        ("format", ctypes.c_char_p),
        ("shape", ctypes.POINTER(ctypes.c_ssize_t)),
        ("strides", ctypes.POINTER(ctypes.c_ssize_t)),
        ("suboffsets", ctypes.POINTER(ctypes.c_ssize_t)),
        ("internal", ctypes.c_void_p),
    ]


_PyBUF_RECORDS_RO = 0x001C  # PyBUF_STRIDES | PyBUF_FORMAT: strided, read-only accepted
_check_buffer = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object)(
    ("PyObject_CheckBuffer", ctypes.pythonapi)
)
_get_buffer = ctypes.PYFUNCTYPE(
    ctypes.c_int, ctypes.py_object, ctypes.POINTER(_PyBuffer), ctypes.c_int
)(("PyObject_GetBuffer", ctypes.pythonapi))
_release_buffer = ctypes.PYFUNCTYPE(None, ctypes.POINTER(_PyBuffer))(
    ("PyBuffer_Release", ctypes.pythonapi)
)


class BufferInfo(NamedTuple):
    """What an object's buffer export says (read, then the export is released)."""

    address: int
    readonly: bool
    #: struct format ("B" when the exporter gives none).
    format: str
    itemsize: int
    shape: tuple[int, ...]
    #: In bytes (row-major ones when the exporter gives none).
    strides: tuple[int, ...]


def has_buffer(obj: Any) -> bool:
    """Whether ``obj``'s type speaks the buffer protocol (nothing is exported)."""
    return bool(_check_buffer(obj))


def read_buffer(obj: Any) -> BufferInfo:
    """Address, format, shape and byte strides of ``obj``'s buffer (the export is released).

    Raises what the exporter raises (TypeError: ``obj`` has no buffer; BufferError: it
    refuses a strided export).
    """
    view = _PyBuffer()
    _get_buffer(obj, ctypes.byref(view), _PyBUF_RECORDS_RO)
    try:
        ndim = int(view.ndim)
        if not 0 <= ndim <= MAX_NDIM:  # checked before the shape array is read
            raise InvalidArrayError(
                f"The buffer export of a {type(obj).__name__} declares ndim {ndim} "
                f"(0 to {MAX_NDIM} are valid)."
            )
        shape = tuple(int(view.shape[i]) for i in range(ndim)) if ndim else ()
        if ndim and view.strides:
            strides = tuple(int(view.strides[i]) for i in range(ndim))
        else:  # ctypes leaves strides NULL for its C-contiguous arrays
            strides = c_strides(shape, max(int(view.itemsize), 1))
        what = f"The buffer export of a {type(obj).__name__}"
        itemsize = int(view.itemsize)
        check_memory(what, view.buf or 0, shape, strides, itemsize)
        # PEP 3118: len is product(shape) * itemsize. An exporter whose shape says more than
        # its len holds would have frameworks read past its memory.
        size = max(itemsize, 1)
        for n in shape:
            size *= n
        if int(view.len) < size:
            raise InvalidArrayError(
                f"{what} declares shape {shape} of {itemsize}-byte items ({size} bytes) but "
                f"holds {int(view.len)} bytes (its len): its shape or itemsize is corrupt."
            )
        return BufferInfo(
            address=view.buf or 0,
            readonly=bool(view.readonly),
            format=(view.format or b"B").decode("ascii", "replace"),
            itemsize=int(view.itemsize),
            shape=shape,
            strides=strides,
        )
    finally:
        _release_buffer(ctypes.byref(view))


# -- __array_interface__ and __cuda_array_interface__ ----------------------------------------


class InterfaceInfo(NamedTuple):
    """What an ``__array_interface__`` or ``__cuda_array_interface__`` dict says."""

    address: int
    readonly: bool
    typestr: str
    #: Bytes per element as the typestr gives it ("<f4": 4); None when it gives none.
    itemsize: int | None
    shape: tuple[int, ...]
    #: In bytes; None: C-contiguous.
    strides: tuple[int, ...] | None
    #: The dict carries a mask.
    masked: bool


def interface_data(d: dict[str, Any], owner: Any = None) -> tuple[int, bool]:
    """(address, read-only) of the memory an array-interface dict of ``owner`` points at.

    ``data`` is a (pointer, read-only) pair or, for ``__array_interface__``, an object that
    exports the memory through the buffer protocol (``offset`` bytes in), or None: ``owner``
    exports it.
    """
    address, readonly, _ = _interface_memory(d, owner)
    return address, readonly


def _interface_memory(d: dict[str, Any], owner: Any) -> tuple[int, bool, int | None]:
    """(address, read-only, bytes available from the address or None when unknown)."""
    data = d.get("data")
    if isinstance(data, tuple):  # (pointer, read-only); "offset" applies only to buffers
        if len(data) != 2:
            raise TypeError(f"data is a {len(data)}-tuple, not (pointer, read-only)")
        return index(data[0]), bool(data[1]), None
    buf = read_buffer(owner if data is None else data)
    offset = index(d.get("offset") or 0)
    contiguous = buf.strides == c_strides(buf.shape, max(buf.itemsize, 1))
    length = 1
    for n in buf.shape:
        length *= n
    length *= max(buf.itemsize, 1)
    if offset < 0 or offset > length:
        raise InvalidArrayError(
            f"The array interface's offset {offset} lies outside its {length}-byte buffer."
        )
    return buf.address + offset, buf.readonly, length - offset if contiguous else None


def read_interface(d: dict[str, Any], owner: Any = None) -> InterfaceInfo:
    """Parse an array-interface dict (version 3) of ``owner``, ``data`` read as by
    ``interface_data()``, and check it describes memory that can exist.

    InvalidArrayError (a ValueError) for a malformed dict (an entry missing, a shape or
    strides of other than integers, a typestr that is no string) and for an impossible
    shape, strides or pointer.
    """
    try:
        address, readonly, length = _interface_memory(d, owner)
        typestr = d["typestr"]
        if not isinstance(typestr, str):
            raise TypeError(f"typestr is a {type(typestr).__name__}, not a string")
        # operator.index, as numpy reads them: int(3.7) would make a float dim 3.
        shape = tuple(map(index, d["shape"]))
        strides = d.get("strides")
        strides = None if strides is None else tuple(map(index, strides))
    except InvalidArrayError:
        raise
    except KeyError as exc:
        raise InvalidArrayError(f"The array interface has no {exc} entry.") from None
    except (TypeError, ValueError, OverflowError) as exc:
        raise InvalidArrayError(
            f"The array interface is malformed ({exc}): shape and strides are sequences of "
            "integers, data a (pointer, read-only) pair or an object with a buffer, typestr "
            "a string such as '<f4'."
        ) from None
    size = typestr[2:]
    if len(shape) > MAX_NDIM:
        raise InvalidArrayError(
            f"The array interface declares {len(shape)} dimensions (at most {MAX_NDIM})."
        )
    itemsize = int(size) if size.isascii() and size.isdigit() else None
    check_memory("The array interface", address, shape, strides, itemsize or 1, length)
    return InterfaceInfo(  # positional: this is on the warm path of interface producers
        address, readonly, typestr, itemsize, shape, strides, d.get("mask") is not None,
    )  # fmt: skip


# -- one view of whichever protocol an object speaks ------------------------------------------


class ProtocolView(NamedTuple):
    """What an object says about its memory through a standard protocol."""

    #: Address of the first element.
    ptr: int
    #: "__array_interface__", "__cuda_array_interface__", "DLPack" or "buffer protocol".
    protocol: str
    shape: tuple[int, ...] | None = None
    #: Byte strides (None when the protocol does not give them).
    strides: tuple[int, ...] | None = None
    itemsize: int | None = None
    #: True/False when the protocol marks the memory read-only or writable on purpose (the
    #: array interfaces); None otherwise (JAX and TensorFlow export immutable memory through
    #: the buffer protocol as read-only, which is not "read-only" in interop_core's sense).
    readonly: bool | None = None
    #: The device as DLPack states it ("cpu", "cuda:1", "rocm:0", ...); None when unknown.
    device: str | None = None


def protocol_view(x: Any) -> ProtocolView | None:
    """``x``'s memory as a standard protocol describes it, read without any plugin.

    Tried in order: ``__array_interface__``, ``__cuda_array_interface__`` (with a pointer in
    ``data``), a DLPack capsule (versioned when the producer can), the buffer protocol. None
    when ``x`` exposes none of them (or each refuses, e.g. torch's DLPack export of a tensor
    that requires grad).
    """
    for attr in ("__array_interface__", "__cuda_array_interface__"):
        view = _interface_view(x, attr)
        if view is not None:
            return view
    return _dlpack_view(x) or _buffer_view(x)


def independent_data_ptr(x: Any) -> int | None:
    """Address of ``x``'s first element read through a standard protocol, not a plugin.

    See :func:`protocol_view`; None when ``x`` exposes no protocol it can be read from.
    """
    view = protocol_view(x)
    return None if view is None else view.ptr


def _interface_view(x: Any, attr: str) -> ProtocolView | None:
    try:
        d = getattr(x, attr)
    except Exception:  # torch raises on __cuda_array_interface__ of a CPU tensor
        return None
    if not isinstance(d, dict):
        return None
    data = d.get("data")
    if not (isinstance(data, tuple) and len(data) == 2 and isinstance(data[0], int)):
        # data=None or a buffer object: the buffer protocol reads the object itself; a
        # buffer only the dict holds (PIL's, new on each access) has no address to check.
        return None
    try:
        info = read_interface(d)
    except (KeyError, TypeError, ValueError):
        return ProtocolView(data[0], attr)
    strides = info.strides
    if strides is None and info.itemsize:
        strides = c_strides(info.shape, info.itemsize)
    return ProtocolView(info.address, attr, info.shape, strides, info.itemsize, info.readonly)


def _dlpack_view(x: Any) -> ProtocolView | None:
    if not callable(getattr(x, "__dlpack__", None)):
        return None
    try:
        info = read_dlpack(x)
    except Exception:  # torch: requires grad; any producer may refuse; not a capsule
        return None
    itemsize = info.itemsize or None
    strides = None
    if itemsize and info.strides is not None:
        strides = tuple(s * itemsize for s in info.strides)
    elif itemsize:
        strides = c_strides(info.shape, itemsize)
    # readonly stays None, as for the buffer protocol: a versioned capsule's read-only flag
    # may mark memory that is only immutable.
    return ProtocolView(
        info.address, "DLPack", info.shape, strides, itemsize, None, str(info.device)
    )


def _buffer_view(x: Any) -> ProtocolView | None:
    if not has_buffer(x):
        return None
    try:
        buf = read_buffer(x)
    except Exception:  # a released memoryview, a closed mmap, an exporter that refuses
        return None
    return ProtocolView(buf.address, "buffer protocol", buf.shape, buf.strides, buf.itemsize)
