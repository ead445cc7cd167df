"""Hostile producers for the hardening tests: objects that answer differently each time
they are asked, count how often they are asked, or describe memory that cannot exist.

Importable in a child process (``python -c "import hostile"`` with tests/ on the path), so
a case that would crash the interpreter on a broken build only fails its own test.
"""

from __future__ import annotations

import ctypes
from typing import Any


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


class _DLManagedTensor(ctypes.Structure):  # DLPack 0.x, as a legacy "dltensor" capsule holds
    _fields_ = [
        ("dl_tensor", _DLTensor),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
    ]


_capsule_new = ctypes.PYFUNCTYPE(
    ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p
)(("PyCapsule_New", ctypes.pythonapi))


class RawCapsule:
    """A legacy DLPack capsule with every field set by hand (no deleter unless given).

    The struct, shape and strides arrays live as long as this object does.
    """

    def __init__(
        self, data: int, shape: tuple[int, ...], *, ndim: int | None = None,
        strides: tuple[int, ...] | None = None, code: int = 2, bits: int = 32,
        byte_offset: int = 0,
    ) -> None:  # fmt: skip
        self.shape = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        self.strides = None if strides is None else (ctypes.c_int64 * len(strides))(*strides)
        m = self.managed = _DLManagedTensor()
        m.dl_tensor.data = data
        m.dl_tensor.device = _DLDevice(1, 0)
        m.dl_tensor.ndim = len(shape) if ndim is None else ndim
        m.dl_tensor.dtype = _DLDataType(code, bits, 1)
        m.dl_tensor.shape = self.shape
        m.dl_tensor.strides = self.strides
        m.dl_tensor.byte_offset = byte_offset
        m.deleter = None  # allowed by the DLPack spec

    def capsule(self) -> Any:
        return _capsule_new(ctypes.addressof(self.managed), b"dltensor", None)


class CapsuleProducer:
    """``__dlpack__`` hands out fresh capsules of a :class:`RawCapsule`; counts the calls."""

    def __init__(self, raw: RawCapsule, keep: Any = None) -> None:
        self.raw, self.keep, self.calls = raw, keep, 0

    def __dlpack__(self, **_: Any) -> Any:
        self.calls += 1
        return self.raw.capsule()

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)


class Shifty:
    """Answers the first question with ``first`` and every later one with ``later``,
    through whichever protocol ``kind`` names; counts the questions."""

    def __init__(self, kind: str, first: Any, later: Any) -> None:
        self.kind, self.answers, self.calls = kind, [first, later], 0

    def _next(self) -> Any:
        self.calls += 1
        return self.answers[min(self.calls - 1, 1)]

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(name)


class ShiftyDLPack(Shifty):
    def __dlpack__(self, **kwargs: Any) -> Any:
        return self._next().__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)


class ShiftyInterface(Shifty):
    @property
    def __array_interface__(self) -> dict[str, Any]:
        return self._next().__array_interface__


class ShiftyArray(Shifty):
    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        return self._next()
