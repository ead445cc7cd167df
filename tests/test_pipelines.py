"""DALI pipelines become iterators of numpy, JAX, PyTorch and TensorFlow batches.

The datasets are small JPEGs written with pillow; every pipeline runs on the CPU (device_id
None), so these tests need no GPU. Values are checked against pillow's own decoding and
resizing, against each other across targets, and against DALI's own iterators' epoch rules;
zero-copy claims by following numpy's ``.base`` chain to DALI's tensor.
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
need("dali")
Image = pytest.importorskip("PIL.Image")

from nvidia.dali import fn, pipeline_def  # noqa: E402
from nvidia.dali.backend import TensorCPU  # noqa: E402
from nvidia.dali.plugin.base_iterator import LastBatchPolicy  # noqa: E402

NAMES = ["images", "labels"]
SIZE = 16  # the side fn.resize gives the images
H, W = 24, 32  # the JPEGs' own size
COUNTS = {0: 7, 1: 6}  # samples per class folder: 13 in all
N = sum(COUNTS.values())


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
    """``images``: class folders 0/ and 1/ of 7 + 6 random 24x32 RGB JPEGs; ``ragged``: three
    JPEGs of different sizes in one class folder; ``files``: the images as (path, label) in
    DALI's order (class folders sorted, files sorted in each)."""
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
    """``to()`` of a fresh ``images_def`` over ``root`` (batch 4, one thread, reader named)."""
    options.setdefault("batch_size", 4)
    options.setdefault("num_threads", 1)
    options.setdefault("output_map", NAMES)
    options.setdefault("reader_name", "Reader")
    kwargs = {"root": root, **(pipeline_kwargs or {})}
    return interop_core.to(images_def, target, pipeline_kwargs=kwargs, **options)


def unwrap(batch: Any) -> dict[str, Any]:
    """The dict of a batch: DALI's PyTorch iterator gives a list with one per pipeline."""
    if isinstance(batch, list):
        assert len(batch) == 1
        return batch[0]
    assert isinstance(batch, dict)
    return batch


def host(batch: Any) -> dict[str, Any]:
    """Independent numpy copies of a batch's arrays, whatever their framework."""
    return {name: _host_array(x) for name, x in unwrap(batch).items()}


def _host_array(x: Any) -> Any:
    if not hasattr(x, "shape"):  # an Arrow array: its FixedSizeLists hold the dims
        from adapters import to_numpy

        return to_numpy(x)
    return np.array(np.asarray(x), copy=True)


def sizes(it: Any) -> list[int]:
    """The number of samples in each batch of one pass over ``it``."""
    return [int(unwrap(b)["images"].shape[0]) for b in it]


def mad(a: Any, b: Any) -> float:
    """Mean absolute difference of two images."""
    return float(np.abs(np.asarray(a, np.float32) - np.asarray(b, np.float32)).mean())


def array_type(target: str) -> type:
    """The array type of ``target``'s batches (skips when the framework is missing)."""
    fw = need(target)
    return {"numpy": np.ndarray, "jax": getattr(fw, "Array", None)}.get(target) or fw.Tensor


def owners(a: Any) -> list[Any]:
    """``a``'s ``.base`` chain (through memoryviews' ``.obj``): what keeps its memory."""
    chain = []
    while a is not None:
        chain.append(a)
        a = a.obj if isinstance(a, memoryview) else getattr(a, "base", None)
    return chain


# --------------------------------------------------------------------------------------
# values


def test_decoded_resized_and_labelled_in_the_sorted_file_order(data: SimpleNamespace) -> None:
    got = list(batches("numpy", data.images, last_batch_policy="partial"))
    assert [b["images"].shape for b in got] == [(4, SIZE, SIZE, 3)] * 3 + [(1, SIZE, SIZE, 3)]
    for b in got:
        assert set(b) == set(NAMES)
        assert isinstance(b["images"], np.ndarray) and b["images"].dtype == np.uint8
        assert isinstance(b["labels"], np.ndarray) and b["labels"].dtype == np.int32
        assert b["labels"].shape == (b["images"].shape[0], 1)
    labels = np.concatenate([b["labels"].reshape(-1) for b in got])
    assert labels.tolist() == [label for _, label in data.files] == [0] * 7 + [1] * 6
    small = np.concatenate([b["images"] for b in got])

    # without fn.resize: each image is pillow's decoding of the file at its place
    full_it = batches("numpy", data.images, {"size": None}, last_batch_policy="partial")
    full = np.concatenate([b["images"] for b in full_it])
    assert full.shape == (N, H, W, 3) and full.dtype == np.uint8
    decoded = [np.asarray(Image.open(path).convert("RGB")) for path, _ in data.files]
    assert mad(full[0], decoded[0]) < 3
    for i, image in enumerate(full):
        diffs = [mad(image, d) for d in decoded]
        assert diffs[i] < 3 and int(np.argmin(diffs)) == i, (i, diffs)
    # fn.resize is a bilinear (antialiased) resize, as pillow's
    resized = [Image.fromarray(image).resize((SIZE, SIZE), Image.BILINEAR) for image in full]
    for i, image in enumerate(small):
        diffs = [mad(image, r) for r in resized]
        assert diffs[i] < 2 and int(np.argmin(diffs)) == i, (i, diffs)


@pytest.mark.parametrize("target", ["jax", "torch", "tensorflow"])
def test_every_target_gives_numpys_values(data: SimpleNamespace, target: str) -> None:
    kind = array_type(target)
    want = [host(b) for b in batches("numpy", data.images)]
    assert len(want) == 4
    got = list(batches(target, data.images))
    assert len(got) == len(want)
    for batch, expected in zip(got, want, strict=True):
        batch = unwrap(batch)
        assert set(batch) == set(NAMES)
        for name in NAMES:
            assert isinstance(batch[name], kind), (name, type(batch[name]))
            value = np.asarray(batch[name])
            np.testing.assert_array_equal(value, expected[name], err_msg=name)
            assert value.dtype == expected[name].dtype
        assert "uint8" in str(batch["images"].dtype) and "int32" in str(batch["labels"].dtype)
    if target == "torch":
        assert isinstance(next(iter(batches(target, data.images))), list)


# --------------------------------------------------------------------------------------
# epochs


def test_len_and_the_last_batch_policies(data: SimpleNamespace) -> None:
    fill = batches("numpy", data.images, last_batch_policy="fill")
    assert len(fill) == 4 and sizes(fill) == [4, 4, 4, 4]
    drop = batches("numpy", data.images, last_batch_policy="drop")
    assert len(drop) == 3 and sizes(drop) == [4, 4, 4]
    policy = LastBatchPolicy.PARTIAL  # the enum works as its name does
    partial = batches("numpy", data.images, last_batch_policy=policy)
    last = list(partial)[-1]
    assert len(partial) == 4 and last["images"].shape == (1, SIZE, SIZE, 3)
    assert last["labels"].reshape(-1).tolist() == [1]  # the 13th file, of class 1
    with pytest.raises(OptionError, match="fill"):
        batches("numpy", data.images, last_batch_policy="bogus")


def test_partial_last_batch_in_torch(data: SimpleNamespace) -> None:
    torch = need("torch")
    it = batches("torch", data.images, last_batch_policy="partial")
    got = [unwrap(b) for b in it]
    assert len(it) == 4 and [b["images"].shape[0] for b in got] == [4, 4, 4, 1]
    assert got[-1]["images"].dtype == torch.uint8
    want = batches("numpy", data.images, last_batch_policy="partial")
    for batch, expected in zip(got, want, strict=True):
        np.testing.assert_array_equal(batch["images"].numpy(), expected["images"])


@pytest.mark.parametrize("policy", ["fill", "drop", "partial"])
def test_epochs_by_auto_reset_and_by_reset(data: SimpleNamespace, policy: str) -> None:
    count = {"fill": 4, "drop": 3, "partial": 4}[policy]
    pad = {"pad": True}  # a padded reader: every epoch starts at the first file
    auto = batches("numpy", data.images, pad, last_batch_policy=policy, auto_reset=True)
    first = [host(b) for b in auto]
    second = [host(b) for b in auto]
    assert len(first) == len(second) == len(auto) == count
    for a, b in zip(first, second, strict=True):
        for name in NAMES:
            np.testing.assert_array_equal(a[name], b[name])

    it = batches("numpy", data.images, pad, last_batch_policy=policy)
    assert len(list(it)) == count
    it.reset()
    again = [host(b) for b in it]
    assert len(again) == count
    np.testing.assert_array_equal(again[0]["images"], first[0]["images"])
    if policy == "fill":  # padded with the last sample
        assert again[-1]["labels"].reshape(-1).tolist() == [1, 1, 1, 1]
        np.testing.assert_array_equal(again[-1]["images"][1], again[-1]["images"][0])


def test_epochs_without_padding_follow_dalis_own_iterator(data: SimpleNamespace) -> None:
    """FILL without pad_last_batch fills the last batch from the next epoch, which is then
    shorter: NumpyBatches counts as DALI's PyTorch iterator does."""
    need("torch")
    counts = {}
    for target in ("numpy", "torch"):
        it = batches(target, data.images, auto_reset=True)
        counts[target] = [len(it)] + [len(sizes(it)) for _ in range(3)]
    assert counts["numpy"] == counts["torch"]
    assert counts["numpy"][:2] == [4, 4]


def test_other_frameworks_epochs(data: SimpleNamespace) -> None:
    need("jax")
    jax_it = batches("jax", data.images, {"pad": True}, last_batch_policy="drop", auto_reset=True)
    assert len(jax_it) == 3 and sizes(jax_it) == sizes(jax_it) == [4, 4, 4]
    need("tensorflow")
    tf_it = batches("tensorflow", data.images, {"pad": True}, auto_reset=True)
    assert len(tf_it) == 4 and sizes(tf_it) == sizes(tf_it) == [4, 4, 4, 4]
    tf_it = batches("tensorflow", data.images, {"pad": True}, last_batch_policy="partial")
    assert sizes(tf_it) == [4, 4, 4, 1]
    tf_it.reset()
    assert sizes(tf_it) == [4, 4, 4, 1]


def test_a_seeded_shuffle_is_reproducible(data: SimpleNamespace) -> None:
    def order(seed: int) -> list[int]:
        shuffled = {"shuffle": True, "reader_seed": seed, "size": None}
        it = batches("numpy", data.images, shuffled, last_batch_policy="partial")
        images = np.concatenate([b["images"] for b in it])
        assert images.shape == (N, H, W, 3)
        files = np.stack([np.asarray(Image.open(p).convert("RGB")) for p, _ in data.files])
        diffs = np.abs(files[None].astype(np.float32) - images[:, None]).mean(axis=(2, 3, 4))
        assert float(diffs.min(axis=1).max()) < 3  # every image is one of the files
        return [int(i) for i in diffs.argmin(axis=1)]

    first = order(7)
    assert sorted(first) == list(range(N))  # one epoch: every file once
    assert first != list(range(N))  # shuffled
    assert order(7) == first
    assert order(8) != first


# --------------------------------------------------------------------------------------
# options and errors


def test_option_errors(data: SimpleNamespace) -> None:
    with pytest.raises(OptionError, match="output_map"):
        interop_core.to(images_def, "numpy", pipeline_kwargs={"root": data.images})
    with pytest.raises(OptionError, match="colour"):
        batches("numpy", data.images, colour=1)
    pipe = images_def(root=data.images, batch_size=4, num_threads=1, device_id=None)
    pipe.build()
    with pytest.raises(OptionError, match="batch_size"):
        interop_core.to(pipe, "numpy", output_map=NAMES, batch_size=4)
    with pytest.raises(OptionError, match="num_threads"):
        interop_core.to(pipe, "numpy", output_map=NAMES, num_threads=2)
    it = interop_core.to(pipe, "numpy", output_map=NAMES, reader_name="Reader")  # as built
    assert len(it) == 4 and next(it)["images"].shape == (4, SIZE, SIZE, 3)


def test_jax_refuses_partial_batches(data: SimpleNamespace) -> None:
    need("jax")
    with pytest.raises(OptionError, match="partial"):
        batches("jax", data.images, last_batch_policy="partial")
    with pytest.raises(OptionError, match="partial"):
        batches("jax", data.images, last_batch_policy=LastBatchPolicy.PARTIAL)
    with pytest.raises(OptionError, match="output_map"):
        batches("jax", data.images, output_map=None)


def test_pipeline_kwargs_and_build_options(data: SimpleNamespace) -> None:
    it = batches("numpy", data.images, {"size": 8}, batch_size=5, num_threads=2)
    pipe = it._pipes[0]  # the pipeline to() built
    assert pipe.max_batch_size == 5 and pipe.num_threads == 2 and pipe.device_id is None
    got = list(it)
    assert len(it) == len(got) == 3
    assert [b["images"].shape for b in got] == [(5, 8, 8, 3)] * 3
    labels = np.concatenate([b["labels"].reshape(-1) for b in got])
    assert labels[:N].tolist() == [label for _, label in data.files]


@pytest.mark.parametrize("target", ["numpy", "jax", "tensorflow"])
def test_a_ragged_batch_says_to_resize(data: SimpleNamespace, target: str) -> None:
    if target != "numpy":
        need(target)
    ragged = {"size": None}
    with pytest.raises(ConversionError, match=r"fn\.resize"):
        batches(target, data.ragged, ragged, batch_size=3)  # the first batch is prepared
    it = batches(target, data.ragged, ragged, batch_size=3, prepare_first_batch=False)
    with pytest.raises(ConversionError, match=r"fn\.resize"):
        next(it)


def test_a_gpu_pipeline_fails_at_to_on_a_machine_without_one(data: SimpleNamespace) -> None:
    from interop_plugins.kinds.dali import cuda_devices

    if cuda_devices() > 0:
        pytest.skip("this machine has a GPU: the pipeline would run")
    options: dict[str, Any] = {"batch_size": 4, "num_threads": 1, "output_map": NAMES}
    with pytest.raises(ConversionError, match="GPU") as info:
        interop_core.to(gpu_def, "numpy", pipeline_kwargs={"root": data.images}, **options)
    assert "device='cpu'" in str(info.value)
    with pytest.raises(ConversionError, match="GPU"):
        interop_core.to(
            gpu_def, "numpy", pipeline_kwargs={"root": data.images}, prepare_first_batch=False,
            **options,
        )  # fmt: skip


# --------------------------------------------------------------------------------------
# memory


@pytest.mark.parametrize("target", ["numpy", "jax", "torch", "tensorflow"])
def test_held_batches_survive_reused_buffers(data: SimpleNamespace, target: str) -> None:
    """exec_dynamic=False reuses DALI's output buffers: a batch held across next() must not
    change under the user."""
    kind = array_type(target)
    reused = {"exec_dynamic": False, "prefetch_queue_depth": 2}
    it = batches(target, data.images, {"pad": True}, auto_reset=True, **reused)
    held = next(it)
    assert isinstance(unwrap(held)["images"], kind)
    snapshot = host(held)
    later = []
    for step in range(3):  # DALI cycles its buffers: check after every pull
        later.append(host(next(it)))
        assert not np.array_equal(later[-1]["images"], snapshot["images"])  # other images
        now = host(held)
        for name in NAMES:
            np.testing.assert_array_equal(now[name], snapshot[name], err_msg=f"{name} {step}")
    want = [host(b) for b in batches("numpy", data.images, {"pad": True})]
    for name in NAMES:
        np.testing.assert_array_equal(snapshot[name], want[0][name])
        np.testing.assert_array_equal(later[-1][name], want[3][name])


def test_numpy_batches_are_views_of_dali_or_aligned_copies(data: SimpleNamespace) -> None:
    dynamic = next(batches("numpy", data.images))
    for name in NAMES:
        assert any(isinstance(o, TensorCPU) for o in owners(dynamic[name])), name
        assert not dynamic[name].flags.owndata
    reused = next(batches("numpy", data.images, exec_dynamic=False, prefetch_queue_depth=2))
    for name in NAMES:
        a = reused[name]
        assert not any(isinstance(o, TensorCPU) for o in owners(a)), name
        assert a.ctypes.data % 64 == 0 and a.flags.c_contiguous, name
        np.testing.assert_array_equal(a, dynamic[name])


# --------------------------------------------------------------------------------------
# routes


def test_explain_names_the_steps(data: SimpleNamespace) -> None:
    need("tensorflow")
    need("jax")
    route = interop_core.explain(images_def, "tensorflow", output_map=NAMES)
    assert [s.converter for s in route.steps] == ["DALI outputs as numpy", "to() on each batch"]
    assert [s.plugin for s in route.steps] == [
        "interop_plugins.kinds.dali",
        "interop_plugins.kinds.iterators",
    ]
    route = interop_core.explain(images_def, "jax", output_map=NAMES)
    assert [s.converter for s in route.steps] == ["DALI JAX iterator"]
    assert route.source.startswith("dali") and route.target.startswith("jax")
    route = interop_core.explain(images_def, "numpy", output_map=NAMES)
    assert [s.converter for s in route.steps] == ["DALI outputs as numpy"]


# --------------------------------------------------------------------------------------
# sharding

SHARDED = """
import json, sys
import numpy as np
import jax
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

import interop_core
from test_pipelines import NAMES, images_def

root = sys.argv[1]
devices = jax.devices("cpu")
assert len(devices) == 4, devices
sharding = NamedSharding(Mesh(np.array(devices), ("data",)), P("data"))
it = interop_core.to(
    images_def, "jax", output_map=NAMES, reader_name="Reader", sharding=sharding,
    batch_size=8, num_threads=1, pipeline_kwargs={"root": root, "pad": True},
)
plain = [
    interop_core.to(
        images_def, "numpy", output_map=NAMES, reader_name="Reader", batch_size=2,
        num_threads=1, pipeline_kwargs={"root": root, "pad": True, "shard_id": i,
                                        "num_shards": 4},
    )
    for i in range(4)
]
mean = jax.jit(lambda x: x.astype(jnp.float32).mean())
steps = []
for batch in it:
    want = [next(p) for p in plain]
    step = {"shapes": {}, "devices": {}, "rows": {}, "equal": {}, "types": {}}
    for name in NAMES:
        x = batch[name]
        step["types"][name] = isinstance(x, jax.Array) and x.sharding == sharding
        step["shapes"][name] = list(x.shape)
        shards = sorted(x.addressable_shards, key=lambda s: s.index[0].start)
        step["devices"][name] = [s.device == devices[i] for i, s in enumerate(shards)]
        step["rows"][name] = [s.index[0].indices(8)[:2] for s in shards]
        step["equal"][name] = [
            np.array_equal(np.asarray(s.data), want[i][name]) for i, s in enumerate(shards)
        ]
    images = batch["images"]
    step["mean"] = float(mean(images))
    step["numpy_mean"] = float(np.asarray(images).astype(np.float32).mean())
    steps.append(step)
print(json.dumps({"len": len(it), "steps": steps}))
"""


def test_sharded_batches_are_global_arrays_on_the_mesh(data: SimpleNamespace) -> None:
    need("jax")
    paths = [str(Path(__file__).parent), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {
        **os.environ,
        "XLA_FLAGS": "--xla_force_host_platform_device_count=4",
        "JAX_PLATFORMS": "cpu",
        "PYTHONPATH": os.pathsep.join(paths),  # the subprocess imports images_def from here
    }
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(SHARDED), data.images],
        env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    # 13 files over 4 shards (4, 3, 3, 3), each padded to 2 batches of 2
    assert summary["len"] == 2 and len(summary["steps"]) == 2
    for step in summary["steps"]:
        assert step["shapes"] == {"images": [8, SIZE, SIZE, 3], "labels": [8, 1]}
        for name in NAMES:
            assert step["types"][name], name
            assert step["devices"][name] == [True] * 4, name
            assert step["rows"][name] == [[2 * i, 2 * i + 2] for i in range(4)], name
            assert step["equal"][name] == [True] * 4, name
        assert 40 < step["mean"] < 215
        assert step["mean"] == pytest.approx(step["numpy_mean"], rel=1e-5)


def test_a_pipeline_def_and_a_plain_function_of_the_same_type_keep_their_kinds(
    data: SimpleNamespace,
) -> None:
    """Both are Python functions: detection must ask each object, not remember the type."""

    def plain(x: Any) -> Any:
        return x

    with pytest.raises(OptionError, match="source="):  # a plain function needs source=
        interop_core.to(plain, "numpy")
    assert isinstance(host(next(batches("numpy", data.images)))["images"], np.ndarray)
    with pytest.raises(OptionError, match="source="):
        interop_core.to(plain, "numpy")


def test_a_route_is_planned_once_for_unhashable_options(data: SimpleNamespace) -> None:
    """output_map=[...] is a list: the route is cached by the option names, not values."""
    from interop_core.face.api import default_registry

    cache = default_registry().state.cache.requests
    before = len(cache)
    for names in (["a", "b"], ["c", "d"]):
        batch = next(batches("numpy", data.images, output_map=names))
        assert set(batch) == set(names)
    assert len(cache) - before <= 1


def test_sharding_errors_say_what_to_pass(data: SimpleNamespace) -> None:
    jax = need("jax")
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = Mesh(np.array(jax.devices()[:1]), ("data",))
    with pytest.raises(OptionError, match=r"jax\.sharding\.Sharding"):
        batches("jax", data.images, sharding="data")
    with pytest.raises(OptionError, match="batch axis"):
        batches("jax", data.images, sharding=NamedSharding(mesh, P(None, "data")))
    with pytest.raises(OptionError, match="@pipeline_def"):
        pipe = images_def(root=data.images, batch_size=4, num_threads=1, device_id=None)
        interop_core.to(pipe, "jax", output_map=NAMES, sharding=NamedSharding(mesh, P("data")))
    one = next(batches("jax", data.images, sharding=NamedSharding(mesh, P("data"))))
    assert one["images"].shape == (4, SIZE, SIZE, 3)  # one shard: the whole batch
    assert {s.device for s in one["images"].addressable_shards} == {jax.devices()[0]}


def test_build_errors_say_what_to_pass(data: SimpleNamespace) -> None:
    @pipeline_def  # type: ignore[misc]
    def unshardable(root: str) -> Any:
        jpegs, labels = fn.readers.file(file_root=root, name="Reader")
        return fn.resize(fn.decoders.image(jpegs, device="cpu"), size=[SIZE, SIZE]), labels

    with pytest.raises(ConversionError, match="pass batch_size="):
        interop_core.to(
            unshardable, "numpy", output_map=NAMES, pipeline_kwargs={"root": data.images}
        )
    jax = need("jax")
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    sharding = NamedSharding(Mesh(np.array(jax.devices()[:1]), ("data",)), P("data"))
    with pytest.raises(ConversionError, match="shard_id= and num_shards="):
        interop_core.to(unshardable, "jax", output_map=NAMES, sharding=sharding, batch_size=4,
                        pipeline_kwargs={"root": data.images})  # fmt: skip
