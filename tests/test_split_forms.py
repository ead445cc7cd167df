"""Forms told apart per object (``FormSpec.test``): a form whose objects are of the
framework's own type, as torch's sparse layouts are torch.Tensors.

Toy frameworks (no numpy needed): an alpha array is "packed" when its ``packed`` attribute
says so; the packed form declares an opaque flag, a test, a description and a key. The
dense edge must never take a packed array, each kind of array gets its own plan (keys
tagged by the form), and the warm path serves both (describe counted: it runs only when a
route is planned). The real case, torch's sparse tensors, is checked beside them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from conftest import need
from toys import AlphaArr, BetaArr, share, toy

from interop_core import ConversionError, CopyRequiredError, NoRouteError, explain, to
from interop_core.plugin import (
    CPU,
    ArrayEdge,
    ConverterSpec,
    Flag,
    FormSpec,
    PluginError,
    TensorInfo,
    hookimpl,
)
from interop_core.testing import isolated_registry

ALPHA = f"{AlphaArr.__module__}.{AlphaArr.__qualname__}"

#: How often each form's describe ran (once per planned route, never on the warm path).
DESCRIBED: dict[str, int] = {}


def _dense_key(x: Any) -> Any:
    if getattr(x, "packed", False):  # the framework keys only what it describes
        raise TypeError("a packed array is keyed by its form")
    return ("dense", len(x.buf) > 0)


def _describe(flags: frozenset[str], form: str) -> Any:
    def describe(x: Any) -> TensorInfo:
        if form == "dense" and getattr(x, "packed", False):  # as torch's refuses a sparse one
            raise ConversionError("a packed array: no plugin declares the packed form")
        DESCRIBED[form] = DESCRIBED.get(form, 0) + 1
        return TensorInfo("alpha", "float64", CPU, (len(x.buf),), "C", False, True, flags)

    return describe


def _unpack(x: Any) -> BetaArr:
    return BetaArr([v * 2 for v in x.buf])  # a packed array holds halves: unpacking copies


class Toys:
    """alpha (dense by its own spec; packed by the form) and beta, a view between them."""

    @hookimpl
    def interop_frameworks(self) -> list[Any]:
        spec = toy("alpha", AlphaArr)
        from dataclasses import replace

        alpha = replace(spec, describe=_describe(frozenset(), "dense"), key=_dense_key)
        return [alpha, toy("beta", BetaArr)]

    @hookimpl
    def interop_converters(self) -> list[ConverterSpec]:
        return [share("alpha", "beta", BetaArr)]


class Packed:
    """The packed form of alpha arrays, and its one edge."""

    def __init__(self, key: bool = True) -> None:
        self.key = key

    @hookimpl
    def interop_forms(self) -> list[FormSpec]:
        return [
            FormSpec(
                name="packed", framework="alpha", types=(ALPHA,),
                test=lambda x: bool(getattr(x, "packed", False)),
                flags=(Flag("packed", "a packed array holds halves: unpack=True", opaque=True),),
                describe=_describe(frozenset({"packed"}), "packed"),
                key=(lambda x: len(x.buf) > 0) if self.key else None,
            )
        ]  # fmt: skip

    @hookimpl
    def interop_converters(self) -> list[ConverterSpec]:
        return [
            ConverterSpec(
                name="unpack", source="alpha", target="beta", zero_copy=False,
                load=lambda: _unpack, cost=2.0, array=ArrayEdge(forms=frozenset({"packed"})),
            )
        ]  # fmt: skip


def packed(values: Any) -> AlphaArr:
    x = AlphaArr(values)
    x.packed = True  # type: ignore[attr-defined]
    return x


@pytest.fixture
def reg() -> Iterator[Any]:
    DESCRIBED.clear()
    with isolated_registry(Toys(), Packed()) as r:
        yield r


def test_each_object_takes_the_route_of_its_form(reg: Any) -> None:
    dense, half = AlphaArr([1.0, 2.0]), packed([1.0, 2.0])
    for _ in range(3):  # interleaved: one type, two forms, two plans
        view = to(dense, "beta")
        assert view.buf is dense.buf  # the zero-copy view
        out = to(half, "beta")
        assert list(out.buf) == [2.0, 4.0] and out.buf is not half.buf
    # Each planned once: the warm path keyed them apart (the form's key tagged with its name).
    assert DESCRIBED == {"dense": 1, "packed": 1}
    assert [s.converter for s in explain(half, "beta").steps] == ["unpack"]
    assert reg.state.detect(half) is not reg.state.detect(dense)  # the form's composed spec


def test_a_batch_of_both_takes_the_warm_path(reg: Any) -> None:
    batch = {"dense": AlphaArr([1.0]), "packed": packed([3.0])}
    for _ in range(3):
        out = to(batch, "beta")
        assert out["dense"].buf is batch["dense"].buf
        assert list(out["packed"].buf) == [6.0]
    assert DESCRIBED == {"dense": 1, "packed": 1}  # planned once each, then warm


def test_the_dense_edge_never_takes_the_form() -> None:
    # Without the form's plugin, the framework refuses the object it does not describe.
    with (
        isolated_registry(Toys()),
        pytest.raises(ConversionError, match="no plugin declares the packed form"),
    ):
        to(packed([1.0]), "beta")
    # With it, the view refuses the form's opaque flag, with the form's advice.
    with (
        isolated_registry(Toys(), Packed()),
        pytest.raises(CopyRequiredError, match=r"alpha->beta view .*holds halves"),
    ):
        to(packed([1.0]), "beta", copy=False)


def test_a_form_told_per_object_must_give_its_key() -> None:
    with isolated_registry(Toys()) as r, pytest.raises(PluginError, match="declares no key"):
        r.register(Packed(key=False))


def test_torch_sparse_tensors_are_the_sparse_form() -> None:
    torch = need("torch")
    need("scipy")
    from interop_core.testing import framework_of

    dense = torch.arange(6.0).reshape(2, 3)
    coo = dense.to_sparse()
    assert framework_of(coo) == "torch"
    for _ in range(3):
        m = to(coo, "scipy")
        assert m.toarray().tolist() == dense.tolist()
        assert m.data.ctypes.data == coo._values().data_ptr()  # values shared (zero-copy)
        t = to(dense, "numpy")
        assert t.ctypes.data == dense.data_ptr()
    with pytest.raises(NoRouteError, match="densify=True"):
        to(coo, "numpy")
    assert to(coo, "numpy", densify=True).tolist() == dense.tolist()


def test_the_kit_catches_a_framework_key_that_keys_the_form(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    need("torch")
    need("scipy")
    import interop_plugins.frameworks.torch as torch_plugin

    from interop_core.testing import check_framework

    others = ["scipy", "numpy"]
    done = check_framework("torch", others=others, dtypes=["float32"])
    assert "sparse coo float32: flags described, values read back, key stable and shared" in done

    # torch's key giving a sparse COO tensor a strided tensor's key (its stride() is all
    # zeros: a broadcast layout) would let the warm path run a dense plan for it.
    original = torch_plugin._strided_key

    def strided_key(t: Any, k: tuple[Any, ...]) -> tuple[Any, ...]:
        return (*k, "broadcast") if t.is_sparse else original(t, k)

    monkeypatch.setattr(torch_plugin, "_strided_key", strided_key)
    with (
        isolated_registry(builtins=True),
        pytest.raises(
            AssertionError, match=r"torch's key gives .* form 'sparse coo' told apart per object"
        ),
    ):
        check_framework("torch", others=others, dtypes=["float32"])
