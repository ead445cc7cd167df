"""The build backend: setuptools, taken from the environment when it is installed there.

pip builds in an isolated environment and first installs the backend's requirements into
it; with no network (the GPU machines) ``pip install --no-index --no-deps -e .`` then fails
before building, although the environment has setuptools. This backend asks for setuptools
only where the environment lacks it (``get_requires_for_build_*``) and otherwise imports the
environment's own (appended to ``sys.path``, so what the isolated environment holds wins).
Every hook is setuptools.build_meta's.
"""

from __future__ import annotations

import importlib
import sys
import sysconfig
from types import ModuleType
from typing import Any

REQUIRES = ["setuptools>=68"]


def _setuptools() -> ModuleType | None:
    """setuptools.build_meta from the isolated environment, else from the one it isolates."""
    try:
        return importlib.import_module("setuptools.build_meta")
    except ImportError:
        pass
    for key in ("purelib", "platlib"):
        path = sysconfig.get_paths()[key]
        if path not in sys.path:
            sys.path.append(path)
    try:
        return importlib.import_module("setuptools.build_meta")
    except ImportError:
        return None


def _requires(hook: str, config_settings: Any = None) -> list[str]:
    meta = _setuptools()
    return REQUIRES if meta is None else list(getattr(meta, hook)(config_settings))


def _delegate(hook: str) -> Any:
    def run(*args: Any, **kwargs: Any) -> Any:
        meta = _setuptools()
        if meta is None:
            raise RuntimeError(f"setuptools is not installed; pip install {REQUIRES[0]!r}")
        return getattr(meta, hook)(*args, **kwargs)

    run.__name__ = hook
    return run


def get_requires_for_build_wheel(config_settings: Any = None) -> list[str]:
    return _requires("get_requires_for_build_wheel", config_settings)


def get_requires_for_build_sdist(config_settings: Any = None) -> list[str]:
    return _requires("get_requires_for_build_sdist", config_settings)


def get_requires_for_build_editable(config_settings: Any = None) -> list[str]:
    return _requires("get_requires_for_build_editable", config_settings)


build_wheel = _delegate("build_wheel")
build_sdist = _delegate("build_sdist")
build_editable = _delegate("build_editable")
prepare_metadata_for_build_wheel = _delegate("prepare_metadata_for_build_wheel")
prepare_metadata_for_build_editable = _delegate("prepare_metadata_for_build_editable")
