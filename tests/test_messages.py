"""What a new user reads: no framework warning from to(), and messages that lead with the
point (a misspelt option, swapped arguments, a meta tensor, explain() of a container)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections import namedtuple
from typing import Any

import pytest
from adapters import aligned_numpy, ptr
from conftest import exchange_names, need

from interop_core import (
    InteropError,
    NotAnArrayError,
    OptionError,
    Route,
    RouteTree,
    UnknownFrameworkError,
    explain,
    to,
)

Pair = namedtuple("Pair", "left right")

# -- no framework warning leaks from to() ---------------------------------------------------

# torch warns once per process (on the first tensor over read-only memory): only a fresh
# process shows whether to() lets it out. -W error turns any warning into an exception, and
# the records catch one that a filter would have hidden.
_NO_WARNING = """
import warnings
import jax.numpy as jnp
import numpy as np
import tensorflow as tf
import torch

from interop_core import to

with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    j, t = jnp.arange(4.0), tf.constant([1.0, 2.0, 3.0])
    a, b = to(j, "torch"), to(t, "torch")
    again = to(jnp.ones(2), "torch")  # the warm path
assert [str(w.message) for w in seen] == [], [str(w.message) for w in seen]
assert all(isinstance(y, torch.Tensor) for y in (a, b, again))
assert a.tolist() == [0.0, 1.0, 2.0, 3.0] and b.tolist() == [1.0, 2.0, 3.0]
assert a.data_ptr() == j.unsafe_buffer_pointer()  # zero-copy, as explain() says
assert a.data_ptr() == np.asarray(j).ctypes.data
print("OK")
"""


def test_jax_and_tf_to_torch_emit_no_warning_with_warnings_as_errors() -> None:
    for name in ("jax", "tensorflow", "torch"):
        need(name)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    run = subprocess.run(
        [sys.executable, "-W", "error", "-c", textwrap.dedent(_NO_WARNING)],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert run.returncode == 0 and run.stdout.strip() == "OK", run.stderr[-3000:]
    assert "not writable" not in run.stderr, run.stderr[-3000:]


# -- unknown options ------------------------------------------------------------------------


def test_misspelt_option_suggests_the_close_name_on_a_short_first_line(np: Any) -> None:
    need("torch")
    a = aligned_numpy(np.arange(3, dtype=np.float32))
    with pytest.raises(OptionError) as info:
        to(a, "torch", devce="cpu")
    first, *rest = str(info.value).splitlines()
    assert first.endswith("did you mean device=?"), first
    assert len(first) <= 100, first
    assert rest, "the details follow on later lines"
    assert all(len(line) <= 300 for line in rest), rest
    msg = str(info.value)
    assert "to() never casts" in msg and "dtype=" in msg
    with pytest.raises(OptionError, match=r"did you mean copy=\?"):
        explain(a, "torch", cpy=True)
    with pytest.raises(OptionError, match=r"did you mean dtype=\?"):
        to(a, "torch", dtyp="float64")


def test_unknown_option_with_no_close_name_lists_no_catalogue(np: Any) -> None:
    need("torch")
    with pytest.raises(OptionError) as info:
        to(np.ones(3, dtype=np.float32), "torch", colour="red")
    first, *rest = str(info.value).splitlines()
    assert "colour" in first and "did you mean" not in first and len(first) <= 100, first
    # No converter takes it or a close name: nothing else to list.
    assert len(str(info.value)) < 400 and not any(line.startswith("  ") for line in rest), rest


def test_a_typo_gets_a_short_answer_not_every_edges_options(np: Any) -> None:
    """A misspelt option's error keeps its first line and what the route takes; other
    converters are named only for a close name, a few per name (it listed all 212
    converters' options: 10,023 characters)."""
    need("torch")
    x = np.ones(3, dtype=np.float32)
    with pytest.raises(OptionError) as info:
        to(x, "torch", devcie="cpu")
    assert str(info.value).splitlines()[0].endswith("did you mean device=?")
    assert len(str(info.value)) < 600, str(info.value)
    # A name only other routes take: suggested, with a few of its takers on one line.
    with pytest.raises(OptionError) as info:
        to(x, "torch", fill_valu=0)
    first, *rest = str(info.value).splitlines()
    assert "did you mean fill_value= (other routes take it)?" in first, first
    takers = [line for line in rest if line.startswith("  fill_value=:")]
    assert len(takers) == 1 and takers[0].count("[") == 3, rest
    assert len(str(info.value)) < 1000, str(info.value)
    # The real name, on a route that does not take it: its takers, of arrays only.
    with pytest.raises(OptionError) as info:
        to(x, "torch", sharding=5)
    rest = str(info.value).splitlines()[1:]
    assert [line for line in rest if line.startswith("  sharding=:")], rest
    assert "pipeline" not in str(info.value) and "DALI" not in str(info.value)


def test_explain_refuses_an_option_value_to_would(np: Any) -> None:
    """explain() runs the options' declared checks as to() does (mesh= was accepted)."""
    need("torch")
    need("jax")  # the route that takes mesh= goes through JAX
    x = np.ones(3, dtype=np.float32)
    with pytest.raises(OptionError, match=r"mesh= takes a torch\.distributed DeviceMesh") as a:
        to(x, "torch", mesh="garbage")
    with pytest.raises(OptionError, match=r"mesh= takes a torch\.distributed DeviceMesh") as b:
        explain(x, "torch", mesh="garbage")
    assert str(a.value) == str(b.value)


def test_explain_of_a_container_counts_copies_and_bytes_like_a_route(np: Any) -> None:
    """A RouteTree has what a Route has: copies, bytes_copied, notes, refused (``copies``
    raised "'dict' object has no attribute 'copies'")."""
    torch = need("torch")
    shared = aligned_numpy(np.arange(6, dtype=np.float32))
    frozen = aligned_numpy(np.arange(4, dtype=np.float64))
    frozen.flags.writeable = False  # torch cannot mark a result read-only: one copy
    tree = explain({"a": shared, "b": [frozen, 1]}, "torch")
    assert isinstance(tree, RouteTree)
    leaves = list(tree.routes.values())
    assert tree.copies == sum(r.copies for r in leaves) == 1
    assert tree.bytes_copied == frozen.nbytes
    assert not tree.zero_copy and tree.refused and all(r.reason for r in tree.refused)
    out = to({"a": shared, "b": [frozen, 1]}, "torch")
    assert out["a"].data_ptr() == shared.ctypes.data
    assert out["b"][0].data_ptr() != frozen.ctypes.data and out["b"][0].dtype == torch.float64
    plain = explain({"a": shared}, "torch")
    assert (plain.copies, plain.bytes_copied, plain.refused, plain.zero_copy) == (0, 0, (), True)


def test_a_copy_asked_for_has_no_why_not(np: Any) -> None:
    """explain(x, 'numpy', copy=True) listed ragged= and densify= refusals under "why not
    zero-copy": the user asked for the copy."""
    x = np.ones(3)
    route = explain(x, "numpy", copy=True)
    assert route.copies == 1 and route.refused == ()
    assert "why not" not in str(route) and "ragged" not in str(route), str(route)
    assert to(x, "numpy", copy=True).ctypes.data != x.ctypes.data


def test_the_unaligned_refusal_names_the_fix_and_the_fix_works(np: Any) -> None:
    """copy=False into JAX of an unaligned array names aligned_memory(), and an array made
    inside it is shared (pointer read by JAX's own DLPack export)."""
    jax = need("jax")
    from interop_core import CopyRequiredError, PluginError, aligned_memory

    unaligned = np.ones(1025, np.float32)[1:]
    with pytest.raises(CopyRequiredError, match=r"aligned_memory\(\)") as info:
        to(unaligned, "jax", copy=False)
    assert "Pass copy=None" in str(info.value)
    try:
        with aligned_memory():
            fixed = np.ones(1024, np.float32)
    except PluginError as exc:  # no C compiler where it was installed
        pytest.skip(str(exc))
    y = to(fixed, "jax", copy=False)
    assert y.unsafe_buffer_pointer() == fixed.ctypes.data
    assert isinstance(y, jax.Array)


# -- swapped arguments --------------------------------------------------------------------


def test_swapped_arguments_are_named_without_the_arrays_repr(np: Any) -> None:
    need("torch")
    a = np.arange(1000, dtype=np.float32)
    with pytest.raises(UnknownFrameworkError) as info:
        to("torch", a)  # type: ignore[arg-type]
    msg = str(info.value)
    first = msg.splitlines()[0]
    assert "swapped" in first and "numpy.ndarray" in first, first
    assert len(first) <= 200, first
    assert "999." not in msg and "array(" not in msg, msg  # no repr of the array
    assert len(msg) < 500, msg
    # a target that is no array is not called swapped, and is still not printed whole
    with pytest.raises(UnknownFrameworkError) as other:
        to(a, object())
    assert "swapped" not in str(other.value) and "object at 0x" not in str(other.value)


def test_unknown_framework_puts_the_known_names_after_the_first_line(np: Any) -> None:
    with pytest.raises(UnknownFrameworkError) as info:
        to(np.zeros(2), "pytorh")
    first, *rest = str(info.value).splitlines()
    assert first.startswith("Unknown framework 'pytorh'. Did you mean"), first
    assert "Known frameworks" not in first, first
    assert any("Known frameworks" in line for line in rest), rest


# -- meta tensors -------------------------------------------------------------------------


@pytest.mark.parametrize("target", ["numpy", "jax", "tensorflow"])
def test_meta_tensor_says_it_has_no_data(target: str) -> None:
    torch = need("torch")
    need(target)
    m = torch.ones(2, 3, device="meta")
    with pytest.raises(NotAnArrayError) as info:
        to(m, target)
    first = str(info.value).splitlines()[0]
    assert "meta" in first and "no data" in first, first
    assert "(2, 3)" in str(info.value)
    with pytest.raises(NotAnArrayError, match="no data"):
        explain(m, target)


# -- explain() of a container -------------------------------------------------------------


def test_explain_container_prints_one_line_per_leaf_path(np: Any) -> None:
    need("torch")
    a = aligned_numpy(np.arange(4, dtype=np.float32))
    neg = np.arange(4, dtype=np.float32)[::-1]  # torch cannot hold negative strides: a copy
    routes = explain({"a": a, "b": [a, "tag"], "c": Pair(a, 1), "d": neg}, "torch")
    text = str(routes)
    assert "Route(" not in text and "Step(" not in text, text
    lines = text.splitlines()
    assert lines[0] == "4 array(s), 1 of them copied:", text
    assert lines[1] == (
        "  ['a']: numpy@cpu -> torch@cpu: zero-copy in 1 step(s), via " + exchange_names()[0]
    ), text
    assert lines[2].startswith("  ['b'][0]: numpy@cpu -> torch@cpu: zero-copy"), text
    assert lines[3].startswith("  ['c'].left: numpy@cpu -> torch@cpu: zero-copy"), text
    assert lines[4].startswith("  ['d']: numpy@cpu -> torch@cpu: 1 copy(ies), 16 bytes"), text
    assert len(lines) == 5, text  # no line for the non-array leaves
    # The structure is reached as before.
    assert isinstance(routes, RouteTree)
    assert isinstance(routes["a"], Route) and routes["a"].zero_copy
    assert type(routes["b"]) is list and routes["b"][1] is None
    assert type(routes["c"]) is Pair and routes["c"].right is None
    assert list(routes) == ["a", "b", "c", "d"] and len(routes) == 4
    assert list(routes.keys()) == ["a", "b", "c", "d"]
    assert routes == routes.tree and type(routes.tree) is dict
    assert list(routes.routes) == ["['a']", "['b'][0]", "['c'].left", "['d']"]
    assert not routes.zero_copy
    # and what explain() says is what to() does
    out = to({"a": a, "d": neg}, "torch")
    assert ptr(out["a"]) == ptr(a) and ptr(out["d"]) != ptr(neg)


def test_explain_of_a_list_iterates_its_routes(np: Any) -> None:
    need("torch")
    a = aligned_numpy(np.arange(4, dtype=np.float32))
    routes = explain([a, (a, None)], "torch")
    first, second = routes
    assert isinstance(first, Route) and type(second) is tuple
    assert routes[1][0] == first
    assert list(routes.routes) == ["[0]", "[1][0]"]
    assert routes.zero_copy
    assert str(routes).splitlines()[0] == "2 array(s), 0 of them copied:"


def test_an_opt_in_of_pipelines_is_unknown_for_an_array() -> None:
    """sharding= opens DALI's pipeline edge; on an array into torch it is no option at all
    (it was accepted and ignored)."""
    np = need("numpy")
    need("torch")
    with pytest.raises(OptionError, match="sharding"):
        to(np.ones(3, np.float32), "torch", sharding=5)


def test_the_polymorphic_shapes_suggestion_has_the_functions_arity() -> None:
    """A (params, x, y) loss whose None batch dims must be equal: the suggested fix names
    three entries, one per argument (it named two)."""
    need("jax")
    tf = need("tensorflow")
    import jax.numpy as jnp

    def loss(params: Any, x: Any, y: Any) -> Any:
        return jnp.sum((x @ params - y) ** 2)

    sig = [tf.TensorSpec([3, 1]), tf.TensorSpec([None, 3]), tf.TensorSpec([None, 1])]
    g = to(loss, "tensorflow", source="jax", input_signature=sig)
    with pytest.raises(InteropError) as info:
        g(tf.ones([3, 1]), tf.ones([4, 3]), tf.ones([4, 1]))
    message = str(info.value)
    assert "e.g. ['(_, _)', '(b, _)', '(b, _)']" in message
