"""DALI dynamic mode (``nvidia.dali.experimental.dynamic``, issue 20): a Batch becomes one
array of every framework.

A Batch whose samples lie back to back in DALI's buffer (what DALI's operators, decoders
and readers make, and ``ndd.as_batch`` of one array) is shared without a copy, into JAX and
TensorFlow too when the buffer is 64-byte aligned (DALI's own allocations are); samples that
lie apart are stacked by one copy that explain() counts; samples of different shapes are
refused with what to do. Pointers are read with each framework's own API and compared with
DALI's. Everything runs on the CPU.
"""

from __future__ import annotations

import gc
import io
from typing import Any

import pytest
from adapters import assert_same_array, dtype_name, holds, own_ptr, to_numpy
from conftest import frameworks, need

from interop_core import ConversionError, CopyRequiredError, explain, to
from interop_core.testing import framework_of

np = need("numpy")
need("dali")
ndd = pytest.importorskip("nvidia.dali.experimental.dynamic")

#: Every framework to() converts into (conftest.frameworks), a plugin's included.
TARGETS = frameworks()
PLUGIN = "interop_plugins.kinds.dali_dynamic"
DTYPES = ("bool", "uint8", "int16", "int32", "int64", "float16", "float32", "float64")


def dali_ptr(batch: Any) -> int:
    """DALI's own address of a batch's buffer (its TensorListCPU's ``data_ptr()``)."""
    return int(batch.evaluate()._storage.data_ptr())


def sample_ptrs(batch: Any) -> list[int]:
    """DALI's own address of each sample of a batch."""
    storage = batch.evaluate()._storage
    return [int(storage[i].data_ptr()) for i in range(len(storage))]


def dali_values(batch: Any) -> Any:
    """The batch's values as DALI gives them (each sample's own numpy copy), stacked."""
    return np.stack([np.array(t, copy=True) for t in batch])


def offset_array(values: Any, offset: int) -> Any:
    """A C-contiguous numpy copy of ``values`` starting ``offset`` bytes past a 64-byte
    boundary."""
    nbytes = values.nbytes
    buf = np.empty(nbytes + 128, dtype=np.uint8)
    start = -buf.ctypes.data % 64 + offset
    out = buf[start : start + nbytes].view(values.dtype).reshape(values.shape)
    out[...] = values
    return out


def check(result: Any, ref: Any, target: str) -> None:
    """``result`` is an array of ``target`` holding ``ref``'s dtype, shape and values."""
    assert framework_of(result) == target
    assert dtype_name(result) == ref.dtype.name
    assert_same_array(ref, to_numpy(result))


def need_target(target: str, dtype: str = "float32") -> None:
    need(target)
    if not holds(target, dtype):
        pytest.skip(f"{target} does not hold {dtype} here")


def png(height: int, width: int, seed: int) -> tuple[Any, Any]:
    """(the PNG file's bytes as a uint8 array, its pixels): PNG is lossless."""
    image = pytest.importorskip("PIL.Image")
    pixels = np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
    f = io.BytesIO()
    image.fromarray(pixels).save(f, format="PNG")
    return np.frombuffer(f.getvalue(), np.uint8), pixels


# --------------------------------------------------------------------------------------
# a contiguous batch: one array, zero-copy


@pytest.mark.parametrize("target", TARGETS)
def test_an_operators_batch_shares_dalis_buffer(target: str) -> None:
    need_target(target)
    source = np.arange(4 * 2 * 3, dtype=np.float32).reshape(4, 2, 3)
    batch = ndd.as_batch(source) * 2 + 1  # a lazy operator's result: to() evaluates it
    route = explain(batch, target)
    assert route.copies == 0
    assert route.steps[0].converter == "DALI Batch buffer as numpy"
    assert route.steps[0].plugin == PLUGIN
    assert route.source == "dali.Batch@cpu"
    out = to(batch, target)
    check(out, source * 2 + 1, target)
    assert_same_array(dali_values(batch), to_numpy(out))
    # DALI allocates its buffers 64-byte aligned, so JAX and TensorFlow share them too.
    assert dali_ptr(batch) % 64 == 0
    assert own_ptr(out) == dali_ptr(batch)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("target", TARGETS)
def test_dtypes_of_a_batch(target: str, dtype: str) -> None:
    need_target(target, dtype)
    values = (np.arange(3 * 5) % 7).astype(dtype).reshape(3, 5)
    batch = ndd.batch(values)  # DALI's own copy: a contiguous batch of 3 samples of 5
    out = to(batch, target)
    check(out, values, target)
    if target == "pyarrow" and dtype == "bool":  # Arrow's booleans are bits: one copy
        assert explain(batch, target).copies == 1
        return
    assert explain(batch, target).copies == 0
    assert own_ptr(out) == dali_ptr(batch)


@pytest.mark.parametrize("target", TARGETS)
def test_a_batch_and_its_as_tensor_agree(target: str) -> None:
    """``to(batch)`` and ``to(ndd.as_tensor(batch))`` (a Tensor, through DLPack) give the
    same array, both sharing DALI's buffer."""
    need_target(target)
    batch = ndd.random.uniform(batch_size=3, shape=(4,), device="cpu")
    tensor = ndd.as_tensor(batch)
    a, b = to(batch, target), to(tensor, target)
    assert_same_array(to_numpy(a), to_numpy(b))
    assert own_ptr(a) == own_ptr(b) == dali_ptr(batch)
    assert explain(batch, target).copies == explain(tensor, target).copies == 0


def test_numpy_result_views_dalis_memory_and_keeps_it_alive() -> None:
    batch = ndd.as_batch(np.zeros((2, 3), np.float32)) + 5
    address = dali_ptr(batch)
    out = to(batch, "numpy")
    assert out.ctypes.data == address and out.flags.writeable
    out[0, 0] = -1.0  # the note in explain(): writes reach the batch
    assert float(np.array(batch.tensors[0], copy=True)[0]) == -1.0
    del batch
    gc.collect()
    churn = [ndd.as_batch(np.full((2, 3), 9, np.float32)) + 1 for _ in range(20)]
    for b in churn:
        b.evaluate()
    assert out.tolist() == [[-1.0, 5.0, 5.0], [5.0, 5.0, 5.0]]


@pytest.mark.parametrize("target", ["numpy", "torch", "jax", "tensorflow"])
def test_a_batch_over_one_numpy_array_is_that_array(target: str) -> None:
    """``ndd.as_batch`` of one array views it: aligned, every framework shares it; 16 bytes
    off a 64-byte boundary (as numpy often allocates), JAX and TensorFlow get one copy."""
    need_target(target)
    values = np.arange(4 * 6, dtype=np.float32).reshape(4, 6)
    aligned, off = offset_array(values, 0), offset_array(values, 16)
    first, second = ndd.as_batch(aligned), ndd.as_batch(off)
    assert dali_ptr(first) == aligned.ctypes.data and dali_ptr(second) == off.ctypes.data
    for source, batch in ((aligned, first), (off, second)):  # the second: warm path
        out = to(batch, target)
        check(out, values, target)
        shared = own_ptr(out) == source.ctypes.data
        copies = explain(batch, target).copies
        if source is aligned or target in ("numpy", "torch"):
            assert shared and copies == 0
        else:
            assert not shared and copies == 1
            assert "64-byte aligned" in str(explain(batch, target))


# --------------------------------------------------------------------------------------
# samples apart: one copy


@pytest.mark.parametrize("target", TARGETS)
def test_samples_apart_are_stacked_by_one_copy(target: str) -> None:
    need_target(target)
    samples = [np.full((2, 3), i, np.float32) + np.arange(3, dtype=np.float32) for i in range(4)]
    batch = ndd.as_batch(samples)  # DALI views each array where it is
    assert sample_ptrs(batch) == [s.ctypes.data for s in samples]
    route = explain(batch, target)
    assert route.copies == 1
    assert route.steps[0].converter == "stack DALI Batch samples" and not route.steps[0].zero_copy
    assert all(s.zero_copy for s in route.steps[1:])  # the stacked copy is aligned
    out = to(batch, target)
    check(out, np.stack(samples), target)
    assert own_ptr(out) not in sample_ptrs(batch)
    assert own_ptr(out) % 64 == 0


def test_samples_apart_with_copy_false_say_why() -> None:
    batch = ndd.as_batch([np.ones(3, np.int32), np.zeros(3, np.int32)])
    with pytest.raises(CopyRequiredError, match="separate buffers"):
        to(batch, "torch", copy=False)


def test_warm_path_tells_contiguous_from_apart() -> None:
    """Same type, same dtype: the key must keep the view edge from a batch with no buffer."""
    dense = ndd.batch(np.ones((2, 3), np.int32))
    apart = ndd.as_batch([np.full(3, 7, np.int32), np.full(3, 8, np.int32)])
    for _ in range(2):
        a, b = to(dense, "numpy"), to(apart, "numpy")
        assert a.ctypes.data == dali_ptr(dense)
        assert b.tolist() == [[7, 7, 7], [8, 8, 8]]


# --------------------------------------------------------------------------------------
# dtype=, copy=


def test_dtype_casts_int64_labels_for_jax() -> None:
    need("jax")
    labels = ndd.batch(np.arange(8, dtype=np.int64).reshape(8, 1) * 1000)
    route = explain(labels, "jax", dtype="int32")
    assert route.copies == 1
    out = to(labels, "jax", dtype="int32")
    check(out, np.arange(8, dtype=np.int32).reshape(8, 1) * 1000, "jax")
    apart = ndd.as_batch([np.array([i], np.int64) for i in range(3)])
    check(to(apart, "jax", dtype="int32"), np.arange(3, dtype=np.int32).reshape(3, 1), "jax")


def test_copy_true_gives_new_memory() -> None:
    need("torch")
    batch = ndd.batch(np.ones((2, 2), np.float32))
    out = to(batch, "torch", copy=True)
    assert out.data_ptr() != dali_ptr(batch)
    assert explain(batch, "torch", copy=True).copies == 1


# --------------------------------------------------------------------------------------
# what has no one array


def test_ragged_batch_is_refused_with_what_to_do() -> None:
    need("torch")
    batch = ndd.as_batch([np.ones((2, 3), np.float32), np.ones((3, 3), np.float32)])
    for call in (to, explain):
        with pytest.raises(ConversionError, match="differ in shape") as info:
            call(batch, "torch")
        text = str(info.value)
        assert "(2, 3), (3, 3)" in text and "pad=True" in text and "to(list(batch)" in text
    # What the message offers: a list of arrays, each sample shared.
    parts = to(list(batch), "torch")
    assert [tuple(p.shape) for p in parts] == [(2, 3), (3, 3)]
    assert [p.data_ptr() for p in parts] == sample_ptrs(batch)
    padded = to(ndd.as_tensor(batch, pad=True), "numpy")
    assert padded.shape == (2, 3, 3) and padded[0, 2].tolist() == [0.0, 0.0, 0.0]


def test_empty_batch_is_refused() -> None:
    with pytest.raises(ConversionError, match="no samples"):
        to(ndd.as_batch([], dtype=ndd.float32), "numpy")


# --------------------------------------------------------------------------------------
# batches of DALI's operators


@pytest.mark.parametrize("target", TARGETS)
def test_decoded_images(target: str) -> None:
    need_target(target, "uint8")
    files = [png(8, 8, seed) for seed in range(3)]
    encoded = ndd.as_batch([f for f, _ in files])
    images = ndd.decoders.image(encoded, device="cpu")
    out = to(images, target)
    check(out, np.stack([p for _, p in files]), target)
    assert explain(images, target).copies == 0 and own_ptr(out) == dali_ptr(images)
    other = [png(8, 8, 7), png(5, 6, 8)]
    with pytest.raises(ConversionError, match=r"\(8, 8, 3\), \(5, 6, 3\)"):
        to(ndd.decoders.image(ndd.as_batch([f for f, _ in other]), device="cpu"), target)


def test_reader_batches(tmp_path: Any) -> None:
    need("torch")
    for i in range(6):
        np.save(tmp_path / f"{i}.npy", np.full((2, 3), i, np.int64))
    reader = ndd.readers.Numpy(file_root=str(tmp_path), file_filter="*.npy")
    got = []
    for (batch,) in reader.next_epoch(batch_size=4):
        assert explain(batch, "torch").copies == 0
        out = to(batch, "torch")
        assert out.data_ptr() == dali_ptr(batch) and str(out.dtype) == "torch.int64"
        assert_same_array(dali_values(batch), out.numpy())
        got.append(out[:2, 0, 0].tolist())
    assert got == [[0, 1], [4, 5]]  # the files in order (DALI fills the last batch itself)


def test_a_dict_of_batches() -> None:
    need("torch")
    images = ndd.random.uniform(batch_size=4, shape=(2, 2), device="cpu")
    labels = ndd.batch(np.arange(4, dtype=np.int32))
    out = to({"images": images, "labels": labels}, "torch")
    assert out["images"].shape == (4, 2, 2) and out["images"].data_ptr() == dali_ptr(images)
    assert out["labels"].tolist() == [0, 1, 2, 3]
