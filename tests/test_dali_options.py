"""DALI options checked before DALI sees them, pipelines made by a ``@pipeline_def`` call
that resume from a state, and DALI outputs DALI's PyTorch iterator cannot give (issue 30).

- An option DALI would read otherwise than meant (``output_map=[1]`` named its output "1",
  ``size="8"`` was 8, ``size=True`` 1, ``size=0`` a ConversionError) is an OptionError
  naming the option, the value and what it takes, from ``to()`` and ``explain()`` alike.
- ``p = pipe_def(batch_size=..., enable_checkpointing=True)``, unbuilt, given to ``to()``:
  ``state_dict()`` / ``load_state_dict()`` work (to() builds it, so it keeps its graph and
  builds a new pipeline from it and the checkpoint); a pipeline the caller built, or one
  whose graph DALI cannot rebuild (an external_source callback), says why.

Every pipeline runs on the CPU (device_id None) over 22 small .npy files.
"""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from conftest import need

import interop_core as ic
from interop_core import CheckpointError, ConversionError, OptionError

np = need("numpy")
need("dali")

from nvidia.dali import fn, pipeline_def, types  # noqa: E402

N = 22  # files: int32 [i, i, i]


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("npy")
    for i in range(N):
        np.save(folder / f"{i:03d}.npy", np.full(3, i, np.int32))
    return str(folder)


@pipeline_def
def plain_def(root: str) -> Any:
    return fn.readers.numpy(file_root=root, name="R")


@pipeline_def(enable_checkpointing=True)
def checkpointed_def(root: str, shard_id: int = 0, num_shards: int = 1) -> Any:
    x = fn.readers.numpy(
        file_root=root, random_shuffle=True, seed=5, name="R", shard_id=shard_id,
        num_shards=num_shards,
    )  # fmt: skip
    return x, fn.random.uniform(shape=[2], seed=9)


# -- options -----------------------------------------------------------------------------------

BAD = [
    ("output_map", [1], "distinct non-empty strings"),
    ("output_map", [None], "distinct non-empty strings"),
    ("output_map", ["x", "x"], "distinct"),
    ("output_map", "x", "a list"),
    ("output_map", b"x", "a list"),
    ("output_map", [], "a list"),
    ("output_map", [""], "non-empty"),
    ("size", "8", "an int >= 1"),
    ("size", True, "an int >= 1"),
    ("size", 0, "an int >= 1"),
    ("size", -5, "an int >= 1"),
    ("size", 8.0, "an int >= 1"),
    ("reader_name", 3, "a non-empty string"),
    ("reader_name", "", "a non-empty string"),
    ("auto_reset", "maybe", "'yes'"),
    ("auto_reset", 2, "'yes'"),
    ("last_batch_policy", 3, "'fill', 'drop' or 'partial'"),
    ("last_batch_policy", "fil", "'fill', 'drop' or 'partial'"),
    ("last_batch_padded", "yes", "True or False"),
    ("prepare_first_batch", "no", "True or False"),
    ("batch_size", "4", "an int >= 1"),
    ("batch_size", True, "an int >= 1"),
    ("batch_size", 0, "an int >= 1"),
    ("num_threads", 0, "an int >= 1"),
    ("seed", "x", "an int in"),
    ("seed", 2**64, "an int in"),
    ("exec_dynamic", "no", "True or False"),
    ("prefetch_queue_depth", 0, "an int >= 1"),
    ("prefetch_queue_depth", {"cpu": 2}, "'cpu_size'"),
    ("pipeline_kwargs", [1], "a dict"),
]


def options(root: str, **more: Any) -> dict[str, Any]:
    return {
        "output_map": ["x"], "batch_size": 4, "num_threads": 1,
        "pipeline_kwargs": {"root": root}, **more,
    }  # fmt: skip


@pytest.mark.parametrize(("name", "value", "expected"), BAD, ids=lambda v: repr(v)[:20])
@pytest.mark.parametrize("target", ["numpy", "jax"])
def test_an_option_dali_would_misread_is_refused(
    root: str, target: str, name: str, value: Any, expected: str
) -> None:
    if target != "numpy":
        need(target)
    given = options(root, **{name: value})
    # twice: the second to() finds its route planned already, and must check again
    for _ in range(2):
        with pytest.raises(OptionError, match=rf"Option {name}=") as caught:
            ic.to(plain_def, target, **given)
        assert repr(value) in str(caught.value) and expected in str(caught.value)
        ic.to(plain_def, target, **options(root))  # the route, planned with good values


@pytest.mark.parametrize(("name", "value", "expected"), BAD[:10], ids=lambda v: repr(v)[:20])
def test_explain_refuses_them_too(root: str, name: str, value: Any, expected: str) -> None:
    with pytest.raises(OptionError, match=rf"Option {name}="):
        ic.explain(plain_def, "numpy", **options(root, **{name: value}))


@pytest.mark.parametrize(
    ("more", "said"),
    [
        ({"reader_name": "R", "size": 8}, "both set the epoch size"),
        ({"reader_name": "R", "last_batch_padded": True}, "pad_last_batch decides it"),
    ],
)
def test_options_that_contradict_each_other_are_refused(
    root: str, more: dict[str, Any], said: str
) -> None:
    """Refused before DALI sees them (DALI asserted: a ConversionError), explain() too."""
    for call in (ic.to, ic.explain):
        with pytest.raises(OptionError, match=said):
            call(plain_def, "numpy", **options(root, **more))


def test_an_argument_the_function_does_not_take_is_named(root: str) -> None:
    """DALI asserted "This shouldn't happen. Please double-check the `nope` argument"."""
    with pytest.raises(ConversionError, match=r"takes no argument 'nope'.*pipeline_kwargs="):
        ic.to(plain_def, "numpy", **options(root, pipeline_kwargs={"root": root, "nope": 1}))


@pytest.mark.parametrize(
    "more",
    [
        {"output_map": ("x",)},
        {"size": np.int64(8)},
        {"size": -1},
        {"size": None},
        {"reader_name": "R"},
        {"auto_reset": "yes"},
        {"auto_reset": None},
        {"last_batch_policy": "DROP"},
        {"seed": None},
        {"seed": 3},
        {"prefetch_queue_depth": 3},
        {"exec_dynamic": False},
    ],
    ids=repr,
)
def test_values_dali_takes_as_meant_pass(root: str, more: dict[str, Any]) -> None:
    batch = next(iter(ic.to(plain_def, "numpy", **options(root, **more))))
    assert list(batch) == ["x"] and batch["x"].shape == (4, 3)
    assert batch["x"].dtype == np.int32


def test_an_epoch_size_of_numpy_int_ends_the_epoch_there(root: str) -> None:
    it = ic.to(plain_def, "numpy", **options(root, size=np.int64(8)))
    assert len(it) == 2 and sum(len(b["x"]) for b in it) == 8


# -- pipelines made by a @pipeline_def call -------------------------------------------------------


def host(batch: Any) -> list[Any]:
    one = batch[0] if isinstance(batch, list) else batch
    return [np.array(a.numpy() if hasattr(a, "numpy") else a) for a in (one["x"], one["r"])]


def same(a: list[list[Any]], b: list[list[Any]]) -> bool:
    return len(a) == len(b) and all(
        x.dtype == y.dtype and np.array_equal(x, y)
        for p, q in zip(a, b, strict=True)
        for x, y in zip(p, q, strict=True)
    )


ITERATOR = {"output_map": ["x", "r"], "reader_name": "R", "last_batch_policy": "drop"}


@pytest.mark.parametrize("target", ["numpy", "jax", "torch", "tensorflow"])
def test_a_pipeline_made_unbuilt_resumes_from_its_state(root: str, target: str) -> None:
    """It raised CheckpointError ("its pipelines were built by the caller"), though to()
    built it. Resumed bitwise, the random generator too, and the next epoch as well."""
    if target != "numpy":
        need(target)

    def make() -> Any:
        pipe = checkpointed_def(root=root, batch_size=4, num_threads=1, device_id=None)
        return ic.to(pipe, target, **ITERATOR)

    whole = make()
    want = [host(b) for b in whole]
    whole.reset()
    following = [host(b) for b in whole]
    assert len(want) == N // 4
    for k in (0, 1, 3, len(want)):
        it = make()
        head = [host(next(it)) for _ in range(k)]
        state = pickle.loads(pickle.dumps(it.state_dict()))
        again = make()
        again.load_state_dict(state)
        assert same(head + [host(b) for b in again], want), k
        again.reset()
        assert same([host(b) for b in again], following), k


def test_the_pipeline_built_again_keeps_the_given_parameters(root: str) -> None:
    """exec_dynamic=False (copied batches) and the queue depth are the pipeline's, not
    DALI's defaults, in the pipeline built from the checkpoint."""

    def make() -> Any:
        pipe = checkpointed_def(
            root=root, batch_size=4, num_threads=1, device_id=None, exec_dynamic=False,
            prefetch_queue_depth=3,
        )  # fmt: skip
        return ic.to(pipe, "numpy", **ITERATOR)

    want = [host(b) for b in make()]
    it = make()
    head = [host(next(it)) for _ in range(2)]
    again = make()
    again.load_state_dict(it.state_dict())
    assert same(head + [host(b) for b in again], want)
    rebuilt = again._pipes[0]
    assert rebuilt.is_restored_from_checkpoint
    assert rebuilt.exec_dynamic is False and rebuilt.prefetch_queue_depth == 3


def test_a_list_of_pipelines_made_unbuilt_resumes(root: str) -> None:
    def make(n: int = 2) -> Any:
        pipes = [
            checkpointed_def(root=root, batch_size=4, num_threads=1, device_id=None,
                             shard_id=i, num_shards=n)
            for i in range(n)
        ]  # fmt: skip
        return ic.to(pipes, "numpy", **ITERATOR)

    want = [host(b) for b in make()]
    it = make()
    head = [host(next(it)) for _ in range(1)]
    state = it.state_dict()
    again = make()
    again.load_state_dict(state)
    assert same(head + [host(b) for b in again], want)
    with pytest.raises(CheckpointError, match="pipeline"):
        make(1).load_state_dict(state)


def test_a_pipeline_the_caller_built_still_cannot(root: str) -> None:
    pipe = checkpointed_def(root=root, batch_size=4, num_threads=1, device_id=None)
    pipe.build()
    it = ic.to(pipe, "numpy", **ITERATOR)
    next(it)
    with pytest.raises(CheckpointError, match="built by the caller"):
        it.state_dict()


def test_a_pipeline_without_checkpointing_says_so(root: str) -> None:
    it = ic.to(plain_def(root=root, batch_size=4, num_threads=1, device_id=None), "numpy",
               output_map=["x"])  # fmt: skip
    with pytest.raises(CheckpointError, match="enable_checkpointing=True"):
        it.state_dict()


def test_an_external_source_callback_cannot_be_rebuilt_and_says_so() -> None:
    def sample(info: Any) -> Any:
        return np.full(3, info.idx_in_epoch, np.int32)

    @pipeline_def(enable_checkpointing=True)
    def fed() -> Any:
        return fn.external_source(source=sample, batch=False)

    it = ic.to(fed(batch_size=4, num_threads=1, device_id=None), "numpy", output_map=["x"],
               size=20)  # fmt: skip
    assert np.asarray(next(it)["x"])[:, 0].tolist() == [0, 1, 2, 3]
    with pytest.raises(CheckpointError, match=r"external_source.*@pipeline_def function itself"):
        it.state_dict()


# -- dtypes DALI's PyTorch iterator has no torch type for -----------------------------------------


@pytest.mark.parametrize("dtype", ["UINT16", "UINT32", "UINT64"])
def test_an_unsigned_output_into_torch_says_what_to_do(root: str, dtype: str) -> None:
    """A bare KeyError (<DALIDataType.UINT32: 5>) from DALI's PyTorch iterator before."""
    need("torch")

    @pipeline_def
    def unsigned(root: str) -> Any:
        x = fn.readers.numpy(file_root=root, name="R")
        return x, fn.cast(x, dtype=getattr(types, dtype))

    with pytest.raises(ConversionError, match=rf"(?s)output 'u' is {dtype.lower()}.*fn.cast"):
        next(ic.to(unsigned, "torch", **options(root, output_map=["x", "u"])))
    # numpy holds it, and each batch converts to torch from there
    batch = next(ic.to(unsigned, "numpy", **options(root, output_map=["x", "u"])))
    assert batch["u"].dtype == np.dtype(dtype.lower())
    assert batch["u"][:, 0].tolist() == [0, 1, 2, 3]
