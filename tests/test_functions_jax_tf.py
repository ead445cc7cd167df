"""Functions between JAX and TensorFlow (plugins/jax_tf.py): jax2tf one way, call_tf the other.

Every result is checked against running the function natively; gradients against the other
framework's own autodiff. The SavedModel test reloads in a subprocess that cannot import JAX.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import interop_plugins.bridges.jax_tf as bridges
import pytest
from conftest import need

import interop_core
from interop_core import explain, to
from interop_core.declare.errors import ConversionError, UnsupportedTransformError

np = need("numpy")
jax = need("jax")
tf = need("tensorflow")
jnp = jax.numpy

from jax.experimental import jax2tf  # noqa: E402


def convert(fn: Any, target: str, **options: Any) -> Any:
    """The public call: to(fn, target, source=...) with the other framework as source.

    These are the call_tf bridge's tests: into JAX, ``trace=False`` asks for it (the default
    route is tf2jax where it is installed: tests/test_functions_tf2jax.py)."""
    if target != "tensorflow":
        options.setdefault("trace", False)
    return to(fn, target, source="jax" if target == "tensorflow" else "tensorflow", **options)


W = np.array([[1.0, -2.0], [0.5, 3.0], [-1.5, 0.25]], np.float32)
X = np.linspace(-1, 1, 15, dtype=np.float32).reshape(5, 3)


def close(a: Any, b: Any) -> None:
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


def jax_model(x: Any) -> Any:
    return jnp.tanh(jnp.sin(x) @ W)


def tf_model(x: Any) -> Any:
    return tf.tanh(tf.matmul(tf.sin(x), W))


def tf_grad(fn: Any, x: Any) -> Any:
    """d sum(fn(x)) / dx by tf.GradientTape."""
    x = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(fn(x))
    return tape.gradient(y, x)


# ----------------------------------------------------------------------------- jax -> tf


def test_jax_to_tf_values_and_pytrees() -> None:
    def f(x: Any, p: dict[str, Any]) -> Any:
        return {"y": jnp.sin(x) * p["scale"], "pair": (x.sum(), p["bias"] ** 2)}

    p = {"scale": np.float32(2.0), "bias": np.arange(3, dtype=np.float32)}
    out = convert(f, "tensorflow")(tf.constant(X), {k: tf.constant(v) for k, v in p.items()})
    want = f(X, p)
    assert isinstance(out["y"], tf.Tensor) and isinstance(out["pair"], tuple)
    close(out["y"], want["y"])
    close(out["pair"][0], want["pair"][0])
    close(out["pair"][1], want["pair"][1])


def test_jax_to_tf_is_a_tf_function_exported_once_per_signature() -> None:
    g = convert(jax_model, "tensorflow")
    assert isinstance(g, tf.types.experimental.PolymorphicFunction)
    for _ in range(5):
        close(g(X), jax_model(X))
    assert g.experimental_get_tracing_count() == 1  # one jax2tf export, not one per call
    # Same graph as the raw tf.function(jax2tf.convert(f), autograph=False): same call cost.
    raw = tf.function(jax2tf.convert(jax_model), autograph=False)

    def ops(fn: Any) -> list[str]:
        return sorted(n.op for n in fn.get_concrete_function(X).graph.as_graph_def().node)

    assert ops(g) == ops(raw)


def test_jax_to_tf_gradients_match_jax() -> None:
    g = convert(jax_model, "tensorflow")
    close(tf_grad(g, X), jax.grad(lambda x: jax_model(x).sum())(X))

    def f(p: dict[str, Any]) -> Any:
        return jnp.sum(jnp.sin(p["x"]) @ p["w"])

    p = {"x": tf.constant(X), "w": tf.constant(W)}
    with tf.GradientTape() as tape:
        tape.watch(p)
        y = convert(f, "tensorflow")(p)
    got, want = tape.gradient(y, p), jax.grad(f)({"x": X, "w": W})
    close(got["x"], want["x"])
    close(got["w"], want["w"])


def test_jax_to_tf_without_gradient_refuses_gradients() -> None:
    g = convert(jax_model, "tensorflow", with_gradient=False)
    close(g(X), jax_model(X))
    with pytest.raises(LookupError, match="does not support gradients"):
        tf_grad(g, X)


def test_jax_to_tf_takes_jitted_functions_and_platforms() -> None:
    g = convert(jax.jit(jax_model), "tensorflow", platforms=["cpu", "cuda"])
    close(g(X), jax_model(X))
    close(tf_grad(g, X), jax.grad(lambda x: jax_model(x).sum())(X))
    graph = g.get_concrete_function(X).graph
    (call,) = [op for op in graph.get_operations() if op.type == "XlaCallModule"]
    assert sorted(call.get_attr("platforms")) == [b"CPU", b"CUDA"]


def test_jax_to_tf_derives_polymorphic_shapes_from_none_dims() -> None:
    calls = []

    def f(x: Any) -> Any:
        calls.append(1)
        return jax_model(x)

    g = convert(f, "tensorflow", input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    for n in (5, 2, 4):
        close(g(X[:n]), jax_model(X[:n]))
    assert g.experimental_get_tracing_count() == 1  # one export serves every batch size
    assert g.get_concrete_function().output_shapes.as_list() == [None, 2]
    close(tf_grad(g, X[:2]), jax.grad(lambda x: jax_model(x).sum())(X[:2]))

    # A user's own tf.function with None dims around an unconstrained result; kwargs too.
    def h(x: Any, *, bias: Any) -> Any:
        return jax_model(x) + bias

    inner = convert(h, "tensorflow")
    bias = tf.constant([1.0, -1.0])
    outer = tf.function(lambda x: inner(x, bias=bias), input_signature=[tf.TensorSpec([None, 3])])
    close(outer(X), h(X, bias=bias.numpy()))
    close(outer(X[:1]), h(X[:1], bias=bias.numpy()))
    close(tf_grad(outer, X), jax.grad(lambda x: h(x, bias=bias.numpy()).sum())(X))


def test_jax_to_tf_user_polymorphic_shapes() -> None:
    g = convert(lambda x, y: x * y, "tensorflow", polymorphic_shapes=["(b, _)", "(b, _)"])
    spec = tf.TensorSpec([None, 3], tf.float32)
    outer = tf.function(g, input_signature=[spec, spec])
    close(outer(X, X), X * X)


def test_jax_to_tf_shape_polymorphism_errors_reach_the_user() -> None:
    spec = tf.TensorSpec([None, 3], tf.float32)
    # Inconsistent polymorphic_shapes given by the user: jax2tf's own message, chained.
    g = convert(lambda x, y: x + y, "tensorflow", polymorphic_shapes=["(b, _)", "(c, _)"])
    with pytest.raises(ConversionError, match="incompatible shapes for broadcasting") as err:
        tf.function(g, input_signature=[spec, spec]).get_concrete_function()
    # TF's traceback filtering re-raises "from None", so the text is all that survives.
    assert "TypeError: add got incompatible shapes for broadcasting: (b, 3), (c, 3)" in str(
        err.value
    )
    assert "polymorphic_shapes=['(b, _)', '(c, _)']" in str(err.value)
    # Derived shapes name each None dim apart; the error says how to say they are equal.
    g = convert(lambda x, y: x + y, "tensorflow")
    with pytest.raises(ConversionError, match="incompatible shapes") as err:
        tf.function(g, input_signature=[spec, spec]).get_concrete_function()
    assert "['(b, _)', '(b, _)']" in str(err.value)
    assert "polymorphic_shapes=['(d0, _)', '(d1, _)']" in str(err.value)


@pytest.mark.parametrize(
    ("options", "shown", "accepted"),
    [
        ({"with_gradient": "sometimes"}, "with_gradient='sometimes'", "True or False"),
        ({"with_gradient": None}, "with_gradient=None", "True or False"),
        ({"platforms": ["quantum"]}, "platforms=['quantum']", "cpu, cuda, rocm, tpu"),
        ({"platforms": "gpu"}, "platforms='gpu'", "'cuda' or 'rocm'"),
        ({"platforms": []}, "platforms=[]", "cpu, cuda, rocm, tpu"),
        ({"polymorphic_shapes": 5}, "polymorphic_shapes=5", "a shape string"),
        ({"polymorphic_shapes": ["(b, _)", 3]}, "polymorphic_shapes=['(b, _)', 3]", "pytree"),
        (
            {"polymorphic_shapes": ["(b, _)"], "polymorphic_constraints": ["b > 2"]},
            "polymorphic_constraints=['b > 2']",
            "'e1 >= e2'",
        ),
        (
            {"polymorphic_shapes": ["(b, _)"], "polymorphic_constraints": [2]},
            "polymorphic_constraints=[2]",
            "'e1 >= e2'",
        ),
        ({"input_signature": 5}, "input_signature=5", "tf.TensorSpec"),
    ],
)
def test_jax_to_tf_option_values_are_checked_when_converting(
    options: dict[str, Any], shown: str, accepted: str
) -> None:
    """A bad value is an OptionError from to() itself (jax2tf would fail at the first
    call, with a raw ValueError for platforms), naming the option, the value, what it takes."""
    with pytest.raises(interop_core.OptionError) as err:
        convert(jax_model, "tensorflow", **options)
    message = str(err.value)
    assert f"Option {shown} is not valid." == message.splitlines()[0]
    assert accepted in message


def test_jax_to_tf_polymorphic_constraints_reach_jax2tf() -> None:
    def head(x: Any) -> Any:  # needs to know that b >= 4
        return x[:4].sum() if x.shape[0] >= 4 else x.sum()

    spec = [tf.TensorSpec([None], tf.float32)]
    x = np.arange(6, dtype=np.float32)
    plain = convert(head, "tensorflow", polymorphic_shapes=["(b,)"], input_signature=spec)
    with pytest.raises(ConversionError, match="inconclusive"):
        plain(x)
    for constraints in (["b >= 4"], "b >= 4"):
        g = convert(
            head, "tensorflow", polymorphic_shapes=["(b,)"], input_signature=spec,
            polymorphic_constraints=constraints,
        )  # fmt: skip
        close(g(x), 6.0)
        close(g(x[:5]), 6.0)  # one export serves every b >= 4
        assert g.experimental_get_tracing_count() == 1
    with pytest.raises(interop_core.OptionError, match="needs polymorphic_shapes="):
        convert(head, "tensorflow", polymorphic_constraints=["b >= 4"])


def test_tf_function_around_the_converted_function_takes_fresh_variables() -> None:
    """tf.function(to(f)) called with new tf.Variables under a GradientTape: as
    tf.function(jax2tf.convert(f)) does (a nested tf.function kept the first variables)."""

    def f(x: Any, y: Any) -> Any:
        return x * x, x * y

    outer = tf.function(convert(f, "tensorflow"), autograph=False)
    for value in (4.0, 5.0, 6.0):
        x, y = tf.Variable(value), tf.Variable(2.0)
        with tf.GradientTape(persistent=True) as tape:
            u, v = outer(x, y)
        close(u, value * value)
        close(tape.gradient(u, x), 2 * value)
        close(tape.gradient(v, y), value)
    g = convert(f, "tensorflow")  # called directly (eagerly) with variables, unchanged
    close(g(tf.Variable(3.0), tf.Variable(2.0))[1], 6.0)


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tf.Module holding convert(jax_model) with input_signature [None, 3], saved."""
    module = tf.Module()
    module.f = convert(jax_model, "tensorflow", input_signature=[tf.TensorSpec([None, 3])])
    path = tmp_path_factory.mktemp("jax_model")
    tf.saved_model.save(module, str(path))
    return path


RELOAD = textwrap.dedent(
    """
    import importlib.abc, json, sys
    class NoJax(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in ("jax", "jaxlib"):
                raise ImportError(f"{name} is blocked in this test")
    sys.meta_path.insert(0, NoJax())
    import numpy as np, tensorflow as tf
    try:
        import jax
    except ImportError:
        pass
    else:
        raise SystemExit("jax was imported")
    f = tf.saved_model.load(sys.argv[1]).f
    x = tf.constant(json.loads(sys.argv[2]), tf.float32)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
        s = tf.reduce_sum(y)
    jaxy = sorted(m for m in sys.modules if m.partition(".")[0] in ("jax", "jaxlib"))
    print(json.dumps([y.numpy().tolist(), tape.gradient(s, x).numpy().tolist(), jaxy]))
    """
)


def test_saved_model_reloads_and_differentiates_without_jax(saved: Path) -> None:
    import json

    run = subprocess.run(
        [sys.executable, "-c", RELOAD, str(saved), json.dumps(X[:4].tolist())],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    y, grad, jax_modules = json.loads(run.stdout.strip().splitlines()[-1])
    assert jax_modules == []
    close(y, jax_model(X[:4]))
    close(grad, jax.grad(lambda x: jax_model(x).sum())(X[:4]))


# ----------------------------------------------------------------------------- tf -> jax


def test_tf_to_jax_eager_values_pytrees_and_argument_kinds() -> None:
    def f(x: Any, p: dict[str, Any], *, k: Any) -> Any:
        return {"y": tf.sin(x) * p["s"] + k, "n": (tf.reduce_sum(x),)}

    g = convert(f, "jax")
    want = f(tf.constant(X), {"s": tf.constant(2.0)}, k=tf.constant(1.0))
    for x, s in [(jnp.asarray(X), jnp.float32(2)), (X.copy(), np.float32(2))]:
        out = g(x, {"s": s}, k=tf.constant(1.0))  # jax, numpy and tf.Tensor arguments
        assert isinstance(out["y"], jax.Array) and isinstance(out["n"], tuple)
        close(out["y"], want["y"])
        close(out["n"][0], want["n"][0])
    close(convert(tf.function(lambda: tf.constant(3.0)), "jax")(), 3.0)  # no array at all


def test_tf_to_jax_eager_is_zero_copy_unlike_call_tf() -> None:
    seen = []

    def identity(t: Any) -> Any:
        seen.append(np.asarray(t).__array_interface__["data"][0])  # zero-copy read
        return t

    x = jnp.arange(256 * 256, dtype=jnp.float32).reshape(256, 256)
    y = convert(identity, "jax")(x)
    assert seen == [x.unsafe_buffer_pointer()]  # TF got the JAX buffer itself
    assert y.unsafe_buffer_pointer() == x.unsafe_buffer_pointer()  # and gave it back
    y = convert(tf.function(lambda t: t, autograph=False), "jax")(x)
    assert y.unsafe_buffer_pointer() == x.unsafe_buffer_pointer()
    t = tf.constant(X)
    assert convert(identity, "jax")(t).unsafe_buffer_pointer() == seen[-1]
    # Why the eager path bypasses call_tf: it hands TF a copy of the input.
    seen.clear()
    jax2tf.call_tf(identity)(x)
    assert seen[0] != x.unsafe_buffer_pointer()


def test_tf_to_jax_jit_and_grad_match_tensorflow() -> None:
    g = convert(tf_model, "jax")
    want, want_grad = tf_model(X), tf_grad(tf_model, X)
    close(jax.jit(g)(X), want)
    close(jax.grad(lambda x: g(x).sum())(X), want_grad)
    close(jax.jit(jax.grad(lambda x: g(x).sum()))(X), want_grad)
    close(jax.grad(jax.jit(lambda x: g(x).sum()))(X), want_grad)
    # Second-order reverse mode: d/dx sum(d/dx sum(sin x)) = -sin x.
    sin = convert(tf.sin, "jax")
    close(jax.grad(lambda v: jax.grad(lambda u: sin(u).sum())(v).sum())(X), -np.sin(X))
    # A tf.Tensor beside the tracers (closed over under jit) is handed to call_tf as JAX.
    w = tf.constant(W)
    h = convert(lambda x, w: tf.sin(x) @ w, "jax")
    close(jax.jit(lambda x: h(x, w))(X), np.sin(X) @ W)


def test_tf_to_jax_runs_the_tf_function_once_per_call_or_trace() -> None:
    calls = []

    def f(x: Any) -> Any:
        calls.append(1)
        return tf.sin(x)

    g = convert(f, "jax")
    g(X)
    g(X)
    assert len(calls) == 2  # eager: one direct call each, nothing else
    jitted = jax.jit(g)
    jitted(X)
    traced = len(calls)
    jitted(X)
    jitted(X)
    assert len(calls) == traced  # under jit: TF traced at jax trace time only


def test_tf_to_jax_restored_saved_model_with_none_dims_under_jit(
    saved: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    restored = tf.saved_model.load(str(saved)).f  # jax2tf inside: output shape [None, 2]
    assert restored.get_concrete_function(tf.TensorSpec([4, 3])).output_shapes[0] is None
    with pytest.raises(ValueError, match="dynamic shape"):
        jax.jit(jax2tf.call_tf(restored))(X[:4])  # raw call_tf needs output_shape_dtype
    inferred = []
    infer = bridges._infer_outputs
    monkeypatch.setattr(bridges, "_infer_outputs", lambda *a: inferred.append(1) or infer(*a))
    g = convert(restored, "jax")
    close(jax.jit(g)(X[:4]), jax_model(X[:4]))
    close(jax.jit(lambda x: 2 * g(x))(X[:4]), 2 * jax_model(X[:4]))
    assert len(inferred) == 1  # once per input signature
    close(jax.jit(g)(X), jax_model(X))  # another batch size
    assert len(inferred) == 2
    # Full circle: jax.grad through TF through JAX, under jit.
    want = jax.grad(lambda x: jax_model(x).sum())(X)
    close(jax.jit(jax.grad(lambda x: g(x).sum()))(X), want)
    # Declared shapes skip the inference.
    declared = jax.ShapeDtypeStruct((5, 2), jnp.float32)
    close(jax.jit(convert(restored, "jax", output_shape_dtype=declared))(X), jax_model(X))
    assert len(inferred) == 2


def test_tf_to_jax_plain_restored_function_with_none_dims_under_jit(tmp_path: Path) -> None:
    # TF's shape inference sees through the restored call: no inference needed here.
    module = tf.Module()
    module.w = tf.Variable(W)
    spec = tf.TensorSpec([None, 3], tf.float32)
    module.f = tf.function(lambda x: tf.tanh(tf.sin(x) @ module.w), input_signature=[spec])
    tf.saved_model.save(module, str(tmp_path))
    loaded = tf.saved_model.load(str(tmp_path))  # holds the variables the function reads
    close(jax.jit(convert(loaded.f, "jax"))(X), jax_model(X))


def test_tf_to_jax_refuses_shapes_that_depend_on_values_under_jit() -> None:
    """x[0:x[1]]: eagerly [1, 2]; under jax.jit XLA knows only the bound (3), which was
    taken as the size ([1, 2, 3]). Refused, as raw call_tf refuses it."""
    g = convert(tf.function(lambda x: x[0 : x[1]]), "jax")
    x = jnp.array([1, 2, 3])
    np.testing.assert_array_equal(g(x), [1, 2])
    with pytest.raises(ValueError, match="dynamic shape"):
        jax.jit(jax2tf.call_tf(tf.function(lambda x: x[0 : x[1]])))(x)
    with pytest.raises(ConversionError, match=r"depends on the input values") as err:
        jax.jit(g)(x)
    assert "outside jax.jit" in str(err.value)


def test_tf_to_jax_output_shape_dtype_is_checked_on_every_call() -> None:
    square = tf.function(lambda x: x * x)
    x = jnp.arange(3.0)
    right = jax.ShapeDtypeStruct((3,), jnp.float32)
    close(convert(square, "jax", output_shape_dtype=right)(x), x * x)
    close(jax.jit(convert(square, "jax", output_shape_dtype=right))(x), x * x)
    wrong = {
        "shape": jax.ShapeDtypeStruct((5,), jnp.float32),
        "dtype": jax.ShapeDtypeStruct((3,), jnp.int32),
        "structure": (right,),
        "None": None,  # explicit None: the function returns nothing (as call_tf takes it)
    }
    for what, declared in wrong.items():
        g = convert(square, "jax", output_shape_dtype=declared)
        for call in (g, jax.jit(g)):  # concrete calls checked too (call_tf is not used)
            with pytest.raises(ConversionError, match="output_shape_dtype= declares") as err:
                call(x)
            assert what != "None" or "PyTreeDef(None)" in str(err.value)
    # A function that returns nothing, with output_shape_dtype=None, as under call_tf.
    nothing = convert(tf.function(lambda x: None), "jax", output_shape_dtype=None)
    assert nothing(x) is None
    assert jax.jit(nothing)(x) is None
    # Values that are not shapes are refused by to() itself.
    for bad in (5, tf.TensorSpec([3], tf.float32), jax.ShapeDtypeStruct((None,), jnp.float32)):
        with pytest.raises(interop_core.OptionError, match=r"^Option output_shape_dtype="):
            convert(square, "jax", output_shape_dtype=bad)


def test_tf_to_jax_grad_through_tf_gather() -> None:
    """TF's gradient of tf.gather has shape [None, n] to TF's shape inference; its real
    shape is the table's, which the bridge declares (raw call_tf: eager grad only)."""
    table = np.linspace(0, 1, 40, dtype=np.float32).reshape(10, 4)
    idx = np.array([1, 3, 3])

    @tf.function
    def lookup(t: Any, i: Any) -> Any:
        return tf.reduce_sum(tf.gather(t, i) ** 2)

    t = tf.constant(table)
    with tf.GradientTape() as tape:
        tape.watch(t)
        y = lookup(t, idx)
    want = tf.convert_to_tensor(tape.gradient(y, t))  # IndexedSlices: rows 1 and 3
    g = convert(lookup, "jax")
    close(jax.grad(g)(jnp.asarray(table), idx), want)
    close(jax.jit(jax.grad(g))(jnp.asarray(table), idx), want)
    close(jax.grad(jax2tf.call_tf(lookup))(jnp.asarray(table), idx), want)
    # The integer argument's cotangent is float0, as JAX requires.
    _, grads = jax.value_and_grad(g, argnums=(0, 1), allow_int=True)(jnp.asarray(table), idx)
    assert grads[1].dtype == jax.dtypes.float0


def test_tf_to_jax_tensor_array_results_say_to_stack() -> None:
    def rows(x: Any) -> Any:
        out = tf.TensorArray(tf.float32, size=2)
        return out.write(0, x).write(1, 2 * x)

    g = convert(tf.function(rows), "jax")
    for call in (g, jax.jit(g)):
        with pytest.raises(ConversionError, match=r"stack\(\)"):
            call(jnp.ones(3))
    stacked = convert(tf.function(lambda x: rows(x).stack()), "jax")
    close(stacked(jnp.ones(3)), [[1, 1, 1], [2, 2, 2]])


def test_tf_to_jax_vmap_and_forward_mode_raise_unsupported() -> None:
    g = convert(lambda x: tf.sin(x) * 2.0, "jax")
    vmap, forward = "jax.lax.map", "reverse mode"  # what each message advises
    transforms = {
        "vmap": (vmap, lambda: jax.vmap(g)(X)),
        "jit(vmap)": (vmap, lambda: jax.jit(jax.vmap(g))(X)),
        "vmap(jit)": (vmap, lambda: jax.vmap(jax.jit(g))(X)),
        "jacrev": (vmap, lambda: jax.jacrev(g)(X[0])),
        "jacrev(jit)": (vmap, lambda: jax.jacrev(jax.jit(g))(X[0])),
        "jvp": (forward, lambda: jax.jvp(g, (X,), (X,))),
        "jit(jvp)": (forward, lambda: jax.jit(lambda x: jax.jvp(g, (x,), (x,)))(X)),
        "jacfwd": (forward, lambda: jax.jacfwd(g)(X[0])),
        "hessian": (forward, lambda: jax.hessian(lambda x: g(x).sum())(X[0])),
    }
    for name, (advice, run) in transforms.items():
        with pytest.raises(UnsupportedTransformError, match=advice):
            run()
        assert name
    # jax.jvp outside a jax.jit around the function never reaches the bridge: JAX's own error.
    with pytest.raises(TypeError, match="forward-mode autodiff"):
        jax.jvp(jax.jit(g), (X,), (X,))
    # The advice holds: a loop works, under jit too.
    model = convert(tf_model, "jax")
    close(jax.jit(lambda x: jax.lax.map(model, x))(X[:, None]), tf_model(X[:, None]))


def test_tf_to_jax_captured_variables_are_constants_under_jit() -> None:
    v = tf.Variable(2.0)
    g = convert(tf.function(lambda x: x * v), "jax")
    close(g(X), 2 * X)
    jitted = jax.jit(g)
    close(jitted(X), 2 * X)
    v.assign(3.0)
    close(g(X), 3 * X)  # the eager path reads the variable on every call
    close(jitted(X), 2 * X)  # jit baked in 2.0: stale until jax retraces
    close(jitted(X[:2]), 3 * X[:2])  # a new shape retraces and reads 3.0


# ------------------------------------------------------------------ through the public API


def test_jitted_and_tf_functions_need_no_source() -> None:
    g = to(jax.jit(jax_model), "tf")
    close(g(tf.constant(X)), jax_model(X))
    h = to(tf.function(tf_model), "jax")
    out = h(jnp.asarray(X))
    assert isinstance(out, jax.Array)
    close(out, tf_model(X))


def test_explain_shows_the_bridge_and_its_caveats() -> None:
    route = explain(jax_model, "tensorflow", source="jax")
    assert route.kind == "function"
    assert [(s.converter, s.source, s.target) for s in route.steps] == [
        ("jax2tf.convert", "jax function", "tensorflow function")
    ]
    assert "exported once per traced input signature" in str(route)
    back = explain(tf.function(tf_model), "jax", trace=False)
    assert [s.converter for s in back.steps] == ["jax2tf.call_tf"]
    assert any("baked in as constants" in n for n in back.notes)


def test_options_go_to_the_edge_that_takes_them() -> None:
    with pytest.raises(interop_core.OptionError, match=r"jax2tf.call_tf \[tensorflow->jax"):
        to(jax_model, "tensorflow", source="jax", output_shape_dtype=None)
    with pytest.raises(interop_core.OptionError, match="Pass source="):
        to(jax_model, "tensorflow")
    with pytest.raises(interop_core.UnknownFrameworkError, match="jaxx"):
        to(jax_model, "tensorflow", source="jaxx")
