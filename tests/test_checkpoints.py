"""The checkpointers of real sources (plugins/kinds/checkpoints*.py), driven through the
Checkpointer protocol as the converted iterator drives them: a pass is begun, interrupted
after k batches, its position pickled; a source built the same way (for the DataLoader
also in a child process with another global seed) begins at that state and yields the
rest of the uninterrupted pass, bitwise. Where skipping is claimed (a map-style DataLoader),
the batches skipped are counted as never loaded. Sources that cannot checkpoint give a
reason that says what they are, why, and what to do instead.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import need
from interop_plugins.kinds.checkpoints import checkpointer

from interop_core import CheckpointError

TESTS = str(Path(__file__).resolve().parent)


def cut(source: Any, k: int) -> tuple[list[Any], dict[str, Any]]:
    """The first ``k`` batches of a new pass over ``source`` and its position after them,
    pickled and unpickled (as a checkpoint file would carry it)."""
    cp = checkpointer(source)
    assert not isinstance(cp, str), cp
    it = cp.begin(None)
    head = [next(it) for _ in range(k)]
    return head, pickle.loads(pickle.dumps(cp.position(k)))


def resumed(source: Any, state: dict[str, Any]) -> list[Any]:
    """The rest of a pass over ``source`` begun at ``state``."""
    cp = checkpointer(source)
    assert not isinstance(cp, str), cp
    return list(cp.begin(state))


def cuts(n: int) -> list[int]:
    """Where to interrupt a pass of ``n`` batches: before the first, after the first, in
    the middle, before the last and after the last."""
    return sorted({0, 1, n // 2, max(n - 1, 0), n})


# -- torch: a map-style DataLoader ---------------------------------------------------------


class Squares:
    """A map-style dataset of 23 samples (``i``: float64 [i, i*i]) that counts its loads."""

    def __init__(self, n: int = 23) -> None:
        self.n, self.loads = n, 0

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> Any:
        import torch

        self.loads += 1
        return torch.tensor([i, i * i], dtype=torch.float64)


def loader(kind: str) -> Any:
    """A DataLoader over :class:`Squares`, built the same way each time for ``kind``."""
    import torch
    from torch.utils.data import (
        BatchSampler,
        DataLoader,
        RandomSampler,
        SequentialSampler,
        SubsetRandomSampler,
        WeightedRandomSampler,
    )
    from torch.utils.data.distributed import DistributedSampler

    ds = Squares()
    builds: dict[str, Callable[[], Any]] = {
        "sequential": lambda: DataLoader(ds, batch_size=4),
        "shuffle": lambda: DataLoader(ds, batch_size=4, shuffle=True),
        "shuffle, generator": lambda: DataLoader(
            ds, batch_size=4, shuffle=True, generator=torch.Generator().manual_seed(5)
        ),
        "sampler generator": lambda: DataLoader(
            ds,
            batch_size=4,
            sampler=RandomSampler(ds, generator=torch.Generator().manual_seed(6)),
            generator=torch.Generator().manual_seed(7),
        ),
        "loader generator": lambda: DataLoader(
            ds, batch_size=4, sampler=RandomSampler(ds), generator=torch.Generator().manual_seed(9)
        ),
        "replacement": lambda: DataLoader(
            ds, batch_size=4, sampler=RandomSampler(ds, replacement=True, num_samples=70)
        ),
        "num_samples": lambda: DataLoader(
            ds, batch_size=4, sampler=RandomSampler(ds, num_samples=50)
        ),
        "subset": lambda: DataLoader(
            ds, batch_size=3, sampler=SubsetRandomSampler(list(range(0, 23, 2)))
        ),
        "weighted": lambda: DataLoader(
            ds, batch_size=3, sampler=WeightedRandomSampler([1.0 + i for i in range(23)], 30)
        ),
        "distributed": lambda: DataLoader(
            ds, batch_size=3, sampler=distributed(DistributedSampler, ds)
        ),
        "drop_last": lambda: DataLoader(ds, batch_size=5, shuffle=True, drop_last=True),
        "batch_sampler": lambda: DataLoader(
            ds, batch_sampler=BatchSampler(SequentialSampler(ds), 6, drop_last=False)
        ),
        "no batching": lambda: DataLoader(ds, batch_size=None, shuffle=True),
        "workers": lambda: DataLoader(ds, batch_size=4, shuffle=True, num_workers=2),
        "workers, generator": lambda: DataLoader(
            ds,
            batch_size=4,
            shuffle=True,
            num_workers=2,
            generator=torch.Generator().manual_seed(8),
        ),
    }
    return builds[kind]()


def distributed(cls: Any, ds: Any) -> Any:
    """Rank 1 of 2, shuffled with seed 3, at epoch 2."""
    sampler = cls(ds, num_replicas=2, rank=1, seed=3)
    sampler.set_epoch(2)
    return sampler


LOADERS = [
    "sequential", "shuffle", "shuffle, generator", "sampler generator", "loader generator",
    "replacement",
    "num_samples", "subset", "weighted", "distributed", "drop_last", "batch_sampler",
    "no batching", "workers", "workers, generator",
]  # fmt: skip


def same(a: list[Any], b: list[Any]) -> bool:
    """Whether two lists of torch tensors are equal bitwise (dtype, shape and bytes)."""
    import torch

    return len(a) == len(b) and all(
        x.dtype == y.dtype and x.shape == y.shape and torch.equal(x, y)
        for x, y in zip(a, b, strict=True)
    )


def samples(batches: list[Any]) -> int:
    return sum(1 if b.ndim == 1 else len(b) for b in batches)


@pytest.mark.parametrize("kind", LOADERS)
def test_a_first_pass_is_the_loaders_own_and_draws_as_it_does(kind: str) -> None:
    """begin(None) yields what ``iter(loader)`` yields under the same seed, and leaves the
    global RNG where ``iter(loader)`` leaves it."""
    torch = need("torch")
    torch.manual_seed(11)
    expected = list(loader(kind))
    after = torch.get_rng_state()
    torch.manual_seed(11)
    cp = checkpointer(loader(kind))
    assert not isinstance(cp, str), cp
    assert same(list(cp.begin(None)), expected)
    assert torch.equal(torch.get_rng_state(), after)


def test_a_single_process_pass_draws_its_order_at_the_first_batch() -> None:
    """As with ``iter(loader)``: the user's draws between begin() and the first next() come
    before the sampler's; a state taken after the first batch replays what was drawn."""
    torch = need("torch")
    torch.manual_seed(3)
    it = iter(loader("shuffle"))
    torch.rand(5)
    expected = list(it)
    torch.manual_seed(3)
    cp = checkpointer(loader("shuffle"))
    assert not isinstance(cp, str)
    it = cp.begin(None)
    torch.rand(5)
    first = next(it)
    state = pickle.loads(pickle.dumps(cp.position(1)))
    assert same([first, *it], expected)
    assert same(resumed(loader("shuffle"), state), expected[1:])


@pytest.mark.parametrize("kind", LOADERS)
def test_a_map_style_loader_resumes_bitwise_without_loading_the_skipped(kind: str) -> None:
    torch = need("torch")
    torch.manual_seed(11)
    expected = list(loader(kind))
    for k in cuts(len(expected)):
        torch.manual_seed(11)
        head, state = cut(loader(kind), k)
        assert same(head, expected[:k])
        torch.manual_seed(999)  # another global RNG: the state carries what the pass drew
        rng = torch.get_rng_state()
        again = loader(kind)
        rest = resumed(again, state)
        assert same(rest, expected[k:]), f"resumed after {k} batches"
        assert torch.equal(torch.get_rng_state(), rng)  # the user's global RNG untouched
        if again.num_workers == 0:
            assert again.dataset.loads == samples(expected[k:])  # none of the skipped


@pytest.mark.parametrize("kind", ["shuffle, generator", "sampler generator", "workers, generator"])
def test_after_a_resumed_pass_the_loaders_generators_are_where_the_run_left_them(
    kind: str,
) -> None:
    """The next epoch of a resumed loader is the uninterrupted run's next epoch."""
    need("torch")
    first = loader(kind)
    cp = checkpointer(first)
    assert not isinstance(cp, str)
    list(cp.begin(None))
    expected = list(cp.begin(None))  # the second epoch
    _, state = cut(loader(kind), 5)
    again = loader(kind)
    cp = checkpointer(again)
    assert not isinstance(cp, str)
    list(cp.begin(state))
    assert same(list(cp.begin(None)), expected)


def test_persistent_workers_resume_a_later_epoch() -> None:
    """With persistent workers the second epoch draws no new base seed: its state says so."""
    torch = need("torch")
    from torch.utils.data import DataLoader

    def build() -> Any:
        return DataLoader(
            Squares(), batch_size=4, shuffle=True, num_workers=2, persistent_workers=True
        )

    torch.manual_seed(4)
    cp = checkpointer(build())
    assert not isinstance(cp, str)
    list(cp.begin(None))
    it = cp.begin(None)
    head = [next(it) for _ in range(2)]
    state = pickle.loads(pickle.dumps(cp.position(2)))
    rest = list(it)
    torch.manual_seed(5)
    assert same(resumed(build(), state), rest)
    assert len(head) == 2


class Seeds(Squares):
    """:class:`Squares` whose samples are int64 [i, base seed of the worker loading it]."""

    def __getitem__(self, i: int) -> Any:
        import torch
        from torch.utils.data import get_worker_info

        info = get_worker_info()
        return torch.tensor([i, info.seed - info.id], dtype=torch.int64)


def test_a_resumed_pass_gives_its_workers_the_same_base_seed() -> None:
    """The workers of a resumed pass are seeded as the uninterrupted pass's were
    (``torch.initial_seed()`` in worker i is base + i)."""
    torch = need("torch")
    from torch.utils.data import DataLoader

    def build() -> Any:
        return DataLoader(Seeds(), batch_size=4, shuffle=True, num_workers=2)

    torch.manual_seed(8)
    expected = list(build())
    torch.manual_seed(8)
    _, state = cut(build(), 3)
    torch.manual_seed(1)
    rest = resumed(build(), state)
    assert same(rest, expected[3:])
    assert len({int(b[0, 1]) for b in expected}) == 1  # one base seed in the pass


class Flaky(Squares):
    """:class:`Squares` whose sample 6 fails to load."""

    def __getitem__(self, i: int) -> Any:
        if i == 6:
            raise KeyError("sample 6 is broken")
        return super().__getitem__(i)


def test_a_pass_goes_on_after_a_sample_fails_to_load_as_the_loaders_own() -> None:
    need("torch")
    from torch.utils.data import DataLoader

    def batches(it: Iterator[Any]) -> list[Any]:
        got = []
        while True:
            try:
                got.append(next(it))
            except KeyError:
                got.append("failed")
            except StopIteration:
                return got

    expected = batches(iter(DataLoader(Flaky(), batch_size=4)))
    cp = checkpointer(DataLoader(Flaky(), batch_size=4))
    assert not isinstance(cp, str)
    got = batches(cp.begin(None))
    assert got[1] == expected[1] == "failed" and len(got) == len(expected) == 6
    assert same([b for b in got if not isinstance(b, str)], [b for b in expected if b != "failed"])


CHILD = """
import pickle, sys
sys.path.insert(0, {tests!r})
import torch
import test_checkpoints as t
torch.manual_seed(12345)  # not the parent's seed
state = pickle.load(open({state!r}, "rb"))
rest = t.resumed(t.loader({kind!r}), state)
pickle.dump([b.clone() for b in rest], open({out!r}, "wb"))
"""


@pytest.mark.parametrize("kind", ["shuffle", "workers"])
def test_a_map_style_loader_resumes_in_another_process(kind: str, tmp_path: Path) -> None:
    torch = need("torch")
    torch.manual_seed(21)
    expected = list(loader(kind))
    torch.manual_seed(21)
    _, state = cut(loader(kind), 3)
    (tmp_path / "state.pkl").write_bytes(pickle.dumps(state))
    code = CHILD.format(
        tests=TESTS, state=str(tmp_path / "state.pkl"), kind=kind, out=str(tmp_path / "rest.pkl")
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
        env={**os.environ, "INTEROP_CORE_DISABLE_PLUGIN_AUTOLOAD": "1"},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    rest = pickle.loads((tmp_path / "rest.pkl").read_bytes())
    assert same(rest, expected[3:])


def test_a_state_for_a_loader_built_otherwise_is_refused() -> None:
    need("torch")
    from torch.utils.data import DataLoader

    _, state = cut(loader("shuffle"), 2)
    with pytest.raises(CheckpointError, match="length is 6; this one's is 12"):
        resumed(DataLoader(Squares(), batch_size=2, shuffle=True), state)
    with pytest.raises(CheckpointError, match="without a loader generator; this one has one"):
        resumed(loader("shuffle, generator"), state)


class Odd:
    """A sampler interop_core does not know."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self) -> Iterator[int]:
        return iter(range(1, self.n, 2))

    def __len__(self) -> int:
        return self.n // 2


def test_loaders_whose_order_cannot_be_replayed_say_why() -> None:
    need("torch")
    from torch.utils.data import DataLoader, IterableDataset, RandomSampler

    class MyRandom(RandomSampler):
        pass

    class Stream(IterableDataset):  # type: ignore[type-arg]
        def __iter__(self) -> Iterator[Any]:
            return iter(range(5))

    class MyLoader(DataLoader):  # type: ignore[type-arg]
        pass

    ds = Squares()
    reasons = {
        "sampler is a Odd": DataLoader(ds, sampler=Odd(23)),
        "sampler is a MyRandom": DataLoader(ds, sampler=MyRandom(ds)),
        "batch_sampler is a Odd": DataLoader(ds, batch_sampler=Odd(23)),
        "over an IterableDataset (Stream)": DataLoader(Stream()),
        "MyLoader (a subclass of torch's DataLoader)": MyLoader(ds),
        "an iterator of a torch DataLoader": iter(DataLoader(ds)),
    }
    for words, source in reasons.items():
        why = checkpointer(source)
        assert isinstance(why, str) and words in why, why
        assert "StatefulDataLoader" in why or "DataLoader itself" in why, why


def test_other_sources_say_what_they_are_and_what_to_do() -> None:
    def gen() -> Iterator[int]:
        yield 1

    why = checkpointer(gen())
    assert isinstance(why, str)
    assert "a generator (test_other_sources_say_what_they_are_and_what_to_do.<locals>.gen)" in why
    assert "StatefulDataLoader" in why
    why = checkpointer(iter([1, 2]))
    assert isinstance(why, str) and "builtins.list_iterator cannot be checkpointed" in why


# -- torchdata's StatefulDataLoader --------------------------------------------------------


def stateful(workers: int) -> Any:
    from torchdata.stateful_dataloader import StatefulDataLoader

    return StatefulDataLoader(Squares(), batch_size=4, shuffle=True, num_workers=workers)


@pytest.mark.parametrize("workers", [0, 2])
def test_a_stateful_dataloader_resumes_from_its_own_state(workers: int) -> None:
    torch = need("torch")
    need("torchdata")
    torch.manual_seed(2)
    expected = list(stateful(workers))
    for k in cuts(len(expected)):
        torch.manual_seed(2)
        head, state = cut(stateful(workers), k)
        assert same(head, expected[:k])
        torch.manual_seed(77)
        assert same(resumed(stateful(workers), state), expected[k:]), k
    cp = checkpointer(stateful(workers))
    assert not isinstance(cp, str)
    assert cp.name == "torchdata StatefulDataLoader: its own state_dict()"


# -- Grain -----------------------------------------------------------------------------------


def grain_sources() -> dict[str, Callable[[], Any]]:
    import grain

    def loader() -> Any:
        return grain.DataLoader(
            data_source=grain.sources.RangeDataSource(0, 30, 1),
            sampler=grain.samplers.IndexSampler(num_records=30, shuffle=True, seed=3, num_epochs=1),
            operations=[grain.transforms.Batch(4)],
            worker_count=0,
        )

    return {
        "MapDataset": lambda: (
            grain.MapDataset.range(30).shuffle(seed=3).map(lambda x: x * 2).batch(4)
        ),
        "IterDataset iterator": lambda: iter(
            grain.MapDataset.range(30).shuffle(seed=4).to_iter_dataset().batch(4)
        ),
        "DataLoader": loader,
        "DataLoader iterator": lambda: iter(loader()),
    }


@pytest.mark.parametrize(
    "kind", ["MapDataset", "IterDataset iterator", "DataLoader", "DataLoader iterator"]
)
def test_grain_resumes_from_its_own_state(kind: str) -> None:
    np = need("numpy")
    need("grain")
    build = grain_sources()[kind]
    expected = [np.asarray(b) for b in build()]
    for k in cuts(len(expected)):
        head, state = cut(build(), k)
        rest = resumed(build(), state)
        got = [np.asarray(b) for b in [*head, *rest]]
        assert len(got) == len(expected) and all(
            a.dtype == b.dtype and np.array_equal(a, b) for a, b in zip(got, expected, strict=True)
        ), k


# -- Hugging Face datasets -------------------------------------------------------------------


def hf(kind: str = "map") -> Any:
    from datasets import Dataset

    ds = Dataset.from_dict({"a": list(range(30))}).to_iterable_dataset(num_shards=3)
    if kind == "map":
        return ds.map(lambda x: {"a": x["a"] * 3, "b": [x["a"], -x["a"]]}).with_format("torch")
    return ds.shuffle(seed=1, buffer_size=8)


def hf_loader(kind: str = "map", workers: int = 0) -> Any:
    from torch.utils.data import DataLoader

    return DataLoader(hf(kind), batch_size=4, num_workers=workers)


def flat(batches: list[Any]) -> list[Any]:
    """Dicts of tensors as nested lists of numbers (with the dtypes), for comparison."""
    return [{k: (str(v.dtype), v.tolist()) for k, v in b.items()} for b in batches]


@pytest.mark.parametrize("build", [hf, hf_loader])
def test_hugging_face_resumes_from_the_datasets_state(build: Callable[[], Any]) -> None:
    need("torch")
    need("datasets")
    expected = flat(list(build()))
    for k in cuts(len(expected)):
        head, state = cut(build(), k)
        assert flat(head) == expected[:k]
        assert flat(resumed(build(), state)) == expected[k:], k


def test_hugging_face_a_state_before_a_passs_first_batch_is_its_start() -> None:
    """A second pass not yet started begins at the start (not where the first one ended),
    and resuming leaves the user's dataset and its epoch as they were."""
    need("torch")
    need("datasets")
    source = hf_loader()
    cp = checkpointer(source)
    assert not isinstance(cp, str)
    expected = flat(list(cp.begin(None)))
    cp.begin(None)
    state = pickle.loads(pickle.dumps(cp.position(0)))
    assert flat(resumed(hf_loader(), state)) == expected
    again = hf()
    again.set_epoch(3)
    _, state = cut(again, 4)
    other = hf()
    rest = resumed(other, state)
    assert other.epoch == 0 and other._starting_state_dict is None
    assert len(rest) == 26


def test_hugging_face_sources_that_would_resume_wrong_say_why() -> None:
    need("torch")
    need("datasets")
    for source in (hf("shuffle"), hf_loader("shuffle")):
        why = checkpointer(source)
        assert isinstance(why, str) and "shuffle buffer" in why and "#6658" in why, why
    why = checkpointer(hf_loader(workers=2))
    assert isinstance(why, str) and "num_workers=2" in why and "StatefulDataLoader" in why


# -- tf.data ---------------------------------------------------------------------------------


def tf_source(kind: str) -> Any:
    import tensorflow as tf

    ds = tf.data.Dataset.range(40).shuffle(16, seed=2).map(lambda x: x * 3).batch(4).prefetch(2)
    return iter(ds) if kind == "iterator" else ds


@pytest.mark.parametrize("kind", ["dataset", "iterator"])
def test_tf_data_resumes_from_its_iterators_state(kind: str) -> None:
    need("tensorflow")
    expected = [b.numpy() for b in tf_source(kind)]
    for k in cuts(len(expected)):
        head, state = cut(tf_source(kind), k)
        assert isinstance(state["state"], bytes)
        got = [b.numpy() for b in [*head, *resumed(tf_source(kind), state)]]
        assert len(got) == len(expected), k
        pairs = zip(got, expected, strict=True)
        assert all(a.dtype == b.dtype and (a == b).all() for a, b in pairs), k


def test_tf_data_with_state_tensorflow_cannot_save_says_why_and_goes_on() -> None:
    """TensorFlow finds state it cannot save when it saves: position() raises a
    CheckpointError naming what and what to do, and the pass goes on unharmed."""
    tf = need("tensorflow")
    gen = tf.data.Dataset.from_generator(
        lambda: iter(range(3)), output_signature=tf.TensorSpec((), tf.int64)
    )
    noisy = tf.data.Dataset.range(3).map(lambda x: tf.cast(x, tf.float32) + tf.random.uniform(()))
    for source, op in ((gen, "PyFunc is stateful"), (noisy, "RandomUniform is stateful")):
        cp = checkpointer(source)
        assert not isinstance(cp, str)
        it = cp.begin(None)
        first = next(it)
        for _ in range(2):  # the second time from what TensorFlow said the first
            with pytest.raises(CheckpointError, match=op) as caught:
                cp.position(1)
            assert "stateless" in str(caught.value)
        assert len([first, *it]) == 3


# -- DALI --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def arrays(tmp_path_factory: pytest.TempPathFactory) -> str:
    """22 .npy files (int32 [i, i, i]) for fn.readers.numpy."""
    np = need("numpy")
    root = tmp_path_factory.mktemp("npy")
    for i in range(22):
        np.save(root / f"{i:03d}.npy", np.full(3, i, np.int32))
    return str(root)


def dali_defs() -> tuple[Any, Any]:
    from nvidia.dali import fn, pipeline_def

    def body(root: str) -> Any:
        x = fn.readers.numpy(file_root=root, random_shuffle=True, seed=5, name="R")
        return x, fn.random.uniform(shape=[2], seed=9)

    return pipeline_def(enable_checkpointing=True)(body), pipeline_def(body)


def dali(target: str, root: str, checkpointing: bool = True) -> Any:
    import interop_core

    pipe_def = dali_defs()[0 if checkpointing else 1]
    return interop_core.to(
        pipe_def, target, output_map=["x", "r"], batch_size=4, num_threads=1,
        pipeline_kwargs={"root": root},
    )  # fmt: skip


def host(batch: Any) -> list[Any]:
    np = need("numpy")
    one = batch[0] if isinstance(batch, list) else batch
    # torch's __array__ takes no copy= (numpy warns): its own .numpy() instead
    arrays = [one[k] for k in ("x", "r")]
    return [np.array(a.numpy() if hasattr(a, "numpy") else a) for a in arrays]


@pytest.mark.parametrize("target", ["numpy", "torch", "jax"])
def test_a_dali_iterator_resumes_from_its_pipelines_checkpoints(target: str, arrays: str) -> None:
    np = need("numpy")
    need("dali")
    if target != "numpy":
        need(target)

    def equal(got: list[Any], expected: list[Any]) -> bool:
        return len(got) == len(expected) and all(
            a.dtype == b.dtype and np.array_equal(a, b)
            for g, e in zip(got, expected, strict=True)
            for a, b in zip(g, e, strict=True)
        )

    whole = dali(target, arrays)
    expected = [host(b) for b in whole]
    whole.reset()
    following = [host(b) for b in whole]  # the next epoch (FILL read 2 of its samples)
    for k in cuts(len(expected)):
        head, state = cut(dali(target, arrays), k)
        again = dali(target, arrays)
        rest = [host(b) for b in resumed(again, state)]
        assert equal([host(b) for b in head] + rest, expected), k
        again.reset()  # the resumed iterator goes on to the run's next epoch
        assert equal([host(b) for b in again], following), k


def test_dali_iterators_that_cannot_restore_say_why(arrays: str) -> None:
    need("dali")
    why = checkpointer(dali("numpy", arrays, checkpointing=False))
    assert isinstance(why, str) and "enable_checkpointing=True" in why
    import interop_core

    built = dali_defs()[0](root=arrays, batch_size=4, num_threads=1, device_id=None)
    built.build()  # by the caller: made unbuilt, to() would build it again from a checkpoint
    why = checkpointer(interop_core.to(built, "numpy", output_map=["x", "r"]))
    assert isinstance(why, str) and "built by the caller" in why and "@pipeline_def" in why


def test_sharded_dali_batches_say_they_cannot_checkpoint_yet(arrays: str) -> None:
    need("dali")
    jax = need("jax")
    from jax.sharding import Mesh, NamedSharding, PartitionSpec
    from nvidia.dali import fn, pipeline_def

    import interop_core

    @pipeline_def(enable_checkpointing=True)
    def sharded(root: str, shard_id: int = 0, num_shards: int = 1) -> Any:
        return fn.readers.numpy(file_root=root, shard_id=shard_id, num_shards=num_shards)

    mesh = Mesh(need("numpy").array(jax.devices()[:1]), ("d",))
    it = interop_core.to(
        sharded, "jax", output_map=["x"], batch_size=4, num_threads=1,
        pipeline_kwargs={"root": arrays}, sharding=NamedSharding(mesh, PartitionSpec("d")),
    )  # fmt: skip
    why = checkpointer(it)
    assert isinstance(why, str) and "sharded by sharding= cannot be checkpointed" in why


def test_the_checkpointers_are_named_for_their_source() -> None:
    """The name a state carries says what it was made for (load_state_dict compares it)."""
    need("torch")
    cp = checkpointer(loader("shuffle"))
    assert not isinstance(cp, str)
    assert cp.name.startswith("torch DataLoader over a map-style dataset")
    assert "augmentations, is not restored" in cp.name
