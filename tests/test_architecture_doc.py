"""docs/architecture.md's layout block names every source file of the core and the built-in
plugins, and no file that does not exist.

The block is the fenced code block under "## Layout". Each line is either a *name line*:
names (a folder ending in "/", or a file) separated by single spaces, then two or more
spaces and what they are; or a *continuation* of the description above it, indented to the
description column. A folder's children are indented two spaces deeper than the folder, and
a folder stands for its ``__init__.py`` (unless the block names that too).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
#: The trees the block describes, and the files in them it must name.
TREES = ("interop_core", "plugins")
SOURCES = (".py", ".pyi", ".c")


def layout_block(text: str) -> list[str]:
    """The lines of the first fenced block after the "## Layout" heading."""
    after = text.split("\n## Layout\n", 1)[1]
    match = re.search(r"^```[^\n]*\n(.*?)^```", after, re.S | re.M)
    assert match, "docs/architecture.md: no fenced block under ## Layout"
    return match.group(1).splitlines()


def named_paths(lines: list[str]) -> list[str]:
    """The paths (relative to the repository) the block's name lines give, in order."""
    # The description column: where the first line's description starts.
    first = re.match(r"(\S+\s{2,})", lines[0])
    assert first, f"the block's first line has no description: {lines[0]!r}"
    column = len(first.group(1))
    folders: list[tuple[int, str]] = []  # (indent, path) of the folders enclosing a line
    paths: list[str] = []
    inits: list[str] = []
    for line in lines:
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        if indent >= column:
            continue  # a continuation of the description above
        assert indent % 2 == 0, f"odd indent in the layout: {line!r}"
        while folders and folders[-1][0] >= indent:
            folders.pop()
        parent = folders[-1][1] if folders else ""
        assert indent == (folders[-1][0] + 2 if folders else 0), f"indent skips a level: {line!r}"
        names = re.split(r"\s{2,}", line.strip(), maxsplit=1)[0].split(" ")
        for name in names:
            if name.endswith("/"):
                folders.append((indent, parent + name))
                inits.append(parent + name + "__init__.py")
            else:
                paths.append(parent + name)
    # A folder stands for its __init__.py, unless the block names that too.
    return paths + [init for init in inits if init not in paths]


def source_files() -> set[str]:
    """Every source file under the trees, relative to the repository."""
    return {
        path.relative_to(ROOT).as_posix()
        for tree in TREES
        for path in (ROOT / tree).rglob("*")
        if path.suffix in SOURCES and "__pycache__" not in path.parts
    }


@pytest.fixture(scope="module")
def named() -> list[str]:
    return named_paths(layout_block(DOC.read_text(encoding="utf-8")))


def test_the_layout_names_every_source_file(named: list[str]) -> None:
    missing = sorted(source_files() - set(named))
    assert missing == [], f"docs/architecture.md's layout block does not name {missing}"


def test_the_layout_names_only_files_that_exist(named: list[str]) -> None:
    absent = sorted(p for p in named if not (ROOT / p).is_file())
    assert absent == [], f"docs/architecture.md's layout block names missing files {absent}"


def test_the_layout_names_each_file_once(named: list[str]) -> None:
    repeated = sorted({p for p in named if named.count(p) > 1})
    assert repeated == []


def test_the_parser_reads_names_folders_and_continuations() -> None:
    lines = [
        "top/                 the top",
        "  a.py b.py          two files",
        "                     a continuation naming c.py, which is not a name",
        "  sub/               a folder",
        "    c.py             in the folder",
        "  d.py               back up",
    ]
    assert named_paths(lines) == [
        "top/a.py",
        "top/b.py",
        "top/sub/c.py",
        "top/d.py",
        "top/__init__.py",
        "top/sub/__init__.py",
    ]
