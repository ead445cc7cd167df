"""Ragged arrays (issue 21) through ``to()`` against what a user writes by hand.

A tf.RaggedTensor and an Arrow ListArray of 4 MiB of float32 values (16384 rows of 0-127
values) into a torch jagged nested tensor: ``to(x, "torch")`` (zero-copy: values and row
splits shared, checked by pointer before timing) against the parts wired by hand
(``nested_tensor_from_jagged`` over the framework's own zero-copy exports: the floor) and
the obvious path from Python lists (``nested_tensor([...], layout=torch.jagged)`` of each
row); and ``ragged="pad"`` into numpy against TensorFlow's own ``rt.to_tensor()``. Then the
cost of checking every row split (issue 30): the same warm calls with the check switched
off. Every comparison is interleaved in one process with medians; "control" is a second run
of the compared call in the same rounds (its noise). Informational (the issues set no
number).

Usage: python benchmarks/ragged.py [--quick]
"""

from __future__ import annotations

import os
import sys
import timeit
from collections.abc import Callable
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
from bench import interleaved_calls, standalone
from functions import installed, skip_row

from interop_core import to

Row = list[str]
Section = tuple[str, Row, list[Row]]

ROWS = 16384
#: Rounds per row, by --quick (the list paths take ~0.1-1 s a call: fewer of those).
ROUNDS = {False: 15, True: 5}
SLOW_ROUNDS = {False: 3, True: 2}
HEAD = ["source", "to()", "to() µs", "compared with", "its µs", "its / to()", "control"]


def per_call_us(fn: Callable[[], Any], number: int) -> float:
    return timeit.timeit(fn, number=number) / number * 1e6


def ragged_values() -> tuple[Any, Any]:
    """(values, row_splits) as numpy: 16384 rows of 0-127 float32 values (~4 MiB)."""
    import numpy as np

    rng = np.random.default_rng(0)
    lengths = rng.integers(0, 128, ROWS)
    splits = np.zeros(ROWS + 1, np.int64)
    np.cumsum(lengths, out=splits[1:])
    return rng.random(int(splits[-1]), np.float32), splits


def row(source: str, ours: str, compared: str, sides: list[Callable[[], Any]], rounds: int) -> Row:
    t_ours, t_other, t_again = interleaved_calls([sides[0], sides[1], sides[1]], rounds)
    return [source, ours, f"{t_ours:.1f}", compared, f"{t_other:.1f}",
            f"{t_other / t_ours:.1f}x", f"{t_again / t_other:.2f}"]  # fmt: skip


def section(quick: bool) -> Section:
    """tf.RaggedTensor and Arrow ListArray (4 MiB) -> torch jagged; ragged='pad'."""
    title = (
        'Ragged arrays into torch: `to(x, "torch")` of a tf.RaggedTensor and an Arrow '
        f"ListArray, {ROWS} rows, ~4 MiB of float32 values (zero-copy: values and row "
        "splits shared, checked by pointer), vs the parts wired by hand and vs the path "
        'through Python lists; `ragged="pad"` into numpy vs `rt.to_tensor()`; interleaved '
        "medians (µs per call), control = a second run of the compared call"
    )
    rows: list[Row] = []
    if not (installed("torch") and installed("numpy")):
        return title, HEAD, [skip_row("all", "torch or numpy missing", len(HEAD))]
    import numpy as np
    import torch

    values, splits = ragged_values()
    r, s = ROUNDS[quick], SLOW_ROUNDS[quick]
    jagged = torch.nested.nested_tensor_from_jagged
    if installed("tensorflow"):
        import tensorflow as tf

        rt = tf.RaggedTensor.from_row_splits(tf.constant(values), tf.constant(splits))
        got = to(rt, "torch")
        from_dlpack = torch.from_dlpack
        by_hand = jagged(from_dlpack(rt.values), from_dlpack(rt.row_splits))
        assert got.values().data_ptr() == by_hand.values().data_ptr()  # shared, both
        rows.append(row("tf.RaggedTensor", 'to(rt, "torch")', "nested_tensor_from_jagged("
                        "from_dlpack(rt.values), from_dlpack(rt.row_splits))",
                        [lambda: to(rt, "torch"),
                         lambda: jagged(from_dlpack(rt.values), from_dlpack(rt.row_splits))],
                        r))  # fmt: skip
        rows.append(row("tf.RaggedTensor", 'to(rt, "torch")', "nested_tensor([torch.tensor"
                        "(r) for r in rt.to_list()], layout=torch.jagged)",
                        [lambda: to(rt, "torch"),
                         lambda: torch.nested.nested_tensor(
                             [torch.tensor(x) for x in rt.to_list()], layout=torch.jagged)],
                        s))  # fmt: skip
        pad = to(rt, "numpy", ragged="pad", fill_value=0.0)
        assert np.array_equal(pad, rt.to_tensor(0.0).numpy())
        rows.append(row("tf.RaggedTensor", 'to(rt, "numpy", ragged="pad", fill_value=0)',
                        "rt.to_tensor(0.0).numpy()",
                        [lambda: to(rt, "numpy", ragged="pad", fill_value=0.0),
                         lambda: rt.to_tensor(0.0).numpy()], r))  # fmt: skip
    else:
        rows.append(skip_row("tf.RaggedTensor", "tensorflow missing", len(HEAD)))
    if installed("pyarrow"):
        import pyarrow as pa

        arr = pa.LargeListArray.from_arrays(pa.array(splits), pa.array(values))
        got = to(arr, "torch")
        assert got.values().data_ptr() == arr.values.buffers()[1].address  # shared

        def arrow_by_hand() -> Any:
            return jagged(torch.from_numpy(arr.values.to_numpy()),
                          torch.from_numpy(arr.offsets.to_numpy()))  # fmt: skip

        rows.append(row("Arrow LargeListArray", 'to(arr, "torch")', "nested_tensor_from_"
                        "jagged(from_numpy(arr.values.to_numpy()), from_numpy(arr.offsets"
                        ".to_numpy()))", [lambda: to(arr, "torch"), arrow_by_hand], r))  # fmt: skip
        rows.append(row("Arrow LargeListArray", 'to(arr, "torch")', "nested_tensor([torch."
                        "tensor(r) for r in arr.to_pylist()], layout=torch.jagged)",
                        [lambda: to(arr, "torch"),
                         lambda: torch.nested.nested_tensor(
                             [torch.tensor(x) for x in arr.to_pylist()], layout=torch.jagged)],
                        s))  # fmt: skip
    else:
        rows.append(skip_row("Arrow LargeListArray", "pyarrow missing", len(HEAD)))
    return title, HEAD, rows


CHECK_HEAD = ["source -> torch", "to() µs", "check off µs", "check alone µs", "cost µs",
              "cost %", "control"]  # fmt: skip


def _unchecked(fn: Callable[[], Any]) -> Callable[[], Any]:
    """``fn`` with exchange/ragged_convert.py's row splits check made a no-op meanwhile
    (describe() and the warm-path keys look it up on each call): the cost of the check is
    the difference."""
    from interop_plugins.exchange import ragged_convert

    real = ragged_convert.check_splits

    def skip(*args: Any, **kwargs: Any) -> None:
        return None

    def run() -> Any:
        ragged_convert.check_splits = skip
        try:
            return fn()
        finally:
            ragged_convert.check_splits = real

    return run


def cost_row(label: str, ours: Callable[[], Any], off: Callable[[], Any],
             alone: Callable[[], Any], rounds: int) -> Row:  # fmt: skip
    """A call (``ours``) against the same call with a check switched off (``off``), in
    paired rounds of ~0.5 ms (ours, off, ours again, the check ``alone``): the cost is the
    median of the rounds' differences, which the drifts of a busy machine shift alike;
    control = ours again / ours (its noise). Also used by benchmarks/tables.py."""
    import statistics

    from bench import calls_per_round, per_call_us

    sides = [ours, off, ours, alone]
    numbers = [calls_per_round(fn, 500.0) for fn in sides]
    times: list[list[float]] = [[] for _ in sides]
    for _ in range(rounds * 4):
        for fn, number, found in zip(sides, numbers, times, strict=True):
            found.append(per_call_us(fn, number))
    t_ours, t_off, t_again, t_alone = (statistics.median(t) for t in times)
    cost = statistics.median(a - b for a, b in zip(times[0], times[1], strict=True))
    return [label, f"{t_ours:.1f}", f"{t_off:.1f}", f"{t_alone:.1f}", f"{cost:.1f}",
            f"{100 * cost / t_off:.0f}%", f"{t_again / t_ours:.2f}"]  # fmt: skip


def check_row(source: str, x: Any, check: Callable[[], Any], rounds: int) -> Row:
    """to(x, "torch") checked vs with the row splits check off."""
    ours = lambda: to(x, "torch")  # noqa: E731
    return cost_row(source, ours, _unchecked(ours), check, rounds)


def check_section(quick: bool) -> Section:
    """What checking the row splits fully (monotonic, within the values: issue 30) costs a
    warm to() of a 16384-row, ~4 MiB ragged array into torch (zero-copy)."""
    title = (
        f'Ragged arrays, the row splits check (issue 30): warm `to(x, "torch")` of {ROWS} '
        "rows, ~4 MiB of float32 values (zero-copy), with every offset checked (from 0 or "
        "past it, never decreasing, within the values) vs the same call with the check "
        'switched off; "check alone" times the check on the offsets by itself; paired '
        "rounds of ~0.5 ms, medians (µs per call), cost = the median of the rounds' "
        "differences; control = a second run of the checked call"
    )
    if not (installed("torch") and installed("numpy")):
        return title, CHECK_HEAD, [skip_row("all", "torch or numpy missing", len(CHECK_HEAD))]
    from interop_plugins.exchange.ragged_convert import check_splits

    values, splits = ragged_values()
    rounds = ROUNDS[quick]
    rows: list[Row] = []
    if installed("pyarrow"):
        import numpy as np
        import pyarrow as pa

        lists = ((pa.ListArray, "Arrow ListArray", np.int32),
                 (pa.LargeListArray, "Arrow LargeListArray", np.int64))  # fmt: skip
        for kind, name, dtype in lists:
            offsets = splits.astype(dtype)
            arr = kind.from_arrays(pa.array(offsets), pa.array(values))
            assert to(arr, "torch").values().data_ptr() == arr.values.buffers()[1].address
            rows.append(check_row(name, arr, lambda o=offsets: check_splits(
                o, len(values), "x", ""), rounds))  # fmt: skip
    if installed("tensorflow"):
        import tensorflow as tf

        rt = tf.RaggedTensor.from_row_splits(tf.constant(values), tf.constant(splits))
        rows.append(check_row("tf.RaggedTensor", rt, lambda: check_splits(
            rt.row_splits._numpy(), len(values), "x", "", exact=True), rounds))  # fmt: skip
    import torch

    nested = torch.nested.nested_tensor_from_jagged(torch.from_numpy(values),
                                                    torch.from_numpy(splits))  # fmt: skip
    rows.append(check_row("torch jagged (-> torch: the key only)", nested,
                          lambda: check_splits(splits, len(values), "x", ""), rounds))  # fmt: skip
    return title, CHECK_HEAD, rows


def sections(quick: bool) -> list[Section]:
    return [section(quick), check_section(quick)]


def main() -> int:
    return standalone(sections, __doc__ or "")


if __name__ == "__main__":
    sys.exit(main())
