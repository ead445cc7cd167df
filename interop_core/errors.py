"""The error hierarchy: every error interop_core raises is an :class:`InteropError`.

Each error also subclasses the builtin a caller would already catch for the same
failure (``LookupError``, ``ImportError``, ``BufferError``, ``TypeError``), and its
message says what failed, why, and what the user can do about it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


class InteropError(Exception):
    """Base class of every error raised by interop_core."""


class UnknownFrameworkError(InteropError, LookupError):
    """A target names no registered framework; the message suggests close names."""

    def __init__(self, name: str, known: Iterable[str]) -> None:
        import difflib

        known = sorted(set(known))
        close = difflib.get_close_matches(name.lower(), known, n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        super().__init__(
            f"Unknown framework {name!r}.{hint} Known frameworks and aliases: "
            f"{', '.join(known)}. A plugin can add more (see README, 'Writing a plugin')."
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


class RefusedEdge(tuple[str, str, str, str]):
    """One refused converter: (converter, plugin, edge "a->b", reason)."""

    __slots__ = ()

    def __str__(self) -> str:
        name, plugin, edge, reason = self
        return f"  - {name} [{edge}] from plugin {plugin!r}: {reason}"


#: A refusal reason starting with this means "another variant of this edge handles such
#: arrays": kept in ``.refused`` but left out of messages.
VARIANT = "handles only"


def _refusals(refused: Sequence[RefusedEdge]) -> str:
    shown = [str(r) for r in refused if not r[3].startswith(VARIANT)]
    return "\n".join(shown) if shown else "  (no converter leads there)"


class NoRouteError(InteropError, LookupError):
    """No chain of converters reaches the target; lists every refused edge and why."""

    def __init__(self, what: str, refused: Sequence[RefusedEdge], advice: str = "") -> None:
        self.refused = list(refused)
        tail = f"\n{advice}" if advice else ""
        super().__init__(f"No route {what}. Converters refused:\n{_refusals(self.refused)}{tail}")


class CopyRequiredError(InteropError, BufferError):
    """copy=False was asked but every route copies; the message says why each edge refused."""

    def __init__(self, what: str, refused: Sequence[RefusedEdge]) -> None:
        self.refused = list(refused)
        super().__init__(
            f"Cannot convert {what} without a copy (copy=False). Zero-copy converters refused:\n"
            f"{_refusals(self.refused)}\nPass copy=None to allow a copy, or copy=True to force one."
        )


class ConversionError(InteropError, RuntimeError):
    """A converter failed at run time with an error the router could not route around."""


class PluginError(InteropError):
    """A plugin is broken or conflicts with another; names the plugin and its distribution."""
