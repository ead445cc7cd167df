"""Resuming converted iterators end to end, as users do it: ``to(source, target,
prefetch=2)``, k batches, ``state_dict()`` pickled, a new source built the same way,
``to()`` again, ``load_state_dict()``, and the rest of the pass: bitwise equal (values and
dtypes) to an uninterrupted run, for every source that checkpoints. The checkpointers
themselves are tested in test_checkpoints.py."""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import need

import interop_core as ic

np = need("numpy")


def leaves(batch: Any) -> list[Any]:
    """A batch's arrays, on the host, in a fixed order."""
    if isinstance(batch, dict):
        return [x for k in sorted(batch) for x in leaves(batch[k])]
    if isinstance(batch, (list, tuple)):
        return [x for b in batch for x in leaves(b)]
    return [np.array(batch.numpy() if hasattr(batch, "numpy") else batch)]


def same(got: list[Any], want: list[Any]) -> bool:
    a = [leaves(b) for b in got]
    b = [leaves(b) for b in want]
    return len(a) == len(b) and all(
        len(x) == len(y)
        and all(u.dtype == v.dtype and np.array_equal(u, v) for u, v in zip(x, y, strict=True))
        for x, y in zip(a, b, strict=True)
    )


def check_resume(build: Callable[[], Any], target: str, prefetch: int = 2) -> None:
    """Cut a pass at several k and resume each in a new iterator over a new source (int64
    reaches JAX as int32, asked for with dtype=: JAX's x64 is off)."""
    options: dict[str, Any] = {"prefetch": prefetch}
    if target == "jax":
        options["dtype"] = {"int64": "int32"}
    want = list(ic.to(build(), target, **options))
    n = len(want)
    assert n >= 3
    for k in sorted({0, 1, n // 2, n - 1, n}):
        it = iter(ic.to(build(), target, **options))
        head = [next(it) for _ in range(k)]
        state = pickle.loads(pickle.dumps(it.state_dict()))
        assert state["batches"] == k
        it.close()
        again = ic.to(build(), target, **options)
        again.load_state_dict(state)
        assert same(head + list(again), want), f"resumed after {k} of {n} batches"


class Squares:
    """A map-style dataset: sample i is (float32 [i, i*i], int64 i)."""

    def __len__(self) -> int:
        return 22

    def __getitem__(self, i: int) -> Any:
        return np.array([i, i * i], np.float32), np.int64(i)


@pytest.mark.parametrize("target", ["jax", "torch"])
def test_a_shuffled_map_style_dataloader(target: str) -> None:
    torch = need("torch")
    need(target)

    def build() -> Any:
        torch.manual_seed(7)  # the order of every pass; the resumed pass replays it
        return torch.utils.data.DataLoader(Squares(), batch_size=4, shuffle=True)

    cast: dict[str, Any] = {"dtype": {"int64": "int32"}} if target == "jax" else {}
    want = list(ic.to(build(), target, prefetch=2, **cast))
    it = iter(ic.to(build(), target, prefetch=2, **cast))
    head = [next(it) for _ in range(3)]
    state = pickle.loads(pickle.dumps(it.state_dict()))
    it.close()
    loader = build()
    torch.manual_seed(12345)  # another global RNG state: the state carries the draws
    again = ic.to(loader, target, prefetch=2, **cast)
    again.load_state_dict(state)
    assert same(head + list(again), want)


def test_without_a_state_the_order_is_the_loader_s_own() -> None:
    """A user who never checkpoints sees the batches iterating the loader gives."""
    torch = need("torch")
    torch.manual_seed(3)
    own = list(torch.utils.data.DataLoader(Squares(), batch_size=4, shuffle=True))
    torch.manual_seed(3)
    loader = torch.utils.data.DataLoader(Squares(), batch_size=4, shuffle=True)
    ours = list(ic.to(loader, "numpy", prefetch=2))
    assert same(ours, [[a.numpy(), b.numpy()] for a, b in own])


def test_a_stateful_dataloader() -> None:
    torch = need("torch")
    need("torchdata")
    need("jax")
    from torchdata.stateful_dataloader import StatefulDataLoader

    def build() -> Any:
        torch.manual_seed(5)
        return StatefulDataLoader(Squares(), batch_size=4, shuffle=True)

    check_resume(lambda: build(), "torch")


def test_grain() -> None:
    need("grain")
    need("jax")
    import grain

    def build() -> Any:
        return grain.MapDataset.range(30).shuffle(seed=3).map(lambda x: x * 2).batch(4)

    check_resume(build, "jax")


def test_hugging_face_iterable_dataset() -> None:
    need("datasets")
    need("torch")
    from datasets import Dataset

    def build() -> Any:
        ds = Dataset.from_dict({"a": list(range(30))}).to_iterable_dataset(num_shards=3)
        return ds.map(lambda x: {"a": x["a"] * 3}).with_format("numpy").iter(batch_size=4)

    # .iter() is a generator: no position; the dataset itself is the source that resumes.
    with pytest.raises(ic.CheckpointError, match="generator"):
        ic.to(build(), "torch").state_dict()

    def dataset() -> Any:
        ds = Dataset.from_dict({"a": list(range(30))}).to_iterable_dataset(num_shards=3)
        return ds.map(lambda x: {"a": x["a"] * 3, "b": [x["a"], -x["a"]]}).with_format("numpy")

    check_resume(dataset, "torch")


def test_tf_data() -> None:
    tf = need("tensorflow")
    need("jax")
    check_resume(
        lambda: tf.data.Dataset.range(40).shuffle(16, seed=2).map(lambda x: x * 3).batch(4), "jax"
    )


@pytest.fixture(scope="module")
def npy_root(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("npy")
    for i in range(22):
        np.save(root / f"{i:03d}.npy", np.full(3, i, np.int32))
    return str(root)


@pytest.mark.parametrize("target", ["jax", "tensorflow"])
def test_a_dali_pipeline_with_checkpointing(target: str, npy_root: str) -> None:
    need("dali")
    need(target)
    from nvidia.dali import fn, pipeline_def

    @pipeline_def(enable_checkpointing=True)
    def body(root: str) -> Any:
        x = fn.readers.numpy(file_root=root, random_shuffle=True, seed=5, name="R")
        return x, fn.random.uniform(shape=[2], seed=9)

    def build() -> Any:
        return body

    options: dict[str, Any] = {
        "output_map": ["x", "r"], "batch_size": 4, "num_threads": 1,
        "pipeline_kwargs": {"root": npy_root}, "reader_name": "R",
        "last_batch_policy": "drop",
    }  # fmt: skip
    prefetch: dict[str, Any] = {"prefetch": 2} if target == "tensorflow" else {}
    want = list(ic.to(build(), target, **options, **prefetch))
    for k in (0, 1, len(want) // 2, len(want) - 1):
        it = iter(ic.to(build(), target, **options, **prefetch))
        head = [next(it) for _ in range(k)]
        state = pickle.loads(pickle.dumps(it.state_dict()))
        again = ic.to(build(), target, **options, **prefetch)
        again.load_state_dict(state)
        assert same(head + list(again), want), k


def test_a_dataloader_resumes_in_another_process(tmp_path: Path) -> None:
    """The state is a file another process loads: with another global seed there, the rest
    of the pass is the same, prefetching on both sides."""
    need("torch")
    need("jax")
    script = textwrap.dedent(
        """
        import pickle, sys
        import numpy as np, torch
        import interop_core as ic
        sys.path.insert(0, sys.argv[3])
        from test_resume import Squares

        def build():
            return torch.utils.data.DataLoader(Squares(), batch_size=4, shuffle=True)

        mode, path = sys.argv[1], sys.argv[2]
        if mode == "cut":
            torch.manual_seed(11)
            it = iter(ic.to(build(), "jax", prefetch=2, dtype={"int64": "int32"}))
            head = [next(it) for _ in range(2)]
            rest = list(it)
            torch.manual_seed(11)
            it = iter(ic.to(build(), "jax", prefetch=2, dtype={"int64": "int32"}))
            [next(it) for _ in range(2)]
            pickle.dump((it.state_dict(), [np.asarray(b[0]) for b in rest]), open(path, "wb"))
        else:
            torch.manual_seed(999)
            state, rest = pickle.load(open(path, "rb"))
            again = ic.to(build(), "jax", prefetch=2, dtype={"int64": "int32"})
            again.load_state_dict(state)
            got = [np.asarray(b[0]) for b in again]
            assert len(got) == len(rest) and all((a == b).all() for a, b in zip(got, rest))
            print("resumed", len(got))
        """
    )
    path = tmp_path / "state.pkl"
    here = str(Path(__file__).parent)
    for mode in ("cut", "resume"):
        done = subprocess.run(
            [sys.executable, "-c", script, mode, str(path), here],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
    assert "resumed 4" in done.stdout
