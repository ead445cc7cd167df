"""The fast import into JAX (jaxlib's own DLPack import, not jax.dlpack.from_dlpack): the
same array, device, commitment and dtype as the public call, memory shared, unaligned
buffers refused rather than copied, and the public call wherever the private one differs."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import pytest
from conftest import need

np = need("numpy")
jax = need("jax")

from interop_plugins.frameworks import jax as jax_plugin  # noqa: E402

from interop_core import explain, to  # noqa: E402


def aligned(n: int, dtype: Any) -> Any:
    """A 64-byte aligned 1-d array of ``n`` items (a view into a larger allocation)."""
    itemsize = np.dtype(dtype).itemsize
    base = np.zeros(n * itemsize + 64, np.uint8)
    skip = -base.ctypes.data % 64
    return base[skip : skip + n * itemsize].view(dtype)


def test_the_fast_importer_is_used_and_matches_the_public_call() -> None:
    imported = jax_plugin.host_importer()
    assert imported is not None, "jaxlib's importer was not usable on this jax"
    x = aligned(1000, np.float32)
    x[:] = np.arange(1000)
    fast = imported(x.__dlpack__())
    public = jax.dlpack.from_dlpack(x)
    assert fast.unsafe_buffer_pointer() == x.ctypes.data == public.unsafe_buffer_pointer()
    assert fast.devices() == public.devices()
    assert fast.sharding == public.sharding
    assert fast.dtype == public.dtype and fast.shape == public.shape
    assert fast.weak_type == public.weak_type
    assert fast._committed == public._committed
    np.testing.assert_array_equal(np.asarray(fast), x)


@pytest.mark.parametrize("source", ["numpy", "torch", "tensorflow"])
def test_to_jax_shares_memory_through_the_fast_importer(source: str) -> None:
    x = aligned(4096, np.float32)
    x[:] = np.linspace(0, 1, 4096, dtype=np.float32)
    if source == "torch":
        torch = need("torch")
        src: Any = torch.from_numpy(x)
        ptr = src.data_ptr()
    elif source == "tensorflow":
        tf = need("tensorflow")
        src = tf.constant(x)
        ptr = np.asarray(src).ctypes.data  # TF's own buffer, read through its numpy view
    else:
        src, ptr = x, x.ctypes.data
    y = to(src, "jax")
    assert isinstance(y, jax.Array)
    assert explain(src, "jax").zero_copy
    assert y.unsafe_buffer_pointer() == ptr
    assert y.devices() == {jax.local_devices(backend="cpu")[0]}
    np.testing.assert_array_equal(np.asarray(y), x)


def test_an_unaligned_buffer_is_refused_not_copied_by_jax() -> None:
    imported = jax_plugin.host_importer()
    assert imported is not None
    x = aligned(65, np.float32)[1:]  # 4 bytes past a 64-byte boundary
    with pytest.raises(Exception, match="aligned"):
        imported(x.__dlpack__())
    y = to(x, "jax")  # the route copies it itself, once
    assert not explain(x, "jax").zero_copy
    np.testing.assert_array_equal(np.asarray(y), x)


def test_a_changed_private_call_falls_back_to_the_public_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from jax._src.lib import _jax

    def copies(capsule: Any, *args: Any) -> Any:  # as if jaxlib's call had changed meaning
        return jax.numpy.array(jax.dlpack.from_dlpack(np.from_dlpack(_Capsule(capsule))))

    monkeypatch.setattr(_jax, "dlpack_managed_tensor_to_buffer", copies)
    assert jax_plugin.host_importer() is None


class _Capsule:
    """A capsule as a DLPack producer (for the monkeypatched call above)."""

    def __init__(self, capsule: Any) -> None:
        self.capsule = capsule

    def __dlpack__(self, **_: Any) -> Any:
        return self.capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)


def test_wide_dtypes_without_x64_are_narrowed_as_jax_does() -> None:
    code = textwrap.dedent(
        """
        import numpy as np, jax
        from interop_plugins.frameworks.jax import host_importer
        imported = host_importer()
        base = np.zeros(8 * 16 + 64, np.uint8)
        skip = -base.ctypes.data % 64
        x = base[skip : skip + 128].view(np.float64)
        x[:] = np.arange(16) / 3
        y = imported(x.__dlpack__())
        z = jax.dlpack.from_dlpack(x)
        assert y.dtype == z.dtype == np.float32, (y.dtype, z.dtype)
        np.testing.assert_array_equal(np.asarray(y), np.asarray(z))
        print("ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
        env={**__import__("os").environ, "JAX_ENABLE_X64": "0"},
    )  # fmt: skip
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-2000:]
