"""Types of the C extension _native.c (numpy's, torch's and TF's keys; DLPack's C exchange
API; two-step runners)."""

from typing import Any

def set_numpy_keys(key: Any, aligned_key: Any, /) -> None:
    """The Python keys, for the arrays the struct read leaves to them."""

def numpy_key(x: Any, /) -> Any:
    """frameworks.numpy.key(x), read from the ndarray struct."""

def numpy_aligned_key(x: Any, /) -> Any:
    """frameworks.numpy.aligned_key(x), read from the ndarray struct."""

def set_torch_keys(key: Any, aligned_key: Any, /) -> None:
    """The Python keys, for the tensors the C read leaves to them."""

def torch_key(t: Any, /) -> Any:
    """A warm-path key of a C-contiguous strided tensor, read through torch's exchange table."""

def torch_aligned_key(t: Any, /) -> Any:
    """torch_key() plus 64-byte alignment."""

def has_exchange_api(cls: type, /) -> bool:
    """Whether ``cls`` exposes a DLPack 1.x C exchange table."""

def to_numpy(x: Any, /) -> Any:
    """An ndarray viewing ``x``, exported through ``type(x)``'s C exchange table."""

class Importer:
    """``Importer(T)(a)``: the ndarray ``a`` as a ``T``, through T's C exchange table."""

    def __init__(self, cls: type, /) -> None: ...
    def __call__(self, x: Any, /) -> Any: ...

class AttrKey:
    """``AttrKey(names, calls, fallback)(x)``: the tuple of x's attributes (called where
    ``calls`` says), read in C; ``fallback(x)`` when one raises."""

    def __init__(
        self, names: tuple[str, ...], calls: tuple[bool, ...], fallback: Any, /
    ) -> None: ...
    def __call__(self, x: Any, /) -> Any: ...

class Chain:
    """``Chain(f, g)(x) = g(f(x))`` without a Python frame between the two calls."""

    def __init__(self, first: Any, then: Any, /) -> None: ...
    def __call__(self, x: Any, /) -> Any: ...
