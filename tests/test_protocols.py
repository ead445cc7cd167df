"""Objects no plugin knows, converted through the array protocols they speak.

Each protocol gets a wrapper class of its own that speaks only that protocol (delegating to
a numpy array or a bytearray), plus the real objects that speak it (bytearray, array.array,
memoryview, mmap, ctypes arrays, pandas). Every zero-copy claim of ``explain()`` is checked
against data pointers read with the frameworks' own APIs, and every copy against them too.
"""

from __future__ import annotations

import array
import ctypes
import gc
import mmap
import subprocess
import sys
import textwrap
from typing import Any

import adapters
import pytest
from adapters import ALIGNMENT, aligned_copy, aligned_numpy
from conftest import frameworks, need

from interop_core import (
    ConversionError,
    CopyRequiredError,
    InteropError,
    NoRouteError,
    NotAnArrayError,
    explain,
    to,
)
from interop_core.testing import framework_of, isolated_registry

np = need("numpy")

# -- wrappers that speak one protocol each ------------------------------------------------


class DLPackOnly:
    """``__dlpack__`` + ``__dlpack_device__`` only, delegating to an array."""

    def __init__(self, a: Any) -> None:
        self._a = a

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> Any:
        return self._a.__dlpack_device__()


class LegacyDLPack(DLPackOnly):
    """A pre-1.0 DLPack producer: ``__dlpack__`` takes no ``max_version``."""

    def __dlpack__(self, stream: Any = None) -> Any:  # type: ignore[override]
        return self._a.__dlpack__()


class CudaInterfaceOnly:
    """``__cuda_array_interface__`` only (pointing at host memory: never consumed here)."""

    def __init__(self, a: Any, readonly: bool = False) -> None:
        self._a, self._ro = a, readonly

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        a = self._a
        return {
            "shape": a.shape, "typestr": a.dtype.str, "strides": a.strides,
            "data": (a.ctypes.data, self._ro), "version": 3,
        }  # fmt: skip


class InterfaceOnly:
    """``__array_interface__`` only, with ``data`` a (pointer, read-only) tuple."""

    def __init__(self, a: Any) -> None:
        self._a = a

    @property
    def __array_interface__(self) -> dict[str, Any]:
        a = self._a
        return {
            "shape": a.shape, "typestr": a.dtype.str, "strides": a.strides,
            "data": (a.ctypes.data, not a.flags.writeable), "version": 3,
        }  # fmt: skip


class BufferInterface:
    """``__array_interface__`` whose ``data`` is a bytearray, read from ``offset``."""

    def __init__(self, buf: bytearray, shape: tuple[int, ...], typestr: str, offset: int) -> None:
        self.buf, self._shape, self._typestr, self._offset = buf, shape, typestr, offset

    @property
    def __array_interface__(self) -> dict[str, Any]:
        return {
            "shape": self._shape, "typestr": self._typestr, "data": self.buf,
            "offset": self._offset, "version": 3,
        }  # fmt: skip


class FreshInterface:
    """``__array_interface__`` over a new bytes object per access, as PIL's Image does."""

    def __init__(self, a: Any) -> None:
        self._a = a

    @property
    def __array_interface__(self) -> dict[str, Any]:
        a = self._a
        return {"shape": a.shape, "typestr": a.dtype.str, "data": a.tobytes(), "version": 3}


class SelfBuffer(bytearray):
    """A buffer whose ``__array_interface__`` (data None) says how to read its bytes."""

    @property
    def __array_interface__(self) -> dict[str, Any]:
        return {"shape": (2, 2), "typestr": "<i4", "data": None, "version": 3}


class ArrayOnly:
    """``__array__`` only, returning the array it wraps (a view)."""

    def __init__(self, a: Any) -> None:
        self._a = a

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        return self._a


class CopyingArray(ArrayOnly):
    """``__array__`` returning a new copy on every call."""

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        return self._a.copy()


class Everything(DLPackOnly):
    """Speaks DLPack, both interfaces and ``__array__``: DLPack must win."""

    __array_interface__ = property(lambda self: InterfaceOnly(self._a).__array_interface__)

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        return self._a


class InterfaceAndArray(ArrayOnly):
    """``__array_interface__`` and ``__array__``: the interface must win."""

    __array_interface__ = property(lambda self: InterfaceOnly(self._a).__array_interface__)


# -- helpers ------------------------------------------------------------------------------


def ptr(x: Any) -> int:
    """Address of the first element of ``x``, read with its framework's own API."""
    if isinstance(x, np.ndarray):
        return int(x.__array_interface__["data"][0])
    mod = type(x).__module__
    if mod.startswith("torch"):
        return int(x.data_ptr())
    if mod.startswith(("jax", "jaxlib")):
        return int(x.unsafe_buffer_pointer())
    if mod.startswith("tensorflow"):
        return int(np.asarray(x).ctypes.data)  # TF's __array__ shares its CPU buffer
    return adapters.own_ptr(x)  # a plugin's framework: a protocol, else its plugin says


def need_float32(target: str) -> None:
    """Skip unless ``target`` holds float32 (a plugin's framework may not)."""
    if not adapters.holds(target, "float32"):
        pytest.skip(f"{target} does not hold float32")


def values_of(x: Any) -> Any:
    """``x``'s values as numpy, read with the framework's own API."""
    if isinstance(x, np.ndarray):
        return x
    mod = type(x).__module__
    if mod.startswith("torch"):
        return x.detach().numpy()
    if mod.startswith(("jax", "jaxlib", "tensorflow")):
        return np.asarray(x)
    return adapters.to_numpy(x)  # a plugin's framework


def kind_of(x: Any) -> str:
    """The framework ``x`` is an array of, by its type (not through interop_core)."""
    if type(x) is np.ndarray:
        return "numpy"
    mod = type(x).__module__
    for name, prefixes in (("torch", ("torch",)), ("jax", ("jax", "jaxlib")),
                           ("tensorflow", ("tensorflow",))):  # fmt: skip
        if mod.startswith(prefixes):
            return name
    return framework_of(x)  # a plugin's framework, as the registry detects it


def check_same(ref: Any, got: Any, target: str) -> None:
    """``got`` is a ``target`` array holding ``ref``'s dtype, shape and values."""
    assert kind_of(got) == target
    vals = values_of(got)
    assert vals.dtype == ref.dtype, f"{vals.dtype} != {ref.dtype}"
    assert vals.shape == ref.shape
    assert np.array_equal(vals, ref)


def buffer_address(buf: Any) -> int:
    """Address of a buffer-protocol object's first byte, read by numpy."""
    return int(np.frombuffer(buf, dtype=np.uint8).ctypes.data)


def jax_x64() -> bool:
    return bool(need("jax").config.read("jax_enable_x64"))


#: Every framework to() converts into (conftest.frameworks), a plugin's included; the
#: built-ins import each protocol's buffer without a copy.
TARGETS = frameworks()
BUILTIN = frameworks(builtin=True)


def float32_source() -> Any:
    """A C-contiguous, 64-byte aligned float32 array (every consumer takes it zero-copy)."""
    return aligned_numpy(np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5)


# -- detection -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "name"),
    [
        pytest.param(DLPackOnly, "dlpack", id="dlpack"),
        pytest.param(LegacyDLPack, "dlpack", id="legacy-dlpack"),
        pytest.param(CudaInterfaceOnly, "cuda_array_interface", id="cai"),
        pytest.param(InterfaceOnly, "array_interface", id="interface"),
        pytest.param(FreshInterface, "array_interface", id="fresh-interface"),
        pytest.param(lambda a: bytearray(4), "buffer", id="bytearray"),
        pytest.param(lambda a: memoryview(b"ab"), "buffer", id="memoryview"),
        pytest.param(lambda a: array.array("d", [1.0]), "buffer", id="array.array"),
        pytest.param(lambda a: (ctypes.c_int * 3)(), "buffer", id="ctypes"),
        pytest.param(lambda a: mmap.mmap(-1, 4), "buffer", id="mmap"),
        pytest.param(ArrayOnly, "array_like", id="array"),
        pytest.param(Everything, "dlpack", id="all:dlpack-first"),
        pytest.param(InterfaceAndArray, "array_interface", id="interface-before-array"),
        pytest.param(lambda a: SelfBuffer(16), "array_interface", id="interface-before-buffer"),
    ],
)
def test_each_protocol_is_detected_in_priority_order(make: Any, name: str) -> None:
    assert framework_of(make(float32_source())) == name


@pytest.mark.parametrize(
    "obj",
    [b"bytes", "text", 3, None, np.str_("x"), np.bytes_(b"x"), np.datetime64("2020-01-01"),
     ArrayOnly, InterfaceAndArray, object()],
    ids=["bytes", "str", "int", "None", "np.str_", "np.bytes_", "np.datetime64",
         "class-with-__array__", "class-with-interface-property", "object"],
)  # fmt: skip
def test_text_classes_and_numpy_scalars_are_not_claimed(obj: Any) -> None:
    with isolated_registry(builtins=True) as reg:  # a fresh detector: obj is seen first
        assert reg.state.detect(obj) is None
        if isinstance(obj, type):  # its instances are arrays; other classes still are not
            assert framework_of(obj(float32_source()), reg) in ("array_like", "array_interface")
            assert reg.state.detect(int) is None


def test_bytes_and_text_inside_a_container_pass_through_unchanged() -> None:
    data, text, ba = b"\x00\x01raw", "label", bytearray(b"\x05\x06")
    out = to({"b": data, "s": text, "n": np.str_("t"), "a": ba}, "numpy")
    assert out["b"] is data and out["s"] is text and out["n"] == "t"
    assert isinstance(out["a"], np.ndarray) and list(out["a"]) == [5, 6]


def test_bytes_at_the_top_level_say_how_to_wrap_them() -> None:
    with pytest.raises(NotAnArrayError, match=r"memoryview\(\)"):
        to(b"abc", "numpy")
    got = to(memoryview(b"abc"), "numpy")
    assert list(got) == [97, 98, 99] and not got.flags.writeable


def test_a_generic_object_error_lists_the_protocols_looked_for() -> None:
    with pytest.raises(NotAnArrayError) as info:
        to(object(), "numpy")
    msg = str(info.value)
    for protocol in ("__dlpack__", "__cuda_array_interface__", "__arrow_c_stream__",
                     "__array_interface__", "buffer protocol", "__array__",
                     "numpy.asarray(...)"):  # fmt: skip
        assert protocol in msg, msg
    # the order of the list is the order detection asks them
    order = ("__dlpack__", "__arrow_c_array__", "__array_interface__", ", __array__")
    assert [msg.index(p) for p in order] == sorted(msg.index(p) for p in order), msg


TYPESTRS = [
    ("<f4", "float32"), ("|b1", "bool"), ("|u1", "uint8"), ("<i8", "int64"),
    ("<c16", "complex128"), ("<f2", "float16"), (">f4", "float32 (non-native byte order)"),
    ("|i1", "int8"), ("<f16", "typestr '<f16'"), ("|V2", "typestr '|V2'"),
    ("<M8[ns]", "typestr '<M8[ns]'"),
]  # fmt: skip


@pytest.mark.parametrize(("typestr", "name"), TYPESTRS)
def test_typestr_names(typestr: str, name: str) -> None:
    from interop_plugins.exchange.protocols import typestr_dtype

    assert typestr_dtype(typestr) == name


FORMATS = [
    ("B", 1, "uint8"), ("<q", 8, "int64"), ("l", 8, "int64"), ("?", 1, "bool"),
    ("e", 2, "float16"), ("Zf", 8, "complex64"), ("Zd", 16, "complex128"),
    (">i", 4, "int32 (non-native byte order)"), ("c", 1, "buffer format 'c'"),
    ("T{<i:x:}", 4, "buffer format 'T{<i:x:}'"), ("g", 16, "buffer format 'g'"),
]  # fmt: skip


@pytest.mark.parametrize(("fmt", "itemsize", "name"), FORMATS)
def test_buffer_format_names(fmt: str, itemsize: int, name: str) -> None:
    from interop_plugins.exchange.protocols import format_dtype

    assert format_dtype(fmt, itemsize) == name


def test_big_endian_and_unknown_dtypes_have_no_route() -> None:
    big = np.arange(3, dtype=">f4")
    with pytest.raises(NoRouteError, match="non-native byte order"):
        to(InterfaceOnly(big), "numpy")
    with pytest.raises(NoRouteError, match="buffer format 'c'"):
        to(memoryview(bytearray(b"ab")).cast("c"), "numpy")


# -- DLPack -----------------------------------------------------------------------------------


@pytest.mark.parametrize("target", TARGETS)
def test_dlpack_converts_zero_copy_to_every_framework(target: str) -> None:
    need(target)
    need_float32(target)
    a = float32_source()
    w = DLPackOnly(a)
    route = explain(w, target)
    assert route.steps[0].source == "dlpack@cpu"
    assert route.steps[0].plugin == "interop_plugins.exchange.protocols"
    out = to(w, target)
    check_same(a, out, target)
    assert (ptr(out) == ptr(a)) == route.zero_copy, str(route)
    if target in BUILTIN:
        assert route.zero_copy, str(route)
        # numpy exports a versioned capsule, which JAX's and TF's importers refuse: the one
        # capsule the producer gave goes to numpy first, and on from there without a copy.
        two = target in ("jax", "tensorflow", "pyarrow")  # Arrow takes numpy's memory
        hops = ["numpy@cpu", f"{target}@cpu"] if two else [f"{target}@cpu"]
        assert [s.target for s in route.steps] == hops


@pytest.mark.parametrize("target", ["numpy", "torch"])
def test_dlpack_writes_show_through_and_copies_never_share(target: str) -> None:
    need(target)
    a = float32_source()
    w = DLPackOnly(a)
    out = to(w, target)
    a[0, 0] = 123.0
    assert values_of(out)[0, 0] == 123.0
    copied = to(w, target, copy=True)
    assert explain(w, target, copy=True).copies == 1
    assert ptr(copied) != ptr(a)
    a[0, 1] = -7.0
    assert values_of(copied)[0, 1] != -7.0
    assert ptr(to(w, target, copy=False)) == ptr(a)


def test_dlpack_describe_reads_the_capsule() -> None:
    from interop_plugins.exchange.protocols import describe_dlpack

    base = aligned_numpy(np.zeros((4, 6), dtype=np.int16))
    info = describe_dlpack(DLPackOnly(base[:, 1::2]))
    assert (info.framework, info.dtype, info.shape) == ("dlpack", "int16", (4, 3))
    assert (str(info.device), info.layout, info.readonly, info.aligned) == (
        "cpu", "strided", False, False,
    )  # fmt: skip
    assert describe_dlpack(DLPackOnly(base[::-1])).layout == "negative"
    assert describe_dlpack(DLPackOnly(base.T)).layout == "F"
    assert describe_dlpack(DLPackOnly(base)).aligned
    assert describe_dlpack(LegacyDLPack(base)).layout == "C"


def test_dlpack_legacy_producer_converts() -> None:
    torch = need("torch")
    a = float32_source()
    w = LegacyDLPack(a)
    out = to(w, "numpy")
    check_same(a, out, "numpy")
    # numpy marks arrays from legacy capsules read-only, and the route says so
    assert ptr(out) == ptr(a) and not out.flags.writeable
    assert "legacy" in str(explain(w, "numpy"))
    t = to(w, "torch")
    assert isinstance(t, torch.Tensor) and t.data_ptr() == ptr(a)
    a[0, 0] = 5.0
    assert float(t[0, 0]) == 5.0


def test_dlpack_read_only_stays_read_only_and_torch_copies_unless_asked() -> None:
    torch = need("torch")
    a = float32_source()
    a.flags.writeable = False
    w = DLPackOnly(a)
    got = to(w, "numpy")
    assert ptr(got) == ptr(a) and not got.flags.writeable
    route = explain(w, "torch")
    assert route.copies == 1 and "read-only" in str(route)
    t = to(w, "torch")
    assert isinstance(t, torch.Tensor) and t.data_ptr() != ptr(a)
    # torch cannot mark a tensor read-only: sharing is refused even when copy=False asks.
    with pytest.raises(CopyRequiredError, match="read-only"):
        to(w, "torch", copy=False)


def test_dlpack_negative_strides_never_reach_torch() -> None:
    need("torch")
    a = float32_source()
    w = DLPackOnly(a[::-1])
    route = explain(w, "torch")
    assert route.copies == 1 and "negative strides" in str(route)
    check_same(a[::-1], to(w, "torch"), "torch")
    with pytest.raises(CopyRequiredError, match="negative strides"):
        to(w, "torch", copy=False)


def test_dlpack_odd_unit_strides_reach_jax_canonical_and_zero_copy() -> None:
    need("jax")
    a = aligned_numpy(np.arange(4, dtype=np.float32).reshape(1, 4))
    odd = np.lib.stride_tricks.as_strided(a.reshape(4, 1), strides=(4, 4096))
    route = explain(DLPackOnly(odd), "jax")
    assert route.zero_copy and [s.target for s in route.steps] == ["numpy@cpu", "jax@cpu"]
    out = to(DLPackOnly(odd), "jax")
    check_same(odd, out, "jax")
    assert ptr(out) == ptr(a)
    assert int(np.asarray(out).ctypes.data) == ptr(a)  # JAX kept a row-major layout


def test_dlpack_misaligned_copies_into_jax() -> None:
    need("jax")
    buf = aligned_numpy(np.zeros(13, dtype=np.float32))
    a = buf[1:]
    a[:] = np.arange(12)
    route = explain(DLPackOnly(a), "jax")
    assert route.copies == 1 and "64-byte aligned" in str(route)
    out = to(DLPackOnly(a), "jax")
    check_same(a, out, "jax")
    assert ptr(out) != ptr(a)


def test_dlpack_float64_into_jax_follows_x64() -> None:
    need("jax")
    a = aligned_numpy(np.arange(3, dtype=np.float64))
    if jax_x64():
        check_same(a, to(DLPackOnly(a), "jax"), "jax")
    else:
        with pytest.raises(NoRouteError, match="jax_enable_x64"):
            to(DLPackOnly(a), "jax")


def test_dlpack_bfloat16_reaches_numpy_through_a_framework_that_can() -> None:
    torch = need("torch")
    pytest.importorskip("ml_dtypes")
    t = torch.arange(6, dtype=torch.bfloat16)
    w = DLPackOnly(t)
    route = explain(w, "numpy")
    # numpy cannot import bfloat16 through DLPack: a framework that can carries it
    assert route.zero_copy and route.steps[0].target in ("torch@cpu", "tensorflow@cpu")
    assert "bfloat16" in str(route.refusals)
    out = to(w, "numpy")
    assert str(out.dtype) == "bfloat16" and ptr(out) == t.data_ptr()
    assert out.astype(np.float32).tolist() == list(range(6))


def test_dlpack_result_outlives_its_source() -> None:
    torch = need("torch")
    a = float32_source()
    ref = a.copy()
    w = DLPackOnly(a)
    outs = [to(w, "numpy"), to(w, "torch")]
    del w, a
    gc.collect()
    scratch = [np.full((3, 4), 99.0, dtype=np.float32) for _ in range(50)]  # reuse freed memory
    assert np.array_equal(outs[0], ref)
    assert torch.equal(outs[1], torch.from_numpy(ref))
    del scratch


def test_dlpack_capsules_of_describe_are_freed() -> None:
    """describe() exports a capsule and drops it unconsumed: the producer's export is freed."""
    from interop_plugins.exchange.protocols import describe_dlpack

    a = float32_source()
    before = sys.getrefcount(a)
    for _ in range(100):
        describe_dlpack(DLPackOnly(a))
    gc.collect()
    assert sys.getrefcount(a) == before


# -- __cuda_array_interface__ -----------------------------------------------------------------


def test_cuda_array_interface_is_described_from_its_dict() -> None:
    from interop_plugins.exchange.protocols import describe_cai

    a = aligned_numpy(np.zeros((2, 5), dtype=np.float16))
    info = describe_cai(CudaInterfaceOnly(a[:, ::2], readonly=True))
    assert (info.framework, info.dtype, info.shape) == ("cuda_array_interface", "float16", (2, 3))
    assert (str(info.device), info.layout, info.readonly) == ("cuda:0", "strided", True)
    plain = describe_cai(CudaInterfaceOnly(a))
    assert (plain.layout, plain.readonly, plain.aligned) == ("C", False, True)


def test_cuda_array_interface_without_cuda_is_a_clear_error() -> None:
    torch = need("torch")
    if torch.cuda.is_available():
        pytest.skip("the fake interface points at host memory; CUDA would read it")
    w = CudaInterfaceOnly(float32_source())
    for call in (to, explain):
        with pytest.raises(NoRouteError, match="torch sees no cuda:0 device"):
            call(w, "torch")
    with pytest.raises(NoRouteError, match="cuda:0"):
        to(w, "numpy")


def test_cuda_array_interface_never_crashes_in_a_fresh_interpreter() -> None:
    need("torch")
    code = textwrap.dedent(
        """
        import numpy as np, torch
        from interop_core import to, InteropError
        if torch.cuda.is_available():
            print("has CUDA")
            raise SystemExit(0)
        a = np.zeros(4, np.float32)
        class C:
            __cuda_array_interface__ = {"shape": (4,), "typestr": "<f4", "strides": None,
                                        "data": (a.ctypes.data, False), "version": 3}
        try:
            to(C(), "torch")
            print("converted")
        except InteropError as exc:
            print("refused:", type(exc).__name__)
        """
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() in ("refused: NoRouteError", "has CUDA"), run.stdout


# -- __array_interface__ ----------------------------------------------------------------------


@pytest.mark.parametrize("target", TARGETS)
def test_array_interface_converts_zero_copy(target: str) -> None:
    need(target)
    need_float32(target)
    a = float32_source()
    w = InterfaceOnly(a)
    route = explain(w, target)
    assert route.steps[0].source == "array_interface@cpu"
    assert route.zero_copy or target not in BUILTIN, str(route)
    out = to(w, target)
    check_same(a, out, target)
    assert (ptr(out) == ptr(a)) == route.zero_copy, str(route)


def test_array_interface_read_only_and_lifetime() -> None:
    a = float32_source()
    ref = a.copy()
    a.flags.writeable = False
    w = InterfaceOnly(a)
    out = to(w, "numpy")
    assert not out.flags.writeable and ptr(out) == ptr(a)
    del w, a
    gc.collect()
    assert np.array_equal(out, ref)


def test_array_interface_over_a_buffer_object_shares_it() -> None:
    buf = bytearray(64)
    w = BufferInterface(buf, (3,), "<i4", offset=8)
    out = to(w, "numpy")
    assert out.dtype == np.int32 and out.shape == (3,)
    assert ptr(out) == buffer_address(buf) + 8
    assert explain(w, "numpy").zero_copy
    buf[8] = 7  # a write to the producer's buffer shows through
    assert out[0] == 7
    out[1] = 5
    assert buf[12] == 5
    del w
    gc.collect()
    assert out[0] == 7


def test_array_interface_with_data_none_reads_the_object_as_described() -> None:
    obj = SelfBuffer(np.arange(4, dtype="<i4").tobytes())
    out = to(obj, "numpy")
    assert out.dtype == np.int32 and out.shape == (2, 2)  # numpy alone would give 16 uint8s
    assert out.tolist() == [[0, 1], [2, 3]]
    assert ptr(out) == buffer_address(obj)


def test_a_fresh_buffer_per_access_is_a_copy() -> None:
    a = float32_source()
    w = FreshInterface(a)
    route = explain(w, "numpy")
    assert route.copies == 1 and not route.steps[0].zero_copy
    out = to(w, "numpy")
    check_same(a, out, "numpy")
    assert ptr(out) != ptr(a)
    a[0, 0] = 42.0
    assert out[0, 0] != 42.0
    assert to(w, "numpy", copy=True)[0, 0] == 42.0
    with pytest.raises(CopyRequiredError, match="new buffer on every __array_interface__"):
        to(w, "numpy", copy=False)
    with pytest.raises(TypeError, match="no stable address"):
        from interop_plugins.exchange.protocols import array_interface_ptr

        array_interface_ptr(w)


def test_a_fresh_buffer_reaches_torch_and_jax_with_honest_copies() -> None:
    torch = need("torch")
    need("jax")
    a = float32_source()
    w = FreshInterface(a)
    t = to(w, "torch")
    check_same(a, t, "torch")
    assert isinstance(t, torch.Tensor) and t.data_ptr() != ptr(a)
    route = explain(w, "torch")
    # The fresh bytes are read-only: torch takes a second, writable copy.
    assert route.copies == 2
    j = to(w, "jax")
    check_same(a, j, "jax")
    assert ptr(j) != ptr(a)


# -- the buffer protocol ------------------------------------------------------------------------


def test_bytearray_converts_zero_copy_and_sees_writes() -> None:
    torch = need("torch")
    ba = bytearray(range(10))
    out = to(ba, "numpy")
    assert out.dtype == np.uint8 and out.tolist() == list(range(10))
    assert ptr(out) == buffer_address(ba)
    ba[3] = 200
    assert out[3] == 200
    t = to(ba, "torch")
    assert t.dtype == torch.uint8 and t.data_ptr() == buffer_address(ba)
    assert explain(ba, "torch").zero_copy
    assert [s.source for s in explain(ba, "torch").steps] == ["buffer@cpu", "numpy@cpu"]


@pytest.mark.parametrize("target", ["jax", "tensorflow"])
def test_an_aligned_float32_buffer_reaches_jax_and_tensorflow_zero_copy(target: str) -> None:
    need(target)
    raw = bytearray(48 + ALIGNMENT)
    start = -buffer_address(raw) % ALIGNMENT
    mv = memoryview(raw)[start : start + 48].cast("f", (3, 4))
    for i in range(12):
        mv[i // 4, i % 4] = i - 5.5
    assert explain(mv, target).zero_copy
    out = to(mv, target)
    check_same(np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5, out, target)
    assert ptr(out) == buffer_address(raw) + start


def test_array_array_and_ctypes_keep_dtype_and_shape() -> None:
    arr = array.array("d", [1.5, -2.0, 3.25])
    out = to(arr, "numpy")
    assert out.dtype == np.float64 and out.tolist() == [1.5, -2.0, 3.25]
    assert ptr(out) == buffer_address(arr)
    arr[0] = 9.0
    assert out[0] == 9.0
    grid = (ctypes.c_int32 * 3 * 2)()
    grid[1][2] = -4
    got = to(grid, "numpy")
    assert got.dtype == np.int32 and got.shape == (2, 3) and got[1, 2] == -4
    assert ptr(got) == ctypes.addressof(grid)


def test_strided_memoryview_keeps_its_strides() -> None:
    need("torch")
    raw = array.array("i", range(10))
    mv = memoryview(raw)[::2]
    out = to(mv, "numpy")
    assert out.tolist() == [0, 2, 4, 6, 8] and out.strides == (8,)
    assert ptr(out) == buffer_address(raw)
    t = to(mv, "torch")
    assert t.tolist() == [0, 2, 4, 6, 8] and t.data_ptr() == buffer_address(raw)


def test_read_only_buffer_stays_read_only() -> None:
    torch = need("torch")
    data = bytes(range(8))
    mv = memoryview(data).cast("h")
    out = to(mv, "numpy")
    assert out.dtype == np.int16 and not out.flags.writeable
    assert ptr(out) == buffer_address(data)
    route = explain(mv, "torch")
    assert route.copies == 1 and "read-only" in str(route)
    t = to(mv, "torch")
    assert isinstance(t, torch.Tensor) and t.data_ptr() != buffer_address(data)
    assert t.tolist() == out.tolist()


def test_mmap_converts_zero_copy_and_outlives_the_name() -> None:
    m = mmap.mmap(-1, 16)
    m[:4] = b"\x01\x02\x03\x04"
    out = to(m, "numpy")
    assert out.tolist()[:4] == [1, 2, 3, 4] and out.flags.writeable
    m[0] = 77
    assert out[0] == 77
    out[1] = 88
    assert m[1] == 88
    # describe's transient export was released: only the result pins the map
    del out
    gc.collect()
    m.close()


def test_a_dead_buffer_first_does_not_hide_live_ones() -> None:
    """Detection caches per type: a released memoryview or closed mmap seen first must not
    make every later one a non-array."""
    dead = memoryview(bytearray(4))
    dead.release()
    closed = mmap.mmap(-1, 8)
    closed.close()
    with isolated_registry(builtins=True):  # a fresh detector: the dead ones come first
        for obj in (dead, closed):
            with pytest.raises(InteropError):
                to(obj, "numpy")
        assert to(memoryview(bytearray(b"\x01\x02")), "numpy").tolist() == [1, 2]
        live = mmap.mmap(-1, 8)
        live[0] = 9
        assert to(live, "numpy")[0] == 9


def test_buffer_result_outlives_its_source() -> None:
    ba = bytearray(b"\x0a\x0b\x0c")
    out = to(ba, "numpy")
    del ba
    gc.collect()
    scratch = [bytearray(b"\xff" * 3) for _ in range(100)]
    assert out.tolist() == [10, 11, 12]
    del scratch


# -- __array__ ---------------------------------------------------------------------------------


@pytest.mark.parametrize("target", TARGETS)
def test_array_like_view_converts_zero_copy(target: str) -> None:
    need(target)
    need_float32(target)
    a = float32_source()
    w = ArrayOnly(a)
    route = explain(w, target)
    assert route.steps[0].source == "array_like@cpu"
    assert route.zero_copy or target not in BUILTIN, str(route)
    out = to(w, target)
    check_same(a, out, target)
    assert (ptr(out) == ptr(a)) == route.zero_copy, str(route)


def test_array_like_copy_is_declared_and_never_shared() -> None:
    need("torch")
    a = float32_source()
    w = CopyingArray(a)
    route = explain(w, "torch")
    assert route.copies == 1 and "COPY" in str(route.steps[0])
    t = to(w, "torch")
    check_same(a, t, "torch")
    assert t.data_ptr() != ptr(a)
    a[2, 2] = 1000.0
    assert float(t[2, 2]) != 1000.0
    with pytest.raises(CopyRequiredError, match="__array__ returns a new array"):
        to(w, "torch", copy=False)
    assert ptr(to(w, "numpy", copy=True)) != ptr(a)


def test_array_like_writes_show_through_and_lifetime() -> None:
    a = float32_source()
    ref = a.copy()
    w = ArrayOnly(a)
    out = to(w, "numpy")
    a[1, 1] = -1.0
    assert out[1, 1] == -1.0
    ref[1, 1] = -1.0
    del w, a
    gc.collect()
    assert np.array_equal(out, ref)


def test_pandas_series_is_a_read_only_view() -> None:
    pd = pytest.importorskip("pandas")
    torch = need("torch")
    s = pd.Series([1.5, 2.5, -3.0])
    own = np.asarray(s)
    assert explain(s, "numpy").zero_copy
    out = to(s, "numpy")
    assert ptr(out) == ptr(own) and out.tolist() == [1.5, 2.5, -3.0]
    assert out.flags.writeable == own.flags.writeable
    # The pandas plugin (issue 21): copy-on-write marks the view read-only, not the block
    # under it (memory read-only in rule 8's sense is what the owning array says), so torch
    # shares it, as it shares JAX's memory, and explain() says writes change the Series.
    route = explain(s, "torch")
    assert route.zero_copy and "writable alias" in str(route)
    t = to(s, "torch", copy=False)
    assert isinstance(t, torch.Tensor) and t.data_ptr() == ptr(own)
    assert t.tolist() == [1.5, 2.5, -3.0]


def test_pandas_frames_convert_column_by_column_as_views() -> None:
    # Issue 21: a DataFrame is a dict of its columns (no longer one stacked 2-D array, which
    # copied a mixed-dtype frame into one dtype); tests/test_tables.py has the rest.
    pd = pytest.importorskip("pandas")
    need("torch")
    mixed = pd.DataFrame({"a": [1.0, 2.0], "b": [3, 4]})
    routes = explain(mixed, "torch")
    assert routes["a"].zero_copy and routes["b"].zero_copy
    t = to(mixed, "torch")
    assert list(t) == ["a", "b"] and t["a"].tolist() == [1.0, 2.0] and t["b"].tolist() == [3, 4]
    assert str(t["b"].dtype) == "torch.int64"
    assert [t[c].data_ptr() for c in t] == [ptr(np.asarray(mixed[c])) for c in mixed.columns]
    got = to(mixed, "numpy", copy=False)
    assert [ptr(got[c]) for c in got] == [ptr(np.asarray(mixed[c])) for c in mixed.columns]


def test_pandas_inside_a_container_converts() -> None:
    pd = pytest.importorskip("pandas")
    s = pd.Series([1, 2, 3], dtype="int32")
    out = to({"s": s, "tag": b"x"}, "numpy")
    assert out["s"].dtype == np.int32 and out["s"].tolist() == [1, 2, 3]
    assert out["tag"] == b"x"


def test_string_and_object_series_are_refused_with_advice() -> None:
    # Issue 21: the pandas plugin refuses them saying what they hold (before: NoRouteError).
    pd = pytest.importorskip("pandas")
    with pytest.raises(ConversionError, match="holds strings"):
        to(pd.Series(["a", "b"]), "numpy")
    with pytest.raises(ConversionError, match="holds Python objects"):
        to(pd.Series([object(), 1], dtype=object), "numpy")


# -- scipy.sparse ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["csr_matrix", "csr_array", "coo_array"])
def test_scipy_sparse_into_numpy_needs_densify(kind: str) -> None:
    # scipy.sparse is a framework of its own now (tests/test_sparse.py): into a dense-only
    # target it is refused with advice unless densify=True.
    sp = pytest.importorskip("scipy.sparse")
    m = getattr(sp, kind)(np.eye(3))
    # "pass densify=": the opt-in edge's refusal, first where no other framework's edges
    # (torch's flag advice says "densify=True") rank above it.
    for call in (to, explain):
        with pytest.raises(NoRouteError, match="pass densify="):
            call(m, "numpy")
    with pytest.raises(NoRouteError, match="pass densify="):
        to({"m": m}, "numpy")
    np.testing.assert_array_equal(to({"m": m}, "numpy", densify=True)["m"], np.eye(3))


def test_scipy_is_not_imported_by_detection() -> None:
    code = textwrap.dedent(
        """
        import sys
        import scipy
        from interop_core import to
        to({"x": bytearray(2), "y": object()}, "numpy")
        print("scipy.sparse" in sys.modules)
        """
    )
    pytest.importorskip("scipy")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "False"


# -- the warm path -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [DLPackOnly, InterfaceOnly, ArrayOnly, lambda a: memoryview(a)],
    ids=["dlpack", "interface", "array", "buffer"],
)
def test_warm_path_gives_the_same_route_and_result(make: Any) -> None:
    torch = need("torch")
    a = float32_source()
    w = make(a)
    route = explain(w, "torch")
    first = to(w, "torch")
    second = to(w, "torch")  # planned and cached by the first call
    assert explain(w, "torch") == route and route.zero_copy
    assert isinstance(second, torch.Tensor)
    assert first.data_ptr() == second.data_ptr() == ptr(a)
    assert torch.equal(first, second)


def test_warm_path_key_follows_read_only_and_freshness() -> None:
    """Objects of one type alternating read-only/writable (and view/copy) get their own plans."""
    need("torch")
    rw, ro = float32_source(), float32_source()
    ro.flags.writeable = False
    for _ in range(2):
        assert ptr(to(DLPackOnly(rw), "torch")) == ptr(rw)
        assert ptr(to(DLPackOnly(ro), "torch")) != ptr(ro)
    view, fresh = ArrayOnly(rw), CopyingArray(rw)
    for _ in range(2):
        assert ptr(to(view, "numpy")) == ptr(rw)
        assert ptr(to(fresh, "numpy")) != ptr(rw)


def test_warm_path_of_a_fresh_producer_still_copies() -> None:
    a = float32_source()
    w = FreshInterface(a)
    outs = [to(w, "numpy") for _ in range(3)]
    assert len({ptr(o) for o in outs} | {ptr(a)}) == 4
    for o in outs:
        assert np.array_equal(o, a)


def test_aligned_copy_helper_is_aligned() -> None:
    """The tests' own aligned sources really are aligned (else jax/tf tests would copy)."""
    assert ptr(float32_source()) % ALIGNMENT == 0
    assert ptr(aligned_copy(np.zeros(3), offset=8)) % ALIGNMENT == 8
