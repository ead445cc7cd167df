"""What a TensorFlow function's graph tells the function bridges: its operations, those
that write variables, and which one makes an output shape depend on input values.

TensorFlow runs such functions eagerly (``tf.boolean_mask(x, x > 0)``, ``x[0:x[1]]``, a
``tf.cond`` whose branches return different shapes); JAX code cannot express them, because
under JAX every shape must follow from the input shapes. TensorFlow's own shape inference
tells which operation it is: the first one whose inputs all have known shapes but whose
outputs do not, in the graph traced for the call's (static) input shapes.

Imports no framework at module level.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

#: Operations that write a variable: JAX code cannot hand the writes back (tf2jax returns the
#: new values beside the outputs; call_tf cannot carry them under jax.jit), so only
#: TensorFlow itself, called on concrete arrays, makes them.
WRITES = frozenset({"AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp"})
#: Operations whose output shapes TensorFlow's inference cannot see through (a function call,
#: a jax2tf module restored from a SavedModel): an unknown dimension there says nothing.
_CALLS = frozenset({"PartitionedCall", "StatefulPartitionedCall"})
_OPAQUE = _CALLS | {"XlaCallModule"}
#: How messages name the usual value-dependent operations.
_WHAT = {
    "If": "tf.cond whose branches return different shapes",
    "StatelessIf": "tf.cond whose branches return different shapes",
    "Case": "tf.switch_case whose branches return different shapes",
    "StatelessCase": "tf.switch_case whose branches return different shapes",
    "Where": "tf.where with one argument (tf.boolean_mask uses it)",
    "StridedSlice": "slice whose bounds are tensor values",
    "Slice": "slice whose size is a tensor value",
    "Unique": "tf.unique",
    "UniqueV2": "tf.unique",
    "Range": "tf.range with a tensor limit",
}


def nodes(graph_def: Any) -> Iterator[Any]:
    """The NodeDefs of a GraphDef, its library's functions (loop and branch bodies, nested
    tf.functions) included."""
    yield from graph_def.node
    for function in graph_def.library.function:
        yield from function.node_def


def operations(graph_def: Any) -> set[str]:
    """The operation types of a GraphDef's :func:`nodes`."""
    return {node.op for node in nodes(graph_def)}


def value_dependent_op(tf_fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """The operation of ``tf_fn`` (a tf.function) whose output shape depends on input
    values, for inputs of the static TensorSpecs ``args``/``kwargs``, said for a user
    ("op Where 'boolean_mask/Where' (tf.where with one argument ...)"); "" when there is
    none, or when TensorFlow cannot trace the function for these specs."""
    try:
        graph = tf_fn.get_concrete_function(*args, **kwargs).graph
    except Exception:  # the caller reports the failure it met; this only names an op
        return ""
    return _first_dependent(graph, depth=4)


def _first_dependent(graph: Any, depth: int) -> str:
    """The first value-dependent operation of ``graph`` (see :func:`value_dependent_op`),
    looking into the functions it calls (a nested tf.function), ``depth`` levels deep."""
    import tensorflow as tf

    skip = (tf.resource, tf.variant)
    if not all(t.shape.is_fully_defined() for t in graph.inputs if t.dtype not in skip):
        return ""  # a restored function keeps its saved graph, None dims and all
    for op in graph.get_operations():
        if op.type in _CALLS and depth:
            inner = _called_graph(graph, op)
            found = _first_dependent(inner, depth - 1) if inner is not None else ""
            if found:
                return found
        if op.type in _OPAQUE or not op.outputs or not op.inputs:
            continue
        inputs = [t for t in op.inputs if t.dtype not in skip]
        outputs = [t for t in op.outputs if t.dtype not in skip]
        if all(t.shape.is_fully_defined() for t in inputs) and not all(
            t.shape.is_fully_defined() for t in outputs
        ):
            what = _WHAT.get(op.type)
            return f"op {op.type} {op.name!r}" + (f" ({what})" if what else "")
    return ""


def _called_graph(graph: Any, op: Any) -> Any:
    """The graph of the function that call ``op`` runs, or None where TensorFlow keeps
    none (a function restored from a SavedModel has only its definition)."""
    try:
        return graph._functions[op.get_attr("f").name].graph  # the traced tf.function's
    except Exception:  # private; only the message's precision depends on it
        return None


def static_shapes(specs: Any) -> bool:
    """Whether every TensorSpec leaf of ``specs`` has a fully known shape."""
    import tensorflow as tf

    return all(
        s.shape.is_fully_defined() for s in tf.nest.flatten(specs) if isinstance(s, tf.TensorSpec)
    )
