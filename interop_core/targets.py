"""Typed target tokens: ``to(x, TORCH)`` is ``to(x, "torch")`` with the result's type known.

A :class:`Target` is a framework's name (a ``str``) that also carries, for type checkers,
the type its conversions return: ``to(x, TORCH)`` is typed ``torch.Tensor`` (an array in),
``dict[str, torch.Tensor]`` (a dict of arrays in), and so on; see
``interop_core.face.typed``. At run time a token is the name and nothing more (the
interned ``str``, as :func:`typing.NewType` hands back its argument): ``to(x, TORCH)`` is
``to(x, "torch")``, on the warm path too.

A plugin exports a token for the framework it adds, typed with its array class::

    from interop_core.targets import Target
    MYARRAY: Target[MyArray] = Target("myframework")

This module is loaded only when imported (``interop_core.Target`` loads it on first use):
``import interop_core`` stays free of ``typing``. The frameworks named below are imported
by type checkers only.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    import cupy
    import jax
    import numpy.typing as npt
    import pyarrow
    import scipy.sparse
    import tensorflow
    import torch

__all__ = ["CUPY", "JAX", "NUMPY", "PYARROW", "SCIPY", "TENSORFLOW", "TORCH", "Target"]

#: The type ``to(x, target)`` returns for an array ``x``. Covariant: a
#: ``Target[torch.Tensor]`` is a ``Target[object]``.
T_co = TypeVar("T_co", covariant=True)


class Target(str, Generic[T_co]):
    """A framework's name (or alias, any case) that tells type checkers what ``to()``
    returns for it: ``Target[torch.Tensor]("torch")``.

    Type checkers see a ``str`` subclass; at run time ``Target(name)`` returns ``name``
    itself, interned, as :func:`typing.NewType` returns its argument: ``TORCH is "torch"``
    (the literal is interned too), so ``to()``'s warm path finds the very key its plan
    cache holds, an identity test, where an instance of a subclass would cost an equality
    test (~15 ns here), and every use of a name (resolution, errors, ``==``, hashing,
    pickling) is the name's. ``isinstance(TORCH, Target)`` is therefore False. Only the
    name reaches the registry, when ``to()`` resolves it: a token of a framework whose
    plugin is not installed raises the same error as its name would.
    """

    __slots__ = ()

    if not TYPE_CHECKING:  # what runs; type checkers keep str's constructor

        def __new__(cls, name):
            if not isinstance(name, str) or not name:
                from .declare.errors import OptionError

                raise OptionError(
                    f"Target() takes a framework's name as a non-empty str, not "
                    f"{type(name).__qualname__} {name!r}: write Target('torch'), or "
                    "Target('<the name your plugin's FrameworkSpec declares>')."
                )
            return sys.intern(str(name))  # str(): a str subclass cannot be interned


# The built-in frameworks that to() converts into (their plugins' FrameworkSpec names).
NUMPY: Target[npt.NDArray[Any]] = Target("numpy")
TORCH: Target[torch.Tensor] = Target("torch")
JAX: Target[jax.Array] = Target("jax")
TENSORFLOW: Target[tensorflow.Tensor] = Target("tensorflow")
CUPY: Target[cupy.ndarray] = Target("cupy")
# A ChunkedArray (an spmatrix) given to pyarrow (scipy) comes back as it is: the tokens say
# either (``to(x, "pyarrow")`` and ``to(x, "scipy")`` tell the two apart by the source).
PYARROW: Target[pyarrow.Array | pyarrow.ChunkedArray] = Target("pyarrow")
SCIPY: Target[scipy.sparse.sparray | scipy.sparse.spmatrix] = Target("scipy")
