"""Hostile producers for the hardening tests: objects that answer differently each time
they are asked, count how often they are asked, or describe memory that cannot exist.

Importable in a child process (``python -c "import hostile"`` with tests/ on the path), so
a case that would crash the interpreter on a broken build only fails its own test.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import textwrap
from typing import Any

from interop_core.kit.buffers import _PyBuffer  # Py_buffer, declared once

HERE = os.path.dirname(os.path.abspath(__file__))


def run_child(code: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter with tests/ importable: a case that would crash
    the interpreter fails only its own test."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([HERE, os.environ.get("PYTHONPATH", "")])}
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True, text=True, timeout=timeout, env=env,
    )  # fmt: skip


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


# -- the buffer protocol: a memoryview that says what its exporter says ----------------------


_memoryview_from_buffer = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.POINTER(_PyBuffer))(
    ("PyMemoryView_FromBuffer", ctypes.pythonapi)
)
#: What each lying buffer's memoryview points into and at, kept for the process's life (a
#: memoryview made from a bare Py_buffer holds no reference to its memory).
_HELD: list[Any] = []


def lying_buffer(
    keep: Any, address: int, shape: tuple[int, ...], *, strides: tuple[int, ...] | None = None,
    fmt: bytes = b"f", itemsize: int = 4, length: int | None = None, readonly: bool = False,
) -> memoryview:  # fmt: skip
    """A memoryview whose buffer export says exactly this, checked by nothing: ``address``
    (which must not be NULL), ``shape``, byte ``strides`` (None: C-contiguous), ``fmt``,
    ``itemsize`` and ``length`` (the exporter's ``len``; None: what ``shape`` needs), as
    an exporter written in C can. ``keep`` (the memory behind ``address``) lives as long
    as the process."""
    view = _PyBuffer()
    view.buf = address
    count = 1
    for n in shape:
        count *= n
    view.len = count * itemsize if length is None else length
    view.itemsize = itemsize
    view.readonly = int(readonly)
    view.ndim = len(shape)
    view.format = fmt
    dims = (ctypes.c_ssize_t * max(len(shape), 1))(*shape)
    steps = None if strides is None else (ctypes.c_ssize_t * max(len(strides), 1))(*strides)
    view.shape = dims
    view.strides = steps
    _HELD.append((keep, dims, steps, view, fmt))
    return _memoryview_from_buffer(ctypes.byref(view))  # copies shape and strides


class Interface:
    """An object whose ``__array_interface__`` (or, ``cuda``, ``__cuda_array_interface__``)
    is the dict given, and which keeps ``keep`` (the memory it points at) alive."""

    def __init__(self, d: Any, keep: Any = None, *, cuda: bool = False) -> None:
        self.__dict__["__cuda_array_interface__" if cuda else "__array_interface__"] = d
        self.keep = keep


def safetensors_bytes(header: Any, data: bytes = b"") -> bytes:
    """A safetensors file's bytes: the header's length, the header (a dict, dumped as JSON,
    or the raw bytes given) and ``data``, as a hostile writer may write them."""
    import json

    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    return len(raw).to_bytes(8, "little") + raw + data
