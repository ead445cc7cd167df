"""safetensors files: ``to(pathlib.Path(...), target)`` gives ``{name: array}`` over a private
memory map (plugins/frameworks/safetensors.py, plugins/exchange/tensor_files.py).

Files are written here by :func:`write`, which places the data at a chosen offset from a
64-byte boundary (safetensors' own writer pads the header to 8 bytes, so its tensors often
start 16 or 32 bytes past one). Pointers are read with the frameworks' own APIs; the memory
bound and the four-device sharding run in child processes.
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import subprocess
import sys
import textwrap
from typing import Any

import pytest
from conftest import need

from interop_core import (
    ConversionError,
    InteropError,
    NoRouteError,
    NotAnArrayError,
    OptionError,
    explain,
    to,
)

np = need("numpy")

CODES = {
    "bool": "BOOL", "uint8": "U8", "int8": "I8", "uint16": "U16", "int16": "I16",
    "uint32": "U32", "int32": "I32", "uint64": "U64", "int64": "I64", "float16": "F16",
    "bfloat16": "BF16", "float32": "F32", "float64": "F64", "float8_e4m3fn": "F8_E4M3",
    "float8_e5m2": "F8_E5M2", "complex64": "C64",
}  # fmt: skip


def header_bytes(header: dict[str, Any], lead: int) -> bytes:
    """The length and JSON of ``header``, padded with spaces so that the data starts
    ``lead`` bytes past a 64-byte boundary of the file."""
    raw = json.dumps(header).encode()
    raw += b" " * ((lead - 8 - len(raw)) % 64)
    return len(raw).to_bytes(8, "little") + raw


def write(
    path: pathlib.Path, tensors: dict[str, Any], *, lead: int = 0, align: int = 64,
    meta: dict[str, str] | None = None,
) -> pathlib.Path:  # fmt: skip
    """A safetensors file of ``tensors`` (in this order), each starting at a multiple of
    ``align`` in the data, which starts ``lead`` bytes past a 64-byte boundary."""
    header: dict[str, Any] = {} if meta is None else {"__metadata__": meta}
    offset, blobs = 0, []
    for name, a in tensors.items():
        a = np.ascontiguousarray(a)
        offset = -(-offset // align) * align
        header[name] = {"dtype": CODES[a.dtype.name], "shape": list(a.shape),
                        "data_offsets": [offset, offset + a.nbytes]}  # fmt: skip
        blobs.append((offset, a.tobytes()))
        offset += a.nbytes
    data = bytearray(offset)
    for start, blob in blobs:
        data[start : start + len(blob)] = blob
    path.write_bytes(header_bytes(header, lead) + bytes(data))
    return path


def data_start(path: pathlib.Path) -> int:
    return 8 + int.from_bytes(path.read_bytes()[:8], "little")


def digest(path: pathlib.Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def mapped_ranges(path: pathlib.Path) -> list[tuple[int, int]]:
    """The address ranges this process maps ``path`` at (/proc/self/maps)."""
    maps = pathlib.Path("/proc/self/maps")
    if not maps.exists():
        pytest.skip("needs /proc/self/maps (Linux) to find the mapping")
    found = []
    for line in maps.read_text().splitlines():
        if line.endswith(str(path.resolve())):
            lo, hi = line.split()[0].split("-")
            found.append((int(lo, 16), int(hi, 16)))
    return found


def inside(address: int, ranges: list[tuple[int, int]]) -> bool:
    return any(lo <= address < hi for lo, hi in ranges)


VALUES = {
    "weight": np.arange(48, dtype=np.float32).reshape(6, 8),
    "ids": np.arange(10, dtype=np.int32),
    "half": np.linspace(0, 1, 7).astype(np.float16),
    "flags": np.array([True, False, True]),
    "bytes": np.arange(5, dtype=np.uint8),
}


@pytest.fixture
def model(tmp_path: pathlib.Path) -> pathlib.Path:
    return write(tmp_path / "model.safetensors", VALUES)


# --- the dict, its values, dtypes and frameworks --------------------------------------


def test_numpy_gets_read_only_views_of_the_mapping_in_file_order(model: pathlib.Path) -> None:
    out = to(model, "numpy")
    assert list(out) == list(VALUES)
    ranges = mapped_ranges(model)
    for name, x in out.items():
        assert type(x) is np.ndarray and x.dtype == VALUES[name].dtype
        np.testing.assert_array_equal(x, VALUES[name])
        assert not x.flags.writeable
        assert inside(x.ctypes.data, ranges), name
    with pytest.raises(ValueError):
        out["weight"][0, 0] = 1.0


def test_file_order_is_the_order_of_the_bytes(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "order.safetensors"
    write(path, {"b": np.zeros(2, np.int8), "a": np.ones(3, np.int8)})
    raw = path.read_bytes()
    start = data_start(path)
    header = json.loads(raw[8:start])
    reordered = {"a": header["a"], "b": header["b"]}  # header order differs from byte order
    path.write_bytes(header_bytes(reordered, start % 64) + raw[start:])
    assert list(to(path, "numpy")) == ["b", "a"]


def test_torch_tensors_point_into_the_mapping(model: pathlib.Path) -> None:
    torch = need("torch")
    route = explain(model, "torch")
    assert route.zero_copy and all(r.copies == 0 for r in route.routes.values())
    out = to(model, "torch")
    ranges = mapped_ranges(model)
    start = data_start(model)
    header = json.loads(model.read_bytes()[8:start])
    bases = set()
    for name, t in out.items():
        assert type(t) is torch.Tensor
        np.testing.assert_array_equal(t.numpy(), VALUES[name])
        assert inside(t.data_ptr(), ranges), name
        bases.add(t.data_ptr() - start - header[name]["data_offsets"][0])
    assert len(bases) == 1  # one mapping of the whole file, each tensor at its offset
    assert {t.dtype for t in out.values()} == {
        torch.float32,
        torch.int32,
        torch.float16,
        torch.bool,
        torch.uint8,
    }


def test_explain_routes_every_tensor_without_converting(model: pathlib.Path) -> None:
    route = explain(model, "numpy")
    assert list(route) == list(VALUES) and route.zero_copy
    assert route["weight"].copies == 0
    assert "read-only view" in str(route)


@pytest.mark.parametrize("target", ["jax", "tensorflow"])
def test_aligned_tensors_are_shared_unaligned_ones_copied_once(
    tmp_path: pathlib.Path, target: str
) -> None:
    fw = need(target)
    values = {"a": np.arange(16, dtype=np.float32), "b": np.arange(7, dtype=np.int32)}
    aligned = write(tmp_path / "aligned.safetensors", values, lead=0)
    shifted = write(tmp_path / "shifted.safetensors", values, lead=16)  # as safetensors writes
    route = explain(aligned, target)
    assert route["a"].copies == 0 and route["b"].copies == 0
    out = to(aligned, target)
    ranges = mapped_ranges(aligned)
    for name, x in out.items():
        np.testing.assert_array_equal(np.asarray(x), values[name])
        if target == "jax":
            assert type(x).__module__.startswith("jax") and inside(
                x.unsafe_buffer_pointer(), ranges
            )
        else:
            assert isinstance(x, fw.Tensor)
    route = explain(shifted, target)
    for name in values:
        assert route[name].copies == 1, name
        assert "64-byte aligned" in str(route[name])  # says why it copies
    out = to(shifted, target)
    ranges = mapped_ranges(shifted)
    for name, x in out.items():
        np.testing.assert_array_equal(np.asarray(x), values[name])
        if target == "jax":
            assert not inside(x.unsafe_buffer_pointer(), ranges)


def test_copy_false_refuses_an_unaligned_tensor_for_jax(tmp_path: pathlib.Path) -> None:
    need("jax")
    path = write(tmp_path / "m.safetensors", {"a": np.zeros(4, np.float32)}, lead=16)
    with pytest.raises(BufferError):
        to(path, "jax", copy=False)


def test_bfloat16_stays_bfloat16(tmp_path: pathlib.Path) -> None:
    ml_dtypes = need("ml_dtypes")
    torch = need("torch")
    values = np.linspace(-2, 2, 12, dtype=np.float32).astype(ml_dtypes.bfloat16).reshape(3, 4)
    path = write(tmp_path / "bf.safetensors", {"w": values})
    t = to(path, "torch")["w"]
    assert t.dtype == torch.bfloat16 and t.shape == (3, 4)
    assert inside(t.data_ptr(), mapped_ranges(path))
    np.testing.assert_array_equal(t.float().numpy(), values.astype(np.float32))
    x = to(path, "numpy")["w"]
    assert x.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(x, values)
    jax = need("jax")
    route = explain(path, "jax")
    assert route["w"].copies == 0  # through torch's bfloat16 view, not a cast
    j = to(path, "jax")["w"]
    assert j.dtype == jax.numpy.bfloat16 and inside(j.unsafe_buffer_pointer(), mapped_ranges(path))
    np.testing.assert_array_equal(np.asarray(j), values)


def test_every_dtype_is_kept_or_refused(tmp_path: pathlib.Path) -> None:
    ml_dtypes = need("ml_dtypes")
    torch = need("torch")
    values = {
        name: np.arange(6).astype(ml_dtypes.bfloat16 if name == "bfloat16" else
                                  getattr(ml_dtypes, name, None) or np.dtype(name))
        for name in CODES
    }  # fmt: skip
    values["bool"] = np.array([True, False] * 3)
    path = write(tmp_path / "all.safetensors", values)
    as_numpy = to(path, "numpy")
    as_torch = to(path, "torch")
    for name, v in values.items():
        assert as_numpy[name].dtype == v.dtype, name
        np.testing.assert_array_equal(as_numpy[name], v)
        t = as_torch[name]
        assert t.dtype == getattr(torch, name), name
        assert t.view(torch.uint8).numpy().tobytes() == v.tobytes(), name
    tf = need("tensorflow")
    with pytest.raises(NoRouteError, match="float8"):  # TF cannot exchange float8
        to({"x": to(path, "numpy")["float8_e5m2"]}, "tensorflow")
    kept = {k: v for k, v in values.items() if not k.startswith("float8") and "64" not in k}
    path = write(tmp_path / "tf.safetensors", kept)
    for name, x in to(path, "tensorflow").items():
        assert isinstance(x, tf.Tensor) and x.dtype.name == name
        np.testing.assert_array_equal(np.asarray(x).astype(np.float64),
                                      values[name].astype(np.float64))  # fmt: skip


def test_unknown_dtype_is_refused_naming_the_tensor(tmp_path: pathlib.Path) -> None:
    header = {"ok": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
              "packed": {"dtype": "F4", "shape": [2], "data_offsets": [4, 5]}}  # fmt: skip
    path = tmp_path / "f4.safetensors"
    path.write_bytes(header_bytes(header, 0) + bytes(5))
    with pytest.raises(ConversionError, match=r"'packed' \(F4\)"):
        to(path, "numpy")


def test_misaligned_elements_are_copied(tmp_path: pathlib.Path) -> None:
    need("torch")
    header = {"odd": {"dtype": "F32", "shape": [3], "data_offsets": [1, 13]}}
    path = tmp_path / "odd.safetensors"
    values = np.array([1.5, 2.5, 3.5], np.float32)
    path.write_bytes(header_bytes(header, 0) + b"\0" + values.tobytes())
    route = explain(path, "torch")
    assert route["odd"].copies == 1
    t = to(path, "torch")["odd"]
    np.testing.assert_array_equal(t.numpy(), values)
    assert not inside(t.data_ptr(), mapped_ranges(path))


def test_metadata_is_not_a_tensor(tmp_path: pathlib.Path) -> None:
    path = write(tmp_path / "m.safetensors", {"a": np.ones(2, np.float32)},
                 meta={"format": "pt"})  # fmt: skip
    assert list(to(path, "numpy")) == ["a"]


def test_file_written_by_safetensors_reads_the_same(tmp_path: pathlib.Path) -> None:
    need("safetensors")
    import safetensors.numpy as st

    path = tmp_path / "st.safetensors"
    st.save_file(VALUES, str(path), metadata={"k": "v"})
    out = to(path, "numpy")
    assert set(out) == set(VALUES)
    for name, x in out.items():
        np.testing.assert_array_equal(x, VALUES[name])
    starts = {x.ctypes.data % 64 for x in out.values()}
    assert starts  # any offset: what JAX/TF share is decided per tensor


# --- writes never reach the file ------------------------------------------------------


def test_writing_through_torch_leaves_the_file_unchanged(model: pathlib.Path) -> None:
    torch = need("torch")
    before = digest(model)
    out = to(model, "torch")
    out["weight"].add_(100.0)
    out["ids"][0] = -7
    assert float(out["weight"][0, 0]) == 100.0  # the write happened, in private pages
    del out
    assert digest(model) == before
    again = to(model, "torch")
    np.testing.assert_array_equal(again["weight"].numpy(), VALUES["weight"])
    assert int(again["ids"][0]) == 0
    assert isinstance(again["weight"], torch.Tensor)


# --- hostile files ---------------------------------------------------------------------


def _hostile(tmp_path: pathlib.Path, name: str, raw: bytes) -> pathlib.Path:
    path = tmp_path / f"{name}.safetensors"
    path.write_bytes(raw)
    return path


GOOD = {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}

HOSTILE = {
    "empty": (b"", "fewer than the 8"),
    "short": (b"\x01\x00", "fewer than the 8"),
    "huge_length": ((2**63).to_bytes(8, "little") + b"{}", "claims"),
    "truncated_header": ((1000).to_bytes(8, "little") + b'{"a":', "truncated"),
    "not_json": ((4).to_bytes(8, "little") + b"\xff\xfe{}", "not UTF-8 JSON"),
    "not_object": (header_bytes([1, 2], 0), "not an object"),  # type: ignore[arg-type]
    "past_end": (header_bytes({"a": {"dtype": "F32", "shape": [1000],
                                     "data_offsets": [0, 4000]}}, 0) + bytes(8), "truncated"),
    "shape_mismatch": (header_bytes({"a": {"dtype": "F32", "shape": [3],
                                           "data_offsets": [0, 8]}}, 0) + bytes(8), "needs 12"),
    "negative_dim": (header_bytes({"a": {"dtype": "F32", "shape": [-2],
                                         "data_offsets": [0, 8]}}, 0) + bytes(8), "non-negative"),
    "reversed_offsets": (header_bytes({"a": {"dtype": "U8", "shape": [0],
                                             "data_offsets": [8, 0]}}, 0) + bytes(8), "begin"),
    "missing_field": (header_bytes({"a": {"dtype": "F32"}}, 0), "lacks"),
    "overlap": (header_bytes({**GOOD, "b": {"dtype": "F32", "shape": [2],
                                            "data_offsets": [4, 12]}}, 0) + bytes(12), "overlap"),
    "bad_metadata": (header_bytes({"__metadata__": [1], **GOOD}, 0) + bytes(8), "__metadata__"),
    "float_dims": (header_bytes({"a": {"dtype": "F32", "shape": [2.0],
                                       "data_offsets": [0, 8]}}, 0) + bytes(8), "integers"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_files_are_refused_with_what_why_and_what_to_do(
    tmp_path: pathlib.Path, name: str
) -> None:
    raw, why = HOSTILE[name]
    path = _hostile(tmp_path, name, raw)
    for call in (to, explain):
        with pytest.raises(InteropError) as info:
            call(path, "numpy")
        message = str(info.value)
        assert message.startswith(f"Cannot open {str(path)!r} as a safetensors file"), message
        assert why in message, message
        assert "\n" in message  # the second line says what to do


def test_other_suffixes_and_missing_files_are_refused(tmp_path: pathlib.Path) -> None:
    other = write(tmp_path / "weights.bin", {"a": np.ones(2, np.float32)})
    with pytest.raises(InteropError, match=r"'.bin', not '.safetensors'"):
        to(other, "numpy")
    with pytest.raises(InteropError, match="FileNotFoundError"):
        to(tmp_path / "absent.safetensors", "numpy")
    with pytest.raises(InteropError, match="IsADirectoryError"):
        (tmp_path / "dir.safetensors").mkdir()
        to(tmp_path / "dir.safetensors", "numpy")
    good = write(tmp_path / "good.safetensors", {"a": np.ones(2, np.float32)})
    assert list(to(good, "numpy")) == ["a"]
    with pytest.raises(NotAnArrayError) as info:  # never opened: it may be a framework name
        to(str(good), "numpy")
    # The advice is a Path (memoryview() of a str would read the name's bytes, not the file).
    assert f"pass pathlib.Path({str(good)!r})" in str(info.value)
    assert "memoryview" not in str(info.value).split("memoryview())", 1)[1]
    assert list(to(pathlib.Path(str(good)), "numpy")) == ["a"]  # the advice, followed
    with pytest.raises(NotAnArrayError, match=r"pass pathlib\.Path\(os\.fspath\(path\)\)"):
        to(_FsPath(str(good)), "numpy")  # another os.PathLike
    with pytest.raises(NotAnArrayError) as info:
        to("x" * 100, "numpy")  # a long str is shown as "path"
    assert "pass pathlib.Path(path)" in str(info.value)


class _FsPath:
    """An os.PathLike that is not a pathlib.Path."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __fspath__(self) -> str:
        return self.path


# --- memory: a child process ---------------------------------------------------------

_RESIDENT = """
import json, pathlib, sys
import numpy as np, psutil, torch
from interop_core import to

small, big = map(pathlib.Path, sys.argv[1:3])
to(small, "torch")  # the plugins and their converters load here, not in the measurement
me = psutil.Process()
before = me.memory_info().rss
out = to(big, "torch")
opened = me.memory_info().rss
total = sum(float(t.double().sum()) for t in out.values())  # touches every value
touched = me.memory_info().rss
print(json.dumps({"opened": opened - before, "touched": touched - before, "total": total,
                  "names": list(out)}))
"""


def test_opening_256_mib_costs_under_32_mib_resident(tmp_path: pathlib.Path) -> None:
    need("torch")
    need("psutil")
    small = write(tmp_path / "small.safetensors", {"a": np.ones(2, np.float32)})
    big = tmp_path / "big.safetensors"
    n = 16 * 2**20  # float32 elements in each of 4 tensors: 256 MiB of data
    header = {f"t{i}": {"dtype": "F32", "shape": [n], "data_offsets": [i * 4 * n, (i + 1) * 4 * n]}
              for i in range(4)}  # fmt: skip
    chunk = np.ones(2**20, np.float32).tobytes()
    with open(big, "wb") as f:
        f.write(header_bytes(header, 16))
        for _ in range(4 * n // 2**20):
            f.write(chunk)
    done = subprocess.run(
        [sys.executable, "-c", _RESIDENT, str(small), str(big)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["names"] == ["t0", "t1", "t2", "t3"]
    assert got["total"] == 4 * n
    assert got["opened"] < 32 * 2**20, got
    assert got["touched"] > 200 * 2**20, got  # the measurement sees pages once read


# --- sharding=: a child process with four jax host devices ----------------------------

_SHARDED = """
import json, pathlib, sys
import numpy as np, jax
from interop_core import OptionError, ConversionError, explain, to

Mesh, NS, P = jax.sharding.Mesh, jax.sharding.NamedSharding, jax.sharding.PartitionSpec
path = pathlib.Path(sys.argv[1])
mesh = Mesh(np.array(jax.devices()[:4]).reshape(2, 2), ("x", "y"))
asked, ranges = [], []
make = jax.make_array_from_callback

def counting(shape, sharding, callback, *a, **k):
    def slice_of(index):
        out = callback(index)
        if not ranges:  # the mapping, while the call holds it
            ranges.extend((int(a, 16), int(b, 16)) for l in open("/proc/self/maps")
                          if l.rstrip().endswith(str(path.resolve()))
                          for a, b in [l.split()[0].split("-")])
        asked.append({"index": repr(index), "shape": list(out.shape),
                      "ptr": int(out.ctypes.data), "nbytes": int(out.nbytes)})
        return out
    return make(shape, sharding, slice_of, *a, **k)

jax.make_array_from_callback = counting
def pick(name, shape):
    return NS(mesh, P("x", "y") if len(shape) == 2 else P())
route = explain(path, "jax", sharding=pick)
out = to(path, "jax", sharding=pick)
main = list(asked)  # this call's slices only (the calls below ask again)
errors = []
try:
    to(path, "jax", sharding={"w": pick("w", (1, 1))})
except OptionError as exc:
    errors.append(str(exc))
try:
    to(path, "jax", sharding=NS(mesh, P("x", "y")))
except ConversionError as exc:
    errors.append(str(exc))
print(json.dumps({
    "steps": {k: [s.converter for s in route[k].steps] for k in out},
    "copies": {k: route[k].copies for k in out},
    "w": np.asarray(out["w"]).tolist(), "b": np.asarray(out["b"]).tolist(),
    "shards": {k: [list(s.data.shape) for s in v.addressable_shards] for k, v in out.items()},
    "specs": {k: str(v.sharding.spec) for k, v in out.items()},
    "asked": main, "ranges": ranges, "errors": errors,
}))
"""


def test_sharding_reads_only_each_devices_slice(tmp_path: pathlib.Path) -> None:
    need("jax")
    w = np.arange(16 * 8, dtype=np.float32).reshape(16, 8)
    b = np.arange(8, dtype=np.int32)
    path = write(tmp_path / "sharded.safetensors", {"w": w, "b": b}, lead=16)
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=4"}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_SHARDED), str(path)],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["steps"] == {k: ["jax.make_array_from_callback(safetensors slices)"] for k in "wb"}
    assert got["w"] == w.tolist() and got["b"] == b.tolist()
    assert got["shards"]["w"] == [[8, 4]] * 4 and "'x', 'y'" in got["specs"]["w"]
    # The callback was asked for each distinct slice once, and each answer is a view of the
    # mapping holding that slice's bytes only (a 2x2 block of w: 8x4 float32).
    w_slices = [a for a in got["asked"] if a["shape"] == [8, 4]]
    assert len(w_slices) == 4 and all(a["nbytes"] == 8 * 4 * 4 for a in w_slices)
    assert len({a["index"] for a in w_slices}) == 4
    ranges = got["ranges"]
    assert ranges and all(any(lo <= a["ptr"] < hi for lo, hi in ranges) for a in got["asked"])
    assert sum(a["nbytes"] for a in got["asked"]) == w.nbytes + b.nbytes * (len(got["asked"]) - 4)
    assert "without an entry for tensor 'b'" in got["errors"][0]
    assert "tensor 'b'" in got["errors"][1]


def test_sharding_is_refused_for_other_targets(model: pathlib.Path) -> None:
    need("torch")
    with pytest.raises(OptionError, match="sharding"):
        to(model, "torch", sharding=object())
