"""``prefetch=N`` on converted iterators and the resume mechanics of ``Batches``: the same
batches in the same order, never more than N pulled ahead (counted), errors at the batch
where they happened, the thread stopped by close(), the end of the pass or dropping the
iterator; state_dict() counts only the batches handed out. numpy and torch only (the
checkpointers of real sources are tested in test_checkpoints.py).

Nothing here waits for time to pass: what must not happen is checked at a point where the
prefetch thread is known to be waiting for a slot (:class:`SlotWatch` sees it ask for one
and find none free, with the pulls it had made by then), and threads are joined.
"""

from __future__ import annotations

import contextvars
import gc
import pickle
import threading
import types
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from conftest import need

import interop_core as ic

np = need("numpy")


def prefetch_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "interop_core prefetch"]


def threads_stopped(timeout: float = 30.0) -> bool:
    """Join every prefetch thread (a hang guard, not a timing): whether none is left."""
    for t in prefetch_threads():
        t.join(timeout)
    return not prefetch_threads()


class SlotWatch:
    """The prefetch thread's slots (``depth`` of them: one taken before each pull, given back
    when its batch is handed out), watched: each time the thread asks for a slot and finds
    none free, ``starved`` records ``probe()`` (what the source has given by then).

    The thread asks for a slot only after handing its previous batch to the queue, so a
    record is taken when it has done all it may do: the checks that follow are exact.
    """

    def __init__(self, probe: Callable[[], int]) -> None:
        self.probe = probe
        self.starved: list[int] = []
        self.changed = threading.Condition()

    def semaphore(self, value: int) -> threading.Semaphore:
        watch = self

        class Watched(threading.Semaphore):
            def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
                if super().acquire(blocking=False):
                    return True
                with watch.changed:
                    watch.starved.append(watch.probe())
                    watch.changed.notify_all()
                return super().acquire(blocking, timeout)

        return Watched(value)

    def wait_starved(self, pulled: int) -> int:
        """Wait until the thread found no slot free having made at least ``pulled`` pulls
        (a hang guard of 30 s, never a timing); the pulls it had made then."""
        with self.changed:
            found = self.changed.wait_for(
                lambda: self.starved and self.starved[-1] >= pulled, timeout=30
            )
        assert found, f"the prefetch thread never ran out of slots: {self.starved}"
        return self.starved[-1]


@pytest.fixture
def watch_slots(monkeypatch: pytest.MonkeyPatch) -> Callable[[Callable[[], int]], SlotWatch]:
    """Watch the slots of the prefetchers made from now on (the module's ``threading`` seen
    through a namespace whose Semaphore is watched)."""
    import interop_plugins.kinds.batches as batches

    def watch(probe: Callable[[], int]) -> SlotWatch:
        w = SlotWatch(probe)
        names = {n: getattr(threading, n) for n in dir(threading) if not n.startswith("__")}
        monkeypatch.setattr(
            batches, "threading", types.SimpleNamespace(**{**names, "Semaphore": w.semaphore})
        )
        return w

    return watch


class Counted:
    """An iterable whose passes count the batches pulled from them; batch i is
    {"x": float32 [i, i], "y": int32 i}; ``fail_at`` raises ValueError at that batch."""

    def __init__(self, n: int, fail_at: int = -1) -> None:
        self.n, self.fail_at, self.pulled = n, fail_at, 0

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for i in range(self.n):
            if i == self.fail_at:
                raise ValueError(f"source failed at {i}")
            self.pulled += 1
            yield {"x": np.full(2, i, np.float32), "y": np.int32(i)}


def values(batches: Any) -> list[int]:
    return [int(np.asarray(b["x"])[0]) for b in batches]


@pytest.mark.parametrize("depth", [1, 2, 5])
def test_same_batches_same_order_as_without(depth: int) -> None:
    torch = need("torch")
    got = list(ic.to(iter(Counted(12)), "torch", prefetch=depth))
    want = list(ic.to(iter(Counted(12)), "torch"))
    assert len(got) == len(want) == 12
    for g, w in zip(got, want, strict=True):
        assert isinstance(g["x"], torch.Tensor) and g["x"].dtype == torch.float32
        assert torch.equal(g["x"], w["x"]) and int(g["y"]) == int(w["y"])


def test_never_more_than_n_batches_ahead(watch_slots: Any) -> None:
    """After each batch handed out, the thread pulls until it is 3 ahead and then waits for
    a slot: when it finds none free it has pulled exactly consumed + 3 (not one more), and
    it pulls no further until the next batch is handed out."""
    need("torch")
    source = Counted(100)
    slots = watch_slots(lambda: source.pulled)
    it = ic.to(iter(source), "torch", prefetch=3)
    assert source.pulled == 0 and not prefetch_threads()  # nothing before the first next()
    try:
        for consumed in range(1, 6):
            assert values([next(it)]) == [consumed - 1]
            assert slots.wait_starved(consumed + 3) == consumed + 3
            assert source.pulled == consumed + 3  # still: it waits for a slot
        assert max(slots.starved) == 5 + 3
    finally:
        it.close()
    assert threads_stopped() and source.pulled == 8  # close() pulls nothing more


def test_a_source_error_is_raised_at_its_batch_naming_it() -> None:
    need("torch")
    it = ic.to(iter(Counted(10, fail_at=4)), "torch", prefetch=3)
    got = []
    with pytest.raises(ValueError, match="source failed at 4") as caught:
        for b in it:
            got.append(int(b["y"]))
    assert got == [0, 1, 2, 3]  # every batch before it was handed out first
    assert any("batch 4" in note for note in caught.value.__notes__)
    with pytest.raises(StopIteration):
        next(it)
    assert threads_stopped()


def test_a_conversion_error_is_raised_at_its_batch() -> None:
    need("torch")

    def source() -> Iterator[Any]:
        yield {"x": np.zeros(2, np.float32)}
        yield {"x": np.zeros(2, np.float32)}
        yield {"x": np.array(["a", "b"])}  # no framework converts strings

    it = ic.to(source(), "torch", prefetch=2)
    next(it), next(it)
    with pytest.raises(ic.InteropError) as caught:
        next(it)
    assert any("batch 2" in note for note in caught.value.__notes__)


def test_close_end_of_pass_and_dropping_stop_the_thread() -> None:
    """close(), the end of the pass, dropping the iterator and leaving a with block each
    stop the thread (close() joins it: nothing is left to wait for), and a stopped thread
    pulls nothing more from its source."""
    need("torch")
    source = Counted(1000)
    it = ic.to(iter(source), "torch", prefetch=2)
    next(it)
    assert len(prefetch_threads()) == 1
    it.close()
    assert threads_stopped()
    pulled = source.pulled
    assert 1 <= pulled <= 3  # one handed out, at most two ahead
    with pytest.raises(StopIteration):  # a closed iterator is exhausted
        next(it)
    assert source.pulled == pulled
    assert len(list(ic.to(iter(Counted(5)), "torch", prefetch=2))) == 5
    assert threads_stopped()
    dropped = ic.to(iter(Counted(1000)), "torch", prefetch=2)
    next(dropped)
    del dropped
    gc.collect()
    assert threads_stopped()
    with ic.to(iter(Counted(1000)), "torch", prefetch=2) as managed:
        next(managed)
    assert threads_stopped()


def test_the_thread_runs_in_the_caller_s_context() -> None:
    """The source and the conversions see the context of the pass's first next() (the
    user's context variables, aligned_memory(), using_registry())."""
    need("torch")
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    seen = []

    def source() -> Iterator[Any]:
        for i in range(3):
            seen.append(var.get())
            yield np.full(2, i, np.float32)

    token = var.set("the caller's")
    try:
        assert len(list(ic.to(source(), "torch", prefetch=2))) == 3
    finally:
        var.reset(token)
    assert seen == ["the caller's"] * 3


def test_each_pass_of_a_restartable_source_prefetches_afresh() -> None:
    torch = need("torch")
    data = torch.utils.data.TensorDataset(torch.arange(10, dtype=torch.float32))
    loader = torch.utils.data.DataLoader(data, batch_size=3)
    batches = ic.to(loader, "numpy", prefetch=2)
    for _ in range(2):
        got = [b[0] for b in batches]
        assert [list(g) for g in got] == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
        assert all(isinstance(g, np.ndarray) and g.dtype == np.float32 for g in got)


@pytest.mark.parametrize("bad", [-1, 1.5, "2", True])
def test_prefetch_must_be_a_count(bad: Any) -> None:
    with pytest.raises(ic.OptionError, match="prefetch="):
        ic.to(iter(Counted(3)), "numpy", prefetch=bad)


# ------------------------------------------------------------------ resume, mechanics only


class Resumable:
    """A toy checkpointable source: batch i is np.float32 [i]; its checkpointer's position
    is the count, and begin(state) starts there (counting positions taken)."""

    positions = 0

    def __init__(self, n: int) -> None:
        self.n = n


class ToyCheckpointer:
    name = "toy: a count"
    replayable = False
    #: position() raises this CheckpointError from this count on (None: never).
    refuse_from: int | None = None

    def __init__(self, source: Resumable) -> None:
        self.source = source

    def begin(self, state: dict[str, Any] | None) -> Iterator[Any]:
        start = 0 if state is None else state["next"]
        return iter([np.full(1, i, np.float32) for i in range(start, self.source.n)])

    def position(self, produced: int) -> dict[str, Any]:
        Resumable.positions += 1
        if self.refuse_from is not None and produced >= self.refuse_from:
            raise ic.CheckpointError("toy: this pass holds state that cannot be saved")
        return {"next": produced}


def toy_checkpointer(source: Any) -> Any:
    """What the toy iterators find as their source's checkpointer (Batches' checkpointer_of:
    through to(), the interop_checkpointer hook; see test_checkpointer_hook.py)."""
    from interop_plugins.kinds.checkpoints import checkpointer

    return ToyCheckpointer(source) if isinstance(source, Resumable) else checkpointer(source)


@pytest.fixture
def toy_checkpoints() -> None:
    Resumable.positions = 0


class Pulls:
    """A conversion (a copy) that counts the batches it converted: one per pull."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, batch: Any) -> Any:
        self.count += 1
        return batch * 1


def toy_iterator(n: int, convert: Callable[[Any], Any] = lambda b: b * 1, **options: Any) -> Any:
    from interop_plugins.kinds.batches import Batches

    return Batches(Resumable(n), convert, checkpointer_of=toy_checkpointer, **options)


@pytest.mark.parametrize("prefetch", [0, 3])
@pytest.mark.parametrize("k", [0, 1, 4, 9, 10])
def test_state_counts_only_batches_handed_out(toy_checkpoints: None, prefetch: int, k: int) -> None:
    it = iter(toy_iterator(10, prefetch=prefetch))
    head = [float(next(it)[0]) for _ in range(k)]
    state = pickle.loads(pickle.dumps(it.state_dict()))
    assert state["batches"] == k and state["position"] == {"next": k}
    it.close()
    again = toy_iterator(10, prefetch=prefetch)
    again.load_state_dict(state)
    rest = [float(b[0]) for b in again]
    assert head + rest == [float(i) for i in range(10)]


def test_positions_are_read_per_batch_only_when_prefetching(toy_checkpoints: None) -> None:
    it = iter(toy_iterator(10))
    for _ in range(5):
        next(it)
    assert Resumable.positions == 0  # read when state_dict() asks
    it.state_dict()
    assert Resumable.positions == 1


def test_a_replayable_position_is_read_only_when_asked_even_prefetching(
    toy_checkpoints: None, monkeypatch: pytest.MonkeyPatch, watch_slots: Any
) -> None:
    """The thread has pulled 4 + 3 batches (it waits for a slot, all done with them) and read
    no position; state_dict() reads one."""
    monkeypatch.setattr(ToyCheckpointer, "replayable", True)
    pulled = Pulls()
    slots = watch_slots(lambda: pulled.count)
    it = iter(toy_iterator(10, prefetch=3, convert=pulled))
    head = [float(next(it)[0]) for _ in range(4)]
    assert slots.wait_starved(4 + 3) == 4 + 3
    assert Resumable.positions == 0
    assert it.state_dict()["position"] == {"next": 4}
    assert Resumable.positions == 1 and head == [0.0, 1.0, 2.0, 3.0]


def test_a_position_refused_on_the_thread_is_raised_by_state_dict_only(
    toy_checkpoints: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A source that finds out only when asked that it cannot save a pass (tf.data with a
    py_function) keeps its batches flowing; state_dict() says why."""
    monkeypatch.setattr(ToyCheckpointer, "refuse_from", 3)
    it = iter(toy_iterator(6, prefetch=2))
    assert [float(next(it)[0]) for _ in range(2)] == [0.0, 1.0]
    assert it.state_dict()["batches"] == 2
    assert [float(b[0]) for b in it] == [2.0, 3.0, 4.0, 5.0]
    with pytest.raises(ic.CheckpointError, match="cannot be saved"):
        it.state_dict()


def test_a_restartable_source_s_state_is_its_latest_pass(toy_checkpoints: None) -> None:
    batches = toy_iterator(6)
    for i, _ in enumerate(batches):
        if i == 2:
            break
    assert batches.state_dict()["batches"] == 3


def test_states_are_checked() -> None:
    need("torch")
    with pytest.raises(ic.CheckpointError, match=r"cannot record its position.*generator"):
        ic.to(iter(Counted(3)), "torch").state_dict()


def test_a_state_for_another_source_is_refused(toy_checkpoints: None) -> None:
    it = toy_iterator(3)
    with pytest.raises(ic.CheckpointError, match="another kind of source"):
        it.load_state_dict({"interop_core.batches": 1, "source": "x", "batches": 0})
    with pytest.raises(ic.CheckpointError, match="made by state_dict"):
        it.load_state_dict({"batches": 1})


def test_an_iterator_left_open_at_exit_does_not_abort_the_process() -> None:
    """A prefetch thread still converting into JAX when the interpreter exits was killed
    inside JAX's C++ code: "terminate called without an active exception", SIGABRT, in 4 of
    8 runs before the threads were stopped at exit. Now every run exits 0."""
    need("torch")
    need("jax")
    import subprocess
    import sys

    script = (
        "import numpy as np, torch, jax, interop_core as ic\n"
        "class Sq:\n"
        "    def __len__(self): return 22\n"
        "    def __getitem__(self, i): return np.array([i, i * i], np.float32), np.int64(i)\n"
        "loader = torch.utils.data.DataLoader(Sq(), batch_size=4, shuffle=True)\n"
        "it = iter(ic.to(loader, 'jax', prefetch=2, dtype={'int64': 'int32'}))\n"
        "next(it), next(it)\n"
    )
    codes = [
        subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
        for _ in range(6)
    ]
    assert [c.returncode for c in codes] == [0] * 6, [c.stderr[-300:] for c in codes]
