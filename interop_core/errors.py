"""The error hierarchy: every error interop_core raises is an :class:`InteropError`.

Each error also subclasses the builtin a caller would already catch for the same
failure (``LookupError``, ``ImportError``, ``BufferError``, ``TypeError``), and its
message says what failed, why, and what the user can do about it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import NamedTuple


class InteropError(Exception):
    """Base class of every error raised by interop_core."""

    # TensorFlow's AutoGraph replaces an exception raised in a @tf.function with its own
    # StagingError unless the exception has this attribute (tensorflow/python/autograph/
    # impl/api.py, _attach_error_metadata; TF marks its own UnliftableError so): users
    # catch the InteropError itself, with its message unchanged.
    ag_pass_through = True


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


class RefusedEdge(NamedTuple):
    """One refused converter and why."""

    converter: str
    plugin: str
    #: "source->target"
    edge: str
    reason: str

    def __str__(self) -> str:
        return f"  - {self.converter} [{self.edge}] from plugin {self.plugin!r}: {self.reason}"


#: A refusal reason starting with this means "another variant of this edge handles such
#: arrays": kept in ``.refused`` but left out of messages.
VARIANT = "handles only"
#: How an opt-in edge that was not asked for refuses (``ConverterSpec.opt_in``).
ON_REQUEST = "taken only on request"


def _shown(refused: Sequence[RefusedEdge]) -> list[RefusedEdge]:
    """The refusals worth listing: never variant mismatches, and edges taken only on request
    only when nothing else refused (then passing the option is the way)."""
    shown = [r for r in refused if not r.reason.startswith(VARIANT)]
    decisive = [r for r in shown if not r.reason.startswith(ON_REQUEST)]
    return decisive or shown


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
        shown = _shown(self.refused if relevant is None else relevant)
        lead = f": {shown[0].reason}" if shown else ""
        tail = f"\n{advice}" if advice else ""
        super().__init__(f"No route {what}{lead}.\nConverters refused:\n{_listing(shown)}{tail}")


class CopyRequiredError(InteropError, BufferError):
    """copy=False was asked but every route copies; the message says why each edge refused."""

    def __init__(
        self,
        what: str,
        refused: Sequence[RefusedEdge],
        relevant: Sequence[RefusedEdge] | None = None,
    ) -> None:
        self.refused = list(refused)
        shown = _shown(self.refused if relevant is None else relevant)
        super().__init__(
            f"Cannot convert {what} without a copy (copy=False). Zero-copy converters refused:\n"
            f"{_listing(shown)}\nPass copy=None to allow a copy, or copy=True to force one."
        )


class InvalidArrayError(InteropError, ValueError):
    """A producer describes an array that cannot exist (a negative or overflowing shape, a
    NULL pointer with data, memory past the exporter's length): refused before any framework
    reads it, since frameworks crash on such input."""


class ConversionError(InteropError, RuntimeError):
    """A converter failed at run time with an error the router could not route around."""

    # TF's autograph re-raises an exception met while tracing as its own type only when
    # that type's __init__ is Exception's (RuntimeError's is not): keep the type intact.
    __init__ = Exception.__init__


class PluginError(InteropError):
    """A plugin is broken or conflicts with another; names the plugin and its distribution."""


class UnsupportedTransformError(InteropError, NotImplementedError):
    """A converted function met a transformation its bridge cannot carry (jax.vmap or
    forward-mode through call_tf, ...); the message names it and what to do instead."""

    __init__ = Exception.__init__  # see ConversionError


class OptionError(InteropError, TypeError):
    """An argument of ``to()``/``explain()`` has a wrong value or is unknown."""


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
