"""GPU routes through ``to()`` against the frameworks' own calls, measured side by side.

As in bench.py, every comparison is interleaved in one run (A, B, A, B, ...) and reports
medians. Four sections, over torch, JAX and CuPy on the first GPU (cuda:0):

- warm overhead per pair: ``to(x, dst)`` vs the consumer's own ``from_dlpack(x)`` (µs);
- a zero-copy call does not grow with size: ``to()`` on 1 MiB vs 1 GiB;
- copy bandwidth: host -> GPU, GPU -> host and (with two GPUs) GPU -> GPU through ``to()``
  vs the framework's own copy of the same bytes in the same direction (goal: >= 0.8 of it),
  beside the GPU's own device-to-device copy bandwidth for scale;
- no host round trip: each same-GPU conversion shares the buffer (pointers read by the
  frameworks) and runs under ``jax.transfer_guard_*("disallow_explicit")``, which raises on
  any transfer between the host and a device.

Where no framework sees a GPU it says so and measures nothing. ``--device cpu`` runs the
same harness on the host (numpy, torch, JAX) to check the script itself.
``--write PATH`` replaces this file's block in PATH (bench.py keeps it when it rewrites).

Usage: python benchmarks/gpu.py [--quick] [--device cuda|cpu] [--write docs/benchmarks.md]
"""

from __future__ import annotations

import argparse
import contextlib
import platform
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from bench import interleaved, print_sections, table

from interop_core import default_registry, to

Row = list[str]
Section = tuple[str, Row, list[Row]]
MiB = 1 << 20
BEGIN = "<!-- gpu: written by benchmarks/gpu.py; bench.py keeps it -->"
END = "<!-- /gpu -->"


# -- the frameworks at hand --------------------------------------------------------------


def frameworks(device: str) -> list[str]:
    """The installed frameworks that hold arrays on ``device``: on "cuda" those that see a
    GPU (torch, JAX, CuPy); on "cpu" the host ones (numpy, torch, JAX)."""
    reg = default_registry()
    names = ("torch", "jax", "numpy") if device == "cpu" else ("torch", "jax", "cupy")
    return [
        n for n in names
        if reg.installed(reg.state.frameworks[n]) and (device == "cpu" or gpus(n))
    ]  # fmt: skip


def gpus(name: str) -> int:
    """CUDA GPUs framework ``name`` sees, as its plugin's ``devices()`` lists them."""
    devices = default_registry().state.frameworks[name].devices.visible
    return sum(d.startswith("cuda:") for d in devices()) if devices else 0


def make(name: str, nbytes: int, where: str) -> Any:
    """A float32 array of ``nbytes`` made by framework ``name`` on ``where``."""
    n = nbytes // 4
    if name == "torch":
        import torch

        return torch.ones(n, dtype=torch.float32, device=where)
    if name == "jax":
        import jax
        import jax.numpy as jnp

        return jax.device_put(jnp.ones(n, jnp.float32), jax_device(where)).block_until_ready()
    if name == "cupy":
        import cupy

        with cupy.cuda.Device(int(where.partition(":")[2] or 0)):
            return cupy.ones(n, dtype=cupy.float32)
    import numpy as np
    from interop_plugins.frameworks.numpy import aligned_empty

    a = aligned_empty((n,), np.float32)
    a.fill(1.0)
    return a


def jax_device(where: str) -> Any:
    import jax
    from interop_plugins.frameworks.jax import gpus_by_index

    if where == "cpu":
        return jax.devices("cpu")[0]
    return gpus_by_index()[int(where.partition(":")[2] or 0)]


def importer(name: str) -> Callable[[Any], Any]:
    """The consumer's own zero-copy import (the raw call ``to()`` is compared with)."""
    if name == "torch":
        import torch

        return torch.from_dlpack  # type: ignore[no-any-return]
    if name == "jax":
        import jax.dlpack

        return jax.dlpack.from_dlpack  # type: ignore[no-any-return]
    if name == "cupy":
        import cupy

        return cupy.from_dlpack  # type: ignore[no-any-return]
    import numpy as np

    return np.from_dlpack  # type: ignore[no-any-return]


def pointer(x: Any) -> int:
    """The first element's address, read by the framework that owns ``x``."""
    top = type(x).__module__.partition(".")[0]
    if top == "torch":
        return int(x.data_ptr())
    if top in ("jax", "jaxlib"):
        return int(x.unsafe_buffer_pointer())
    if top == "cupy":
        return int(x.data.ptr)
    return int(x.ctypes.data)


def settle(y: Any = None) -> Any:
    """Wait for every device's queued work (both sides of a timed copy pay the same)."""
    if hasattr(y, "block_until_ready"):
        y.block_until_ready()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            torch.cuda.synchronize(i)
    cupy = sys.modules.get("cupy")
    if cupy is not None and "torch" not in sys.modules:
        cupy.cuda.runtime.deviceSynchronize()
    return y


def timed_ms(fn: Callable[[], Any]) -> Callable[[], float]:
    """A round of ``fn`` returning its ms, settled before and after."""

    def once() -> float:
        settle()
        t0 = time.perf_counter()
        settle(fn())
        return (time.perf_counter() - t0) * 1e3

    return once


def alternate_ms(a: Callable[[], Any], b: Callable[[], Any], rounds: int) -> tuple[float, float]:
    """Medians (ms) of ``a`` and ``b`` run alternately, each settled."""
    ta, tb = timed_ms(a), timed_ms(b)
    ra, rb = [], []
    for _ in range(rounds):
        ra.append(ta())
        rb.append(tb())
    return statistics.median(ra), statistics.median(rb)


# -- sections ----------------------------------------------------------------------------


def warm_rows(names: list[str], where: str, quick: bool) -> list[Row]:
    rows = []
    for src in names:
        x = make(src, 4 * MiB, where)
        for dst in names:
            if dst == src or (dst == "numpy" and where != "cpu"):
                continue
            raw = importer(dst)
            to(x, dst)  # plan once, outside the measurement
            ours, theirs = interleaved(
                lambda x=x, dst=dst: to(x, dst), lambda x=x, raw=raw: raw(x),
                number=200 if quick else 2000, rounds=5 if quick else 15,
            )  # fmt: skip
            over = ours - theirs
            rows.append([f"{src} -> {dst}", f"{theirs:.2f}", f"{ours:.2f}",
                         f"{ours / theirs:.2f}x", f"{over:+.2f}", yes(over <= 1.0)])  # fmt: skip
    return rows


def big_bytes(quick: bool) -> int:
    return (256 if quick else 1024) * MiB


def size_rows(names: list[str], where: str, quick: bool) -> list[Row]:
    big = big_bytes(quick)
    rows = []
    for src in names:
        small_x, big_x = make(src, MiB, where), make(src, big, where)
        for dst in names:
            if dst == src or (dst == "numpy" and where != "cpu"):
                continue
            to(small_x, dst), to(big_x, dst)
            small, large = interleaved(
                lambda x=small_x, dst=dst: to(x, dst), lambda x=big_x, dst=dst: to(x, dst),
                number=100 if quick else 1000, rounds=5 if quick else 15,
            )  # fmt: skip
            shared = pointer(to(big_x, dst)) == pointer(big_x)
            ratio = large / small
            rows.append([f"{src} -> {dst}", f"{small:.2f}", f"{large:.2f}", f"{ratio:.2f}x",
                         yes(shared), yes(ratio <= 1.5)])  # fmt: skip
        del big_x
    return rows


def own_copy(name: str, direction: str, target: str) -> Callable[[Any], Any]:
    """The framework's own copy of an array in ``direction`` ("h2d", "d2h", "d2d")."""
    if name == "torch":
        import torch

        if direction == "h2d":
            return lambda a: torch.from_numpy(a).to(target)
        return (lambda x: x.cpu()) if direction == "d2h" else (lambda x: x.to(target))
    if name == "jax":
        import jax

        return lambda x: jax.device_put(x, jax_device("cpu" if direction == "d2h" else target))
    import cupy

    if direction == "d2h":
        return lambda x: x.get()
    index = int(target.partition(":")[2] or 0)

    def put(x: Any) -> Any:
        with cupy.cuda.Device(index):
            return cupy.asarray(x)

    return put


def bandwidth_rows(names: list[str], quick: bool) -> list[Row]:
    nbytes = big_bytes(quick)
    rounds = 5 if quick else 9
    gib = nbytes / (1 << 30)
    rows = []
    devices = min(gpus(n) for n in names)
    reference = device_copy_gbs(names[0], nbytes, rounds)
    plans: list[tuple[str, str, str, str]] = [("h2d", "numpy", "cpu", "cuda:0")]
    plans.append(("d2h", "", "cuda:0", "cpu"))
    if devices > 1:
        plans.append(("d2d", "", "cuda:0", "cuda:1"))
    for name in names:
        for direction, source, start, target in plans:
            x = make(source or name, nbytes, start)
            goal = "numpy" if direction == "d2h" else name
            raw = own_copy(name, direction, target)
            device = None if direction == "d2h" else target
            ours, theirs = alternate_ms(
                lambda x=x, goal=goal, device=device: to(x, goal, device=device),
                lambda x=x, raw=raw: raw(x), rounds,
            )  # fmt: skip
            frac = theirs / ours
            rows.append([f"{name} {direction} ({start} -> {target})", f"{gib / theirs * 1e3:.1f}",
                         f"{gib / ours * 1e3:.1f}", f"{frac:.2f}", f"{reference:.0f}",
                         yes(frac >= 0.8)])  # fmt: skip
            del x
    if devices < 2:
        rows.append(["GPU -> GPU", "skipped: one GPU here", "-", "-", f"{reference:.0f}", "-"])
    return rows


def device_copy_gbs(name: str, nbytes: int, rounds: int) -> float:
    """The GPU's own device-to-device copy bandwidth (GiB/s), by torch (or CuPy)."""
    x = make(name, nbytes, "cuda:0")
    if name == "torch":
        y = x.clone()
        copy = lambda: y.copy_(x)  # noqa: E731
    else:
        copy = lambda: x.copy()  # noqa: E731
    ms = statistics.median(timed_ms(copy)() for _ in range(rounds))
    return nbytes / (1 << 30) / ms * 1e3


def host_trip_rows(names: list[str], where: str) -> list[Row]:
    guards: Any = contextlib.nullcontext
    if "jax" in names:
        import jax

        @contextlib.contextmanager
        def no_host_transfers() -> Iterator[None]:
            with jax.transfer_guard_device_to_host("disallow_explicit"), \
                    jax.transfer_guard_host_to_device("disallow_explicit"):  # fmt: skip
                yield

        guards = no_host_transfers
    rows = []
    for src in names:
        x = make(src, 4 * MiB, where)
        for dst in names:
            if dst == src or dst == "numpy":
                continue
            try:
                with guards():
                    y = to(x, dst)
                guarded = "none" if "jax" in names else "no jax here"
            except Exception as exc:  # a transfer the guard refused
                guarded, y = f"{type(exc).__name__}", None
            shared = y is not None and pointer(y) == pointer(x)
            rows.append(
                [f"{src} -> {dst}", yes(shared), guarded, yes(shared and guarded == "none")]
            )
    return rows


def yes(ok: bool) -> str:
    return "yes" if ok else "NO"


def sections(quick: bool, device: str = "cuda") -> list[Section]:
    """The GPU sections (title, head, rows); on a machine without a GPU, rows that say so."""
    names = frameworks(device)
    where = "cuda:0" if device == "cuda" else "cpu"
    big = f"{big_bytes(quick) // MiB} MiB"
    heads = [
        (f"GPU: warm `to()` vs the consumer's own `from_dlpack` on {where} (4 MiB float32, "
         "µs per call)", ["pair", "raw µs", "to() µs", "ratio", "overhead µs", "<= raw + 1 µs"]),
        (f"GPU: a zero-copy `to()` on {where} does not grow with size (µs per call)",
         ["pair", "1 MiB", big, "ratio", "shares memory", "<= 1.5x"]),
        ("GPU: copy bandwidth through `to()` vs the framework's own copy of the same bytes in "
         f"the same direction (GiB/s, {big} float32, pageable host memory); the GPU's own "
         "device-to-device copy for scale",
         ["copy", "own GiB/s", "to() GiB/s", "fraction", "device copy GiB/s", ">= 0.8"]),
        (f"GPU: no host round trip on {where}: pointers read by the frameworks, and host "
         "transfers under `jax.transfer_guard_*('disallow_explicit')`",
         ["pair", "shares memory", "host transfers", "ok"]),
    ]  # fmt: skip
    gpu_names = [n for n in names if n != "numpy"]
    if device == "cuda" and not gpu_names:
        why = "no framework sees a CUDA GPU on this machine: run `nox -s gpu` on one"
        return [(t, h, [[why, *["-"] * (len(h) - 1)]]) for t, h in heads]
    rows = [
        warm_rows(names, where, quick),
        size_rows(names, where, quick),
        bandwidth_rows(gpu_names, quick) if device == "cuda" else
        [["(host run: no copies between devices)", *["-"] * 5]],
        host_trip_rows(names, where),
    ]  # fmt: skip
    return [(t, h, r) for (t, h), r in zip(heads, rows, strict=True)]


def block(found: list[Section], quick: bool, started: float) -> str:
    """This benchmark's block of docs/benchmarks.md."""
    versions = ", ".join(
        f"{n} {sys.modules[n].__version__}" for n in ("torch", "jax", "cupy") if n in sys.modules
    )
    run = f"GPU run: {gpu_name()}; Python {platform.python_version()}; "
    run += (versions or "no GPU framework") + ("; quick run" if quick else "") + "."
    lines = [BEGIN, "", run]
    for title, head, rows in found:
        lines += ["", f"## {title}", "", table(head, rows)]
    lines += ["", f"GPU benchmark time: {time.time() - started:.0f} s.", "", END]
    return "\n".join(lines)


def gpu_name() -> str:
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        return f"{torch.cuda.device_count()} x {torch.cuda.get_device_name(0)}"
    return "no CUDA GPU"


def splice(path: str, text: str) -> None:
    """Put ``text`` in place of the GPU block of the file at ``path`` (or at its end)."""
    with open(path) as f:
        old = f.read()
    if BEGIN in old and END in old:
        head, rest = old.split(BEGIN, 1)
        new = head + text + rest.split(END, 1)[1]
    else:
        new = old.rstrip("\n") + "\n\n" + text + "\n"
    with open(path, "w") as f:
        f.write(new)


def kept_block(path: str) -> str:
    """The GPU block of the file at ``path``, or a placeholder when it has none."""
    try:
        with open(path) as f:
            old = f.read()
    except OSError:
        old = ""
    if BEGIN in old and END in old:
        return BEGIN + old.split(BEGIN, 1)[1].split(END, 1)[0] + END
    return "\n".join([BEGIN, "", "## GPU", "", "Not measured yet: no GPU was at hand. On a CUDA "
                      "machine `nox -s gpu` (or `python benchmarks/gpu.py --write "
                      "docs/benchmarks.md`) writes this block.", "", END])  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds, 256 MiB copies")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--write", metavar="PATH", help="replace the GPU block of this file")
    args = parser.parse_args()
    started = time.time()
    found = sections(args.quick, args.device)
    status = print_sections(found, started)
    if args.write:
        splice(args.write, block(found, args.quick, started))
    return status


if __name__ == "__main__":
    sys.exit(main())
