"""The opt-in 64-byte aligned numpy allocator: what it buys and what it costs.

Two sections, as bench.py's report shows them:

- the share of numpy arrays that reach JAX and TensorFlow zero-copy, with numpy's default
  allocator and with the aligned one, over 20 sizes x 5 dtypes x the ways arrays are made
  (the matrix of tests/test_aligned_memory.py). Target: 100% with the aligned allocator;
- the trade-offs: allocation costs with and without it, interleaved (default, aligned,
  default, ...) in one process, medians, as ratios (informational).

Usage: python benchmarks/aligned.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
from bench import per_call_us, print_sections
from functions import installed, skip_row
from interop_plugins.frameworks import aligned_memory

from interop_core import explain, to
from interop_core.testing import data_ptr

Row = list[str]
Section = tuple[str, Row, list[Row]]
MiB = 1 << 20

#: The matrix of tests/test_aligned_memory.py: element counts, dtypes (none 64-bit: JAX
#: holds those only with jax_enable_x64), and the ways arrays are made (made()).
SIZES = (
    1, 2, 3, 7, 16, 33, 100, 255, 1000, 1023, 4097, 10_007, 65_536, 100_003, 262_143,
    1 << 20, 1_000_003, 3 << 20, 4_194_305, 5_000_011,
)  # fmt: skip
DTYPES = ("float32", "float16", "int32", "int16", "bool")
TARGETS = ("jax", "tensorflow")
SHARE_HEAD = [
    "arrays", "count", "jax: default", "jax: aligned", "tensorflow: default",
    "tensorflow: aligned", "100% with it",
]  # fmt: skip
COST_HEAD = ["operation", "unit", "default allocator", "aligned allocator", "aligned / default"]
#: Lines bench.py may add to its report's notes.
NOTES = [
    "- Aligned allocator: numpy's NEP 49 data-memory handler of "
    "interop_plugins/frameworks/_aligned_alloc.c (malloc or calloc of size + 64 bytes, the "
    "first 64-byte boundary after the block's start). Its cost is on small arrays: numpy's "
    "own handler keeps a cache of freed blocks under 1 KiB, this one calls malloc each time. "
    "Large arrays cost the same (the page faults dominate); np.zeros stays lazy (calloc).",
]


def _random(rng: Any, n: int, dt: Any, floats: Callable[..., Any]) -> Any:
    if dt == np.float32:
        return floats(n, dtype=np.float32)
    if dt.kind == "f":
        return floats(n).astype(dt)
    if dt.kind == "b":
        return floats(n) < 0.5
    return (floats(n) * 1000).astype(dt)


def made(n: int, dtype: str) -> dict[str, Any]:
    """Arrays of ``n`` elements of ``dtype``, made the ways user code makes them."""
    dt = np.dtype(dtype)
    rng = np.random.default_rng(n)
    src = (np.arange(2 * n) % 97).astype(dt)
    return {
        "np.empty": np.empty(n, dt),
        "np.ones": np.ones(n, dt),
        "np.zeros": np.zeros(n, dt),
        "np.full": np.full(n, 3, dt),
        "rng.random": _random(rng, n, dt, rng.random),
        "rng.standard_normal": _random(rng, n, dt, rng.standard_normal),
        "astype": (np.arange(n) % 1000).astype(dt),
        "fancy indexing": src[np.arange(0, 2 * n, 2)],
        "boolean indexing": src[np.arange(2 * n) % 2 == 1],
        "np.concatenate": np.concatenate([np.ones(n // 2, dt), np.full(n - n // 2, 2, dt)]),
        "a[:k] of np.full": np.full(2 * n, 5, dt)[:n],
        "np.ones((n, 3))": np.ones((n, 3), dt),
    }


def shared(x: Any, target: str) -> bool:
    """Whether ``to(x, target)`` shares ``x``'s memory (the plan says so and the pointers
    agree)."""
    return bool(explain(x, target).zero_copy) and data_ptr(to(x, target)) == data_ptr(x)


def count_shared(on: bool) -> dict[str, dict[str, list[int]]]:
    """{arrays: {target: [shared, total]}} over the matrix, the allocator switched ``on``."""
    torch = None
    if installed("torch"):
        import torch
    found: dict[str, dict[str, list[int]]] = {}

    def add(what: str, x: Any) -> None:
        for target in TARGETS:
            tally = found.setdefault(what, {}).setdefault(target, [0, 0])
            tally[0] += shared(x, target)
            tally[1] += 1

    token = aligned_memory.switch(on)
    try:
        for n in SIZES:
            for dtype in DTYPES:
                for how, a in made(n, dtype).items():
                    add(how, a)
                    if torch is not None:
                        add("torch.from_numpy of all", torch.from_numpy(a))
    finally:
        aligned_memory.restore(token)
    return found


def share_rows() -> list[Row]:
    default, aligned = count_shared(False), count_shared(True)
    rows: list[Row] = []
    totals = {on: {t: [0, 0] for t in TARGETS} for on in (False, True)}

    def pct(tally: list[int]) -> str:
        return f"{tally[0]}/{tally[1]} ({100 * tally[0] / tally[1]:.0f}%)"

    for what in sorted(default, key=lambda w: w.startswith("torch")):  # torch's row last
        cells, full = [], True
        for target in TARGETS:
            for on, found in ((False, default), (True, aligned)):
                tally = found[what][target]
                cells.append(pct(tally))
                for i in (0, 1):
                    totals[on][target][i] += tally[i]
            full &= aligned[what][target][0] == aligned[what][target][1]
        rows.append([what, str(default[what][TARGETS[0]][1]), *cells, "yes" if full else "NO"])
    cells = [pct(totals[on][t]) for t in TARGETS for on in (False, True)]
    full = all(totals[True][t][0] == totals[True][t][1] for t in TARGETS)
    rows.append(
        ["all of the above", str(totals[False][TARGETS[0]][1]), *cells, "yes" if full else "NO"]
    )
    return rows


def share_section() -> Section:
    title = (
        "numpy arrays reaching JAX and TensorFlow zero-copy, with numpy's default allocator "
        "and with the aligned one (`interop_core.aligned_memory()`: the numpy plugin's NEP 49 "
        "handler): "
        f"{len(SIZES)} sizes (1 to {SIZES[-1]:,} elements) x {len(DTYPES)} dtypes "
        f"({', '.join(DTYPES)}) per way of making them; shared = `explain(a, target).zero_copy` "
        "and the result's data pointer is the array's"
    )
    missing = [m for m in ("jax", "tensorflow") if not installed(m)]
    why = aligned_memory.available()
    if missing or why:
        reason = why or f"needs {', '.join(missing)}"
        return (title, SHARE_HEAD, [skip_row("all", reason, len(SHARE_HEAD))])
    return (title, SHARE_HEAD, share_rows())


def switched(on: bool, fn: Callable[[], Any], number: int) -> float:
    """µs per call of ``fn`` with the aligned allocator switched ``on`` (or off)."""
    token = aligned_memory.switch(on)
    try:
        return per_call_us(fn, number)
    finally:
        aligned_memory.restore(token)


def churn(loops: int) -> Callable[[], Any]:
    """``loops`` x np.add of two 16-element float64 arrays: a fresh small result each time."""
    a, b = np.ones(16), np.ones(16)

    def run() -> None:
        for _ in range(loops):
            np.add(a, b)

    return run


def cost_rows(quick: bool) -> list[Row]:
    rounds = 7 if quick else 31
    loops = 10**4 if quick else 10**5
    cases: list[tuple[str, str, float, Callable[[], Any], int]] = [
        ("np.empty(8) float64 (64 B)", "µs", 1, lambda: np.empty(8), 20_000),
        ("np.empty(1 MiB) uint8", "µs", 1, lambda: np.empty(MiB, np.uint8), 2_000),
        ("np.zeros(64 MiB) uint8 (lazy: calloc)", "µs", 1, lambda: np.zeros(64 * MiB, np.uint8),
         200),
        ("np.ones(64 MiB) uint8 (pages written)", "ms", 1e3,
         lambda: np.ones(64 * MiB, np.uint8), 1),
        (f"{loops:,} x np.add of two 16-element arrays", "ms", 1e3, churn(loops), 1),
    ]  # fmt: skip
    rows = []
    for what, unit, scale, fn, number in cases:
        for on in (False, True):  # warm both
            switched(on, fn, max(1, number // 10))
        times: dict[bool, list[float]] = {False: [], True: []}
        for _ in range(rounds):
            for on in (False, True):
                times[on].append(switched(on, fn, number))
        default, aligned = (statistics.median(times[on]) / scale for on in (False, True))
        rows.append([what, unit, f"{default:.3g}", f"{aligned:.3g}", f"{aligned / default:.2f}x"])
    return rows


def cost_section(quick: bool) -> Section:
    title = (
        "What the aligned allocator costs: numpy allocations with the default allocator and "
        "with the aligned one, interleaved (default, aligned, ...), medians per call "
        "(informational)"
    )
    why = aligned_memory.available()
    if why:
        return (title, COST_HEAD, [skip_row("all", why, len(COST_HEAD))])
    return (title, COST_HEAD, cost_rows(quick))


def sections(quick: bool) -> list[Section]:
    """The aligned-allocator sections, as (title, head, rows)."""
    return [share_section(), cost_section(quick)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (a smoke run)")
    args = parser.parse_args()
    started = time.time()
    return print_sections(sections(args.quick), started)


if __name__ == "__main__":
    sys.exit(main())
