"""Checkpointers for a Hugging Face ``datasets.IterableDataset`` and a torch DataLoader over
one (single-process): the dataset's own ``state_dict()``, resumed on a copy of the dataset
(``load_state_dict()`` of the user's own would make every later pass of that epoch start
there too, as Hugging Face defines it).

Refused: datasets with a shuffle buffer (``.shuffle(buffer_size=...)``), whose buffered
examples are not in the state (huggingface/datasets#6658: a resumed pass refills the
buffer and yields other examples); a DataLoader with workers (each worker iterates its own
copy of the dataset, whose state the main process never sees). Imports no framework at
module level (torch inside the DataLoader's functions).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .checkpoints import (
    MADE_FOR,
    Watched,
    count,
    damaged,
    fields,
    flag,
    made_for,
    restoring,
    same,
    show,
)

HF_NAME = "Hugging Face IterableDataset: its own state_dict()"
HF_LOADER_NAME = "torch DataLoader over a Hugging Face IterableDataset: the dataset's state_dict()"

#: Parts of a dataset's pipeline whose state is not all in ``state_dict()``.
_UNRECORDED = {"BufferShuffledExamplesIterable": "a shuffle buffer (.shuffle(buffer_size=...))"}


def _unrecorded(dataset: Any) -> str | None:
    """What in ``dataset``'s pipeline its state_dict() does not record, if anything."""
    todo = [getattr(dataset, "_ex_iterable", None)]
    while todo:
        node = todo.pop()
        if node is None:
            continue
        found = _UNRECORDED.get(type(node).__name__)
        if found is not None:
            return found
        todo.append(getattr(node, "ex_iterable", None))
        todo.extend(getattr(node, "ex_iterables", None) or ())
    return None


def _refusal(dataset: Any, what: str) -> str | None:
    found = _unrecorded(dataset)
    if found is None:
        return None
    return (
        f"{what} cannot be checkpointed: its pipeline has {found}, whose examples are not in "
        "the dataset's state_dict() (a resumed pass refills the buffer and yields other "
        "examples: huggingface/datasets#6658). Shuffle before streaming (a shuffled "
        "map-style Dataset, or .shuffle() of its shards only), or resume without the buffer"
    )


def hf_checkpointer(dataset: Any) -> HFCheckpointer | str:
    return _refusal(dataset, "this Hugging Face IterableDataset") or HFCheckpointer(dataset)


def hf_loader_checkpointer(loader: Any) -> HFCheckpointer | str:
    if loader.num_workers > 0:
        return (
            f"a torch DataLoader with num_workers={loader.num_workers} over a Hugging Face "
            "IterableDataset cannot be checkpointed: each worker iterates its own copy of the "
            "dataset, whose state the main process never sees. Use torchdata's "
            "StatefulDataLoader (it gathers the workers' dataset states), or num_workers=0"
        )
    refused = _refusal(loader.dataset, "a torch DataLoader over this Hugging Face IterableDataset")
    return refused or HFLoaderCheckpointer(loader)


def _copy(dataset: Any) -> Any:
    """A shallow copy of ``dataset`` with a ``__dict__`` of its own (``copy.copy`` of a
    Hugging Face IterableDataset shares the original's: its ``__getstate__`` returns it)."""
    new = object.__new__(type(dataset))
    new.__dict__.update(dataset.__dict__)
    return new


class _Live:
    """The dataset a pass iterates, and whether the pass has started (Hugging Face sets up
    the pass's state at its first ``next()``)."""

    __slots__ = ("dataset", "started")

    def __init__(self, dataset: Any) -> None:
        self.dataset, self.started = dataset, False


class HFCheckpointer:
    """A Hugging Face IterableDataset's passes: ``begin(None)`` iterates the dataset itself;
    a state is its ``state_dict()`` (with the epoch); ``begin(state)`` iterates a copy of
    the dataset with the state loaded and the state's epoch set (so the user's dataset and
    its epoch are left as they were)."""

    name = HF_NAME
    replayable = False

    def __init__(self, source: Any) -> None:
        self.source = source
        self._live = _Live(self._dataset())

    def _dataset(self) -> Any:
        return self.source

    def _iterate(self, dataset: Any) -> Iterator[Any]:
        """A pass over ``dataset`` (the source's own, or a resumed copy)."""
        return iter(dataset)

    def begin(self, state: dict[str, Any] | None) -> Iterator[Any]:
        dataset = self._dataset()
        if state is not None:
            self.check(state)
            dataset = _copy(dataset)
            # Its own epoch: set_epoch() would change the value it shares with the user's.
            dataset._epoch = state["epoch"]
            try:
                dataset.load_state_dict(state["state"])
            except Exception as exc:  # Hugging Face's words, as a CheckpointError
                raise restoring("Hugging Face datasets", exc) from exc
        live = self._live = _Live(dataset)
        return Watched(self._iterate(dataset), first=lambda: setattr(live, "started", True))

    def position(self, produced: int) -> dict[str, Any]:
        live = self._live
        dataset = live.dataset
        if live.started:
            state = dataset.state_dict()
        else:
            # Not started: where the pass will start (a state loaded for this epoch, or the
            # beginning), not the state the previous pass left.
            state = getattr(dataset, "_starting_state_dict", None)
            if state is not None and state.get("epoch") != dataset.epoch:
                state = None
        return {"state": state, "epoch": dataset.epoch, MADE_FOR: self._identity()}

    def _identity(self) -> dict[str, Any]:
        """What a state compares with the dataset it resumes: its shards, its columns and
        the steps of its pipeline (a state of another pipeline would resume elsewhere)."""
        dataset = self._dataset()
        steps: list[str] = []
        node = getattr(dataset, "_ex_iterable", None)
        while node is not None and len(steps) < 1000:
            steps.append(type(node).__name__)
            node = getattr(node, "ex_iterable", None)
        return {
            "shards": getattr(dataset, "num_shards", None),
            "features": repr(dataset.features),
            "steps": steps,
        }

    def check(self, position: Any, batches: int | None = None) -> None:
        """A Hugging Face state checked against the dataset's own (its keys, the kinds of
        its steps, counts that are counts): Hugging Face reads it without checking, and
        ignores (restarts the pass) a state whose epoch is not the dataset's."""
        fields(position, "its position", ("state", "epoch", MADE_FOR))
        made_for(position, self._identity(), "the same dataset, shards and steps")
        epoch = count(position["epoch"], "its epoch")
        state = position["state"]
        if state is None:  # the start of a pass
            if batches:
                raise damaged(f"it counts {batches} batches handed out, and has no dataset state")
            return
        where = "its dataset state"
        fields(state, where, ("examples_iterable", "epoch"))
        if count(state["epoch"], f"{where}'s epoch") != epoch:
            raise damaged(f"{where} is of epoch {state['epoch']}, and its position of {epoch}")
        own = getattr(self._dataset(), "_state_dict", None)
        template = own.get("examples_iterable") if isinstance(own, dict) else None
        shards = getattr(self._dataset(), "num_shards", None)
        _like(state["examples_iterable"], template, f"{where}['examples_iterable']", shards)


def _like(value: Any, template: Any, where: str, shards: int | None, depth: int = 0) -> None:
    """``value`` (part of a state) shaped as ``template`` (the same part of the dataset's
    own state): the same keys, the same kinds of steps, counts where it has counts. Where
    the template has None (a previous state not taken yet), any dict of such values."""
    if depth > 64:
        raise damaged(f"{where} nests deeper than any state does")
    if isinstance(template, dict):
        fields(value, where, template)
        for key, part in template.items():
            here = f"{where}[{key!r}]"
            if key == "type":
                if not same(value[key], part):
                    raise damaged(f"{here} is {show(value[key])}; this dataset's is {part!r}")
            elif key == "previous_state":
                # A copy of the step's own examples_iterable state, kept at a chunk's start
                # (None before the first).
                if value[key] is not None:
                    inner = template.get("examples_iterable")
                    _like(value[key], inner if inner is not None else part, here, shards, depth + 1)
            else:
                _like(value[key], part, here, shards, depth + 1)
    elif isinstance(template, list):
        if not isinstance(value, list) or len(value) != len(template):
            raise damaged(f"{where} is {show(value)}; this dataset's has {len(template)} parts")
        for i, part in enumerate(template):
            _like(value[i], part, f"{where}[{i}]", shards, depth + 1)
    elif template is None:
        if isinstance(value, (dict, list)):
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, part in items:
                _like(part, _plain(part), f"{where}[{key!r}]", shards, depth + 1)
        elif value is not None:
            _like(value, _plain(value), where, shards, depth + 1)
    elif isinstance(template, bool):
        flag(value, where)
    elif isinstance(template, int):
        at_most = shards if where.endswith("['shard_idx']") and isinstance(shards, int) else None
        if at_most is None:
            count(value, where, 2**63 - 1)
        else:
            count(value, where, at_most, "shards of this dataset")
    elif not isinstance(value, type(template)):
        raise damaged(f"{where} is {show(value)}, not a {type(template).__name__}")


def _plain(value: Any) -> Any:
    """The template a value of a part with no template is checked against: itself, with
    its numbers as counts (a state holds no negative or fractional number)."""
    if isinstance(value, (dict, list)):
        return None
    if isinstance(value, (bool, int, str)) or value is None:
        return value
    raise damaged(f"a Hugging Face state holds {show(value)}, which no such state does")


class HFLoaderCheckpointer(HFCheckpointer):
    """A single-process torch DataLoader over a Hugging Face IterableDataset: the dataset's
    state after the examples of the batches produced (the DataLoader pulls exactly
    batch_size of them per batch). A resumed pass is a new DataLoader over a resumed copy of
    the dataset, with the loader's batching and collate_fn (and a private generator for the
    base seed it draws, so the user's global RNG is not touched)."""

    name = HF_LOADER_NAME

    def _dataset(self) -> Any:
        return self.source.dataset

    def _iterate(self, dataset: Any) -> Iterator[Any]:
        loader = self.source
        if dataset is loader.dataset:
            return iter(loader)
        import torch

        resumed = type(loader)(
            dataset,
            batch_size=loader.batch_size,
            drop_last=loader.drop_last,
            collate_fn=loader.collate_fn,
            pin_memory=loader.pin_memory,
            timeout=loader.timeout,
            generator=torch.Generator(),
        )
        return iter(resumed)
