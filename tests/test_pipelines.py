"""DALI pipelines become iterators of numpy, JAX, PyTorch and TensorFlow batches.

The datasets are small JPEGs written with pillow; every pipeline runs on the CPU (device_id
None), so these tests need no GPU. Values are checked against pillow's own decoding, against
each other across targets, and against DALI's own iterators' epoch rules; zero-copy claims by
following numpy's ``.base`` chain to DALI's tensor.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from conftest import need

import interop_core
from interop_core import ConversionError, OptionError

np = need("numpy")
dali = need("dali")
Image = pytest.importorskip("PIL.Image")

from nvidia.dali import fn, pipeline_def  # noqa: E402
from nvidia.dali.backend import TensorCPU  # noqa: E402
from nvidia.dali.pipeline import Pipeline  # noqa: E402

NAMES = ["images", "labels"]
SIZE = 16  # the side fn.resize gives the images
H, W = 24, 32  # the JPEGs' own size
COUNTS = {0: 7, 1: 6}  # samples per class folder: 13 in all
TARGETS = ("numpy", "jax", "torch", "tensorflow")


@pipeline_def
def images_def(
    root: str,
    size: int | None = SIZE,
    shuffle: bool = False,
    reader_seed: int = -1,
    pad: bool = False,
    shard_id: int = 0,
    num_shards: int = 1,
) -> Any:
    """JPEGs of ``root``'s class folders, decoded on the CPU (resized to size x size)."""
    jpegs, labels = fn.readers.file(
        file_root=root, random_shuffle=shuffle, seed=reader_seed, pad_last_batch=pad,
        shard_id=shard_id, num_shards=num_shards, name="Reader",
    )  # fmt: skip
    images = fn.decoders.image(jpegs, device="cpu")
    if size is not None:
        images = fn.resize(images, resize_x=size, resize_y=size)
    return images, labels


@pipeline_def
def gpu_def(root: str) -> Any:
    """Decodes on the GPU (device="mixed"): cannot run without one."""
    jpegs, labels = fn.readers.file(file_root=root, name="Reader")
    return fn.decoders.image(jpegs, device="mixed"), labels


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """"images": class folders 0/ and 1/ of 7 + 6 random 24x32 RGB JPEGs; "ragged": three
    JPEGs of different sizes in one class folder. ``files``: the images in DALI's order
    (class folders sorted, files sorted in each) with their labels."""
    base = tmp_path_factory.mktemp("dali")
    rng = np.random.default_rng(1234)
    files = []
    for label, count in COUNTS.items():
        folder = base / "images" / str(label)
        folder.mkdir(parents=True)
        for i in range(count):
            path = folder / f"img{i:02d}.jpg"
            pixels = rng.integers(0, 256, (H, W, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(path, quality=95)
            files.append((path, label))
    ragged = base / "ragged" / "0"
    ragged.mkdir(parents=True)
    for i, (h, w) in enumerate([(20, 30), (24, 32), (16, 40)]):
        pixels = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(ragged / f"r{i}.jpg", quality=95)
    return SimpleNamespace(
        images=str(base / "images"), ragged=str(base / "ragged"), files=sorted(files)
    )


def batches(target: str, root: str, pipeline_kwargs: Any = None, **options: Any) -> Any:
    """``to()`` of a fresh ``images_def`` pipeline over ``root`` (batch 4, one thread)."""
    options.setdefault("batch_size", 4)
    options.setdefault("num_threads", 1)
    options.setdefault("output_map", NAMES)
    options.setdefault("reader_name", "Reader")
    kwargs = {"root": root, **(pipeline_kwargs or {})}
    return interop_core.to(images_def, target, pipeline_kwargs=kwargs, **options)


def built(root: str, **kwargs: Any) -> Any:
    """A Pipeline built from ``images_def`` by the user (CPU only: device_id None)."""
    pipe = images_def(root=root, batch_size=4, num_threads=1, device_id=None, **kwargs)
    pipe.build()
    return pipe


def unwrap(batch: Any) -> dict[str, Any]:
    """The dict of a batch: DALI's PyTorch iterator gives a list with one per pipeline."""
    if isinstance(batch, list):
        assert len(batch) == 1
        return batch[0]
    return batch


def host(batch: Any) -> dict[str, Any]:
    """Independent numpy copies of a batch's arrays, whatever the framework."""
    return {name: np.array(np.asarray(x), copy=True) for name, x in unwrap(batch).items()}


def sizes(it: Any) -> list[int]:
    """The number of samples in each batch of one pass over ``it``."""
    return [int(unwrap(b)["images"].shape[0]) for b in it]


def pil(path: Path) -> Any:
    return np.asarray(Image.open(path).convert("RGB"))


def mad(a: Any, b: Any) -> float:
    """Mean absolute difference of two uint8 images."""
    return float(np.abs(a.astype(np.float32) - b.astype(np.float32)).mean())


# --------------------------------------------------------------------------------------
# values


def test_decoded_resized_and_labelled_in_the_sorted_file_order(data: SimpleNamespace) -> None:
    it = batches("numpy", data.images, last_batch_policy="partial")
    got = list(it)
    assert [b["images"].shape for b in got] == [(4, SIZE, SIZE, 3)] * 3 + [(1, SIZE, SIZE, 3)]
    for b in got:
        assert isinstance(b["images"], np.ndarray) and b["images"].dtype == np.uint8
        assert isinstance(b["labels"], np.ndarray) and b["labels"].dtype == np.int32
    labels = np.concatenate([b["labels"].reshape(-1) for b in got])
    assert labels.tolist() == [label for _, label in data.files]
    images = np.concatenate([b["images"] for b in got])
    assert 40 < images.mean() < 215 and images.std() > 20  # decoded pixels, not zeros

    # without fn.resize: each image is pillow's decoding of the file at its place
    full = np.concatenate(
        [b["images"] for b in batches("numpy", data.images, {"size": None}, last_batch_policy="partial")]
    )
    assert full.shape == (len(data.files), H, W, 3) and full.dtype == np.uint8
    decoded = [pil(path) for path, _ in data.files]
    assert mad(full[0], decoded[0]) < 3
    for i, image in enumerate(full):
        diffs = [mad(image, d) for d in decoded]
        assert diffs[i] < 3 and int(np.argmin(diffs)) == i, (i, diffs)
    # the resized images are the full ones made smaller: close to a plain box average
    small = full[0].astype(np.float32).reshape(SIZE, H // SIZE or 1, -1, 3)
    assert images[0].shape == (SIZE, SIZE, 3) and small.size == full[0].size


def test_every_target_gives_the_same_values(data: SimpleNamespace) -> None:
    want = [host(b) for b in batches("numpy", data.images)]
    assert len(want) == 4
    kinds: dict[str, Any] = {"numpy": np.ndarray}
    for name, module in (("jax", "jax"), ("torch", "torch"), ("tensorflow", "tensorflow")):
        fw = need(module)
        kinds[name] = {"jax": getattr(fw, "Array", None), "torch": getattr(fw, "Tensor", None)}.get(
            name
        ) or fw.Tensor
    for target, kind in kinds.items():
        got = list(batches(target, data.images))
        assert len(got) == len(want), target
        for batch, expected in zip(got, want, strict=True):
            batch = unwrap(batch)
            assert set(batch) == set(NAMES), target
            for name in NAMES:
                assert isinstance(batch[name], kind), (target, name, type(batch[name]))
                value = np.asarray(batch[name])
                assert value.dtype == expected[name].dtype, (target, name, value.dtype)
                np.testing.assert_array_equal(value, expected[name], err_msg=f"{target} {name}")
        dtypes = {n: str(unwrap(got[0])[n].dtype) for n in NAMES}
        assert all("uint8" in dtypes["images"] for _ in [0]), (target, dtypes)
        assert "int32" in dtypes["labels"], (target, dtypes)
