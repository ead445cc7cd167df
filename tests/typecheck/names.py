"""to() with a framework's name or alias: the type of its result (golden: mypy.txt, pyright.txt).

Never run: the type checkers read it (tests/test_typing.py).
"""

from __future__ import annotations

import types
from typing import reveal_type

import jax
import numpy as np
import numpy.typing as npt
import pyarrow as pa
import scipy.sparse
import tensorflow as tf
import torch

from interop_core import to


def names(
    a: npt.NDArray[np.float32],
    t: torch.Tensor,
    j: jax.Array,
    g: tf.Tensor,
    either: npt.NDArray[np.int64] | torch.Tensor,
    matrix: scipy.sparse.coo_matrix,
    chunked: pa.ChunkedArray,
    name: str,
) -> None:
    reveal_type(to(t, "numpy"))
    reveal_type(to(t, "np"))
    reveal_type(to(a, "torch"))
    reveal_type(to(a, "pytorch"))
    reveal_type(to(a, "PyTorch"))
    reveal_type(to(a, "jax"))
    reveal_type(to(t, "tensorflow"))
    reveal_type(to(t, "tf"))
    reveal_type(to(a, "cupy"))
    reveal_type(to(a, "cp"))
    reveal_type(to(t, "pyarrow"))
    reveal_type(to(t, "arrow"))
    reveal_type(to(chunked, "pyarrow"))  # a ChunkedArray stays one
    reveal_type(to(t, "scipy"))
    reveal_type(to(t, "scipy.sparse"))
    reveal_type(to(matrix, "scipy"))  # an spmatrix stays one
    # sources of every framework, options, a union of arrays
    reveal_type(to(j, "torch"))
    reveal_type(to(g, "numpy"))
    reveal_type(to(j, "torch", copy=True, device="cpu"))
    reveal_type(to(either, "jax"))
    # targets that say no type: another spelling, a str, a module
    reveal_type(to(a, "Torch"))
    reveal_type(to(a, name))
    reveal_type(to(a, torch))
    module: types.ModuleType = torch
    reveal_type(to(a, module))
