"""TensorFlow functions as native JAX code (plugins/bridges/tf2jax_bridge.py, tf2jax).

Every TF function here is checked under each JAX transform that JAX defines for it (eager,
jax.jit, grad, vmap, jvp, jacfwd, hessian) against the same function written in jax.numpy
(values, and forward mode through JAX's own jvp/jacfwd) and against TensorFlow itself
(tf.GradientTape for reverse mode, tf.autodiff.ForwardAccumulator for jvp). Results must be
jax.Arrays of the reference's dtype, and the jaxprs must hold no call_tf (which the call_tf
route, `trace=False`, would put there): that is what makes the eager, jit and grad checks
fail without the bridge, where call_tf gives the same values.

TensorFlow tracing is slow: each case is converted once per module (``converted``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from conftest import need

from interop_core import explain, to
from interop_core.declare.errors import UnsupportedTransformError

np = need("numpy")
jax = need("jax")
tf = need("tensorflow")
tf2jax = need("tf2jax")
jnp = jax.numpy

import keras  # noqa: E402  (Keras 3, on the TensorFlow backend: it comes with TensorFlow)


def rand(*shape: int, seed: int) -> Any:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


X = rand(2, 3, seed=0)
W = rand(3, 4, seed=1)
A = rand(2, 3, 4, seed=2)
B = rand(2, 4, 2, seed=3)
IMG = rand(1, 5, 5, 2, seed=4)
KERNEL = rand(3, 3, 2, 3, seed=5)
TABLE = rand(5, 3, seed=6)
IDX = np.array([4, 0, 2, 0], np.int32)  # 0 twice: the gradient accumulates
ROWS = rand(4, 3, seed=7)
POLY_W = rand(3, 2, seed=8)
VAR_W = rand(3, 2, seed=9)
VAR_B = rand(2, seed=10)


def close(a: Any, b: Any, tol: float = 2e-5) -> None:
    """Same structure and values (leaves of any framework)."""
    la, ta = jax.tree_util.tree_flatten(a)
    lb, tb = jax.tree_util.tree_flatten(b)
    assert ta == tb, (ta, tb)
    for x, y in zip(la, lb, strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=tol, atol=tol)


def is_jax(out: Any, like: Any) -> None:
    """Every leaf of ``out`` is a jax.Array with the dtype of the matching leaf of ``like``."""
    for x, y in zip(jax.tree_util.tree_leaves(out), jax.tree_util.tree_leaves(like), strict=True):
        assert isinstance(x, jax.Array), type(x)
        assert x.dtype == np.asarray(y).dtype, (x.dtype, np.asarray(y).dtype)


def native(fn: Callable[..., Any], *args: Any) -> None:
    """``fn`` traces to JAX operations only: no call_tf (the call_tf route's primitive)."""
    jaxpr = str(jax.make_jaxpr(fn)(*args))
    assert "call_tf" not in jaxpr
    assert "custom_vmap_call" not in jaxpr  # the call_tf bridge's vmap refusal


def total(out: Any) -> Any:
    """The sum of every output (a scalar to differentiate), in JAX."""
    return sum(jnp.sum(leaf) for leaf in jax.tree_util.tree_leaves(out))


def tf_total(out: Any) -> Any:
    return tf.add_n([tf.reduce_sum(t) for t in tf.nest.flatten(out)])


def tangent(a: Any) -> Any:
    """A fixed tangent for argument ``a`` (float0 zeros for an integer argument)."""
    if not np.issubdtype(a.dtype, np.floating):
        return np.zeros(a.shape, jax.dtypes.float0)
    return np.cos(np.arange(a.size)).reshape(a.shape).astype(a.dtype)


# ------------------------------------------------------------------------------ the cases


@dataclass
class Case:
    """A TF function, the same in jax.numpy, and its arguments."""

    name: str
    tf_fn: Any  # a tf.function, or a Keras model (converted with source="tensorflow")
    ref: Callable[..., Any]
    args: tuple[Any, ...]
    smooth: bool = True  # twice differentiable at args: jax.hessian compared
    reverse: bool = True  # JAX defines reverse mode for it (not for lax.while_loop)
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def floats(self) -> tuple[int, ...]:
        return tuple(i for i, a in enumerate(self.args) if np.issubdtype(a.dtype, np.floating))


def conv_ref(x: Any, k: Any) -> Any:
    return jax.lax.conv_general_dilated(
        x, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
    )


def tf_while(x: Any) -> Any:
    def body(i: Any, v: Any) -> tuple[Any, Any]:
        return i + 1, tf.sin(v) + 0.5 * v

    return tf.while_loop(lambda i, v: i < 3, body, (tf.constant(0), x))[1]


def jnp_while(x: Any) -> Any:
    for _ in range(3):
        x = jnp.sin(x) + 0.5 * x
    return x


def tf_layer_norm(x: Any) -> Any:
    mean, var = tf.nn.moments(x, axes=[-1], keepdims=True)
    return (x - mean) * tf.math.rsqrt(var + 1e-3)


def jnp_layer_norm(x: Any) -> Any:
    mean = x.mean(-1, keepdims=True)
    return (x - mean) / jnp.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + 1e-3)


def keras_mlp() -> Any:
    """A Keras 3 MLP 3 -> 8 (tanh) -> 2 on the TensorFlow backend, seeded."""
    init = keras.initializers
    return keras.Sequential(
        [
            keras.Input((3,)),
            keras.layers.Dense(8, "tanh", kernel_initializer=init.GlorotUniform(seed=0),
                               bias_initializer=init.RandomNormal(seed=1)),
            keras.layers.Dense(2, kernel_initializer=init.GlorotUniform(seed=2),
                               bias_initializer=init.RandomNormal(seed=3)),
        ]
    )  # fmt: skip


MODEL = keras_mlp()
_K1, _B1, _K2, _B2 = (w.numpy() for w in MODEL.weights)
CASE_W = tf.Variable(VAR_W, name="case_w")
CASE_B = tf.Variable(VAR_B, name="case_b")
POLY = tf.function(
    lambda x: tf.tanh(x @ POLY_W) * 2.0, input_signature=[tf.TensorSpec([None, 3], tf.float32)]
)

CASES = [
    Case("sin", tf.sin, jnp.sin, (X,)),
    Case("exp", tf.exp, jnp.exp, (X,)),
    Case("tanh", tf.tanh, jnp.tanh, (X,)),
    Case("relu", tf.nn.relu, jax.nn.relu, (X,), smooth=False),
    Case("sigmoid", tf.sigmoid, jax.nn.sigmoid, (X,)),
    Case("matmul", tf.matmul, jnp.matmul, (X, W)),
    Case("einsum", lambda a, b: tf.einsum("bij,bjk->bik", a, b),
         lambda a, b: jnp.einsum("bij,bjk->bik", a, b), (A, B)),
    Case("softmax", lambda x: tf.nn.softmax(x, axis=-1), jax.nn.softmax, (A[0],)),
    Case("log_softmax", tf.nn.log_softmax, jax.nn.log_softmax, (A[0],)),
    Case("logsumexp", lambda x: tf.reduce_logsumexp(x, axis=1),
         lambda x: jax.nn.logsumexp(x, axis=1), (A[1],)),
    Case("conv2d_nhwc", lambda x, k: tf.nn.conv2d(x, k, strides=1, padding="SAME"), conv_ref,
         (IMG, KERNEL)),
    Case("reduce_sum", lambda x: tf.reduce_sum(x, axis=1), lambda x: jnp.sum(x, axis=1), (A,)),
    Case("reduce_mean", lambda x: tf.reduce_mean(x, axis=[0, 2]),
         lambda x: jnp.mean(x, axis=(0, 2)), (A,)),
    Case("reduce_max", lambda x: tf.reduce_max(x, axis=-1), lambda x: jnp.max(x, axis=-1), (A,),
         smooth=False),
    Case("where", lambda x: tf.where(x > 0, x * x, -0.5 * x),
         lambda x: jnp.where(x > 0, x * x, -0.5 * x), (X,), smooth=False),
    Case("gather", lambda t, i: tf.gather(t, i), lambda t, i: t[i], (TABLE, IDX)),
    Case("concat_reshape_transpose",
         lambda x, y: tf.transpose(tf.reshape(tf.concat([x, y * y], 0), (3, 2, 2)), (2, 0, 1)),
         lambda x, y: jnp.transpose(jnp.concatenate([x, y * y]).reshape(3, 2, 2), (2, 0, 1)),
         (X, -X)),
    Case("cumsum_pair",  # a tuple of outputs: forward, and reverse exclusive
         lambda x: (tf.cumsum(x, axis=1), tf.cumsum(x, axis=1, exclusive=True, reverse=True)),
         lambda x: (jnp.cumsum(x, 1), jnp.flip(jnp.cumsum(jnp.flip(x, 1), 1), 1) - x), (A[0],)),
    Case("while_loop", tf_while, jnp_while, (X,), smooth=False, reverse=False),
    Case("norm", lambda x: tf.norm(x, axis=1), lambda x: jnp.linalg.norm(x, axis=1), (ROWS,)),
    Case("layer_norm", tf_layer_norm, jnp_layer_norm, (ROWS,)),
    Case("keras_mlp", MODEL, lambda x: jnp.tanh(x @ _K1 + _B1) @ _K2 + _B2, (ROWS,),
         options={"source": "tensorflow"}),
    Case("poly_batch", POLY, lambda x: jnp.tanh(x @ POLY_W) * 2.0, (ROWS,)),
    Case("variables", lambda x: tf.tanh(x @ CASE_W + CASE_B),
         lambda x: jnp.tanh(x @ VAR_W + VAR_B), (X,)),
]  # fmt: skip
BY_NAME = {c.name: c for c in CASES}
assert len(BY_NAME) == len(CASES) >= 20


def tf_function(case: Case) -> Any:
    """The TF side of ``case``: its tf.function (or Keras model), made once."""
    if case.name not in _TF:
        fn = case.tf_fn
        is_tf_function = hasattr(fn, "get_concrete_function")
        _TF[case.name] = fn if is_tf_function or case.options else tf.function(fn)
    return _TF[case.name]


_TF: dict[str, Any] = {}
_CONVERTED: dict[str, Any] = {}


def converted(case: Case) -> Any:
    """``to(case's TF function, "jax")``, made once per module (tf2jax traces TF)."""
    if case.name not in _CONVERTED:
        _CONVERTED[case.name] = to(tf_function(case), "jax", **case.options)
    return _CONVERTED[case.name]


def ids(cases: list[Case]) -> list[Any]:
    return [pytest.param(c, id=c.name) for c in cases]


# ------------------------------------------------------------------- every case, every transform


@pytest.mark.parametrize("case", ids(CASES))
def test_eager_values_match_jax_numpy_and_tensorflow(case: Case) -> None:
    g = converted(case)
    out, want = g(*case.args), case.ref(*case.args)
    is_jax(out, want)
    close(out, want)
    close(out, tf_function(case)(*case.args))
    native(g, *case.args)
    assert g.fallback == ""


@pytest.mark.parametrize("case", ids(CASES))
def test_jit_values_match_jax_numpy(case: Case) -> None:
    g = converted(case)
    out, want = jax.jit(g)(*case.args), case.ref(*case.args)
    is_jax(out, want)
    close(out, want)
    native(jax.jit(g), *case.args)


@pytest.mark.parametrize("case", ids([c for c in CASES if c.reverse]))
def test_grad_matches_gradient_tape(case: Case) -> None:
    g = converted(case)
    wrt = case.floats

    def loss(*a: Any) -> Any:
        return total(g(*a))

    got = jax.grad(loss, argnums=wrt)(*case.args)
    is_jax(got, [case.args[i] for i in wrt])
    close(got, jax.grad(lambda *a: total(case.ref(*a)), argnums=wrt)(*case.args), 1e-4)
    tensors = [tf.constant(a) for a in case.args]
    with tf.GradientTape() as tape:
        tape.watch([tensors[i] for i in wrt])
        y = tf_total(tf_function(case)(*tensors))
    want = tape.gradient(y, [tensors[i] for i in wrt])
    close(got, tuple(tf.convert_to_tensor(w) for w in want), 1e-4)  # gather: IndexedSlices
    close(jax.jit(jax.grad(loss, argnums=wrt))(*case.args), got)
    native(jax.grad(loss, argnums=wrt), *case.args)


def test_grad_of_while_loop_is_jax_s_refusal_and_call_tf_is_the_way() -> None:
    """tf2jax makes tf.while_loop a lax.while_loop, which JAX cannot reverse-differentiate;
    the call_tf route (trace=False) differentiates it in TensorFlow."""
    case = BY_NAME["while_loop"]
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
        jax.grad(lambda x: total(converted(case)(x)))(X)
    x = tf.constant(X)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf_function(case)(x))
    via_tf = to(tf_function(case), "jax", trace=False)
    close(jax.grad(lambda x: total(via_tf(x)))(X), tape.gradient(y, x), 1e-4)


def batched(case: Case) -> tuple[Any, ...]:
    """The arguments stacked 3 times along a new leading axis (floats varied)."""
    out = []
    for a in case.args:
        if np.issubdtype(a.dtype, np.floating):
            out.append(np.stack([a, 0.5 * a + 0.25, -a]))
        else:
            out.append(np.stack([a, a[::-1], a]))
    return tuple(out)


@pytest.mark.parametrize("case", ids(CASES))
def test_vmap_over_a_leading_batch_axis(case: Case) -> None:
    g, xs = converted(case), batched(case)
    out = jax.vmap(g)(*xs)
    rows = [case.ref(*(x[i] for x in xs)) for i in range(3)]
    want = jax.tree_util.tree_map(lambda *r: jnp.stack(r), *rows)
    is_jax(out, want)
    close(out, want)
    close(jax.jit(jax.vmap(g))(*xs), want)


@pytest.mark.parametrize("case", ids(CASES))
def test_jvp_matches_jax_numpy_and_forward_accumulator(case: Case) -> None:
    g = converted(case)
    tangents = tuple(tangent(a) for a in case.args)
    out, dout = jax.jvp(g, case.args, tangents)
    want, dwant = jax.jvp(case.ref, case.args, tangents)
    is_jax((out, dout), (want, dwant))
    close(out, want)
    close(dout, dwant, 1e-4)
    # TensorFlow's forward mode, eagerly (its while_loop in a graph refuses forward mode).
    eager = getattr(case.tf_fn, "python_function", case.tf_fn)
    primals = [tf.constant(case.args[i]) for i in case.floats]
    with tf.autodiff.ForwardAccumulator(primals, [tangents[i] for i in case.floats]) as acc:
        tensors = list(case.args)
        for i, p in zip(case.floats, primals, strict=True):
            tensors[i] = p
        y = eager(*tensors)
    close(dout, acc.jvp(y), 1e-4)


@pytest.mark.parametrize("case", ids(CASES))
def test_jacfwd_matches_jax_numpy(case: Case) -> None:
    g = converted(case)
    jac = jax.jacfwd(g)(*case.args)
    want = jax.jacfwd(case.ref)(*case.args)
    is_jax(jac, want)
    close(jac, want, 1e-4)


@pytest.mark.parametrize("case", ids([c for c in CASES if c.smooth and c.reverse]))
def test_hessian_matches_jax_numpy(case: Case) -> None:
    g = converted(case)
    first, rest = case.args[0], case.args[1:]
    hess = jax.hessian(lambda a: total(g(a, *rest)))(first)
    want = jax.hessian(lambda a: total(case.ref(a, *rest)))(first)
    is_jax(hess, want)
    assert hess.shape == first.shape * 2
    close(hess, want, 1e-4)


# ------------------------------------------------------------------------------ parameters


def test_keras_mlp_params_gradients_match_gradient_tape() -> None:
    model = keras_mlp()
    g = to(model, "jax", source="tensorflow")
    close(g(ROWS), model(ROWS))
    params = g.params
    assert set(params) == {w.path for w in model.weights}
    for w in model.weights:
        assert isinstance(params[w.path], jax.Array)
        close(params[w.path], w.numpy())
    target = rand(4, 2, seed=11)

    def loss(p: Any, x: Any) -> Any:
        return jnp.mean((g.apply(p, x) - target) ** 2)

    grads = jax.grad(loss)(params, ROWS)
    with tf.GradientTape() as tape:
        y = tf.reduce_mean((model(ROWS) - target) ** 2)
    want = dict(
        zip((w.path for w in model.trainable_variables),
            tape.gradient(y, model.trainable_variables), strict=True)
    )  # fmt: skip
    assert set(grads) == set(want)
    close(grads, want, 1e-4)
    is_jax(grads, want)
    close(jax.jit(jax.grad(loss))(params, ROWS), want, 1e-4)
    # New parameters through apply: a step of gradient descent, as in training.
    step = jax.tree_util.tree_map(lambda p, d: p - 0.1 * d, params, grads)
    for w in model.weights:
        w.assign(np.asarray(step[w.path]))
    close(g.apply(step, ROWS), model(ROWS))
    # A tf.function around the model converts the same way, with the same parameter names.
    around = to(tf.function(lambda x: model(x)), "jax")
    close(around(ROWS), model(ROWS))
    assert set(around.params) == set(params)


def variable_function() -> tuple[Any, Any, Any]:
    w = tf.Variable(VAR_W, name="w")
    b = tf.Variable(VAR_B, name="b")
    return w, b, tf.function(lambda x: tf.tanh(x @ w + b))


def test_variables_are_parameters_and_their_gradients_match_gradient_tape() -> None:
    w, b, f = variable_function()
    g = to(f, "jax")
    close(g(X), np.tanh(X @ VAR_W + VAR_B))
    assert set(g.params) == {"w", "b"}
    close(g.params, {"w": VAR_W, "b": VAR_B})
    is_jax(g.params, {"w": VAR_W, "b": VAR_B})

    def loss(p: Any) -> Any:
        return jnp.sum(g.apply(p, X) ** 2)

    grads = jax.grad(loss)(g.params)
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(f(X) ** 2)
    dw, db = tape.gradient(y, [w, b])
    close(grads, {"w": dw, "b": db}, 1e-4)
    close(jax.jit(jax.grad(loss))(g.params), grads)
    # Forward mode with respect to the parameters too.
    tangents = {"w": np.ones_like(VAR_W), "b": np.zeros_like(VAR_B)}
    _, dy = jax.jvp(lambda p: g.apply(p, X), (g.params,), (tangents,))
    _, want = jax.jvp(lambda w: jnp.tanh(X @ w + VAR_B), (VAR_W,), (tangents["w"],))
    close(dy, want, 1e-4)


def test_calls_use_the_values_at_conversion_a_fresh_to_sees_new_ones() -> None:
    """g(*args) runs on the variables' values when the function converted (its first call
    here: no input_signature); assign() afterwards does not reach it, even under jit. A
    fresh to() converts again and sees the new values; g.apply takes any values."""
    w, _, f = variable_function()
    g = to(f, "jax")
    old = np.tanh(X @ VAR_W + VAR_B)
    close(g(X), old)  # converts now
    jitted = jax.jit(g)
    close(jitted(X), old)
    w.assign(2 * VAR_W)
    new = np.tanh(X @ (2 * VAR_W) + VAR_B)
    close(f(X), new)  # TensorFlow sees the new value
    close(g(X), old)  # g does not: conversion-time values
    close(jitted(X), old)
    close(g.params["w"], VAR_W)
    fresh = to(f, "jax")
    close(fresh(X), new)
    close(fresh.params["w"], 2 * VAR_W)
    close(g.apply(fresh.params, X), new)
    # With an input_signature the conversion is at to() itself.
    w2, b2, _ = variable_function()
    spec = [tf.TensorSpec([None, 3], tf.float32)]
    h = to(tf.function(lambda x: tf.tanh(x @ w2 + b2), input_signature=spec), "jax")
    w2.assign(3 * VAR_W)
    close(h(X), old)
    close(h.params["w"], VAR_W)


@pytest.fixture
def conversions(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The argument specs of every tf2jax.convert call from here on."""
    calls: list[Any] = []
    real = tf2jax.convert

    def counted(fn: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return real(fn, *args, **kwargs)

    monkeypatch.setattr(tf2jax, "convert", counted)
    return calls


def test_polymorphic_signature_converts_once_for_every_batch_size(conversions: list[Any]) -> None:
    f = tf.function(
        lambda x: tf.tanh(x @ POLY_W) * 2.0, input_signature=[tf.TensorSpec([None, 3], tf.float32)]
    )
    g = to(f, "jax")
    assert len(conversions) == 1  # at to(), with the declared signature
    assert conversions[0][0].shape.as_list() == [None, 3]
    for n in (1, 4, 7):
        x = rand(n, 3, seed=n)
        want = np.tanh(x @ POLY_W) * 2.0
        close(g(x), want)
        close(jax.jit(g)(x), want)
        grad = jax.grad(lambda v: total(g(v)))(x)
        close(grad, jax.grad(lambda v: total(jnp.tanh(v @ POLY_W) * 2.0))(x), 1e-4)
        close(jax.vmap(g)(x[None]), want[None])
    assert len(conversions) == 1


def test_without_signature_converts_once_per_input_signature(conversions: list[Any]) -> None:
    g = to(tf.function(lambda x: tf.sin(x) * 2.0), "jax")
    assert conversions == []  # on the first call
    for _ in range(3):
        close(g(X), np.sin(X) * 2.0)
    close(jax.jit(g)(X), np.sin(X) * 2.0)  # a tracer of the same shape: the same conversion
    close(jax.grad(lambda v: total(g(v)))(X), 2 * np.cos(X))
    assert len(conversions) == 1
    close(g(ROWS), np.sin(ROWS) * 2.0)
    close(g(X), np.sin(X) * 2.0)
    assert len(conversions) == 2


# ------------------------------------------------------------------------------- fallbacks


def strings(x: Any) -> Any:
    return tf.cast(tf.strings.length(tf.strings.as_string(x)), tf.float32) + x


def py_double(x: Any) -> Any:
    y = tf.py_function(lambda t: t * 2.0, [x], tf.float32)
    y.set_shape(x.shape)  # call_tf needs static output shapes
    return y


@pytest.mark.parametrize(
    ("body", "op"), [pytest.param(strings, "AsString", id="strings"),
                     pytest.param(py_double, "EagerPyFunc", id="py_function")],
)  # fmt: skip
def test_unconvertible_ops_fall_back_to_call_tf(body: Any, op: str) -> None:
    f = tf.function(body)
    g = to(f, "jax")
    out = g(X)
    assert isinstance(out, jax.Array) and out.dtype == jnp.float32
    close(out, f(X))
    assert "Unsupported operations in graph" in g.fallback
    assert op in g.fallback
    # It runs through call_tf: reverse mode as TensorFlow's gradient, no vmap, no jvp.
    x = tf.constant(X)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(f(x))
    # TensorFlow's gradient first: a py_function's gradient taken in another graph (as
    # call_tf takes it) unregisters it for a pending eager tape (KeyError: b'pyfunc_0'),
    # raw jax2tf.call_tf and plain TensorFlow alike.
    want = tape.gradient(y, x)
    close(jax.grad(lambda v: total(g(v)))(X), want)
    with pytest.raises(UnsupportedTransformError, match=r"jax\.vmap"):
        jax.vmap(g)(X)
    with pytest.raises(UnsupportedTransformError, match="Forward-mode"):
        jax.jvp(g, (X,), (X,))


def test_trace_false_and_output_shape_dtype_ask_for_call_tf() -> None:
    f = tf.function(lambda x: tf.sin(x) * 2.0)
    assert [s.converter for s in explain(f, "jax").steps] == ["tf2jax.convert"]
    assert [s.converter for s in explain(f, "jax", trace=False).steps] == ["jax2tf.call_tf"]
    g = to(f, "jax")
    close(jax.vmap(g)(X), np.sin(X) * 2.0)
    h = to(f, "jax", trace=False)
    assert not hasattr(h, "params")
    close(h(X), np.sin(X) * 2.0)
    with pytest.raises(UnsupportedTransformError, match=r"jax\.vmap"):
        jax.vmap(h)(X)
    with pytest.raises(UnsupportedTransformError, match="Forward-mode"):
        jax.jvp(h, (X,), (X,))
    declared = jax.ShapeDtypeStruct(X.shape, jnp.float32)
    o = to(f, "jax", output_shape_dtype=declared)
    assert "output_shape_dtype=" in o.fallback
    close(jax.jit(o)(X), np.sin(X) * 2.0)
    with pytest.raises(UnsupportedTransformError, match="Forward-mode"):
        jax.jvp(o, (X,), (X,))


# --------------------------------------------------------------------------- TF -> torch


def test_tf_to_torch_goes_through_tf2jax_and_torch_gradients_match_tape() -> None:
    torch = need("torch")
    f = tf.function(lambda x, w: tf.tanh(tf.matmul(x, w)))
    route = explain(f, "torch")
    assert [s.converter for s in route.steps] == ["tf2jax.convert", "jax.vjp bridge"]
    g = to(f, "torch")
    xt = torch.tensor(X, requires_grad=True)
    wt = torch.tensor(W, requires_grad=True)
    y = g(xt, wt)
    assert isinstance(y, torch.Tensor) and y.dtype == torch.float32
    close(y.detach(), f(X, W))
    (y**2).sum().backward()
    x, w = tf.constant(X), tf.constant(W)
    with tf.GradientTape() as tape:
        tape.watch([x, w])
        s = tf.reduce_sum(f(x, w) ** 2)
    dx, dw = tape.gradient(s, [x, w])
    close(xt.grad, dx, 1e-4)
    close(wt.grad, dw, 1e-4)


def test_python_arguments_are_part_of_the_signature_by_value() -> None:
    """TF traces a Python number as a constant: each value is a signature of its own, and
    it is never traced by jax.jit (a tracer where tf2jax expects 2.0 would fail)."""
    g = to(tf.function(lambda x, s: x * s), "jax")
    x = np.ones(3, np.float32)
    close(g(x, 2.0), 2 * x)
    close(g(x, 3.0), 3 * x)  # not the 2.0 conversion again
    close(jax.jit(lambda y: g(y, 4.0))(jnp.asarray(x)), 4 * x)
    assert g.fallback == ""


def test_a_function_that_writes_variables_runs_in_tensorflow() -> None:
    """As JAX code the writes would be lost (tf2jax returns the new values beside the
    outputs): such a function runs through call_tf, and g.fallback says why."""
    v = tf.Variable(0.0)

    @tf.function
    def count(x: Any) -> Any:
        v.assign_add(1.0)
        return x + v

    g = to(count, "jax")
    close(g(jnp.ones(2)), np.full(2, 2.0))
    close(g(jnp.ones(2)), np.full(2, 3.0))
    assert float(v.numpy()) == 2.0
    assert "AssignAddVariableOp" in g.fallback


def test_every_signature_uses_the_values_of_the_first_conversion() -> None:
    w = tf.Variable(1.0)
    g = to(tf.function(lambda x: x * w), "jax")
    close(g(jnp.ones(2)), np.ones(2))  # converts with w = 1
    w.assign(5.0)
    close(g(jnp.ones(3)), np.ones(3))  # a new signature: still the first values
    close(g(jnp.ones(2)), np.ones(2))
    close(g.params[next(iter(g.params))], 1.0)


def test_an_input_the_signature_does_not_take_is_an_interop_error() -> None:
    import interop_core

    spec = [tf.TensorSpec([None, 3], tf.float32)]
    g = to(tf.function(lambda x: tf.reduce_sum(x, axis=1), input_signature=spec), "jax")
    close(g(np.ones((2, 3), np.float32)), np.full(2, 3.0))
    with pytest.raises(interop_core.ConversionError, match="input_signature"):
        g(np.ones((2, 4), np.float32))


def test_with_a_signature_explain_names_the_blocking_ops_before_converting() -> None:
    """A function with an input_signature has its graph before any call: the planner looks
    at it, takes the call_tf route when tf2jax cannot translate an operation, and explain()
    names the operations; TF -> torch re-plans the same way."""
    spec = [tf.TensorSpec([None, 3], tf.float32)]
    f = tf.function(strings, input_signature=spec)
    route = explain(f, "jax")
    assert [s.converter for s in route.steps] == ["jax2tf.call_tf"]
    assert route.refused[0].converter == "tf2jax.convert"
    assert "AsString" in route.refused[0].reason
    assert any("not tf2jax.convert" in n and "AsString" in n for n in route.notes)
    g = to(f, "jax")
    assert not hasattr(g, "params")  # the call_tf bridge, as explain() said
    close(g(X), f(X))
    torch_route = explain(f, "torch")
    assert torch_route.steps[0].converter == "jax2tf.call_tf"
    assert "AsString" in str(torch_route)
    # The same signature with a translatable body takes tf2jax, and explain() says nothing.
    ok = explain(tf.function(lambda x: tf.sin(x), input_signature=spec), "jax")
    assert [s.converter for s in ok.steps] == ["tf2jax.convert"] and ok.refused == ()


def test_with_a_signature_explain_names_variable_writes() -> None:
    v = tf.Variable(0.0)
    f = tf.function(lambda x: x + v.assign_add(1.0), input_signature=[tf.TensorSpec([2])])
    route = explain(f, "jax")
    assert [s.converter for s in route.steps] == ["jax2tf.call_tf"]
    assert "AssignAddVariableOp" in route.refused[0].reason
    g = to(f, "jax")
    close(g(np.ones(2, np.float32)), np.full(2, 2.0))
    assert float(v.numpy()) == 1.0


def test_a_signature_s_dtypes_are_kept_numbers_take_them() -> None:
    """An array of another dtype than the input_signature declares is refused (TensorFlow
    casts numpy arrays silently; the bridge never does); a Python number has no dtype of its
    own and takes the declared one; a wrong count of arguments says so."""
    import interop_core

    spec = [tf.TensorSpec([None, 3], tf.float32), tf.TensorSpec([], tf.float32)]
    g = to(tf.function(lambda x, s: x * s, input_signature=spec), "jax")
    x = np.ones((2, 3), np.float32)
    out = g(x, 2.0)
    assert out.dtype == jnp.float32
    close(out, 2 * x)
    for bad in (x.astype(np.float64), x.astype(np.int32), jnp.ones((2, 3), jnp.int32)):
        with pytest.raises(interop_core.ConversionError, match=r"(?s)declares float32.*Cast it"):
            g(bad, 2.0)
    with pytest.raises(interop_core.ConversionError, match=r"(?s)takes 2 tensor\(s\).*passed 3"):
        g(x, 2.0, 3.0)
    with pytest.raises(interop_core.ConversionError, match="argument 1 is a str"):
        g(x, "2")
    close(jax.jit(g)(x, jnp.float32(3.0)), 3 * x)  # tracers are checked by their dtype
