"""The core of an older commit, loaded beside the current one in this process.

``load(commit)`` extracts ``interop_core/`` and ``plugins/`` of ``commit`` (``git archive``)
into a temporary directory as the packages ``interop_core_base`` and ``interop_plugins_base``,
every ``interop_core``/``interop_plugins`` name in their files renamed (absolute imports, the
manager's built-in module names, the pluggy project, the entry-point group), imports them and
builds their registry from their own built-ins only (no entry points). Both cores share the
frameworks already imported, so a benchmark can time the old and new ``to()`` interleaved.
The directory is removed at exit.

Usage (a check): python benchmarks/baseline.py [COMMIT]
"""

from __future__ import annotations

import atexit
import importlib
import io
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple

#: The last commit before issue 17 (the core's third pass).
DEFAULT_COMMIT = "d5face2"
ROOT = Path(__file__).resolve().parent.parent
#: Folder in the repository -> package name it is imported under here.
FOLDERS = {"interop_core": "interop_core_base", "plugins": "interop_plugins_base"}
_NAMES = re.compile(rb"\binterop_(core|plugins)\b")


class Baseline(NamedTuple):
    """The old core, loaded: its commit, modules, registry (built-ins only) and ``to``."""

    commit: str  # the full hash
    label: str  # the short hash
    core: ModuleType
    plugins: ModuleType
    registry: Any
    to: Any


_loaded: dict[str, Baseline] = {}


def _git(*args: str) -> bytes:
    return subprocess.run(
        ["git", "-C", str(ROOT), *args], capture_output=True, check=True, timeout=60
    ).stdout


def _extract(commit: str, into: Path) -> None:
    """Write the renamed packages of ``commit`` under ``into``."""
    archive = _git("archive", "--format=tar", commit, *FOLDERS)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        for member in tar.getmembers():
            if not member.isfile():
                continue  # folders are made as their files need them; no links here
            top, _, rest = member.name.partition("/")
            dest = into / FOLDERS[top] / rest
            dest.parent.mkdir(parents=True, exist_ok=True)
            f = tar.extractfile(member)
            assert f is not None
            data = f.read()
            if dest.suffix == ".py":
                data = _NAMES.sub(rb"interop_\1_base", data)
            dest.write_bytes(data)


def load(commit: str = DEFAULT_COMMIT) -> Baseline | str:
    """The core of ``commit`` beside the current one, or a sentence saying why it cannot be."""
    if shutil.which("git") is None:
        return "git is not installed"
    try:
        full = _git("rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}").decode().strip()
    except (subprocess.SubprocessError, OSError):
        return f"commit {commit!r} is not in the repository at {ROOT}"
    if full in _loaded:
        return _loaded[full]
    if any(name in sys.modules for name in FOLDERS.values()):
        loaded = ", ".join(b.label for b in _loaded.values()) or "by another module"
        return f"another baseline is loaded already ({loaded}): one per process"
    tmp = Path(tempfile.mkdtemp(prefix="interop_core_base-"))
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    before = set(sys.modules)
    try:
        _extract(full, tmp)
        sys.path.insert(0, str(tmp))
        core = importlib.import_module("interop_core_base")
        plugins = importlib.import_module("interop_plugins_base")
        # Its own built-ins ("interop_plugins_base.numpy", ...), no entry points.
        registry = core.Registry(entry_points=False)
        core.set_default_registry(registry)
    except Exception as exc:  # an old core that no longer imports: say so, run the rest
        _unload(before, tmp)
        if isinstance(exc, subprocess.CalledProcessError):  # git's own words, not the command
            return f"git archive of {commit} failed: {exc.stderr.decode().strip()}"
        return f"the core of {commit} does not load: {type(exc).__name__}: {exc}"
    reached = sorted(
        m
        for m in set(sys.modules) - before
        if m.split(".")[0] in ("interop_core", "interop_plugins")
    )
    names = [name for name, _ in registry.pm.list_name_plugin()]
    foreign = [n for n in names if not n.startswith("interop_plugins_base.")]
    if reached or foreign or not names:
        _unload(before, tmp)
        return (
            f"the core of {commit} is not isolated: it imported {reached or 'nothing new'} "
            f"of the current core and registered plugins {foreign or names}"
        )
    base = Baseline(full, _git("rev-parse", "--short", full).decode().strip(), core, plugins,
                    registry, core.to)  # fmt: skip
    _loaded[full] = base
    return base


def _unload(before: set[str], tmp: Path) -> None:
    """Forget what a failed load imported and its folder, so a later load starts clean."""
    for name in set(sys.modules) - before:
        if name.split(".")[0] in FOLDERS.values():
            del sys.modules[name]
    if str(tmp) in sys.path:
        sys.path.remove(str(tmp))


if __name__ == "__main__":
    found = load(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_COMMIT)
    if isinstance(found, str):
        print(f"baseline: {found}")
        sys.exit(1)
    print(f"baseline {found.label} ({found.core.__file__}): plugins", end=" ")
    print(", ".join(name for name, _ in found.registry.pm.list_name_plugin()))
