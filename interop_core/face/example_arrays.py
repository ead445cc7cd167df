"""Example arrays of a framework in a given shape, dtype and layout (``explain``, ``doctor``).

The framework's own ``FrameworkSpec.example`` builds a C-contiguous array; the other layouts
are made from it with generic operations (``.T``, slicing, the Array API's ``broadcast_to``,
``reshape``) or the framework's ``example_view``, and the result is checked with the
framework's ``describe``.

Imported by the command line only; the framework is imported when an example is built.
"""

from __future__ import annotations

import argparse
import math
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

from ..declare.specs import FrameworkSpec, TensorInfo

#: What ``--layout`` can ask for, and how each is checked on the built array.
LAYOUT_CHOICES = ("C", "F", "strided", "negative", "broadcast", "readonly", "unaligned")

_LAYOUT_HELP = {
    "F": "it needs two or more dimensions longer than 1, and a framework whose .T is a view",
    "strided": "it needs a last dimension longer than 1, and slicing that returns a view",
    "negative": "it needs a first dimension longer than 1, and x[::-1] as a view",
    "broadcast": "it needs a dimension longer than 1, and a broadcast view: the Array API's "
    "broadcast_to, or the framework's example_view",
    "readonly": "only frameworks with read-only arrays have them",
    "unaligned": "it needs slicing and reshape that return views",
}


class ExampleError(Exception):
    """The framework cannot build the example asked for (exit status 2 of ``explain``)."""


#: The most elements an example may have: it is built from Python values, one by one, and
#: a route depends on the dtype, the layout and the flags, never on how big the array is.
MAX_ELEMENTS = 1 << 24


def check_size(shape: Sequence[int], what: str = "--shape") -> None:
    """Refuse an example of more than :data:`MAX_ELEMENTS` elements (ExampleError)."""
    count = 1
    for n in shape:
        count *= n
        if count > MAX_ELEMENTS:
            raise ExampleError(
                f"{what} {tuple(shape)} asks for more than {MAX_ELEMENTS} elements; an example "
                "is built from Python values, and its route does not depend on its size: "
                "ask with a smaller one."
            )


def parse_shape(text: str) -> tuple[int, ...]:
    """``"2,3"`` -> (2, 3); ``""`` or ``"()"`` -> () (a 0-d array). For ``--shape``."""
    text = text.strip().strip("()").strip()
    if not text:
        return ()
    try:
        shape = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected sizes like 2,3, not {text!r}") from None
    if any(n < 0 for n in shape):
        raise argparse.ArgumentTypeError(f"sizes must not be negative: {text!r}")
    return shape


def _nested(values: Iterator[Any], shape: Sequence[int]) -> Any:
    """A nested list of ``shape`` filled from ``values`` (a scalar for shape ())."""
    if not shape:
        return next(values)
    return [_nested(values, shape[1:]) for _ in range(shape[0])]


def example_values(shape: Sequence[int], dtype: str) -> Any:
    """Nested Python values 0, 1, 2, ... of ``shape`` that ``dtype`` holds exactly."""
    count = math.prod(shape)
    if dtype == "bool":
        flat: list[Any] = [i % 2 == 1 for i in range(count)]
    elif dtype.startswith(("int", "uint")):
        flat = [i % 100 for i in range(count)]
    else:  # float, complex, bfloat16, float8: small integers are exact in all of them
        flat = [float(i % 16) for i in range(count)]
    return _nested(iter(flat), tuple(shape))


def _own_view(spec: FrameworkSpec, x: Any, layout: str, shape: tuple[int, ...]) -> Any:
    """The framework's own view of ``x`` for ``layout`` (``example_view``), or None."""
    view = spec.diagnostics.example_view
    return None if view is None else view(x, layout, shape)


def _broadcast(spec: FrameworkSpec, x: Any, shape: tuple[int, ...]) -> Any:
    """``x`` broadcast to ``shape`` as a view: the framework's own, or the Array API's
    broadcast_to (which some frameworks answer with a copy: the layout check says so)."""
    view = _own_view(spec, x, "broadcast", shape)
    if view is not None:
        return view
    namespace = getattr(x, "__array_namespace__", None)
    if namespace is not None:
        return namespace().broadcast_to(x, shape)
    raise ExampleError(
        "its arrays have no __array_namespace__().broadcast_to and its spec no example_view"
    )


def _build(spec: FrameworkSpec, shape: tuple[int, ...], dtype: str, layout: str) -> Any:
    """The example array, turned into ``layout`` with generic operations (may raise)."""
    example = spec.example
    assert example is not None

    def build(sh: tuple[int, ...]) -> Any:
        return example(example_values(sh, dtype), dtype)

    if layout == "F":
        return build(shape[::-1]).T
    if layout == "strided":
        if not shape:
            raise ExampleError("a 0-d array has no stride to skip")
        return build((*shape[:-1], 2 * shape[-1]))[..., ::2]
    if layout == "negative":
        if not shape:
            raise ExampleError("a 0-d array cannot be reversed")
        return build(shape)[::-1]
    if layout == "broadcast":
        base = (*(1 for _ in shape[:-1]), shape[-1]) if len(shape) > 1 else (1,)
        return _broadcast(spec, build(base), shape)
    if layout == "readonly":
        x = build(shape)
        if spec.describe(x).readonly:
            return x
        view = _own_view(spec, x, "readonly", shape)
        if view is None:
            raise ExampleError("its spec's example_view makes no read-only array")
        return view
    if layout == "unaligned":
        return build((math.prod(shape) + 1,))[1:].reshape(shape)
    return build(shape)


def _has_layout(info: TensorInfo, layout: str) -> bool:
    """Whether the built array really has the ``--layout`` asked for."""
    if layout == "readonly":
        return info.readonly
    if layout == "unaligned":
        return not info.aligned
    return info.layout == layout


def describe_example(info: TensorInfo) -> str:
    """One line about an example array, from its TensorInfo."""
    return (
        f"Example: {info.framework} {info.dtype} array of shape {tuple(info.shape)}, "
        f"layout {info.layout}, "
        f"{'read-only' if info.readonly else 'writable'}, "
        f"{'64-byte aligned' if info.aligned else 'not 64-byte aligned'}, on {info.device}"
    )


def make_example(spec: FrameworkSpec, shape: tuple[int, ...], dtype: str, layout: str) -> Any:
    """An array of ``spec``'s framework with ``dtype``, ``shape`` and ``layout``.

    Raises ExampleError when the framework cannot hold the dtype or produce the layout.
    """
    if spec.example is None:
        raise ExampleError(f"{spec.name} cannot build example arrays (its spec has no example()).")
    check_size((*shape[:-1], 2 * shape[-1]) if layout == "strided" and shape else shape)
    if dtype not in spec.dtypes:
        raise ExampleError(
            f"{spec.name} cannot hold dtype {dtype!r}; it holds: {', '.join(sorted(spec.dtypes))}."
        )
    what = f"a {dtype} array of shape {shape} with --layout {layout}"
    hint = f" ({_LAYOUT_HELP[layout]})" if layout in _LAYOUT_HELP else ""
    try:
        with warnings.catch_warnings():  # e.g. torch's deprecation of .T beyond 2-d
            warnings.simplefilter("ignore")
            x = _build(spec, shape, dtype, layout)
        info = spec.describe(x)
    except ExampleError as exc:
        raise ExampleError(f"{spec.name} cannot produce {what}: {exc}{hint}.") from None
    except Exception as exc:  # the framework has no such operation (or no such view)
        first = (str(exc).strip().splitlines() or [""])[0].rstrip(". ")
        raise ExampleError(
            f"{spec.name} cannot produce {what}: {type(exc).__name__}: {first}{hint}."
        ) from None
    if not _has_layout(info, layout):
        raise ExampleError(
            f"{spec.name} cannot produce {what}: the generic operations gave "
            f"layout {info.layout}, {'read-only' if info.readonly else 'writable'}, "
            f"{'aligned' if info.aligned else 'unaligned'}{hint}."
        )
    return x


# -- arrays as ordinary code makes them (the doctor's rows beside the examples) ------------------

#: Sizes in bytes of the ordinary float32 arrays the doctor measures.
ORDINARY_NBYTES = (16, 4096, 1 << 20, 16 << 20)


def sizes_text(sizes: Sequence[int] = ORDINARY_NBYTES) -> str:
    """``sizes`` in words: "16 B, 4 KiB, 1 MiB and 16 MiB"."""
    names = [f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB" if n >= 1 << 10 else f"{n} B"
             for n in sizes]  # fmt: skip
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
