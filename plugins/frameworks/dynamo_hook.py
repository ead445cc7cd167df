"""When ``torch._dynamo`` is imported, have dynamo trace ``to()``'s stand-in
(frameworks/torch_compile.py), importing that module only then: a process that never
compiles pays one comparison per later import, not the stand-in's module (~0.2 ms of the
first call).

:func:`arm` is called when the torch plugin loads: it registers the stand-in at once when
``torch._dynamo`` is imported already, else installs a one-shot ``sys.meta_path`` finder
that registers it right after ``torch._dynamo`` has been imported (Python has no
post-import hook). Nothing here imports torch or dynamo.
"""

from __future__ import annotations

import sys
import warnings
from contextlib import suppress
from typing import Any

#: The module whose import makes the stand-in registrable (and whose import is too heavy
#: to make here).
DYNAMO = "torch._dynamo"


def arm() -> None:
    """Register the stand-in as soon as dynamo is imported: now if it is, else once it is.
    Imports nothing (``torch._dynamo`` is imported by ``torch.compile``, not here)."""
    if DYNAMO in sys.modules:
        _install_quietly()
    elif not any(isinstance(f, _AfterDynamo) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterDynamo())


class _AfterDynamo:
    """A one-shot ``sys.meta_path`` finder: registers the stand-in right after
    ``torch._dynamo`` has been imported. Every other import costs it one comparison."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != DYNAMO:
            if _imported(DYNAMO):  # imported past this finder (injected, another finder)
                self._leave()
                _install_quietly()
            return None
        self._leave()  # before the search below, which walks sys.meta_path
        try:
            from importlib.util import find_spec

            spec = find_spec(name)
            loader: Any = getattr(spec, "loader", None)
            run = getattr(loader, "exec_module", None)
        except Exception:  # the import machinery's own finders report it, as without us
            return None
        if run is None:  # a loader without exec_module: registered at the next plugin load
            return spec

        def exec_module(module: Any) -> None:
            run(module)
            _install_quietly()

        loader.exec_module = exec_module  # this spec's own loader object
        return spec

    def _leave(self) -> None:
        if self in sys.meta_path:  # another thread may have taken it out first
            with suppress(ValueError):
                sys.meta_path.remove(self)


def _imported(name: str) -> bool:
    """Whether module ``name`` is imported and done executing (not half-initialised)."""
    module = sys.modules.get(name)
    return module is not None and not getattr(module.__spec__, "_initializing", False)


def _install_quietly() -> None:
    """Register the stand-in, turning a failure into a warning: it runs inside an import
    (of torch._dynamo) or a plugin's load, which must not fail for it."""
    try:
        from . import torch_compile

        torch_compile.enable()
    except Exception as exc:
        warnings.warn(
            "interop_plugins.frameworks.torch_compile could not register to() with "
            f"torch.compile ({type(exc).__name__}: {exc}); compiled code that calls to() "
            "graph-breaks there, as without it.",
            RuntimeWarning,
            stacklevel=2,
        )
