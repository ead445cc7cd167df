"""Function bridges: JAX <-> PyTorch (and PyTorch -> TensorFlow), checked against the
frameworks themselves: values against native calls, gradients against each framework's
own autodiff, zero-copy crossings by data pointers, "runs once" claims by counting calls."""

from __future__ import annotations

import importlib.util
import warnings
from typing import Any

import pytest
from conftest import need

import interop_core
from interop_core.declare.errors import (
    ConversionError,
    InteropError,
    OptionError,
    UnsupportedTransformError,
)

np = need("numpy")
torch = need("torch")
jax = need("jax")
jnp = jax.numpy


def convert(fn: Any, target: str, source: str, **options: Any) -> Any:
    """The public call."""
    return interop_core.to(fn, target, source=source, **options)


def close(a: Any, b: Any, tol: float = 1e-5) -> bool:
    def arr(x: Any) -> Any:
        return x.detach().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)

    return bool(np.allclose(arr(a), arr(b), rtol=tol, atol=tol))


def rand(*shape: int, seed: int = 0) -> Any:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def jptr(x: Any) -> int:
    return int(x.unsafe_buffer_pointer())


# --------------------------------------------------------------------------------------
# jax -> torch


def mlp(params: dict[str, Any], x: Any, act: str = "tanh", scale: float = 1.0) -> Any:
    h = getattr(jnp, act)(x @ params["w1"] + params["b1"]) * scale
    y = h @ params["w2"]
    return {"loss": (y**2).mean(), "y": y, "argmax": jnp.argmax(y, axis=1), "tag": act}


def torch_params(seed: int = 0) -> dict[str, Any]:
    shapes = {"w1": (4, 8), "b1": (8,), "w2": (8, 3)}
    return {
        n: torch.tensor(rand(*s, seed=seed + i), requires_grad=True)
        for i, (n, s) in enumerate(shapes.items())
    }


def test_jax_to_torch_values_and_gradients_of_every_leaf() -> None:
    k = convert(mlp, "torch", "jax")
    tp = torch_params()
    x = torch.tensor(rand(5, 4, seed=9), requires_grad=True)
    out = k(tp, x, "sin", scale=0.5)  # a string and a float reach JAX unchanged
    jp = {n: jnp.asarray(t.detach().numpy()) for n, t in tp.items()}
    jx = jnp.asarray(x.detach().numpy())
    want = mlp(jp, jx, "sin", 0.5)
    assert out["tag"] == "sin"
    assert close(out["y"], want["y"]) and close(out["loss"], want["loss"])
    assert out["argmax"].dtype == torch.int32 and not out["argmax"].requires_grad
    out["loss"].backward()
    gp, gx = jax.grad(lambda p, x: mlp(p, x, "sin", 0.5)["loss"], argnums=(0, 1))(jp, jx)
    for n, t in tp.items():
        assert close(t.grad, gp[n]), n
    assert close(x.grad, gx)


def test_jax_to_torch_without_grad_skips_the_vjp_and_crosses_zero_copy() -> None:
    seen: dict[str, Any] = {}

    def f(x: Any) -> Any:
        seen["traced"] = isinstance(x, jax.core.Tracer)
        seen["in"] = jptr(x)
        y = x * 2
        seen["out"] = jptr(y)
        return y

    k = convert(f, "torch", "jax")
    x = torch.ones(64, 64)
    y = k(x)
    assert not seen["traced"] and y.grad_fn is None
    assert seen["in"] == x.data_ptr() and seen["out"] == y.data_ptr()
    with torch.no_grad():  # requires_grad inputs under no_grad: no vjp either
        assert k(x.clone().requires_grad_()).grad_fn is None and not seen["traced"]


def test_jax_to_torch_runs_the_function_once_per_call_and_jit_works() -> None:
    calls = []

    def f(x: Any, w: Any) -> Any:
        calls.append(1)
        return jnp.sin(x @ w).sum()

    for fn in (f, jax.jit(f)):
        calls.clear()
        k = convert(fn, "torch", "jax")
        x = torch.tensor(rand(3, 4), requires_grad=True)
        w = torch.tensor(rand(4, 2, seed=1), requires_grad=True)
        k(x, w).backward()
        assert len(calls) == 1  # forward traced once by jax.vjp; backward does not rerun it
        xj, wj = jnp.asarray(x.detach().numpy()), jnp.asarray(w.detach().numpy())
        gx, gw = jax.grad(lambda x, w: jnp.sin(x @ w).sum(), argnums=(0, 1))(xj, wj)
        assert close(x.grad, gx) and close(w.grad, gw)
    k(x.detach(), w.detach())
    assert len(calls) == 1  # the jitted function is not traced again


def test_jax_to_torch_gradient_semantics_match_torch() -> None:
    # x + y: JAX hands both inputs the same cotangent array; torch must get two gradients.
    k = convert(lambda a, b: a + b, "torch", "jax")
    a, b = torch.ones(8, requires_grad=True), torch.ones(8, requires_grad=True)
    k(a, b).sum().backward()
    assert a.grad.data_ptr() != b.grad.data_ptr()
    a.grad.mul_(3)
    assert close(b.grad, np.ones(8))
    # exp saves its output for backward: writing into it must raise as it does in torch
    # (when the output buffer is the residual), or leave the gradient right (when not).
    for fn in (lambda x: jnp.exp(x), jax.jit(jnp.exp)):
        a.grad = None
        y = convert(fn, "torch", "jax")(a)
        y.mul_(2)
        try:
            y.sum().backward()
        except RuntimeError as exc:
            assert "modified by an inplace operation" in str(exc)
        else:
            assert close(a.grad, 2 * np.exp(np.ones(8)))  # d(2 exp(a))/da
    # complex: torch's convention (the conjugate of JAX's cotangent)
    c, w = torch.tensor([2 - 1j, 1 + 1j]), torch.tensor([0.5 + 1j, -1 + 2j])
    z = torch.tensor([1 + 2j, 3 - 1j], requires_grad=True)
    convert(lambda z, c: jnp.sin(z) * c, "torch", "jax")(z, c).backward(w)
    z2 = z.detach().clone().requires_grad_()
    (torch.sin(z2) * c).backward(w)
    assert close(z.grad, z2.grad)


def test_jax_to_torch_bad_input_is_an_interop_error() -> None:
    with pytest.raises(interop_core.NotAnArrayError, match="nor is it a function"):
        convert(42, "torch", "jax")
    with pytest.raises(interop_core.UnknownFrameworkError, match="'jaxx'"):
        convert(lambda x: x, "torch", "jaxx")
    k = convert(lambda x: x * 2, "torch", "jax")
    with pytest.raises(InteropError):
        k(torch.eye(3).to_sparse_csc())  # CSC has no route (COO/CSR convert: test_sparse)


# --------------------------------------------------------------------------------------
# torch -> jax


def test_torch_to_jax_eager_pytrees_and_zero_copy() -> None:
    seen: dict[str, Any] = {}

    def f(inputs: dict[str, Any], *, power: int = 2) -> Any:
        seen["in"] = inputs["x"].data_ptr()
        y = inputs["x"] ** power + inputs["b"]
        seen["out"] = y.data_ptr()
        return (y, [y.sum()])

    k = convert(f, "jax", "torch")
    x, b = jnp.asarray(rand(16, 16)), jnp.asarray(rand(16, seed=1))
    y, (s,) = k({"x": x, "b": b}, power=3)
    assert seen["in"] == jptr(x) and seen["out"] == jptr(y)
    assert close(y, x**3 + b, 1e-4) and close(s, (x**3 + b).sum(), 1e-3)


def test_torch_to_jax_jit_infers_shapes_on_meta_tensors_once_per_signature() -> None:
    devices: list[str] = []

    def f(x: Any, y: Any) -> Any:
        devices.append(x.device.type)
        return {"prod": x @ y, "n": (x > 0).sum().to(torch.int32)}  # x64 is off

    k = jax.jit(convert(f, "jax", "torch"))  # no example output given
    x, y = jnp.asarray(rand(3, 4)), jnp.asarray(rand(4, 5, seed=1))
    out = k(x, y)
    assert devices == ["meta", "cpu"]  # shapes from meta tensors; one run on real data
    assert close(out["prod"], x @ y) and int(out["n"]) == int((x > 0).sum())
    k(x + 1, y)
    assert devices == ["meta", "cpu", "cpu"]
    assert k(x[:2], y)["prod"].shape == (2, 5)  # a new signature is inferred again
    assert devices == ["meta", "cpu", "cpu", "meta", "cpu"]


def test_torch_to_jax_grad_matches_torch_and_runs_torch_once() -> None:
    calls: list[str] = []

    def f(x: Any, w: Any) -> Any:
        calls.append(x.device.type)
        return torch.tanh(x @ w)

    k = convert(f, "jax", "torch")
    x, w = rand(3, 4), rand(4, 2, seed=1)
    xt, wt = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    (torch.tanh(xt @ wt) ** 2).sum().backward()

    def loss(x: Any, w: Any) -> Any:
        return (k(x, w) ** 2).sum()

    for g in (jax.grad(loss, argnums=(0, 1)), jax.jit(jax.grad(loss, argnums=(0, 1)))):
        gx, gw = g(jnp.asarray(x), jnp.asarray(w))
        assert close(gx, xt.grad) and close(gw, wt.grad)
    # eager grad: one torch run (the backward reuses its graph); jit: meta + one run
    assert calls == ["meta", "cpu", "cpu"]


def test_torch_to_jax_module_params_and_gradients() -> None:
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    m = convert(module, "jax", "torch")
    x = rand(6, 4)
    assert close(m(jnp.asarray(x)), module(torch.tensor(x)))
    params = m.params
    assert set(params) == {n for n, _ in module.named_parameters()}
    assert all(jptr(params[n]) == p.data_ptr() for n, p in module.named_parameters())

    def loss(p: Any, x: Any) -> Any:
        return (m.apply(p, x) ** 2).mean()

    (module(torch.tensor(x)) ** 2).mean().backward()
    for g in (jax.grad(loss), jax.jit(jax.grad(loss))):
        grads = g(params, jnp.asarray(x))
        for n, p in module.named_parameters():
            assert close(grads[n], p.grad), n
    # m(x) reads the module's parameters at each call, also under jit (not baked in)
    jm = jax.jit(m)
    before = jm(jnp.asarray(x))
    with torch.no_grad():
        module[2].bias.add_(1.0)
    assert close(jm(jnp.asarray(x)), before + 1.0)
    with pytest.raises(ConversionError, match="does not have"):
        m.apply({"nope": jnp.ones(2)}, jnp.asarray(x))


def test_torch_to_jax_vmap() -> None:
    k = convert(lambda x, w: torch.sin(x) @ w, "jax", "torch")
    xs, w = jnp.asarray(rand(5, 3, 4)), jnp.asarray(rand(4, 2, seed=1))
    want = jnp.stack([jnp.sin(x) @ w for x in xs])
    assert close(jax.vmap(k, in_axes=(0, None))(xs, w), want)
    gw = jax.vmap(jax.grad(lambda x, w: k(x, w).sum(), argnums=1), in_axes=(0, None))(xs, w)
    want_gw = jax.vmap(jax.grad(lambda x, w: (jnp.sin(x) @ w).sum(), argnums=1), (0, None))(xs, w)
    assert close(gw, want_gw)
    # .item() defeats torch.func.vmap (and meta tensors): one example at a time instead
    k2 = convert(lambda x: x * x.abs().max().item(), "jax", "torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "shape inference ran on zeros"
        got = jax.vmap(k2)(xs)
    assert close(got, jnp.stack([x * jnp.abs(x).max() for x in xs]))


def test_torch_to_jax_complex_cotangents_follow_jax() -> None:
    c = jnp.array([2 - 1j, 1 + 1j], jnp.complex64)
    k = convert(lambda z, c: torch.sin(z) * c, "jax", "torch")
    z, w = jnp.array([1 + 2j, 3 - 1j], jnp.complex64), jnp.array([0.5 + 1j, -1 + 2j], jnp.complex64)
    got = jax.jit(lambda z, w: jax.vjp(lambda z: k(z, c), z)[1](w)[0])(z, w)
    want = jax.vjp(lambda z: jnp.sin(z) * c, z)[1](w)[0]
    assert close(got, want)


def test_torch_to_jax_transforms_reverse_mode_only() -> None:
    k = convert(lambda x: torch.sin(x) * x, "jax", "torch")
    x = jnp.arange(3.0)
    want = jax.jacrev(lambda x: jnp.sin(x) * x)(x)
    assert close(jax.jacrev(k)(x), want) and close(jax.jit(jax.jacrev(k))(x), want)
    for forward in (jax.jacfwd(k), jax.jit(lambda x: jax.jvp(k, (x,), (x,)))):
        with pytest.raises(UnsupportedTransformError, match="Forward-mode"):
            forward(x)
    with pytest.raises(UnsupportedTransformError, match="twice"):
        jax.hessian(lambda x: k(x).sum())(x)


def test_torch_to_jax_errors() -> None:
    def inplace(x: Any) -> Any:
        return x.mul_(2)

    with pytest.raises(ConversionError, match="modified an input tensor in place"):
        convert(inplace, "jax", "torch")(jnp.ones(3))
    with pytest.raises(ConversionError, match="only tensors can come back"):
        jax.jit(convert(lambda x: (x, "tag"), "jax", "torch"))(jnp.ones(3))
    with pytest.raises(ConversionError, match="jax_enable_x64"):  # no silent narrowing
        jax.jit(convert(lambda x: (x > 0).sum(), "jax", "torch"))(jnp.ones(3))
    with pytest.raises(OptionError, match="result_shape"):
        convert(torch.sin, "jax", "torch", result_shape=[3])

    def chol(x: Any) -> Any:  # fails on meta tensors (.item()) and on zeros (not PD)
        return torch.linalg.cholesky(x * x.abs().max().item())

    a = jnp.asarray(rand(3, 3))
    spd = a @ a.T + 3 * jnp.eye(3)
    with pytest.raises(ConversionError, match="result_shape="):
        jax.jit(convert(chol, "jax", "torch"))(spd)
    given = jax.ShapeDtypeStruct((3, 3), jnp.float32)
    got = jax.jit(convert(chol, "jax", "torch", result_shape=given))(spd)
    assert close(got, jnp.linalg.cholesky(spd * jnp.abs(spd).max()), 1e-4)


# --------------------------------------------------------------------------------------
# torch -> tensorflow


def torch_layer(x: Any, w: Any, scale: float = 1.0) -> Any:
    return {"y": torch.tanh(x @ w) * scale, "positive": (x > 0).sum()}


def test_torch_to_tf_eager_values_gradients_and_zero_copy() -> None:
    tf = need("tensorflow")
    seen: dict[str, int] = {}

    def f(x: Any, w: Any, scale: float = 1.0) -> Any:
        seen["in"] = x.data_ptr()
        out = torch_layer(x, w, scale)
        seen["out"] = out["y"].data_ptr()
        return out

    k = convert(f, "tensorflow", "torch")
    x = tf.constant(rand(3, 4))
    w = tf.Variable(rand(4, 2, seed=1))
    out = k(x, w, scale=2.0)

    def address(t: Any) -> int:  # np.asarray of an eager tf tensor is zero-copy
        return int(np.asarray(t).__array_interface__["data"][0])

    assert seen["in"] == address(x) and seen["out"] == address(out["y"])
    xt = torch.tensor(rand(3, 4), requires_grad=True)
    wt = torch.tensor(rand(4, 2, seed=1), requires_grad=True)
    want = torch_layer(xt, wt, 2.0)
    assert close(out["y"].numpy(), want["y"]) and int(out["positive"]) == int(want["positive"])
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = tf.reduce_sum(k(x, w, scale=2.0)["y"] ** 2)
    gx, gw = tape.gradient(loss, [x, w])
    (want["y"] ** 2).sum().backward()
    assert close(gx.numpy(), xt.grad) and close(gw.numpy(), wt.grad)


def test_torch_to_tf_inside_tf_function_with_gradients() -> None:
    tf = need("tensorflow")
    devices: list[str] = []

    def f(x: Any, w: Any) -> Any:
        devices.append(x.device.type)
        return torch_layer(x, w)

    k = convert(f, "tensorflow", "torch")
    w = tf.Variable(rand(4, 2, seed=1))

    @tf.function(autograph=False)
    def step(x: Any) -> Any:
        with tf.GradientTape() as tape:
            y = k(x, w)["y"]
            loss = tf.reduce_sum(y**2)
        return y, tape.gradient(loss, w)

    y, gw = step(tf.constant(rand(3, 4)))
    assert y.shape == (3, 2)  # static shape from the meta run
    xt = torch.tensor(rand(3, 4))
    wt = torch.tensor(rand(4, 2, seed=1), requires_grad=True)
    (torch_layer(xt, wt)["y"] ** 2).sum().backward()
    assert close(gw.numpy(), wt.grad)
    # meta at trace; in graph mode the backward reruns torch (forward + backward)
    assert devices == ["meta", "cpu", "cpu"]
    step(tf.constant(rand(3, 4)))
    assert devices == ["meta", "cpu", "cpu", "cpu", "cpu"]


def test_torch_to_tf_errors() -> None:
    tf = need("tensorflow")
    k = convert(lambda x: (x, 3), "tensorflow", "torch")
    with pytest.raises(ConversionError, match="only tensors"):
        k(tf.ones(2))
    with pytest.raises(interop_core.NotAnArrayError, match="nor is it a function"):
        convert(None, "tensorflow", "torch")


# --------------------------------------------------------------------------------------
# routes through the planner


def test_a_module_needs_no_source_and_explain_names_the_bridge() -> None:
    lin = torch.nn.Linear(3, 2)
    route = interop_core.explain(lin, "jax")
    assert [s.converter for s in route.steps] == ["pure_callback bridge"]
    assert "jax.pure_callback" in str(route)
    m = interop_core.to(lin, "jax")
    x = np.ones((4, 3), np.float32)
    want = lin(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(np.asarray(jax.jit(m)(jnp.asarray(x))), want, rtol=1e-6)


def test_torch_reaches_tensorflow_directly_not_through_a_host_callback() -> None:
    need("tensorflow")

    def f(x: Any) -> Any:
        return torch.sin(x)

    route = interop_core.explain(f, "tensorflow", source="torch")
    assert [s.converter for s in route.steps] == ["tf.py_function bridge"]
    # The two-step route through JAX exists in the graph but jax2tf refuses what the
    # callback bridge makes: it cannot serialize a host callback.
    assert any(
        r.converter == "jax2tf.convert" and "calls back into Python" in r.reason
        for r in route.refusals
    )


def test_tensorflow_reaches_torch_through_jax_with_gradients() -> None:
    tf = need("tensorflow")
    w = np.array([[1.0, -2.0], [0.5, 3.0]], np.float32)

    @tf.function
    def f(x: Any) -> Any:
        return tf.tanh(tf.matmul(x, w))

    route = interop_core.explain(f, "torch")
    # Through JAX as native code (tf2jax) where it is installed, else through call_tf.
    into_jax = "tf2jax.convert" if importlib.util.find_spec("tf2jax") else "jax2tf.call_tf"
    assert [(s.converter, s.target) for s in route.steps] == [
        (into_jax, "jax function"),
        ("jax.vjp bridge", "torch function"),
    ]
    k = interop_core.to(f, "torch")
    x = torch.tensor([[0.1, 0.2], [-0.3, 0.4]], requires_grad=True)
    y = k(x)
    assert isinstance(y, torch.Tensor)
    xt = tf.constant(x.detach().numpy())
    with tf.GradientTape() as tape:
        tape.watch(xt)
        loss = tf.reduce_sum(f(xt) ** 2)
    np.testing.assert_allclose(y.detach().numpy(), f(xt).numpy(), rtol=1e-6)
    (y**2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tape.gradient(loss, xt).numpy(), rtol=1e-5)


def test_the_traced_edge_says_why_it_is_not_taken() -> None:
    from interop_plugins.bridges.torchax_bridge import torchax_usable

    if torchax_usable():
        pytest.skip("torchax is installed here: tests/test_functions_torchax.py covers it")
    route = interop_core.explain(torch.sin, "jax", source="torch", trace=True)
    assert [s.converter for s in route.steps] == ["pure_callback bridge"]
    reasons = {r.converter: r.reason for r in route.refusals}
    assert "pip install --pre torchax" in reasons["torchax trace"]
