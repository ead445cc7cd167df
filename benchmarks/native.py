"""Issue 32's speed targets for the warm path and function conversions, measured side by side.

The C paths (``interop_core._warm``, ``interop_plugins._native``) are timed in this process
and the pure-Python ones in a child process of the same tree (``INTEROP_CORE_PURE_PYTHON=1``),
each against the raw call in the same rounds (interleaved, medians), so the two are compared
by their overhead over the raw call and their ratio to it, which a VM whose speed changes
between processes leaves comparable. Targets:

- warm ``to()`` <= raw + 0.5 µs on every pair without JAX (1024x1024 float32);
- torch -> numpy faster than ``np.from_dlpack(t)`` and no slower than ``t.numpy()``;
- numpy -> torch <= ``torch.from_numpy`` + 0.3 µs;
- a repeated ``to(f, "torch", source="jax")`` of the same function <= 5 µs.

Usage: python benchmarks/native.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
from bench import interleaved_calls, print_sections, raw_calls, sources

import interop_core
from interop_core import to
from interop_core.native import PURE_PYTHON_ENV

Row = list[str]
Section = tuple[str, Row, list[Row]]
MARK = "NATIVE-JSON:"
SHAPE = (1024, 1024)


def warm_pairs(quick: bool) -> dict[str, dict[str, float]]:
    """Per pair without JAX as a target or source: to() and the raw call (µs, medians of
    interleaved rounds), and np.from_dlpack for torch -> numpy."""
    xs = sources(SHAPE)
    rounds = 7 if quick else 21
    out: dict[str, dict[str, float]] = {}
    for (src, dst), raw in raw_calls().items():
        if "jax" in (src, dst) or src not in xs:
            continue
        x = xs[src]
        to(x, dst)
        sides: list[Callable[[], Any]] = [lambda x=x, raw=raw: raw(x), lambda x=x, d=dst: to(x, d)]
        if (src, dst) == ("torch", "numpy"):
            sides.append(lambda x=x: np.from_dlpack(x))
        times = interleaved_calls(sides, rounds)
        row = {"raw": times[0], "to": times[1]}
        if len(times) > 2:
            row["from_dlpack"] = times[2]
        out[f"{src} -> {dst}"] = row
    return out


def function_reuse(quick: bool) -> dict[str, float]:
    """A repeated to(f, "torch", source="jax") of one function, against the same call with
    the reuse cache emptied before each (the slow path: detection, routing, binding)."""
    try:
        import jax.numpy as jnp
        import torch  # noqa: F401
    except ImportError:
        return {}

    def f(x: Any) -> Any:
        return jnp.tanh(x) * 2

    st = interop_core.default_registry().state
    to(f, "torch", source="jax")

    def again() -> Any:
        return to(f, "torch", source="jax")

    def afresh() -> Any:
        st.reused.entries.clear()
        return to(f, "torch", source="jax")

    reused, fresh = interleaved_calls([again, afresh], 5 if quick else 15)
    return {"reused": reused, "fresh": fresh}


def measure(quick: bool) -> dict[str, Any]:
    """Everything this script times in one process (the C or the Python paths)."""
    return {
        "warm_in_c": hasattr(to, "python"),
        "pairs": warm_pairs(quick),
        "functions": function_reuse(quick),
    }


def pure_python_child(quick: bool) -> dict[str, Any]:
    """measure() in a child process on the pure-Python paths."""
    env = {**os.environ, PURE_PYTHON_ENV: "1"}
    args = [sys.executable, __file__, "--json", *(["--quick"] if quick else [])]
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=1800)
    for line in done.stdout.splitlines():
        if line.startswith(MARK):
            return dict(json.loads(line[len(MARK) :]))
    raise RuntimeError(f"the pure-Python child printed no result:\n{done.stderr[-3000:]}")


def sections(quick: bool) -> list[Section]:
    """Issue 32's warm-path and function sections, as (title, head, rows)."""
    c = measure(quick)
    py = pure_python_child(quick)
    rows: list[Row] = []
    for pair, t in c["pairs"].items():
        p = py["pairs"].get(pair, {})
        over = t["to"] - t["raw"]
        target = 0.3 if pair == "numpy -> torch" else 0.5
        met = over <= target
        extra = ""
        if "from_dlpack" in t:
            met = met and t["to"] < t["from_dlpack"] and t["to"] <= t["raw"]
            extra = f"; np.from_dlpack {t['from_dlpack']:.2f}"
        rows.append([
            pair, f"{t['raw']:.2f}", f"{t['to']:.2f}", f"{t['to'] / t['raw']:.2f}x",
            f"{over:+.2f}",
            f"{p['to'] - p['raw']:+.2f} ({p['to'] / p['raw']:.2f}x)" if p else "-",
            f"<= raw + {target}{' and <= t.numpy(), < np.from_dlpack' if extra else ''}{extra}",
            "yes" if met else "NO",
        ])  # fmt: skip
    warm = (
        "Warm `to()` on the C paths vs the raw call, and the pure-Python paths' overhead "
        "(a child process with INTEROP_CORE_PURE_PYTHON=1, its own raw call in the same "
        f"rounds); 1024x1024 float32, µs per call, interleaved medians; to() in C here: "
        f"{c['warm_in_c']}"
    )
    head = ["pair", "raw µs", "to() µs (C)", "ratio", "overhead (C)",
            "overhead (Python, ratio)", "target", "met"]  # fmt: skip
    found: list[Section] = [(warm, head, rows)]
    fc, fp = c["functions"], py["functions"]
    if fc:
        found.append((
            "A repeated function conversion: `to(f, 'torch', source='jax')` of the same f "
            "(reused) vs the same call with the reuse cache emptied each time (the slow "
            "path: detection, routing, binding); µs per call, interleaved medians",
            ["paths", "reused µs", "converted afresh µs", "ratio", "reused <= 5 µs"],
            [
                [name, f"{r['reused']:.2f}", f"{r['fresh']:.1f}",
                 f"{r['reused'] / r['fresh']:.3f}x", "yes" if r["reused"] <= 5 else "NO"]
                for name, r in (("C", fc), ("pure Python", fp)) if r
            ],
        ))  # fmt: skip
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (a smoke run)")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.json:
        print(MARK + json.dumps(measure(args.quick)), flush=True)
        return 0
    started = time.time()
    return print_sections(sections(args.quick), started)


if __name__ == "__main__":
    sys.exit(main())
