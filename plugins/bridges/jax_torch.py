"""Function bridges between JAX and PyTorch.

:func:`jax_to_torch` makes a JAX function callable on torch tensors, with torch autograd
through ``jax.vjp``. :func:`torch_to_jax` makes a torch function (or ``nn.Module``) callable on
JAX arrays: eagerly it calls torch directly; under ``jax.jit``/``jax.grad``/``jax.vmap`` it is
a ``jax.custom_vjp`` whose forward and backward call torch through ``jax.pure_callback``.
Arrays cross through ``ctx.to`` (zero-copy where the frameworks allow).
"""

from __future__ import annotations

import functools
import itertools
import math
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from interop_core.plugin import (
    CallContext,
    ConversionError,
    ConverterSpec,
    InteropError,
    OptionError,
    UnsupportedTransformError,
    hookimpl,
)

from .shared import (
    SignatureCache,
    check_unmodified,
    function_edge,
    function_name,
    is_forward_mode,
)

#: Loaded once both are imported (docs/plugins.md, "Loaded when needed").
INTEROP_ABOUT = (("jax", "torch"),)

#: Option of torch_to_jax: the result's shapes and dtypes (a pytree of objects with .shape
#: and .dtype), which skips shape inference.
RESULT_SHAPE = "result_shape"


def _conj(x: Any) -> Any:
    # JAX's cotangents of complex values are the conjugates of torch's (and TF's) gradients.
    return x.conj_physical() if x.is_complex() else x


# --------------------------------------------------------------------------------------
# JAX function -> torch


@functools.cache
def _jax_autograd_function() -> Any:
    """The torch.autograd.Function that runs a :class:`_JaxCall` (built on first use)."""
    import torch
    from torch.autograd.function import once_differentiable

    class JaxFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, call: _JaxCall, *tensors: Any) -> Any:
            outs, saved, nondiff = call.forward(tensors, ctx.needs_input_grad[1:])
            ctx.call = call
            # Saving the tensors the vjp's residuals alias makes torch raise its usual
            # "modified by an inplace operation" error instead of a silently wrong gradient.
            ctx.save_for_backward(*saved)
            ctx.mark_non_differentiable(*nondiff)
            return tuple(outs)

        @staticmethod
        @once_differentiable  # type: ignore[untyped-decorator]
        def backward(ctx: Any, *grads: Any) -> Any:
            ctx.saved_tensors  # noqa: B018  (checks the version counters)
            return (None, *ctx.call.backward(grads))

    return JaxFunction


@functools.cache
def _apply_vjp() -> Callable[..., Any]:
    """vjp_fn(cts), compiled: a vjp function returned by a jit is a pytree of residuals."""
    import jax

    return jax.jit(lambda vjp_fn, cts: vjp_fn(cts))  # type: ignore[no-any-return]


class _Outputs:
    """The structure of a JAX function's result, found while tracing it."""

    tree: Any = None
    leaves: list[Any]  # the non-array leaves (None where an array goes)
    floats: list[int]
    others: list[int]

    def split(self, out: Any) -> tuple[list[Any], list[Any]]:
        """The inexact array leaves (differentiable) and the other array leaves."""
        import jax

        flat, self.tree = jax.tree_util.tree_flatten(out)
        arrays = [i for i, o in enumerate(flat) if isinstance(o, jax.Array)]
        self.floats = [i for i in arrays if jax.numpy.issubdtype(flat[i].dtype, jax.numpy.inexact)]
        self.others = [i for i in arrays if i not in self.floats]
        # Non-array leaves are kept here, not returned: vjp and jit take only arrays.
        self.leaves = [None if i in arrays else o for i, o in enumerate(flat)]
        return [flat[i] for i in self.floats], [flat[i] for i in self.others]


class _JaxBridge:
    """A JAX function callable on torch tensors."""

    def __init__(self, fn: Callable[..., Any], ctx: CallContext) -> None:
        self.fn, self.ctx = fn, ctx
        # For a jax.jit-wrapped function the vjp itself is compiled, once per signature:
        # jax.vjp re-linearizes in Python on every call (1-3 ms here); compiled, the
        # forward and the backward are one dispatch each.
        # A plain function is not jitted for the user: it may not be traceable.
        self.jitted = callable(getattr(fn, "lower", None))
        self.compiled: SignatureCache[tuple[Callable[..., Any], _Outputs]] = SignatureCache()

    def pure(
        self, tree: Any, template: list[Any], diff: list[int], const: list[int], rec: _Outputs
    ) -> Callable[[Sequence[Any], Sequence[Any]], Any]:
        """fn as a function of the differentiable and the constant array leaves."""
        import jax

        def g(primals: Sequence[Any], consts: Sequence[Any]) -> Any:
            leaves = list(template)
            for i, x in itertools.chain(
                zip(diff, primals, strict=True), zip(const, consts, strict=True)
            ):
                leaves[i] = x
            args, kwargs = jax.tree_util.tree_unflatten(tree, leaves)
            return rec.split(self.fn(*args, **kwargs))

        return g

    def vjp(
        self, tree: Any, leaves: list[Any], diff: list[int], const: list[int]
    ) -> tuple[list[Any], Any, list[Any], _Outputs]:
        """jax.vjp over the leaves at ``diff``: (float outputs, vjp_fn, other outputs, rec)."""
        import jax

        primals = [leaves[i] for i in diff]
        consts = [leaves[i] for i in const]
        arrays = {*diff, *const}
        template = [None if i in arrays else x for i, x in enumerate(leaves)]
        if self.jitted:
            entry = self._compiled(tree, template, leaves, diff, const)
            if entry is not None:
                jfwd, rec = entry
                floats, vjp_fn, others = jfwd(primals, consts)
                return floats, vjp_fn, others, rec
        rec = _Outputs()
        g = self.pure(tree, template, diff, const, rec)
        floats, vjp_fn, others = jax.vjp(lambda *ps: g(ps, consts), *primals, has_aux=True)
        return floats, vjp_fn, others, rec

    def _compiled(
        self, tree: Any, template: list[Any], leaves: list[Any], diff: list[int], const: list[int]
    ) -> tuple[Callable[..., Any], _Outputs] | None:
        import jax

        key: Any = (
            tree,
            tuple(diff),
            tuple((x.shape, x.dtype) if x is not None else None for x in leaves),
            tuple((type(x), x) for x in template),
        )
        try:
            hash(key)
        except TypeError:  # an unhashable static argument: the plain jax.vjp
            return None

        def compile_vjp() -> tuple[Callable[..., Any], _Outputs]:
            rec = _Outputs()
            g = self.pure(tree, template, diff, const, rec)
            return jax.jit(lambda p, c: jax.vjp(lambda *ps: g(ps, c), *p, has_aux=True)), rec

        return self.compiled.get_or_make(key, compile_vjp)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        import jax
        import torch

        leaves, tree = jax.tree_util.tree_flatten((args, kwargs))
        pos = [i for i, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor)]
        if torch.is_grad_enabled() and any(leaves[i].requires_grad for i in pos):
            call = _JaxCall(self, leaves, tree, pos)
            return call.rebuild(_jax_autograd_function().apply(call, *(leaves[i] for i in pos)))
        to = self.ctx.to
        for i in pos:
            leaves[i] = to(leaves[i].detach(), "jax")
        a, k = jax.tree_util.tree_unflatten(tree, leaves)
        return _map_arrays(self.fn(*a, **k), jax.Array, lambda x: to(x, "torch"))


class _JaxCall:
    """One call of a JAX function on torch tensors, some of which need gradients."""

    def __init__(self, bridge: _JaxBridge, leaves: list[Any], tree: Any, pos: list[int]):
        self.bridge, self.leaves, self.tree, self.pos = bridge, leaves, tree, pos
        self.diff: list[int] = []  # indices into the tensor inputs
        self.rec = _Outputs()
        self.vjp: Any = None

    def forward(self, tensors: Sequence[Any], needs: Sequence[bool]) -> Any:
        import jax

        to = self.bridge.ctx.to
        self.diff = [i for i, need in enumerate(needs) if need]
        jleaves = list(self.leaves)
        for p, t in zip(self.pos, tensors, strict=True):
            jleaves[p] = to(t.detach(), "jax")
        diff = [self.pos[i] for i in self.diff]
        const = [p for p in self.pos if p not in diff]
        floats, self.vjp, others, self.rec = self.bridge.vjp(self.tree, jleaves, diff, const)
        tout = [to(o, "torch") for o in itertools.chain(floats, others)]
        residual = _pointers(jax.tree_util.tree_leaves(self.vjp))
        saved = [t for t in (*tensors, *tout) if t.data_ptr() in residual]
        return tout, saved, tout[len(floats) :]

    def backward(self, grads: Sequence[Any]) -> list[Any]:
        to = self.bridge.ctx.to
        cts = [to(_conj(g).contiguous(), "jax") for g in grads[: len(self.rec.floats)]]
        jgrads = _apply_vjp()(self.vjp, cts) if self.bridge.jitted else self.vjp(cts)
        out: list[Any] = [None] * len(self.pos)
        seen: set[int] = set()
        for i, jg in zip(self.diff, jgrads, strict=True):
            tg = _conj(to(jg, "torch"))
            # jax.vjp hands the same array to every input of e.g. x + y: torch must get
            # separate gradients, or an in-place step on one .grad changes the other.
            if tg.data_ptr() in seen:
                tg = tg.clone()
            seen.add(tg.data_ptr())
            out[i] = tg
        self.vjp = None  # frees JAX's residuals with the torch graph
        return out

    def rebuild(self, touts: Sequence[Any]) -> Any:
        import jax

        leaves = list(self.rec.leaves)
        for i, t in zip(self.rec.floats + self.rec.others, touts, strict=True):
            leaves[i] = t
        return jax.tree_util.tree_unflatten(self.rec.tree, leaves)


def _pointers(arrays: Sequence[Any]) -> set[int]:
    """Buffer addresses of the single-buffer JAX arrays among ``arrays``."""
    import jax

    found = set()
    for a in arrays:
        if isinstance(a, jax.Array):
            try:
                found.add(a.unsafe_buffer_pointer())
            except Exception:  # sharded over devices, or deleted: nothing torch shares
                continue
    return found


def jax_to_torch(fn: Callable[..., Any], ctx: CallContext) -> Callable[..., Any]:
    """A JAX function as a torch function: tensors (in pytrees) in and out, with autograd.

    Tensor leaves cross zero-copy; other leaves reach ``fn`` unchanged. When grad mode is
    on and an input tensor requires grad, the call goes through ``jax.vjp`` inside a
    ``torch.autograd.Function`` so ``backward()`` fills every such tensor's ``.grad``; for a
    ``jax.jit``-wrapped ``fn`` that vjp is compiled too.
    """
    bridge = _JaxBridge(fn, ctx)

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        return bridge(*args, **kwargs)

    return call


def _map_arrays(tree: Any, kind: type, fn: Callable[[Any], Any]) -> Any:
    import jax

    return jax.tree_util.tree_map(lambda x: fn(x) if isinstance(x, kind) else x, tree)


# --------------------------------------------------------------------------------------
# torch function -> JAX


class _Graphs:
    """Torch autograd graphs kept from a custom_vjp forward for its backward, by key.

    Bounded: a forward whose backward never runs (a discarded ``jax.vjp``) is evicted
    after ``size`` newer ones, and a backward that finds no graph recomputes it.
    """

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self.graphs: OrderedDict[int, Any] = OrderedDict()
        self.counter = itertools.count(1)
        self.lock = threading.Lock()

    def put(self, graph: Any) -> int:
        with self.lock:
            key = next(self.counter) % 2**31
            self.graphs[key] = graph
            while len(self.graphs) > self.size:
                self.graphs.popitem(last=False)
            return key

    def pop(self, key: int) -> Any:
        with self.lock:
            return self.graphs.pop(key, None)


_GRAPHS = _Graphs()


def _jax_dtype(torch_dtype: Any, name: str) -> Any:
    """The JAX dtype of a torch result; refuses the 64-bit ones JAX would narrow."""
    import jax

    from ..frameworks.torch import dtype_name

    dt = jax.numpy.dtype(dtype_name(torch_dtype))
    if jax.dtypes.canonicalize_dtype(dt) != dt:
        # as to() does for arrays: narrowing silently would change the function's results
        raise ConversionError(
            f"The torch function {name} returns {dt}, which JAX narrows to 32 bits because "
            "jax_enable_x64 is off. Enable it (jax.config.update('jax_enable_x64', True)) "
            "or cast the result inside the function."
        )
    return dt


def _torch_dtype(dtype: Any) -> Any:
    import numpy as np

    from ..frameworks.torch import torch_dtype

    return torch_dtype(np.dtype(dtype).name)


class _Signature:
    """What one input signature of a bridged torch function needs under a JAX trace."""

    def __init__(self, bridge: _TorchBridge, leaves: list[Any], tree: Any, pos: list[int]):
        import jax

        self.bridge, self.tree, self.pos = bridge, tree, pos
        self.statics = list(leaves)
        for i in pos:
            self.statics[i] = None
        self.in_avals = [jax.ShapeDtypeStruct(leaves[i].shape, leaves[i].dtype) for i in pos]
        inexact = [jax.numpy.issubdtype(a.dtype, jax.numpy.inexact) for a in self.in_avals]
        self.diff = [i for i, f in enumerate(inexact) if f]
        self.out_tree, self.out_avals = bridge.infer(self)
        self.out_float = [
            i
            for i, a in enumerate(self.out_avals)
            if jax.numpy.issubdtype(a.dtype, jax.numpy.inexact)
        ]
        self.out_torch = [_torch_dtype(a.dtype) for a in self.out_avals]
        self.vmap_failed = False
        self.fn = self._custom_vjp()

    # The torch side, run inside the callbacks.

    def call_torch(self, tensors: Sequence[Any]) -> list[Any]:
        """The function on one set of flat tensors; the flat tensor results."""
        import jax

        leaves = list(self.statics)
        for i, t in zip(self.pos, tensors, strict=True):
            leaves[i] = t
        args, kwargs = jax.tree_util.tree_unflatten(self.tree, leaves)
        out, tree = jax.tree_util.tree_flatten(self.bridge.fn(*args, **kwargs))
        if tree != self.out_tree:
            raise ConversionError(
                f"The torch function {self.bridge.name} returned {tree}, but shape inference "
                f"found {self.out_tree}: its result structure must depend only on the input "
                "shapes and dtypes. Return the same structure every call."
            )
        return out

    def run(self, tensors: list[Any], base: Sequence[int]) -> list[Any]:
        """call_torch, batched over the leading dims jax.vmap added (broadcast_all)."""
        import torch

        extra = tensors[0].ndim - base[0] if tensors else 0
        if extra <= 0:
            return self.call_torch(tensors)
        batch = tuple(tensors[0].shape[:extra])
        n = math.prod(batch)
        flat = [t.reshape(n, *t.shape[extra:]) for t in tensors]
        outs: Any = None
        if not self.vmap_failed:
            try:
                outs = torch.func.vmap(lambda *ts: tuple(self.call_torch(ts)))(*flat)
            except InteropError:
                raise
            except Exception:
                # torch.func.vmap refuses some functions (.item(), in-place updates,
                # randomness): run them one example at a time instead.
                self.vmap_failed = True
        if outs is None:
            rows = [self.call_torch([t[j] for t in flat]) for j in range(n)]
            outs = [torch.stack(col) for col in zip(*rows, strict=True)]
        return [o.reshape(*batch, *o.shape[1:]) for o in outs]

    def forward(self, arrays: Sequence[Any], grad: bool) -> tuple[list[Any], Any]:
        import torch

        to = self.bridge.ctx.to
        tensors = [to(a, "torch") for a in arrays]
        versions = [t._version for t in tensors]
        diff = []
        if grad:  # fresh leaves: an in-place write into them raises in torch
            diff = [tensors[i].detach().requires_grad_() for i in self.diff]
            for i, t in zip(self.diff, diff, strict=True):
                tensors[i] = t
        base = [len(a.shape) for a in self.in_avals]
        with torch.set_grad_enabled(grad):
            outs = self.run(tensors, base)
        self.bridge.check_unmodified(tensors, versions)
        return outs, (diff, outs) if grad else None

    def to_numpy(self, outs: Sequence[Any], dtypes: Sequence[Any]) -> list[Any]:
        to = self.bridge.ctx.to
        res = []
        for o, dt in zip(outs, dtypes, strict=True):
            if not isinstance(o, self.bridge.tensor_type):
                raise ConversionError(
                    f"The torch function {self.bridge.name} returned a {type(o).__name__} "
                    "under a JAX transformation, where only tensors can come back. Return "
                    "torch tensors (torch.tensor(value) for a number)."
                )
            o = o.detach()
            res.append(to(o if o.dtype == dt else o.to(dt), "numpy"))
        return res

    def check_shapes(self, outs: Sequence[Any]) -> None:
        for o, a in zip(outs, self.out_avals, strict=True):
            n = len(a.shape)
            if isinstance(o, self.bridge.tensor_type) and tuple(o.shape[o.ndim - n :]) != a.shape:
                raise ConversionError(
                    f"The torch function {self.bridge.name} returned shape "
                    f"{tuple(o.shape)} where {a.shape} was expected (from shape inference or "
                    f"the option {RESULT_SHAPE}=). Under JAX transformations result shapes "
                    f"must follow from the input shapes; fix {RESULT_SHAPE}= if you gave it."
                )

    def primal_callback(self, *arrays: Any) -> list[Any]:
        outs, _ = self.forward(arrays, grad=False)
        self.check_shapes(outs)
        return self.to_numpy(outs, self.out_torch)

    def fwd_callback(self, *arrays: Any) -> list[Any]:
        import numpy as np

        outs, graph = self.forward(arrays, grad=True)
        self.check_shapes(outs)
        key = _GRAPHS.put(graph)
        extra = arrays[0].ndim - len(self.in_avals[0].shape) if arrays else 0
        keys = np.full(tuple(arrays[0].shape[:extra]) if extra > 0 else (), key, np.int32)
        return [*self.to_numpy(outs, self.out_torch), keys]

    def bwd_callback(self, key: Any, *rest: Any) -> list[Any]:
        import numpy as np
        import torch

        to = self.bridge.ctx.to
        arrays, jcts = rest[: len(self.in_avals)], rest[len(self.in_avals) :]
        cts = [_conj(to(ct, "torch")) for ct in jcts]
        graph = _GRAPHS.pop(int(np.asarray(key).flat[0]))
        extra = 0
        if graph is not None:
            outs = [graph[1][i] for i in self.out_float]
            base = [len(self.out_avals[i].shape) for i in self.out_float]
            if all(o.shape == c.shape for o, c in zip(outs, cts, strict=True)):
                pass
            elif all(o.ndim == b for o, b in zip(outs, base, strict=True)):
                # jax.jacrev (vmap over the vjp): cotangents batched, the forward not
                extra = cts[0].ndim - base[0]
            else:
                graph = None  # batched differently from its forward: rebuild it
        if graph is None:  # also when evicted or run twice by XLA
            _, graph = self.forward(arrays, grad=True)
        diff, all_outs = graph
        pairs = [
            (all_outs[i], ct)
            for i, ct in zip(self.out_float, cts, strict=True)
            if all_outs[i].requires_grad
        ]
        grads: Sequence[Any] = [None] * len(diff)
        if pairs and diff:
            o, g = zip(*pairs, strict=True)
            grads = self._grad(o, diff, g, extra)
        shape = tuple(cts[0].shape[:extra]) if extra else ()
        return self.to_numpy(
            [
                torch.zeros(*shape, *d.shape, dtype=d.dtype) if g is None else _conj(g)
                for d, g in zip(diff, grads, strict=True)
            ],
            [_torch_dtype(self.in_avals[i].dtype) for i in self.diff],
        )

    @staticmethod
    def _grad(outs: Sequence[Any], inputs: Sequence[Any], cts: Sequence[Any], extra: int) -> Any:
        """torch.autograd.grad; with ``extra`` leading batch dims on the cotangents."""
        import torch

        if not extra:
            return torch.autograd.grad(outs, inputs, cts, allow_unused=True)
        batch = tuple(cts[0].shape[:extra])
        flat = [c.reshape(-1, *c.shape[extra:]) for c in cts]
        try:
            got: Any = torch.autograd.grad(
                outs, inputs, flat, allow_unused=True, is_grads_batched=True
            )
        except Exception:  # batched backward goes through vmap, which some ops refuse
            rows = [
                torch.autograd.grad(outs, inputs, [c[j] for c in flat], True, allow_unused=True)
                for j in range(flat[0].shape[0])
            ]
            got = [None if c[0] is None else torch.stack(c) for c in zip(*rows, strict=True)]
        return [None if g is None else g.reshape(*batch, *g.shape[1:]) for g in got]

    # The JAX side.

    def _custom_vjp(self) -> Callable[..., Any]:
        import jax

        out_avals = list(self.out_avals)
        key_aval = jax.ShapeDtypeStruct((), "int32")
        diff_avals = [self.in_avals[i] for i in self.diff]
        n_in = len(self.in_avals)

        def callback(cb: Callable[..., Any], avals: Any, *args: Any) -> Any:
            return jax.pure_callback(cb, avals, *args, vmap_method="broadcast_all")

        def once(cb: Callable[..., Any], avals: Any) -> Callable[..., Any]:
            """The callback as a custom_jvp whose rule refuses: differentiating the
            forward or backward of the custom_vjp (jax.hessian, grad of grad) raises this
            clear error instead of "Pure callbacks do not support JVP"."""

            @jax.custom_jvp
            def run(*args: Any) -> Any:
                return callback(cb, avals, *args)

            @run.defjvp
            def run_jvp(primals: Any, tangents: Any) -> Any:
                raise UnsupportedTransformError(
                    f"Cannot differentiate the torch function {self.bridge.name} twice "
                    "(jax.hessian, grad of grad): its bridge carries first-order reverse "
                    "mode only (a jax.custom_vjp over torch autograd). Write the function in "
                    "JAX for higher-order derivatives."
                )

            return run

        fwd = once(self.fwd_callback, [*out_avals, key_aval])
        backward = once(self.bwd_callback, diff_avals)

        @jax.custom_vjp
        def f(*xs: Any) -> Any:
            return callback(self.primal_callback, out_avals, *xs)

        def f_fwd(*xs: Any) -> Any:
            *outs, key = fwd(*xs)
            return outs, (key, xs)

        def f_bwd(res: Any, cts: Any) -> Any:
            key, xs = res
            grads = backward(key, *xs, *(cts[i] for i in self.out_float))
            out: list[Any] = [None] * n_in
            for i, g in zip(self.diff, grads, strict=True):
                out[i] = g
            return tuple(out)

        f.defvjp(f_fwd, f_bwd)
        return f


class _TorchBridge:
    """A torch function callable on JAX arrays, eagerly and under JAX transformations."""

    def __init__(
        self,
        fn: Callable[..., Any],
        ctx: CallContext,
        meta_fn: Callable[..., Any] | None = None,
        name: str = "",
    ) -> None:
        import torch

        self.fn, self.ctx, self.meta_fn = fn, ctx, meta_fn or fn
        self.name = name or function_name(fn)
        self.tensor_type = torch.Tensor
        self.signatures: SignatureCache[_Signature] = SignatureCache()
        self.result_shape = ctx.option(RESULT_SHAPE)
        if self.result_shape is not None:
            self._result_avals()  # a bad value fails now, not at the first trace

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        import jax
        import numpy as np

        leaves, tree = jax.tree_util.tree_flatten((args, kwargs))
        if not any(isinstance(x, jax.core.Tracer) for x in leaves):
            return self._eager(leaves, tree)
        for i, x in enumerate(leaves):
            if isinstance(x, np.ndarray | np.generic):
                leaves[i] = jax.numpy.asarray(x)
        pos = [i for i, x in enumerate(leaves) if isinstance(x, jax.Array)]
        # Reverse mode traces with LinearizeTracer (direct linearize, JAX's default), forward
        # mode with JVPTracer: refuse the latter here, where the error can still be ours.
        if getattr(jax.config, "jax_use_direct_linearize", True) and any(
            is_forward_mode(leaves[i]) for i in pos
        ):
            raise self._forward_mode()
        sig = self._signature(leaves, tree, pos)
        try:
            outs = sig.fn(*(leaves[i] for i in pos))
        except TypeError as exc:  # JAX's own refusal, where the check above missed it
            if "forward-mode" not in str(exc):
                raise
            raise self._forward_mode() from exc
        return jax.tree_util.tree_unflatten(sig.out_tree, outs)

    def _forward_mode(self) -> UnsupportedTransformError:
        return UnsupportedTransformError(
            f"Forward-mode differentiation (jax.jvp, jax.jacfwd, jax.hessian) cannot go "
            f"through the torch function {self.name}: its bridge defines only a "
            "reverse-mode rule (a jax.custom_vjp over torch autograd). Use jax.grad, "
            "jax.vjp or jax.jacrev, or write the function in JAX."
        )

    def _eager(self, leaves: list[Any], tree: Any) -> Any:
        import jax
        import numpy as np
        import torch

        to = self.ctx.to
        pos = [i for i, x in enumerate(leaves) if isinstance(x, jax.Array | np.ndarray)]
        tensors = [to(leaves[i], "torch") for i in pos]
        versions = [t._version for t in tensors]
        for i, t in zip(pos, tensors, strict=True):
            leaves[i] = t
        args, kwargs = jax.tree_util.tree_unflatten(tree, leaves)
        with torch.no_grad():
            out = self.fn(*args, **kwargs)
        self.check_unmodified(tensors, versions)
        return _map_arrays(out, self.tensor_type, lambda t: to(t, "jax"))

    def check_unmodified(self, tensors: Sequence[Any], versions: Sequence[int]) -> None:
        """Raise if the function wrote into its inputs (they share JAX's buffers)."""
        check_unmodified(tensors, versions, self.name, "immutable JAX arrays")

    def _signature(self, leaves: list[Any], tree: Any, pos: list[int]) -> _Signature:
        arrays = set(pos)
        key: Any = (
            tree,
            tuple(
                (x.shape, x.dtype) if i in arrays else (type(x), x) for i, x in enumerate(leaves)
            ),
        )
        return self.signatures.get_or_make(key, lambda: _Signature(self, leaves, tree, pos))

    # Shape inference.

    def infer(self, sig: _Signature) -> tuple[Any, list[Any]]:
        """The result's tree and avals: the option, else a run on meta tensors, else zeros."""
        if self.result_shape is not None:
            return self._result_avals()
        import torch

        def run(device: str, fn: Callable[..., Any]) -> tuple[Any, list[Any]]:
            import jax

            tensors = [
                torch.zeros(a.shape, dtype=_torch_dtype(a.dtype), device=device)
                for a in sig.in_avals
            ]
            leaves = list(sig.statics)
            for i, t in zip(sig.pos, tensors, strict=True):
                leaves[i] = t
            args, kwargs = jax.tree_util.tree_unflatten(sig.tree, leaves)
            with torch.no_grad():
                out, tree = jax.tree_util.tree_flatten(fn(*args, **kwargs))
            for o in out:
                if not isinstance(o, torch.Tensor):
                    raise ConversionError(
                        f"The torch function {self.name} returned a {type(o).__name__} "
                        "under a JAX transformation, where only tensors can come back. "
                        "Return torch tensors (torch.tensor(value) for a number)."
                    )
            return tree, [
                jax.ShapeDtypeStruct(tuple(o.shape), _jax_dtype(o.dtype, self.name)) for o in out
            ]

        try:
            return run("meta", self.meta_fn)
        except InteropError:
            raise
        except Exception as meta_exc:
            try:
                found = run("cpu", self.fn)
            except InteropError:
                raise
            except Exception as exc:
                raise ConversionError(
                    f"Cannot infer the result shapes of the torch function {self.name} under "
                    f"a JAX trace: on meta tensors it raised {meta_exc!r}, on zeros "
                    f"{exc!r}. Pass the option {RESULT_SHAPE}= (a pytree of "
                    "jax.ShapeDtypeStruct matching its result)."
                ) from exc
            warnings.warn(
                f"Shape inference ran the torch function {self.name} once on zeros, since "
                f"it cannot run on meta tensors ({meta_exc!r}). Pass {RESULT_SHAPE}= to "
                "avoid that run.",
                stacklevel=5,
            )
            return found

    def _result_avals(self) -> tuple[Any, list[Any]]:
        import jax

        leaves, tree = jax.tree_util.tree_flatten(self.result_shape)
        avals = []
        for x in leaves:
            try:
                dt = x.dtype
                dt = _jax_dtype(dt, self.name) if isinstance(dt, self._torch_dtype_type()) else dt
                avals.append(
                    jax.ShapeDtypeStruct(tuple(x.shape), jax.dtypes.canonicalize_dtype(dt))
                )
            except Exception as exc:
                raise OptionError(
                    f"Option {RESULT_SHAPE}= must be a pytree of objects with .shape and "
                    f".dtype (jax.ShapeDtypeStruct, arrays, tensors); it holds {x!r}, which "
                    f"has none ({exc}). Pass e.g. jax.ShapeDtypeStruct((3,), 'float32')."
                ) from exc
        return tree, avals

    @staticmethod
    def _torch_dtype_type() -> type:
        import torch

        return torch.dtype


class TorchModuleFunction:
    """A ``torch.nn.Module`` as a JAX function.

    ``m(*args)`` runs the module with its current parameters and buffers (read at each
    call, also under ``jax.jit``); ``m.apply(params, *args)`` runs it with ``params`` (a
    dict of JAX arrays by parameter name; buffers may be given by name too) through
    ``torch.func.functional_call``, differentiable in ``params`` under ``jax.grad``.
    ``m.params`` are the module's parameters as JAX arrays that share its memory.
    """

    def __init__(self, module: Any, ctx: CallContext) -> None:
        self.module = module
        self._ctx = ctx
        name = type(module).__qualname__
        self._call = _TorchBridge(module, ctx, self._meta_call, name)
        self._apply = _TorchBridge(self._forward_with, ctx, self._meta_apply, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._call(*args, **kwargs)

    def apply(self, params: Any, *args: Any, **kwargs: Any) -> Any:
        """The module on ``args`` with ``params`` in place of its own parameters."""
        return self._apply(params, *args, **kwargs)

    @property
    def params(self) -> dict[str, Any]:
        """The module's parameters as JAX arrays (zero-copy: later in-place torch updates
        show through; copy them with ``jnp.array(p)`` to keep a snapshot)."""
        to = self._ctx.to
        return {n: to(p.detach(), "jax") for n, p in self.module.named_parameters()}

    def _meta_state(self) -> dict[str, Any]:
        import torch

        state = itertools.chain(self.module.named_parameters(), self.module.named_buffers())
        return {n: torch.empty_like(t, device="meta") for n, t in state}

    def _meta_call(self, *args: Any, **kwargs: Any) -> Any:
        import torch

        return torch.func.functional_call(self.module, self._meta_state(), args, kwargs)

    def _meta_apply(self, params: Any, *args: Any, **kwargs: Any) -> Any:
        import torch

        state = {**self._meta_state(), **self._params_dict(params)}
        return torch.func.functional_call(self.module, state, args, kwargs)

    def _forward_with(self, params: Any, *args: Any, **kwargs: Any) -> Any:
        import torch

        state = {**dict(self.module.named_buffers()), **self._params_dict(params)}
        return torch.func.functional_call(self.module, state, args, kwargs)

    def _params_dict(self, params: Any) -> dict[str, Any]:
        if not isinstance(params, dict):
            raise ConversionError(
                f"apply() of the bridged {type(self.module).__qualname__} takes its "
                f"parameters as a dict by name (like .params), not a {type(params).__name__}."
            )
        unknown = set(params) - set(self._meta_names())
        if unknown:
            raise ConversionError(
                f"apply() got parameters {sorted(unknown)} that "
                f"{type(self.module).__qualname__} does not have. Its parameters and "
                f"buffers: {sorted(self._meta_names())}."
            )
        return params

    def _meta_names(self) -> list[str]:
        return [
            n
            for n, _ in itertools.chain(self.module.named_parameters(), self.module.named_buffers())
        ]


def torch_to_jax(fn: Callable[..., Any], ctx: CallContext) -> Callable[..., Any]:
    """A torch function (or ``nn.Module``) as a JAX function: arrays (in pytrees) in and out.

    Eagerly torch runs directly on zero-copy views. Under ``jax.jit``/``jax.grad``/
    ``jax.vmap`` it runs on the host through ``jax.pure_callback`` inside a
    ``jax.custom_vjp`` (backward by torch autograd); result shapes come from a run on meta
    tensors, once per input signature. Forward mode (``jax.jvp``) is not supported.
    """
    import torch

    if isinstance(fn, torch.nn.Module):
        return TorchModuleFunction(fn, ctx)
    bridge = _TorchBridge(fn, ctx)

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        return bridge(*args, **kwargs)

    return call


@hookimpl
def interop_converters() -> list[ConverterSpec]:
    """The jax -> torch (jax.vjp) and torch -> jax (pure_callback) function edges."""
    return [
        function_edge(
            "jax.vjp bridge",
            "jax",
            "torch",
            lambda: jax_to_torch,
            note=(
                "JAX runs the function on zero-copy views of the tensors; with grad, torch "
                "autograd goes through jax.vjp (compiled per signature for a jax.jit function); "
                "first-order gradients only"
            ),
        ),
        function_edge(
            "pure_callback bridge",
            "torch",
            "jax",
            lambda: torch_to_jax,
            options=(RESULT_SHAPE,),
            adds_flags=frozenset({"host_callback"}),
            note=(
                "eagerly torch runs on zero-copy views; under jax.jit/grad/vmap it runs on the "
                "host through jax.pure_callback (results copied, shapes inferred once per "
                "signature on meta tensors); reverse mode only, and it must not modify its "
                "inputs in place"
            ),
        ),
    ]
