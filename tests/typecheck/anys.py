"""to() and explain() on sources whose types hold Any (golden: mypy.txt, pyright.txt).

Never run: the type checkers read it (tests/test_typing.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, reveal_type

import numpy as np
import numpy.typing as npt
import torch

from interop_core import explain, to
from interop_core.targets import JAX, TORCH


def anys(
    anything: Any,
    a: npt.NDArray[Any],
    bare: np.ndarray,
    batch: dict[str, npt.NDArray[Any]],
    loose: dict[str, Any],
    arrays: list[npt.NDArray[Any]],
    loose_list: list[Any],
    pair: tuple[npt.NDArray[Any], npt.NDArray[Any]],
    loose_pair: tuple[Any, Any],
    gen: Iterator[npt.NDArray[Any]],
    loose_gen: Iterator[Any],
    t: torch.Tensor,
) -> None:
    # an array typed with Any inside is an array
    reveal_type(to(a, "torch"))
    reveal_type(to(bare, "torch"))
    reveal_type(to(a, TORCH))
    reveal_type(to(t, "numpy"))
    reveal_type(to(batch, "jax"))
    reveal_type(to(arrays, JAX))
    reveal_type(to(pair, "torch"))
    reveal_type(to(gen, "torch"))
    reveal_type(explain(a, "torch"))
    reveal_type(explain(batch, "torch"))
    # Any says nothing: Any, or Any items
    reveal_type(to(anything, "torch"))
    reveal_type(to(anything, TORCH))
    reveal_type(to(loose, "torch"))
    reveal_type(to(loose_list, "torch"))
    reveal_type(to(loose_pair, "torch"))
    reveal_type(to(loose_gen, "torch"))
    reveal_type(explain(anything, "torch"))
