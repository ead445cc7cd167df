"""Files that ``python -m interop_core explain FILE TARGET`` reads as user code would before
calling ``to()``: the readers the numpy plugin (.npy, .npz) and pyarrow's (Parquet, Arrow
IPC) declare (``FileReader``s, made in those modules with :func:`.numpy.file_reader`, which
imports this module when a file is read: the first ``to()`` never loads it). ``to()`` itself
opens none of these files (a safetensors file it does, from a ``pathlib.Path``:
frameworks/safetensors.py declares that one). Each reader imports its library when it runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from interop_core.plugin import OptionError


def _picked(names: Sequence[str], columns: Sequence[str] | None, what: str) -> list[str]:
    """The names ``--columns`` picks (all of ``names`` for None), refused when the file has
    not some of them."""
    if columns is None:
        return list(names)
    missing = [c for c in columns if c not in names]
    if missing:
        raise OptionError(
            f"--columns names {', '.join(map(repr, missing))}, which the file has not; its "
            f"{what}: {', '.join(names)}."
        )
    return list(columns)


def read_npy(path: Any, columns: tuple[str, ...] | None) -> Any:
    """A .npy file as a read-only memory map (no pickled objects)."""
    import numpy as np

    if columns is not None:
        raise OptionError("--columns picks columns of tables and arrays of .npz files.")
    return np.load(path, mmap_mode="r", allow_pickle=False)


def read_npz(path: Any, columns: tuple[str, ...] | None) -> dict[str, Any]:
    """The arrays of a .npz file (those ``columns`` names), read into memory."""
    import numpy as np

    with np.load(path, allow_pickle=False) as z:
        return {name: z[name] for name in _picked(z.files, columns, "arrays")}


def read_parquet(path: Any, columns: tuple[str, ...] | None) -> Any:
    """A Parquet file as a pyarrow Table (only ``columns``, once known to be there)."""
    import pyarrow.parquet as pq

    if columns is not None:
        _picked(pq.read_schema(path, memory_map=True).names, columns, "columns")
    return pq.read_table(path, memory_map=True, columns=None if columns is None else list(columns))


def read_ipc(path: Any, columns: tuple[str, ...] | None) -> Any:
    """An Arrow IPC (Feather v2) file as a pyarrow Table over its read-only memory map."""
    import pyarrow as pa
    import pyarrow.ipc

    with pyarrow.ipc.open_file(pa.memory_map(str(path))) as reader:
        table = reader.read_all()
    return (
        table if columns is None else table.select(_picked(table.column_names, columns, "columns"))
    )
