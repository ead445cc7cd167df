"""Global flags (JAX's x64) join the plan key only for the routes that turn on them.

A toy framework with a counting flag shows the warm path of a route that does not depend
on the flag never reads it, and a route that does re-plans when the flag changes.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
import types
from collections.abc import Iterator
from typing import Any

import pytest

from interop_core import (
    ConverterSpec,
    FrameworkSpec,
    NoRouteError,
    TensorInfo,
    hookimpl,
    to,
)
from interop_core.declare.predicates import GlobalFlag, Needs
from interop_core.declare.specs import CPU
from interop_core.plugin import Package
from interop_core.testing import isolated_registry

MODULE = "interop_test_flagboxes"


class Src:
    def __init__(self, dtype: str) -> None:
        self.dtype = dtype


class Dst(Src):
    pass


class FlagPlugin:
    def __init__(self) -> None:
        self.on = False
        self.reads = 0
        self.flag = GlobalFlag(self.read, frozenset({"float64"}), "the wide flag is off ({dtype})")

    def read(self) -> bool:
        self.reads += 1
        return self.on

    @hookimpl
    def interop_frameworks(self) -> list[FrameworkSpec]:
        def spec(name: str, cls: str) -> FrameworkSpec:
            return FrameworkSpec(
                name=name,
                array_types=(f"{MODULE}.{cls}",),
                describe=lambda x: TensorInfo(name, x.dtype, CPU, (1,), "C", False, True),
                key=lambda x: x.dtype,
                data_ptr=id,
                dtypes=frozenset({"float32", "float64"}),
                package=Package(module=MODULE),
            )  # fmt: skip

        return [spec("fsrc", "Src"), spec("fdst", "Dst")]

    @hookimpl
    def interop_converters(self) -> list[ConverterSpec]:
        return [ConverterSpec("into fdst", "fsrc", "fdst", lambda: lambda x: Dst(x.dtype),
                              zero_copy=True, accepts=Needs(flag=self.flag))]  # fmt: skip


@pytest.fixture
def flagged(monkeypatch: pytest.MonkeyPatch) -> Iterator[FlagPlugin]:
    mod = types.ModuleType(MODULE)
    mod.Src, mod.Dst = Src, Dst  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, MODULE, mod)
    plugin = FlagPlugin()
    with isolated_registry(plugin):
        yield plugin


def test_routes_that_do_not_depend_on_the_flag_never_read_it(flagged: FlagPlugin) -> None:
    to(Src("float32"), "fdst")
    before = flagged.reads
    for _ in range(5):
        assert isinstance(to(Src("float32"), "fdst"), Dst)
    assert flagged.reads == before  # the warm path reads no flag


class FlaggedEdgePlugin(FlagPlugin):
    """A plain edge without a flag, and one for "lumpy" arrays only whose flag reads on every
    dtype (as the ragged edges' x64 switch does)."""

    def __init__(self) -> None:
        super().__init__()
        self.flag = GlobalFlag(self.read, frozenset({"float32", "float64"}), "off ({dtype})")

    @hookimpl
    def interop_converters(self) -> list[ConverterSpec]:
        lumpy = Needs(flags=frozenset({"lumpy"}), flag=self.flag)
        return [
            ConverterSpec("plain into fdst", "fsrc", "fdst", lambda: lambda x: Dst(x.dtype),
                          zero_copy=True, cost=2.0),
            ConverterSpec("lumpy into fdst", "fsrc", "fdst", lambda: lambda x: Dst(x.dtype),
                          zero_copy=True, accepts=lumpy, cost=1.0),
        ]  # fmt: skip


def test_a_flag_of_an_edge_refused_by_its_flags_is_never_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A dense array's route examines the edge for flagged arrays and refuses it on its flags:
    # no value of the global flag changes that, so the warm path must not read it (it did,
    # on every torch -> numpy call, once the ragged edges came: +1.5 us a call).
    mod = types.ModuleType(MODULE)
    mod.Src, mod.Dst = Src, Dst  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, MODULE, mod)
    plugin = FlaggedEdgePlugin()
    with isolated_registry(plugin):
        to(Src("float32"), "fdst")
        before = plugin.reads
        for _ in range(5):
            assert isinstance(to(Src("float32"), "fdst"), Dst)
        assert plugin.reads == before


def test_routes_that_depend_on_the_flag_follow_it(flagged: FlagPlugin) -> None:
    with pytest.raises(NoRouteError, match="the wide flag is off"):
        to(Src("float64"), "fdst")
    flagged.on = True
    assert isinstance(to(Src("float64"), "fdst"), Dst)
    assert isinstance(to(Src("float64"), "fdst"), Dst)  # warm, flag on
    flagged.on = False
    with pytest.raises(NoRouteError, match="the wide flag is off"):
        to(Src("float64"), "fdst")  # warm entry planned with the flag on: re-planned
    reads = flagged.reads
    flagged.on = True
    to(Src("float64"), "fdst")
    assert flagged.reads > reads


def test_jax_x64_flip_is_followed_on_the_warm_path(np: Any, jax: Any) -> None:
    """Run in a subprocess: flipping x64 in this process would change other tests."""
    code = textwrap.dedent(
        """
        import numpy as np, jax
        from interop_core import to, NoRouteError
        from interop_core.testing import data_ptr
        def attempt():
            try:
                return str(to(np.ones(4, dtype=np.float64), "jax").dtype)
            except NoRouteError as e:
                return "refused: " + str(e).splitlines()[0][-60:]
        seen = [attempt(), attempt()]
        jax.config.update("jax_enable_x64", True)
        seen += [attempt(), attempt()]
        jax.config.update("jax_enable_x64", False)
        seen += [attempt()]
        print(repr(seen))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    seen = ast.literal_eval(out.stdout.strip().splitlines()[-1])
    assert [s.startswith("refused") for s in map(str, seen)] == [True, True, False, False, True]
    assert str(seen[2]) == "float64" and "jax_enable_x64" in str(seen[0]) + str(seen[4])


def test_unaligned_numpy_into_jax_never_deadlocks(np: Any, jax: Any) -> None:
    """JAX copying an unaligned buffer on a worker thread, while we read a pointer holding the
    GIL, hangs forever; the route copies first, so this finishes (bounded by a timeout)."""
    code = textwrap.dedent(
        """
        import numpy as np
        from interop_core import to, explain
        from interop_core.testing import data_ptr
        for n in (1 << 10, 1 << 16, 1 << 20, 1 << 22):
            for offset in (4, 16, 32):
                buf = np.empty(n + 64, dtype=np.uint8)
                start = (-buf.ctypes.data % 64) + offset
                a = buf[start:start + n].view(np.float32)
                assert a.ctypes.data % 64
                route = explain(a, "jax")
                assert route.copies == 1, str(route)
                y = to(a, "jax")
                data_ptr(y)  # unsafe_buffer_pointer(): blocks holding the GIL
                assert float(y[-1]) == float(a[-1])
        print("done")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    assert out.returncode == 0 and "done" in out.stdout, out.stderr[-2000:]
