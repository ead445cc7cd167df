"""Function bridge from PyTorch to TensorFlow: a torch function callable on TF tensors.

Eagerly torch runs directly on zero-copy views of the TF tensors; inside ``tf.function`` it
runs through ``tf.py_function``. ``tf.custom_gradient`` carries ``tf.GradientTape``
gradients through torch autograd.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from interop_core.plugin import CallContext, ConversionError, ConverterSpec, hookimpl, map_leaves

from .shared import SignatureCache, check_unmodified, function_edge, function_name

#: Loaded once both are imported (docs/plugins.md, "Loaded when needed").
INTEROP_ABOUT = (("torch", "tensorflow"),)


def _flatten(tree: Any, kind: tuple[type, ...]) -> tuple[list[Any], list[int]]:
    """All leaves of ``tree`` (dict/list/tuple containers) and the positions of ``kind``."""
    leaves: list[Any] = []
    map_leaves(tree, leaves.append)
    return leaves, [i for i, x in enumerate(leaves) if isinstance(x, kind)]


def _unflatten(template: Any, leaves: Sequence[Any]) -> Any:
    it = iter(leaves)
    return map_leaves(template, lambda _: next(it))


def _structure(tree: Any, kinds: tuple[type, ...]) -> Any:
    """A hashable picture of the containers and non-tensor leaves of ``tree``."""
    if isinstance(tree, dict):
        return (type(tree), tuple((k, _structure(v, kinds)) for k, v in tree.items()))
    if isinstance(tree, list | tuple):
        return (type(tree), tuple(_structure(v, kinds) for v in tree))
    return None if isinstance(tree, kinds) else (type(tree), tree)


def _tape_active() -> bool:
    """Whether a GradientTape may record this call (else the torch graph is not built)."""
    try:
        from tensorflow.python.eager import record

        return bool(record.could_possibly_record())
    except (ImportError, AttributeError):  # a private API: assume a tape when it moves
        return True


class _TorchOnTf:
    """A torch function callable on TF tensors, eagerly and inside tf.function."""

    def __init__(self, fn: Callable[..., Any], ctx: CallContext) -> None:
        import tensorflow as tf
        import torch

        self.fn, self.ctx, self.tf, self.torch = fn, ctx, tf, torch
        self.name = function_name(fn)
        self.kinds = (tf.Tensor, tf.Variable)
        self.shapes: SignatureCache[tuple[Any, list[Any]]] = SignatureCache()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        tf = self.tf
        leaves, pos = _flatten((args, kwargs), self.kinds)
        # A variable is read here, under the caller's tape: its gradient flows to it.
        xs = [tf.convert_to_tensor(leaves[i]) for i in pos]
        diff = [i for i, x in enumerate(xs) if x.dtype.is_floating or x.dtype.is_complex]
        if tf.executing_eagerly():
            return self._eager(leaves, pos, xs, diff, (args, kwargs))
        return self._graph(leaves, pos, xs, diff, (args, kwargs))

    # Running torch (eagerly, or inside tf.py_function).

    def _run(
        self, tree: Any, leaves: list[Any], pos: list[int], xs: Sequence[Any], grad: list[int]
    ) -> Any:
        """fn on torch views of ``xs``; the leaves needing grad are fresh graph leaves."""
        torch = self.torch
        to = self.ctx.to
        tensors = [to(x, "torch") for x in xs]
        versions = [t._version for t in tensors]
        for i in grad:
            tensors[i] = tensors[i].detach().requires_grad_()
        leaves = list(leaves)
        for i, t in zip(pos, tensors, strict=True):
            leaves[i] = t
        args, kwargs = _unflatten(tree, leaves)
        with torch.set_grad_enabled(bool(grad)):
            out = self.fn(*args, **kwargs)
        check_unmodified(tensors, versions, self.name, "TensorFlow tensors")
        outs, opos = _flatten(out, (torch.Tensor,))
        if len(opos) != len(outs):
            bad = next(o for o in outs if not isinstance(o, torch.Tensor))
            raise ConversionError(
                f"The torch function {self.name} returned a {type(bad).__name__}; the "
                "torch->tensorflow bridge returns only tensors (in dicts, lists, tuples). "
                "Return torch tensors (torch.tensor(value) for a number)."
            )
        return out, outs, [tensors[i] for i in grad]

    def _to_tf(self, outs: Sequence[Any]) -> list[Any]:
        to = self.ctx.to
        return [to(o.detach(), "tensorflow") for o in outs]

    def _grads(self, outs: Sequence[Any], inputs: Sequence[Any], ups: Sequence[Any]) -> Any:
        """torch.autograd.grad of ``outs`` for ``inputs`` with TF upstream gradients."""
        torch = self.torch
        to = self.ctx.to
        pairs = [
            (o, to(u, "torch"))
            for o, u in zip(outs, ups, strict=True)
            if u is not None and o.requires_grad
        ]
        got: Sequence[Any] = [None] * len(inputs)
        if pairs and inputs:
            o, g = zip(*pairs, strict=True)
            got = torch.autograd.grad(o, inputs, g, allow_unused=True)
        return [
            to(torch.zeros_like(x) if g is None else g, "tensorflow")
            for x, g in zip(inputs, got, strict=True)
        ]

    # Eager.

    def _eager(
        self, leaves: list[Any], pos: list[int], xs: list[Any], diff: list[int], tree: Any
    ) -> Any:
        tf = self.tf
        if not diff or not _tape_active():
            out, outs, _ = self._run(tree, leaves, pos, xs, [])
            return _unflatten(out, self._to_tf(outs))
        holder: list[Any] = []

        @tf.custom_gradient  # type: ignore[untyped-decorator]
        def inner(*xs: Any) -> Any:
            out, outs, inputs = self._run(tree, leaves, pos, xs, diff)
            holder.append(out)

            def grad_fn(*ups: Any) -> Any:
                grads = self._grads(outs, inputs, ups)
                full: list[Any] = [None] * len(xs)
                for i, g in zip(diff, grads, strict=True):
                    full[i] = g
                return full

            return self._to_tf(outs), grad_fn

        ys = inner(*xs)
        return _unflatten(holder[0], ys)

    # Inside tf.function.

    def _graph(
        self, leaves: list[Any], pos: list[int], xs: list[Any], diff: list[int], tree: Any
    ) -> Any:
        tf = self.tf
        template, specs = self._infer(leaves, pos, xs, tree)
        tout = [s[1] for s in specs]
        arrays = set(pos)  # the closures must not keep this graph's symbolic tensors
        statics = [None if i in arrays else x for i, x in enumerate(leaves)]

        def primal(*ts: Any) -> Any:
            _, outs, _ = self._run(tree, statics, pos, ts, [])
            return self._to_tf(outs)

        def backward(*ts: Any) -> Any:
            n = len(ts) - len(specs)
            _, outs, inputs = self._run(tree, statics, pos, ts[:n], diff)
            return self._grads(outs, inputs, ts[n:])

        def shaped(ys: Any) -> list[Any]:
            ys = list(ys)
            for y, (shape, _) in zip(ys, specs, strict=True):
                y.set_shape(shape)
            return ys

        if not diff:
            return _unflatten(template, shaped(tf.py_function(primal, xs, tout)))

        @tf.custom_gradient  # type: ignore[untyped-decorator]
        def inner(*xs: Any) -> Any:
            ys = shaped(tf.py_function(primal, xs, tout))

            def grad_fn(*ups: Any) -> Any:
                # Graph mode cannot keep torch's graph from the forward py_function: the
                # backward runs the function again, with autograd.
                filled = [
                    tf.zeros_like(y) if u is None else u for y, u in zip(ys, ups, strict=True)
                ]
                grads = tf.py_function(backward, [*xs, *filled], [xs[i].dtype for i in diff])
                full: list[Any] = [None] * len(xs)
                for i, g in zip(diff, grads, strict=True):
                    g.set_shape(xs[i].shape)
                    full[i] = g
                return full

            return ys, grad_fn

        return _unflatten(template, inner(*xs))

    def _infer(
        self, leaves: list[Any], pos: list[int], xs: list[Any], tree: Any
    ) -> tuple[Any, list[Any]]:
        """The result's template and (shape, tf dtype) per tensor, from a run on meta tensors
        (once per signature)."""
        if any(x.shape.rank is None for x in xs):
            raise ConversionError(
                f"Cannot call the torch function {self.name} inside tf.function on a tensor of "
                "unknown rank: its result dtypes are inferred from a run on meta tensors, "
                "which needs the rank. Give the tf.function an input_signature with ranks."
            )
        known = all(None not in x.shape.as_list() for x in xs)
        # Unknown dims are probed with 2 (the dtypes and structure do not depend on them);
        # the shapes are then left unknown.
        dims = [[2 if d is None else d for d in x.shape.as_list()] for x in xs]
        key = (
            _structure(tree, self.kinds),
            tuple(tuple(d) for d in dims),
            tuple(x.dtype for x in xs),
            known,
        )
        return self.shapes.get_or_make(
            key, lambda: self._run_meta(leaves, pos, xs, tree, dims, known)
        )

    def _run_meta(
        self, leaves: list[Any], pos: list[int], xs: list[Any], tree: Any,
        dims: list[list[int]], known: bool,
    ) -> tuple[Any, list[Any]]:  # fmt: skip
        """The result's template and (shape, tf dtype) per tensor, from one meta run."""
        tf = self.tf
        torch = self.torch
        from ..frameworks.torch import dtype_name, torch_dtype

        metas = [
            torch.empty(d, dtype=torch_dtype(x.dtype.name), device="meta")
            for d, x in zip(dims, xs, strict=True)
        ]
        full = list(leaves)
        for i, t in zip(pos, metas, strict=True):
            full[i] = t
        args, kwargs = _unflatten(tree, full)
        try:
            with torch.no_grad():
                out = self.fn(*args, **kwargs)
        except Exception as exc:
            raise ConversionError(
                f"Cannot infer the result shapes of the torch function {self.name} inside "
                f"tf.function: on meta tensors it raised {exc!r}. Call it eagerly, or make "
                "it run on meta tensors (no .item(), .numpy() or data-dependent shapes)."
            ) from exc
        outs, opos = _flatten(out, (torch.Tensor,))
        if len(opos) != len(outs):
            raise ConversionError(
                f"The torch function {self.name} returned a non-tensor; the "
                "torch->tensorflow bridge returns only tensors (in dicts, lists, tuples)."
            )
        specs = [
            (
                tf.TensorShape(list(o.shape) if known else None),
                tf.as_dtype(dtype_name(o.dtype)),
            )
            for o in outs
        ]
        return out, specs


def torch_to_tf(fn: Callable[..., Any], ctx: CallContext) -> Callable[..., Any]:
    """A torch function as a TensorFlow function: TF tensors (in pytrees) in and out.

    Usable eagerly and inside ``tf.function`` (through ``tf.py_function``, not under
    ``jit_compile=True``); ``tf.GradientTape`` gradients go through torch autograd.
    """
    import functools

    import tensorflow as tf

    bridge = _TorchOnTf(fn, ctx)

    # Autograph must not rewrite the bridge (or the torch function) when a tf.function
    # calls it: it only warns and falls back, after seconds of trying.
    @tf.autograph.experimental.do_not_convert  # type: ignore[untyped-decorator]
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        return bridge(*args, **kwargs)

    return call


@hookimpl
def interop_converters() -> list[ConverterSpec]:
    """The direct torch -> tensorflow function edge."""
    return [
        function_edge(
            "tf.py_function bridge",
            "torch",
            "tensorflow",
            lambda: torch_to_tf,
            note=(
                "eagerly torch runs on zero-copy views of the TF tensors; inside tf.function it "
                "runs on the host through tf.py_function (not under jit_compile=True, not saved "
                "in a SavedModel), and graph-mode gradients run the torch function again"
            ),
        )
    ]
