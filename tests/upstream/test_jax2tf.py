"""JAX's jax2tf tests, re-expressed through ``to(f, "tensorflow", source="jax")``.

Carries jax-ml/jax ``jax/experimental/jax2tf/tests/jax2tf_test.py`` at jax-v0.10.2 (the
installed JAX): ``Jax2TfTest``, ``Jax2tfWithCustomPRNGTest`` and ``Jax2TfVersioningTest``,
the cases on the public API (converting functions, pytrees, dtypes, gradients,
custom_jvp/custom_vjp, variables, SavedModel, platforms, errors). Left out: the cases about
TensorFlow's op naming inside nested name scopes (test_name_scope_cond/while_loop), TPU-only
ones (test_tuple_args), test_cross_platform (jax.export alone) and test_jvp_through_loop
(call_tf alone).

How upstream's checks were re-expressed: ``jax2tf.convert(f, with_gradient=...,
native_serialization_platforms=...)`` is ``to(f, "tensorflow", source="jax",
with_gradient=..., platforms=...)``. Its result is already a ``tf.function(autograph=False)``,
so upstream's "eager" and "graph" modes are one here; ConvertAndCompare runs it, and it
inside ``tf.function(jit_compile=True)`` (upstream's "compiled" mode), against JAX.
``with_function=True`` cases wrap the result in another ``tf.function`` as upstream does.
Errors raised while jax2tf traces arrive as the project's ``ConversionError`` chaining
jax2tf's (those cases say DIFFERS); errors TensorFlow raises running the module are its own.
"""

from __future__ import annotations

import collections
import re
import warnings
from collections.abc import Callable
from typing import Any

import pytest
from conftest import need

np = need("numpy")
jax = need("jax")
tf = need("tensorflow")

from jax import lax  # noqa: E402
from jax.ad_checkpoint import checkpoint_name  # noqa: E402

from interop_core import ConversionError, NotAnArrayError, OptionError, to  # noqa: E402

jnp = jax.numpy
f32 = np.float32


def convert(fn: Callable[..., Any], **options: Any) -> Any:
    """jax2tf.convert(fn, **options) through the public call."""
    return to(fn, "tensorflow", source="jax", **options)


def close(got: Any, want: Any, tol: float = 1e-6) -> None:
    """TensorFlow's results ``got`` equal ``want``: same structure, tf.Tensor leaves, same
    values; and where ``want`` holds arrays (JAX's results), the same dtypes (JAX's float0
    is TensorFlow's bool). Plain Python numbers in ``want`` give values only."""
    if isinstance(got, tf.Tensor):  # one tensor: ``want`` is one value (a list too)
        got_leaves, want_leaves = [got], [want]
    else:
        got_leaves, want_leaves = tf.nest.flatten(got), jax.tree_util.tree_leaves(want)
    assert len(got_leaves) == len(want_leaves), (got, want)
    for g, w in zip(got_leaves, want_leaves, strict=True):
        assert isinstance(g, tf.Tensor), type(g)
        typed = isinstance(w, (jax.Array, np.ndarray, np.generic))
        w = np.asarray(w)
        if w.dtype == jax.dtypes.float0:
            w = np.zeros(w.shape, np.bool_)
        if typed:
            assert np.dtype(g.dtype.as_numpy_dtype) == w.dtype, (g.dtype, w.dtype)
        np.testing.assert_allclose(g.numpy(), w, rtol=tol, atol=tol)


def convert_and_compare(fn: Callable[..., Any], *args: Any, **options: Any) -> Any:
    """tf_test_util's ConvertAndCompare: the converted function, and it compiled by
    TensorFlow (jit_compile=True), against JAX's own result. Returns TensorFlow's."""
    want = fn(*args)
    g = convert(fn, **options)
    got = g(*args)
    close(got, want)
    close(tf.function(g, autograph=False, jit_compile=True)(*args), want)
    return got


def transform(fn: Callable[..., Any], arg: Any, how: str | None) -> tuple[Any, tuple[Any, ...]]:
    """tf_test_util's TransformConvertAndCompare: ``fn`` under a JAX transformation, and
    its arguments."""
    batch = np.stack([arg] * 4)
    if how is None:
        return fn, (arg,)
    if how == "jit":
        return jax.jit(fn), (arg,)
    if how == "jvp":
        return (lambda x, xt: jax.jvp(fn, (x,), (xt,))), (arg, np.full_like(arg, 0.1))
    if how == "grad":
        return jax.grad(fn), (arg,)
    if how == "vmap":
        return jax.vmap(fn), (batch,)
    if how == "jvp_vmap":
        return (lambda x, xt: jax.jvp(jax.vmap(fn), (x,), (xt,))), (batch, np.full_like(batch, 0.1))
    assert how == "grad_vmap", how
    return jax.grad(lambda x: jnp.sum(jax.vmap(fn)(x))), (batch,)


def tape_gradient(g: Callable[..., Any], *xs: Any, **kw: Any) -> tuple[Any, Any]:
    with tf.GradientTape(persistent=True) as tape:
        res = g(*xs)
    return res, tape.gradient(res, list(xs), **kw)


# --------------------------------------------------------------------------- values


def test_empty() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_empty"""
    convert_and_compare(lambda x, y: x, 0.7, 1)


def test_sin() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_sin"""
    g = convert(jnp.sin)
    x = f32(0.5)
    close(g(x), np.sin(x))
    close(tf.function(g, autograph=False, jit_compile=True)(x), np.sin(x))
    device = (tf.config.list_logical_devices("GPU") + tf.config.list_logical_devices())[0]

    @tf.function(autograph=False, jit_compile=False)
    def placed(x: Any) -> Any:
        with tf.device(device.name):
            return g(x)

    with tf.device(device.name):
        close(placed(x), np.sin(x))


@pytest.mark.parametrize(
    ("fn", "arg"),
    [
        pytest.param(lambda x: jnp.sin(jnp.cos(x)), 0.7, id="Jax2TfTest::test_basics"),
        pytest.param(jax.jit(lambda x: jnp.sin(jnp.cos(x))), 0.7, id="Jax2TfTest::test_jit"),
        pytest.param(
            jax.jit(lambda x: jnp.sin(jax.jit(jnp.cos)(x))), 0.7, id="Jax2TfTest::test_nested_jit"
        ),
        pytest.param(
            jax.jit(lambda xy: xy[0] + xy[1]), (0.7, 0.8), id="Jax2TfTest::test_nested_jit_pytree"
        ),
        pytest.param(jax.jit(lambda x: jnp.sin(jnp.cos(x))), 0.7, id="Jax2TfTest::test_function"),
        pytest.param(
            jnp.sin, jnp.zeros((2, 3), jnp.float32), id="Jax2TfTest::test_device_array_arg"
        ),
        pytest.param(jnp.sin, 0.7, id="Jax2TfVersioningTest::test_simple"),
    ],
)
def test_convert_and_compare(fn: Callable[..., Any], arg: Any) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::<id>
    (the cases that are one ConvertAndCompare; a JAX array as the argument in
    test_device_array_arg)."""
    convert_and_compare(fn, arg)


def test_input_output_naming() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_input_output_naming
    DIFFERS: the jax2tf_arg_i / jax2tf_out_i ops are in the graph of the tf.function that
    to() returns (the caller's graph holds a call op); upstream's raw converted function
    puts them in the caller's graph."""  # noqa: E501
    g = convert(lambda xs, y: [jnp.add(x, y) for x in xs])

    @tf.function(autograph=False)
    def caller(xs: Any, y: Any) -> Any:
        xs = tf.nest.map_structure(tf.convert_to_tensor, xs)
        with tf.GradientTape() as tape:
            tf.nest.map_structure(tape.watch, xs)
            out = g(xs, y)
            tape.gradient(out, xs)
            return out

    close(caller([1.0, 2.0, 3.0], 4.0), [5.0, 6.0, 7.0])
    graph = g.get_concrete_function([1.0, 2.0, 3.0], 4.0).graph
    names = {op.name for op in graph.get_operations()}
    want = {f"jax2tf_arg_{i}" for i in range(4)} | {"jax2tf_out", "jax2tf_out_1", "jax2tf_out_2"}
    assert want <= names
    assert not {"jax2tf_arg_4", "jax2tf_out_3"} & names


def test_pytrees() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_pytrees"""  # noqa: E501

    def f(x: Any) -> Any:
        a, d = x
        return a * 2.0, {k: v * 3.0 for k, v in d.items()}

    got = convert_and_compare(f, (0.7, {"a": 0.8, "b": 0.9}))
    assert isinstance(got, tuple) and sorted(got[1]) == ["a", "b"]


def test_variable_input() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_variable_input"""  # noqa: E501

    def f(x: Any) -> Any:
        return jnp.sin(jnp.cos(x))

    out = convert(f)(tf.Variable(0.7, dtype=tf.float32))
    assert isinstance(out, tf.Tensor)
    close(out, f(0.7))


def test_nested_jit_is_compiled() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_nested_jit_is_compiled
    (no node of the converted function's graph is marked _XlaMustCompile)."""  # noqa: E501

    def must_compile(fn: Callable[..., Any]) -> bool:
        graph = convert(fn).get_concrete_function(tf.constant(0.7)).graph
        for op in graph.get_operations():
            try:
                op.get_attr("_XlaMustCompile")
            except ValueError:
                continue
            return True
        return False

    assert not must_compile(lambda x: x)
    assert not must_compile(lambda x: jax.jit(jnp.sin)(x))


def test_converts_jax_arrays() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_converts_jax_arrays
    (JAX arrays, pmap-sharded ones too, as the converted function's arguments)."""  # noqa: E501
    identity = convert(lambda x: x)
    assert identity(jnp.zeros([])).numpy() == 0.0
    assert identity(jnp.ones([])).numpy() == 1.0
    assert convert(lambda x: x + x)(jnp.ones([])).numpy() == 2.0
    n = jax.local_device_count()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        sharded = jax.pmap(lambda x: x)(jnp.ones([n]))
    close(identity(sharded), np.ones([n], f32))


# --------------------------------------------------------------------------- dtypes


def test_bfloat16_passed_by_tf() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_bfloat16_passed_by_tf"""  # noqa: E501
    sig = [tf.TensorSpec([512, 512], tf.bfloat16)] * 2
    g = convert(lambda a, b: a + b, input_signature=sig)
    concrete = g.get_concrete_function()
    assert concrete.output_dtypes == tf.bfloat16
    x = tf.cast(tf.fill([512, 512], 1.5), tf.bfloat16)
    assert float(g(x, x)[0, 0]) == 3.0


def test_bfloat16_returned_by_jax() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_bfloat16_returned_by_jax"""  # noqa: E501
    out = convert(lambda a, b: (a + b).astype(jnp.bfloat16))(1.0, 2.0)
    assert out.dtype == tf.bfloat16 and float(out) == 3.0


def test_bfloat16_tf_grad() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_bfloat16_tf_grad"""  # noqa: E501
    g = convert(lambda a, b: a + b)

    def value_and_grad(a: Any, b: Any) -> Any:
        with tf.GradientTape() as tape:
            tape.watch(a)
            res = g(a, b)
        return res, tape.gradient(res, a)

    sig = [tf.TensorSpec([512, 512], tf.bfloat16)] * 2
    f_tf = tf.function(value_and_grad, autograph=False, input_signature=sig)
    assert f_tf.get_concrete_function() is not None
    a = tf.cast(tf.fill([512, 512], 2.0), tf.bfloat16)
    res, grad = f_tf(a, a)
    assert grad.dtype == tf.bfloat16
    assert float(res[1, 1]) == 4.0 and float(grad[1, 1]) == 1.0


def test_bfloat16_constant() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_bfloat16_constant"""  # noqa: E501

    def scalar(x: Any) -> Any:
        return x.astype(jnp.bfloat16) * 2.0

    def array(x: Any) -> Any:
        return x.astype(jnp.bfloat16) * np.array([1.5, 2.5, 3.5], jnp.bfloat16)

    out = convert(scalar)(1.375)
    assert out.dtype == tf.bfloat16 and float(out) == 2.75
    out = convert(array)(np.array([3, 4, 5]))
    np.testing.assert_array_equal(out.numpy().astype(f32), [4.5, 10, 17.5])


def test_weak_types() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_weak_types
    (the weakly typed 2. does not promote bfloat16)."""  # noqa: E501
    mul = jax.jit(jnp.multiply)
    out = convert(lambda x: mul(x, 2.0))(tf.constant(1.375, tf.bfloat16))
    assert out.dtype == tf.bfloat16 and float(out) == 2.75


@pytest.mark.parametrize("dtype", [np.int64, np.float64], ids=["int64", "float64"])
@pytest.mark.parametrize("with_function", [False, True], ids=["direct", "tf.function"])
def test_converts_64bit(dtype: Any, with_function: bool) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_converts_64bit
    (in x64 mode, which upstream's session enables and jax.enable_x64 does here)."""  # noqa: E501
    big = np.full((5,), 2**33, dtype=dtype)
    with jax.enable_x64(True):
        g = convert(jnp.sin)
        if with_function:
            g = tf.function(g, autograph=False)
        want = jnp.sin(big)
        for arg in (big, tf.Variable(big), tf.constant(big)):
            close(g(arg), want)


def test_64bit_behavior_not_enable_x64_readme() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_64bit_behavior_not_enable_x64_readme"""  # noqa: E501
    assert not jax.config.jax_enable_x64
    assert tf.math.sin(3.14).dtype == tf.float32
    assert tf.math.sin(np.float64(3.14)).dtype == tf.float64
    assert jnp.sin(np.float64(3.14)).dtype == jnp.float32  # JAX forces 32 bits
    g = convert(jnp.sin)  # as JAX does
    assert g(3.14).dtype == tf.float32
    assert g(np.float64(3.14)).dtype == tf.float32
    assert g(tf.Variable(3.14, dtype=tf.float64)).dtype == tf.float32


# --------------------------------------------------------------------------- gradients


@pytest.mark.parametrize("with_function", [False, True], ids=["direct", "tf.function"])
def test_gradients_disabled(with_function: bool) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_gradients_disabled"""  # noqa: E501
    g = convert(jnp.tan, with_gradient=False)
    if with_function:
        g = tf.function(g, autograph=False)
    x = tf.ones([])
    close(g(x), np.tan(np.float32(1.0)))
    message = "Gradient explicitly disabled.*The jax2tf-converted function does not support"
    with pytest.raises(LookupError, match=message), tf.GradientTape() as tape:
        tape.watch(x)
        y = g(x)
        tape.gradient(y, x)


@pytest.mark.parametrize("with_function", [False, True], ids=["direct", "tf.function"])
def test_gradients(with_function: bool) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_gradients"""  # noqa: E501
    g = convert(lambda x, y: (x * x, x * y), with_gradient=True)
    if with_function:
        g = tf.function(g, autograph=False)
    x, y = tf.Variable(4.0), tf.Variable(5.0)
    with tf.GradientTape(persistent=True) as tape:
        u, v = g(x, y)
    close(u, 16.0)
    close(tape.gradient(u, x), 8.0)
    close(tape.gradient(u, y), 0.0)
    close(tape.gradient(v, x), 5.0)
    close(tape.gradient(v, y), 4.0)


def test_higher_order_gradients() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_higher_order_gradients"""  # noqa: E501
    g = convert(lambda x: x**3)
    x = tf.Variable(4.0, dtype=tf.float32)
    with tf.GradientTape() as t2:
        with tf.GradientTape() as t1:
            y = g(x)
        dy_dx = t1.gradient(y, x)
    close(dy_dx, 48.0)
    close(t2.gradient(dy_dx, x), 24.0)


@pytest.mark.parametrize("with_function", [False, True], ids=["direct", "tf.function"])
def test_gradients_pytree(with_function: bool) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_gradients_pytree"""  # noqa: E501

    def f(xy: Any) -> Any:
        x, y = xy
        return {"one": x * x, "two": x * y}

    g = convert(f, with_gradient=True)
    if with_function:
        g = tf.function(g, autograph=False)
    x, y = tf.Variable(4.0), tf.Variable(5.0)
    with tf.GradientTape(persistent=True) as tape:
        uv = g((x, y))
    close(tape.gradient(uv["one"], x), 8.0)
    close(tape.gradient(uv["one"], y), 0.0)
    close(tape.gradient(uv["two"], x), 5.0)
    close(tape.gradient(uv["two"], y), 4.0)


class CustomPair:
    """A pytree node of JAX's (README, "custom pytrees")."""

    def __init__(self, a: Any, b: Any) -> None:
        self.a = a
        self.b = b


jax.tree_util.register_pytree_node(
    CustomPair, lambda p: ((p.a, p.b), None), lambda _, ab: CustomPair(*ab)
)


def test_custom_pytree_readme(tmp_path: Any) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_custom_pytree_readme"""  # noqa: E501

    def f(pair: CustomPair) -> Any:
        return f32(2.0) * pair.a + f32(3.0) * pair.b

    g = convert(f)
    x = CustomPair(f32(4.0), f32(5.0))
    want = f(x)
    close(g(x), want)  # as long as JAX can flatten the arguments and results
    close(tf.function(g, autograph=False, jit_compile=True)(x), want)

    def wrapped(a: Any, b: Any) -> Any:  # standard containers only, for the SavedModel
        return g(CustomPair(a, b))

    module = tf.Module()
    sig = [tf.TensorSpec([], tf.float32)] * 2
    module.f = tf.function(wrapped, autograph=False, input_signature=sig)
    options = tf.saved_model.SaveOptions(experimental_custom_gradients=True)
    tf.saved_model.save(module, str(tmp_path), options=options)
    restored = tf.saved_model.load(str(tmp_path))
    close(restored.f(x.a, x.b), want)

    grad = jax.grad(f)(x)
    xs = [tf.Variable(x.a), tf.Variable(x.b)]
    with tf.GradientTape() as tape:
        res = wrapped(*xs)
    got = tape.gradient(res, xs)
    close(got[0], grad.a)
    close(got[1], grad.b)


@pytest.mark.parametrize("with_function", [False, True], ids=["direct", "tf.function"])
def test_gradients_with_ordered_dict_input(with_function: bool) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_gradients_with_ordered_dict_input"""  # noqa: E501

    def f(inputs: Any) -> Any:
        return sum(jnp.sum(v) for v in inputs.values())

    g = convert(f, with_gradient=True)
    if with_function:
        g = tf.function(g, autograph=False)
    x, y = tf.Variable([4.0]), tf.Variable([4.0, 5.0])
    inputs = collections.OrderedDict([("r", x), ("d", y)])
    with tf.GradientTape(persistent=True) as tape:
        u = g(inputs)
    close(u, 13.0)
    close(tape.gradient(u, x), [1.0])
    close(tape.gradient(u, y), [1.0, 1.0])


@jax.custom_jvp
def _square_jvp(x: Any) -> Any:
    return x * x


@_square_jvp.defjvp
def _square_jvp_rule(primals: Any, tangents: Any) -> Any:
    (x,), (x_dot,) = primals, tangents
    return _square_jvp(x), 3.0 * x * x_dot  # a custom derivative: 3x, not 2x


@jax.custom_vjp
def _square_vjp(x: Any) -> Any:
    return x * x


def _square_fwd(x: Any) -> Any:
    return _square_vjp(x), 3.0 * x


def _square_bwd(residual: Any, ct: Any) -> Any:
    return (residual * ct,)


_square_vjp.defvjp(_square_fwd, _square_bwd)


@pytest.mark.parametrize("fn", [_square_jvp, _square_vjp], ids=["custom_jvp", "custom_vjp"])
@pytest.mark.parametrize("with_function", [False, True], ids=["direct", "tf.function"])
def test_gradients_with_custom_derivatives(fn: Callable[..., Any], with_function: bool) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_gradients_with_custom_jvp
    and ::Jax2TfTest::test_gradients_with_custom_vjp (tf.GradientTape gets the custom rule)."""  # noqa: E501
    assert float(fn(4.0)) == 16.0
    assert float(jax.grad(fn)(4.0)) == 12.0  # the custom rule: 3x, not 2x
    g = convert(fn, with_gradient=True)
    if with_function:
        g = tf.function(g, autograph=False)
    close(g(4.0), 16.0)
    x = tf.Variable(4.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = g(x)
    close(y, 16.0)
    close(tape.gradient(y, x), 12.0)


def test_gradient_with_float0_intermediate() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_gradient_with_float0_intermediate"""  # noqa: E501

    def f(x: Any, y: Any) -> Any:  # x an int, y a float
        return 2 * x + y

    def g(x: Any) -> Any:
        return 2.0 * f(3 * x.astype("int32"), x * 4.0)

    convert_and_compare(jax.grad(g), 2.0)


@pytest.mark.parametrize("x", [2, np.ones((3, 4), np.int32)], ids=["scalar", "(3, 4)"])
def test_gradient_with_float0_result(x: Any) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_gradient_with_float0_result
    (float0 gradients become boolean zeros of the same shape)."""  # noqa: E501

    def f(x: Any, y: Any) -> Any:
        return 2 * x + y

    def g(x: Any) -> Any:  # x: int
        return jnp.sum(2.0 * f(3 * x, 4.0 * jnp.array(x, jnp.float32)))

    grad_g = jax.grad(g, allow_int=True)
    want = grad_g(x)
    assert want.dtype == jax.dtypes.float0
    got = convert(grad_g)(x)
    assert got.dtype == tf.bool and got.shape == np.shape(want)
    assert not np.any(got.numpy())


@pytest.mark.parametrize("with_function", [False, True], ids=["direct", "tf.function"])
def test_gradients_unused_argument_readme(with_function: bool) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_gradients_unused_argument_readme
    (x1 unused: 0., not None as native TensorFlow gives; x3 an int: None)."""  # noqa: E501

    def fn(x0: Any, x1: Any, x2: Any, x3: Any) -> Any:
        return x0 * 0.0 + x2 * 2.0

    xs = [tf.Variable(x) for x in (10.0, 11.0, 12.0, 13)]
    g = convert(fn, with_gradient=True)
    if with_function:
        g = tf.function(g, autograph=False)
    _, grads = tape_gradient(g, *xs)
    close(grads[0], 0.0)
    close(grads[1], 0.0)
    close(grads[2], 2.0)
    assert grads[3] is None
    _, grads = tape_gradient(g, *xs, unconnected_gradients=tf.UnconnectedGradients.ZERO)
    close(grads[:3], [0.0, 0.0, 2.0])
    assert grads[3].dtype == tf.int32 and int(grads[3]) == 0
    _, native = tape_gradient(fn, *xs)  # native TensorFlow, for contrast
    assert native[1] is None and native[3] is None


_STATE = {
    "float_used": np.array([0.7, 0.9], f32),
    "float_passthrough": np.float16(1.0),
    "float_unused": np.array([1.1, 2.2, 3.3], f32),
    "int_used": np.int16(5),
    "int_passthrough": np.int8(7),
    "int_unused": np.array([1, 2, 3], np.uint32),
    "bool_used": np.array([True, False, False, True]),
    "bool_passthrough": np.array([True, False, False, True, False]),
    "bool_unused": np.array([[True, False], [False, True]]),
}


def _state_step(state: dict[str, Any]) -> dict[str, Any]:
    res = dict(
        state,
        float_used=2.0 * state["float_used"],
        int_used=3 * state["int_used"],
        bool_used=(state["bool_used"] == state["bool_used"]),
    )
    for k in ("float_unused", "int_unused", "bool_unused"):
        del res[k]
    return res


def _value_and_grad(g: Callable[..., Any], unconnected: Any) -> dict[str, Any]:
    xs = {k: tf.Variable(v) for k, v in _STATE.items()}
    with tf.GradientTape() as tape:
        res = g(xs)
    return tape.gradient(res, xs, unconnected_gradients=unconnected)


@pytest.mark.parametrize("with_function", [False, True], ids=["direct", "tf.function"])
def test_gradients_int_argument(with_function: bool) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_gradients_int_argument
    (jax-ml/jax#6975): floats get JAX's gradients (0. for the unused one), integers and
    booleans 0 (ZERO) or None (NONE); the converted JAX VJP gives boolean zeros for them."""  # noqa: E501
    g = convert(_state_step)
    if with_function:
        g = tf.function(g, autograph=False)
    zero = _value_and_grad(g, tf.UnconnectedGradients.ZERO)
    none = _value_and_grad(g, tf.UnconnectedGradients.NONE)
    floats = {"float_used": [2.0, 2.0], "float_passthrough": 1.0, "float_unused": [0.0] * 3}
    for k, want in floats.items():
        close(zero[k], np.asarray(want, _STATE[k].dtype))
        close(none[k], np.asarray(want, _STATE[k].dtype))
    for k in _STATE.keys() - floats.keys():
        assert zero[k].dtype.as_numpy_dtype == np.asarray(_STATE[k]).dtype
        assert not np.any(zero[k].numpy()), k
        assert none[k] is None, k

    def vjp(state: Any, cts: Any) -> Any:
        return jax.vjp(_state_step, state)[1](cts)

    cts = jax.tree_util.tree_map(np.ones_like, _state_step(_STATE))
    (got,) = convert(vjp)(_STATE, cts)
    for k, v in got.items():
        if k.startswith("float"):
            close(v, np.asarray(floats[k], _STATE[k].dtype))
        else:
            assert v.dtype == tf.bool and not np.any(v.numpy()), k


def test_readme_gradient_int() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_readme_gradient_int"""  # noqa: E501
    x = np.array(2, dtype=np.int16)

    def f(x: Any) -> Any:  # x: int16
        return x.astype(f32) * 2.0

    assert jax.grad(f, allow_int=True)(x).dtype == jax.dtypes.float0
    got = convert(jax.grad(f, allow_int=True))(x)
    assert got.dtype == tf.bool and got.shape == () and not bool(got)
    xv = tf.Variable(x)
    with tf.GradientTape(persistent=True) as tape:
        y = tf.cast(xv, tf.float32) * 2.0
    assert tape.gradient(y, xv) is None
    zero = tape.gradient(y, xv, unconnected_gradients=tf.UnconnectedGradients.ZERO)
    assert zero.dtype == tf.int16 and int(zero) == 0


# --------------------------------------------------------------------------- errors


def test_convert_argument_non_callable_error() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_convert_argument_non_callable_error
    DIFFERS: to() takes 5. as an array to convert, not a function, and refuses it with
    NotAnArrayError (a TypeError, as upstream's "Expected a callable value")."""  # noqa: E501
    with pytest.raises(NotAnArrayError, match=r"Cannot convert a builtins\.float") as err:
        convert(5.0)
    assert isinstance(err.value, TypeError)


def test_convert_argument_non_tensor_error() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_convert_argument_non_tensor_error
    DIFFERS: JAX's TypeError arrives as the project's ConversionError, its text kept."""  # noqa: E501
    with pytest.raises(ConversionError, match=r"Argument .* is not a valid JAX type"):
        convert(lambda x: x)(lambda y: y)


def test_argument_eager_tensor() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_argument_eager_tensor"""  # noqa: E501
    x = convert(jnp.sin)(1.0)
    close(convert(jnp.cos)(x), np.cos(np.sin(f32(1.0))))


def _outer_tracer(y: Any) -> Any:
    return convert(jnp.sin)(y)  # the inner converted function gets JAX tracers


def _outer_non_tracer(y: Any) -> Any:
    return y + convert(jnp.sin)(1.0)  # the inner one gets a constant, inside a JAX trace


def test_nested_convert_error() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_nested_convert_error
    DIFFERS: the inner tf.function cannot take JAX tracers: the project's ConversionError
    saying so (call the JAX function there), where jax2tf raises ValueError "convert must be
    used outside all JAX transformations"."""  # noqa: E501
    with pytest.raises(ConversionError, match="called with JAX tracers"):
        convert(_outer_tracer)(np.ones((4,), f32))


def test_nested_convert_error_non_tracer() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_nested_convert_error_non_tracer
    DIFFERS: jax2tf's ValueError arrives as the project's ConversionError, its text kept."""  # noqa: E501
    with pytest.raises(ConversionError, match="convert must be used outside all JAX"):
        convert(_outer_non_tracer)(2.0)


@pytest.mark.parametrize("how", ["jit", "jvp", "grad", "vmap"])
def test_convert_under_transform_error(how: str) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_convert_under_transform_error
    DIFFERS: as test_nested_convert_error, the project's ConversionError saying the
    TensorFlow function was called with JAX tracers."""  # noqa: E501
    fn, args = transform(lambda y: jnp.sum(_outer_tracer(y)), np.ones((4,), f32), how)
    with pytest.raises(ConversionError, match="called with JAX tracers"):
        convert(fn)(*args)


@pytest.mark.parametrize("how", ["jit", "jvp", "grad", "vmap"])
def test_convert_under_transform_error_non_tracer(how: str) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_convert_under_transform_error_non_tracer
    DIFFERS: jax2tf's ValueError arrives as the project's ConversionError, its text kept."""  # noqa: E501
    fn, args = transform(lambda y: jnp.sum(_outer_non_tracer(y)), np.ones((4,), f32), how)
    with pytest.raises(ConversionError, match="convert must be used outside all JAX"):
        convert(fn)(*args)


@pytest.mark.parametrize("how", ["jit", "grad", "vmap"])
def test_converted_function_under_jax_transform(how: str) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_convert_under_transform_error
    (the converted function itself called under a JAX transformation, not converted again).
    DIFFERS: the project's ConversionError saying what to do (call the JAX function, or
    convert back with to()), not jax2tf's ValueError."""  # noqa: E501
    fn, args = transform(lambda y: jnp.sum(_outer_tracer(y)), np.ones((4,), f32), how)
    with pytest.raises(ConversionError, match="called with JAX tracers"):
        fn(*args)


@pytest.mark.parametrize("ordered", [False, True], ids=["unordered", "ordered"])
def test_effects_error(ordered: bool) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_effects_error
    DIFFERS: jax2tf's NotImplementedError arrives as the project's ConversionError."""  # noqa: E501

    def f(x: Any) -> Any:
        jax.debug.print("{}", x, ordered=ordered)
        return jnp.sin(x)

    with pytest.raises(ConversionError, match="serialization of host_callbacks is not yet"):
        convert(f)(f32(42.0))


# ------------------------------------------------------------------ transformations


@pytest.mark.parametrize("how", [None, "jvp", "vmap", "jvp_vmap", "grad", "grad_vmap"])
def test_custom_jvp(how: str | None) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_custom_jvp"""  # noqa: E501
    fn, args = transform(_square_jvp, f32(0.7), how)
    convert_and_compare(fn, *args)


@pytest.mark.parametrize("how", [None, "vmap", "grad", "grad_vmap"])
def test_custom_vjp(how: str | None) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_custom_vjp"""  # noqa: E501
    fn, args = transform(_square_vjp, f32(0.7), how)
    convert_and_compare(fn, *args)


def _hlo(g: Callable[..., Any], *args: Any) -> str:
    """tf_test_util's TfToHlo: the HLO TensorFlow compiles for ``g``."""
    compiled = tf.function(g, autograph=False, jit_compile=True)
    return str(compiled.experimental_get_compiler_ir(*args)(stage="hlo", platform_name="CPU"))


def test_remat() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_remat
    (jax.checkpoint's rematerialization survives: an opt-barrier in the HLO)."""

    def f(x: Any) -> Any:
        return jnp.sin(jnp.sin(jnp.sin(x)))

    g = convert(jax.grad(jax.checkpoint(f)))
    x = np.array(3.0, f32)
    assert re.search("opt-barrier", _hlo(g, x))
    close(g(x), jax.grad(f)(x))


@pytest.mark.parametrize("how", [None, "grad"])
def test_remat_free_var(how: str | None) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_remat_free_var"""  # noqa: E501

    def f(x: Any) -> Any:
        y = 2 * x

        @jax.checkpoint
        def g() -> Any:
            return y

        return g()

    fn, args = transform(f, f32(3.0), how)
    convert_and_compare(fn, *args)


def test_checkpoint_name() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_checkpoint_name"""  # noqa: E501
    g = convert(lambda x: checkpoint_name(jnp.sin(x), "sin"))
    close(g(1.0), np.sin(f32(1.0)))


def test_name_scope() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_name_scope
    (a jax.named_call's name reaches the HLO's op names)."""  # noqa: E501

    @jax.named_call
    def my_test_function_jax(x: Any) -> Any:
        return x * x

    g = convert(lambda x: my_test_function_jax(jnp.sin(x)), with_gradient=False)
    assert "my_test_function_jax/mul" in _hlo(g, 2.0)


def test_convert_of_nested_independent_jit() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_convert_of_nested_independent_jit"""  # noqa: E501

    def func(x: Any) -> Any:
        return jax.jit(lambda y: x + y)(1.0)  # no data dependency on the jit's argument

    close(convert(func)(2.0), 3.0)


def test_convert_of_nested_dependent_jit() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_convert_of_nested_dependent_jit"""  # noqa: E501

    def func(x: Any) -> Any:
        return jax.jit(lambda y: x + y)(x)

    close(convert(func)(2.0), 4.0)


def _times_two(x: Any, y_unused: Any) -> Any:
    return x * f32(2.0)


def test_jit_unused() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_jit_unused"""  # noqa: E501
    x, y_unused = f32(5.0), np.arange(7, dtype=np.int32)
    close(convert(jax.jit(_times_two, keep_unused=False))(x, y_unused), 10.0)


@pytest.mark.parametrize("mode", ["eager", "graph", "compiled"])
def test_jit_unused_grad(mode: str) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_jit_unused_grad"""  # noqa: E501
    g = convert(jax.jit(_times_two, keep_unused=False))

    def grads(x: Any, y_unused: Any) -> Any:
        with tf.GradientTape() as tape:
            tape.watch(x)
            tape.watch(y_unused)
            res = g(x, y_unused)
        return (res, *tape.gradient(res, (x, y_unused)))

    if mode != "eager":
        grads = tf.function(grads, autograph=False, jit_compile=mode == "compiled")
    res, gx, gy = grads(tf.constant(f32(5.0)), tf.constant(np.arange(7, dtype=np.int32)))
    close(res, 10.0)
    close(gx, 2.0)
    assert gy is None


@pytest.mark.parametrize("with_function", [False, True], ids=["direct", "tf.function"])
def test_kwargs(with_function: bool) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_kwargs
    (jax-ml/jax#6791)."""

    def f(*, x: Any) -> Any:
        return jnp.sum(x)

    g = convert(f)
    if with_function:
        g = tf.function(g, autograph=False)
    close(g(x=np.arange(3, dtype=f32)), 3.0)


@pytest.mark.parametrize("with_function", [False, True], ids=["direct", "tf.function"])
def test_grad_kwargs(with_function: bool) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_grad_kwargs"""  # noqa: E501

    def f(*, x: Any = (1.0, 2.0)) -> Any:
        return jnp.sum(x[0]) + 2.0 * jnp.sum(x[1])

    g = convert(f)
    if with_function:
        g = tf.function(g, autograph=False)
    xv = (tf.Variable(np.zeros(3, f32)), tf.Variable(np.zeros(4, f32)))
    with tf.GradientTape() as tape:
        res = g(x=xv)
    got = tape.gradient(res, xv)
    close(got, (np.ones(3, f32), np.full(4, 2.0, f32)))


def test_randint() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_randint"""  # noqa: E501
    convert_and_compare(lambda: jax.random.randint(jax.random.PRNGKey(42), (), 0, 1))


def test_dot_algorithm() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_dot_algorithm
    (jax-ml/jax#24236)."""  # noqa: E501
    g = convert(lambda x: lax.dot(x, x, precision="F32_F32_F32"))
    close(g(np.ones((128, 128), f32)), np.full((128, 128), 128.0, f32))


# --------------------------------------------------------------------------- modules


def _sum_leaves(tree: Any) -> Any:
    return sum(jax.tree_util.tree_leaves(tree))


@pytest.mark.parametrize(
    "attr",
    [
        "a",
        "b",
        "c",
    ],
    ids=["list", "tuple", "dict"],
)
def test_checkpoint_wrapper_types(attr: str) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_checkpoint_wrapper_types
    (a tf.Module's list, tuple and dict attributes are wrapped by TensorFlow; JAX flattens
    them: here they are the converted function's argument, as README's module.params)."""  # noqa: E501
    m = tf.Module()
    m.a = [tf.Variable(1.0), tf.Variable(2.0)]
    m.b = (tf.Variable(3.0), tf.Variable(4.0))
    m.c = {"a": tf.Variable(5.0), "b": tf.Variable(6.0)}
    wrapped = getattr(m, attr)
    assert type(wrapped) not in (list, tuple, dict)
    g = convert(_sum_leaves)  # imports jax2tf, which registers the wrappers with JAX
    assert len(jax.tree_util.tree_leaves(wrapped)) == 2
    close(g(wrapped), {"a": 3.0, "b": 7.0, "c": 11.0}[attr])
    # Inside a tf.function (README's pattern) too.
    close(
        tf.function(lambda: convert(_sum_leaves)(wrapped))(), {"a": 3.0, "b": 7.0, "c": 11.0}[attr]
    )


class _JaxModule(tf.Module):
    """jax-ml/jax#10586's module: parameters in a dict of tf.Variables."""

    def __init__(self) -> None:
        super().__init__()
        self._params = {
            "w": tf.Variable(tf.ones([784, 10]), name="w"),
            "b": tf.Variable(tf.ones([10]), name="b"),
        }
        self._f = convert(lambda p, x: x @ p["w"] + p["b"])

    def __call__(self, x: Any) -> Any:
        return self._f(self._params, x)


def test_issue_10586() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_issue_10586
    (skipped upstream, "fails at head"): gradients for every variable of a tf.Module whose
    parameters are a dict, each of its variable's shape."""  # noqa: E501
    net = _JaxModule()
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(net(tf.ones([1, 784])))
    params = tape.watched_variables()
    grads = tape.gradient(loss, params)
    assert len(params) == 2
    for var, grad in zip(params, grads, strict=True):
        assert var.shape == grad.shape, var.name


# --------------------------------------------------------------------------- platforms


def test_cross_platform_error() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_cross_platform_error
    (exported for TPU only: the graph builds, running it on this CPU fails)."""  # noqa: E501
    g = convert(jnp.sin, platforms=("tpu",))
    x = f32(0.5)
    compiled = tf.function(g, autograph=False, jit_compile=True)
    graph_def = compiled.get_concrete_function(x).graph.as_graph_def()
    assert "XlaCallModule" in str(graph_def)
    message = "The current platform .* is not among the platforms required by the module"
    with pytest.raises(tf.errors.NotFoundError, match=message):
        g(x)


def test_native_parameters_for_non_native() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_native_parameters_for_non_native
    (platforms=("cpu",) run on TensorFlow's CPU)."""  # noqa: E501
    g = convert(jnp.sin, platforms=("cpu",))
    cpus = tf.config.list_logical_devices("CPU")
    assert cpus
    with tf.device(cpus[0]):
        close(g(f32(0.5)), np.sin(f32(0.5)))


def test_native_serialization_disabled_checks() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_native_parameters_for_non_native
    (its native_serialization_disabled_checks= part). DIFFERS: not an option of the route:
    an OptionError naming the options it takes."""  # noqa: E501
    with pytest.raises(OptionError, match="native_serialization_disabled_checks") as err:
        convert(jnp.sin, native_serialization_disabled_checks=())
    assert "platforms=" in str(err.value)


def test_native_serialization_grad() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_native_serialization_grad
    (the gradient is exported for the same platforms as the primal).
    DIFFERS: the graph holds 3 XlaCallModule ops, not 2: the tf.function that to() returns
    adds its forward copy; each is exported for TPU only."""  # noqa: E501
    g = convert(jnp.sin, platforms=("tpu",))
    x = np.arange(4, dtype=f32)

    @tf.function(autograph=False)
    def grad(xv: Any) -> Any:
        with tf.GradientTape() as tape:
            tape.watch(xv)
            res = g(xv)
        return tape.gradient(res, xv)

    graph_def = str(
        tf.function(grad, autograph=False).get_concrete_function(x).graph.as_graph_def()
    )
    assert len(re.findall(r'op:\s*"XlaCallModule"', graph_def)) == 3
    platforms = re.findall(r'key: "platforms"\s*value \{\s*list \{\s*s: "(\w+)"\s*\}', graph_def)
    assert platforms == ["TPU"] * 3
    with pytest.raises(tf.errors.NotFoundError, match=r"is not among the platforms .*\[TPU\]"):
        grad(tf.Variable(x))


def test_multi_platform() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_multi_platform
    (TensorFlow's CPU runs the cpu lowering of lax.platform_dependent)."""  # noqa: E501
    added = {"cpu": 2.0, "tpu": 3.0, "cuda": 4.0, "rocm": 5.0}

    def f(x: Any) -> Any:
        return x + lax.platform_dependent(
            tpu=lambda: added["tpu"], cuda=lambda: added["cuda"], rocm=lambda: added["rocm"],
            default=lambda: added["cpu"],
        )  # fmt: skip

    g = convert(f, platforms=("cpu", "cuda", "tpu"))
    x = f32(0.42)
    for device in tf.config.list_logical_devices():
        kind = {"CPU": "cpu", "GPU": "cuda", "TPU": "tpu"}[device.device_type]
        with tf.device(device):
            close(g(x), x + f32(added[kind]))


@pytest.mark.parametrize("route", [{}, {"trace": False}], ids=["default", "trace=False"])
def test_nested_convert(route: dict[str, Any]) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2TfTest::test_nested_convert
    (convert -> call_tf -> convert: to() to TensorFlow, back to JAX by the default route
    (tf2jax where installed) and by call_tf (trace=False), and to TensorFlow again)."""  # noqa: E501
    f = jax.jit(lambda x: x + 1)
    x = np.ones(10, f32)
    want = f(x)
    f_tf = convert(f)
    close(f_tf(x), want)
    back = to(f_tf, "jax", **route)
    out = back(x)
    assert isinstance(out, jax.Array)
    np.testing.assert_allclose(out, want)
    np.testing.assert_allclose(jax.jit(back)(x), want)
    close(convert(back)(x), want)


# --------------------------------------------------------------------------- random keys


def test_key_argument() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2tfWithCustomPRNGTest::test_key_argument
    (the raw key data crosses into TensorFlow; without jax_enable_custom_prng, so no
    FutureWarning)."""  # noqa: E501
    key = jax.random.key(0)
    got = convert(lambda k: jax.random.uniform(k, ()))(jax.random.key_data(key))
    assert float(got) == float(jax.random.uniform(key, ()))


def test_key_from_seed() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2tfWithCustomPRNGTest::test_key_from_seed"""  # noqa: E501

    def func(seed: Any) -> Any:
        return jax.random.uniform(jax.random.PRNGKey(seed), ())

    assert float(convert(func)(1701)) == float(func(1701))


def test_key_closure() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/jax2tf_test.py::Jax2tfWithCustomPRNGTest::test_key_closure
    (a typed key closed over, reshaped inside the function)."""  # noqa: E501
    global_key = jax.random.key(0)

    def func() -> Any:
        return jax.random.uniform(global_key.reshape(1).squeeze())

    assert float(convert(func)()) == float(func())
