"""DALI pipelines as a new user meets them (issue 16): output_map checked at to() time for
every target, epochs that end without reader_name= (the pipeline's only reader), iterators
without an epoch end that say so (a warning, explain(), len() raising), and lists of
pipelines (one per GPU or shard) batched as DALI's own iterators batch them.

Every pipeline runs on the CPU (device_id None); the image folder is test_pipelines'.
"""

from __future__ import annotations

import importlib
import itertools
import warnings
from types import SimpleNamespace
from typing import Any

import pytest
from adapters import holds, shape_of, to_numpy
from conftest import framework_spec, frameworks, need

import interop_core
from interop_core import OptionError

np = need("numpy")
need("dali")
pytest.importorskip("PIL.Image")

from nvidia.dali import fn, pipeline_def  # noqa: E402
from nvidia.dali.backend import TensorCPU  # noqa: E402
from test_pipelines import NAMES, SIZE, data, host, images_def, owners  # noqa: E402

__all__ = ["data"]  # the image folder fixture, shared with test_pipelines

#: Every framework to() converts into (conftest.frameworks), a plugin's included.
TARGETS = frameworks()
ENDLESS = "never ends an epoch"


def built(root: str, batch_size: int = 4, **kwargs: Any) -> Any:
    """A built ``images_def`` over ``root`` (its reader is named "Reader")."""
    pipe = images_def(root=root, batch_size=batch_size, num_threads=1, device_id=None, **kwargs)
    pipe.build()
    return pipe


@pipeline_def
def unnamed_def(root: str) -> Any:
    """One reader, given no name: DALI names it itself."""
    jpegs, labels = fn.readers.file(file_root=root)
    return fn.resize(fn.decoders.image(jpegs, device="cpu"), size=[SIZE, SIZE]), labels


@pipeline_def
def no_reader_def() -> Any:
    """No reader at all: random numbers, batch after batch, with no epoch."""
    return fn.random.uniform(shape=[3], seed=1), fn.random.coin_flip(seed=2)


@pipeline_def
def two_readers_def(root: str) -> Any:
    """Two readers of the same folder: which one's epoch counts is the user's choice."""
    _, first = fn.readers.file(file_root=root, name="First")
    _, second = fn.readers.file(file_root=root, name="Second", random_shuffle=True, seed=3)
    return first, second


def make(target: str, fn_: Any, root: str | None = None, **options: Any) -> Any:
    """``to()`` of the @pipeline_def ``fn_`` (batch 4, one thread)."""
    options.setdefault("batch_size", 4)
    options.setdefault("num_threads", 1)
    if root is not None:
        options["pipeline_kwargs"] = {"root": root, **options.get("pipeline_kwargs", {})}
    return interop_core.to(fn_, target, **options)


def first(batch: Any) -> dict[str, Any]:
    """The dict of a one-pipeline batch (torch's is a list of one)."""
    return batch[0] if isinstance(batch, list) else batch


def need_target(target: str) -> None:
    """Skip unless ``target`` is installed and holds the pipelines' uint8 images, int32
    labels and float32 numbers (a plugin's framework may hold few dtypes)."""
    if target != "numpy":
        need(target)
    for dtype in ("uint8", "int32", "float32"):
        if not holds(target, dtype):
            pytest.skip(f"{target} does not hold {dtype}")


def batch_type(target: str) -> type:
    """The array type of ``target``'s batches: its spec's first array type."""
    need_target(target)
    path = framework_spec(target).array_types[0]
    module, _, name = path.rpartition(".")
    found: type = getattr(importlib.import_module(module), name)
    return found


def dali_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if "DALI" in str(w.message)]


# --------------------------------------------------------------------------------------
# output_map


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("names", [["images"], ["images", "labels", "extra"]])
def test_an_output_map_of_the_wrong_length_is_refused_by_to(
    data: SimpleNamespace, target: str, names: list[str]
) -> None:
    """DALI's JAX iterator dropped the second output silently; the others failed at the
    first batch (torch with a raw IndexError). Now to() itself refuses, for every target,
    before any batch is prepared."""
    need_target(target)
    with pytest.raises(OptionError) as info:
        interop_core.to(
            built(data.images), target, output_map=names, reader_name="Reader",
            prepare_first_batch=False,
        )  # fmt: skip
    message = str(info.value)
    assert f"names {len(names)} output(s), but the DALI pipeline has 2" in message
    fixed = ["images", "output1"] if len(names) == 1 else ["images", "labels"]
    assert f"output_map={fixed!r}" in message
    with pytest.raises(OptionError, match="has 2"):  # a @pipeline_def too
        make(target, images_def, data.images, output_map=names)


# --------------------------------------------------------------------------------------
# epochs without reader_name=


@pytest.mark.parametrize("target", TARGETS)
def test_the_only_reader_ends_the_epoch_without_reader_name(
    data: SimpleNamespace, target: str
) -> None:
    """The README's to(pipe, "tensorflow", output_map=[...]) yielded forever with len() 0;
    an auto_reset loop never ended."""
    need_target(target)
    kind = batch_type(target)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        it = interop_core.to(built(data.images, pad=True), target, output_map=NAMES)
        auto = make(target, images_def, data.images, output_map=NAMES, auto_reset=True,
                    pipeline_kwargs={"pad": True})  # fmt: skip
    assert dali_warnings(caught) == []
    assert len(it) == 4
    got = list(itertools.islice(it, 10))  # would be 10 batches on an endless iterator
    assert len(got) == 4 and all(isinstance(first(b)["images"], kind) for b in got)
    want = [host(b) for b in make("numpy", images_def, data.images, output_map=NAMES,
                                  reader_name="Reader", pipeline_kwargs={"pad": True})]  # fmt: skip
    for batch, expected in zip(got, want, strict=True):
        np.testing.assert_array_equal(host(first(batch))["labels"], expected["labels"])
    epochs = [len(list(itertools.islice(auto, 10))) for _ in range(3)]
    assert len(auto) == 4 and epochs == [4, 4, 4]


def test_an_unnamed_reader_is_found_too(data: SimpleNamespace) -> None:
    it = make("numpy", unnamed_def, data.images, output_map=NAMES, last_batch_policy="partial")
    assert len(it) == 4
    labels = np.concatenate([b["labels"].reshape(-1) for b in itertools.islice(it, 10)])
    assert labels.tolist() == [0] * 7 + [1] * 6


@pytest.mark.parametrize("target", TARGETS)
def test_a_pipeline_without_a_reader_is_endless_and_says_so(target: str) -> None:
    need_target(target)
    with pytest.warns(UserWarning, match=ENDLESS) as caught:
        it = make(target, no_reader_def, output_map=["u", "coin"])
    message = dali_warnings(caught.list)[0]
    assert "no reader" in message and "size=" in message
    assert caught.list[0].filename == __file__  # it points at the to() call
    with pytest.raises(OptionError, match="no len") as info:
        len(it)
    assert isinstance(info.value, TypeError)  # as a generator's: list() and tqdm cope
    assert bool(it) is True
    batches = list(itertools.islice(it, 7))
    assert len(batches) == 7
    assert shape_of(first(batches[-1])["u"]) == (4, 3)
    # size= gives it epochs, as DALI defines them (the samples of one epoch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # DALI's own advice to prefer reader_name=
        sized = make(target, no_reader_def, output_map=["u", "coin"], size=8)
    assert len(sized) == 2 and len(list(itertools.islice(sized, 10))) == 2
    route = str(interop_core.explain(no_reader_def, target, output_map=["u", "coin"]))
    assert "no end of epoch" in route and "len() raises" in route


@pytest.mark.parametrize("target", TARGETS)
def test_several_readers_need_reader_name(data: SimpleNamespace, target: str) -> None:
    need_target(target)
    with pytest.warns(UserWarning, match=ENDLESS) as caught:
        it = make(target, two_readers_def, data.images, output_map=["a", "b"])
    message = dali_warnings(caught.list)[0]
    assert "['First', 'Second']" in message and "reader_name=" in message
    with pytest.raises(OptionError):
        len(it)
    assert len(list(itertools.islice(it, 6))) == 6
    chosen = make(target, two_readers_def, data.images, output_map=["a", "b"],
                  reader_name="Second")  # fmt: skip
    assert len(chosen) == 4 and len(list(itertools.islice(chosen, 10))) == 4
    with pytest.raises(OptionError, match=r"Its readers: \['First', 'Second'\]"):
        make(target, two_readers_def, data.images, output_map=["a", "b"], reader_name="Nope")


def test_a_reader_name_and_a_size_together_are_refused(data: SimpleNamespace) -> None:
    with pytest.raises(OptionError, match="pass one"):
        make("numpy", images_def, data.images, output_map=NAMES, reader_name="Reader", size=13)
    with pytest.raises(OptionError, match="pad_last_batch=True"):
        make("numpy", images_def, data.images, output_map=NAMES, last_batch_padded=False,
             pipeline_kwargs={"pad": True})  # fmt: skip


# --------------------------------------------------------------------------------------
# a list of pipelines


def shards(root: str, **kwargs: Any) -> list[Any]:
    """Two built pipelines, shard 0 and shard 1 of the image folder."""
    return [built(root, shard_id=i, num_shards=2, **kwargs) for i in range(2)]


def per_shard(root: str, **options: Any) -> list[list[dict[str, Any]]]:
    """Each shard's batches by a one-pipeline numpy iterator: what a list must give."""
    options = {"output_map": NAMES, "reader_name": "Reader", **options}
    return [
        [host(b) for b in interop_core.to(p, "numpy", **options)] for p in shards(root, pad=True)
    ]


@pytest.mark.parametrize("target", TARGETS)
def test_a_list_of_pipelines_batches_as_dalis_iterators_do(
    data: SimpleNamespace, target: str
) -> None:
    """DALI's iterators take one pipeline per GPU or shard: PyTorch's batch is a list with
    one dict per pipeline, JAX's a dict of arrays stacked on a new first axis; numpy's (and
    so TensorFlow's) a list of dicts of views."""
    need_target(target)
    kind = batch_type(target)
    want = per_shard(data.images)  # 13 files, padded shards of 7: 2 batches each
    it = interop_core.to(shards(data.images, pad=True), target, output_map=NAMES)
    assert len(it) == 2
    got = list(itertools.islice(it, 5))
    assert len(got) == 2
    for step, batch in enumerate(got):
        if target == "jax":
            assert isinstance(batch, dict) and set(batch) == set(NAMES)
            for name in NAMES:
                assert isinstance(batch[name], kind)
                stacked = np.asarray(batch[name])
                assert stacked.shape[0] == 2
                for i in range(2):
                    np.testing.assert_array_equal(stacked[i], want[i][step][name])
            continue
        assert isinstance(batch, list) and len(batch) == 2
        for i, one in enumerate(batch):
            assert set(one) == set(NAMES)
            for name in NAMES:
                assert isinstance(one[name], kind), (name, type(one[name]))
                np.testing.assert_array_equal(to_numpy(one[name]), want[i][step][name])
    if target == "numpy":  # views of each pipeline's own output buffers
        for one in got[0]:
            assert any(isinstance(o, TensorCPU) for o in owners(one["images"]))
    again = interop_core.to(tuple(shards(data.images, pad=True)), target, output_map=NAMES)
    assert len(again) == 2


def test_partial_batches_of_a_list_follow_dalis_pytorch_iterator(data: SimpleNamespace) -> None:
    """Uneven shards (6 and 7 files) cut each pipeline's last batch to what is left of its
    shard; with size= and no reader, DALI drops the pipelines past the end."""
    need("torch")

    def sizes(target: str, **options: Any) -> list[list[int]]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # DALI's advice to prefer reader_name=
            it = interop_core.to(shards(data.images), target, output_map=NAMES,
                                 last_batch_policy="partial", **options)  # fmt: skip
        return [[int(one["images"].shape[0]) for one in b] for b in it]

    by_reader = sizes("numpy")
    assert by_reader == sizes("torch") == [[4, 4], [2, 3]]
    by_size = sizes("numpy", size=13)
    assert by_size == sizes("torch", size=13) == [[4, 4], [4, 1]]


def test_list_errors_say_what_to_pass(data: SimpleNamespace) -> None:
    with pytest.raises(OptionError, match="@pipeline_def function, not a built Pipeline"):
        interop_core.to([built(data.images), images_def], "numpy", output_map=NAMES)
    with pytest.raises(OptionError, match=r"batch sizes \[4, 5\]"):
        pipes = [built(data.images), built(data.images, batch_size=5)]
        interop_core.to(pipes, "numpy", output_map=NAMES)
    with pytest.raises(OptionError, match="batch_size"):  # a built pipeline: no build options
        interop_core.to(shards(data.images), "numpy", output_map=NAMES, batch_size=4)
    with pytest.raises(OptionError, match=r"reader_name= \(a reader in every pipeline"):
        pipes = [built_no_reader(), built_no_reader()]
        interop_core.to(pipes, "numpy", output_map=["u", "coin"])
    with pytest.raises(OptionError, match="has 2"):
        interop_core.to(shards(data.images), "numpy", output_map=["images"])
    jax = need("jax")
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    sharding = NamedSharding(Mesh(np.array(jax.devices()[:1]), ("data",)), P("data"))
    with pytest.raises(OptionError, match="list of them"):
        interop_core.to(shards(data.images), "jax", output_map=NAMES, sharding=sharding)


def built_no_reader() -> Any:
    pipe = no_reader_def(batch_size=4, num_threads=1, device_id=None)
    pipe.build()
    return pipe


def test_explain_a_list_of_pipelines(data: SimpleNamespace) -> None:
    need("torch")
    route = interop_core.explain(shards(data.images), "torch", output_map=NAMES)
    assert [s.converter for s in route.steps] == ["DALI PyTorch iterator"]
    assert "one dict of tensors per pipeline" in str(route)
    # lists that are not all pipelines stay containers: their arrays convert one by one
    got = interop_core.to([np.ones(3, np.float32), (np.zeros(2),)], "numpy")
    assert isinstance(got, list) and isinstance(got[1], tuple)
    np.testing.assert_array_equal(got[0], np.ones(3))
    pipe = built(data.images)
    mixed = interop_core.to([np.ones(2), pipe], "numpy")
    assert mixed[1] is pipe and isinstance(mixed[0], np.ndarray)
