"""to() with a typed target token: built-in and a plugin's own (golden: mypy.txt, pyright.txt).

Never run: the type checkers read it (tests/test_typing.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, reveal_type

import numpy as np
import numpy.typing as npt
import torch

from interop_core import Target, to
from interop_core.targets import CUPY, JAX, NUMPY, PYARROW, SCIPY, TENSORFLOW, TORCH

from .myframework import MYARRAY, MyArray


def tokens(
    a: npt.NDArray[np.float32],
    t: torch.Tensor,
    m: MyArray,
    batches: Iterator[torch.Tensor],
    anything: Target[Any],
) -> None:
    reveal_type(TORCH)
    reveal_type(to(a, TORCH))
    reveal_type(to(t, NUMPY))
    reveal_type(to(a, JAX))
    reveal_type(to(a, TENSORFLOW))
    reveal_type(to(a, CUPY))
    reveal_type(to(a, PYARROW))
    reveal_type(to(t, SCIPY))
    reveal_type(to({"w": a, "b": a}, TORCH))
    reveal_type(to([a, a], JAX))
    reveal_type(to(batches, NUMPY))
    reveal_type(to(a, anything))
    # a plugin's token, and its array as a source
    reveal_type(MYARRAY)
    reveal_type(to(a, MYARRAY))
    reveal_type(to({"w": t}, MYARRAY))
    reveal_type(to(m, "torch"))
    reveal_type(to(m, TORCH))
    # a token is a str: anything that takes a name takes it
    name: str = TORCH
    reveal_type(name.upper())
