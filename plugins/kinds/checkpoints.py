"""Where a source of batches is, and how to start it again there: what ``state_dict()`` and
``load_state_dict()`` of a converted iterator are built on.

A :class:`Checkpointer` is made for one source (a DataLoader, a StatefulDataLoader, a Grain
iterator, a Hugging Face IterableDataset, ...) by :func:`checkpointer`. The converted
iterator (``Batches`` in iterators.py) asks it for each pass and, after batches are pulled,
for the position; it never looks inside the source itself. A source that cannot checkpoint
gets the reason instead, which ``state_dict()`` raises: never a state that resumes wrong.
Imports no framework at module level.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol


class Checkpointer(Protocol):
    """The position of one source of batches, read and restored."""

    #: What the source is and how it is checkpointed, for messages and the state itself
    #: ("torch DataLoader: the sampler's order and position").
    name: str

    def begin(self, state: dict[str, Any] | None) -> Iterator[Any]:
        """Start a pass over the source. ``state`` None: a new pass, drawing its randomness
        exactly as iterating the source itself would (a user who never asks for a state sees
        the same batches as without interop_core). Else resume where :meth:`position` said:
        the pass yields the batch after the ones counted in the state."""
        ...

    def position(self, produced: int) -> dict[str, Any]:
        """The state of the current pass after it produced ``produced`` batches (the last
        ``begin`` included those a resumed pass skipped): a plain picklable dict that
        :meth:`begin` of a checkpointer of a source built the same way, in another process,
        resumes from. Called on the thread that pulls batches, right after a batch (or right
        after ``begin`` with the count it starts at), never while the pass is being
        advanced."""
        ...


def checkpointer(source: Any) -> Checkpointer | str:
    """The checkpointer for ``source``, or the reason it cannot be checkpointed (said by
    ``state_dict()``: what the source is, why, and what the user can do)."""
    return (
        f"a {type(source).__qualname__} cannot be checkpointed: interop_core does not know "
        "how to record its position"
    )
