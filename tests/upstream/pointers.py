"""Each framework's own view of an array, shared by the upstream DLPack suites: the address
of its first element and its values, read with the framework's own API (never through
interop_core), and JAX's x64 switch, which decides whether 64-bit dtypes cross into JAX.

Needs numpy, torch, JAX and TensorFlow: a suite importing it is skipped without them.
"""

from __future__ import annotations

import ctypes
from typing import Any

from conftest import need

np = need("numpy")
torch = need("torch")
jax = need("jax")
tf = need("tensorflow")

#: The dtypes JAX holds only with jax_enable_x64.
X64 = ("int64", "uint64", "float64", "complex128")

_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def x64() -> bool:
    """Whether JAX's jax_enable_x64 switch is on."""
    return bool(jax.config.jax_enable_x64)


def tf_ptr(t: Any) -> int:
    """Address of a tf.Tensor's first element, from TensorFlow's own DLPack export
    (DLTensor: ``data`` at byte 0, ``byte_offset`` at byte 40)."""
    capsule = tf.experimental.dlpack.to_dlpack(t)
    dl = _get_pointer(capsule, b"dltensor")
    data = ctypes.c_void_p.from_address(dl).value or 0
    return data + ctypes.c_uint64.from_address(dl + 40).value


def ptr(x: Any) -> int:
    """Address of ``x``'s first element, read with its framework's own API."""
    if isinstance(x, np.ndarray):
        return int(x.__array_interface__["data"][0])
    if isinstance(x, torch.Tensor):
        return int(x.data_ptr())
    if isinstance(x, jax.Array):
        return int(x.unsafe_buffer_pointer())
    assert isinstance(x, tf.Tensor), type(x)
    return tf_ptr(x)


def host(x: Any) -> Any:
    """``x``'s values as a numpy array, read with its framework's own API."""
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, torch.Tensor):
        return x.numpy()
    if isinstance(x, jax.Array):
        return np.asarray(x)
    return x.numpy()
