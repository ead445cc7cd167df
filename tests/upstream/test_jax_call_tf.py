# ruff: noqa: E501  (the "upstream: <repo>/<path>::<Class>::<test>" lines exceed 100)
"""JAX's call_tf tests, re-expressed through ``to(tf_fn, "jax")``.

Carries jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py (as of the jax 0.10.2
release, the installed jax; the file is unchanged since): the cases of ``CallTfTest``,
``RoundTripToJaxTest`` and ``RoundTripToTfTest`` that use call_tf's public API (eager calls,
jax.jit, jax.grad, pytrees, scalars, dtypes, variables and captures, ``output_shape_dtype``,
errors, round trips with jax2tf and SavedModels). Left out: JAX and TensorFlow internals
(``test_experimental_get_compiler_ir_design_doc``, ``test_effectful``, the lowering checks of
``test_multi_platform*``), the ``call_tf_graph``/``ordered`` flags (no ``to()`` equivalent),
and GPU/TPU-only paths (``test_avoid_copy_between_gpu_and_cpu`` is re-expressed for the CPU,
where the project promises zero-copy).

How: ``jax2tf.call_tf(f_tf)`` becomes ``to(f_tf, "jax")``, ``jax2tf.convert(f_jax)``
becomes ``to(f_jax, "tensorflow", source="jax")``. Upstream passes plain Python functions;
here most become ``tf.function(autograph=False)`` first (AutoGraph's rewrite would cost a
quarter of a second per case), and a sample converts plain, with ``source="tensorflow"``
(``convert(..., plain=True)``). Every case runs on both tf -> jax bridges:
``tf2jax`` (the default: native JAX code, falling back to call_tf per signature where tf2jax
cannot run the function, ``g.fallback`` saying why) and ``call_tf`` (``trace=False``).
Upstream's ``with_jit`` is the ``eager``/``jit`` parameter. Values are checked against the
reference computation upstream uses (numpy or jax.numpy), results must be ``jax.Array``s,
and errors must be ``InteropError``s (keeping the framework's exception as ``__cause__``
where one was raised) instead of upstream's ValueError/TypeError. Issue 29's cases are here:
output shapes that depend on input values (``test_dynamic_shape_*``: run eagerly, refused
under jax.jit/jax.grad naming the op), jax2tf output and SavedModels of it taken back to
JAX (``test_roundtrip_to_jax_*``, ``test_several_round_trips``), string results
(``test_error_bad_result_string``). Sizes are small and SavedModels are made once per module
(``saved`` and the ``restored_*`` fixtures).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from conftest import need

np = need("numpy")
jax = need("jax")
tf = need("tensorflow")
jnp = jax.numpy

from interop_core import (  # noqa: E402
    ConversionError,
    InteropError,
    NoRouteError,
    to,
)

_TF2JAX = importlib.util.find_spec("tf2jax") is not None

ROUTES = [
    pytest.param(
        {}, id="tf2jax", marks=pytest.mark.skipif(not _TF2JAX, reason="tf2jax is not installed")
    ),
    pytest.param({"trace": False}, id="call_tf"),
]
JIT = [pytest.param(False, id="eager"), pytest.param(True, id="jit")]
#: The dtypes of upstream's test_dtypes: jtu.dtypes.all without bool, as JAX has them with
#: x64 off (the default): no 64-bit types.
DTYPES = ["bfloat16", "float16", "float32", "int8", "int16", "int32", "uint8", "uint16",
          "uint32", "complex64"]  # fmt: skip


# ------------------------------------------------------------------------------- helpers


def convert(fn: Any, route: dict[str, Any], *, plain: bool = False, **options: Any) -> Any:
    """``to(fn, "jax")`` on ``route``. A plain TF callable becomes a
    ``tf.function(autograph=False)`` first (AutoGraph's rewrite costs a quarter of a second
    per function, and none here has Python control flow), unless ``plain``: then it
    converts as it is, with ``source="tensorflow"``."""
    if not hasattr(fn, "get_concrete_function"):
        if plain:
            options["source"] = "tensorflow"
        else:
            fn = tf.function(fn, autograph=False)
    return to(fn, "jax", **route, **options)


def back_to_tf(fn: Callable[..., Any], **options: Any) -> Any:
    """``jax2tf.convert(fn)``, through to()."""
    return to(fn, "tensorflow", source="jax", **options)


def maybe_jit(with_jit: bool, fn: Callable[..., Any]) -> Callable[..., Any]:
    return jax.jit(fn) if with_jit else fn


def maybe_tf_jit(with_jit: bool, fn: Callable[..., Any]) -> Callable[..., Any]:
    return tf.function(fn, autograph=False, jit_compile=True) if with_jit else fn


def close(got: Any, want: Any, tol: float = 1e-5) -> None:
    """Same structure and values (leaves of any framework)."""
    lg, tg = jax.tree_util.tree_flatten(got)
    lw, tw = jax.tree_util.tree_flatten(want)
    assert tg == tw, (tg, tw)
    for g, w in zip(lg, lw, strict=True):
        np.testing.assert_allclose(_host(g), _host(w), rtol=tol, atol=tol)


def _host(x: Any) -> Any:
    """``x`` as a numpy array, bfloat16 (which numpy compares badly) as float32."""
    if isinstance(x, tf.Tensor):
        x = tf.cast(x, tf.float32) if x.dtype == tf.bfloat16 else x
        return x.numpy()
    x = np.asarray(x)
    return x.astype(np.float32) if x.dtype == jnp.bfloat16 else x


def arrays(tree: Any, *dtypes: Any) -> None:
    """Every leaf of ``tree`` is a jax.Array; with ``dtypes``, of those dtypes in order."""
    leaves = jax.tree_util.tree_leaves(tree)
    for leaf in leaves:
        assert isinstance(leaf, jax.Array), type(leaf)
    if dtypes:
        assert [leaf.dtype for leaf in leaves] == [np.dtype(d) for d in dtypes]


def framework_cause(err: BaseException, *, context: bool = False) -> BaseException | None:
    """The first exception in ``err``'s ``__cause__`` chain that is neither an InteropError
    nor JAX's note on where a traced operation came from (JaxStackTraceBeforeTransformation,
    which JAX inserts into the chain). ``context``: follow ``__context__`` too, for errors
    raised while a tf.function traces, whose ``__cause__`` TensorFlow's traceback filtering
    drops (``raise e.with_traceback(...) from None``)."""
    seen = err.__cause__ or (err.__context__ if context else None)
    while seen is not None:
        if not isinstance(seen, InteropError) and (
            type(seen).__name__ != "JaxStackTraceBeforeTransformation"
        ):
            return seen
        seen = seen.__cause__ or (seen.__context__ if context else None)
    return None


def save_and_load(
    fn: Callable[..., Any],
    path: Path,
    *,
    args: tuple[Any, ...] = (),
    signature: list[Any] | None = None,
    variables: list[Any] | None = None,
    gradients: bool = True,
) -> tuple[Any, Any]:
    """A SavedModel of ``fn`` (a tf.function with ``signature``, or the specs of ``args``)
    on a tf.Module holding ``variables``: the restored function and the restored module."""
    module = tf.Module()
    module.variables_ = variables or []
    specs = signature or [
        tf.TensorSpec(np.shape(a), tf.as_dtype(np.asarray(a).dtype)) for a in args
    ]
    module.f = tf.function(fn, autograph=False, input_signature=specs)
    options = tf.saved_model.SaveOptions(experimental_custom_gradients=gradients)
    tf.saved_model.save(module, str(path), options=options)
    restored = tf.saved_model.load(str(path))
    return restored.f, restored


def tf_value_and_grad(fn: Callable[..., Any], x: Any) -> tuple[Any, Any]:
    """fn(x) and d fn(x)/dx by tf.GradientTape."""
    xv = tf.Variable(x)
    with tf.GradientTape() as tape:
        y = fn(xv)
    return y, tape.gradient(y, xv)


# ======================================================================== CallTfTest


@pytest.mark.parametrize("with_jit", JIT)
@pytest.mark.parametrize("route", ROUTES)
def test_eval_scalar_arg(route: dict[str, Any], with_jit: bool) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_eval_scalar_arg"""
    res = maybe_jit(with_jit, convert(tf.math.sin, route))(3.0)
    arrays(res, "float32")
    close(res, jnp.sin(3.0))


def _scalar_res_cases() -> list[Any]:
    out = []
    for route in ROUTES:
        for jit in JIT:
            marks = list(route.marks)
            out.append(
                pytest.param(route.values[0], jit.values[0], id=f"{route.id}-{jit.id}", marks=marks)
            )
    return out


@pytest.mark.parametrize(("route", "with_jit"), _scalar_res_cases())
def test_eval_scalar_res(route: dict[str, Any], with_jit: bool) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_eval_scalar_res"""
    res = maybe_jit(with_jit, convert(lambda x: 4.0, route, plain=True))(3.0)
    close(res, 4.0)
    arrays(res)


@pytest.mark.parametrize("with_jit", JIT)
@pytest.mark.parametrize("route", ROUTES)
def test_eval_numpy_arg(route: dict[str, Any], with_jit: bool) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_eval_numpy_arg"""
    x = np.ones((2, 3), dtype=np.float32)
    res = maybe_jit(with_jit, convert(tf.math.sin, route, plain=True))(x)
    arrays(res, "float32")
    close(res, jnp.sin(x))


@pytest.mark.parametrize("with_jit", JIT)
@pytest.mark.parametrize("route", ROUTES)
def test_eval_numpy_res(route: dict[str, Any], with_jit: bool) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_eval_numpy_res

    DIFFERS: called on concrete arrays, the float64 argument (the tf2jax route) or result
    (the call_tf route) is a NoRouteError: with jax_enable_x64 off, to() refuses to narrow
    float64 into JAX silently, where call_tf narrows it to float32 (as the jitted call
    does)."""
    x = np.ones((2, 3))
    g = maybe_jit(with_jit, convert(lambda _: x, route))
    if not with_jit:
        with pytest.raises(NoRouteError, match="float64"):
            g(x)
        return
    res = g(x)
    arrays(res, "float32")
    close(res, x)


@pytest.mark.parametrize("with_jit", JIT)
@pytest.mark.parametrize("route", ROUTES)
def test_eval_devicearray_arg(route: dict[str, Any], with_jit: bool) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_eval_devicearray_arg"""
    x = jnp.ones((2, 3), dtype=np.float32)
    res = maybe_jit(with_jit, convert(tf.math.sin, route))(x)
    arrays(res, "float32")
    close(res, jnp.sin(x))


@pytest.mark.parametrize("route", ROUTES)
def test_eval_devicearray_arg_bfloat16_scalar(route: dict[str, Any]) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_eval_devicearray_arg

    The bfloat16 scalar part: upstream's call_tf copies it. DIFFERS on the call_tf route:
    concrete calls hand TensorFlow a zero-copy view and take its result back zero-copy, so
    the identity returns the input's own buffer (tf2jax's JAX code returns a new one)."""
    x = jnp.array(3.0, dtype=jnp.bfloat16)
    res = convert(lambda x: x, route)(x)
    arrays(res, "bfloat16")
    close(res, x)
    shared = res.unsafe_buffer_pointer() == x.unsafe_buffer_pointer()
    assert shared == bool(route)


@pytest.mark.parametrize("with_jit", JIT)
@pytest.mark.parametrize("route", ROUTES)
def test_eval_pytree(route: dict[str, Any], with_jit: bool) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_eval_pytree

    DIFFERS: called on concrete arrays, the float64 arguments y (the tf2jax route) or their
    sum (the call_tf route) are a NoRouteError naming the place: to() does not narrow
    float64 into JAX silently (x64 is off); jitted, it is float32 as upstream's call_tf
    gives."""

    def fun_tf(x: dict[str, Any], y: tuple[Any, Any]) -> tuple[Any, Any]:
        return (x["first"] * x["second"], y[0] + y[1])

    x = dict(first=np.float32(3.0), second=np.float32(4.0))
    y = (np.float64(5.0), np.float64(6.0))
    g = maybe_jit(with_jit, convert(fun_tf, route, plain=True))
    if not with_jit:
        with pytest.raises(NoRouteError, match=r"At \[.*float64"):
            g(x, y)
        return
    res = g(x, y)
    assert isinstance(res, tuple)
    arrays(res, "float32", "float32")
    close(res, (np.float32(12.0), np.float32(11.0)))


@pytest.mark.parametrize("route", ROUTES)
def test_result_tuple(route: dict[str, Any]) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_result_tuple"""
    x1 = np.ones(3, dtype=np.int32)
    x2 = np.ones(5, dtype=np.float32)
    res = jax.jit(convert(lambda: tf.tuple([x1, x2]), route))()
    assert len(res) == 2
    arrays(res, "int32", "float32")
    close(list(res), [x1, x2])


def _strings_tf(x: Any) -> Any:
    return tf.strings.length(tf.strings.format("Hello {}!", [x]))


@pytest.mark.parametrize("route", ROUTES)
def test_error_non_compilable_strings_eager(route: dict[str, Any]) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_error_non_compilable_strings

    The concrete call runs TensorFlow: on the tf2jax route through the call_tf fallback,
    g.fallback naming the string ops tf2jax has no translation for."""
    g = convert(_strings_tf, route)
    x = np.float32(0.7)
    res = g(x)
    arrays(res, "int32")
    close(res, _strings_tf(x).numpy())
    assert int(res) == len("Hello 0.7!")
    if not route:
        assert "StringFormat" in g.fallback


@pytest.mark.parametrize(
    "how",
    [
        pytest.param("jit"),
        pytest.param("lax_cond"),
    ],
)
@pytest.mark.parametrize("route", ROUTES)
def test_error_non_compilable_strings_staged(route: dict[str, Any], how: str) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_error_non_compilable_strings

    DIFFERS: staged (jax.jit, lax.cond) the function cannot compile with XLA: an
    InteropError raised when the call is staged, keeping TensorFlow's XLA refusal
    ("Detected unsupported operations") as its cause, where upstream raises call_tf's
    ValueError ("Error compiling TensorFlow function") later, while JAX lowers."""
    g = convert(_strings_tf, route)
    x = np.float32(0.7)
    with pytest.raises(InteropError) as err:
        if how == "jit":
            jax.jit(g)(x)
        else:
            jax.lax.cond(True, lambda x: g(x), lambda x: g(x), x)
    cause = framework_cause(err.value)
    assert cause is not None and "unsupported operations" in str(cause)
    assert "XLA" in str(err.value)


@pytest.mark.parametrize("with_jit", JIT)
@pytest.mark.parametrize("route", ROUTES)
def test_error_bad_result_tensorarray(route: dict[str, Any], with_jit: bool) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_error_bad_result_tensorarray

    DIFFERS: a ConversionError (an InteropError) saying to stack() the TensorArray, eagerly
    too, where upstream raises ValueError "not convertible to JAX" under jax.jit."""

    def fun_tf() -> Any:
        ta = tf.TensorArray(tf.int32, size=0, dynamic_size=True)
        return ta.unstack([0, 1, 2, 3, 4])

    with pytest.raises(ConversionError, match=r"(?s)TensorArray.*stack\(\)"):
        maybe_jit(with_jit, convert(fun_tf, route))()


@pytest.mark.parametrize("with_jit", JIT)
@pytest.mark.parametrize("route", ROUTES)
def test_error_bad_result_string(route: dict[str, Any], with_jit: bool) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_error_bad_result_string

    DIFFERS: an InteropError saying JAX cannot hold strings (eagerly too), where upstream
    raises ValueError "not convertible to JAX" under jax.jit; never a raw TypeError."""
    with pytest.raises(InteropError, match="string"):
        maybe_jit(with_jit, convert(lambda: tf.constant("foo"), route, plain=True))()


@pytest.mark.parametrize("with_jit", JIT)
@pytest.mark.parametrize("route", ROUTES)
def test_control_flow(route: dict[str, Any], with_jit: bool) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_control_flow"""

    def times_5_tf(x: Any) -> Any:
        def body(i: Any, acc: Any) -> tuple[Any, Any]:
            return tf.add(i, 1), tf.add(acc, x)

        _, acc = tf.while_loop(lambda i, acc: tf.less(i, 5), body, [tf.constant(0), 0.0])
        return acc

    times_5 = convert(times_5_tf, route)

    def fun_jax(x: Any) -> Any:
        return jax.lax.fori_loop(0, 3, lambda _, acc: times_5(acc), x)

    x = np.float32(3.0)
    res = maybe_jit(with_jit, fun_jax)(x)
    arrays(res, "float32")
    close(res, np.float32(x * 5 * 5 * 5))


@pytest.mark.parametrize("with_jit", JIT)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("route", ROUTES)
def test_dtypes(route: dict[str, Any], dtype: str, with_jit: bool) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_dtypes"""
    dt = jnp.dtype(dtype)

    def fun_tf(x: Any) -> Any:
        return tf.raw_ops.AddV2(x=x, y=tf.constant(3, dtype=tf.as_dtype(dt)))

    g = convert(fun_tf, route)
    x = np.ones((3,), dtype=dt)
    res = maybe_jit(with_jit, lambda x: g(x) + x)(x)
    arrays(res, dt)
    close(res, np.full(3, 5, dt))


@pytest.mark.parametrize("with_jit", JIT)
@pytest.mark.parametrize("route", ROUTES)
def test_bool(route: dict[str, Any], with_jit: bool) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_bool"""
    x = np.array([True, False, True, False], dtype=np.bool_)
    y = np.array([True, True, False, False], dtype=np.bool_)
    res = maybe_jit(with_jit, convert(tf.math.logical_and, route))(x, y)
    arrays(res, "bool")
    np.testing.assert_array_equal(res, [True, False, False, False])


@pytest.mark.parametrize("with_jit", JIT)
@pytest.mark.parametrize("route", ROUTES)
def test_x64_input(route: dict[str, Any], with_jit: bool) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_x64_input"""
    res = maybe_jit(with_jit, convert(tf.math.sin, route))(5.0)
    arrays(res, "float32")
    close(res, jnp.sin(5.0))


@pytest.mark.parametrize("with_jit", JIT)
@pytest.mark.parametrize("route", ROUTES)
def test_x64_output(route: dict[str, Any], with_jit: bool) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_x64_output

    DIFFERS: on the call_tf route's concrete path the float64 constant is a NoRouteError
    (to() does not narrow float64 into JAX silently with x64 off); jitted, and on tf2jax,
    it is float32 as with upstream's call_tf."""
    g = maybe_jit(with_jit, convert(lambda x: (tf.constant(3.0, tf.float64), x), route))
    x = np.float32(5.0)
    if route and not with_jit:
        with pytest.raises(NoRouteError, match=r"At \[0\].*float64"):
            g(x)
    else:
        res = g(x)
        arrays(res, "float32", "float32")
        close(res, (np.float32(3.0), x))
    close(jax.jit(convert(lambda x: (tf.constant(3.0, tf.float64), x), route))(x), (3.0, x))


@pytest.mark.parametrize("with_jit", JIT)
@pytest.mark.parametrize("route", ROUTES)
def test_with_var_read(route: dict[str, Any], with_jit: bool) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_with_var_read"""
    outer = np.array([3.0, 4.0], dtype=np.float32)
    var = tf.Variable(outer)
    x = np.array([2.0, 5.0], dtype=np.float32)
    res = maybe_jit(with_jit, convert(lambda x: x * var + 1.0, route))(x)
    arrays(res, "float32")
    close(res, x * outer + 1.0)


@pytest.mark.parametrize("with_jit", JIT)
@pytest.mark.parametrize("route", ROUTES)
def test_with_var_read_x64(route: dict[str, Any], with_jit: bool) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_with_var_read_x64"""
    outer = np.array([3.0, 4.0], dtype=np.float64)
    var = tf.Variable(outer)
    x = np.array([2.0, 5.0], dtype=np.float32)
    res = maybe_jit(with_jit, convert(lambda x: x * tf.cast(var, x.dtype) + 1.0, route))(x)
    arrays(res, "float32")
    close(res, x * outer + 1.0)


@pytest.mark.parametrize("route", ROUTES)
def test_with_var_different_shape(route: dict[str, Any]) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_with_var_different_shape"""
    v = tf.Variable((4.0, 2.0), dtype=tf.float32)

    def tf_func(x: Any) -> Any:
        return v + x

    x = np.float32(123.0)
    res = jax.jit(convert(tf_func, route))(x)
    arrays(res, "float32")
    close(res, tf_func(x))
    close(res, np.array([127.0, 125.0]))


@pytest.mark.parametrize(
    "with_jit",
    [
        pytest.param(False, id="eager"),
        pytest.param(True, id="jit"),
    ],
)
@pytest.mark.parametrize("route", ROUTES)
def test_with_var_write_error(route: dict[str, Any], with_jit: bool) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_with_var_write_error

    Eagerly the write happens (on tf2jax through the call_tf fallback, which g.fallback
    names). Upstream skips the jitted case ("variable writes not yet working").

    DIFFERS: under jax.jit the write is refused when the call is staged, an InteropError
    naming the write op (read off the graph: no framework exception to keep), where
    call_tf would fail later, while JAX lowers, with a raw ValueError."""
    outer = tf.Variable(3.0, dtype=np.float32)

    def fun_tf(x: Any) -> Any:
        outer.assign(tf.constant(4.0))
        return x * outer + 1.0

    g = convert(fun_tf, route, plain=True)
    x = np.float32(2.0)
    if with_jit:
        with pytest.raises(InteropError, match="AssignVariableOp"):
            jax.jit(g)(x)
        assert float(outer.numpy()) == 3.0  # refused before anything ran
        return
    res = g(x)
    arrays(res, "float32")
    close(res, x * 4.0 + 1)
    assert float(outer.numpy()) == 4.0
    if not route:
        assert "AssignVariableOp" in g.fallback


@pytest.mark.parametrize("with_jit", JIT)
@pytest.mark.parametrize("route", ROUTES)
def test_with_tensor_capture(route: dict[str, Any], with_jit: bool) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_with_tensor_capture"""
    outer = tf.constant(3.0, dtype=np.float32)
    x = np.float32(2.0)
    res = maybe_jit(with_jit, convert(lambda x: x * outer + 1.0, route))(x)
    arrays(res, "float32")
    close(res, x * 3.0 + 1.0)


@pytest.mark.parametrize("with_jit", JIT)
@pytest.mark.parametrize("route", ROUTES)
def test_with_tensor_capture_x64(route: dict[str, Any], with_jit: bool) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_with_tensor_capture_x64"""
    outer = tf.constant(3.0, dtype=np.float64)
    x = np.float32(2.0)
    g = convert(lambda x: x * tf.cast(outer * 3.14, tf.float32) + 1.0, route)
    res = maybe_jit(with_jit, g)(x)
    arrays(res, "float32")
    close(res, x * 3.0 * 3.14 + 1.0)


@pytest.mark.parametrize("with_jit", JIT)
@pytest.mark.parametrize("route", ROUTES)
def test_with_value_capture(route: dict[str, Any], with_jit: bool) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_with_value_capture"""
    outer = np.array(3.0, dtype=np.float32)
    x = np.float32(2.0)
    res = maybe_jit(with_jit, convert(lambda x: x * outer + 1.0, route))(x)
    arrays(res, "float32")
    close(res, x * 3.0 + 1.0)


@pytest.mark.parametrize("with_jit", JIT)
@pytest.mark.parametrize("route", ROUTES)
def test_with_multiple_capture(route: dict[str, Any], with_jit: bool) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_with_multiple_capture"""
    v2 = tf.Variable(2.0, dtype=np.float32)
    v3 = tf.Variable(3.0, dtype=np.float32)
    t4 = tf.constant(4.0, dtype=np.float32)
    t5 = tf.constant(5.0, dtype=np.float32)
    x = np.float32(2.0)
    res = maybe_jit(with_jit, convert(lambda x: (x * v3 + t4 + v2) * v3 + t5, route))(x)
    arrays(res, "float32")
    close(res, (x * 3.0 + 4.0 + 2.0) * 3.0 + 5.0)


@pytest.mark.parametrize("route", ROUTES)
def test_with_capture_then_convert_again(route: dict[str, Any]) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_with_capture_then_convert_again"""
    captured = tf.Variable(np.arange(64, dtype=np.float32))
    again = back_to_tf(convert(lambda x: tf.math.add(x, captured), route))
    x = np.arange(64, dtype=np.float32)
    res = again(x)
    assert isinstance(res, tf.Tensor) and res.dtype == tf.float32
    close(res, 2 * x)
    # Upstream's bug showed only in graph mode: a tf.function around the converted function.
    close(tf.function(again, autograph=False)(x), 2 * x)


@pytest.mark.parametrize("with_jit", JIT)
@pytest.mark.parametrize("route", ROUTES)
def test_grad(route: dict[str, Any], with_jit: bool) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_grad"""
    x = np.float32(3.0)
    res = maybe_jit(with_jit, jax.grad(convert(tf.math.sin, route)))(x)
    arrays(res, "float32")
    close(res, np.cos(x))


@pytest.mark.parametrize("with_jit", JIT)
@pytest.mark.parametrize("route", ROUTES)
def test_grad_pytree(route: dict[str, Any], with_jit: bool) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_grad_pytree"""

    def fun_tf(x: dict[str, Any], y: tuple[Any, Any]) -> Any:
        return x["first"] * x["second"] + 3.0 * y[0] + 4.0 * y[1]

    x = dict(first=np.float32(3.0), second=np.float32(4.0))
    y = (np.float32(5.0), np.float32(6.0))
    grad_x = maybe_jit(with_jit, jax.grad(convert(fun_tf, route, plain=True)))(x, y)
    assert set(grad_x) == {"first", "second"}
    arrays(grad_x, "float32", "float32")
    close(grad_x, dict(first=np.float32(4.0), second=np.float32(3.0)))


@pytest.mark.parametrize("route", ROUTES)
def test_grad_nested(route: dict[str, Any]) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_grad_nested

    The cotangents reaching the TF function are not scalars: they have the outputs' shapes."""
    b = np.array([[11.0, 12.0, 13.0], [21.0, 22.0, 23.0]], dtype=np.float32)
    c = np.array([[31.0, 32.0], [41.0, 42.0], [51.0, 52.0], [61.0, 62.0]], dtype=np.float32)

    def f_tf(d: dict[str, Any]) -> dict[str, Any]:
        return dict(r=tf.matmul(d["c"], d["b"]), s=7.0 * d["c"])

    def f_jax(d: dict[str, Any]) -> dict[str, Any]:
        return dict(r=jnp.matmul(d["c"], d["b"]), s=7.0 * d["c"])

    def loss(functional: Callable[..., Any], d: dict[str, Any]) -> Any:
        prediction = functional(d)
        weights = np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32)
        return jnp.sum(jnp.matmul(weights, prediction["r"])) + 4.0 * jnp.sum(prediction["s"])

    d = dict(b=b, c=c)
    got = jax.grad(partial(loss, convert(f_tf, route)))(d)
    arrays(got, "float32", "float32")
    close(got, jax.grad(partial(loss, f_jax))(d))


@pytest.mark.parametrize("route", ROUTES)
def test_grad_int_argument(route: dict[str, Any]) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_grad_int_argument

    The state pytree holds a Python int and bool, returned as they are (jax#6975)."""

    def f(param: Any, state: dict[str, Any], x: Any) -> tuple[Any, Any]:
        return param * x, state

    param = np.array([0.7, 0.9], dtype=np.float32)
    state = dict(array=np.float32(1.0), counter=7, truth=True)
    x = np.float32(3.0)
    g = convert(f, route, plain=True)
    got = jax.grad(lambda *a: jnp.sum(g(*a)[0]))(param, state, x)
    arrays(got, "float32")
    close(got, jax.grad(lambda *a: jnp.sum(f(*a)[0]))(param, state, x))


@pytest.mark.parametrize("route", ROUTES)
def test_grad_int_argument_unused(route: dict[str, Any]) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_grad_int_argument_unused

    A jax2tf-converted model (to(..., "tensorflow")) taken back to JAX; its integer rng
    argument is unused."""
    batch_size = 5
    inputs = np.ones((batch_size, 3), dtype=np.float32)
    rng = np.array([1, 2], dtype=np.uint32)
    params = np.float32(0.5)

    def jax_model(params: Any, rng: Any, inputs: Any) -> Any:
        return jnp.ones([batch_size, 2], dtype=jnp.float32)

    def loss(inference_fn: Callable[..., Any], params: Any, rng: Any, inputs: Any) -> Any:
        return jnp.mean(inference_fn(params, rng, inputs))

    tf_model = back_to_tf(jax_model, with_gradient=True)
    want = jax.grad(partial(loss, jax_model))(params, rng, inputs)
    paramsv = tf.Variable(params)
    with tf.GradientTape() as tape:
        tf_loss = tf.reduce_mean(tf_model(paramsv, rng, inputs))
    close(tape.gradient(tf_loss, paramsv), want)
    got = jax.grad(partial(loss, convert(tf_model, route)))(params, rng, inputs)
    arrays(got, "float32")
    close(got, want)


@pytest.mark.parametrize("route", ROUTES)
def test_grad_with_float0_result(route: dict[str, Any]) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_grad_with_float0_result"""

    def f_jax(x: Any, y: Any) -> tuple[Any, Any]:
        return (2 * x, 2 * x + y * y)

    def f_tf(x: Any, y: Any) -> tuple[Any, Any]:
        return (2 * x, tf.cast(2 * x, dtype=y.dtype) + y * y)

    def wrapper(functional: Callable[..., Any], x: Any, y: Any) -> Any:
        return jnp.sum(2.0 * functional(3 * x, 4.0 * y)[1])

    x, y = np.int32(2), np.float32(3.0)
    want = jax.grad(partial(wrapper, f_jax), allow_int=True, argnums=(0, 1))(x, y)
    got = jax.grad(partial(wrapper, convert(f_tf, route)), allow_int=True, argnums=(0, 1))(x, y)
    assert want[0].dtype == jax.dtypes.float0
    assert got[0].dtype == jax.dtypes.float0
    close(got[1], want[1])


@pytest.mark.parametrize("with_jit", JIT)
@pytest.mark.parametrize("route", ROUTES)
def test_grad_custom(route: dict[str, Any], with_jit: bool) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_grad_custom

    TensorFlow's custom gradient (3x instead of 2x) is the one JAX gets."""

    @tf.custom_gradient
    def func_square_tf(x: Any) -> Any:
        def grad(dy: Any, variables: Any = None) -> Any:
            return (3.0 * x * dy,)

        return x * x, grad

    x = np.float32(4.0)
    grad_x = maybe_jit(with_jit, jax.grad(convert(func_square_tf, route)))(x)
    arrays(grad_x, "float32")
    close(grad_x, np.float32(3.0) * x)


@pytest.mark.parametrize("with_jit", JIT)
@pytest.mark.parametrize("degree", [1, 2, 3])
@pytest.mark.parametrize("route", ROUTES)
def test_higher_order_grad(route: dict[str, Any], degree: int, with_jit: bool) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_higher_order_grad

    Degrees 1 to 3 of upstream's 1 to 4 (the 4th derivative of the cubic is 0; each degree
    costs a second more)."""

    def fun_tf(x: Any) -> Any:
        return 2.0 * x * x * x

    g = maybe_jit(with_jit, convert(fun_tf, route))

    def grads(f: Callable[..., Any]) -> Callable[..., Any]:
        for _ in range(degree):
            f = jax.grad(f)
        return f

    res = grads(lambda x: 3.0 * g(x))(np.float32(5.0))
    arrays(res, "float32")
    x = 5.0  # d^n/dx^n of 6 x^3: 18 x^2, 36 x, 36
    close(res, np.float32([18 * x**2, 36 * x, 36][degree - 1]))


@pytest.mark.parametrize("route", ROUTES)
def test_pmap(route: dict[str, Any]) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_pmap"""
    plus_2 = convert(lambda x: tf.math.add(2.0, x), route)
    x = np.arange(jax.local_device_count(), dtype=np.float32)
    res = jax.pmap(lambda x: np.float32(3.0) * plus_2(x))(x)
    arrays(res, "float32")
    close(res, np.float32(3.0 * (x + 2)))


@pytest.mark.parametrize("route", ROUTES)
def test_repro_193754660(route: dict[str, Any], restored_index: Any) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_repro_193754660

    A SavedModel of a jax2tf function, to JAX, then to TensorFlow again, in a tf.function."""
    x = np.array([0, 1, 2, 3, 4, 5], dtype=np.int32)
    f_jax2 = convert(restored_index, route)
    res = tf.function(back_to_tf(f_jax2), autograph=False)(x)
    assert isinstance(res, tf.Tensor) and res.dtype == tf.int32
    assert int(res.numpy()) == 1
    res_jax = f_jax2(x)
    arrays(res_jax, "int32")
    assert int(res_jax) == 1


@pytest.mark.parametrize("route", ROUTES)
def test_module_documentation(route: dict[str, Any]) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_module_documentation

    cos in TensorFlow, sin in JAX: eagerly, under jax.jit, and differentiated (TF's
    gradient for cos, JAX's for sin)."""
    cos = convert(tf.math.cos, route)

    def cos_tf_sin_jax(x: Any) -> Any:
        return jnp.sin(cos(x))

    x = np.float32(1.0)
    close(cos_tf_sin_jax(x), np.sin(np.cos(x)))
    close(jax.jit(cos_tf_sin_jax)(x), np.sin(np.cos(x)))
    grad = jax.grad(cos_tf_sin_jax)(x)
    arrays(grad, "float32")
    close(grad, -np.cos(np.cos(x)) * np.sin(x))


@pytest.mark.parametrize("route", ROUTES)
def test_tf_gather(route: dict[str, Any]) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_tf_gather

    TF's gradient of tf.gather is an IndexedSlices: JAX gets it dense, of the operand's
    shape, with TensorFlow's values."""
    rng = np.random.default_rng(0)
    operand = jnp.array(rng.uniform(size=(10, 8)), jnp.float32)
    indices = jnp.array(rng.integers(0, 10, size=(40,)), jnp.int32)

    @tf.function(jit_compile=True, autograph=False)
    def fun_tf(operand: Any, indices: Any) -> Any:
        return tf.experimental.numpy.std(tf.gather(operand, indices))

    grad = jax.grad(convert(fun_tf, route))(operand, indices)
    assert grad.shape == (10, 8)
    arrays(grad, "float32")
    t = tf.constant(np.asarray(operand))
    with tf.GradientTape() as tape:
        tape.watch(t)
        y = fun_tf(t, np.asarray(indices))
    close(grad, tf.convert_to_tensor(tape.gradient(y, t)))


@pytest.mark.parametrize("route", ROUTES)
def test_output_shape_dtype_none(route: dict[str, Any]) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_output_shape_dtype_none

    output_shape_dtype= takes the call_tf route on both routes. DIFFERS: the mismatch is a
    ConversionError (an InteropError) naming both structures, where upstream raises
    ValueError."""
    x = jnp.zeros((10), dtype=jnp.float32)

    @tf.function(jit_compile=True, autograph=False)
    def fun_tf(x: Any) -> None:
        return

    assert convert(fun_tf, route, output_shape_dtype=None)(x) is None
    assert convert(fun_tf, route)(x) is None
    declared = jax.ShapeDtypeStruct((10,), jnp.float32)
    with pytest.raises(ConversionError, match=r"(?s)structure PyTreeDef\(None\).*declares"):
        convert(fun_tf, route, output_shape_dtype=declared)(x)


@pytest.mark.parametrize("route", ROUTES)
def test_output_shape_dtype_not_none(route: dict[str, Any]) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_output_shape_dtype_not_none

    DIFFERS: the mismatch is a ConversionError (an InteropError), where upstream raises
    ValueError."""
    x = jnp.zeros((10), dtype=jnp.float32)

    @tf.function(jit_compile=True, autograph=False)
    def fun_tf(x: Any) -> Any:
        return x

    declared = jax.ShapeDtypeStruct((10,), jnp.float32)
    res_1 = convert(fun_tf, route, output_shape_dtype=declared)(x)
    res_2 = convert(fun_tf, route)(x)
    arrays((res_1, res_2), "float32", "float32")
    close(res_1, res_2)
    close(jax.jit(convert(fun_tf, route, output_shape_dtype=declared))(x), x)
    with pytest.raises(ConversionError, match=r"(?s)declares PyTreeDef\(None\)"):
        convert(fun_tf, route, output_shape_dtype=None)(x)


#: Every dtype DLPack carries that JAX has with x64 off.
COPY_DTYPES = ["bool", "int8", "int16", "int32", "uint8", "uint16", "uint32", "float16",
               "bfloat16", "float32", "complex64"]  # fmt: skip


@pytest.mark.parametrize("dtype", COPY_DTYPES)
def test_avoid_copy_between_gpu_and_cpu(dtype: str) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_avoid_copy_between_gpu_and_cpu

    Upstream checks (on a GPU, with a transfer guard) that call_tf moves no data. The CPU
    counterpart of the project's promise: on the call_tf route a concrete call hands
    TensorFlow the JAX buffer itself (TF's numpy view of its input has the JAX array's
    address) and returns TF's result zero-copy (the identity gives the same buffer)."""
    seen: list[int] = []

    def tf_fun(x: Any) -> Any:
        seen.append(np.asarray(x).__array_interface__["data"][0])  # TF's own view
        return x

    x = jax.device_put(jnp.zeros([16], jnp.dtype(dtype)), jax.devices("cpu")[0])
    res = convert(tf_fun, {"trace": False}, plain=True)(x)
    arrays(res, jnp.dtype(dtype))
    assert seen == [x.unsafe_buffer_pointer()]
    assert res.unsafe_buffer_pointer() == x.unsafe_buffer_pointer()


# ------------------------------------------- shapes that depend on values (issue 29)


def _cond_bool(x: Any) -> Any:
    return tf.cond(x[0], lambda: x[1:], lambda: x)


def _cond_int(x: Any) -> Any:
    return tf.cond(x[0] >= 0, lambda: x, lambda: x[1:])


def _slice(x: Any) -> Any:
    return x[0 : x[1]]


#: (upstream case, TF function, input, TF's result, the op that makes the shape depend on
#: the input's values).
DYNAMIC = {
    "cond_bool": ("CallTfTest::test_error_non_compilable_dynamic_shape", _cond_bool,
                  np.array([True, False]), np.array([False]), "If"),
    "cond_int": ("RoundTripToTfTest::test_function_dynamic_shape", _cond_int,
                 np.array([-1, 0, 1], np.int32), np.array([0, 1], np.int32), "If"),
    "slice": ("CallTfTest::test_function_compile_time_constant_inputs", _slice,
              np.array([1, 2, 3], np.int32), np.array([1, 2], np.int32), "StridedSlice"),
}  # fmt: skip
_ISSUE_29 = "BUG: issue 29: a value-dependent output shape on the tf2jax route"


@pytest.mark.parametrize("case", list(DYNAMIC))
@pytest.mark.parametrize("route", ROUTES)
def test_dynamic_shape_runs_eagerly(route: dict[str, Any], case: str) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_error_non_compilable_dynamic_shape
    upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_function_compile_time_constant_inputs
    upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::RoundTripToTfTest::test_function_dynamic_shape

    (the case's upstream is in DYNAMIC.) A concrete call runs TensorFlow and returns its
    values; on tf2jax through the call_tf fallback, g.fallback naming the op."""
    _, fn, x, want, op = DYNAMIC[case]
    g = convert(fn, route)
    res = g(x)
    arrays(res, want.dtype)
    np.testing.assert_array_equal(res, want)
    np.testing.assert_array_equal(res, fn(tf.constant(x)))
    if not route:
        assert g.fallback and op in g.fallback


@pytest.mark.parametrize("case", list(DYNAMIC))
@pytest.mark.parametrize("route", ROUTES)
def test_dynamic_shape_refused_under_jit(route: dict[str, Any], case: str) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_error_non_compilable_dynamic_shape
    upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::CallTfTest::test_function_compile_time_constant_inputs
    upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::RoundTripToTfTest::test_function_dynamic_shape

    DIFFERS: under jax.jit an InteropError saying the output shape depends on the input
    values and naming the op, where upstream's call_tf raises ValueError "output has dynamic
    shape"; on tf2jax it keeps JAX's exception as its cause."""
    _, fn, x, _, op = DYNAMIC[case]
    g = convert(fn, route)
    g(x)  # a concrete call first: the jitted one must not reuse its fallback silently
    with pytest.raises(InteropError, match="depends on the input values") as err:
        jax.jit(g)(x)
    assert op in str(err.value)
    if not route:
        assert framework_cause(err.value) is not None


@pytest.mark.parametrize("route", ROUTES)
def test_dynamic_shape_refused_under_grad(route: dict[str, Any]) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::RoundTripToTfTest::test_function_dynamic_shape

    The same tf.cond on floats, differentiated. On tf2jax, jax.grad is an InteropError
    naming the op whose output shape depends on the input values, keeping JAX's exception
    as its cause. On call_tf, jax.grad outside jax.jit runs TensorFlow on the concrete
    values: TF's gradient (of sum(x[1:]))."""
    x = np.array([-1.0, 0.0, 1.0], np.float32)
    g = convert(_cond_int, route)
    close(g(x), x[1:])
    if route:
        got = jax.grad(lambda v: jnp.sum(g(v)))(x)
        arrays(got, "float32")
        close(got, np.array([0.0, 1.0, 1.0], np.float32))
        return
    with pytest.raises(InteropError, match="depends on the input values") as err:
        jax.grad(lambda v: jnp.sum(g(v)))(x)
    assert "If" in str(err.value)
    assert framework_cause(err.value) is not None


# ================================================================= RoundTripToJaxTest
# Functions holding jax2tf output (to(jax_fn, "tensorflow"), or a SavedModel of one) taken
# back with to(..., "jax"): eagerly, under jax.jit and jax.grad, the JAX original's values.


@pytest.mark.parametrize("route", ROUTES)
def test_roundtrip_to_jax_simple(route: dict[str, Any]) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::RoundTripToJaxTest::test_simple"""
    f_rt = convert(back_to_tf(jnp.sin), route)
    x = np.float32(0.7)
    arrays(f_rt(x), "float32")
    close(f_rt(x), jnp.sin(x))
    close(jax.jit(f_rt)(x), jnp.sin(x))
    close(jax.grad(f_rt)(x), jnp.cos(x))


@pytest.mark.parametrize("route", ROUTES)
def test_roundtrip_to_jax_pytree(route: dict[str, Any]) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::RoundTripToJaxTest::test_pytree"""

    def f_jax(x: dict[str, Any]) -> dict[str, Any]:
        return dict(a=x["a"] + 1.0, b=x)

    x = dict(a=np.float32(0.7), b=np.float32(0.8))
    f_rt = convert(back_to_tf(f_jax), route)
    res = f_rt(x)
    arrays(res, "float32", "float32", "float32")
    close(res, f_jax(x))
    close(jax.jit(f_rt)(x), f_jax(x))
    close(
        jax.grad(lambda x: f_rt(x)["a"] + 2.0 * f_rt(x)["b"]["b"])(x),
        {"a": np.float32(1.0), "b": np.float32(2.0)},
    )


def _custom_square() -> Any:
    """x * x whose VJP is 3x * ct (not 2x)."""

    @jax.custom_vjp
    def f(x: Any) -> Any:
        return x * x

    f.defvjp(lambda x: (f(x), np.float32(3.0) * x), lambda residual, ct: (residual * ct,))
    return f


@pytest.mark.parametrize("route", ROUTES)
def test_roundtrip_to_jax_custom_grad(route: dict[str, Any]) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::RoundTripToJaxTest::test_custom_grad"""
    f = _custom_square()
    f_rt = convert(back_to_tf(f, with_gradient=True), route)
    x = np.float32(0.7)
    close(f_rt(x), f(x))
    close(jax.jit(f_rt)(x), f(x))
    close(jax.grad(f_rt)(x), jax.grad(f)(x))
    close(jax.grad(f_rt)(x), 3.0 * x)
    close(jax.jit(jax.grad(f_rt))(x), 3.0 * x)


@pytest.mark.parametrize("route", ROUTES)
def test_roundtrip_to_jax_shape_poly(route: dict[str, Any]) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::RoundTripToJaxTest::test_shape_poly"""
    f_rt = convert(back_to_tf(jnp.sin, polymorphic_shapes=["(b, ...)"]), route)
    for x in (np.array([0.7, 0.8], np.float32), np.linspace(0, 1, 5, dtype=np.float32)):
        arrays(f_rt(x), "float32")
        close(f_rt(x), jnp.sin(x))
        close(jax.jit(f_rt)(x), jnp.sin(x))
        close(jax.grad(lambda v: jnp.sum(f_rt(v)))(x), jnp.cos(x))


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., tuple[Any, Any]]:
    """save_and_load into a fresh directory of this module's."""

    def run(fn: Callable[..., Any], **kwargs: Any) -> tuple[Any, Any]:
        return save_and_load(fn, tmp_path_factory.mktemp("saved"), **kwargs)

    return run


@pytest.fixture(scope="module")
def restored_sin(saved: Callable[..., tuple[Any, Any]]) -> Any:
    return saved(back_to_tf(jnp.sin), args=(np.zeros(2, np.float32),))[0]


@pytest.fixture(scope="module")
def restored_index(saved: Callable[..., tuple[Any, Any]]) -> Any:
    return saved(back_to_tf(lambda x: x[1]), args=(np.zeros(6, np.int32),))[0]


@pytest.mark.parametrize("route", ROUTES)
def test_roundtrip_to_jax_saved_model_simple(route: dict[str, Any], restored_sin: Any) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::RoundTripToJaxTest::test_saved_model_simple"""
    x = np.array([0.7, 0.8], dtype=np.float32)
    restored = convert(restored_sin, route)
    arrays(restored(x), "float32")
    close(restored(x), jnp.sin(x))
    close(jax.jit(restored)(x), jnp.sin(x))
    close(jax.grad(lambda v: jnp.sum(restored(v)))(x), jnp.cos(x))


@pytest.fixture(scope="module")
def restored_variables(saved: Callable[..., tuple[Any, Any]]) -> Any:
    param_v = tf.Variable(np.array([1.0, 2.0], dtype=np.float32))
    f_tf = back_to_tf(lambda param, x: jnp.sin(x) + jnp.cos(param))
    x = np.zeros(2, np.float32)
    return saved(lambda x: f_tf(param_v, x), args=(x,), variables=[param_v])[1]


@pytest.mark.parametrize("route", ROUTES)
def test_roundtrip_to_jax_saved_model_variables(
    route: dict[str, Any], restored_variables: Any
) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::RoundTripToJaxTest::test_saved_model_variables"""
    param = np.array([1.0, 2.0], dtype=np.float32)
    x = np.array([0.7, 0.8], dtype=np.float32)
    want = jnp.sin(x) + jnp.cos(param)
    restored = convert(restored_variables.f, route)
    arrays(restored(x), "float32")
    close(restored(x), want)
    close(jax.jit(restored)(x), want)
    close(jax.grad(lambda v: jnp.sum(restored(v)))(x), jnp.cos(x))
    again = back_to_tf(restored)
    close(again(x), want)
    close(tf.function(again, autograph=False)(x), want)
    close(tf.function(again, autograph=True)(x), want)


@pytest.mark.parametrize("route", ROUTES)
def test_roundtrip_to_jax_saved_model_shape_poly(
    route: dict[str, Any], saved: Callable[..., tuple[Any, Any]]
) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::RoundTripToJaxTest::test_saved_model_shape_poly

    The restored function runs at other batch sizes without tracing the JAX original.
    DIFFERS on tf2jax: to() itself may trace it once, as tf2jax converts the function's
    gradient, which in this process is jax2tf's Python gradient of the original; the calls
    afterwards trace nothing."""
    tracing_count = 0

    def f_jax(x: Any) -> Any:
        nonlocal tracing_count
        tracing_count += 1
        return jnp.sin(x)

    x = np.array([0.7, 0.8], dtype=np.float32)
    f_tf = back_to_tf(f_jax, polymorphic_shapes=["(b, ...)"])
    restored, _ = saved(f_tf, signature=[tf.TensorSpec([None], tf.float32)])
    assert tracing_count >= 1
    tracing_count = 0
    f_rt = convert(restored, route)
    assert tracing_count <= (0 if route else 1)
    tracing_count = 0
    close(f_rt(x), np.sin(x))
    y = np.concatenate([x, x])
    arrays(f_rt(y), "float32")
    close(f_rt(y), np.sin(y))
    close(jax.jit(f_rt)(y), np.sin(y))
    close(jax.grad(lambda v: jnp.sum(f_rt(v)))(y), np.cos(y))
    assert tracing_count == 0


@pytest.fixture(scope="module")
def restored_custom_grad(saved: Callable[..., tuple[Any, Any]]) -> Any:
    f = _custom_square()
    g_tf = back_to_tf(lambda x: jnp.sum(f(x)), with_gradient=True)
    return saved(g_tf, signature=[tf.TensorSpec(shape=(1,), dtype=tf.float32)])[0]


@pytest.mark.parametrize("route", ROUTES)
def test_roundtrip_to_jax_custom_grad_saved_model(
    route: dict[str, Any], restored_custom_grad: Any
) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::RoundTripToJaxTest::test_custom_grad_saved_model"""
    f = _custom_square()

    def g(x: Any) -> Any:
        return jnp.sum(f(x))

    g_rt = convert(restored_custom_grad, route)
    x = np.array([0.7], dtype=np.float32)
    close(g_rt(x), g(x))
    close(jax.jit(g_rt)(x), g(x))
    close(jax.grad(g_rt)(x), jax.grad(g)(x))
    close(jax.grad(g_rt)(x), 3.0 * x)


@pytest.fixture(scope="module")
def restored_sum_without_gradient(saved: Callable[..., tuple[Any, Any]]) -> Any:
    x = np.zeros(2, np.float32)
    return saved(back_to_tf(jnp.sum, with_gradient=False), args=(x,))[0]


@pytest.mark.parametrize("route", ROUTES)
def test_roundtrip_to_jax_without_gradient_saved_model(
    route: dict[str, Any], restored_sum_without_gradient: Any
) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::RoundTripToJaxTest::test_without_gradient_saved_model

    DIFFERS: jax.grad is an InteropError keeping TensorFlow's LookupError ("Gradient
    explicitly disabled") as its cause, where upstream lets that error through."""
    x = np.array([0.7, 0.8], dtype=np.float32)
    f_rt = convert(restored_sum_without_gradient, route)
    close(f_rt(x), jnp.sum(x))
    close(jax.jit(f_rt)(x), jnp.sum(x))
    with pytest.raises(InteropError, match="Gradient explicitly disabled") as err:
        jax.grad(f_rt)(x)
    cause = framework_cause(err.value)
    assert isinstance(cause, LookupError)


@pytest.fixture(scope="module")
def restored_sum_no_saved_gradients(saved: Callable[..., tuple[Any, Any]]) -> Any:
    x = np.zeros(2, np.float32)
    return saved(back_to_tf(jnp.sum, with_gradient=True), args=(x,), gradients=False)[0]


@pytest.mark.parametrize("route", ROUTES)
def test_roundtrip_to_jax_saved_model_no_gradients(
    route: dict[str, Any], restored_sum_no_saved_gradients: Any
) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::RoundTripToJaxTest::test_saved_model_no_gradients

    Saved without its custom gradients. DIFFERS: jax.grad is an InteropError keeping
    TensorFlow's error as its cause, where upstream gets a confusing TypeError."""
    x = np.array([0.7, 0.8], dtype=np.float32)
    f_rt = convert(restored_sum_no_saved_gradients, route)
    close(f_rt(x), jnp.sum(x))
    close(jax.jit(f_rt)(x), jnp.sum(x))
    with pytest.raises(InteropError) as err:
        jax.grad(f_rt)(x)
    assert framework_cause(err.value) is not None


@pytest.mark.parametrize("route", ROUTES)
def test_call_tf_under_function_context(route: dict[str, Any]) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::RoundTripToJaxTest::test_call_tf_under_function_context"""
    sin = convert(tf.math.sin, route)

    def fun_jax(x: Any, y: Any) -> Any:
        return sin(x) + jnp.cos(y)

    x = np.array([-1.0, 0.0, 1.0], dtype=np.float32)
    y = np.array([-0.5, 0.0, 0.5], dtype=np.float32)
    converted = tf.function(back_to_tf(fun_jax))
    res = tf.function(converted, jit_compile=True, autograph=False)(x, y)
    close(res, np.sin(x) + np.cos(y))


def _sum_sin(x: Any) -> Any:
    return tf.reduce_sum(tf.math.sin(x))


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("route", ROUTES)
def test_all_floating_input_gradient(route: dict[str, Any], dtype: str) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::RoundTripToJaxTest::test_all_floating_input_gradient

    TF -> JAX -> TF gives TensorFlow's values (eager, tf.function, jit_compile), and the
    JAX gradient converted to TF and back gives the same gradient (eager and jitted)."""
    dt = jnp.dtype(dtype)
    tol = 1e-5 if dtype == "float32" else 2e-2
    x = jnp.array([5.0, 6.0, 7.0]).astype(dt)
    tf_f_rt = back_to_tf(convert(_sum_sin, route))
    close(tf_f_rt(x), _sum_sin(x), tol)
    close(tf.function(tf_f_rt)(x), tf.function(_sum_sin)(x), tol)
    close(
        tf.function(tf_f_rt, jit_compile=True)(x), tf.function(_sum_sin, jit_compile=True)(x), tol
    )
    grad_fun_jax = jax.grad(convert(_sum_sin, route))
    grad_fun_jax_rt = convert(back_to_tf(grad_fun_jax), route)
    want = np.cos(np.asarray(x, np.float32))
    got = grad_fun_jax(x)
    arrays(got, dt)
    close(got, want, tol)
    close(grad_fun_jax_rt(x), got, tol)
    close(jax.jit(grad_fun_jax)(x), jax.jit(grad_fun_jax_rt)(x), tol)


@pytest.mark.parametrize("route", ROUTES)
def test_complex_input_gradient(route: dict[str, Any]) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::RoundTripToJaxTest::test_complex_input_gradient

    With complex64 (complex128 needs x64). As upstream, the JAX gradient and its round
    trip through TF agree; tf2jax gives JAX's holomorphic gradient cos(z), call_tf gives
    TensorFlow's, its conjugate (raw jax2tf.call_tf gives the same)."""
    x = jnp.array([(5.0 + 4.0j), (6.0 + 3.0j), (7.0 + 8.0j)]).astype(jnp.complex64)
    tf_f_rt = back_to_tf(convert(_sum_sin, route))
    close(tf_f_rt(x), _sum_sin(x), 1e-3)
    close(tf.function(tf_f_rt)(x), tf.function(_sum_sin)(x), 1e-3)
    close(tf.function(tf_f_rt, jit_compile=True)(x), _sum_sin(x), 1e-3)
    grad_fun_jax = jax.grad(convert(_sum_sin, route), holomorphic=True)
    grad_fun_jax_rt = convert(back_to_tf(grad_fun_jax), route)
    got = grad_fun_jax(x)
    arrays(got, "complex64")
    want = np.cos(np.asarray(x))
    close(got, np.conj(want) if route else want, 1e-3)
    close(grad_fun_jax_rt(x), got, 1e-3)
    close(jax.jit(grad_fun_jax)(x), jax.jit(grad_fun_jax_rt)(x), 1e-3)


@pytest.mark.parametrize("route", ROUTES)
def test_grad_pytree_arg_with_none_leaf(route: dict[str, Any]) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::RoundTripToJaxTest::test_grad_pytree_arg_with_none_leaf"""
    x = jnp.array(1.0)
    y = jnp.array(2.0)
    actual = jax.grad(convert(lambda x, params: x * params["y"], route), argnums=(1,))(
        x, {"y": y, "other": None}
    )
    assert set(actual[0]) == {"y", "other"}
    assert actual[0]["other"] is None
    close(actual[0]["y"], x)


# ================================================================== RoundTripToTfTest


@pytest.mark.parametrize("route", ROUTES)
def test_alternate(route: dict[str, Any]) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::RoundTripToTfTest::test_alternate

    sin in TF, cos in JAX, alternating: values eagerly, in a graph and compiled, and the
    tf.GradientTape gradient through both bridges."""
    f_tf_inner = convert(tf.math.sin, route)

    def f_jax(x_jax: Any) -> Any:
        return jnp.cos(f_tf_inner(jnp.cos(x_jax)))

    f_jax_tf = back_to_tf(f_jax)

    def f_tf_outer(x_tf: Any) -> Any:
        return tf.math.sin(f_jax_tf(tf.math.sin(x_tf)))

    x = np.float32(0.7)
    expected = np.sin(np.cos(np.sin(np.cos(np.sin(x)))))
    close(f_tf_outer(x), expected)
    _, grad = tf_value_and_grad(f_tf_outer, x)
    expected_grad = (np.cos(np.cos(np.sin(np.cos(np.sin(x))))) *
                     np.sin(np.sin(np.cos(np.sin(x)))) *
                     np.cos(np.cos(np.sin(x))) *
                     np.sin(np.sin(x)) *
                     np.cos(x))  # fmt: skip
    close(grad, expected_grad)
    close(tf.function(f_tf_outer, autograph=False)(x), expected)
    close(tf.function(f_tf_outer, autograph=False, jit_compile=True)(x), expected)


@pytest.mark.parametrize(
    "fun_tf",
    [
        pytest.param(tf.math.sin, id="saved_model"),
        pytest.param(lambda x: tf.math.reduce_sum(tf.math.sin(x)),
                     id="saved_model_polymorphic_input_static_output"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("route", ROUTES)
def test_roundtrip_to_tf_saved_model(
    route: dict[str, Any], fun_tf: Any, saved: Callable[..., tuple[Any, Any]]
) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::RoundTripToTfTest::test_saved_model
    upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::RoundTripToTfTest::test_saved_model_polymorphic_input_static_output

    (the id names the upstream case.) A JAX function calling TF, converted to TF: eagerly,
    in a graph, compiled, and from a SavedModel."""
    x = np.array([0.7, 0.8], dtype=np.float32)
    fun_jax = convert(fun_tf, route)
    fun_tf_rt = back_to_tf(fun_jax)
    want = fun_tf(x)
    close(fun_tf_rt(x), want)
    close(tf.function(fun_tf_rt, autograph=False)(x), want)
    close(tf.function(fun_tf_rt, jit_compile=True, autograph=False)(x), want)
    reloaded, _ = saved(fun_tf_rt, args=(x,))
    close(reloaded(x), want)


@pytest.mark.parametrize("route", ROUTES)
def test_function_dynamic_shape_through_jax2tf(route: dict[str, Any]) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::RoundTripToTfTest::test_function_dynamic_shape

    Its last part: jax2tf of the converted function traces it (abstract evaluation), where
    the output shape depending on the values cannot be expressed. DIFFERS: an InteropError,
    where upstream's call_tf raises ValueError "output has dynamic shape"."""
    x = np.array([-1, 0, 1], dtype=np.int32)
    fun_tf_rt = back_to_tf(convert(_cond_int, route))
    with pytest.raises(InteropError, match="depends on the input values"):
        fun_tf_rt(x)


@pytest.mark.parametrize("with_jit", JIT)
@pytest.mark.parametrize("route", ROUTES)
def test_shape_poly_error_no_output_shape_dtype(route: dict[str, Any], with_jit: bool) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::RoundTripToTfTest::test_shape_poly_error_no_output_shape_dtype

    jax2tf with a symbolic batch dimension over the TF function, which neither bridge can
    give TensorFlow (call_tf needs static output shapes, tf2jax static TensorSpecs).
    DIFFERS: an InteropError, where upstream raises ValueError "output has dynamic shape"."""
    x = np.array([7, 8, 9, 10], dtype=np.float32)
    sin = convert(tf.math.sin, route)
    fun_tf_rt = maybe_tf_jit(with_jit, back_to_tf(sin, polymorphic_shapes=["b, ..."]))
    with pytest.raises(InteropError) as err:
        fun_tf_rt(x)
    assert framework_cause(err.value, context=True) is not None


@pytest.mark.parametrize("with_jit", JIT)
@pytest.mark.parametrize("route", ROUTES)
def test_shape_poly_error_mismatch_output_shape_dtype_tree(
    route: dict[str, Any], with_jit: bool
) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::RoundTripToTfTest::test_shape_poly_error_mismatch_output_shape_dtype_tree

    DIFFERS: a ConversionError (an InteropError) naming both structures, where upstream
    raises ValueError."""
    x = np.array([7, 8, 9, 10], dtype=np.float32)

    def fun_jax(x: Any) -> Any:
        declared = (jax.ShapeDtypeStruct.like(x), jax.ShapeDtypeStruct.like(x))
        return convert(tf.math.sin, route, output_shape_dtype=declared)(x)

    fun_tf_rt = maybe_tf_jit(with_jit, back_to_tf(fun_jax, polymorphic_shapes=["b, ..."]))
    with pytest.raises(ConversionError, match="output_shape_dtype= declares"):
        fun_tf_rt(x)


def _mismatch(kind: str, route: dict[str, Any]) -> Callable[..., Any]:
    """A JAX function calling TF with an output_shape_dtype= that is wrong in ``kind``."""

    def fun_jax(x: Any) -> Any:
        if kind == "bad_rank":
            fn, declared = (lambda x: x), jax.ShapeDtypeStruct((), x.dtype)
        elif kind == "bad_dim":
            bad_shape = (5 + x.shape[0],)
            fn, declared = (lambda x: x), jax.ShapeDtypeStruct(bad_shape, x.dtype)
        elif kind == "bad_dtype":
            fn, declared = (lambda x: x), jax.ShapeDtypeStruct(x.shape, np.int32)
        else:  # bad_dtype_x64: x64 is off, so JAX takes the declared float64 as float32
            fn, declared = (
                (lambda x: x * np.float64(3.0)),
                jax.ShapeDtypeStruct(x.shape, np.float64),
            )
        y = convert(fn, route, output_shape_dtype=declared)(x)
        return y + jnp.ones(declared.shape, declared.dtype) if kind == "bad_dim" else y

    return fun_jax


@pytest.mark.parametrize("poly", [pytest.param(False, id="static"), pytest.param(True, id="poly")])
@pytest.mark.parametrize("kind", ["bad_rank", "bad_dim", "bad_dtype", "bad_dtype_x64"])
@pytest.mark.parametrize("with_jit", JIT)
def test_shape_poly_error_mismatch_output_shape_dtype(
    with_jit: bool, kind: str, poly: bool
) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::RoundTripToTfTest::test_shape_poly_error_mismatch_output_shape_dtype

    Without and with shape polymorphism (upstream does both in one case). On the default
    route: output_shape_dtype= takes call_tf on either (test_output_shape_dtype_*). DIFFERS: an
    InteropError saying what output_shape_dtype= declares, where upstream raises ValueError;
    for bad_dim with polymorphism, as upstream, TensorFlow's compile error (kept as the
    cause)."""
    x = np.array([7, 8, 9, 10], dtype=np.float32)
    options = {"polymorphic_shapes": ["b, ..."]} if poly else {}
    fun_tf_rt = maybe_tf_jit(with_jit, back_to_tf(_mismatch(kind, {}), **options))
    if kind == "bad_dim" and poly:
        with pytest.raises(InteropError, match="Error compiling TensorFlow function") as err:
            fun_tf_rt(x)
        assert framework_cause(err.value, context=True) is not None
        return
    with pytest.raises(InteropError, match="output_shape_dtype= declares"):
        fun_tf_rt(x)


def _f(n: int) -> Callable[..., Any]:
    """x -> 2 x^n (upstream's f(n))."""

    def fn(x: Any) -> Any:
        acc = np.array(2.0, dtype=x.dtype)
        for _ in range(n):
            acc *= x
        return acc

    return fn


@pytest.fixture(scope="module")
def f2_variants(saved: Callable[..., tuple[Any, Any]]) -> dict[tuple[bool, bool], Any]:
    """upstream's f2_tf = x * jax2tf(f(1))(x), as it is, in a tf.function, and from a
    SavedModel of either: made once for both routes."""
    x = np.array(0.7, dtype=np.float32)
    f1 = back_to_tf(_f(1))
    out = {}
    for function in (False, True):
        f2: Any = lambda x: x * f1(x)  # noqa: E731
        if function:
            f2 = tf.function(f2, autograph=False)
        out[function, False] = f2
        out[function, True] = saved(f2, args=(x,))[0]
    return out


ROUND_TRIPS = [
    pytest.param(f2_fn, f2_sm, f4_fn, f4_sm,
                 id=f"f2_function={f2_fn}-f2_saved_model={f2_sm}-f4_function={f4_fn}-"
                    f"f4_saved_model={f4_sm}")
    for f2_fn, f2_sm, f4_fn, f4_sm in [(False, False, False, False), (True, True, True, True)]
]  # fmt: skip


def _tf_grad(fn: Callable[..., Any], x: Any) -> Any:
    return tf_value_and_grad(fn, x)[1]


@pytest.mark.parametrize(("f2_function", "f2_saved_model", "f4_function", "f4_saved_model"),
                         ROUND_TRIPS)  # fmt: skip
@pytest.mark.parametrize("route", ROUTES)
def test_several_round_trips(
    route: dict[str, Any],
    f2_function: bool,
    f2_saved_model: bool,
    f4_function: bool,
    f4_saved_model: bool,
    f2_variants: dict[tuple[bool, bool], Any],
    saved: Callable[..., tuple[Any, Any]],
) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/call_tf_test.py::RoundTripToTfTest::test_several_round_trips

    f(n)(x) = 2 x^n built by alternating bridges: f2 in TF over jax2tf(f1), f3 in JAX over
    to(f2, "jax"), f4 in TF over jax2tf(f3). Values and gradients at each level. 2 of
    upstream's 16 combinations (each costs seconds): every flag off, every flag on."""
    x = np.array(0.7, dtype=np.float32)
    f2_tf = f2_variants[f2_function, f2_saved_model]
    close(f2_tf(x), _f(2)(x))
    close(_tf_grad(f2_tf, x), jax.grad(_f(2))(x))
    f2_jax = convert(f2_tf, route)

    def f3_jax(x: Any) -> Any:
        return x * f2_jax(x)

    close(f3_jax(x), _f(3)(x))
    close(jax.jit(f3_jax)(x), _f(3)(x))
    close(jax.grad(f3_jax)(x), jax.grad(_f(3))(x))
    f3_tf = back_to_tf(f3_jax)

    def f4_tf(x: Any) -> Any:
        return x * f3_tf(x)

    close(f4_tf(x), _f(4)(x))
    close(_tf_grad(f4_tf, x), jax.grad(_f(4))(x))
    f4: Any = f4_tf
    if f4_function:
        f4 = tf.function(f4, autograph=False)
    if f4_saved_model:
        f4 = saved(f4, args=(x,))[0]
    close(f4(x), _f(4)(x))
    close(_tf_grad(f4, x), jax.grad(_f(4))(x))
