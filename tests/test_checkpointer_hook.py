"""The iterator kind's run-time hooks, from a third party's side: ``interop_checkpointer``
(how a converted iterator over a source records and restores its position) and
``interop_worker_policy`` (how a data loader's workers start).

A plugin registered with the public ``interop_core.register()`` alone adds resume for a
toy loader no built-in knows, overrides the built-in checkpointer of a torch DataLoader, and
sets a loader's worker policy; the built-in answers (``trylast``) come back once it is
unregistered. Hooks are counted, never timed.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import need

import interop_core
from interop_core.plugin import (
    ANY,
    ITERATOR,
    Checkpointer,
    CheckpointError,
    KindSpec,
    PluginError,
    WorkersPlan,
    hookimpl,
)

np = need("numpy")


class Shelf:
    """A toy loader: batch i is {"x": float32 [i, i], "i": int64 i}; every iter() is a new
    pass from the start (a restartable source, like a DataLoader)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def batch(self, i: int) -> dict[str, Any]:
        return {"x": np.full((2,), i, np.float32), "i": np.asarray(i, np.int64)}

    def batches(self, start: int) -> Iterator[dict[str, Any]]:
        return (self.batch(i) for i in range(start, self.n))

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self.batches(0)


class ShelfCheckpointer:
    """A Shelf's position: the index of its next batch, and the shelf's size."""

    name = "toy shelf: the index of the next batch"
    replayable = True  # position(n) reads nothing of the shelf's live state

    def __init__(self, shelf: Shelf) -> None:
        self.shelf = shelf

    def begin(self, state: dict[str, Any] | None) -> Iterator[Any]:
        if state is None:
            return iter(self.shelf)
        self.check(state)
        return self.shelf.batches(state["next"])

    def position(self, produced: int) -> dict[str, Any]:
        return {"next": produced, "size": self.shelf.n}

    def check(self, position: Any, batches: int | None = None) -> None:
        if not isinstance(position, dict) or sorted(position) != ["next", "size"]:
            raise CheckpointError(f"This state is damaged: {position!r} is no shelf position.")
        nxt, size = position["next"], position["size"]
        if type(nxt) is not int or type(size) is not int or not 0 <= nxt <= size:
            raise CheckpointError(f"This state is damaged: next={nxt!r}, size={size!r}.")
        if size != self.shelf.n:
            raise CheckpointError(
                f"This state was made for a shelf of {size} batches; this one has "
                f"{self.shelf.n}.\nLoad it into an iterator over the same shelf."
            )
        if batches is not None and batches != nxt:
            raise CheckpointError(f"This state is damaged: {batches} batches, next={nxt}.")


class ShelfPlugin:
    """A third party: Shelves are sources of batches, and they resume. Counts its asks."""

    def __init__(self) -> None:
        self.asked = 0

    @hookimpl
    def interop_kinds(self) -> list[KindSpec]:
        return [
            KindSpec(
                kind=ITERATOR,
                framework=ANY,
                claims=lambda obj: isinstance(obj, Shelf),
                description="a toy shelf of batches",
            )
        ]

    @hookimpl
    def interop_checkpointer(self, source: Any) -> Checkpointer | None:
        if not isinstance(source, Shelf):
            return None
        self.asked += 1
        return ShelfCheckpointer(source)


@pytest.fixture
def registered() -> Iterator[Any]:
    """Register ``plugin`` under a test's name; unregistered when the test ends."""
    names: list[str] = []

    def register(plugin: Any, name: str) -> Any:
        names.append(interop_core.register(plugin, name=name))
        return plugin

    yield register
    for name in names:
        interop_core.unregister(name=name)


def values(batches: Any) -> list[int]:
    """The index of each batch, read from both of its arrays (which must agree)."""
    seen = []
    for b in batches:
        assert isinstance(b["x"], np.ndarray) and b["x"].dtype == np.float32
        assert b["x"].tolist() == [float(b["i"])] * 2
        seen.append(int(b["i"]))
    return seen


@pytest.mark.parametrize("prefetch", [0, 2])
def test_a_plugin_alone_adds_resume_for_its_loader(registered: Any, prefetch: int) -> None:
    plugin = registered(ShelfPlugin(), "shelf")
    it = interop_core.to(Shelf(6), "numpy", prefetch=prefetch)
    assert plugin.asked == 0  # asked when first needed, not by to()
    epoch = iter(it)
    assert values([next(epoch), next(epoch)]) == [0, 1]
    state = pickle.loads(pickle.dumps(it.state_dict()))
    assert state["source"] == ShelfCheckpointer.name
    assert state["position"] == {"next": 2, "size": 6}
    assert plugin.asked == 1  # once per converted iterator
    epoch.close()

    again = interop_core.to(Shelf(6), "numpy", prefetch=prefetch)
    again.load_state_dict(state)
    assert values(again) == [2, 3, 4, 5]  # the rest of the pass, from the right batch
    assert values(again) == [0, 1, 2, 3, 4, 5]  # then a whole new pass
    assert plugin.asked == 2


def test_the_plugin_s_check_refuses_a_damaged_or_foreign_state(registered: Any) -> None:
    registered(ShelfPlugin(), "shelf")
    it = interop_core.to(Shelf(6), "numpy")
    next(it)
    state = it.state_dict()
    with pytest.raises(CheckpointError, match="made for a shelf of 6 batches"):
        interop_core.to(Shelf(4), "numpy").load_state_dict(state)  # check() refuses it
    cp = ShelfCheckpointer(Shelf(6))
    for damaged in ({"next": -1, "size": 6}, {"next": "1", "size": 6}, {"next": 1}, [1, 6]):
        with pytest.raises(CheckpointError, match="damaged"):
            cp.check(damaged)
    with pytest.raises(CheckpointError, match="damaged"):
        cp.begin({"next": 7, "size": 6})


def test_unregistered_the_built_in_answer_comes_back(registered: Any) -> None:
    plugin = ShelfPlugin()
    name = interop_core.register(plugin, name="shelf-once")
    try:
        assert values(interop_core.to(Shelf(2), "numpy")) == [0, 1]
    finally:
        interop_core.unregister(name=name)
    it = interop_core.to(iter(Shelf(3)), "numpy")  # a generator: no plugin can resume it
    assert values([next(it)]) == [0]
    with pytest.raises(CheckpointError, match="a generator"):
        it.state_dict()


def test_a_plugin_overrides_the_built_in_checkpointer_of_a_dataloader(registered: Any) -> None:
    torch = need("torch")

    class Rows(torch.utils.data.Dataset):  # type: ignore[misc]
        def __len__(self) -> int:
            return 6

        def __getitem__(self, i: int) -> Any:
            return np.full((2,), i, np.float32)

    class Skipping:
        """Resumes an unshuffled DataLoader by skipping the batches handed out."""

        name = "third party: skip the batches handed out"
        replayable = True

        def __init__(self, loader: Any) -> None:
            self.loader = loader

        def begin(self, state: dict[str, Any] | None) -> Iterator[Any]:
            skip = 0 if state is None else state["skip"]
            it = iter(self.loader)
            for _ in range(skip):
                next(it)
            return it

        def position(self, produced: int) -> dict[str, Any]:
            return {"skip": produced}

        def check(self, position: Any, batches: int | None = None) -> None:
            if not isinstance(position, dict) or type(position.get("skip")) is not int:
                raise CheckpointError(f"This state is damaged: {position!r}.")

    class Override:
        asked = 0

        @hookimpl
        def interop_checkpointer(self, source: Any) -> Any:
            if isinstance(source, torch.utils.data.DataLoader):
                Override.asked += 1
                return Skipping(source)
            return None

    def loader() -> Any:
        return torch.utils.data.DataLoader(Rows(), batch_size=2)

    built_in = interop_core.to(loader(), "numpy")
    next(built_in)
    assert built_in.state_dict()["source"] != Skipping.name

    registered(Override(), "override")
    it = interop_core.to(loader(), "numpy")
    assert next(it).tolist() == [[0, 0], [1, 1]]
    state = it.state_dict()
    assert state["source"] == Skipping.name and state["position"] == {"skip": 1}
    again = interop_core.to(loader(), "numpy")
    again.load_state_dict(state)
    assert [b[:, 0].tolist() for b in again] == [[2, 3], [4, 5]]
    assert Override.asked == 2


def test_a_plugin_may_refuse_to_checkpoint_a_source(registered: Any) -> None:
    class Refuses:
        @hookimpl
        def interop_checkpointer(self, source: Any) -> str | None:
            if isinstance(source, Shelf):
                return "a shelf lent by a toy plugin cannot be checkpointed: it is read once"
            return None

    registered(ShelfPlugin(), "shelf")
    registered(Refuses(), "refuses")  # registered later: asked first
    it = interop_core.to(Shelf(3), "numpy")
    assert values(it) == [0, 1, 2]  # iterating needs no checkpointer
    with pytest.raises(CheckpointError, match="lent by a toy plugin cannot be checkpointed"):
        it.state_dict()


def test_a_checkpointer_answer_that_is_neither_is_a_plugin_error(registered: Any) -> None:
    class Wrong:
        @hookimpl
        def interop_checkpointer(self, source: Any) -> Any:
            return 42 if isinstance(source, Shelf) else None

    registered(ShelfPlugin(), "shelf")
    registered(Wrong(), "wrong")
    it = interop_core.to(Shelf(3), "numpy")
    with pytest.raises(PluginError, match="interop_checkpointer hook answered 42"):
        next(it)


class Policy:
    """A third party's worker policy for Shelves: counts its asks and the targets."""

    def __init__(self, plan: WorkersPlan) -> None:
        self.plan = plan
        self.asked: list[str] = []

    @hookimpl
    def interop_worker_policy(self, loader: Any, target: str) -> WorkersPlan | None:
        if not isinstance(loader, Shelf):
            return None
        self.asked.append(target)
        return self.plan


def test_a_worker_policy_answer_is_used(registered: Any) -> None:
    registered(ShelfPlugin(), "shelf")
    said = "toy shelf workers start in the shelf's own pool"
    policy = registered(Policy(WorkersPlan(None, said)), "policy")
    it = interop_core.to(Shelf(2), "numpy")
    assert it.workers == said and [p.workers for p in [iter(it)]] == [said]
    assert policy.asked == ["numpy"]  # once per to(), with the target
    interop_core.to(Shelf(2), "numpy")
    assert policy.asked == ["numpy", "numpy"]
    other = interop_core.to(iter(Shelf(2)), "numpy")  # not the policy's: the built-in's
    assert other.workers == "" and policy.asked == ["numpy", "numpy"]


def test_a_worker_policy_sets_a_dataloader_s_start_method(registered: Any) -> None:
    torch = need("torch")

    class Spawn:
        asked = 0

        @hookimpl
        def interop_worker_policy(self, loader: Any, target: str) -> WorkersPlan | None:
            if isinstance(loader, torch.utils.data.DataLoader) and loader.num_workers:
                Spawn.asked += 1
                return WorkersPlan("spawn", "DataLoader workers start by spawn: our policy.")
            return None

    registered(Spawn(), "spawn")
    dl = torch.utils.data.DataLoader(list(range(4)), batch_size=2, num_workers=2)
    it = interop_core.to(dl, "numpy")  # no pass starts: no worker is started here
    assert it.workers == "DataLoader workers start by spawn: our policy."
    assert dl.multiprocessing_context.get_start_method() == "spawn"
    assert Spawn.asked == 1


def test_a_worker_policy_answer_that_is_no_plan_is_a_plugin_error(registered: Any) -> None:
    registered(ShelfPlugin(), "shelf")
    registered(Policy(("spawn", "no plan")), "bad-policy")  # type: ignore[arg-type]
    with pytest.raises(PluginError, match="interop_worker_policy hook answered"):
        interop_core.to(Shelf(2), "numpy")
