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

Hostile files are refused before anything is mapped at an offset the header gives: a short
or truncated file, a header that is not a JSON object, an unknown dtype, a shape that does
not match its byte range, offsets past the end, overlapping tensors (each a
:class:`TensorFileError` naming the file and the tensor).
"""

from __future__ import annotations

import json
import mmap
import os
import pathlib
import struct
from typing import Any

from interop_core.plugin import (
    ALIGNMENT,
    CPU,
    ITEMSIZE,
    ConversionError,
    ConverterSpec,
    Flag,
    Form,
    FrameworkNotInstalledError,
    FrameworkSpec,
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


class TensorFileError(ConversionError):
    """A safetensors file that cannot be opened: missing, not safetensors, or a header that
    contradicts itself or the file (the message says which, and what to do)."""


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


def read_header(path: pathlib.Path, size: int, head: bytes) -> tuple[int, dict[str, Any]]:
    """(bytes before the data, the header's JSON object) of a file of ``size`` bytes whose
    first bytes are ``head``; refuses what no safetensors file can be."""
    if size < 8:
        raise _fail(path, f"it has {size} bytes, fewer than the 8 of the header's length",
                    _REWRITE)  # fmt: skip
    (length,) = struct.unpack("<Q", head[:8])
    if length > MAX_HEADER:
        raise _fail(path, f"its header claims {length} bytes (at most {MAX_HEADER} are read)",
                    "The file is corrupt or not safetensors. " + _REWRITE)  # fmt: skip
    if 8 + length > size:
        raise _fail(path, f"its header claims {length} bytes but the file has {size - 8} "
                    "after the length (truncated)", _REWRITE)  # fmt: skip
    raw = head[8 : 8 + length]
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise _fail(path, f"its header is not UTF-8 JSON ({exc})",
                    "The file is corrupt or not safetensors. " + _REWRITE) from None  # fmt: skip
    if not isinstance(header, dict):
        raise _fail(path, f"its header is a JSON {type(header).__name__}, not an object",
                    _REWRITE)  # fmt: skip
    return 8 + length, header


def _entry(
    path: Any, name: str, entry: Any, data_len: int
) -> tuple[str, tuple[int, ...], int, int]:
    """(canonical dtype, shape, begin, end) of one header entry, checked against itself and
    the data's length."""
    if not isinstance(entry, dict) or not {"dtype", "shape", "data_offsets"} <= entry.keys():
        raise _fail(path, f"tensor {name!r} lacks dtype, shape or data_offsets", _REWRITE)
    dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
    ok_shape = isinstance(shape, list) and all(type(d) is int and d >= 0 for d in shape)
    ok_offsets = (
        isinstance(offsets, list) and len(offsets) == 2
        and all(type(o) is int for o in offsets) and 0 <= offsets[0] <= offsets[1]
    )  # fmt: skip
    if not ok_shape or not ok_offsets:
        raise _fail(path, f"tensor {name!r} has shape {shape!r} and data_offsets {offsets!r} "
                    "(dims and offsets must be non-negative integers, begin <= end)",
                    _REWRITE)  # fmt: skip
    begin, end = offsets
    if end > data_len:
        raise _fail(path, f"tensor {name!r} claims bytes {begin}..{end} of the data, which "
                    f"has {data_len} (the file is truncated or its header wrong)",
                    _REWRITE)  # fmt: skip
    canonical = DTYPES[dtype]  # checked by the caller
    count = 1
    for d in shape:
        count *= d
    if count * ITEMSIZE[canonical] != end - begin:
        raise _fail(path, f"tensor {name!r} ({dtype} {shape}) needs {count * ITEMSIZE[canonical]} "
                    f"bytes but its data_offsets span {end - begin}", _REWRITE)  # fmt: skip
    return canonical, tuple(shape), begin, end


def parse(path: pathlib.Path, size: int, head: bytes) -> tuple[int, dict[str, str], list[Any]]:
    """(data start, metadata, [(name, dtype, shape, begin, end)] in file order)."""
    start, header = read_header(path, size, head)
    meta = header.pop("__metadata__", None) or {}
    if not isinstance(meta, dict):
        raise _fail(path, "its __metadata__ is not a JSON object", _REWRITE)
    unknown = [(n, e.get("dtype")) for n, e in header.items()
               if isinstance(e, dict) and e.get("dtype") not in DTYPES]  # fmt: skip
    if unknown:
        listed = ", ".join(f"{n!r} ({d})" for n, d in unknown)
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
            raise _fail(path, f"tensors {last[0]!r} (bytes {last[3]}..{last[4]}) and {t[0]!r} "
                        f"(bytes {t[3]}..{t[4]}) overlap", _REWRITE)  # fmt: skip
        last = t
    return start, {str(k): str(v) for k, v in meta.items()}, found


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
    try:
        f = open(path, "rb")  # noqa: SIM115 (closed below; the mapping outlives it)
    except OSError as exc:
        todo = "Check the path (pathlib.Path(...).exists()) and its permissions."
        raise _fail(path, f"{type(exc).__name__}: {exc.strerror or exc}", todo) from None
    with f:
        size = os.fstat(f.fileno()).st_size
        head = f.read(8)
        if len(head) == 8:
            (length,) = struct.unpack("<Q", head)
            head += f.read(min(length, MAX_HEADER + 1))
        start, _meta, found = parse(path, size, head)
        # Private and writable: torch's tensors cannot be marked read-only, so a write through
        # one must reach this process's pages only, never the file (ACCESS_COPY).
        mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
    base = np.frombuffer(mapped, np.uint8)
    file = str(path)
    out = {name: FileTensor(name, dtype, shape, base[start + b : start + e], file)
           for name, dtype, shape, b, e in found}  # fmt: skip
    return out


def is_path(obj: Any) -> bool:
    """Whether ``obj`` is a ``pathlib.Path`` (what opens a file; a str never does)."""
    return isinstance(obj, pathlib.Path)


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
            # A Path is claimed, not typed: pathlib is no framework module, and a type of
            # this module keeps detection from waiting on any import.
            name=NAME, array_types=(f"{__name__}.FileTensor",), claims=is_path,
            describe=describe, key=key, aligned_key=aligned_key, data_ptr=data_ptr,
            dtypes=frozenset(DTYPES.values()), install_hint="pip install numpy", target=False,
            snapshot=snapshot, forms=(Form("file", build=example),),
            flags=(Flag(MISALIGNED, "its bytes do not start at a multiple of its element "
                        "size (a hand-made file), so no framework views it: one copy"),),
        )
    ]  # fmt: skip


@hookimpl
def interop_converters() -> list[ConverterSpec]:
    """The edges of a file's tensors (exchange/tensor_files.py)."""
    from ..exchange.tensor_files import edges

    return edges(NAME, MISALIGNED)
