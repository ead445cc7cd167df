"""A converted iterator follows Python's iterator protocol, and never starts a new pass
silently.

Over a restartable source (a DataLoader, a tf.data Dataset) the converted object is both an
iterable like its source (each ``iter()`` a pass, each ``for`` loop an epoch) and an
iterator: ``next()`` pulls from a pass of its own, and a loop over it goes on with that pass
instead of beginning a new one (which used to happen: ``next(it); next(it); for b in it:``
saw the first batches of epoch 2 and never the rest of epoch 1). A prefetching iterator
used in a forked child raises instead of ending as if the pass were over.

The toy source counts its passes and draws a new order for each, as a shuffling DataLoader
does, so a new pass shows in the values as well as in the count.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import need

import interop_core as ic

np = need("numpy")

N = 10  # batches in a pass of the toy source: np.array([i]) for i in a permutation of 0..9


class Shuffled:
    """A restartable iterable: each ``iter()`` is a new pass, in a new order (counted)."""

    def __init__(self, n: int = N) -> None:
        self.n, self.passes = n, 0

    def __iter__(self) -> Any:
        self.passes += 1
        order = np.random.default_rng(self.passes).permutation(self.n)
        return iter([np.array([i]) for i in order])


def converted(source: Any, prefetch: int) -> Any:
    """The converted iterator over ``source``, as to() makes it (a toy source is not a
    known restartable type, so it is made directly; each batch is copied)."""
    from interop_plugins.kinds.batches import Batches

    return Batches(source, lambda b: b * 1, prefetch=prefetch)


def values(batches: Any) -> list[int]:
    return [int(v) for b in batches for v in np.asarray(b).ravel()]


PREFETCH = pytest.mark.parametrize("prefetch", [0, 2])


@PREFETCH
def test_a_loop_after_next_goes_on_with_the_same_pass(prefetch: int) -> None:
    source = Shuffled()
    it = converted(source, prefetch)
    head = [next(it), next(it)]
    rest = list(it)
    assert len(head) + len(rest) == N
    assert sorted(values(head + rest)) == list(range(N))  # each sample once: one pass
    assert source.passes == 1


@PREFETCH
def test_each_loop_is_a_pass(prefetch: int) -> None:
    source = Shuffled()
    it = converted(source, prefetch)
    epochs = [values(it) for _ in range(3)]
    assert [sorted(e) for e in epochs] == [list(range(N))] * 3
    assert source.passes == 3 and epochs[0] != epochs[1]  # a new order each pass


@PREFETCH
def test_a_loop_begun_again_after_break_is_a_new_pass_as_over_the_source(prefetch: int) -> None:
    source = Shuffled()
    it = converted(source, prefetch)
    for i, _ in enumerate(it):
        if i == 2:
            break
    assert sorted(values(it)) == list(range(N))
    assert source.passes == 2


@PREFETCH
def test_an_ended_pass_keeps_raising_stop_iteration(prefetch: int) -> None:
    source = Shuffled()
    it = converted(source, prefetch)
    assert sorted(values(next(it) for _ in range(N))) == list(range(N))
    for _ in range(3):
        with pytest.raises(StopIteration):
            next(it)
    assert source.passes == 1


@PREFETCH
def test_iter_after_the_end_begins_the_next_pass(prefetch: int) -> None:
    """A pass that next() began and ended (StopIteration raised): the next loop over the
    object, or iter() of it, is the next pass, and next() then pulls from that pass."""
    source = Shuffled()
    it = converted(source, prefetch)
    first = values(next(it) for _ in range(N))
    with pytest.raises(StopIteration):
        next(it)
    second = values(it)  # a loop: iter() of an ended pass begins the next
    assert sorted(first) == sorted(second) == list(range(N)) and first != second
    assert iter(it) is it and source.passes == 3  # once more: it and next() go on with it
    assert sorted(values(next(it) for _ in range(N))) == list(range(N))
    assert source.passes == 3


@PREFETCH
def test_a_peek_then_a_loop_each_epoch(prefetch: int) -> None:
    """``batches = iter(it); first = next(batches); for b in batches:``: each epoch one
    whole pass."""
    source = Shuffled()
    it = converted(source, prefetch)
    epochs = []
    for _ in range(3):
        batches = iter(it)
        first = next(batches)
        epochs.append(sorted(values([first, *batches])))
    assert epochs == [list(range(N))] * 3 and source.passes == 3


@PREFETCH
def test_two_iters_are_two_passes_and_neither_ends_the_other(prefetch: int) -> None:
    """A second iter() used to close the first pass's prefetch thread: the first then
    ended at once, with no error."""
    source = Shuffled()
    it = converted(source, prefetch)
    a, b = iter(it), iter(it)
    assert a is not b
    assert sorted(values(a)) == sorted(values(b)) == list(range(N))
    assert source.passes == 2


@PREFETCH
def test_next_inside_a_loop_pulls_from_the_loop_s_pass(prefetch: int) -> None:
    source = Shuffled()
    it = iter(converted(source, prefetch))
    seen = []
    for batch in it:
        seen.append(batch)
        seen.append(next(it))
    assert sorted(values(seen)) == list(range(N)) and source.passes == 1


def test_an_iterator_source_is_one_pass() -> None:
    it = ic.to(iter([np.array([i]) for i in range(6)]), "numpy", prefetch=2)
    assert values([next(it), next(it)]) == [0, 1]
    assert values(it) == [2, 3, 4, 5]
    assert values(it) == []  # iter() of an iterator is the iterator: it stays ended
    assert iter(it) is it


# -- real restartable sources --------------------------------------------------------------


class Squares:
    def __len__(self) -> int:
        return N

    def __getitem__(self, i: int) -> Any:
        return np.array([i], np.int64)


@PREFETCH
def test_a_converted_dataloader_goes_on_with_its_pass(prefetch: int) -> None:
    torch = need("torch")
    loader = torch.utils.data.DataLoader(Squares(), batch_size=2, shuffle=True)
    it = ic.to(loader, "numpy", prefetch=prefetch)
    head = [next(it), next(it)]
    rest = list(it)
    assert len(head) + len(rest) == N // 2
    assert sorted(values(head + rest)) == list(range(N))
    # and its state counts the pass it goes on with
    it = ic.to(loader, "numpy", prefetch=prefetch)
    next(it), next(it)
    for _ in it:
        break
    assert it.state_dict()["batches"] == 3


@PREFETCH
def test_a_converted_tf_dataset_goes_on_with_its_pass(prefetch: int) -> None:
    tf = need("tensorflow")
    ds = tf.data.Dataset.range(N).shuffle(N, seed=1, reshuffle_each_iteration=True).batch(2)
    it = ic.to(ds, "numpy", prefetch=prefetch)
    head = [next(it), next(it)]
    rest = list(it)
    assert sorted(values(head + rest)) == list(range(N)) and len(rest) == 3
    assert sorted(values(it)) == list(range(N))  # and the next loop is the next epoch


# -- fork ------------------------------------------------------------------------------------

FORK = textwrap.dedent(
    """
    import os, sys
    sys.path.insert(0, sys.argv[1])
    import numpy as np
    import interop_core as ic
    from test_iterator_protocol import Shuffled, converted

    def in_child(it, act):
        '''act(it) in a forked child; what it did, read back through a pipe.'''
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                msg = "ok " + str(act(it))
            except ic.ConversionError as e:
                msg = "ConversionError " + str(e)
            except BaseException as e:
                msg = "other " + type(e).__name__ + " " + str(e)
            os.write(w, msg.replace(chr(10), " ").encode())
            os._exit(0)
        os.close(w)
        with os.fdopen(r, "rb") as f:
            out = f.read().decode()
        os.waitpid(pid, 0)
        return out

    pull = lambda it: [int(next(it)[0]) for _ in range(3)]
    count = lambda it: sum(1 for _ in it)

    # a prefetching iterator over an iterator, then over a restartable source's pass
    it = ic.to(iter([np.array([i]) for i in range(20)]), "numpy", prefetch=2)
    next(it)
    print("GEN", in_child(it, pull))
    print("PARENT", 1 + count(it))
    it = converted(Shuffled(40), 3)
    next(it)
    print("PASS", in_child(it, pull))
    print("LOOP", in_child(it, count))
    print("PARENT", 1 + count(it))
    # a pass begun in the child has a thread of its own; without prefetch= the child goes
    # on with its own copy of the iterator
    print("NEW", in_child(converted(Shuffled(10), 2), count))
    plain = ic.to(iter([np.array([i]) for i in range(5)]), "numpy")
    next(plain)
    print("PLAIN", in_child(plain, count))
    """
)


def test_a_prefetching_iterator_in_a_forked_child_raises() -> None:
    """The child's next() raised nothing: it got the batches the queue held (or none) and
    then StopIteration, as if the pass were over. In a child process of its own (fork)."""
    if not hasattr(__import__("os"), "fork"):
        pytest.skip("os.fork() is POSIX only")
    here = str(Path(__file__).parent)
    done = subprocess.run(
        [sys.executable, "-c", FORK, here], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    out = [line.split(" ", 1) for line in done.stdout.splitlines()]
    for key in ("GEN", "PASS", "LOOP"):
        said = lines[key]
        assert said.startswith("ConversionError"), (key, said)
        assert "prefetch thread" in said and "fork" in said and "after the fork" in said
    assert [v for k, v in out if k == "PARENT"] == ["20", "40"]  # the parent goes on
    assert lines["NEW"] == "ok 10"
    assert lines["PLAIN"] == "ok 4"
