"""Hostile and odd safetensors files (issue 30): every malformed file is a TensorFileError
naming the file (and the tensor at fault) before anything is mapped; a path that is no
regular file is refused before it is opened; ``dtype=`` reaches each tensor, so the advice
of the x64 refusal works as written; ``copy=True`` gives arrays the file no longer touches.

Cases that hang or kill the interpreter on a broken build (a FIFO, a truncated mapping) run
in child processes.
"""

from __future__ import annotations

import ast
import json
import os
import pathlib
import re
import signal
import socket
import subprocess
import sys
from typing import Any

import pytest
from conftest import need
from hostile import run_child, safetensors_bytes

from interop_core import (
    ConversionError,
    CopyRequiredError,
    InvalidArrayError,
    NoRouteError,
    TensorFileError,
    explain,
    to,
)

np = need("numpy")
HERE = os.path.dirname(os.path.abspath(__file__))
F32 = np.arange(6, dtype=np.float32)
A = {"dtype": "F32", "shape": [6], "data_offsets": [0, 24]}


def child(code: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter with tests/ importable (hostile.run_child)."""
    return run_child(code, timeout)


def file(tmp_path: pathlib.Path, header: Any, data: bytes = b"", name: str = "m") -> pathlib.Path:
    path = tmp_path / f"{name}.safetensors"
    path.write_bytes(safetensors_bytes(header, data))
    return path


def entry(**changes: Any) -> dict[str, Any]:
    return {"a": {**A, **changes}}


def deep(n: int) -> bytes:
    return b"[" * n + b"]" * n


#: name -> (header (dict or raw JSON bytes), data, what the message says, the tensor named)
MALFORMED: dict[str, tuple[Any, bytes, str, str | None]] = {
    # the JSON
    "not UTF-8": (b"\xff\xfe{}", b"", "not UTF-8 JSON", None),
    "not JSON": (b"hello", b"", "not UTF-8 JSON", None),
    "trailing garbage": (b"{} xx", b"", "not UTF-8 JSON", None),
    "NUL in a string": (b'{"a\x00": 1}', b"", "not UTF-8 JSON", None),
    "a number with 5000 digits": (
        b'{"a": {"dtype": "F32", "shape": [' + b"9" * 5000 + b'], "data_offsets": [0, 24]}}',
        bytes(24), "not UTF-8 JSON", None,
    ),
    "a lone surrogate": (
        b'{"\\udcff": {"dtype": "F32", "shape": [6], "data_offsets": [0, 24]}}', bytes(24),
        "half a UTF-16 surrogate pair", None,
    ),
    "an array": (b"[1, 2]", b"", "a JSON array, not an object", None),
    "a string": (b'"abc"', b"", "a JSON string, not an object", None),
    "null": (b"null", b"", "a JSON null, not an object", None),
    "nested 100000 deep": (deep(100_000), b"", "nests JSON deeper", None),
    "nested deep in __metadata__": (
        b'{"__metadata__": {"k": ' + deep(100_000) + b"}}", b"", "nests JSON deeper", None,
    ),
    "a name twice": (
        b'{"a": {"dtype": "F32", "shape": [6], "data_offsets": [0, 24]}, '
        b'"a": {"dtype": "F32", "shape": [6], "data_offsets": [24, 48]}}',
        bytes(48), "names 'a' twice", None,
    ),
    "__metadata__ twice": (
        b'{"__metadata__": {"k": "v"}, "__metadata__": {"k": "w"}}', b"", "names '__metadata__' "
        "twice", None,
    ),
    "a key twice in an entry": (
        b'{"a": {"dtype": "F32", "dtype": "I32", "shape": [6], "data_offsets": [0, 24]}}',
        bytes(24), "names 'dtype' twice", None,
    ),
    # entries
    "an entry that is a list": ({"a": [1, 2]}, b"", "is a JSON array, not an object", "a"),
    "an entry that is null": ({"a": None}, b"", "is a JSON null", "a"),
    "a list dtype": (entry(dtype=["F32"]), bytes(24), "has dtype ['F32'], not a string", "a"),
    "a null dtype": (entry(dtype=None), bytes(24), "not a string", "a"),
    "a number dtype": (entry(dtype=5), bytes(24), "not a string", "a"),
    "an unknown dtype": (entry(dtype="F8_E8M0"), bytes(24), "no framework here holds", "a"),
    "a lower-case dtype": (entry(dtype="f32"), bytes(24), "no framework here holds", "a"),
    "a string shape": (entry(shape="abc"), bytes(24), "has shape 'abc'", "a"),
    "a null shape": (entry(shape=None), bytes(24), "has shape None", "a"),
    "a bool dim": (entry(shape=[True], data_offsets=[0, 4]), bytes(24), "non-negative", "a"),
    "a float dim": (entry(shape=[6.0]), bytes(24), "non-negative integers", "a"),
    "a nested shape": (entry(shape=[[6]]), bytes(24), "non-negative integers", "a"),
    "a negative dim": (entry(shape=[-6]), bytes(24), "non-negative integers", "a"),
    "two negative dims": (entry(shape=[-2, -3]), bytes(24), "non-negative integers", "a"),
    "65 dims": (entry(shape=[1] * 65 + [6]), bytes(24), "at most 64", "a"),
    "dims past 2**63": (entry(shape=[1 << 62, 1 << 62]), bytes(24), "2**63", "a"),
    "dims past 2**63 around a 0": (
        entry(shape=[1 << 62, 0, 1 << 62], data_offsets=[0, 0]), b"", "2**63", "a",
    ),
    "a dim of 2**64": (entry(shape=[1 << 64]), bytes(24), "non-negative integers", "a"),
    "three offsets": (entry(data_offsets=[0, 24, 48]), bytes(48), "two non-negative", "a"),
    "string offsets": (entry(data_offsets=["0", "24"]), bytes(24), "two non-negative", "a"),
    "float offsets": (entry(data_offsets=[0.0, 24.0]), bytes(24), "two non-negative", "a"),
    "bool offsets": (
        entry(dtype="U8", shape=[1], data_offsets=[False, True]), bytes(1), "two non-negative",
        "a",
    ),
    "null offsets": (entry(data_offsets=None), bytes(24), "two non-negative", "a"),
    "negative offsets": (entry(data_offsets=[-24, 0]), bytes(24), "two non-negative", "a"),
    "reversed offsets": (entry(data_offsets=[24, 0]), bytes(24), "begin <= end", "a"),
    "offsets of 2**70": (
        entry(data_offsets=[1 << 70, (1 << 70) + 24]), bytes(24), "the file is truncated", "a",
    ),
    "offsets past the data": (entry(data_offsets=[8, 32]), bytes(24), "truncated", "a"),
    "offsets not matching the shape": (entry(shape=[5]), bytes(24), "needs 20 bytes", "a"),
    "no shape": ({"a": {"dtype": "F32", "data_offsets": [0, 24]}}, bytes(24), "lacks", "a"),
    "overlapping tensors": (
        {"a": A, "b": {"dtype": "F32", "shape": [2], "data_offsets": [16, 24]}}, bytes(24),
        "overlap", "b",
    ),
    "two tensors over the same bytes": ({"a": A, "b": A}, bytes(24), "overlap", "b"),
    # __metadata__
    "__metadata__ a list": ({"__metadata__": [1], **entry()}, bytes(24), "JSON array", None),
    "__metadata__ a string": ({"__metadata__": "x", **entry()}, bytes(24), "JSON string", None),
    "__metadata__ of numbers": (
        {"__metadata__": {"k": 1}, **entry()}, bytes(24), "maps 'k' to a JSON number", None,
    ),
    "__metadata__ nested": (
        {"__metadata__": {"k": {"x": "y"}}, **entry()}, bytes(24), "to a JSON object", None,
    ),
    "__metadata__ of nulls": (
        {"__metadata__": {"k": None}, **entry()}, bytes(24), "to a JSON null", None,
    ),
}  # fmt: skip

#: name -> (the file's bytes, what the message says): lengths that lie.
LENGTHS = {
    "empty": (b"", "fewer than the 8"),
    "7 bytes": (b"\x01" * 7, "fewer than the 8"),
    "a length of 2**63": ((1 << 63).to_bytes(8, "little") + b"{}", "at most"),
    "a length of 2**64 - 1": (b"\xff" * 8 + b"{}", "at most"),
    "a length past the file": ((1000).to_bytes(8, "little") + b"{}", "truncated"),
    "a length of 0": (bytes(8), "not UTF-8 JSON"),
    "a length over 100 MB": ((101_000_000).to_bytes(8, "little") + b"{}", "at most"),
    "a length into the data": (
        (len(safetensors_bytes({"a": A})) - 8 + 10).to_bytes(8, "little")
        + safetensors_bytes({"a": A}, F32.tobytes())[8:],
        "not UTF-8 JSON",
    ),
    "data cut short": (safetensors_bytes({"a": A}, F32.tobytes()[:20]), "truncated"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_header_is_a_tensor_file_error_naming_file_and_tensor(
    tmp_path: pathlib.Path, case: str
) -> None:
    header, data, why, tensor = MALFORMED[case]
    path = file(tmp_path, header, data)
    for call in (to, explain):
        with pytest.raises(TensorFileError) as info:
            call(path, "numpy")
        message = str(info.value)
        assert message.startswith(f"Cannot open {str(path)!r} as a safetensors file: "), message
        assert why in message, message
        if tensor is not None:
            assert repr(tensor) in message.partition(": ")[2], message
        assert "\n" in message and len(message) < 1000  # what to do; no megabytes of header
    # The class says what it is: an input that cannot exist, and a failed conversion.
    assert issubclass(TensorFileError, InvalidArrayError)
    assert issubclass(TensorFileError, ConversionError)


@pytest.mark.parametrize("case", sorted(LENGTHS))
def test_a_length_that_lies_is_a_tensor_file_error(tmp_path: pathlib.Path, case: str) -> None:
    raw, why = LENGTHS[case]
    path = tmp_path / "m.safetensors"
    path.write_bytes(raw)
    with pytest.raises(TensorFileError, match=re.escape(why)):
        to(path, "numpy")


def test_the_safetensors_package_refuses_a_duplicate_name_too(tmp_path: pathlib.Path) -> None:
    """The reference reader refuses what is refused here (json.loads would keep the last)."""
    need("safetensors")
    from safetensors.numpy import load_file

    header, data, _, _ = MALFORMED["a name twice"]
    path = file(tmp_path, header, data)
    with pytest.raises(Exception):  # noqa: B017 (the package raises its own SafetensorError)
        load_file(str(path))
    with pytest.raises(TensorFileError, match="names 'a' twice"):
        to(path, "torch")


# --- paths that are no regular file ----------------------------------------------------


def test_a_fifo_is_refused_before_it_is_opened(tmp_path: pathlib.Path) -> None:
    """In a child with a timeout: opening a FIFO for reading blocks until a writer comes."""
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    fifo = tmp_path / "x.safetensors"
    os.mkfifo(fifo)
    run = child(f"""
        import pathlib
        from interop_core import TensorFileError, explain, to
        for call in (to, explain):
            try:
                call(pathlib.Path({str(fifo)!r}), "numpy")
                print("OPENED")
            except TensorFileError as exc:
                print("REFUSED", "named pipe (FIFO)" in str(exc))
    """)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["REFUSED", "True"] * 2


def _not_regular(tmp_path: pathlib.Path, kind: str) -> Any:
    path = tmp_path / "x.safetensors"
    if kind == "directory":
        path.mkdir()
    elif kind == "socket":
        if not hasattr(socket, "AF_UNIX"):
            pytest.skip("no Unix sockets on this platform")
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
        return path, sock
    else:
        device = {"character device": "/dev/zero", "/dev/urandom": "/dev/urandom"}[kind]
        if not os.path.exists(device):
            pytest.skip(f"no {device} here")
        path.symlink_to(device)
    return path, None


@pytest.mark.parametrize("kind", ["directory", "socket", "character device", "/dev/urandom"])
def test_a_path_that_is_no_regular_file_is_refused(tmp_path: pathlib.Path, kind: str) -> None:
    path, keep = _not_regular(tmp_path, kind)
    said = {"/dev/urandom": "character device"}.get(kind, kind)
    with pytest.raises(TensorFileError, match=f"it is a {said}, not a regular file") as info:
        to(path, "numpy")
    assert str(info.value).startswith(f"Cannot open {str(path)!r}")
    if keep is not None:
        keep.close()


@pytest.mark.parametrize(
    "name, why",
    [
        ("x\x00y.safetensors", "NUL byte"),
        ("absent.safetensors", "FileNotFoundError"),
        ("x" * 5000 + ".safetensors", "OSError: File name too long"),
    ],
)
def test_a_path_that_names_no_file_is_refused(tmp_path: pathlib.Path, name: str, why: str) -> None:
    with pytest.raises(TensorFileError, match=why):
        to(pathlib.Path(str(tmp_path)) / name, "numpy")


def test_symlinks_are_followed_dangling_and_looping_ones_refused(tmp_path: pathlib.Path) -> None:
    real = file(tmp_path, {"a": A}, F32.tobytes(), name="real")
    link = tmp_path / "link.safetensors"
    link.symlink_to(real)
    np.testing.assert_array_equal(to(link, "numpy")["a"], F32)
    dangling = tmp_path / "dangling.safetensors"
    dangling.symlink_to(tmp_path / "nowhere")
    with pytest.raises(TensorFileError, match="FileNotFoundError"):
        to(dangling, "numpy")
    loop = tmp_path / "loop.safetensors"
    loop.symlink_to(loop)
    with pytest.raises(TensorFileError, match="OSError"):
        to(loop, "numpy")


# --- a file of no tensors ----------------------------------------------------------------


@pytest.mark.parametrize("header", [{}, {"__metadata__": {"format": "pt"}}, {"__metadata__": None}])
def test_a_file_of_no_tensors_gives_an_empty_dict(tmp_path: pathlib.Path, header: Any) -> None:
    """As the safetensors package's load_file does: the file is valid, it holds nothing."""
    path = file(tmp_path, header)
    for target in ("numpy", "torch"):
        need(target)
        assert to(path, target) == {}
    route = explain(path, "numpy")
    assert len(route) == 0 and route.copies == 0 and route.routes == {}
    if header.get("__metadata__", 0) is not None:  # the package refuses a null __metadata__
        need("safetensors")
        from safetensors.numpy import load_file

        assert load_file(str(path)) == {}


# --- dtype= reaches each tensor -----------------------------------------------------------


def test_the_x64_refusals_advice_works_as_written(tmp_path: pathlib.Path) -> None:
    """to(path, "jax") of int64 and float64 tensors with x64 off names dtype={...}; passing
    exactly that converts them, each cast once, and explain() shows the cast."""
    jax = need("jax")
    if jax.config.jax_enable_x64:
        pytest.skip("needs JAX's x64 switch off (its default)")
    ints, floats = np.arange(6, dtype=np.int64), np.linspace(0, 1, 4)
    path = file(tmp_path, {
        "ints": {"dtype": "I64", "shape": [2, 3], "data_offsets": [0, 48]},
        "floats": {"dtype": "F64", "shape": [4], "data_offsets": [48, 80]},
    }, ints.tobytes() + floats.tobytes())  # fmt: skip
    with pytest.raises(NoRouteError) as info:
        to(path, "jax")
    advice = re.search(r"to\(x, 'jax', dtype=(\{.*?\})\)", str(info.value))
    assert advice, str(info.value)
    dtype = ast.literal_eval(advice.group(1))
    assert dtype == {"int64": "int32", "float64": "float32"}
    out = to(path, "jax", dtype=dtype)
    assert list(out) == ["ints", "floats"]
    assert out["ints"].dtype == jax.numpy.int32 and out["floats"].dtype == jax.numpy.float32
    np.testing.assert_array_equal(np.asarray(out["ints"]), ints.reshape(2, 3))
    np.testing.assert_allclose(np.asarray(out["floats"]), floats.astype(np.float32))
    route = explain(path, "jax", dtype=dtype)
    for name in ("ints", "floats"):
        steps = route[name].steps
        assert steps[0].converter.startswith("cast ") and not steps[0].zero_copy
        assert route[name].copies == 1  # the cast's new array is aligned: JAX shares it
    assert any("dtype= casts int64 to int32" in n for n in route.notes)


def test_dtype_casts_each_named_tensor_for_every_target(tmp_path: pathlib.Path) -> None:
    ints = np.arange(6, dtype=np.int64)
    path = file(tmp_path, {
        "ints": {"dtype": "I64", "shape": [6], "data_offsets": [0, 48]},
        "f32": {"dtype": "F32", "shape": [6], "data_offsets": [48, 72]},
    }, ints.tobytes() + F32.tobytes())  # fmt: skip
    for target in ("numpy", "torch", "tensorflow"):
        need(target)
        out = to(path, target, dtype={"int64": "int32"})
        got = {k: np.asarray(v.numpy() if hasattr(v, "numpy") else v) for k, v in out.items()}
        assert got["ints"].dtype == np.int32 and got["f32"].dtype == np.float32
        np.testing.assert_array_equal(got["ints"], ints)
        np.testing.assert_array_equal(got["f32"], F32)
    out = to(path, "numpy", dtype="float16")
    assert {v.dtype for v in out.values()} == {np.dtype(np.float16)}
    np.testing.assert_array_equal(out["ints"], ints.astype(np.float16))
    with pytest.raises(CopyRequiredError, match="a cast to int32 makes a new array"):
        to(path, "numpy", dtype={"int64": "int32"}, copy=False)


# --- what a mapping is: copy=True gives arrays the file no longer touches ----------------


def paged(tmp_path: pathlib.Path) -> pathlib.Path:
    """A file whose tensor lies on the second page (past byte 8192): truncating the file to
    its first bytes leaves no page of the tensor's (within a page, the rest reads as 0)."""
    raw = json.dumps({"a": A}).encode()
    raw += b" " * (8192 - 8 - len(raw))
    return file(tmp_path, raw, F32.tobytes())


_AFTER = """
import pathlib, sys
import numpy as np
from interop_core import to
path = pathlib.Path({path!r})
out = to(path, {target!r}{copy})
first = float(out["a"][5])          # a page read before the file changes
size = path.stat().st_size
with open(path, "r+b") as f:
    if {truncate!r}:
        f.truncate(8)
    else:
        f.seek(size - 24)
        f.write(np.full(6, -1, np.float32).tobytes())
print("CHANGED", flush=True)
print(first, [float(v) for v in out["a"]])
"""


@pytest.mark.parametrize("target", ["numpy", "torch"])
@pytest.mark.parametrize("truncate", [True, False], ids=["truncated", "rewritten"])
def test_copy_true_gives_arrays_that_survive_the_file(
    tmp_path: pathlib.Path, target: str, truncate: bool
) -> None:
    need(target)
    path = paged(tmp_path)
    run = child(_AFTER.format(path=str(path), target=target, copy=", copy=True",
                              truncate=truncate))  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split("\n")[1] == f"5.0 {[float(v) for v in F32]}"


@pytest.mark.skipif(sys.platform != "linux", reason="what a truncated mapping does is Linux's")
def test_without_a_copy_results_are_views_of_the_file(tmp_path: pathlib.Path) -> None:
    """What the README says: a file truncated under its results kills the reader (SIGBUS),
    one rewritten in place shows through (the mapping is private only for this process's
    own writes)."""
    path = paged(tmp_path)
    run = child(_AFTER.format(path=str(path), target="numpy", copy="", truncate=True))
    assert run.stdout.startswith("CHANGED") and run.returncode == -signal.SIGBUS
    path = paged(tmp_path)
    run = child(_AFTER.format(path=str(path), target="numpy", copy="", truncate=False))
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split("\n")[1] == f"5.0 {[-1.0] * 6}"


def test_a_file_truncated_while_it_is_opened_is_refused(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Shorter when mapped than when its header was read: refused, never mapped short."""
    import mmap

    from interop_plugins.frameworks import safetensors as plugin

    path = file(tmp_path, {"a": A}, F32.tobytes())
    real = mmap.mmap

    def truncate_then_map(fd: int, length: int, **kwargs: Any) -> Any:
        with open(path, "r+b") as f:
            f.truncate(path.stat().st_size - 4)
        return real(fd, length, **kwargs)

    monkeypatch.setattr(plugin.mmap, "mmap", truncate_then_map)
    with pytest.raises(TensorFileError, match=r"truncated to \d+ bytes while it was opened"):
        to(path, "numpy")
