"""``python -m interop_core bench``: this machine's routes, timed.

For each installed pair of frameworks (a source that builds example arrays, a target
``to()`` can reach), a small and a larger C-contiguous float32 array: the warm ``to(x,
target)`` against the route's own steps called directly (the converter functions the plan
cache holds for ``x``, which ``to()`` runs after its lookup: for a one-step route the
framework's own call, ``torch.from_numpy`` or a DLPack import). Both sides are timed in
interleaved rounds (A, B, A, B, ...) and reported as medians, so machine noise hits both
alike; the difference is what ``to()`` adds (detection, the plan lookup).

A pair ``explain()`` finds no route for is listed apart, with the first line of why.
Timings are this machine's, on this run: compare rows of one report, not reports.
"""

from __future__ import annotations

import gc
import platform
import statistics
import sys
import timeit
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .. import __version__
from ..declare.errors import FrameworkNotInstalledError, InteropError
from ..declare.specs import FrameworkSpec
from ..engine.registry import Registry
from .api import explain, to, using_registry
from .doctor import native_stderr_silenced
from .example_arrays import ExampleError, make_example

#: The arrays timed: name -> shape (float32).
SIZES = {"64 B": (16,), "1 MiB": (262144,)}
#: (rounds, µs of calls per side and round) by --quick.
ROUNDS = {False: (31, 1000.0), True: (7, 250.0)}

#: One side of a comparison: ``side(number)`` makes ``number`` calls, in µs per call.
Side = Callable[[int], float]


def per_call_us(fn: Callable[[], Any], number: int) -> float:
    """µs per call of ``fn`` over ``number`` calls."""
    return timeit.timeit(fn, number=number) / number * 1e6


def medians(sides: Sequence[Callable[[], Any]], rounds: int, round_us: float) -> list[float]:
    """Medians (µs per call) of ``sides``, each warmed up, then timed in ``rounds``
    alternating rounds of about ``round_us`` each (benchmarks/speed.py's scheme)."""
    for side in sides:
        side()
    numbers = [
        max(1, round(round_us / max(statistics.median(per_call_us(s, 3) for _ in range(3)), 0.01)))
        for s in sides
    ]
    times: list[list[float]] = [[] for _ in sides]
    enabled = gc.isenabled()
    gc.disable()  # a collection inside one side's round would charge it alone
    try:
        for _ in range(rounds):
            for i, side in enumerate(sides):
                times[i].append(per_call_us(side, numbers[i]))
    finally:
        if enabled:
            gc.enable()
    return [statistics.median(t) for t in times]


def _usable(spec: FrameworkSpec) -> bool:
    """Whether the framework finds a device to build arrays on (CuPy without a GPU does not)."""
    visible = spec.devices.visible
    if visible is None:
        return True
    try:
        return bool(visible())
    except Exception:  # a framework that fails to import has nothing to time
        return False


class BenchError(Exception):
    """``--from``/``--to`` name a framework bench cannot time (exit status 2)."""


def pairs(
    reg: Registry, source: str | None = None, target: str | None = None
) -> list[tuple[FrameworkSpec, FrameworkSpec]]:
    """The (source, target) pairs to time: installed sources that build examples, installed
    targets, never a framework to itself; ``source``/``target`` (names or aliases) narrow it.

    Raises UnknownFrameworkError for an unknown name, FrameworkNotInstalledError for one not
    installed, BenchError for a source without examples or a target ``to()`` cannot reach.
    """
    st = reg.load_all()
    named = {}
    for flag, name in (("--from", source), ("--to", target)):
        if name is None:
            continue
        found = st.names.get(name.lower())  # sources only too: resolve() answers for targets
        spec = st.frameworks[found] if found is not None else reg.resolve(name)
        if not st.installed.get(spec.name):
            raise FrameworkNotInstalledError(spec.name, spec.install_hint)
        if flag == "--from" and spec.example is None:
            raise BenchError(f"--from {name}: {spec.name} builds no example arrays to time.")
        if flag == "--to" and not spec.target:
            raise BenchError(f"--to {name}: {spec.name} is a source only (to() cannot target it).")
        named[flag] = spec.name
    installed = [s for n, s in st.frameworks.items() if st.installed.get(n)]
    sources = [s for s in installed if s.example is not None
               and named.get("--from", s.name) == s.name]  # fmt: skip
    targets = [s for s in installed if s.target and named.get("--to", s.name) == s.name]
    usable = {s.name: _usable(s) for s in {*sources, *targets}}
    return [(s, d) for s in sources for d in targets if s.name != d.name and usable[s.name]
            and usable[d.name]]  # fmt: skip


def _runner(reg: Registry, x: Any, target: str) -> Callable[[Any], Any] | None:
    """The function the plan cache runs for ``to(x, target)`` (its steps, without the
    lookup), once ``to()`` has planned it; None if it is not found there."""
    entry = reg.state.plain.get(target, {}).get(type(x))
    if entry is None:
        return None
    keyfn, runners, whole = entry
    for key in (keyfn, whole):
        try:
            found = runners.get(key(x))
        except Exception:  # the framework's own key raises on its forms' objects
            continue
        if found is not None:
            return found
    return None


def _row(
    reg: Registry, src: FrameworkSpec, dst: FrameworkSpec, size: str, x: Any, quick: bool
) -> dict[str, Any]:
    route = explain(x, dst.name)
    to(x, dst.name)  # planned now: the plan cache holds its runner
    run = _runner(reg, x, dst.name)
    rounds, round_us = ROUNDS[quick]

    def call_to() -> Any:
        return to(x, dst.name)

    sides: list[Callable[[], Any]] = [call_to]
    if run is not None:
        sides.append(lambda: run(x))
    timed = medians(sides, rounds, round_us)
    steps_us = timed[1] if run is not None else None
    return {
        "source": src.name, "target": dst.name, "size": size, "shape": list(SIZES[size]),
        "zero_copy": route.zero_copy, "copies": route.copies,
        "steps": [s.converter for s in route.steps],
        "to_us": round(timed[0], 3),
        "steps_us": None if steps_us is None else round(steps_us, 3),
        "overhead_us": None if steps_us is None else round(timed[0] - steps_us, 3),
        "ratio": None if not steps_us else round(timed[0] / steps_us, 2),
    }  # fmt: skip


def _time_pairs(
    reg: Registry,
    todo: list[tuple[FrameworkSpec, FrameworkSpec]],
    quick: bool,
    rows: list[dict[str, Any]],
    refused: list[dict[str, str]],
    failed: list[dict[str, str]],
) -> None:
    """Time each pair at each size into ``rows``; pairs with no route into ``refused``,
    sources that cannot build the array into ``failed``."""
    examples: dict[tuple[str, str], Any] = {}
    for src, dst in todo:
        for size, shape in SIZES.items():
            try:
                x = examples.get((src.name, size))
                if x is None:
                    x = examples[src.name, size] = make_example(src, shape, "float32", "C")
                rows.append(_row(reg, src, dst, size, x, quick))
            except ExampleError as exc:
                failed.append({"source": src.name, "target": dst.name, "why": str(exc)})
                break
            except InteropError as exc:
                why = (str(exc).splitlines() or [""])[0]
                refused.append({"source": src.name, "target": dst.name, "why": why})
                break


def bench_report(
    reg: Registry, source: str | None = None, target: str | None = None, quick: bool = False
) -> dict[str, Any]:
    """Time every pair :func:`pairs` gives, at each of :data:`SIZES`; the report as a dict
    (``rows``: one per pair and size; ``no_route``: pairs with none, and why)."""
    rows: list[dict[str, Any]] = []
    refused: list[dict[str, str]] = []
    failed: list[dict[str, str]] = []
    with using_registry(reg), native_stderr_silenced():
        todo = pairs(reg, source, target)  # imports the frameworks
        # The frameworks' objects to the permanent generation: a collection then walks only
        # what the timing allocates (a full one costs ~0.3 s with TensorFlow imported).
        gc.collect()
        gc.freeze()
        try:
            _time_pairs(reg, todo, quick, rows, refused, failed)
        finally:
            gc.unfreeze()
    rounds, round_us = ROUNDS[quick]
    return {
        "interop_core": __version__, "python": platform.python_version(),
        "platform": f"{platform.system()} {platform.machine()}",
        "dtype": "float32", "sizes": {k: list(v) for k, v in SIZES.items()},
        "rounds": rounds, "round_us": round_us, "quick": quick,
        "rows": rows, "no_route": refused, "not_built": failed,
    }  # fmt: skip


def _num(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _table(head: list[str], rows: Iterable[list[str]]) -> list[str]:
    rows = list(rows)
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    right = {2, 4, 5, 6, 7}  # numbers
    out = []
    for r in [head, *rows]:
        cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in
                 enumerate(zip(r, widths, strict=True))]  # fmt: skip
        out.append("  ".join(cells).rstrip())
    return out


def print_bench(report: dict[str, Any], out: Any = None) -> None:
    """The report as a table (µs per call, medians)."""
    out = out or sys.stdout
    rounds = report["rounds"]
    print(
        f"interop_core {report['interop_core']} on Python {report['python']} "
        f"({report['platform']}): warm to() of C-contiguous float32 arrays, medians of "
        f"{rounds} interleaved rounds, µs per call",
        file=out,
    )
    head = ["source", "target", "size", "route", "to() µs", "steps µs", "overhead µs",
            "to()/steps", "via"]  # fmt: skip
    body = [
        [r["source"], r["target"], r["size"],
         "zero-copy" if r["zero_copy"] else f"{r['copies']} copy(ies)",
         _num(r["to_us"]), _num(r["steps_us"]), _num(r["overhead_us"]),
         "-" if r["ratio"] is None else f"{r['ratio']:.2f}x",
         " then ".join(r["steps"]) or "(returned as it is)"]
        for r in report["rows"]
    ]  # fmt: skip
    print("", file=out)
    for line in _table(head, body):
        print(line, file=out)
    if not report["rows"]:
        print("(no pair to time)", file=out)
    if report["no_route"]:
        print("\nNo route (explain() refuses):", file=out)
        for r in report["no_route"]:
            print(f"  {r['source']} -> {r['target']}: {r['why']}", file=out)
    for r in report["not_built"]:
        print(f"\nNot timed: {r['source']} -> {r['target']}: {r['why']}", file=out)
    print(
        "\nsteps µs: the route's converter functions called directly, as to()'s plan cache "
        "holds them (for one step, the framework's own call); overhead µs: what to() adds "
        "(detection, plan lookup). Timings vary between runs: compare rows of one report.",
        file=out,
    )
