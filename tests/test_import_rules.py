"""Frameworks declare their import rules once; the planner applies them to every edge.

JAX and TensorFlow import only C-contiguous, 64-byte aligned memory (TF's kernels abort the
interpreter on other memory, JAX copies it on a worker thread); JAX narrows 64-bit dtypes
without x64; torch aborts on negative strides and cannot mark a result read-only. Each
framework says so in its spec (``FrameworkSpec.rules.imports``, ``switches``), so a third party's
edge written with the default ``Needs()`` is refused where those rules are broken, and the
route copies instead. Conversions that would crash or hang without the rules run in a child
process.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from adapters import aligned_copy

from interop_core import NoRouteError, Registry, explain, to
from interop_core.plugin import (
    FLAG,
    GLOBAL_FLAG,
    LAYOUT,
    READONLY,
    UNALIGNED,
    ConverterSpec,
    Flag,
    FrameworkSpec,
    ImportRules,
    Needs,
    Package,
    PlanKey,
    hookimpl,
)
from interop_core.testing import isolated_registry

TESTS = str(Path(__file__).resolve().parent)

#: The third party's edges, by target: what each loads (imported in the converter's body).
NAMES = {
    "jax": "third-party jax import",
    "tensorflow": "third-party tf import",
    "torch": "third-party torch import",
}


def _jax_import() -> Any:
    import jax.dlpack

    return jax.dlpack.from_dlpack


def _tf_import() -> Any:
    import tensorflow as tf

    return lambda a: tf.experimental.dlpack.from_dlpack(a.__dlpack__())


def _torch_import() -> Any:
    import torch

    return torch.from_numpy


LOADERS = {"jax": _jax_import, "tensorflow": _tf_import, "torch": _torch_import}


class ThirdParty:
    """A plugin as a third party may write it: zero-copy numpy -> ``targets`` edges with the
    default ``Needs()`` (no layout, alignment, read-only or x64 condition of their own),
    cheaper than any other route."""

    def __init__(self, *targets: str) -> None:
        self.targets = targets

    @hookimpl
    def interop_converters(self) -> list[ConverterSpec]:
        return [
            ConverterSpec(NAMES[t], "numpy", t, LOADERS[t], zero_copy=True, accepts=Needs(),
                          cost=0.1)
            for t in self.targets
        ]  # fmt: skip


@contextmanager
def third_party_registry(*targets: str) -> Iterator[Registry]:
    """The default registry, in this thread: the built-in numpy plugin and those of
    ``targets`` (their specs, copies and moves; no built-in exchange edge), and the third
    party's edges into ``targets``."""
    plugins = [importlib.import_module(f"interop_plugins.frameworks.{f}") for f in ("numpy",
               *targets)]  # fmt: skip
    with isolated_registry(*plugins, ThirdParty(*targets)) as reg:
        yield reg


def refusal(route: Any, target: str) -> Any:
    """The refusal of the third party's edge into ``target`` on ``route``."""
    found = [r for r in route.refusals if r.converter == NAMES[target]]
    assert found, route.refusals
    return found[0]


def values(shape: tuple[int, ...] = (3, 4), dtype: str = "float32") -> Any:
    import numpy as np

    return np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)


# -- JAX and TensorFlow: alignment, layout ------------------------------------------------


@pytest.mark.parametrize("target", ["jax", "tensorflow"])
def test_an_edge_without_rules_is_refused_unaligned_memory(np: Any, target: str) -> None:
    pytest.importorskip("jax" if target == "jax" else "tensorflow")
    with third_party_registry(target):
        unaligned = aligned_copy(values(), offset=4)
        route = explain(unaligned, target)
        assert route.copies == 1
        assert [s.converter for s in route.steps][-1] == NAMES[target]  # after an aligned copy
        assert not route.steps[0].zero_copy
        assert refusal(route, target).category == UNALIGNED
        # The same edge takes an aligned C-contiguous array, zero-copy.
        assert explain(aligned_copy(values()), target).zero_copy


CHILD = """
import json, sys
sys.path.insert(0, {tests!r})
import numpy as np
from adapters import aligned_copy
from interop_core import to
from interop_core.testing import data_ptr
from test_import_rules import third_party_registry, values

ref = values()
seen = {{}}
with third_party_registry({target!r}) as reg:
    for label, a in [("aligned", aligned_copy(ref)), ("unaligned", aligned_copy(ref, 4)),
                     ("unaligned 8", aligned_copy(ref, 8)), ("F", aligned_copy(ref.T.copy()).T)]:
        y = to(a, {target!r})  # the unaligned ones find the aligned one's plan in the cache
        if {target!r} == "jax":
            ptr = y.unsafe_buffer_pointer()  # blocks holding the GIL while JAX copies
            total = float(y.sum())
        else:
            import tensorflow as tf
            from interop_core.kit.buffers import capsule_address
            ptr = capsule_address(tf.experimental.dlpack.to_dlpack(y))
            total = float(tf.reduce_sum(y))  # TF's kernels abort on unaligned memory
        seen[label] = [ptr == a.ctypes.data, ptr % 64 == 0, total,
                       np.asarray(y).tolist() == a.tolist()]
print(json.dumps(seen))
"""


@pytest.mark.parametrize("target", ["jax", "tensorflow"])
def test_unaligned_and_f_order_memory_crosses_only_as_a_copy(np: Any, target: str) -> None:
    """In a child process: without the rules, TF aborts the interpreter on the unaligned
    array, and JAX copying it on a worker thread can deadlock the pointer read."""
    pytest.importorskip("jax" if target == "jax" else "tensorflow")
    code = CHILD.format(tests=TESTS, target=target)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    total = float(values().sum())
    assert seen["aligned"] == [True, True, total, True]  # shared
    for label in ("unaligned", "unaligned 8", "F"):
        assert seen[label] == [False, True, total, True], label  # an aligned C copy


@pytest.mark.parametrize(
    ("target", "text"),
    [
        ("jax", "JAX shares only C-contiguous buffers"),
        ("tensorflow", "TensorFlow imports only C-contiguous buffers"),
    ],
)
def test_f_contiguous_memory_is_refused_in_the_frameworks_words(
    np: Any, target: str, text: str
) -> None:
    pytest.importorskip("jax" if target == "jax" else "tensorflow")
    with third_party_registry(target):
        c = aligned_copy(values())
        f = aligned_copy(values().T.copy()).T  # F-contiguous and 64-byte aligned
        assert f.flags.f_contiguous and not f.flags.c_contiguous and f.ctypes.data % 64 == 0
        route = explain(f, target)
        assert route.copies == 1 and route.steps[-1].converter == NAMES[target]
        why = refusal(route, target)
        assert why.category == LAYOUT and text in why.reason
        y = to(f, target)
        assert np.asarray(y).tolist() == f.tolist()
        if target == "jax":
            assert y.unsafe_buffer_pointer() != f.ctypes.data  # JAX would share it F-ordered
            z = to(c, target)
            assert z.unsafe_buffer_pointer() == c.ctypes.data  # the same edge shares C memory


def test_64_bit_into_jax_without_x64_is_refused_with_its_advice(np: Any, jax: Any) -> None:
    if jax.config.read("jax_enable_x64"):
        pytest.skip("x64 is on in this process")
    with third_party_registry("jax"):
        a = aligned_copy(values(dtype="float64"))
        with pytest.raises(NoRouteError) as info:
            to(a, "jax")  # the edge would narrow it to float32 silently
        first = str(info.value).splitlines()[0]
        assert "jax_enable_x64" in first and "jax.config.update" in first
        why = [r for r in info.value.refused if r.converter == NAMES["jax"]]
        assert why and all(r.category == GLOBAL_FLAG for r in why)
        assert why[0].reason.subject == "jax_enable_x64"
        # float32 is not the switch's business: the same edge shares it.
        b = aligned_copy(values())
        assert to(b, "jax").unsafe_buffer_pointer() == b.ctypes.data


# -- torch: negative strides, read-only memory ----------------------------------------------


def test_torch_rules_apply_to_an_edge_written_without_them(np: Any, torch: Any) -> None:
    with third_party_registry("torch"):
        readonly = aligned_copy(values())
        readonly.flags.writeable = False
        route = explain(readonly, "torch")
        assert route.copies == 1 and refusal(route, "torch").category == READONLY
        t = to(readonly, "torch")
        t[0, 0] = 99  # writes reach a copy, never the memory its owner protects
        assert readonly[0, 0] == 0 and t.data_ptr() != readonly.ctypes.data

        flipped = values()[::-1]
        route = explain(flipped, "torch")
        assert route.copies == 1 and refusal(route, "torch").category == LAYOUT
        assert "negative strides" in refusal(route, "torch").reason
        assert to(flipped, "torch").tolist() == flipped.tolist()

        plain = values()
        assert to(plain, "torch").data_ptr() == plain.ctypes.data  # the edge itself is taken


# -- the plan cache reads alignment only where a rule needs it -------------------------------


def test_alignment_keys_the_cache_only_where_a_rule_reads_it(np: Any, torch: Any, jax: Any) -> None:
    with third_party_registry("torch", "jax") as reg:
        aligned, unaligned = aligned_copy(values()), aligned_copy(values(), offset=4)
        # torch's rules say nothing of alignment: no edge into torch reads it (the search
        # meets the edge into JAX refusing it), and the slot ignores it.
        route = explain(unaligned, "torch")
        into = [r for r in route.refusals if r.edge == "numpy->torch"]
        assert route.zero_copy and not [r for r in into if r.category == UNALIGNED]
        assert to(aligned, "torch").data_ptr() == aligned.ctypes.data
        assert to(unaligned, "torch").data_ptr() == unaligned.ctypes.data
        slots = reg.state.cache.slots
        assert slots[np.ndarray, "torch", None, None].by_alignment is False
        # JAX's do: the slot is keyed by alignment, so the warm path never hands JAX an
        # unaligned array on the aligned array's plan.
        assert to(aligned, "jax").unsafe_buffer_pointer() == aligned.ctypes.data
        assert slots[np.ndarray, "jax", None, None].by_alignment is True
        assert explain(unaligned, "jax").copies == 1


# -- read once per registry build; flag advice --------------------------------------------

BOX_MODULE = "interop_test_import_boxes"
STICKY = "the box is sticky (call .unstick() first)"


class Box:
    """A toy framework's array: a numpy array in a box, perhaps a sticky one."""

    def __init__(self, a: Any, sticky: bool = False) -> None:
        self.a = a
        self.sticky = sticky


class CountingRule:
    """An import rule that takes everything and counts how often it is asked."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, key: PlanKey) -> str | None:
        self.calls += 1
        return None


class BoxPlugin:
    """The "box" framework: its import rule counts its calls; its flag "sticky" has advice."""

    def __init__(self) -> None:
        self.rule = CountingRule()

    @hookimpl
    def interop_frameworks(self) -> list[FrameworkSpec]:
        from interop_plugins.frameworks.numpy import describe

        def describe_box(b: Box) -> Any:
            return describe(b.a)._replace(
                framework="box", flags=frozenset({"sticky"} if b.sticky else ())
            )

        return [
            FrameworkSpec(
                name="box",
                array_types=(f"{BOX_MODULE}.Box",),
                describe=describe_box,
                key=lambda b: (b.a.dtype, b.sticky),
                data_ptr=lambda b: b.a.ctypes.data,
                dtypes=frozenset({"float32", "float64"}),
                flags=(Flag("sticky", STICKY),),
                package=Package(module=BOX_MODULE),
                rules=ImportRules(imports=self.rule),
            )
        ]  # fmt: skip

    @hookimpl
    def interop_converters(self) -> list[ConverterSpec]:
        return [
            ConverterSpec("into a box", "numpy", "box", lambda: Box, zero_copy=True),
            ConverterSpec("out of a box", "box", "numpy", lambda: lambda b: b.a, zero_copy=True,
                          accepts=Needs(no_flags=frozenset({"sticky"}))),
        ]  # fmt: skip


class Nothing:
    """A plugin that declares nothing (registering it builds the registry again)."""


@pytest.fixture
def boxes(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Registry, BoxPlugin]]:
    mod = types.ModuleType(BOX_MODULE)
    mod.Box = Box  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, BOX_MODULE, mod)
    plugin = BoxPlugin()
    numpy_plugin = importlib.import_module("interop_plugins.frameworks.numpy")
    with isolated_registry(numpy_plugin, plugin) as reg:
        yield reg, plugin


def test_import_rules_are_read_per_registry_build_not_per_call(
    np: Any, boxes: tuple[Registry, BoxPlugin]
) -> None:
    reg, plugin = boxes
    a = aligned_copy(values())
    assert to(a, "box").a is a
    planned = plugin.rule.calls
    assert planned >= 1  # planning asked the rule
    for _ in range(10):
        assert to(a, "box").a is a
    assert plugin.rule.calls == planned  # warm calls never do
    reg.register(Nothing())  # a new build: its graph takes the rule from the spec again
    assert to(a, "box").a is a
    assert plugin.rule.calls > planned


def test_flag_refusals_carry_the_advice_the_framework_declares(
    np: Any, boxes: tuple[Registry, BoxPlugin]
) -> None:
    with pytest.raises(NoRouteError) as info:
        to(Box(values(), sticky=True), "numpy")
    assert STICKY in str(info.value).splitlines()[0]
    why = [r for r in info.value.refused if r.converter == "out of a box"]
    assert why and why[0].reason == STICKY
    assert why[0].category == FLAG and why[0].reason.subject == "sticky"
    plain = Box(values())
    assert to(plain, "numpy") is plain.a
