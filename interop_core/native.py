"""The switch between the C fast paths and the pure-Python ones.

interop-core builds two optional C extensions where a compiler exists (setup.py):
``interop_core._warm`` (to()'s warm path, see face/api.py) and ``interop_plugins._native``
(the built-in plugins' keys and DLPack C exchanges). Each has a Python equivalent that runs
where it is not built, or everywhere when ``INTEROP_CORE_PURE_PYTHON=1`` is set (the nox
sessions that test the pure-Python paths set it). Only ``os`` is imported here.
"""

from __future__ import annotations

import os

#: Set to 1 (or true/yes) to run the pure-Python paths although the extensions are built.
PURE_PYTHON_ENV = "INTEROP_CORE_PURE_PYTHON"


def pure_python() -> bool:
    """True when the environment asks for the pure-Python paths."""
    return os.environ.get(PURE_PYTHON_ENV, "").strip().lower() not in ("", "0", "false", "no")


def warm_path() -> str:
    """Where to()'s warm path runs in this process, in words (``doctor`` prints it)."""
    from .face import api

    if hasattr(api.to, "python"):
        return "in C (the extension interop_core._warm)"
    if pure_python():
        return f"in Python ({PURE_PYTHON_ENV}=1 is set)"
    return (
        "in Python (the optional C extension interop_core._warm is not built: no C compiler "
        "when interop-core was installed; reinstall with one for faster warm calls)"
    )
