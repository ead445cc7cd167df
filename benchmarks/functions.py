"""Function bridges against the raw framework calls, measured side by side.

Every comparison is interleaved (A, B, A, B, ...) in one process and reports medians, as in
bench.py, whose report includes these sections. Targets:

- ``to(f, "tensorflow", source="jax")`` costs <= 1.05 x a raw
  ``tf.function(jax2tf.convert(f), autograph=False)`` call;
- eager ``to(tf_fn, "jax", trace=False)`` (the call_tf bridge) on 64 MiB is >= 5 x faster
  than raw ``jax2tf.call_tf(tf_fn)`` (which copies its input on CPU).

The jax <-> torch rows are informational. torchax is imported only in a subprocess
(``--torchax-json``): importing it breaks torch.compile for the whole process, which
torch-jax-interop's jitted path uses.

Usage: python benchmarks/functions.py [--quick] [--torchax-json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
from bench import per_call_us, print_sections

from interop_core import to
from interop_core.declare.errors import NoRouteError

# JAX arrays are read-only; the torch views to() makes of them say so once per process.
warnings.filterwarnings("ignore", "The given NumPy array is not writable")

Row = list[str]
Section = tuple[str, Row, list[Row]]

#: Size of the MLP's square matrices (float32).
N = 256
#: Marks the JSON line the --torchax-json subprocess prints (torchax may print other lines).
JSON_MARK = "TORCHAX-JSON "
#: Head of the informational jax <-> torch tables.
PAIR_HEAD = ["pass", "ours", "µs", "compared with", "µs", "ours / other", "target"]
#: Lines bench.py adds to its report's notes.
NOTES = [
    "- Function rows: each side runs its own number of calls per round (about 20 ms of "
    "them, 50 ms in a full run) after 10 ms idle, so what one side leaves running (64 MiB "
    "frees, thread pools winding down) is not timed as the next one's.",
    "- TF -> JAX `x * 2.0`: TensorFlow writing a fresh 64 MiB result costs about what "
    "call_tf's input copy costs, so the speed-up is bounded near 2x; the >= 5x target is "
    "judged on the rows where the TF function's own work is small.",
    "- torch -> JAX callback bridge: torch runs inside an XLA host callback, and torch's "
    "OpenMP threads spin-wait (libgomp's default) while XLA's threads want the same cores. "
    "On a machine with few cores calls then take ~40 ms instead of ~2 ms, in runs that come "
    "and go (a bare `jax.pure_callback` into torch does the same); `torch.set_num_threads(1)` "
    "or `OMP_WAIT_POLICY=PASSIVE` avoid it (the 'torch 1 thread' rows).",
]


def measure(*fns: Callable[[], Any], quick: bool, rounds: int | None = None) -> list[float]:
    """Interleaved medians (µs per call) of ``fns`` (A, B, A, B, ...), all warmed up first.

    Each side gets its own number of calls per round, about 20 ms (quick) or 50 ms of
    them, which keeps the whole benchmark within a few minutes; before each side the
    process idles for 10 ms, so work one side leaves behind (freeing 64 MiB results,
    thread pools winding down) is not timed as the next one's.
    """
    for _ in range(3):
        for f in fns:
            f()
    budget = 20_000 if quick else 50_000
    numbers = [
        max(1, min(2000, int(budget / statistics.median(per_call_us(f, 1) for _ in range(3)))))
        for f in fns
    ]
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(rounds or (7 if quick else 15)):
        for f, n, t in zip(fns, numbers, times, strict=True):
            time.sleep(0.01)
            t.append(per_call_us(f, n))
    return [statistics.median(t) for t in times]


def skip_row(what: str, why: str, width: int) -> Row:
    """A row saying why a comparison was not run."""
    return [what, f"skipped: {why}", *["-"] * (width - 2)]


def pair_row(what: str, ours: str, t_ours: float, other: str, t_other: float) -> Row:
    return [what, ours, f"{t_ours:.1f}", other, f"{t_other:.1f}", f"{t_ours / t_other:.2f}x", "-"]


def installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def block(tree: Any) -> Any:
    import jax

    return jax.block_until_ready(tree)


# -- 1. jax -> tensorflow: to() vs tf.function(jax2tf.convert(f)) ----------------------


def jax_to_tf(quick: bool) -> Section:
    """Per call of to(f, "tensorflow", source="jax") vs the raw jax2tf tf.function."""
    title = (
        'JAX function -> TensorFlow: `to(f, "tensorflow", source="jax")` vs raw '
        "`tf.function(jax2tf.convert(f), autograph=False)`, f = tanh(x @ w1) @ w2, same "
        "tf.constant inputs (µs per call)"
    )
    head = ["inputs", "to() µs", "raw µs", "ratio", "<= 1.05x"]
    if not (installed("tensorflow") and installed("jax")):
        return title, head, [skip_row("all", "needs tensorflow and jax", len(head))]
    import jax.numpy as jnp
    import numpy as np
    import tensorflow as tf
    from jax.experimental import jax2tf

    def f(x: Any, w1: Any, w2: Any) -> Any:
        return jnp.tanh(x @ w1) @ w2

    rows = []
    for n in (N, 8):
        rng = np.random.default_rng(0)
        args = [tf.constant(rng.standard_normal((n, n), np.float32)) for _ in range(3)]
        ours = to(f, "tensorflow", source="jax")
        raw = tf.function(jax2tf.convert(f), autograph=False)
        np.testing.assert_allclose(ours(*args).numpy(), raw(*args).numpy(), rtol=1e-5)
        t_ours, t_raw = measure(
            lambda o=ours, a=args: o(*a), lambda r=raw, a=args: r(*a), quick=quick
        )
        met = "yes" if t_ours <= 1.05 * t_raw else "NO"
        rows.append([f"{n}x{n} float32", f"{t_ours:.1f}", f"{t_raw:.1f}",
                     f"{t_ours / t_raw:.3f}x", met])  # fmt: skip
    return title, head, rows


# -- 2. tensorflow -> jax, eager: to() vs jax2tf.call_tf ------------------------------


def tf_to_jax(quick: bool) -> Section:
    """Eager to(tf_fn, "jax") vs raw call_tf(tf_fn) on a 64 MiB jax array."""
    title = (
        "TensorFlow function -> JAX through call_tf, eager: "
        '`to(tf_fn, "jax", trace=False)` vs raw `jax2tf.call_tf(tf_fn)` '
        "on a 4096x4096 float32 jax array (64 MiB), results blocked on; tf_fn alone = the "
        "tf.function called on a tf view of the same array (ms per call)"
    )
    head = ["tf_fn", "to() ms", "raw call_tf ms", "tf_fn alone ms", "speed-up", ">= 5x faster"]
    if not (installed("tensorflow") and installed("jax")):
        return title, head, [skip_row("all", "needs tensorflow and jax", len(head))]
    import jax.numpy as jnp
    import numpy as np
    import tensorflow as tf
    from jax.experimental import jax2tf

    x = jnp.ones((4096, 4096), jnp.float32)
    xt = to(x, "tensorflow")
    # (name, body, whether the >= 5x target applies). The target is about the call path
    # (call_tf copies its 64 MiB input on CPU, to() passes views): it is judged where the TF
    # function's own work is small next to that copy; x * 2.0 writes a fresh 64 MiB result,
    # which costs about as much as the copy, so its speed-up is bounded near 2x.
    cases: list[tuple[str, Callable[[Any], Any], bool]] = [
        ("tf.identity(x)", tf.identity, True),
        ("x[:8] (a slice)", lambda x: x[:8], True),
        ("x * 2.0", lambda x: x * 2.0, False),
    ]
    rows = []
    for name, body, judged in cases:
        fn = tf.function(body, autograph=False)
        # The call_tf bridge (trace=False: with tf2jax installed the default route is tf2jax,
        # measured in benchmarks/tf2jax.py).
        ours, raw = to(fn, "jax", trace=False), jax2tf.call_tf(fn)
        np.testing.assert_array_equal(np.asarray(ours(x)), np.asarray(raw(x)))
        t_ours, t_raw, t_alone = measure(
            lambda o=ours: block(o(x)),
            lambda r=raw: block(r(x)),
            lambda f=fn: f(xt),  # eager TF on CPU returns when done
            quick=quick,
            rounds=5 if quick else 11,
        )
        met = ("yes" if t_raw >= 5 * t_ours else "NO") if judged else "- (TF's own work)"
        rows.append([name, f"{t_ours / 1e3:.3f}", f"{t_raw / 1e3:.2f}", f"{t_alone / 1e3:.3f}",
                     f"{t_raw / t_ours:.1f}x", met])  # fmt: skip
    return title, head, rows


# -- 3. jax -> torch: to() vs by hand vs torch-jax-interop -----------------------------


def _jax_mlp() -> Callable[..., Any]:
    import jax
    import jax.numpy as jnp

    @jax.jit
    def mlp(params: Any, x: Any) -> Any:
        w1, w2 = params
        return jnp.tanh(x @ w1) @ w2

    return mlp


def jax_to_torch(quick: bool) -> Section:
    """A jitted JAX MLP called from torch: forward (no_grad) and forward+backward."""
    title = (
        'JAX function -> torch: `k = to(jax.jit(mlp), "torch", source="jax")` on 256x256 '
        "float32 torch tensors, params requiring grad, backward = `y.backward(ones)`; vs the "
        "same by hand (`to()` each array, the JAX call, `to()` back; for backward a minimal "
        "torch.autograd.Function over a jitted jax.vjp) and torch-jax-interop (µs per call, "
        "informational)"
    )
    width = len(PAIR_HEAD)
    if not (installed("torch") and installed("jax")):
        return title, PAIR_HEAD, [skip_row("all", "needs torch and jax", width)]
    import jax
    import torch

    mlp = _jax_mlp()
    torch.manual_seed(0)
    # clone(): torch-jax-interop refuses tensors that are not 64-byte aligned
    w1, w2, x = (torch.randn(N, N).div(16).clone() for _ in range(3))
    params = (w1.requires_grad_(), w2.requires_grad_())
    # y.backward(ct), not y.sum().backward(): torch-jax-interop cannot take the expanded
    # (stride 0) gradient that sum() hands back
    ct = torch.ones(N, N)
    try:
        k = to(mlp, "torch", source="jax")
    except NoRouteError as exc:
        why = "no jax -> torch function route: " + str(exc).splitlines()[0]
        return title, PAIR_HEAD, [skip_row("all", why, width)]

    def ours_fwd() -> Any:
        with torch.no_grad():
            return k(params, x)

    def hand_fwd() -> Any:
        p = (to(w1.detach(), "jax"), to(w2.detach(), "jax"))
        return to(mlp(p, to(x, "jax")), "torch")

    jvp = jax.jit(lambda p, x: jax.vjp(lambda p: mlp(p, x), p))
    apply_vjp = jax.jit(lambda vjp_fn, ct: vjp_fn(ct))

    class ByHand(torch.autograd.Function):
        """The least a hand-written bridge needs for backward(): a jitted jax.vjp."""

        @staticmethod
        def forward(ctx: Any, a: Any, b: Any, x: Any) -> Any:
            out, ctx.vjp = jvp((to(a.detach(), "jax"), to(b.detach(), "jax")), to(x, "jax"))
            return to(out, "torch")

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            ((g1, g2),) = apply_vjp(ctx.vjp, to(g.contiguous(), "jax"))
            return to(g1, "torch"), to(g2, "torch"), None

    def ours_fb() -> Any:
        w1.grad = w2.grad = None
        k(params, x).backward(ct)
        return w1.grad

    def hand_fb() -> Any:
        w1.grad = w2.grad = None
        ByHand.apply(w1, w2, x).backward(ct)
        return w1.grad

    want = hand_fwd()
    torch.testing.assert_close(ours_fwd(), want)
    torch.testing.assert_close(ours_fb().clone(), hand_fb())
    fwd_sides, fb_sides = [("by hand", hand_fwd)], [("by hand", hand_fb)]
    rows: list[Row] = []
    if installed("torch_jax_interop"):
        import torch_jax_interop as tji

        fwd = tji.jax_to_torch(mlp)

        def tji_fwd() -> Any:
            with torch.no_grad():
                return fwd(list(params), x)  # its tuple conversion fails: "tuple expected"

        module = tji.WrappedJaxFunction(mlp, (to(w1.detach(), "jax"), to(w2.detach(), "jax")))

        def tji_fb() -> Any:
            for p in module.parameters():
                p.grad = None
            module(x).backward(ct)
            return module.params[0].grad

        torch.testing.assert_close(tji_fwd(), want)
        torch.testing.assert_close(tji_fb(), ours_fb())
        fwd_sides.append(("tji.jax_to_torch(mlp)", tji_fwd))
        fb_sides.append(("tji.WrappedJaxFunction", tji_fb))
    else:
        rows.append(skip_row("torch-jax-interop", "not installed", width))
    rows[:0] = [
        *compare("forward (no_grad)", ("to()", ours_fwd), fwd_sides, quick),
        *compare("forward + backward", ("to()", ours_fb), fb_sides, quick),
    ]
    return title, PAIR_HEAD, rows


def compare(
    what: str,
    ours: tuple[str, Callable[[], Any]],
    others: list[tuple[str, Callable[[], Any]]],
    quick: bool,
) -> list[Row]:
    """``ours`` and every one of ``others`` measured interleaved; a row per other."""
    times = measure(ours[1], *(f for _, f in others), quick=quick)
    return [
        pair_row(what, ours[0], times[0], name, t)
        for (name, _), t in zip(others, times[1:], strict=True)
    ]


# -- 4. torch -> jax under jax.jit: the callback bridge vs native JAX, tji, torchax ------


def _torch_mlp(x: Any, w1: Any, w2: Any) -> Any:
    import torch

    return torch.tanh(x @ w1) @ w2


def _jax_inputs() -> tuple[Any, Any, Any]:
    import jax

    keys = jax.random.split(jax.random.key(0), 3)
    return tuple(jax.random.normal(k, (N, N), "float32") / 16 for k in keys)  # type: ignore[return-value]


def _against_native(fn: Any, x: Any, w1: Any, w2: Any) -> tuple[Any, Any, list[Any], list[Any]]:
    """``fn`` jitted (forward, grad), checked against native JAX, and the native sides."""
    f_fwd, f_grad = _jitted(fn)
    n_fwd, n_grad = _jitted(_native_mlp)
    _check(f_fwd(x, w1, w2), n_fwd(x, w1, w2))
    _check(f_grad(x, w1, w2), n_grad(x, w1, w2))
    return (
        f_fwd,
        f_grad,
        [("native jax.jit", _on(n_fwd, x, w1, w2))],
        [("native jax.jit", _on(n_grad, x, w1, w2))],
    )


def _jitted(f: Callable[..., Any]) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """jax.jit of f(x, w1, w2) and of its gradient in (w1, w2) of the summed output."""
    import jax

    return jax.jit(f), jax.jit(jax.grad(lambda x, w1, w2: f(x, w1, w2).sum(), argnums=(1, 2)))


def _check(a: Any, b: Any) -> None:
    import jax
    import numpy as np

    for u, v in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b), strict=True):
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=2e-4, atol=2e-5)


def torch_to_jax(quick: bool) -> list[Section]:
    """The callback bridge under jax.jit vs native JAX and torch-jax-interop; torchax rows
    from a subprocess."""
    title = (
        'torch function -> JAX: `to(torch_mlp, "jax", source="torch")` (the callback bridge) '
        "under jax.jit on 256x256 float32 jax arrays; vs native jax.jit of the same MLP in "
        "JAX and torch-jax-interop's `torch_module_to_jax(module, example_output=...)` "
        "(µs per call, informational)"
    )
    return [(title, PAIR_HEAD, _torch_to_jax_rows(quick)), torchax_section(quick)]


def _torch_to_jax_rows(quick: bool) -> list[Row]:
    width = len(PAIR_HEAD)
    if not (installed("torch") and installed("jax")):
        return [skip_row("all", "needs torch and jax", width)]
    import jax
    import torch

    x, w1, w2 = _jax_inputs()
    try:
        ours = to(_torch_mlp, "jax", source="torch")
    except NoRouteError as exc:
        why = "no torch -> jax function route: " + str(exc).splitlines()[0]
        return [skip_row("all", why, width)]
    o_fwd, o_grad, fwd_sides, grad_sides = _against_native(ours, x, w1, w2)
    rows: list[Row] = []
    if installed("torch_jax_interop"):
        import torch_jax_interop as tji

        class MLP(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.w1 = torch.nn.Parameter(to(w1, "torch").clone())
                self.w2 = torch.nn.Parameter(to(w2, "torch").clone())

            def forward(self, x: Any) -> Any:
                return _torch_mlp(x, self.w1, self.w2)

        try:
            wrapped, params = tji.torch_module_to_jax(MLP(), example_output=torch.zeros(N, N))
            t_fwd = jax.jit(lambda p, x: wrapped(p, x))
            t_grad = jax.jit(jax.grad(lambda p, x: wrapped(p, x).sum()))
            started = time.perf_counter()
            _check(t_fwd(params, x), o_fwd(x, w1, w2))
            _check(t_grad(params, x), o_grad(x, w1, w2))
            name = f"tji.torch_module_to_jax (first calls {time.perf_counter() - started:.0f} s)"
            fwd_sides.append((name, _on(t_fwd, params, x)))
            grad_sides.append(("tji.torch_module_to_jax", _on(t_grad, params, x)))
        except Exception as exc:  # its jitted path runs torch.compile, which may fail
            why = f"failed: {type(exc).__name__}: {exc}"[:160]
            rows.append(skip_row("torch-jax-interop", why, width))
    else:
        rows.append(skip_row("torch-jax-interop", "not installed", width))
    rows[:0] = [
        *compare("forward, jax.jit", ("to()", _on(o_fwd, x, w1, w2)), fwd_sides, quick),
        *compare("jax.jit(jax.grad)", ("to()", _on(o_grad, x, w1, w2)), grad_sides, quick),
    ]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # no OpenMP workers spinning against XLA's threads (NOTES)
    try:
        ours_1 = "to(), torch 1 thread"
        rows += [
            *compare("forward, jax.jit", (ours_1, _on(o_fwd, x, w1, w2)), fwd_sides[:1], quick),
            *compare("jax.jit(jax.grad)", (ours_1, _on(o_grad, x, w1, w2)), grad_sides[:1], quick),
        ]
    finally:
        torch.set_num_threads(threads)
    return rows


def _native_mlp(x: Any, w1: Any, w2: Any) -> Any:
    import jax.numpy as jnp

    return jnp.tanh(x @ w1) @ w2


def _on(f: Callable[..., Any], *args: Any) -> Callable[[], Any]:
    """A call of ``f`` on ``args`` that waits for the result."""
    return lambda: block(f(*args))


def torchax_section(quick: bool) -> Section:
    """The torchax-traced edge vs the callback bridge, measured in a subprocess."""
    title = (
        "torch function -> JAX, the torchax-traced edge (`trace=True`) vs the callback bridge "
        "and native JAX, under jax.jit, same MLP (µs per call, informational; run in a "
        "subprocess: importing torchax breaks torch.compile for the whole process)"
    )
    width = len(PAIR_HEAD)
    from interop_plugins.bridges.torchax_bridge import torchax_usable

    if not torchax_usable():
        why = "torchax not installed (in a version that works with this torch)"
        return title, PAIR_HEAD, [skip_row("torchax edge", why, width)]
    cmd = [sys.executable, os.path.abspath(__file__), "--torchax-json"]
    try:
        out = subprocess.run(
            cmd + (["--quick"] if quick else []), capture_output=True, text=True, timeout=300
        )
    except subprocess.TimeoutExpired:
        return title, PAIR_HEAD, [skip_row("torchax edge", "subprocess timed out", width)]
    found = [line for line in out.stdout.splitlines() if line.startswith(JSON_MARK)]
    if out.returncode or not found:
        tail = (out.stderr.strip().splitlines() or ["no output"])[-1]
        return title, PAIR_HEAD, [skip_row("torchax edge", f"subprocess failed: {tail}"[:200],
                                           width)]  # fmt: skip
    result = json.loads(found[-1][len(JSON_MARK) :])
    return title + f"; torchax {result['torchax']}", PAIR_HEAD, result["rows"]


def torchax_rows(quick: bool) -> dict[str, Any]:
    """The subprocess side: torchax-traced edge vs the callback bridge and native JAX."""
    import importlib.metadata

    x, w1, w2 = _jax_inputs()
    width = len(PAIR_HEAD)
    result: dict[str, Any] = {"torchax": importlib.metadata.version("torchax"), "rows": []}
    traced = to(_torch_mlp, "jax", source="torch", trace=True)
    t_fwd, t_grad, fwd_sides, grad_sides = _against_native(traced, x, w1, w2)
    try:
        c_fwd, c_grad = _jitted(to(_torch_mlp, "jax", source="torch"))
        fwd_sides.append(("to() callback bridge", _on(c_fwd, x, w1, w2)))
        grad_sides.append(("to() callback bridge", _on(c_grad, x, w1, w2)))
    except NoRouteError as exc:
        result["rows"].append(skip_row("callback bridge", str(exc).splitlines()[0], width))
    ours = "to(trace=True)"
    result["rows"][:0] = [
        *compare("forward, jax.jit", (ours, _on(t_fwd, x, w1, w2)), fwd_sides, quick),
        *compare("jax.jit(jax.grad)", (ours, _on(t_grad, x, w1, w2)), grad_sides, quick),
    ]
    return result


def sections(quick: bool) -> list[Section]:
    """Every function-bridge section, as (title, head, rows)."""
    return [jax_to_tf(quick), tf_to_jax(quick), jax_to_torch(quick), *torch_to_jax(quick)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (a smoke run)")
    parser.add_argument(
        "--torchax-json", action="store_true", help="only the torchax rows, as one JSON line"
    )
    args = parser.parse_args()
    if args.torchax_json:
        print(JSON_MARK + json.dumps(torchax_rows(args.quick)), flush=True)
        return 0
    started = time.time()
    return print_sections(sections(args.quick), started)


if __name__ == "__main__":
    sys.exit(main())
