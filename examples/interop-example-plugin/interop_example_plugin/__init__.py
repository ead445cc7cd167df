"""An example third-party interop_core plugin: the "pyarray" framework.

:class:`PyArray` is a tiny C-contiguous CPU array of float64 or float32 backed by a
standard-library :class:`array.array`, so it has a real buffer: its data pointer is the
buffer's address and NumPy can view it without copying (``np.frombuffer``).

The plugin declares the framework and two converters through interop_core's hooks:

* pyarray -> numpy, zero-copy: ``np.frombuffer`` over the same buffer, reshaped;
* numpy -> pyarray, a copy into a new ``array.array``.

Every other route goes through NumPy and the built-in converters, e.g.
``to(PyArray([[1.0, 2.0]]), "torch")`` is pyarray -> numpy -> torch, zero-copy.

This module imports only the standard library and interop_core; NumPy is imported inside
the converters' ``load`` functions, the first time a route needs them (plugin rule 1).
"""

from __future__ import annotations

import array
import math
from collections.abc import Callable, Sequence
from typing import Any

from interop_core.plugin import (
    ALIGNMENT,
    CPU,
    DTYPES,
    ArrayEdge,
    ConverterSpec,
    Devices,
    FrameworkSpec,
    Needs,
    Package,
    TensorInfo,
    hookimpl,
)

__all__ = ["PyArray", "interop_converters", "interop_frameworks"]

#: Canonical dtype name -> array.array typecode.
TYPECODES = {"float64": "d", "float32": "f"}
DTYPE_OF = {code: name for name, code in TYPECODES.items()}
FRAMEWORK = "pyarray"


class PyArray:
    """An n-dimensional, C-contiguous array of floats in an :class:`array.array` buffer."""

    __slots__ = ("__weakref__", "buffer", "shape")
    #: The elements, flat, in C order; typecode 'd' (float64) or 'f' (float32).
    buffer: array.array[float]
    shape: tuple[int, ...]

    def __init__(self, data: Any, dtype: str = "float64") -> None:
        """An array of ``data`` (a number or nested lists of numbers) with ``dtype``."""
        if dtype not in TYPECODES:
            raise TypeError(f"PyArray holds {' or '.join(TYPECODES)}, not {dtype!r}")
        shape = _shape_of(data)
        flat: list[float] = []
        _flatten(data, shape, flat)
        self.buffer = array.array(TYPECODES[dtype], flat)
        self.shape = shape

    @classmethod
    def from_buffer(cls, buffer: array.array[float], shape: Sequence[int]) -> PyArray:
        """An array viewing ``buffer`` (typecode 'd' or 'f') with ``shape``; nothing is copied."""
        if buffer.typecode not in DTYPE_OF:
            raise TypeError(f"PyArray needs typecode 'd' or 'f', not {buffer.typecode!r}")
        shape = tuple(int(n) for n in shape)
        if math.prod(shape) != len(buffer):
            raise ValueError(f"shape {shape} does not fit a buffer of {len(buffer)} elements")
        out = cls.__new__(cls)
        out.buffer = buffer
        out.shape = shape
        return out

    @property
    def dtype(self) -> str:
        """Canonical dtype name: "float64" or "float32"."""
        return DTYPE_OF[self.buffer.typecode]

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """Number of elements."""
        return len(self.buffer)

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return self.buffer.itemsize

    @property
    def data_ptr(self) -> int:
        """Address of the first element (the buffer's address)."""
        return int(self.buffer.buffer_info()[0])

    def tolist(self) -> Any:
        """The elements as nested Python lists (a float for a 0-d array)."""
        values = self.buffer.tolist()
        return _nest(values, self.shape) if self.shape else values[0]

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d PyArray")
        return self.shape[0]

    def __repr__(self) -> str:
        return f"PyArray({self.tolist()!r}, dtype={self.dtype!r})"


def _shape_of(data: Any) -> tuple[int, ...]:
    shape: list[int] = []
    while isinstance(data, (list, tuple)):
        shape.append(len(data))
        if not data:
            break
        data = data[0]
    return tuple(shape)


def _nest(values: list[float], shape: tuple[int, ...]) -> list[Any]:
    if len(shape) == 1:
        return values
    step = math.prod(shape[1:])
    return [_nest(values[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0])]


def _flatten(data: Any, shape: tuple[int, ...], out: list[float]) -> None:
    if not shape:
        if isinstance(data, (list, tuple)):
            raise ValueError("ragged nested sequence: PyArray needs a rectangular shape")
        out.append(float(data))
        return
    if not isinstance(data, (list, tuple)) or len(data) != shape[0]:
        raise ValueError("ragged nested sequence: PyArray needs a rectangular shape")
    for item in data:
        _flatten(item, shape[1:], out)


# -- the framework spec -----------------------------------------------------------------


def _aligned(x: PyArray) -> bool:
    return x.data_ptr % ALIGNMENT == 0


def describe(x: PyArray) -> TensorInfo:
    """Describe a PyArray: always C-contiguous, writable, on the CPU."""
    return TensorInfo(
        framework=FRAMEWORK,
        dtype=x.dtype,
        device=CPU,
        shape=x.shape,
        layout="C",
        readonly=False,
        aligned=_aligned(x),
    )


def key(x: PyArray) -> str:
    """Warm-path key: the typecode decides every PlanKey field but alignment."""
    return x.buffer.typecode


def aligned_key(x: PyArray) -> tuple[str, bool]:
    """key() plus the alignment, for routes that depend on it (into JAX or TensorFlow)."""
    return (x.buffer.typecode, _aligned(x))


def data_ptr(x: PyArray) -> int:
    """Address of the first element."""
    return x.data_ptr


def example(data: Any, dtype: str) -> PyArray:
    """A PyArray of ``data`` with canonical ``dtype``."""
    return PyArray(data, dtype)


def _devices() -> list[str]:
    return ["cpu"]


# -- converters: each imports numpy in its load function, never at module level ----------


def _to_numpy() -> Callable[[PyArray], Any]:
    import numpy as np

    def convert(x: PyArray) -> Any:
        return np.frombuffer(x.buffer, dtype=x.dtype).reshape(x.shape)

    return convert


def _from_numpy() -> Callable[[Any], PyArray]:
    import numpy as np

    def convert(x: Any) -> PyArray:
        flat = np.ascontiguousarray(x).reshape(-1)
        buffer: array.array[float] = array.array(TYPECODES[x.dtype.name])
        buffer.frombytes(flat.data.cast("B"))  # the one copy
        return PyArray.from_buffer(buffer, x.shape)

    return convert


_OTHER_DTYPES = frozenset(DTYPES) - frozenset(TYPECODES)


@hookimpl
def interop_frameworks() -> list[FrameworkSpec]:
    """The pyarray framework (alias "pylist")."""
    return [
        FrameworkSpec(
            name=FRAMEWORK,
            aliases=("pylist",),
            array_types=(f"{__name__}.PyArray",),
            describe=describe,
            key=key,
            data_ptr=data_ptr,
            example=example,
            dtypes=frozenset(TYPECODES),
            aligned_key=aligned_key,
            package=Package(
                distribution="interop-example-plugin",
                install_hint="pip install interop-example-plugin",
            ),
            devices=Devices(visible=_devices),
        )
    ]


@hookimpl
def interop_converters() -> list[ConverterSpec]:
    """pyarray -> numpy without a copy, numpy -> pyarray with one."""
    return [
        ConverterSpec(
            name="np.frombuffer",
            source=FRAMEWORK,
            target="numpy",
            load=_to_numpy,
            zero_copy=True,
            cost=1.0,
        ),
        ConverterSpec(
            name="PyArray copy",
            source="numpy",
            target=FRAMEWORK,
            load=_from_numpy,
            zero_copy=False,
            # array.array allocates with malloc: not 64-byte aligned (a copy is, by default).
            accepts=Needs(
                no_dtypes=_OTHER_DTYPES,
                dtype_reason="pyarray holds only float32 and float64",
                no_flags=frozenset({"masked"}),
            ),
            cost=2.0,
            array=ArrayEdge(aligned_result=False),
        ),
    ]
