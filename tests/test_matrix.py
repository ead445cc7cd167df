"""The conversion matrix: every ordered framework pair x shared dtype x source layout case.

For each case ``to(x, target)`` must return an array of the target framework with the
source's dtype, shape and values; whenever ``explain()`` promises zero-copy the data
pointers are equal (and they differ whenever it promises a copy); where FACTS.md says a
zero-copy path exists the route takes it, and where the target cannot share (or must not,
rule 8) the route copies. ``copy=True`` never shares memory; ``copy=False`` shares or raises
CopyRequiredError. 64-bit dtypes into JAX without x64 raise NoRouteError instead of narrowing.
"""

from __future__ import annotations

from typing import Any

import adapters
import pytest
from adapters import FRAMEWORKS, X64_DTYPES, layouts_of
from conftest import available, frameworks, need

import interop_core
from interop_core import CopyRequiredError, NoRouteError, explain, to
from interop_core.testing import framework_of, shares_memory

Case = tuple[str, str, str, str]  # (source, target, dtype, layout)

#: The frameworks of interop_core's own plugins: what FACTS.md states is about them.
BUILTIN = frameworks(builtin=True)


def _cases() -> list[Any]:
    out = []
    for src in FRAMEWORKS:
        for dst in FRAMEWORKS:
            for layout in layouts_of(src):
                if layout == "0d" and dst in adapters.NO_0D:
                    continue  # refused (test_arrow_target.py)
                for dtype in adapters.shared_dtypes(src, dst):
                    out.append(pytest.param((src, dst, dtype, layout),
                                            id=f"{src}->{dst}-{dtype}-{layout}"))  # fmt: skip
    return out


CASES = _cases()

#: Layouts no TensorFlow tensor can alias (TF imports only C-contiguous buffers).
_NOT_C = frozenset({"transposed", "step", "negative", "broadcast"})
#: Layouts JAX cannot import without a copy (non-compact strides) or at all zero-copy (JAX on
#: CPU shares only 64-byte aligned buffers).
_JAX_COPIES = frozenset({"step", "negative", "broadcast", "misaligned"})


def expected_zero_copy(case: Case, copy: bool | None = None) -> bool | None:
    """What FACTS.md says of this case: True = a zero-copy path exists and must be taken,
    False = the route must copy, None = either is acceptable (or sharing is meaningless)."""
    src, dst, dtype, layout = case
    if layout == "empty":
        return None  # no bytes to share: data pointers are meaningless
    if src not in BUILTIN or dst not in BUILTIN:
        return None  # a plugin's framework: FACTS.md says nothing of it
    if src == dst:
        return True  # nothing to convert: the object itself
    if dst == "tensorflow" and layout in _NOT_C:
        return False
    if dst == "pyarrow" and layout in _NOT_C:
        return False  # Arrow shares only C-contiguous memory
    if "pyarrow" in (src, dst) and dtype == "bool":
        return False  # Arrow's booleans are bits
    if dst == "tensorflow" and layout == "misaligned":
        return False  # TF imports it, but its ops then abort (Check failed: IsAligned())
    if dst == "jax" and layout in _JAX_COPIES:
        return False
    if src == "numpy" and dst == "torch":
        if layout == "negative":
            return False  # torch has no negative strides (and aborts on them via DLPack)
        if layout == "readonly":
            return False  # rule 8: torch cannot mark a tensor read-only, so it never aliases
    if layout == "readonly":
        return None  # numpy's capsule refuses read-only memory; other routes may differ
    if layout == "transposed" and dst == "jax":
        return None  # JAX imports F-order, but the plugin declines it on purpose
    if src == "numpy" and dst == "jax" and dtype == "bfloat16":
        return None  # numpy cannot export bfloat16 by DLPack; only device_put aliases it
    return True


def _build(case: Case) -> tuple[Any, Any]:
    src, dst, dtype, layout = case
    need(src)
    need(dst)
    if dtype == "bfloat16" and src == "numpy":
        adapters.need_ml_dtypes()
    return adapters.make(src, dtype, layout)


def _check_result(case: Case, x: Any, ref: Any, y: Any) -> None:
    """``y`` is an array of the target with the source's dtype, shape and values."""
    _, dst, dtype, _ = case
    assert framework_of(y) == dst
    assert adapters.dtype_name(y) == dtype
    assert adapters.shape_of(y) == ref.shape
    adapters.assert_same_array(ref, adapters.to_numpy(y))
    adapters.assert_same_array(ref, adapters.to_numpy(x))  # the source is untouched


def _sized(ref: Any) -> bool:
    return bool(ref.size)


@pytest.mark.parametrize("case", CASES)
def test_convert(case: Case) -> None:
    """copy=None: values survive; zero_copy in explain() iff the pointers are equal."""
    x, ref = _build(case)
    route = explain(x, case[1])
    assert isinstance(route, interop_core.Route)
    y = to(x, case[1])
    _check_result(case, x, ref, y)
    y_warm = to(x, case[1])  # the second call takes the cached (warm) path
    _check_result(case, x, ref, y_warm)
    if _sized(ref):
        assert shares_memory(x, y) == route.zero_copy, str(route)
        assert shares_memory(x, y_warm) == route.zero_copy, f"warm path differs:\n{route}"
    expected = expected_zero_copy(case)
    if expected is not None:
        assert route.zero_copy == expected, f"FACTS expects zero_copy={expected}:\n{route}"


@pytest.mark.parametrize("case", CASES)
def test_copy_true(case: Case) -> None:
    """copy=True: a route with at least one copy, and a result that shares nothing."""
    x, ref = _build(case)
    route = explain(x, case[1], copy=True)
    assert not route.zero_copy and route.copies >= 1, str(route)
    y = to(x, case[1], copy=True)
    _check_result(case, x, ref, y)
    if _sized(ref):
        assert not shares_memory(x, y), str(route)


@pytest.mark.parametrize("case", CASES)
def test_copy_false(case: Case) -> None:
    """copy=False: a result sharing the source's memory, or CopyRequiredError (a BufferError)."""
    x, ref = _build(case)
    expected = expected_zero_copy(case, copy=False)
    try:
        y = to(x, case[1], copy=False)
    except CopyRequiredError as exc:
        assert isinstance(exc, BufferError)
        assert expected is not True, f"FACTS has a zero-copy path, yet copy=False raised: {exc}"
        with pytest.raises(CopyRequiredError):
            explain(x, case[1], copy=False)
        return
    route = explain(x, case[1], copy=False)
    assert route.zero_copy, str(route)
    assert expected is not False, f"copy=False returned although this case must copy:\n{route}"
    _check_result(case, x, ref, y)
    if _sized(ref):
        assert shares_memory(x, y), str(route)


# -- strides that flags and layout classes do not show ---------------------------------


def _odd(name: str) -> Any:
    """Arrays whose flags or layout class understate their strides."""
    np = need("numpy")
    if name == "numpy-negative-size1-dim":  # C_CONTIGUOUS is set, the row stride is negative
        return adapters.aligned_copy(np.array([[4.0, 5.0]], dtype=np.float32))[::-1]
    if name == "numpy-negative-empty":  # empty, with a negative stride
        return np.arange(6, dtype=np.float32).reshape(2, 3)[::-1, :0]
    if name == "numpy-broadcast-and-negative":  # stride 0 and a negative stride together
        row = np.arange(3, dtype=np.float32)[::-1]
        return np.lib.stride_tricks.as_strided(row, shape=(2, 3), strides=(0, row.strides[0]))
    if name == "numpy-empty-1d":
        return np.zeros(0, dtype=np.int16)
    if name == "numpy-size1-dim-transposed":  # both C and F flags set, strides (4, 8)
        return adapters.aligned_copy(np.array([[1.0, 2.0]], dtype=np.float32)).T
    if name == "torch-size1-dim-transposed":  # is_contiguous(), strides (1, 2)
        torch = need("torch")
        return torch.tensor([[1.0, 2.0]]).T
    raise ValueError(name)


_ODD = (
    "numpy-negative-size1-dim",
    "numpy-negative-empty",
    "numpy-broadcast-and-negative",
    "numpy-empty-1d",
    "numpy-size1-dim-transposed",
    "torch-size1-dim-transposed",
)


def _check_hop(x: Any, ref: Any, y: Any, target: str, route: Any) -> None:
    assert framework_of(y) == target
    adapters.assert_same_array(ref, adapters.to_numpy(y))
    if ref.size:
        assert shares_memory(x, y) == route.zero_copy, str(route)


@pytest.mark.parametrize("copy", [None, True, False], ids=lambda c: f"copy={c}")
@pytest.mark.parametrize("target", FRAMEWORKS)
@pytest.mark.parametrize("name", _ODD)
def test_odd_strides(name: str, target: str, copy: bool | None) -> None:
    """Strides hidden by flags or layout classes still convert correctly, and the result
    converts onwards to every framework as explain() says (zero-copy iff equal pointers)."""
    need(target)
    x = _odd(name)
    ref = adapters.to_numpy(x)
    if not adapters.holds(target, ref.dtype.name):
        pytest.skip(f"{target} does not hold {ref.dtype.name}")
    try:
        y = to(x, target, copy=copy)
    except CopyRequiredError:
        assert copy is False
        return
    route = explain(x, target, copy=copy)
    _check_hop(x, ref, y, target, route)
    if copy is not None:
        assert route.zero_copy == (not copy), str(route)
    for onward in FRAMEWORKS:
        if available(onward) and adapters.holds(onward, ref.dtype.name):
            _check_hop(y, ref, to(y, onward), onward, explain(y, onward))


# -- TensorFlow results must survive TensorFlow ops ---------------------------------------

_TF_OPS_SCRIPT = """
import numpy as np
import tensorflow as tf
from interop_core import to

def check(name, x):
    y = to(x, "tensorflow")
    print("converted", name, flush=True)
    assert float(tf.reduce_sum(y)) == float(np.asarray(x).sum())
    tf.raw_ops.DeepCopy(x=y)
    y + 1
    print("ok", name, flush=True)

for offset in (4, 16, 32):
    buf = np.empty(64 * 3, dtype=np.uint8)
    start = -buf.ctypes.data % 64 + offset
    x = buf[start : start + 64].view(np.float32)
    x[...] = np.arange(16)
    check(f"numpy 64-byte boundary + {offset} B", x)
check("numpy np.arange(4_000_000)", np.arange(4_000_000, dtype=np.float32))
try:
    import torch
except ImportError:
    torch = None
if torch is not None:
    check("torch storage offset 1", torch.arange(17, dtype=torch.float32)[1:])
print("ALL OK")
"""


def test_tensorflow_results_survive_tf_ops() -> None:
    """A TF tensor from ``to()`` works in TF ops, whatever the source's alignment (rule 7).

    TF imports a DLPack buffer at any address, but its kernels abort the interpreter
    ("Check failed: IsAligned()") on one that is not 64-byte aligned; runs in a subprocess.
    """
    import os
    import subprocess
    import sys

    need("numpy")
    need("tensorflow")
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    proc = subprocess.run(
        [sys.executable, "-c", _TF_OPS_SCRIPT],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    err = "\n".join(line for line in proc.stderr.splitlines() if not line.startswith("    @"))
    assert proc.returncode == 0 and "ALL OK" in proc.stdout, (
        f"exit code {proc.returncode}\nstdout:\n{proc.stdout}\nstderr (tail):\n{err[-1500:]}"
    )


# -- immutable sources -------------------------------------------------------------------

_IMMUTABLE_CASES = [
    pytest.param(src, dtype, layout, id=f"{src}-{dtype}-{layout}")
    for src in ("jax", "tensorflow")
    for dtype in adapters.dtypes_of(src)
    for layout in ("contiguous", "0d")
]


@pytest.mark.parametrize(("src", "dtype", "layout"), _IMMUTABLE_CASES)
def test_immutable_source_gives_readonly_numpy_view(src: str, dtype: str, layout: str) -> None:
    """A zero-copy numpy view of a JAX/TF buffer is read-only, as the route's note says.

    Writing through a writable view would silently change an immutable JAX/TF array.
    """
    np = need("numpy")
    need(src)
    if dtype == "bfloat16":
        adapters.need_ml_dtypes()
    x, ref = adapters.make(src, dtype, layout)
    route = explain(x, "numpy")
    y = to(x, "numpy")
    assert isinstance(y, np.ndarray)
    if shares_memory(x, y):
        assert not y.flags.writeable, f"writable alias of an immutable {src} buffer:\n{route}"
        assert any("read-only" in n for n in route.notes), str(route)
    adapters.assert_same_array(ref, adapters.to_numpy(x))


# -- 64-bit dtypes into JAX without x64 ----------------------------------------------------

_X64_CASES = [
    pytest.param(src, dtype, layout, copy, id=f"{src}-{dtype}-{layout}-copy={copy}")
    for src in FRAMEWORKS
    if src != "jax"
    for dtype in X64_DTYPES
    if adapters.holds(src, dtype)
    for layout in ("contiguous", "0d", "empty")
    if layout in layouts_of(src)
    for copy in (None, True, False)
]


@pytest.mark.parametrize(("src", "dtype", "layout", "copy"), _X64_CASES)
def test_x64_dtypes_into_jax_raise(src: str, dtype: str, layout: str, copy: bool | None) -> None:
    """Without jax_enable_x64 a 64-bit array into JAX raises NoRouteError, never narrows."""
    need(src)
    jax = need("jax")
    if jax.config.jax_enable_x64:
        pytest.skip("jax_enable_x64 is on: JAX holds 64-bit dtypes")
    x, _ = adapters.make(src, dtype, layout)
    with pytest.raises(NoRouteError, match="jax_enable_x64") as info:
        to(x, "jax", copy=copy)
    assert not isinstance(info.value, CopyRequiredError)
    with pytest.raises(NoRouteError, match="jax_enable_x64"):
        explain(x, "jax", copy=copy)


def test_matrix_covers_every_pair() -> None:
    """The matrix names every ordered pair of the registry's frameworks (16 with the four
    built-ins) and every layout each source can produce."""
    # Derived from the registry: a change to the specs must not shrink the matrix unseen.
    assert {"numpy", "torch", "jax", "tensorflow"} <= set(BUILTIN) <= set(FRAMEWORKS)
    pairs = {(c.values[0][0], c.values[0][1]) for c in CASES}
    assert pairs == {(a, b) for a in FRAMEWORKS for b in FRAMEWORKS}
    for src in FRAMEWORKS:
        layouts = layouts_of(src)
        assert {c.values[0][3] for c in CASES if c.values[0][0] == src} == set(layouts)
