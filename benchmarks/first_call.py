"""Issue 32's first call: the first ``to()`` of a process, beyond importing the frameworks.

Each run is a fresh interpreter that imports the frameworks a call names (and lets JAX
pick its backend, which JAX does on first use whatever converts), then times
``import interop_core`` plus the first ``to()``. Bytecode caches are written once to a
temporary folder and used by every run (as Python normally runs; this machine sets
PYTHONDONTWRITEBYTECODE=1, under which every process compiles the sources again).
``--tree DIR`` (repeatable) times other checkouts in the same runs, alternating: a tree
is put first on ``sys.path`` as ``interop_core`` and ``interop_plugins``, with its
extensions built in place. Target: <= 30 ms.

Usage: python benchmarks/first_call.py [--quick] [--tree DIR ...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from bench import print_sections

Row = list[str]
Section = tuple[str, Row, list[Row]]
HERE = Path(__file__).resolve().parent.parent
TARGET_MS = 30.0

#: Case -> (the frameworks' imports, untimed; the call, timed after ``import interop_core``).
CASES = {
    "numpy -> torch": (
        "import numpy as np, torch\nx = np.ones((64, 64), np.float32)",
        "y = interop_core.to(x, 'torch')\nassert y.data_ptr() == x.ctypes.data",
    ),
    "torch -> jax": (
        "import numpy as np, torch, jax\njax.devices()\nx = torch.ones(64, 64)",
        "y = interop_core.to(x, 'jax')\nassert y.unsafe_buffer_pointer() == x.data_ptr()",
    ),
    "dict batch -> torch": (
        "import numpy as np, torch\n"
        "x = {'images': np.ones((8, 3, 32, 32), np.float32), 'labels': np.arange(8)}",
        "y = interop_core.to(x, 'torch')\nassert y['labels'].tolist() == list(range(8))",
    ),
}

CHILD = """
import gc, json, sys, time
{setup}
runs = [0]
gc.callbacks.append(lambda phase, info: runs.__setitem__(0, runs[0] + (phase == "start")))
t0 = time.perf_counter()
import interop_core
t1 = time.perf_counter()
{call}
t2 = time.perf_counter()
reg = interop_core.default_registry()
print(json.dumps({{"import": (t1 - t0) * 1e3, "first": (t2 - t0) * 1e3,
                  "plugins": len(reg.pm.get_plugins()),
                  "pending": len(getattr(reg, "pending", ())), "collections": runs[0],
                  "from": interop_core.__file__}}))
"""


def run_child(case: str, tree: Path | None, cache: str) -> dict[str, Any]:
    """One fresh interpreter timing ``case``'s first call, with ``tree``'s code."""
    setup, call = CASES[case]
    env = {**os.environ, "PYTHONPYCACHEPREFIX": cache, "TF_CPP_MIN_LOG_LEVEL": "2"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(tree), env.get("PYTHONPATH", "")])
    code = CHILD.format(setup=setup, call=textwrap.dedent(call))
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300,
        check=False, cwd=tempfile.gettempdir(),
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"{case} ({tree or 'this tree'}) failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def tree_path(checkout: Path) -> Path:
    """A folder holding ``interop_core`` and ``interop_plugins`` of ``checkout`` (links)."""
    folder = Path(tempfile.mkdtemp(prefix="first_call_tree_"))
    (folder / "interop_core").symlink_to(checkout / "interop_core")
    (folder / "interop_plugins").symlink_to(checkout / "plugins")
    return folder


def measure(quick: bool, trees: list[Path]) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Per tree label and case, the runs' results (trees alternate within each round)."""
    labels: list[tuple[str, Path | None]] = [("this tree", None)]
    labels += [(str(t), tree_path(t)) for t in trees]
    runs = 5 if quick else 11
    out: dict[str, dict[str, list[dict[str, Any]]]] = {label: {} for label, _ in labels}
    with tempfile.TemporaryDirectory(prefix="first_call_pyc_") as cache:
        for case in CASES:
            for _, path in labels:  # writes the bytecode caches
                run_child(case, path, cache)
            for _ in range(runs):
                for label, path in labels:
                    out[label].setdefault(case, []).append(run_child(case, path, cache))
    return out


def sections(quick: bool, trees: tuple[Path, ...] = ()) -> list[Section]:
    """The first-call section, as (title, head, rows)."""
    found = measure(quick, list(trees))
    rows: list[Row] = []
    for label, cases in found.items():
        for case, runs in cases.items():
            first = [r["first"] for r in runs]
            med = statistics.median(first)
            rows.append([
                case, label, f"{med:.1f}", f"{min(first):.1f}-{max(first):.1f}",
                f"{statistics.median(r['import'] for r in runs):.1f}",
                f"{runs[0]['plugins']} ({runs[0]['pending']} waiting)",
                str(max(r["collections"] for r in runs)),
                "yes" if med <= TARGET_MS else "NO",
            ])  # fmt: skip
    title = (
        "The first `to()` of a process: `import interop_core` and the first call, in ms, the "
        "frameworks imported before the clock (JAX's backend chosen too); fresh interpreters "
        "with bytecode caches, trees alternating, medians and ranges"
    )
    head = ["call", "tree", "first call ms", "range", "of which import", "plugins loaded",
            "GC runs (most)", f"<= {TARGET_MS:.0f} ms"]  # fmt: skip
    return [(title, head, rows)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs (a smoke run)")
    parser.add_argument("--tree", action="append", type=Path, default=[],
                        help="another checkout to time in the same runs")  # fmt: skip
    args = parser.parse_args()
    started = time.time()
    return print_sections(sections(args.quick, tuple(t.resolve() for t in args.tree)), started)


if __name__ == "__main__":
    sys.exit(main())
