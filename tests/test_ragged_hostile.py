"""Hostile ragged arrays (issue 30): every ragged array's row splits are checked, fully,
before any edge pads or shares them, and a lie is an InvalidArrayError naming the array,
the row and what to do.

Arrow checks only a list array's first and last offsets when it is built, torch's
``nested_tensor_from_jagged`` and TensorFlow's ``from_row_splits(validate=False)`` nothing,
and a RaggedArray was checked at its ends only: offsets that decrease, run past the values,
start below 0, or say 2**31 - 1 (``ragged="pad"`` allocated 16 GiB before anything looked)
reached torch, TensorFlow, JAX and the padding. The lying arrays are built the way such
arrays arrive: offsets written into an Arrow buffer after pyarrow checked it, a length the
C data interface carries, torch and TensorFlow parts given as they are. Each target runs
the hostile cases in a child process limited to 4 GiB of address space (a 16 GiB
allocation fails there at once instead of swapping; a crash fails only its own test).
Valid odd inputs (slices, offsets past 0, empty, only empty rows, no chunks, list<bool>)
convert with the right values.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
from typing import Any

import pytest
from conftest import need
from hostile import run_child

from interop_core import InvalidArrayError, OptionError, explain, to

np = need("numpy")
pa = need("pyarrow")

HERE = os.path.dirname(os.path.abspath(__file__))
ROWS = [[0.0, 1.0, 2.0], [], [3.0, 4.0], [5.0]]
OFFSETS = [0, 3, 3, 5, 6]
#: numpy buffers the lying Arrow arrays point into (they must outlive the arrays).
_KEEP: list[Any] = []


def arrow_list(offsets: list[int], lie: list[int] | None = None, *, large: bool = False,
               values: Any = None) -> Any:  # fmt: skip
    """A List (LargeList) array of float32 0..5 over ``offsets``; ``lie``: offsets written
    into its buffer after pyarrow checked it (its own check reads the first and last)."""
    held = np.array(offsets, np.int64 if large else np.int32)
    _KEEP.append(held)
    values = pa.array(np.arange(6, dtype=np.float32)) if values is None else values
    kind = (pa.large_list if large else pa.list_)(values.type)
    arr = pa.Array.from_buffers(kind, len(offsets) - 1, [None, pa.py_buffer(held)],
                                children=[values])  # fmt: skip
    if lie is not None:
        held[:] = lie
    return arr


def short_values() -> Any:
    """A values array whose length (2) says less than its buffer holds: through the C data
    interface, which carries a length as given."""
    cffi = pytest.importorskip("pyarrow.cffi")
    ffi = cffi.ffi
    full = pa.array(np.arange(6, dtype=np.float32))
    c, s = ffi.new("struct ArrowArray*"), ffi.new("struct ArrowSchema*")
    pc, ps = int(ffi.cast("uintptr_t", c)), int(ffi.cast("uintptr_t", s))
    full._export_to_c(pc, ps)
    c.length = 2
    return pa.Array._import_from_c(pc, ps)


def rows_of(x: Any) -> Any:
    """The rows of any ragged result, read off its parts by its framework's own API."""
    name = type(x).__name__
    if name == "NestedTensor":
        offsets = x.offsets().tolist()
        return [x.values()[a:b].tolist() for a, b in itertools.pairwise(offsets)]
    if name == "RaggedTensor":
        return x.to_list()
    if name == "RaggedArray":
        values, splits = np.asarray(x.values), np.asarray(x.row_splits).tolist()
        assert splits[0] == 0 and splits[-1] == len(values)
        return [values[a:b].tolist() for a, b in itertools.pairwise(splits)]
    if type(x).__module__.startswith("pyarrow"):
        return x.to_pylist()
    return np.asarray(x).tolist()


# -- the hostile cases: (name, source, what the message names) -------------------------------

#: Arrow offsets that lie, as pyarrow's own check lets them through.
ARROW_LIES = {
    "decreasing": ([0, 3, 2, 5, 6], r"row 1 runs from offset 3 to 2, backwards"),
    "negative inside": ([0, -3, 3, 5, 6], r"row 0 runs from offset 0 to -3"),
    "negative first": ([-1, 3, 3, 5, 6], r"row 0 starts at offset -1"),
    "past the values": ([0, 3, 3, 5, 7], r"row 3 ends at offset 7, and the values hold 6"),
    "2**31 - 1": ([0, 3, 3, 5, 2**31 - 1], r"row 3 ends at offset 2147483647"),
    "huge inside": ([0, 3, 2**31 - 1, 5, 6], r"row 2 runs from offset 2147483647 to 5"),
    "all past": ([100] * 5, r"row 3 ends at offset 100"),
    "reversed": ([6, 5, 3, 3, 0], r"row 0 runs from offset 6 to 5"),
}
#: torch jagged tensors: (offsets, lengths), and the message.
TORCH_LIES = {
    "decreasing": (([0, 3, 2, 5, 6], None), r"row 1 runs from offset 3 to 2"),
    "past the values": (([0, 3, 3, 5, 9], None), r"row 3 ends at offset 9"),
    "2**31 - 1": (([0, 3, 3, 5, 2**31 - 1], None), r"row 3 ends at offset 2147483647"),
    "negative first": (([-1, 3, 3, 5, 6], None), r"row 0 starts at offset -1"),
    "length past": ((OFFSETS, [2, 0, 9, 1]), r"row 2 is 9 values from offset 3"),
    "length negative": ((OFFSETS, [2, 0, -1, 1]), r"row 2 is -1 values from offset 3"),
    "length 2**31 - 1": ((OFFSETS, [2, 0, 2**31 - 1, 1]), r"row 2 is 2147483647 values"),
}
#: tf.RaggedTensor (validate=False) and RaggedArray row splits, and the message.
SPLITS_LIES = {
    "decreasing": ([0, 3, 2, 5, 6], r"row 1 runs from offset 3 to 2"),
    "past the values": ([0, 3, 3, 5, 9], r"row 3 ends at offset 9, and the values hold 6"),
    "2**31 - 1": ([0, 3, 3, 5, 2**31 - 1], r"row 3 ends at offset 2147483647"),
    "negative inside": ([0, -3, 3, 5, 6], r"row 0 runs from offset 0 to -3"),
    "start past 0": ([1, 3, 3, 5, 6], r"row 0 starts at offset 1, not 0"),
    "inside past": ([0, 3, 9, 5, 6], r"row 2 runs from offset 9 to 5"),
}


def hostile(source: str, name: str) -> Any:
    """The hostile ragged array ``name`` of ``source`` (see the tables above)."""
    if source in ("arrow", "arrow large"):
        return arrow_list(OFFSETS, ARROW_LIES[name][0], large=source == "arrow large")
    if source == "arrow sliced":  # the lie inside the slice's own offsets
        return arrow_list(OFFSETS, ARROW_LIES[name][0])[0:4]
    if source in ("arrow chunk", "arrow table"):  # lies written after pyarrow built them
        first = arrow_list([0, 1])
        arr = arrow_list(OFFSETS)
        held = _KEEP[-1]
        if source == "arrow chunk":  # the lie in the second chunk of a column
            out = pa.chunked_array([first, arr])
        else:
            out = pa.table({"ragged": arr})
        held[:] = ARROW_LIES[name][0]
        return out
    if source == "torch":
        torch = need("torch")
        offsets, lengths = TORCH_LIES[name][0]
        return torch.nested.nested_tensor_from_jagged(
            torch.arange(6, dtype=torch.float32), torch.tensor(offsets),
            lengths=None if lengths is None else torch.tensor(lengths),
        )  # fmt: skip
    splits = SPLITS_LIES[name][0]
    if source == "tensorflow":
        tf = need("tensorflow")
        return tf.RaggedTensor.from_row_splits(
            tf.range(6.0), tf.constant(splits, tf.int64), validate=False
        )
    jnp = need("jax").numpy
    from interop_plugins.exchange.ragged import RaggedArray

    return RaggedArray(jnp.arange(6, dtype=jnp.float32), jnp.asarray(splits, jnp.int32))


def cases() -> list[tuple[str, str, str]]:
    """(source, case, the message's pattern) of every hostile array."""
    found = [(s, n, m) for s in ("arrow", "arrow large") for n, (_, m) in ARROW_LIES.items()]
    for source in ("arrow sliced", "arrow chunk", "arrow table"):
        found += [(source, n, m) for n, (_, m) in ARROW_LIES.items() if n != "reversed"]
    found += [("torch", n, m) for n, (_, m) in TORCH_LIES.items()]
    found += [(s, n, m) for s in ("tensorflow", "jax") for n, (_, m) in SPLITS_LIES.items()]
    return found


#: How each child converts: (target, options). "pad" pads into numpy (where 2**31 - 1
#: allocated 16 GiB before); the others keep the arrays ragged.
CALLS = {
    "torch": ("torch", {}),
    "tensorflow": ("tensorflow", {}),
    "jax": ("jax", {}),
    "pyarrow": ("pyarrow", {}),
    "pad": ("numpy", {"ragged": "pad", "fill_value": 0, "mask": True}),
}
_SOURCE_NEEDS = {"torch": "torch", "tensorflow": "tensorflow", "jax": "jax"}


def run_cases(calls: list[str]) -> None:
    """In a child: convert every hostile array with each of ``calls``, twice (the second
    time on the warm path, after a valid array of the same kind planned it), printing one
    JSON line per case: [call, source, name, outcome, message, second outcome]. A crash
    ends the output early."""
    import importlib.util

    from interop_core import InteropError

    for call in calls:
        target, options = CALLS[call]
        to(arrow_list([0, 1, 3]), target, **options)  # planned: the warm path next
        for source, name, _ in cases():
            module = _SOURCE_NEEDS.get(source)
            if module and importlib.util.find_spec(module) is None:
                continue
            print(json.dumps([call, source, name, "start", "", ""]), flush=True)
            outcomes = []
            for _ in range(2):
                x = hostile(source, name)
                try:
                    out = to(x, target, **options)
                    outcome, message = "accepted", repr(out)[:200]
                except InteropError as exc:
                    outcome, message = type(exc).__name__, str(exc)
                except Exception as exc:
                    outcome, message = "raw " + type(exc).__name__, str(exc)
                outcomes.append((outcome, message))
            print(json.dumps([call, source, name, *outcomes[0], outcomes[1][0]]), flush=True)


def child(code: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter with tests/ importable (hostile.run_child)."""
    return run_child(code, timeout)


def _installed(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


@pytest.fixture(scope="module")
def hostile_run() -> tuple[subprocess.CompletedProcess[str], list[list[str]]]:
    """One child for every call (the frameworks imported once), limited to 4 GiB of
    address space once they are."""
    calls = [c for c, (t, _) in CALLS.items() if _installed(t if t != "pyarrow" else "numpy")]
    run = child(f"""
        import resource
        import warnings
        warnings.simplefilter("ignore")
        import numpy, pyarrow  # noqa: F401
        from test_ragged_hostile import run_cases
        for name in ("torch", "tensorflow", "jax"):
            try:
                __import__(name)
            except ImportError:
                pass
        limit = 4 << 30
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        run_cases({calls!r})
    """)  # fmt: skip
    return run, [json.loads(line) for line in run.stdout.splitlines() if line.startswith("[")]


@pytest.mark.parametrize("call", list(CALLS))
def test_hostile_row_splits_are_refused_before_anything_reads_them(
    call: str, hostile_run: tuple[subprocess.CompletedProcess[str], list[list[str]]]
) -> None:
    """Decreasing, negative and past-the-end offsets reached every target (and 2**31 - 1
    made ragged="pad" allocate 16 GiB): now InvalidArrayError, cold and warm."""
    import re

    target = CALLS[call][0]
    need(target if target != "pyarrow" else "numpy")
    run, lines = hostile_run
    mine = [line for line in lines if line[0] == call]
    done = [line for line in mine if line[3] != "start"]
    last = lines[-1] if lines else None
    crashed = f"child died (rc {run.returncode}) at {last}: {run.stderr[-2000:]}"
    assert done and len(done) * 2 == len(mine), crashed
    patterns = {(s, n): m for s, n, m in cases()}
    for _, source, name, outcome, message, again in done:
        where = f"{source} {name} -> {call}"
        assert outcome == "InvalidArrayError" and again == outcome, f"{where}: {outcome}: {message}"
        assert re.search(patterns[source, name], message), f"{where}: {message}"
        assert "\n" in message, f"{where}: no advice: {message}"  # what to do: line two
        if source == "arrow table":
            assert "column 'ragged'" in message, message
    if call == list(CALLS)[-1]:
        assert run.returncode == 0, crashed


# -- in process: refusals that only raise --------------------------------------------------------


def test_explain_refuses_what_to_refuses() -> None:
    x = arrow_list(OFFSETS, [0, 3, 2, 5, 6])
    with pytest.raises(InvalidArrayError, match="backwards"):
        explain(x, "numpy", ragged="pad", fill_value=0)


def test_a_hostile_array_with_the_key_of_a_valid_one_is_refused_on_the_warm_path() -> None:
    """The warm path runs the plan of the first array for every array of the same key: the
    key itself checks the row splits."""
    torch = need("torch")
    good = arrow_list(OFFSETS)
    for _ in range(3):
        assert [t.tolist() for t in to(good, "torch").unbind()] == ROWS
    for lie in ([0, 3, 2, 5, 6], [0, 3, 3, 5, 7]):
        bad = arrow_list(OFFSETS, lie)
        with pytest.raises(InvalidArrayError, match="row splits are not valid"):
            to(bad, "torch")
    assert isinstance(to(good, "torch"), torch.Tensor)


def test_values_shorter_than_the_offsets_say_are_refused() -> None:
    """A values child whose length (from the C data interface) is shorter than the offsets
    reach: the rows would read past it."""
    values = short_values()
    arr = arrow_list([0, 1, 2], values=values)
    held = _KEEP[-1]
    held[:] = [0, 1, 6]  # past the two values the child says it holds
    with pytest.raises(InvalidArrayError, match="row 1 ends at offset 6, and the values hold 2"):
        to(arr, "numpy", ragged="pad", fill_value=0)


def test_an_offsets_buffer_shorter_than_the_rows_is_refused() -> None:
    """A length the C data interface carries past what the offsets buffer holds: Arrow
    computes the buffers' sizes from it on import, so what can be read is the buffer's
    own size; a list array made by hand with a short buffer is refused by pyarrow first."""
    with pytest.raises(pa.ArrowInvalid):
        pa.Array.from_buffers(pa.list_(pa.float32()), 10, [None, pa.py_buffer(b"\0" * 8)],
                              children=[pa.array([1.0], pa.float32())])  # fmt: skip


def test_hostile_splits_in_a_batch_name_the_column() -> None:
    table = pa.table({"x": pa.array([1.0, 2.0, 3.0, 4.0], pa.float32()),
                      "ragged": arrow_list(OFFSETS, [0, 3, 2, 5, 6])})  # fmt: skip
    with pytest.raises(
        InvalidArrayError, match=r"At \['features'\]\['ragged'\]: Cannot convert column 'ragged'"
    ):
        to({"features": table}, "numpy", ragged="pad", fill_value=0)


def test_a_non_integer_or_2d_row_splits_are_refused() -> None:
    jnp = need("jax").numpy
    from interop_plugins.exchange.ragged import RaggedArray

    values = jnp.arange(6, dtype=jnp.float32)
    for splits in (jnp.asarray(OFFSETS, jnp.float32), jnp.asarray([[0, 3], [3, 6]])):
        with pytest.raises(InvalidArrayError, match="1-d int32 or int64"):
            to(RaggedArray(values, splits), "torch")
    with pytest.raises(InvalidArrayError, match="0-d"):
        to(RaggedArray(jnp.float32(1), jnp.asarray([0, 0])), "torch")


# -- options ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"ragged": "pad", "fill_value": 0, "mask": "yes"}, r"mask='yes' is not a bool"),
        ({"ragged": "pad", "fill_value": 0, "mask": 1}, r"mask=1 is not a bool"),
        ({"ragged": "pad", "fill_value": "x"}, r"fill_value='x' is not one number or bool"),
        ({"ragged": "pad", "fill_value": [1, 2]}, r"fill_value=\[1, 2\] is not one number"),
        ({"ragged": "pad", "fill_value": None}, r"fill_value=None is not one number"),
        ({"ragged": True, "fill_value": 0}, r"ragged=True is not 'pad'"),
        ({"ragged": "PAD", "fill_value": 0}, r"ragged='PAD' is not 'pad'"),
        ({"ragged": "pad", "fill_value": 0, "nulls": "drop"}, r"nulls='drop' is not one of"),
    ],
)
def test_option_values_of_another_type_are_refused(options: dict[str, Any], match: str) -> None:
    """mask="yes" padded with a mask (read as true); each such value is now an OptionError,
    from explain() as from to()."""
    x = arrow_list(OFFSETS)
    for call in (to, explain):
        with pytest.raises(OptionError, match=match):
            call(x, "numpy", **options)


def test_option_values_of_the_right_type_pass() -> None:
    x = arrow_list(OFFSETS)
    want = [[0, 1, 2], [7, 7, 7], [3, 4, 7], [5, 7, 7]]
    for fill in (7, np.float32(7), np.array(7.0), 7.0):
        for mask in (False, None, np.bool_(False)):
            out = to(x, "numpy", ragged="pad", fill_value=fill, mask=mask)
            assert out.tolist() == want and out.dtype == np.float32
    out, mask = to(x, "numpy", ragged="pad", fill_value=7, mask=np.bool_(True))
    assert out.tolist() == want and mask.sum() == 6


# -- valid odd inputs convert --------------------------------------------------------------------


def _ragged_targets() -> list[str]:
    return ["torch", "tensorflow", "jax", "pyarrow"]


VALID = {
    "sliced": (lambda: arrow_list(OFFSETS)[1:3], ROWS[1:3]),
    "sliced large": (lambda: arrow_list(OFFSETS, large=True)[2:], ROWS[2:]),
    "offsets past 0": (lambda: arrow_list([2, 3, 5, 6]), [[2.0], [3.0, 4.0], [5.0]]),
    "values sliced": (
        lambda: arrow_list([0, 1, 4], values=pa.array(np.arange(6, dtype=np.float32))[2:]),
        [[2.0], [3.0, 4.0, 5.0]],
    ),
    "a lie outside the slice": (
        lambda: arrow_list(OFFSETS, [0, 3, 2, 5, 6])[2:4],
        [[2.0, 3.0, 4.0], [5.0]],
    ),
    "no rows": (lambda: arrow_list([0]), []),
    "only empty rows": (lambda: pa.array([[], []], pa.list_(pa.float32())), [[], []]),
    "no chunks": (lambda: pa.chunked_array([], pa.list_(pa.float32())), []),
    "no chunks, large": (lambda: pa.chunked_array([], pa.large_list(pa.float32())), []),
    "list<bool>": (
        lambda: pa.array([[True, False], [], [True]], pa.list_(pa.bool_())),
        [[True, False], [], [True]],
    ),
}


@pytest.mark.parametrize("target", _ragged_targets())
@pytest.mark.parametrize("case", list(VALID))
def test_valid_odd_list_arrays_convert_with_their_values(case: str, target: str) -> None:
    """list<bool>, no rows, only empty rows and no chunks were refused into JAX and
    TensorFlow with a CopyRequiredError about copy=False, which the caller never passed."""
    need(target if target != "pyarrow" else "numpy")
    make, rows = VALID[case]
    for _ in range(2):  # cold, then warm
        got = to(make(), target)
        assert rows_of(got) == rows
    if case == "list<bool>" and target != "pyarrow":  # bits: the values are unpacked
        route = explain(make(), target)
        assert route.copies == 1 and "(copied)" in str(route), str(route)


@pytest.mark.parametrize("target", ["jax", "tensorflow", "torch"])
def test_list_columns_of_tables_convert(target: str) -> None:
    need(target)
    tables = {
        "list<bool>": (pa.table({"l": pa.array([[True], [False, True]], pa.list_(pa.bool_()))}),
                       [[True], [False, True]]),
        "0 rows": (pa.table({"l": pa.array([], pa.list_(pa.float32()))}), []),
        "only empty rows": (pa.table({"l": pa.array([[], []], pa.list_(pa.float32()))}),
                            [[], []]),
        "no chunks": (pa.table({"l": pa.chunked_array([], pa.list_(pa.float32()))}), []),
    }  # fmt: skip
    for name, (table, rows) in tables.items():
        out = to(table, target)
        assert rows_of(out["l"]) == rows, name
    dtype = to(tables["list<bool>"][0], target)["l"]
    values = dtype.values() if target == "torch" else dtype.values
    assert "bool" in str(values.dtype)


def test_padding_the_odd_inputs() -> None:
    for case, (make, rows) in VALID.items():
        fill = False if case == "list<bool>" else 9
        out, mask = to(make(), "numpy", ragged="pad", fill_value=fill, mask=True)
        width = max((len(r) for r in rows), default=0)
        assert out.shape == (len(rows), width), case
        assert out.tolist() == [r + [fill] * (width - len(r)) for r in rows], case
        assert mask.tolist() == [[True] * len(r) + [False] * (width - len(r)) for r in rows]


def test_torch_jagged_tensors_with_lengths_and_offsets_past_0_convert() -> None:
    torch = need("torch")
    values = torch.arange(6, dtype=torch.float32)
    narrow = torch.nested.nested_tensor_from_jagged(
        values, torch.tensor(OFFSETS), lengths=torch.tensor([2, 0, 1, 1])
    )
    assert rows_of(to(narrow, "numpy", ragged="pad", fill_value=0)) == [
        [0.0, 1.0], [0.0, 0.0], [3.0, 0.0], [5.0, 0.0]
    ]  # fmt: skip
    tf = need("tensorflow")
    assert to(narrow, "tensorflow").to_list() == [[0.0, 1.0], [], [3.0], [5.0]]
    past = torch.nested.nested_tensor_from_jagged(values, torch.tensor([2, 3, 5, 6]))
    assert to(past, "tensorflow").to_list() == [[2.0], [3.0, 4.0], [5.0]]
    assert isinstance(to(past, "tensorflow"), tf.RaggedTensor)


def test_dtype_casts_the_values_of_a_list_column_as_the_error_advises() -> None:
    """A list<int64> into JAX without x64 is refused saying "pass dtype= to cast it first";
    that advice failed (pyarrow was asked to cast the list to int32)."""
    jax = need("jax")
    x = pa.array([[1, 2], [3]], pa.list_(pa.int64()))
    with pytest.raises(Exception, match="dtype="):
        to(x, "jax")
    for dtype in ("int32", {"int64": "int32"}):
        got = to(x, "jax", dtype=dtype)
        assert rows_of(got) == [[1, 2], [3]] and got.values.dtype == jax.numpy.int32
    table = pa.table({"l": pa.array([[1.0], [2.0, 3.0]], pa.large_list(pa.float64()))})
    out = to(table, "jax", dtype={"float64": "float32"})
    assert rows_of(out["l"]) == [[1.0], [2.0, 3.0]] and out["l"].values.dtype == "float32"
    with pytest.raises(InvalidArrayError, match="backwards"):  # checked before the cast
        to(arrow_list(OFFSETS, [0, 3, 2, 5, 6]), "jax", dtype="float16")
