"""The converted iterator: a source's batches, each converted when it is pulled, with
``prefetch=`` (converted ahead on a thread) and ``state_dict()`` / ``load_state_dict()``
(resuming mid-pass, through the source's checkpointer: the ``interop_checkpointer`` hook).

Nothing is pulled before the user asks, unless ``prefetch=N`` asks for N batches ahead.
Imports no framework.
"""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import os
import queue
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from interop_core.plugin import Checkpointer, CheckpointError, ConversionError

from .checkpoints import checkpointer, count, digest, fields, same, show

#: The key a state made by :meth:`Batches.state_dict` carries, with its format's version.
FORMAT = "interop_core.batches"
#: What the producer thread sends after the last batch.
_END = object()
#: How often (seconds) a blocked producer looks whether it was told to stop.
_POLL = 0.05


class _Item:
    """One batch from the producer: the converted batch or the exception its pull or its
    conversion raised, its index in the pass, and the source's state after it (None when
    the source does not checkpoint)."""

    __slots__ = ("error", "index", "state", "value")

    def __init__(self, index: int, value: Any, error: BaseException | None, state: Any) -> None:
        self.index, self.value, self.error, self.state = index, value, error, state


#: The prefetchers whose threads may be running: stopped at interpreter exit, before the
#: frameworks tear down (a daemon thread killed inside JAX's or torch's C++ code aborts the
#: process: "terminate called without an active exception").
_LIVE: weakref.WeakSet[_Prefetcher] = weakref.WeakSet()
_registered = False


def _stop_all() -> None:
    for prefetcher in list(_LIVE):
        prefetcher.close(timeout=2.0)


def _forked_all() -> None:
    """In a child just forked: every prefetcher it holds lost its thread."""
    for prefetcher in list(_LIVE):
        prefetcher.forked = True


def _track(prefetcher: _Prefetcher) -> None:
    """Keep ``prefetcher`` for :func:`_stop_all`, registered with atexit at the first one:
    by then the frameworks its batches use are imported, and atexit runs the handlers
    registered last first, so the threads stop before those frameworks' own handlers."""
    global _registered
    if not _registered:
        atexit.register(_stop_all)
        os.register_at_fork(after_in_child=_forked_all)
        _registered = True
    _LIVE.add(prefetcher)


class _Prefetcher:
    """A thread that pulls and converts batches while at most ``depth`` of them wait for
    the consumer (a slot is taken before a pull and given back when the batch is handed
    out, so the source is never more than ``depth`` batches ahead).

    It runs in a copy of the caller's context (so ``aligned_memory()``, ``using_registry()``
    and the user's own context variables hold there too) and holds no reference to the
    :class:`Batches` that owns it, so dropping the iterator closes it (``Batches.__del__``).

    A thread does not survive ``os.fork()``: in a forked child (multiprocessing's fork
    start method included), :meth:`get` raises instead of handing out what the queue
    happened to hold and then ending as if the pass were over, whether or not the thread
    had finished before the fork.
    """

    def __init__(
        self,
        source: Iterator[Any],
        convert: Callable[[Any], Any],
        depth: int,
        start: int,
        position: Callable[[int], Any] | None,
    ) -> None:
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._slots = threading.Semaphore(depth)
        self._stop = threading.Event()
        self._depth = depth
        #: The process the thread runs in, and whether this is a child forked from it
        #: (set in the child by an os.register_at_fork hook: no system call per batch).
        self._pid = os.getpid()
        self.forked = False
        context = contextvars.copy_context()
        self._thread = threading.Thread(
            target=context.run,
            args=(self._produce, source, convert, start, position),
            name="interop_core prefetch",
            daemon=True,  # a source blocked forever must not keep the interpreter alive
        )
        _track(self)
        self._thread.start()

    def _produce(
        self,
        source: Iterator[Any],
        convert: Callable[[Any], Any],
        index: int,
        position: Callable[[int], Any] | None,
    ) -> None:
        put = self._queue.put
        while not self._stop.is_set():
            if not self._slots.acquire(timeout=_POLL):
                continue  # the consumer has ``depth`` batches waiting: look at _stop again
            try:
                raw = next(source)
            except StopIteration:
                put(_END)
                return
            except BaseException as exc:  # the source's own error, raised at its batch
                put(_Item(index, None, exc, None))
                return
            index += 1
            try:
                state = _position(position, index) if position is not None else None
                put(_Item(index - 1, convert(raw), None, state))
            except BaseException as exc:
                put(_Item(index - 1, None, exc, None))
                return

    def get(self) -> Any:
        """The next item (an :class:`_Item` or ``_END``), its slot given back; in a
        process forked from the one the thread runs in, the ConversionError saying so
        (before the queue or the slots are touched: their locks may have been held by the
        thread at the fork)."""
        if self.forked:
            raise _forked(self._depth, self._pid)
        while True:
            try:
                item = self._queue.get(timeout=_POLL)
            except queue.Empty:
                if not self._thread.is_alive() and self._queue.empty():
                    return _END  # stopped by close(): nothing more will come
                continue
            self._slots.release()
            return item

    def close(self, timeout: float = 5.0) -> None:
        """Stop the thread: it ends before its next pull (a pull in progress is waited for
        up to ``timeout`` seconds; a source blocked longer is left to its daemon thread)."""
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)

    @property
    def running(self) -> bool:
        """Whether the thread is still alive."""
        return self._thread.is_alive()


def _forked(depth: int, pid: int) -> ConversionError:
    """The error of a prefetching iterator used in a process forked from process ``pid``,
    where its thread runs."""
    return ConversionError(
        f"This converted iterator's prefetch thread (prefetch={depth}) runs in process {pid}, "
        f"and this is process {os.getpid()}, forked from it: a thread does not survive "
        "os.fork(), so the rest of this pass (and the batches pulled ahead) cannot reach this "
        "process.\nMake the iterator in the child (call to() after the fork), or, for an "
        "iterator the child goes on with, convert without prefetch=."
    )


class _Unrecorded:
    """The position a source could not record (its CheckpointError): ``state_dict()``
    raises it, and the pass goes on."""

    __slots__ = ("error",)

    def __init__(self, error: CheckpointError) -> None:
        self.error = error


def _position(position: Callable[[int], Any], produced: int) -> Any:
    """``position(produced)``, or the :class:`_Unrecorded` refusal it raised."""
    try:
        return position(produced)
    except CheckpointError as exc:
        return _Unrecorded(exc)


def make_state(cp: Checkpointer, produced: int, position: Any) -> dict[str, Any]:
    """The state ``state_dict()`` gives: ``produced`` batches handed out, and ``position``,
    the source's own part (a refusal recorded on the prefetch thread is raised here), with
    the digest of them all (:func:`read_state` refuses a state that no longer matches it)."""
    if isinstance(position, _Unrecorded):
        raise position.error
    state = {FORMAT: 1, "source": cp.name, "batches": produced, "position": position}
    state["digest"] = state_digest(state)
    return state


#: The keys of a state, and the one its digest is under.
_STATE_KEYS = (FORMAT, "source", "batches", "position", "digest")


def state_digest(state: dict[str, Any]) -> str:
    """The digest of ``state``'s fields (all but the digest itself)."""
    return digest([state.get(key) for key in _STATE_KEYS[:-1]])


def read_state(cp: Checkpointer, state: Any) -> tuple[int, Any]:
    """The batches counted and the source's part of ``state``, checked: a state made by
    :func:`make_state` for a source checkpointed as ``cp``, unchanged since, is. The one
    place a state is checked (``load_state_dict()`` of every converted iterator calls it),
    before any of it reaches the source: its format, its kind of source, its digest, its
    count, then the source's part, by the checkpointer's ``check()`` (its structure and
    what it was made for). A damaged or foreign state is a CheckpointError here, and the
    iterator it was loaded into is left as it was."""
    if not isinstance(state, dict) or FORMAT not in state:
        raise CheckpointError(
            "load_state_dict() takes a state made by state_dict() of a converted "
            f"iterator; this is a {type(state).__name__} without its {FORMAT!r} key.\n"
            "Pass the dict state_dict() returned (it pickles)."
        )
    version = state[FORMAT]
    if isinstance(version, bool) or not isinstance(version, int) or version != 1:
        raise CheckpointError(
            f"This state is of format {show(version)}; this version of interop_core reads "
            "format 1.\nLoad it with the version of interop_core that saved it, or save it "
            "again with this one."
        )
    if not same(state.get("source"), cp.name):
        raise CheckpointError(
            f"This state was made for another kind of source ({show(state.get('source'))}); "
            f"this iterator's source is {cp.name!r}.\nLoad it into an iterator over a "
            "source built the same way."
        )
    fields(state, "its top level", _STATE_KEYS)
    if not same(state["digest"], state_digest(state)):
        raise CheckpointError(
            "This state is damaged: it does not match its digest, so it changed after "
            "state_dict() made it (a truncated or garbled file, a value edited).\nLoad the "
            "state state_dict() returned, whole and unchanged (pickle or torch.save it as "
            "it is)."
        )
    batches = count(state["batches"], "its count of batches handed out")
    if state["position"] is None:  # taken before any pass began: the start of one
        if batches:
            raise CheckpointError(
                f"This state is damaged: it counts {batches} batches handed out, and has no "
                "position.\nLoad the state state_dict() returned, whole and unchanged."
            )
        return 0, None
    check = getattr(cp, "check", None)  # every checkpointer of interop_core's has one
    if check is not None:
        check(state["position"], batches)
    return batches, state["position"]


def checkpointable(found: Checkpointer | str) -> Checkpointer:
    """``found`` (what the ``interop_checkpointer`` hook gave), or the CheckpointError
    saying why the source has no checkpointer."""
    if isinstance(found, str):
        raise CheckpointError(f"This iterator cannot record its position: {found}.")
    return found


class _Pass:
    """One pass over the source: its iterator, the batches pulled from it (a resumed pass
    counts those it skipped), and the prefetcher when there is one."""

    __slots__ = ("ended", "iterator", "prefetcher", "produced", "state")

    def __init__(self, iterator: Iterator[Any], produced: int, state: Any) -> None:
        self.iterator = iterator
        self.produced = produced
        #: The source's state after the last batch handed to the user (prefetching only).
        self.state = state
        self.prefetcher: _Prefetcher | None = None
        self.ended = False


class Batches:
    """The batches of ``source``, each converted by ``convert`` when it is pulled.

    Over an iterable that restarts (a DataLoader, a Dataset) it is both, and never starts a
    new pass while one it is iterating is in progress:

    - ``iter()`` is a new pass, an iterator of its own, as ``iter(loader)`` is (each
      ``for`` loop an epoch; a loop left with ``break`` and begun again starts a new pass,
      as over the source; two ``iter()`` are two passes);
    - ``next()`` pulls from a pass of the object itself, begun by the first ``next()``; a
      loop over the object then goes on with that pass (``next(it); for b in it:`` sees
      the rest of it, not the start of a new one). Once that pass ended (``next()`` raised
      StopIteration, and keeps raising it), the next ``iter()`` or ``for`` begins a new
      one, so ``for epoch in range(n): for b in it:`` is n passes either way.

    Over an iterator there is one pass, as with the source itself (``iter()`` of it is
    it). ``len()`` and ``reset()`` are the source's, where it has them (DALI iterators).

    ``prefetch=N`` pulls and converts up to N batches ahead on a thread: the same batches
    in the same order; an error of the source or of a conversion is raised at the batch
    where it happened (its note names the index); ``close()`` (or the end of the pass, or
    dropping the iterator) stops the thread.

    ``state_dict()`` is where the batches handed out so far leave the source (prefetched
    ones not counted), as a plain picklable dict; over a restartable source it is the
    latest pass's. ``load_state_dict(state)`` on an iterator over a source built the same
    way makes the next batch pulled (of the next pass, over a restartable source) the one
    after them. A source that cannot checkpoint raises :class:`CheckpointError` saying why.
    ``checkpointer_of(source)`` finds the source's checkpointer: the converter passes the
    ``interop_checkpointer`` hook; the default is the built-in plugins' answer.
    """

    def __init__(
        self,
        source: Iterable[Any],
        convert: Callable[[Any], Any],
        prefetch: int = 0,
        checkpointer_of: Callable[[Any], Checkpointer | str] = checkpointer,
    ) -> None:
        self.source = source
        self._convert = convert
        self._prefetch = prefetch
        #: Finds the source's checkpointer (the ``interop_checkpointer`` hook of the registry
        #: this iterator was converted in), asked once, when a pass or a state needs it.
        self._checkpointer_of = checkpointer_of
        self._checkpointer: Checkpointer | str | None = None
        self._pass: _Pass | None = None
        #: A state loaded for the next pass to resume from: (batches, the source's part).
        self._resume: tuple[int, Any] | None = None
        #: The latest pass iter() made over a restartable source: its state_dict() is ours,
        #: so it is kept (a loop left with ``break`` still says where it stopped) until the
        #: next iter() replaces it.
        self._latest: Batches | None = None
        #: A pass of a restartable source, made by its iter(): iter() of it is itself.
        self._is_pass = False
        #: How a torch DataLoader's workers start, and why ("" for other sources).
        self.workers = ""

    # -- iterating ------------------------------------------------------------------------

    def __iter__(self) -> Batches:
        if self._is_pass:
            return self
        if isinstance(self.source, Iterator):
            current = self._pass
            if current is None or current.ended:
                self._begin()
            elif current.prefetcher is None:
                iter(self.source)  # as before: a consumed DALI iterator resets here
            return self
        current = self._pass
        if current is not None:
            # next() began this pass: a loop goes on with it, never a new pass mid-way;
            # once it ended (StopIteration was raised), iter() begins the next one.
            if current.ended:
                self._begin()
            return self
        # A new pass of its own, as iter() of the source gives. The previous one is not
        # closed here: a pass still held (zip(it, it), nested loops) goes on; one no longer
        # held stops its thread when it is dropped (__del__).
        fresh = Batches(self.source, self._convert, self._prefetch, self._checkpointer_of)
        fresh._checkpointer, fresh._is_pass = self._source_checkpointer(), True
        fresh.workers = self.workers
        fresh._resume = self._resume  # a loaded state: this pass's
        fresh._begin()
        self._resume = None  # begun from it (a state the source refused stays loaded)
        self._latest = fresh
        return fresh

    def __next__(self) -> Any:
        current = self._pass
        if current is None:  # next() before iter(), or after load_state_dict()
            current = self._begin()
        prefetcher = current.prefetcher
        if prefetcher is not None and current.ended:
            raise StopIteration  # closed, or its thread met the end or an error
        if prefetcher is None:
            try:
                raw = next(current.iterator)
            except StopIteration:
                current.ended = True
                raise
            current.produced += 1  # pulled: a failed conversion does not pull it again
            return self._convert(raw)
        item = prefetcher.get()
        if item is _END:
            prefetcher.close()
            current.ended = True
            raise StopIteration
        if item.error is not None:
            prefetcher.close()
            current.ended = True
            error = item.error
            error.add_note(
                f"(raised at batch {item.index} of this pass over "
                f"{type(self.source).__qualname__}, pulled ahead by interop_core's prefetch "
                "thread)"
            )
            raise error
        current.produced, current.state = item.index + 1, item.state
        return item.value

    def _begin(self) -> _Pass:
        """Start a pass: through the checkpointer when the source has one (resumed when a
        state was loaded), else by ``iter(source)``."""
        self._stop()
        cp = self._source_checkpointer()
        start, state = self._resume if self._resume is not None else (0, None)
        iterator = iter(self.source) if isinstance(cp, str) else cp.begin(state)
        self._resume = None  # once begun: a state the source refused stays (and is refused again)
        current = _Pass(iterator, start, None)
        if self._prefetch:
            replayable = not isinstance(cp, str) and cp.replayable
            position = None if isinstance(cp, str) or replayable else cp.position
            if position is not None:
                current.state = _position(position, start)
            current.prefetcher = _Prefetcher(
                iterator, self._convert, self._prefetch, start, position
            )
        self._pass = current
        return current

    # -- checkpoints ----------------------------------------------------------------------

    def _source_checkpointer(self) -> Checkpointer | str:
        if self._checkpointer is None:
            self._checkpointer = self._checkpointer_of(self.source)
        return self._checkpointer

    def _checkpointable(self) -> Checkpointer:
        return checkpointable(self._source_checkpointer())

    def state_dict(self) -> dict[str, Any]:
        """Where the batches handed out so far leave the source: a plain picklable dict
        for :meth:`load_state_dict`. Prefetched batches not yet handed out are not
        counted."""
        cp = self._checkpointable()
        current = self._pass
        latest = self._latest
        if current is None and self._resume is None and latest is not None:
            return latest.state_dict()
        if current is None:
            produced, position = self._resume if self._resume is not None else (0, None)
        elif current.prefetcher is not None and not cp.replayable:
            produced, position = current.produced, current.state
        else:
            produced, position = current.produced, cp.position(current.produced)
        return make_state(cp, produced, position)

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume at ``state`` (from :meth:`state_dict` of an iterator over a source built
        the same way): the next batch pulled is the one after those it counts. A pass in
        progress is closed."""
        resume = read_state(self._checkpointable(), state)
        self.close()
        self._pass, self._latest = None, None
        self._resume = resume

    # -- the rest -------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the prefetch thread, if any (batches it pulled ahead are dropped), and the
        latest pass's over a restartable source."""
        if self._latest is not None:
            self._latest.close()
        self._stop()

    def _stop(self) -> None:
        """Stop this object's own pass's thread (not the latest pass's: a pass made by
        ``iter()`` lives on when the iterable it came from is dropped)."""
        current = self._pass
        if current is not None and current.prefetcher is not None:
            current.prefetcher.close()
            current.ended = True  # what it pulled ahead is dropped: the pass is over

    def __enter__(self) -> Batches:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # at interpreter exit, modules may be gone
            self._stop()

    def __len__(self) -> int:
        return len(self.source)  # type: ignore[arg-type]

    def __bool__(self) -> bool:
        return True  # not len() != 0: an iterator is true, whether its source has a length

    def reset(self) -> None:
        """Reset the source (DALI iterators: start the next epoch)."""
        self.close()
        self._pass = None
        self.source.reset()  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        ahead = f", {self._prefetch} ahead" if self._prefetch else ""
        return f"<Batches of {type(self.source).__qualname__}, converted when pulled{ahead}>"
