"""Hostile producers: asked once, checked before any framework reads them, read-only
memory never handed out writable, and one object's refusal changes no other route.

Cases that crashed or aborted the interpreter before these fixes run in a child process.
"""

from __future__ import annotations

import os
import subprocess
from typing import Any

import adapters
import pytest
from conftest import frameworks, need
from hostile import (
    CapsuleProducer,
    RawCapsule,
    ShiftyArray,
    ShiftyDLPack,
    ShiftyInterface,
    run_child,
)

from interop_core import ConversionError, CopyRequiredError, InvalidArrayError, explain, to

np = need("numpy")

#: Every framework to() converts into (conftest.frameworks), a plugin's included.
TARGETS = frameworks()
HERE = os.path.dirname(os.path.abspath(__file__))


def child(code: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter with tests/ importable (hostile.run_child)."""
    return run_child(code, timeout)


def aligned(values: Any, dtype: Any) -> Any:
    """A C-contiguous copy of ``values`` at a 64-byte aligned address."""
    a = np.asarray(values, dtype=dtype)
    raw = np.empty(a.nbytes + 64, np.uint8)
    start = (-raw.ctypes.data) % 64
    out = raw[start : start + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


def unaligned(values: Any, dtype: Any) -> Any:
    """The same at an address 16 bytes past a 64-byte boundary."""
    a = np.asarray(values, dtype=dtype)
    raw = np.empty(a.nbytes + 128, np.uint8)
    start = (-raw.ctypes.data) % 64 + 16
    out = raw[start : start + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


def values_of(x: Any) -> Any:
    return adapters.to_numpy(x)


def need_dtype(target: str, dtype: str) -> None:
    """Skip unless ``target`` holds ``dtype`` (a plugin's framework may hold few)."""
    if not adapters.holds(target, dtype):
        pytest.skip(f"{target} does not hold {dtype}")


# -- a producer is asked once ----------------------------------------------------------------

SHIFTY = {"dlpack": ShiftyDLPack, "array_interface": ShiftyInterface, "array_like": ShiftyArray}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("kind", sorted(SHIFTY))
def test_a_producer_is_asked_once_per_call(kind: str, target: str) -> None:
    need(target)
    need_dtype(target, "float32")
    first = aligned(np.arange(12).reshape(3, 4), np.float32)
    for call in range(1, 4):  # cold, then the warm path
        p = SHIFTY[kind](kind, first, first)
        out = to(p, target)
        assert p.calls == 1, f"call {call}: {kind} producer asked {p.calls} times"
        np.testing.assert_array_equal(values_of(out), first)
    p = SHIFTY[kind](kind, first, first)
    explain(p, target)
    assert p.calls == 1


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("kind", sorted(SHIFTY))
def test_what_was_described_is_what_is_converted(kind: str, target: str) -> None:
    """A producer that answers an aligned int32 array first and an unaligned int64 one
    later: the int32 answer is converted (TF aborted, JAX narrowed silently before)."""
    need(target)
    need_dtype(target, "int32")
    first = aligned([[1, 2], [3, 4]], np.int32)
    later = unaligned([[1 << 40, 5], [6, 7]], np.int64)
    for _ in range(2):
        out = to(SHIFTY[kind](kind, first, later), target)
        got = values_of(out)
        assert str(got.dtype) == "int32"
        np.testing.assert_array_equal(got, first)


# -- read-only memory ------------------------------------------------------------------------


def test_readonly_bytes_never_become_a_writable_torch_tensor() -> None:
    torch = need("torch")
    data = b"abcdefgh"
    with pytest.raises(CopyRequiredError, match="read-only"):
        to(memoryview(data), "torch", copy=False)
    t = to(memoryview(data), "torch")  # copy=None copies
    assert isinstance(t, torch.Tensor)
    t.fill_(0)
    assert data == b"abcdefgh"
    view = to(memoryview(data), "numpy", copy=False)  # numpy keeps the read-only mark
    assert (
        not view.flags.writeable and view.ctypes.data == np.frombuffer(data, np.uint8).ctypes.data
    )


def test_readonly_mmap_to_torch_is_refused_not_a_segfault(tmp_path: Any) -> None:
    need("torch")
    path = tmp_path / "data.bin"
    path.write_bytes(bytes(range(64)))
    run = child(f"""
        import mmap, torch
        from interop_core import to, CopyRequiredError
        f = open({str(path)!r}, "rb")
        m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        for obj in (m, memoryview(m)):
            try:
                to(obj, "torch", copy=False).fill_(0)  # a SIGSEGV before the fix
                print("WROTE")
            except CopyRequiredError:
                print("REFUSED")
            t = to(obj, "torch")
            t.fill_(0)
            print("COPY", int(t.sum()), m[1])
    """)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["REFUSED", "COPY", "0", "1"] * 2


# -- what producers declare is checked -------------------------------------------------------

_KEEP = np.zeros(16, np.float32)
_PTR = int(_KEEP.ctypes.data)

BAD_CAPSULES = {
    "ndim 100000": dict(data=_PTR, shape=(4,), ndim=100000),
    "ndim -3": dict(data=_PTR, shape=(4,), ndim=-3),
    "negative dim": dict(data=_PTR, shape=(4, -2)),
    "overflowing dims": dict(data=_PTR, shape=(1 << 40, 1 << 40)),
    "NULL data": dict(data=0, shape=(4,)),
    "huge byte_offset": dict(data=_PTR, shape=(4,), byte_offset=(1 << 64) - 8),
    "huge strides": dict(data=_PTR, shape=(4, 4), strides=(1 << 61, 1)),
}


@pytest.mark.parametrize("case", sorted(BAD_CAPSULES))
def test_impossible_dlpack_descriptions_are_refused(case: str) -> None:
    raw = RawCapsule(**BAD_CAPSULES[case])  # type: ignore[arg-type]
    for target in ("numpy", "torch"):
        need(target)
        with pytest.raises(InvalidArrayError):
            to(CapsuleProducer(raw, _KEEP), target)
    with pytest.raises(InvalidArrayError):
        explain(CapsuleProducer(raw, _KEEP), "numpy")


@pytest.mark.parametrize("target", ["torch", "tensorflow"])
def test_impossible_descriptions_never_reach_a_framework(target: str) -> None:
    """In a child: each case raised InvalidArrayError, none crashed the interpreter."""
    need(target)
    run = child(f"""
        import numpy as np
        from hostile import CapsuleProducer, RawCapsule
        from interop_core import to, InvalidArrayError
        keep = np.zeros(16, np.float32)
        p = int(keep.ctypes.data)
        cases = [dict(data=p, shape=(4,), ndim=100000), dict(data=p, shape=(4, -2)),
                 dict(data=0, shape=(4,)), dict(data=p, shape=(4,), byte_offset=(1 << 64) - 8),
                 dict(data=p, shape=(1 << 40, 1 << 40))]
        for case in cases:
            try:
                to(CapsuleProducer(RawCapsule(**case), keep), {target!r})
                print("CONVERTED")
            except InvalidArrayError:
                print("REFUSED")
        class Interface:
            def __init__(self, d): self.__array_interface__ = d
        for d in [{{"shape": (-3,), "typestr": "<f4", "data": (p, False), "version": 3}},
                  {{"shape": (4,), "typestr": "<f4", "data": (0, False), "version": 3}},
                  {{"shape": (1 << 20,), "typestr": "<f4", "data": b"0123", "version": 3}}]:
            try:
                to(Interface(d), {target!r})
                print("CONVERTED")
            except InvalidArrayError:
                print("REFUSED")
    """)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["REFUSED"] * 8


def test_a_valid_raw_capsule_converts() -> None:
    """The checks refuse only what cannot exist: an honest hand-made capsule converts."""
    keep = aligned(np.arange(6), np.float32)
    raw = RawCapsule(int(keep.ctypes.data), (2, 3))
    got = to(CapsuleProducer(raw, keep), "numpy")
    np.testing.assert_array_equal(got, keep.reshape(2, 3))
    assert got.ctypes.data == keep.ctypes.data
    del got  # before raw: without a deleter, the struct must outlive what imported it


def test_an_interface_reaching_past_its_buffer_is_refused() -> None:
    class Interface:
        def __init__(self, d: dict[str, Any]) -> None:
            self.__array_interface__ = d

    big = {"shape": (1 << 20,), "typestr": "<f4", "data": b"0123", "version": 3}
    with pytest.raises(InvalidArrayError, match="holds 4 bytes"):
        to(Interface(big), "numpy")
    ok = {"shape": (1,), "typestr": "<f4", "data": b"0123", "version": 3}
    assert to(Interface(ok), "numpy").shape == (1,)


# -- a capsule without a deleter -------------------------------------------------------------


def test_a_capsule_without_deleter_never_reaches_jax() -> None:
    need("jax")
    run = child("""
        import gc
        import numpy as np
        from hostile import CapsuleProducer, RawCapsule
        from interop_core import explain, to
        raw = np.empty(64 + 256, np.uint8)
        start = (-raw.ctypes.data) % 64
        keep = raw[start:start + 256].view(np.float32)
        keep[:] = np.arange(64)
        p = CapsuleProducer(RawCapsule(int(keep.ctypes.data), (64,)), keep)
        route = explain(p, "jax")
        print([s.target for s in route.steps])
        # Without a deleter nothing tells the producer when its struct is free: it must
        # outlive every array imported from it (here, to the end of the script).
        raw = RawCapsule(int(keep.ctypes.data), (64,))
        j = to(CapsuleProducer(raw, keep), "jax")
        print(float(j.sum()))
        del j
        gc.collect()
        print("ALIVE")
    """)
    assert run.returncode == 0, run.stderr[-2000:]
    lines = run.stdout.splitlines()
    hops = eval(lines[0])  # JAX imports only a capsule another framework made
    # (numpy marks what it imports from a legacy capsule read-only, so through numpy alone
    # the route copies once before JAX; through torch or TF it shares.)
    assert hops[-1] == "jax@cpu" and len(hops) >= 2 and hops[0] != "jax@cpu"
    assert float(lines[1]) == float(np.arange(64).sum()) and lines[2] == "ALIVE"


# -- one object's refusal changes no other route ---------------------------------------------


class AnswersOnce:
    """A DLPack producer that refuses (BufferError) every request after its first."""

    def __init__(self, a: Any) -> None:
        self.a, self.calls = a, 0

    def __dlpack__(self, **kwargs: Any) -> Any:
        self.calls += 1
        if self.calls > 1:
            raise BufferError("asked twice")
        return self.a.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> Any:
        return self.a.__dlpack_device__()


class Plain(AnswersOnce):
    def __dlpack__(self, **kwargs: Any) -> Any:
        return self.a.__dlpack__(**kwargs)


@pytest.mark.parametrize("target", ["numpy", "torch"])
def test_a_refusing_object_changes_no_other_route(target: str) -> None:
    need(target)
    a = aligned(np.arange(8), np.float32)
    for _ in range(3):
        np.testing.assert_array_equal(values_of(to(AnswersOnce(a), target)), a)
    route = explain(Plain(a), target)
    assert route.zero_copy and len(route.steps) == 1
    np.testing.assert_array_equal(values_of(to(Plain(a), target)), a)
    bad = memoryview(bytearray(8))
    bad.release()
    with pytest.raises(ConversionError):
        to(bad, "numpy")
    good = memoryview(bytearray(b"\x01" * 8))
    assert to(good, "numpy").tolist() == [1] * 8 and explain(good, "numpy").zero_copy
