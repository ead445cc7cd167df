"""Issue 18's speed targets (parts 1 and 4), measured side by side in one run.

Every comparison is interleaved (A, B, C, A, B, C, ...) in one process, many short rounds
of about 1.5 ms per side, and reports medians, as in bench.py, whose report includes these
sections. Only the public behaviour is timed (``to()`` against the frameworks' own calls
and against ``to()`` of the leaves), so the same code judges any implementation. Targets:

- into JAX: warm ``to(x, "jax")`` <= 0.4 x ``jax.dlpack.from_dlpack(x)`` on the same
  array x (numpy 64-byte aligned, torch, tensorflow; float32 here, float64 with
  jax_enable_x64 in a subprocess, since that flag is process-wide), both sharing x's memory;
- a batch ``{images, labels}``: ``to(batch, target)`` and each ``next()`` of a converted
  iterator ``to(iter(batches), target)`` <= the two leaves' warm calls + 1.5 µs;
- a 100-leaf pytree (a flat dict, and a nested mix of dicts, lists and tuples):
  ``to(tree, target)`` <= 1.2 x the sum of its leaves' warm calls.

Usage: python benchmarks/speed.py [--quick]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
from bench import data_address, per_call_us, print_sections
from functions import installed, skip_row

from interop_core import to

Row = list[str]
Section = tuple[str, Row, list[Row]]
#: One side of a comparison: one round of ``number`` calls, in µs per call.
Side = Callable[[int], float]

#: µs of calls per side and round: short rounds, many of them (bench.py's baseline rows
#: found 1.5 ms rounds the least noisy on the shared VM).
ROUND_US = 1500.0
#: Rounds per comparison, by --quick.
ROUNDS = {False: 151, True: 41}
#: Marks the JSON line of the --x64-json subprocess.
X64_MARK = "SPEED-X64-JSON "
#: Framework sources of the into-JAX rows.
INTO_JAX = ("numpy", "torch", "tensorflow")

JAX_HEAD = ["source", "from_dlpack µs", "to() µs", "to() / from_dlpack",
            "shares memory (from_dlpack, to())", "<= 0.4x"]  # fmt: skip
BATCH_HEAD = ["batch", "to() µs", "images leaf µs", "labels leaf µs", "leaves µs",
              "overhead µs", "shares memory", "<= leaves + 1.5 µs"]  # fmt: skip
TREE_HEAD = ["tree", "to(tree) µs", "sum of leaf calls µs", "loop of to() µs", "ratio",
             "shares memory", "<= 1.2x"]  # fmt: skip

#: Lines bench.py adds to its report's notes.
NOTES = [
    "- Speed rows (issue 18): each side runs about 1.5 ms of calls per round, the sides "
    "interleaved, 151 rounds (41 in a quick run); medians. Only public calls are timed: "
    "`to()` against `jax.dlpack.from_dlpack` on the same array, and against `to()` of the "
    "leaves, so the same code judges any implementation.",
    "- Into JAX: numpy sources are 64-byte aligned (a view into an over-allocated buffer; "
    "JAX copies, or refuses, other numpy buffers); torch and TensorFlow allocate 64-byte "
    "aligned. 'shares memory' compares the jax.Array's `unsafe_buffer_pointer()` with the "
    "source's own pointer (`ndarray.ctypes.data`, `Tensor.data_ptr()`; TensorFlow has no "
    "public pointer API, so its pointer is read through its DLPack export, "
    "`np.from_dlpack`). A row meets its target only when `to()` shares memory too. The "
    "float64 rows run in a subprocess with `jax_enable_x64` on: the flag is process-wide, "
    "and turning it on here would change what every other row measures.",
    "- Batches: the leaf columns are `to(images, target)` and `to(labels, target)` of the "
    "batch's own arrays, timed in the same rounds as the batch; a converted iterator's row "
    "times `next(it)` of `it = to(iter(batches), target)` over a list of distinct dicts "
    "holding those arrays (a fresh iterator each round, its first batch pulled before the "
    "clock), so it includes the list iterator's own `next`.",
    "- DALI -> TensorFlow: a converted DALI iterator gives each batch of numpy views of "
    "DALI's outputs to `to(batch, 'tensorflow')`; the row times that call on a batch of "
    "DALI's own views (from `to(pipe_def, 'numpy', ...)`). Pulling a whole batch through "
    "the iterator also runs the pipeline (190-370 µs per batch in a trial here), "
    "which hides any µs target, so it is not timed whole.",
    "- Trees: 'sum of leaf calls' adds, per kind of leaf (shape, dtype), the median warm "
    "`to()` of one such leaf times the number of such leaves, all timed in the same rounds "
    "as the tree; 'loop of to()' is `[to(a, target) for a in leaves]`, what a user would "
    "write by hand (informational).",
]


def aligned(shape: tuple[int, ...], dtype: Any, seed: int = 0) -> np.ndarray:
    """A C-contiguous numpy array of ``shape`` starting on a 64-byte boundary (a view into
    an over-allocated buffer), filled with seeded values."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    buf = np.empty(nbytes + 64, np.uint8)
    start = -buf.ctypes.data % 64
    out = buf[start : start + nbytes].view(dtype).reshape(shape)
    values = np.random.default_rng(seed).random(shape) * 100
    out[...] = values.astype(dtype)
    assert out.ctypes.data % 64 == 0 and out.flags.c_contiguous
    return out


def calls(fn: Callable[..., Any], *args: Any) -> Side:
    """A side that calls ``fn(*args)`` (through functools.partial, which adds less to each
    call than a lambda would)."""
    call = functools.partial(fn, *args)
    return lambda number: per_call_us(call, number)


def medians(sides: list[Side], quick: bool) -> list[float]:
    """Medians (µs per call) of ``sides``, each warmed up, then timed in alternating rounds
    of about ``ROUND_US`` each."""
    for side in sides:
        side(3)
    numbers = [
        max(3, round(ROUND_US / statistics.median(side(10) for _ in range(3)))) for side in sides
    ]
    times: list[list[float]] = [[] for _ in sides]
    for _ in range(ROUNDS[quick]):
        for side, number, t in zip(sides, numbers, times, strict=True):
            t.append(side(number))
    return [statistics.median(t) for t in times]


def leaves(tree: Any) -> list[Any]:
    """The arrays of a tree of dicts, lists and tuples, in order."""
    if isinstance(tree, dict):
        return [a for v in tree.values() for a in leaves(v)]
    if isinstance(tree, (list, tuple)):
        return [a for v in tree for a in leaves(v)]
    return [tree]


def shares(result: Any, source: Any) -> bool:
    """Whether every array of ``result`` starts where the same array of ``source`` does."""
    got, had = leaves(result), leaves(source)
    return len(got) == len(had) and all(
        data_address(a) == data_address(b) for a, b in zip(got, had, strict=True)
    )


def yes(flag: bool) -> str:
    return "yes" if flag else "no"


# -- 1. into JAX vs jax.dlpack.from_dlpack ----------------------------------------------


def jax_sources(side: int, dtype: str) -> dict[str, Any]:
    """A ``side`` x ``side`` array of ``dtype`` per installed framework of ``INTO_JAX``."""
    out: dict[str, Any] = {"numpy": aligned((side, side), dtype)}
    if installed("torch"):
        import torch

        out["torch"] = torch.rand((side, side), dtype=getattr(torch, dtype))
    if installed("tensorflow"):
        import tensorflow as tf

        out["tensorflow"] = tf.random.uniform((side, side), dtype=getattr(tf, dtype))
    return out


def into_jax_rows(sizes: tuple[int, ...], dtype: str, quick: bool) -> list[Row]:
    """A row per source and size: warm to(x, "jax") vs jax.dlpack.from_dlpack(x)."""
    import jax

    rows = []
    for side in sizes:
        for src, x in jax_sources(side, dtype).items():
            raw = jax.dlpack.from_dlpack(x)
            ours = to(x, "jax")  # plans once: the warm path is measured
            same = np.array_equal(np.asarray(ours), np.asarray(raw))
            ptr = data_address(x)
            shared = (raw.unsafe_buffer_pointer() == ptr, ours.unsafe_buffer_pointer() == ptr)
            del raw, ours
            t_raw, t_to = medians([calls(jax.dlpack.from_dlpack, x), calls(to, x, "jax")], quick)
            ratio = t_to / t_raw
            met = ratio <= 0.4 and shared[1] and same
            rows.append([f"{src} {side}x{side} {dtype}", f"{t_raw:.2f}", f"{t_to:.2f}",
                         f"{ratio:.2f}x", f"{yes(shared[0])}, {yes(shared[1])}"
                         + ("" if same else "; values differ"),
                         "yes" if met else "NO"])  # fmt: skip
    return rows


def x64_rows(quick: bool) -> list[Row]:
    """The float64 rows, from a subprocess with jax_enable_x64 on."""
    cmd = [sys.executable, os.path.abspath(__file__), "--x64-json"]
    width = len(JAX_HEAD)
    try:
        out = subprocess.run(
            cmd + (["--quick"] if quick else []), capture_output=True, text=True, timeout=300
        )
    except subprocess.TimeoutExpired:
        return [skip_row("float64", "the x64 subprocess timed out", width)]
    found = [line for line in out.stdout.splitlines() if line.startswith(X64_MARK)]
    if out.returncode or not found:
        tail = (out.stderr.strip().splitlines() or ["no output"])[-1]
        return [skip_row("float64", f"x64 subprocess failed: {tail}"[:200], width)]
    rows: list[Row] = json.loads(found[-1][len(X64_MARK) :])
    return rows


def x64_child(quick: bool) -> list[Row]:
    """The subprocess side: jax_enable_x64 on, float64 sources into JAX."""
    import jax

    jax.config.update("jax_enable_x64", True)
    return into_jax_rows((64,), "float64", quick)


def into_jax_section(quick: bool) -> Section:
    title = (
        'Into JAX vs JAX\'s own public call: warm `to(x, "jax")` vs `jax.dlpack.from_dlpack(x)` '
        "on the same array x (numpy 64-byte aligned; float64 rows in a subprocess with "
        "jax_enable_x64 on; µs per call)"
    )
    if not installed("jax"):
        return title, JAX_HEAD, [skip_row("all", "jax is not installed", len(JAX_HEAD))]
    return title, JAX_HEAD, into_jax_rows((64, 1024), "float32", quick) + x64_rows(quick)


# -- 2. batches: one call and a converted iterator ----------------------------------------


def numpy_batch() -> dict[str, Any]:
    return {"images": aligned((16, 3, 8, 8), np.float32), "labels": aligned((16,), np.int32)}


def torch_batch() -> dict[str, Any]:
    import torch

    return {"images": torch.rand(16, 3, 8, 8), "labels": torch.arange(16, dtype=torch.int32)}


def batch_row(name: str, batch: dict[str, Any], target: str, quick: bool) -> Row:
    """``to(batch, target)`` vs the two leaves' warm calls."""
    images, labels = batch["images"], batch["labels"]
    shared = shares(to(batch, target), batch)
    to(images, target), to(labels, target)
    t_batch, t_images, t_labels = medians(
        [calls(to, batch, target), calls(to, images, target), calls(to, labels, target)], quick
    )
    return leaf_row(name, t_batch, t_images, t_labels, shared)


def iterator_row(name: str, batch: dict[str, Any], target: str, quick: bool) -> Row:
    """``next(it)`` of ``it = to(iter(batches), target)`` vs the two leaves' warm calls."""
    images, labels = batch["images"], batch["labels"]
    many = [dict(batch) for _ in range(20_000)]  # distinct dicts over the same arrays
    first = to(iter(many[:1]), target)
    shared = shares(next(first), batch)

    def pull(number: int) -> float:
        number = min(number, len(many) - 1)
        it = to(iter(many[: number + 1]), target)
        next(it)  # the first batch: the clock times warm batches
        return per_call_us(it.__next__, number)

    t_batch, t_images, t_labels = medians(
        [pull, calls(to, images, target), calls(to, labels, target)], quick
    )
    return leaf_row(name, t_batch, t_images, t_labels, shared)


def leaf_row(name: str, t_batch: float, t_images: float, t_labels: float, shared: bool) -> Row:
    t_leaves = t_images + t_labels
    return [name, f"{t_batch:.2f}", f"{t_images:.2f}", f"{t_labels:.2f}", f"{t_leaves:.2f}",
            f"{t_batch - t_leaves:+.2f}", yes(shared),
            "yes" if t_batch <= t_leaves + 1.5 and shared else "NO"]  # fmt: skip


def dali_views() -> tuple[dict[str, Any], Any]:
    """A batch of DALI's own outputs as numpy views (what a converted DALI iterator hands
    to ``to(batch, target)``), and the iterator that made it, to be held while it is used."""
    import warnings

    from nvidia.dali import fn, pipeline_def, types

    @pipeline_def  # type: ignore[misc]
    def uniform() -> tuple[Any, Any]:
        images = fn.random.uniform(range=[0.0, 1.0], shape=[3, 8, 8], dtype=types.FLOAT)
        labels = fn.random.uniform(range=[0, 10], shape=[], dtype=types.INT32)
        return images, labels

    with warnings.catch_warnings():  # DALI asks for reader_name=: this pipeline has no reader
        warnings.simplefilter("ignore")
        it = to(uniform, "numpy", output_map=["images", "labels"], batch_size=16,
                num_threads=1, size=1 << 30)  # fmt: skip
    return next(it), it


def batch_section(quick: bool) -> Section:
    title = (
        "Batches: `to(batch, target)` of `{images: 16x3x8x8 float32, labels: 16 int32}`, and "
        "each `next(it)` of a converted iterator `it = to(iter(batches), target)`, vs the two "
        "leaves' warm `to()` calls in the same rounds (µs per batch)"
    )
    width = len(BATCH_HEAD)
    rows: list[Row] = []
    targets = [t for t in ("torch", "tensorflow", "jax") if installed(t)]
    for target in targets:
        rows.append(batch_row(f"numpy -> {target}, to(batch)", numpy_batch(), target, quick))
    for target in targets:
        rows.append(iterator_row(f"numpy -> {target}, next(it)", numpy_batch(), target, quick))
    if installed("torch") and installed("tensorflow"):
        rows.append(batch_row("torch -> tensorflow, to(batch)", torch_batch(), "tensorflow",
                              quick))  # fmt: skip
        rows.append(iterator_row("torch -> tensorflow, next(it)", torch_batch(), "tensorflow",
                                 quick))  # fmt: skip
    else:
        rows.append(skip_row("torch -> tensorflow", "needs torch and tensorflow", width))
    if installed("nvidia.dali") and installed("tensorflow"):
        views, held = dali_views()
        rows.append(batch_row("DALI -> tensorflow, to(batch of DALI's numpy views)", views,
                              "tensorflow", quick))  # fmt: skip
        del views, held
    else:
        rows.append(skip_row("DALI -> tensorflow", "needs nvidia.dali and tensorflow", width))
    return title, BATCH_HEAD, rows


# -- 3. a 100-leaf pytree ------------------------------------------------------------------


def flat_tree() -> dict[str, Any]:
    """100 float32 8x8 arrays in one dict."""
    return {f"p{i:03d}": aligned((8, 8), np.float32, seed=i) for i in range(100)}


def nested_tree() -> dict[str, Any]:
    """100 float32 arrays (8x8 weights, 8 biases, 8 norms) in dicts, lists and tuples."""
    seeds = iter(range(100))

    def arr(shape: tuple[int, ...]) -> np.ndarray:
        return aligned(shape, np.float32, seed=next(seeds))

    return {
        "encoder": [{"w": arr((8, 8)), "b": arr((8,))} for _ in range(20)],
        "decoder": {
            "blocks": [(arr((8, 8)), arr((8,))) for _ in range(20)],
            "norms": {f"n{i}": arr((8,)) for i in range(20)},
        },
    }


def tree_row(name: str, tree: Any, target: str, quick: bool) -> Row:
    """``to(tree, target)`` vs the sum of its leaves' warm calls."""
    arrays = leaves(tree)
    assert len(arrays) == 100, len(arrays)
    kinds: dict[tuple[Any, ...], list[Any]] = {}
    for a in arrays:
        kinds.setdefault((a.shape, a.dtype.str), []).append(a)
    shared = shares(to(tree, target), tree)
    for a in arrays:
        to(a, target)
    one = [calls(to, group[0], target) for group in kinds.values()]
    t_tree, t_loop, *t_one = medians(
        [calls(to, tree, target), calls(lambda: [to(a, target) for a in arrays]), *one], quick
    )
    t_sum = sum(t * len(group) for t, group in zip(t_one, kinds.values(), strict=True))
    ratio = t_tree / t_sum
    return [name, f"{t_tree:.1f}", f"{t_sum:.1f}", f"{t_loop:.1f}", f"{ratio:.2f}x",
            yes(shared), "yes" if ratio <= 1.2 and shared else "NO"]  # fmt: skip


def tree_section(quick: bool) -> Section:
    title = (
        "A 100-leaf pytree: `to(tree, target)` vs the sum of its 100 leaves' warm `to()` calls "
        "(a dict of 100 float32 8x8 numpy arrays; a nested mix: 20 dicts {w 8x8, b 8} in a "
        "list, 20 (w, b) tuples in a list and 20 norms 8 in a dict; µs per tree)"
    )
    rows: list[Row] = []
    for target in ("torch", "tensorflow"):
        if not installed(target):
            rows.append(skip_row(f"-> {target}", f"{target} is not installed", len(TREE_HEAD)))
            continue
        rows.append(tree_row(f"dict of 100 -> {target}", flat_tree(), target, quick))
        rows.append(tree_row(f"nested mix of 100 -> {target}", nested_tree(), target, quick))
    return title, TREE_HEAD, rows


def sections(quick: bool) -> list[Section]:
    """The speed sections of issue 18, as (title, head, rows)."""
    return [into_jax_section(quick), batch_section(quick), tree_section(quick)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (a smoke run)")
    parser.add_argument("--x64-json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.x64_json:
        print(X64_MARK + json.dumps(x64_child(args.quick)), flush=True)
        return 0
    started = time.time()
    return print_sections(sections(args.quick), started)


if __name__ == "__main__":
    sys.exit(main())
