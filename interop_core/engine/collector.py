"""Python's cyclic garbage collector, paused while the registry is built.

A build (the engine's modules, the plugins, their specs, the graph) allocates some tens of
thousands of objects that live as long as the registry and hold no garbage cycles. Each 700
allocations start a collection, and every tenth of those a wider one; a full pass walks
every tracked object of the process, and after ``import torch`` there are ~175,000. Measured
here: 22-23 collections during the first ``to()`` of a process that imported numpy and
torch took 96-144 ms of its 180-244 ms. Paused, the same call makes none, and the objects
it made are collected as usual afterwards (Mercurial pauses the collector the same way
around building its large parsed structures, ``mercurial.util.nogc``).
"""

from __future__ import annotations

import gc


class paused_collection:  # lower case: used like a function, ``with paused_collection():``
    """Pause the collector for a ``with`` block; the outermost block resumes it, and only
    if it ran before (a program that turned it off keeps it off)."""

    __slots__ = ("_resume",)

    def __enter__(self) -> None:
        self._resume = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc_info: object) -> None:
        if self._resume:
            gc.enable()
