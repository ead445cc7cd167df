"""Damaged, hostile and foreign resume states: ``load_state_dict()`` refuses each with a
CheckpointError naming what is wrong, before the source or its framework reads any of it,
and leaves the iterator as it was; a state of another source of the same kind is refused
(tf.data restored a state of ``range(200)`` into ``range(8)`` and counted on past 8); a
state refused only when the pass begins is refused again, never replaced by a new pass; and
``state_dict()`` is the latest pass's.

"Re-signed" states below have their digest computed again after the change, as a hostile
state would: they probe the structural checks behind the digest. A case that crashed the
interpreter (a garbled tf.data state) runs in a child process.
"""

from __future__ import annotations

import copy
import os
import pickle
import subprocess
import sys
import textwrap
from collections.abc import Callable
from typing import Any

import pytest
from conftest import need

import interop_core as ic
from interop_core import CheckpointError

np = need("numpy")

HERE = os.path.dirname(os.path.abspath(__file__))
FORMAT = "interop_core.batches"


class Squares:
    """A map-style dataset: sample i is (float32 [i, i*i], int64 i)."""

    def __init__(self, n: int = 22) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> Any:
        return np.array([i, i * i], np.float32), np.int64(i)


def shuffled(n: int = 22, batch_size: int = 4) -> Any:
    """A shuffled DataLoader, built the same way each time (its first pass's order)."""
    torch = need("torch")
    torch.manual_seed(7)
    return torch.utils.data.DataLoader(Squares(n), batch_size=batch_size, shuffle=True)


def host(batches: list[Any]) -> list[list[Any]]:
    """Batches as lists of numpy arrays, for comparing values and dtypes."""

    def leaves(b: Any) -> list[Any]:
        if isinstance(b, dict):
            return [x for k in sorted(b) for x in leaves(b[k])]
        if isinstance(b, (list, tuple)):
            return [x for y in b for x in leaves(y)]
        return [np.array(b.numpy() if hasattr(b, "numpy") else b)]

    return [leaves(b) for b in batches]


def equal(a: list[Any], b: list[Any]) -> bool:
    x, y = host(a), host(b)
    return len(x) == len(y) and all(
        len(p) == len(q)
        and all(u.dtype == v.dtype and np.array_equal(u, v) for u, v in zip(p, q, strict=True))
        for p, q in zip(x, y, strict=True)
    )


def state_after(source: Any, k: int, **options: Any) -> dict[str, Any]:
    """The state of a converted iterator over ``source`` after ``k`` batches, pickled."""
    it = iter(ic.to(source, "numpy", **options))
    for _ in range(k):
        next(it)
    state = pickle.loads(pickle.dumps(it.state_dict()))
    it.close()
    return state  # type: ignore[no-any-return]


def resign(state: dict[str, Any]) -> dict[str, Any]:
    """``state`` with its digest made again: what a hostile state has."""
    from interop_plugins.kinds.batches import state_digest

    return {**state, "digest": state_digest(state)}


def changed(state: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    """A deep copy of ``state`` with the entry at ``path`` set to ``value`` (or deleted,
    for :data:`DROP`)."""
    new = copy.deepcopy(state)
    parent = new
    for key in path[:-1]:
        parent = parent[key]
    if value is DROP:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return new


DROP = object()


def path_to(state: Any, key: str, here: tuple[Any, ...] = ()) -> tuple[Any, ...]:
    """The path of the first entry named ``key`` in ``state``'s dicts."""
    if isinstance(state, dict):
        if key in state:
            return (*here, key)
        for name, value in state.items():
            found = path_to(value, key, (*here, name))
            if found:
                return found
    return ()


def refused(build: Callable[[], Any], state: Any, match: str, **options: Any) -> None:
    """``load_state_dict(state)`` raises a CheckpointError matching ``match``, and the
    iterator it was loaded into is left as it was: it starts a fresh pass."""
    it = ic.to(build(), "numpy", **options)
    with pytest.raises(CheckpointError, match=match):
        it.load_state_dict(state)
    first = next(iter(it))
    assert equal([first], list(ic.to(build(), "numpy"))[:1])


# -- what is not a state, or not one of this version -----------------------------------------


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        (None, "NoneType without its 'interop_core.batches' key"),
        ([1, 2], "list without"),
        ({"batches": 1}, "dict without"),
        ({FORMAT: 2}, "format 2; this version of interop_core reads format 1"),
        ({FORMAT: True}, "format True"),
        ({FORMAT: 1.0}, "format 1.0"),
        ({FORMAT: "1"}, "format '1'"),
        ({FORMAT: 1, "source": "Grain iterator: its own get_state()"}, "another kind of source"),
    ],
)
def test_what_is_not_a_state_of_this_version_is_refused(bad: Any, match: str) -> None:
    need("torch")
    refused(shuffled, bad, match)


def test_a_state_missing_a_key_or_with_one_more_is_refused() -> None:
    need("torch")
    state = state_after(shuffled(), 2)
    for key in ("batches", "position", "digest"):
        refused(shuffled, changed(state, (key,), DROP), f"its top level has no '{key}'")
    refused(shuffled, {**state, "extra": 1}, "its top level has 'extra', which no such state has")


# -- the digest: a state changed on the way ---------------------------------------------------


def test_a_state_changed_after_state_dict_does_not_match_its_digest() -> None:
    need("torch")
    state = state_after(shuffled(), 2)
    rng = state["position"]["rng"]["global"]
    garbled = rng[:1000] + bytes(b ^ 0x5A for b in rng[1000:1064]) + rng[1064:]
    edits: list[tuple[tuple[Any, ...], Any]] = [
        (("batches",), 3),
        (("position", "batches"), 1),
        (("position", "rng", "global"), garbled),  # torch takes it: another order
        (("position", "rng", "global"), rng[:2000]),
        (("position", "epoch"), 0),
        (("position", "rng", "extra"), 1),
    ]
    for path, value in edits:
        refused(shuffled, changed(state, path, value), "does not match its digest")


def test_a_state_that_contains_itself_or_nests_too_deep_is_refused() -> None:
    need("torch")
    state = state_after(shuffled(), 2)
    looped = copy.deepcopy(state)
    looped["position"]["rng"]["base"] = looped["position"]
    refused(shuffled, looped, "contains itself")
    deep: Any = 0
    for _ in range(500):
        deep = [deep]
    refused(shuffled, changed(state, ("position", "epoch"), deep), "nests deeper")


# -- hostile counts and positions (re-signed) ----------------------------------------------------


@pytest.mark.parametrize(
    ("value", "match"),
    [
        (-1, "is -1, a negative count"),
        (-(10**18), "a negative count"),
        (10**18, "beyond the 6 batches"),
        (2**64, "beyond"),
        (10**5000, "an integer of 16610 bits, beyond"),  # too long for repr()
        (-(10**5000), "a negative integer of 16610 bits, a negative count"),
        (None, "is None, not a count"),
        (1.5, "is 1.5, not a count"),
        (float("nan"), "is nan, not a count"),
        ("2", "is '2', not a count"),
        (True, "is True, not a count"),
    ],
    ids=lambda v: v[:20] if isinstance(v, str) else type(v).__name__,
)
def test_a_hostile_position_is_refused_never_a_silent_restart(value: Any, match: str) -> None:
    """Negative, huge, None or fractional: the count in the state and the DataLoader's own
    position (where a pass resumes) are each refused, not read as the start of a pass."""
    need("torch")
    state = state_after(shuffled(), 2)
    refused(shuffled, resign(changed(state, ("position", "batches"), value)), match)
    if value != 10**18:  # the count handed out has no bound of its own; the position has
        refused(shuffled, resign(changed(state, ("batches",), value)), match.split(",")[0])


def test_counts_that_disagree_and_no_position_are_refused() -> None:
    need("torch")
    state = state_after(shuffled(), 2)
    refused(shuffled, resign({**state, "batches": 3}), "counts 3 batches handed out")
    refused(shuffled, resign(changed(state, ("position",), None)), "2 batches .* has no position")


@pytest.mark.parametrize(
    ("path", "value", "match"),
    [
        (("position", "rng"), DROP, "its DataLoader position has no 'rng'"),
        (("position", "rng"), [], "its generators is a list"),
        (("position", "rng", "global"), None, "its global generator state is None, where"),
        (("position", "rng", "global"), b"\0" * 16, "global generator state is not a torch"),
        (("position", "rng", "global"), "abc", "is 'abc', not the bytes"),
        (("position", "rng", "base"), "yes", "base is 'yes', not True or False"),
        (("position", "epoch"), 3, "its epoch is 3; this sampler has none"),
        (("position", "sampler"), "SequentialSampler", "sampler is 'SequentialSampler'"),
        (("position", "extra"), 1, "has 'extra', which no such state has"),
        (("position",), "position", "position is a str"),
    ],
)
def test_a_damaged_dataloader_position_names_what_is_wrong(
    path: tuple[Any, ...], value: Any, match: str
) -> None:
    need("torch")
    state = state_after(shuffled(), 2)
    refused(shuffled, resign(changed(state, path, value)), match)


# -- a state of another source of the same kind ----------------------------------------------


def test_a_dataloader_state_of_another_dataset_is_refused() -> None:
    """24 samples and 22 make 6 batches of 4 either way: the state replayed the draws of a
    24-sample shuffle over 22 samples. The number of samples is recorded and compared."""
    need("torch")
    state = state_after(shuffled(24), 2)
    refused(shuffled, state, "whose samples is 24; this one's is 22")
    refused(lambda: shuffled(22, 5), state, "whose length is 6; this one's is 5")


def test_a_tf_data_state_of_another_dataset_is_refused() -> None:
    """The issue's case: a state of range(200) restored into an iterator of range(8) gave
    116, 117, ... (TensorFlow restores into whatever dataset it is given)."""
    tf = need("tensorflow")
    state = state_after(tf.data.Dataset.range(200), 116)
    refused(lambda: tf.data.Dataset.range(8), state, "its cardinality is 200; this one's is 8")
    other = state_after(tf.data.Dataset.range(8).shuffle(8, seed=1), 2)
    refused(lambda: tf.data.Dataset.range(8), other, "its transformations is")
    cast = state_after(tf.data.Dataset.range(8).map(lambda x: tf.cast(x, tf.int32)), 2)
    refused(lambda: tf.data.Dataset.range(8), cast, "its element spec is")
    # its own state still resumes
    it = ic.to(tf.data.Dataset.range(8), "numpy")
    it.load_state_dict(state_after(tf.data.Dataset.range(8), 3))
    assert [int(b) for b in it] == [3, 4, 5, 6, 7]


def test_a_state_refused_when_the_pass_begins_is_refused_again() -> None:
    """A state that passes every check but that TensorFlow refuses (another pipeline's,
    its record forged): the first next() raises a CheckpointError, and so does the next
    one; the iterator never silently starts a new pass."""
    tf = need("tensorflow")

    def mine() -> Any:
        return tf.data.Dataset.range(40).batch(4)

    theirs = state_after(tf.data.Dataset.range(40).shuffle(8, seed=1).batch(4), 2)
    forged = resign(
        changed(theirs, ("position", "made_for"), state_after(mine(), 2)["position"]["made_for"])
    )
    for source in (mine(), iter(mine())):
        it = ic.to(source, "numpy")
        it.load_state_dict(forged)  # passes: its record says it is of this dataset
        for _ in range(2):
            with pytest.raises(CheckpointError, match="TensorFlow could not resume"):
                next(it)


def test_a_garbled_tf_data_state_is_refused_before_tensorflow_parses_it() -> None:
    """Bytes garbled inside a tf.data state's buffers made TensorFlow segfault when it
    restored them: the digest refuses them first (a child process: a regression kills only
    it)."""
    need("tensorflow")
    code = """
        import pickle, interop_core as ic, tensorflow as tf
        def build():
            return tf.data.Dataset.range(40).shuffle(16, seed=2).map(lambda x: x * 3).batch(4)
        it = iter(ic.to(build(), "numpy"))
        next(it); next(it)
        state = pickle.loads(pickle.dumps(it.state_dict()))
        blob = bytearray(state["position"]["state"])
        third = len(blob) // 3
        for i in range(third, third + 64):
            blob[i] ^= 0x5A
        state["position"]["state"] = bytes(blob)
        again = ic.to(build(), "numpy")
        try:
            again.load_state_dict(state)
        except ic.CheckpointError as e:
            print("REFUSED", str(e).splitlines()[0])
        else:
            print("ACCEPTED", [b.tolist() for b in again])
    """
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([HERE, os.environ.get("PYTHONPATH", "")])}
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    run = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
        timeout=300, env=env,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    assert "REFUSED This state is damaged: it does not match its digest" in run.stdout


def test_a_damaged_tf_data_state_is_a_checkpoint_error() -> None:
    """Bytes TensorFlow cannot parse as a serialized iterator (its InvalidArgumentError)."""
    tf = need("tensorflow")
    state = state_after(tf.data.Dataset.range(8).batch(2), 1)
    blob = state["position"]["state"]
    blobs: list[tuple[Any, str]] = [
        (blob[: len(blob) // 2], "not a serialized iterator"),
        (blob + b"\0" * 16, "not a serialized iterator"),
        (b"", "is empty, not the bytes"),
        (None, "is a NoneType, not the bytes"),
    ]
    for value, match in blobs:
        bad = resign(changed(state, ("position", "state"), value))
        refused(lambda: tf.data.Dataset.range(8).batch(2), bad, match)


# -- the sources that keep their own state ------------------------------------------------------


def test_a_damaged_stateful_dataloader_state_is_refused() -> None:
    torch = need("torch")
    need("torchdata")
    from torchdata.stateful_dataloader import StatefulDataLoader

    def build() -> Any:
        torch.manual_seed(5)
        return StatefulDataLoader(Squares(), batch_size=4, shuffle=True)

    state = state_after(build(), 2)
    own = ("position", "state")
    cases: list[tuple[tuple[Any, ...], Any, str]] = [
        ((*own, "_num_yielded"), -1, "_num_yielded is -1, a negative count"),
        ((*own, "_num_yielded"), 3, "counts 2 batches handed out, and its StatefulDataLoader"),
        ((*own, "_num_yielded"), DROP, "has no '_num_yielded'"),
        ((*own, "_iterator_finished"), "no", "_iterator_finished is 'no', not True or False"),
        ((*own, "_sampler_iter_state", "sampler_iter_state", "yielded"), 10**18, "beyond the 22"),
        ((*own, "_sampler_iter_state", "sampler_iter_state"), DROP, "has no sampler_iter_state"),
        ((*own, "_sampler_iter_state", "sampler_iter_state", "generator"), None, "not a torch"),
        ((*own, "_sampler_iter_state"), None, "_sampler_iter_state is None, not a dict"),
        (own, [], "is a list"),
    ]
    for path, value, match in cases:
        refused(build, resign(changed(state, path, value)), match)
    refused(build, state_after(StatefulDataLoader(Squares(30), batch_size=4), 1), "length is 8")


def test_a_damaged_grain_state_is_refused() -> None:
    need("grain")
    import grain

    def build() -> Any:
        return grain.MapDataset.range(30).shuffle(seed=3).batch(4)

    state = state_after(build(), 2)
    own = ("position", "state")
    cases: list[tuple[tuple[Any, ...], Any, str]] = [
        ((*own, "next_index"), -1, "next_index'\\] is -1, a negative count"),
        ((*own, "next_index"), 10**18, "beyond the 8 elements"),
        ((*own, "next_index"), 1.5, "is 1.5, not a count"),
        (own, None, "is None, not the dict"),
    ]
    for path, value, match in cases:
        refused(build, resign(changed(state, path, value)), match)
    other = state_after(grain.MapDataset.range(40).batch(4), 1)
    refused(build, other, "its length is 10; this one's is 8")


def test_a_damaged_hugging_face_state_is_refused() -> None:
    need("datasets")
    from datasets import Dataset

    def build() -> Any:
        ds = Dataset.from_dict({"a": list(range(30))}).to_iterable_dataset(num_shards=3)
        return ds.with_format("numpy")

    state = state_after(build(), 2)
    inner = ("position", "state", "examples_iterable")
    shard = path_to(state, "shard_idx")[:-1]
    cases: list[tuple[tuple[Any, ...], Any, str]] = [
        (("position", "state", "epoch"), 1, "of epoch 1, and its position of 0"),
        (("position", "epoch"), -1, "its epoch is -1, a negative count"),
        ((*inner, "extra"), 1, "has 'extra', which no such state has"),
        ((*shard, "shard_idx"), 10**18, "beyond the 3 shards"),
        ((*shard, "shard_example_idx"), None, "is None, not a count"),
        ((*inner, "type"), "Other", "is 'Other'; this dataset's is"),
        (("position", "state"), [], "is a list"),
    ]
    for path, value, match in cases:
        refused(build, resign(changed(state, path, value)), match)


def test_a_damaged_dali_state_is_refused(tmp_path: Any) -> None:
    need("dali")
    from nvidia.dali import fn, pipeline_def  # type: ignore[attr-defined]

    for i in range(12):
        np.save(tmp_path / f"{i:03d}.npy", np.full(3, i, np.int32))

    @pipeline_def(enable_checkpointing=True)
    def body(root: str) -> Any:
        return fn.readers.numpy(file_root=root, random_shuffle=True, seed=5, name="R")

    options: dict[str, Any] = {
        "output_map": ["x"], "batch_size": 4, "num_threads": 1,
        "pipeline_kwargs": {"root": str(tmp_path)}, "reader_name": "R",
    }  # fmt: skip

    def build() -> Any:
        return ic.to(body, "numpy", **options)

    it = build()
    next(it)
    state = pickle.loads(pickle.dumps(it.state_dict()))
    checkpoint = ("position", "checkpoints", 0)
    cases: list[tuple[tuple[Any, ...], Any, str]] = [
        (checkpoint, None, "its checkpoint of pipeline 0 is None, not the serialized"),
        (checkpoint, b"", "its checkpoint of pipeline 0 is b''"),
        (("position", "checkpoints"), [], "holds the checkpoints of 0 DALI pipeline"),
        (checkpoint, b"garbage", "DALI could not resume from this state"),
    ]
    for path, value, match in cases:
        again = build()
        with pytest.raises(CheckpointError, match=match):
            again.load_state_dict(resign(changed(state, path, value)))


# -- state_dict() is the latest pass's ------------------------------------------------------------


@pytest.mark.parametrize("prefetch", [0, 2])
def test_state_dict_is_the_latest_pass_s_not_the_first(prefetch: int) -> None:
    """Two passes of a shuffled DataLoader (two orders): after the second began, the state is
    the second's, and resuming it gives the rest of the second pass, not of the first."""
    need("torch")
    it = ic.to(shuffled(), "numpy", prefetch=prefetch)
    first = iter(it)
    next(first)
    second = iter(it)
    head = [next(second) for _ in range(3)]
    state = pickle.loads(pickle.dumps(it.state_dict()))
    assert state["batches"] == 3
    rest = list(second)
    again = ic.to(shuffled(), "numpy", prefetch=prefetch)
    again.load_state_dict(state)
    resumed = list(again)
    assert equal(resumed, rest) and len(rest) == 3
    assert not equal(head + rest, list(ic.to(shuffled(), "numpy")))  # the second order


@pytest.mark.parametrize("prefetch", [0, 2])
def test_epochs_left_with_break_say_where_the_last_one_stopped(prefetch: int) -> None:
    """``for epoch in ...: for b in it: ... break``: the state is where the last loop
    stopped (its batch count, and its order)."""
    need("torch")
    it = ic.to(shuffled(), "numpy", prefetch=prefetch)
    seen: list[list[Any]] = []
    for stop in (4, 1):
        seen.append([])
        for i, batch in enumerate(it):
            seen[-1].append(batch)
            if i == stop:
                break
    state = pickle.loads(pickle.dumps(it.state_dict()))
    assert state["batches"] == 2
    again = ic.to(shuffled(), "numpy", prefetch=prefetch)
    again.load_state_dict(state)
    whole = ic.to(shuffled(), "numpy", prefetch=prefetch)
    list(whole)  # the first epoch: the state's order is the second's
    second = list(whole)
    assert equal(seen[1] + list(again), second)


def test_a_state_taken_before_any_pass_starts_one() -> None:
    """Its position is None: a pass from the start, and only with no batches counted."""
    need("torch")
    state = pickle.loads(pickle.dumps(ic.to(shuffled(), "numpy").state_dict()))
    assert state["position"] is None and state["batches"] == 0
    again = ic.to(shuffled(), "numpy")
    again.load_state_dict(state)
    assert equal(list(again), list(ic.to(shuffled(), "numpy")))
    refused(shuffled, resign({**state, "batches": 3}), "counts 3 batches handed out, and has no")
