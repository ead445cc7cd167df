"""Sharded arrays through ``to()`` against gathering through numpy, measured side by side.

As in bench.py, whose report includes these sections, every comparison is interleaved in one
run (A, B, A, B, ...) and reports medians. Three sections:

- a 1 GiB float32 jax.Array sharded ``P("d")`` over 4 processes (one jax CPU device and one
  gloo rank each, a 256 MiB shard per rank): ``to(x, "torch", mesh=device_mesh)`` and back
  ``to(dtensor, "jax")`` against what a user writes without it, gathering the whole array
  through numpy on every process (``process_allgather``, ``torch.from_numpy``,
  ``distribute_tensor``; back ``full_tensor().numpy()``, ``jax.make_array_from_callback``);
- in the same 4-process run, ``to()`` at global sizes 1 MiB .. 1 GiB: the per-shard cost must
  not grow with the shard's size (target: 1 GiB <= 2 x 1 MiB);
- one process with 4 jax host devices: gathering ``to(x, "torch")`` / ``to(x, "numpy")`` vs
  ``torch.from_numpy(np.asarray(x))`` / ``np.asarray(x)`` (informational).

The 4 ranks and the 4-device process are subprocesses of this file (``--rank``,
``--single-json``): jax fixes its devices when first imported. Each rank prints nothing but
errors; rank 0 prints the results as one JSON line, after gathering every rank's timings.

Usage: python benchmarks/sharded.py [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import functools
import gc
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from typing import IO, Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
from bench import print_sections, rss_kib
from functions import installed, skip_row

from interop_core import to

# The ranks join their groups as the multi-process tests' ranks do (test code, not the core's).
sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from process_group import process_group_rank

# JAX arrays are read-only; torch.from_numpy of one says so once per process.
warnings.filterwarnings("ignore", "The given NumPy array is not writable")

Row = list[str]
Section = tuple[str, Row, list[Row]]

MiB = 1 << 20
#: Ranks of the multi-process run, and jax devices of the single-process one.
WORLD = 4
#: Columns of every array (float32): a size's rows split evenly over WORLD shards.
COLS = 8192
#: Global sizes of the scaling section (label, bytes); the last is the main comparison's.
SIZES = [("1 MiB", MiB), ("16 MiB", 16 * MiB), ("256 MiB", 256 * MiB), ("1 GiB", 1024 * MiB)]
BIG = SIZES[-1]
#: Rounds (after one warm-up) of the comparison that moves 1 GiB between 4 processes, by
#: --quick: a round takes ~12 s on the 2-core VM.
BIG_ROUNDS = {False: 5, True: 2}
#: Rounds (after one warm-up) of the single-process section, by --quick: on the 2-core VM
#: a 1 GiB copy into fresh pages takes ~0.3 s, or 0.5-1.3 s at random (either side).
SINGLE_ROUNDS = {False: 15, True: 3}
#: Rounds of the scaling section, and to() calls per side per round, by --quick.
SCALE_ROUNDS = {False: 15, True: 7}
CALLS = {False: 50, True: 20}
#: A rank or the single process that takes longer than this (s) dumps its stack and exits.
WATCHDOG_S = {False: 400, True: 240}
ONE_DEVICE = "--xla_force_host_platform_device_count=1"
FOUR_DEVICES = f"--xla_force_host_platform_device_count={WORLD}"
#: Marks the JSON line a subprocess prints (jax and gloo print other lines).
JSON_MARK = "SHARDED-JSON "

HEAD_DTENSOR = ["direction", "to() ms", "gather through numpy ms", "to() / gather",
                "peak extra MiB: to()", "peak extra MiB: gather",
                "to() shares the shard"]  # fmt: skip
HEAD_SCALE = ["to(), ms per call", *(label for label, _ in SIZES), f"{BIG[0]} / {SIZES[0][0]}",
              "control", "zero-copy at every size", "<= 2x"]  # fmt: skip
HEAD_SINGLE = ["conversion", "to() ms", "compared with", "ms", "ratio", "control",
               "peak extra: to()", "peak extra: compared", "target"]  # fmt: skip

#: Lines bench.py adds to its report's notes.
NOTES = [
    "- Sharded rows (DTensor): 4 processes, each with one jax CPU device "
    "(`XLA_FLAGS=--xla_force_host_platform_device_count=1`, `jax.distributed.initialize`) "
    "and one gloo rank on the loopback address, share this machine's cores. Every timed "
    "side starts after a `dist.barrier()`, so all ranks run it at once; a row reports, per "
    "round, the slowest rank's time, then the median over rounds. Peak extra memory is rank "
    "0's (VmHWM reset before the call, minus the resident memory then), the least of the "
    "rounds.",
    "- The DTensor baseline is what a user writes without `to()`: `np.asarray(x)` fails on an "
    "array that spans processes, so jax -> DTensor is "
    "`jax.experimental.multihost_utils.process_allgather(x, tiled=True)` (the whole array in "
    "numpy on every process), `torch.from_numpy`, then `distribute_tensor(t, mesh, "
    "[Shard(0)])` (which scatters rank 0's copy); DTensor -> jax is "
    "`d.full_tensor().numpy()` (a gloo all-gather) then `jax.make_array_from_callback(shape, "
    "sharding, lambda idx: full[idx])`, whose shard jax builds from a view of the gathered "
    "array, keeping the whole 1 GiB alive. `to()` moves nothing between processes: each "
    "rank wraps its own shard (DLPack both ways), so the column `to() shares the shard` "
    "checks pointers (the DTensor's local tensor is the jax shard's buffer; the jax.Array "
    "made back from it has that buffer again).",
    "- Sharded round trip: the two directions' times added per round (jax -> DTensor -> "
    "jax). There is no control column there: the sides differ by four orders of magnitude. "
    "The first `DTensor.from_local` in a process imports `torch._dynamo` (~1 s, several "
    "with 4 processes on 2 cores); the warm-up round takes it.",
    "- Sharded scaling: the same `to()` calls at global sizes 1 MiB .. 1 GiB (shards of a "
    "quarter), interleaved with a second run of the 1 MiB side (control = second / first: "
    "the noise of the run); neither direction touches the data. A call took 0.7-2 ms in "
    "runs on the 2-core VM, where 4 ranks share the cores (more when other work ran); in one "
    "process (one rank) it is ~0.5 ms each way. "
    "`to(x, 'torch', mesh=mesh)` is planned on every call (a request with options takes no "
    "warm path), about two thirds of that 0.5 ms; the converter itself (`torch.from_dlpack` "
    "of the shard, `DTensor.from_local`) ~0.17 ms. Back, `jax.dlpack.from_dlpack` and "
    "`make_array_from_single_device_arrays` are most of it.",
    "- Single-process sharded rows: `np.asarray(x)` caches its result on the jax.Array, so "
    "every call (both sides) gets a fresh jax.Array over the same four shards "
    "(`jax.make_array_from_single_device_arrays`), built outside the timing. Both sides copy "
    "1 GiB once into fresh memory; on this VM such a copy takes ~0.3 s or, at random, "
    "0.5-1.3 s (page faults), so the ratio moves by tens of percent between runs (a full "
    "run measured 1.67x for `to(x, 'torch')` once, ~0.95x in others): read the control.",
]


# -- helpers for every process ------------------------------------------------------------


def measured(fn: Callable[[], Any]) -> tuple[float, int | None, Any]:
    """ms of one ``fn()``, the peak resident memory it added (Linux: VmHWM after resetting
    it; None elsewhere), and its result."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset the high-water mark to the current RSS
        base: int | None = rss_kib("VmRSS")
    except (OSError, RuntimeError):  # no /proc (not Linux), or no such field
        base = None
    started = time.perf_counter()
    out = fn()
    ms = (time.perf_counter() - started) * 1e3
    peak = None if base is None else (rss_kib("VmHWM") - base) * 1024
    return ms, peak, out


def least(peaks: list[int | None]) -> int | None:
    """The least noisy peak reading (allocator reuse only lowers one), None if unknown."""
    known = [p for p in peaks if p is not None]
    return min(known) if known else None


def rows_of(nbytes: int) -> int:
    return nbytes // (4 * COLS)


def json_line(out: str) -> dict[str, Any] | None:
    """The last JSON_MARK line of a subprocess's stdout, parsed."""
    found = [line for line in out.splitlines() if line.startswith(JSON_MARK)]
    return json.loads(found[-1][len(JSON_MARK) :]) if found else None


def _tail(err: str) -> str:
    """The last meaningful line of a subprocess's stderr."""
    lines = [ln for ln in err.strip().splitlines() if ln.strip() and "[Gloo]" not in ln]
    return (lines or ["no output"])[-1][:160]


# -- one rank of the multi-process run ----------------------------------------------------


def rank_main(rank: int, world: int, ports: list[int], quick: bool) -> int:
    """Set up jax.distributed and a gloo group, measure, and (rank 0) print the JSON."""
    os.environ["XLA_FLAGS"] = ONE_DEVICE  # before jax is imported: one CPU device per rank
    faulthandler.dump_traceback_later(WATCHDOG_S[quick], exit=True)
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_gloo_available()):
        if rank == 0:
            print(JSON_MARK + json.dumps({"skip": "torch.distributed with gloo is not "
                                          "available"}), flush=True)  # fmt: skip
        return 0
    with process_group_rank(rank, world, *ports):
        result = rank_measure(rank, world, quick)
    if rank == 0:
        print(JSON_MARK + json.dumps(result), flush=True)
    return 0


def rank_measure(rank: int, world: int, quick: bool) -> dict[str, Any]:
    """Every rank's measurements; rank 0 gets the rows (slowest rank per round, medians)."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    import torch
    import torch.distributed as dist
    from jax.experimental import multihost_utils
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard, distribute_tensor

    mesh = init_device_mesh("cpu", (world,), mesh_dim_names=("d",))
    sharding = NamedSharding(Mesh(np.array(jax.devices()), ("d",)), P("d"))
    device = jax.local_devices()[0]

    def global_array(nbytes: int) -> Any:
        """A float32 (rows, COLS) array over the ranks; this rank's block made by jax
        (64-byte aligned) and filled with the rank's number."""
        rows = rows_of(nbytes)
        local = jnp.full((rows // world, COLS), float(rank), jnp.float32, device=device)
        return jax.make_array_from_single_device_arrays((rows, COLS), sharding, [local])

    def ptr(x: Any) -> int:
        return int(x.addressable_shards[0].data.unsafe_buffer_pointer())

    def calls_ms(fn: Callable[[], Any], number: int) -> float:
        """ms per call of ``fn`` over ``number`` calls, started with every rank."""
        dist.barrier()
        started = time.perf_counter()
        for _ in range(number):
            fn()
        return (time.perf_counter() - started) * 1e3 / number

    def synced(fn: Callable[[], Any]) -> tuple[float, int | None, Any]:
        dist.barrier()
        return measured(fn)

    def ours_to(x: Any) -> Any:
        return to(x, "torch", mesh=mesh)

    def ours_back(d: Any) -> Any:
        return jax.block_until_ready(to(d, "jax"))

    def gather_to(x: Any) -> Any:
        full = multihost_utils.process_allgather(x, tiled=True)
        return distribute_tensor(torch.from_numpy(full), mesh, [Shard(0)])

    def gather_back(d: Any) -> Any:
        full = d.full_tensor().numpy()
        return jax.block_until_ready(
            jax.make_array_from_callback(tuple(d.shape), sharding, lambda idx: full[idx])
        )

    arrays = {label: global_array(nbytes) for label, nbytes in SIZES}
    x = arrays[BIG[0]]
    number = CALLS[quick]
    times: dict[str, list[float]] = {k: [] for k in ("to", "back", "g_to", "g_back")}
    peaks: dict[str, list[int | None]] = {k: [] for k in times}
    shared = {"to": True, "back": True, "scale": True}
    # The first round warms up: the first DTensor.from_local imports torch._dynamo, the
    # first process_allgather compiles, and a first 1 GiB round is twice as slow as later ones.
    warm = 1
    for i in range(warm + BIG_ROUNDS[quick]):
        t_to = calls_ms(functools.partial(ours_to, x), number)
        _, p_to, d = synced(functools.partial(ours_to, x))
        t_back = calls_ms(functools.partial(ours_back, d), number)
        _, p_back, y = synced(functools.partial(ours_back, d))
        shared["to"] &= d.to_local().data_ptr() == ptr(x)
        shared["back"] &= ptr(y) == ptr(x)
        del d, y
        t_gto, p_gto, d_base = synced(functools.partial(gather_to, x))
        t_gback, p_gback, y_base = synced(functools.partial(gather_back, d_base))
        if i == 0:  # the baseline is right: this rank's shard came back
            local = np.asarray(y_base.addressable_shards[0].data)
            assert local.shape == x.addressable_shards[0].data.shape and (local == rank).all()
            del local
        del d_base, y_base
        gc.collect()
        if i < warm:
            continue
        for key, ms, peak in [("to", t_to, p_to), ("back", t_back, p_back),
                              ("g_to", t_gto, p_gto), ("g_back", t_gback, p_gback)]:  # fmt: skip
            times[key].append(ms)
            peaks[key].append(peak)

    # Scaling: to() at every size, and the smallest again (the control), interleaved.
    sides = [*SIZES, (SIZES[0][0] + " again", SIZES[0][1])]
    xs = [arrays[label.removesuffix(" again")] for label, _ in sides]
    ds = [ours_to(a) for a in xs]
    scale_to: list[list[float]] = [[] for _ in sides]
    scale_back: list[list[float]] = [[] for _ in sides]
    for a, d in zip(xs, ds, strict=True):  # warm-up, and the zero-copy check per size
        shared["scale"] &= d.to_local().data_ptr() == ptr(a)
        shared["scale"] &= ptr(ours_back(d)) == ptr(a)
    for _ in range(SCALE_ROUNDS[quick]):
        for a, ts in zip(xs, scale_to, strict=True):
            ts.append(calls_ms(functools.partial(ours_to, a), number))
        for d, ts in zip(ds, scale_back, strict=True):
            ts.append(calls_ms(functools.partial(ours_back, d), number))

    mine = {"times": times, "scale_to": scale_to, "scale_back": scale_back,
            "peaks": peaks, "shared": shared}  # fmt: skip
    everyone: list[Any] = [None] * world
    dist.all_gather_object(everyone, mine)
    shared_all = {k: all(r["shared"][k] for r in everyone) for k in shared}
    return {
        "times": {k: slowest([r["times"][k] for r in everyone]) for k in times},
        "scale_to": [slowest([r["scale_to"][i] for r in everyone]) for i in range(len(sides))],
        "scale_back": [slowest([r["scale_back"][i] for r in everyone]) for i in range(len(sides))],
        "peaks": {k: least(v) for k, v in peaks.items()},  # rank 0's
        "sum_ours": slowest_sum(everyone, "to", "back"),
        "sum_gather": slowest_sum(everyone, "g_to", "g_back"),
        "shared": shared_all,
        "rounds": BIG_ROUNDS[quick],
    }


def slowest(per_rank: list[list[float]]) -> float:
    """The median over rounds of the slowest rank's time in each round."""
    return float(statistics.median(max(ts) for ts in zip(*per_rank, strict=True)))


def slowest_sum(everyone: list[Any], a: str, b: str) -> float:
    """The median over rounds of (slowest rank's ``a`` + slowest rank's ``b``)."""
    ta = [max(ts) for ts in zip(*(r["times"][a] for r in everyone), strict=True)]
    tb = [max(ts) for ts in zip(*(r["times"][b] for r in everyone), strict=True)]
    return float(statistics.median(x + y for x, y in zip(ta, tb, strict=True)))


# -- the single process with four host devices --------------------------------------------


def single_measure(quick: bool) -> dict[str, Any]:
    """Gathering a sharded jax.Array in one process: to() vs np.asarray routes."""
    faulthandler.dump_traceback_later(WATCHDOG_S[quick], exit=True)
    import jax
    import jax.numpy as jnp
    import numpy as np
    import torch
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    devices = jax.devices()[:WORLD]
    if len(devices) < WORLD:
        return {"skip": f"jax has {len(devices)} devices, not {WORLD} (XLA_FLAGS ignored)"}
    sharding = NamedSharding(Mesh(np.array(devices), ("d",)), P("d"))
    rows = rows_of(BIG[1])
    shape = (rows, COLS)
    blocks = [jnp.full((rows // WORLD, COLS), float(i), jnp.float32, device=dev)
              for i, dev in enumerate(devices)]  # fmt: skip

    def fresh() -> Any:
        """A new jax.Array over the same shards: np.asarray caches its value per Array."""
        return jax.make_array_from_single_device_arrays(shape, sharding, blocks)

    x = fresh()
    shard_ptrs = {int(s.data.unsafe_buffer_pointer()) for s in x.addressable_shards}
    t = to(x, "torch")
    assert t.data_ptr() not in shard_ptrs and (t[:: rows // WORLD, 0].numpy() == [0, 1, 2, 3]).all()
    del x, t
    pairs: list[tuple[str, Callable[[Any], Any], str, Callable[[Any], Any]]] = [
        ("jax -> torch: `to(x, 'torch')`", lambda a: to(a, "torch"),
         "`torch.from_numpy(np.asarray(x))`", lambda a: torch.from_numpy(np.asarray(a))),
        ("jax -> numpy: `to(x, 'numpy')`", lambda a: to(a, "numpy"),
         "`np.asarray(x)`", np.asarray),
    ]  # fmt: skip
    rows_out: list[Row] = []
    nbytes = BIG[1]
    for name, ours, other, theirs in pairs:
        times: list[list[float]] = [[], [], []]
        peaks: list[list[int | None]] = [[], [], []]
        for i in range(1 + SINGLE_ROUNDS[quick]):
            for fn, t_list, p_list in zip((ours, theirs, theirs), times, peaks, strict=True):
                a = fresh()
                ms, peak, out = measured(lambda fn=fn, a=a: fn(a))  # type: ignore[misc]
                del out, a
                gc.collect()
                if i:  # the first round warms up
                    t_list.append(ms)
                    p_list.append(peak)
        t_ours, t_theirs, t_again = (statistics.median(t) for t in times)
        p_ours, p_theirs = least(peaks[0]), least(peaks[1])
        rows_out.append([
            name, f"{t_ours:.0f}", other, f"{t_theirs:.0f}", f"{t_ours / t_theirs:.2f}x",
            f"{t_again / t_theirs:.2f}x", _ratio(p_ours, nbytes), _ratio(p_theirs, nbytes), "-",
        ])  # fmt: skip
    return {"rows": rows_out}


def _ratio(peak: int | None, nbytes: int) -> str:
    return "-" if peak is None else f"{peak / nbytes:.2f}x"


def _mib(peak: int | None) -> str:
    return "-" if peak is None else f"{peak / MiB:.0f}"


# -- the parent: start the subprocesses, make the sections --------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_ranks(quick: bool) -> dict[str, Any]:
    """Start WORLD ranks of this file, wait for them (killing all if one fails or hangs),
    and return rank 0's JSON, or {"failed": why}."""
    ports = [str(free_port()), str(free_port())]
    env = {**os.environ, "XLA_FLAGS": ONE_DEVICE}
    me = os.path.abspath(__file__)
    procs: list[subprocess.Popen[str]] = []
    with contextlib.ExitStack() as files:
        # Files, not pipes: a rank must never block on a full pipe that nobody reads.
        outs = [files.enter_context(tempfile.TemporaryFile("w+")) for _ in range(WORLD)]
        errs = [files.enter_context(tempfile.TemporaryFile("w+")) for _ in range(WORLD)]
        try:
            for rank in range(WORLD):
                cmd = [sys.executable, me, "--rank", str(rank), "--ports", *ports]
                cmd += ["--quick"] if quick else []
                procs.append(subprocess.Popen(
                    cmd, env=env, stdout=outs[rank], stderr=errs[rank], text=True
                ))  # fmt: skip
            return _wait(procs, outs[0], errs, time.monotonic() + WATCHDOG_S[quick] + 60)
        finally:
            for p in procs:  # a rank left waiting for a dead peer must not outlive the run
                if p.poll() is None:
                    p.kill()
                    p.wait()


def _wait(
    procs: list[subprocess.Popen[str]], out: IO[str], errs: Sequence[IO[str]], deadline: float
) -> dict[str, Any]:
    """Wait for every rank; the first that fails ends the wait. Rank 0's JSON, or why not."""
    while True:
        codes = [p.poll() for p in procs]  # every rank polled: any() would stop at one
        if None not in codes or any(codes) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    failed = next((r for r, p in enumerate(procs) if p.returncode), None)
    if failed is not None:
        errs[failed].seek(0)
        why = _tail(errs[failed].read())
        return {"failed": f"rank {failed} exited {procs[failed].returncode}: {why}"}
    if any(p.returncode is None for p in procs):
        return {"failed": "timed out"}
    out.seek(0)
    result = json_line(out.read())
    return result if result is not None else {"failed": "rank 0 printed no result"}


def dtensor_sections(quick: bool) -> list[Section]:
    """The 4-process sections: to/from DTensor vs gathering through numpy; scaling."""
    cores = os.cpu_count()
    title = (
        f"jax.Array <-> torch DTensor: a {BIG[0]} float32 array ({rows_of(BIG[1])}x{COLS}) "
        f"sharded `P('d')` over {WORLD} processes (one jax CPU device and one gloo rank each, "
        f"on {cores} cores), `to(x, 'torch', mesh=mesh)` and back `to(d, 'jax')` vs gathering "
        "through numpy (`process_allgather`, `torch.from_numpy`, `distribute_tensor`; back "
        "`full_tensor().numpy()`, `make_array_from_callback`); slowest rank per round, "
        f"medians of {BIG_ROUNDS[quick]} rounds (ms)"
    )
    title_scale = (
        f"Per-shard `to()` cost does not grow with the shard's size (same {WORLD} processes; "
        f"global sizes, each rank holding a quarter; {CALLS[quick]} calls per side per round, "
        f"slowest rank per round, medians of {SCALE_ROUNDS[quick]} rounds; control = the "
        f"{SIZES[0][0]} side again / first)"
    )
    if not (installed("jax") and installed("torch")):
        return [
            (title, HEAD_DTENSOR, [skip_row("all", "needs jax and torch", len(HEAD_DTENSOR))]),
            (title_scale, HEAD_SCALE, [skip_row("all", "needs jax and torch", len(HEAD_SCALE))]),
        ]
    result = run_ranks(quick)
    if "skip" in result or "failed" in result:
        why = result.get("skip") or f"failed: {result['failed']}"
        mark = "-" if "skip" in result else "NO"  # a failed run fails the benchmark
        return [
            (title, HEAD_DTENSOR, [[*skip_row("all", why, len(HEAD_DTENSOR))[:-1], mark]]),
            (title_scale, HEAD_SCALE, [[*skip_row("all", why, len(HEAD_SCALE))[:-1], mark]]),
        ]
    t, p, shared = result["times"], result["peaks"], result["shared"]

    def yes(ok: bool) -> str:
        return "yes" if ok else "NO"

    rows = [
        ["jax.Array -> DTensor", f"{t['to']:.2f}", f"{t['g_to']:.0f}",
         f"{t['to'] / t['g_to']:.1e}x", _mib(p["to"]), _mib(p["g_to"]), yes(shared["to"])],
        ["DTensor -> jax.Array", f"{t['back']:.2f}", f"{t['g_back']:.0f}",
         f"{t['back'] / t['g_back']:.1e}x", _mib(p["back"]), _mib(p["g_back"]),
         yes(shared["back"])],
        ["round trip", f"{result['sum_ours']:.2f}", f"{result['sum_gather']:.0f}",
         f"{result['sum_ours'] / result['sum_gather']:.1e}x", "-", "-",
         yes(shared["to"] and shared["back"])],
    ]  # fmt: skip
    scale_rows = []
    for name, ts in [("jax.Array -> DTensor", result["scale_to"]),
                     ("DTensor -> jax.Array", result["scale_back"])]:  # fmt: skip
        growth = ts[len(SIZES) - 1] / ts[0]
        scale_rows.append([
            name, *(f"{v:.3f}" for v in ts[: len(SIZES)]), f"{growth:.2f}x",
            f"{ts[-1] / ts[0]:.2f}x", yes(shared["scale"]), yes(growth <= 2.0),
        ])  # fmt: skip
    return [(title, HEAD_DTENSOR, rows), (title_scale, HEAD_SCALE, scale_rows)]


def single_section(quick: bool) -> Section:
    """The single-process section, measured in a subprocess with four jax host devices."""
    title = (
        f"Gathering a sharded jax.Array in one process: {BIG[0]} float32 sharded `P('d')` over "
        f"{WORLD} host devices (`XLA_FLAGS={FOUR_DEVICES}`, a subprocess); the compared side "
        "runs twice per round (control = second / first: the noise); peak = extra resident "
        f"memory / bytes; medians of {SINGLE_ROUNDS[quick]} rounds (ms, informational)"
    )
    width = len(HEAD_SINGLE)
    if not (installed("jax") and installed("torch")):
        return title, HEAD_SINGLE, [skip_row("all", "needs jax and torch", width)]
    cmd = [sys.executable, os.path.abspath(__file__), "--single-json"]
    env = {**os.environ, "XLA_FLAGS": FOUR_DEVICES}
    try:
        out = subprocess.run(cmd + (["--quick"] if quick else []), capture_output=True,
                             text=True, env=env, timeout=WATCHDOG_S[quick] + 60)  # fmt: skip
    except subprocess.TimeoutExpired:
        return title, HEAD_SINGLE, [[*skip_row("all", "timed out", width)[:-1], "NO"]]
    result = json_line(out.stdout)
    if out.returncode or result is None:
        why = f"failed: {_tail(out.stderr)}"
        return title, HEAD_SINGLE, [[*skip_row("all", why, width)[:-1], "NO"]]
    if "skip" in result:
        return title, HEAD_SINGLE, [skip_row("all", result["skip"], width)]
    return title, HEAD_SINGLE, result["rows"]


def sections(quick: bool) -> list[Section]:
    """The sharded-array sections, as (title, head, rows)."""
    return [*dtensor_sections(quick), single_section(quick)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (a smoke run)")
    parser.add_argument("--rank", type=int, help="run as this rank of the 4-process run")
    parser.add_argument("--ports", type=int, nargs=2, help="jax and gloo ports (with --rank)")
    parser.add_argument(
        "--single-json", action="store_true", help="only the single-process rows, as JSON"
    )
    args = parser.parse_args()
    if args.rank is not None:
        return rank_main(args.rank, WORLD, args.ports, args.quick)
    if args.single_json:
        print(JSON_MARK + json.dumps(single_measure(args.quick)), flush=True)
        return 0
    started = time.time()
    return print_sections(sections(args.quick), started)


if __name__ == "__main__":
    sys.exit(main())
