"""Files as the SOURCE of ``explain``: what is read, and how, before ``explain()`` is asked.

The plugins declare the files they read (``FrameworkSpec.diagnostics.files``, a
:class:`~interop_core.plugin.FileReader` each): a file ``to()`` opens itself comes back as
a ``pathlib.Path`` (a safetensors file: its plugin parses the header and maps it; nothing is
read or converted), others are read as a user would before calling ``to()`` (the numpy
plugin reads .npy and .npz files, pyarrow's Parquet and Arrow IPC files). The command line
names no file format and no library: what it reads, and with what, is what the plugins
declare.

Only a regular file is read (a FIFO would block the read, a device never end); a failure
to read it is a :class:`FileSourceError` (exit status 2 of ``explain``). Imported by the
command line only.
"""

from __future__ import annotations

import os
import pathlib
import stat
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from ..declare.errors import InteropError
from ..declare.specs import FileReader
from .api import default_registry


def readers() -> dict[str, tuple[str, FileReader]]:
    """Suffix -> (the framework, its reader), from every plugin (all loaded: a reader's
    framework need not be imported yet); the first declared wins a suffix."""
    found: dict[str, tuple[str, FileReader]] = {}
    for spec in default_registry().load_all().frameworks.values():
        for reader in spec.diagnostics.files:
            for suffix in reader.suffixes:
                found.setdefault(suffix, (spec.name, reader))
    return found


class FileSourceError(Exception):
    """A SOURCE file cannot be read (exit status 2 of ``explain``)."""


class SourceFile(NamedTuple):
    """What ``explain`` asks about for a file: the object, and a line about what was read."""

    obj: Any
    line: str


def looks_like_file(text: str, is_framework: Callable[[str], bool]) -> bool:
    """Whether ``explain``'s SOURCE names a file rather than a framework.

    A framework's name or alias stays one even if a file of that name lies in the current
    directory; a path separator, a suffix a plugin reads (:func:`readers`), or an existing
    path that is no framework's name makes a file.
    """
    if os.sep in text or "/" in text or pathlib.PurePath(text).suffix.lower() in readers():
        return True
    return not is_framework(text) and os.path.lexists(text)


def _check_regular(path: pathlib.Path) -> None:
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise FileSourceError(
            f"no such file: {str(path)!r} (SOURCE is read as a file: it has a path separator "
            f"or a suffix of {', '.join(sorted(readers()))})."
        ) from None
    except (OSError, ValueError) as exc:
        raise FileSourceError(f"cannot read {str(path)!r}: {exc}.") from None
    if not stat.S_ISREG(mode):
        what = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        raise FileSourceError(f"cannot read {str(path)!r}: it is {what}; name a file.")


def _summary(obj: Any) -> str:
    """What was read, counted: "a pyarrow Table of 5 rows and 3 columns", "2 arrays"."""
    if isinstance(obj, dict):
        return f"{len(obj)} array(s): {', '.join(map(str, obj))}" if obj else "no arrays"
    names = getattr(obj, "column_names", None)
    if names is not None:
        return (
            f"a {type(obj).__module__.split('.')[0]} {type(obj).__name__} of {obj.num_rows} "
            f"rows and {len(names)} column(s): {', '.join(names)}"
        )
    return f"a {obj.dtype} array of shape {tuple(obj.shape)}"


def path_line(text: str, framework: str, routes: int) -> str:
    """The line about a file ``to()`` opens itself (a pathlib.Path), once explained."""
    return (
        f"File: {text} ({framework}, opened by to() itself from a pathlib.Path: the header "
        f"read, nothing converted): {routes} tensor(s)"
    )


def read_source(text: str, columns: Sequence[str] | None = None) -> SourceFile:
    """The object ``explain`` asks about for the file ``text``, and a line saying what was
    read ("" for a pathlib.Path, which ``explain()`` opens: see :func:`path_line`). Raises
    FileSourceError when the file is missing or cannot be read."""
    path = pathlib.Path(text)
    _check_regular(path)
    found = readers().get(path.suffix.lower())
    if found is None:  # a Path of another suffix: the plugins' own detection decides
        if columns is not None:
            raise FileSourceError("--columns picks columns of a table file or arrays of one.")
        return SourceFile(path, "")
    framework, reader = found
    picked = None if columns is None else tuple(columns)
    try:
        obj = reader.read(path, picked)
    except InteropError as exc:  # a reader's refusal (--columns it cannot pick) in words
        raise FileSourceError(str(exc)) from None
    except ImportError as exc:
        raise FileSourceError(
            f"cannot read {text!r}: {reader.kind} files are read by the {framework} plugin "
            f"({reader.how or reader.kind}), and what it needs is not installed ({exc})."
        ) from None
    except Exception as exc:  # the library's own words for a file it cannot read
        first = (str(exc).strip().splitlines() or [""])[0]
        article = "an" if reader.kind[0] in "AEIO." else "a"
        raise FileSourceError(
            f"cannot read {text!r} as {article} {reader.kind} file: {type(exc).__name__}: {first}"
        ) from None
    if isinstance(obj, pathlib.Path):  # a file to() opens itself
        return SourceFile(obj, "")
    how = f", read with {reader.how}" if reader.how else ""
    return SourceFile(obj, f"File: {text} ({reader.kind}{how}): {_summary(obj)}")
