"""to() and explain() on functions, iterators, containers and tables: the result's shape
(golden: mypy.txt, pyright.txt). Never run: the type checkers read it (tests/test_typing.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple, reveal_type

import numpy as np
import numpy.typing as npt
import pandas as pd
import polars as pl
import tensorflow as tf
import torch
from torch.utils.data import DataLoader

from interop_core import explain, to


class Pair(NamedTuple):
    x: npt.NDArray[np.float32]
    y: npt.NDArray[np.float32]


def shapes(
    a: npt.NDArray[np.float32],
    t: torch.Tensor,
    f: Callable[[torch.Tensor], torch.Tensor],
    module: torch.nn.Module,
    gen: Iterator[npt.NDArray[np.float32]],
    pairs: Iterator[tuple[torch.Tensor, torch.Tensor]],
    loader: DataLoader[Any],
    dataset: tf.data.Dataset,
    iterable: Iterable[torch.Tensor],
    batch: dict[str, npt.NDArray[np.float32]],
    mixed: dict[str, npt.NDArray[np.float32] | int],
    nested: dict[str, dict[str, torch.Tensor]],
    tensors: list[torch.Tensor],
    pair: tuple[npt.NDArray[np.float32], torch.Tensor],
    named: Pair,
    frame: pl.DataFrame,
    pandas_frame: pd.DataFrame,
    series: pl.Series,
    path: Path,
    view: memoryview,
    anything: Any,
    other: object,
) -> None:
    # arrays first: an array is iterable, never an iterator of the target's arrays
    reveal_type(to(t, "jax"))
    reveal_type(to(series, "torch"))
    reveal_type(to(view, "torch"))
    # functions
    reveal_type(to(f, "jax"))
    reveal_type(to(f, "tensorflow", source="torch"))
    reveal_type(to(module, "jax"))
    # iterators and loaders
    reveal_type(to(gen, "torch"))
    reveal_type(to(pairs, "numpy"))
    reveal_type(to(loader, "jax"))
    reveal_type(to(dataset, "torch"))
    reveal_type(to(iterable, "numpy"))
    # containers: arrays in, the target's arrays out; anything else, Any items
    reveal_type(to(batch, "torch"))
    reveal_type(to(mixed, "torch"))
    reveal_type(to(nested, "numpy"))
    reveal_type(to(tensors, "numpy"))
    reveal_type(to(pair, "jax"))
    reveal_type(to(named, "torch"))
    # tables and safetensors files: a dict of columns or tensors
    reveal_type(to(frame, "torch"))
    reveal_type(to(pandas_frame, "numpy"))
    reveal_type(to(path, "jax"))
    # what says nothing
    reveal_type(to(anything, "torch"))
    reveal_type(to(other, "torch"))
    # explain(): a Route, a RouteTree for what to() gives a container of
    reveal_type(explain(t, "jax"))
    reveal_type(explain(f, "tensorflow", source="torch"))
    reveal_type(explain(gen, "torch"))
    reveal_type(explain(loader, "jax"))
    reveal_type(explain(batch, "torch"))
    reveal_type(explain(named, "torch"))
    reveal_type(explain(frame, "torch"))
    reveal_type(explain(path, "jax"))
    reveal_type(explain(other, "torch"))
