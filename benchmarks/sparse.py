"""Sparse arrays (issue 21) through ``to()`` against the calls written by hand, side by side.

Every comparison is interleaved in one process and reports medians, as in bench.py; each
also runs the compared side a second time in the same rounds (A, B, B', A, B, B', ...): the
ratio B'/B, the "control", is the noise of that run.

A scipy CSR array of float32 values (4 MiB of values: 1 Mi stored values, int32 indices,
4096 x 4096, 1/16 dense) and the same as COO, into torch:

- ``to(m, "torch")``: CSR shares the three buffers; COO copies the indices once (torch COO
  holds one (2, nnz) int64 tensor) and shares the values;
- by hand, the fastest correct call: ``torch.sparse_csr_tensor(torch.from_numpy(...) x3)``
  (no invariant check, as ``to()``), ``torch.sparse_coo_tensor(torch.from_numpy(
  np.stack(coords).astype(int64)), torch.from_numpy(data))``;
- the naive way users write: ``torch.tensor(m.toarray()).to_sparse_csr()`` (a dense
  64 MiB intermediate).

Values are checked equal on every path before timing. Informational (the issue sets no
number).

What the structure check costs (issue 30): every sparse array's indices, pointers, lengths
and order flags are checked before a framework reads them (scipy's in the scipy plugin's
key(), on every call; the other frameworks' at their edges). The same ``to()`` with the
check and with it switched off (the scipy plugin's check swapped for what its key read
before: ``has_canonical_format``; the torch edge's for one returning the tensor), in the
same rounds, for the 4 MiB arrays above and a 3 x 4 one; ``control`` is the unchecked
call timed twice.

Usage: python benchmarks/sparse.py [--quick]
"""

from __future__ import annotations

import os
import sys
import timeit
import warnings
from collections.abc import Callable
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
from bench import interleaved_calls, standalone
from functions import installed, skip_row

from interop_core import to

Row = list[str]
Section = tuple[str, Row, list[Row]]

SIDE, NNZ = 4096, 1 << 20  # 1 Mi float32 values: 4 MiB
ROUNDS = {False: 15, True: 5}
HEAD = ["source", "to() µs", "compared with", "its µs", "its / to()", "control", "to() copies"]


def per_call_us(fn: Callable[[], Any], number: int) -> float:
    return timeit.timeit(fn, number=number) / number * 1e6


def matrix() -> Any:
    """The CSR array: NNZ values spread evenly over SIDE x SIDE (canonical, seeded)."""
    import numpy as np
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    per_row = NNZ // SIDE
    cols = np.sort(
        np.stack([rng.choice(SIDE, per_row, replace=False) for _ in range(SIDE)]), axis=1
    )
    indptr = np.arange(0, NNZ + 1, per_row, dtype=np.int32)
    data = rng.standard_normal(NNZ, dtype=np.float32)
    return sp.csr_array((data, cols.ravel().astype(np.int32), indptr), shape=(SIDE, SIDE))


def section(quick: bool) -> Section:
    """scipy CSR/COO (4 MiB of values) -> torch: to() vs by hand vs the naive dense way."""
    title = "Sparse: scipy.sparse (4 MiB of float32 values) -> torch"
    if not installed("torch") or not installed("scipy"):
        return title, HEAD, [skip_row("scipy -> torch", "torch and scipy are needed", len(HEAD))]
    import numpy as np
    import torch

    from interop_core import explain

    csr = matrix()
    coo = csr.tocoo()
    f = torch.from_numpy

    def csr_by_hand() -> Any:
        return torch.sparse_csr_tensor(
            f(csr.indptr), f(csr.indices), f(csr.data), size=csr.shape, check_invariants=False
        )

    def coo_by_hand() -> Any:
        idx = f(np.stack(coo.coords).astype(np.int64))
        return torch.sparse_coo_tensor(
            idx, f(coo.data), coo.shape, is_coalesced=True, check_invariants=False
        )

    def naive() -> Any:
        return torch.tensor(csr.toarray()).to_sparse_csr()

    rows: list[Row] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: "sparse CSR support is in beta"
        dense = csr.toarray()
        for got in (to(csr, "torch"), csr_by_hand(), naive(), to(coo, "torch"), coo_by_hand()):
            assert np.array_equal(got.to_dense().numpy(), dense)
        cases = [
            ("CSR", csr, "torch.sparse_csr_tensor(from_numpy x3)", csr_by_hand),
            ("CSR", csr, "torch.tensor(m.toarray()).to_sparse_csr()", naive),
            ("COO", coo, "torch.sparse_coo_tensor(stacked int64 indices)", coo_by_hand),
        ]
        for label, m, what, theirs in cases:
            ours = lambda m=m: to(m, "torch")  # noqa: E731
            t_ours, t_theirs, t_again = interleaved_calls(
                [ours, theirs, theirs], ROUNDS[quick], 20000.0
            )
            rows.append([
                f"scipy {label}", f"{t_ours:.1f}", what, f"{t_theirs:.1f}",
                f"{t_theirs / t_ours:.1f}x", f"{t_again / t_theirs:.3f}x",
                str(explain(m, "torch").copies),
            ])  # fmt: skip
    return title, HEAD, rows


CHECK_HEAD = ["source -> target", "to() µs, checked", "to() µs, unchecked", "the check adds µs",
              "checked / unchecked", "control"]  # fmt: skip


def checks_section(quick: bool) -> Section:
    """What the structure check costs a to() of a sparse array, before vs after."""
    title = "Sparse: the structure check, per call (to() with and without it)"
    if not installed("torch") or not installed("scipy"):
        return title, CHECK_HEAD, [skip_row("scipy -> torch", "needs torch", len(CHECK_HEAD))]
    import numpy as np
    import scipy.sparse as sp
    from interop_plugins.exchange import sparse_convert
    from interop_plugins.frameworks import scipy as scipy_plugin

    checked_scipy = scipy_plugin._checked
    checked_torch = sparse_convert._CHECKS["torch"]

    def unchecked_scipy(m: Any) -> bool:  # what key() read before the check
        return bool(m.has_canonical_format) if m.format in ("coo", "csr") else False

    def unchecked_torch(t: Any, cross: bool) -> Any:
        return t

    def sides(x: Any, target: str) -> list[Callable[[], Any]]:
        def call(scipy_check: Any, torch_check: Any) -> Callable[[], Any]:
            def run() -> Any:
                scipy_plugin._checked = scipy_check
                sparse_convert._CHECKS["torch"] = torch_check
                return to(x, target)

            return run

        checked = call(checked_scipy, checked_torch)
        unchecked = call(unchecked_scipy, unchecked_torch)
        return [checked, unchecked, unchecked]

    small = np.array([[0, 1.5, 0, 2], [0, 0, 0, 0], [-3, 0, 4, 0]], np.float32)
    rows: list[Row] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: "sparse CSR support is in beta"
        big = matrix()
        torch_csr = to(big, "torch")
        cases = [
            ("scipy CSR 4 MiB -> torch", big, "torch"),
            ("scipy CSR 3x4 -> torch", sp.csr_array(small), "torch"),
            ("scipy COO 4 MiB -> torch", big.tocoo(), "torch"),
            ("torch CSR 4 MiB -> scipy", torch_csr, "scipy"),
        ]
        try:
            for label, x, target in cases:
                for side in sides(x, target):
                    side()  # warm, and the same values both ways
                t_on, t_off, t_again = interleaved_calls(sides(x, target), ROUNDS[quick], 20000.0)
                rows.append([
                    label, f"{t_on:.1f}", f"{t_off:.1f}", f"{t_on - t_off:.1f}",
                    f"{t_on / t_off:.2f}x", f"{t_again / t_off:.3f}x",
                ])  # fmt: skip
        finally:
            scipy_plugin._checked = checked_scipy
            sparse_convert._CHECKS["torch"] = checked_torch
    return title, CHECK_HEAD, rows


def sections(quick: bool) -> list[Section]:
    """This module's sections, as (title, head, rows)."""
    return [section(quick), checks_section(quick)]


def main() -> int:
    return standalone(sections, __doc__ or "")


if __name__ == "__main__":
    sys.exit(main())
