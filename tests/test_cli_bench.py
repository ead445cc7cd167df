"""``python -m interop_core bench``: the pairs it times, the table, the JSON report and its
usage errors. Timings are never asserted (they vary run to run): rows are counted, their
fields read, and what a route is checked against ``explain()``.

The command lines run in one child process (:func:`test_cli_explain.cli_runs`).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from conftest import available, framework_spec, frameworks
from test_cli_explain import cli_runs

#: The sizes bench times, as its report names them.
SIZES = {"64 B": [16], "1 MiB": [262144]}


def targets_from_numpy() -> set[str]:
    """The frameworks bench must try from numpy here: installed targets that hold arrays on
    the host (a GPU-only one, CuPy, needs a GPU: not counted on a machine without)."""
    found = {
        name for name in frameworks()
        if name != "numpy" and available(name)
        and "cpu" in framework_spec(name).devices.kinds
    }  # fmt: skip
    # Targets that build no example (scipy: sparse arrays only) are tried too.
    for name in ("scipy",):
        if available(name) and framework_spec(name).target:
            found.add(name)
    return found


@pytest.fixture(scope="module")
def runs() -> list[dict[str, Any]]:
    if not available("numpy") or not available("torch"):
        pytest.skip("numpy and torch are needed")
    done: list[dict[str, Any]] = cli_runs(
        [
            ("bench", "--quick", "--json", "--from", "numpy"),
            ("bench", "--quick", "--from", "np", "--to", "torch"),
            ("bench", "--to", "polars"),
            ("bench", "--from", "nosuchframework"),
            ("bench", "--from", "scipy"),
        ]
    )
    return done


def test_json_report_has_a_row_per_pair_and_size(runs: list[dict[str, Any]]) -> None:
    run = runs[0]
    assert run["rc"] == 0, run["err"]
    report = json.loads(run["out"])
    assert report["quick"] is True and report["dtype"] == "float32"
    assert report["sizes"] == SIZES
    timed = {(r["source"], r["target"]) for r in report["rows"]}
    refused = {(r["source"], r["target"]) for r in report["no_route"]}
    assert not timed & refused
    assert {t for _, t in timed | refused} == targets_from_numpy()
    assert {s for s, _ in timed | refused} == {"numpy"}
    assert report["not_built"] == []
    for pair in timed:  # both sizes of each pair
        sizes = [r["size"] for r in report["rows"] if (r["source"], r["target"]) == pair]
        assert sizes == list(SIZES), (pair, sizes)
    if available("torch"):
        assert ("numpy", "torch") in timed
    for row in report["rows"]:
        assert row["shape"] == SIZES[row["size"]]
        assert row["steps"], row  # a route between two frameworks has a step
        assert row["to_us"] > 0 and row["steps_us"] > 0, row
        assert row["overhead_us"] == pytest.approx(row["to_us"] - row["steps_us"], abs=2e-3)
        assert row["ratio"] == pytest.approx(row["to_us"] / row["steps_us"], rel=0.02)
        assert row["zero_copy"] == (row["copies"] == 0)
    for r in report["no_route"]:
        assert r["why"].startswith("No route from numpy"), r


def test_json_routes_agree_with_explain(runs: list[dict[str, Any]]) -> None:
    """The route of each row is the one explain() gives for numpy's example of that size."""
    import numpy as np
    from interop_plugins.frameworks.numpy import aligned_empty

    from interop_core import explain

    report = json.loads(runs[0]["out"])
    for row in report["rows"]:
        x = aligned_empty(tuple(row["shape"]), np.float32)  # the example is 64-byte aligned
        x[...] = 1.0
        route = explain(x, row["target"])
        assert [s.converter for s in route.steps] == row["steps"], row
        assert route.copies == row["copies"], row


def test_text_table(runs: list[dict[str, Any]]) -> None:
    run = runs[1]
    assert run["rc"] == 0, run["err"]
    lines = run["out"].splitlines()
    assert lines[0].startswith("interop_core ") and "medians of 7 interleaved rounds" in lines[0]
    head = lines[2].split()
    assert head[:4] == ["source", "target", "size", "route"], lines[2]
    assert "to()" in head and "steps" in head and "overhead" in head
    rows = [ln for ln in lines[3:] if ln.startswith("numpy ")]
    assert len(rows) == 2, run["out"]
    for row, size in zip(rows, SIZES, strict=True):
        assert re.match(
            rf"^numpy\s+torch\s+{size}\s+zero-copy\s+\d+\.\d\d\s+\d+\.\d\d\s+-?\d+\.\d\d\s+"
            r"\d+\.\d\dx\s+\S",
            row,
        ), row
    assert "No route" not in run["out"]
    assert "steps µs: the route's converter functions called directly" in run["out"]


def test_usage_errors(runs: list[dict[str, Any]]) -> None:
    polars, unknown, scipy = runs[2:]
    if available("polars"):
        assert polars["rc"] == 2, polars
        assert "--to polars: polars is a source only" in polars["err"]
    assert unknown["rc"] == 1 and "Unknown framework 'nosuchframework'" in unknown["err"]
    if available("scipy"):
        assert scipy["rc"] == 2 and "scipy builds no example arrays to time" in scipy["err"]
    for run in (polars, unknown, scipy):
        assert run["out"] == "" and "Traceback" not in run["err"], run
