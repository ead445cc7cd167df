"""to() inside torch.compile (issue 33): the routes into torch that dynamo can trace do so
without a graph break, checked against eager to() (values, dtype, type, structure, memory);
the others break the graph with a reason that says what to do, and keep eager results.

Graph breaks are counted by dynamo itself: ``torch._dynamo.explain`` (graph count) and its
``counters["graph_break"]``, which also counts the break at the first line of a frame that
explain() leaves out. Most compiles use the "eager" backend (what is traced is what these
tests are about; it compiles in milliseconds); the memory checks use inductor.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from conftest import available, need

import interop_core
from interop_core import CopyRequiredError, NoRouteError, OptionError, UnknownFrameworkError

np = need("numpy")
torch = need("torch")

if "torchax" in sys.modules:  # tests/test_functions_torchax.py ran first in this process
    pytest.skip(
        "torchax was imported in this process, which breaks torch.compile process-wide (nox "
        "runs it in a session of its own)",
        allow_module_level=True,
    )

# After the torchax check: this imports torch._dynamo (and sets torch._dynamo).
from interop_plugins.frameworks import torch_compile  # noqa: E402
from torch._dynamo.utils import counters  # noqa: E402

to = interop_core.to
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(autouse=True)
def fresh_dynamo() -> Iterator[None]:
    """Registered (as the torch plugin does once dynamo is imported), with no compiled code
    or counts left from another test."""
    torch_compile.enable()
    torch._dynamo.reset()
    counters.clear()
    yield
    torch._dynamo.reset()


class Breaks:
    """What dynamo made of one call: graphs, breaks (both counts) and the reasons."""

    def __init__(self, fn: Callable[..., Any], *args: Any) -> None:
        torch._dynamo.reset()
        counters.clear()
        found = torch._dynamo.explain(fn)(*args)
        self.graphs = found.graph_count
        self.explained = found.graph_break_count
        self.reasons = [" ".join(str(r.reason).split()) for r in found.break_reasons]
        self.counted = sum(counters["graph_break"].values())
        self.counted_reasons = [" ".join(str(k).split()) for k in counters["graph_break"]]
        torch._dynamo.reset()


def traced(fn: Callable[..., Any], *args: Any, backend: str = "eager") -> Any:
    """``fn(*args)`` compiled with fullgraph=True after checking dynamo traced it whole.

    One torch op is traced beside ``fn``: dynamo runs a frame that traced no op eagerly
    (and then analyses every frame the eager call enters), which would say nothing of
    whether ``fn`` was traced."""

    def with_an_op(*a: Any) -> Any:
        return fn(*a), torch.ones(())

    seen = Breaks(with_an_op, *args)
    assert (seen.graphs, seen.explained, seen.counted) == (1, 0, 0), seen.counted_reasons
    return torch.compile(with_an_op, fullgraph=True, backend=backend)(*args)[0]


def same(a: Any, b: Any) -> None:
    """Same type, dtype, shape and values (exactly)."""
    assert type(a) is type(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert torch.equal(a, b)


# -- traced: numpy -> torch ------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype",
    ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool",
     "complex64", "complex128"],
)  # fmt: skip
def test_numpy_to_torch_is_traced_with_eager_dtype_and_values(dtype: str) -> None:
    x = (np.arange(12) % 5).reshape(3, 4).astype(dtype)

    def f(a: Any) -> Any:
        return to(a, "torch")

    same(traced(f, x), to(x, "torch"))


@pytest.mark.parametrize(
    "make",
    [
        lambda x: x[:, ::2],  # strided view
        np.asfortranarray,
        lambda x: x[0, 0].copy(),  # 0-d
        lambda x: x[:0],  # empty
    ],
    ids=["strided", "fortran", "0-d", "empty"],
)
def test_numpy_layouts_are_traced(make: Callable[[Any], Any]) -> None:
    x = make(np.arange(12, dtype=np.float32).reshape(3, 4))
    same(traced(lambda a: to(a, "torch"), x), to(x, "torch"))


def test_numpy_made_inside_the_compiled_function_is_traced() -> None:
    x = np.linspace(0, 1, 8)

    def f(a: Any) -> Any:  # numpy calls dynamo traces as torch ones
        return to(np.sin(a) + a.sum(), "torch") * 2

    out = traced(f, x)
    same(out, to(np.sin(x) + x.sum(), "torch") * 2)


@pytest.mark.parametrize("target", ["torch", "pytorch", "TORCH", "torch module"])
def test_every_spelling_of_the_target_is_traced(target: str) -> None:
    aim: Any = torch if target == "torch module" else target
    x = np.arange(4, dtype=np.int32)
    same(traced(lambda a: to(a, aim) + 1, x), to(x, "torch") + 1)


def test_numpy_memory_under_compile_is_a_copy_where_eager_shares() -> None:
    """Eager to() shares a writable array's memory; compiled, the result is a copy (dynamo
    gives traced code no way to read the writeable flag, and a read-only array must not be
    handed out writable). copy=True never shares, in both."""
    x = np.arange(6, dtype=np.float32)
    assert to(x, "torch").data_ptr() == x.ctypes.data  # eager: zero-copy
    for copy in (None, True):
        out = traced(lambda a, c=copy: to(a, "torch", copy=c), x, backend="inductor")
        assert out.data_ptr() != x.ctypes.data
        out += 1  # never reaches the array
        assert x.tolist() == [0, 1, 2, 3, 4, 5]


def test_a_read_only_array_is_never_handed_out_writable() -> None:
    x = np.arange(4, dtype=np.float64)
    x.flags.writeable = False
    eager = to(x, "torch")
    assert eager.data_ptr() != x.ctypes.data  # eager copies it (rule 8)
    out = traced(lambda a: to(a, "torch"), x, backend="inductor")
    assert out.data_ptr() != x.ctypes.data
    out.fill_(7)
    assert x.tolist() == [0, 1, 2, 3]
    assert x.flags.writeable  # dynamo set it while tracing (see the test below)


def test_inductor_results_equal_eager_ones() -> None:
    x = np.random.default_rng(0).standard_normal((16, 8)).astype(np.float32)

    def f(a: Any) -> Any:
        t = to(a, "torch")
        return (t @ t.T).relu().sum(0)

    out = traced(f, x, backend="inductor")
    assert torch.allclose(out, f(x), rtol=1e-5, atol=1e-5)


# -- traced: dtype= --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype",
    [
        "float64",
        "half",
        "torch.int32",
        "torch",
        "numpy",
        "mapping",
        "mapping elsewhere",
        "canonical",
    ],
)
def test_dtype_is_traced_as_eager_reads_it(dtype: str) -> None:
    asked: Any = {
        "torch": torch.bfloat16,
        "numpy": np.int16,
        "mapping": {"float32": "float64"},
        "mapping elsewhere": {"int64": "int32"},  # names no dtype present: nothing is cast
        "canonical": "canonical",  # torch's own dtypes: torch keeps every one
    }.get(dtype, dtype)
    x = (np.arange(6, dtype=np.float32) * 1.5).reshape(2, 3)
    t = torch.from_numpy(x.copy())
    for source in (x, t):
        out = traced(lambda a: to(a, "torch", dtype=asked), source)
        same(out, to(source, "torch", dtype=asked))


def test_dtype_in_containers_casts_only_the_named_dtypes() -> None:
    batch = {"x": np.ones((2, 2), np.float32), "y": np.arange(3), "t": torch.arange(3)}
    asked = {"int64": "int32"}
    out = traced(lambda b: to(b, "torch", dtype=asked), batch)
    eager = to(batch, "torch", dtype=asked)
    assert list(out) == list(eager) == ["x", "y", "t"]
    for key in eager:
        same(out[key], eager[key])
    assert [out[k].dtype for k in out] == [torch.float32, torch.int32, torch.int32]


# -- traced: torch -> torch ------------------------------------------------------------------


def test_torch_to_torch_is_the_same_tensor_as_in_eager() -> None:
    t = torch.arange(6.0)
    assert to(t, "torch") is t
    for kwargs in ({}, {"copy": False}, {"device": "cpu"}, {"device": torch.device("cpu")}):
        assert traced(lambda a, k=kwargs: to(a, "torch", **k), t) is t


def test_torch_copy_true_is_a_contiguous_copy_on_the_autograd_graph() -> None:
    base = torch.arange(6.0).reshape(2, 3).requires_grad_()
    view = base.T  # not contiguous

    def f(a: Any) -> Any:
        return to(a, "torch", copy=True)

    eager = f(view)
    out = traced(f, view, backend="aot_eager")
    same(out, eager)
    assert out.is_contiguous() and eager.is_contiguous()
    assert out.data_ptr() != base.data_ptr()
    (out * torch.arange(6.0).reshape(3, 2)).sum().backward()
    assert base.grad is not None
    assert base.grad.tolist() == torch.arange(6.0).reshape(3, 2).T.tolist()


def test_a_conjugate_view_copied_is_resolved_as_in_eager() -> None:
    c = torch.tensor([1 + 2j, 3 - 1j]).conj()
    out = traced(lambda a: to(a, "torch", copy=True), c)
    assert not out.is_conj()
    same(out, to(c, "torch", copy=True))


# -- traced: containers ----------------------------------------------------------------------


def test_containers_keep_their_structure_and_pass_other_leaves_through() -> None:
    x = np.arange(4, dtype=np.float32)
    t = torch.ones(2)
    batch = {"x": x, "t": t, "n": 3, "s": "name", "none": None, "nested": [x, (t, 1.5)]}

    def f(b: Any) -> Any:
        return to(b, "torch")

    out, eager = traced(f, batch), f(batch)
    assert list(out) == list(eager)
    same(out["x"], eager["x"])
    assert out["t"] is t and eager["t"] is t
    assert (out["n"], out["s"], out["none"]) == (3, "name", None)
    assert type(out["nested"]) is list and type(out["nested"][1]) is tuple
    same(out["nested"][0], eager["nested"][0])
    assert out["nested"][1][0] is t and out["nested"][1][1] == 1.5


# -- not traced: a graph break that says why, and eager results ------------------------------


def _untraced(fn: Callable[..., Any], args: tuple[Any, ...], reason: str) -> tuple[Breaks, Any]:
    """Check ``fn(*args)`` breaks the graph at to() with ``reason``, and that fullgraph=True
    raises dynamo's error carrying it; returns the count and the non-fullgraph result."""
    seen = Breaks(fn, *args)
    assert seen.counted == 1, seen.counted_reasons  # at to(), none inside eager to()
    assert reason in seen.counted_reasons[0]
    with pytest.raises(torch._dynamo.exc.Unsupported, match=r"interop_core\.to\(\)"):
        torch.compile(fn, fullgraph=True, backend="eager")(*args)
    torch._dynamo.reset()
    return seen, torch.compile(fn, backend="eager")(*args)


def test_torch_to_numpy_breaks_the_graph_and_returns_the_eager_array() -> None:
    t = torch.arange(4.0)

    def f(a: Any) -> Any:
        return to(a * 2, "numpy")

    _, out = _untraced(f, (t,), "only conversions to torch are traced")
    assert type(out) is np.ndarray and out.tolist() == [0.0, 2.0, 4.0, 6.0]


def test_other_frameworks_arrays_break_the_graph() -> None:
    if not available("jax"):
        pytest.skip("jax is not installed")
    jnp = need("jax").numpy
    j = jnp.arange(4.0, dtype=jnp.float32)

    def f(a: Any, b: Any) -> Any:
        return to(b, "torch") + a

    _, out = _untraced(f, (torch.ones(4), j), "only numpy arrays and torch tensors")
    assert out.tolist() == [1.0, 2.0, 3.0, 4.0] and out.dtype == torch.float32

    def g(a: Any, batch: Any) -> Any:  # one leaf the stand-in cannot take: all left to eager
        return to(batch, "torch")["j"] + a

    _, out = _untraced(g, (torch.ones(4), {"j": j, "x": np.ones(4)}), "only numpy arrays")
    assert out.tolist() == [1.0, 2.0, 3.0, 4.0]


def test_numpy_copy_false_is_left_to_eager_which_shares() -> None:
    x = np.arange(3, dtype=np.float32)

    def f(a: Any) -> Any:
        return to(a, "torch", copy=False)

    _, out = _untraced(f, (x,), "copy=False of a numpy array is not traced")
    assert out.data_ptr() == x.ctypes.data  # what eager to() gives: zero-copy


def test_dynamo_makes_a_read_only_numpy_input_writable() -> None:
    """A fact the design respects (torch 2.13, pytorch/pytorch#112524): tracing a function
    of a read-only array sets the array's writeable flag, for good. Eager to() (left the
    copy=False call) then sees a writable array and shares it; the traced to() copies."""
    x = np.arange(3, dtype=np.float32)
    x.flags.writeable = False
    with pytest.raises(CopyRequiredError):
        to(x, "torch", copy=False)

    def f(a: Any) -> Any:
        return to(a, "torch", copy=False)

    out = torch.compile(f, backend="eager")(x)
    assert x.flags.writeable  # dynamo's doing, while tracing
    assert out.data_ptr() == x.ctypes.data


def test_device_moves_break_the_graph() -> None:
    t = torch.ones(2)

    def f(a: Any) -> Any:
        return to(a + 1, "torch", device="cuda")

    if torch.cuda.is_available():
        out = torch.compile(f, backend="eager")(t)
        assert out.device.type == "cuda" and out.cpu().tolist() == [2.0, 2.0]
    else:  # eager to() says there is no such device
        with pytest.raises(NoRouteError):
            torch.compile(f, backend="eager")(t)
    reasons = [" ".join(str(k).split()) for k in counters["graph_break"]]
    assert any("device moves are not traced" in r for r in reasons), reasons


@pytest.mark.parametrize(
    ("kwargs", "error", "reason"),
    [
        ({"target": "torchh"}, UnknownFrameworkError, "to() would raise"),
        pytest.param({"copy": 1}, OptionError, "to() would raise", marks=pytest.mark.illtyped),
        ({"dtype": "float33"}, OptionError, "to() would raise"),
        ({"dtype": "float64", "copy": False}, CopyRequiredError, "to() would raise"),
        ({"shards": 2}, OptionError, "options other than"),
    ],
    ids=["target", "copy=1", "dtype", "cast-copy=False", "option"],
)
def test_invalid_calls_raise_the_eager_error(
    kwargs: dict[str, Any], error: type, reason: str
) -> None:
    target = kwargs.pop("target", "torch")

    def f(a: Any) -> Any:
        return to(a + 1, target, **kwargs)

    with pytest.raises(error) as eager:
        f(torch.ones(2))
    with pytest.raises(error) as compiled:  # the graph breaks; eager to() raises its error
        torch.compile(f, backend="eager")(torch.ones(2))
    assert str(compiled.value) == str(eager.value)
    assert any(reason in " ".join(str(k).split()) for k in counters["graph_break"])
    torch._dynamo.reset()
    with pytest.raises(torch._dynamo.exc.Unsupported, match=r"interop_core\.to\(\)"):
        torch.compile(f, fullgraph=True, backend="eager")(torch.ones(2))


def test_an_array_free_call_raises_as_in_eager() -> None:
    def f(a: Any) -> Any:
        return a + 1, to([1, 2], "torch")

    with pytest.raises(interop_core.NotAnArrayError):
        torch.compile(f, backend="eager")(torch.ones(1))


def test_a_container_too_deep_for_the_stand_in_is_left_to_eager() -> None:
    deep: Any = np.ones(2)
    for _ in range(torch_compile._MAX_DEPTH + 2):
        deep = [deep]

    def f(a: Any, b: Any) -> Any:
        out = to(b, "torch")
        for _ in range(torch_compile._MAX_DEPTH + 2):
            out = out[0]
        return out + a

    seen = Breaks(f, torch.zeros(2), deep)
    assert any("to() would raise" in r for r in seen.counted_reasons)
    assert torch.compile(f, backend="eager")(torch.zeros(2), deep).tolist() == [1.0, 1.0]


def test_eager_to_inside_a_compiled_function_runs_as_in_eager() -> None:
    """A call left to eager to() runs while dynamo watches new frames: the engine's and the
    plugins' frames are skipped, not compiled (compiled, the torch copy's numpy-backed
    buffer failed on fake tensors: a ConversionError before the registration)."""

    class Tag:
        pass

    tag, t = Tag(), torch.arange(6.0)

    def f(a: Any, batch: Any) -> Any:  # an unknown leaf: the whole call is left to eager
        out = to(batch, "torch", copy=True)
        return out["t"] + a, out["tag"]

    seen = Breaks(f, torch.ones(6), {"t": t, "tag": tag})
    assert seen.counted == 1 and "only numpy arrays" in seen.counted_reasons[0]
    total, passed = torch.compile(f, backend="eager")(torch.ones(6), {"t": t, "tag": tag})
    assert total.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0] and passed is tag


def test_a_container_that_contains_itself_raises_as_in_eager() -> None:
    cycle: list[Any] = [np.ones(2)]
    cycle.append(cycle)

    def f(a: Any, b: Any) -> Any:
        return a + 1, to(b, "torch")

    with pytest.raises(interop_core.ContainerError) as eager:
        to(cycle, "torch")
    with pytest.raises(interop_core.ContainerError) as compiled:
        torch.compile(f, backend="eager")(torch.ones(1), cycle)
    assert str(compiled.value) == str(eager.value)


# -- registration ----------------------------------------------------------------------------


def test_eager_to_is_unchanged_by_the_registration() -> None:
    """The stand-in is dynamo's business only: eager to() is the same object, sharing memory
    as before (the warm path is not touched)."""
    assert torch_compile.installed()
    assert interop_core.to is to
    x = np.arange(3, dtype=np.float32)
    for _ in range(3):  # cold, then warm
        assert to(x, "torch").data_ptr() == x.ctypes.data


def test_registration_survives_dynamo_reset() -> None:
    torch._dynamo.reset()
    same(traced(lambda a: to(a, "torch"), np.ones(2)), torch.ones(2, dtype=torch.float64))


def _fresh(code: str, pure: bool) -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter (the registration is once per process); it prints
    a JSON object as its last line."""
    env = dict(os.environ, INTEROP_CORE_PURE_PYTHON="1" if pure else "0")
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


@pytest.mark.parametrize("pure", [False, True], ids=["warm-path-in-C", "pure-python"])
def test_registration_follows_the_import_of_dynamo_in_a_fresh_process(pure: bool) -> None:
    """to() before torch.compile: the torch plugin loads without importing torch._dynamo
    (nor does any to() call import it); importing it later registers the stand-in, before
    the first trace."""
    result = _fresh(
        """
        import importlib.util, json, sys
        import numpy as np, torch
        from interop_core import to
        x = np.arange(3, dtype=np.float32)
        to(x, "numpy"), to(x, "torch"), to(torch.ones(1), "numpy")
        before = ["torch._dynamo" in sys.modules]
        from interop_plugins.frameworks import torch_compile
        armed = [torch_compile.installed()]
        f = torch.compile(lambda a: to(a, "torch") * 2, fullgraph=True, backend="eager")
        out = f(x)
        print(json.dumps({"dynamo before": before, "installed before": armed,
                          "installed": [torch_compile.installed()], "out": out.tolist(),
                          "c": [type(to).__name__ == "Warm"],
                          "built": [importlib.util.find_spec("interop_core._warm") is not None]}))
        """,
        pure,
    )
    assert result["dynamo before"] == [False]
    assert result["installed before"] == [False]
    assert result["installed"] == [True]
    assert result["out"] == [0.0, 2.0, 4.0]
    if not pure and result["built"] == [False]:  # a child that imports the sources
        pytest.skip("the C extension is not built where the child imports interop_core")
    assert result["c"] == [not pure]


@pytest.mark.parametrize("pure", [False, True], ids=["warm-path-in-C", "pure-python"])
def test_enable_covers_a_first_to_inside_the_compiled_function(pure: bool) -> None:
    """The first to() of the process inside a fullgraph compile: torch.compile imported dynamo
    after the torch plugin could watch for it, so enable() registers (the README says)."""
    result = _fresh(
        """
        import json
        import numpy as np, torch
        from interop_core import to
        from interop_plugins.frameworks.torch_compile import enable
        f = torch.compile(lambda a: to(a, "torch") + 1, fullgraph=True, backend="eager")
        enable()
        print(json.dumps({"out": f(np.zeros(2)).tolist()}))
        """,
        pure,
    )
    assert result["out"] == [1.0, 1.0]


def test_to_calls_that_do_not_involve_torch_import_neither_torch_nor_dynamo() -> None:
    result = _fresh(
        """
        import json, sys
        import numpy as np
        from interop_core import to
        to(np.ones(2), "numpy")
        print(json.dumps({"loaded": [m for m in ("torch", "torch._dynamo") if m in sys.modules],
                          "hook": [type(f).__name__ for f in sys.meta_path
                                   if type(f).__name__ == "_AfterDynamo"]}))
        """,
        pure=False,
    )
    assert result == {"loaded": [], "hook": []}
