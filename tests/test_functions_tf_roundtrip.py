"""TF functions tf2jax converts but cannot run, and the JAX -> SavedModel -> JAX round trip.

jax2tf's README promises "we can round-trip from JAX to TensorFlow (e.g., a SavedModel) and
back". A jax2tf function holds XlaCallModule ops (StableHLO that jax2tf serialized); tf2jax
0.3.8 converts them but its JAX code for them fails to run under jax 0.10.2 ("An MLIR function
requires a Context"), so the tf -> jax bridge takes call_tf for them and says so. TensorFlow
functions whose output shapes depend on values run eagerly in TensorFlow, and are refused,
naming the operation, under JAX transformations. Every error is an InteropError that keeps
the framework's exception as its cause.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import need

from interop_core import ConversionError, InteropError, explain, to

np = need("numpy")
jax = need("jax")
tf = need("tensorflow")
need("tf2jax")
jnp = jax.numpy

X = np.linspace(-1.0, 1.0, 6, dtype=np.float32).reshape(2, 3)
W = np.arange(12, dtype=np.float32).reshape(3, 4) / 10.0


@jax.custom_vjp
def _scaled_sin(x: Any) -> Any:
    return jnp.sin(x)


# A custom gradient that differs from sin's own, so the test sees which one ran.
_scaled_sin.defvjp(lambda x: (jnp.sin(x), x), lambda x, ct: (ct * 10.0 * jnp.cos(x),))


def plain(x: Any) -> Any:
    return jnp.sin(x) * 2.0 + jnp.sum(x**2)


def custom(x: Any) -> Any:
    return _scaled_sin(x) * 3.0


def with_params(params: dict[str, Any], x: Any) -> Any:
    return jnp.tanh(x @ params["w"]) + params["b"]


PARAMS = {"w": W, "b": np.float32(0.5)}
#: The JAX originals by case, as functions of x alone (the params case closes over PARAMS).
ORIGINALS: dict[str, Callable[[Any], Any]] = {
    "plain": plain,
    "custom_vjp": custom,
    "variables": lambda x: with_params(PARAMS, x),
}


def _saved(case: str, polymorphic: bool, directory: Path) -> Any:
    """The case's JAX function through to(.., "tensorflow"), saved as a SavedModel (variables
    as tf.Variables where the case has them, as jax2tf's README does) and loaded back."""
    module = tf.Module()
    if case == "variables":
        tf_fn = to(with_params, "tensorflow", source="jax")
        variables = tf.nest.map_structure(tf.Variable, PARAMS)
        module._variables = tf.nest.flatten(variables)  # saved with the module

        def call(x: Any) -> Any:
            return tf_fn(variables, x)

    else:
        call = to(ORIGINALS[case], "tensorflow", source="jax")
    shape = [None, 3] if polymorphic else [2, 3]
    module.f = tf.function(
        call, autograph=False, input_signature=[tf.TensorSpec(shape, tf.float32)]
    )
    path = directory / f"{case}-{polymorphic}"
    tf.saved_model.save(
        module, str(path), options=tf.saved_model.SaveOptions(experimental_custom_gradients=True)
    )
    return tf.saved_model.load(str(path))


_restored: dict[tuple[str, bool], Any] = {}


def restored(case: str, polymorphic: bool, tmp_path_factory: Any) -> Any:
    """The restored SavedModel of a case, saved once per session (each costs ~1 s)."""
    if (case, polymorphic) not in _restored:
        directory = tmp_path_factory.mktemp("saved")
        _restored[case, polymorphic] = _saved(case, polymorphic, directory)
    return _restored[case, polymorphic]


def _loss(f: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda x: jnp.sum(f(x) ** 2)


@pytest.mark.parametrize("transform", ["eager", "jit", "grad", "jit_grad"])
@pytest.mark.parametrize("polymorphic", [False, True], ids=["fixed", "polymorphic"])
@pytest.mark.parametrize("case", list(ORIGINALS))
def test_a_jax2tf_saved_model_comes_back_into_jax(
    case: str, polymorphic: bool, transform: str, tmp_path_factory: Any
) -> None:
    original = ORIGINALS[case]
    f = restored(case, polymorphic, tmp_path_factory).f
    g = to(f, "jax")
    runs = {
        "eager": (g, original),
        "jit": (jax.jit(g), original),
        "grad": (jax.grad(_loss(g)), jax.grad(_loss(original))),
        "jit_grad": (jax.jit(jax.grad(_loss(g))), jax.grad(_loss(original))),
    }
    got_fn, want_fn = runs[transform]
    for x in [X, X[:1]] if polymorphic else [X]:
        got, want = got_fn(x), want_fn(x)
        assert isinstance(got, jax.Array)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)
    # tf2jax cannot read jax2tf's XlaCallModule here: explain() says so before converting
    # (the restored function has its input_signature), and the route is call_tf's.
    route = explain(f, "jax")
    assert [s.converter for s in route.steps] == ["jax2tf.call_tf"]
    assert "XlaCallModule" in route.refused[0].reason


def test_without_a_signature_the_first_call_falls_back_and_says_why() -> None:
    """A jax2tf function in a tf.function without input_signature: tf2jax converts it at the
    first call, cannot run its XlaCallModule, and that signature runs through call_tf."""
    tf_fn = to(plain, "tensorflow", source="jax")
    g = to(tf.function(lambda x: tf_fn(x) * 1.0, autograph=False), "jax")
    np.testing.assert_allclose(np.asarray(g(X)), np.asarray(plain(X)), rtol=1e-5)
    assert "XlaCallModule" in g.fallback and "call_tf" in g.fallback
    assert "tf2jax" in repr(g)


def test_the_custom_gradient_is_the_one_that_was_saved(tmp_path: Path) -> None:
    """The restored function's gradient is the custom_vjp's (10 * cos), not sin's own."""
    g = to(_saved("custom_vjp", False, tmp_path).f, "jax")
    got = jax.grad(lambda x: jnp.sum(g(x)))(X)
    np.testing.assert_allclose(np.asarray(got), 30.0 * np.cos(X), rtol=1e-5)


def test_a_jax2tf_function_comes_back_without_saving() -> None:
    """Not saved: the tf.function that to() made, wrapped by the user, converts back too."""
    tf_fn = to(plain, "tensorflow", source="jax")
    wrapped = tf.function(lambda x: tf_fn(x) + 1.0, autograph=False)
    g = to(wrapped, "jax")
    np.testing.assert_allclose(np.asarray(jax.jit(g)(X)), np.asarray(plain(X) + 1.0), rtol=1e-5)
    want = jax.grad(lambda x: jnp.sum(plain(x)))(X)
    np.testing.assert_allclose(np.asarray(jax.grad(lambda x: jnp.sum(g(x)))(X)), want, rtol=1e-5)


def test_a_jax2tf_saved_model_converts_into_torch(tmp_path: Path) -> None:
    torch = need("torch")
    p = to(_saved("plain", True, tmp_path).f, "torch")
    x = torch.from_numpy(X.copy()).requires_grad_()
    out = p(x)
    assert isinstance(out, torch.Tensor)
    np.testing.assert_allclose(out.detach().numpy(), np.asarray(plain(X)), rtol=1e-5)
    out.sum().backward()
    want = jax.grad(lambda y: jnp.sum(plain(y)))(X)
    np.testing.assert_allclose(x.grad.numpy(), np.asarray(want), rtol=1e-5)


# ------------------------------------------------------------- shapes that depend on values


def _cond(x: Any) -> Any:
    return tf.cond(x[0] >= 0, lambda: x, lambda: x[1:])


def _slice(x: Any) -> Any:
    return x[0 : x[1]]


def _mask(x: Any) -> Any:
    return tf.boolean_mask(x, x > 0)


VALUE_DEPENDENT = {
    "cond": (_cond, "StatelessIf", np.array([1, 2, 3], np.int32)),
    "slice": (_slice, "StridedSlice", np.array([0, 2, 5, 7], np.int32)),
    "mask": (_mask, "Where", np.array([-1.0, 2.0, 0.0, 3.0], np.float32)),
}


@pytest.mark.parametrize("case", list(VALUE_DEPENDENT))
def test_value_dependent_shapes_run_eagerly_in_tensorflow(case: str) -> None:
    body, op, x = VALUE_DEPENDENT[case]
    fn = tf.function(body)
    g = to(fn, "jax")
    got = g(x)
    want = fn(tf.constant(x)).numpy()
    assert isinstance(got, jax.Array)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(got), want)
    assert op in g.fallback and "depends on the input values" in g.fallback
    # Another value of the same signature gives another shape: TensorFlow decides it.
    other = -x if case != "slice" else np.array([1, 1, 5, 7], np.int32)
    np.testing.assert_array_equal(np.asarray(g(other)), fn(tf.constant(other)).numpy())


#: jax.grad takes floating inputs: the slice case (integer bounds) is checked under jit and vmap.
REFUSALS = [
    (c, t) for c in VALUE_DEPENDENT for t in ("jit", "grad", "vmap") if (c, t) != ("slice", "grad")
]


@pytest.mark.parametrize(("case", "transform"), REFUSALS)
def test_value_dependent_shapes_are_refused_under_transforms(case: str, transform: str) -> None:
    body, op, x = VALUE_DEPENDENT[case]
    g = to(tf.function(body), "jax")
    run = {
        "jit": lambda: jax.jit(g)(x),
        "grad": lambda: jax.grad(lambda y: jnp.sum(g(y)))(x.astype(np.float32)),
        "vmap": lambda: jax.vmap(g)(np.stack([x, x])),
    }[transform]
    with pytest.raises(ConversionError, match=op) as info:
        run()
    assert "depends on the input values" in str(info.value)
    assert "output_shape_dtype" in str(info.value)  # what to do
    assert info.value.__cause__ is not None  # JAX's own error, kept


def test_refused_after_a_concrete_call_too() -> None:
    """The concrete call switched the signature to TensorFlow; a later jit is still refused
    with the op named, not call_tf's shape error."""
    body, op, x = VALUE_DEPENDENT["mask"]
    g = to(tf.function(body), "jax")
    g(x)
    with pytest.raises(ConversionError, match=op):
        jax.jit(g)(x)


def test_with_a_signature_explain_names_the_value_dependent_op() -> None:
    fn = tf.function(_mask, input_signature=[tf.TensorSpec([4], tf.float32)])
    text = str(explain(fn, "jax"))
    assert "Where" in text and "depends on the input values" in text
    g = to(fn, "jax")
    x = VALUE_DEPENDENT["mask"][2]
    np.testing.assert_array_equal(np.asarray(g(x)), fn(tf.constant(x)).numpy())
    with pytest.raises(ConversionError, match="Where"):
        jax.jit(g)(x)


def test_fixed_shape_functions_still_run_as_jax_code() -> None:
    """The check costs nothing to functions tf2jax runs: no fallback, no call_tf."""
    g = to(tf.function(lambda x: tf.where(x > 0, x, 0.0)), "jax")
    x = VALUE_DEPENDENT["mask"][2]
    np.testing.assert_array_equal(np.asarray(jax.jit(g)(x)), np.where(x > 0, x, 0.0))
    assert g.fallback == ""
    assert "call_tf" not in str(jax.make_jaxpr(g)(x))


# ------------------------------------------------------------- strings and TF's own errors


@pytest.mark.parametrize("trace", [True, False], ids=["tf2jax", "call_tf"])
@pytest.mark.parametrize(
    "body",
    [lambda x: tf.strings.as_string(x), lambda x: (x, tf.constant("label"))],
    ids=["string_tensor", "string_constant"],
)
@pytest.mark.parametrize("transform", ["eager", "jit"])
def test_a_function_returning_strings_is_an_interop_error(
    body: Any, trace: bool, transform: str
) -> None:
    g = to(tf.function(body), "jax", trace=trace)
    x = np.arange(3, dtype=np.int32)
    with pytest.raises(ConversionError, match="string tensor") as info:
        g(x) if transform == "eager" else jax.jit(g)(x)
    assert "JAX cannot hold" in str(info.value)


@pytest.mark.parametrize("trace", [True, False], ids=["tf2jax", "call_tf"])
def test_tensorflow_s_own_error_is_an_interop_error_with_its_cause(trace: bool) -> None:
    """A reshape into rows of a computed count: TensorFlow refuses 3 values as 7 rows."""
    fn = tf.function(lambda x: tf.reshape(x, [tf.reduce_sum(x), -1]))
    g = to(fn, "jax", trace=trace)
    ones = np.ones(3, np.int32)
    np.testing.assert_array_equal(np.asarray(g(ones)), np.ones((3, 1), np.int32))
    with pytest.raises(InteropError) as info:
        g(np.array([2, 2, 3], np.int32))
    assert isinstance(info.value.__cause__, tf.errors.InvalidArgumentError)
