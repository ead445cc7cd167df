"""The error hierarchy: every error interop_core raises is an :class:`InteropError`.

Each error also subclasses the builtin a caller would already catch for the same
failure (``LookupError``, ``ImportError``, ``BufferError``, ``TypeError``), and its
message says what failed, why, and what the user can do about it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from .records import NamedTuple


class InteropError(Exception):
    """Base class of every error raised by interop_core."""

    # TensorFlow's AutoGraph replaces an exception raised in a @tf.function with its own
    # StagingError unless the exception has this attribute (tensorflow/python/autograph/
    # impl/api.py, _attach_error_metadata; TF marks its own UnliftableError so): users
    # catch the InteropError itself, with its message unchanged.
    ag_pass_through = True
    #: Where the object that failed sits in the container passed to ``to()``/``explain()``,
    #: keys from the outermost (() for an object passed alone); the message starts with it.
    item_path: tuple[object, ...] = ()


class UnknownFrameworkError(InteropError, LookupError):
    """A target names no registered framework; the message suggests close names.

    ``head`` replaces the message's first sentence (for a target that is not a name at all).
    """

    def __init__(self, name: str, known: Iterable[str], why: str = "", head: str = "") -> None:
        import difflib

        known = sorted(set(known))
        close = difflib.get_close_matches(name.lower(), known, n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close and not why else ""
        why = f" {why}" if why else ""
        # The first line says what is wrong; the long list of names comes after it.
        super().__init__(
            f"{head or f'Unknown framework {name!r}.'}{why}{hint}\nKnown frameworks and "
            f"aliases: {', '.join(known)}. A plugin can add more (see README, 'Writing a "
            "plugin')."
        )
        self.name = name
        self.suggestions = close


class FrameworkNotInstalledError(InteropError, ImportError):
    """A known framework is not installed; the message says how to install it."""

    def __init__(self, name: str, install_hint: str) -> None:
        super().__init__(
            f"Framework {name!r} is known but not installed in this environment. "
            f"Install it with: {install_hint}"
        )
        self.name = name
        self.install_hint = install_hint


class NotAnArrayError(InteropError, TypeError):
    """The object is neither an array of a registered framework nor a container of them."""


class Reason(str):
    """Why a converter refuses an object: the words a user reads, and what kind of refusal
    it is, so the core ranks and filters refusals without reading their text.

    A plain string returned by a predicate counts as category ``OTHER``. ``subject`` names
    what the refusal is about where the category has one (the flag of a ``FLAG`` refusal,
    the switch of a ``GLOBAL_FLAG`` one).
    """

    #: What kind of refusal it is: one of the categories below (``VARIANT``, ``DTYPE``, ...).
    category: str
    #: What the refusal is about, where its category has a subject ("" otherwise).
    subject: str

    def __new__(cls, text: str, category: str = "other", subject: str = "") -> Reason:
        self = super().__new__(cls, text)
        self.category = category
        self.subject = subject
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (Reason, (str(self), self.category, self.subject))


# Refusal categories (Reason.category).
#: Another variant of the same pair handles such objects: kept, never shown.
VARIANT = "variant"
#: An opt-in edge that was not asked for (``ConverterSpec.opt_in``): shown only when
#: nothing else refused (then passing the option is the way).
ON_REQUEST = "on_request"
#: The consumer shares only 64-byte aligned memory and this is not.
UNALIGNED = "unaligned"
#: The object carries a flag the converter cannot take (``subject``: the flag).
FLAG = "flag"
#: A process-wide switch is off (``subject``: its name), e.g. JAX's x64.
GLOBAL_FLAG = "global_flag"
#: The framework cannot hold the object on that device.
DEVICE = "device"
#: The converter cannot take the dtype.
DTYPE = "dtype"
#: The converter cannot take the layout class (see :func:`classify_layout`).
LAYOUT = "layout"
#: The memory is read-only: the producer will not export it, or the consumer would make
#: it writable.
READONLY = "readonly"
#: Anything else (a plain string returned by a predicate).
OTHER = "other"


def category(reason: str) -> str:
    """The category of a refusal (``OTHER`` for a plain string)."""
    return getattr(reason, "category", OTHER)


class RefusedEdge(NamedTuple):
    """One refused converter and why."""

    converter: str
    plugin: str
    #: "source->target"
    edge: str
    reason: str
    #: The framework the edge leads to, and the one it leaves ("" when unknown).
    target: str = ""
    source: str = ""

    @property
    def category(self) -> str:
        """What kind of refusal it is (see :class:`Reason`)."""
        return category(self.reason)

    def __str__(self) -> str:
        return f"  - {self.converter} [{self.edge}] from plugin {self.plugin!r}: {self.reason}"


def shown_refusals(refused: Sequence[RefusedEdge]) -> list[RefusedEdge]:
    """The refusals worth listing: never variant mismatches, and edges taken only on request
    only when nothing else refused (then passing the option is the way)."""
    listed = [r for r in refused if r.category != VARIANT]
    decisive = [r for r in listed if r.category != ON_REQUEST]
    return decisive or listed


def _listing(shown: Sequence[RefusedEdge]) -> str:
    """One line per converter and reason; the edges that share them are listed together."""
    if not shown:
        return "  (no converter leads there)"
    edges: dict[tuple[str, str, str], list[str]] = {}
    for r in shown:
        edges.setdefault((r.converter, r.plugin, r.reason), []).append(r.edge)
    return "\n".join(
        str(RefusedEdge(name, plugin, ", ".join(dict.fromkeys(e)), reason))
        for (name, plugin, reason), e in edges.items()
    )


class NoRouteError(InteropError, LookupError):
    """No chain of converters reaches the target.

    The message leads with the decisive reason (the first refusal of an edge into the
    target) and lists the refusals that matter; ``.refused`` keeps every refusal met.
    """

    def __init__(
        self,
        what: str,
        refused: Sequence[RefusedEdge],
        advice: str = "",
        relevant: Sequence[RefusedEdge] | None = None,
    ) -> None:
        self.refused = list(refused)
        shown = shown_refusals(self.refused if relevant is None else relevant)
        lead = f": {shown[0].reason}" if shown else ""
        tail = f"\n{advice}" if advice else ""
        super().__init__(f"No route {what}{lead}.\nConverters refused:\n{_listing(shown)}{tail}")


#: What makes zero-copy possible, by the category of the refusal that decided: the advice
#: a CopyRequiredError gives before "pass copy=None".
_ZERO_COPY_FIX = {
    UNALIGNED: (
        "For zero-copy, the buffer must start 64-byte aligned: host arrays allocated inside "
        "`with interop_core.aligned_memory():` are (or after interop_core."
        "set_aligned_memory(True)); or make one aligned copy with copy=True and reuse it.\n"
    ),
}


class CopyRequiredError(InteropError, BufferError):
    """copy=False was asked but every route copies; the message says why each edge refused."""

    def __init__(
        self,
        what: str,
        refused: Sequence[RefusedEdge],
        relevant: Sequence[RefusedEdge] | None = None,
    ) -> None:
        self.refused = list(refused)
        shown = shown_refusals(self.refused if relevant is None else relevant)
        fix = _ZERO_COPY_FIX.get(shown[0].category, "") if shown else ""
        super().__init__(
            f"Cannot convert {what} without a copy (copy=False). Zero-copy converters refused:\n"
            f"{_listing(shown)}\n{fix}Pass copy=None to allow a copy, or copy=True to force one."
        )


class InvalidArrayError(InteropError, ValueError):
    """A producer describes an array that cannot exist (a negative or overflowing shape, a
    NULL pointer with data, memory past the exporter's length): refused before any framework
    reads it, since frameworks crash on such input."""


class CheckpointError(InteropError, RuntimeError):
    """A converted iterator cannot record its position (the source has no way to resume)
    or cannot restore one (a state made for another source); the message says which."""


class ConversionError(InteropError, RuntimeError):
    """A converter failed at run time with an error the router could not route around."""

    # TF's autograph re-raises an exception met while tracing as its own type only when
    # that type's __init__ is Exception's (RuntimeError's is not): keep the type intact.
    __init__ = Exception.__init__


class TensorFileError(InvalidArrayError, ConversionError):
    """A tensor file ``to()`` cannot open (a safetensors ``pathlib.Path``): missing, not a
    regular file, not safetensors, or a header that contradicts itself or the file (a
    duplicate name, offsets outside the data, a shape that does not match its bytes, ...).
    The message names the file and the tensor, and says what to do. Also a
    ConversionError, which it was before it had a class of its own."""


class PluginError(InteropError):
    """A plugin is broken or conflicts with another; names the plugin and its distribution."""


class UnsupportedTransformError(InteropError, NotImplementedError):
    """A converted function met a transformation its bridge cannot carry (jax.vmap or
    forward-mode through call_tf, ...); the message names it and what to do instead."""

    __init__ = Exception.__init__  # see ConversionError


class OptionError(InteropError, TypeError):
    """An argument of ``to()``/``explain()`` has a wrong value or is unknown.

    ``unknown`` names the options no converter on the route takes (empty for a wrong value):
    an item of a container may leave out options that only other items' routes take.
    """

    def __init__(self, message: str, unknown: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.unknown = tuple(unknown)


class DeviceError(InteropError, ValueError):
    """The ``device`` argument cannot be understood."""


class ContainerError(InteropError, TypeError):
    """A container could not be rebuilt with its converted items, or contains itself."""


class UnhashableTypeError(InteropError, TypeError):
    """An object's class cannot be hashed (its metaclass's ``__hash__`` raises), so no
    framework can be looked up for it."""


class PluginWarning(UserWarning):
    """Warns that a plugin was dropped or a converter excluded."""


@contextmanager
def framework_failures(what: str) -> Iterator[None]:
    """Turn an exception a framework or producer raises inside the block into a
    ConversionError that starts with ``what`` (InteropErrors pass as they are)."""
    try:
        yield
    except InteropError:
        raise
    except Exception as exc:
        raise ConversionError(f"{what}: {type(exc).__name__}: {exc}") from exc
