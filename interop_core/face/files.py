"""Files as the SOURCE of ``explain``: what is read, and how, before ``explain()`` is asked.

- A file the project itself reads is handed to ``explain()`` as a ``pathlib.Path``, as
  ``to()`` takes it: a safetensors file (frameworks/safetensors.py parses its header and
  maps it; nothing is read or converted), or any other suffix a plugin's framework claims
  a Path for (the plugin refuses what it cannot open, naming why).
- Files the project has no reader for are read as a user would before calling ``to()``:
  Parquet with ``pyarrow.parquet.read_table(path, memory_map=True)`` (decoded into memory
  pyarrow allocates), Arrow IPC files (Feather v2) with ``pyarrow.ipc.open_file`` over
  ``pyarrow.memory_map(path)`` (columns stay in the read-only mapping, so routes that would
  make it writable copy), ``.npy`` with ``numpy.load(path, mmap_mode="r")`` (a read-only
  memory map) and ``.npz`` with ``numpy.load(path, allow_pickle=False)``.

Only a regular file is read (a FIFO would block the read, a device never end); a failure
to read it is a :class:`FileSourceError` (exit status 2 of ``explain``). Imported by the
command line only; a reader imports its library when it runs.
"""

from __future__ import annotations

import os
import pathlib
import stat
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

#: Suffix -> (kind of file, how the command line reads it) for files the project does not
#: read itself (a Path of another suffix goes to ``explain()`` as it is).
READ_HERE = {
    ".parquet": ("Parquet", "pyarrow.parquet.read_table(path, memory_map=True)"),
    ".pq": ("Parquet", "pyarrow.parquet.read_table(path, memory_map=True)"),
    ".arrow": ("Arrow IPC", "pyarrow.ipc.open_file(pyarrow.memory_map(path)).read_all()"),
    ".feather": ("Arrow IPC", "pyarrow.ipc.open_file(pyarrow.memory_map(path)).read_all()"),
    ".ipc": ("Arrow IPC", "pyarrow.ipc.open_file(pyarrow.memory_map(path)).read_all()"),
    ".npy": (".npy", "numpy.load(path, mmap_mode='r')"),
    ".npz": (".npz", "numpy.load(path, allow_pickle=False)"),
}
#: Suffixes of files ``to()`` opens itself (frameworks/safetensors.py's).
READ_BY_PLUGINS = (".safetensors",)
#: Every suffix that makes a SOURCE a file even when no such file exists.
SUFFIXES = (*READ_BY_PLUGINS, *READ_HERE)


class FileSourceError(Exception):
    """A SOURCE file cannot be read (exit status 2 of ``explain``)."""


class SourceFile(NamedTuple):
    """What ``explain`` asks about for a file: the object, and a line about what was read."""

    obj: Any
    line: str


def looks_like_file(text: str, is_framework: Callable[[str], bool]) -> bool:
    """Whether ``explain``'s SOURCE names a file rather than a framework.

    A framework's name or alias stays one even if a file of that name lies in the current
    directory; a path separator, a suffix of :data:`SUFFIXES`, or an existing path that is
    no framework's name makes a file.
    """
    if os.sep in text or "/" in text or pathlib.PurePath(text).suffix.lower() in SUFFIXES:
        return True
    return not is_framework(text) and os.path.lexists(text)


def _check_regular(path: pathlib.Path) -> None:
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise FileSourceError(
            f"no such file: {str(path)!r} (SOURCE is read as a file: it has a path separator "
            f"or a suffix of {', '.join(SUFFIXES)})."
        ) from None
    except (OSError, ValueError) as exc:
        raise FileSourceError(f"cannot read {str(path)!r}: {exc}.") from None
    if not stat.S_ISREG(mode):
        what = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        raise FileSourceError(f"cannot read {str(path)!r}: it is {what}; name a file.")


def _columns_of(table: Any, columns: Sequence[str] | None) -> Any:
    if columns is None:
        return table
    missing = [c for c in columns if c not in table.column_names]
    if missing:
        raise FileSourceError(
            f"--columns names {', '.join(map(repr, missing))}, which the file has not; its "
            f"columns: {', '.join(table.column_names)}."
        )
    return table.select(list(columns))


def _parquet(path: pathlib.Path, columns: Sequence[str] | None) -> Any:
    import pyarrow.parquet as pq

    if columns is not None:  # read only those, once they are known to be there
        names = pq.read_schema(path, memory_map=True).names
        _columns_of(_Names(names), columns)
    return pq.read_table(path, memory_map=True, columns=None if columns is None else list(columns))


class _Names(NamedTuple):
    """A schema's names, checked as a table's (:func:`_columns_of`)."""

    column_names: list[str]

    def select(self, names: list[str]) -> Any:
        return self


def _ipc(path: pathlib.Path, columns: Sequence[str] | None) -> Any:
    import pyarrow as pa
    import pyarrow.ipc

    with pyarrow.ipc.open_file(pa.memory_map(str(path))) as reader:
        return _columns_of(reader.read_all(), columns)


def _npy(path: pathlib.Path, columns: Sequence[str] | None) -> Any:
    import numpy as np

    return np.load(path, mmap_mode="r", allow_pickle=False)


def _npz(path: pathlib.Path, columns: Sequence[str] | None) -> Any:
    import numpy as np

    with np.load(path, allow_pickle=False) as z:
        names = list(z.files) if columns is None else list(columns)
        missing = [n for n in names if n not in z.files]
        if missing:
            raise FileSourceError(
                f"--columns names {', '.join(map(repr, missing))}, which the file has not; "
                f"its arrays: {', '.join(z.files)}."
            )
        return {name: z[name] for name in names}


_READERS: dict[str, Callable[[pathlib.Path, Sequence[str] | None], Any]] = {
    "Parquet": _parquet, "Arrow IPC": _ipc, ".npy": _npy, ".npz": _npz,
}  # fmt: skip


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
    known = READ_HERE.get(path.suffix.lower())
    if known is None:  # the project's own readers open it inside explain()
        if columns is not None:
            raise FileSourceError("--columns picks columns of Parquet, Arrow IPC or npz files.")
        return SourceFile(path, "")
    kind, how = known
    try:
        obj = _READERS[kind](path, columns)
    except FileSourceError:
        raise
    except ImportError as exc:
        raise FileSourceError(
            f"cannot read {text!r}: {kind} files are read with {how.split('(')[0]}, which is "
            f"not installed ({exc})."
        ) from None
    except Exception as exc:  # the library's own words for a file it cannot read
        first = (str(exc).strip().splitlines() or [""])[0]
        article = "an" if kind[0] in "AEIO." else "a"
        raise FileSourceError(
            f"cannot read {text!r} as {article} {kind} file: {type(exc).__name__}: {first}"
        ) from None
    return SourceFile(obj, f"File: {text} ({kind}, read with {how}): {_summary(obj)}")
