"""JAX's shape-polymorphism tests for jax2tf, re-expressed through ``to(f, "tensorflow")``.

Carries two upstream files (jax-ml/jax at jax-v0.10.2, the installed JAX):

- ``jax/experimental/jax2tf/tests/shape_poly_test.py`` (``ShapePolyTest``): every case that
  goes through the public API, one test per upstream method (parametrized over its sub-cases).
- ``tests/shape_poly_test.py`` (``ShapePolyHarnessesTest::test_harness``): the table of
  harnesses (one jnp/lax op by one polymorphic spec). Upstream checks them with
  ``jax.export``; here a broad, fast subset goes through jax2tf instead, which is how
  jax2tf's own shape_poly_test used to run the same table.

How upstream's checks were re-expressed: ``jax2tf.convert(f, polymorphic_shapes=...,
polymorphic_constraints=...)`` is ``to(f, "tensorflow", source="jax", polymorphic_shapes=...,
polymorphic_constraints=..., input_signature=...)``, whose result is already the
``tf.function`` that upstream builds around the converted function. Each harness is exported
once (``experimental_get_tracing_count() == 1``), TensorFlow's static output shapes are read
from ``get_concrete_function()`` (None exactly for the dimensions that change with the
dimension variables), and the TensorFlow results at two different sizes of every dimension
variable are compared with ``jax.jit(f)`` at the same sizes (values, dtypes, tf.Tensor).
Errors that jax2tf raises while tracing reach the user as the project's ``ConversionError``
(a RuntimeError chaining jax2tf's own exception, whose message it keeps): those cases say
DIFFERS. Errors TensorFlow raises when the exported module runs (shape assertions) are
TensorFlow's own, as upstream.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from conftest import need

np = need("numpy")
jax = need("jax")
tf = need("tensorflow")

from jax import lax  # noqa: E402

from interop_core import ConversionError, OptionError, to  # noqa: E402

jnp = jax.numpy
f32 = np.float32
i32 = np.int32


def convert(fn: Callable[..., Any], **options: Any) -> Any:
    """jax2tf.convert(fn, **options) through the public call."""
    return to(fn, "tensorflow", source="jax", **options)


def leaves(tree: Any) -> list[Any]:
    return jax.tree_util.tree_leaves(tree)


def assert_same(got: Any, want: Any, tol: float | None = None) -> None:
    """``got`` (TensorFlow's results) equals ``want`` (JAX's): structure, tf.Tensor leaves,
    dtypes and values."""
    got_leaves, want_leaves = tf.nest.flatten(got), leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves, strict=True):
        assert isinstance(g, tf.Tensor), type(g)
        assert np.dtype(g.dtype.as_numpy_dtype) == np.dtype(w.dtype)
        rtol = 1e-5 if tol is None else tol
        np.testing.assert_allclose(g.numpy(), np.asarray(w), rtol=rtol, atol=rtol)


def static_shapes(concrete: Any) -> list[tuple[int | None, ...]]:
    """TensorFlow's static shape of every output of a concrete function."""
    return [tuple(t.shape.as_list()) for t in tf.nest.flatten(concrete.structured_outputs)]


# --------------------------------------------------------------------------- the harness


Dim = int | str | Callable[[dict[str, int]], int]


@dataclasses.dataclass(frozen=True)
class Arg:
    """An argument: its shape (ints, dimension variables, or functions of their sizes),
    dtype, and optionally a function of the sizes giving fixed values (indices)."""

    shape: tuple[Dim, ...]
    dtype: Any = f32
    fixed: Callable[[dict[str, int]], Any] | None = None

    def spec(self) -> Any:
        dims = [d if isinstance(d, int) else None for d in self.shape]
        return tf.TensorSpec(dims, tf.as_dtype(self.dtype))

    def value(self, rng: Any, sizes: dict[str, int]) -> Any:
        if self.fixed is not None:
            return np.asarray(self.fixed(sizes), self.dtype)
        shape = tuple(
            d if isinstance(d, int) else sizes[d] if isinstance(d, str) else d(sizes)
            for d in self.shape
        )
        if np.dtype(self.dtype) == np.bool_:
            return rng.random(shape) > 0.5
        if np.issubdtype(self.dtype, np.integer):
            return rng.integers(-5, 5, shape).astype(self.dtype)
        return rng.standard_normal(shape).astype(self.dtype)


@dataclasses.dataclass(frozen=True)
class Harness:
    """One upstream harness: ``name`` is upstream's ``group_name`` and ``name`` joined by
    "_"; ``sizes`` gives each dimension variable its two sizes (default 3 and 5)."""

    name: str
    fun: Callable[..., Any]
    args: Sequence[Arg]
    poly: Any
    sizes: dict[str, tuple[int, int]] = dataclasses.field(default_factory=dict)
    constraints: Sequence[str] = ()
    tol: float | None = None
    #: TensorFlow's static output shapes where they are not what the two runs show.
    out: list[tuple[int | None, ...]] | None = None

    def runs(self) -> list[dict[str, int]]:
        names: set[str] = set()
        for spec in leaves(self.poly):
            names |= set(re.findall(r"[A-Za-z_]\w*", spec)) - {"_"}
        return [{n: self.sizes.get(n, (3, 5))[i] for n in names} for i in (0, 1)]

    def __repr__(self) -> str:
        return self.name


def R(*shape: Dim, dtype: Any = f32) -> Arg:
    return Arg(tuple(shape), dtype)


def fixed(shape: tuple[Dim, ...], values: Callable[[dict[str, int]], Any], dtype: Any = i32) -> Arg:
    return Arg(shape, dtype, values)


def _h(name: str, fun: Callable[..., Any], args: Sequence[Arg], poly: Any, **kw: Any) -> Harness:
    return Harness(name, fun, tuple(args), poly, **kw)


def _with(fn: Callable[..., Any], **static: Any) -> Callable[..., Any]:
    """``fn`` with static keyword arguments bound (upstream's StaticArg)."""
    return functools.partial(fn, **static)


def _arange_cases() -> list[Harness]:
    cases = {
        "b": lambda x: jnp.arange(x.shape[0]),
        "0_5b+1_2": lambda x: jnp.arange(0, 5 * x.shape[0] + 1, 2),
        "0_b-3_2": lambda x: jnp.arange(0, x.shape[0] - 3, 2),
        "5b+2_0_-2": lambda x: jnp.arange(5 * x.shape[0] + 2, 0, -2),
        "10_0_-b": lambda x: jnp.arange(10, 0, -x.shape[0]),
        "0_b_1_f32": lambda x: jnp.arange(0, x.shape[0], 1, np.float32),
    }
    return [_h(f"arange_{k}", f, [R("b")], ["b"], sizes={"b": (4, 7)}) for k, f in cases.items()]


def _slice(start: Any, stop: Any, step: Any, x: Any) -> Any:
    b = x.shape[1]
    return x[:, slice(start(b), stop(b), step(b))]


_BOUNDS: dict[str, Callable[[Any], Any]] = {  # functions of the axis size b
    "None": lambda b: None,
    "0": lambda b: 0,
    "1": lambda b: 1,
    "2": lambda b: 2,
    "4": lambda b: 4,
    "-1": lambda b: -1,
    "2b2": lambda b: 2 * b + 2,
    "-2b2": lambda b: -2 * b - 2,
}


def _indexing_cases() -> list[Harness]:
    """x[:, start:stop:step] on the polymorphic axis b: four of upstream's 448 combinations."""
    picks = [
        ("None", "None", "None"), ("2", "4", "1"), ("2b2", "0", "-1"), ("-2b2", "2b2", "2"),
    ]  # fmt: skip
    # A slice whose length is the same at both sizes, but symbolic (it depends on b for a b
    # small enough): TensorFlow sees None.
    same_length = {("2", "4", "1")}
    out = []
    for start, stop, step in picks:
        fun = functools.partial(_slice, _BOUNDS[start], _BOUNDS[stop], _BOUNDS[step])
        name = f"indexing_start_{start}_stop_{stop}_step_{step}"
        shape = [(None, None)] if (start, stop, step) in same_length else None
        sizes = {"c": (16, 7), "b": (8, 5)}
        out.append(_h(name, fun, [R("c", "b")], ["c, b"], sizes=sizes, out=shape))
    return out


def _cum_cases() -> list[Harness]:
    ops = [
        ("cummax", lax.cummax, 0), ("cummin", lax.cummin, 1), ("cumprod", lax.cumprod, 0),
    ]  # fmt: skip
    out = []
    for name, op, axis in ops:
        which = "poly" if axis == 0 else "static"
        out.append(_h(f"{name}_reduce_axis_{which}", _with(op, axis=axis), [R("b", 5)], ["b, ..."]))
    return out


def _reductions() -> list[Harness]:
    picks = [(jnp.mean, (0,)), (jnp.var, (1,))]
    out = [
        _h(f"{op.__name__}_axis={axis}_keepdims=True_where=None",
           _with(op, axis=axis, keepdims=True), [R("b", 8, 4)], ["b, ..."])
        for op, axis in picks
    ]  # fmt: skip
    out.append(_h("reduce_max", _with(jnp.max, axis=-1, keepdims=True), [R("b", 5)], ["b, ..."]))
    return out


def _average(x: Any, weights: Any = None, *, axis: Any) -> Any:
    return jnp.average(x, axis=axis, weights=weights)


def _pad_cases() -> list[Harness]:
    def pad_short(mode: str, **kw: Any) -> Callable[..., Any]:
        return lambda x: jnp.pad(x, [[x.shape[0] - 1, 0], [x.shape[1], 1]], mode=mode, **kw)

    def bminus1(x: Any) -> Any:
        part = lax.dynamic_slice_in_dim(x, 1, x.shape[0] - 1, axis=0)
        return jnp.pad(part, [[x.shape[0], 0], [x.shape[1], 1]], mode="constant")

    cases = [
        ("mode=constant_bminus1", bminus1, ()),
        ("mode=reflect_odd", pad_short("reflect", reflect_type="odd"), ["b >= 2"]),
    ]
    return [
        _h(f"jnp.pad_{name}", fun, [R("b", 5)], ["b, ..."], constraints=cons)
        for name, fun, cons in cases
    ]


def _conv1d(lhs: Any, rhs: Any, *, stride: int, padding: str) -> Any:
    dn = lax.ConvDimensionNumbers(lhs_spec=(0, 2, 1), rhs_spec=(2, 1, 0), out_spec=(0, 2, 1))
    return lax.conv_general_dilated(
        lhs, rhs, window_strides=(stride,), padding=padding, dimension_numbers=dn
    )


def _reduce_window(x: Any, *, op: Any, init: float, dynamic: bool) -> Any:
    window = (2, x.shape[0] if dynamic else 2)
    return lax.reduce_window(x, np.array(init, f32), op, window, (1, 1), "VALID")


def _segment(x: Any, ids: Any, *, op: Any, bucket: Any) -> Any:
    size = x.shape[2] if bucket == "poly" else bucket
    return op(x, ids, num_segments=x.shape[1], bucket_size=size)


def _fft(x: Any, *, fft_type: Any) -> Any:
    n = (x.shape[-1] - 1) * 2 if fft_type == lax.FftType.IRFFT else x.shape[-1]
    return lax.fft(x, fft_type, (n,))


def _complex_arg(*shape: Dim) -> Arg:
    def values(sizes: dict[str, int]) -> Any:
        dims = [d if isinstance(d, int) else sizes[d] for d in shape]
        rng = np.random.default_rng(7)
        return rng.standard_normal(dims) + 1j * rng.standard_normal(dims)

    return Arg(tuple(shape), np.complex64, values)


def _scatter_args(poly_indices: bool, sizes: dict[str, int]) -> Any:
    b = sizes["b"]
    if not poly_indices:
        return np.array([[1], [2]], i32)
    return np.array([[1, 2], [-2, 0], [6, 4], [7, -1], [1, 0], [3, 0], [0, 5], [2, 2]][:b], i32)


def _scatter_grad(op: Any, idx: Any, upd: Any, *, dn: Any) -> Any:
    return jax.grad(lambda *a: jnp.sum(lax.scatter(*a, dimension_numbers=dn)))(op, idx, upd)


_SCATTER_DN0 = lax.ScatterDimensionNumbers((0,), (1,), (1,))
_SCATTER_DN1 = lax.ScatterDimensionNumbers((1,), (0,), (0, 1))


def _linalg_cases() -> list[Harness]:
    def spd(x: Any) -> Any:  # a well-conditioned matrix per batch element
        return x @ jnp.swapaxes(x, -1, -2) + 4 * jnp.eye(x.shape[-1], dtype=x.dtype)

    def tri_solve(a: Any, b: Any, *, left_side: bool) -> Any:
        a = jnp.tril(a) + 5 * jnp.eye(a.shape[-1], dtype=a.dtype)
        return lax.linalg.triangular_solve(a, b, left_side=left_side, lower=True)

    return [
        _h("inv", lambda x: jnp.linalg.inv(jnp.eye(x.shape[0])), [R("b", "b")], ["b, b"]),
        _h("lu_shape=float32[2,3,4,4]_poly=b1, b2, ...", lambda x: lax.linalg.lu(spd(x))[0],
           [R("b1", "b2", 4, 4)], ["b1, b2, ..."], sizes={"b1": (2, 1)}, tol=1e-4),
        _h("qr_shape=float32[2,3,8,4]_poly=b1, b2, ..._full_matrices=False",
           lambda x: jnp.abs(lax.linalg.qr(x, full_matrices=False)[1]),
           [R("b1", "b2", 8, 4)], ["b1, b2, ..."], sizes={"b1": (2, 1)}, tol=1e-4),
        _h("triangular_solve_shape=float32[3,4,4]_left_side=True_a_poly=b, k, k_b_poly=b, k, m",
           _with(tri_solve, left_side=True), [R("b", "k", "k"), R("b", "k", "m")],
           ["b, k, k", "b, k, m"], tol=1e-4),
        _h("triangular_solve_shape=float32[3,4,4]_left_side=False_a_poly=b, ..._b_poly=b, ...",
           _with(tri_solve, left_side=False), [R("b", 4, 4), R("b", 5, 4)],
           ["b, ...", "b, ..."], tol=1e-4),
        _h("cholesky_shape=float32[3,4,4]_poly=b, ...",
           lambda x: jnp.linalg.cholesky(spd(x)), [R("b", 4, 4)], ["b, ..."], tol=1e-4),
    ]  # fmt: skip


def _harnesses() -> list[Harness]:
    h = _h
    dn_gather = lax.GatherDimensionNumbers(
        offset_dims=(1,), collapsed_slice_dims=(), start_index_map=(0,)
    )
    return [
        h("add", lambda x, y: jnp.add(jnp.expand_dims(x, 0), y),
          [R("b", 4), R(2, "b", 4)], ["b, _", "_, b, _"]),
        h("add_transpose",
          jax.grad(lambda x: jnp.sum(jnp.expand_dims(jnp.sum(x, axis=0), 0) + jnp.sin(x))),
          [R("b", 4)], ["b, ..."]),
        *_arange_cases(),
        h("indexing_op=static_idx=poly", lambda a, i: a[i],
          [R(3, 4), fixed(("b0",), lambda s: np.arange(s["b0"]) % 3)], [None, "b0, ..."]),
        h("indexing_op=poly_idx=poly", lambda a, i: a[i],
          [R("b", 4), fixed(("b",), lambda s: np.arange(s["b"])[::-1])], ["b, ...", "b, ..."]),
        *_indexing_cases(),
        h("argmax_0", lambda x: lax.argmax(x, 0, i32), [R("b", 4, 5)], ["b, ..."]),
        h("jnp.argsort", jnp.argsort, [R("b", 4, 5)], ["b, ..."]),
        *[h(f"average_axis={axis}_weights=None", _with(_average, axis=axis),
            [R("b", 8, 4)], ["b, ..."]) for axis in (None,)],
        h("jnp.bincount_length=poly", lambda x: jnp.bincount(x % 4, length=x.shape[0]),
          [R("b", dtype=i32)], ["b, ..."], sizes={"b": (12, 7)}),
        h("broadcast_to", lambda x: jnp.broadcast_to(x, [x.shape[0], x.shape[0], 4]),
          [R("b", 4)], ["b, ..."]),
        h("broadcast_in_dim_0",
          lambda x: lax.broadcast_in_dim(x, [x.shape[0], 4, 5, 6], broadcast_dimensions=(0, 2, 3)),
          [R("b", 1, 6)], ["b, ..."]),
        h("broadcast_in_dim_transpose",
          jax.grad(lambda x: jnp.sum(lax.broadcast_in_dim(
              jnp.sin(x), [2, x.shape[0], 5, x.shape[2], 4], (1, 2, 3)))),
          [R("b1", 1, "b2")], ["b1, _, b2"]),
        h("clamp", lax.clamp, [R("b", 4, 5)] * 3, ["b, ..."] * 3),
        h("collapse", lambda x: lax.collapse(x, 1, 4), [R("b0", "b1", 5, "b3", 7)],
          ["b0, b1, _, b3, ..."]),
        h("concatenate", lambda x: jnp.concatenate([x, x], axis=0), [R("b0", "b1", 5)],
          ["b0, b1, _"]),
        h("concatenate_grad",
          jax.grad(lambda x: jnp.sum(jnp.concatenate([x, jnp.sin(x)], axis=0))),
          [R("b0", "b1", 5)], ["b0, b1, _"]),
        h("conv_general_dilated_1d_stride=1", _with(_conv1d, stride=1, padding="SAME"),
          [R(1, "b", 16), R(4, 16, 16)], ["_, b, _", None], sizes={"b": (12, 9)}, tol=1e-4),
        h("conv_general_dilated_1d_stride=2_odd", _with(_conv1d, stride=2, padding="SAME"),
          [R(1, "b", 16), R(4, 16, 16)], ["_, b, _", None], sizes={"b": (13, 8)}, tol=1e-4),
        *_cum_cases(),
        h("dot_general",
          lambda x, y: lax.dot_general(x, y, (((2,), (1,)), ((0,), (0,)))),
          [R("b", 4, 4), R("b", 4)], ["b, ...", "b, ..."], tol=1e-5),
        h("dynamic_slice_idx=tuple_int", lambda x: lax.dynamic_slice(x, (0, 1), (x.shape[0], 2)),
          [R("b", 4)], ["b, ..."]),
        h("dynamic_slice_idx=array", lambda x, i: lax.dynamic_slice(x, i, (x.shape[0], 2)),
          [R("b", 4), fixed((2,), lambda s: [-2, -1])], ["b, ...", None]),
        h("dynamic_update_slice_idx=tuple_int", lambda x: lax.dynamic_update_slice(x, x, (0, 0)),
          [R("b", 4)], ["b, ..."]),
        h("einsum_0", lambda x: jnp.einsum("...i->...", x), [R("b", 4)], ["b, ..."]),
        h("einsum_1", lambda x, y: jnp.einsum("...ij,...jk->...ik", x, y),
          [R("b", 4, 5), R("b", 5, 6)], ["b, ...", "b, ..."]),
        h("eye_N=poly_M=poly", lambda x: jnp.eye(x.shape[0], M=x.shape[0] + 2, dtype=f32) + x,
          [R("b", 1)], ["b, ..."]),
        *[h(f"fft_fft_type={t.name}_nr_fft_lengths=1", _with(_fft, fft_type=t),
            [_complex_arg("b0", "b1", "b2", 6)], ["b0, b1, b2, ..."],
            sizes={"b0": (3, 1), "b1": (4, 2), "b2": (5, 3)}, tol=1e-4)
          for t in (lax.FftType.FFT, lax.FftType.IRFFT)],
        h("full", lambda x: lax.full((x.shape[0], 2), 3.0) + x, [R("b", 1)], ["b, ..."]),
        h("gather_1d",
          lambda op, idx, x: lax.gather(op, idx, dn_gather, slice_sizes=x.shape,
                                        mode="promise_in_bounds"),
          [R("t"), fixed((3, 1), lambda s: [[0], [0], [0]]),
           fixed(("t",), lambda s: np.zeros(s["t"]))],
          ["(t, )", "(3, 1)", "(t)"], sizes={"t": (10, 6)}),
        h("index_in_dim_idx=last",
          lambda x: lax.index_in_dim(x, x.shape[0] - 1, axis=0, keepdims=False),
          [R("b", 4)], ["b, ..."]),
        h("iota", lambda x: x + lax.iota(f32, x.shape[0]), [R("b")], ["b, ..."]),
        h("linspace_num_poly", lambda x: jnp.linspace(0, 100, x.shape[0]), [R("b")], ["b, ..."],
          constraints=["b >= 2"], sizes={"b": (30, 7)}, tol=1e-4),
        h("matmul_0", jnp.matmul, [R("b", 8, 4), R("b", 4, 5)], ["b, ...", "b, ..."], tol=1e-5),
        h("one_hot_all_poly", lambda x, y: jax.nn.one_hot(x, y.shape[0]),
          [fixed(("b",), lambda s: np.arange(s["b"])), R("b")], ["b, ...", "b, ..."],
          sizes={"b": (16, 9)}),
        h("ones", lambda x: jnp.ones(x.shape, dtype=f32) + x, [R("b", 2, 4)], ["b, ..."]),
        h("pad_poly_padding_config",
          lambda x: lax.pad(x, f32(0.0), ((x.shape[0], x.shape[1], x.shape[0]), (0, 0, 0))),
          [R("b", 2)], ["b, ..."]),
        *_pad_cases(),
        *[h(f"reduce_window_{op.__name__}_window_size={kind}",
            _with(_reduce_window, op=op, init=init, dynamic=kind == "dynamic"),
            [R("b", 8)], ["b, ..."])
          for op, init, kind in ((lax.min, 1.0, "dynamic"),)],
        h("repeat_repeats=int_axis=0", lambda x: jnp.repeat(x, repeats=3, axis=0), [R("b", 2)],
          ["b, ..."]),
        h("repeat_repeats=poly_axis=None_scalar",
          lambda x, y: jnp.expand_dims(jnp.repeat(x, y.shape[0], axis=None), axis=1) + y,
          [R(), R("b0", 1)], [None, "b0, ..."]),
        h("reshape_0", lambda x: x.reshape([x.shape[0], -1]), [R("b", 2, 3)], ["b, ..."]),
        h("reshape_2", lambda x: x.reshape([x.shape[0], -1, x.shape[3], x.shape[2]]),
          [R("b0", 4, "b2", "b3", 7)], ["b0, _, b2, b3, ..."]),
        h("roll_axis=0", lambda x: jnp.roll(x, 2, axis=0), [R("b", 4)], ["b, ..."]),
        h("scatter_add_clip1",
          lambda op, idx, upd: lax.scatter_add(op, idx, upd, _SCATTER_DN1, unique_indices=True,
                                               mode=lax.GatherScatterMode.CLIP),
          [R("b", 4), fixed(("b", 2), functools.partial(_scatter_args, True)), R("b", 1)],
          ["b, ...", "b, ...", "b, ..."], sizes={"b": (7, 4)}),
        h("scatter_grad",
          _with(_scatter_grad, dn=_SCATTER_DN0),
          [R("b", 4), fixed((2, 1), functools.partial(_scatter_args, False)), R("b", 2)],
          ["b, ...", None, "b, ..."], sizes={"b": (7, 4)}),
        *[h(f"segment_{op.__name__.removeprefix('segment_')}_bucket_size_{bucket}",
            _with(_segment, op=op, bucket=bucket),
            [R("b", "s", "buckets"),
             fixed(("b",), lambda s: np.sort(np.arange(s["b"]) % 4))],
            ["b, s, buckets", "b"], sizes={"b": (8, 6), "s": (5, 4), "buckets": (2, 3)})
          for op in (jax.ops.segment_max,) for bucket in (None,)],
        h("select_1", jax.vmap(lambda x, y: lax.select(x > 0.5, x, y), in_axes=[0, None]),
          [R("b", 3), R(3)], ["b, ...", None]),
        h("slice_entire_axis",
          lambda x: lax.slice(x, start_indices=(0, 1), limit_indices=(x.shape[0], 3)),
          [R("b", 3)], ["b, ..."]),
        h("slice_in_dim_stride=2_odd",
          lambda x: lax.slice_in_dim(x, 0, x.shape[0], stride=2, axis=0),
          [R("b", 4)], ["b, ..."], sizes={"b": (13, 8)}),
        h("slice_in_dim_stride_sym",
          lambda x: lax.slice_in_dim(x, 0, x.shape[0], stride=1 + x.shape[0] // 4, axis=0),
          [R("b", 4)], ["b, ..."], sizes={"b": (13, 6)}),
        h("sort", lax.sort, [R("b")], ["b"], sizes={"b": (16, 9)}),
        h("jnp_split_idx_ct", lambda a: jnp.split(a, 2, axis=0),
          [R(lambda s: 2 * s["b"] + 4)], ["2*b + 4"], sizes={"b": (6, 3)}),
        h("squeeze_axis=1_2", _with(jnp.squeeze, axis=(1, 2)), [R("b", 1, 1)], ["b, ..."]),
        h("take_along_axis_1", lambda x, y: jnp.take_along_axis(x, y, axis=1),
          [R("b", 2), fixed(("b", 1), lambda s: np.arange(s["b"])[:, None] % 2)],
          ["b, ...", "b, ..."]),
        h("tile_1", lambda x: jnp.tile(x, (1, x.shape[0])), [R("b", 2)], ["b, ..."]),
        h("lax_top_k", lambda x: lax.top_k(x, x.shape[-1] - 1), [R("b")], ["b, ..."],
          sizes={"b": (16, 9)}),
        h("tri_N=poly_M=poly", lambda x: jnp.tri(x.shape[0], M=x.shape[0] + 2) + x,
          [R("b", 1)], ["b, ..."]),
        h("tril",
          lambda x: jnp.tril(jnp.ones((x.shape[0], x.shape[0] + x.shape[1]), f32), k=x.shape[1]),
          [R("m", "n")], ["m, n"], sizes={"n": (4, 3)}),
        h("where", jnp.where, [R("b", dtype=np.bool_), R(), R("b")], ["b, ...", None, "b, ..."]),
    ]  # fmt: skip


HARNESSES = _harnesses()


def _expected_static(h: Harness, results: list[Any]) -> list[tuple[int | None, ...]]:
    """The static shapes TensorFlow should report: a dimension is None exactly when it
    differs between the two runs (each dimension variable had two different sizes)."""
    if h.out is not None:
        return h.out
    first, second = (tf.nest.flatten(r) for r in results)
    return [
        tuple(d if d == e else None for d, e in zip(a.shape, b.shape, strict=True))
        for a, b in zip(first, second, strict=True)
    ]


@pytest.mark.parametrize("h", HARNESSES, ids=repr)
def test_harness(h: Harness) -> None:
    """upstream: jax-ml/jax/tests/shape_poly_test.py::ShapePolyHarnessesTest::test_harness
    (the id is the harness's fullname): exported once with polymorphic shapes, TensorFlow's
    static output shapes, and its results at two sizes against jax.jit."""
    rng = np.random.default_rng(0)
    runs = [[a.value(rng, sizes) for a in h.args] for sizes in h.runs()]
    signature = [a.spec() for a in h.args]
    g = convert(
        h.fun,
        polymorphic_shapes=h.poly,
        polymorphic_constraints=list(h.constraints) or None,
        input_signature=signature,
    )
    concrete = g.get_concrete_function()
    results = [g(*args) for args in runs]
    for args, got in zip(runs, results, strict=True):
        assert_same(got, jax.jit(h.fun)(*args), h.tol)
    assert g.experimental_get_tracing_count() == 1  # one export serves both sizes
    assert static_shapes(concrete) == _expected_static(h, results)


# Upstream's harnesses that expect an error while exporting: the project's ConversionError,
# chaining jax2tf's error and keeping its message.
ERROR_HARNESSES = [
    pytest.param(
        lambda x: x[0] + jnp.arange(0.0, x.shape[0], None),
        [R("b", dtype=i32)],
        ["b"],
        "must be either dimension expressions or integers",
        id="arange_error_float_start",
    ),
    pytest.param(
        lambda x: x[0] + jnp.arange(0, x.shape[0], 0.5),
        [R("b", dtype=i32)],
        ["b"],
        "must be either dimension expressions or integers",
        id="arange_error_float_step",
    ),
    pytest.param(
        lambda x: x[0] + jnp.arange(0, x.shape[0], 0),
        [R("b", dtype=i32)],
        ["b"],
        "has step == 0",
        id="arange_error_step_0",
    ),
    pytest.param(
        lambda x: x[0] + jnp.arange(0, x.shape[0], x.shape[0] - 2),
        [R("b", dtype=i32)],
        ["b"],
        "must be resolved statically if it is > 0 or < 0",
        id="arange_error_inconclusive_step_sign",
    ),
    pytest.param(
        lambda x, y: jnp.einsum("ab,cb->ac", x, y),
        [R(2, "b0"), R(2, "b1")],
        ["(2, b0)", "(2, b1)"],
        "Incompatible reduction dimensions",
        id="einsum_incompatible_contractions_error",
    ),
    pytest.param(
        lambda x: jnp.pad(x, [[x.shape[0] - 1, 0], [x.shape[1], 1]], "reflect", reflect_type="odd"),
        [R("b", 5)],
        ["b, ..."],
        "Shape polymorphism is supported for jnp.pad",
        id="jnp.pad_mode=reflect_odd_error",
    ),
    pytest.param(
        lambda x: jnp.repeat(x, repeats=x.shape[0], axis=None, total_repeat_length=8),
        [R("b", 2)],
        ["b, ..."],
        "jnp.repeat with a non-constant `repeats` is supported only",
        id="repeat_repeats=poly_axis=None_total_repeat_length1",
    ),
    pytest.param(
        lambda x: x.reshape([x.shape[0], -1, 3]),
        [R("b", 2, 4)],
        ["b, ..."],
        re.escape("Cannot divide evenly the sizes of shapes (b, 2, 4) and (b, -1, 3)"),
        id="reshape_error",
    ),
    pytest.param(
        lambda a: jnp.split(a, a.shape[0] // 2, axis=0),
        [R(lambda s: s["b"] + 4)],
        ["b + 4"],
        "jax.numpy.split with a symbolic number of sections is not supported",
        id="jnp_split_idx_poly",
    ),
    pytest.param(
        _with(jnp.squeeze, axis=None),
        [R("b")],
        ["b, ..."],
        "jnp.squeeze with axis=None is not supported with shape polymorphism",
        id="squeeze_axis=None",
    ),
    pytest.param(
        _with(jnp.squeeze, axis=-1),
        [R("b0", "b1")],
        ["b0, b1"],
        re.escape(
            "cannot select an axis to squeeze out which has size not equal to one, "
            "got shape=(b0, b1) and dimensions=(1,)"
        ),
        id="squeeze_error",
    ),
    pytest.param(
        lambda lhs, rhs, gs: lax.ragged_dot(lhs, rhs, gs),
        [R("m", 5), R("g", 5, 7), fixed(("g",), lambda s: [4, 4, 3])],
        ["m, k", "g, k, n", "g"],
        "ragged_dot_general requires the group count .* to be static",
        id="ragged_dot_mode_1_non_contracting_dynamic_group_error",
    ),
]


@pytest.mark.parametrize(("fun", "args", "poly", "message"), ERROR_HARNESSES)
def test_harness_error(fun: Callable[..., Any], args: list[Arg], poly: Any, message: str) -> None:
    """upstream: jax-ml/jax/tests/shape_poly_test.py::ShapePolyHarnessesTest::test_harness
    (the harnesses with expect_error).
    DIFFERS: upstream expects the op's own ValueError/TypeError/AssertionError/
    InconclusiveDimensionOperation from the export; through to() it is a ConversionError
    (the project's error for a failed conversion) chaining it, with jax2tf's message."""
    g = convert(fun, polymorphic_shapes=poly, input_signature=[a.spec() for a in args])
    with pytest.raises(ConversionError, match=message) as err:
        g.get_concrete_function()
    assert "Check polymorphic_shapes=" in str(err.value)


# --------------------------------------------------------------- jax2tf's ShapePolyTest


def spec(*dims: int | None, dtype: Any = tf.float32) -> Any:
    return tf.TensorSpec(list(dims), dtype)


def rand(*shape: int, dtype: Any = f32, seed: int = 0) -> Any:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def check_poly(
    fun: Callable[..., Any],
    poly: Any,
    signature: list[Any],
    arg_sets: list[tuple[Any, ...]],
    expected: Any = None,
    constraints: Sequence[str] | None = None,
) -> list[Any]:
    """Upstream's check_shape_poly: convert once (with input_signature), check TensorFlow's
    static output shapes (``expected``: one shape, or a list), then the results for each set
    of arguments against JAX; one export serves them all. Returns TensorFlow's results."""
    g = convert(
        fun, polymorphic_shapes=poly, polymorphic_constraints=constraints,
        input_signature=signature,
    )  # fmt: skip
    concrete = g.get_concrete_function()
    if expected is not None:
        want = expected if isinstance(expected, list) else [expected]
        assert static_shapes(concrete) == want
    results = []
    for args in arg_sets:
        got = g(*args)
        assert_same(got, jax.jit(fun)(*args))
        results.append(got)
    assert g.experimental_get_tracing_count() == 1
    return results


def _unary(x: Any) -> Any:
    return x + jnp.sin(x)


@pytest.mark.parametrize(
    ("poly", "shapes", "expected"),
    [
        pytest.param([None], [(2, 3)], (2, 3), id="None"),
        pytest.param(["_, h"], [(2, 3), (2, 5)], (2, None), id="_, h"),
        pytest.param(["h, h"], [(3, 3), (4, 4)], (None, None), id="h, h"),
    ],
)
def test_simple_unary(poly: list[Any], shapes: list[tuple[int, ...]], expected: Any) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/shape_poly_test.py::ShapePolyTest::test_simple_unary"""  # noqa: E501
    check_poly(_unary, poly, [spec(*expected)], [(rand(*s),) for s in shapes], expected)


@pytest.mark.parametrize(
    ("poly", "signature", "shapes", "expected"),
    [
        pytest.param([None, None], [(2, 3), (2, 3)], [(2, 3)], (2, 3), id="None"),
        # A more specific input_signature than the polymorphic shapes: the output keeps
        # the polymorphic dimension (native serialization).
        pytest.param(["_, h", "_, h"], [(2, None), (2, 3)], [(2, 3)], (2, None), id="_, h"),
        pytest.param(["h, h", "h, h"], [(None, None)] * 2, [(3, 3), (5, 5)], (None, None),
                     id="h, h"),
    ],
)  # fmt: skip
def test_simple_binary(poly: list[Any], signature: list[Any], shapes: Any, expected: Any) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/shape_poly_test.py::ShapePolyTest::test_simple_binary"""  # noqa: E501
    sig = [spec(*s) for s in signature]
    runs = [(rand(*s), rand(*s, seed=1)) for s in shapes]
    check_poly(lambda x, y: x + jnp.sin(y), poly, sig, runs, expected)


@pytest.mark.parametrize(("poly", "sig"), [([None], (2, 3)), (["b, _"], (None, 3))], ids=str)
def test_static_shape_result(poly: list[Any], sig: tuple[Any, ...]) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/shape_poly_test.py::ShapePolyTest::test_static_shape_result"""  # noqa: E501
    runs = [(rand(2, 3),)] if poly == [None] else [(rand(2, 3),), (rand(6, 3),)]
    check_poly(lambda x: jnp.sum(x + jnp.sin(x), axis=0), poly, [spec(*sig)], runs, (3,))


def test_forgot_polymorphic_shapes_error() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/shape_poly_test.py::ShapePolyTest::test_forgot_polymorphic_shapes_error
    DIFFERS: jax2tf's ValueError ("syntax error in symbolic shape") for a None dimension
    with polymorphic_shapes=[None] arrives as the project's ConversionError chaining it."""  # noqa: E501
    g = convert(jnp.sin, polymorphic_shapes=[None], input_signature=[spec(1, None)])
    with pytest.raises(ConversionError, match="syntax error in symbolic shape") as err:
        g.get_concrete_function()
    assert "ValueError: " in str(err.value)


def test_forgot_polymorphic_shapes_is_derived() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/shape_poly_test.py::ShapePolyTest::test_forgot_polymorphic_shapes_error
    DIFFERS: without polymorphic_shapes at all, the project gives the None dimension a
    symbolic size of its own (README, Functions) where jax2tf raises the syntax error."""  # noqa: E501
    check_poly(jnp.sin, None, [spec(1, None)], [(rand(1, 3),), (rand(1, 5),)], (1, None))


def test_with_constraints() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/shape_poly_test.py::ShapePolyTest::test_with_constraints"""  # noqa: E501

    def first8(x: Any) -> Any:  # needs a >= 8
        return lax.dynamic_slice_in_dim(x, 0, 8, 0)

    runs = [(np.arange(16, dtype=i32),), (np.arange(9, dtype=i32),)]
    check_poly(first8, ["a"], [spec(None, dtype=tf.int32)], runs, (8,), ["a >= 8"])


def test_kwargs() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/shape_poly_test.py::ShapePolyTest::test_kwargs"""  # noqa: E501

    def f(x: Any, *, y: Any) -> Any:
        return x + jnp.sin(y)

    g = convert(f, polymorphic_shapes=["b, ..."])
    y = np.ones(1, f32)
    for n in (3, 5):
        x = np.ones(n, f32)
        assert_same(g(x, y=y), f(x, y=y))


@pytest.mark.parametrize(
    ("shape", "poly", "message"),
    [
        pytest.param((5, 36), "3 * b, ...",
                     "Division had remainder 2 when computing the value of 'b'", id="remainder"),
        pytest.param((10, 3), "3 * b + 10, ...",
                     "Expected value >= 1 for dimension variable 'b'", id="b=0"),
        pytest.param((7, 3), "3 * b + 10, ...",
                     "Expected value >= 1 for dimension variable 'b'", id="b<0"),
        pytest.param((2, 3), "(a, a)",
                     re.escape("Found inconsistency between dimension size args[0].shape[1] "
                               "(= 3) and the specification 'a' (= 2)"), id="a,a"),
    ],
)  # fmt: skip
def test_arg_avals_errors(shape: tuple[int, ...], poly: str, message: str) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/shape_poly_test.py::ShapePolyTest::test_arg_avals_errors
    (the shape assertions TensorFlow checks when it runs the module)."""  # noqa: E501
    x = np.arange(np.prod(shape), dtype=f32).reshape(shape)
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        convert(lambda x: x, polymorphic_shapes=[poly])(x)


@pytest.mark.parametrize(
    ("shape", "poly", "message"),
    [
        pytest.param((2,), ["a list"], "pytree structure error: different types", id="list"),
        pytest.param((2,), ("a tuple",), "pytree structure error: different types", id="tuple"),
        pytest.param((4, 36, 3), "b * b, b * d * d, d",
                     re.escape("Cannot solve for values of dimension variables {'b'}"),
                     id="unsolvable"),
    ],
)  # fmt: skip
def test_arg_avals_errors_at_conversion(shape: tuple[int, ...], poly: Any, message: str) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/shape_poly_test.py::ShapePolyTest::test_arg_avals_errors
    DIFFERS: jax2tf's ValueError arrives as the project's ConversionError chaining it."""  # noqa: E501
    x = np.arange(np.prod(shape), dtype=f32).reshape(shape)
    with pytest.raises(ConversionError, match=message) as err:
        convert(lambda x: x, polymorphic_shapes=[poly])(x)
    assert "ValueError: " in str(err.value)  # TensorFlow's traceback filter drops __cause__


def test_arg_avals_errors_not_a_spec() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/shape_poly_test.py::ShapePolyTest::test_arg_avals_errors
    DIFFERS: a spec that is not a string (5.0) is an OptionError from to() itself, naming
    what polymorphic_shapes= takes, where jax2tf raises ValueError at the first call."""  # noqa: E501
    with pytest.raises(OptionError, match=r"Option polymorphic_shapes=\[5\.0\] is not valid"):
        convert(lambda x: x, polymorphic_shapes=[5.0])


_SPEC_MSG = "Please see https://docs.jax.dev/en/latest/export/shape_poly.html#"


@pytest.mark.parametrize(
    ("shape", "poly", "message"),
    [
        pytest.param((8, 2, 9), "(a + 2*b, a, a + b + c)", None, id="(8, 2, 9)"),
        pytest.param((2, 2, 6), "(a + 2*b, a, a + b + c)", (
            "Input shapes do not match the polymorphic shapes specification. "
            "Expected value >= 1 for dimension variable 'b'. "
            "Using the following polymorphic shapes specifications: "
            "args[0].shape = (2*b + a, a, c + b + a). Obtained dimension variables: "
            "'a' = 2 from specification 'a' for dimension args[0].shape[1] (= 2), "
            "'b' = 0 from specification '2*b + a' for dimension args[0].shape[0] (= 2), . "
            f"{_SPEC_MSG}shape-assertion-errors for more details."), id="(2, 2, 6)"),
        pytest.param((3, 2, 6), "(a + 2*b, a, a + b + c)", (
            "Input shapes do not match the polymorphic shapes specification. "
            "Division had remainder 1 when computing the value of 'b'. "
            "Using the following polymorphic shapes specifications: "
            "args[0].shape = (2*b + a, a, c + b + a). Obtained dimension variables: "
            "'a' = 2 from specification 'a' for dimension args[0].shape[1] (= 2), . "
            f"{_SPEC_MSG}shape-assertion-errors for more details."), id="(3, 2, 6)"),
        pytest.param((8, 2, 6), "(a + 2*b, a, a + b)", (
            "Input shapes do not match the polymorphic shapes specification. "
            "Found inconsistency between dimension size args[0].shape[0] (= 8) and the "
            "specification '2*b + a' (= 10). Using the following polymorphic shapes "
            "specifications: args[0].shape = (2*b + a, a, b + a). Obtained dimension "
            "variables: 'a' = 2 from specification 'a' for dimension args[0].shape[1] (= 2), "
            "'b' = 4 from specification 'b + a' for dimension args[0].shape[2] (= 6), . "
            f"{_SPEC_MSG}shape-assertion-errors for more details."), id="(8, 2, 6)"),
    ],
)  # fmt: skip
def test_shape_constraints_errors(shape: tuple[int, ...], poly: str, message: str | None) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/shape_poly_test.py::ShapePolyTest::test_shape_constraints_errors"""  # noqa: E501
    g = convert(lambda x: 0.0, polymorphic_shapes=[poly])
    x = np.arange(np.prod(shape), dtype=f32).reshape(shape)
    if message is None:
        assert_same(g(x), np.float32(0.0))
        return
    with pytest.raises(tf.errors.InvalidArgumentError, match=re.escape(message)):
        g(x)


def test_shape_constraints_errors_unsolvable() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/shape_poly_test.py::ShapePolyTest::test_shape_constraints_errors
    (the (7, 2, 36) case). DIFFERS: raised while converting, as the project's
    ConversionError carrying jax2tf's full message."""  # noqa: E501
    message = (
        "Cannot solve for values of dimension variables {'c'}. "
        "We can only solve linear uni-variate constraints. "
        "Using the following polymorphic shapes specifications: "
        "args[0].shape = (b + 2*a, a, c^2). "
        "Unprocessed specifications: 'c^2' for dimension size args[0].shape[2]. "
        f"{_SPEC_MSG}dimension-variables-must-be-solvable-from-the-input-shapes for more details."
    )
    g = convert(lambda x: 0.0, polymorphic_shapes=["(2 * a + b, a, c * c)"])
    with pytest.raises(ConversionError, match=re.escape(message)):
        g(np.zeros((7, 2, 36), f32))


def _add_all(pair_of_lists: Any, d: Any) -> Any:
    first, second = pair_of_lists
    return sum([*first, *second, d["a"], d["b"]])


def _pytree_args(n: int) -> tuple[Any, ...]:
    x = [np.arange(n, dtype=f32) * k for k in range(1, 6)]
    return (([x[0], x[1]], [x[2]]), {"a": x[3], "b": x[4]})


@pytest.mark.parametrize(
    "poly",
    [
        [(["v", "v"], ["v"]), {"a": "v", "b": "v"}],
        "v",  # prefixes of the arguments' structure
        ["v", "v"],
        [("v", "v"), "v"],
    ],
    ids=["full", "v", "[v, v]", "[(v, v), v]"],
)
def test_pytree(poly: Any) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/shape_poly_test.py::ShapePolyTest::test_pytree
    (also run at two sizes, where upstream only traces)."""  # noqa: E501
    sig = [([spec(None), spec(None)], [spec(None)]), {"a": spec(None), "b": spec(None)}]
    check_poly(_add_all, poly, sig, [_pytree_args(3), _pytree_args(6)], (None,))


def test_pytree_partial() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/shape_poly_test.py::ShapePolyTest::test_pytree
    (partial polymorphic_shapes, with a static input_signature)."""  # noqa: E501
    sig = [([spec(4), spec(4)], [spec(4)]), {"a": spec(4), "b": spec(4)}]
    poly = ((["(4,)", "(_,)"], ["4,"]), {"a": "(_,)", "b": "(4,)"})
    check_poly(_add_all, poly, sig, [_pytree_args(4)], (4,))


@pytest.mark.parametrize(
    "poly", [("b", "b", "b"), ({"a": "b"}, "b")], ids=["(b, b, b)", "(dict(a=b), b)"]
)
def test_pytree_errors(poly: Any) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/shape_poly_test.py::ShapePolyTest::test_pytree_errors
    DIFFERS: jax2tf's ValueError arrives as the project's ConversionError chaining it."""  # noqa: E501
    with pytest.raises(ConversionError, match="pytree structure error"):
        convert(_add_all, polymorphic_shapes=poly)(*_pytree_args(4))


def test_pytree_errors_dict() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/shape_poly_test.py::ShapePolyTest::test_pytree_errors
    (polymorphic_shapes=dict(a="b")). DIFFERS: a dict where a list (one entry per
    positional argument) belongs is an OptionError from to() itself."""  # noqa: E501
    with pytest.raises(OptionError, match=r"Option polymorphic_shapes=\{'a': 'b'\}"):
        convert(_add_all, polymorphic_shapes={"a": "b"})


def test_with_nested_jit() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/shape_poly_test.py::ShapePolyTest::test_with_nested_jit"""  # noqa: E501

    def inner(x: Any) -> Any:
        return jnp.sin(x) + jnp.arange(x.shape[1], dtype=x.dtype)

    def f(x: Any) -> Any:
        return x + jax.jit(inner)(x)

    check_poly(f, ["a, b"], [spec(None, None)], [(rand(3, 4),), (rand(5, 2),)], (None, None))


@pytest.mark.parametrize(
    ("poly", "second"),
    [
        ("b1+6,b1+14,b2", (10, 18, 5)),  # b1=10, b2=32 then b1=4, b2=5
        ("2*b1,4*b2,b1+b2+18", (6, 8, 23)),  # b1=8, b2=6 then b1=3, b2=2
        ("b1+2*b2,4*b2,b1*b1+16", (8, 12, 20)),  # b1=4, b2=6 then b1=2, b2=3
    ],
    ids=lambda v: str(v) if isinstance(v, str) else "",
)
def test_non_trivial_polynomials_spec(poly: str, second: tuple[int, int, int]) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/shape_poly_test.py::ShapePolyTest::test_non_trivial_polynomials_spec"""  # noqa: E501
    g = convert(lambda x: 2 * x.shape[0] + 3 * x.shape[1] + 4 * x.shape[2],
                polymorphic_shapes=[poly], input_signature=[spec(None, None, None)])  # fmt: skip
    for shape in ((16, 24, 32), second):
        out = g(np.zeros(shape, f32))
        assert isinstance(out, tf.Tensor) and out.dtype == tf.int32
        assert int(out) == 2 * shape[0] + 3 * shape[1] + 4 * shape[2]
    assert g.experimental_get_tracing_count() == 1


def _unused(x_unused: Any, y: Any) -> Any:
    return y * 2.0


def _unused4(x_unused: Any, y: Any, z_unused: Any, w: Any) -> Any:
    return jnp.concatenate([y, w])


def _shape_only(x_unused: Any, y: Any) -> Any:
    return y + x_unused.shape[0]


@pytest.mark.parametrize(
    ("fun", "poly", "runs"),
    [
        pytest.param(_unused, [None, "b"], [[(2, 3), (3,)], [(2, 3), (5,)]],
                     id="first_unused_not_poly"),
        pytest.param(_unused4, [None, "b1", None, "b2"],
                     [[(3,), (4,), (5,), (6,)], [(3,), (2,), (5,), (7,)]], id="some_unused"),
        pytest.param(_unused, ["b", "b"], [[(3,)] * 2, [(5,)] * 2], id="var_in_used_arg"),
        pytest.param(_unused, ["b1", "b2"], [[(4,), (3,)], [(2,), (6,)]], id="var_only_unused"),
        pytest.param(_unused, ["b1", "b1 * b1"], [[(3,), (9,)], [(2,), (4,)]],
                     id="var_not_trivial_elsewhere"),
        pytest.param(_shape_only, ["b1", "b2"], [[(3,), (9,)], [(5,), (2,)]], id="shape_used"),
    ],
)  # fmt: skip
def test_unused_args(fun: Callable[..., Any], poly: list[Any], runs: list[Any]) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/shape_poly_test.py::ShapePolyTest::test_unused_args"""  # noqa: E501
    sig = [spec(*(d if p is None else None for d in s)) for p, s in zip(poly, runs[0], strict=True)]
    arg_sets = [tuple(rand(*s, seed=i) for i, s in enumerate(run)) for run in runs]
    check_poly(fun, poly, sig, arg_sets)


def test_with_custom_vjp() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/shape_poly_test.py::ShapePolyTest::test_with_custom_vjp
    DIFFERS: traced for an input of static shape [3, 4, 8, 9], the gradient's static shape
    is that shape (the tf.function that to() returns is a call op whose gradient TensorFlow
    shapes like its input), where upstream's raw converted function leaves it all None; the
    value stays all None as upstream."""  # noqa: E501

    @jax.custom_vjp
    def f(x: Any) -> Any:  # a batch of matrices times their transposes
        return jnp.matmul(x, jnp.transpose(x, axes=(0, 1, 3, 2)))

    def fwd(x: Any) -> Any:
        return f(x), 3.0 * x

    def bwd(residual: Any, ct: Any) -> Any:
        return (jnp.matmul(ct, residual),)

    f.defvjp(fwd, bwd)
    g = convert(f, polymorphic_shapes=["(batch1, batch2, d1, d2)"])

    def value_and_grad(xv: Any) -> Any:
        with tf.GradientTape() as tape:
            tape.watch(xv)
            res = g(xv)
        return res, tape.gradient(res, xv)

    for shape in ((2, 3, 4, 5), (1, 2, 3, 2)):
        x = np.ones(shape, f32)
        res, grad = value_and_grad(tf.Variable(x))
        assert_same(res, f(x))
        assert_same(grad, jax.grad(lambda x: jnp.sum(f(x)))(x))
    traced = tf.function(value_and_grad, autograph=False).get_concrete_function(spec(3, 4, 8, 9))
    # The value is as polymorphic as polymorphic_shapes, however specific the input.
    assert tuple(traced.output_shapes[0]) == (None,) * 4
    assert tuple(traced.output_shapes[1]) == (3, 4, 8, 9)  # DIFFERS: the input's shape


def test_gradients_pytree() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/shape_poly_test.py::ShapePolyTest::test_gradients_pytree"""  # noqa: E501

    def f(x: Any) -> Any:
        return {"res": x["x"] * 2.0}

    g = convert(f, polymorphic_shapes=[{"x": "b, 3, 4"}])

    def value_and_grad(xv: Any) -> Any:
        with tf.GradientTape() as tape:
            tape.watch(xv)
            res = g({"x": xv})
        return res, {"grad": tape.gradient(res, xv)}

    res, grad = value_and_grad(tf.Variable(np.ones((2, 3, 4), f32)))
    assert_same(res, {"res": np.full((2, 3, 4), 2.0, f32)})
    assert_same(grad, {"grad": np.full((2, 3, 4), 2.0, f32)})
    traced = tf.function(value_and_grad, autograph=False).get_concrete_function(spec(None, 3, 4))
    assert tuple(traced.output_shapes[0]["res"]) == (None, 3, 4)
    assert tuple(traced.output_shapes[1]["grad"]) == (None, 3, 4)


def test_grad_not_var_output() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/shape_poly_test.py::ShapePolyTest::test_grad_not_var_output"""  # noqa: E501
    g = convert(lambda x: jnp.reshape(x, (-1,)), with_gradient=True,
                polymorphic_shapes=["b, ..."])  # fmt: skip
    for n in (4, 2):
        xv = tf.Variable(np.arange(3 * n, dtype=f32).reshape((n, 3)))
        with tf.GradientTape() as tape:
            res = g(xv)
        assert res.shape == (3 * n,)
        assert_same(tape.gradient(res, xv), np.ones((n, 3), f32))


def test_cond() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/shape_poly_test.py::ShapePolyTest::test_cond"""  # noqa: E501

    def f(x: Any, y: Any) -> Any:
        return lax.cond(jnp.sum(x) > 0.0, lambda _: x + y, lambda _: jnp.zeros_like(x), None)

    runs = [(np.ones((2, 3), f32), np.ones(3, f32)), (-np.ones((4, 5), f32), np.ones(5, f32))]
    check_poly(f, ["(b, h)", "h"], [spec(None, None), spec(None)], runs, (None, None))


def test_while() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/shape_poly_test.py::ShapePolyTest::test_while"""  # noqa: E501

    def f(x: Any) -> Any:
        def body(carry: Any) -> Any:
            v, i = carry
            return v + jnp.arange(v.shape[0], dtype=f32), i + 1

        return lax.while_loop(lambda carry: carry[1] < 5, body, (x, 0))

    runs = [(np.ones(3, f32),), (np.ones(6, f32),)]
    check_poly(f, ["(b,)"], [spec(None)], runs, [(None,), ()])


@pytest.mark.parametrize("with_function", [False, True], ids=["eager", "tf.function"])
def test_grad_int(with_function: bool) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/shape_poly_test.py::ShapePolyTest::test_grad_int
    with_function: the converted function inside another tf.function, as upstream."""  # noqa: E501

    def f(xi_yf: Any, zb: Any) -> Any:
        xi, yf = xi_yf
        return jnp.zeros(xi.shape, f32), (xi, zb, xi.astype(f32) * 2.0 * yf)

    g = convert(f, polymorphic_shapes=[("b1, b2, 4", "b1, b2, 4"), "b1"])
    if with_function:
        g = tf.function(g, autograph=False)
    for shape in ((2, 3, 4), (3, 1, 4)):
        xi = np.arange(np.prod(shape), dtype=np.int16).reshape(shape)
        yf = xi.astype(f32)
        zb = np.arange(shape[0]) % 2 == 0
        xs = tf.nest.map_structure(tf.Variable, ((xi, yf), zb))
        with tf.GradientTape() as tape:
            res = g(*xs)
        grads = tape.gradient(res, xs, unconnected_gradients=tf.UnconnectedGradients.ZERO)
        assert_same(res, f((xi, yf), zb))
        (g_xi, g_yf), g_zb = grads
        np.testing.assert_array_equal(g_xi.numpy(), np.zeros_like(xi))
        assert g_xi.dtype == tf.int16 and g_zb.dtype == tf.bool
        np.testing.assert_allclose(g_yf.numpy(), (xi * 2).astype(f32))
        np.testing.assert_array_equal(g_zb.numpy(), np.zeros_like(zb))


def test_prng() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/shape_poly_test.py::ShapePolyTest::test_prng
    (typed keys, jax.random.key, instead of the jax_enable_custom_prng flag)."""  # noqa: E501

    def f(x: Any) -> Any:
        key = jax.random.key(123)
        keys = lax.broadcast_in_dim(key, x.shape, ())  # key[b1, b2]
        row = lax.broadcast_in_dim(keys[0], (1, x.shape[1]), (1,))
        sliced = lax.slice(keys, (0, 0), (1, x.shape[1]), (1, 1))
        dyn = lax.dynamic_slice(keys, (0, 0), slice_sizes=(1, x.shape[1]))
        updated = lax.dynamic_update_slice(dyn, sliced, start_indices=(0, 0))
        _ = lax.dynamic_update_slice(updated, row, start_indices=(0, 0))
        counts = jnp.arange(keys.shape[0], dtype=i32)
        _ = jax.vmap(lambda c, k: lax.fori_loop(0, c, lambda _, acc: acc, k))(counts, keys)
        return x

    check_poly(f, ["b1, b2"], [spec(None, None)], [(rand(3, 4),), (rand(2, 5),)], (None, None))


@pytest.fixture(scope="module")
def restored(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One SavedModel with the three functions upstream saves one by one (tf_test_util's
    SaveAndLoadFunction), reloaded."""
    module = tf.Module()
    batch = ["(b, ...)"]
    module.sin = convert(jnp.sin, polymorphic_shapes=batch, input_signature=[spec(None)])
    module.flat = convert(lambda x: jnp.reshape(x, (-1,)), polymorphic_shapes=batch,
                          input_signature=[spec(None, 3, 4, dtype=tf.int32)])  # fmt: skip
    module.identity = convert(lambda x: x, polymorphic_shapes=batch, input_signature=[spec(None)])
    path = str(tmp_path_factory.mktemp("shape_poly_saved"))
    options = tf.saved_model.SaveOptions(experimental_custom_gradients=True)
    tf.saved_model.save(module, path, options=options)
    return tf.saved_model.load(path)


def test_saved_model(restored: Any) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/shape_poly_test.py::ShapePolyTest::test_saved_model"""  # noqa: E501
    x = np.array([0.7, 0.8], f32)
    for arg in (x, np.concatenate([x, x])):  # another batch size works too
        assert_same(restored.sin(arg), jnp.sin(arg))


def test_saved_model_int_function(restored: Any) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/shape_poly_test.py::ShapePolyTest::test_saved_model_int_function
    (saving traced the gradient of an int function; back to JAX through call_tf, which
    ``trace=False`` asks for)."""  # noqa: E501
    back = to(restored.flat, "jax", trace=False)
    for n in (2, 3):
        x = np.arange(n * 12, dtype=i32).reshape((n, 3, 4))
        out = back(x)
        assert isinstance(out, jax.Array)
        np.testing.assert_array_equal(out, x.reshape(-1))
        np.testing.assert_array_equal(jax.jit(back)(x), x.reshape(-1))


def test_saved_model_int_function_default_route(restored: Any) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/shape_poly_test.py::ShapePolyTest::test_saved_model_int_function
    through the default tf -> jax route (to(restored, "jax"), issue 29's round trip):
    eagerly and under jax.jit, and jax.grad of the float function saved beside it, equal to
    the JAX originals."""  # noqa: E501
    x = np.arange(24, dtype=i32).reshape((2, 3, 4))
    back = to(restored.flat, "jax")
    np.testing.assert_array_equal(back(x), x.reshape(-1))
    np.testing.assert_array_equal(jax.jit(back)(x), x.reshape(-1))
    sin = to(restored.sin, "jax")
    v = np.array([0.1, 0.5, 0.9], f32)
    np.testing.assert_allclose(jax.jit(sin)(v), np.sin(v), rtol=1e-6)
    np.testing.assert_allclose(jax.grad(lambda u: sin(u).sum())(v), np.cos(v), rtol=1e-6)


def test_saved_model_constant_gradient(restored: Any) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/shape_poly_test.py::ShapePolyTest::test_saved_model_constant_gradient
    (and its gradient, ones, through the reloaded function)."""  # noqa: E501
    x = tf.constant([0.7, 0.8, 0.9], tf.float32)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = restored.identity(x)
    assert_same(y, x.numpy())
    assert_same(tape.gradient(y, x), np.ones(3, f32))


_README_OK = [
    ("reshape_b*4", lambda x: jnp.reshape(x, (x.shape[0] * x.shape[1],)), "(b, 4)", (3, 4)),
    ("reshape_prod", lambda x: jnp.reshape(x, (np.prod(x.shape),)), "(b, 4)", (3, 4)),
    ("dim_as_value", lambda x: x + x.shape[0] + jnp.sin(x.shape[0]), "b", (3,)),
    ("mean", lambda x: jnp.sum(x, axis=0) / x.shape[0], "(v, _)", (3, 4)),
    ("prod_of_array", lambda x: jnp.prod(jnp.array(x.shape)) + x, "(b, 4)", (3, 4)),
    ("reshape_2_-1", lambda x: jnp.reshape(x, (2, -1)), "(b, _, _)", (4, 5, 6)),
    ("reshape_-1_b1", lambda x: jnp.reshape(x, (-1, x.shape[0])), "(b1, b2, ...)", (4, 5, 6)),
    ("reshape_2b", lambda x: jnp.reshape(x, (2, -1)), "(2*b, ...)", (4, 5, 7)),
]


@pytest.mark.parametrize(
    ("fun", "poly", "shape"), [pytest.param(*c[1:], id=c[0]) for c in _README_OK]
)
def test_readme_examples(fun: Callable[..., Any], poly: str, shape: tuple[int, ...]) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/shape_poly_test.py::ShapePolyTest::test_readme_examples
    (the conversions that work; each at two sizes)."""  # noqa: E501
    g = convert(fun, polymorphic_shapes=[poly])
    other = (2 * shape[0], *shape[1:]) if "b2" not in poly else (shape[0], 3, *shape[2:])
    for s in (shape, other):
        x = np.ones(s, f32)
        assert_same(g(x), fun(x))


def _f1(x: Any) -> Any:  # f32[b]: differs for b == 0, which b >= 1 excludes
    return jnp.concatenate([x, jnp.array([0.0 if x.shape[0] == 0 else 1.0], f32)])


def _f2(x: Any) -> Any:  # f32[b, b]
    return jnp.sum(x) + (0.0 if x.shape[0] != x.shape[1] else 1.0)


@pytest.mark.parametrize(
    ("fun", "poly", "args", "message"),
    [
        pytest.param(lambda x: jnp.prod(x.shape) + x, ["(b, 4)"], [(3, 4)],
                     "prod requires ndarray or scalar arguments", id="prod_of_shape"),
        pytest.param(lambda x, y: x + y, ["(v,)", "(4,)"], [(4,), (4,)],
                     re.escape("add got incompatible shapes for broadcasting: (v,), (4,)"),
                     id="add_v_4"),
        pytest.param(lambda x: jnp.matmul(x, x), ["(v, 4)"], [(4, 4)],
                     re.escape("dot_general requires contracting dimensions to have the same "
                               "shape, got (4,) and (v,)"), id="matmul"),
        pytest.param(lambda x: jnp.reshape(x, (2, -1)), ["(b, _, _)"], [(4, 5, 7)],
                     re.escape("Cannot divide evenly the sizes of shapes (b, 5, 7) and (2, -1)"),
                     id="reshape_divide"),
        pytest.param(lambda x: 0 if x.shape[0] + 1 >= x.shape[1] else 1, ["(a, b)"], [(4, 4)],
                     re.escape("Symbolic dimension comparison 'a + 1' >= 'b' is inconclusive"),
                     id="inconclusive"),
        pytest.param(jnp.sum, ["a + b"], [(5,)],
                     "Cannot solve for values of dimension variables", id="a+b"),
    ],
)  # fmt: skip
def test_readme_examples_errors(
    fun: Callable[..., Any], poly: list[str], args: list[Any], message: str
) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/shape_poly_test.py::ShapePolyTest::test_readme_examples
    DIFFERS: jax2tf's TypeError/ValueError/InconclusiveDimensionOperation arrives as the
    project's ConversionError chaining it, with jax2tf's message."""  # noqa: E501
    with pytest.raises(ConversionError, match=message):
        convert(fun, polymorphic_shapes=poly)(*(np.ones(a, f32) for a in args))


@pytest.mark.parametrize(
    ("fun", "poly", "x", "message"),
    [
        pytest.param(_f1, ["b"], np.array([], f32), re.escape(
            "Expected value >= 1 for dimension variable 'b'. Using the following polymorphic "
            "shapes specifications: args[0].shape = (b,). Obtained dimension variables: "
            "'b' = 0"), id="b>=1"),
        pytest.param(_f2, ["b, b"], np.ones((4, 5), f32), re.escape(
            "Found inconsistency between dimension size args[0].shape[1] (= 5) and the "
            "specification 'b' (= 4)"), id="b,b"),
    ],
)  # fmt: skip
def test_readme_examples_shape_assertions(
    fun: Callable[..., Any], poly: list[str], x: Any, message: str
) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/shape_poly_test.py::ShapePolyTest::test_readme_examples
    (what native serialization checks when TensorFlow runs the module)."""  # noqa: E501
    assert_same(tf.constant(fun(x)), fun(x))  # JAX with static shapes: no error
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        convert(fun, polymorphic_shapes=poly)(x)


def _sum_times_n(x: Any) -> Any:
    return jnp.sum(x, axis=0) * x.shape[0]


_X3 = np.arange(3, dtype=f32)
_XV = np.arange(24, dtype=f32).reshape((2, 3, 4))


@pytest.mark.parametrize(
    ("fun", "poly", "args", "want", "other"),
    [
        pytest.param(_sum_times_n, ["(b,)"], (_X3,), 9.0, [(5,)], id="plain"),
        pytest.param(jax.jit(_sum_times_n), ["(b,)"], (_X3,), 9.0, [(5,)], id="jit"),
        pytest.param(lambda x, xt: jax.jvp(_sum_times_n, (x,), (xt,)), ["b", "b"],
                     (_X3, np.array([0.1, 0.2, 0.3], f32)), (9.0, 1.8), [(5,), (5,)], id="jvp"),
        pytest.param(jax.grad(_sum_times_n), ["b"], (_X3,), [3.0, 3.0, 3.0], [(5,)], id="grad"),
        pytest.param(jax.vmap(_sum_times_n, in_axes=1), ["b1, b2, ..."], (_XV,),
                     np.stack([_sum_times_n(_XV[:, i, :]) for i in range(3)]), [(5, 2, 4)],
                     id="vmap"),
    ],
)  # fmt: skip
def test_dynamic_shapes(
    fun: Callable[..., Any], poly: list[str], args: tuple[Any, ...], want: Any, other: Any
) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/shape_poly_test.py::ShapePolyTest::test_dynamic_shapes
    (upstream's values, then the same export at other sizes against JAX)."""  # noqa: E501
    g = convert(fun, polymorphic_shapes=poly)
    got = g(*args)
    np.testing.assert_allclose(
        np.asarray(tf.nest.map_structure(lambda t: t.numpy(), got)), want, rtol=1e-6
    )
    more = [np.arange(np.prod(s), dtype=f32).reshape(s) / 10 for s in other]
    assert_same(g(*more), fun(*more))


def test_mean0() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/shape_poly_test.py::ShapePolyTest::test_mean0"""  # noqa: E501
    check_poly(lambda x: jnp.sum(x, axis=0) / x.shape[0], ["b, _"], [spec(None, 4)],
               [(rand(3, 4),), (rand(7, 4),)], (4,))  # fmt: skip


def test_shape_as_array() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/shape_poly_test.py::ShapePolyTest::test_shape_as_array"""  # noqa: E501

    def f(x: Any) -> Any:
        return x + jnp.sum(jnp.array(x.shape)).astype(i32)

    check_poly(f, ["b, _"], [spec(None, 4)], [(rand(3, 4),), (rand(6, 4),)], (None, 4))


def test_dim_as_value_weak_type() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/shape_poly_test.py::ShapePolyTest::test_dim_as_value_weak_type"""  # noqa: E501
    weak = []

    def f(x: Any) -> Any:
        d0 = jnp.array(x.shape[0])  # weakly typed
        d1 = x.shape[0] + jnp.array(4)  # and an implicit conversion to an array
        weak.extend(d.aval.weak_type for d in (d0, d1) if isinstance(d, jax.core.Tracer))
        return d0 + np.array(5.0, f32) + d1 + x[0]

    g = convert(f, polymorphic_shapes=["b"])
    with jax.numpy_dtype_promotion("strict"):  # sensitive to weak types; active at tracing
        for n in (3, 6):
            x = rand(n)
            out = g(x)
            assert out.dtype == tf.float32
            np.testing.assert_allclose(out.numpy(), 2 * n + 9 + x[0], rtol=1e-6)
    assert weak and all(weak)


def test_vmap_while() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/shape_poly_test.py::ShapePolyTest::test_vmap_while"""  # noqa: E501

    def f(x: Any) -> Any:
        return lax.while_loop(lambda v: jnp.sum(v) >= 0.0, lambda v: v - 1.0, x)

    runs = [(rand(5, 3),), (rand(2, 3, seed=1),)]
    check_poly(jax.vmap(f), ["b, ..."], [spec(None, 3)], runs, (None, 3))


@pytest.mark.parametrize(
    ("fun", "poly", "n"),
    [
        (jax.vmap(lambda x, y: x + y), ["b, ...", None], 2),
        (jax.vmap(lambda x, y, z: x + y + z), ["b, ...", "c, ...", None], 3),
    ],
    ids=["b_and_static", "b_and_c"],
)
def test_vmap_error(fun: Callable[..., Any], poly: list[Any], n: int) -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/shape_poly_test.py::ShapePolyTest::test_vmap_error
    DIFFERS: JAX's ValueError arrives as the project's ConversionError chaining it."""  # noqa: E501
    x = np.ones((3, 5), f32)
    with pytest.raises(ConversionError, match="vmap got inconsistent sizes for array axes"):
        convert(fun, polymorphic_shapes=poly)(*[x] * n)


def test_reshape_compiled() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/shape_poly_test.py::ShapePolyTest::test_reshape_compiled
    (traced once, compiled by TensorFlow for two shapes)."""  # noqa: E501
    traced = []

    def f(x: Any) -> Any:
        traced.append(1)
        return jnp.sin(x).reshape([x.shape[0], -1])

    g = convert(f, polymorphic_shapes=["b, ..."])
    compiled = tf.function(g, autograph=False, jit_compile=True)
    concrete = compiled.get_concrete_function(spec(None, 2, 3, dtype=tf.float64))
    assert len(traced) == 1
    for n in (4, 6):
        x = np.random.default_rng(n).random((n, 2, 3))
        assert_same(concrete(x), jax.jit(f)(x))
    assert len(traced) == 3  # the two jax.jit references only: TensorFlow did not retrace


def test_eval_poly_shapes() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/shape_poly_test.py::ShapePolyTest::test_eval_poly_shapes
    (the output's polymorphic shape "(a, 10)" that upstream computes with
    jax2tf.eval_polymorphic_shape, used as the next function's input spec)."""  # noqa: E501

    def f1(x: Any, y: Any) -> Any:  # f32[a, 5], f32[a, 5] -> f32[a, 10]
        return jnp.concatenate([x, y], axis=1)

    def f2(x: Any, z: Any) -> Any:  # f32[a, 5], f32[a, 10] -> (f32[a, 10],)
        return (jnp.concatenate([x, lax.slice_in_dim(z, 0, 5, axis=1)], axis=1),)

    first = convert(f1, polymorphic_shapes=["a, _", "a, _"])
    second = convert(f2, polymorphic_shapes=["a, _", "(a, 10)"])
    for n in (3, 6):
        x = np.arange(n * 5, dtype=f32).reshape((n, 5))
        z = first(x, x)
        assert z.shape == (n, 10)
        assert_same(second(x, z), f2(x, f1(x, x)))


def test_eval_poly_shapes_tuple_output() -> None:
    """upstream: jax-ml/jax/jax/experimental/jax2tf/tests/shape_poly_test.py::ShapePolyTest::test_eval_poly_shapes_tuple_output"""  # noqa: E501

    def f1(x: Any, y: Any) -> Any:  # f32[a, 5], f32[b, 5] -> (f32[a, 5], f32[a + b, 5])
        return x, jnp.concatenate([x, y], axis=0)

    def f2(z: Any, w: Any) -> Any:  # f32[a, 5], f32[a + b, 5] -> f32[2*a + b, 5]
        return jnp.concatenate([z, w], axis=0)

    first = convert(f1, polymorphic_shapes=["a, _", "b, _"])
    second = convert(f2, polymorphic_shapes=("(a, 5)", "(b + a, 5)"))
    for a, b in ((3, 4), (5, 2)):
        x = np.arange(a * 5, dtype=f32).reshape((a, 5))
        y = np.arange(b * 5, dtype=f32).reshape((b, 5))
        z, w = first(x, y)
        assert_same(second(z, w), f2(*f1(x, y)))
