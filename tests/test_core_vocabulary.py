"""The core names no framework: what it knows of numpy, torch, JAX, TensorFlow, CuPy or DALI
it learns from what their plugins declare (issue 17, "framework vocabulary leaves the core").

Every module of ``interop_core`` is parsed (not imported): no import statement may import a
framework, and no string constant but a docstring may name one. Comments and docstrings may
mention frameworks as examples.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[1] / "interop_core"

#: Modules no core module may import (the frameworks and their native halves).
FRAMEWORK_MODULES = (
    "numpy", "torch", "jax", "jaxlib", "tensorflow", "cupy", "nvidia.dali", "ml_dtypes",
)  # fmt: skip

#: A framework named in text: its name, or its usual module alias before a dot ("np.int32").
#: Only letters and digits bound a name, so "jax_enable_x64" and "numpy-like" count too.
NAMES = re.compile(
    r"(?<![a-z0-9])(?:numpy|torch|pytorch|jax|jaxlib|tensorflow|cupy|dali|ml_dtypes)(?![a-z0-9])"
    r"|(?<![a-z0-9])(?:np|jnp|tf|cp)\.",
    re.IGNORECASE,
)

#: (module, pattern the whole string matches, why it may stay). Keep this short: a message
#: that needs a framework's words takes them from that framework's spec instead.
ALLOWED: tuple[tuple[str, str, str], ...] = (
    # The command line's help shows real invocations, as any command's help does.
    ("__main__.py", r"(?s)examples:\n  python -m interop_core explain numpy tensorflow .*",
     "the explain command's examples in --help"),
    ("__main__.py", r"(?s)examples:\n  python -m interop_core graph --from torch --to jax .*",
     "the graph command's examples in --help"),
    ("__main__.py", r"example: python -m interop_core bench --from numpy --quick",
     "the bench command's example in --help"),
)  # fmt: skip
#: Modules that spell out the built-in targets for type checkers: the names users write
#: (typed.py's literals, targets.py's tokens) and the types they get back, which no
#: declaration of a plugin can give a type checker. Their framework imports must stay under
#: ``if TYPE_CHECKING:`` (checked below): at run time they import none.
TYPED = ("face/typed.py", "targets.py")


def _modules() -> list[Path]:
    return sorted(CORE.rglob("*.py"))


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings (or other bare string statements)."""
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    }


def _imports(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, module) of every absolute import."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def _allowed(module: str, text: str) -> bool:
    return any(m == module and re.fullmatch(p, text) for m, p, _ in ALLOWED)


def _strings(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, text) of every string constant but docstrings, f-string pieces included."""
    docs = _docstrings(tree)
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
    ]


def test_the_core_has_modules_to_check() -> None:
    names = {p.relative_to(CORE).as_posix() for p in _modules()}
    assert {"__init__.py", "engine/planner.py", "declare/predicates.py"} <= names, names


def _type_checking_lines(tree: ast.AST) -> set[int]:
    """The lines of the statements inside ``if TYPE_CHECKING:`` blocks."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for stmt in node.body:
                lines.update(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
    return lines


def test_no_core_module_imports_a_framework() -> None:
    bad = []
    for path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        typed = path.relative_to(CORE).as_posix() in TYPED
        checking = _type_checking_lines(tree) if typed else set()
        for line, module in _imports(tree):
            if line in checking:  # read by type checkers only
                continue
            if any(module == f or module.startswith(f + ".") for f in FRAMEWORK_MODULES):
                bad.append(f"{path.relative_to(CORE)}:{line}: import {module}")
    assert not bad, "\n".join(bad)


def test_no_core_string_names_a_framework() -> None:
    bad = []
    for path in _modules():
        module = path.relative_to(CORE).as_posix()
        if module in TYPED:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for line, text in _strings(tree):
            if NAMES.search(text) and not _allowed(module, text):
                bad.append(f"{module}:{line}: {text!r}")
    assert not bad, "strings naming a framework:\n" + "\n".join(bad)


@pytest.mark.parametrize(("module", "pattern", "why"), ALLOWED)
def test_every_allowed_string_is_still_there(module: str, pattern: str, why: str) -> None:
    """An entry whose string is gone is removed, so the list stays as short as it can."""
    tree = ast.parse((CORE / module).read_text(encoding="utf-8"))
    texts = [text for _, text in _strings(tree)]
    assert any(re.fullmatch(pattern, t) for t in texts), f"{module}: {why}: nothing matches"


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("call .resolve_conj()", False),
        ("a traced JAX value", True),
        ("convert outside tf.function", True),
        ("np.int32", True),
        ("jnp.int32", True),
        ("jax_enable_x64", True),
        ("interop_plugins.frameworks.numpy", True),
        ("TF_CPP_MIN_LOG_LEVEL", False),  # an environment variable, no name in it
        ("numbers", False),
        ("a tensor", False),
        ("PyTorch", True),
        ("a nvidia.dali pipeline", True),
    ],
)
def test_the_name_pattern(text: str, names: bool) -> None:
    assert bool(NAMES.search(text)) is names
