"""NumPy: framework spec and the in-framework copy (into a 64-byte aligned buffer)."""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import math
from typing import Any

from interop_core.plugin import (
    ALIGNMENT,
    CPU,
    DTYPES,
    AlignedAllocator,
    Allocator,
    Casting,
    ConverterSpec,
    Devices,
    Diagnostics,
    FileReader,
    FrameworkSpec,
    OrdinaryArrays,
    Package,
    TensorInfo,
    classify_layout,
    hookimpl,
)

from ..native import native

#: Loaded once it is imported (docs/plugins.md, "Loaded when needed").
INTEROP_ABOUT = ("numpy",)


def file_reader(suffixes: tuple[str, ...], kind: str, reader: str, how: str) -> FileReader:
    """A ``FileReader`` whose ``read`` is frameworks/file_readers.py's function ``reader``,
    imported when a file is read (the command line's ``explain``), never by a ``to()``."""

    def read(path: Any, columns: tuple[str, ...] | None) -> Any:
        from . import file_readers

        return getattr(file_readers, reader)(path, columns)

    return FileReader(suffixes, kind, read, how)


NUMPY_FILES = (
    file_reader((".npy",), ".npy", "read_npy", "numpy.load(path, mmap_mode='r')"),
    file_reader((".npz",), ".npz", "read_npz", "numpy.load(path, allow_pickle=False)"),
)

# ndarray.flags.num bits (numpy's NPY_ARRAY_* constants).
_C, _F, _WRITEABLE = 0x1, 0x2, 0x400
_KEY_BITS = _C | _F | _WRITEABLE
#: dtypes that numpy holds only through ml_dtypes.
ML_DTYPES = frozenset({"bfloat16", "float8_e4m3fn", "float8_e5m2"})


@functools.cache
def has_ml_dtypes() -> bool:
    """Whether ml_dtypes (numpy's bfloat16/float8) can be imported (looked for once: each
    look searches sys.path, ~0.25 ms, and the first call asked it three times)."""
    return importlib.util.find_spec("ml_dtypes") is not None


def dtype_name(dt: Any) -> str:
    """Canonical name of a numpy dtype (non-native byte order is marked so none accepts it)."""
    name = _NAMES.get(dt)
    if name is None:
        name = str(dt.name)
        if not dt.isnative:
            name = f"{name} (non-native byte order)"
        if dt.isbuiltin == 1:  # numpy's own dtypes, a few dozen: the cache stays small
            _NAMES[dt] = name
    return name


#: Names of numpy's built-in dtypes already asked for (``dtype.name`` is computed in Python
#: by numpy, ~1.5 µs). Keyed by dtype: dtypes of another byte order are not equal.
_NAMES: dict[Any, str] = {}


def numpy_dtype(name: str) -> Any:
    """The numpy dtype for a canonical name (ml_dtypes for bfloat16/float8)."""
    import numpy as np

    if name in ML_DTYPES:
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, name))
    return np.dtype(name)


def _layout(x: Any) -> str:
    bits = x.flags.num
    if bits & _C:
        return "C"
    if bits & _F:
        return "F"
    return classify_layout(x.shape, x.strides, x.itemsize)


def describe(x: Any) -> TensorInfo:
    """Describe an ndarray without copying it."""
    address = x.ctypes.data
    _check_fast_read(x, address)
    return TensorInfo(
        framework="numpy",
        dtype=dtype_name(x.dtype),
        device=CPU,
        shape=tuple(x.shape),
        layout=_layout(x),
        readonly=not x.flags.writeable,
        aligned=address % ALIGNMENT == 0,
    )


# ndarray's data pointer is the first field after the object header (PyArrayObject_fields);
# reading it there costs ~0.15 µs against ~0.95 µs for x.ctypes.data. describe() checks the
# two agree before the key trusts the fast read.
_read_address = ctypes.c_void_p.from_address
_DATA_OFFSET = object.__basicsize__
_fast_read_ok: bool | None = None


def _check_fast_read(x: Any, address: int) -> None:
    global _fast_read_ok
    if _fast_read_ok is not False:
        _fast_read_ok = _read_address(id(x) + _DATA_OFFSET).value == address


# key() and aligned_key() are spelled out separately: they run on every warm call, where a
# flag test or a functools.partial costs more than the duplication.


def key(x: Any) -> Any:
    """Warm-path key: the dtype object and the contiguity/writeable bits (layout if neither)."""
    bits = x.flags.num & _KEY_BITS
    if bits & (_C | _F):
        return (x.dtype, bits)
    return (x.dtype, bits, classify_layout(x.shape, x.strides, x.itemsize))


def aligned_key(x: Any) -> Any:
    """key() plus whether the data is 64-byte aligned."""
    bits = x.flags.num & _KEY_BITS
    address = _read_address(id(x) + _DATA_OFFSET).value if _fast_read_ok else x.ctypes.data
    k = (x.dtype, bits, not (address or 0) % ALIGNMENT)
    if bits & (_C | _F):
        return k
    return (*k, classify_layout(x.shape, x.strides, x.itemsize))


def warm_keys() -> tuple[Any, Any]:
    """key and aligned_key: read from the ndarray struct in C where the extension is built
    (the same tuples, ~0.15 µs less a call; an array neither C- nor F-contiguous goes to
    the Python key), else these Python functions."""
    fast = native()
    if fast is None:
        return key, aligned_key
    fast.set_numpy_keys(key, aligned_key)
    return fast.numpy_key, fast.numpy_aligned_key


def data_ptr(x: Any) -> int:
    """Address of the first element."""
    return int(x.ctypes.data)


def example(data: Any, dtype: str) -> Any:
    """A 64-byte aligned, C-contiguous ndarray of ``data`` with canonical ``dtype``."""
    import numpy as np

    values = np.asarray(data, dtype=numpy_dtype(dtype))
    out = aligned_empty(values.shape, values.dtype)
    out[...] = values
    return out


def aligned_empty(shape: tuple[int, ...], dtype: Any) -> Any:
    """An uninitialised C-contiguous array whose data starts on a 64-byte boundary."""
    import numpy as np

    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize  # np.prod costs ~5 us on a small tuple
    buf = np.empty(nbytes + ALIGNMENT, dtype=np.uint8)
    # The address through ctypes' buffer export, and one ndarray over buf: ~1 us where
    # buf.ctypes.data and a slice, view and reshape took ~5 (a copy of a small column).
    start = -ctypes.addressof(ctypes.c_char.from_buffer(buf)) % ALIGNMENT  # type: ignore[arg-type]
    if dtype.hasobject:  # numpy's view refuses pointers over raw bytes (the ndarray would not)
        return buf[start : start + nbytes].view(dtype).reshape(shape)
    return np.ndarray(shape, dtype, buf, start)


def aligned_copy(x: Any) -> Any:
    """A C-contiguous, 64-byte aligned copy of ``x`` (the bytes are moved once)."""
    import numpy as np

    if x.dtype.hasobject:  # object pointers must be copied by numpy's own refcounting path
        return np.array(x, order="C", copy=True)
    out = aligned_empty(x.shape, x.dtype)
    np.copyto(out, x, casting="no")
    return out


def astype(x: Any, dtype: str) -> Any:
    """``x`` cast to canonical ``dtype`` (``to(..., dtype=)``): a C-contiguous, 64-byte
    aligned copy; a numpy scalar stays a scalar."""
    import numpy as np

    target = numpy_dtype(dtype)
    if isinstance(x, np.generic):
        return x.astype(target)
    out = aligned_empty(x.shape, target)
    np.copyto(out, x, casting="unsafe")  # the user asked for this cast: any kind is allowed
    return out


def _devices() -> list[str]:
    return ["cpu"]


# numpy scalars (np.float32(1.5), an element read out of an array) are 0-d arrays in all
# but name: a source node of their own whose one edge makes the 0-d array.


def describe_scalar(x: Any) -> TensorInfo:
    """Describe a numpy scalar as the 0-d array it becomes."""
    return TensorInfo("numpy.generic", dtype_name(x.dtype), CPU, (), "C", True, False)


def scalar_key(x: Any) -> Any:
    """Warm-path key: the dtype."""
    return x.dtype


def scalar_ptr(x: Any) -> int:
    """A numpy scalar has no buffer of its own: each export copies it."""
    raise TypeError("a numpy scalar has no stable data pointer")


def scalar_to_array(x: Any) -> Any:
    """The 0-d, 64-byte aligned array holding the scalar (its bytes copied once)."""
    out = aligned_empty((), x.dtype)
    out[()] = x
    return out


def read_dtype(value: Any) -> str | None:
    """The canonical name of a numpy dtype or scalar type (np.int32, ml_dtypes' bfloat16),
    or of a name written "np.int32"; None for anything else. Imports nothing."""
    if isinstance(value, str):
        for prefix in ("np.", "numpy."):
            if value.startswith(prefix):
                return value.removeprefix(prefix)
        return None
    import sys

    np = sys.modules.get("numpy")
    if np is None:
        return None
    if isinstance(value, np.dtype):
        return str(value.name) if value.isnative else f"{value.name} (non-native)"
    if isinstance(value, type) and issubclass(value, np.generic):
        return str(np.dtype(value).name)
    return None


def example_view(x: Any, layout: str, shape: tuple[int, ...]) -> Any:
    """numpy's broadcast view (numpy < 2 has no Array API namespace) and read-only arrays."""
    import numpy as np

    if layout == "broadcast":
        return np.broadcast_to(x, shape)
    if layout == "readonly":
        x.flags.writeable = False
        return x
    return None


def ordinary_arrays(sizes: tuple[int, ...]) -> list[Any]:
    """``np.ones`` and ``np.random`` float32 arrays of each size in bytes: numpy's own
    allocations, as user code makes them (mostly not 64-byte aligned)."""
    import numpy as np

    rng = np.random.default_rng(0)
    arrays = []
    for nbytes in sizes:
        n = nbytes // 4
        arrays += [np.ones(n, np.float32), rng.random(n, dtype=np.float32)]
    return arrays


#: numpy's allocator gives no 64-byte alignment (JAX and TensorFlow share only aligned
#: buffers), so what users get from numpy differs from what the aligned example shows.
_ORDINARY = OrdinaryArrays(
    label="numpy",
    what=(
        "np.ones and np.random.default_rng().random float32 arrays of {sizes}, as user "
        "code makes them"
    ),
    build=ordinary_arrays,
    note=(
        "copy (alignment): numpy's allocations are mostly not 64-byte aligned{seen}, so the "
        "arrays your code makes (np.ones, np.random, np.load...){also} are copied once into "
        "{targets}. To share memory, use 64-byte aligned buffers: copy once with "
        'to(a, "numpy", copy=True) and keep that array, or take memory torch allocated '
        "(torch.empty(n).numpy()), or allocate inside interop_core.aligned_memory() (every "
        "numpy allocation there is aligned); explain() tells for a given array."
    ),
)


#: Where numpy's data-memory handler applies (it keeps it in a context variable).
_ALLOCATOR_SCOPE = (
    "numpy keeps the handler in a context variable: the current thread and what inherits its "
    "context (asyncio tasks created afterwards, asyncio.to_thread); threads started with "
    "threading.Thread or a thread pool begin with numpy's default"
)


def _load_allocator() -> AlignedAllocator:
    """The NEP 49 handler's switch (aligned_memory.py, beside its C extension)."""
    from . import aligned_memory

    return aligned_memory


@hookimpl
def interop_frameworks() -> list[FrameworkSpec]:
    """NumPy: ndarray on the CPU; bfloat16/float8 with ml_dtypes installed."""
    keys = warm_keys()
    return [
        FrameworkSpec(
            name="numpy",
            aliases=("np",),
            array_types=("numpy.ndarray",),
            describe=describe,
            key=keys[0],
            aligned_key=keys[1],
            data_ptr=data_ptr,
            example=example,
            dtypes=frozenset(d for d in DTYPES if d not in ML_DTYPES or has_ml_dtypes()),
            package=Package(distribution="numpy", install_hint="pip install 'interop-core[numpy]'"),
            devices=Devices(
                visible=_devices,
                kinds=("cpu",),
                allocator=Allocator(load=_load_allocator, scope=_ALLOCATOR_SCOPE),
            ),
            casting=Casting(astype=astype, read_dtype=read_dtype),
            diagnostics=Diagnostics(
                constructor="numpy.asarray",
                example_view=example_view,
                ordinary=(_ORDINARY,),
                files=NUMPY_FILES,
            ),
        ),
        FrameworkSpec(
            name="numpy.generic",
            # Numbers and bools only: np.str_ and np.bytes_ are strings, not arrays.
            array_types=("numpy.number", "numpy.bool_"),
            describe=describe_scalar,
            key=scalar_key,
            data_ptr=scalar_ptr,
            dtypes=frozenset(DTYPES),
            target=False,
            package=Package(distribution="numpy"),
            casting=Casting(astype=astype),
        ),
    ]


@hookimpl
def interop_converters() -> list[ConverterSpec]:
    """The numpy copy: C-contiguous, writable and 64-byte aligned."""
    return [
        ConverterSpec(
            name="numpy aligned copy",
            source="numpy",
            target="numpy",
            load=lambda: aligned_copy,
            zero_copy=False,
            cost=1.0,
        ),
        ConverterSpec(
            name="0-d array of a numpy scalar",
            source="numpy.generic",
            target="numpy",
            load=lambda: scalar_to_array,
            zero_copy=False,
            cost=1.0,
        ),
    ]
