"""Items of containers: an item's error names where it sits, options apply to the items
whose routes take them, and explain() lists the items of items (a table in a batch)."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import need

from interop_core import InteropError, NoRouteError, OptionError, explain, to


def test_an_item_without_a_route_is_named_by_its_path() -> None:
    np, torch = need("numpy"), need("torch")
    need("tensorflow")
    ok = np.zeros(3, dtype=np.float32)
    bad = torch.zeros(3, dtype=torch.float8_e4m3fn)  # TensorFlow has no float8_e4m3fn
    for _ in range(2):  # cold, then with the numpy leaves planned
        with pytest.raises(NoRouteError) as info:
            to({"ok": ok, "w": [ok, {"scale": bad}]}, "tensorflow")
        assert info.value.item_path == ("w", 1, "scale")
        first = str(info.value).splitlines()[0]
        assert first.startswith("At ['w'][1]['scale']: No route from torch float8_e4m3fn")
    with pytest.raises(NoRouteError) as explained:
        explain((ok, bad), "tensorflow")
    assert explained.value.item_path == (1,) and str(explained.value).startswith("At [1]: ")
    with pytest.raises(NoRouteError) as alone:  # an array passed alone has no path
        to(bad, "tensorflow")
    assert alone.value.item_path == () and str(alone.value).startswith("No route")


def test_a_column_in_a_table_in_a_batch_is_named_by_both_keys() -> None:
    pa = need("pyarrow")
    np = need("numpy")
    table = pa.table({"a": [1, 2], "b": [1, None]})
    with pytest.raises(InteropError) as info:
        to({"x": np.zeros(2), "table": table}, "numpy")
    assert info.value.item_path == ("table", "b")
    assert str(info.value).startswith("At ['table']['b']: Cannot convert column 'b'")


def test_options_apply_to_the_items_whose_routes_take_them() -> None:
    pa, np, torch = need("pyarrow"), need("numpy"), need("torch")
    table = pa.table({"a": pa.array([1, None], pa.int64())})
    x = np.arange(3.0)
    out = to({"t": table, "x": x}, "torch", nulls="fill", fill_value=-1)
    assert out["t"]["a"].tolist() == [1, -1] and out["t"]["a"].dtype == torch.int64
    assert out["x"].data_ptr() == x.__array_interface__["data"][0]  # x's route unchanged
    routes = explain({"t": table, "x": x}, "torch", nulls="fill", fill_value=-1).routes
    assert list(routes) == ["['t']['a']", "['x']"]
    assert not routes["['t']['a']"].zero_copy and routes["['x']"].zero_copy


@pytest.mark.parametrize(
    "options", [{"nulls": "fill"}, {"nulls": "fill", "fill_value": 0, "nulss": 1}]
)
def test_an_option_no_item_takes_is_unknown(options: dict[str, Any]) -> None:
    pa, np = need("pyarrow"), need("numpy")
    need("torch")
    batch = {"t": pa.table({"a": [1, 2]}), "x": np.arange(3.0)}
    if "nulss" not in options:
        batch = {"y": np.arange(3.0), "x": np.arange(3.0)}
    with pytest.raises(OptionError) as info:
        to(batch, "torch", **options)
    wrong = "nulss" if "nulss" in options else "nulls"
    assert wrong in info.value.unknown
    assert str(info.value).startswith(f"Unknown option(s) {wrong}")
