"""Frameworks known by name whose plugins are still to come: asking for one that is not
installed says what to install, instead of "unknown framework"."""

from __future__ import annotations

from interop_core import KnownFramework, hookimpl


@hookimpl
def interop_frameworks() -> list[KnownFramework]:
    """CuPy, by name only."""
    return [
        KnownFramework(
            name="cupy",
            aliases=("cp",),
            install_hint="pip install cupy-cuda12x (or cupy-cuda13x, matching your CUDA)",
        ),
    ]
