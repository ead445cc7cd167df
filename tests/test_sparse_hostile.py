"""Hostile sparse arrays (issue 30): every sparse array's structure is checked before any
framework reads its buffers, and a lie is an InvalidArrayError naming the array, the
position and what to do.

scipy checks indices only when asked, torch nothing with ``check_invariants=False``, JAX
and TensorFlow no index values: edited indices, pointers or lengths, and flags that claim
an order the indices do not have, crashed the interpreter (torch ``to_dense()``, scipy
``toarray()`` and ``tocsr()``), corrupted its heap, or gave wrong values. Those cases run
in child processes, one per target, each case printing its outcome. Valid odd inputs
(empty, 0 rows, huge shapes, JAX's own padding) convert with the right values.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import warnings
from collections.abc import Callable
from typing import Any

import pytest
from conftest import need
from hostile import run_child

from interop_core import CopyRequiredError, InvalidArrayError, explain, to

np = need("numpy")
sp = pytest.importorskip("scipy.sparse")

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # torch: "sparse ... beta"

HERE = os.path.dirname(os.path.abspath(__file__))
DENSE = np.array([[0, 1.5, 0, 2], [0, 0, 0, 0], [-3, 0, 4, 0]], np.float32)


def large() -> Any:
    """A dense 80 x 90 float32 array with ~5% nonzeros: past the checks' small-array path
    (64 entries), so both the Python and the numpy way of checking are tested."""
    rng = np.random.default_rng(0)
    d = (rng.random((80, 90)) < 0.05) * rng.standard_normal((80, 90))
    d[0, :3] = (1.0, 2.0, 3.0)  # row 0 holds three values (the edits below need two)
    return d.astype(np.float32)


def dense_for(size: str) -> Any:
    return DENSE if size == "small" else large()


def values(x: Any) -> Any:
    """The dense values of any framework's (sparse or dense) array, by its own API."""
    top = type(x).__module__.partition(".")[0]
    if top == "scipy":
        return x.toarray()
    if top == "torch":
        return (x.to_dense() if x.layout != need("torch").strided else x).numpy()
    if hasattr(x, "todense"):  # BCOO/BCSR
        return np.asarray(x.todense())
    if type(x).__name__ == "SparseTensor":
        return need("tensorflow").sparse.to_dense(x).numpy()
    return np.asarray(x)


def summed(shape: tuple[int, ...], coords: Any, data: Any) -> Any:
    """The dense array of (coords, data), duplicates summed: the reference."""
    out = np.zeros(shape, np.float64)
    np.add.at(out, tuple(np.asarray(c) for c in coords), np.asarray(data, np.float64))
    return out


def child(code: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter with tests/ importable (hostile.run_child)."""
    return run_child(code, timeout)


# -- crash-prone inputs, in child processes ------------------------------------------------------


def _canonical(size: str) -> Any:
    """A CSR array whose canonical form scipy has computed (and cached)."""
    m = sp.csr_array(dense_for(size))
    assert m.has_canonical_format
    return m


def _edit(fn: Callable[[Any], None], size: str) -> Any:
    m = _canonical(size)
    fn(m)
    return m


def _set(name: str, pos: int, value: Any) -> Callable[[Any], None]:
    def edit(m: Any) -> None:
        getattr(m, name)[pos] = value(m) if callable(value) else value

    return edit


def _assign(name: str, value: Callable[[Any], Any]) -> Callable[[Any], None]:
    def edit(m: Any) -> None:
        setattr(m, name, value(m))

    return edit


def _swap_row0(m: Any) -> None:
    m.indices[0], m.indices[1] = m.indices[1], m.indices[0]


def _dup_row0(m: Any) -> None:
    m.indices[1] = m.indices[0]


#: Edits of a canonical scipy CSR array, and what the refusal says.
CSR_EDITS: dict[str, tuple[Callable[[Any], None], str]] = {
    "column index 10**9": (
        _set("indices", 0, 10**9),
        r"column index 1000000000 at position 0 \(row 0\), outside",
    ),
    "negative column index": (_set("indices", 1, -1), r"column index -1 at position 1 \(row 0\)"),
    "column index == width": (
        _set("indices", -1, lambda m: m.shape[1]),
        r"column index \d+ at position \d+ \(row \d+\), outside",
    ),
    "unsorted under the canonical flag": (
        _swap_row0,
        r"canonical \(has_canonical_format is True\), but column .* \(row 0\) follows",
    ),
    "duplicate under the canonical flag": (
        _dup_row0,
        r"marked canonical .* at position 1 \(row 0\)",
    ),
    "values shorter than indices": (
        _assign("data", lambda m: m.data[:-1]),
        r"holds \d+ values for \d+ column indices",
    ),
    "values longer than indices": (
        _assign("data", lambda m: np.concatenate([m.data, m.data])),
        r"holds \d+ values for \d+ column indices",
    ),
    "indptr not from 0": (_set("indptr", 0, 1), r"indptr starting at 1"),
    "indptr decreasing": (_set("indptr", 1, lambda m: m.indptr[-1]), r"indptr decreasing at row 1"),
    "indptr past the indices": (
        _set("indptr", -1, 10**6),
        r"indptr ending at 1000000 over \d+ column indices",
    ),
    "indptr short of the indices": (
        _set("indptr", -1, lambda m: m.indptr[-1] - 1),
        r"indptr ending at \d+ over",
    ),
    "indptr of the wrong length": (
        _assign("indptr", lambda m: m.indptr[:-1].copy()),
        r"index pointers \(indptr\) for \d+ rows",
    ),
    "2-d indptr": (
        _assign("indptr", lambda m: m.indptr.reshape(1, -1)),
        r"indptr\) of shape \(1, \d+\): a 1-d array",
    ),
    "float indices": (
        _assign("indices", lambda m: m.indices.astype(float)),
        r"dtype float64: indices are int32 or int64",
    ),
    "bool indices": (_assign("indices", lambda m: m.indices.astype(bool)), r"dtype bool"),
    "uint64 index arrays": (
        _assign("indptr", lambda m: m.indptr.astype(np.uint64)),
        r"dtype uint64",
    ),
    "int32 indices, int64 indptr": (
        _assign("indptr", lambda m: m.indptr.astype(np.int64)),
        r"int32 indices and int64 index pointers",
    ),
    "shape narrower than the indices": (
        _assign("_shape", lambda m: (m.shape[0], 1)),
        r"column index \d+ at .*, outside \[0, 1\)",
    ),
    "shape with fewer rows than indptr": (
        _assign("_shape", lambda m: (1, m.shape[1])),
        r"index pointers \(indptr\) for 1 rows",
    ),
    "negative shape": (_assign("_shape", lambda m: (-1, m.shape[1])), r"negative dimension"),
    "values 2-d": (
        _assign("data", lambda m: m.data[:4].reshape(2, 2)),
        r"values of shape \(2, 2\)",
    ),
}


def _coo_edit(fn: Callable[[Any], None], size: str) -> Any:
    m = sp.coo_array(dense_for(size))
    fn(m)
    return m


def _coo_lie(m: Any) -> None:
    m.coords[1][1] = m.coords[1][0]
    m.coords[0][1] = m.coords[0][0]  # entry 1 repeats entry 0; the flag says canonical


COO_EDITS: dict[str, tuple[Callable[[Any], None], str]] = {
    "COO negative coordinate": (
        lambda m: m.coords[1].__setitem__(0, -1),
        r"axis 1 index -1 at position 0, outside \[0, \d+\)",
    ),
    "COO row past the end": (
        lambda m: m.coords[0].__setitem__(0, 10**9),
        r"axis 0 index 1000000000",
    ),
    "COO coordinate arrays of two lengths": (
        _assign("coords", lambda m: (m.coords[0][:-1], m.coords[1])),
        r"indices along axis 0 for \d+ values",
    ),
    "COO values shorter": (
        _assign("data", lambda m: m.data[:-1]),
        r"indices along axis 0 for \d+ values",
    ),
    "COO one coordinate array for 2 dimensions": (
        _assign("coords", lambda m: m.coords[:1]),
        r"1 index arrays for 2 dimensions",
    ),
    "COO float coordinates": (
        _assign("coords", lambda m: tuple(c.astype(float) for c in m.coords)),
        r"dtype float64",
    ),
    "COO duplicate under the canonical flag": (
        _coo_lie,
        r"marked canonical \(has_canonical_format is True\), but entry 1 at",
    ),
}


def _other_format(fmt: str, size: str) -> Any:
    m = getattr(sp, f"{fmt}_array")(dense_for(size))
    if fmt == "csc":
        m.indices[0] = 10**9
    elif fmt == "bsr":
        m.indices[0] = 10**6
    elif fmt == "lil":
        m.rows[0] = [10**6]
        m.data[0] = [1.0]
    elif fmt == "dok":
        dict.__setitem__(m, (10**6, 0), np.float32(1))
    return m


OTHER_FORMATS = {
    "csc row index 10**9": ("csc", r"row index 1000000000 at position 0 \(column \d+\)"),
    "bsr block column 10**6": ("bsr", r"block column index 1000000"),
    "lil column 10**6": ("lil", r"column index 1000000"),
    "dok key row 10**6": ("dok", r"axis 0 index 1000000"),
}


def scipy_case(name: str, size: str) -> Any:
    """The hostile scipy array ``name`` (of CSR_EDITS, COO_EDITS or OTHER_FORMATS)."""
    if name in CSR_EDITS:
        return _edit(CSR_EDITS[name][0], size)
    if name in COO_EDITS:
        return _coo_edit(COO_EDITS[name][0], size)
    return _other_format(OTHER_FORMATS[name][0], size)


def scipy_match(name: str) -> str:
    return {**CSR_EDITS, **COO_EDITS, **{k: (None, v[1]) for k, v in OTHER_FORMATS.items()}}[name][
        1
    ]


#: torch tensors built with check_invariants=False, and what the refusal says.
TORCH_CASES = {
    "COO negative index": r"axis 1 index -1 at position 1",
    "COO index 10**9": r"axis 0 index 1000000000",
    "COO coalesced flag over duplicates": r"coalesced \(is_coalesced\(\) is True\), but entry 1",
    "CSR column 10**9": r"column index 1000000000 at position 0 \(row 0\)",
    "CSR crow decreasing": r"indptr decreasing at row 1",
    "CSR crow past the values": r"indptr ending at 5",
    "CSR unsorted columns": r"sorted, unique column indices in each row\), but column index 1",
    "CSR float col_indices": r"col_indices of dtype float32",
    "batched CSR column 9": r"fails torch's own check: `0 <= col_indices < ncols`",
    "CSC row 9": r"fails torch's own check: `0 <= row_indices < nrows`",
    "hybrid COO row 5": r"axis 0 index 5 at position 1",
}


def torch_case(name: str) -> Any:
    torch = need("torch")
    i64 = torch.int64

    def coo(i: Any, v: Any, shape: Any, **kw: Any) -> Any:
        return torch.sparse_coo_tensor(
            torch.tensor(i, dtype=i64), torch.tensor(v, dtype=torch.float32), shape,
            check_invariants=False, **kw,
        )  # fmt: skip

    def csr(crow: Any, col: Any, v: Any, shape: Any, dtype: Any = i64) -> Any:
        return torch.sparse_csr_tensor(
            torch.tensor(crow, dtype=i64), torch.tensor(col, dtype=dtype),
            torch.tensor(v, dtype=torch.float32), size=shape, check_invariants=False,
        )  # fmt: skip

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {
            "COO negative index": lambda: coo([[0, 1], [2, -1]], [1, 2], (3, 4)),
            "COO index 10**9": lambda: coo([[0, 10**9], [2, 1]], [1, 2], (3, 4)),
            "COO coalesced flag over duplicates": lambda: coo(
                [[0, 0, 2], [1, 1, 3]], [1, 2, 3], (3, 4), is_coalesced=True
            ),
            "CSR column 10**9": lambda: csr([0, 1, 1, 2], [10**9, 0], [1, 2], (3, 4)),
            "CSR crow decreasing": lambda: csr([0, 2, 1, 2], [0, 1], [1, 2], (3, 4)),
            "CSR crow past the values": lambda: csr([0, 1, 1, 5], [0, 1], [1, 2], (3, 4)),
            "CSR unsorted columns": lambda: csr([0, 2, 2, 2], [3, 1], [1, 2], (3, 4)),
            "CSR float col_indices": lambda: csr([0, 1, 1, 1], [1], [1], (3, 4), torch.float32),
            "batched CSR column 9": lambda: torch.sparse_csr_tensor(
                torch.tensor([[0, 1, 1, 1], [0, 1, 1, 1]]), torch.tensor([[0], [9]]),
                torch.ones(2, 1), size=(2, 3, 4), check_invariants=False,
            ),
            "CSC row 9": lambda: torch.sparse_csc_tensor(
                torch.tensor([0, 1, 1, 1, 1]), torch.tensor([9]), torch.ones(1), size=(3, 4),
                check_invariants=False,
            ),
            "hybrid COO row 5": lambda: torch.sparse_coo_tensor(
                torch.tensor([[0, 5], [1, 1]]), torch.ones(2, 2), (3, 4, 2),
                check_invariants=False,
            ),
        }[name]()  # fmt: skip


#: (target, options) the hostile arrays are converted with: each framework's sparse array,
#: densify=True, a copy in the source framework.
SCIPY_CALLS = {
    "torch": ("torch", {}),
    "jax": ("jax", {}),
    "tensorflow": ("tensorflow", {}),
    "numpy densify": ("numpy", {"densify": True}),
    "scipy copy": ("scipy", {"copy": True}),
}
TORCH_CALLS = {
    "scipy": ("scipy", {}),
    "jax": ("jax", {}),
    "tensorflow": ("tensorflow", {}),
    "torch densify": ("torch", {"densify": True}),
    "torch copy": ("torch", {"copy": True}),
}
#: Which frameworks each call needs beside the source's.
NEEDS = {"torch": "torch", "jax": "jax", "tensorflow": "tensorflow", "scipy": "scipy"}


def run_cases(source: str, call: str) -> None:
    """In a child: convert every hostile array of ``source`` with ``call``, printing one
    JSON line per case: [name, size, outcome, message]. A crash ends the output early."""
    from interop_core import InteropError

    target, options = (SCIPY_CALLS if source == "scipy" else TORCH_CALLS)[call]
    if source == "scipy":
        cases = [
            (n, s) for n in [*CSR_EDITS, *COO_EDITS, *OTHER_FORMATS] for s in ("small", "large")
        ]
    else:
        cases = [(n, "small") for n in TORCH_CASES]
    for name, size in cases:
        print(json.dumps([name, size, "start", ""]), flush=True)
        x = scipy_case(name, size) if source == "scipy" else torch_case(name)
        try:
            out = to(x, target, **options)
            values(out)  # reading it is what crashed
            outcome, message = "accepted", type(out).__name__
        except InteropError as exc:
            outcome, message = type(exc).__name__, str(exc)
        except Exception as exc:  # reported: the test fails on it
            outcome, message = "raw " + type(exc).__name__, str(exc)
        print(json.dumps([name, size, outcome, message]), flush=True)


def _check_child(source: str, call: str, matches: Callable[[str], str]) -> None:
    target = (SCIPY_CALLS if source == "scipy" else TORCH_CALLS)[call][0]
    need(source)
    need(NEEDS.get(target, "numpy"))
    run = child(f"""
        import warnings
        warnings.simplefilter("ignore")
        from test_sparse_hostile import run_cases
        run_cases({source!r}, {call!r})
    """)  # fmt: skip
    lines = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("[")]
    done = [line for line in lines if line[2] != "start"]
    last = lines[-1] if lines else None
    assert run.returncode == 0, f"child died (rc {run.returncode}) at {last}: {run.stderr[-2000:]}"
    assert done, run.stderr[-2000:]
    for name, size, outcome, message in done:
        if outcome == "NoRouteError":  # batched/hybrid/CSC tensors stay in torch: no edge
            assert source == "torch" and call not in ("torch densify", "torch copy"), message
            continue
        assert outcome == "InvalidArrayError", f"{name} ({size}): {outcome}: {message}"
        assert re.search(matches(name), message), f"{name} ({size}): {message}"
        assert "\n" in message  # the second line says what to do


@pytest.mark.parametrize("call", list(SCIPY_CALLS))
def test_edited_scipy_arrays_are_refused_before_any_framework_reads_them(call: str) -> None:
    """Crashed or corrupted the heap before (edited after scipy checked them)."""
    _check_child("scipy", call, scipy_match)


@pytest.mark.parametrize("call", list(TORCH_CALLS))
def test_torch_tensors_built_unchecked_are_refused(call: str) -> None:
    """check_invariants=False tensors: to_dense() segfaulted, other frameworks read garbage."""
    _check_child("torch", call, lambda name: TORCH_CASES[name])


def test_scipy_only_formats_reach_tensorflow_aligned() -> None:
    """A valid CSC or DIA matrix aborted TensorFlow: .tocsr()'s buffers are numpy's, not
    64-byte aligned, and the plan took them for aligned. One child, each format in turn."""
    need("tensorflow")
    run = child(f"""
        import numpy as np, scipy.sparse as sp, tensorflow as tf
        from interop_core import to
        d = np.array({DENSE.tolist()}, np.float32)
        for fmt in ("csc", "dia", "bsr", "lil", "dok"):
            print(fmt, end=" ", flush=True)
            t = to(getattr(sp, fmt + "_array")(d), "tensorflow")
            print(np.array_equal(tf.sparse.to_dense(t).numpy(), d), flush=True)
    """)  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr[-2000:]
    assert run.stdout.split() == [
        w for f in ("csc", "dia", "bsr", "lil", "dok") for w in (f, "True")
    ]


# -- refused in-process (no framework crashes on these) ------------------------------------------


def test_the_advice_for_a_lying_canonical_flag_works() -> None:
    m = _canonical("small")
    _swap_row0(m)  # row 0: columns 3, 1 (the values stay: 1.5 is at column 3 now)
    rows = np.repeat(np.arange(3), np.diff(m.indptr))
    want = summed((3, 4), (rows, m.indices.copy()), m.data)
    with pytest.raises(InvalidArrayError, match=r"has_sorted_indices = False.*sum_duplicates"):
        to(m, "numpy", densify=True)
    m.has_sorted_indices = False
    m.sum_duplicates()
    np.testing.assert_array_equal(to(m, "numpy", densify=True), want)


def test_the_advice_for_a_lying_coo_flag_works() -> None:
    m = sp.coo_array(
        (np.array([1.0, 2, 3], np.float32), (np.array([2, 0, 0]), np.array([3, 3, 1]))),
        shape=(3, 4),
    )
    m.has_canonical_format = True  # a lie: (2, 3) comes first
    with pytest.raises(InvalidArrayError, match=r"has_canonical_format = False"):
        to(m, "numpy", densify=True)
    m.has_canonical_format = False
    m.sum_duplicates()
    want = summed((3, 4), ([2, 0, 0], [3, 3, 1]), [1, 2, 3])
    np.testing.assert_array_equal(to(m, "numpy", densify=True), want)


def test_an_invalid_array_is_refused_by_explain_and_as_a_leaf() -> None:
    need("torch")
    m = _edit(_set("indices", 0, 10**9), "small")
    with pytest.raises(InvalidArrayError, match="column index 1000000000"):
        explain(m, "torch")
    with pytest.raises(InvalidArrayError, match=r"At \['a'\]: .*column index 1000000000"):
        to({"a": m, "b": np.ones(2)}, "numpy", densify=True)
    with pytest.raises(InvalidArrayError, match="column index 1000000000"):
        to(m, "scipy")  # even the array as it is: every call checks


def test_a_canonical_form_scipy_has_not_computed_is_found_by_the_check() -> None:
    """The check computes it (scipy's own getter runs C code over unchecked buffers) and
    keeps it as scipy would."""
    torch = need("torch")
    m = sp.csr_array((np.ones(3, np.float32), np.array([0, 2, 1]), np.array([0, 2, 3, 3])),
                     shape=(3, 3))  # fmt: skip
    assert "_has_canonical_format" not in m.__dict__
    t = to(m, "torch")
    assert m.__dict__["_has_canonical_format"] is True
    assert t.values().data_ptr() == m.data.ctypes.data  # canonical: shared
    # Row 0 holds columns 2, 0: unsorted, and valid.
    m2 = sp.csr_array((np.ones(3, np.float32), np.array([2, 0, 2]), np.array([0, 2, 3, 3])),
                      shape=(3, 3))  # fmt: skip
    t2 = to(m2, "torch")
    assert m2.__dict__["_has_canonical_format"] is False
    np.testing.assert_array_equal(t2.to_dense().numpy(), m2.toarray())
    assert isinstance(t2, torch.Tensor)


def test_the_scipy_check_runs_once_per_call_and_not_on_what_the_edges_make(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Counted, not timed: a warm to() checks a scipy array once; a torch -> JAX route
    (through scipy) checks the torch tensor at its edge and never the scipy array it makes."""
    need("torch")
    need("jax")
    from interop_plugins.exchange import sparse_convert
    from interop_plugins.frameworks import scipy as scipy_plugin

    calls = []
    real = sparse_convert.scipy_check

    def counting(m: Any) -> bool:
        calls.append(m)
        return real(m)

    monkeypatch.setattr(sparse_convert, "scipy_check", counting)
    scipy_plugin._scipy_check.cache_clear()
    try:
        m = sp.csr_array(DENSE)
        to(m, "torch")  # cold
        calls.clear()
        for _ in range(3):
            to(m, "torch")
        assert len(calls) == 3
        calls.clear()
        t = to(sp.coo_array(DENSE), "torch")
        calls.clear()
        out = to(t, "jax")
        np.testing.assert_array_equal(values(out), DENSE)
        assert calls == []
    finally:
        scipy_plugin._scipy_check.cache_clear()


# -- valid odd inputs: the right values ----------------------------------------------------------

TARGETS = ("torch", "jax", "tensorflow")


def odd_inputs() -> dict[str, tuple[Callable[[], Any], Any]]:
    f32 = np.float32
    d3 = np.zeros((2, 3, 4), f32)
    d3[0, 1, 2], d3[1, 2, 3] = 1, 2
    big = (np.array([1.0], f32), (np.array([10**9 - 1]), np.array([10**9 - 1])))
    dups = (np.array([1.0, 2, 3], f32), np.array([3, 1, 1]), np.array([0, 3, 3, 3]))
    return {
        "empty 3x4 CSR": (lambda: sp.csr_array((3, 4), dtype=f32), np.zeros((3, 4))),
        "0x4 CSR": (lambda: sp.csr_array((0, 4), dtype=f32), np.zeros((0, 4))),
        "3x0 CSR": (lambda: sp.csr_array((3, 0), dtype=f32), np.zeros((3, 0))),
        "0x0 COO": (lambda: sp.coo_array((0, 0), dtype=f32), np.zeros((0, 0))),
        "3-d COO": (lambda: sp.coo_array(d3), d3),
        "1-d COO": (lambda: sp.coo_array(np.array([0, 1.0, 0, 2], f32)), [0, 1, 0, 2]),
        "unsorted CSR with duplicates": (
            lambda: sp.csr_array(dups, shape=(3, 4)),
            summed((3, 4), ([0, 0, 0], [3, 1, 1]), [1, 2, 3]),
        ),
        "int64 indices": (lambda: _int64(sp.csr_array(DENSE)), DENSE),
        "10**9 x 10**9 COO": (lambda: sp.coo_array(big, shape=(10**9, 10**9)), None),
    }


def _int64(m: Any) -> Any:
    m.indices, m.indptr = m.indices.astype(np.int64), m.indptr.astype(np.int64)
    return m


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", list(odd_inputs()))
def test_valid_odd_arrays_convert_with_their_values(name: str, target: str) -> None:
    need(target)
    build, want = odd_inputs()[name]
    out = to(build(), target)
    if want is None:  # too large to densify: the shape and the one value
        assert tuple(out.shape) == (10**9, 10**9)
        return
    got = values(out)
    assert got.shape == np.shape(want)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["empty 3x4 CSR", "0x4 CSR", "3x0 CSR", "0x0 COO", "3-d COO"])
def test_valid_odd_arrays_densify(name: str) -> None:
    build, want = odd_inputs()[name]
    np.testing.assert_array_equal(to(build(), "numpy", densify=True), want)


# -- JAX's padding -------------------------------------------------------------------------------


def _jsp() -> Any:
    need("jax")
    from jax.experimental import sparse as jsp

    return jsp


@pytest.mark.parametrize("target", ["scipy", "torch", "tensorflow"])
@pytest.mark.parametrize("kind", ["BCOO", "BCSR"])
@pytest.mark.parametrize("nonzero", [True, False])
def test_jax_padding_is_dropped_with_the_right_values(
    kind: str, target: str, nonzero: bool
) -> None:
    """fromdense(nse=...) pads with indices equal to the shape: refused in scipy's words
    ("axis 0 index 3 exceeds matrix dimension 3") before."""
    need(target)
    dense = DENSE if nonzero else np.zeros((3, 4), np.float32)
    x = getattr(_jsp(), kind).fromdense(dense, nse=7)
    out = to(x, target)
    np.testing.assert_array_equal(values(out), dense)
    if target == "scipy" and nonzero:  # the padding at the end is sliced off: still shared
        assert out.nnz == 4
        assert out.data.ctypes.data == x.data.unsafe_buffer_pointer()
        assert to(x, "scipy", copy=False).nnz == 4


def test_jax_padding_between_entries_is_dropped_by_a_copy() -> None:
    jnp = need("jax").numpy
    need("torch")
    x = _jsp().BCOO(
        (jnp.array([1.0, 5, 2], jnp.float32), jnp.array([[0, 1], [3, 4], [2, 2]], jnp.int32)),
        shape=(3, 4),
    )
    want = summed((3, 4), ([0, 2], [1, 2]), [1, 2])
    np.testing.assert_array_equal(values(to(x, "scipy")), want)
    np.testing.assert_array_equal(values(to(x, "torch")), want)
    with pytest.raises(CopyRequiredError, match="padding"):
        to(x, "scipy", copy=False)


def test_bcsr_padding_inside_a_row_is_dropped() -> None:
    jnp = need("jax").numpy
    need("torch")
    x = _jsp().BCSR(
        (jnp.array([1.0, 9, 2], jnp.float32), jnp.array([1, 4, 2], jnp.int32),
         jnp.array([0, 2, 2, 3], jnp.int32)), shape=(3, 4),
    )  # fmt: skip
    want = summed((3, 4), ([0, 2], [1, 2]), [1, 2])
    for target in ("scipy", "torch"):
        np.testing.assert_array_equal(values(to(x, target)), want)


JAX_CASES = {
    "index past the padding": (
        lambda jnp: ([[0, 1], [2, 9]], jnp.int32, {}),
        r"index 9 at position 1, outside \[0, 4\] \(an index equal to .* is padding\)",
    ),
    "negative index": (lambda jnp: ([[0, 1], [2, -1]], jnp.int32, {}), r"axis 1 index -1"),
    "uint32 indices": (lambda jnp: ([[0, 1], [2, 2]], jnp.uint32, {}), r"dtype uint32"),
    "sorted flag over unsorted indices": (
        lambda jnp: ([[2, 1], [0, 1]], jnp.int32, {"indices_sorted": True}),
        r"indices_sorted=True, but entry 1 at \(0, 1\) does not follow",
    ),
    "unique flag over duplicates": (
        lambda jnp: ([[0, 1], [0, 1]], jnp.int32, {"indices_sorted": True, "unique_indices": True}),
        r"marked indices_sorted=True and unique_indices=True",
    ),
    "unique flag alone over duplicates": (
        lambda jnp: ([[2, 1], [0, 0], [2, 1]], jnp.int32, {"unique_indices": True}),
        r"unique_indices=True, but entry \d at \(2, 1\) repeats",
    ),
}


@pytest.mark.parametrize("target", ["scipy", "torch", "jax densify"])
@pytest.mark.parametrize("name", list(JAX_CASES))
def test_hostile_jax_arrays_are_refused(name: str, target: str) -> None:
    jnp = need("jax").numpy
    idx, dtype, flags = JAX_CASES[name][0](jnp)
    n = len(idx)
    x = _jsp().BCOO(
        (jnp.arange(1, n + 1, dtype=jnp.float32), jnp.array(idx, dtype)), shape=(3, 4), **flags
    )
    fw, options = ("jax", {"densify": True}) if target == "jax densify" else (target, {})
    need(fw)
    with pytest.raises(InvalidArrayError, match=JAX_CASES[name][1]):
        to(x, fw, **options)


def test_a_hostile_bcsr_is_refused() -> None:
    jnp = need("jax").numpy
    i32 = jnp.int32
    bufs = (jnp.array([1.0, 2], jnp.float32), jnp.array([1, 0], i32))
    x = _jsp().BCSR((*bufs, jnp.array([0, 2, 1, 2], i32)), shape=(3, 4))
    with pytest.raises(InvalidArrayError, match=r"indptr decreasing at row 1"):
        to(x, "scipy")
    x = _jsp().BCSR((*bufs, jnp.array([0, 1, 1, 9], i32)), shape=(3, 4))
    with pytest.raises(InvalidArrayError, match=r"indptr ending at 9 over 2"):
        to(x, "jax", densify=True)


# -- TensorFlow ----------------------------------------------------------------------------------


def _tf_sparse(indices: Any, vals: Any, shape: Any) -> Any:
    tf = need("tensorflow")
    return tf.SparseTensor(tf.constant(indices, tf.int64), tf.constant(vals, tf.float32), shape)


@pytest.mark.parametrize("target", ["scipy", "torch", "jax", "tensorflow densify"])
@pytest.mark.parametrize(
    ("indices", "shape", "match"),
    [
        ([[0, 1], [2, 9]], [3, 4], r"axis 1 index 9 at position 1, outside \[0, 4\)"),
        ([[0, 1], [-1, 2]], [3, 4], r"axis 0 index -1"),
        ([[0, 1], [1, 1]], [-1, 4], r"negative dimension"),
    ],
)
def test_hostile_tf_sparse_tensors_are_refused(
    indices: Any, shape: Any, match: str, target: str
) -> None:
    fw, options = ("tensorflow", {"densify": True}) if "densify" in target else (target, {})
    need(fw)
    with pytest.raises(InvalidArrayError, match=match):
        to(_tf_sparse(indices, [1.0, 2.0], shape), fw, **options)


@pytest.mark.parametrize("target", ["scipy", "torch", "jax", "tensorflow densify"])
def test_tf_indices_out_of_order_or_repeated_convert_summed(target: str) -> None:
    """TF's to_dense refused them (it wants its canonical order): densify sums them now, as
    every other framework does."""
    fw, options = ("tensorflow", {"densify": True}) if "densify" in target else (target, {})
    need(fw)
    indices = [[2, 1], [0, 1], [2, 1]]
    want = summed((3, 4), ([2, 0, 2], [1, 1, 1]), [1, 2, 3])
    got = values(to(_tf_sparse(indices, [1.0, 2.0, 3.0], [3, 4]), fw, **options))
    np.testing.assert_array_equal(got, want)
