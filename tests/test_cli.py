"""``python -m interop_core doctor`` (text and --json) in subprocesses.

Each command imports every framework and measures the matrix live (~7 s on two cores).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from typing import Any

import pytest
from conftest import available

BUILTINS = ("numpy", "torch", "jax", "tensorflow")
PLUGINS = (
    "interop_plugins.numpy",
    "interop_plugins.torch",
    "interop_plugins.jax",
    "interop_plugins.tensorflow",
    "interop_plugins.dlpack",
)


@pytest.fixture(scope="module")
def doctor() -> subprocess.CompletedProcess[str]:
    """``python -m interop_core doctor`` run to completion in a subprocess."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONWARNINGS": "ignore"}
    run = subprocess.run(
        [sys.executable, "-m", "interop_core", "doctor"],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )
    return run


@pytest.fixture(scope="module")
def report(doctor: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """``python -m interop_core doctor --json``, parsed."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONWARNINGS": "ignore"}
    run = subprocess.run(
        [sys.executable, "-m", "interop_core", "doctor", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    parsed: dict[str, Any] = json.loads(run.stdout)
    return parsed


def installed_builtins() -> list[str]:
    return [fw for fw in BUILTINS if available(fw)]


def text_matrix(stdout: str) -> dict[str, dict[str, str]]:
    """The route matrix parsed back from the text report."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Route matrix"))
    header = lines[start + 1].split()
    matrix: dict[str, dict[str, str]] = {}
    for line in lines[start + 2 :]:
        cells = line.split()
        if len(cells) != len(header) + 1 or cells[0] not in header:
            break
        matrix[cells[0]] = dict(zip(header, cells[1:], strict=True))
    return matrix


def test_doctor_text_exits_zero(doctor: subprocess.CompletedProcess[str]) -> None:
    run = doctor
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.startswith("interop_core ")
    assert "Traceback" not in run.stderr


def test_doctor_text_lists_frameworks_and_plugins(
    doctor: subprocess.CompletedProcess[str],
) -> None:
    out = doctor.stdout
    assert "Frameworks:" in out and "Plugins loaded" in out and "Route matrix" in out
    frameworks = out.split("Frameworks:")[1].split("Plugins loaded")[0]
    for fw in installed_builtins():
        assert re.search(rf"^\s+{fw}\s+\d", frameworks, re.M), f"{fw} missing:\n{frameworks}"
    for plugin in PLUGINS:
        assert f"{plugin}  (interop-core)" in out
    assert re.search(r"Plugins loaded \((\d+) converters, ", out)


def test_doctor_text_matrix_zero_copy_between_installed(
    doctor: subprocess.CompletedProcess[str],
) -> None:
    matrix = text_matrix(doctor.stdout)
    names = installed_builtins()
    assert set(names) <= set(matrix)
    for src in names:
        for dst in names:
            assert matrix[src][dst] == "zero-copy", f"{src} -> {dst}: {matrix[src][dst]}"
    for row in matrix.values():
        assert not any(cell.startswith("WRONG") for cell in row.values())


def test_doctor_json_structure(report: dict[str, Any]) -> None:
    from interop_core import __version__

    assert report["interop_core"] == __version__
    assert report["python"] == ".".join(map(str, sys.version_info[:3]))
    by_name = {f["name"]: f for f in report["frameworks"]}
    for fw in installed_builtins():
        row = by_name[fw]
        assert row["plugin"] == f"interop_plugins.{fw}"
        assert row["version"] != "?" and "cpu" in row["devices"]
    plugins = {p["name"]: p["distribution"] for p in report["plugins"]}
    for plugin in PLUGINS:
        assert plugins[plugin] == "interop-core"
    assert report["dropped"] == []
    assert report["converters"] > 0


def test_doctor_json_matrix_zero_copy(report: dict[str, Any]) -> None:
    matrix = report["matrix"]
    names = installed_builtins()
    for src in names:
        for dst in names:
            cell = matrix[src][dst]
            assert cell["result"] == "zero-copy", f"{src} -> {dst}: {cell}"
            assert "why" not in cell, cell  # explain() agreed with the pointers
            assert cell["steps"] == (0 if src == dst else 1)
    for row in matrix.values():
        for cell in row.values():
            assert cell["result"] != "wrong", cell


def test_doctor_json_agrees_with_text(
    doctor: subprocess.CompletedProcess[str], report: dict[str, Any]
) -> None:
    text = text_matrix(doctor.stdout)
    marks = {"zero-copy": "zero-copy", "copy": "copy", "none": "none", "wrong": "WRONG"}
    assert set(text) == set(report["matrix"])
    for src, row in report["matrix"].items():
        for dst, cell in row.items():
            expected = marks[cell["result"]] + ("*" if "why" in cell else "")
            assert text[src][dst] == expected, (src, dst, cell)
    count = re.search(r"Plugins loaded \((\d+) converters, ", doctor.stdout)
    assert count is not None and int(count.group(1)) == report["converters"]


def test_doctor_needs_a_command() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "interop_core"], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 2
    assert "doctor" in run.stderr
