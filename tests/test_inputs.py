"""Inputs beyond plain dense arrays (FACTS.md, "Inputs a router meets ...").

Each input either converts correctly (values and dtype checked) or raises an
:class:`InteropError` subclass whose message says what to do: never a raw framework
exception, never a crash.
"""

from __future__ import annotations

import warnings
from typing import Any

import adapters
import pytest
from adapters import aligned_numpy
from conftest import framework_spec, frameworks, need

from interop_core import (
    CopyRequiredError,
    InteropError,
    NoRouteError,
    NotAnArrayError,
    default_registry,
    explain,
    to,
)
from interop_core.testing import data_ptr as ptr
from interop_core.testing import isolated_registry

#: The registry's frameworks (conftest.frameworks): a framework a plugin adds is a source
#: and target here too, skipped where it does not hold a test's dtype.
FRAMEWORKS = frameworks()
ALL_PAIRS = [(s, d) for s in FRAMEWORKS for d in FRAMEWORKS]


def others(name: str) -> list[str]:
    """Every framework but ``name``: the targets of an input only ``name`` makes."""
    return [f for f in FRAMEWORKS if f != name]


def holding(*dtypes: str, held: bool = True) -> list[str]:
    """The frameworks whose specs hold all of ``dtypes`` (``held=False``: none of them)."""
    return [f for f in FRAMEWORKS if all((d in framework_spec(f).dtypes) is held for d in dtypes)]


def need_dtype(framework: str, dtype: str) -> None:
    """Skip unless ``framework`` holds ``dtype`` (a plugin's framework may hold few)."""
    if not adapters.holds(framework, dtype):
        pytest.skip(f"{framework} does not hold {dtype}")


OTHERS_THAN_TORCH = others("torch")
BUILTIN = frameworks(builtin=True)


# -- helpers ------------------------------------------------------------------------------


def numpy_dtype(name: str) -> Any:
    """numpy dtype of a canonical name (ml_dtypes for bfloat16/float8)."""
    np = need("numpy")
    if name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        ml_dtypes = pytest.importorskip("ml_dtypes")
        return np.dtype(getattr(ml_dtypes, name))
    return np.dtype(name)


def build(fw: str, values: Any) -> Any:
    """An array of ``fw`` holding the numpy ``values`` (ml_dtypes dtypes included)."""
    np = need("numpy")
    if fw == "numpy":
        return aligned_numpy(values)
    if fw == "torch":
        torch = need("torch")
        name = values.dtype.name
        if name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
            uint = np.uint16 if name == "bfloat16" else np.uint8
            raw = torch.from_numpy(np.array(values, order="C").view(uint))
            return raw.view(getattr(torch, name)).clone()
        return torch.tensor(values)
    if fw == "jax":
        return need("jax").numpy.asarray(values)
    if fw == "tensorflow":
        return need("tensorflow").constant(values)
    return adapters.make_by_example(fw, values, "0d" if values.ndim == 0 else "contiguous")


def values_of(x: Any) -> Any:
    """The values of ``x`` as float64/complex128 numpy, read with the framework's own API."""
    np = need("numpy")
    mod = type(x).__module__
    if isinstance(x, np.ndarray):
        out = x
    elif mod.startswith("torch"):
        torch = need("torch")
        t = x.detach().resolve_conj().resolve_neg()
        out = t.to(torch.complex128 if t.is_complex() else torch.float64).numpy()
    elif mod.startswith(("jax", "jaxlib")):
        jnp = need("jax").numpy
        out = np.asarray(x.astype(jnp.complex64 if jnp.iscomplexobj(x) else jnp.float32))
    elif mod.startswith("tensorflow"):
        tf = need("tensorflow")
        out = tf.cast(x, tf.complex64 if x.dtype.is_complex else tf.float32).numpy()
    else:  # a plugin's framework
        out = adapters.to_numpy(x)
    kind = "complex128" if np.iscomplexobj(out) else "float64"
    return np.asarray(out).astype(kind)


def dtype_name(x: Any) -> str:
    """Canonical dtype name of ``x`` in any framework."""
    return adapters.dtype_name(x)


def framework_of(x: Any) -> str:
    np = need("numpy")
    if isinstance(x, np.ndarray):
        return "numpy"
    mod = type(x).__module__
    for prefix, fw in (("torch", "torch"), ("jax", "jax"), ("tensorflow", "tensorflow")):
        if mod.startswith(prefix):
            return fw
    spec = default_registry().ready().detect(x)  # a plugin's framework
    assert spec is not None, f"{type(x)} is no framework's array"
    return spec.name


def sparse_inputs() -> dict[str, Any]:
    torch = need("torch")
    dense = torch.tensor([[0.0, 1.5], [-2.0, 0.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {"coo": dense.to_sparse(), "csr": dense.to_sparse_csr()}


def quantized_input() -> Any:
    torch = need("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.quantize_per_tensor(torch.tensor([1.0, 2.0]), 0.1, 0, torch.qint8)


# -- torch sparse -------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["coo", "csr"])
# Into dense-only frameworks (JAX and TensorFlow have sparse arrays: tests/test_sparse.py).
@pytest.mark.parametrize("dst", [f for f in BUILTIN if f not in ("torch", "jax", "tensorflow")])
def test_sparse_to_other_frameworks_raises_with_advice(kind: str, dst: str) -> None:
    need(dst)
    x = sparse_inputs()[kind]
    with isolated_registry(builtins=True):  # a cold cache: the slow path
        with pytest.raises(NoRouteError) as info:
            to(x, dst)
        assert "to_dense" in str(info.value)
        with pytest.raises(NoRouteError, match="to_dense"):
            explain(x, dst)


@pytest.mark.parametrize("kind", ["coo", "csr"])
def test_sparse_to_torch_is_returned_as_is(kind: str) -> None:
    x = sparse_inputs()[kind]
    assert to(x, "torch") is x
    assert explain(x, "torch").steps == ()


@pytest.mark.parametrize("kind", ["coo", "csr"])
def test_sparse_after_a_dense_tensor_warmed_the_cache(kind: str, np: Any) -> None:
    """The warm path (keyed on torch.Tensor) must not trip over a sparse tensor."""
    torch = need("torch")
    x = sparse_inputs()[kind]
    with isolated_registry(builtins=True):
        to(torch.ones(3), "numpy")
        to(torch.ones(3), "numpy")
        with pytest.raises(InteropError, match="to_dense"):
            to(x, "numpy")


# -- torch quantized ----------------------------------------------------------------------


@pytest.mark.parametrize("dst", OTHERS_THAN_TORCH)
def test_quantized_raises_with_dequantize_advice(dst: str) -> None:
    need(dst)
    need_dtype(dst, "int8")  # else the dtype is the first refusal named
    q = quantized_input()
    with pytest.raises(InteropError) as info:
        to(q, dst)
    assert "dequantize" in str(info.value), str(info.value)


def test_quantized_to_torch_is_returned_as_is() -> None:
    q = quantized_input()
    assert to(q, "torch") is q


# -- torch conj / neg views ---------------------------------------------------------------


@pytest.mark.parametrize("dst", OTHERS_THAN_TORCH)
def test_conj_view_converts_with_conjugated_values(dst: str) -> None:
    np = need("numpy")
    torch = need("torch")
    need(dst)
    need_dtype(dst, "complex64")
    base = torch.tensor([1 + 2j, 3 - 4j, -0.5 + 0j], dtype=torch.complex64)
    x = base.conj()
    assert x.is_conj()
    y = to(x, dst)
    assert framework_of(y) == dst
    assert dtype_name(y) == "complex64"
    np.testing.assert_array_equal(values_of(y), np.array([1 - 2j, 3 + 4j, -0.5 - 0j]))
    route = explain(x, dst)
    assert route.copies == 1
    assert "resolve_conj" in str(route)
    with pytest.raises(CopyRequiredError, match="conjugate"):
        to(x, dst, copy=False)
    assert x.is_conj() and base[0] == 1 + 2j  # the source is untouched


@pytest.mark.parametrize("dst", OTHERS_THAN_TORCH)
def test_negative_bit_view_converts_with_negated_values(dst: str) -> None:
    np = need("numpy")
    torch = need("torch")
    need(dst)
    need_dtype(dst, "float32")
    x = torch.tensor([1 + 2j, 3 - 4j], dtype=torch.complex64).conj().imag
    assert x.is_neg()
    y = to(x, dst)
    assert dtype_name(y) == "float32"
    np.testing.assert_array_equal(values_of(y), np.array([-2.0, 4.0]))
    if dst in BUILTIN:  # a route that copies anyway may resolve it in that copy
        assert "resolve_neg" in str(explain(x, dst))


@pytest.mark.parametrize("dst", OTHERS_THAN_TORCH)
def test_plain_and_bit_views_interleaved_keep_their_own_routes(dst: str) -> None:
    """The warm key tells plain views from conj/neg views: neither borrows the other's plan."""
    np = need("numpy")
    torch = need("torch")
    need(dst)
    need_dtype(dst, "complex64")
    base = torch.tensor([1 + 2j, 3 - 4j], dtype=torch.complex64)
    for _ in range(3):
        plain, conj = base[:], base.conj()  # both views of the same dtype and layout
        y = to(plain, dst)
        assert explain(plain, dst).zero_copy and ptr(y) == plain.data_ptr()
        np.testing.assert_array_equal(values_of(to(conj, dst)), np.array([1 - 2j, 3 + 4j]))
        real, neg = base.real, base.conj().imag  # float32 views, the second with the neg bit
        np.testing.assert_array_equal(values_of(to(real, dst)), np.array([1.0, 3.0]))
        np.testing.assert_array_equal(values_of(to(neg, dst)), np.array([-2.0, 4.0]))


def test_conj_view_to_torch_copy_true_resolves(np: Any) -> None:
    torch = need("torch")
    x = torch.tensor([1 + 2j], dtype=torch.complex64).conj()
    y = to(x, "torch", copy=True)
    assert y.data_ptr() != x.data_ptr()
    assert complex(y[0]) == 1 - 2j


# -- requires_grad ------------------------------------------------------------------------


@pytest.mark.parametrize("dst", OTHERS_THAN_TORCH)
def test_requires_grad_converts_detached_with_values(dst: str) -> None:
    np = need("numpy")
    torch = need("torch")
    need(dst)
    need_dtype(dst, "float32")
    leaf = torch.arange(6.0, requires_grad=True)
    x = leaf * 2  # a non-leaf with a grad_fn
    y = to(x, dst)
    assert framework_of(y) == dst
    np.testing.assert_array_equal(values_of(y), np.arange(6.0) * 2)
    route = explain(x, dst)
    assert route.zero_copy or dst not in BUILTIN, str(route)  # the built-ins share it
    assert any("detached" in n for n in route.notes)
    back = to(y, "torch")
    assert not back.requires_grad and back.grad_fn is None
    assert x.requires_grad and x.grad_fn is not None  # the source keeps its graph
    x.sum().backward()  # and autograd still works on it
    np.testing.assert_array_equal(leaf.grad.numpy(), np.full(6, 2.0))


def test_requires_grad_to_torch_copy_true_keeps_autograd(np: Any) -> None:
    torch = need("torch")
    x = torch.arange(3.0, requires_grad=True)
    y = to(x, "torch", copy=True)
    assert y.data_ptr() != x.data_ptr()
    assert y.requires_grad
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones(3))


# -- float8 -------------------------------------------------------------------------------

F8_VALUES = [1.0, 2.0, -0.5, 0.0, 0.25, -3.0]
F8 = ("float8_e4m3fn", "float8_e5m2")
#: The frameworks that hold float8 (numpy through ml_dtypes, torch, JAX), and the rest.
WITH_F8, WITHOUT_F8 = holding(*F8), holding(*F8, held=False)
F8_PAIRS = [(s, d) for s in WITH_F8 for d in WITH_F8]


@pytest.mark.parametrize("dtype", F8)
@pytest.mark.parametrize(("src", "dst"), F8_PAIRS)
def test_float8_crosses_the_frameworks_that_hold_it(src: str, dst: str, dtype: str) -> None:
    np = need("numpy")
    need(src)
    need(dst)
    values = np.array(F8_VALUES, dtype=numpy_dtype(dtype))
    x = build(src, values)
    assert dtype_name(x) == dtype
    y = to(x, dst)
    assert framework_of(y) == dst
    assert dtype_name(y) == dtype
    np.testing.assert_array_equal(values_of(y), np.array(F8_VALUES))


@pytest.mark.parametrize("dtype", F8)
@pytest.mark.parametrize("src", WITH_F8)
@pytest.mark.parametrize("dst", WITHOUT_F8)
def test_float8_to_a_framework_without_it_raises_naming_the_dtype(
    dst: str, src: str, dtype: str
) -> None:
    np = need("numpy")
    need(dst)
    need(src)
    x = build(src, np.array(F8_VALUES, dtype=numpy_dtype(dtype)))
    with pytest.raises(NoRouteError, match=dtype):
        to(x, dst)


# -- 0-d and empty arrays, every pair -----------------------------------------------------

SMALL_DTYPES = ["bfloat16", "float16", "float32", "int8", "bool", "complex64"]
SHAPES = {"0-d": (), "empty": (0,), "empty-2d": (2, 0)}


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("dtype", SMALL_DTYPES)
@pytest.mark.parametrize(("src", "dst"), ALL_PAIRS)
def test_zero_d_and_empty_every_pair(src: str, dst: str, dtype: str, shape: str) -> None:
    np = need("numpy")
    need(src)
    need(dst)
    need_dtype(src, dtype)
    need_dtype(dst, dtype)
    if shape == "0-d" and {src, dst} & adapters.NO_0D:
        pytest.skip("an Arrow array has a length: no 0-d one (tests/test_arrow_target.py)")
    dims = SHAPES[shape]
    values = np.full(dims, -1.5 if dtype != "int8" else -3).astype(numpy_dtype(dtype))
    if dtype == "bool":
        values = np.full(dims, True)
    x = build(src, values)
    y = to(x, dst)
    assert framework_of(y) == dst
    assert dtype_name(y) == dtype
    assert adapters.shape_of(y) == dims
    np.testing.assert_array_equal(values_of(y), values_of(values))


# -- numpy-only dtypes --------------------------------------------------------------------


def numpy_only_arrays() -> dict[str, tuple[Any, str]]:
    """Arrays no other framework can hold, with a word the error message must contain."""
    np = need("numpy")
    return {
        "structured": (np.zeros(3, dtype=[("a", "i4"), ("b", "f8")]), "void"),
        "object": (np.array([1, "x", None], dtype=object), "object"),
        "unicode": (np.array(["ab", "c"]), "str"),
        "bytes": (np.array([b"ab", b"c"]), "bytes"),
        "datetime": (np.array(["2020-01-01"], dtype="datetime64[D]"), "datetime64"),
        "big-endian": (np.arange(3, dtype=">f4"), "byte order"),
    }


@pytest.mark.parametrize("kind", ["structured", "object", "unicode", "bytes", "datetime",
                                  "big-endian"])  # fmt: skip
@pytest.mark.parametrize("dst", others("numpy"))
def test_numpy_only_dtypes_raise_naming_the_dtype(kind: str, dst: str) -> None:
    need(dst)
    x, word = numpy_only_arrays()[kind]
    with pytest.raises(NoRouteError) as info:
        to(x, dst)
    assert word in str(info.value)
    assert "Cast" in str(info.value)


@pytest.mark.parametrize("kind", ["structured", "object", "unicode", "bytes", "datetime",
                                  "big-endian"])  # fmt: skip
def test_numpy_only_dtypes_to_numpy_are_returned_as_is(kind: str) -> None:
    x, _ = numpy_only_arrays()[kind]
    assert to(x, "numpy") is x
    assert explain(x, "numpy").steps == ()


@pytest.mark.parametrize("dst", FRAMEWORKS)
def test_big_endian_array_is_refused_by_name_and_cast_by_dtype(dst: str, np: Any) -> None:
    """A real big-endian array: to() names its byte order and refuses it (no framework but
    numpy holds one, and numpy returns it as it is); dtype= casts it to native order, the
    values kept."""
    need(dst)
    dtype = "int32" if adapters.holds(dst, "int32") else "float32"
    need_dtype(dst, dtype)
    be = np.arange(-2, 3, dtype=np.dtype(dtype).newbyteorder(">"))
    assert not be.dtype.isnative and be.tolist() == [-2, -1, 0, 1, 2]
    if dst == "numpy":
        assert to(be, dst) is be
    else:
        with pytest.raises(NoRouteError) as info:
            to(be, dst)
        assert f"{dtype} (non-native byte order)" in str(info.value)
        assert "Cast" in str(info.value)
    route = explain(be, dst, dtype=dtype)
    assert f"cast {dtype} (non-native byte order) -> {dtype}" in str(route), str(route)
    y = to(be, dst, dtype=dtype)
    assert framework_of(y) == dst and dtype_name(y) == dtype
    np.testing.assert_array_equal(values_of(y), [-2.0, -1.0, 0.0, 1.0, 2.0])
    native = adapters.to_numpy(y)
    assert native.dtype == np.dtype(dtype) and native.dtype.isnative
    if dst == "numpy":
        assert y.dtype.isnative and not np.shares_memory(y, be)


# -- masked arrays ------------------------------------------------------------------------


@pytest.mark.parametrize("dst", others("numpy"))
def test_masked_array_raises_about_the_mask(dst: str) -> None:
    np = need("numpy")
    need(dst)
    m = np.ma.masked_array(np.array([1.0, 2.0, 3.0], dtype=np.float32), mask=[0, 1, 0])
    with pytest.raises(NoRouteError, match="mask"):
        to(m, dst)
    with pytest.raises(NoRouteError, match="mask"):
        to(m, dst, copy=True)


def test_masked_array_to_numpy_keeps_mask(np: Any) -> None:
    m = np.ma.masked_array(np.array([1.0, 2.0, 3.0], dtype=np.float32), mask=[0, 1, 0])
    out = to(m, "numpy")
    assert out is m
    assert list(np.ma.getmaskarray(out)) == [False, True, False]


# -- Python scalars and lists -------------------------------------------------------------


@pytest.mark.parametrize(
    "obj",
    [3, 1.5, 2 + 1j, True, "text", b"bytes", None],
    ids=["int", "float", "complex", "bool", "str", "bytes", "None"],
)
def test_python_values_at_top_level_raise_not_an_array(obj: Any, np: Any) -> None:
    with pytest.raises(NotAnArrayError) as info:
        to(obj, "numpy")
    assert isinstance(info.value, TypeError)
    assert "asarray" in str(info.value)  # says how to wrap it
    with pytest.raises(NotAnArrayError):
        explain(obj, "numpy")


@pytest.mark.parametrize(
    "obj", [[1, 2, 3], [[1.0, 2.0], [3.0, 4.0]], (1, 2), {"a": [1.0]}, []],
    ids=["list", "nested-list", "tuple", "dict", "empty"],
)  # fmt: skip
def test_containers_without_any_array_raise_not_an_array(obj: Any, np: Any, torch: Any) -> None:
    """A call that converts nothing at all raises, saying what it found and what to do."""
    with pytest.raises(NotAnArrayError) as info:
        to(obj, "torch")
    msg = str(info.value)
    assert f"builtins.{type(obj).__name__} with no array anywhere" in msg
    assert "torch.asarray(...)" in msg  # how to build a tensor from Python numbers
    with pytest.raises(NotAnArrayError):
        explain(obj, "torch")


def test_container_with_one_array_keeps_its_plain_leaves(np: Any, torch: Any) -> None:
    a = aligned_numpy(np.arange(3, dtype=np.float32))
    out = to([1.5, a, "x"], "torch")
    assert out[0] == 1.5 and out[2] == "x" and type(out) is list
    assert isinstance(out[1], torch.Tensor) and out[1].data_ptr() == a.ctypes.data


@pytest.mark.parametrize(
    "name", ["float32", "float64", "int8", "uint16", "complex64", "bool"]
)  # fmt: skip
@pytest.mark.parametrize("dst", others("jax"))  # JAX: below (it narrows float64)
def test_numpy_scalar_converts_as_0d_array(name: str, dst: str, np: Any) -> None:
    need(dst)
    need_dtype(dst, name)
    if dst in adapters.NO_0D:
        pytest.skip(f"{dst} holds no 0-d array")
    value = np.dtype(name).type(1)
    out = to(value, dst)
    back = to(out, "numpy")
    assert back.shape == () and back.dtype == np.dtype(name) and back[()] == value
    assert explain(value, dst).steps[0].source == "numpy.generic@cpu"


def test_numpy_scalar_into_jax(np: Any, jax: Any) -> None:
    out = to(np.float32(1.5), "jax")
    assert isinstance(out, jax.Array) and out.shape == () and float(out) == 1.5
    assert out.dtype == np.float32


def test_numpy_string_scalars_are_not_arrays(np: Any) -> None:
    with pytest.raises(NotAnArrayError):
        to(np.str_("text"), "numpy")


# -- traced and symbolic values -----------------------------------------------------------


@pytest.mark.parametrize("dst", others("jax"))
def test_jax_tracer_inside_jit_raises_interop_error(dst: str) -> None:
    jax = need("jax")
    need(dst)
    caught: list[BaseException] = []

    @jax.jit
    def f(x: Any) -> Any:
        try:
            to(x * 2, dst)
        except Exception as exc:
            caught.append(exc)
        return x

    out = f(jax.numpy.ones(3))
    assert float(out.sum()) == 3.0
    assert len(caught) == 1
    err = caught[0]
    assert isinstance(err, InteropError), repr(err)
    assert "jit" in str(err), str(err)  # tells the user to convert outside the trace


def test_jax_tracer_to_jax_is_returned_as_is() -> None:
    jax = need("jax")
    seen: list[Any] = []

    @jax.jit
    def f(x: Any) -> Any:
        y = x * 2
        try:
            seen.append(to(y, "jax") is y)
        except Exception as exc:
            seen.append(exc)
        return y

    f(jax.numpy.ones(2))
    assert seen == [True]


@pytest.mark.parametrize("transform", ["grad", "vmap"])
def test_jax_tracer_under_grad_and_vmap_raises_interop_error(transform: str, np: Any) -> None:
    jax = need("jax")
    caught: list[BaseException] = []

    def f(x: Any) -> Any:
        try:
            to(x, "numpy")
        except Exception as exc:
            caught.append(exc)
        return x.sum()

    if transform == "grad":
        jax.grad(f)(jax.numpy.ones(3))
    else:
        jax.vmap(f)(jax.numpy.ones((2, 3)))
    assert caught and all(isinstance(e, InteropError) for e in caught), caught


@pytest.mark.parametrize("dst", others("tensorflow"))
def test_tf_symbolic_tensor_inside_tf_function_raises(dst: str) -> None:
    tf = need("tensorflow")
    need(dst)
    caught: list[BaseException] = []

    @tf.function
    def f(x: Any) -> Any:
        try:
            to(x, dst)
        except Exception as exc:
            caught.append(exc)
        return x + 1

    out = f(tf.ones(3))
    assert out.numpy().tolist() == [2.0, 2.0, 2.0]
    assert len(caught) == 1
    err = caught[0]
    assert isinstance(err, NoRouteError), repr(err)
    assert "tf.function" in str(err)


def test_tf_symbolic_tensor_to_tensorflow_is_returned_as_is() -> None:
    tf = need("tensorflow")
    seen: list[bool] = []

    @tf.function
    def f(x: Any) -> Any:
        seen.append(to(x, "tensorflow") is x)
        return x

    f(tf.ones(2))
    assert seen == [True]


# -- tf.Variable: its current value, a snapshot ---------------------------------------------


@pytest.mark.parametrize("dst", FRAMEWORKS)
def test_tf_variable_converts_as_a_snapshot_of_its_value(dst: str, tf: Any) -> None:
    np = need("numpy")
    need(dst)
    need_dtype(dst, "float32")
    v = tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3))
    route = explain(v, dst)
    assert route.steps[0].source == "tensorflow.Variable@cpu"
    assert any("snapshot" in n for n in route.notes)
    y = to(v, dst)
    assert to(y, "numpy").tolist() == [[0, 1, 2], [3, 4, 5]]
    if route.zero_copy:  # the variable's buffer, read through TensorFlow's own DLPack export
        assert ptr(y) == ptr(v.read_value())
    v.assign_add(tf.ones((2, 3)))
    assert to(y, "numpy").tolist() == [[0, 1, 2], [3, 4, 5]]  # unchanged: a snapshot
    assert to(v, dst) is not y and to(to(v, dst), "numpy")[0, 0] == 1.0
