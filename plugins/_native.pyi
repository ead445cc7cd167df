"""Types of the C extension _native.c (numpy's keys; DLPack's C exchange API)."""

from typing import Any

def set_numpy_keys(key: Any, aligned_key: Any, /) -> None:
    """The Python keys, for the arrays the struct read leaves to them."""

def numpy_key(x: Any, /) -> Any:
    """frameworks.numpy.key(x), read from the ndarray struct."""

def numpy_aligned_key(x: Any, /) -> Any:
    """frameworks.numpy.aligned_key(x), read from the ndarray struct."""

def has_exchange_api(cls: type, /) -> bool:
    """Whether ``cls`` exposes a DLPack 1.x C exchange table."""

def to_numpy(x: Any, /) -> Any:
    """An ndarray viewing ``x``, exported through ``type(x)``'s C exchange table."""

class Importer:
    """``Importer(T)(a)``: the ndarray ``a`` as a ``T``, through T's C exchange table."""

    def __init__(self, cls: type, /) -> None: ...
    def __call__(self, x: Any, /) -> Any: ...
