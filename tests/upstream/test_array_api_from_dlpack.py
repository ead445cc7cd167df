"""The Array API test suite's DLPack cases, re-expressed over every ordered pair of numpy,
torch, JAX and TensorFlow.

Carries data-apis/array-api-tests:

- ``array_api_tests/test_dlpack.py``: ``test_from_dlpack`` (shape, dtype and values kept,
  the device kept or the one asked for, ``copy=``), ``test_dlpack_device`` (the result is a
  DLPack producer on the CPU) and ``test_dunder_dlpack`` (the result exports again);
- ``array_api_tests/test_creation_functions.py``: ``test_asarray_arrays``'s ``copy=`` rule
  (after the source is written, a ``copy=True`` result keeps the old value and a
  ``copy=False`` one sees the new one). The suite's creation-function module has no
  ``from_dlpack`` case of its own: its DLPack cases live in ``test_dlpack.py``.

Upstream draws arrays of every dtype with hypothesis and calls ``xp.from_dlpack(x)`` inside
one namespace; here ``xp.from_dlpack`` is ``to(x, target)``, the source is each of the four
frameworks (the same framework included, as upstream), every dtype the standard names is a
parameter, and memory sharing is checked with each framework's own pointer API. Sources are
64-byte aligned and C-contiguous (numpy: an aligned buffer built by hand; torch, JAX and
TensorFlow allocate aligned memory), the arrays the project promises to share.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import need
from pointers import X64, host, ptr, x64

from interop_core import CopyRequiredError, NoRouteError, explain, to

np = need("numpy")
torch = need("torch")
jax = need("jax")
tf = need("tensorflow")
jnp = jax.numpy

FRAMEWORKS = ("numpy", "torch", "jax", "tensorflow")
MUTABLE = ("numpy", "torch")
SRC = "upstream: data-apis/array-api-tests/array_api_tests"
PAIRS = [(s, t) for s in FRAMEWORKS for t in FRAMEWORKS]
CROSS = [(s, t) for s, t in PAIRS if s != t]
#: The dtypes the standard names (``hh.all_dtypes``).
DTYPES = (
    "bool",
    "int8", "int16", "int32", "int64",
    "uint8", "uint16", "uint32", "uint64",
    "float32", "float64", "complex64", "complex128",
)  # fmt: skip


def dtype_name(x: Any) -> str:
    d = x.dtype
    if isinstance(x, torch.Tensor):
        return str(d).removeprefix("torch.")
    return str(d.name)


def device_of(x: Any) -> str:
    """``x``'s device as "kind:index", from its framework's own attribute."""
    if isinstance(x, np.ndarray):
        return f"{x.device}:0"
    if isinstance(x, torch.Tensor):
        return f"{x.device.type}:{x.device.index or 0}"
    if isinstance(x, jax.Array):
        (dev,) = x.devices()
        return f"{dev.platform}:{dev.id}"
    spec = tf.DeviceSpec.from_string(x.device)
    return f"{spec.device_type.lower()}:{spec.device_index or 0}"


TYPES = {"numpy": np.ndarray, "torch": torch.Tensor, "jax": jax.Array, "tensorflow": tf.Tensor}


# -- sources -------------------------------------------------------------------------------


def reference(dtype: str) -> Any:
    """The (2, 3) values every source holds, as numpy computes them."""
    if dtype == "bool":
        rows: list[list[Any]] = [[True, False, True], [False, False, True]]
    elif dtype.startswith("complex"):
        rows = [[1 + 2j, -0.5j, 3], [0, 2.5, -1 + 1j]]
    elif dtype.startswith("float"):
        rows = [[1.5, -0.5, 0.0], [2.25, -3.0, 8.0]]
    elif dtype.startswith("uint"):
        rows = [[1, 0, 7], [200, 3, 9]]
    else:
        rows = [[-1, 0, 7], [100, -3, 9]]
    return np.asarray(rows, dtype)


def aligned_numpy(ref: Any) -> Any:
    """A C-contiguous copy of ``ref`` starting on a 64-byte boundary."""
    buf = np.empty(ref.nbytes + 64, np.uint8)
    start = -int(buf.__array_interface__["data"][0]) % 64
    out = buf[start : start + ref.nbytes].view(ref.dtype).reshape(ref.shape)
    out[...] = ref
    return out


def build(fw: str, ref: Any) -> Any:
    if fw == "numpy":
        return aligned_numpy(ref)
    if fw == "torch":
        return torch.from_numpy(ref.copy()).clone()  # torch's own (aligned) allocation
    if fw == "jax":
        return jnp.asarray(ref)
    return tf.constant(ref)


def holds(fw: str, dtype: str) -> bool:
    return fw != "jax" or dtype not in X64 or x64()


def expect_x64_refusal(x: Any, target: str) -> None:
    """DIFFERS: JAX without jax_enable_x64 would narrow a 64-bit dtype; the project refuses
    with NoRouteError naming the flag instead of narrowing silently."""
    with pytest.raises(NoRouteError, match="jax_enable_x64"):
        to(x, target)
    with pytest.raises(NoRouteError, match="jax_enable_x64"):
        explain(x, target)


# -- test_dlpack.py::test_from_dlpack ---------------------------------------------------


def _dtype_cases() -> list[Any]:
    cases = []
    for source, target in CROSS:
        for dtype in DTYPES:
            if holds(source, dtype):  # JAX without x64 makes no 64-bit source
                cases.append(pytest.param(source, target, dtype, id=f"{source}-{target}-{dtype}"))
    return cases


@pytest.mark.parametrize(("source", "target", "dtype"), _dtype_cases())
def test_from_dlpack_keeps_shape_dtype_values_and_shares(
    source: str, target: str, dtype: str
) -> None:
    """upstream: data-apis/array-api-tests/array_api_tests/test_dlpack.py::test_from_dlpack

    ``y = xp.from_dlpack(x)``: same device, ``all(y == x)``; here for every dtype across
    frameworks, with dtype and shape checked too and, for these aligned C-contiguous
    sources, memory shared (copy=None shares when possible).
    DIFFERS (64-bit dtypes into JAX without jax_enable_x64): NoRouteError naming the flag,
    where JAX itself would narrow silently."""
    if not holds(source, dtype):  # x64 was switched off after collection
        pytest.skip("JAX makes no 64-bit array with jax_enable_x64 off")
    ref = reference(dtype)
    x = build(source, ref)
    if not holds(target, dtype):
        expect_x64_refusal(x, target)
        return
    y = to(x, target)
    assert isinstance(y, TYPES[target])
    assert dtype_name(y) == dtype
    assert tuple(y.shape) == ref.shape
    np.testing.assert_array_equal(host(y), ref, strict=True)
    assert device_of(y) == device_of(x) == "cpu:0"
    route = explain(x, target)
    assert route.zero_copy and route.copies == 0, str(route)
    assert ptr(y) == ptr(x)


COPY_CASES = [
    pytest.param(s, t, copy, device, id=f"{s}-{t}-copy={copy}-device={device}")
    for s, t in PAIRS
    for copy in (None, True, False)
    for device in (None, "cpu")
]


@pytest.mark.parametrize(("source", "target", "copy", "device"), COPY_CASES)
def test_from_dlpack_copy_and_device(
    source: str, target: str, copy: bool | None, device: str | None
) -> None:
    """upstream: data-apis/array-api-tests/array_api_tests/test_dlpack.py::test_from_dlpack

    ``xp.from_dlpack(x, device=..., copy=...)``: with ``device=None`` the result is on x's
    device, else on the one asked for; values equal. The memory rule of ``copy=`` (the
    upstream TODO "test copy") is checked here with pointers: None and False share these
    aligned C-contiguous sources, True never does."""
    ref = reference("float32")
    x = build(source, ref)
    kw: dict[str, Any] = {"copy": copy}
    if device is not None:
        kw["device"] = device
    y = to(x, target, **kw)
    assert isinstance(y, TYPES[target])
    assert device_of(y) == (device_of(x) if device is None else "cpu:0")
    np.testing.assert_array_equal(host(y), ref, strict=True)
    route = explain(x, target, **kw)
    if copy:
        assert ptr(y) != ptr(x)
        assert route.copies >= 1 and not route.zero_copy, str(route)
    else:
        assert ptr(y) == ptr(x)
        assert route.copies == 0, str(route)


@pytest.mark.parametrize(
    ("source", "target"), [pytest.param(s, t, id=f"{s}-{t}") for s in MUTABLE for t in FRAMEWORKS]
)
def test_from_dlpack_copy_false_refuses_what_must_be_copied(source: str, target: str) -> None:
    """upstream: data-apis/array-api-tests/array_api_tests/test_dlpack.py::test_from_dlpack

    The standard's ``copy=False``: never copy, raise ``BufferError`` when sharing is
    impossible (upstream's TODO 3, "copy=False ... transfers", checked with what cannot be
    shared on one device: a transposed (F-ordered) array where the consumer takes only
    C-contiguous memory). The project raises CopyRequiredError, a BufferError; where the
    consumer takes strided memory (numpy, torch) the transposed view is shared."""
    ref = reference("float32")
    x = build(source, ref.T.copy()).T  # a (2, 3) view, F-ordered (JAX and TF have none)
    np.testing.assert_array_equal(host(x), ref)
    if target in ("numpy", "torch"):
        y = to(x, target, copy=False)
        assert ptr(y) == ptr(x)
        np.testing.assert_array_equal(host(y), ref, strict=True)
        return
    with pytest.raises(CopyRequiredError) as info:
        to(x, target, copy=False)
    assert isinstance(info.value, BufferError)
    y = to(x, target)  # copy=None: one reported copy instead
    assert explain(x, target).copies == 1
    np.testing.assert_array_equal(host(y), ref, strict=True)


# -- test_dlpack.py::test_dlpack_device / test_dunder_dlpack ------------------------------------


@pytest.mark.parametrize(("source", "target"), [pytest.param(*p, id="-".join(p)) for p in PAIRS])
def test_dlpack_device_of_the_result(source: str, target: str) -> None:
    """upstream: data-apis/array-api-tests/array_api_tests/test_dlpack.py::test_dlpack_device

    The result's ``__dlpack_device__()`` is a valid DLPack device: (kDLCPU = 1, an int id);
    here (1, 0), the CPU the source lives on."""
    x = build(source, reference("int32"))
    device_type, device_id = to(x, target).__dlpack_device__()
    assert int(device_type) == 1
    assert isinstance(device_id, int) and device_id == 0


@pytest.mark.parametrize(
    ("source", "target", "max_version"),
    [
        pytest.param(s, t, v, id=f"{s}-{t}-max_version={v}")
        for s, t in PAIRS
        for v in (None, (1, 0))
    ],
)
def test_dunder_dlpack_of_the_result(
    source: str, target: str, max_version: tuple[int, int] | None
) -> None:
    """upstream: data-apis/array-api-tests/array_api_tests/test_dlpack.py::test_dunder_dlpack

    ``x.__dlpack__(max_version=...)`` succeeds on the result (upstream can do nothing with
    the capsule from Python; here numpy imports it, and the import shares the result's
    memory). TensorFlow's exporter refuses a ``dl_device`` argument, so none is passed.
    DIFFERS (JAX and TensorFlow into numpy, max_version=None): the project's numpy view of
    immutable memory is read-only, and numpy refuses an unversioned (DLPack 0.x) export of
    a read-only array with BufferError, since only DLPack 1.x can flag it read-only; the
    versioned export, and ``np.from_dlpack`` (which asks for it), work."""
    ref = reference("float32")
    y = to(build(source, ref), target)
    kw = {} if max_version is None else {"max_version": max_version}
    if target == "numpy" and source in ("jax", "tensorflow"):
        assert not y.flags.writeable
        if max_version is None:
            with pytest.raises(BufferError, match="readonly"):
                y.__dlpack__(**kw)
            kw = {"max_version": (1, 0)}
    capsule = y.__dlpack__(**kw)
    assert type(capsule).__name__ == "PyCapsule"
    back = np.from_dlpack(y)
    np.testing.assert_array_equal(back, ref, strict=True)
    assert int(back.__array_interface__["data"][0]) == ptr(y)


# -- test_creation_functions.py::test_asarray_arrays (copy=) ---------------------------------


@pytest.mark.parametrize(
    ("source", "target", "copy"),
    [
        pytest.param(s, t, c, id=f"{s}-{t}-copy={c}")
        for s in MUTABLE
        for t in FRAMEWORKS
        for c in (True, False)
    ],
)
def test_asarray_copy_rule_after_the_source_is_written(
    source: str, target: str, copy: bool
) -> None:
    """upstream: data-apis/array-api-tests/array_api_tests/test_creation_functions.py::test_asarray_arrays

    After ``out = xp.asarray(x, copy=...)`` the test writes ``x[idx]``: with copy=True
    ``out[idx]`` keeps the old value, with copy=False it is the new one. Sources that can
    be written (numpy, torch) into every framework: JAX and TensorFlow results of
    copy=False are aliases of the written memory, so they see the write too."""  # noqa: E501
    ref = reference("float32")
    x = build(source, ref)
    out = to(x, target, copy=copy)
    old = float(ref[1, 2])
    x[1, 2] = -42.0
    assert float(host(x)[1, 2]) == -42.0  # the write happened (upstream's sanity check)
    seen = float(host(out)[1, 2])
    assert seen == (old if copy else -42.0)
    expected = ref.copy()
    if not copy:
        expected[1, 2] = -42.0
    np.testing.assert_array_equal(host(out), expected)
