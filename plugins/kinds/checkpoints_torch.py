"""The checkpointer of a map-style torch DataLoader: where its pass draws its randomness
and how many batches it produced (a DataLoader over a Hugging Face IterableDataset is in
checkpoints_hf).

Only :func:`.checkpoints.checkpointer` imports this module, for a DataLoader (so torch is
imported already); torch itself is imported inside the functions, as everywhere in the
plugins.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Iterator
from typing import Any

from interop_core.plugin import CheckpointError

from .checkpoints import Watched, count, damaged, fields, flag, length, same, show

#: Samplers whose order comes from their own fields and the generators they draw from, so
#: a copy with private generators replays it (subclasses may draw otherwise: refused).
SAMPLERS = {
    "torch.utils.data.sampler.SequentialSampler": "sequential",
    "torch.utils.data.sampler.RandomSampler": "random",
    "torch.utils.data.sampler.SubsetRandomSampler": "draws",
    "torch.utils.data.sampler.WeightedRandomSampler": "draws",
    "torch.utils.data.distributed.DistributedSampler": "epoch",
}
BATCH_SAMPLER = "torch.utils.data.sampler.BatchSampler"
#: Plain iterables of indices (or of index lists): the same order every pass.
FIXED = (list, tuple, range)

MAP_NAME = (
    "torch DataLoader over a map-style dataset: the sampler's seed and position "
    "(randomness inside the dataset, such as augmentations, is not restored)"
)


def type_path(obj: Any) -> str:
    cls = type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


def _sampler_kind(sampler: Any) -> str | None:
    """How ``sampler`` draws its order (a key of the replay), or None for an unknown one."""
    if type(sampler) in FIXED:
        return "fixed"
    return SAMPLERS.get(type_path(sampler))


def map_checkpointer(loader: Any) -> MapLoaderCheckpointer | str:
    """The checkpointer of a map-style DataLoader, or why its order cannot be replayed."""
    if loader.num_workers > 0 and not getattr(loader, "in_order", True):
        return (
            "a torch DataLoader with in_order=False cannot be checkpointed: its batches come "
            "in the order its workers finish them, which no run repeats. Use in_order=True"
        )
    batch_sampler = loader.batch_sampler
    if batch_sampler is not None and type(batch_sampler) not in FIXED:
        if type_path(batch_sampler) != BATCH_SAMPLER:
            return (
                f"the DataLoader's batch_sampler is a {type(batch_sampler).__name__}, whose "
                "order interop_core cannot replay (it knows torch's BatchSampler over torch's "
                "samplers); use torchdata's StatefulDataLoader, whose state_dict() asks the "
                "sampler itself"
            )
        sampler = batch_sampler.sampler
    elif batch_sampler is None:
        sampler = loader.sampler
    else:
        sampler = None  # a fixed list of index lists
    if sampler is not None and _sampler_kind(sampler) is None:
        return (
            f"the DataLoader's sampler is a {type(sampler).__name__}, whose order "
            "interop_core cannot replay (it knows torch's Sequential, Random, SubsetRandom, "
            "WeightedRandom and Distributed samplers, and lists); use torchdata's "
            "StatefulDataLoader, whose state_dict() asks the sampler itself"
        )
    return MapLoaderCheckpointer(loader, sampler)


def _state_of(generator: Any) -> bytes:
    return bytes(generator.get_state().numpy().tobytes())


def _check_generator(value: Any, where: str) -> None:
    """``value``: the bytes of a torch.Generator's state, which torch takes back."""
    if not isinstance(value, bytes):
        raise damaged(f"{where} is {show(value)}, not the bytes of a torch generator's state")
    try:
        _generator(value)
    except (RuntimeError, TypeError, ValueError) as exc:
        raise damaged(f"{where} is not a torch generator's state ({exc})") from exc


def _generator(state: bytes) -> Any:
    """A private torch.Generator in ``state``."""
    import torch

    g = torch.Generator()
    g.set_state(torch.frombuffer(bytearray(state), dtype=torch.uint8))
    return g


class _Recorded:
    """Where one pass draws its randomness (the states of the generators its sampler and,
    with workers, its workers' base seed draw from, taken right before they draw) and what
    a state checks against the loader it resumes: the fields of every state of the pass."""

    __slots__ = ("fields", "started")

    def __init__(self) -> None:
        self.fields: dict[str, Any] = {}
        self.started = False


class MapLoaderCheckpointer:
    """A map-style DataLoader's passes, resumed by replaying the draws of their sampler on
    private copies of the generators it drew from.

    ``begin(None)`` is ``iter(loader)`` itself (so the batches and the randomness drawn are
    the same as without interop_core); it records, before the pass draws, the states of
    the generators involved: the global one, ``loader.generator`` and the sampler's. A
    state is that record, the sampler's epoch and the batches produced. ``begin(state)``
    replays the draws on private generators (the user's global RNG is never touched),
    skips the first batches' indices without loading them, and loads the rest with a new
    DataLoader that shares the dataset, collate_fn and worker settings (the workers' base
    seed is drawn again from the replayed generator, so ``torch.initial_seed()`` in a
    worker is the same). When the resumed pass ends, the user's own ``loader.generator``
    and ``sampler.generator`` are left where the uninterrupted pass would leave them, so
    later epochs match too (the global RNG is the user's to restore).

    Not restored: randomness the dataset draws itself (a worker's RNG has moved on by the
    batches it loaded before; batches go to the workers in turn from the resumed batch on).
    """

    name = MAP_NAME
    #: A state is the pass's recorded draws and a count: right for any count, at any time.
    replayable = True

    def __init__(self, loader: Any, sampler: Any) -> None:
        self.loader = loader
        self._sampler = sampler  # the one that draws indices (inside the BatchSampler)
        self._kind = "fixed" if sampler is None else _sampler_kind(sampler)
        self._pass = _Recorded()

    # -- what the pass draws from ---------------------------------------------------------

    def _uses_global(self) -> bool:
        """Whether the sampler draws from the global RNG (the base seed is seen apart)."""
        return self._kind in ("random", "draws") and self._sampler.generator is None

    def _record(self, base: bool) -> dict[str, Any]:
        """The fields of the pass's states, now: the states of the generators it draws
        from (``base``: the workers' base seed is drawn first, by a new multi-process
        iterator), its sampler, length and epoch."""
        import torch

        loader, sampler, kind = self.loader, self._sampler, self._kind
        own = sampler.generator if kind in ("random", "draws") else None
        rng: dict[str, Any] = {"global": None, "loader": None, "sampler": None, "base": base}
        if self._uses_global() or (base and loader.generator is None):
            rng["global"] = bytes(torch.get_rng_state().numpy().tobytes())
        if loader.generator is not None:
            rng["loader"] = _state_of(loader.generator)
        if own is not None:
            rng["sampler"] = "loader" if own is loader.generator else _state_of(own)
        return {
            "rng": rng,
            **self._identity(),
            "epoch": int(sampler.epoch) if kind == "epoch" else None,
        }

    def _identity(self) -> dict[str, Any]:
        """What a state compares with the loader it resumes (its order would not be this
        one's otherwise): the sampler, the number of batches and of samples, the batching."""
        loader, sampler = self.loader, self._sampler
        return {
            "sampler": "fixed" if sampler is None else type(sampler).__qualname__,
            "length": len(loader),
            "samples": length(loader.dataset),
            "batch_size": loader.batch_size,
            "drop_last": bool(loader.drop_last),
        }

    # -- the protocol -----------------------------------------------------------------------

    def begin(self, state: dict[str, Any] | None) -> Iterator[Any]:
        if state is not None:
            return self._resume(state)
        loader = self.loader
        record = self._pass = _Recorded()
        if loader.num_workers > 0:
            # The pass draws in iter(): the base seed (unless persistent workers are reused),
            # then the sampler's first indices, sent to the workers at once.
            reused = loader.persistent_workers and loader._iterator is not None
            record.fields, record.started = self._record(base=not reused), True
            return iter(loader)
        # A single-process pass's sampler draws at its first next() (the user may draw
        # between iter() and next()): the generators' states are recorded right before.
        return Watched(iter(loader), first=lambda: self._first_draw(record))

    def _first_draw(self, record: _Recorded) -> None:
        record.fields, record.started = self._record(base=False), True

    def position(self, produced: int) -> dict[str, Any]:
        record = self._pass
        # Before the first batch of a single-process pass the sampler has not drawn yet:
        # the state is that of a pass drawing now.
        fields = record.fields if record.started else self._record(base=False)
        # Each state its own rng dict: one changed by its holder leaves the others as made.
        return {"batches": produced, **fields, "rng": dict(fields["rng"])}

    # -- resuming ---------------------------------------------------------------------------

    def check(self, position: Any, batches: int | None = None) -> None:
        """Refuse a position no pass of a DataLoader built like this one made: damaged
        (keys, types, counts, generator states torch would not take) or made for a
        DataLoader built otherwise (its order would not be this one's: another sampler,
        length, batching, or generators)."""
        identity = self._identity()
        keys = ("batches", "rng", *identity, "epoch")
        state = fields(position, "its DataLoader position", keys)
        for key, has in identity.items():
            if not same(state[key], has):
                raise CheckpointError(
                    f"This state was made for a DataLoader whose {key} is "
                    f"{show(state[key])}; this one's is {has!r}.\nLoad it into an "
                    "iterator over a DataLoader built the same way (dataset, sampler, "
                    "batch_size, drop_last, generator)."
                )
        skip = count(state["batches"], "its count of batches", identity["length"], "batches")
        if batches is not None and skip != batches:
            raise damaged(f"it counts {batches} batches handed out, and its position {skip}")
        rng = fields(state["rng"], "its generators", ("global", "loader", "sampler", "base"))
        base = flag(rng["base"], "its generators' base")
        loader = self.loader
        own = self._sampler.generator if self._draws() else None
        for key in ("loader", "sampler"):
            had = rng[key] is not None
            has = (loader.generator if key == "loader" else own) is not None
            if had != has:
                raise CheckpointError(
                    f"This state was made for a DataLoader {'with' if had else 'without'} a "
                    f"{key} generator; this one has {'one' if has else 'none'}.\nLoad it into "
                    "an iterator over a DataLoader built the same way."
                )
        wants_global = self._uses_global() or (base and loader.generator is None)
        if (rng["global"] is not None) != wants_global:
            raise damaged(
                f"its global generator state is {show(rng['global'])}, where a DataLoader "
                f"built like this one {'draws from' if wants_global else 'does not draw from'}"
                " the global generator"
            )
        for key in ("global", "loader", "sampler"):
            value = rng[key]
            if key == "sampler" and isinstance(value, str) and value == "loader":
                if own is None or own is not loader.generator:
                    raise damaged("its sampler draws from the loader's generator; not so here")
            elif value is not None:
                _check_generator(value, f"its {key} generator state")
        if self._kind == "epoch":
            count(state["epoch"], "its sampler's epoch")
        elif state["epoch"] is not None:
            raise damaged(f"its epoch is {show(state['epoch'])}; this sampler has none")

    def _draws(self) -> bool:
        """Whether the sampler draws from a generator of its own (or the global one)."""
        return self._kind in ("random", "draws")

    def _resume(self, state: dict[str, Any]) -> Iterator[Any]:
        import torch

        self.check(state)
        loader = self.loader
        rng = state["rng"]
        record = self._pass = _Recorded()
        record.started = True
        record.fields = {k: state[k] for k in ("rng", "sampler", "length", "epoch")}
        private = {
            key: _generator(rng[key]) for key in ("global", "loader") if rng[key] is not None
        }
        if isinstance(rng["sampler"], bytes):
            private["sampler"] = _generator(rng["sampler"])
        elif rng["sampler"] == "loader":
            private["sampler"] = private["loader"]
        if rng["base"]:  # the base seed was drawn first, from these: draw it again
            base = private["loader"] if "loader" in private else private["global"]
        else:
            base = torch.Generator()  # a seed no worker of the original pass saw
        skip = int(state["batches"])
        length = max(0, len(loader) - skip)
        order = _Replay(self._index_sampler(private, state["epoch"]), skip, length)
        options: dict[str, Any] = {
            "num_workers": loader.num_workers,
            "collate_fn": loader.collate_fn,
            "pin_memory": loader.pin_memory,
            "timeout": loader.timeout,
            "worker_init_fn": loader.worker_init_fn,
            "multiprocessing_context": loader.multiprocessing_context,
            "generator": base,
            "prefetch_factor": loader.prefetch_factor,
            "pin_memory_device": loader.pin_memory_device,
            "in_order": getattr(loader, "in_order", True),
        }
        if loader.batch_sampler is not None:
            options["batch_sampler"] = order
        else:
            options |= {"batch_size": None, "sampler": order}
        resumed = type(loader)(loader.dataset, **options)
        return Watched(iter(resumed), last=lambda: self._ended(private))

    def _ended(self, private: dict[str, Any]) -> None:
        """At the end of a resumed pass: the user's own generators are set where the
        uninterrupted pass leaves them."""
        loader, sampler = self.loader, self._sampler
        if loader.generator is not None:
            loader.generator.set_state(private["loader"].get_state())
        own = getattr(sampler, "generator", None) if self._kind in ("random", "draws") else None
        if own is not None and own is not loader.generator:
            own.set_state(private["sampler"].get_state())

    def _index_sampler(self, private: dict[str, Any], epoch: int | None) -> Callable[[], Any]:
        """A function making the pass's index sampler afresh: copies of the loader's
        (never the loader's own, which later passes use) drawing from ``private``, called
        when the resumed pass draws (after its base seed, as the original pass drew)."""
        import torch

        loader, sampler, kind = self.loader, self._sampler, self._kind

        def make() -> Any:
            inner = sampler
            if kind == "random" and sampler.generator is None:
                # RandomSampler draws a seed from the global RNG, then a generator of it.
                seed = int(torch.empty((), dtype=torch.int64).random_(generator=private["global"]))
                inner = copy.copy(sampler)
                inner.generator = torch.Generator()
                inner.generator.manual_seed(seed)
            elif kind in ("random", "draws"):
                inner = copy.copy(sampler)
                inner.generator = private["sampler" if sampler.generator is not None else "global"]
            elif kind == "epoch":
                inner = copy.copy(sampler)
                inner.epoch = epoch
            batch_sampler = loader.batch_sampler
            if batch_sampler is None or type(batch_sampler) in FIXED:
                return batch_sampler if batch_sampler is not None else inner
            outer = copy.copy(batch_sampler)
            outer.sampler = inner
            return outer

        return make


class _Replay:
    """The index batches of a resumed pass: the replayed sampler's, less the first
    ``skip`` (indices only: no data is loaded for them)."""

    def __init__(self, make: Callable[[], Any], skip: int, length: int) -> None:
        self._make, self._skip, self._length = make, skip, length

    def __iter__(self) -> Iterator[Any]:
        # A generator, so the sampler draws at the first next(), after the DataLoader's
        # iterator drew the workers' base seed: the order of the original pass's draws.
        yield from itertools.islice(iter(self._make()), self._skip, None)

    def __len__(self) -> int:
        return self._length
