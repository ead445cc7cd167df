"""numpy's masked arrays, a form declared by one plugin file (plugins/forms/masked.py).

The form's flag is opaque: every edge but the form's own refuses a masked array, with the
form's advice; on request (``nulls="mask"``) it goes into torch and JAX as (values, mask), the mask
True where the array has a value (as for a table column's nulls), the values shared
where the target can share them (checked with numpy's, torch's and JAX's own pointers).
Within numpy a copy keeps the mask.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from adapters import aligned_numpy
from conftest import need

from interop_core import (
    CopyRequiredError,
    InteropError,
    NoRouteError,
    OptionError,
    explain,
    to,
)
from interop_core.testing import isolated_registry

ROOT = Path(__file__).resolve().parent.parent


def masked(np: Any, values: Any = None, mask: Any = (0, 1, 0, 0, 1, 0)) -> Any:
    """A masked float32 array over a 64-byte aligned buffer."""
    data = aligned_numpy(np.arange(6, dtype=np.float32) if values is None else values)
    return np.ma.masked_array(data, mask=mask)


def test_refused_with_the_forms_advice(np: Any) -> None:
    torch = need("torch")
    m = masked(np)
    with pytest.raises(NoRouteError, match="nulls='mask'") as info:
        to(m, "torch")
    assert "x.filled(value)" in str(info.value)
    with pytest.raises(NoRouteError, match="lose its mask"):
        to(m, "torch", copy=True)
    # The warm path keys by type: a plain array between the refusals still converts.
    for _ in range(3):
        plain = aligned_numpy(np.arange(3, dtype=np.float32))
        t = to(plain, "torch")
        assert isinstance(t, torch.Tensor) and t.data_ptr() == plain.ctypes.data
        with pytest.raises(NoRouteError):
            to(m, "torch")


def test_into_torch_as_values_and_mask(np: Any) -> None:
    torch = need("torch")
    m = masked(np)
    values, mask = to(m, "torch", nulls="mask")
    assert values.dtype == torch.float32 and mask.dtype == torch.bool
    assert values.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert mask.tolist() == [True, False, True, True, False, True]
    assert values.data_ptr() == m.data.ctypes.data  # the values are shared
    route = explain(m, "torch", nulls="mask")
    assert route.zero_copy and "numpy.ma" in route.steps[0].converter
    values[0] = 7.0  # writes reach the masked array's data
    assert m.data[0] == 7.0


def test_copy_true_shares_nothing(np: Any) -> None:
    need("torch")
    m = masked(np)
    values, mask = to(m, "torch", nulls="mask", copy=True)
    assert values.data_ptr() != m.data.ctypes.data
    assert values.tolist() == m.data.tolist() and mask.tolist() == (~m.mask).tolist()
    assert explain(m, "torch", nulls="mask", copy=True).copies == 1


def test_read_only_values_are_copied_into_torch(np: Any) -> None:
    need("torch")
    data = aligned_numpy(np.arange(6, dtype=np.float32))
    data.flags.writeable = False  # torch cannot mark a tensor read-only: not shared
    m = np.ma.masked_array(data, mask=[0, 1, 0, 0, 1, 0])
    assert not m.flags.writeable
    route = explain(m, "torch", nulls="mask")
    assert route.copies == 1
    values, _ = to(m, "torch", nulls="mask")
    assert values.data_ptr() != m.data.ctypes.data and values.tolist() == m.data.tolist()
    with pytest.raises(CopyRequiredError):
        to(m, "torch", nulls="mask", copy=False)


def test_into_jax_shares_aligned_values(np: Any) -> None:
    jnp = need("jax").numpy
    m = masked(np)
    values, mask = to(m, "jax", nulls="mask")
    assert values.dtype == jnp.float32 and mask.dtype == jnp.bool_
    assert values.unsafe_buffer_pointer() == m.data.ctypes.data
    assert mask.tolist() == [True, False, True, True, False, True]


def test_unaligned_values_into_jax_are_copied(np: Any) -> None:
    need("jax")
    base = aligned_numpy(np.arange(7, dtype=np.float32))
    m = np.ma.masked_array(base[1:], mask=[1, 0, 0, 0, 0, 0])  # 4 bytes past 64
    route = explain(m, "jax", nulls="mask")
    assert route.copies == 1 and "copied" in route.steps[0].converter
    values, mask = to(m, "jax", nulls="mask")
    assert values.unsafe_buffer_pointer() != m.data.ctypes.data
    assert values.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0] and mask.tolist()[0] is False
    with pytest.raises(CopyRequiredError):
        to(m, "jax", nulls="mask", copy=False)


def test_no_mask_gives_a_mask_of_true(np: Any) -> None:
    need("torch")
    m = np.ma.masked_array(aligned_numpy(np.arange(4, dtype=np.int32)))  # mask: np.ma.nomask
    values, mask = to(m, "torch", nulls="mask")
    assert values.tolist() == [0, 1, 2, 3] and mask.tolist() == [True] * 4


def test_a_subclass_is_the_form_too(np: Any) -> None:
    need("torch")

    class Mine(np.ma.MaskedArray):  # type: ignore[misc]
        pass

    m = masked(np).view(Mine)
    with pytest.raises(NoRouteError, match="nulls='mask'"):
        to(m, "torch")
    assert to(m, "torch", nulls="mask")[1].tolist()[1] is False


def test_bad_option_values_are_refused(np: Any) -> None:
    need("torch")
    m = masked(np)
    with pytest.raises(OptionError, match=r"x\.filled"):
        to(m, "torch", nulls="fill")
    with pytest.raises(OptionError, match=r"x\.filled"):
        explain(m, "torch", nulls=True)


def test_the_option_is_unknown_to_a_plain_array(np: Any) -> None:
    need("torch")
    with pytest.raises(OptionError, match="nulls"):
        to(aligned_numpy(np.ones(2, dtype=np.float32)), "torch", nulls="mask")


def test_within_numpy_a_copy_keeps_the_mask(np: Any) -> None:
    m = masked(np)
    assert to(m, "numpy") is m
    c = to(m, "numpy", copy=True)
    assert isinstance(c, np.ma.MaskedArray) and not np.shares_memory(c.data, m.data)
    assert c.mask.tolist() == m.mask.tolist() and c.data.tolist() == m.data.tolist()


def test_a_cast_stays_masked(np: Any) -> None:
    m = masked(np)
    c = to(m, "numpy", dtype="int32")
    assert isinstance(c, np.ma.MaskedArray) and c.dtype == np.int32
    assert c.mask.tolist() == m.mask.tolist() and c.data.tolist() == [0, 1, 2, 3, 4, 5]
    if need("torch"):
        values, mask = to(m, "torch", nulls="mask", dtype="float64")
        assert str(values.dtype) == "torch.float64" and mask.tolist()[1] is False


def test_a_batch_takes_the_option_for_its_masked_arrays(np: Any) -> None:
    torch = need("torch")
    batch = {"x": masked(np), "y": aligned_numpy(np.ones(2, dtype=np.float32))}
    out = to(batch, "torch", nulls="mask")
    _, mask = out["x"]
    assert mask.tolist()[1] is False and isinstance(out["y"], torch.Tensor)


def test_other_targets_and_devices_refuse(np: Any) -> None:
    m = masked(np)
    need("tensorflow")
    with pytest.raises(InteropError):
        to(m, "tensorflow", nulls="mask")
    with pytest.raises(InteropError):
        to(m, "torch", device="cuda", nulls="mask")


def test_the_form_is_one_plugin_file(np: Any) -> None:
    """Nothing else in the core or the plugins knows numpy's masked arrays: registering
    the file's module is what makes them a form."""
    need("torch")
    mentions = [
        p.relative_to(ROOT).as_posix()
        for folder in ("interop_core", "plugins")
        for p in (ROOT / folder).rglob("*.py")
        if "numpy.ma" in p.read_text() or "MaskedArray" in p.read_text()
    ]
    assert mentions == ["plugins/forms/masked.py"]
    from interop_plugins.exchange import dlpack
    from interop_plugins.forms import masked as form
    from interop_plugins.frameworks import numpy as numpy_plugin
    from interop_plugins.frameworks import torch as torch_plugin

    base = (numpy_plugin, torch_plugin, dlpack)
    m = masked(np)
    with isolated_registry(*base), pytest.raises(OptionError):  # no edge takes nulls=
        explain(m, "torch", nulls="mask")
    with isolated_registry(*base, form):
        with pytest.raises(NoRouteError, match="nulls='mask'"):
            to(m, "torch")
        assert to(m, "torch", nulls="mask")[1].tolist()[1] is False


def test_a_plain_array_never_visits_the_forms_edges(np: Any) -> None:
    """The search of a plain array skips the edges that take only masked arrays (each would
    only refuse it as another variant): counted by the verdicts asked of them. A masked
    array still meets them, and an option of theirs passed for a plain array still says
    why they refuse it."""
    need("torch")
    from interop_core import default_registry

    graph = default_registry().ready().graph
    asked: list[str] = []
    verdict = graph.verdict

    def counting(edge: Any, key: Any) -> Any:
        asked.append(edge.name)
        return verdict(edge, key)

    graph.verdict = counting  # type: ignore[method-assign]
    try:
        explain(aligned_numpy(np.arange(6, dtype=np.float32)), "torch")
        plain = [n for n in asked if n.startswith("numpy.ma")]
        asked.clear()
        explain(masked(np), "torch", nulls="mask")
        form = [n for n in asked if n.startswith("numpy.ma")]
    finally:
        del graph.verdict
    assert plain == [] and form, (plain, form)
    with pytest.raises(OptionError, match=r"numpy\.ma as \(values, mask\) into torch.*masked"):
        to(np.arange(3.0), "torch", nulls="mask")
