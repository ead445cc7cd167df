"""Sparse arrays: scipy.sparse, torch sparse, JAX BCOO/BCSR and tf.SparseTensor.

Sparse arrays are a form of their framework's arrays (:mod:`.sparse_forms` declares how
each is found, described and keyed): they carry "sparse" (opaque: only the edges here, which
name the form, take them), the layout "coo" or "csr", "canonical" (sorted indices without
duplicates), "int64_indices", and "batched"/"hybrid" for layouts only their own framework
has. The edges here take them:

- across frameworks, through scipy.sparse on the host: every framework's COO/CSR becomes a
  scipy array over the same buffers, and a scipy array becomes each framework's, sharing
  what the target holds as it is and copying the rest once (each edge's note says which
  buffer and why: torch COO wants one (ndim, nnz) int64 index tensor, TensorFlow (nnz, ndim)
  int64 in canonical order, JAX 64-byte aligned buffers and int32 indices without x64);
- inside each framework: a copy (for copy=True) and, on request (``densify=True``), the
  dense array: one copy, and a dense input passes as it is.

Declarations only: the functions live in :mod:`.sparse_convert`, imported by a route's
first use of an edge (never when this plugin is imported).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from interop_core.plugin import (
    DTYPES,
    VARIANT,
    ArrayEdge,
    ConverterSpec,
    FormSpec,
    GlobalFlag,
    Needs,
    PlanKey,
    Reason,
    hookimpl,
)

from ..frameworks.jax import x64_enabled, x64_from_environment
from . import sparse_forms

#: Loaded once one is imported (docs/plugins.md, "Loaded when needed"): their sparse arrays.
INTEROP_ABOUT = ("torch", "jax", "tensorflow", "scipy.sparse", "cupy")

#: The form every edge here takes (other opaque flags keep them off on their own).
_FORM = frozenset({sparse_forms.SPARSE})
#: Flags no edge across frameworks takes: grad, layouts only the array's own framework has.
_OTHER = frozenset({"requires_grad", "batched", "hybrid"})
#: Flags a sparse array keeps along a copy inside its framework.
_SPARSE_FLAGS = frozenset(
    {"sparse", "coo", "csr", "canonical", "int64_indices", "batched", "hybrid",
     "csc", "bsr", "dia", "lil", "dok"}
)  # fmt: skip
_CPU = frozenset({"cpu"})
#: scipy.sparse formats that no other framework has.
_SCIPY_ONLY = frozenset({"csc", "bsr", "dia", "lil", "dok"})
_ANY_DEVICE = frozenset({"cpu", "cuda"})

#: scipy.sparse computes in none of these.
_NOT_IN_SCIPY = frozenset({"float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"})
_SCIPY_DTYPES = "scipy.sparse has no float16, bfloat16 or float8 arithmetic"

#: JAX holds int64 indices only with jax_enable_x64 (any values dtype reads it).
_X64_INDICES = GlobalFlag(
    name="jax_enable_x64",
    read=x64_enabled,
    module="jax",
    unloaded=x64_from_environment,
    dtypes=frozenset(DTYPES),
    reason=(
        "jax_enable_x64 is off, so JAX would narrow the int64 indices to int32 (the copying "
        "edge does that, and says so)"
    ),
)


def _loader(name: str, source: str, target: str) -> Callable[[], Callable[..., Any]]:
    """Loads :mod:`.sparse_convert`'s function ``name`` when a route first needs it, behind
    the check of its input's structure (``sparse_convert.checked``: every sparse edge takes
    it, so no framework reads a buffer before it is checked)."""

    def load() -> Callable[..., Any]:
        from . import sparse_convert

        fn = getattr(sparse_convert, name)
        if name == "as_is":  # a dense array (densify=True asks nothing of it)
            return fn  # type: ignore[no-any-return]
        return sparse_convert.checked(fn, source, target)

    return load


def _needs(layout: str, *more: str, no: frozenset[str] = frozenset(), **kw: Any) -> Needs:
    """A sparse array of ``layout`` (with flags ``more``), no flag of ``_OTHER`` or ``no``."""
    return Needs(flags=frozenset({"sparse", layout, *more}), no_flags=_OTHER | no, **kw)


def _only(check: Callable[[PlanKey], bool], what: str) -> Callable[[PlanKey], str | None]:
    """An ``extra`` condition: the variant for arrays where ``check`` holds."""

    def extra(key: PlanKey) -> str | None:
        return None if check(key) else Reason(f"handles only {what}", VARIANT)

    return extra


def _edge(
    name: str, source: str, target: str, fn: str, zero_copy: bool, accepts: Needs,
    note: str, adds: frozenset[str], keeps: frozenset[str] = frozenset(), *,
    forms: frozenset[str] = _FORM, copies: str = "", readonly_result: bool | None = None,
    aligned_result: bool | None = None, **more: Any,
) -> ConverterSpec:  # fmt: skip
    return ConverterSpec(
        name=name, source=source, target=target, load=_loader(fn, source, target),
        zero_copy=zero_copy, accepts=accepts, devices=more.pop("devices", _CPU), note=note,
        adds_flags=adds, keeps_flags=keeps, **more,
        array=ArrayEdge(forms=forms, copies=copies, readonly_result=readonly_result,
                        aligned_result=aligned_result),
    )  # fmt: skip


def _f(*names: str) -> frozenset[str]:
    return frozenset(names)


_CANON = _f("canonical")
_IDX = _f("int64_indices")


def _across() -> list[ConverterSpec]:
    """Edges between frameworks, through scipy.sparse."""
    scipy_ok: dict[str, Any] = {"no_dtypes": _NOT_IN_SCIPY, "dtype_reason": _SCIPY_DTYPES}
    readonly = _only(lambda k: k.readonly, "read-only buffers")
    writable = _only(lambda k: not k.readonly, "writable buffers")
    return [
        # torch -> scipy: numpy views of every buffer.
        _edge("torch COO as scipy coo_array", "torch", "scipy", "torch_coo_to_scipy", True,
              _needs("coo", **scipy_ok),
              "values and each row of the (ndim, nnz) int64 indices shared (numpy views)",
              _f("sparse", "coo", "int64_indices"), _CANON),
        _edge("torch CSR as scipy csr_array", "torch", "scipy", "torch_csr_to_scipy", True,
              _needs("csr", **scipy_ok), "values, col and crow indices shared (numpy views)",
              _f("sparse", "csr"), _CANON | _IDX),
        # scipy -> torch
        _edge("scipy CSR as torch CSR", "scipy", "torch", "scipy_csr_to_torch", True,
              _needs("csr", "canonical"), "values, indices and indptr shared (torch.from_numpy)",
              _f("sparse", "csr", "canonical"), _IDX),
        _edge("scipy CSR as torch CSR (canonical copy)", "scipy", "torch",
              "scipy_csr_to_torch_copy", False,
              _needs("csr", extra=_only(lambda k: "canonical" not in k.flags,
                                        "non-canonical matrices")),
              "all three buffers copied: torch CSR needs sorted, unique column indices and "
              "this matrix is not canonical (the copy sorts them and sums duplicates, as "
              "scipy defines them)",
              _f("sparse", "csr", "canonical"), _IDX, cost=5.0),
        _edge("scipy CSR as torch CSR (read-only copy)", "scipy", "torch",
              "scipy_csr_to_torch_copy", False, _needs("csr", "canonical", extra=readonly),
              "all three buffers copied: they are read-only (e.g. JAX's) and torch cannot "
              "mark a tensor read-only",
              _f("sparse", "csr", "canonical"), _IDX, cost=5.0),
        _edge("scipy COO as torch COO", "scipy", "torch", "scipy_coo_to_torch", False,
              _needs("coo", extra=writable),
              "indices copied: scipy keeps one index array per dimension, torch COO one "
              "(ndim, nnz) int64 tensor; values shared",
              _f("sparse", "coo", "int64_indices"), _CANON, context=True, copies="the indices"),
        _edge("scipy COO as torch COO (read-only values)", "scipy", "torch",
              "scipy_coo_to_torch_copy", False, _needs("coo", extra=readonly),
              "indices stacked into torch's (ndim, nnz) int64 tensor and values copied: they "
              "are read-only and torch cannot mark a tensor read-only",
              _f("sparse", "coo", "int64_indices"), _CANON, cost=3.0),
        # jax <-> scipy
        *(
            _edge(f"{kind} as scipy {layout}_array", "jax", "scipy", "jax_to_scipy", True,
                  _needs(layout, **scipy_ok),
                  "numpy views of JAX's buffers, read-only: JAX arrays are immutable (its "
                  "padding, indices equal to the shape, left out)",
                  _f("sparse", layout), _CANON | _IDX, readonly_result=True, context=True)
            for kind, layout in (("BCOO", "coo"), ("BCSR", "csr"))
        ),
        _edge("scipy CSR as BCSR", "scipy", "jax", "scipy_csr_to_jax", True,
              _needs("csr", no=_IDX, writable=True),
              "values, indices and indptr shared (jax.dlpack.from_dlpack)",
              _f("sparse", "csr"), _CANON),
        _edge("scipy CSR as BCSR (int64 indices)", "scipy", "jax", "scipy_csr_to_jax", True,
              _needs("csr", "int64_indices", writable=True, flag=_X64_INDICES),
              "values and int64 indices shared (jax_enable_x64 is on)",
              _f("sparse", "csr", "int64_indices"), _CANON),
        _edge("scipy CSR into BCSR (copies)", "scipy", "jax", "scipy_csr_to_jax_copy", False,
              _needs("csr"),
              "buffers JAX cannot share are copied: those not 64-byte aligned or read-only, "
              "and int64 indices while jax_enable_x64 is off (narrowed to int32)",
              _f("sparse", "csr"), _CANON, context=True, cost=5.0),
        _edge("scipy COO as BCOO", "scipy", "jax", "scipy_coo_to_jax", False,
              _needs("coo", aligned=True, writable=True),
              "indices copied: stacked into BCOO's (nnz, ndim) layout (int32 unless "
              "jax_enable_x64 is on); values shared",
              _f("sparse", "coo"), _CANON, context=True, copies="the indices"),
        _edge("scipy COO into BCOO (values copied)", "scipy", "jax", "scipy_coo_to_jax", False,
              _needs("coo", extra=_only(lambda k: k.readonly or not k.aligned,
                                        "unaligned or read-only values")),
              "indices stacked into BCOO's (nnz, ndim) layout and values copied: they are not "
              "64-byte aligned or read-only, and JAX shares neither",
              _f("sparse", "coo"), _CANON, context=True, cost=3.0),
        # tensorflow <-> scipy
        _edge("tf.SparseTensor as scipy coo_array", "tensorflow", "scipy", "tf_to_scipy", True,
              _needs("coo", **scipy_ok),
              "numpy views of the values and of each column of the (nnz, ndim) int64 "
              "indices, read-only: TensorFlow's memory is immutable",
              _f("sparse", "coo", "int64_indices"), readonly_result=True),
        *(
            _edge(f"scipy {layout.upper()} as tf.SparseTensor", "scipy", "tensorflow",
                  "scipy_to_tf", False,
                  _needs(layout, "canonical", aligned=True, no_readonly=True),
                  f"indices copied into TensorFlow's (nnz, ndim) int64 layout{rows}; values "
                  "shared",
                  _f("sparse", "coo", "int64_indices"), context=True, copies="the indices")
            for layout, rows in (("coo", ""), ("csr", " (CSR rows expanded)"))
        ),
        *(
            _edge(f"scipy {layout.upper()} into tf.SparseTensor (values copied)", "scipy",
                  "tensorflow", "scipy_to_tf_copy", False,
                  _needs(layout, extra=_only(lambda k: "canonical" not in k.flags
                                             or not k.aligned or k.readonly,
                                             "non-canonical, unaligned or read-only values")),
                  "indices copied into TensorFlow's (nnz, ndim) int64 layout and values "
                  "copied: TensorFlow needs sorted, unique indices (a non-canonical matrix is "
                  "summed and sorted first, as scipy defines duplicates) and 64-byte aligned "
                  "values that numpy can export (not read-only)",
                  _f("sparse", "coo", "int64_indices"), context=True, cost=3.0)
            for layout in ("coo", "csr")
        ),
    ]  # fmt: skip


def _inside() -> list[ConverterSpec]:
    """Copies (copy=True) and densify=True inside each framework."""
    any_sparse = Needs(flags=_f("sparse"), no_flags=frozenset())
    grad = _f("requires_grad")
    dense = _f("dense")
    densify: dict[str, Any] = {"opt_in": "densify", "options": ("densify",), "devices": _ANY_DEVICE}
    edges = [
        _edge(
            name,
            fw,
            fw,
            fn,
            False,
            accepts,
            "a copy of every buffer",
            _f(),
            _SPARSE_FLAGS | extra,
            devices=_ANY_DEVICE,
            cost=3.0,
            # scipy's copies are numpy's: not 64-byte aligned (TF aborts on such values).
            aligned_result=False if fw == "scipy" else None,
        )
        for name, fw, fn, accepts, extra in (
            ("scipy sparse .copy()", "scipy", "scipy_copy", any_sparse, _f()),
            ("torch sparse .clone()", "torch", "torch_clone", any_sparse, grad),
            ("BCOO/BCSR copy", "jax", "jax_copy", any_sparse, _f()),
            ("tf.SparseTensor copy", "tensorflow", "tf_copy", any_sparse, _f()),
        )
    ]
    # Formats only scipy has become CSR first (one copy): then every route of CSR applies.
    edges.append(
        _edge("scipy .tocsr()", "scipy", "scipy", "scipy_to_csr", False,
              Needs(flags=_f("sparse"), no_flags=_OTHER,
                    extra=_only(lambda k: bool(k.flags & _SCIPY_ONLY), "CSC/BSR/DIA/LIL/DOK")),
              "converted to CSR, one copy: only COO and CSR cross frameworks",
              _f("sparse", "csr", "canonical"), cost=5.0, aligned_result=False)
    )  # fmt: skip
    edges += [
        _edge(
            name,
            fw,
            target,
            fn,
            False,
            accepts,
            "densify=True: the dense array, one copy (duplicates summed)",
            dense,
            extra,
            cost=5.0,
            aligned_result=False if fw == "scipy" else None,
            copies="every element, into a dense array",
            **densify,
        )
        for name, fw, target, fn, accepts, extra in (
            ("scipy .toarray()", "scipy", "numpy", "scipy_densify", any_sparse, _f()),
            ("torch .to_dense()", "torch", "torch", "torch_densify", any_sparse, grad),
            ("BCOO/BCSR .todense()", "jax", "jax", "jax_densify", any_sparse, _f()),
            ("tf.sparse.to_dense", "tensorflow", "tensorflow", "tf_densify", any_sparse, _f()),
        )
    ]
    # A dense array asks nothing of densify=True (a batch may mix sparse and dense leaves).
    edges += [
        _edge(
            "dense already",
            fw,
            fw,
            "as_is",
            True,
            Needs(no_flags=frozenset()),
            "densify=True: the array is dense already",
            dense,
            _f("requires_grad"),
            cost=0.1,
            forms=frozenset(),
            **densify,
        )
        for fw in ("numpy", "torch", "jax", "tensorflow", "cupy")
    ]
    return edges


def _layouts() -> list[ConverterSpec]:
    """``layout=``: the result in the layout asked for, for targets that hold several
    (scipy: COO, CSR, CSC; torch: COO, CSR; JAX: BCOO, BCSR), converted inside a framework
    (new index buffers). The route ends in that layout (the goal is the flags "sparse" and
    the layout, which each edge here marks its result with and nothing more: its order and
    index width are left unclaimed); an array already in it is left as it is. TensorFlow
    holds COO only."""
    common: dict[str, Any] = {"options": ("layout",), "opt_in": "layout"}
    return [
        _edge(name, fw, fw, fn, False, _needs(src), note, _f("sparse", dst), opt_value=dst,
              cost=4.0, **common)
        for name, fw, fn, src, dst, note in (
            ("scipy .tocoo()", "scipy", "scipy_to_coo", "csr", "coo",
             "layout='coo': new coordinate arrays (one per dimension), values shared"),
            ("scipy .tocsr()", "scipy", "scipy_to_csr_layout", "coo", "csr",
             "layout='csr': new buffers, duplicates summed and indices sorted"),
            *(("scipy .tocsc()", "scipy", "scipy_to_csc", src, "csc",
               "layout='csc': new buffers, duplicates summed and indices sorted")
              for src in ("coo", "csr")),
            ("torch .to_sparse_coo()", "torch", "torch_to_coo", "csr", "coo",
             "layout='coo': one (ndim, nnz) int64 index tensor made, coalesced"),
            ("torch .to_sparse_csr()", "torch", "torch_to_csr", "coo", "csr",
             "layout='csr': coalesced, then compressed rows: new index buffers"),
            ("BCSR.to_bcoo()", "jax", "jax_to_bcoo", "csr", "coo",
             "layout='coo': the row pointers expanded into BCOO's (nnz, ndim) indices"),
            ("BCSR.from_bcoo()", "jax", "jax_to_bcsr", "coo", "csr",
             "layout='csr': indices sorted, rows compressed: new index buffers"),
        )
    ] + [
        # TensorFlow's one layout: what layout="coo" asks of it is what it holds.
        _edge("tf.SparseTensor (COO already)", "tensorflow", "tensorflow", "as_is", True,
              _needs("coo"), "layout='coo': TensorFlow holds sparse arrays as COO only",
              _f("sparse", "coo"), _SPARSE_FLAGS, opt_value="coo", cost=0.1, **common),
    ]  # fmt: skip


@hookimpl
def interop_forms() -> list[FormSpec]:
    """The sparse form of torch, JAX, TensorFlow and scipy (see :mod:`.sparse_forms`)."""
    return sparse_forms.forms()


@hookimpl
def interop_converters() -> list[ConverterSpec]:
    """Sparse COO/CSR across scipy, torch, JAX and TensorFlow; copies; densify=True;
    layout=."""
    return [*_across(), *_inside(), *_layouts()]
