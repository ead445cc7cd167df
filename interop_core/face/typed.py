"""What type checkers and IDEs see of ``to()`` and ``explain()``: overloads that give the
result's type from the target and the shape of the source.

``interop_core/__init__.py`` imports ``to`` and ``explain`` from here under
``TYPE_CHECKING``; at run time they are :mod:`interop_core.face.api`'s own (this module,
imported, hands out those too), so the warm path and ``import interop_core`` are untouched:
nothing here runs.

The target picks the array type ``A``: a built-in framework's name or alias as a literal
(the spellings listed below; any other string, a ``str`` variable or a framework module
types the result by the source's shape alone, with ``Any`` for arrays: a module's type is
``ModuleType``, whatever the module) or a :class:`~interop_core.targets.Target` token
(``TORCH``, or a plugin's own). The source picks the shape; the first overload that matches
wins, in this order:

- a source typed ``Any``: ``Any``; a callable: ``Callable[..., Any]`` (its arguments and
  results change type); an iterator, dict, list or tuple whose items are typed ``Any``:
  ``Iterator[Any]``, ``dict[Any, Any]``, ``list[Any]``, ``tuple[Any, ...]``;
- a table (``columns``: Arrow tables and record batches, polars and pandas DataFrames) or a
  ``pathlib`` path (a safetensors file): ``dict[str, A]``, a column or tensor per name;
- an array, known by the protocols ``to()`` reads (``__array__``, ``__dlpack_device__``,
  ``__cuda_array_interface__``, ``__array_interface__``, ``__arrow_c_array__``,
  ``__arrow_c_stream__``, the buffer protocol) or as sparse (``todense``): ``A`` (a
  ``pyarrow.ChunkedArray`` or ``scipy.sparse.spmatrix`` given to its own framework by name
  stays what it is);
- an iterator of arrays: ``Iterator[A]``; a ``dict``, ``list`` or ``tuple`` of arrays: the
  same container of ``A`` (keys kept; a tuple's length is not);
- any other iterator or container (nested containers; numbers and strings pass through
  unchanged): ``Iterator[Any]``, ``dict[K, Any]``, ``list[Any]``, ``tuple[Any, ...]``; an
  iterable that is no array (a torch ``DataLoader``, a ``tf.data.Dataset``):
  ``Iterator[Any]``; anything else: ``Any``.

Arrays come before iterables (every array is iterable) and callables before tables and
arrays (mypy lets a class with ``__getattr__``, a ``torch.nn.Module``, match any protocol).
Sources are told apart by structural protocols, never by a framework's classes: a framework
the checker cannot read (not installed, or without types, as TensorFlow, CuPy, pyarrow,
scipy and pandas are for mypy) is ``Any``, which would match every source. Its own types are
then ``Any`` too: results, and the two sources named by class above (whose overloads return
their own framework's type).
"""

# The overloads overlap on purpose (an object may be both an array and iterable): the first
# that matches wins, in both checkers. A framework the checker reads as Any makes the
# overloads after its own class's unreachable for its target (they would return Any too).
# mypy: disable-error-code="overload-overlap, overload-cannot-match"
# pyright: reportOverlappingOverload=false

from __future__ import annotations

# typing.TYPE_CHECKING without importing typing at run time (see face/api.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator
    from pathlib import PurePath
    from types import ModuleType
    from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar, overload

    import cupy
    import jax
    import numpy.typing as npt
    import pyarrow
    import scipy.sparse
    import tensorflow
    import torch
    from typing_extensions import Buffer, Never

    from ..engine.routes import Route, RouteTree
    from ..targets import Target
    from . import api as _api

    # -- what the source is: the array protocols to() reads (structural, so that a
    # framework the checker cannot see never makes every source look like an array) --

    class _ArrayFunction(Protocol):
        def __array__(self, *args: Any, **kwargs: Any) -> Any: ...

    class _DLPack(Protocol):
        def __dlpack_device__(self) -> Any: ...

    class _CudaArrayInterface(Protocol):
        @property
        def __cuda_array_interface__(self) -> Any: ...

    class _ArrayInterface(Protocol):
        @property
        def __array_interface__(self) -> Any: ...

    class _ArrowArray(Protocol):
        def __arrow_c_array__(self, *args: Any, **kwargs: Any) -> Any: ...

    class _ArrowStream(Protocol):
        def __arrow_c_stream__(self, *args: Any, **kwargs: Any) -> Any: ...

    class _Sparse(Protocol):  # scipy.sparse, jax.experimental.sparse
        def todense(self, *args: Any, **kwargs: Any) -> Any: ...

    class _Table(Protocol):  # checked before arrays: a DataFrame has __array__ too
        @property
        def columns(self) -> Any: ...

    #: An array of any framework: an item of a container or iterator that to() converts.
    _Array = (
        _ArrayFunction | _DLPack | _CudaArrayInterface | _ArrayInterface | _ArrowArray
        | _ArrowStream | _Sparse
    )  # fmt: skip
    # The sources are TypeVars, each bound to what it takes: mypy compares the overloads a
    # source matches as they are solved for it, and calls the result Any when a source whose
    # type holds Any (npt.NDArray[Any], dict[str, Any]) matches several that differ; solved,
    # a TypeVar is the source's own type, so the first match wins, as in pyright.
    #: What becomes a dict of arrays: a table's columns, a safetensors file's tensors.
    _Tab = TypeVar("_Tab", bound=_Table | PurePath)
    #: An array given alone; memoryview and array.array too (the buffer protocol: bytes
    #: are refused at run time, and an item that is bytes passes through unchanged).
    _Src = TypeVar("_Src", bound=_Array | Buffer)
    _A = TypeVar("_A", bound=_Array)
    _Arrays = TypeVar("_Arrays", bound=Iterator[_Array])
    _ArrayTuple = TypeVar("_ArrayTuple", bound=tuple[_Array, ...])
    _Function = TypeVar("_Function", bound=Callable[..., Any])
    # Only Any is Never too: what a source typed Any, or holding items typed Any, matches.
    _Unknown = TypeVar("_Unknown", bound=Never)
    _UnknownIterator = TypeVar("_UnknownIterator", bound=Iterator[Never])
    _UnknownDict = TypeVar("_UnknownDict", bound=dict[Any, Never])
    _UnknownList = TypeVar("_UnknownList", bound=list[Never])
    _UnknownTuple = TypeVar("_UnknownTuple", bound=tuple[Never, ...])
    _AnyIterator = TypeVar("_AnyIterator", bound=Iterator[Any])
    _AnyDict = TypeVar("_AnyDict", bound=dict[Any, Any])
    _AnyList = TypeVar("_AnyList", bound=list[Any])
    _AnyTuple = TypeVar("_AnyTuple", bound=tuple[Any, ...])
    _Iterable = TypeVar("_Iterable", bound=Iterable[Any])
    _K = TypeVar("_K")
    _V = TypeVar("_V")
    _O = TypeVar("_O")
    _T = TypeVar("_T")

    # -- the targets: the built-in frameworks' names and aliases (the registry reads any
    # case; these are the spellings a literal lists) --

    _NumPy = Literal["numpy", "np", "NumPy"]
    _Torch = Literal["torch", "pytorch", "PyTorch"]
    _Jax = Literal["jax", "JAX"]
    _TensorFlow = Literal["tensorflow", "tf", "TensorFlow"]
    _CuPy = Literal["cupy", "cp", "CuPy"]
    _PyArrow = Literal["pyarrow", "arrow", "PyArrow", "Arrow"]
    _SciPy = Literal["scipy", "scipy.sparse", "SciPy"]
    #: Any target: a name (a token is one) or a framework module.
    _N = TypeVar("_N", bound=str | ModuleType)
    _Copy = bool | None

    # -- to(): per target, tables, arrays, iterators and containers of arrays; then the
    # shapes whose type the target does not change; then Any --

    # whatever the target: a source typed Any, functions, what holds items typed Any
    @overload
    def to(
        obj: _Unknown, target: _N, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> Any: ...
    @overload
    def to(
        obj: _Function, target: _N, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> Callable[..., Any]: ...
    @overload
    def to(
        obj: _UnknownIterator, target: _N, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> Iterator[Any]: ...
    @overload
    def to(
        obj: _UnknownDict, target: _N, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> dict[Any, Any]: ...
    @overload
    def to(
        obj: _UnknownList, target: _N, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> list[Any]: ...
    @overload
    def to(
        obj: _UnknownTuple, target: _N, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> tuple[Any, ...]: ...

    # numpy
    @overload
    def to(
        obj: _Tab, target: _NumPy, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> dict[str, npt.NDArray[Any]]: ...
    @overload
    def to(
        obj: _Src, target: _NumPy, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> npt.NDArray[Any]: ...
    @overload
    def to(
        obj: _Arrays, target: _NumPy, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> Iterator[npt.NDArray[Any]]: ...
    @overload
    def to(
        obj: dict[_K, _A], target: _NumPy, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> dict[_K, npt.NDArray[Any]]: ...
    @overload
    def to(
        obj: list[_A], target: _NumPy, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> list[npt.NDArray[Any]]: ...
    @overload
    def to(
        obj: _ArrayTuple, target: _NumPy, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> tuple[npt.NDArray[Any], ...]: ...

    # torch
    @overload
    def to(
        obj: _Tab, target: _Torch, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> dict[str, torch.Tensor]: ...
    @overload
    def to(
        obj: _Src, target: _Torch, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> torch.Tensor: ...
    @overload
    def to(
        obj: _Arrays, target: _Torch, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> Iterator[torch.Tensor]: ...
    @overload
    def to(
        obj: dict[_K, _A], target: _Torch, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> dict[_K, torch.Tensor]: ...
    @overload
    def to(
        obj: list[_A], target: _Torch, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> list[torch.Tensor]: ...
    @overload
    def to(
        obj: _ArrayTuple, target: _Torch, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> tuple[torch.Tensor, ...]: ...

    # jax
    @overload
    def to(
        obj: _Tab, target: _Jax, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> dict[str, jax.Array]: ...
    @overload
    def to(
        obj: _Src, target: _Jax, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> jax.Array: ...
    @overload
    def to(
        obj: _Arrays, target: _Jax, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> Iterator[jax.Array]: ...
    @overload
    def to(
        obj: dict[_K, _A], target: _Jax, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> dict[_K, jax.Array]: ...
    @overload
    def to(
        obj: list[_A], target: _Jax, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> list[jax.Array]: ...
    @overload
    def to(
        obj: _ArrayTuple, target: _Jax, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> tuple[jax.Array, ...]: ...

    # tensorflow
    @overload
    def to(
        obj: _Tab, target: _TensorFlow, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> dict[str, tensorflow.Tensor]: ...
    @overload
    def to(
        obj: _Src, target: _TensorFlow, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> tensorflow.Tensor: ...
    @overload
    def to(
        obj: _Arrays, target: _TensorFlow, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> Iterator[tensorflow.Tensor]: ...
    @overload
    def to(
        obj: dict[_K, _A],
        target: _TensorFlow,
        *,
        device: Any = ...,
        copy: _Copy = ...,
        **options: Any,
    ) -> dict[_K, tensorflow.Tensor]: ...
    @overload
    def to(
        obj: list[_A], target: _TensorFlow, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> list[tensorflow.Tensor]: ...
    @overload
    def to(
        obj: _ArrayTuple,
        target: _TensorFlow,
        *,
        device: Any = ...,
        copy: _Copy = ...,
        **options: Any,
    ) -> tuple[tensorflow.Tensor, ...]: ...

    # cupy
    @overload
    def to(
        obj: _Tab, target: _CuPy, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> dict[str, cupy.ndarray]: ...
    @overload
    def to(
        obj: _Src, target: _CuPy, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> cupy.ndarray: ...
    @overload
    def to(
        obj: _Arrays, target: _CuPy, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> Iterator[cupy.ndarray]: ...
    @overload
    def to(
        obj: dict[_K, _A], target: _CuPy, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> dict[_K, cupy.ndarray]: ...
    @overload
    def to(
        obj: list[_A], target: _CuPy, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> list[cupy.ndarray]: ...
    @overload
    def to(
        obj: _ArrayTuple, target: _CuPy, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> tuple[cupy.ndarray, ...]: ...

    # pyarrow: a ChunkedArray stays one
    @overload
    def to(
        obj: _Tab, target: _PyArrow, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> dict[str, pyarrow.Array]: ...
    @overload
    def to(
        obj: pyarrow.ChunkedArray,
        target: _PyArrow,
        *,
        device: Any = ...,
        copy: _Copy = ...,
        **options: Any,
    ) -> pyarrow.ChunkedArray: ...
    @overload
    def to(
        obj: _Src, target: _PyArrow, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> pyarrow.Array: ...
    @overload
    def to(
        obj: _Arrays, target: _PyArrow, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> Iterator[pyarrow.Array]: ...
    @overload
    def to(
        obj: dict[_K, _A], target: _PyArrow, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> dict[_K, pyarrow.Array]: ...
    @overload
    def to(
        obj: list[_A], target: _PyArrow, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> list[pyarrow.Array]: ...
    @overload
    def to(
        obj: _ArrayTuple, target: _PyArrow, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> tuple[pyarrow.Array, ...]: ...

    # scipy: an spmatrix stays one
    @overload
    def to(
        obj: _Tab, target: _SciPy, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> dict[str, scipy.sparse.sparray]: ...
    @overload
    def to(
        obj: scipy.sparse.spmatrix,
        target: _SciPy,
        *,
        device: Any = ...,
        copy: _Copy = ...,
        **options: Any,
    ) -> scipy.sparse.spmatrix: ...
    @overload
    def to(
        obj: _Src, target: _SciPy, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> scipy.sparse.sparray: ...
    @overload
    def to(
        obj: _Arrays, target: _SciPy, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> Iterator[scipy.sparse.sparray]: ...
    @overload
    def to(
        obj: dict[_K, _A], target: _SciPy, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> dict[_K, scipy.sparse.sparray]: ...
    @overload
    def to(
        obj: list[_A], target: _SciPy, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> list[scipy.sparse.sparray]: ...
    @overload
    def to(
        obj: _ArrayTuple, target: _SciPy, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> tuple[scipy.sparse.sparray, ...]: ...

    # a token: the type it carries
    @overload
    def to(
        obj: _Tab, target: Target[_T], *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> dict[str, _T]: ...
    @overload
    def to(
        obj: _Src, target: Target[_T], *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> _T: ...
    @overload
    def to(
        obj: _Arrays, target: Target[_T], *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> Iterator[_T]: ...
    @overload
    def to(
        obj: dict[_K, _A],
        target: Target[_T],
        *,
        device: Any = ...,
        copy: _Copy = ...,
        **options: Any,
    ) -> dict[_K, _T]: ...
    @overload
    def to(
        obj: list[_A], target: Target[_T], *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> list[_T]: ...
    @overload
    def to(
        obj: _ArrayTuple,
        target: Target[_T],
        *,
        device: Any = ...,
        copy: _Copy = ...,
        **options: Any,
    ) -> tuple[_T, ...]: ...

    # any other target (a str, a module): the shape only
    @overload
    def to(
        obj: _Tab, target: _N, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> dict[str, Any]: ...
    @overload
    def to(
        obj: _Src, target: _N, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> Any: ...
    @overload
    def to(
        obj: _AnyIterator, target: _N, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> Iterator[Any]: ...
    @overload
    def to(
        obj: dict[_K, _V], target: _N, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> dict[_K, Any]: ...
    @overload
    def to(
        obj: list[_V], target: _N, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> list[Any]: ...
    @overload
    def to(
        obj: _AnyTuple, target: _N, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> tuple[Any, ...]: ...
    @overload
    def to(
        obj: _Iterable, target: _N, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> Iterator[Any]: ...
    @overload
    def to(obj: _O, target: _N, *, device: Any = ..., copy: _Copy = ..., **options: Any) -> Any: ...

    def to(obj: Any, target: Any, *, device: Any = None, copy: _Copy = None, **options: Any) -> Any:
        """Convert ``obj`` to ``target`` (see :func:`interop_core.face.api.to`)."""
        return _api.to(obj, target, device=device, copy=copy, **options)

    # -- explain(): a Route, or a RouteTree for what to() gives a dict, list or tuple of --

    @overload
    def explain(
        obj: _Unknown, target: _N, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> Route | RouteTree: ...
    @overload
    def explain(
        obj: _Function, target: _N, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> Route: ...
    @overload
    def explain(
        obj: _Tab, target: _N, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> RouteTree: ...
    @overload
    def explain(
        obj: _Src, target: _N, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> Route: ...
    @overload
    def explain(
        obj: _AnyIterator, target: _N, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> Route: ...
    @overload
    def explain(
        obj: _AnyDict, target: _N, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> RouteTree: ...
    @overload
    def explain(
        obj: _AnyList, target: _N, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> RouteTree: ...
    @overload
    def explain(
        obj: _AnyTuple, target: _N, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> RouteTree: ...
    @overload
    def explain(
        obj: _Iterable, target: _N, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> Route: ...
    @overload
    def explain(
        obj: _O, target: _N, *, device: Any = ..., copy: _Copy = ..., **options: Any
    ) -> Route | RouteTree: ...

    def explain(
        obj: Any, target: Any, *, device: Any = None, copy: _Copy = None, **options: Any
    ) -> Route | RouteTree:
        """The route ``to()`` would take (see :func:`interop_core.face.api.explain`)."""
        result: Route | RouteTree = _api.explain(obj, target, device=device, copy=copy, **options)
        return result
else:
    from .api import explain, to

__all__ = ["explain", "to"]
