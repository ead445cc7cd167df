"""The conformance kit on what is not a dense array of a target: pandas Series (1-d),
safetensors files (opened by a snapshot), scipy.sparse, and the sparse and ragged forms the
frameworks declare (``FrameworkSpec.diagnostics.forms``); and the flagged checks failing, naming the
rule, on a toy plugin broken on purpose."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from conftest import need

from interop_core import ConverterSpec, FrameworkSpec, Registry, hookimpl
from interop_core.plugin import (
    ALIGNMENT,
    CPU,
    ArrayEdge,
    Diagnostics,
    Form,
    Package,
    PluginWarning,
    TensorInfo,
)
from interop_core.testing import ConformanceError, check_framework


def test_pandas_series_conform_as_1d_arrays() -> None:
    need("pandas")
    need("numpy")
    done = check_framework("pandas", others=["numpy"], dtypes=["float32", "int64"])
    assert "float32 -> numpy: zero-copy" in done, done
    assert "float32 views x[::-1], x[1:]: described, converted, round-tripped" in done, done


def test_safetensors_files_conform_entry_by_entry() -> None:
    need("numpy")
    need("torch")
    done = check_framework("safetensors", others=["numpy", "torch"], dtypes=["float32"])
    assert done.count("float32 -> torch: zero-copy") == 2, done
    assert "float32: each entry of an opened example converts; to() gives their dict" in done


def test_scipy_sparse_conforms() -> None:
    need("scipy")
    need("torch")
    done = check_framework("scipy", others=["numpy", "torch"], dtypes=["float32"])
    assert "sparse csr float32 -> torch: zero-copy; back: zero-copy" in done, done
    assert any(
        line.startswith("sparse coo float32 -> numpy: refused (NoRouteError); with densify")
        for line in done
    ), done


@pytest.mark.parametrize("name", ["torch", "jax", "tensorflow", "pyarrow"])
def test_sparse_and_ragged_forms_conform(name: str) -> None:
    need(name)
    need("numpy")
    others = ["numpy", "torch", "scipy"] if name != "torch" else ["numpy", "jax", "scipy"]
    for other in others:
        need(other)
    done = check_framework(name, others=others, dtypes=["float32"])
    assert any(line.startswith("ragged float32: flags described") for line in done), done
    if name != "pyarrow":
        assert any(line.startswith("sparse coo float32 -> scipy: ") for line in done), done


# -- a toy sparse framework, broken on purpose --------------------------------------------


class ToySparse:
    """A COO matrix over numpy arrays: values, rows, columns."""

    def __init__(self, values: Any, row: Any, col: Any, shape: tuple[int, int],
                 canonical: bool = False) -> None:  # fmt: skip
        self.values, self.row, self.col, self.shape = values, row, col, shape
        self.canonical = canonical


FLAGS = frozenset({"sparse", "coo"})


class ToyPlugin:
    def __init__(self, broken: str = "") -> None:
        self.broken = broken

    def describe(self, t: ToySparse) -> TensorInfo:
        from interop_plugins.frameworks.numpy import dtype_name

        aligned = t.values.ctypes.data % ALIGNMENT == 0
        flags = FLAGS | {"canonical"} if t.canonical else FLAGS
        return TensorInfo("toy", dtype_name(t.values.dtype), CPU, t.shape, "C", False,
                          aligned, flags)  # fmt: skip

    def key(self, t: ToySparse) -> Any:
        info = self.describe(t)
        k = (info.dtype, info.layout)
        return k if self.broken == "key ignores the flag" else (*k, info.flags)

    def build(self, values: Any, dtype: str, canonical: bool = False) -> ToySparse:
        import scipy.sparse as sp
        from interop_plugins.frameworks.numpy import example

        m = sp.coo_array(example(values, dtype))
        return ToySparse(m.data, m.coords[0], m.coords[1], m.shape, canonical)

    @hookimpl
    def interop_frameworks(self) -> list[FrameworkSpec]:
        form = Form(
            "toy coo", build=self.build, flags=FLAGS, shapes=((3, 4), (4, 3)),
            read=lambda t: (self.dense(t),), buffers=lambda t: (t.values, t.row, t.col),
            dtypes=("float32",),
        )  # fmt: skip
        # A second form: a key ignoring the flag gives both one key.
        marked = Form("toy canonical coo", build=lambda v, d: self.build(v, d, True),
                      flags=FLAGS | {"canonical"}, shapes=form.shapes, read=form.read,
                      buffers=form.buffers, dtypes=form.dtypes)  # fmt: skip
        return [
            FrameworkSpec(
                name="toy",
                array_types=(f"{__name__}.ToySparse",),
                describe=self.describe,
                key=self.key,
                aligned_key=lambda t: (*self.key(t), self.describe(t).aligned),
                data_ptr=lambda t: int(t.values.ctypes.data),
                dtypes=frozenset({"float32"}),
                package=Package(module=__name__),
                diagnostics=Diagnostics(forms=(form, marked)),
            )
        ]  # fmt: skip

    @staticmethod
    def dense(t: ToySparse) -> Any:
        import numpy as np

        out = np.zeros(t.shape, t.values.dtype)
        out[t.row, t.col] = t.values
        return out

    @hookimpl
    def interop_converters(self) -> list[ConverterSpec]:
        from interop_core.plugin import Needs

        copies = self.broken == "zero-copy edge copies"

        def to_scipy() -> Any:
            import scipy.sparse as sp

            def convert(t: ToySparse) -> Any:
                values = t.values.copy() if copies else t.values
                return sp.coo_array((values, (t.row, t.col)), shape=t.shape)

            return convert

        def from_scipy() -> Any:
            return lambda m: ToySparse(m.data, m.coords[0], m.coords[1], m.shape)

        sparse = Needs(flags=FLAGS, no_flags=frozenset())
        return [
            # "sparse" is an opaque flag (the sparse form's): edges name the form to take it.
            ConverterSpec("toy as scipy", "toy", "scipy", to_scipy, zero_copy=True,
                          accepts=sparse, keeps_flags=FLAGS,
                          array=ArrayEdge(forms=frozenset({"sparse"})), ),
            ConverterSpec("scipy as toy", "scipy", "toy", from_scipy, zero_copy=True,
                          accepts=sparse, keeps_flags=FLAGS,
                          array=ArrayEdge(forms=frozenset({"sparse"})), ),
        ]  # fmt: skip


def toy_registry(plugin: ToyPlugin) -> Registry:
    """numpy, scipy.sparse (with the sparse form, whose plugin also declares forms and
    edges of frameworks not registered here: ignored, with warnings) and the toy only."""
    from interop_plugins.exchange import sparse as sparse_plugin
    from interop_plugins.frameworks import numpy as npp
    from interop_plugins.frameworks import scipy as spp

    reg = Registry(builtins=False, entry_points=False)
    reg.register(npp, name="interop_plugins.frameworks.numpy")
    reg.register(spp, name="interop_plugins.frameworks.scipy")
    reg.register(sparse_plugin, name="interop_plugins.exchange.sparse")
    reg.register(plugin, name="toy")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PluginWarning)
        reg.state  # noqa: B018 - built here, where its warnings are expected
    return reg


def test_honest_toy_sparse_conforms() -> None:
    need("scipy")
    done = check_framework("toy", registry=toy_registry(ToyPlugin()), others=["scipy"])
    assert "toy coo float32 -> scipy: zero-copy; back: zero-copy" in done, done


#: Ways to break the toy, and what the kit must say.
BREAKS = {
    "zero-copy edge copies": r"to\(a float32 toy coo example \(3, 4\), 'scipy'\): explain\(\) "
    r"claims zero-copy, but the values' data pointers differ",
    "key ignores the flag": r"key\(\) gives .* the same key .*\(flags frozenset\(\{.*\}\) vs "
    r"frozenset\(\{.*\}\)\): the plan cache would run the route",
}


@pytest.mark.parametrize("broken", sorted(BREAKS))
def test_flagged_checks_catch_a_broken_plugin(broken: str) -> None:
    need("scipy")
    reg = toy_registry(ToyPlugin(broken))
    with pytest.raises(ConformanceError, match=BREAKS[broken]):
        check_framework("toy", registry=reg, others=["scipy"])
