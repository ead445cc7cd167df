"""Sphinx configuration of interop_core's API reference (built from the docstrings).

Build: ``sphinx-build -W --keep-going -b html docs/api <outdir>`` (``nox -s docs`` does it).
autodoc imports interop_core's own modules only: they import no framework (a check at the
end of the build fails it if one was imported), so the reference builds in an environment
without numpy, torch, JAX or TensorFlow.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import importlib.util
import inspect
import re
import sys
from pathlib import Path
from typing import Any

# The checkout's package, not an installed copy (none need be installed).
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

#: Frameworks the build must not import (autodoc imports only interop_core's modules).
FRAMEWORKS = ("numpy", "torch", "jax", "jaxlib", "tensorflow", "cupy", "nvidia", "pyarrow",
              "polars", "pandas", "scipy")  # fmt: skip

project = "interop_core"
author = "interop_core contributors"
copyright = "interop_core contributors"
release = version = importlib.import_module("interop_core").__version__

extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon"]

# Signatures carry the types; the docstrings are prose, not parameter lists.
autodoc_typehints = "signature"
autodoc_typehints_format = "short"
autodoc_member_order = "bysource"
autodoc_preserve_defaults = True
# Each directive lists its members itself (given "members" here, Sphinx 9 ignores a
# directive's own list). Undocumented members show too: a record's or named tuple's fields
# are its API, commented or not. The classes whose bases say something (errors, named
# tuples, str) ask for :show-inheritance: themselves: Sphinx 9 would print "Bases: object"
# on every record.
autodoc_default_options = {"undoc-members": True}
autodoc_class_signature = "mixed"
# One parameter per line once a signature is longer than this.
python_maximum_signature_line_length = 90
python_display_short_literal_types = True
add_module_names = False
toc_object_entries_show_parents = "hide"

# Every cross-reference must resolve, the type hints' too (-n). Names outside interop_core
# are not in this reference, and the build reads no other project's inventory (it runs
# offline): the standard library's abstract classes, the frameworks' array types (the
# target tokens' annotations) and pluggy's names are left unlinked.
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(collections\.abc|typing|contextlib|types)\.\w+"),
    (r"py:.*", r"(numpy|npt|torch|jax|tensorflow|cupy|pyarrow|scipy)\.[\w.]+"),
    (r"py:.*", r"pluggy\.[\w.]+"),
]
#: The engine's own classes, which public signatures name: ``Registry.ready()`` returns the
#: registry's ``State`` (its snapshot: read it through ``to()``, ``explain()`` and the
#: specs), its constructor takes a plugin manager. Named, not documented: they may change.
nitpick_ignore = [
    ("py:class", "interop_core.engine.state.State"),
    ("py:class", "interop_core.engine.manager.InteropPluginManager"),
]
napoleon_google_docstring = True
napoleon_numpy_docstring = False

# ``literal`` (reST's interpreted text) reads as code, as the docstrings mean it.
default_role = "literal"

html_theme = "alabaster"
html_title = f"interop_core {release} API reference"
html_static_path: list[str] = []
templates_path: list[str] = []
exclude_patterns = ["_build"]


# -- a name re-exported by a public module (``interop_core.plugin.ALIGNMENT``) carries the
# ``#:`` comment of the module that defines it ---------------------------------------------


def _source_of(module: str, name: str) -> tuple[str, str] | None:
    """The module (and name) that ``from X import name`` in ``module`` reads, if any."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return None
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    package = module if spec.submodule_search_locations else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    base = (
                        importlib.util.resolve_name("." * node.level + (node.module or ""), package)
                        if node.level
                        else node.module
                    )
                    return (base or ""), alias.name
    return None


def _comment_of(module: str, name: str, depth: int = 0) -> list[str] | None:
    """The ``#:`` comment of ``name`` in ``module``, following re-exports."""
    from sphinx.pycode import ModuleAnalyzer

    try:
        docs = ModuleAnalyzer.for_module(module).find_attr_docs()
    except Exception:
        return None
    if ("", name) in docs:
        return list(docs[("", name)])
    found = _source_of(module, name) if depth < 4 else None
    return _comment_of(*found, depth + 1) if found else None


def _reexported_comment(
    app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]
) -> None:
    if what != "data":
        return
    module, _, attr = name.rpartition(".")
    found = _source_of(module, attr)
    comment = _comment_of(*found) if found else None
    if comment:
        lines[:] = comment
    elif "\n".join(lines).strip() == (type(obj).__doc__ or "").strip():
        lines[:] = []  # a constant without a comment: not str's or int's docstring


# -- napoleon reads Google-style sections (Args:, Returns:) where a docstring has them; an
# attribute's or constant's docstring it would read as ``type: description``, and the
# comments here are prose ("The goal device with its index (for a function: ...)"): those
# keep the lines autodoc gave. -------------------------------------------------------------

_ATTRIBUTES = ("attribute", "data", "property")
_before_napoleon: dict[str, list[str]] = {}


def _keep_attribute_lines(
    app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]
) -> None:
    if what in _ATTRIBUTES:
        _before_napoleon[name] = list(lines)


def _restore_attribute_lines(
    app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]
) -> None:
    if what in _ATTRIBUTES and name in _before_napoleon:
        lines[:] = _before_napoleon.pop(name)


def _public_bases(app: Any, name: str, obj: Any, options: Any, bases: list[Any]) -> None:
    """``Bases: NamedTuple`` names typing's, not the module that makes them cheaply."""
    import typing

    from interop_core.declare import records

    bases[:] = [typing.NamedTuple if b is records.NamedTuple else b for b in bases]


_FIELD_ALIAS = re.compile(r"^Alias for field number \d+$")


def _no_field_alias(
    app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]
) -> None:
    """A named tuple's uncommented field says nothing rather than "Alias for field number 0"."""
    if what in _ATTRIBUTES and len(lines) <= 2 and lines and _FIELD_ALIAS.match(lines[0]):
        lines[:] = []


def _signature(
    app: Any,
    what: str,
    name: str,
    obj: Any,
    options: Any,
    signature: str | None,
    return_annotation: str | None,
) -> tuple[str, str | None] | None:
    """A record's (``@record``'s frozen dataclass) fields as its signature: its ``__init__``
    is one generic ``(*args, **kwargs)`` shared by every record. A context manager's
    result is what its ``with`` block gets, not an iterator."""
    from sphinx.util.inspect import object_description  # sorts sets: the same every build

    wrapped = getattr(obj, "__wrapped__", None)
    if what == "function" and inspect.isgeneratorfunction(wrapped) and return_annotation:
        # @contextlib.contextmanager: used in a ``with`` block, not iterated.
        managed = re.sub(r"^[\w.~]*Iterator\[(.*)\]$", r"\1", return_annotation)
        return signature or "", f"~contextlib.AbstractContextManager[{managed}]"
    if what == "class" and getattr(obj, "_is_protocol", False):
        return "", return_annotation  # a Protocol: implemented, never constructed
    if what not in ("class", "exception") or not dataclasses.is_dataclass(obj):
        return None
    shown = []
    for f in dataclasses.fields(obj):
        if not f.init:
            continue
        if f.default is not dataclasses.MISSING:
            value = "..." if callable(f.default) else object_description(f.default)
            shown.append(f"{f.name}={value}")
        elif f.default_factory is not dataclasses.MISSING:
            shown.append(f"{f.name}=<factory>")
        else:
            shown.append(f.name)
    return f"({', '.join(shown)})", return_annotation


def _no_framework_imported(app: Any, exception: Exception | None) -> None:
    loaded = sorted({m.split(".")[0] for m in sys.modules} & set(FRAMEWORKS))
    if exception is None and loaded:
        raise RuntimeError(
            f"building the API reference imported {', '.join(loaded)}: autodoc must import "
            "only interop_core's own modules, which import no framework."
        )


def setup(app: Any) -> None:
    # napoleon's handler runs at the default priority, 500.
    app.connect("autodoc-process-docstring", _reexported_comment, priority=100)
    app.connect("autodoc-process-docstring", _keep_attribute_lines, priority=200)
    app.connect("autodoc-process-docstring", _restore_attribute_lines, priority=800)
    app.connect("autodoc-process-docstring", _no_field_alias, priority=900)
    app.connect("autodoc-process-signature", _signature)
    app.connect("autodoc-process-bases", _public_bases)
    app.connect("build-finished", _no_framework_imported)
