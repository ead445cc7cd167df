"""Functions between JAX and TensorFlow: jax2tf one way, call_tf (or a direct call) the other.

:func:`jax_to_tf` returns a ``tf.function`` that runs the JAX function through jax2tf;
:func:`tf_to_jax` returns a JAX-callable that calls the TensorFlow function directly when it
gets concrete arrays and through ``jax2tf.call_tf`` under ``jax.jit``/``jax.grad``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from interop_core import ConverterSpec, hookimpl
from interop_core.context import CallContext
from interop_core.errors import (
    ConversionError,
    InteropError,
    NotAnArrayError,
    UnsupportedTransformError,
)
from interop_core.predicates import Needs

from .bridges import SignatureCache, function_edge, function_name, is_forward_mode

#: How many input signatures a tf->jax function keeps traced call_tf wrappers for.
_TRACED_CACHE = 64


def _named(wrapper: Callable[..., Any], fn: Any) -> None:
    """Give ``wrapper`` the name and docstring of ``fn``, without ``__wrapped__``.

    tf.function and inspect.signature follow ``__wrapped__`` to ``fn``'s parameters, which
    the wrappers (taking ``*args, **kwargs``) do not have.
    """
    functools.update_wrapper(wrapper, fn, ("__name__", "__qualname__", "__doc__"), ())
    del wrapper.__wrapped__  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- jax -> tf


def _unknown_dims(tree: Any) -> bool:
    """Whether a tensor in ``tree`` (TF values while tf.function traces) has a None dim."""
    import jax

    for leaf in jax.tree_util.tree_leaves(tree):
        shape = getattr(leaf, "shape", None)
        if shape is not None and (getattr(shape, "rank", 0) is None or None in _dims(shape)):
            return True
    return False


def _dims(shape: Any) -> list[int | None]:
    as_list = getattr(shape, "as_list", None)
    if as_list is not None:
        return list(as_list())
    return [None if d is None else int(d) for d in shape]


def _derive_shapes(tree: Any, counter: list[int], name: str) -> Any:
    """``tree`` with every leaf replaced by a jax2tf shape string: None dims get fresh names."""
    import jax

    def spec(leaf: Any) -> str:
        shape = getattr(leaf, "shape", ())
        if getattr(shape, "rank", 0) is None:
            raise ConversionError(
                f"Cannot convert JAX function {name!r} to TensorFlow: an argument has unknown "
                "rank, and jax2tf needs every rank. Give the tf.function an input_signature "
                "with known ranks (tf.TensorSpec([None, 3])) or pass polymorphic_shapes."
            )
        dims = []
        for d in _dims(shape):
            if d is None:
                dims.append(f"d{counter[0]}")
                counter[0] += 1
            else:
                dims.append("_")  # "_": the size the argument has at trace time
        return f"({', '.join(dims)})"

    return jax.tree_util.tree_map(spec, tree)


def jax_to_tf(fn: Callable[..., Any], ctx: CallContext) -> Callable[..., Any]:
    """``fn`` (a JAX function) as a ``tf.function`` running it through ``jax2tf.convert``.

    Options: ``polymorphic_shapes``, ``with_gradient`` (default True), ``platforms``
    (jax2tf's ``native_serialization_platforms``), ``input_signature`` (for the tf.function).
    Without ``polymorphic_shapes``, dimensions that are None when TensorFlow traces the
    function become fresh symbolic dimensions. The result saves with tf.saved_model.save.
    """
    import tensorflow as tf
    from jax.experimental import jax2tf

    name = function_name(fn)
    poly = ctx.option("polymorphic_shapes")
    with_gradient = bool(ctx.option("with_gradient", True))
    platforms = ctx.option("platforms")
    if isinstance(platforms, str):
        platforms = (platforms,)
    elif platforms is not None:
        platforms = tuple(platforms)
    signature = ctx.option("input_signature")

    def traced(*args: Any, **kwargs: Any) -> Any:
        # Runs only while tf.function traces, so jax2tf exports once per input signature and
        # a call costs what a raw tf.function(jax2tf.convert(fn)) call costs.
        target: Callable[..., Any] = fn
        call_args: tuple[Any, ...] = args
        shapes = poly
        if poly is None and _unknown_dims((args, kwargs)):
            # jax2tf reads a None dim as the shape string "None" and fails with a syntax
            # error. Which unknown dims are equal cannot be known here, so each gets its own
            # name; an operation that needs two equal says so (see _jax2tf_failure).
            counter = [0]
            if kwargs:  # jax2tf's polymorphic_shapes cover positional arguments only
                target = functools.partial(_call_packed, fn)
                call_args = (args, kwargs)
            shapes = [_derive_shapes(a, counter, name) for a in call_args]
            kwargs = {}
        converted = jax2tf.convert(
            target,
            polymorphic_shapes=shapes,
            with_gradient=with_gradient,
            native_serialization_platforms=platforms,
        )
        try:
            return converted(*call_args, **kwargs)
        except InteropError:
            raise
        except Exception as exc:
            raise ConversionError(_jax2tf_failure(name, exc, poly, shapes)) from exc

    _named(traced, fn)
    # The tf.function itself (no Python wrapper) so a tf.Module holding it saves and reloads.
    return tf.function(traced, autograph=False, input_signature=signature)


def _call_packed(fn: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
    return fn(*args, **kwargs)


def _jax2tf_failure(name: str, exc: BaseException, given: Any, used: Any) -> str:
    head = (
        f"jax2tf could not convert JAX function {name!r} to TensorFlow: {type(exc).__name__}: {exc}"
    )
    if given is None and used is not None:
        return (
            f"{head}\nThe unknown (None) dimensions of the TensorFlow inputs were given "
            f"independent symbolic sizes, polymorphic_shapes={used!r}. If some of them are "
            "equal (or fixed), pass polymorphic_shapes yourself, e.g. ['(b, _)', '(b, _)'], "
            "or give the tf.function an input_signature with known sizes."
        )
    if given is not None:
        return (
            f"{head}\nCheck polymorphic_shapes={given!r} against the inputs' shapes and what "
            "the function does with them (see jax2tf's README, 'Shape-polymorphic conversion')."
        )
    return head


# --------------------------------------------------------------------------- tf -> jax


def _is_tracer(x: Any) -> bool:
    import jax

    return isinstance(x, jax.core.Tracer)


def _to_or_keep(to: Callable[..., Any], tree: Any, target: str) -> Any:
    """``to(tree, target)``, or ``tree`` itself when it holds no array at all."""
    try:
        return to(tree, target)
    except NotAnArrayError:
        return tree


_VMAP = (
    "jax.vmap (or jax.jacrev, which vmaps) cannot go through TensorFlow function {name!r}: "
    "jax2tf.call_tf has no batching rule. Loop instead (jax.lax.map(f, xs), which works "
    "under jax.jit), or batch inside TensorFlow by calling the function on the whole batch."
)
_JVP = (
    "Forward-mode differentiation (jax.jvp, jax.jacfwd, jax.hessian) cannot go through "
    "TensorFlow function {name!r}: jax2tf.call_tf supports only reverse mode. Use reverse "
    "mode: jax.grad or jax.vjp (for a Jacobian, one jax.vjp per output row, as jax.jacrev "
    "vmaps), or differentiate in TensorFlow (tf.autodiff.ForwardAccumulator) and convert "
    "the result."
)


def _guarded(f: Callable[..., Any], name: str) -> Callable[..., Any]:
    """``f`` (which uses call_tf) whose vmap raises UnsupportedTransformError.

    The primal goes through jax.custom_batching.custom_vmap so the refusal also fires for
    vmap outside jax.jit and for jacrev; the forward pass used by reverse mode calls ``f``
    directly because custom_vmap cannot be linearized (grad-of-grad keeps working).
    """
    import jax

    @jax.custom_batching.custom_vmap
    def refuse_vmap(*args: Any) -> Any:
        return f(*args)

    @refuse_vmap.def_vmap
    def _rule(axis_size: int, in_batched: Any, *args: Any) -> Any:
        raise UnsupportedTransformError(_VMAP.format(name=name))

    @jax.custom_vjp
    def call(*args: Any) -> Any:
        return refuse_vmap(*args)

    def fwd(*args: Any) -> tuple[Any, Any]:
        return f(*args), args

    def bwd(res: Any, ct: Any) -> Any:
        def vjp(res: Any, ct: Any) -> Any:
            return jax.vjp(f, *res)[1](ct)

        return _guarded(vjp, name)(res, ct)

    call.defvjp(fwd, bwd)
    return call


def tf_to_jax(fn: Callable[..., Any], ctx: CallContext) -> Callable[..., Any]:
    """``fn`` (a TensorFlow function) as a JAX-callable.

    Concrete arguments (jax, numpy or tf arrays, in pytrees) go to TensorFlow zero-copy and
    the results come back zero-copy; under jax.jit/jax.grad the call goes through
    ``jax2tf.call_tf``. Option ``output_shape_dtype`` is passed to call_tf; without it,
    None output dimensions are inferred from the concrete input shapes.
    """
    import jax
    import tensorflow as tf
    from jax.experimental import jax2tf

    name = function_name(fn)
    declared = ctx.option("output_shape_dtype")
    to = ctx.to
    tree_flatten = jax.tree_util.tree_flatten
    tf_types = (tf.Tensor, tf.Variable)

    def unpacked(tree: Any) -> Callable[..., Any]:
        def tf_flat(*flat: Any) -> Any:
            args, kwargs = jax.tree_util.tree_unflatten(tree, flat)
            return fn(*args, **kwargs)

        return tf_flat

    # One call_tf wrapper per input signature, so eager jax.grad calls reuse it instead of
    # rebuilding it (and redoing any shape inference) on every call.
    staged: SignatureCache[Callable[..., Any]] = SignatureCache(_TRACED_CACHE)

    def stage(tree: Any, key: tuple[Any, ...], infer: bool) -> Callable[..., Any]:
        tf_flat = unpacked(tree)
        out_sd = declared
        if out_sd is None and infer:
            out_sd = _infer_outputs(tf_flat, key, name)
        kw = {} if out_sd is None else {"output_shape_dtype": out_sd}
        wrapper = _guarded(jax2tf.call_tf(tf_flat, **kw), name)
        staged.put((tree, key), wrapper)
        return wrapper

    def call(*args: Any, **kwargs: Any) -> Any:
        flat, tree = tree_flatten((args, kwargs))
        if not any(_is_tracer(x) for x in flat):
            # Direct TF call: zero-copy in and out (call_tf would copy the inputs on CPU).
            args_tf, kwargs_tf = _to_or_keep(to, (args, kwargs), "tensorflow")
            return _to_or_keep(to, fn(*args_tf, **kwargs_tf), "jax")
        if any(is_forward_mode(x) for x in flat):
            raise UnsupportedTransformError(_JVP.format(name=name))
        # call_tf takes JAX values only ("not a valid JAX type" for a tf.Tensor).
        flat = [to(x, "jax") if isinstance(x, tf_types) else x for x in flat]
        key = tuple((_shape_key(x), str(jax.numpy.result_type(x))) for x in flat)
        try:
            wrapper = staged.get((tree, key)) or stage(tree, key, infer=False)
            try:
                return wrapper(*flat)
            except ValueError as exc:
                # Only under jax.jit, and only when TF's shape inference leaves a None dim
                # (a restored jax2tf function): infer the shapes once, then retry.
                if declared is not None or "output has dynamic shape" not in str(exc):
                    raise
                return stage(tree, key, infer=True)(*flat)
        except InteropError:
            raise
        except TypeError as exc:
            if "forward-mode" in str(exc):  # forward over reverse (jax.hessian) ends here
                raise UnsupportedTransformError(_JVP.format(name=name)) from exc
            raise ConversionError(_call_tf_failure(name, exc)) from exc
        except Exception as exc:
            raise ConversionError(_call_tf_failure(name, exc)) from exc

    _named(call, fn)
    return call


def _shape_key(x: Any) -> tuple[Any, ...]:
    shape = getattr(x, "shape", None)
    return () if shape is None else tuple(shape)


def _call_tf_failure(name: str, exc: BaseException) -> str:
    return (
        f"jax2tf.call_tf could not call TensorFlow function {name!r} under a JAX "
        f"transformation (jax.jit, jax.grad, ...): {type(exc).__name__}: {exc}\nUnder "
        "jax.jit the TensorFlow function must compile with XLA and have static output "
        "shapes; pass output_shape_dtype (jax.ShapeDtypeStruct per output) if TensorFlow "
        "cannot infer them, or call the function outside jax.jit."
    )


def _infer_outputs(tf_flat: Callable[..., Any], key: tuple[Any, ...], name: str) -> Any:
    """output_shape_dtype for call_tf when TensorFlow leaves an output dimension None.

    None when TensorFlow's shape inference gives every dim (or with symbolic input dims,
    which TensorFlow cannot take as static shapes). TF's shape inference sees through
    function calls but not through a restored jax2tf function (XlaCallModule), so those
    shapes come from the XLA program.
    """
    import jax
    import tensorflow as tf

    if not all(isinstance(d, int) for shape, _ in key for d in shape):
        return None  # symbolic (jax.export) dims: TF cannot take them as static shapes
    specs = [tf.TensorSpec(shape, tf.as_dtype(dtype)) for shape, dtype in key]
    concrete = tf.function(tf_flat, autograph=False).get_concrete_function(*specs)
    outs = tf.nest.flatten(concrete.structured_outputs)
    if not outs or any(not isinstance(o, tf.Tensor) for o in outs):
        return None  # no outputs, or ones call_tf will refuse with its own message
    if all(d is not None for o in outs for d in _dims(o.shape)):
        return None  # call_tf gets the same shapes itself
    compiled = tf.function(tf_flat, autograph=False, jit_compile=True)
    try:
        from tensorflow.compiler.xla.service import hlo_pb2

        hlo = compiled.experimental_get_compiler_ir(*specs)(stage="hlo_serialized")
        result = hlo_pb2.HloModuleProto.FromString(hlo).host_program_shape.result
    except Exception as exc:
        raise ConversionError(
            f"TensorFlow function {name!r} has outputs with unknown dimensions "
            f"{[o.shape for o in outs]} for inputs {specs}, and compiling it with XLA to "
            f"find them failed: {type(exc).__name__}: {exc}. Pass output_shape_dtype "
            "(a jax.ShapeDtypeStruct per output) to give them."
        ) from exc
    shapes = [tuple(s.dimensions) for s in (list(result.tuple_shapes) or [result])]
    if len(shapes) != len(outs):
        raise ConversionError(
            f"TensorFlow function {name!r} has outputs with unknown dimensions and its XLA "
            f"program has {len(shapes)} results for {len(outs)} outputs. Pass "
            "output_shape_dtype (a jax.ShapeDtypeStruct per output) to give them."
        )
    structs = [
        jax.ShapeDtypeStruct(s, o.dtype.as_numpy_dtype) for s, o in zip(shapes, outs, strict=True)
    ]
    return tf.nest.pack_sequence_as(concrete.structured_outputs, structs)


# --------------------------------------------------------------------------- the edges

_JAX_TO_TF_NOTE = (
    "a tf.function(autograph=False) running the JAX function through jax2tf, exported once "
    "per traced input signature (unknown dimensions become independent symbolic sizes unless "
    "you pass polymorphic_shapes); tf.GradientTape works, and a SavedModel of it runs without "
    "JAX, on the platforms it was exported for"
)
_TF_TO_JAX_NOTE = (
    "concrete calls run the TensorFlow function directly on zero-copy views; under "
    "jax.jit/jax.grad it runs through jax2tf.call_tf: reverse mode only (no jax.vmap, jacrev, "
    "jax.jvp or jacfwd), and captured tf.Variables are baked in as constants, so a jitted "
    "call does not see later assign()s until JAX retraces"
)


@hookimpl
def interop_converters() -> list[ConverterSpec]:
    """jax2tf.convert (jax -> tensorflow) and call_tf (tensorflow -> jax) function edges."""
    return [
        function_edge(
            "jax2tf.convert",
            "jax",
            "tensorflow",
            lambda: jax_to_tf,
            # jax2tf serializes the function: a host callback cannot be ("serialization of
            # host_callbacks is not yet implemented"), so torch -> jax -> tf is no route.
            accepts=Needs(no_flags=frozenset({"host_callback"})),
            options=("polymorphic_shapes", "with_gradient", "platforms", "input_signature"),
            note=_JAX_TO_TF_NOTE,
        ),
        function_edge(
            "jax2tf.call_tf",
            "tensorflow",
            "jax",
            lambda: tf_to_jax,
            options=("output_shape_dtype",),
            note=_TF_TO_JAX_NOTE,
        ),
    ]
