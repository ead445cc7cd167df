"""Results assigned to declared types: what must type-check (no error allowed), and what must
not: each line of ``refused()`` is an error its ignore comment silences, and the checkers run
with unused ignores reported as errors (mypy --warn-unused-ignores, pyright
reportUnnecessaryTypeIgnoreComment), so a line that stops being an error fails the test.
``# type: ignore`` lines are errors for both checkers; ``# pyright: ignore`` lines for
pyright only (mypy reads TensorFlow as Any: no types).

Never run: the type checkers read it (tests/test_typing.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import jax
import numpy as np
import numpy.typing as npt
import tensorflow as tf
import torch

from interop_core import Route, explain, to
from interop_core.targets import NUMPY, TENSORFLOW, TORCH


def accepted(
    a: npt.NDArray[np.float32],
    t: torch.Tensor,
    maybe: torch.Tensor | None,
    batch: dict[str, npt.NDArray[np.float32]],
    gen: Iterator[npt.NDArray[np.float32]],
) -> None:
    r1: npt.NDArray[np.float32] = to(t, "numpy")
    r2: npt.NDArray[np.float32] = to(t, NUMPY)
    r3: dict[str, torch.Tensor] = to(batch, TORCH)
    r4: Iterator[jax.Array] = to(gen, "jax")
    r5: torch.Tensor | None = to(maybe, "torch") if maybe is not None else None
    r6: torch.Tensor = to(a, "torch", dtype="float64", copy=True)
    r7: object = to(maybe, "torch")
    r8: tf.Tensor = to(a, TENSORFLOW)
    del r1, r2, r3, r4, r5, r6, r7, r8


def refused(
    a: npt.NDArray[np.float32],
    f: Callable[[torch.Tensor], torch.Tensor],
    batch: dict[str, npt.NDArray[np.float32]],
    gen: Iterator[npt.NDArray[np.float32]],
) -> None:
    # an array becomes the target's array, nothing else
    w1: jax.Array = to(a, "torch")  # type: ignore[assignment]
    w2: Iterator[Any] = to(a, "torch")  # type: ignore[assignment]
    w3: jax.Array = to(a, TORCH)  # type: ignore[assignment]
    # mypy solves a token's type from a declared type that is generic (dict[str, Any]) before
    # the token's own, fails, and gives Any: it misses this one
    w3b: dict[str, Any] = to(a, TORCH)  # pyright: ignore[reportAssignmentType]
    w4: torch.Tensor = to(a, "tf")  # pyright: ignore[reportAssignmentType]
    w5: torch.Tensor = to(a, TENSORFLOW)  # pyright: ignore[reportAssignmentType]
    w6: tf.Tensor = to(a, "torch")  # pyright: ignore[reportAssignmentType]
    # a function, a dict, an iterator keep their shape
    w7: torch.Tensor = to(f, "torch")  # type: ignore[assignment]
    w8: npt.NDArray[Any] = to(batch, "numpy")  # type: ignore[assignment]
    w9: list[torch.Tensor] = to(batch, "torch")  # type: ignore[assignment]
    w10: torch.Tensor = to(gen, "torch")  # type: ignore[assignment]
    # explain() of a container is a RouteTree
    w11: Route = explain(batch, "torch")  # type: ignore[assignment]
    # a target is a name or a module
    to(a, 3)  # type: ignore[call-overload]
    to(a, TORCH, copy="yes")  # type: ignore[call-overload]
    del w1, w2, w3, w3b, w4, w5, w6, w7, w8, w9, w10, w11
