"""Toy frameworks for tests that must run in every session (no numpy): arrays over an
``array.array``, one subclass per framework, their specs and zero-copy views between them."""

from __future__ import annotations

import array
from typing import Any

from interop_core.plugin import CPU, ConverterSpec, FrameworkSpec, TensorInfo


class Arr:
    """A toy array over an array.array; subclasses are frameworks."""

    def __init__(self, values: Any = (), buf: array.array[float] | None = None) -> None:
        self.buf = buf if buf is not None else array.array("d", values)


class AlphaArr(Arr):
    pass


class BetaArr(Arr):
    pass


class GammaArr(Arr):
    pass


class DeltaArr(Arr):
    pass


def toy(name: str, cls: type[Arr]) -> FrameworkSpec:
    """Framework ``name`` whose arrays are ``cls``: float64, C-contiguous, on the CPU."""
    return FrameworkSpec(
        name=name,
        array_types=(f"{cls.__module__}.{cls.__qualname__}",),
        describe=lambda x: TensorInfo(name, "float64", CPU, (len(x.buf),), "C", False, True),
        key=lambda x: 0,
        data_ptr=lambda x: x.buf.buffer_info()[0],
        dtypes=frozenset({"float64"}),
    )


def share(source: str, target: str, cls: type[Arr]) -> ConverterSpec:
    """A zero-copy edge: the ``target`` array ``cls`` over the same buffer."""
    return ConverterSpec(
        name=f"{source}->{target} view", source=source, target=target, zero_copy=True,
        load=lambda: lambda x: cls(buf=x.buf),
    )  # fmt: skip
