"""A traced torch->jax function bridge through torchax (optional).

``torch_to_jax_traced(fn, ctx)`` turns a torch function (or an ``nn.Module``) into a JAX
function: torchax runs the torch code on tensors that wrap JAX values, so under
``jax.jit`` the torch Python code runs once, while tracing, and the compiled program has
no host callback. ``jax.grad``, ``jax.vjp`` and ``jax.vmap`` go through it like through
any JAX code.

What it cannot carry (the callback bridge can): ops torchax has no lowering for, torch
code that reads values on the host (``.item()``, ``.numpy()``, data-dependent Python
branches) under a JAX transformation, and plain functions that close over torch tensors
(pass them as arguments, or convert the ``nn.Module`` that owns them).

Importing torchax has process-wide effects on torch (it renames torch's PrivateUse1
backend to "jax", registers a "jax" device module and turns off the fast path of
``nn.MultiheadAttention``). With torch 2.13 that breaks ``torch.compile`` in the whole
process ("PyTorch is not linked with support for jax devices", pytorch/xla#9730), so this
module imports torchax only when a function is converted, :func:`torchax_usable` decides
availability without importing it, and the edge should be opt-in rather than the default.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import re
from collections.abc import Callable
from typing import Any

from interop_core.plugin import CallContext, ConverterSpec, Needs, hookimpl

from .shared import function_edge

#: Loaded once both are imported (docs/plugins.md, "Loaded when needed").
INTEROP_ABOUT = (("torch", "jax"),)

#: torch 2.13 removed the named-tensor (Dimname) overloads; torchax releases up to 0.0.13
#: reference them at import time (google/torchax#101, fixed by #102). The first nightly
#: that imports with torch 2.13 is 0.0.14.dev20260807.
_TORCH_NO_DIMNAME = (2, 13)
_TORCHAX_FIXED = ((0, 0, 14), 20260807)

#: Array types converted to JAX (through ``ctx.to``) when passed to a converted function.
_FOREIGN_ARRAYS = frozenset({"numpy", "torch", "tensorflow"})


def _release(version: str) -> tuple[tuple[int, ...], int | None]:
    """(release numbers, dev number or None) of a PEP 440 version; enough for the check."""
    match = re.match(r"(\d+(?:\.\d+)*)(?:\.?dev(\d+))?", version)
    if match is None:
        return (), None
    release = tuple(int(p) for p in match.group(1).split("."))
    return release, int(match.group(2)) if match.group(2) else None


def torchax_usable() -> bool:
    """Whether torchax, torch and jax are installed in versions that work together.

    Cheap: it reads installed metadata and never imports a framework.
    """
    if any(importlib.util.find_spec(m) is None for m in ("torchax", "torch", "jax")):
        return False
    try:
        torch_version = importlib.metadata.version("torch")
        torchax_version = importlib.metadata.version("torchax")
    except importlib.metadata.PackageNotFoundError:
        return False
    if _release(torch_version)[0][:2] < _TORCH_NO_DIMNAME:
        return True
    release, dev = _release(torchax_version)
    fixed_release, fixed_dev = _TORCHAX_FIXED
    if release != fixed_release:
        return release > fixed_release
    return dev is None or dev >= fixed_dev


class TracedTorchFunction:
    """A torch function or module, callable as a JAX function (made by torch_to_jax_traced).

    For an ``nn.Module``, :attr:`params` holds a copy of its parameters and buffers taken
    at conversion (a dict of JAX arrays by name), the call uses that copy, and
    :meth:`apply` takes them explicitly: ``jax.grad(lambda p, x: f.apply(p, x).sum())``.
    Convert the module again to pick up later changes made in torch.
    """

    def __init__(self, fn: Callable[..., Any], ctx: CallContext) -> None:
        import torch

        self._fn = fn
        self._ctx = ctx
        self.params: dict[str, Any] | None = None
        self._module_fn: Callable[..., Any] | None = None
        if isinstance(fn, torch.nn.Module):
            import jax
            import torchax

            with jax.ensure_compile_time_eval():  # concrete parameters even under a trace
                self.params, self._module_fn = torchax.extract_jax(fn)
        functools.update_wrapper(self, fn, updated=())

    def __repr__(self) -> str:
        return f"<torchax-traced {self._fn!r}>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._module_fn is not None:
            return self.apply(self.params, *args, **kwargs)
        return self._run(self._fn, args, kwargs)

    def apply(self, params: Any, *args: Any, **kwargs: Any) -> Any:
        """Call the module with ``params`` (a pytree shaped like :attr:`params`)."""
        module_fn = self._module_fn
        if module_fn is None:
            raise TypeError(f"{self._fn!r} is not an nn.Module: it has no parameters to apply")
        args, kwargs = self._inputs((args, kwargs))
        return self._guarded(lambda: module_fn(params, args, kwargs))

    def _inputs(self, tree: Any) -> Any:
        """JAX leaves as they are; numpy/torch/TF arrays converted to JAX by the context."""
        import jax

        def leaf(x: Any) -> Any:
            if isinstance(x, jax.Array) or type(x).__module__.split(".")[0] not in _FOREIGN_ARRAYS:
                return x
            return self._ctx.to(x, "jax")

        return jax.tree_util.tree_map(leaf, tree)

    def _run(self, fn: Callable[..., Any], args: Any, kwargs: Any) -> Any:
        import torch
        import torch.utils._pytree as torch_pytree
        import torchax
        from torchax import interop, tensor

        args, kwargs = self._inputs((args, kwargs))
        to = self._ctx.to

        def output(x: Any) -> Any:
            if isinstance(x, (tensor.Tensor, tensor.View)):
                return x.jax()
            if isinstance(x, torch.Tensor):  # a constant the function made outside torchax
                return to(x.detach(), "jax")
            return x

        def call() -> Any:
            targs, tkwargs = interop.torch_view((args, kwargs))
            with torchax.default_env():
                result = fn(*targs, **tkwargs)
            return torch_pytree.tree_map(output, result)

        return self._guarded(call)

    def _guarded(self, call: Callable[[], Any]) -> Any:
        """Run ``call`` (which enters torchax's environment) with a PRNG key of its own.

        torchax draws torch's random numbers from a key in its (global) environment; a
        random op under a JAX transformation would store a tracer there and break every
        later call. The call gets its own key instead: eagerly the advanced key is kept,
        under a transformation it is dropped (so a jitted function draws the same numbers
        on every call, fixed when it was traced).
        """
        import jax
        import torchax

        # torchax makes its environment and each thread's key lazily: made under a trace,
        # the key would be a tracer kept for good.
        with jax.ensure_compile_time_eval():
            env = torchax.default_env()
            key = env.prng_key
        try:
            with env.override_property(prng=key):
                result = call()
                new_key = env.prng_key
        except AssertionError as exc:
            if "mixed math" not in str(exc):
                raise
            raise TypeError(
                f"{self._fn!r} mixes a torch.Tensor it did not receive as an argument with "
                "the traced inputs: pass that tensor as an argument, convert the nn.Module "
                "that owns it, or use the callback bridge"
            ) from exc
        if not isinstance(new_key, jax.core.Tracer) and not isinstance(key, jax.core.Tracer):
            env.prng_key = new_key
        return result


def torch_to_jax_traced(fn: Callable[..., Any], ctx: CallContext) -> Callable[..., Any]:
    """``fn`` (a torch function or ``nn.Module``) as a JAX function traced through torchax.

    It takes and returns JAX arrays in pytrees and works eagerly and under ``jax.jit``,
    ``jax.grad``/``jax.vjp`` and ``jax.vmap``; under ``jax.jit`` the torch code runs only
    while tracing.
    """
    return TracedTorchFunction(fn, ctx)


_TORCHAX_MISSING = (
    "torchax is not installed in a version that works with this torch (with torch 2.13 it "
    "needs torchax>=0.0.14.dev20260807: pip install --pre torchax)"
)


@hookimpl
def interop_converters() -> list[ConverterSpec]:
    """The traced torch -> jax function edge: cheaper than the callback bridge under
    jax.jit, but importing torchax changes torch process-wide, so it is opt-in (trace=True)."""
    usable = functools.cache(torchax_usable)  # asked on first use, once per registry build

    def refusal(key: object) -> str | None:
        return None if usable() else _TORCHAX_MISSING

    return [
        function_edge(
            "torchax trace",
            "torch",
            "jax",
            lambda: torch_to_jax_traced,
            accepts=Needs(extra=refusal),
            cost=0.5,
            options=("trace",),
            opt_in="trace",
            reuse=False,  # a module's params are copied at conversion: a fresh to() reads them
            note=(
                "traced by torchax: under jax.jit the torch code runs once, while tracing, "
                "and the program has no host callback; importing torchax breaks torch.compile "
                "for the rest of the process (pytorch/xla#9730)"
            ),
        )
    ]
