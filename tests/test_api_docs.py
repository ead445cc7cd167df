"""The API reference (docs/api, Sphinx autodoc) documents every public name.

Public: ``interop_core.__all__``, ``interop_core.plugin.__all__``,
``interop_core.testing.__all__``, the hook specifications of
``interop_core.declare.hookspecs`` and ``interop_core.targets.__all__``. Each is documented
once, where users import it: a name ``interop_core.plugin`` shares with ``interop_core`` is
documented as ``interop_core.X`` and the plugin page links to it.

The first tests read the reST sources (no Sphinx needed); the last builds the reference
(``sphinx-build -W``: a warning fails it) in a child process and reads the names it
documented from its inventory, ``objects.inv``. It skips without Sphinx, unless the session's
INTEROP_REQUIRE names "sphinx" (``nox -s docs``): then it fails.
"""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from conftest import required

import interop_core
import interop_core.plugin
import interop_core.testing
from interop_core.declare import hookspecs

ROOT = Path(__file__).resolve().parent.parent
API = ROOT / "docs" / "api"

_MODULE = re.compile(r"^\.\. (?:auto)?(?:current)?module:: (\S+)\s*$")
_OBJECT = re.compile(
    r"^\s*\.\. (?:auto(?:class|exception|function|data|attribute|method|decorator)|"
    r"py:(?:class|exception|function|data|attribute|method|decorator)):: ([\w.]+)"
)


def _targets_module() -> object | None:
    """``interop_core.targets`` where it exists (it is documented only then)."""
    try:
        return importlib.import_module("interop_core.targets")
    except ImportError:
        return None


def public_names() -> set[str]:
    """The full name under which each public object must be documented."""
    top = set(interop_core.__all__)
    names = {f"interop_core.{n}" for n in top}
    # What plugin shares with interop_core is documented once, as interop_core.X.
    names |= {f"interop_core.plugin.{n}" for n in interop_core.plugin.__all__ if n not in top}
    names |= {f"interop_core.testing.{n}" for n in interop_core.testing.__all__}
    names |= {f"{hookspecs.__name__}.{n}" for n in hook_specs()}
    targets = _targets_module()
    if targets is not None:
        all_: list[str] = getattr(targets, "__all__", [])
        names |= {f"interop_core.targets.{n}" for n in all_ if n not in top}
    return names


def hook_specs() -> list[str]:
    """The functions pluggy knows as hook specifications of the project."""
    marker = f"{hookspecs.PROJECT}_spec"
    return [n for n, f in vars(hookspecs).items() if callable(f) and hasattr(f, marker)]


def documented_in_sources() -> set[str]:
    """The full names the .rst files document with an autodoc (or py:) directive."""
    found: set[str] = set()
    for page in sorted(API.glob("*.rst")):
        module = ""
        for line in page.read_text(encoding="utf-8").splitlines():
            if m := _MODULE.match(line):
                module = m.group(1)
            elif m := _OBJECT.match(line):
                name = m.group(1)
                found.add(name if name.startswith("interop_core") else f"{module}.{name}")
    return found


def test_the_public_names_are_found() -> None:
    """The lists this file checks against are the real ones, not empty by mistake."""
    names = public_names()
    assert {"interop_core.to", "interop_core.explain", "interop_core.NoRouteError"} <= names
    assert "interop_core.plugin.Needs" in names
    assert "interop_core.plugin.ConverterSpec" not in names  # documented as interop_core's
    assert {"interop_frameworks", "interop_converters", "interop_detect"} <= set(hook_specs())


def test_every_public_name_has_a_directive() -> None:
    missing = sorted(public_names() - documented_in_sources())
    assert not missing, f"docs/api/*.rst documents none of: {', '.join(missing)}"


def test_plugin_page_links_the_names_it_shares_with_interop_core() -> None:
    """interop_core.plugin's page lists (links) what plugins import from it but
    interop_core documents."""
    text = (API / "plugin.rst").read_text(encoding="utf-8")
    shared = [n for n in interop_core.plugin.__all__ if n in interop_core.__all__]
    assert shared, "interop_core.plugin shares no name with interop_core: update this test"
    unlinked = [n for n in shared if not re.search(rf":\w+:`~?interop_core\.{n}`", text)]
    assert not unlinked, f"docs/api/plugin.rst does not link: {', '.join(unlinked)}"


def inventory_names(path: Path) -> set[str]:
    """The Python objects a Sphinx inventory (objects.inv, version 2) lists: four header
    lines, then zlib-compressed lines ``name domain:role priority uri display-name``."""
    header, _, body = path.read_bytes().partition(b"zlib.\n")
    assert header.startswith(b"# Sphinx inventory version 2"), header[:40]
    lines = zlib.decompress(body).decode("utf-8").splitlines()
    return {m.group(1) for line in lines if (m := re.match(r"(\S+) py:\w+ ", line))}


def test_the_built_reference_documents_every_public_name(tmp_path: Path) -> None:
    """sphinx-build -W (warnings are errors) passes, and its inventory has every name.

    In a child process: the build fails when it imports a framework (docs/api/conf.py), and
    this process may have imported some for other tests."""
    try:
        import sphinx
    except ImportError:
        if "sphinx" in required():
            pytest.fail('the docs session needs Sphinx: pip install "sphinx>=8"')
        pytest.skip('Sphinx is not installed (pip install "sphinx>=8"; nox -s docs)')
    if int(sphinx.__version__.split(".")[0]) < 8:
        pytest.skip(f"Sphinx {sphinx.__version__} is older than the 8 docs/api needs")
    out = tmp_path / "html"
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html"]
    done = subprocess.run(
        [*cmd, str(API), str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, f"sphinx-build failed:\n{done.stdout}\n{done.stderr}"
    inventory = inventory_names(out / "objects.inv")
    missing = sorted(public_names() - inventory)
    assert not missing, f"the built reference documents none of: {', '.join(missing)}"
    # The modules a reader looks up are there as modules too.
    modules = {"interop_core", "interop_core.plugin", "interop_core.testing", hookspecs.__name__}
    assert modules <= inventory
