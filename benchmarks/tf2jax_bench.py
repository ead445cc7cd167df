"""TensorFlow functions as native JAX code (tf2jax) against JAX itself and against call_tf.

(Not named ``tf2jax.py``: bench.py runs with this folder first on sys.path, where a module of
that name would shadow the tf2jax package that the bridge imports.)

Every comparison is interleaved (A, B, C, A', A, B, C, A', ...) in one process and reports
medians, as in bench.py, whose report includes this section; A' (the JAX function a second
time, in the same rounds) gives the control column: the noise of the run. f = tanh(x @ w1) @ w2
as a tf.function, float32, results blocked on. Targets, under ``jax.jit``:

- ``to(f, "jax")`` (tf2jax) <= 1.25 x the same function written in JAX;
- ``to(f, "jax")`` >= 1.5 x faster than the call_tf route, ``to(f, "jax", trace=False)``.

The eager (unjitted) calls of the three are informational.

Usage: python benchmarks/tf2jax_bench.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
from bench import print_sections
from functions import installed, measure, skip_row

from interop_core import to

Row = list[str]
Section = tuple[str, Row, list[Row]]

#: The sizes of x, w1 and w2 (square, float32).
SIZES = (256, 64, 8)
#: What a jitted tf2jax call may cost next to JAX's own, and how much faster than call_tf.
JAX_LIMIT, CALL_TF_SPEEDUP = 1.25, 1.5
JIT_HEAD = ["inputs", "tf2jax µs", "compared with", "µs", "tf2jax / other", "control",
            "target", "met"]  # fmt: skip
EAGER_HEAD = ["inputs", "tf2jax µs", "JAX op by op µs", "call_tf route µs", "target"]
#: Lines bench.py adds to its report's notes.
NOTES = [
    "- TF -> JAX through tf2jax: the TensorFlow graph becomes JAX operations once per input "
    "signature, so under `jax.jit` XLA compiles the same program as for the function "
    "written in JAX; the call_tf route embeds the TensorFlow function in the program "
    "(`jax2tf.call_tf`), which TensorFlow runs at every call. Eagerly, the tf2jax route "
    "calls its own jitted function (a signature lookup first); the call_tf route calls the "
    "tf.function directly on zero-copy views.",
]


def _inputs(n: int) -> tuple[Any, Any, Any]:
    import jax

    keys = jax.random.split(jax.random.key(0), 3)
    return tuple(jax.random.normal(k, (n, n), "float32") / 16 for k in keys)  # type: ignore[return-value]


def _sides() -> tuple[Any, Callable[..., Any]]:
    """The tf.function and the same function in JAX."""
    import jax.numpy as jnp
    import tensorflow as tf

    def jax_mlp(x: Any, w1: Any, w2: Any) -> Any:
        return jnp.tanh(x @ w1) @ w2

    tf_mlp = tf.function(lambda x, w1, w2: tf.tanh(x @ w1) @ w2, autograph=False)
    return tf_mlp, jax_mlp


def _check(a: Any, b: Any) -> None:
    import numpy as np

    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-4, atol=2e-5)


def _on(f: Callable[..., Any], args: tuple[Any, ...]) -> Callable[[], Any]:
    return lambda: f(*args).block_until_ready()


def jit_rows(quick: bool) -> list[Row]:
    """Per size: the jitted tf2jax route vs JAX and vs the jitted call_tf route."""
    import jax

    tf_mlp, jax_mlp = _sides()
    rows: list[Row] = []
    for n in SIZES:
        args = _inputs(n)
        ours = jax.jit(to(tf_mlp, "jax"))
        native = jax.jit(jax_mlp)
        via_call_tf = jax.jit(to(tf_mlp, "jax", trace=False))
        again = jax.jit(jax_mlp)  # the control: the JAX function a second time
        want = native(*args)
        for f in (ours, via_call_tf, again):
            _check(f(*args), want)
        t_ours, t_jax, t_call_tf, t_again = measure(
            *(_on(f, args) for f in (ours, native, via_call_tf, again)), quick=quick
        )
        control = f"{t_again / t_jax:.3f}x"
        jax_met = "yes" if t_ours <= JAX_LIMIT * t_jax else "NO"
        speedup = t_call_tf / t_ours
        call_tf_met = "yes" if speedup >= CALL_TF_SPEEDUP else "NO"
        inputs = f"{n}x{n} float32"
        rows += [
            [inputs, f"{t_ours:.1f}", "the function in JAX, jitted", f"{t_jax:.1f}",
             f"{t_ours / t_jax:.3f}x", control, f"<= {JAX_LIMIT}x", jax_met],
            [inputs, f"{t_ours:.1f}", 'call_tf route, jitted (`trace=False`)', f"{t_call_tf:.1f}",
             f"{t_ours / t_call_tf:.3f}x ({speedup:.2f}x faster)", control,
             f">= {CALL_TF_SPEEDUP}x faster", call_tf_met],
        ]  # fmt: skip
    return rows


def eager_rows(quick: bool) -> list[Row]:
    """Per size: the three called without jax.jit (informational)."""
    tf_mlp, jax_mlp = _sides()
    rows: list[Row] = []
    for n in SIZES:
        args = _inputs(n)
        ours, via_call_tf = to(tf_mlp, "jax"), to(tf_mlp, "jax", trace=False)
        want = jax_mlp(*args)
        for f in (ours, via_call_tf):
            _check(f(*args), want)
        t_ours, t_jax, t_call_tf = measure(
            *(_on(f, args) for f in (ours, jax_mlp, via_call_tf)), quick=quick
        )
        rows.append([f"{n}x{n} float32", f"{t_ours:.1f}", f"{t_jax:.1f}", f"{t_call_tf:.1f}",
                     "-"])  # fmt: skip
    return rows


def sections(quick: bool) -> list[Section]:
    """The tf2jax sections, as (title, head, rows)."""
    jit_title = (
        'TensorFlow function -> JAX under `jax.jit`: `jax.jit(to(f, "jax"))` (tf2jax: the '
        "graph as JAX operations) vs the same function written in JAX, `jax.jit(f_jax)`, and "
        'vs the call_tf route, `jax.jit(to(f, "jax", trace=False))`; f = tanh(x @ w1) @ w2 as '
        "a tf.function, jax array inputs, results blocked on; interleaved with a second run of "
        "the JAX function (control = second / first: the noise), medians (µs per call)"
    )
    eager_title = (
        'TensorFlow function -> JAX, eager (no `jax.jit` around it): `to(f, "jax")` (tf2jax, '
        "jitted inside), the JAX function op by op, and the call_tf route "
        '`to(f, "jax", trace=False)` (a direct tf.function call on zero-copy views); same f '
        "and inputs, medians (µs per call, informational)"
    )
    if not (installed("tensorflow") and installed("jax") and installed("tf2jax")):
        why = "needs tensorflow, jax and tf2jax"
        return [
            (jit_title, JIT_HEAD, [skip_row("all", why, len(JIT_HEAD))]),
            (eager_title, EAGER_HEAD, [skip_row("all", why, len(EAGER_HEAD))]),
        ]
    return [(jit_title, JIT_HEAD, jit_rows(quick)), (eager_title, EAGER_HEAD, eager_rows(quick))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (a smoke run)")
    args = parser.parse_args()
    started = time.time()
    return print_sections(sections(args.quick), started)


if __name__ == "__main__":
    sys.exit(main())
