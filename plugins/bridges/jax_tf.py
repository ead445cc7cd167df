"""Functions between JAX and TensorFlow: jax2tf one way, call_tf (or a direct call) the other.

:func:`jax_to_tf` returns a ``tf.function`` that runs the JAX function through jax2tf;
:func:`tf_to_jax` returns a JAX-callable that calls the TensorFlow function directly when it
gets concrete arrays and through ``jax2tf.call_tf`` under ``jax.jit``/``jax.grad``.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Callable, Sequence
from typing import Any

from interop_core.plugin import (
    CallContext,
    ConversionError,
    ConverterSpec,
    InteropError,
    Needs,
    NotAnArrayError,
    OptionError,
    UnsupportedTransformError,
    hookimpl,
)

from .shared import SignatureCache, first_line, function_edge, function_name, is_forward_mode
from .tf_graphs import WRITES, operations, value_dependent_op

#: Loaded once both are imported (docs/plugins.md, "Loaded when needed").
INTEROP_ABOUT = (("jax", "tensorflow"),)

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


def outside_jax_transformations(fn: Any) -> bool:
    """Whether no JAX transformation (jit, grad, vmap) is tracing now: only then may to()
    hand out a tf.function it made before for ``fn`` (ConverterSpec.reuse). Under one,
    jax2tf refuses to convert, and a fresh to() says so as jax2tf does. JAX exports no
    public name for the check: without it, nothing is reused."""
    import jax

    clean = getattr(getattr(getattr(jax, "_src", None), "core", None), "trace_state_clean", None)
    return bool(clean()) if clean is not None else False


def jax_to_tf(fn: Callable[..., Any], ctx: CallContext) -> Callable[..., Any]:
    """``fn`` (a JAX function) as a ``tf.function`` running it through ``jax2tf.convert``.

    Options: ``polymorphic_shapes``, ``polymorphic_constraints``, ``with_gradient`` (default
    True), ``platforms`` (jax2tf's ``native_serialization_platforms``), ``input_signature``
    (for the tf.function); each value is checked here, when to() converts the function.
    Without ``polymorphic_shapes``, dimensions that are None when TensorFlow traces the
    function become fresh symbolic dimensions. The result saves with tf.saved_model.save.
    """
    import tensorflow as tf
    from jax.experimental import jax2tf

    name = function_name(fn)
    poly = _polymorphic_shapes(ctx.option("polymorphic_shapes"))
    constraints = _polymorphic_constraints(ctx.option("polymorphic_constraints"), poly)
    with_gradient = ctx.option("with_gradient", True)
    if not isinstance(with_gradient, bool):
        raise _bad_option("with_gradient", with_gradient, "True or False")
    platforms = _platforms(ctx.option("platforms"))
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
            polymorphic_constraints=constraints,
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
    try:
        result = tf.function(traced, autograph=False, input_signature=signature)
    except (TypeError, ValueError) as exc:
        raise _bad_option(
            "input_signature", signature, "None or a list of tf.TensorSpec, one per argument "
            f"(e.g. [tf.TensorSpec([None, 3], tf.float32)]); TensorFlow says: {exc}",
        ) from exc  # fmt: skip
    with contextlib.suppress(TypeError):  # TensorFlow's class changed shape: keep its own
        result.__class__ = _variable_safe_function_type(type(result))
    return result


#: The platforms jax2tf exports for (``native_serialization_platforms``).
_PLATFORMS = ("cpu", "cuda", "rocm", "tpu")


def _bad_option(name: str, value: Any, accepted: str) -> OptionError:
    """The error for an option value the converter cannot take: the option, the value, and
    what it accepts (the first line short, the rest after it)."""
    shown = repr(value)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return OptionError(f"Option {name}={shown} is not valid.\n{name}= takes {accepted}.")


def _platforms(value: Any) -> tuple[str, ...] | None:
    """``platforms=`` checked: None, or platform names (one name alone too)."""
    if value is None:
        return None
    items = (value,) if isinstance(value, str) else value
    accepted = (
        f"None (the current backend), or a list of names from {', '.join(_PLATFORMS)}; "
        "jax2tf exports the function for each"
    )
    try:
        names = tuple(items)
    except TypeError:
        raise _bad_option("platforms", value, accepted) from None
    if not names or not all(isinstance(p, str) and p in _PLATFORMS for p in names):
        if any(isinstance(p, str) and p.lower() == "gpu" for p in names):
            accepted += " (a GPU is 'cuda' or 'rocm')"
        raise _bad_option("platforms", value, accepted)
    return names


def _is_poly_leaf(x: Any) -> bool:
    # jax2tf's PolyShape is a tuple subclass: a whole shape, not a sequence of shapes.
    return x is None or isinstance(x, str) or type(x).__name__ == "PolyShape"


def _polymorphic_shapes(value: Any) -> Any:
    """``polymorphic_shapes=`` checked: None, a shape string (for every argument), or a list
    with one per positional argument (None, a string, or a pytree of strings)."""
    import jax

    leaves = jax.tree_util.tree_leaves(value, is_leaf=_is_poly_leaf)
    if (value is None or isinstance(value, (str, list, tuple))) and all(
        _is_poly_leaf(x) for x in leaves
    ):
        return value
    raise _bad_option(
        "polymorphic_shapes", value, "None, a shape string such as '(b, _)', or a list with "
        "one per positional argument (None, a string, or a pytree of strings like the "
        "argument's); see jax2tf's README, 'Shape-polymorphic conversion'",
    )  # fmt: skip


def _polymorphic_constraints(value: Any, shapes: Any) -> tuple[str, ...]:
    """``polymorphic_constraints=`` checked: constraints such as 'b >= 16' on the dimension
    variables of ``polymorphic_shapes``, parsed now (jax.export.SymbolicScope)."""
    import jax

    if value is None:
        return ()
    accepted = (
        "a list of constraints on the dimension variables of polymorphic_shapes=, each "
        "'e1 >= e2', 'e1 <= e2' or 'e1 == e2' (e.g. ['b >= 16', 'c <= b'])"
    )
    items = (value,) if isinstance(value, str) else value
    try:
        constraints = tuple(items)
    except TypeError:
        raise _bad_option("polymorphic_constraints", value, accepted) from None
    if not all(isinstance(c, str) for c in constraints):
        raise _bad_option("polymorphic_constraints", value, accepted)
    if constraints and shapes is None:
        raise OptionError(
            f"Option polymorphic_constraints={list(constraints)!r} needs polymorphic_shapes=.\n"
            "The constraints are on the dimension variables that polymorphic_shapes= names "
            "(e.g. polymorphic_shapes=['(b, _)'], polymorphic_constraints=['b >= 16'])."
        )
    try:
        jax.export.SymbolicScope(list(constraints))
    except ValueError as exc:
        raise _bad_option("polymorphic_constraints", value, f"{accepted}; {exc}") from exc
    return constraints


def _read_variable(x: Any) -> Any:
    import tensorflow as tf

    return tf.convert_to_tensor(x) if isinstance(x, tf.Variable) else x


def _refuse_tracers(tree: Any, fn: Any) -> None:
    """Refuse JAX tracers given to the TensorFlow function jax2tf made (called inside
    jax.jit, grad or vmap): TensorFlow cannot hold them, and would fail converting one."""
    import jax
    import tensorflow as tf

    if any(isinstance(x, jax.core.Tracer) for x in tf.nest.flatten(tree)):
        name = getattr(fn, "__name__", "the function")
        raise ConversionError(
            f"The TensorFlow function {name!r} (made from a JAX function by jax2tf) was "
            "called with JAX tracers, inside a JAX transformation (jax.jit, jax.grad, "
            "jax.vmap). TensorFlow cannot run on them.\nCall the JAX function itself there, "
            "or convert the TensorFlow function back with to(f, 'jax')."
        )


def _untracked(tree: Any) -> Any:
    """``tree`` with the dicts a tf.Module tracks (``module.params = {...}`` makes a
    _DictWrapper) as plain dicts: TensorFlow 2.21's tf.function cannot trace a _DictWrapper
    argument beside typing_extensions 4.16 ("this __dict__ descriptor does not support
    '_DictWrapper' objects"), where raw jax2tf.convert takes it."""
    kind = type(tree)
    if kind.__name__ == "_DictWrapper" or kind is dict:
        return {k: _untracked(v) for k, v in tree.items()}
    if kind in (list, tuple):
        return kind(_untracked(v) for v in tree)
    return tree


#: The subclass made for each tf.function class (there is one, unless TensorFlow changes).
_SAFE_TYPES: dict[type, type] = {}


def _variable_safe_function_type(base: type) -> type:
    """A subclass of TensorFlow's tf.function class that reads tf.Variable arguments first
    when it is called while another tf.function traces.

    A tf.function called inside another with tf.Variable arguments makes the outer graph
    keep the variables of its first trace (weakly): under a GradientTape the next call with
    fresh variables fails with "referencing variables which have been deleted" (plain
    TensorFlow does the same for nested tf.functions). Read, they are tensors of the outer
    graph, and the tape still differentiates through the read. Eager calls are unchanged.
    """
    import tensorflow as tf

    if base in _SAFE_TYPES:
        return _SAFE_TYPES[base]

    class VariableSafeFunction(base):  # type: ignore[valid-type, misc]
        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            args, kwargs = _untracked((args, kwargs))
            _refuse_tracers((args, kwargs), self)
            if tf.inside_function():
                args, kwargs = tf.nest.map_structure(_read_variable, (args, kwargs))
            return super().__call__(*args, **kwargs)

    return _SAFE_TYPES.setdefault(base, VariableSafeFunction)


def _call_packed(fn: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
    return fn(*args, **kwargs)


def _jax2tf_failure(name: str, exc: BaseException, given: Any, used: Any) -> str:
    head = (
        f"jax2tf could not convert JAX function {name!r} to TensorFlow: {type(exc).__name__}: {exc}"
    )
    if given is None and used is not None:
        # The suggestion has the function's own arity: the shapes used, one name for all.
        example = re.sub(r"\bd\d+\b", "b", repr(used))
        return (
            f"{head}\nThe unknown (None) dimensions of the TensorFlow inputs were given "
            f"independent symbolic sizes, polymorphic_shapes={used!r}. If some of them are "
            f"equal (or fixed), pass polymorphic_shapes yourself, e.g. {example} (one entry "
            "per positional argument), or give the tf.function an input_signature with known "
            "sizes."
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


def _guarded(
    f: Callable[..., Any], name: str, vjp: Callable[[Any, Any], Any] | None = None
) -> Callable[..., Any]:
    """``f`` (which uses call_tf) whose vmap raises UnsupportedTransformError.

    The primal goes through jax.custom_batching.custom_vmap so the refusal also fires for
    vmap outside jax.jit and for jacrev; the forward pass used by reverse mode calls ``f``
    directly because custom_vmap cannot be linearized (grad-of-grad keeps working). The
    backward pass is ``vjp(args, cotangents)`` (default: ``f``'s own, through JAX).
    """
    import jax

    def own_vjp(res: Any, ct: Any) -> Any:
        return jax.vjp(f, *res)[1](ct)

    backward = vjp or own_vjp

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
        # Runs after the call returned, inside JAX's backward pass: errors are ours here too.
        try:
            return _guarded(backward, name)(res, ct)
        except InteropError:
            raise
        except TypeError as exc:
            if "forward-mode" in str(exc):
                raise UnsupportedTransformError(_JVP.format(name=name)) from exc
            raise ConversionError(_call_tf_failure(name, exc, "the gradient of ")) from exc
        except Exception as exc:
            raise ConversionError(_call_tf_failure(name, exc, "the gradient of ")) from exc

    call.defvjp(fwd, bwd)
    return call


def tf_to_jax(fn: Callable[..., Any], ctx: CallContext) -> Callable[..., Any]:
    """``fn`` (a TensorFlow function) as a JAX-callable.

    Concrete arguments (jax, numpy or tf arrays, in pytrees) go to TensorFlow zero-copy and
    the results come back zero-copy; under jax.jit/jax.grad the call goes through
    ``jax2tf.call_tf``. Option ``output_shape_dtype`` (None too: the function returns
    nothing) is passed to call_tf and checked against what concrete calls return; without
    it, None output dimensions are inferred from the concrete input shapes, unless they
    depend on the input values.
    """
    import jax
    import tensorflow as tf
    from jax.experimental import jax2tf

    name = function_name(fn)
    given = "output_shape_dtype" in ctx.options
    declared = _output_shape_dtype(ctx.option("output_shape_dtype")) if given else None
    to = ctx.to
    tree_flatten = jax.tree_util.tree_flatten
    tf_types = (tf.Tensor, tf.Variable)

    def unpacked(tree: Any) -> Callable[..., Any]:
        def tf_flat(*flat: Any) -> Any:
            args, kwargs = jax.tree_util.tree_unflatten(tree, flat)
            return _checked_outputs(fn(*args, **kwargs), name)

        return tf_flat

    # One call_tf wrapper per input signature, so eager jax.grad calls reuse it instead of
    # rebuilding it (and redoing any shape inference) on every call.
    staged: SignatureCache[Callable[..., Any]] = SignatureCache(_TRACED_CACHE)
    stageable: SignatureCache[bool] = SignatureCache(_TRACED_CACHE)

    def stage(tree: Any, key: tuple[Any, ...], infer: bool) -> Callable[..., Any]:
        tf_flat = unpacked(tree)

        def tf_call(*flat: Any) -> Any:
            out = tf_flat(*flat)
            if given:  # as on concrete calls, with the same message (TF's graph shapes here)
                _check_declared(out, declared, name)
            return out

        kw = {}
        if given:  # None included: call_tf then expects no outputs
            kw["output_shape_dtype"] = declared
        elif infer:
            inferred = _infer_outputs(tf_flat, key, name)
            if inferred is not None:
                kw["output_shape_dtype"] = inferred
        wrapper = _guarded(jax2tf.call_tf(tf_call, **kw), name, _tf_vjp(tf_flat))
        staged.put((tree, key), wrapper)
        return wrapper

    def call(*args: Any, **kwargs: Any) -> Any:
        flat, tree = tree_flatten((args, kwargs))
        if not any(_is_tracer(x) for x in flat):
            # Direct TF call: zero-copy in and out (call_tf would copy the inputs on CPU).
            args_tf, kwargs_tf = _to_or_keep(to, (args, kwargs), "tensorflow")
            try:
                result = fn(*args_tf, **kwargs_tf)
            except InteropError:
                raise
            except Exception as exc:  # TensorFlow's own error, kept as the cause
                raise ConversionError(
                    f"TensorFlow function {name!r} failed when called on concrete arrays: "
                    f"{type(exc).__name__}: {first_line(exc)}\nThe error is TensorFlow's "
                    "(see its cause): call the function with inputs it accepts."
                ) from exc
            # A Python number returned (a plain callable's constant) is a tensor to TensorFlow
            # (what call_tf makes of it), so a jax.Array here, of TensorFlow's dtype.
            out = _checked_outputs(tf.nest.map_structure(_as_tensor, result), name)
            if given:  # what call_tf checks under jax.jit, checked here too
                _check_declared(out, declared, name)
            return _to_or_keep(to, out, "jax")
        if any(is_forward_mode(x) for x in flat):
            raise UnsupportedTransformError(_JVP.format(name=name))
        # call_tf takes JAX values only ("not a valid JAX type" for a tf.Tensor).
        flat = [to(x, "jax") if isinstance(x, tf_types) else x for x in flat]
        key = tuple((_shape_key(x), str(jax.numpy.result_type(x))) for x in flat)
        try:
            if not all(_is_concrete(x) for x in flat) and not _batched(flat):
                # Staged (jax.jit, lax.cond): what call_tf would raise later, while JAX
                # lowers, outside this bridge, is checked once per signature here.
                stageable.get_or_make(
                    (tree, key), lambda: _check_stageable(unpacked(tree), key, name)
                )
            wrapper = staged.get((tree, key)) or stage(tree, key, infer=False)
            try:
                return wrapper(*flat)
            except ValueError as exc:
                # Only under jax.jit, and only when TF's shape inference leaves a None dim
                # (a restored jax2tf function): infer the shapes once, then retry.
                if given or "output has dynamic shape" not in str(exc):
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


def _as_tensor(x: Any) -> Any:
    """``x`` as a tf.Tensor when it is a Python number (TensorFlow's dtype for it)."""
    import tensorflow as tf

    return tf.constant(x) if isinstance(x, (bool, int, float, complex)) else x


def _batched(flat: Sequence[Any]) -> bool:
    """Whether jax.vmap traces a leaf of ``flat`` (the vmap refusal then says more than
    any other). JAX exports no public name for its batching tracer class: matched by name,
    as :func:`is_forward_mode` matches the forward-mode one."""
    return any(type(x).__name__ == "BatchTracer" for x in flat)


def _is_concrete(x: Any) -> bool:
    """Whether ``x`` has a value now: not a tracer, or one of jax.grad over concrete values
    (call_tf then runs TensorFlow eagerly); under jax.jit it has none. JAX keeps the
    question private; without it, every tracer counts as staged."""
    import jax

    is_concrete = getattr(jax._src.core, "is_concrete", None)
    return not _is_tracer(x) or (is_concrete is not None and bool(is_concrete(x)))


def _check_stageable(tf_flat: Callable[..., Any], key: tuple[Any, ...], name: str) -> bool:
    """Refuse, before JAX lowers the call (where call_tf raises its raw errors, outside
    this bridge), a TensorFlow function that call_tf cannot stage for the static input
    signature ``key``: one that writes variables, or one XLA cannot compile (string ops)."""
    import tensorflow as tf

    if not all(isinstance(d, int) for shape, _ in key for d in shape):
        return True  # symbolic (jax.export) dims: TF cannot take them as static shapes
    specs = [tf.TensorSpec(shape, tf.as_dtype(dtype)) for shape, dtype in key]
    compiled = tf.function(tf_flat, autograph=False, jit_compile=True)
    try:
        graph = compiled.get_concrete_function(*specs).graph
    except Exception:
        # Nothing to tell before call_tf: it raises the same trouble itself (and the caller
        # wraps it), or traces where this cannot (a jax2tf function inside refuses to
        # convert while a JAX transformation traces, and call_tf steps out of it).
        return True
    writes = sorted(operations(graph.as_graph_def()) & WRITES)
    if writes:
        raise ConversionError(
            f"TensorFlow function {name!r} writes variables ({', '.join(writes)}), which "
            "call_tf cannot carry under a JAX transformation (jax.jit, jax.grad).\nCall it "
            "on concrete arrays (TensorFlow then runs it and makes the writes), or move the "
            "writes out of the function and pass the values in as arguments."
        )
    try:
        compiled.experimental_get_compiler_ir(*specs)(stage="hlo")
    except InteropError:
        raise
    except Exception as exc:
        raise ConversionError(
            f"TensorFlow function {name!r} cannot run under a JAX transformation (jax.jit, "
            f"jax.grad): call_tf compiles it with XLA, which refuses it: "
            f"{type(exc).__name__}: {first_line(exc)}\nCall it on concrete arrays "
            "(TensorFlow then runs it as it is), or keep what XLA cannot compile (string ops, "
            "tf.py_function, shapes that depend on values) out of the function."
        ) from exc
    return True


def _tf_vjp(tf_flat: Callable[..., Any]) -> Callable[[Any, Any], Any]:
    """The backward pass of ``tf_flat`` called through call_tf: TensorFlow's gradient (a
    GradientTape, as call_tf's own backward pass), itself called through call_tf.

    Each argument's cotangent has that argument's shape, so the shapes are declared to
    call_tf instead of asked of TensorFlow's shape inference, which leaves dimensions of
    some gradients unknown (tf.gather's: [None, n]) and then fails even eagerly.
    """
    import jax
    import numpy as np
    import tensorflow as tf
    from jax.experimental import jax2tf

    jnp = jax.numpy

    def vjp(res: Any, ct: Any) -> tuple[Any, ...]:
        args = list(res)
        dtypes = [jnp.result_type(a) for a in args]
        wrt = [i for i, d in enumerate(dtypes) if jnp.issubdtype(d, jnp.inexact)]
        cts = jax.tree_util.tree_leaves(ct)
        live = [j for j, c in enumerate(cts) if jnp.result_type(c) != jax.dtypes.float0]
        # Integer (and boolean) arguments get float0 zeros, as JAX expects of them.
        grads: list[Any] = [np.zeros(np.shape(a), jax.dtypes.float0) for a in args]
        if not wrt:
            return tuple(grads)
        if not live:  # no output carries a gradient
            for i in wrt:
                grads[i] = jnp.zeros(np.shape(args[i]), dtypes[i])
            return tuple(grads)
        n = len(args)

        def tf_grad(*flat: Any) -> list[Any]:
            xs = flat[:n]
            watched = [xs[i] for i in wrt]
            with tf.GradientTape() as tape:
                tape.watch(watched)
                outs = jax.tree_util.tree_leaves(tf_flat(*xs))
            found = tape.gradient(
                [outs[j] for j in live], watched, output_gradients=list(flat[n:]),
                unconnected_gradients=tf.UnconnectedGradients.ZERO,
            )  # fmt: skip
            return [tf.convert_to_tensor(g) for g in found]  # IndexedSlices too

        shapes = [jax.ShapeDtypeStruct(np.shape(args[i]), dtypes[i]) for i in wrt]
        found = jax2tf.call_tf(tf_grad, output_shape_dtype=shapes)(*args, *(cts[j] for j in live))
        for i, g in zip(wrt, found, strict=True):
            grads[i] = g
        return tuple(grads)

    return vjp


#: What output_shape_dtype= takes, for messages.
_OUTPUT_SHAPE_DTYPE = (
    "a jax.ShapeDtypeStruct per output of the TensorFlow function, in the structure it "
    "returns (a tuple, a dict...), every dimension a size; or None for a function that "
    "returns nothing"
)


def _output_shape_dtype(value: Any) -> Any:
    """``output_shape_dtype=`` checked: every leaf has a shape of sizes and a dtype."""
    import jax
    import numpy as np

    for leaf in jax.tree_util.tree_leaves(value):
        try:
            shape = tuple(leaf.shape)
            np.dtype(leaf.dtype)
        except Exception:
            raise _bad_option("output_shape_dtype", value, _OUTPUT_SHAPE_DTYPE) from None
        if any(d is None for d in shape):
            raise _bad_option("output_shape_dtype", value, _OUTPUT_SHAPE_DTYPE)
    return value


def _check_declared(out: Any, declared: Any, name: str) -> None:
    """Raise unless ``out`` (what TensorFlow returned) matches ``output_shape_dtype`` as
    call_tf checks it: the same structure, dtypes, ranks, and every declared size."""
    import operator

    import jax
    import numpy as np
    import tensorflow as tf

    leaves, tree = jax.tree_util.tree_flatten(out)
    want, want_tree = jax.tree_util.tree_flatten(declared)
    advice = "Fix output_shape_dtype= (or leave it out: concrete calls need none)."
    if tree != want_tree:  # type: ignore[operator]
        raise ConversionError(
            f"TensorFlow function {name!r} returned a result of structure {tree}, but "
            f"output_shape_dtype= declares {want_tree}.\n{advice}"
        )
    for i, (got, sd) in enumerate(zip(leaves, want, strict=True)):
        if isinstance(got, (tf.Tensor, tf.Variable)):
            shape, dtype = tuple(_dims(got.shape)), np.dtype(got.dtype.as_numpy_dtype)
        else:
            shape, dtype = np.shape(got), np.result_type(got)
        sizes: list[int | None] = []
        for d in sd.shape:
            try:
                sizes.append(operator.index(d))
            except TypeError:  # a symbolic dimension: any size
                sizes.append(None)
        if (
            dtype != np.dtype(sd.dtype)
            or len(shape) != len(sizes)
            or any(None not in (g, w) and g != w for g, w in zip(shape, sizes, strict=True))
        ):  # a None size of a graph tensor (under jax.jit) is checked when it runs
            raise ConversionError(
                f"TensorFlow function {name!r} returned {dtype}{list(shape)} as output "
                f"{i}, but output_shape_dtype= declares {np.dtype(sd.dtype)}"
                f"{list(sd.shape)}.\n{advice}"
            )


#: What JAX cannot hold, by TensorFlow type: what to return instead.
_NOT_ARRAYS = {
    "TensorArray": "Return arr.stack() (or arr.concat()) instead of the TensorArray.",
    "RaggedTensor": "Return rt.to_tensor() (padded), or rt.flat_values and rt.row_splits.",
    "SparseTensor": "Return tf.sparse.to_dense(st), or its indices, values and dense_shape.",
}


def _checked_outputs(out: Any, name: str) -> Any:
    """``out`` (what the TensorFlow function returned), refused when an output is not a
    tensor JAX can hold: a TensorArray, a ragged or sparse tensor, a variant."""
    import jax
    import tensorflow as tf

    for leaf in jax.tree_util.tree_leaves(out):
        kind = type(leaf).__name__
        if kind in _NOT_ARRAYS and isinstance(
            leaf, (tf.TensorArray, tf.RaggedTensor, tf.SparseTensor)
        ):
            advice = _NOT_ARRAYS[kind]
        elif isinstance(leaf, tf.Tensor) and leaf.dtype == tf.variant:
            # A TensorArray returned inside a graph (under jax.jit) is a variant tensor.
            kind = "variant tensor (a tf.TensorArray, a tf.data.Dataset, ...)"
            advice = "Return dense tensors: arr.stack() (or arr.concat()) for a TensorArray."
        elif isinstance(leaf, (tf.Tensor, tf.Variable)) and leaf.dtype == tf.string:
            kind = "string tensor (tf.string)"
            advice = (
                "Return numbers instead (tf.strings.to_number, ids from a tf.lookup table, "
                "tf.strings.unicode_decode's code points), or call the TensorFlow function "
                "itself where you need its strings."
            )
        else:
            continue
        raise ConversionError(
            f"TensorFlow function {name!r} returned a {kind}, which JAX cannot hold.\n"
            f"JAX takes dense tensors only. {advice}"
        )
    return out


def _shape_key(x: Any) -> tuple[Any, ...]:
    shape = getattr(x, "shape", None)
    return () if shape is None else tuple(shape)


def _call_tf_failure(name: str, exc: BaseException, what: str = "") -> str:
    return (
        f"jax2tf.call_tf could not call {what}TensorFlow function {name!r} under a JAX "
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
    results = list(result.tuple_shapes) or [result]
    dynamic = [(i, list(o.shape)) for i, (o, s) in enumerate(zip(outs, results, strict=False))
               if any(s.is_dynamic_dimension)]  # fmt: skip
    if dynamic:
        # XLA gives such a dimension only its bound (x[0:x[1]] of 3 values: 3); taking it
        # as the size would return padding as data.
        where = ", ".join(f"output {i} (TensorFlow's shape {shape})" for i, shape in dynamic)
        op = value_dependent_op(tf.function(tf_flat, autograph=False), tuple(specs), {})
        raise ConversionError(
            f"TensorFlow function {name!r} cannot run under jax.jit: the shape of {where} "
            f"depends on the input values{f' (its {op})' if op else ''}, for inputs "
            f"{specs}.\nUnder jax.jit every shape "
            "must follow from the input shapes. Call the function outside jax.jit (concrete "
            "calls run it directly), or return a fixed-size result (e.g. padded, with its "
            "length)."
        )
    shapes = [tuple(s.dimensions) for s in results]
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
            options=(
                "polymorphic_shapes",
                "polymorphic_constraints",
                "with_gradient",
                "platforms",
                "input_signature",
            ),
            note=_JAX_TO_TF_NOTE,
            reuse=outside_jax_transformations,
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
