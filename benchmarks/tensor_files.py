"""safetensors files (issue 21) through ``to()`` against ``safetensors.torch.load_file``.

A 256 MiB file written by ``safetensors.numpy.save_file`` (so its offsets are the ones users
meet): 15 float32 matrices of 4096x1024 (16 MiB each) and one bfloat16 of 8192x1024, in a
temporary directory, read from the page cache (the file was just written; both sides read
the same cached pages, so neither pays for the disk).

1. Time, interleaved in one process (A, B, B', ...; B'/B is the control, the noise of the
   run), medians:

   - open: ``to(Path(file), "torch")`` (a dict of tensors over a private memory map, no value
     read) against ``load_file(file)`` (every tensor read into memory torch allocates);
   - first tensor touched: the same, then ``.sum()`` of the first tensor;
   - every tensor touched: the same, then ``.sum()`` of every tensor (both read all bytes).

2. Memory, each side in a child process of its own (imports and a warm-up call first):
   resident memory after opening (psutil RSS minus the RSS before), the peak (the
   process's ``ru_maxrss`` minus the RSS before), and resident memory after every tensor was
   touched. Target (the issue): opening costs < 32 MiB resident with ``to()``.

Usage: python benchmarks/tensor_files.py [--quick]
"""

from __future__ import annotations

import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
from bench import standalone
from functions import installed

from interop_core import to

Row = list[str]
Section = tuple[str, Row, list[Row]]
MiB = 1 << 20
#: Rounds per side, by --quick.
ROUNDS = {False: 15, True: 4}
#: Resident memory an open may cost (the issue's target).
RESIDENT_TARGET = 32 * MiB
TIME_HEAD = ["measured", "to(Path) ms", "load_file ms", "load_file / to()", "control"]

MEMORY_HEAD = ["side", "resident after open MiB", "peak MiB", "resident after touching MiB",
               "open < 32 MiB"]  # fmt: skip
#: Lines bench.py adds to its report's notes.
NOTES = [
    "- safetensors rows: `to(pathlib.Path(f), 'torch')` maps the file privately "
    "(copy-on-write) and gives tensors over the mapping; `load_file` reads every tensor "
    "into memory torch allocates. Both read the file from the page cache here. Memory is "
    "measured in a child process per side: RSS after the call minus RSS before (after the "
    "imports and a warm-up call on a small file), and `ru_maxrss` minus the same.",
]


def write_file(folder: str) -> pathlib.Path:
    """The 256 MiB file (see the module's docstring)."""
    import ml_dtypes
    import numpy as np
    from safetensors.numpy import save_file

    rng = np.random.default_rng(0)
    tensors = {f"layer{i:02d}.weight": rng.standard_normal((4096, 1024), np.float32)
               for i in range(15)}  # fmt: skip
    tensors["embed.bf16"] = rng.standard_normal((8192, 1024), np.float32).astype(ml_dtypes.bfloat16)
    path = pathlib.Path(folder) / "model.safetensors"
    save_file(tensors, str(path))
    return path


def _median_ms(sides: list[Callable[[], Any]], rounds: int) -> list[float]:
    """Medians (ms per call) of ``sides`` run in alternating rounds, 10 ms idle before each."""
    times: list[list[float]] = [[] for _ in sides]
    for _ in range(rounds):
        for fn, t in zip(sides, times, strict=True):
            time.sleep(0.01)
            start = time.perf_counter()
            fn()
            t.append((time.perf_counter() - start) * 1e3)
    return [statistics.median(t) for t in times]


def time_rows(
    cases: list[tuple[str, Callable[[], Any], Callable[[], Any]]], quick: bool
) -> list[Row]:
    """One row per (label, to() side, load_file side): medians, the ratio, the control."""
    rows = []
    for label, a, b in cases:
        ms_a, ms_b, ms_again = _median_ms([a, b, b], ROUNDS[quick])
        rows.append([label, f"{ms_a:.2f}", f"{ms_b:.1f}", f"{ms_b / ms_a:.1f}x",
                     f"{ms_again / ms_b:.3f}x"])  # fmt: skip
    return rows


def time_section(path: pathlib.Path, quick: bool) -> Section:
    """Open, first tensor touched, every tensor touched: to(Path) vs load_file."""
    from safetensors.torch import load_file

    first = next(iter(to(path, "torch")))
    ours = to(path, "torch")
    theirs = load_file(str(path))
    assert set(ours) == set(theirs)
    assert all(bool((ours[k] == theirs[k]).all()) for k in ours), "values differ"
    del ours, theirs

    def touch_first(d: dict[str, Any]) -> None:
        float(d[first].float().sum())

    def touch_all(d: dict[str, Any]) -> None:
        for t in d.values():
            float(t.float().sum())

    cases: list[tuple[str, Callable[[], Any], Callable[[], Any]]] = [
        ("open", lambda: to(path, "torch"), lambda: load_file(str(path))),
        ("first tensor touched", lambda: touch_first(to(path, "torch")),
         lambda: touch_first(load_file(str(path)))),
        ("every tensor touched", lambda: touch_all(to(path, "torch")),
         lambda: touch_all(load_file(str(path)))),
    ]  # fmt: skip
    rows = time_rows(cases, quick)
    if installed("jax"):
        rows += jax_rows(path, quick)
    title = "safetensors: to(Path, target) vs safetensors' load_file, 256 MiB (ms)"
    return (title, TIME_HEAD, rows)


def jax_rows(path: pathlib.Path, quick: bool) -> list[Row]:
    """to(Path, "jax") vs safetensors.flax.load_file: open (arrays ready) and every array
    summed. save_file's tensors start 8 bytes past a 64-byte boundary here and there, so
    explain() counts one copy for each unaligned one (the row says how many)."""
    import jax
    import numpy as np
    from safetensors.flax import load_file

    from interop_core import explain

    route = explain(path, "jax")
    copied = sum(r.copies for r in route.routes.values())

    def ready(d: dict[str, Any]) -> dict[str, Any]:
        return jax.block_until_ready(d)  # type: ignore[no-untyped-call, no-any-return]

    def touch_all(d: dict[str, Any]) -> None:
        for x in d.values():
            float(np.asarray(x).astype(np.float32).sum())

    cases: list[tuple[str, Callable[[], Any], Callable[[], Any]]] = [
        (f"jax: open ({copied} of {len(route.routes)} copied)",
         lambda: ready(to(path, "jax")), lambda: ready(load_file(str(path)))),
        ("jax: every tensor touched", lambda: touch_all(to(path, "jax")),
         lambda: touch_all(load_file(str(path)))),
    ]  # fmt: skip
    return time_rows(cases, quick)


_CHILD = """
import json, pathlib, sys
import numpy as np, psutil
from interop_core import to

side, small, big = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
if side == "load_file":
    from safetensors.torch import load_file
elif side == "flax":
    from safetensors.flax import load_file
def call(p):
    if side.startswith("to:"):
        return to(p, side[3:])
    return load_file(str(p))
def peak():
    status = open("/proc/self/status").read().split("VmHWM:")[1]
    return int(status.split()[0]) * 1024
call(small)  # warm-up: plugins, converters, the library's own first-call costs
me = psutil.Process()
open("/proc/self/clear_refs", "w").write("5")  # resets the peak (VmHWM) to the RSS now
before = me.memory_info().rss
out = call(big)
for x in out.values():
    getattr(x, "block_until_ready", lambda: None)()
opened, high = me.memory_info().rss, peak()
for x in out.values():
    float(np.asarray(x).astype(np.float32).sum()) if side.endswith(("jax", "flax")) else \
        float(x.float().sum())
touched = me.memory_info().rss
print(json.dumps({"opened": opened - before, "peak": high - before,
                  "touched": touched - before}))
"""


def memory_section(path: pathlib.Path) -> Section:
    """Resident and peak memory of each side, in a child process of its own."""
    import numpy as np
    from safetensors.numpy import save_file

    small = path.with_name("small.safetensors")
    save_file({"a": np.ones(4, np.float32)}, str(small))
    rows = []
    sides = [("to:torch", "to(Path, 'torch')"), ("load_file", "safetensors.torch.load_file")]
    if installed("jax"):
        sides += [("to:jax", "to(Path, 'jax')"), ("flax", "safetensors.flax.load_file")]
    for side, label in sides:
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, side, str(small), str(path)],
            capture_output=True, text=True, timeout=600, check=True,
        )  # fmt: skip
        got = json.loads(done.stdout.strip().splitlines()[-1])
        met = "-"
        if side == "to:torch":
            met = "yes" if got["opened"] < RESIDENT_TARGET else "NO"
        rows.append([label, f"{got['opened'] / MiB:.1f}", f"{got['peak'] / MiB:.1f}",
                     f"{got['touched'] / MiB:.1f}", met])  # fmt: skip
    return ("safetensors: memory of opening a 256 MiB file (child processes)", MEMORY_HEAD, rows)


def sections(quick: bool) -> list[Section]:
    """This module's sections: time, then memory (nothing when torch or safetensors is
    missing)."""
    if not (installed("torch") and installed("safetensors") and installed("psutil")):
        return []
    with tempfile.TemporaryDirectory(prefix="interop-bench-safetensors-") as folder:
        path = write_file(folder)
        return [time_section(path, quick), memory_section(path)]


def main() -> int:
    return standalone(sections, __doc__ or "")


if __name__ == "__main__":
    sys.exit(main())
