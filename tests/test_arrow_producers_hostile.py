"""Hostile Arrow producers (issue 33): what crosses in through the Arrow PyCapsule interface
is checked before any framework reads it (rule 11), each case in a child process so that a
crash fails only its own test.

A producer that raises, answers with something other than capsules, hands over capsules of
the wrong kind, a released stream, a stream that fails half-way, or arrays whose structure
Arrow refuses (a negative length, the wrong number of buffers, a struct child shorter than
the struct, list offsets that run backwards) gets an InvalidArrayError naming the producer.
The C data interface carries no buffer sizes: a length or offset that reaches unmapped
memory is refused (the pages are asked); one that stays inside mapped memory reads the
neighbouring bytes, in every Arrow consumer (FACTS: undetectable from Python), and is not
tested as refused.
"""

from __future__ import annotations

import pytest
from conftest import need
from hostile import run_child

need("numpy")
need("pyarrow")
pytest.importorskip("pyarrow.cffi")

PRELUDE = """
import ctypes, sys
import numpy as np, pyarrow as pa
from pyarrow.cffi import ffi
import interop_core as ic

new_capsule = ctypes.pythonapi.PyCapsule_New
new_capsule.restype = ctypes.py_object
new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
kept = []

def exported(arr, **lies):
    # arr exported through the C data interface with fields replaced, as capsules (no
    # destructor: the test leaks them, as a careless producer would)
    c, s = ffi.new("struct ArrowArray*"), ffi.new("struct ArrowSchema*")
    pc, ps = int(ffi.cast("uintptr_t", c)), int(ffi.cast("uintptr_t", s))
    arr._export_to_c(pc, ps)
    for field, value in lies.items():
        setattr(c, field, value)
    kept.append((c, s))
    return new_capsule(ps, b"arrow_schema", None), new_capsule(pc, b"arrow_array", None)

class Batch:
    def __init__(self, answer): self.answer = answer
    def __arrow_c_array__(self, requested_schema=None): return self.answer()

class Stream:
    def __init__(self, answer): self.answer = answer
    def __arrow_c_stream__(self, requested_schema=None): return self.answer()

base = pa.array(range(8), pa.float32())

def halfway():
    yield pa.record_batch({"a": base})
    raise ValueError("the query failed half-way")

def report(obj, target="numpy"):
    try:
        out = ic.to(obj, target)
    except ic.InteropError as exc:
        print("REFUSED", type(exc).__name__, str(exc).replace(chr(10), " "))
    else:
        print("CONVERTED", repr(out)[:200])
"""

CASES = {
    "raises": ("Batch(lambda: 1 / 0)", "ZeroDivisionError"),
    "not a pair": ("Batch(lambda: 3)", "returned int, not a (schema, array) pair"),
    "three capsules": ("Batch(lambda: (1, 2, 3))", "not a (schema, array) pair"),
    "not capsules": ("Batch(lambda: (1, 2))", "invalid PyCapsule"),
    "swapped capsules": ("Batch(lambda: tuple(reversed(exported(base))))", "incorrect name"),
    "stream as array": (
        "Batch(lambda: (pa.table({'a': base}).__arrow_c_stream__(), None))", "Cannot read",
    ),
    "released stream": (
        "Stream(lambda: (lambda c: (pa.RecordBatchReader._import_from_c_capsule(c), c)[1])"
        "(pa.table({'a': base}).__arrow_c_stream__()))", "released",
    ),
    "negative length": ("Batch(lambda: exported(base, length=-5))", "negative"),
    "too many buffers": ("Batch(lambda: exported(base, n_buffers=5))", "buffers"),
    "no buffers": ("Batch(lambda: exported(base, n_buffers=0))", "buffers"),
    "struct longer than a child": (
        "Batch(lambda: exported(pa.StructArray.from_arrays([base], names=['a']), length=20))",
        "smaller than expected",
    ),
    "list offsets backwards": (
        "Batch(lambda: exported(pa.array([[1.0, 2.0], [3.0]]), offset=1, length=5))",
        "offset",
    ),
    "a length past mapped memory": (
        "Batch(lambda: exported(base, length=10**12))", "memory that is not mapped",
    ),
    "an offset past mapped memory": (
        "Batch(lambda: exported(base, offset=10**11))", "memory that is not mapped",
    ),
    "a stream failing half-way": (
        "Stream(lambda: pa.RecordBatchReader.from_batches(pa.schema({'a': pa.float32()}), "
        "halfway()).__arrow_c_stream__())",
        "failed half-way",
    ),
    "duplicate column names": (
        "Batch(lambda: exported(pa.StructArray.from_arrays([base, base], names=['a', 'a'])))",
        "appear more than once",
    ),
    "dictionary values": (
        "Batch(lambda: exported(pa.array(['a', 'b']).dictionary_encode()))",
        "dictionary-encoded",
    ),
}  # fmt: skip


@pytest.mark.parametrize("target", ["numpy", "torch"])
@pytest.mark.parametrize("case", list(CASES))
def test_a_hostile_producer_is_refused_in_words(case: str, target: str) -> None:
    need(target)
    producer, says = CASES[case]
    done = run_child(PRELUDE + f"\nreport({producer}, {target!r})\n")
    assert done.returncode == 0, f"the child died ({done.returncode}): {done.stderr[-3000:]}"
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("REFUSED "), last
    assert says in last, last
    if case not in ("duplicate column names", "dictionary values"):
        assert "InvalidArrayError" in last and ("Batch" in last or "Stream" in last), last


def test_a_lying_null_count_is_read_through() -> None:
    """A null count of 0 over a bitmap with nulls: the nulls are found (the bitmap is read)."""
    done = run_child(
        PRELUDE
        + """
lied = Batch(lambda: exported(pa.array([1.0, None, 3.0]), null_count=0))
report(lied)
print(ic.to(Batch(lambda: exported(pa.array([1.0, None, 3.0]), null_count=0)), "numpy",
            nulls="fill", fill_value=-1).tolist())
"""
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert lines[-2].startswith("REFUSED ConversionError") and "has nulls" in lines[-2]
    assert lines[-1] == "[1.0, -1.0, 3.0]"


def test_the_producer_is_asked_once_per_conversion() -> None:
    """An export that answers differently each time (a second ask would be a stream read
    twice, or a query run again) is asked exactly once: what was described is converted."""
    done = run_child(
        PRELUDE
        + """
asked = []
def answer():
    asked.append(1)
    return exported(pa.array(range(len(asked) * 4), pa.float32()))
print(ic.to(Batch(answer), "numpy").tolist(), len(asked))
"""
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "[0.0, 1.0, 2.0, 3.0] 1"
