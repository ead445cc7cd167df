"""The traced torch->jax function bridge (torchax): values, gradients, jit without callbacks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("torch", reason="the torchax bridge needs torch")
pytest.importorskip("jax", reason="the torchax bridge needs jax")

import jax
import jax.numpy as jnp
import numpy as np
import torch
from conftest import required
from interop_plugins.bridges.torchax_bridge import torchax_usable

TORCHAX_NEEDED = "optional; with torch 2.13 it needs torchax>=0.0.14.dev20260807 (pip --pre)"
if not torchax_usable():  # an old torchax fails on import under torch 2.13: skip, don't crash
    if "torchax" in required():  # the nox session that names it must run these tests
        pytest.fail(f"torchax is required here but missing or too old: {TORCHAX_NEEDED}")
    pytest.skip(f"torchax missing or too old: {TORCHAX_NEEDED}", allow_module_level=True)
pytest.importorskip("torchax", reason=TORCHAX_NEEDED)


def convert(fn: Callable[..., Any], **options: Any) -> Callable[..., Any]:
    """The public call, opting in to the traced edge."""
    from interop_core import to

    return to(fn, "jax", source="torch", trace=True, **options)


RNG = np.random.default_rng(0)


def data(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def mlp(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    return torch.tanh(x @ w1) @ w2


X, W1, W2 = data(8, 5), data(5, 6), data(6, 3)


def close(a: Any, b: Any) -> None:
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-5)


def test_usable() -> None:
    assert torchax_usable()


def test_values_match_torch_eager_and_jit() -> None:
    f = convert(mlp)
    want = mlp(torch.from_numpy(X), torch.from_numpy(W1), torch.from_numpy(W2))
    args = (jnp.asarray(X), jnp.asarray(W1), jnp.asarray(W2))
    out = f(*args)
    assert isinstance(out, jax.Array)
    close(out, want)
    close(jax.jit(f)(*args), want)  # no example output needed: the function is traced


def test_pytrees_and_kwargs() -> None:
    def fn(inputs: dict[str, torch.Tensor], *, scale: float) -> tuple[torch.Tensor, ...]:
        s = inputs["a"] + inputs["b"]
        return s * scale, s.sum(dim=0)

    a, b = data(3, 4), data(3, 4)
    out = jax.jit(convert(fn), static_argnames="scale")({"a": a, "b": jnp.asarray(b)}, scale=2.0)
    assert isinstance(out, tuple) and all(isinstance(o, jax.Array) for o in out)
    close(out[0], (a + b) * 2)
    close(out[1], (a + b).sum(axis=0))


def test_gradients_match_torch_autograd() -> None:
    f = convert(mlp)
    tx, t1, t2 = (torch.from_numpy(v).requires_grad_() for v in (X, W1, W2))
    (mlp(tx, t1, t2) ** 2).sum().backward()

    def loss(x: jax.Array, w1: jax.Array, w2: jax.Array) -> jax.Array:
        return (f(x, w1, w2) ** 2).sum()

    args = (jnp.asarray(X), jnp.asarray(W1), jnp.asarray(W2))
    for grad in (jax.grad(loss, argnums=(0, 1, 2)), jax.jit(jax.grad(loss, argnums=(0, 1, 2)))):
        gx, g1, g2 = grad(*args)
        close(gx, tx.grad)
        close(g1, t1.grad)
        close(g2, t2.grad)


def test_vmap() -> None:
    f = convert(mlp)
    xs = data(4, 8, 5)
    out = jax.vmap(f, in_axes=(0, None, None))(xs, W1, W2)
    want = [mlp(torch.from_numpy(x), torch.from_numpy(W1), torch.from_numpy(W2)) for x in xs]
    close(out, torch.stack(want))


def test_jit_does_not_call_torch_after_tracing() -> None:
    calls = 0

    def counted(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
        nonlocal calls
        calls += 1
        return mlp(x, w1, w2)

    g = jax.jit(convert(counted))
    args = (jnp.asarray(X), jnp.asarray(W1), jnp.asarray(W2))
    first = g(*args)
    assert calls == 1  # the trace
    for _ in range(5):
        close(g(*args), first)
    assert calls == 1
    jaxpr = str(jax.make_jaxpr(convert(mlp))(*args))
    assert "callback" not in jaxpr and "tanh" in jaxpr


def test_module_uses_its_parameters() -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.ReLU(), torch.nn.Linear(7, 2))
    f = convert(model)
    with torch.no_grad():
        want = model(torch.from_numpy(X))
    close(f(X), want)
    close(jax.jit(f)(jnp.asarray(X)), want)

    # gradients with respect to the parameters, against torch autograd
    model.zero_grad()
    model(torch.from_numpy(X)).square().sum().backward()
    params = f.params  # type: ignore[attr-defined]
    grads = jax.jit(jax.grad(lambda p, x: jnp.square(f.apply(p, x)).sum()))(params, X)  # type: ignore[attr-defined]
    for name, p in model.named_parameters():
        close(grads[name], p.grad)


def test_closed_over_tensor_is_reported() -> None:
    w = torch.from_numpy(W1)
    with pytest.raises(TypeError, match="pass that tensor as an argument"):
        jax.jit(convert(lambda x: x @ w))(X)


def test_random_ops_under_jit_leave_torchax_usable() -> None:
    def drop(x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.dropout(x, 0.5, training=True)

    f = convert(drop)
    ones = jnp.ones((16, 16))
    jitted = jax.jit(f)(ones)
    assert set(np.unique(np.asarray(jitted))) <= {0.0, 2.0}
    a, b = f(ones), f(ones)  # eager calls still work and draw fresh numbers
    assert not np.array_equal(np.asarray(a), np.asarray(b))


def test_first_call_under_jit_in_a_new_thread_leaks_no_tracer() -> None:
    # torchax makes each thread's PRNG key on first use: under jit it must not be a tracer
    import threading

    results: list[Any] = []

    def work() -> None:
        try:
            jax.jit(convert(lambda x: x * 2))(jnp.ones(3))
            drop = convert(lambda x: torch.nn.functional.dropout(x, 0.5, training=True))
            results.append(drop(jnp.ones(8)))
        except Exception as exc:
            results.append(exc)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert isinstance(results[0], jax.Array), results[0]


def test_the_traced_edge_is_opt_in() -> None:
    from interop_core import explain

    assert [s.converter for s in explain(mlp, "jax", source="torch", trace=True).steps] == [
        "torchax trace"
    ]
    assert [s.converter for s in explain(mlp, "jax", source="torch").steps] != ["torchax trace"]
