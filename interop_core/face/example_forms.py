"""Examples of the forms of arrays for ``explain --form``: sparse, ragged, tables, a plugin's own.

What a framework can build comes from its plugins, not from here:

- the examples plugins declare for the conformance kit (``FrameworkSpec.diagnostics.forms``,
  filled from each ``FormSpec.examples``): "sparse coo" and "sparse csr" of torch, JAX, scipy
  (TensorFlow: coo), "ragged" rows of torch, TensorFlow, JAX and Arrow, a safetensors "file",
  a pandas "1-d Series". ``--form`` names one by its name or a word of it ("sparse",
  "series"), and ``--layout`` picks among them by the flag that names it (coo, csr).
- sparse layouts no plugin declares an example of (``--layout csc`` or ``bsr``) are made
  from a declared sparse example by its own conversion method, found by name
  (``tocsc()``/``tobsr()`` of scipy's arrays, ``to_sparse_csc()``/``to_sparse_bsr()`` of
  torch's tensors); a framework whose arrays have neither cannot produce them.
- a table (``--form table``) is the framework's own table constructor, ``DataFrame`` or
  ``table`` of its module (polars, pandas, pyarrow), called with ``{name: column}`` of
  columns its 1-d example builds.

Imported by the command line only; the framework is imported when an example is built.
"""

from __future__ import annotations

import functools
import importlib
import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from ..declare.specs import Form, FrameworkSpec, TensorInfo
from .example_arrays import ExampleError, check_size

#: ``--form`` of a plain dense array (the framework's ``example``) and of a table.
DENSE = "dense"
TABLE = "table"
#: Sparse layouts ``--layout`` may name with ``--form sparse`` (besides those declared).
SPARSE_LAYOUTS = ("coo", "csr", "csc", "bsr")
_NO_LAYOUT = (
    "--layout has no meaning for --form {0}: it picks a dense layout, or with --form sparse "
    "a sparse one"
)
#: ``--shape`` of a table when none is given: rows, columns.
TABLE_SHAPE = (3, 2)


def _words(form: Form) -> list[str]:
    return form.name.lower().split()


def family(form: Form) -> str:
    """What ``--form`` calls a declared form: its name without the layout word that one of
    its flags names ("sparse coo" -> "sparse"; "1-d Series" stays "1-d series")."""
    words = _words(form)
    kept = [words[0], *(w for w in words[1:] if w not in form.flags)]
    return " ".join(kept)


def layout_of(form: Form) -> str | None:
    """The layout word of a declared form's name ("sparse coo" -> "coo"), or None."""
    words = _words(form)
    found = [w for w in words[1:] if w in form.flags]
    return found[0] if found else None


def _matches(form: Form, wanted: str) -> bool:
    name = form.name.lower()
    return wanted == name or wanted == family(form) or wanted in name.split()


def available(spec: FrameworkSpec) -> str:
    """The forms ``spec`` can build, in words: "dense, sparse (coo, csr), ragged"."""
    found: dict[str, list[str]] = {}
    if spec.example is not None:
        found[DENSE] = []
    for form in spec.diagnostics.forms:
        layouts = found.setdefault(family(form), [])
        layout = layout_of(form)
        if layout is not None:
            layouts.append(layout)
    if _table_maker(spec) is not None:
        found.setdefault(TABLE, [])
    return ", ".join(f"{n} ({', '.join(ls)})" if ls else n for n, ls in found.items()) or "none"


def _nested_rows(lengths: Sequence[int], flat: list[Any]) -> list[list[Any]]:
    rows, start = [], 0
    for n in lengths:
        rows.append(flat[start : start + n])
        start += n
    return rows


def _flat_values(count: int, dtype: str, sparse: bool = False) -> list[Any]:
    """``count`` values ``dtype`` holds exactly: 0, 1, 2, ...; with ``sparse``, two in three
    of them zero (a sparse example stores the others)."""
    out: list[Any] = []
    for i in range(count):
        n = (i // 3 % 15 + 1 if i % 3 == 0 else 0) if sparse else i % 16
        out.append(n % 2 == 1 if dtype == "bool" else float(n) if dtype[0] in "fbc" else n)
    return out


def _nested(flat: list[Any], shape: Sequence[int]) -> Any:
    if not shape:
        return flat[0]
    step = math.prod(shape[1:])
    return [_nested(flat[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0])]


def _call(what: str, spec: FrameworkSpec, build: Callable[[], Any]) -> Any:
    """``build()``, with a framework's failure told as an ExampleError about ``what``."""
    try:
        with warnings.catch_warnings():  # e.g. torch's "sparse CSR support is in beta"
            warnings.simplefilter("ignore")
            return build()
    except ExampleError:
        raise
    except Exception as exc:  # the framework has no such array (or refuses the values)
        first = (str(exc).strip().splitlines() or [""])[0].rstrip(". ")
        raise ExampleError(
            f"{spec.name} cannot produce {what}: {type(exc).__name__}: {first}."
        ) from None


def _converted(x: Any, layout: str) -> Any:
    """A sparse example ``x`` converted to ``layout`` by its own method, or None."""
    for name in (f"to{layout}", f"to_sparse_{layout}"):
        method = getattr(x, name, None)
        if method is None:
            continue
        if layout in ("bsr", "bsc") and name.startswith("to_sparse_"):
            shape = tuple(getattr(x, "shape", ()))
            return method(tuple(_divisor(n) for n in shape[-2:]))  # torch needs a blocksize
        return method()
    return None


def _divisor(n: int) -> int:
    """The smallest divisor of ``n`` above 1 (a block size that tiles the dim), or 1."""
    return next((d for d in range(2, n + 1) if n % d == 0), 1)


def _sparse(
    spec: FrameworkSpec, forms: list[Form], layout: str | None, shape: tuple[int, ...], dtype: str
) -> tuple[Any, str]:
    """A sparse example of ``layout`` and its name: a declared one, or one converted from a
    declared one by its own method."""
    declared = {layout_of(f): f for f in forms}
    want = layout or next(iter(declared), None)
    values = _nested(_flat_values(math.prod(shape), dtype, sparse=True), shape)
    what = f"a sparse {want} {dtype} array of shape {shape}"
    form = declared.get(want)
    if form is not None:
        x = _call(what, spec, lambda: form.build(values, dtype))
        return x, form.name
    bases = list(declared.values())
    for base in bases:
        x = _call(what, spec, functools.partial(base.build, values, dtype))
        made = _call(what, spec, functools.partial(_converted, x, str(want)))
        if made is not None:
            return made, f"{family(base)} {want}"
    have = ", ".join(str(k) for k in declared)
    raise ExampleError(
        f"{spec.name} cannot produce {what}: it declares sparse {have} examples, and "
        f"its arrays have no to{want}() or to_sparse_{want}() to convert one."
    )


def _table_maker(spec: FrameworkSpec) -> Callable[[dict[str, Any]], Any] | None:
    """The framework's table constructor, ``DataFrame`` or ``table`` of its module (which
    this imports: the call names the framework), where its plugin also builds 1-d columns."""
    if _column_maker(spec) is None:
        return None
    try:
        mod = importlib.import_module(spec.package.module or spec.name)
    except Exception:  # not importable: no tables from it
        return None
    make = getattr(mod, "DataFrame", None) or getattr(mod, "table", None)
    return make if callable(make) else None


def _column_maker(spec: FrameworkSpec) -> Callable[[Any, str], Any] | None:
    """What builds a 1-d column: the framework's example, or a 1-d form of its own (pandas'
    Series)."""
    if spec.example is not None:
        return spec.example
    return next(
        (f.build for f in spec.diagnostics.forms if not f.flags and len(f.shapes[0]) == 1), None
    )


def _table(spec: FrameworkSpec, shape: tuple[int, ...], dtype: str) -> Any:
    """A table of ``shape`` (rows, columns) of the framework's 1-d columns."""
    if len(shape) not in (1, 2):
        raise ExampleError(f"a table's --shape is ROWS or ROWS,COLUMNS, not {shape}.")
    rows, cols = shape if len(shape) == 2 else (shape[0], 1)
    what = f"a table of {rows} rows and {cols} {dtype} columns"
    make, column = _table_maker(spec), _column_maker(spec)
    if make is None or column is None:
        raise ExampleError(
            f"{spec.name} cannot produce {what}: its module has no DataFrame or table "
            "constructor, or its plugin no 1-d example to make columns of (tables come from "
            "polars, pandas and pyarrow)."
        )

    def table() -> Any:
        values = _flat_values(rows + cols, dtype)
        return make({f"c{j}": column(values[j : j + rows], dtype) for j in range(cols)})

    return _call(what, spec, table)


class FormExample(NamedTuple):
    """An example of a form, built for ``explain --form``."""

    #: The object (a sparse array, a ragged one, a table, a file's path).
    obj: Any
    #: What it is, after the framework's name: "sparse csr float32 array of shape (3, 4)".
    what: str
    #: The ``to()`` options that make a dense array of it (``--densify``): the form's own.
    dense: dict[str, Any]


def make_form_example(
    spec: FrameworkSpec, form: str, layout: str | None, shape: tuple[int, ...] | None, dtype: str
) -> FormExample:
    """An example of ``form`` ("sparse", "ragged", "table", a declared form's name or a word
    of it) of ``spec``'s framework; ``layout`` picks a sparse layout.

    ``shape`` None takes the form's first example shape (a ragged form's: row lengths; a
    table's: rows, columns). Raises ExampleError when the framework cannot build it.
    """
    wanted = form.lower()
    if dtype not in spec.dtypes:
        raise ExampleError(
            f"{spec.name} cannot hold dtype {dtype!r}; it holds: {', '.join(sorted(spec.dtypes))}."
        )
    if wanted == TABLE:
        if layout is not None:
            raise ExampleError(_NO_LAYOUT.format("table"))
        shape = shape or TABLE_SHAPE
        check_size(shape)
        rows, cols = shape if len(shape) == 2 else (shape[0] if shape else 0, 1)
        what = f"table of {rows} rows and {cols} {dtype} columns"
        return FormExample(_table(spec, shape, dtype), what, {})
    forms = [f for f in spec.diagnostics.forms if _matches(f, wanted)]
    if not forms:
        raise ExampleError(f"{spec.name} has no {form!r} examples; it builds: {available(spec)}.")
    shape = shape if shape is not None else forms[0].shapes[0]
    check_size((sum(shape),) if forms[0].rows else shape)
    if any(layout_of(f) for f in forms):  # a form with layouts: sparse
        x, name = _sparse(spec, forms, layout, shape, dtype)
        return FormExample(x, f"{name} {dtype} array of shape {shape}", dict(forms[0].dense))
    if layout is not None:
        raise ExampleError(_NO_LAYOUT.format(form))
    chosen = forms[0]
    if chosen.rows:
        values: Any = _nested_rows(shape, _flat_values(sum(shape), dtype))
        what = f"{chosen.name} {dtype} array of {len(shape)} rows of lengths {shape}"
    else:
        values = _nested(_flat_values(math.prod(shape), dtype), shape)
        what = f"{chosen.name} of {dtype} values of shape {shape}"
    x = _call(f"a {what}", spec, lambda: chosen.build(values, dtype))
    return FormExample(x, what, dict(chosen.dense))


def describe_form(framework: str, example: FormExample, info: TensorInfo | None) -> str:
    """One line about a form's example, with what its TensorInfo adds (None: a container,
    such as a table, whose routes are told per array)."""
    line = f"Example: {framework} {example.what}"
    if info is None:
        return line
    stored = f", {info.stored} bytes stored" if info.stored >= 0 else ""
    flags = f", flags {', '.join(sorted(info.flags))}" if info.flags else ""
    return f"{line}{stored}{flags}, on {info.device}"
