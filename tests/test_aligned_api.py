"""The public switch of aligned allocations: ``interop_core.aligned_memory()`` and
``set_aligned_memory()`` over the allocators framework plugins declare."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from conftest import need

import interop_core
from interop_core import InteropError, OptionError, PluginError
from interop_core.testing import isolated_registry

np = need("numpy")
aligned_memory_module = pytest.importorskip("interop_plugins.frameworks.aligned_memory")
if aligned_memory_module.available() is not None:  # pragma: no cover - a build without a C compiler
    pytest.skip(aligned_memory_module.available(), allow_module_level=True)

SIZES = (1, 3, 17, 1000, 4099, 1 << 20)


def addresses(make: Any) -> list[int]:
    return [make(n).ctypes.data % 64 for n in SIZES]


def test_inside_the_block_every_allocation_is_aligned_and_shares_with_jax() -> None:
    jax = need("jax")
    with interop_core.aligned_memory():
        arrays = [np.random.default_rng(0).random(n, dtype=np.float32) for n in SIZES]
        assert aligned_memory_module.active()
    assert not aligned_memory_module.active()
    assert [a.ctypes.data % 64 for a in arrays] == [0] * len(SIZES)
    for a in arrays:  # still valid, and shared, after the block
        y = interop_core.to(a, "jax")
        assert isinstance(y, jax.Array)
        assert y.unsafe_buffer_pointer() == a.ctypes.data
        np.testing.assert_array_equal(np.asarray(y), a)


def test_blocks_nest_and_restore_what_was_there() -> None:
    block = interop_core.aligned_memory()
    with block:
        with block:
            assert aligned_memory_module.active()
        assert aligned_memory_module.active()  # the outer block is still on
    assert not aligned_memory_module.active()
    with pytest.raises(RuntimeError), interop_core.aligned_memory():
        raise RuntimeError("inside")
    assert not aligned_memory_module.active()


def test_the_switch_holds_for_this_thread_not_for_new_threads() -> None:
    interop_core.set_aligned_memory(True)
    try:
        assert addresses(lambda n: np.ones(n, np.float32)) == [0] * len(SIZES)
        seen: list[bool] = []
        worker = threading.Thread(target=lambda: seen.append(aligned_memory_module.active()))
        worker.start()
        worker.join()
        assert seen == [False]
    finally:
        interop_core.set_aligned_memory(False)
    assert not aligned_memory_module.active()


@pytest.mark.illtyped
def test_the_switch_takes_only_booleans() -> None:
    with pytest.raises(OptionError, match="True or False"):
        interop_core.set_aligned_memory(1)  # type: ignore[arg-type]


def test_without_a_framework_that_declares_one_it_says_so() -> None:
    with isolated_registry(), pytest.raises(PluginError, match="no installed plugin declares"):
        interop_core.set_aligned_memory(True)
    with isolated_registry(), pytest.raises(InteropError), interop_core.aligned_memory():
        pass  # pragma: no cover - never reached
    assert not aligned_memory_module.active()
