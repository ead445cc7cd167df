"""NVIDIA DALI's framework-iterator tests, re-expressed through ``to(pipe, target, ...)``.

Carries:

- NVIDIA/DALI dali/test/python/test_fw_iterators.py: the PyTorch and JAX iterator cases
  (epochs ended by external sources and by ``size=``, ``auto_reset``, ``prepare_first_batch``,
  variable batch sizes, the last batch policies with and without a padded reader, epochs by
  ``reader_name`` over sharded readers and lists of pipelines, ``len()``, the errors for a
  zero size, for several pipelines without one and for a shard smaller than the batch, the
  dtypes DALI hands to a framework) and the checks of its MXNet/Gluon/Paddle-only cases that
  apply to every iterator (empty samples of every dtype, two outputs of different shapes).
- NVIDIA/DALI dali/test/python/jax_plugin/test_iterator.py: the sequential JAX iterator and
  its refusal of partial batches.

Read at NVIDIA/DALI commits 2bba4cf8 (test_fw_iterators.py) and 2d07f81c (test_iterator.py),
the newest stored; the installed DALI is 2.4.0.

How they are re-expressed: ``DALIGenericIterator(pipes, output_map, **options)`` becomes
``to(pipes, target, output_map=[...], **options)`` for the targets numpy, torch, jax and
tensorflow. torch and jax get DALI's own iterators (wrapped), numpy the project's iterator
that follows DALI's PyTorch iterator, tensorflow numpy's batches converted one by one: DALI
has no numpy or TensorFlow iterator of its own, so those two targets run the PyTorch case's
checks. Upstream's COCO reader over DALI_extra becomes ``fn.readers.file`` over a generated
file list whose labels are the sample indices (so each batch says which samples it holds),
and upstream's external sources become sources whose every sample says which batch it
belongs to. Every pipeline is a CPU one (``device_id=None``). The expected samples of each
epoch are computed here from DALI's documented sharding (shard ``s`` of ``n`` samples over
``k`` shards is ``[s*n//k, (s+1)*n//k)``; without ``stick_to_shard`` a reader moves to the
next shard each epoch), not copied from upstream's counters. torch, jax and tensorflow cases
call ``need()`` inside the test, so the ``dali`` nox session (numpy and DALI only) runs the
numpy ones and skips the rest.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import need

from interop_core import ConversionError, InteropError, OptionError, to

np = need("numpy")
need("dali")

from nvidia.dali import fn, pipeline_def  # noqa: E402
from nvidia.dali.plugin.base_iterator import LastBatchPolicy  # noqa: E402

TARGETS = ("numpy", "torch", "jax", "tensorflow")
#: Samples in the reader cases: 13 over 3 shards gives shards of 4, 4 and 5.
N = 13
SHARDS = 3
ENDLESS = "never ends an epoch"
#: DALI's own advice when size= is given without reader_name= (a plain Warning).
DALI_SIZE_ADVICE = "Please set `reader_name`"


# --------------------------------------------------------------------------------------
# helpers


def array_type(target: str) -> type:
    """The array type of ``target``'s batches; skips the test when the target is missing."""
    if target == "numpy":
        return np.ndarray
    fw = need(target)
    kind: type = fw.Array if target == "jax" else fw.Tensor
    return kind


def jax_x64() -> bool:
    """Whether JAX holds 64-bit dtypes now."""
    return bool(need("jax").config.jax_enable_x64)


def per_pipe(batch: Any, target: str, pipes: int = 1) -> list[dict[str, Any]]:
    """``batch`` as one dict of numpy copies per pipeline, each array checked to be of
    ``target``'s framework. torch (and a list of pipelines for numpy and tensorflow) gives
    a list with one dict per pipeline; jax stacks several pipelines on a new first axis."""
    kind = array_type(target)
    if isinstance(batch, dict):
        assert target != "torch", "DALI's PyTorch iterator gives a list of dicts"
        if target == "jax" and pipes > 1:
            batch = [{k: v[p] for k, v in batch.items()} for p in range(pipes)]
            for name, x in batch[0].items():
                assert isinstance(x, kind), (name, type(x))
        else:
            batch = [batch]
    assert isinstance(batch, list) and len(batch) == pipes, batch
    out = []
    for part in batch:
        for name, x in part.items():
            assert isinstance(x, kind), (name, type(x))
        out.append({name: host(x) for name, x in part.items()})
    return out


def host(x: Any) -> Any:
    """A numpy copy of ``x``: through ``.numpy()`` for torch and TensorFlow (torch's
    ``__array__`` takes no ``copy=``, which numpy 2 warns about)."""
    return np.array(x.numpy() if hasattr(x, "numpy") else x)


def one(batch: Any, target: str) -> dict[str, Any]:
    """The only pipeline's dict of ``batch``, as numpy copies."""
    return per_pipe(batch, target)[0]


@contextlib.contextmanager
def quiet_size_advice() -> Iterator[None]:
    """Hides DALI's own advice to prefer reader_name= over size= (a plain Warning)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=DALI_SIZE_ADVICE)
        yield


def endless_to(pipe: Any, target: str, **options: Any) -> Any:
    """``to()`` of a pipeline without a reader and without size=: the project warns that
    its iterator never ends an epoch (DALI's iterators say nothing)."""
    with pytest.warns(UserWarning, match=ENDLESS):
        return to(pipe, target, **options)


class Numbered:
    """An iterable input of ``fn.external_source``: ``per_epoch`` batches per pass (then
    StopIteration, and the next ``iter()`` starts a new pass), at most ``total`` batches in
    all (-1: no limit). Every sample of the k-th batch it gives (from 1) is filled with k."""

    def __init__(self, per_epoch: int, batch_size: int, total: int = -1) -> None:
        self.per_epoch, self.batch_size, self.total = per_epoch, batch_size, total
        self.given = 0
        self.index = 0

    def __iter__(self) -> Numbered:
        self.index = 0
        return self

    def __next__(self) -> list[Any]:
        if self.index >= self.per_epoch or self.total == 0:
            self.index = 0
            raise StopIteration
        self.index += 1
        self.total -= 1
        self.given += 1
        return [np.full((3,), self.given, np.int32) for _ in range(self.batch_size)]


class Replay:
    """A callable input of ``fn.external_source`` that gives the batches of ``dataset`` in
    order, then raises StopIteration and starts again; ``calls`` counts its calls."""

    def __init__(self, dataset: list[Any]) -> None:
        self.dataset = dataset
        self.index = 0
        self.calls = 0

    def __call__(self) -> Any:
        self.calls += 1
        if self.index == len(self.dataset):
            self.index = 0
            raise StopIteration
        self.index += 1
        return self.dataset[self.index - 1]


@pipeline_def
def source_def(source: Any, num_outputs: int | None = None) -> Any:
    """One external_source (``num_outputs`` of them when given)."""
    out = fn.external_source(source=source, num_outputs=num_outputs)
    return tuple(out) if num_outputs else out


@pipeline_def
def ids_def(
    files: list[str],
    shard_id: int = 0,
    num_shards: int = 1,
    stick_to_shard: bool = False,
    pad: bool = False,
    shuffle: bool = False,
    name: str = "Reader",
) -> Any:
    """The labels of a file reader whose labels are the samples' indices: an int32 (1,)
    per sample, the index of the file it read."""
    _, labels = fn.readers.file(
        files=files, labels=list(range(len(files))), shard_id=shard_id, num_shards=num_shards,
        stick_to_shard=stick_to_shard, pad_last_batch=pad, random_shuffle=shuffle, seed=12,
        name=name,
    )  # fmt: skip
    return labels


@pipeline_def
def uniform_def() -> Any:
    """Random numbers in [-1, 1), seeded: the same sequence from every such pipeline."""
    return fn.random.uniform(range=(-1, 1), shape=(2, 2, 2), seed=1234)


@pipeline_def
def ragged_def() -> Any:
    """Samples of different shapes: sample i of a batch has i + 1 elements."""

    def sample(info: Any) -> Any:
        return np.arange(info.idx_in_batch + 1, dtype=np.int32)

    return fn.external_source(source=sample, batch=False)


def cpu(pipe_def: Callable[..., Any], batch_size: int, **kwargs: Any) -> Any:
    """An unbuilt CPU pipeline (device_id=None, one thread) of ``pipe_def``."""
    return pipe_def(batch_size=batch_size, num_threads=1, device_id=None, **kwargs)


@pytest.fixture(scope="module")
def sample_file(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One small file; the reader cases read it once per sample (as upstream reads its own
    source file)."""
    path: Path = tmp_path_factory.mktemp("dali_iterators") / "sample.bin"
    path.write_bytes(b"\x01\x02\x03")
    return str(path)


def ids(batch: Any, target: str, pipes: int = 1) -> list[list[int]]:
    """The sample indices of each pipeline's part of ``batch`` (output "ids")."""
    parts = per_pipe(batch, target, pipes)
    for part in parts:
        assert part["ids"].dtype == np.int32 and part["ids"].shape[1:] == (1,)
    return [part["ids"].reshape(-1).tolist() for part in parts]


def shard(index: int, shards: int, n: int = N) -> list[int]:
    """The samples of shard ``index`` of ``n`` over ``shards`` (DALI's split)."""
    return list(range(index * n // shards, (index + 1) * n // shards))


# --------------------------------------------------------------------------------------
# epochs ended by the source, or by size=


#: (epochs, batches per epoch, total batches the source gives (-1: no limit), batch size):
#: picked from upstream's stop_iteration_case_generator.
STOP_CASES = [(1, 1, -1, 1), (3, 2, -1, 10), (3, 2, 3, 1), (6, 9, 8, 100)]


@pytest.mark.parametrize("infinite", [False, True], ids=["sized", "infinite"])
@pytest.mark.parametrize("auto_reset", [True, False], ids=["auto_reset", "reset"])
@pytest.mark.parametrize(("epochs", "per_epoch", "total", "batch_size"), STOP_CASES)
@pytest.mark.parametrize("target", TARGETS)
def test_stop_iteration(
    target: str,
    epochs: int,
    per_epoch: int,
    total: int,
    batch_size: int,
    auto_reset: bool,
    infinite: bool,
) -> None:
    """An external source that raises StopIteration ends each epoch (size=-1), or size=
    does; a source that runs dry for good stops the iterator for good.

    upstream: NVIDIA/DALI/dali/test/python/test_fw_iterators.py::test_stop_iteration_pytorch
    upstream: NVIDIA/DALI/dali/test/python/test_fw_iterators.py::test_stop_iteration_jax

    DIFFERS: without size= (upstream's "infinite") to() warns that the iterator never ends
    an epoch and len() raises a TypeError (OptionError) where DALI's len() says 0.
    """
    array_type(target)
    source = Numbered(per_epoch, batch_size, total)
    pipe = cpu(source_def, batch_size, source=source)
    options: dict[str, Any] = {"output_map": ["data"], "auto_reset": auto_reset}
    if infinite:
        it = endless_to(pipe, target, **options)
        with pytest.raises(OptionError, match="no len") as info:
            len(it)
        assert isinstance(info.value, TypeError)  # as a generator's len()
    else:
        with quiet_size_advice():
            it = to(pipe, target, size=per_epoch * batch_size, **options)
        assert len(it) == per_epoch
    got = []
    for _ in range(epochs):
        for batch in it:
            data = one(batch, target)["data"]
            assert data.shape == (batch_size, 3) and data.dtype == np.int32
            got.append(int(data[0, 0]))
            assert (data == got[-1]).all()
        if not auto_reset:
            it.reset()
    want = per_epoch * epochs if total < 0 else min(total, per_epoch * epochs)
    assert got == list(range(1, want + 1))


@pytest.mark.parametrize("target", TARGETS)
def test_stop_iteration_fail_multi(target: str) -> None:
    """Several pipelines need an epoch size: with none, the iterator is refused.

    upstream: NVIDIA/DALI/dali/test/python/test_fw_iterators.py::test_stop_iteration_pytorch_fail_multi
    upstream: NVIDIA/DALI/dali/test/python/test_fw_iterators.py::test_stop_iteration_jax_fail_multi

    DIFFERS: an OptionError (a TypeError) from to() that says to pass reader_name= or size=,
    where DALI raises AssertionError("Negative size is supported only for a single
    pipeline").
    """  # noqa: E501
    array_type(target)
    pipes = [cpu(source_def, 1, source=Numbered(1, 1)) for _ in range(2)]
    with pytest.raises(OptionError, match="DALI iterates several pipelines only with one"):
        to(pipes, target, output_map=["data"], size=-1)
    with pytest.raises(OptionError, match=r"reader_name= \(a reader in every pipeline"):
        to(pipes, target, output_map=["data"])


@pytest.mark.parametrize("target", TARGETS)
def test_stop_iteration_fail_single(target: str) -> None:
    """size=0 is refused (DALI asserts "Size cannot be 0"), before DALI sees it.

    upstream: NVIDIA/DALI/dali/test/python/test_fw_iterators.py::test_stop_iteration_pytorch_fail_single
    upstream: NVIDIA/DALI/dali/test/python/test_fw_iterators.py::test_stop_iteration_jax_fail_single
    """  # noqa: E501
    array_type(target)
    pipe = cpu(source_def, 1, source=Numbered(1, 1))
    with pytest.raises(OptionError, match=r"size=0 is not valid: size= takes .* an int >= 1"):
        to(pipe, target, output_map=["data"], size=0)


@pytest.mark.parametrize("cast", [None, "float16"], ids=["as_is", "dtype_float16"])
@pytest.mark.parametrize("target", TARGETS)
def test_wrapper_first_iteration(target: str, cast: str | None) -> None:
    """The first batch, prepared when the iterator is made, is handed out once and first,
    and goes through the same wrapper as the later ones: the project's iterators subclass
    DALI's (to check batches and apply dtype=), and upstream checks that DALI's __init__
    does not run such a subclass's __next__. The batches are DALI's own pipeline's, in
    order (cast by dtype= when given).

    upstream: NVIDIA/DALI/dali/test/python/test_fw_iterators.py::test_pytorch_iterator_wrapper_first_iteration
    upstream: NVIDIA/DALI/dali/test/python/test_fw_iterators.py::test_jax_iterator_wrapper_first_iteration
    """  # noqa: E501
    array_type(target)
    reference = cpu(uniform_def, 16)
    reference.build()
    want = [np.array(reference.run()[0].as_array()) for _ in range(3)]
    options = {} if cast is None else {"dtype": cast}
    with quiet_size_advice():
        it = to(cpu(uniform_def, 16), target, output_map=["data"], size=100, **options)
    assert len(it) == 7  # ceil(100 / 16)
    got = []
    for i, batch in enumerate(it):
        got.append(one(batch, target)["data"])
        if i == 2:
            break
    assert len(got) == 3
    for g, w in zip(got, want, strict=True):
        assert g.shape == (16, 2, 2, 2) and g.dtype == np.dtype(cast or "float32")
        assert ((w >= -1) & (w < 1)).all()
        np.testing.assert_array_equal(g, w.astype(g.dtype))
    assert not np.array_equal(got[0], got[1])


# --------------------------------------------------------------------------------------
# external sources: auto_reset, prepare_first_batch, variable batch sizes


def uint8_dataset(batches: list[int], shape: tuple[int, ...], seed: int) -> list[list[Any]]:
    """Batches of random uint8 samples: ``batches[i]`` samples in batch i."""
    rng = np.random.default_rng(seed)
    return [[rng.integers(0, 256, shape, dtype=np.uint8) for _ in range(n)] for n in batches]


@pytest.mark.parametrize("prepare", [True, False], ids=["prepared", "not_prepared"])
@pytest.mark.parametrize("target", TARGETS)
def test_external_source_autoreset(target: str, prepare: bool) -> None:
    """auto_reset=True: three passes over an external source of four batches give its
    batches each time, in order; with prepare_first_batch=False the source is not run
    until the first batch is asked for.

    upstream: NVIDIA/DALI/dali/test/python/test_fw_iterators.py::test_pytorch_external_source_autoreset
    upstream: NVIDIA/DALI/dali/test/python/test_fw_iterators.py::test_pytorch_external_source_do_not_prepare
    upstream: NVIDIA/DALI/dali/test/python/test_fw_iterators.py::test_jax_external_source_autoreset
    upstream: NVIDIA/DALI/dali/test/python/test_fw_iterators.py::test_jax_external_source_do_not_prepare
    upstream: NVIDIA/DALI/dali/test/python/test_fw_iterators.py::test_pytorch_prepare_first_batch
    upstream: NVIDIA/DALI/dali/test/python/test_fw_iterators.py::test_jax_prepare_first_batch
    """  # noqa: E501
    array_type(target)
    dataset = [[batch] for batch in uint8_dataset([4] * 4, (2, 3, 4), seed=1)]
    source = Replay(dataset)
    pipe = cpu(source_def, 4, source=source, num_outputs=1)
    it = endless_to(pipe, target, output_map=["data"], auto_reset=True,
                    prepare_first_batch=prepare)  # fmt: skip
    if prepare:
        assert source.calls >= 1  # the first batch is buffered by to()
    else:
        assert source.calls == 0  # external_source not run yet
    count = 0
    for _ in range(3):
        for j, batch in enumerate(it):
            data = one(batch, target)["data"]
            assert data.dtype == np.uint8 and data.shape == (4, 2, 3, 4)
            np.testing.assert_array_equal(data, np.stack(dataset[j][0]))
            count += 1
    assert count == 4 * 3


@pytest.mark.parametrize("prepare", [True, False], ids=["prepared", "not_prepared"])
@pytest.mark.parametrize("target", TARGETS)
def test_iterator_properties(target: str, prepare: bool) -> None:
    """Two outputs of different shapes map to their output_map names, batch after batch,
    over three auto-reset passes.

    upstream: NVIDIA/DALI/dali/test/python/test_fw_iterators.py::test_mxnet_iterator_properties
    """
    array_type(target)
    data = uint8_dataset([4] * 4, (2, 3, 4), seed=2)
    label = uint8_dataset([4] * 4, (2, 7, 5), seed=3)
    dataset = [[d, lab] for d, lab in zip(data, label, strict=True)]
    pipe = cpu(source_def, 4, source=Replay(dataset), num_outputs=2)
    it = endless_to(pipe, target, output_map=["data", "label"], auto_reset=True,
                    prepare_first_batch=prepare)  # fmt: skip
    count = 0
    for _ in range(3):
        for j, batch in enumerate(it):
            got = one(batch, target)
            assert list(got) == ["data", "label"]
            assert got["data"].shape == (4, 2, 3, 4) and got["label"].shape == (4, 2, 7, 5)
            np.testing.assert_array_equal(got["data"], np.stack(data[j]))
            np.testing.assert_array_equal(got["label"], np.stack(label[j]))
            count += 1
    assert count == 4 * 3


@pytest.mark.parametrize("exec_dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("target", TARGETS)
def test_external_source_variable_size_pass(target: str, exec_dynamic: bool) -> None:
    """Without an epoch size, batches may be shorter than the pipeline's batch size: each
    keeps the samples the source gave, over three auto-reset passes.

    upstream: NVIDIA/DALI/dali/test/python/test_fw_iterators.py::test_pytorch_external_source_variable_size_pass
    """  # noqa: E501
    array_type(target)
    sizes = [3, 1, 4, 2]
    dataset = [[batch] for batch in uint8_dataset(sizes, (2, 3, 4), seed=4)]
    pipe = cpu(source_def, 4, source=Replay(dataset), num_outputs=1, exec_dynamic=exec_dynamic)
    it = endless_to(pipe, target, output_map=["data"], auto_reset=True)
    passes = []
    for _ in range(3):
        shapes = []
        for j, batch in enumerate(it):
            data = one(batch, target)["data"]
            np.testing.assert_array_equal(data, np.stack(dataset[j][0]))
            shapes.append(data.shape[0])
        passes.append(shapes)
    assert passes == [sizes] * 3


@pytest.mark.parametrize("target", TARGETS)
def test_external_source_variable_size_fail(target: str) -> None:
    """size=5 over a source of four one-sample batches: the first pass gives the four and
    waits for a fifth that never comes, so the later passes give nothing (upstream's check
    of three full passes fails).

    upstream: NVIDIA/DALI/dali/test/python/test_fw_iterators.py::test_pytorch_external_source_variable_size_fail
    """  # noqa: E501
    array_type(target)
    dataset = [[batch] for batch in uint8_dataset([1] * 4, (2, 3, 4), seed=5)]
    pipe = cpu(source_def, 1, source=Replay(dataset), num_outputs=1)
    with quiet_size_advice():
        it = to(pipe, target, output_map=["data"], auto_reset=True, size=5)
    assert len(it) == 5
    passes = []
    for _ in range(3):
        got = [one(batch, target)["data"] for batch in it]
        passes.append(len(got))
        for j, data in enumerate(got):
            np.testing.assert_array_equal(data, np.stack(dataset[j][0]))
    assert passes == [4, 0, 0]


VARIABLE_SIZE_CASES = [
    pytest.param(target, where, id=f"{target}-{where}")
    for target in TARGETS
    for where in ("to", "next", "later")
]


@pytest.mark.parametrize(("target", "where"), VARIABLE_SIZE_CASES)
def test_external_source_variable_size_with_size(target: str, where: str) -> None:
    """With size= set, a batch shorter than the batch size is refused with DALI's
    "Variable batch size is not supported" (an AssertionError in DALI), whether it is the
    first batch, prepared by to() ("to"), the first one pulled ("next",
    prepare_first_batch=False) or a later one ("later"): as the same error each time, an
    InteropError (the project wraps DALI's errors; to() makes this one a ConversionError).

    upstream: NVIDIA/DALI/dali/test/python/test_fw_iterators.py::test_pytorch_external_source_variable_size_fail
    upstream: NVIDIA/DALI/dali/test/python/test_fw_iterators.py::test_mxnet_external_source_variable_size_fail
    """  # noqa: E501
    array_type(target)
    sizes = [4, 3, 4] if where == "later" else [3, 4, 4]
    dataset = [[batch] for batch in uint8_dataset(sizes, (2,), seed=6)]
    pipe = cpu(source_def, 4, source=Replay(dataset), num_outputs=1)
    refused = pytest.raises(ConversionError, match="Variable batch size is not supported")
    with quiet_size_advice(), refused:
        it = to(pipe, target, output_map=["data"], size=12, prepare_first_batch=where != "next")
        first = one(next(it), target)["data"]
        np.testing.assert_array_equal(first, np.stack(dataset[0][0]))  # "later": a full one
        next(it)


# --------------------------------------------------------------------------------------
# last batch policies with size=


def epoch_ids(it: Any, target: str) -> list[int]:
    """The sample indices of one pass over ``it`` (one pipeline, given as a list)."""
    return [i for batch in it for i in ids(batch, target)[0]]


@pytest.mark.parametrize("target", TARGETS)
def test_iterator_last_batch_no_pad_last_batch(target: str, sample_file: str) -> None:
    """FILL with a reader that does not pad: the last batch is completed from the next
    epoch (shuffled), so it holds different samples.

    upstream: NVIDIA/DALI/dali/test/python/test_fw_iterators.py::test_pytorch_iterator_last_batch_no_pad_last_batch
    upstream: NVIDIA/DALI/dali/test/python/test_fw_iterators.py::test_jax_iterator_last_batch_no_pad_last_batch
    """  # noqa: E501
    array_type(target)
    batch_size = 4  # 13 samples: 4 batches, 3 samples from the next epoch
    pipe = cpu(ids_def, batch_size, files=[sample_file] * N, shuffle=True)
    with quiet_size_advice():
        it = to([pipe], target, output_map=["ids"], size=N, last_batch_policy="fill")
    assert len(it) == 4
    got = epoch_ids(it, target)
    assert len(got) == 16 > N
    assert set(got) == set(range(N))
    remainder = math.ceil(N / batch_size) * batch_size - N
    assert len(set(got[-remainder - 1 :])) != 1


@pytest.mark.parametrize(
    ("batch_size", "declared"), [(20, False), (4, True)], ids=["batch20", "batch4-declared"]
)
@pytest.mark.parametrize("exec_dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("target", TARGETS)
def test_iterator_last_batch_pad_last_batch(
    target: str, exec_dynamic: bool, batch_size: int, declared: bool, sample_file: str
) -> None:
    """FILL with a padding reader: the last batch repeats the epoch's last sample, and after
    reset() the next epoch is whole again. Upstream's batch (100) is larger than its data
    set, as batch 20 is here; with a smaller batch the iterator must be told that the reader
    pads (last_batch_padded=True), else DALI carries the padding over into the next epoch,
    which then ends a batch early (the README's trap).

    upstream: NVIDIA/DALI/dali/test/python/test_fw_iterators.py::test_pytorch_iterator_last_batch_pad_last_batch
    upstream: NVIDIA/DALI/dali/test/python/test_fw_iterators.py::test_jax_iterator_last_batch_pad_last_batch
    """  # noqa: E501
    array_type(target)
    pipe = cpu(ids_def, batch_size, files=[sample_file] * N, shuffle=True, pad=True,
               exec_dynamic=exec_dynamic)  # fmt: skip
    padded = {"last_batch_padded": True} if declared else {}
    with quiet_size_advice():
        it = to([pipe], target, output_map=["ids"], size=N, last_batch_policy=LastBatchPolicy.FILL,
                **padded)  # fmt: skip
    rounded = math.ceil(N / batch_size) * batch_size
    remainder = rounded - N
    epochs = []
    for _ in range(3):
        got = epoch_ids(it, target)
        assert len(got) == rounded > N
        assert set(got) == set(range(N))
        assert len(set(got[-remainder - 1 :])) == 1  # the last sample, repeated
        epochs.append(got)
        it.reset()
    assert epochs[0] != epochs[1]  # reshuffled each epoch


@pytest.mark.parametrize("target", ["numpy", "torch", "tensorflow"])
def test_iterator_not_fill_last_batch_pad_last_batch(target: str, sample_file: str) -> None:
    """PARTIAL with a padding reader (last_batch_padded=True): the last batch is cut to the
    epoch's samples, each once, in the reader's order; the same after reset().

    upstream: NVIDIA/DALI/dali/test/python/test_fw_iterators.py::test_pytorch_iterator_not_fill_last_batch_pad_last_batch
    upstream: NVIDIA/DALI/dali/test/python/test_fw_iterators.py::test_paddle_iterator_not_fill_last_batch_pad_last_batch
    """  # noqa: E501
    array_type(target)
    pipe = cpu(ids_def, 4, files=[sample_file] * N, pad=True)
    with quiet_size_advice():
        it = to([pipe], target, output_map=["ids"], size=N, last_batch_policy="partial",
                last_batch_padded=True)  # fmt: skip
    for _ in range(2):
        sizes = []
        got = []
        for batch in it:
            got += ids(batch, target)[0]
            sizes.append(len(got))
        assert got == list(range(N))  # nothing repeated: the tail is real data
        assert sizes == [4, 8, 12, 13]
        it.reset()


@pytest.mark.parametrize("policy", ["partial", LastBatchPolicy.PARTIAL], ids=["name", "enum"])
def test_jax_unsupported_last_batch_policy(policy: Any, sample_file: str) -> None:
    """JAX takes no partial batches.

    upstream: NVIDIA/DALI/dali/test/python/test_fw_iterators.py::test_jax_unsupported_last_batch_policy_type
    upstream: NVIDIA/DALI/dali/test/python/jax_plugin/test_iterator.py::test_iterator_last_batch_policy_partial_exception

    DIFFERS: an OptionError from to() that says what to pass instead ('drop', a padded
    'fill', or the numpy target), where DALI raises AssertionError("JAX iterator does not
    support partial last batch policy.").
    """  # noqa: E501
    array_type("jax")
    pipe = cpu(ids_def, 3, files=[sample_file] * N, name="reader")
    with pytest.raises(OptionError, match="partial last batches") as info:
        to([pipe], "jax", output_map=["data"], reader_name="reader", last_batch_policy=policy)
    assert "'drop'" in str(info.value) and "pad_last_batch=True" in str(info.value)


@pytest.mark.parametrize("name", ["FILL", "Drop", "partial"])
@pytest.mark.parametrize("target", TARGETS)
def test_last_batch_policy_by_name(target: str, name: str, sample_file: str) -> None:
    """The policy's name (any case) selects it as the enum does.

    upstream: NVIDIA/DALI/dali/test/python/test_fw_iterators.py::test_pytorch_wrong_last_batch_policy_type
    upstream: NVIDIA/DALI/dali/test/python/test_fw_iterators.py::test_jax_wrong_last_batch_policy_type

    DIFFERS: DALI refuses a string with ValueError("Wrong type for `last_batch_policy`");
    to() takes the policy's name, and refuses an unknown one with an OptionError (a
    TypeError) listing the names. JAX refuses "partial" (see the test above).
    """  # noqa: E501
    array_type(target)
    pipe = cpu(ids_def, 4, files=[sample_file] * N, name="reader")
    options: dict[str, Any] = {"output_map": ["ids"], "reader_name": "reader"}
    if target == "jax" and name == "partial":
        with pytest.raises(OptionError, match="partial"):
            to(pipe, target, last_batch_policy=name, **options)
        return
    it = to(pipe, target, last_batch_policy=name, **options)
    got = [ids(batch, target)[0] for batch in it]
    want = {
        "FILL": [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 0, 1, 2]],
        "Drop": [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]],
        "partial": [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12]],
    }[name]
    assert len(it) == len(want) and got == want
    with pytest.raises(OptionError, match="takes 'fill', 'drop' or 'partial'") as info:
        to(cpu(ids_def, 4, files=[sample_file] * N, name="reader"), target,
           last_batch_policy="fill_last", **options)  # fmt: skip
    assert isinstance(info.value, TypeError)


# --------------------------------------------------------------------------------------
# epochs by reader_name


AUTORESET_CASES = [
    pytest.param(target, auto, policy, id=f"{target}-{auto}-{policy.name}")
    for target in TARGETS
    for auto in ("yes", "no")
    for policy in LastBatchPolicy
    if not (target == "jax" and policy == LastBatchPolicy.PARTIAL)
]


@pytest.mark.parametrize(("target", "auto_reset", "policy"), AUTORESET_CASES)
def test_autoreset_iter(target: str, auto_reset: str, policy: Any, sample_file: str) -> None:
    """Two passes of len() batches each over a padded reader of 11 samples (batch 2),
    stopping without StopIteration: iter() starts the next epoch, from the first sample,
    whether auto_reset is "yes" or "no". FILL repeats the last sample, PARTIAL cuts the
    last batch to it, DROP drops it.

    upstream: NVIDIA/DALI/dali/test/python/test_fw_iterators.py::test_pytorch_autoreset_iter
    upstream: NVIDIA/DALI/dali/test/python/test_fw_iterators.py::test_jax_autoreset_iter
    """
    array_type(target)
    n, batch_size = 11, 2
    pipe = cpu(ids_def, batch_size, files=[sample_file] * n, stick_to_shard=True, pad=True,
               name="reader")  # fmt: skip
    loader = to(pipe, target, output_map=["ids"], reader_name="reader", auto_reset=auto_reset,
                last_batch_policy=policy)  # fmt: skip
    length = {LastBatchPolicy.DROP: 5}.get(policy, 6)
    for _ in range(2):
        loader_iter = iter(loader)
        assert len(loader_iter) == length
        got = [ids(next(loader_iter), target)[0] for _ in range(len(loader_iter))]
        want = [[min(i * batch_size + j, n - 1) for j in range(batch_size)] for i in range(length)]
        if policy == LastBatchPolicy.PARTIAL:
            want[-1] = [n - 1]
        assert got == want


def check_epoch(
    got: list[list[int]],
    shard_ids: list[int],
    policy: LastBatchPolicy,
    pad: bool,
    stick: bool,
    batch_size: int,
    length: int,
    first: bool,
) -> None:
    """One epoch's sample indices of each pipeline (reading shard ``shard_ids[p]`` now),
    against DALI's sharding rules: what a policy and a padded reader promise."""
    for samples, index in zip(got, shard_ids, strict=True):
        own = shard(index, SHARDS)
        if policy == LastBatchPolicy.PARTIAL:
            assert len(samples) == len(own) == len(set(samples)), (samples, own)
            if pad:
                assert samples == own
        elif policy == LastBatchPolicy.DROP:
            assert len(samples) == length * batch_size <= len(own)
            assert len(set(samples)) == len(samples)
            if pad:
                assert samples == own[: len(samples)]
        else:  # FILL
            assert len(samples) == length * batch_size
            if pad:  # the shard, then its last sample repeated
                assert samples == own + [own[-1]] * (len(samples) - len(own))
            elif first:  # the whole shard first, then what follows it
                assert samples[: len(own)] == own
            if not pad and stick:  # only the shard's samples, each once where they fit
                assert set(samples) <= set(own)
                assert len(set(samples)) == min(len(own), len(samples))
            if not pad and not stick:
                assert len(set(samples)) == len(samples)
    if pad and len(got) == SHARDS:  # shards do not overlap
        seen = [set(s) for s in got]
        assert all(not (a & b) for i, a in enumerate(seen) for b in seen[i + 1 :])


READER_CASES = [
    pytest.param(target, policy, pad, stick, pipes, id=f"{target}-{policy.name}-"
                 f"{'pad' if pad else 'nopad'}-{'stick' if stick else 'move'}-{pipes}pipes")
    for target in TARGETS
    for policy in LastBatchPolicy
    for pad in (True, False)
    for stick in (False, True)
    for pipes in (1, SHARDS)
    if not (target == "jax" and policy == LastBatchPolicy.PARTIAL)
]  # fmt: skip


@pytest.mark.parametrize(("target", "policy", "pad", "stick", "pipes"), READER_CASES)
def test_iterator_pass_reader_name(
    target: str, policy: LastBatchPolicy, pad: bool, stick: bool, pipes: int, sample_file: str
) -> None:
    """reader_name= over 13 samples in 3 shards (batch 3), one pipeline (shard 0) or one
    per shard, for six epochs: each epoch has the len() it announced, and each pipeline's
    samples are what its shard of that epoch gives under the policy; without
    stick_to_shard the readers move to the next shard each epoch.

    upstream: NVIDIA/DALI/dali/test/python/test_fw_iterators.py::test_pytorch_iterator_pass_reader_name
    upstream: NVIDIA/DALI/dali/test/python/test_fw_iterators.py::test_paddle_iterator_pass_reader_name
    """  # noqa: E501
    array_type(target)
    batch_size = 3
    built = [
        cpu(ids_def, batch_size, files=[sample_file] * N, shard_id=p, num_shards=SHARDS,
            stick_to_shard=stick, pad=pad)
        for p in range(pipes)
    ]  # fmt: skip
    it = to(built, target, output_map=["ids"], reader_name="Reader", last_batch_policy=policy)
    for epoch in range(2 * SHARDS):
        length = len(it)
        got: list[list[int]] = [[] for _ in range(pipes)]
        batches = 0
        for batch in it:
            for p, part in enumerate(ids(batch, target, pipes)):
                got[p] += part
            batches += 1
        assert batches == length, f"len() said {length}, the epoch had {batches} batches"
        current = [p if stick else (p + epoch) % SHARDS for p in range(pipes)]
        check_epoch(got, current, policy, pad, stick, batch_size, length, epoch == 0)
        it.reset()


@pytest.mark.parametrize("mode", ["auto_reset", "reset", "iter"])
@pytest.mark.parametrize("target", TARGETS)
def test_iterator_pass_reader_name_autoreset(target: str, mode: str, sample_file: str) -> None:
    """DROP over a padded reader of shard 0 of 3 that moves to the next shard each epoch:
    each epoch is the next shard's first batch (one move per epoch, never two), whether
    auto_reset=True starts it, reset() does, or (DALI's third way) the next iter() of a
    consumed iterator does.

    upstream: NVIDIA/DALI/dali/test/python/test_fw_iterators.py::test_pytorch_iterator_pass_reader_name_autoreset
    """  # noqa: E501
    array_type(target)
    pipe = cpu(ids_def, 3, files=[sample_file] * N, num_shards=SHARDS, pad=True)
    it = to([pipe], target, output_map=["ids"], reader_name="Reader",
            auto_reset=mode == "auto_reset", last_batch_policy="drop")  # fmt: skip
    passes = []
    for _ in range(3):
        passes.append(epoch_ids(it, target))
        if mode == "reset":
            it.reset()
    assert passes == [[0, 1, 2], [4, 5, 6], [8, 9, 10]]


@pytest.mark.parametrize("target", TARGETS)
def test_iterator_pass_reader_name_drop_bigger_batch(target: str, sample_file: str) -> None:
    """DROP with a batch larger than the shard (13 samples over 3 shards, batch 5) leaves
    no batch at all: the iterator is refused with DALI's message.

    upstream: NVIDIA/DALI/dali/test/python/test_fw_iterators.py::test_pytorch_iterator_pass_reader_name
    """  # noqa: E501
    array_type(target)
    built = [
        cpu(ids_def, 5, files=[sample_file] * N, shard_id=p, num_shards=SHARDS)
        for p in range(SHARDS)
    ]
    with pytest.raises(RuntimeError, match="no data in the pipeline") as info:
        to(built, target, output_map=["ids"], reader_name="Reader", last_batch_policy="drop")
    assert isinstance(info.value, InteropError)


@pytest.mark.parametrize("exec_dynamic", [False, True], ids=["static", "dynamic"])
def test_dali_sequential_iterator(exec_dynamic: bool, sample_file: str) -> None:
    """The JAX iterator over a reader named "reader": sample i of batch b is b * 3 + i, as
    jax.Arrays on JAX's first device; a batch held across later ones keeps its values.

    upstream: NVIDIA/DALI/dali/test/python/jax_plugin/test_iterator.py::test_dali_sequential_iterator
    """  # noqa: E501
    jax = need("jax")
    batch_size = 3
    pipe = cpu(ids_def, batch_size, files=[sample_file] * N, name="reader",
               exec_dynamic=exec_dynamic)  # fmt: skip
    it = to([pipe], "jax", output_map=["data"], reader_name="reader")
    held = []
    for batch_id, batch in enumerate(it):
        if batch_id == 4:
            break
        array = batch["data"]
        assert isinstance(array, jax.Array)
        assert array.devices() == {jax.devices()[0]}
        want = np.arange(batch_id * 3, batch_id * 3 + 3, dtype=np.int32).reshape(3, 1)
        np.testing.assert_array_equal(np.asarray(array), want)
        held.append((array, want))
    assert len(held) == 4
    pointers = [array.unsafe_buffer_pointer() for array, _ in held]
    assert len(set(pointers)) == 4  # no two batches share a buffer
    assert all(p % 64 == 0 for p in pointers)  # DALI's buffers, or the project's aligned copies
    for array, want in held:  # DALI's buffers were reused (static) or not: still the same
        np.testing.assert_array_equal(np.asarray(array), want)


# --------------------------------------------------------------------------------------
# dtypes and shapes


#: The dtypes upstream feeds to PyTorch tensors (check_pytorch_iterator_feed_ndarray_types).
DTYPES = ("float32", "float64", "float16", "uint8", "int8", "bool", "int16", "int32", "int64")


def random_values(dtype: str, shape: tuple[int, ...], rng: Any) -> Any:
    """Values over the dtype's whole range, as upstream draws them."""
    kind = np.dtype(dtype)
    if kind == np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    if np.issubdtype(kind, np.integer):
        info = np.iinfo(kind)
        return rng.integers(info.min, info.max, shape, dtype=kind, endpoint=True)
    return rng.standard_normal(shape).astype(kind)


@pytest.mark.parametrize("shape", [(3, 9), (1, 3, 0, 4)], ids=["3x9", "empty"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("target", TARGETS)
def test_iterator_dtypes(target: str, dtype: str, shape: tuple[int, ...]) -> None:
    """Each dtype reaches the framework as that dtype, with its values; samples with a
    zero-sized axis keep their shape.

    upstream: NVIDIA/DALI/dali/test/python/test_fw_iterators.py::test_pytorch_iterator_feed_ndarray_types
    upstream: NVIDIA/DALI/dali/test/python/test_fw_iterators.py::test_mxnet_iterator_empty_array

    DIFFERS: JAX without jax_enable_x64 refuses 64-bit outputs with an OptionError that says
    to pass dtype=, where DALI's JAX iterator hands them to JAX, which narrows them to 32
    bits.
    """  # noqa: E501
    array_type(target)
    rng = np.random.default_rng(sum(map(ord, dtype)) + len(shape))
    samples = [random_values(dtype, shape, rng) for _ in range(4)]
    pipe = cpu(source_def, 4, source=Replay([[samples]]), num_outputs=1)
    if target == "jax" and np.dtype(dtype).itemsize == 8 and not jax_x64():
        refused = pytest.raises(OptionError, match="jax_enable_x64")
        with refused, pytest.warns(UserWarning, match=ENDLESS):
            next(iter(to(pipe, target, output_map=["data"])))
        return
    it = endless_to(pipe, target, output_map=["data"])
    got = one(next(it), target)["data"]
    assert got.dtype == np.dtype(dtype) and got.shape == (4, *shape)
    np.testing.assert_array_equal(got, np.stack(samples))


@pytest.mark.parametrize("target", TARGETS)
def test_ragged_batch(target: str) -> None:
    """A batch whose samples differ in shape.

    upstream: NVIDIA/DALI/dali/test/python/test_fw_iterators.py::test_ragged_iterator_sparse_list_batch

    DIFFERS: DALI's DALIRaggedIterator gives a list of per-sample tensors (or a sparse
    tensor); to() gives dense batches only and raises a ConversionError that says how to
    give the samples one shape (fn.pad, fn.resize, fn.crop).
    """  # noqa: E501
    array_type(target)
    with pytest.raises(ConversionError, match=r"differ in shape.*fn\.pad"):
        with pytest.warns(UserWarning, match=ENDLESS):
            it = to(cpu(ragged_def, 3), target, output_map=["data"], prepare_first_batch=False)
        next(it)
