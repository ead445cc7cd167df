"""PyTorch's DLPack tests, re-expressed through ``to()`` / ``explain()``.

Carries pytorch/pytorch ``test/test_dlpack.py`` (``TestTorchDlPack``, the CPU cases; the
CUDA-only stream and multi-device cases need a GPU and have no CPU counterpart). Upstream
round-trips tensors through ``torch.from_dlpack`` / ``to_dlpack`` / ``__dlpack__`` and
NumPy's ``from_dlpack``; here the same tensors cross to numpy, JAX and TensorFlow with
``to(t, target)`` (and back with ``to(x, "torch")``), for the same dtypes
(``all_types_and_complex_and(half, bfloat16, bool, uint16, uint32, uint64)``), with
``copy=`` and ``device=`` as ``torch.from_dlpack`` takes them. Every claim of shared
memory is checked with the frameworks' own pointer APIs (``Tensor.data_ptr()``, numpy's
``__array_interface__``, ``jax.Array.unsafe_buffer_pointer()``, TensorFlow's own DLPack
export read with ctypes), every copy with ``explain()``'s count.

Where upstream checks that torch *refuses* to export a tensor (requires_grad, the
conjugate bit, sparse, quantized), the project either routes around the refusal (detach,
resolve the bit with one reported copy, sparse formats) or refuses with an InteropError of
its own: those tests say DIFFERS.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import need
from pointers import X64, ptr, x64

from interop_core import (
    CopyRequiredError,
    DeviceError,
    InteropError,
    NoRouteError,
    explain,
    to,
)

np = need("numpy")
torch = need("torch")
jax = need("jax")
tf = need("tensorflow")
ml_dtypes = need("ml_dtypes")

UP = "upstream: pytorch/pytorch/test/test_dlpack.py::TestTorchDlPack"
TARGETS = ("numpy", "jax", "tensorflow")
#: ``all_types_and_complex_and(torch.half, torch.bfloat16, torch.bool, torch.uint16,
#: torch.uint32, torch.uint64)``, upstream's dtype list for the conversion tests.
DTYPES = (
    "bool", "uint8", "int8", "int16", "int32", "int64",
    "float16", "bfloat16", "float32", "float64", "complex64", "complex128",
    "uint16", "uint32", "uint64",
)  # fmt: skip
#: test_numpy_dlpack_protocol_conversion's list: no bool, no bfloat16 (numpy has neither
#: through DLPack upstream).
NUMPY_DTYPES = tuple(d for d in DTYPES if d not in ("bool", "bfloat16"))


TYPES = {"numpy": np.ndarray, "torch": torch.Tensor, "jax": jax.Array, "tensorflow": tf.Tensor}


def dtype_name(x: Any) -> str:
    if isinstance(x, torch.Tensor):
        return str(x.dtype).removeprefix("torch.")
    return str(x.dtype.name)


def host(x: Any) -> Any:
    """``x``'s values as numpy, read with its framework's own API; bfloat16 widened to
    float32 (numpy compares it only that way)."""
    if isinstance(x, torch.Tensor):
        out = (x.float() if x.dtype == torch.bfloat16 else x).numpy()
    elif isinstance(x, jax.Array):
        out = np.asarray(x)
    elif isinstance(x, tf.Tensor):
        out = x.numpy()
    else:
        out = x
    return out.astype(np.float32) if out.dtype == ml_dtypes.bfloat16 else out


def reference(dtype: str, n: int = 5) -> Any:
    """``n`` values that every dtype holds exactly (upstream's make_tensor draws random
    ones), as numpy computes them (bfloat16 as float32)."""
    if dtype == "bool":
        return np.array([True, False, True, True, False][:n])
    base = np.array([3, 0, 7, 1, 5])[:n]
    if dtype.startswith("uint"):
        return base.astype(dtype)
    if dtype.startswith("int"):
        return (base - 2).astype(dtype)
    if dtype.startswith("complex"):
        return (base * 0.5 - 1 + 1j * (base - 3)).astype(dtype)
    if dtype == "bfloat16":
        return (base * 0.5 - 1).astype(np.float32)
    return (base * 0.5 - 1).astype(dtype)


def make(dtype: str, n: int = 5) -> Any:
    """A torch tensor of ``dtype`` in memory torch allocates (64-byte aligned)."""
    ref = reference(dtype, n)
    if dtype == "bfloat16":
        return torch.tensor(ref.tolist(), dtype=torch.bfloat16)
    return torch.from_numpy(ref).clone().to(getattr(torch, dtype))


def check_x64_refusal(x: Any) -> None:
    """DIFFERS: JAX without jax_enable_x64 narrows 64-bit dtypes; to() refuses instead."""
    with pytest.raises(NoRouteError, match="jax_enable_x64"):
        to(x, "jax")


# -- test_dlpack_capsule_conversion / protocol_conversion / from_dlpack / from_dlpack_dtype ----


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("target", TARGETS)
def test_from_dlpack(target: str, dtype: str) -> None:
    """upstream: pytorch/pytorch/test/test_dlpack.py::TestTorchDlPack::test_from_dlpack
    (and ::test_from_dlpack_dtype)

    ``y = from_dlpack(x)``: equal values, the same dtype; here into numpy, JAX and
    TensorFlow, sharing torch's memory.
    DIFFERS (int64, uint64, float64, complex128 into JAX without jax_enable_x64): a
    NoRouteError naming the flag, where JAX's own import would narrow them."""
    x = make(dtype)
    if target == "jax" and dtype in X64 and not x64():
        check_x64_refusal(x)
        return
    y = to(x, target)
    assert isinstance(y, TYPES[target])
    assert dtype_name(y) == dtype
    assert tuple(y.shape) == (5,)
    np.testing.assert_array_equal(host(y), reference(dtype), strict=True)
    assert ptr(y) == ptr(x)
    assert explain(x, target).zero_copy


@pytest.mark.parametrize("dtype", DTYPES)
def test_dlpack_capsule_conversion(dtype: str) -> None:
    """upstream: pytorch/pytorch/test/test_dlpack.py::TestTorchDlPack::test_dlpack_capsule_conversion

    ``from_dlpack(to_dlpack(x)) == x``: here a round trip through another framework,
    torch -> numpy -> torch, gives back a tensor of the same dtype and values over the same
    memory (bfloat16 crosses to numpy as an ml_dtypes array)."""  # noqa: E501
    x = make(dtype)
    mid = to(x, "numpy")
    z = to(mid, "torch")
    assert isinstance(mid, np.ndarray) and isinstance(z, torch.Tensor)
    assert z.dtype == x.dtype and torch.equal(z, x)
    assert ptr(mid) == z.data_ptr() == x.data_ptr()
    assert explain(mid, "torch").zero_copy


class DLPackOnly:
    """A producer that speaks DLPack and nothing else (no buffer protocol, no array
    interface), recording the keyword arguments of every ``__dlpack__`` call."""

    def __init__(self, tensor: Any) -> None:
        self._tensor = tensor
        self.calls: list[dict[str, Any]] = []

    def __dlpack__(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        return self._tensor.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> Any:
        return self._tensor.__dlpack_device__()


@pytest.mark.parametrize("dtype", DTYPES)
def test_dlpack_protocol_conversion(dtype: str) -> None:
    """upstream: pytorch/pytorch/test/test_dlpack.py::TestTorchDlPack::test_dlpack_protocol_conversion

    ``from_dlpack(x)`` through the protocol (``__dlpack__``/``__dlpack_device__``): an
    object that speaks only DLPack converts to torch with its dtype and values, over the
    producer's memory; the producer is asked once."""  # noqa: E501
    x = make(dtype)
    producer = DLPackOnly(x)
    z = to(producer, "torch")
    assert isinstance(z, torch.Tensor) and z.dtype == x.dtype
    assert torch.equal(z, x) and z.data_ptr() == x.data_ptr()
    assert len(producer.calls) == 1


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
def test_numpy_dlpack_protocol_conversion(dtype: str) -> None:
    """upstream: pytorch/pytorch/test/test_dlpack.py::TestTorchDlPack::test_numpy_dlpack_protocol_conversion

    NumPy reads the tensor (``np.from_dlpack(t)``: equal), and ``t.numpy()`` comes back
    into torch over the same memory (``data_ptr`` equal): both through ``to()``."""  # noqa: E501
    t = make(dtype)
    arr = to(t, "numpy")
    np.testing.assert_array_equal(arr, reference(dtype), strict=True)
    assert ptr(arr) == t.data_ptr()
    res = to(t.numpy(), "torch")
    assert res.dtype == t.dtype and torch.equal(res, t)
    assert res.data_ptr() == t.data_ptr()


# -- shapes: 0-d, empty --------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(), (0,), (0, 4), (3, 0)], ids=["0d", "empty", "0x4", "3x0"])
@pytest.mark.parametrize("target", TARGETS)
def test_from_dlpack_zero_dim_and_empty(target: str, shape: tuple[int, ...]) -> None:
    """upstream: pytorch/pytorch/test/test_dlpack.py::TestTorchDlPack::test_from_dlpack
    (shape (5,) upstream; 0-d and empty shapes here)

    A 0-d tensor and empty tensors convert with their shape, dtype and value, zero-copy."""
    x = torch.full(shape, 2.5, dtype=torch.float32)
    y = to(x, target)
    assert isinstance(y, TYPES[target]) and tuple(y.shape) == shape
    assert dtype_name(y) == "float32"
    np.testing.assert_array_equal(host(y), np.full(shape, 2.5, np.float32), strict=True)
    route = explain(x, target)
    assert route.zero_copy and route.copies == 0, str(route)
    if shape == ():
        assert ptr(y) == ptr(x)


# -- test_dlpack_shared_storage --------------------------------------------------------------


@pytest.mark.parametrize("target", TARGETS)
def test_dlpack_shared_storage(target: str) -> None:
    """upstream: pytorch/pytorch/test/test_dlpack.py::TestTorchDlPack::test_dlpack_shared_storage

    ``z = from_dlpack(to_dlpack(x)); z[0] += 20``: x sees it. Here numpy's view is
    written and torch sees the write; JAX and TensorFlow results are immutable, so the write
    goes the other way (through torch) and the zero-copy result sees it."""
    dtype = torch.float32 if target == "jax" else torch.float64  # float64 upstream
    x = torch.arange(5, dtype=dtype) * 0.5
    z = to(x, target)
    if target == "numpy":
        assert z.flags.writeable
        z[0] = z[0] + 20.0
    else:
        x[0] = x[0] + 20.0
    expected = np.array([20.0, 0.5, 1.0, 1.5, 2.0])
    np.testing.assert_array_equal(x.numpy(), expected.astype(x.numpy().dtype))
    np.testing.assert_array_equal(host(z), expected.astype(host(z).dtype))


@pytest.mark.parametrize("source", ["jax", "tensorflow"])
def test_dlpack_shared_storage_into_torch(source: str) -> None:
    """upstream: pytorch/pytorch/test/test_dlpack.py::TestTorchDlPack::test_dlpack_shared_storage

    The same check with torch as the consumer of another framework's memory: the tensor
    ``to()`` makes from a JAX array or a TensorFlow tensor is a writable alias (README
    "Semantics"), so ``z[0] += 20`` shows in the source, and ``explain()`` says so."""
    x = jax.numpy.arange(5, dtype="float32") * 0.5 if source == "jax" else tf.range(5.0) * 0.5
    z = to(x, "torch")
    assert z.data_ptr() == ptr(x)
    z[0] = z[0] + 20.0
    expected = np.array([20.0, 0.5, 1.0, 1.5, 2.0], np.float32)
    np.testing.assert_array_equal(host(x), expected, strict=True)
    np.testing.assert_array_equal(z.numpy(), expected, strict=True)
    assert any("writable alias" in n for n in explain(x, "torch").notes)


# -- test_from_dlpack_noncontinguous (and expanded views) ------------------------------------

VIEWS = {
    "x[0]": lambda x: x[0],
    "x[:,0]": lambda x: x[:, 0],
    "x[1,:]": lambda x: x[1, :],
    "x[1]": lambda x: x[1],
    "x.t()": lambda x: x.t(),
    "expand": lambda x: x[0].expand(3, 5),  # stride 0, as broadcasting makes
    "x[::2,1::2]": lambda x: x[::2, 1::2],
}


@pytest.mark.parametrize("view", list(VIEWS))
@pytest.mark.parametrize("target", TARGETS)
def test_from_dlpack_noncontinguous(target: str, view: str) -> None:
    """upstream: pytorch/pytorch/test/test_dlpack.py::TestTorchDlPack::test_from_dlpack_noncontinguous
    (views x[0], x[:, 0], x[1, :], x[1], x.t() of a (5, 5) tensor upstream; an expanded
    (stride-0) view and a 2-D strided view added)

    Each view converts with its values. numpy takes strided memory: a view with torch's
    strides (in bytes) over the same memory. JAX and TensorFlow take only C-contiguous,
    64-byte aligned buffers: a view that is one is shared, the others are one copy that
    ``explain()`` reports and ``copy=False`` refuses."""  # noqa: E501
    x = torch.arange(25, dtype=torch.float32).reshape(5, 5)
    assert x.data_ptr() % 64 == 0  # torch's own allocation
    v = VIEWS[view](x)
    y = to(v, target)
    np.testing.assert_array_equal(host(y), v.numpy(), strict=True)
    route = explain(v, target)
    if target == "numpy":
        assert ptr(y) == v.data_ptr() and route.copies == 0
        assert y.strides == tuple(s * v.element_size() for s in v.stride())
        return
    shareable = v.is_contiguous() and v.data_ptr() % 64 == 0
    if shareable:
        assert ptr(y) == v.data_ptr() and route.copies == 0, str(route)
        assert to(v, target, copy=False) is not None
    else:
        assert ptr(y) != v.data_ptr() and route.copies == 1, str(route)
        with pytest.raises(CopyRequiredError):
            to(v, target, copy=False)


@pytest.mark.parametrize("direction", ["torch->numpy", "numpy->torch"])
def test_dlpack_normalize_strides(direction: str) -> None:
    """upstream: pytorch/pytorch/test/test_dlpack.py::TestTorchDlPack::test_dlpack_normalize_strides

    ``y = x[::3][:1]`` has shape (1,) and stride 3; after the exchange the stride is kept
    (not normalized): here both ways between torch and numpy, over the same memory."""
    if direction == "torch->numpy":
        y = torch.rand(16)[::3][:1]
        assert y.shape == (1,) and y.stride() == (3,)
        z = to(y, "numpy")
        assert z.shape == (1,) and z.strides == (3 * 4,)
        assert ptr(z) == y.data_ptr() and z[0] == y[0].item()
    else:
        a = np.arange(16, dtype=np.float32)[::3][:1]
        assert a.shape == (1,) and a.strides == (12,)
        t = to(a, "torch")
        assert tuple(t.shape) == (1,) and t.stride() == (3,)
        assert t.data_ptr() == ptr(a) and t[0].item() == a[0]


# -- refusals of torch's exporter -----------------------------------------------------------


@pytest.mark.parametrize("target", TARGETS)
def test_dlpack_export_requires_grad(target: str) -> None:
    """upstream: pytorch/pytorch/test/test_dlpack.py::TestTorchDlPack::test_dlpack_export_requires_grad

    DIFFERS: torch's ``__dlpack__`` raises BufferError ("require gradient") for a tensor
    that requires grad; ``to()`` detaches it (zero-copy, the same memory) and
    ``explain()`` notes the detach."""  # noqa: E501
    x = torch.zeros(10, dtype=torch.float32, requires_grad=True)
    with pytest.raises(BufferError, match="require gradient"):
        x.__dlpack__()  # torch's own refusal, as upstream
    y = to(x, target)
    assert isinstance(y, TYPES[target]) and tuple(y.shape) == (10,)
    assert ptr(y) == x.data_ptr()
    np.testing.assert_array_equal(host(y), np.zeros(10, np.float32), strict=True)
    route = explain(x, target)
    assert route.zero_copy and any("detached" in n for n in route.notes), str(route)


@pytest.mark.parametrize("bit", ["conj", "neg"])
@pytest.mark.parametrize("target", TARGETS)
def test_dlpack_export_is_conj(target: str, bit: str) -> None:
    """upstream: pytorch/pytorch/test/test_dlpack.py::TestTorchDlPack::test_dlpack_export_is_conj
    (the conjugate bit upstream; the negative bit, ``torch._neg_view``, its sibling, here)

    DIFFERS: torch's ``__dlpack__`` refuses a tensor with the conjugate bit set
    (BufferError "conjugate bit"); ``to()`` resolves the bit with one reported copy, and the
    values are the conjugated (negated) ones; ``copy=False`` raises CopyRequiredError.
    torch exports a negative-bit tensor's raw memory without complaint (the values would
    lose their sign): ``to()`` resolves that bit too."""
    if bit == "conj":
        base = torch.tensor([-1 + 1j, -2 + 2j, 3 - 3j])
        x = torch.conj(base)
        assert x.is_conj()
        with pytest.raises(BufferError, match="conjugate bit"):
            x.__dlpack__()
        expected = np.conj(base.numpy())
    else:
        base = torch.tensor([1.0, -2.0, 3.5])
        x = torch._neg_view(base)
        assert x.is_neg()
        expected = -base.numpy()
    y = to(x, target)
    np.testing.assert_array_equal(host(y), expected, strict=True)
    route = explain(x, target)
    assert route.copies == 1, str(route)
    with pytest.raises(CopyRequiredError):
        to(x, target, copy=False)


@pytest.mark.filterwarnings("ignore:Sparse invariant checks:UserWarning")
def test_dlpack_export_non_strided() -> None:
    """upstream: pytorch/pytorch/test/test_dlpack.py::TestTorchDlPack::test_dlpack_export_non_strided

    DIFFERS: torch's ``__dlpack__`` refuses a sparse tensor (BufferError "strided"); to()
    refuses it into dense-only numpy with NoRouteError saying to pass ``densify=True``
    (then one dense copy), and converts it to TensorFlow's sparse tensor, staying sparse."""  # noqa: E501
    x = torch.sparse_coo_tensor([[0, 2]], [1.5, -2.0], size=(4,))
    with pytest.raises(BufferError, match="strided"):
        x.__dlpack__()
    with pytest.raises(NoRouteError, match="densify=True"):
        to(x, "numpy")
    dense = to(x, "numpy", densify=True)
    np.testing.assert_array_equal(dense, np.array([1.5, 0.0, -2.0, 0.0], np.float32), strict=True)
    st = to(x, "tensorflow")
    assert isinstance(st, tf.SparseTensor)
    np.testing.assert_array_equal(tf.sparse.to_dense(st).numpy(), dense)


@pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor:UserWarning")
@pytest.mark.parametrize("target", TARGETS)
def test_dlpack_unsupported_dtype_error(target: str) -> None:
    """upstream: pytorch/pytorch/test/test_dlpack.py::TestTorchDlPack::test_dlpack_unsupported_dtype_error

    DIFFERS: a quantized tensor has no DLPack dtype, and torch raises BufferError; to()
    raises NoRouteError (an InteropError, a LookupError) saying to dequantize first."""  # noqa: E501
    q = torch.quantize_per_tensor(torch.tensor(1.5), 0.1, 10, torch.qint8)
    with pytest.raises(NoRouteError, match="dequantize") as info:
        to(q, target)
    assert isinstance(info.value, InteropError) and isinstance(info.value, LookupError)


@pytest.mark.parametrize("device", ["hexagon", "hexagon:0", "cpu:99"])
def test_unsupported_device_error(device: str) -> None:
    """upstream: pytorch/pytorch/test/test_dlpack.py::TestTorchDlPack::test_unsupported_device_error

    DIFFERS: upstream asks for a Hexagon device (``dl_device=(kDLHexagon, 0)``) and torch
    raises BufferError "Unsupported device_type"; ``to(..., device=)`` raises DeviceError (a
    ValueError) before anything runs, for a device kind no plugin knows and for a device
    index no framework has."""
    x = torch.ones(5)
    with pytest.raises(DeviceError) as info:
        to(x, "torch", device=device)
    assert isinstance(info.value, ValueError)


# -- test_automatically_select_in_creation / test_max_version --------------------------------


@pytest.mark.parametrize("target", ("torch", *TARGETS))
def test_automatically_select_in_creation(target: str) -> None:
    """upstream: pytorch/pytorch/test/test_dlpack.py::TestTorchDlPack::test_automatically_select_in_creation

    An object exposing only ``__dlpack__``/``__dlpack_device__`` is recognised as an array
    and read through DLPack (not element by element): equal values, shared memory, one
    ``__dlpack__`` call per ``to()``."""  # noqa: E501
    tensor = torch.rand(10)
    wrap = DLPackOnly(tensor)
    out = to(wrap, target)
    assert isinstance(out, TYPES[target])
    np.testing.assert_array_equal(host(out), tensor.numpy(), strict=True)
    assert ptr(out) == tensor.data_ptr()
    assert len(wrap.calls) == 1


class LegacyProducer:
    """A DLPack 0.x producer: ``__dlpack__`` takes only ``stream`` and returns a legacy
    ("dltensor") capsule."""

    def __init__(self, tensor: Any) -> None:
        self._tensor = tensor
        self.streams: list[Any] = []

    def __dlpack__(self, stream: Any = None) -> Any:
        self.streams.append(stream)
        return self._tensor.__dlpack__()

    def __dlpack_device__(self) -> Any:
        return self._tensor.__dlpack_device__()


class OldCapsuleProducer(DLPackOnly):
    """Takes ``max_version`` but answers with a legacy capsule, as a producer that
    implements only DLPack 0.x may (the consumer must still read it)."""

    def __dlpack__(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        return self._tensor.__dlpack__()


@pytest.mark.parametrize("producer", ["versioned", "legacy-signature", "legacy-capsule"])
@pytest.mark.parametrize("target", ("torch", *TARGETS))
def test_max_version(target: str, producer: str) -> None:
    """upstream: pytorch/pytorch/test/test_dlpack.py::TestTorchDlPack::test_max_version

    Upstream exports with max_version None, (0, 8), (1, 0), (2, 0) and checks the capsule
    kind ("dltensor" / "dltensor_versioned") and that the consumer reads each. Here the
    consumer side: to() asks a producer that takes ``max_version`` for a versioned capsule
    ((1, 0)), calls a 0.x producer without it, and reads a legacy capsule answered to a
    versioned request; each converts with equal values over the producer's memory."""
    tensor = torch.arange(5, dtype=torch.float32)
    capsule = tensor.__dlpack__(max_version=(1, 0))
    assert 'capsule object "dltensor_versioned"' in str(capsule)  # what (1, 0) asks for
    wrap: Any = {
        "versioned": DLPackOnly,
        "legacy-signature": LegacyProducer,
        "legacy-capsule": OldCapsuleProducer,
    }[producer](tensor)
    out = to(wrap, target)
    np.testing.assert_array_equal(host(out), tensor.numpy(), strict=True)
    assert ptr(out) == tensor.data_ptr()
    if producer == "legacy-signature":
        assert wrap.streams == [None]
    else:
        assert len(wrap.calls) == 1 and wrap.calls[0].get("max_version") == (1, 0)


@pytest.mark.parametrize("target", ["torch", "numpy"])
def test_max_version_read_only_flag(target: str) -> None:
    """upstream: pytorch/pytorch/test/test_dlpack.py::TestTorchDlPack::test_max_version
    (the DLPack 1.x capsule that max_version=(1, 0) asks for, with its read-only flag)

    A read-only numpy array seen only through DLPack answers the versioned request with a
    capsule flagged read-only. torch cannot mark a tensor read-only, so ``to()`` gives it a
    copy (reported; ``copy=False`` raises CopyRequiredError) and a write to the tensor
    leaves the array alone; numpy gets a read-only view of the same memory."""
    ro = np.arange(4.0)
    ro.flags.writeable = False
    wrap = DLPackOnly(ro)
    out = to(wrap, target)
    assert wrap.calls[0].get("max_version") == (1, 0)
    np.testing.assert_array_equal(host(out), ro, strict=True)
    if target == "numpy":
        assert not out.flags.writeable and ptr(out) == ptr(ro)
        assert explain(DLPackOnly(ro), target).copies == 0
        return
    assert out.data_ptr() != ptr(ro) and explain(DLPackOnly(ro), target).copies == 1
    out[0] = 99.0
    assert ro[0] == 0.0
    with pytest.raises(CopyRequiredError, match="read-only"):
        to(DLPackOnly(ro), target, copy=False)


# -- _test_from_dlpack (test_copy / test_no_copy, on the CPU) ---------------------------------


@pytest.mark.parametrize("device", [None, "cpu", "torch.device"])
@pytest.mark.parametrize("copy", [None, True, False])
@pytest.mark.parametrize("target", ("torch", *TARGETS))
def test_copy_and_no_copy(target: str, copy: bool | None, device: str | None) -> None:
    """upstream: pytorch/pytorch/test/test_dlpack.py::TestTorchDlPack::test_copy
    (and ::test_no_copy, through their helper ``_test_from_dlpack``)

    ``from_dlpack(inp, device=, copy=)``: equal values, the output on the device asked for
    (the input's by default); the memory is shared if copy=False, or copy=None on the same
    device, and copied otherwise. Upstream runs them on CUDA; on the CPU every device asked
    for is the input's, so copy=True is the only copy."""
    inp = torch.arange(5, dtype=torch.float32) * 1.5
    kw: dict[str, Any] = {"copy": copy}
    if device is not None:
        kw["device"] = torch.device("cpu") if device == "torch.device" else device
    out = to(inp, target, **kw)
    assert isinstance(out, TYPES[target])
    np.testing.assert_array_equal(host(out), inp.numpy(), strict=True)
    if target == "torch":
        assert out.device == torch.device("cpu")
    elif target == "jax":
        assert out.devices() == {jax.devices("cpu")[0]}
    elif target == "tensorflow":
        assert tf.DeviceSpec.from_string(out.device).device_type == "CPU"
    if copy:
        assert ptr(out) != inp.data_ptr()
        assert explain(inp, target, **kw).copies == 1
    else:
        assert ptr(out) == inp.data_ptr()
        assert explain(inp, target, **kw).copies == 0
