"""The built-in plugins' optional C fast paths: the extension ``interop_plugins._native``.

Built by ``pip install`` where a C compiler exists (setup.py, ``optional=True``); where it is
missing, or ``INTEROP_CORE_PURE_PYTHON=1`` is set, :func:`native` is None and every plugin
runs its Python code: numpy's keys in frameworks/numpy.py, and the exchanges through
``torch.from_numpy`` and ``Tensor.numpy()`` instead of DLPack's C exchange API (the C edges
refuse, and ``explain(x, target).refusals`` says why).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import cache
from typing import Any

from interop_core.plugin import PURE_PYTHON_ENV, pure_python

_EXTENSION = "interop_plugins._native"

#: Why the C edges refuse when the extension is not there.
MISSING = (
    "the optional C extension interop_plugins._native is not built (no C compiler when "
    f"interop-core was installed) or {PURE_PYTHON_ENV}=1 is set; the Python path runs instead"
)


@cache
def native() -> Any:
    """The extension module, or None where it is not built or pure Python is asked for."""
    if pure_python():
        return None
    try:
        return importlib.import_module(_EXTENSION)
    except ImportError:
        return None


def require_native() -> Any:
    """The extension module, or ImportError saying why it is not there (a C edge's loader:
    the core reports it as any converter whose library is missing)."""
    module = native()
    if module is None:
        raise ImportError(MISSING)
    return module


def chain(first: Callable[[Any], Any], then: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``then(first(x))`` as one runner: in C where the extension is built (no Python frame
    between the two calls on the warm path), else a Python function."""
    module = native()
    if module is not None:
        return module.Chain(first, then)  # type: ignore[no-any-return]

    def chained(x: Any) -> Any:
        return then(first(x))

    return chained
