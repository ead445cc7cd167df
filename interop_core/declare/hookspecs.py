"""Every hook a plugin may implement (pluggy hookspecs).

The registry calls the declaration hooks (``interop_frameworks``, ``interop_kinds``,
``interop_converters``) when it is built and again after each ``register()``/
``unregister()``; each returns immutable specs and has no side effects. Questions about one
object (``interop_detect``, ``interop_parse_device``) are ``firstresult`` hooks asked on the
slow path only: the first answer that is not None wins. The built-in plugins answer them
``trylast`` (or, for detection, through their declared specs, which are asked after every
implementation), so a third party's implementation overrides theirs. The iterator kind's
questions (``interop_checkpointer``, ``interop_worker_policy``) are answered alike, asked by
its converter through ``CallContext.hook`` (the registry's hook relay). No hook is called on
the warm path of ``to()``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol

import pluggy

from .records import NamedTuple
from .specs import ConverterSpec, Device, FormSpec, FrameworkSpec, Kind, KindSpec

PROJECT = "interop_core"

#: Marks the hook specifications below (pluggy's ``HookspecMarker`` of the project
#: ``interop_core``); plugins do not need it.
hookspec = pluggy.HookspecMarker(PROJECT)
#: Marks a plugin's implementation of a hook: ``@hookimpl`` above a function named as the
#: hook (``@hookimpl(trylast=True)`` and pluggy's other options apply). pluggy's
#: ``HookimplMarker`` of the project ``interop_core``.
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def interop_frameworks() -> Sequence[FrameworkSpec]:
    """Declare the frameworks this plugin knows.

    Called by the registry once per build (at first use, and after a plugin is registered
    or unregistered). Return a sequence of :class:`~interop_core.FrameworkSpec`; names
    must be unique across plugins, and a conflict names both plugins. Must not import the
    framework.
    """


@hookspec
def interop_converters() -> Sequence[ConverterSpec]:
    """Declare converter edges of the route graph.

    Called by the registry once per build, after ``interop_frameworks``. Return a sequence
    of :class:`~interop_core.ConverterSpec`; each edge's ``source`` and ``target`` must name
    declared frameworks (edges to frameworks nobody declared are dropped with a warning).
    Must not import any framework: converters import inside their bodies.
    """


@hookspec
def interop_kinds() -> Sequence[Kind | KindSpec]:
    """Declare kinds of object (functions, iterators, ...) and the objects of them.

    Called by the registry once per build, after ``interop_frameworks``. Return a sequence
    of :class:`~interop_core.Kind` (what a kind is: its traits, how ``copy=`` and
    ``device=`` apply, ...; arrays are the core's own; several plugins may declare one kind
    alike, a different declaration of a taken name is a conflict) and
    :class:`~interop_core.KindSpec` (how objects of a kind are found; each names a declared
    framework, ``ANY`` for objects of none, or "" for objects that do not say which
    framework they belong to: plain Python callables, where the user passes ``source=``). A
    framework's arrays are its FrameworkSpec. Must not import any framework.
    """


@hookspec
def interop_forms() -> Sequence[FormSpec]:
    """Declare forms of a framework's arrays (a masked array, a sparse layout, ragged rows).

    Called by the registry once per build, after ``interop_frameworks``. Return a sequence
    of :class:`~interop_core.plugin.FormSpec`; each names a declared framework (forms of
    frameworks nobody declared are dropped) and the types its objects have. An object of
    such a type is the framework's array, described (and keyed) as the framework describes
    it plus the form's flags, or by the form's own functions; its opaque flags keep every
    edge that does not name the form (``ConverterSpec.forms``) off it. The converters of a
    form are declared by ``interop_converters`` as usual. Must not import any framework.
    """


@hookspec(firstresult=True)
def interop_detect(obj: Any) -> str | None:
    """Name the framework whose array ``obj`` is, or return None when it is not yours.

    Called by ``to()``/``explain()`` (slow path) the first time an object of ``obj``'s
    class is seen; the answer holds for every object of that class (it is cached per
    type). Asked before the frameworks' declared ``array_types`` and array protocols,
    which answer when every implementation returns None: so a third party can claim a
    class (a wrapper tensor) for a framework whose spec then describes and converts it.
    Must not import a framework.
    """


@hookspec(firstresult=True)
def interop_parse_device(device: Any) -> Device | None:
    """Read a framework's own device object or string as a :class:`~interop_core.Device`.

    Called by ``to()``/``explain()`` (slow path) for a ``device=`` that is neither a Device
    nor a string ``Device.parse`` reads ("cuda:1"), e.g. ``torch.device("cuda", 1)``, a JAX
    device or "/device:GPU:0". Return None for anything that is not yours; the first answer
    that is not None is used. Built-in plugins implement it with ``trylast=True``. Must not
    import a framework: an object of one exists only once it is imported.
    """


# -- run-time hooks of the iterator kind: how a source of batches resumes, and how a data
# loader's workers start. Asked by the converter through ``CallContext.hook`` (the registry's
# hook relay), never on the warm path.


class Checkpointer(Protocol):
    """The position of one source of batches, read and restored: what ``state_dict()`` and
    ``load_state_dict()`` of an iterator converted from it are built on (an answer of
    :func:`~interop_core.declare.hookspecs.interop_checkpointer`). The converted iterator
    asks it for each pass and, after batches are pulled, for the position; it never looks
    inside the source itself."""

    #: What the source is and how it is checkpointed, for messages and the state itself
    #: ("torch DataLoader: the sampler's order and position"): a state is loaded only into
    #: an iterator whose checkpointer has the same name.
    name: str
    #: ``position(n)`` reads no live state of the source: it is right for any ``n`` up to
    #: the batches pulled, at any time. A prefetching iterator then asks it only when
    #: ``state_dict()`` is called, instead of after every batch.
    replayable: bool

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
        advanced. Raises CheckpointError where the source turns out, once asked, unable to
        record this pass (TensorFlow says so only when it saves an iterator): the converted
        iterator raises it from ``state_dict()``; the pass itself goes on.

        A position records what it belongs to (the source's length, sampler, dataset, ...),
        so :meth:`check` refuses one made for something else."""
        ...

    def check(self, position: Any, batches: int | None = None) -> None:
        """Refuse (CheckpointError naming what is wrong) a position :meth:`position` of a
        checkpointer of a source built like this one cannot have made: its structure (keys,
        types, counts in range: ``batches``, the count the state says was handed out, among
        them) and what it belongs to. The one place a position is checked, before the source
        or its framework reads any of it: ``load_state_dict()`` calls it, and :meth:`begin`
        calls it again for a position given to it directly."""
        ...


class WorkersPlan(NamedTuple):
    """How a data loader's worker processes start (an answer of
    :func:`~interop_core.declare.hookspecs.interop_worker_policy`): the multiprocessing
    start method the converter sets as the loader's ``multiprocessing_context`` before any
    pass starts them (None: it sets none), and the sentence that says what they start by and
    why, which the converted iterator's ``.workers`` says ("" for nothing to say)."""

    method: str | None
    sentence: str


@hookspec(firstresult=True)
def interop_checkpointer(source: Any) -> Checkpointer | str | None:
    """Say how an iterator converted from ``source`` (a data loader, a dataset, an iterator
    of batches) records and restores its position, or return None when it is not yours.

    Asked once per converted iterator, when it first needs it (its first pass,
    ``state_dict()`` or ``load_state_dict()``), not by ``to()``. Return a
    :class:`Checkpointer`, or a sentence saying why ``source`` cannot be checkpointed and
    what the user can do (``state_dict()`` raises it as a CheckpointError): never a
    checkpointer whose states resume wrong. The built-in plugins answer ``trylast`` for the
    sources they know and with the reason for any other, so a third party's implementation
    overrides theirs. Must not import a framework ``source`` does not belong to.
    """


@hookspec(firstresult=True)
def interop_worker_policy(loader: Any, target: str) -> WorkersPlan | None:
    """Say how the worker processes of ``loader``, whose batches are being converted to
    framework ``target``, start; or return None when ``loader`` is not yours.

    Asked by ``to()`` (the slow path: iterators are not converted on the warm path) for
    every source it converts to an iterator, before any pass starts the loader's workers.
    Return a :class:`WorkersPlan`; the converter sets its start method, so the hook itself
    changes nothing. The built-in plugins answer ``trylast``: for a torch DataLoader with
    workers, forkserver instead of fork when JAX or TensorFlow is loaded or the target
    (jax#9190), and ``WorkersPlan(None, "")`` (nothing to set or say) for anything else.
    Must not import a framework.
    """
