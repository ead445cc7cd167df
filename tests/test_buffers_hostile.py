"""Buffer-protocol exporters and array-interface dicts that lie (issue 30): a shape past the
exporter's ``len``, strides, pointers or byte offsets reaching past the user address space
are an InvalidArrayError before any framework reads them; honest odd layouts convert with
their values.

The lies are told by :func:`hostile.lying_buffer` (a memoryview made from a bare Py_buffer,
as an exporter written in C can make one) and :class:`hostile.Interface`. Every lie crashed
all four frameworks before the checks, so they run in child processes.
"""

from __future__ import annotations

import os
import subprocess
from typing import Any

import pytest
from conftest import need
from hostile import Interface, lying_buffer, run_child

from interop_core import InteropError, InvalidArrayError, explain, to

np = need("numpy")
HERE = os.path.dirname(os.path.abspath(__file__))


def child(code: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter with tests/ importable (hostile.run_child)."""
    return run_child(code, timeout)


#: name -> (an expression building the liar from ``a`` (6 float32) and ``p`` (its address),
#: what the InvalidArrayError says).
LIES = {
    "a shape of 2**28 floats over 24 bytes": (
        "lying_buffer(a, p, (1 << 28,), length=24)", "holds 24 bytes (its len)",
    ),
    "a shape over a len of 0": ("lying_buffer(a, p, (6,), length=0)", "holds 0 bytes"),
    "dims overflowing 64 bits": (
        "lying_buffer(a, p, (1 << 31, 1 << 31, 1 << 31), length=24)", "overflow",
    ),
    "a negative dim": ("lying_buffer(a, p, (-6,), length=24)", "negative dimension"),
    "strides of 2**60": (
        "lying_buffer(a, p, (4,), strides=(1 << 60,))", "outside the address space",
    ),
    "strides of -2**60": (
        "lying_buffer(a, p, (4,), strides=(-(1 << 60),))", "outside the address space",
    ),
    "strides of 2**62 in 2-d": (
        "lying_buffer(a, p, (2, 2), strides=(1 << 62, 4))", "outside the address space",
    ),
    "an address of 2**62": ("lying_buffer(a, 1 << 62, (6,))", "outside the address space"),
    "an address of 2**57": ("lying_buffer(a, 1 << 57, (6,))", "outside the address space"),
    "an address at the top": ("lying_buffer(a, (1 << 64) - 16, (6,))", "outside the address"),
    "a byte offset of 2**60": ("lying_buffer(a, p + (1 << 60), (6,))", "outside the address"),
    "an interface at 2**62": (
        "Interface({'shape': (6,), 'typestr': '<f4', 'data': (1 << 62, False), 'version': 3})",
        "outside the address space",
    ),
    "an interface with strides of 2**60": (
        "Interface({'shape': (4,), 'typestr': '<f4', 'data': (p, False), "
        "'strides': (1 << 60,), 'version': 3}, a)", "outside the address space",
    ),
    "an interface with strides of -2**60": (
        "Interface({'shape': (4,), 'typestr': '<f4', 'data': (p, False), "
        "'strides': (-(1 << 60),), 'version': 3}, a)", "outside the address space",
    ),
    "an interface at a negative address": (
        "Interface({'shape': (6,), 'typestr': '<f4', 'data': (-16, False), 'version': 3})",
        "outside the address space",
    ),
    "an interface at 2**70": (
        "Interface({'shape': (6,), 'typestr': '<f4', 'data': (1 << 70, False), 'version': 3})",
        "outside the address space",
    ),
    "an interface over a lying buffer": (
        "Interface({'shape': (6,), 'typestr': '<f4', 'data': lying_buffer(a, p, (1 << 28,), "
        "length=24), 'version': 3})", "holds 24 bytes",
    ),
    "a DLPack byte_offset of 2**62": (
        "CapsuleProducer(RawCapsule(p, (6,), byte_offset=1 << 62), a)",
        "outside the address space",
    ),
    "DLPack strides reaching 2**58": (
        "CapsuleProducer(RawCapsule(p, (4,), strides=(1 << 56,)), a)",
        "outside the address space",
    ),
}  # fmt: skip


@pytest.mark.parametrize("target", ["numpy", "torch", "jax", "tensorflow"])
def test_lies_never_reach_a_framework(target: str) -> None:
    """In a child: each lie is an InvalidArrayError saying what is wrong, for to() and
    explain(); none crashes the interpreter."""
    need(target)
    cases = {name: expr for name, (expr, _) in LIES.items()}
    run = child(f"""
        import numpy as np
        from hostile import CapsuleProducer, Interface, RawCapsule, lying_buffer
        from interop_core import InvalidArrayError, explain, to
        a = np.arange(6, dtype=np.float32)
        p = int(a.ctypes.data)
        for name, expr in {cases!r}.items():
            for call in (to, explain):
                try:
                    call(eval(expr), {target!r})
                    print(name, "|", "CONVERTED", flush=True)
                except InvalidArrayError as exc:
                    print(name, "|", str(exc).replace("\\n", " "), flush=True)
    """)
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-2000:])
    said: dict[str, list[str]] = {}
    for line in run.stdout.splitlines():
        name, _, message = line.partition(" | ")
        said.setdefault(name, []).append(message)
    assert set(said) == set(LIES)
    for name, (_, why) in LIES.items():
        assert len(said[name]) == 2, (name, said[name])
        for message in said[name]:
            assert why in message, (name, message)


def test_a_format_of_another_size_than_its_itemsize_is_never_read() -> None:
    """In a child: "f" (4 bytes) with itemsize 8 crashed numpy, torch and TensorFlow (numpy
    reads the format, the strides follow the itemsize); now no dtype, so no route, and no
    cast either."""
    run = child("""
        import numpy as np
        from hostile import lying_buffer
        from interop_core import ConversionError, NoRouteError, to
        a = np.arange(6, dtype=np.float32)
        for fmt, size in ((b"f", 8), (b"d", 4), (b"<q", 2), (b"T{f:x:}", 4), (b"O", 8)):
            view = lying_buffer(a, int(a.ctypes.data), (24 // (2 * size),), fmt=fmt,
                                itemsize=size)
            try:
                to(view, "numpy")
                print("CONVERTED")
            except NoRouteError as exc:
                print("NOROUTE", "buffer format" in str(exc))
            try:
                to(view, "numpy", dtype="float32")
                print("CAST")
            except ConversionError as exc:
                print("NOCAST", "no dtype a cast starts from" in str(exc))
    """)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["NOROUTE", "True", "NOCAST", "True"] * 5


#: name -> (a buffer telling the truth about ``a``'s memory, the values it holds)
A = np.arange(6, dtype=np.float32)
RAW = np.arange(32, dtype=np.uint8)
HONEST: dict[str, tuple[Any, Any]] = {
    "C order": (lying_buffer(A, A.ctypes.data, (2, 3)), A.reshape(2, 3)),
    "every other": (lying_buffer(A, A.ctypes.data, (3,), strides=(8,)), A[::2]),
    "reversed": (lying_buffer(A, A.ctypes.data + 20, (6,), strides=(-4,)), A[::-1]),
    "F order": (lying_buffer(A, A.ctypes.data, (3, 2), strides=(4, 12)), A.reshape(2, 3).T),
    "broadcast": (
        lying_buffer(A, A.ctypes.data + 8, (5,), strides=(0,)),
        np.full(5, 2.0, np.float32),
    ),
    "0-d": (lying_buffer(A, A.ctypes.data + 4, ()), np.float32(1)),
    "empty": (lying_buffer(A, A.ctypes.data, (0, 4)), np.zeros((0, 4), np.float32)),
    "len past the shape": (lying_buffer(A, A.ctypes.data, (2,), length=24), A[:2]),
    "read-only": (lying_buffer(A, A.ctypes.data, (6,), readonly=True), A),
    "float64 items": (lying_buffer(A, A.ctypes.data, (3,), fmt=b"d", itemsize=8),
                      A.view(np.float64)),
}  # fmt: skip


@pytest.mark.parametrize("target", ["numpy", "torch", "jax", "tensorflow"])
@pytest.mark.parametrize("case", sorted(HONEST))
def test_an_honest_buffer_converts_with_its_values(case: str, target: str) -> None:
    """The checks refuse only lies: a buffer whose len covers its shape converts, strided,
    reversed, broadcast or 0-d, with the values it describes."""
    need(target)
    view, values = HONEST[case]
    if target == "jax" and values.dtype == np.float64:
        pytest.skip("JAX holds float64 only with x64 (dtype= casts it: the test below)")
    got = to(view, target)
    host = np.asarray(got.numpy() if hasattr(got, "numpy") else got)
    assert host.shape == values.shape and host.dtype == values.dtype
    np.testing.assert_array_equal(host, values)
    assert explain(view, target).target.startswith(target)


def test_the_refusal_says_what_the_exporter_declared() -> None:
    """Checked before numpy is asked: the message has the shape, the item size, the len."""
    with pytest.raises(InvalidArrayError) as info:
        to(lying_buffer(A, A.ctypes.data, (1 << 28,), length=24), "numpy")
    assert str(info.value) == (
        "The buffer export of a memoryview declares shape (268435456,) of 4-byte items "
        "(1073741824 bytes) but holds 24 bytes (its len): its shape or itemsize is corrupt."
    )


#: Malformed array-interface dicts: numpy's own refusal, said as an InteropError.
MALFORMED = {
    "a float dim": {"shape": (3.7,), "typestr": "<f4", "version": 3},
    "a string shape": {"shape": "ab", "typestr": "<f4", "version": 3},
    "no shape": {"shape": None, "typestr": "<f4", "version": 3},
    "no typestr": {"shape": (6,), "version": 3},
    "a number typestr": {"shape": (6,), "typestr": 5, "version": 3},
    "string strides": {"shape": (6,), "typestr": "<f4", "strides": "ab", "version": 3},
    "a string as data": {"shape": (1,), "typestr": "<f4", "data": "abcd", "version": 3},
    "a 1-tuple as data": {"shape": (6,), "typestr": "<f4", "data": (0,), "version": 3},
    "a string pointer": {"shape": (6,), "typestr": "<f4", "data": ("x", False), "version": 3},
    "no data, no buffer": {"shape": (6,), "typestr": "<f4", "data": None, "version": 3},
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
@pytest.mark.parametrize("target", ["numpy", "torch"])
def test_a_malformed_interface_is_an_interop_error(case: str, target: str) -> None:
    need(target)
    d = {"data": (int(A.ctypes.data), False), **MALFORMED[case]}
    with pytest.raises(InteropError):
        to(Interface(d, A), target)
    with pytest.raises(InteropError):
        explain(Interface(d, A), target)


@pytest.mark.parametrize("protocol", ["buffer", "array_interface", "array_like"])
def test_dtype_casts_a_protocols_array_as_the_x64_advice_says(protocol: str) -> None:
    """JAX's x64 refusal says "pass dtype= (e.g. dtype={'float64': 'float32'})": for an
    object seen only through a protocol too, the cast is made before the route, through
    numpy, and explain() counts it."""
    jax = need("jax")
    if jax.config.jax_enable_x64:
        pytest.skip("needs JAX's x64 switch off (its default)")
    values = np.linspace(0, 1, 6)

    class ArrayLike:
        def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
            return values

    obj = {
        "buffer": memoryview(values),
        "array_interface": Interface(values.__array_interface__, values),
        "array_like": ArrayLike(),
    }[protocol]
    with pytest.raises(InteropError, match=r"dtype=\{'int64': 'int32', 'float64': 'float32'\}"):
        to(obj, "jax")
    got = to(obj, "jax", dtype={"int64": "int32", "float64": "float32"})
    assert got.dtype == jax.numpy.float32
    np.testing.assert_array_equal(np.asarray(got), values.astype(np.float32))
    route = explain(obj, "jax", dtype={"float64": "float32"})
    assert route.steps[0].converter == "cast float64 -> float32" and route.copies == 1
    assert route.source == f"{protocol}@cpu"
