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

from .checkpoints import Watched

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
            dataset = _copy(dataset)
            # Its own epoch: set_epoch() would change the value it shares with the user's.
            dataset._epoch = int(state["epoch"])
            dataset.load_state_dict(state["state"])
        live = self._live = _Live(dataset)
        return Watched(self._iterate(dataset), first=lambda: setattr(live, "started", True))

    def position(self, produced: int) -> dict[str, Any]:
        live = self._live
        dataset = live.dataset
        if live.started:
            return {"state": dataset.state_dict(), "epoch": dataset.epoch}
        # Not started: where the pass will start (a state loaded for this epoch, or the
        # beginning), not the state the previous pass left.
        start = getattr(dataset, "_starting_state_dict", None)
        if start is not None and start.get("epoch") != dataset.epoch:
            start = None
        return {"state": start, "epoch": dataset.epoch}


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
