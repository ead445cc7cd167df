"""safetensors files: ``to(pathlib.Path("model.safetensors"), target)`` gives ``{name: array}``.

A ``pathlib.Path`` is the entry point (a bare string never is: it may be a framework name).
Its snapshot parses the header (8 bytes little-endian length, then JSON) and maps the file
once, copy-on-write (``MAP_PRIVATE``); the result is a plain dict of :class:`FileTensor`, in
the order the tensors lie in the file, so the container path converts each one and
``explain()`` gives a route per tensor. Nothing here needs the ``safetensors`` package.

- Opening reads the header only: the values stay on disk until something touches them.
- numpy gets read-only views of the mapping; torch tensors over it (bfloat16 and float8 as
  torch's own dtypes); JAX and TensorFlow share a tensor whose first byte is 64-byte aligned
  in memory and get one copy (explain() says so) of any other: safetensors places tensors
  back to back after the header, so many start 16 or 32 bytes past a 64-byte boundary.
- The mapping is private: a write through a torch tensor (which cannot be marked read-only)
  changes this process's copy of those pages, never the file.
- ``sharding=`` (a ``jax.sharding.Sharding``, a dict name -> Sharding, or a callable
  ``(name, shape) -> Sharding``) builds global jax.Arrays with
  ``jax.make_array_from_callback``: each device copies only its shard's bytes.
- ``__metadata__`` is the header's string-to-string map, not a tensor: explain() notes it;
  the safetensors package reads it (``safe_open(path, "np").metadata()``).

- ``dtype=`` casts each tensor it names (``FrameworkSpec.casting.astype``: a new aligned array, read
  from the mapping once), a step of its own in ``explain()``.
- A file with no tensors (a header of ``{}`` or only ``__metadata__``) gives ``{}``, as the
  safetensors package's ``load_file`` does.

The results are views of the file: a file truncated while they live makes the next read of
a page past its new end a SIGBUS (the process dies), and bytes rewritten in place show
through where the page was not yet read or written by this process. ``copy=True`` gives
arrays of their own, read once, which nothing done to the file afterwards changes.

Hostile files are refused (a :class:`TensorFileError` naming the file, and the tensor where
one is at fault) before anything is mapped at an offset the header gives: a path that is no
regular file (a FIFO would block the open forever, a device or a directory cannot be
mapped), a short or truncated file, a header length past the file, a header that is not
UTF-8 JSON, nests deeper than Python parses, is not an object or names a key twice (the
safetensors package refuses those; which one is meant cannot be told), an entry that is not
an object, a dtype that is no string or unknown, a shape that is no list of non-negative
integers (or of more than 64 dims), data offsets that are not two integers in order within
the data, a shape that does not match its byte range, overlapping tensors, a
``__metadata__`` that does not map strings to strings.
"""

from __future__ import annotations

import json
import mmap
import os
import pathlib
import re
import stat
import struct
from typing import Any

from interop_core.plugin import (
    ALIGNMENT,
    CPU,
    ITEMSIZE,
    Casting,
    ConversionError,
    ConverterSpec,
    Detection,
    Diagnostics,
    FileReader,
    Flag,
    Form,
    FrameworkNotInstalledError,
    FrameworkSpec,
    OptionError,
    Package,
    TensorFileError,
    TensorInfo,
    hookimpl,
)

NAME = "safetensors"
SUFFIX = ".safetensors"
#: The most header bytes accepted (the safetensors reference refuses more than 100 MB).
MAX_HEADER = 100_000_000
#: Flag: the tensor's first byte is not a multiple of its element size (a hand-made file),
#: so no framework views it: one copy into aligned memory.
MISALIGNED = "misaligned_elements"
#: safetensors dtype -> canonical dtype. Others (F8_E4M3FNUZ, F8_E8M0, F4, F6_*) no
#: framework here holds: the file is refused naming each such tensor.
DTYPES = {
    "BOOL": "bool", "U8": "uint8", "I8": "int8", "U16": "uint16", "I16": "int16",
    "U32": "uint32", "I32": "int32", "U64": "uint64", "I64": "int64",
    "F16": "float16", "BF16": "bfloat16", "F32": "float32", "F64": "float64",
    "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2", "C64": "complex64",
}  # fmt: skip


#: The most dims a tensor may have (numpy's limit).
MAX_DIMS = 64
#: Byte sizes must stay below this: numpy and torch index memory with int64.
_LIMIT = 1 << 63


class FileTensor:
    """One tensor of a mapped safetensors file: its name, canonical dtype, shape, and the
    writable (copy-on-write) uint8 view of its bytes, which holds the mapping alive."""

    __slots__ = ("data", "dtype", "file", "name", "shape")

    def __init__(self, name: str, dtype: str, shape: tuple[int, ...], data: Any, file: str) -> None:
        self.name = name
        self.dtype = dtype
        self.shape = shape
        self.data = data
        self.file = file

    def __repr__(self) -> str:
        return f"FileTensor({self.name!r}, {self.dtype}, {self.shape}, file={self.file!r})"


def _fail(path: Any, why: str, todo: str) -> TensorFileError:
    return TensorFileError(f"Cannot open {str(path)!r} as a safetensors file: {why}.\n{todo}")


_REWRITE = "Re-save the file (safetensors' save_file), or download it again if it came so."
_CORRUPT = "The file is corrupt or not safetensors. " + _REWRITE


#: A JSON escape of a UTF-16 surrogate (json.loads keeps a lone one in the str it makes).
_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")


class _Duplicate(Exception):
    """A JSON object of the header names ``key`` twice."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json's ``object_pairs_hook``: the object as a dict, or _Duplicate for a key named
    twice (json.loads would keep the last; the safetensors package refuses the file)."""
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        for k, _ in pairs:
            if k in seen:
                raise _Duplicate(k)
            seen.add(k)
    return found


def read_header(path: pathlib.Path, size: int, head: bytes) -> tuple[int, dict[str, Any]]:
    """(bytes before the data, the header's JSON object) of a file of ``size`` bytes whose
    first bytes are ``head``; refuses what no safetensors file can be."""
    if size < 8:
        raise _fail(path, f"it has {size} bytes, fewer than the 8 of the header's length",
                    _REWRITE)  # fmt: skip
    (length,) = struct.unpack("<Q", head[:8])
    if length > MAX_HEADER:
        raise _fail(path, f"its header claims {length} bytes (at most {MAX_HEADER} are read)",
                    _CORRUPT)  # fmt: skip
    if 8 + length > size:
        raise _fail(path, f"its header claims {length} bytes but the file has {size - 8} "
                    "after the length (truncated)", _REWRITE)  # fmt: skip
    raw = head[8 : 8 + length]
    if len(raw) != length:
        raise _fail(path, f"its header claims {length} bytes but {len(raw)} could be read "
                    "(the file changed while it was opened)", _REWRITE)  # fmt: skip
    try:
        header = json.loads(raw.decode("utf-8"), object_pairs_hook=_unique)
    except _Duplicate as dup:
        why = (f"its header names {_short(dup.key)} twice (which one is meant cannot be told; the "
               "safetensors package refuses such a file)")  # fmt: skip
        raise _fail(path, why, _REWRITE) from None
    except RecursionError:
        raise _fail(path, "its header nests JSON deeper than Python parses (a safetensors "
                    "header nests 3 levels)", _CORRUPT) from None  # fmt: skip
    except (UnicodeDecodeError, ValueError) as exc:
        raise _fail(path, f"its header is not UTF-8 JSON ({exc})", _CORRUPT) from None
    if not isinstance(header, dict):
        raise _fail(path, f"its header is a JSON {_json_type(header)}, not an object",
                    _REWRITE)  # fmt: skip
    if _SURROGATE.search(raw):  # an escape of half a UTF-16 pair: no text if left alone
        try:
            json.dumps(header, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise _fail(path, "its header escapes half a UTF-16 surrogate pair (\\ud800-"
                        "\\udfff alone), which is no Unicode text (the safetensors package "
                        "refuses such a file)", _CORRUPT) from None  # fmt: skip
    return 8 + length, header


def _json_type(value: Any) -> str:
    """The JSON name of a parsed value's type."""
    names = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number",
             float: "number", type(None): "null"}  # fmt: skip
    return names.get(type(value), type(value).__name__)


def _entry(
    path: Any, name: str, entry: Any, data_len: int
) -> tuple[str, tuple[int, ...], int, int]:
    """(canonical dtype, shape, begin, end) of one header entry whose dtype is known,
    checked against itself and the data's length."""
    dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
    if (
        not isinstance(shape, list)
        or len(shape) > MAX_DIMS
        or not all(type(d) is int and 0 <= d < _LIMIT for d in shape)
    ):
        raise _fail(path, f"tensor {_short(name)} has shape {_short(shape)} (a shape is a list "
                    f"of at most {MAX_DIMS} non-negative integers)", _REWRITE)  # fmt: skip
    if not (
        isinstance(offsets, list) and len(offsets) == 2
        and all(type(o) is int for o in offsets) and 0 <= offsets[0] <= offsets[1]
    ):  # fmt: skip
        raise _fail(path, f"tensor {_short(name)} has data_offsets {_short(offsets)} (two "
                    "non-negative integers, begin <= end)", _REWRITE)  # fmt: skip
    begin, end = offsets
    if end > data_len:
        raise _fail(path, f"tensor {_short(name)} claims bytes {begin}..{end} of the data, which "
                    f"has {data_len} (the file is truncated or its header wrong)",
                    _REWRITE)  # fmt: skip
    canonical = DTYPES[dtype]
    itemsize = ITEMSIZE[canonical]
    count = reach = 1
    for d in shape:
        count *= d
        reach *= max(d, 1)  # numpy refuses a shape whose nonzero dims overflow, even with a 0
    if reach * itemsize >= _LIMIT:
        raise _fail(path, f"tensor {_short(name)} has shape {_short(shape)}, whose dims multiply "
                    "past 2**63 bytes", _REWRITE)  # fmt: skip
    if count * itemsize != end - begin:
        raise _fail(path, f"tensor {_short(name)} ({dtype} {shape}) needs {count * itemsize} "
                    f"bytes but its data_offsets span {end - begin}", _REWRITE)  # fmt: skip
    return canonical, tuple(shape), begin, end


def _short(value: Any) -> str:
    """``repr(value)``, cut to a line (a hostile header's values run to megabytes)."""
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."


def _metadata(path: Any, meta: Any) -> dict[str, str]:
    """The header's ``__metadata__``: a string-to-string map (null: none)."""
    if meta is None:
        return {}
    if not isinstance(meta, dict):
        raise _fail(path, f"its __metadata__ is a JSON {_json_type(meta)}, not an object of "
                    "strings", _REWRITE)  # fmt: skip
    for k, v in meta.items():
        if not isinstance(v, str):
            raise _fail(path, f"its __metadata__ maps {_short(k)} to a JSON {_json_type(v)}, not a "
                        "string (the format maps strings to strings)", _REWRITE)  # fmt: skip
    return meta


def parse(path: pathlib.Path, size: int, head: bytes) -> tuple[int, dict[str, str], list[Any]]:
    """(data start, metadata, [(name, dtype, shape, begin, end)] in file order)."""
    start, header = read_header(path, size, head)
    meta = _metadata(path, header.pop("__metadata__", None))
    unknown = []
    for name, e in header.items():
        if not isinstance(e, dict):
            raise _fail(path, f"tensor {_short(name)} is a JSON {_json_type(e)}, not an object of "
                        "dtype, shape and data_offsets", _REWRITE)  # fmt: skip
        if not {"dtype", "shape", "data_offsets"} <= e.keys():
            raise _fail(path, f"tensor {_short(name)} lacks dtype, shape or data_offsets", _REWRITE)
        if not isinstance(e["dtype"], str):
            raise _fail(path, f"tensor {_short(name)} has dtype {_short(e['dtype'])}, not a string "
                        f"such as 'F32'", f"Known dtypes: {', '.join(DTYPES)}. "
                        + _REWRITE)  # fmt: skip
        if e["dtype"] not in DTYPES:
            unknown.append((name, e["dtype"]))
    if unknown:
        listed = ", ".join(f"{_short(n)} ({d[:40]})" for n, d in unknown)
        raise _fail(path, f"{len(unknown)} tensor(s) have a dtype no framework here holds: "
                    f"{listed}",
                    f"Known dtypes: {', '.join(DTYPES)}. Convert those tensors with the tool "
                    "that wrote them (e.g. to float16 or bfloat16), or read the file with the "
                    "safetensors package.")  # fmt: skip
    data_len = size - start
    found = [(n, *_entry(path, n, e, data_len)) for n, e in header.items()]
    # File order: by first byte (empty tensors where the header lists them among equals).
    found.sort(key=lambda t: (t[3], t[4]))
    last: tuple[Any, ...] | None = None
    for t in found:
        if t[3] == t[4]:
            continue
        if last is not None and t[3] < last[4]:
            raise _fail(path, f"tensors {_short(last[0])} (bytes {last[3]}..{last[4]}) and "
                        f"{_short(t[0])} (bytes {t[3]}..{t[4]}) overlap", _REWRITE)  # fmt: skip
        last = t
    return start, meta, found


#: What a path that is no regular file is (``stat.S_IFMT`` of its mode).
_NOT_REGULAR = {
    stat.S_IFDIR: "IsADirectoryError: it is a directory",
    stat.S_IFIFO: "it is a named pipe (FIFO): opening it would wait for a writer",
    stat.S_IFSOCK: "it is a socket",
    stat.S_IFCHR: "it is a character device",
    stat.S_IFBLK: "it is a block device",
}
_NONBLOCK = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)


def _regular(path: pathlib.Path, mode: int) -> None:
    """Refuse a path that is no regular file: only a regular file has a size to check the
    header against and can be mapped (a FIFO would block the open, /dev/zero never ends)."""
    if not stat.S_ISREG(mode):
        what = _NOT_REGULAR.get(stat.S_IFMT(mode), "it is no regular file")
        raise _fail(path, f"{what}, not a regular file",
                    "to() maps a tensor file: pass the path of a regular file (copy what a "
                    "pipe, socket or device gives into one first).")  # fmt: skip


def _open(path: pathlib.Path) -> Any:
    """``path`` opened for reading as a binary file object, if it is a regular file."""
    try:
        mode = os.stat(path).st_mode
        _regular(path, mode)  # before opening: opening a FIFO blocks
        # Non-blocking: a FIFO put in its place since the stat opens at once, and is refused.
        fd = os.open(path, _NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
    except TensorFileError:
        raise
    except OSError as exc:
        todo = "Check the path (pathlib.Path(...).exists()) and its permissions."
        raise _fail(path, f"{type(exc).__name__}: {exc.strerror or exc}", todo) from None
    except ValueError as exc:  # a NUL byte, or a name the file system's encoding cannot hold
        todo = "Check the path: a file name holds no NUL byte ('\\x00')."
        raise _fail(path, f"its path cannot name a file ({exc})", todo) from None
    f = os.fdopen(fd, "rb")
    try:
        _regular(path, os.fstat(fd).st_mode)
    except BaseException:
        f.close()
        raise
    return f


def open_file(path: pathlib.Path) -> dict[str, FileTensor]:
    """Map ``path`` copy-on-write and give ``{name: FileTensor}`` in file order."""
    try:
        import numpy as np
    except ImportError:
        raise FrameworkNotInstalledError("numpy", "pip install numpy") from None

    if path.suffix != SUFFIX:
        raise _fail(path, f"its name ends in {path.suffix or 'no suffix'!r}, not {SUFFIX!r}",
                    "to() opens a pathlib.Path only as a safetensors file. Rename the file if "
                    "it is one; load other files with their own library and convert the "
                    "arrays.")  # fmt: skip
    with _open(path) as f:
        size = os.fstat(f.fileno()).st_size
        head = f.read(8)
        if len(head) == 8:
            (length,) = struct.unpack("<Q", head)
            head += f.read(min(length, MAX_HEADER + 1))
        start, _meta, found = parse(path, size, head)
        if not found:  # no tensors: nothing to map
            return {}
        # Private and writable: torch's tensors cannot be marked read-only, so a write through
        # one must reach this process's pages only, never the file (ACCESS_COPY).
        try:
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
        except (OSError, ValueError) as exc:
            raise _fail(path, f"it cannot be mapped into memory ({exc})",
                        "Check that the file is not being rewritten, and that the process "
                        "has address space for it (ulimit -v).") from None  # fmt: skip
    end = start + max(t[4] for t in found)
    if len(mapped) < end:  # truncated since its size was read: reading past it is a SIGBUS
        now = len(mapped)
        mapped.close()
        raise _fail(path, f"it was truncated to {now} bytes while it was opened (its "
                    f"header needs {end})", _REWRITE)  # fmt: skip
    base = np.frombuffer(mapped, np.uint8)
    file = str(path)
    out = {name: FileTensor(name, dtype, shape, base[start + b : start + e], file)
           for name, dtype, shape, b, e in found}  # fmt: skip
    return out


def astype(t: FileTensor, dtype: str) -> FileTensor:
    """``to(path, target, dtype=...)``: tensor ``t`` cast to canonical ``dtype``, in new
    64-byte aligned memory (read from the mapping once; the file is no longer involved)."""
    import numpy as np

    from ..exchange.tensor_files import array
    from .numpy import aligned_empty, numpy_dtype

    out = aligned_empty(t.shape, numpy_dtype(dtype))
    np.copyto(out, array(t), casting="unsafe")  # the user asked for this cast: any kind
    return FileTensor(t.name, dtype, t.shape, out.reshape(-1).view(np.uint8), t.file)


def is_path(obj: Any) -> bool:
    """Whether ``obj`` is a ``pathlib.Path`` (what opens a file; a str never does)."""
    return isinstance(obj, pathlib.Path)


def as_path(path: Any, columns: tuple[str, ...] | None) -> pathlib.Path:
    """A safetensors file for the command line's ``explain``: the Path ``to()`` opens."""
    if columns is not None:
        raise OptionError("--columns picks columns of tables, not tensors of a safetensors file.")
    return pathlib.Path(path)


def path_hint(obj: Any) -> str | None:
    """The advice for a ``str`` (or ``os.PathLike`` other than a Path) given to ``to()``: a
    string is never opened (it may be a framework name, or data)."""
    if isinstance(obj, str):
        path = repr(obj) if len(obj) <= 80 else "path"
        return (
            "A str is never read as a file name: to read the tensors of a safetensors file, "
            f"pass pathlib.Path({path})."
        )
    if hasattr(obj, "__fspath__"):
        return "to() opens a pathlib.Path only: pass pathlib.Path(os.fspath(path))."
    return None


def snapshot(obj: Any) -> Any:
    """A Path as ``{name: FileTensor}`` (the file mapped once); a FileTensor as it is."""
    if isinstance(obj, pathlib.Path):
        return open_file(obj)
    return obj


def _address(t: FileTensor) -> int:
    return int(t.data.ctypes.data) if t.data.size else 0


def describe(obj: Any) -> TensorInfo:
    """A FileTensor as the C-contiguous array it views (writable: the mapping is private)."""
    if isinstance(obj, pathlib.Path):  # converted through its snapshot
        raise ConversionError("A safetensors file converts tensor by tensor: to(path, target).")
    address = _address(obj)
    flags = frozenset({MISALIGNED}) if address % ITEMSIZE[obj.dtype] else frozenset()
    return TensorInfo(NAME, obj.dtype, CPU, obj.shape, "C", False, address % ALIGNMENT == 0, flags)


def key(t: FileTensor) -> Any:
    """Warm-path key: dtype and whether the elements are aligned to their size."""
    return (t.dtype, _address(t) % ITEMSIZE[t.dtype] == 0)


def aligned_key(t: FileTensor) -> Any:
    """key() plus whether the first byte is 64-byte aligned."""
    address = _address(t)
    return (t.dtype, address % ITEMSIZE[t.dtype] == 0, address % ALIGNMENT == 0)


def data_ptr(t: FileTensor) -> int:
    """Address of the first byte in the mapping."""
    return _address(t)


_EXAMPLES: list[str] = []


def example(values: Any, dtype: str) -> pathlib.Path:
    """A file of two tensors "a" and "b" holding ``values`` as ``dtype`` (the conformance
    kit's ``Form``: the second starts where the first ends, often not 64-byte aligned), in
    a directory removed when the process exits."""
    import atexit
    import shutil
    import tempfile

    from .numpy import example as numpy_example

    if not _EXAMPLES:
        _EXAMPLES.append(tempfile.mkdtemp(prefix="interop-safetensors-"))
        atexit.register(shutil.rmtree, _EXAMPLES[0], True)
    raw = numpy_example(values, dtype).tobytes()
    code = {v: k for k, v in DTYPES.items()}[dtype]
    shape = list(numpy_example(values, dtype).shape)
    header = {name: {"dtype": code, "shape": shape, "data_offsets": [i * len(raw),
              (i + 1) * len(raw)]} for i, name in enumerate(("a", "b"))}  # fmt: skip
    head = json.dumps(header).encode()
    head += b" " * (-(8 + len(head)) % ALIGNMENT)  # "a" at a 64-byte boundary of the mapping
    path = pathlib.Path(_EXAMPLES[0]) / f"{len(os.listdir(_EXAMPLES[0]))}{SUFFIX}"
    path.write_bytes(struct.pack("<Q", len(head)) + head + raw + raw)
    return path


@hookimpl
def interop_frameworks() -> list[FrameworkSpec]:
    """safetensors files (a pathlib.Path) and their tensors: a source, read through numpy."""
    return [
        FrameworkSpec(
            name=NAME, array_types=(f"{__name__}.FileTensor",),
            describe=describe, key=key, aligned_key=aligned_key, data_ptr=data_ptr,
            dtypes=frozenset(DTYPES.values()), target=False, snapshot=snapshot,
            flags=(Flag(MISALIGNED, "its bytes do not start at a multiple of its element "
                        "size (a hand-made file), so no framework views it: one copy"),),
            package=Package(install_hint="pip install numpy"),
            # A Path is claimed, not typed: pathlib is no framework module, and a type of
            # this module keeps detection from waiting on any import.
            detection=Detection(
                claims=is_path, protocol="a pathlib.Path of a safetensors file", hint=path_hint
            ),
            casting=Casting(astype=astype),
            diagnostics=Diagnostics(
                forms=(Form("file", build=example),),
                files=(FileReader((SUFFIX,), NAME, as_path, "to() itself, from a pathlib.Path"),),
            ),
        )
    ]  # fmt: skip


@hookimpl
def interop_converters() -> list[ConverterSpec]:
    """The edges of a file's tensors (exchange/tensor_files.py)."""
    from ..exchange.tensor_files import edges

    return edges(NAME, MISALIGNED)
