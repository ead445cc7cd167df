"""Property tests: random numpy arrays (shapes, dtypes, slices, strides, flags) through ``to()``.

Round trips numpy -> X -> numpy keep dtype, shape and values; a route ``explain()`` calls
zero-copy yields equal data pointers, and one that copies does not; ``copy=True`` results
never overlap the source's bytes; ``copy=False`` shares or raises CopyRequiredError.
"""

from __future__ import annotations

from typing import Any

import adapters
import pytest
from adapters import FRAMEWORKS
from conftest import need
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from interop_core import ConversionError, CopyRequiredError, NoRouteError, explain, to
from interop_core.testing import framework_of, shares_memory

np = pytest.importorskip("numpy")  # hypothesis.extra.numpy needs it too
hnp = pytest.importorskip("hypothesis.extra.numpy")

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_HAS_ML_DTYPES = adapters.has_ml_dtypes()
_DTYPES = tuple(d for d in adapters.DTYPES if d != "bfloat16" or _HAS_ML_DTYPES)


@st.composite
def arrays(draw: st.DrawFn) -> Any:
    """A numpy array of a tested dtype in a random layout: sliced (any step sign), transposed,
    broadcast, offset from 64-byte alignment, read-only, 0-d or empty."""
    dtype = draw(st.sampled_from(_DTYPES))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5))
    if dtype == "bfloat16":
        base = draw(hnp.arrays(np.float32, shape, elements=st.floats(width=32)))
        base = base.astype(adapters.np_dtype("bfloat16"))
    else:
        base = draw(hnp.arrays(np.dtype(dtype), shape))
    if draw(st.booleans()):  # move the data off a 64-byte boundary (or onto one)
        offset = draw(st.sampled_from([0, base.itemsize, 16, 32]))
        base = adapters.aligned_copy(base, offset=offset)
    x = base
    if x.ndim and draw(st.booleans()):
        x = x[draw(hnp.basic_indices(x.shape, allow_newaxis=False, allow_ellipsis=True))]
        if not isinstance(x, np.ndarray):  # every index an integer: a numpy scalar
            x = np.array(x)
    if x.ndim > 1 and draw(st.booleans()):
        x = x.transpose(draw(st.permutations(range(x.ndim))))
    if draw(st.integers(0, 4)) == 0:  # a stride-0 leading dimension
        x = np.lib.stride_tricks.as_strided(
            x, shape=(2, *x.shape), strides=(0, *x.strides), writeable=x.flags.writeable
        )
    if draw(st.integers(0, 4)) == 0:
        x = x.view()
        x.flags.writeable = False
    return x


def _regressions() -> list[Any]:
    """Inputs that once broke a property, always tried first (hypothesis finds them by chance)."""
    out = [
        np.arange(6, dtype=np.float32).reshape(3, 2)[2:0:-2],  # C flag set, negative stride
        np.arange(6, dtype=np.float32).reshape(2, 3)[::-1, :0],  # empty, negative stride
        np.zeros(0, dtype=np.int16),  # 1-d empty: torch sees stride 0
        adapters.aligned_copy(np.array([[1.0, 2.0]], dtype=np.float32)).T,  # C and F flags
        np.lib.stride_tricks.as_strided(  # stride 0 and a negative stride together
            np.arange(3, dtype=np.int8)[::-1], shape=(2, 3), strides=(0, -1)
        ),
    ]
    if _HAS_ML_DTYPES:
        out.append(np.array(1.5, dtype=adapters.np_dtype("bfloat16")))  # 0-d bfloat16
    return out


def regressions(test: Any) -> Any:
    """Decorate a ``@given(x=arrays())`` test with the regression inputs as explicit examples."""
    for x in _regressions():
        test = example(x=x)(test)
    return test


def _dtype(x: Any) -> str:
    return adapters.dtype_name(x)


def _bounds(x: Any) -> tuple[int, int]:
    """[first, last) byte addresses an array of any framework may touch."""
    if isinstance(x, np.ndarray):
        lo, hi = np.lib.array_utils.byte_bounds(x)
        return int(lo), int(hi)
    start = adapters.ptr(x)  # results that copy are freshly allocated and compact
    size = int(np.prod(adapters.shape_of(x), dtype=np.int64))
    return start, start + size * adapters.np_itemsize(_dtype(x))


@pytest.fixture(scope="module", params=FRAMEWORKS)
def target(request: pytest.FixtureRequest) -> str:
    """Each framework as the target, imported (and its converters loaded) before hypothesis
    starts drawing examples: importing mid-test changes the recursion limit under it."""
    name: str = request.param
    need(name)
    for dtype in ("float32", "bfloat16") if _HAS_ML_DTYPES else ("float32",):
        if adapters.holds(name, dtype):
            to(to(np.zeros(2, dtype=adapters.np_dtype(dtype)), name), "numpy")
    return name


def _refuses_0d(target: str, x: Any, **options: Any) -> bool:
    """Whether ``x`` is 0-d and ``target`` holds no 0-d array (Arrow): checked to raise."""
    if x.ndim or target not in adapters.NO_0D or _narrows(target, _dtype(x)):
        return False
    with pytest.raises((ConversionError, CopyRequiredError)):  # copy=False: bits copy first
        to(x, target, **options)
    return True


def _narrows(target: str, dtype: str) -> bool:
    """Whether ``target`` cannot hold ``dtype`` (JAX's 64-bit dtypes without x64): to()
    refuses rather than narrow."""
    return not adapters.holds(target, dtype)


@SETTINGS
@regressions
@given(x=arrays())
def test_round_trip_preserves_values(target: str, x: Any) -> None:
    """numpy -> target -> numpy keeps dtype, shape and values; explain() tells the truth."""
    ref = np.array(x, copy=True)
    dtype = _dtype(x)
    if _refuses_0d(target, x):
        return
    if _narrows(target, dtype):
        with pytest.raises(NoRouteError):
            to(x, target)
        return
    route = explain(x, target)
    y = to(x, target)
    assert framework_of(y) == target
    assert _dtype(y) == dtype and adapters.shape_of(y) == x.shape
    adapters.assert_same_array(ref, adapters.to_numpy(y))
    if x.size:
        assert shares_memory(x, y) == route.zero_copy, str(route)
    back_route = explain(y, "numpy")
    z = to(y, "numpy")
    assert isinstance(z, np.ndarray)
    adapters.assert_same_array(ref, z)
    if x.size:
        assert shares_memory(y, z) == back_route.zero_copy, str(back_route)
    adapters.assert_same_array(ref, np.array(x, copy=True))  # the source is untouched


@SETTINGS
@regressions
@given(x=arrays())
def test_copy_true_never_shares(target: str, x: Any) -> None:
    """copy=True: the result's bytes never overlap the source's."""
    if _refuses_0d(target, x, copy=True):
        return
    if _narrows(target, _dtype(x)):
        with pytest.raises(NoRouteError):
            to(x, target, copy=True)
        return
    ref = np.array(x, copy=True)
    assert not explain(x, target, copy=True).zero_copy
    y = to(x, target, copy=True)
    adapters.assert_same_array(ref, adapters.to_numpy(y))
    if x.size:
        (xlo, xhi), (ylo, yhi) = _bounds(x), _bounds(y)
        assert yhi <= xlo or xhi <= ylo, "copy=True result overlaps the source"


@SETTINGS
@regressions
@given(x=arrays())
def test_copy_false_shares_or_raises(target: str, x: Any) -> None:
    """copy=False: the result shares the source's memory (equal data pointers), or
    CopyRequiredError is raised, and only where every route copies."""
    if _refuses_0d(target, x, copy=False):
        return
    if _narrows(target, _dtype(x)):
        with pytest.raises(NoRouteError):
            to(x, target, copy=False)
        return
    ref = np.array(x, copy=True)
    try:
        y = to(x, target, copy=False)
    except CopyRequiredError as exc:
        assert isinstance(exc, BufferError)
        # The best route copies: a route with fewer copies always wins, so no route shares.
        route = explain(x, target)
        assert route.copies > 0, f"copy=False refused, but this route shares:\n{route}"
        return
    assert explain(x, target, copy=False).zero_copy
    adapters.assert_same_array(ref, adapters.to_numpy(y))
    if x.size:  # numpy's own pointer against the target's own
        assert adapters.own_ptr(y) == x.ctypes.data
