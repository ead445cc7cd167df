"""Tables (issue 21) through ``to()`` against the libraries' own calls, measured side by side.

Every comparison is interleaved in one process and reports medians, as in bench.py, whose
report includes these sections; each also runs the compared side a second time in the same
rounds (A, B, B', A, B, B', ...): the ratio B'/B, the "control", is the noise of that run.

1. One column into torch: ``to(x, "torch")`` of a polars Series, a pyarrow Array and a
   pandas Series (float32, one chunk, no nulls: zero-copy) against the libraries' own calls
   and the views and copies written by hand, at 4 MiB and at 4 KiB (the fixed overhead).
   Target (the issue): at 4 MiB >= 100x faster than polars' ``Series.to_torch()`` (which
   copies); for Arrow, which has no ``to_torch``, the copy a user writes stands in.
2. A table-backed training input pipeline, end to end: a Parquet file of 16 float32 feature
   columns and an int64 label, read in record batches of 1024 rows, each batch a dict of
   torch tensors fed to a small step (the features stacked, a matmul, the sums); one epoch
   by hand (``torch.from_numpy(batch.column(i).to_numpy())``, the floor), with
   ``to(batch, "torch")`` per batch, with ``to(batches, "torch")`` (the iterator kind)
   without and with ``prefetch=2``, and with Hugging Face ``datasets``
   (``Dataset.from_parquet(...).with_format("torch").iter(batch_size=1024)``; its Arrow
   cache is built before timing). Then the same rows in an Arrow IPC file, memory-mapped
   (the format of that cache): read-only memory, which ``to()`` copies for torch (rule 8).
   The values of the first batch are checked equal on every path before timing.
   Informational (the issue sets no number).
3. What reading Arrow's validity bitmaps costs (issue 30: a recorded null count of 0 is not
   believed over a bitmap, which is counted): a 4 MiB column into torch without a bitmap
   and with one, against the same call with the count switched off.

Usage: python benchmarks/tables.py [--quick]
"""

from __future__ import annotations

import collections
import contextlib
import os
import statistics
import sys
import tempfile
import time
import timeit
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # local files only: never the network
from bench import interleaved_calls, standalone
from functions import installed, skip_row

from interop_core import to

Row = list[str]
Section = tuple[str, Row, list[Row]]

MiB = 1 << 20
#: The issue's target: to() at 4 MiB this many times faster than ``Series.to_torch()``.
SPEEDUP = 100
#: Rounds per column row (each ~2 ms per side), by --quick.
COLUMN_ROUNDS = {False: 31, True: 9}
COLUMN_HEAD = ["source", "size", "to() µs", "compared with", "its µs", "its / to()",
               "to() - its µs", "control", f">= {SPEEDUP}x"]  # fmt: skip
#: polars' Series.to_torch() with this many results kept alive: each call's copy then lands
#: in memory touched for the first time (page faults), as when a user keeps the tensors.
HELD = 16

#: The pipeline's table: feature columns, rows (by --quick), rows per batch.
FEATURES = 16
ROWS = {False: 1 << 20, True: 1 << 18}
BATCH = 1024
#: Epochs per side (interleaved), by --quick; HF datasets (seconds an epoch) runs in the
#: first HF_ROUNDS rounds only.
PIPELINE_ROUNDS = {False: 5, True: 3}
HF_ROUNDS = {False: 3, True: 2}
IPC_ROUNDS = {False: 3, True: 2}
PIPELINE_HEAD = ["source", "epoch by", "ms per epoch", "µs per batch", "vs hand (floor)",
                 "vs HF datasets", "control", "target"]  # fmt: skip

#: Lines bench.py adds to its report's notes.
NOTES = [
    "- Tables, one column: polars' `Series.to_torch()` copies (`to_numpy(writable=True)`), "
    "so its cost is a 4 MiB allocation and memcpy. Timed in a loop, each result is freed "
    "before the next call and the allocator hands the same, already touched, memory back: "
    "the cheapest a copy can be. Kept alive (the held row: the last "
    f"{HELD} results, as a user keeps tensors), each copy lands in fresh pages and pays "
    "their faults, as in the 823 µs the issue measured. In the loop, 100x would need "
    "to() within 8% of a view written by hand (`torch.from_numpy(s.to_numpy())`): to() "
    "reads the dtype, chunks, nulls and whether the memory is read-only before it shares "
    "it: counted with callgrind, to() is ~16,100 instructions a call, 5,700 of them that "
    "key, against ~11,900 for the view by hand.",
    "- Tables, pipeline: the Parquet rows include decoding the file (pyarrow's "
    "`iter_batches`) on every side but HF datasets, which reads its own Arrow cache "
    "(memory-mapped, built before timing). A memory-mapped Arrow file is read-only memory: "
    "`to()` copies each column for torch (rule 8: a writable alias of a read-only map "
    "crashes on the first write), where `torch.from_numpy(col.to_numpy())` by hand "
    "aliases it (torch warns that the tensor is not writable).",
]


# -- timing ------------------------------------------------------------------------------


def per_call_us(fn: Callable[[], Any], number: int) -> float:
    """µs per call of ``fn`` over ``number`` calls."""
    return timeit.timeit(fn, number=number) / number * 1e6


def interleaved_epochs(
    sides: list[Callable[[], float]], rounds: int, limits: dict[int, int] | None = None
) -> list[float]:
    """Medians of what each of ``sides`` returns (ms per epoch), run in alternating rounds,
    10 ms idle before each; side ``i`` runs only in the first ``limits[i]`` rounds (a slow
    side: HF datasets takes seconds an epoch)."""
    limits = limits or {}
    times: list[list[float]] = [[] for _ in sides]
    for r in range(rounds):
        for i, (run, t) in enumerate(zip(sides, times, strict=True)):
            if r < limits.get(i, rounds):
                time.sleep(0.01)
                t.append(run())
    return [statistics.median(t) for t in times]


# -- 1. one column into torch ------------------------------------------------------------

#: A compared call: (its label, the call, whether the >= 100x target applies to it).
Theirs = tuple[str, Callable[[], Any], bool]


def column_row(source: str, size: str, ours: Callable[[], Any], theirs: Theirs, rounds: int) -> Row:
    """``ours`` vs ``theirs``, interleaved with a second run of ``theirs`` (the control)."""
    label, call, judged = theirs
    t_ours, t_theirs, t_again = interleaved_calls([ours, call, call], rounds)
    speedup = t_theirs / t_ours
    met = ("yes" if speedup >= SPEEDUP else "NO") if judged else "-"
    return [source, size, f"{t_ours:.2f}", label, f"{t_theirs:.2f}", f"{speedup:.1f}x",
            f"{t_ours - t_theirs:+.2f}", f"{t_again / t_theirs:.3f}x", met]  # fmt: skip


def shared(tensor: Any, address: int) -> None:
    """Check that ``to()`` gave a view (the benchmark times zero-copy routes)."""
    assert tensor.data_ptr() == address, "to() copied a column it should share"


def polars_cases(data: Any, big: bool) -> tuple[Callable[[], Any], list[Theirs]]:
    """to() of a polars Series of ``data``, and the calls it is compared with."""
    import polars as pl
    import torch

    s = pl.Series("x", data.copy())
    shared(to(s, "torch"), s.to_numpy().ctypes.data)
    assert torch.equal(to(s, "torch"), s.to_torch())
    held: collections.deque[Any] = collections.deque(maxlen=HELD)
    cases: list[Theirs] = [("`s.to_torch()`", s.to_torch, big)]
    if big:
        cases.append((f"`s.to_torch()`, the last {HELD} results kept alive",
                      lambda: held.append(s.to_torch()), True))  # fmt: skip
    cases.append(("`torch.from_numpy(s.to_numpy())` (a view by hand)",
                  lambda: torch.from_numpy(s.to_numpy()), False))  # fmt: skip
    return (lambda: to(s, "torch")), cases


def arrow_cases(data: Any, big: bool) -> tuple[Callable[[], Any], list[Theirs]]:
    """to() of a pyarrow Array of ``data``, and the calls it is compared with."""
    import pyarrow as pa
    import torch

    a = pa.array(data.copy())
    shared(to(a, "torch"), a.buffers()[1].address)
    cases: list[Theirs] = [
        ("`torch.from_numpy(a.to_numpy(zero_copy_only=True))` (a view by hand)",
         lambda: torch.from_numpy(a.to_numpy(zero_copy_only=True)), False),
    ]  # fmt: skip
    if big:
        cases.append(("`torch.from_numpy(a.to_numpy(zero_copy_only=False).copy())` (the copy "
                      "a user writes; Arrow has no `to_torch`)",
                      lambda: torch.from_numpy(a.to_numpy(zero_copy_only=False).copy()),
                      True))  # fmt: skip
    return (lambda: to(a, "torch")), cases


def pandas_cases(data: Any, big: bool) -> tuple[Callable[[], Any], list[Theirs]]:
    """to() of a pandas Series of ``data``, and the calls it is compared with."""
    import pandas as pd
    import torch

    p = pd.Series(data.copy())
    shared(to(p, "torch"), p.to_numpy().ctypes.data)
    cases: list[Theirs] = [("`torch.from_numpy(p.to_numpy())` (a view by hand)",
                            lambda: torch.from_numpy(p.to_numpy()), False)]  # fmt: skip
    if big:
        cases.append(("`torch.tensor(p.to_numpy())` (the copy a user writes)",
                      lambda: torch.tensor(p.to_numpy()), False))  # fmt: skip
    return (lambda: to(p, "torch")), cases


#: The column sources: (label, the module it needs, its cases).
COLUMN_SOURCES = [("polars Series", "polars", polars_cases),
                  ("pyarrow Array", "pyarrow", arrow_cases),
                  ("pandas Series", "pandas", pandas_cases)]  # fmt: skip


def column_rows(quick: bool) -> list[Row]:
    """A row per size, source and compared call."""
    import numpy as np

    rounds = COLUMN_ROUNDS[quick]
    rows: list[Row] = []
    for nbytes, size in ((4 * MiB, "4 MiB"), (4096, "4 KiB")):
        data = np.random.default_rng(0).random(nbytes // 4, dtype=np.float32)
        for source, module, make in COLUMN_SOURCES:
            if not installed(module):
                rows.append(skip_row(source, f"{module} is not installed", len(COLUMN_HEAD)))
                continue
            ours, cases = make(data, nbytes == 4 * MiB)
            rows += [column_row(source, size, ours, case, rounds) for case in cases]
            del ours, cases  # the held results of the last case go with them
    return rows


def column_section(quick: bool) -> Section:
    """One column into torch: to() vs the libraries' calls and the hand-written ones."""
    title = (
        'Tables, one column into torch: `to(x, "torch")` of a float32 polars Series, '
        "pyarrow Array and pandas Series (one chunk, no nulls: zero-copy, checked by "
        "pointer) vs each library's own call and what a user writes by hand, at 4 MiB and "
        "4 KiB; each call's count per round sized to ~2 ms, interleaved with a second run "
        "of the compared call (control = second / first: the noise), medians of "
        f"{COLUMN_ROUNDS[quick]} rounds (µs per call). Target (issue 21): at 4 MiB >= "
        f"{SPEEDUP}x faster than polars' `Series.to_torch()` (which copies; the issue "
        "measured 823 µs), judged in a loop and with the results kept alive, for Arrow "
        "than the copy a user writes"
    )
    if not (installed("numpy") and installed("torch")):
        return (title, COLUMN_HEAD, [skip_row("all", "needs numpy and torch", len(COLUMN_HEAD))])
    return (title, COLUMN_HEAD, column_rows(quick))


# -- 2. a table-backed training input pipeline ----------------------------------------


def table_data(rows: int) -> Any:
    """A pyarrow Table: ``FEATURES`` float32 columns f0, f1, ... and an int64 label."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(0)
    cols: dict[str, Any] = {f"f{i}": rng.random(rows, dtype=np.float32) for i in range(FEATURES)}
    cols["label"] = rng.integers(0, 10, rows, dtype=np.int64)
    return pa.table(cols)


def make_step() -> Callable[[dict[str, Any]], float]:
    """The consumer: the features stacked (batch, FEATURES), a matmul, the sums."""
    import torch

    weight = torch.ones(FEATURES, 4)
    names = [f"f{i}" for i in range(FEATURES)]

    def step(batch: dict[str, Any]) -> float:
        x = torch.stack([batch[n] for n in names], 1)
        return float((x @ weight).sum()) + float(batch["label"].sum())

    return step


def by_hand(batch: Any) -> dict[str, Any]:
    """A RecordBatch as torch tensors, written by hand (views; read-only memory aliased)."""
    import torch

    names = batch.schema.names
    return {n: torch.from_numpy(batch.column(i).to_numpy()) for i, n in enumerate(names)}


def by_hand_copied(batch: Any) -> dict[str, Any]:
    """A RecordBatch as torch tensors that own their memory, written by hand."""
    import torch

    return {n: torch.from_numpy(batch.column(i).to_numpy().copy())
            for i, n in enumerate(batch.schema.names)}  # fmt: skip


def epoch(batches: Callable[[], Iterable[Any]], step: Callable[[Any], Any]) -> Callable[[], float]:
    """An epoch as a timed run: ms from making the iterator to the last step's end."""

    def run() -> float:
        started = time.perf_counter()
        for batch in batches():
            step(batch)
        return (time.perf_counter() - started) * 1e3

    return run


def same_values(found: dict[str, dict[str, Any]]) -> None:
    """Check that every path's first batch holds the same columns, dtypes and values."""
    import torch

    (first_name, first), *rest = found.items()
    for name, batch in rest:
        assert list(batch) == list(first), (name, list(batch), first_name, list(first))
        for col, value in first.items():
            other = batch[col]
            assert isinstance(other, torch.Tensor), (name, col, type(other))
            assert other.dtype == value.dtype and torch.equal(other, value), (name, col)


def pipeline_row(source: str, by: str, ms: float, batches: int, floor: float, hf: float | None,
                 control: float) -> Row:  # fmt: skip
    """A row of the pipeline table."""
    vs_hf = "-" if hf is None else f"{ms / hf:.3f}x"
    return [source, by, f"{ms:.1f}", f"{ms * 1e3 / batches:.1f}", f"{ms / floor:.2f}x", vs_hf,
            f"{control:.3f}x", "-"]  # fmt: skip


def parquet_rows(folder: str, table: Any, quick: bool) -> list[Row]:
    """The Parquet file read by hand, through to() (per batch, as an iterator, with
    prefetch) and through HF datasets; the hand epoch again is the control."""
    import pyarrow.parquet as pq

    path = os.path.join(folder, "table.parquet")
    pq.write_table(table, path, row_group_size=64 * BATCH, compression=None, use_dictionary=False)
    step = make_step()
    batches = -(-table.num_rows // BATCH)
    source = f"Parquet, {os.path.getsize(path) / MiB:.0f} MiB"

    def read() -> Iterator[Any]:
        return pq.ParquetFile(path).iter_batches(batch_size=BATCH)  # type: ignore[no-any-return]

    sides: list[tuple[str, Callable[[], Iterable[Any]]]] = [
        ("by hand: `torch.from_numpy(batch.column(i).to_numpy())` (the floor)",
         lambda: map(by_hand, read())),
        ('`to(batch, "torch")` per batch', lambda: (to(b, "torch") for b in read())),
        ('`to(batches, "torch")`', lambda: to(read(), "torch")),
        ('`to(batches, "torch", prefetch=2)`', lambda: to(read(), "torch", prefetch=2)),
    ]  # fmt: skip
    hf_data = hf_dataset(path, folder)
    if hf_data is not None:
        sides.append(('HF `Dataset.from_parquet(...).with_format("torch")`'
                      f".iter(batch_size={BATCH})",
                      lambda: hf_data.iter(batch_size=BATCH)))  # fmt: skip
    first = {name: next(iter(make())) for name, make in sides}
    same_values(first)
    plain = next(read())
    shared(to(plain, "torch")["f0"], plain.column(0).buffers()[1].address)
    runs = [epoch(make, step) for _, make in sides]
    runs.append(runs[0])  # the floor again: the control
    limits = {len(sides) - 1: HF_ROUNDS[quick]} if hf_data is not None else {}
    t_sides = interleaved_epochs(runs, PIPELINE_ROUNDS[quick], limits)
    floor, *rest, again = t_sides
    hf = rest[-1] if hf_data is not None else None
    rows = [pipeline_row(source, name, ms, batches, floor, hf, again / floor)
            for (name, _), ms in zip(sides, t_sides, strict=False)]  # fmt: skip
    if hf_data is None:
        rows.append(skip_row(source, "HF datasets is not installed", len(PIPELINE_HEAD)))
    return rows


def hf_dataset(path: str, folder: str) -> Any:
    """The Parquet file as an HF ``Dataset`` in torch format (its Arrow cache built in
    ``folder``), or None without the datasets package."""
    if not installed("datasets"):
        return None
    import datasets

    datasets.disable_progress_bars()
    datasets.logging.set_verbosity_error()
    data = datasets.Dataset.from_parquet(path, cache_dir=os.path.join(folder, "hf"))
    return data.with_format("torch")


def ipc_rows(folder: str, table: Any, quick: bool) -> list[Row]:
    """The rows in a memory-mapped Arrow IPC file (batches of ``BATCH``): by hand (views
    of read-only memory; copies), through to() (which copies); the view again: control."""
    import pyarrow as pa

    path = os.path.join(folder, "table.arrow")
    with pa.ipc.new_file(path, table.schema) as writer:
        for batch in table.to_batches(max_chunksize=BATCH):
            writer.write_batch(batch)
    step = make_step()
    batches = -(-table.num_rows // BATCH)
    source = f"Arrow IPC file, memory-mapped, {os.path.getsize(path) / MiB:.0f} MiB"

    def read() -> Iterator[Any]:
        reader = pa.ipc.open_file(pa.memory_map(path))
        return (reader.get_batch(i) for i in range(reader.num_record_batches))

    sides: list[tuple[str, Callable[[], Iterable[Any]]]] = [
        ("by hand: `torch.from_numpy(batch.column(i).to_numpy())` (the floor: aliases "
         "read-only memory)", lambda: map(by_hand, read())),
        ("by hand: `torch.from_numpy(batch.column(i).to_numpy().copy())`",
         lambda: map(by_hand_copied, read())),
        ('`to(batches, "torch")` (copies: read-only memory)', lambda: to(read(), "torch")),
    ]  # fmt: skip
    with warnings.catch_warnings():
        # torch warns, once, that a tensor over read-only memory is writable (the floor).
        warnings.simplefilter("ignore", UserWarning)
        first = {name: next(iter(make())) for name, make in sides}
        same_values(first)
        plain = next(read())
        ours = to(plain, "torch")["f0"]
        assert ours.data_ptr() != plain.column(0).buffers()[1].address, "to() aliased a map"
        runs = [epoch(make, step) for _, make in sides]
        runs.append(runs[0])
        floor, *rest, again = interleaved_epochs(runs, IPC_ROUNDS[quick])
    return [pipeline_row(source, name, ms, batches, floor, None, again / floor)
            for (name, _), ms in zip(sides, [floor, *rest], strict=True)]  # fmt: skip


def pipeline_section(quick: bool) -> Section:
    """A table-backed training input pipeline, end to end."""
    rows, size = ROWS[quick], ROWS[quick] * (4 * FEATURES + 8) / MiB
    title = (
        f"Tables, a training input pipeline end to end: {rows:,} rows of {FEATURES} float32 "
        f"features and an int64 label ({size:.0f} MiB) in batches of {BATCH} rows, each "
        f"batch a dict of torch tensors fed to a step (the features stacked {BATCH}x"
        f"{FEATURES}, a matmul with {FEATURES}x4, the sums); one epoch per side, timed from "
        "opening the file to the last step's end, 10 ms idle before each; interleaved with a "
        "second epoch of the hand-written floor (control = second / first: the noise), "
        f"medians of {PIPELINE_ROUNDS[quick]} epochs ({HF_ROUNDS[quick]} of HF datasets, "
        "in the first rounds; Arrow IPC rows: "
        f"{IPC_ROUNDS[quick]}) (the first batch of every side checked "
        "equal before timing); HF datasets reads its Arrow cache of the Parquet file, built "
        "before timing; torch on one thread (`torch.set_num_threads(1)`, restored after); "
        "informational (the issue sets no number)"
    )
    needs = ("numpy", "torch", "pyarrow")
    if not all(map(installed, needs)):
        return (title, PIPELINE_HEAD, [skip_row("all", "needs numpy, torch and pyarrow",
                                                len(PIPELINE_HEAD))])  # fmt: skip
    table = table_data(rows)
    with tempfile.TemporaryDirectory(prefix="interop-bench-tables-") as folder:
        found = parquet_rows(folder, table, quick) + ipc_rows(folder, table, quick)
    return (title, PIPELINE_HEAD, found)


@contextlib.contextmanager
def one_torch_thread() -> Iterator[None]:
    """torch's ops on one thread meanwhile: on a shared 2-core VM its two intra-op threads
    wait on each other (a 1024x16 stack and matmul took 7.6 ms a step, 0.14 ms on one)."""
    if not installed("torch"):
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


# -- 3. what reading the validity bitmap costs (issue 30) -------------------------------

BITMAP_HEAD = ["pyarrow Array -> torch", "to() µs", "count off µs", "count alone µs",
               "cost µs", "cost %", "control"]  # fmt: skip


def _uncounted(fn: Callable[[], Any]) -> Callable[[], Any]:
    """``fn`` with frameworks/arrow.py's bitmap count made to say "no nulls" meanwhile."""
    from interop_plugins.frameworks import arrow

    real = arrow.bitmap_has_nulls

    def none(*args: Any) -> bool:
        return False

    def run() -> Any:
        arrow.bitmap_has_nulls = none
        try:
            return fn()
        finally:
            arrow.bitmap_has_nulls = real

    return run


def bitmap_section(quick: bool) -> Section:
    """A float32 Arrow column of 4 MiB into torch, with no validity bitmap and with one
    that marks every value valid (which Arrow may record as null_count 0, and an import
    through the C data interface may record so over nulls): the bitmap is counted."""
    title = (
        'Tables, the validity bitmap read (issue 30): warm `to(x, "torch")` of a 4 MiB '
        "float32 pyarrow Array (zero-copy) without a validity bitmap, and with one marking "
        "every value valid, which is counted (a recorded null count of 0 is not believed "
        "over a bitmap), vs the same call with the count switched off; paired rounds of "
        "~0.5 ms, medians (µs per call), cost = the median of the rounds' differences; "
        "control = a second run of the call"
    )
    if not (installed("pyarrow") and installed("torch")):
        return title, BITMAP_HEAD, [skip_row("all", "needs pyarrow and torch", len(BITMAP_HEAD))]
    import numpy as np
    import pyarrow as pa
    from interop_plugins.frameworks.arrow import bitmap_has_nulls
    from ragged import cost_row  # benchmarks/ragged.py, beside this file

    n = MiB
    data = pa.array(np.random.default_rng(0).random(n, dtype=np.float32))
    valid = pa.py_buffer(np.full(n // 8, 255, np.uint8))
    masked = pa.Array.from_buffers(pa.float32(), n, [valid, data.buffers()[1]], null_count=-1)
    assert masked.null_count == 0 and masked.buffers()[0] is not None
    rows: list[Row] = []
    rounds = COLUMN_ROUNDS[quick]
    for label, arr in (("no bitmap", data), ("a bitmap, all valid", masked)):
        ours = lambda a=arr: to(a, "torch")  # noqa: E731
        assert ours().data_ptr() == arr.buffers()[1].address  # shared
        alone = lambda a=arr: bitmap_has_nulls(a.buffers()[0] or valid, a.offset, len(a))  # noqa: E731
        rows.append(cost_row(label, ours, _uncounted(ours), alone, rounds))
    return title, BITMAP_HEAD, rows


# -- 4. any Arrow producer (the PyCapsule interface) ------------------------------------------

PRODUCER_HEAD = ["producer", "to() µs", "compared with", "its µs", "its / to()", "control"]


class CapsuleOnly:
    """Only ``__arrow_c_stream__`` of ``obj``: a polars object as any library's looks."""

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        return self.obj.__arrow_c_stream__(requested_schema)


def producer_rows(quick: bool) -> list[Row]:
    """A row per producer and compared call: 1M float32 values (4 MiB) into torch."""
    import numpy as np
    import torch

    rounds = COLUMN_ROUNDS[quick]
    n = MiB
    rows: list[Row] = []

    def row(label: str, ours: Callable[[], Any], theirs: Theirs) -> Row:
        name, call, _ = theirs
        t_ours, t_theirs, t_again = interleaved_calls([ours, call, call], rounds)
        return [label, f"{t_ours:.1f}", name, f"{t_theirs:.1f}", f"{t_theirs / t_ours:.1f}x",
                f"{t_again / t_theirs:.3f}x"]  # fmt: skip

    if installed("duckdb"):
        import duckdb

        con = duckdb.connect()
        con.execute(f"create table t as select (range * 0.5)::FLOAT as x from range({n})")
        rel = con.sql("select x from t")
        assert torch.equal(to(rel, "torch")["x"], rel.torch()["x"])
        rows.append(row("duckdb relation (the query runs on each call)",
                        lambda: to(rel, "torch"), ("`rel.torch()`", rel.torch, True)))  # fmt: skip
        table = rel.arrow()  # the result once, then its Arrow table
        rows.append(row("duckdb result as its Arrow table (`rel.arrow()` once)",
                        lambda: to(CapsuleOnly(table), "torch"),
                        ("`to(table, \"torch\")` (pyarrow's plugin)",
                         lambda: to(table, "torch"), False)))  # fmt: skip
    else:
        rows.append(skip_row("duckdb", "duckdb is not installed", len(PRODUCER_HEAD)))
    if installed("polars"):
        import polars as pl

        s = pl.Series("x", np.random.default_rng(0).random(n, dtype=np.float32))
        via = CapsuleOnly(s)
        shared(to(via, "torch"), s.to_numpy().ctypes.data)
        assert torch.equal(to(via, "torch"), s.to_torch())
        for theirs in (
            ("`s.to_torch()` (polars' own: a copy)", s.to_torch, True),
            ('`to(s, "torch")` (polars\' plugin)', lambda: to(s, "torch"), False),
        ):
            rows.append(row("polars Series through the capsule", lambda: to(via, "torch"),
                            theirs))  # fmt: skip
    if installed("pyarrow"):
        import pyarrow as pa

        t = pa.table({"x": pa.array(np.arange(n, dtype=np.float32) * 0.5)})
        rows += [row(name, *sides) for name, sides in arrow_sides(t).items()]
    return rows


def arrow_sides(t: Any) -> dict[str, tuple[Callable[[], Any], Theirs]]:
    """nanoarrow's stream and arro3's Table of ``t``: to() and pyarrow's import by hand. A
    stream is read once: a new one per call, on both sides."""
    import pyarrow as pa
    import torch

    def by_hand(make: Callable[[], Any]) -> Theirs:
        return ("pyarrow's import and a numpy view, by hand",
                lambda: torch.from_numpy(pa.table(make()).column(0).chunk(0).to_numpy()),
                False)  # fmt: skip

    sides: dict[str, tuple[Callable[[], Any], Theirs]] = {}
    if installed("nanoarrow"):
        import nanoarrow

        def stream() -> Any:
            return nanoarrow.c_array_stream(t)

        sides["nanoarrow stream"] = (lambda: to(stream(), "torch"), by_hand(stream))
    if installed("arro3.core"):
        from arro3.core import Table

        table = Table.from_arrow(t)
        sides["arro3 Table"] = (lambda: to(table, "torch"), by_hand(lambda: table))
    return sides


def producer_section(quick: bool) -> Section:
    """Any Arrow producer into torch: to() vs the producer's own call or the hand-written
    import."""
    title = (
        'Any Arrow producer into torch (issue 33): `to(obj, "torch")` of objects read through '
        "the Arrow PyCapsule interface, 1M float32 values (4 MiB, zero-copy, checked by "
        "pointer or values), vs the producer's own call (duckdb `rel.torch()`, polars "
        "`to_torch()`, which copy) or what a user writes by hand; interleaved with a second "
        "run of the compared call (control), medians of "
        f"{COLUMN_ROUNDS[quick]} rounds (µs per call)"
    )
    if not (installed("numpy") and installed("torch")):
        return (title, PRODUCER_HEAD, [skip_row("all", "needs numpy and torch", 6)])
    return (title, PRODUCER_HEAD, producer_rows(quick))


def sections(quick: bool) -> list[Section]:
    """This module's sections, as (title, head, rows): one column; the pipeline (torch on
    one thread); the validity bitmap's cost; any Arrow producer."""
    with one_torch_thread():
        return [column_section(quick), pipeline_section(quick), bitmap_section(quick),
                producer_section(quick)]  # fmt: skip


def main() -> int:
    return standalone(sections, __doc__ or "")


if __name__ == "__main__":
    sys.exit(main())
