"""Per-framework helpers for the conversion tests: build arrays, read them back, compare.

Arrays are built from a numpy *reference* (the values the array must hold) in a named
layout case. Every helper that needs a framework imports it lazily and only through
``conftest.need``, so a missing framework skips the test (or fails it under
INTEROP_REQUIRE) instead of breaking collection.

The frameworks are the default registry's (``conftest.frameworks``). numpy, torch, JAX and
TensorFlow arrays are built and read with each framework's own API; a framework a plugin
adds is built with its spec's ``example()`` (C-contiguous layouts only) and read through the
standard protocols, or its plugin where it speaks none.
"""

from __future__ import annotations

import os
from typing import Any

from conftest import framework_spec, frameworks, need

from interop_core import default_registry
from interop_core.testing import data_ptr, independent_data_ptr

#: Every framework to() converts into that builds examples on the host.
FRAMEWORKS = frameworks()

#: Canonical dtype names exercised by the tests.
DTYPES = (
    "bool",
    "int8", "int16", "int32", "int64",
    "uint8", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64",
    "complex64", "complex128",
)  # fmt: skip

#: dtypes JAX holds only with jax_enable_x64 (it narrows them to 32 bits otherwise).
X64_DTYPES = ("int64", "uint64", "float64", "complex128")

#: Layout cases, each a way of laying out the same reference values.
LAYOUTS = (
    "contiguous",  # C-contiguous, 64-byte aligned
    "transposed",  # F-contiguous (the transpose of a C-contiguous buffer)
    "step",  # every other column of a wider buffer
    "negative",  # reversed rows: a negative stride
    "0d",  # a 0-d array
    "empty",  # shape (0, 4)
    "broadcast",  # one row repeated with stride 0 (writable where the framework allows)
    "readonly",  # C-contiguous, aligned, marked read-only
    "misaligned",  # C-contiguous, data pointer not a multiple of 64 bytes
)

#: Layout cases each source framework can produce.
SOURCE_LAYOUTS: dict[str, tuple[str, ...]] = {
    "numpy": LAYOUTS,
    "torch": ("contiguous", "transposed", "step", "0d", "empty", "broadcast", "misaligned"),
    "jax": ("contiguous", "0d", "empty"),
    "tensorflow": ("contiguous", "0d", "empty"),
    "pyarrow": ("contiguous",),  # an Arrow array has a length: no 0-d one
}
#: Targets that hold no 0-d array (to() raises ConversionError for one).
NO_0D = frozenset({"pyarrow"})
#: The layout cases a framework a plugin adds builds, with its ``example()``.
EXAMPLE_LAYOUTS = ("contiguous", "0d")


def layouts_of(framework: str) -> tuple[str, ...]:
    """The layout cases ``framework`` can produce as a source."""
    return SOURCE_LAYOUTS.get(framework, EXAMPLE_LAYOUTS)


SHAPE = (3, 4)
ALIGNMENT = 64


# -- capabilities ------------------------------------------------------------------------


def jax_x64() -> bool:
    """Whether JAX holds 64-bit dtypes: its live flag when imported, else the env switch."""
    import sys

    jax = sys.modules.get("jax")
    if jax is not None:
        return bool(jax.config.jax_enable_x64)
    return os.environ.get("JAX_ENABLE_X64", "").lower() in ("1", "true", "yes", "on")


def holds(framework: str, dtype: str) -> bool:
    """Whether ``framework`` holds canonical ``dtype`` without narrowing it: one of its
    spec's dtypes (numpy's bfloat16 comes from ml_dtypes), 64-bit ones in JAX only with x64."""
    if framework == "jax" and dtype in X64_DTYPES:
        return jax_x64()
    return dtype in DTYPES and dtype in framework_spec(framework).dtypes


def dtypes_of(framework: str) -> tuple[str, ...]:
    """The tested dtypes ``framework`` can hold."""
    return tuple(d for d in DTYPES if holds(framework, d))


def shared_dtypes(source: str, target: str) -> tuple[str, ...]:
    """The tested dtypes both frameworks hold."""
    return tuple(d for d in DTYPES if holds(source, d) and holds(target, d))


# -- references ----------------------------------------------------------------------------


def np_dtype(name: str) -> Any:
    """The numpy dtype of a canonical name (bfloat16 from ml_dtypes)."""
    np = need("numpy")
    if name == "bfloat16":
        ml_dtypes = need_ml_dtypes()
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def has_ml_dtypes() -> bool:
    """Whether ml_dtypes (numpy's bfloat16) can be imported."""
    import importlib.util

    return importlib.util.find_spec("ml_dtypes") is not None


def np_itemsize(name: str) -> int:
    """Bytes per element of canonical dtype ``name``."""
    return int(np_dtype(name).itemsize)


def need_ml_dtypes() -> Any:
    """ml_dtypes, or skip (numpy has no bfloat16 without it)."""
    import pytest

    try:
        import ml_dtypes
    except ImportError:
        pytest.skip("ml_dtypes is not installed (numpy has no bfloat16 without it)")
    return ml_dtypes


def values(dtype: str, shape: tuple[int, ...] = SHAPE) -> Any:
    """Distinct, exactly representable values of ``dtype`` (NaN and inf for floats)."""
    np = need("numpy")
    n = int(np.prod(shape, dtype=np.int64))
    base = np.arange(n, dtype=np.float64)
    kind = np.dtype("float32" if dtype == "bfloat16" else dtype).kind
    if kind == "b":
        out = (base % 3 == 1).astype(bool)
    elif kind == "u":
        out = (base * 7 + 1).astype(dtype)
        if n:
            out.flat[-1] = np.iinfo(dtype).max
    elif kind == "i":
        out = ((base - n // 2) * 5).astype(dtype)
        if n:
            out.flat[0] = np.iinfo(dtype).min
    elif kind == "f":
        vals = (base - n // 2) * 0.5
        if n >= 3:
            vals[1], vals[2] = np.nan, -np.inf
        out = vals.astype(np.float32).astype(np_dtype(dtype))
    else:  # complex
        vals = (base - n // 2) * 0.5 + 1j * (base * 0.25 - 1)
        if n >= 2:
            vals[1] = complex(np.nan, 1.0)
        out = vals.astype(dtype)
    return out.reshape(shape)


def reference(dtype: str, layout: str) -> Any:
    """The numpy values an array of layout case ``layout`` holds (always C-contiguous)."""
    np = need("numpy")
    if layout == "0d":
        return values(dtype, (2,))[1:2].reshape(())  # NaN for floats
    if layout == "empty":
        return values(dtype, (0, SHAPE[1]))
    if layout == "broadcast":
        row = values(dtype, (1, SHAPE[1]))
        return np.ascontiguousarray(np.broadcast_to(row, SHAPE))
    return values(dtype)


# -- numpy layouts ---------------------------------------------------------------------


def aligned_empty(shape: tuple[int, ...], dtype: Any, offset: int = 0) -> Any:
    """An uninitialised C-contiguous array starting ``offset`` bytes after a 64-byte boundary."""
    np = need("numpy")
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    buf = np.empty(nbytes + 2 * ALIGNMENT, dtype=np.uint8)
    start = -buf.ctypes.data % ALIGNMENT + offset
    return buf[start : start + nbytes].view(dtype).reshape(shape)


def aligned_copy(ref: Any, offset: int = 0) -> Any:
    """A C-contiguous copy of ``ref`` at ``offset`` bytes past a 64-byte boundary."""
    out = aligned_empty(ref.shape, ref.dtype, offset)
    out[...] = ref
    return out


def aligned_numpy(values: Any) -> Any:
    """A C-contiguous, 64-byte aligned numpy array holding ``values`` (nested lists or array)."""
    return aligned_copy(need("numpy").asarray(values))


def make_numpy(ref: Any, layout: str) -> Any:
    """A numpy array holding ``ref``'s values in layout case ``layout``."""
    np = need("numpy")
    if layout in ("contiguous", "0d", "empty"):
        return aligned_copy(ref)
    if layout == "transposed":
        return aligned_copy(np.ascontiguousarray(ref.T)).T
    if layout == "step":
        wide = aligned_empty((ref.shape[0], 2 * ref.shape[1]), ref.dtype)
        wide[:, ::2] = ref
        wide[:, 1::2] = ref
        return wide[:, ::2]
    if layout == "negative":
        return aligned_copy(np.ascontiguousarray(ref[::-1]))[::-1]
    if layout == "broadcast":
        row = aligned_copy(ref[0])
        return np.lib.stride_tricks.as_strided(
            row, shape=ref.shape, strides=(0, row.itemsize), writeable=True
        )
    if layout == "readonly":
        out = aligned_copy(ref)
        out.flags.writeable = False
        return out
    if layout == "misaligned":
        return aligned_copy(ref, offset=ref.itemsize if ref.itemsize < ALIGNMENT else 8)
    raise ValueError(f"numpy cannot make layout {layout!r}")


# -- torch -------------------------------------------------------------------------------


def torch_from_ref(ref: Any) -> Any:
    """A fresh C-contiguous torch tensor with ``ref``'s values (bfloat16 via a uint16 view)."""
    np = need("numpy")
    torch = need("torch")
    ref = np.array(ref, order="C", copy=True)  # ascontiguousarray would make 0-d 1-d
    if ref.dtype == np_dtype("bfloat16"):
        return torch.from_numpy(ref.view(np.uint16)).view(torch.bfloat16).clone()
    return torch.from_numpy(ref).clone()


def make_torch(ref: Any, layout: str) -> Any:
    """A torch tensor holding ``ref``'s values in layout case ``layout``."""
    np = need("numpy")
    if layout in ("contiguous", "0d", "empty"):
        return torch_from_ref(ref)
    if layout == "transposed":
        return torch_from_ref(np.ascontiguousarray(ref.T)).T
    if layout == "step":
        return torch_from_ref(np.repeat(ref, 2, axis=1))[:, ::2]
    if layout == "broadcast":
        return torch_from_ref(ref[0]).expand(*ref.shape)
    if layout == "misaligned":
        flat = torch_from_ref(np.concatenate([ref.reshape(-1)[:1], ref.reshape(-1)]))
        return flat[1:].view(*ref.shape)
    raise ValueError(f"torch cannot make layout {layout!r}")


# -- jax and tensorflow ------------------------------------------------------------------


def make_jax(ref: Any, layout: str) -> Any:
    """A jax.Array holding ``ref`` (JAX arrays are always C-contiguous)."""
    if layout not in SOURCE_LAYOUTS["jax"]:
        raise ValueError(f"jax cannot make layout {layout!r}")
    need("jax")
    import jax.numpy as jnp

    out = jnp.array(ref, copy=True)
    assert str(out.dtype) == str(ref.dtype), f"jax narrowed {ref.dtype} to {out.dtype}"
    return out


def make_tf(ref: Any, layout: str) -> Any:
    """A tf.Tensor holding ``ref`` (TF tensors are always C-contiguous)."""
    if layout not in SOURCE_LAYOUTS["tensorflow"]:
        raise ValueError(f"tensorflow cannot make layout {layout!r}")
    tf = need("tensorflow")
    return tf.constant(ref)


def make_by_example(framework: str, ref: Any, layout: str) -> Any:
    """An array of a framework a plugin adds, built by its spec's ``example()``."""
    if layout not in EXAMPLE_LAYOUTS:
        raise ValueError(f"{framework} cannot make layout {layout!r}")
    need(framework)
    example = framework_spec(framework).example
    assert example is not None, f"{framework} builds no example"
    return example(ref.tolist(), str(ref.dtype.name))  # ml_dtypes' bfloat16 too


_MAKERS = {"numpy": make_numpy, "torch": make_torch, "jax": make_jax, "tensorflow": make_tf}


def make(framework: str, dtype: str, layout: str) -> tuple[Any, Any]:
    """(array of ``framework``, numpy reference of its values) for ``dtype`` and ``layout``."""
    ref = reference(dtype, layout)
    maker = _MAKERS.get(framework)
    x = maker(ref, layout) if maker is not None else make_by_example(framework, ref, layout)
    assert shape_of(x) == ref.shape
    return x, ref


def shape_of(x: Any) -> tuple[int, ...]:
    """The shape of an array: its own ``shape``, or as its plugin describes it (an Arrow
    array has none: FixedSizeLists add dims to its length)."""
    if hasattr(x, "shape"):
        return tuple(x.shape)
    spec = default_registry().ready().detect(x)
    assert spec is not None, f"not an array of a registered framework: {type(x)!r}"
    return tuple(spec.describe(x).shape)


# -- reading arrays back -----------------------------------------------------------------


def dtype_name(x: Any) -> str:
    """Canonical dtype name of an array of any of the four frameworks (read independently);
    of another framework's, as its plugin describes it."""
    if _own(x) is None:
        spec = default_registry().ready().detect(x)
        assert spec is not None, f"not an array of a registered framework: {type(x)!r}"
        return spec.describe(x).dtype
    dt = x.dtype
    name = getattr(dt, "name", None)
    if isinstance(name, str):  # numpy, jax (numpy dtypes) and tf.DType
        return name
    return str(dt).removeprefix("torch.")  # torch.dtype has no .name


def _own(x: Any) -> str | None:
    """Which of numpy, torch, jax and tensorflow ``x`` belongs to, by its type's module;
    None for another framework's array."""
    np = need("numpy")
    if isinstance(x, np.ndarray):
        return "numpy"
    top = type(x).__module__.partition(".")[0]
    return {"torch": "torch", "jax": "jax", "jaxlib": "jax", "tensorflow": "tensorflow"}.get(top)


def to_numpy(x: Any) -> Any:
    """A numpy copy of ``x`` with the same dtype, shape and values (not using interop_core)."""
    np = need("numpy")
    kind = type(x).__module__.partition(".")[0]
    if isinstance(x, np.ndarray):
        return np.array(x, copy=True)
    if kind == "torch":
        torch = need("torch")
        t = x.detach().cpu().resolve_conj().resolve_neg()
        if t.dtype == torch.bfloat16:
            return t.contiguous().view(torch.int16).numpy().view(np_dtype("bfloat16")).copy()
        return t.numpy().copy()
    if kind in ("jax", "jaxlib"):
        return np.array(x, copy=True)
    if kind == "tensorflow":
        return np.array(x.numpy(), copy=True)
    if kind == "cupy":
        return x.get()
    return _foreign_to_numpy(x)


def _foreign_to_numpy(x: Any) -> Any:
    """A numpy copy of an array of a framework a plugin adds: through a standard protocol
    (the buffer protocol, an array interface, __array__, DLPack), else its ``tolist()``."""
    np = need("numpy")
    owner = default_registry().ready().detect(x)
    if owner is None:
        raise TypeError(f"not an array of a tested framework: {type(x)!r}")
    info = owner.describe(x)
    want = np_dtype(info.dtype)
    for read in (np.asarray, np.from_dlpack):
        try:
            a = read(x)
        except Exception:
            continue
        if a.dtype == want and a.shape == tuple(info.shape):
            return np.array(a, copy=True)
    return np.array(x.tolist(), dtype=want).reshape(info.shape)


def assert_same_array(ref: Any, got: Any) -> None:
    """``got`` (numpy) equals ``ref`` in dtype, shape and values; NaNs compare equal."""
    np = need("numpy")
    assert got.dtype == ref.dtype, f"dtype {got.dtype} != {ref.dtype}"
    assert got.shape == ref.shape, f"shape {got.shape} != {ref.shape}"
    if ref.dtype == np_dtype("bfloat16") or ref.dtype.kind == "f":
        a, b = ref.astype(np.float64), got.astype(np.float64)
    elif ref.dtype.kind == "c":
        a, b = ref.astype(np.complex128), got.astype(np.complex128)
        a, b = np.stack([a.real, a.imag]), np.stack([b.real, b.imag])
    else:
        a, b = ref, got
    equal_nan = a.dtype.kind in "fc"
    assert np.array_equal(a, b, equal_nan=equal_nan), f"values differ:\n{got!r}\n!=\n{ref!r}"


def ptr(x: Any) -> int:
    """Address of the first element, through the framework spec."""
    return data_ptr(x)


def own_ptr(x: Any) -> int:
    """Address of the first element read with the framework's own API (numpy, torch, JAX),
    else through a standard protocol (TensorFlow: DLPack), else through its plugin."""
    fw = _own(x)
    if fw == "numpy":
        return int(x.ctypes.data)
    if fw == "torch":
        return int(x.data_ptr())
    if fw == "jax":
        return int(x.unsafe_buffer_pointer())
    found = independent_data_ptr(x)  # TensorFlow: its DLPack export (__array__ refuses bfloat16)
    return found if found is not None else data_ptr(x)
