"""TensorFlow functions as native JAX code, through DeepMind's tf2jax (tensorflow -> jax).

tf2jax turns the function's TensorFlow graph into JAX operations, so every JAX transform
works on the result (jax.jit, grad, vmap, jvp, jacfwd, hessian), where call_tf gives reverse
mode only. Variables become parameters: ``g.params`` holds their values at conversion time
(what ``g(*args)`` uses) and ``g.apply(params, *args)`` takes others, so ``jax.grad`` with
respect to them is TensorFlow's gradient. A function with an ``input_signature`` converts
when ``to()`` is called (once, at any batch size where the signature has ``None``); others
convert on their first call per input signature. Where tf2jax cannot convert a function
(string ops, ``tf.py_function``: "Unsupported operations in graph") or its JAX code cannot
run (jax2tf's XlaCallModule ops under this JAX; a shape that depends on values, which then
runs on concrete arrays only), that signature runs through the call_tf bridge instead and
``g.fallback`` says why. ``trace=False`` asks for the
call_tf route from the start. tf2jax is imported only when a function is converted.
"""

from __future__ import annotations

import contextlib
import importlib.util
import threading
from collections.abc import Callable
from typing import Any

from interop_core.plugin import (
    CallContext,
    ConversionError,
    ConverterSpec,
    InteropError,
    Needs,
    hookimpl,
)

from .jax_tf import tf_to_jax
from .shared import SignatureCache, first_line, function_edge, function_name
from .tf_graphs import WRITES, nodes, operations, static_shapes, value_dependent_op

#: Loaded once both are imported (docs/plugins.md, "Loaded when needed").
INTEROP_ABOUT = (("tensorflow", "jax"),)

_ASKED_CALL_TF = "output_shape_dtype= was passed: it declares call_tf's outputs, so call_tf runs it"
#: Conversions kept per function (one per input signature).
_SIGNATURES = 16
_MISSING = (
    "tf2jax is not installed (pip install --no-deps tf2jax dm-tree absl-py: its metadata asks "
    "for the full tensorflow package even beside tensorflow-cpu)"
)


def _declared_signature(fn: Any) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    """The TensorSpecs of ``fn``'s ``input_signature`` as (args, kwargs), or None."""
    signature = getattr(fn, "input_signature", None)
    if signature is None:
        return None
    return tuple(signature), {}


def _specs(tree: Any) -> Any:
    """TensorSpecs for the array leaves of ``tree`` (shapes and dtypes, no data)."""
    import jax
    import tensorflow as tf

    def spec(x: Any) -> Any:
        if hasattr(x, "shape") and hasattr(x, "dtype"):
            return tf.TensorSpec(tuple(x.shape), tf.as_dtype(jax.numpy.dtype(x.dtype)))
        return x

    return jax.tree_util.tree_map(spec, tree)


def _is_array(x: Any) -> bool:
    """An array leaf (jax, numpy, a TensorSpec): the rest are Python values."""
    return hasattr(x, "shape") and hasattr(x, "dtype")


def _traced(tree: Any) -> bool:
    """Whether a leaf of ``tree`` is a JAX tracer (the call runs under a transformation)."""
    import jax

    return any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves(tree))


def _assignments(tf_fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """Why ``tf_fn`` must run in TensorFlow for this signature ("" if it need not): it
    writes variables (a counter, BatchNorm statistics in training)."""
    try:
        graph = tf_fn.get_concrete_function(*args, **kwargs).graph
        found = sorted(operations(graph.as_graph_def()) & WRITES)
    except Exception:  # tf2jax will meet the same trouble and say what it is
        return ""
    if not found:
        return ""
    return _writes_reason(found)


def _writes_reason(found: list[str]) -> str:
    return (
        f"it writes variables ({', '.join(found)}): as JAX code the writes would be lost, so "
        "TensorFlow runs it (call_tf)"
    )


def _unparsable_modules(graph_def: Any, tf2jax_ops: Any) -> str:
    """Why tf2jax's parser refuses the first XlaCallModule op of ``graph_def`` ("" if it
    reads them all): tf2jax 0.3.8 under jax 0.10.2 reads none ("An MLIR function requires
    a Context"). Parsing one is what tf2jax does first with it; running it can fail later
    still, which the converted function meets at its first call (and falls back then)."""
    parse = tf2jax_ops.get_parser("XlaCallModule")
    for node in nodes(graph_def):
        if node.op == "XlaCallModule":
            try:
                parse(node)
            except Exception as exc:
                return f"{type(exc).__name__}: {first_line(exc)}"
    return ""


def blocking_operations(fn: Any) -> str | None:
    """The edge's inspection: why tf2jax cannot convert ``fn`` (None: it can, or cannot
    be told before the first call). Only a function with an ``input_signature`` has its
    graph before it is called; the operations tf2jax has no translation for, and those that
    write variables, are named, and the planner takes the call_tf route for it instead."""
    signature = getattr(fn, "input_signature", None)
    if signature is None or not hasattr(fn, "get_concrete_function"):
        return None
    try:
        from tf2jax._src import ops as tf2jax_ops  # its table of translated operations
    except ImportError:  # private: tf2jax.convert itself will say at the first call
        return None
    graph_def = fn.get_concrete_function(*signature).graph.as_graph_def()
    found = operations(graph_def)
    unsupported = sorted(tf2jax_ops.get_unsupported_operations(sorted(found)))
    if unsupported:
        return (
            f"tf2jax cannot convert the operations {', '.join(unsupported)} of "
            f"{function_name(fn)}: it has no JAX translation for them"
        )
    writes = sorted(found & WRITES)
    if writes:
        return _writes_reason(writes)
    failure = _unparsable_modules(graph_def, tf2jax_ops) if "XlaCallModule" in found else ""
    if failure:
        return (
            f"tf2jax cannot read the XlaCallModule ops (StableHLO that jax2tf serialized) of "
            f"{function_name(fn)} under this JAX ({failure}): TensorFlow runs them (call_tf)"
        )
    op = value_dependent_op(fn, tuple(signature), {}) if static_shapes(tuple(signature)) else ""
    if op:
        return (
            f"the output shape of its {op} depends on the input values, which JAX code "
            "cannot express: TensorFlow runs it (call_tf), on concrete arrays only (jax.jit "
            "and jax.grad need every shape to follow from the input shapes)"
        )
    return None


def _dtype_fixes(
    tf_fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], found: Any
) -> list[Any]:
    """Per output of tf2jax's JAX code (``found``: its shapes and dtypes), TensorFlow's dtype
    where tf2jax returns another (PopulationCount: the input's, where TensorFlow's is uint8),
    else None. A 64-bit TensorFlow dtype is JAX's 32-bit one without x64: not a fix."""
    import jax
    import numpy as np
    import tensorflow as tf

    got = jax.tree_util.tree_leaves(found)
    try:
        want = tf.nest.flatten(tf_fn.get_concrete_function(*args, **kwargs).structured_outputs)
    except Exception:  # nothing to compare with: tf2jax's dtypes stand
        return [None] * len(got)
    if len(want) != len(got):
        return [None] * len(got)
    fixes: list[Any] = []
    for g, w in zip(got, want, strict=True):
        dtype = np.dtype(w.dtype.as_numpy_dtype) if isinstance(w, tf.Tensor) else None
        narrowed = dtype is not None and jax.dtypes.canonicalize_dtype(dtype) != dtype
        fixes.append(dtype if dtype is not None and not narrowed and g.dtype != dtype else None)
    return fixes


def _cast_outputs(outputs: Callable[..., Any], casts: list[Any]) -> Callable[..., Any]:
    """``outputs`` whose results take the dtypes ``casts`` gives (None: as they are)."""
    import jax

    def cast(params: Any, arrays: list[Any]) -> Any:
        out = outputs(params, arrays)
        leaves, tree = jax.tree_util.tree_flatten(out)
        fixed = [x if d is None else x.astype(d) for x, d in zip(leaves, casts, strict=True)]
        return jax.tree_util.tree_unflatten(tree, fixed)

    return cast


class Converted:
    """One input signature's conversion: the jitted JAX function and the parameters, or
    the reason tf2jax could not convert (or run) it."""

    __slots__ = ("cause", "fallback", "params", "refusal", "run")

    def __init__(
        self,
        run: Callable[..., Any] | None,
        params: Any,
        fallback: str,
        refusal: str = "",
        cause: BaseException | None = None,
    ) -> None:
        #: ``run(params, arrays)``: the array leaves of the call's arguments, in order (the
        #: other leaves, Python values, are part of the signature and closed over).
        self.run, self.params, self.fallback = run, params, fallback
        #: Why a traced call (jax.jit, grad, vmap) of this signature is refused ("" if it is
        #: not): an output shape depends on input values, which TensorFlow runs eagerly and
        #: no JAX transformation can hold.
        self.refusal = refusal
        #: What tf2jax (or JAX) raised, kept as the refusal's cause.
        self.cause = cause


class NativeJaxFunction:
    """A TensorFlow function as JAX code (see the module's docstring)."""

    def __init__(self, fn: Any, ctx: CallContext) -> None:
        import tensorflow as tf

        self._source = fn
        self._name = function_name(fn)
        # tf2jax converts tf.functions: a Keras model or a plain TF callable is wrapped once.
        self._tf_fn = fn if hasattr(fn, "get_concrete_function") else tf.function(fn)
        self._ctx = ctx
        self._lock = threading.Lock()
        self._call_tf: Callable[..., Any] | None = None
        self._cache: SignatureCache[Converted] = SignatureCache(_SIGNATURES)
        self._params: Any = None  # the variables' values at the first conversion
        declared = _declared_signature(self._tf_fn)
        self._declared: Converted | None = None
        #: The dtypes of the input_signature's tensors, in order (None: no signature).
        self._expected: list[Any] | None = None
        if "output_shape_dtype" in ctx.options:  # call_tf's own option: its route, always
            self._declared = Converted(None, None, _ASKED_CALL_TF)
        elif declared is not None:  # (None dims included) converts now, once, for every call
            self._declared = self._convert(*declared)
            self._expected = [spec.dtype.as_numpy_dtype for spec in tf.nest.flatten(declared)]
        self.__name__ = getattr(fn, "__name__", type(fn).__name__)
        self.__qualname__ = getattr(fn, "__qualname__", self.__name__)
        self.__doc__ = getattr(fn, "__doc__", None)

    # -- what users read -----------------------------------------------------------------

    @property
    def params(self) -> Any:
        """The function's variables as jax arrays (a dict by variable name), their values at
        the first conversion (every input signature uses them); what ``g(*args)`` uses.
        Known once the function has converted: at ``to()`` with an ``input_signature``,
        else after the first call."""
        converted = self._declared or self._cache.latest()
        if converted is None:
            raise ConversionError(
                f"The parameters of {self._name} are not known yet: tf2jax converts a "
                "function without an input_signature on its first call.\nCall it once (or "
                "give the tf.function an input_signature) before reading .params."
            )
        return converted.params

    @property
    def fallback(self) -> str:
        """Why the latest call ran through call_tf rather than as JAX code ("" if it did
        not): tf2jax names the operations it cannot convert."""
        converted = self._declared or self._cache.latest()
        return "" if converted is None else converted.fallback

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        args, kwargs = self._jax_leaves(args, kwargs)
        converted, arrays, key = self._for(args, kwargs)
        if converted.run is not None:
            try:
                return self._run(converted, converted.params, arrays)
            except InteropError:
                raise
            except Exception as exc:  # converted, but tf2jax's JAX code cannot run it
                # A concrete call's failure holds for its signature; a transformation's
                # (jax.grad of a PreventGradient) holds for that call only.
                converted = self._cannot_run(key, args, kwargs, exc, _traced((args, kwargs)))
        if converted.refusal and _traced((args, kwargs)):
            raise ConversionError(converted.refusal) from converted.cause
        return self._via_call_tf()(*args, **kwargs)

    def apply(self, params: Any, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` with the variables set to ``params`` (a pytree like
        :attr:`params`): differentiate with respect to them with ``jax.grad``."""
        args, kwargs = self._jax_leaves(args, kwargs)
        converted, arrays, _ = self._for(args, kwargs)
        if converted.run is not None:
            try:
                return self._run(converted, params, arrays)
            except InteropError:
                raise
            except Exception as exc:  # the params given (a missing variable) or the code
                raise ConversionError(
                    f"{self._name} failed as JAX code with the parameters given: "
                    f"{type(exc).__name__}: {first_line(exc)}\nPass a pytree like g.params "
                    "(every variable, each of its shape and dtype)."
                ) from exc
        raise ConversionError(
            f"{self._name} runs through call_tf, which takes no parameters: {converted.fallback}"
        )

    def __repr__(self) -> str:
        return f"<{self._name} as JAX code (tf2jax)>"

    # -- how ------------------------------------------------------------------------------

    def _run(self, converted: Converted, params: Any, arrays: list[Any]) -> Any:
        """``converted.run``, with tf2jax's refusal of an input that does not fit the
        function's ``input_signature`` said as an InteropError."""
        assert converted.run is not None
        try:
            return converted.run(params, arrays)
        except ValueError as exc:
            if "incompatible input shape" not in str(exc):
                raise
            raise ConversionError(
                f"{self._name} was called with an input its input_signature does not take: "
                f"{str(exc).splitlines()[0]}\nPass inputs of the declared shapes (None "
                "dimensions take any size), or convert a tf.function without that signature."
            ) from exc

    def _jax_leaves(
        self, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The arguments with arrays of other frameworks (a tf.Tensor, a torch tensor) made
        jax arrays by ``to()`` (zero-copy where it can); jax and numpy arrays, tracers and
        Python values stay as they are."""
        import jax
        import numpy as np

        from ..frameworks.jax import X64

        plain = (jax.Array, jax.core.Tracer, int, float, bool, complex)
        x64 = X64.read()

        def kept(x: Any) -> bool:
            # A 64-bit numpy array would be narrowed silently by JAX without x64: to()
            # refuses it, naming the switch, as for any array into JAX (an input_signature
            # checks dtypes itself, and says which it declares).
            if isinstance(x, (np.ndarray, np.generic)):
                return x64 or x.dtype.name not in X64.dtypes or self._expected is not None
            return isinstance(x, plain)

        if all(kept(x) for x in jax.tree_util.tree_leaves((args, kwargs))):
            return args, kwargs
        return self._ctx.to((args, kwargs), "jax")  # type: ignore[no-any-return]

    def _for(
        self, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[Converted, list[Any], Any]:
        """The conversion for this call's signature, the call's array leaves, and the
        signature's key (None: the declared input_signature's conversion)."""
        import jax

        flat, tree = jax.tree_util.tree_flatten((args, kwargs))
        if self._declared is not None:
            if self._expected is not None and self._declared.run is not None:
                return self._declared, self._fit(flat, self._expected), None
            return self._declared, [], None
        arrays = [x for x in flat if _is_array(x)]
        # Arrays by shape and dtype; Python values by value (TF traces them as constants).
        key = (tree, tuple((tuple(x.shape), x.dtype) if _is_array(x) else x for x in flat))
        converted = self._cache.get_or_make(key, lambda: self._convert(*_specs((args, kwargs))))
        return converted, arrays, key

    def _graph_def(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The GraphDef TensorFlow traces for these specs (an empty one if it cannot)."""
        import tensorflow as tf

        try:
            return self._tf_fn.get_concrete_function(*args, **kwargs).graph.as_graph_def()
        except Exception:  # only a message depends on it
            return tf.compat.v1.GraphDef()

    def _cannot_run(
        self,
        key: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        exc: Exception,
        once: bool = False,
    ) -> Converted:
        """What replaces a conversion that failed when it ran (``key``'s signature, or the
        declared one for None; for this call only when ``once``): the call_tf route, with
        the reason, and a refusal of traced calls when an output shape depends on input
        values."""
        spec_args, spec_kwargs = _specs((args, kwargs))
        converted = self._unrunnable(spec_args, spec_kwargs, exc)
        if once:
            return converted
        if key is None:
            self._declared = converted
        else:
            with contextlib.suppress(TypeError):  # an unhashable key was never cached
                self._cache.put(key, converted)
        return converted

    def _unrunnable(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], exc: Exception
    ) -> Converted:
        """The call_tf route for a signature whose JAX code (tf2jax's) failed with ``exc``:
        ``g.fallback`` says why; traced calls are refused where TensorFlow's shape
        inference finds an operation whose output shape depends on input values."""
        failure = f"{type(exc).__name__}: {first_line(exc)}"
        op = value_dependent_op(self._tf_fn, args, kwargs)
        if not op:
            what = "its JAX code"
            if "XlaCallModule" in operations(self._graph_def(args, kwargs)):
                what = "the JAX code of its XlaCallModule ops (StableHLO that jax2tf serialized)"
            return Converted(
                None, None,
                f"tf2jax converted it but {what} cannot run here ({failure}), so TensorFlow "
                "runs it through call_tf (eagerly for concrete calls, call_tf under "
                "jax.jit/jax.grad)",
            )  # fmt: skip
        fallback = (
            f"the output shape of its {op} depends on the input values, which JAX code cannot "
            f"express (tf2jax: {failure}), so TensorFlow runs this signature eagerly "
            "(call_tf's concrete path)"
        )
        refusal = (
            f"TensorFlow function {self._name} cannot run under a JAX transformation "
            f"(jax.jit, jax.grad, jax.vmap, ...): the output shape of its {op} depends on the "
            "input values, and under JAX every shape must follow from the input shapes.\n"
            "Call it on concrete arrays (TensorFlow then runs it), rewrite it with fixed "
            "shapes (e.g. tf.where(mask, x, 0) instead of tf.boolean_mask, or a padded "
            "result with its length), or, if the result's shape is in fact fixed, convert it "
            "with trace=False and output_shape_dtype= (call_tf) to declare it."
        )
        return Converted(None, None, fallback, refusal, exc)

    def _fit(self, flat: list[Any], expected: list[Any]) -> list[Any]:
        """The call's leaves as the input_signature's tensors: a Python number takes the
        declared dtype (it has none of its own); an array must have it already, as a
        tf.Tensor must (TensorFlow casts numpy arrays silently; this bridge never does)."""
        import jax
        import jax.numpy as jnp
        import numpy as np

        if len(flat) != len(expected):
            raise ConversionError(
                f"{self._name} takes {len(expected)} tensor(s) by its input_signature; this "
                f"call passed {len(flat)} value(s).\nPass one array (or number) per "
                "TensorSpec of the signature."
            )
        fitted = []
        for i, (x, dtype) in enumerate(zip(flat, expected, strict=True)):
            if isinstance(x, (bool, int, float, complex)):
                fitted.append(jnp.asarray(x, dtype))
            elif not _is_array(x):
                raise ConversionError(
                    f"{self._name}: argument {i} is a {type(x).__name__}, where its "
                    f"input_signature declares a {np.dtype(dtype).name} tensor.\nPass an array."
                )
            elif np.dtype(x.dtype) != np.dtype(dtype):
                raise ConversionError(
                    f"{self._name}: argument {i} has dtype {np.dtype(x.dtype).name}, where its "
                    f"input_signature declares {np.dtype(dtype).name}; the bridge does not "
                    f"cast silently.\nCast it first (x.astype({np.dtype(dtype).name!r}))."
                )
            elif np.dtype(x.dtype) != jax.dtypes.canonicalize_dtype(x.dtype):
                raise ConversionError(
                    f"{self._name}: argument {i} is {np.dtype(x.dtype).name}, as its "
                    "input_signature declares, but jax_enable_x64 is off: JAX would narrow it "
                    "silently.\nEnable x64 (jax.config.update('jax_enable_x64', True)), or "
                    "declare and pass a 32-bit dtype."
                )
            else:
                fitted.append(x)
        return fitted

    def _convert(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Converted:
        import jax
        import tf2jax

        assigns = _assignments(self._tf_fn, args, kwargs)
        if assigns:
            return Converted(None, None, assigns)
        try:
            jax_fn, params = tf2jax.convert(self._tf_fn, *args, **kwargs)
        except Exception as exc:  # unsupported ops (ValueError), or tf2jax's own limits
            return Converted(None, None, f"tf2jax cannot convert it: {exc}".strip())
        flat, tree = jax.tree_util.tree_flatten((args, kwargs))
        static = [None if _is_array(x) else x for x in flat]
        mask = [_is_array(x) for x in flat]

        def outputs(params: Any, arrays: list[Any]) -> Any:
            given = iter(arrays)
            leaves = [
                next(given) if is_array else v for is_array, v in zip(mask, static, strict=True)
            ]
            a, k = jax.tree_util.tree_unflatten(tree, leaves)
            return jax_fn(params, *a, **k)[0]  # tf2jax also returns updated variables

        if static_shapes((args, kwargs)):
            # tf2jax builds its JAX code lazily: trace it once now (shapes only), so a
            # function whose JAX code cannot run (a shape that depends on values, a jax2tf
            # module tf2jax cannot parse) takes the call_tf route from its first call.
            shapes = [
                jax.ShapeDtypeStruct(tuple(x.shape), x.dtype.as_numpy_dtype)
                for x in jax.tree_util.tree_leaves((args, kwargs))
                if _is_array(x)
            ]
            try:
                found = jax.eval_shape(outputs, params, shapes)
            except Exception as exc:
                return self._unrunnable(args, kwargs, exc)
            casts = _dtype_fixes(self._tf_fn, args, kwargs, found)
            if any(d is not None for d in casts):
                outputs = _cast_outputs(outputs, casts)
        # Made concrete even when this conversion runs under jax.jit (a tracer kept in
        # g.params would leak out of that trace).
        with self._lock, jax.ensure_compile_time_eval():
            if self._params is None:  # every signature uses the values of the first one
                self._params = jax.tree_util.tree_map(jax.numpy.asarray, params)
            values = self._params
        return Converted(jax.jit(outputs), values, "")

    def _via_call_tf(self) -> Callable[..., Any]:
        with self._lock:
            if self._call_tf is None:
                self._call_tf = tf_to_jax(self._source, self._ctx)
            return self._call_tf


def tf_to_native_jax(fn: Any, ctx: CallContext) -> NativeJaxFunction:
    """The converter: ``fn`` as JAX code through tf2jax (call_tf where it cannot)."""
    return NativeJaxFunction(fn, ctx)


@hookimpl
def interop_converters() -> list[ConverterSpec]:
    """tensorflow -> jax as native JAX code: cheaper than call_tf, which stays the route for
    ``trace=False`` and where tf2jax is not installed."""
    installed = importlib.util.find_spec("tf2jax") is not None  # metadata only, no import
    return [
        function_edge(
            "tf2jax.convert",
            "tensorflow",
            "jax",
            lambda: tf_to_native_jax,
            accepts=Needs(extra=lambda key: None if installed else _MISSING),
            inspects=blocking_operations,
            cost=0.5,
            options=("trace", "output_shape_dtype"),
            opt_out="trace",
            reuse=False,  # g holds the variables' values at conversion: a fresh to() reads them
            note=(
                "the TensorFlow graph becomes JAX operations (tf2jax): jax.jit, grad, vmap, "
                "jvp and jacfwd all work, and g.params / g.apply(params, ...) expose the "
                "variables; g(*args) uses their values at conversion time. A function with "
                "an input_signature converts now; others on their first call per signature. "
                "Where tf2jax cannot convert (string ops, tf.py_function) or run it (jax2tf's "
                "XlaCallModule, shapes that depend on values) that signature runs through "
                "call_tf and g.fallback says why; trace=False (or call_tf's "
                "output_shape_dtype=) asks for call_tf"
            ),
        )
    ]
