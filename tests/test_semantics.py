"""Semantics of ``to()`` and ``explain()``: copy=, containers, names, routes, lifetime, x64.

Every claim of zero-copy is checked against data pointers read with each framework's own
API, and every converted value is compared with the source's values.
"""

from __future__ import annotations

import gc
from collections import OrderedDict, defaultdict, namedtuple
from typing import Any

import adapters
import pytest
from adapters import ALIGNMENT, aligned_numpy
from conftest import exchange_names, frameworks, need

import interop_core
from interop_core import (
    CopyRequiredError,
    InteropError,
    NoRouteError,
    Route,
    Step,
    default_registry,
    explain,
    to,
)
from interop_core.testing import isolated_registry

#: The registry's frameworks (conftest.frameworks), a plugin's included, for what every
#: framework must do; the built-ins' pairs for what they promise each other (zero-copy).
FRAMEWORKS = frameworks()
PAIRS = [(s, d) for s in FRAMEWORKS for d in FRAMEWORKS if s != d]
BUILTIN = frameworks(builtin=True)
BUILTIN_PAIRS = [(s, d) for s in BUILTIN for d in BUILTIN if s != d]


# -- helpers ------------------------------------------------------------------------------


def build(fw: str, values: Any) -> Any:
    """An array of framework ``fw`` holding the numpy ``values`` (C-contiguous, aligned)."""
    if fw == "numpy":
        return aligned_numpy(values)
    if fw == "torch":
        return need("torch").tensor(values)
    if fw == "jax":
        return need("jax").numpy.asarray(values)
    if fw == "tensorflow":
        return need("tensorflow").constant(values)
    return adapters.make_by_example(fw, values, "0d" if values.ndim == 0 else "contiguous")


def to_numpy(x: Any) -> Any:
    """The values of ``x`` as a numpy array, read with the framework's own API."""
    np = need("numpy")
    if isinstance(x, np.ndarray):
        return x
    mod = type(x).__module__
    if mod.startswith("torch"):
        return x.detach().numpy()
    if mod.startswith(("jax", "jaxlib", "tensorflow")):
        return np.asarray(x)
    return adapters.to_numpy(x)  # a plugin's framework


def ptr(x: Any) -> int:
    """Address of the first element of ``x``, read with its framework's own API."""
    return adapters.own_ptr(x)


def framework_of(x: Any) -> str:
    """Which framework ``x`` belongs to, by isinstance against the framework types."""
    np = need("numpy")
    if isinstance(x, np.ndarray):
        return "numpy"
    mod = type(x).__module__
    if mod.startswith("torch"):
        return "torch"
    if mod.startswith(("jax", "jaxlib")):
        return "jax"
    if mod.startswith("tensorflow"):
        return "tensorflow"
    spec = default_registry().ready().detect(x)  # a plugin's framework
    assert spec is not None, f"{type(x)} is no framework's array"
    return spec.name


def example_values() -> Any:
    np = need("numpy")
    return np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5


# -- copy semantics -----------------------------------------------------------------------


@pytest.mark.parametrize(("src", "dst"), BUILTIN_PAIRS)
def test_copy_none_and_false_share_memory(src: str, dst: str) -> None:
    """Contiguous aligned float32 crosses every pair zero-copy under copy=None and False."""
    np = need("numpy")
    need(src), need(dst)
    values = example_values()
    x = build(src, values)
    for copy in (None, False):
        y = to(x, dst, copy=copy)
        assert framework_of(y) == dst
        assert ptr(y) == ptr(x), f"copy={copy}: {src}->{dst} did not share memory"
        np.testing.assert_array_equal(to_numpy(y), values)
        assert str(to_numpy(y).dtype) == "float32"


@pytest.mark.parametrize(("src", "dst"), [(f, f) for f in FRAMEWORKS] + PAIRS)
def test_copy_true_never_shares(src: str, dst: str) -> None:
    """copy=True gives a result that does not share the input's memory, same values."""
    need(src), need(dst)
    np = need("numpy")
    if not (adapters.holds(src, "float32") and adapters.holds(dst, "float32")):
        pytest.skip(f"{src} or {dst} does not hold float32")
    values = example_values()
    x = build(src, values)
    y = to(x, dst, copy=True)
    assert framework_of(y) == dst
    assert ptr(y) != ptr(x)
    np.testing.assert_array_equal(to_numpy(y), values)
    route = explain(x, dst, copy=True)
    assert route.copies >= 1 and not route.zero_copy


def test_same_framework_copy_none_returns_the_object(np: Any) -> None:
    x = aligned_numpy(example_values())
    assert to(x, "numpy") is x
    assert to(x, "numpy", copy=False) is x
    assert explain(x, "numpy").steps == ()


def test_copy_true_result_is_independent(np: Any, torch: Any) -> None:
    """Writes to the source do not reach a copy=True result."""
    a = aligned_numpy(example_values())
    t = to(a, "torch", copy=True)
    a[0, 0] = 1000.0
    assert float(t[0, 0]) == -5.5


def test_copy_required_error_is_buffer_error_and_says_why(np: Any, torch: Any) -> None:
    neg = np.arange(6, dtype=np.float32)[::-1]
    with pytest.raises(CopyRequiredError) as info:
        to(neg, "torch", copy=False)
    err = info.value
    assert isinstance(err, BufferError)
    assert isinstance(err, InteropError)
    msg = str(err)
    assert "negative strides" in msg
    assert "torch.from_numpy" in msg and "interop_plugins.exchange.dlpack" in msg
    assert "copy=None" in msg  # says what to do next
    assert any(r[0] == "torch.from_numpy" and "negative" in r[3] for r in err.refused)


def test_copy_none_copies_negative_strides_with_right_values(np: Any, torch: Any) -> None:
    src = np.arange(6, dtype=np.float32)
    neg = src[::-1]
    t = to(neg, "torch")
    assert isinstance(t, torch.Tensor)
    np.testing.assert_array_equal(t.numpy(), neg)
    assert t.data_ptr() != src.ctypes.data and t.data_ptr() != neg.ctypes.data


def test_copy_false_strided_torch_to_tensorflow_raises(torch: Any, tf: Any) -> None:
    t = torch.arange(12.0).reshape(3, 4)[:, ::2]
    with pytest.raises(CopyRequiredError, match="C-contiguous"):
        to(t, "tensorflow", copy=False)
    out = to(t, "tensorflow")
    need("numpy").testing.assert_array_equal(out.numpy(), t.numpy())


def test_copy_false_misaligned_numpy_to_jax_raises(np: Any, jax: Any) -> None:
    mis = aligned_numpy(np.arange(17, dtype=np.float32))[1:]
    assert mis.ctypes.data % ALIGNMENT != 0
    with pytest.raises(CopyRequiredError, match="64-byte aligned"):
        to(mis, "jax", copy=False)
    out = to(mis, "jax")
    np.testing.assert_array_equal(np.asarray(out), mis)


# -- read-only numpy ----------------------------------------------------------------------


def test_readonly_numpy_to_torch_copies_and_copy_false_is_refused(np: Any, torch: Any) -> None:
    a = aligned_numpy(example_values())
    a.flags.writeable = False
    t = to(a, "torch")
    assert t.data_ptr() != a.ctypes.data
    np.testing.assert_array_equal(t.numpy(), a)
    route = explain(a, "torch")
    assert route.copies == 1
    assert "read-only" in str(route)
    # torch cannot mark a tensor read-only: copy=False cannot be honoured safely.
    with pytest.raises(CopyRequiredError, match="read-only"):
        to(a, "torch", copy=False)
    with pytest.raises(CopyRequiredError, match="read-only"):
        explain(a, "torch", copy=False)


# -- containers ---------------------------------------------------------------------------

Pair = namedtuple("Pair", ["left", "right"])


def test_containers_keep_structure_and_leaves(np: Any, torch: Any) -> None:
    a = aligned_numpy(example_values())
    b = aligned_numpy(np.arange(3, dtype=np.int32))
    c = aligned_numpy(np.ones((2, 2), dtype=np.float64))
    marker, text, number = object(), "label", 1.5
    ordered = OrderedDict([("z", b), ("a", text)])
    obj = {
        "a": a,
        "list": [b, 3, text, None, marker],
        "tuple": (c, Pair(a, number)),
        "nested": {"deeper": [(b,), {"x": c}]},
        "ordered": ordered,
    }
    out = to(obj, "torch")
    assert type(out) is dict and list(out) == list(obj)
    assert isinstance(out["a"], torch.Tensor) and out["a"].data_ptr() == a.ctypes.data
    np.testing.assert_array_equal(out["a"].numpy(), a)
    lst = out["list"]
    assert type(lst) is list and len(lst) == 5
    assert isinstance(lst[0], torch.Tensor) and lst[0].dtype == torch.int32
    np.testing.assert_array_equal(lst[0].numpy(), b)
    assert lst[1] == 3 and lst[2] is text and lst[3] is None and lst[4] is marker
    tup = out["tuple"]
    assert type(tup) is tuple and len(tup) == 2
    assert tup[0].dtype == torch.float64
    assert type(tup[1]) is Pair and tup[1]._fields == ("left", "right")
    assert isinstance(tup[1].left, torch.Tensor) and tup[1].right is number
    deep = out["nested"]["deeper"]
    assert type(deep[0]) is tuple and isinstance(deep[0][0], torch.Tensor)
    assert isinstance(deep[1]["x"], torch.Tensor)
    assert type(out["ordered"]) is OrderedDict and list(out["ordered"]) == ["z", "a"]
    assert out["ordered"]["a"] is text
    # the input container is untouched
    assert obj["a"] is a and obj["list"][0] is b


def test_defaultdict_keeps_its_factory(np: Any, torch: Any) -> None:
    d: defaultdict[str, Any] = defaultdict(list)
    d["x"] = aligned_numpy(example_values())
    out = to(d, "torch")
    assert type(out) is defaultdict and out.default_factory is list
    assert isinstance(out["x"], torch.Tensor)


def test_container_with_arrays_of_several_frameworks(np: Any, torch: Any, jax: Any) -> None:
    values = example_values()
    obj = [build("numpy", values), build("torch", values), build("jax", values)]
    out = to(obj, "numpy")
    for y in out:
        assert isinstance(y, np.ndarray)
        np.testing.assert_array_equal(y, values)
    assert [ptr(y) for y in out] == [ptr(x) for x in obj]


def test_explain_container_mirrors_structure(np: Any, torch: Any) -> None:
    a = aligned_numpy(example_values())
    routes = explain({"a": a, "b": (a, "tag"), "c": Pair(a, 1)}, "torch")
    assert isinstance(routes["a"], Route) and routes["a"].zero_copy
    assert type(routes["b"]) is tuple and routes["b"][1] is None
    assert isinstance(routes["b"][0], Route)
    assert type(routes["c"]) is Pair and routes["c"].right is None


# -- names and aliases --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "fw"),
    [
        ("numpy", "numpy"), ("np", "numpy"), ("NumPy", "numpy"), ("NP", "numpy"),
        ("torch", "torch"), ("pytorch", "torch"), ("PyTorch", "torch"), ("TORCH", "torch"),
        ("jax", "jax"), ("JAX", "jax"),
        ("tensorflow", "tensorflow"), ("tf", "tensorflow"), ("TensorFlow", "tensorflow"),
        ("TF", "tensorflow"),
    ],
)  # fmt: skip
def test_names_and_aliases_any_case(target: str, fw: str) -> None:
    need(fw)
    a = aligned_numpy(example_values())
    y = to(a, target)
    assert framework_of(y) == fw
    need("numpy").testing.assert_array_equal(to_numpy(y), a)
    assert explain(a, target).target.startswith(fw)


@pytest.mark.parametrize(
    ("module", "fw"),
    [("numpy", "numpy"), ("torch", "torch"), ("jax", "jax"), ("jax.numpy", "jax"),
     ("tensorflow", "tensorflow")],
)  # fmt: skip
def test_framework_module_as_target(module: str, fw: str) -> None:
    import importlib

    need(fw)
    mod = importlib.import_module(module)
    a = aligned_numpy(example_values())
    y = to(a, mod)
    assert framework_of(y) == fw
    assert ptr(y) == ptr(a)


# -- explain ------------------------------------------------------------------------------


def test_explain_route_fields_zero_copy(np: Any, torch: Any) -> None:
    a = aligned_numpy(example_values())
    route = explain(a, "torch")
    assert isinstance(route, Route)
    assert route.zero_copy and route.copies == 0 and route.bytes_copied == 0
    assert len(route.steps) == 1
    step = route.steps[0]
    assert isinstance(step, Step)
    assert step.converter == exchange_names()[0]
    assert step.plugin == "interop_plugins.exchange.dlpack"
    assert step.zero_copy
    assert step.source.startswith("numpy") and step.target.startswith("torch")
    text = str(route)
    assert (
        "zero-copy" in text
        and exchange_names()[0] in text
        and "interop_plugins.exchange.dlpack" in text
    )


def _check_copy_route(route: Route, nbytes: int, why: str) -> None:
    assert not route.zero_copy
    assert route.copies == 1
    assert route.bytes_copied == nbytes
    assert sum(not s.zero_copy for s in route.steps) == 1
    text = str(route)
    for step in route.steps:
        assert step.converter in text and step.plugin in text
    assert "COPY" in text
    assert why in text, text


def test_explain_negative_strides_numpy_to_torch(np: Any, torch: Any) -> None:
    neg = np.arange(6, dtype=np.float32)[::-1]
    route = explain(neg, "torch")
    _check_copy_route(route, neg.nbytes, "negative strides")
    assert route.steps[-1].target.startswith("torch")


def test_explain_strided_torch_to_tensorflow(torch: Any, tf: Any) -> None:
    t = torch.arange(12.0).reshape(3, 4)[:, ::2]
    route = explain(t, "tensorflow")
    _check_copy_route(route, 6 * 4, "C-contiguous")
    assert route.steps[-1].target.startswith("tensorflow")


def test_explain_misaligned_numpy_to_jax(np: Any, jax: Any) -> None:
    mis = aligned_numpy(np.arange(17, dtype=np.float32))[1:]
    route = explain(mis, "jax")
    _check_copy_route(route, mis.nbytes, "64-byte aligned")
    aligned = aligned_numpy(np.arange(16, dtype=np.float32))
    assert explain(aligned, "jax").zero_copy


def test_explain_jax_to_torch_alias_note(jax: Any, torch: Any) -> None:
    x = jax.numpy.arange(4.0)
    route = explain(x, "torch")
    assert route.zero_copy
    assert any("alias" in n and "immutable" in n for n in route.notes), route.notes
    assert "note:" in str(route)


@pytest.mark.parametrize("dst", [f for f in FRAMEWORKS if f != "torch"])
def test_explain_requires_grad_detach_note(dst: str) -> None:
    torch = need("torch")
    need(dst)
    t = torch.arange(4.0, requires_grad=True)
    route = explain(t, dst)
    assert any("detached" in n for n in route.notes), route.notes


def test_explain_plain_tensor_has_no_notes(np: Any, torch: Any) -> None:
    assert explain(torch.arange(4.0), "numpy").notes == ()


def test_explain_never_converts(np: Any, torch: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """explain() plans and binds, but never calls a converter; to() does."""
    from interop_plugins.exchange import dlpack

    calls: list[Any] = []

    def spying(load: Any) -> Any:
        def spy_load() -> Any:
            convert = load()

            def spy(x: Any) -> Any:
                calls.append(x)
                return convert(x)

            return spy

        return spy_load

    # numpy -> torch runs one of these (the C exchange where the extension is built)
    for name in ("_torch_from_numpy_safe", "_torch_from_numpy_c"):
        monkeypatch.setattr(dlpack, name, spying(getattr(dlpack, name)))
    a = aligned_numpy(example_values())
    before = (a.ctypes.data, a.flags.writeable, a.copy())
    with isolated_registry(builtins=True):
        route = explain(a, "torch")
        assert route.zero_copy and calls == []
        assert (a.ctypes.data, a.flags.writeable) == before[:2]
        np.testing.assert_array_equal(a, before[2])
        t = to(a, "torch")
        assert len(calls) == 1 and calls[0] is a
        assert t.data_ptr() == a.ctypes.data


def test_explain_never_converts_a_readonly_source(np: Any, torch: Any) -> None:
    a = aligned_numpy(example_values())
    a.flags.writeable = False
    explain(a, "torch")
    assert not a.flags.writeable  # not made writable
    assert a.base is not None  # still the same view of our buffer


# -- lifetime and writes ------------------------------------------------------------------


def test_zero_copy_results_outlive_their_sources() -> None:
    """Every zero-copy pair: delete the source, collect, and the result still reads right."""
    np = need("numpy")
    for fw in BUILTIN:
        need(fw)
    values = np.arange(1 << 16, dtype=np.float32)  # 256 KiB: freed memory is unmapped
    results = {}
    for src, dst in BUILTIN_PAIRS:
        x = build(src, values)
        assert explain(x, dst).zero_copy, f"{src}->{dst}"
        y = to(x, dst)
        assert ptr(y) == ptr(x), f"{src}->{dst} claimed zero-copy but copied"
        results[src, dst] = y
        del x
    gc.collect()
    junk = [np.full(1 << 16, -1.0, np.float32) for _ in range(16)]  # reuse freed memory
    for (src, dst), y in results.items():
        np.testing.assert_array_equal(to_numpy(y), values, err_msg=f"{src}->{dst}")
    del junk


def test_zero_copy_torch_sees_writes_to_numpy(np: Any, torch: Any) -> None:
    a = aligned_numpy(example_values())
    t = to(a, "torch")
    assert t.data_ptr() == a.ctypes.data
    a[1, 2] = 123.0
    assert float(t[1, 2]) == 123.0
    t[0, 0] = -7.0  # and the other way round
    assert a[0, 0] == -7.0


def test_zero_copy_numpy_sees_writes_to_torch(np: Any, torch: Any) -> None:
    t = torch.arange(6.0)
    a = to(t, "numpy")
    assert a.ctypes.data == t.data_ptr()
    t[3] = 99.0
    assert a[3] == 99.0


# -- JAX x64 ------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["int64", "float64"])
@pytest.mark.parametrize("src", [f for f in FRAMEWORKS if f != "jax"])
def test_jax_x64_off_refuses_then_on_converts_exactly(src: str, dtype: str) -> None:
    np = need("numpy")
    jax = need("jax")
    need(src)
    if not adapters.holds(src, dtype):
        pytest.skip(f"{src} does not hold {dtype}")
    values = np.array([2**40 + 1, -3, 7], dtype=dtype)
    if dtype == "float64":
        values = np.array([0.1, 1e300, -2.5e-310], dtype=dtype)
    x = build(src, values)
    old = bool(jax.config.jax_enable_x64)
    try:
        jax.config.update("jax_enable_x64", False)
        with pytest.raises(NoRouteError, match="jax_enable_x64"):
            to(x, "jax")
        with pytest.raises(NoRouteError, match="jax_enable_x64"):
            explain(x, "jax")
        jax.config.update("jax_enable_x64", True)
        y = to(x, "jax")
        assert isinstance(y, jax.Array) and str(y.dtype) == dtype
        np.testing.assert_array_equal(np.asarray(y), values)
        jax.config.update("jax_enable_x64", False)
        with pytest.raises(NoRouteError, match="jax_enable_x64"):
            to(x, "jax")  # the plan cache follows the flag back
    finally:
        jax.config.update("jax_enable_x64", old)


def test_public_names_exported() -> None:
    for name in ("to", "explain", "Route", "Step", "CopyRequiredError", "InteropError"):
        assert hasattr(interop_core, name)


def test_a_copy_later_in_the_route_voids_an_alias_note(jax: Any, torch: Any) -> None:
    x = jax.numpy.ones(4, dtype="float32")
    shared, copied = explain(x, "torch"), explain(x, "torch", copy=True)
    assert shared.zero_copy and any("writable alias of JAX memory" in n for n in shared.notes)
    # copy=True: the alias met on the way is copied; the result aliases nothing.
    assert copied.copies == 1 and not any("alias" in n for n in copied.notes), copied.notes
    assert "writable alias of JAX memory" in str(copied.steps[0])  # the step still says it
