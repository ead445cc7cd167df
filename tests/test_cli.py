"""``python -m interop_core`` in subprocesses: doctor (text and --json), explain of dense
examples, and graph (test_cli_explain.py: files and forms; test_cli_graph.py: --from/--to,
text and SVG; test_cli_bench.py: bench).

Each doctor run imports every framework and measures the matrix live (~9 s on two cores);
explain imports the frameworks of its route; graph imports none.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import available, exchange_names, frameworks, need

from interop_core import ConverterSpec, FrameworkSpec, Registry, hookimpl
from interop_core.plugin import Package

#: The built-in frameworks whose rows and columns the doctor's matrix has, from the registry.
BUILTINS = frameworks(builtin=True)
PLUGINS = (
    "interop_plugins.frameworks.numpy",
    "interop_plugins.frameworks.torch",
    "interop_plugins.frameworks.jax",
    "interop_plugins.frameworks.tensorflow",
    "interop_plugins.exchange.dlpack",
    "interop_plugins.kinds.callables",
    "interop_plugins.bridges.jax_tf",
    "interop_plugins.bridges.jax_torch",
    "interop_plugins.bridges.torch_tf",
    "interop_plugins.exchange.sharding",
)


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m interop_core ARGS`` run to completion in a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "interop_core", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )


@pytest.fixture(scope="module")
def doctor() -> subprocess.CompletedProcess[str]:
    """``python -m interop_core doctor`` run to completion in a subprocess.

    TF_CPP_MIN_LOG_LEVEL is left unset, as users run it: the doctor itself must keep
    TensorFlow's start-up lines off stderr.
    """
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    env["PYTHONWARNINGS"] = "ignore"
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
    """The route matrix parsed back from the text report (cells and row labels may hold
    single spaces: "copy (alignment)", "numpy, 64-byte aligned"; columns are two apart)."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Route matrix"))
    header = lines[start + 1].split()
    matrix: dict[str, dict[str, str]] = {}
    for line in lines[start + 2 :]:
        cells = re.split(r"\s{2,}", line.strip())
        if not line.startswith("  ") or len(cells) != len(header) + 1:
            break
        matrix[cells[0]] = dict(zip(header, cells[1:], strict=True))
    return matrix


#: Rows of arrays made as user code makes them, and the frameworks each needs.
ORDINARY = {"numpy": ("numpy",), "torch.from_numpy": ("numpy", "torch")}


def expected_rows() -> dict[str, str]:
    """Every matrix row this machine must have -> the framework whose arrays it holds."""
    rows = {fw: fw for fw in installed_builtins()}
    if "numpy" in rows:
        rows["numpy, 64-byte aligned"] = "numpy"
    for label, needs in ORDINARY.items():
        if all(available(fw) for fw in needs):
            rows[label] = needs[-1]
    return rows


def expected_result(row: str, dst: str) -> str:
    """What the doctor must measure: zero-copy between installed frameworks, except that
    numpy's own allocations (and torch tensors over them) are not 64-byte aligned, which
    JAX and TensorFlow need to share memory (1 MiB and more always start 16 past one)."""
    if row in ORDINARY and dst in ("jax", "tensorflow"):
        return "copy (alignment)"
    return "zero-copy"


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
    rows = expected_rows()
    assert set(rows) <= set(matrix), doctor.stdout
    for src in rows:
        for dst in names:
            want = expected_result(src, dst)
            assert matrix[src][dst] == want, f"{src} -> {dst}: {matrix[src][dst]}"
    for row in matrix.values():
        assert not any(cell.startswith("WRONG") for cell in row.values())


def test_doctor_text_says_what_each_row_measured(
    doctor: subprocess.CompletedProcess[str],
) -> None:
    if not available("numpy"):
        pytest.skip("numpy is not installed")
    after = doctor.stdout.split("Route matrix")[1]
    text = " ".join(line.strip() for line in after.splitlines())
    assert "Rows: numpy: np.ones and np.random.default_rng().random float32 arrays" in text
    assert "numpy, 64-byte aligned: a 2x3 numpy array on a 64-byte boundary" in text


def test_doctor_lists_planned_function_routes(report: dict[str, Any]) -> None:
    have = {fw for fw in ("torch", "jax", "tensorflow") if available(fw)}
    routes = report["functions"]
    assert set(routes) == (have if len(have) > 1 else set())
    if have == {"torch", "jax", "tensorflow"}:
        assert routes["jax"]["tensorflow"] == ["jax2tf.convert"]
        into_jax = "tf2jax.convert" if importlib.util.find_spec("tf2jax") else "jax2tf.call_tf"
        assert routes["tensorflow"]["torch"] == [into_jax, "jax.vjp bridge"]
        assert routes["torch"]["tensorflow"] == ["tf.py_function bridge"]


def test_doctor_lists_planned_pipeline_routes(report: dict[str, Any]) -> None:
    routes = report["pipelines"]
    if not available("dali"):
        assert routes == {}
        return
    row = routes["dali"]
    assert row["numpy"] == ["DALI outputs as numpy"]
    if available("jax"):
        assert row["jax"] == ["DALI JAX iterator"]  # not the opt-in sharded edge
    if available("torch"):
        assert row["torch"] == ["DALI PyTorch iterator"]
    if available("tensorflow"):
        assert row["tensorflow"] == ["DALI outputs as numpy", "to() on each batch"]


def test_doctor_json_structure(report: dict[str, Any]) -> None:
    from interop_core import __version__

    assert report["interop_core"] == __version__
    assert report["python"] == ".".join(map(str, sys.version_info[:3]))
    by_name = {f["name"]: f for f in report["frameworks"]}
    for fw in installed_builtins():
        row = by_name[fw]
        module = {"pyarrow": "arrow"}.get(fw, fw)  # frameworks/arrow.py
        assert row["plugin"] == f"interop_plugins.frameworks.{module}"
        assert row["version"] != "?" and "cpu" in row["devices"]
    plugins = {p["name"]: p["distribution"] for p in report["plugins"]}
    for plugin in PLUGINS:
        assert plugins[plugin] == "interop-core"
    assert report["dropped"] == []
    assert report["converters"] > 0


def test_doctor_json_matrix_zero_copy(report: dict[str, Any]) -> None:
    matrix = report["matrix"]
    names = installed_builtins()
    rows = expected_rows()
    for src, fw in rows.items():
        for dst in names:
            cell = matrix[src][dst]
            assert cell["result"] == expected_result(src, dst), f"{src} -> {dst}: {cell}"
            assert "why" not in cell, cell  # explain() agreed with the pointers
            if src not in ORDINARY:
                assert cell["steps"] == (0 if fw == dst else 1)
    for row in matrix.values():
        for cell in row.values():
            assert cell["result"] != "wrong", cell


def test_doctor_json_measures_ordinary_numpy_arrays(report: dict[str, Any]) -> None:
    """numpy's np.ones/np.random arrays are measured one by one: into jax and tensorflow
    only the ones that happen to be 64-byte aligned share memory."""
    rows = expected_rows()
    if "numpy" not in rows:
        pytest.skip("numpy is not installed")
    for label in (r for r in ORDINARY if r in rows):
        measured = report["rows"][label]
        assert measured["example"] is False and measured["framework"] == rows[label]
        assert measured["arrays"] == 8 and 0 <= measured["aligned"] < 8, measured
        for dst in installed_builtins():
            cell = report["matrix"][label][dst]
            assert cell["arrays"] == 8, cell
            if dst in ("jax", "tensorflow"):
                assert cell["shared"] == measured["aligned"], (label, dst, cell, measured)
            else:
                assert cell["shared"] == 8, (label, dst, cell)
    assert report["rows"]["numpy, 64-byte aligned"]["example"] is True


def test_doctor_json_agrees_with_text(
    doctor: subprocess.CompletedProcess[str], report: dict[str, Any]
) -> None:
    text = text_matrix(doctor.stdout)
    marks = {"zero-copy": "zero-copy", "copy": "copy", "none": "none", "wrong": "WRONG"}
    marks["copy (alignment)"] = "copy (alignment)"
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


# -- help ----------------------------------------------------------------------------------


def test_help_lists_every_command() -> None:
    run = cli("--help")
    assert run.returncode == 0, run.stderr
    for command in ("doctor", "explain", "graph", "bench"):
        assert re.search(rf"^\s+{command}\s+\S", run.stdout, re.M), run.stdout


# -- doctor: quiet stderr, alignment note ---------------------------------------------------

NATIVE_NOISE = ("oneDNN", "absl", "cpu_feature_guard", "TF_ENABLE_ONEDNN_OPTS")


def test_doctor_stderr_has_no_native_start_up_lines(
    doctor: subprocess.CompletedProcess[str],
) -> None:
    assert doctor.returncode == 0, doctor.stderr[-2000:]
    for noise in NATIVE_NOISE:
        assert noise not in doctor.stderr, doctor.stderr[-2000:]


def test_doctor_silences_native_stderr_even_when_tensorflow_logs_everything() -> None:
    # TF_CPP_MIN_LOG_LEVEL=0 makes TensorFlow log its start-up INFO lines: only the doctor's
    # redirection of file descriptor 2 keeps them out.
    if not available("tensorflow"):
        pytest.skip("tensorflow is not installed")
    run = cli("doctor", env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "0"})
    assert run.returncode == 0, run.stderr[-2000:]
    for noise in NATIVE_NOISE:
        assert noise not in run.stderr, run.stderr[-2000:]
    assert "Route matrix" in run.stdout


def test_native_stderr_silenced_keeps_python_warnings() -> None:
    code = (
        "import os, warnings\n"
        "from interop_core.face.doctor import native_stderr_silenced\n"
        "with native_stderr_silenced():\n"
        "    os.write(2, b'NATIVE-LINE\\n')\n"
        "    warnings.warn('PYTHON-WARNING')\n"
        "os.write(2, b'AFTER-LINE\\n')\n"
    )
    run = subprocess.run(
        [sys.executable, "-W", "always", "-c", code], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    assert "NATIVE-LINE" not in run.stderr
    assert "PYTHON-WARNING" in run.stderr
    assert "AFTER-LINE" in run.stderr


def test_doctor_notes_the_alignment_routes(doctor: subprocess.CompletedProcess[str]) -> None:
    if not available("numpy"):
        pytest.skip("numpy is not installed")
    after = doctor.stdout.split("Route matrix")[1]
    notes = " ".join(line.strip() for line in after.splitlines() if line.strip())
    targets = [fw for fw in ("jax", "tensorflow") if available(fw)]
    if not targets:
        pytest.skip("neither jax nor tensorflow is installed")
    assert "share memory only with 64-byte aligned buffers" in notes, after
    assert "copy (alignment): numpy's allocations are mostly not 64-byte aligned" in notes
    assert f"are copied once into {' and '.join(targets)}" in notes, after
    assert 'copy once with to(a, "numpy", copy=True)' in notes, after
    for fw in targets:
        assert f"numpy -> {fw}" in notes, after


def test_doctor_json_has_the_alignment_notes(report: dict[str, Any]) -> None:
    targets = [fw for fw in ("jax", "tensorflow") if available(fw)]
    if not available("numpy") or not targets:
        pytest.skip("needs numpy and jax or tensorflow")
    notes = " ".join(report["notes"])
    for fw in targets:
        assert f"numpy -> {fw}" in notes, notes


def test_measure_arrays_tells_alignment_copies_by_data_pointers() -> None:
    """A cell of ordinary arrays is "copy (alignment)" only when every copied array started
    off a 64-byte boundary; an aligned array copied for another reason makes it "copy"."""
    needs("numpy", "jax", "torch")
    import numpy as np
    from interop_plugins.frameworks.numpy import aligned_empty

    from interop_core import default_registry
    from interop_core.face.doctor import measure_arrays

    reg = default_registry()
    jax_spec = reg.ready().frameworks["jax"]
    base = aligned_empty((130,), np.float32)
    base[:] = 1.0
    aligned, unaligned, strided = base[:64], base[1:65], base[::2]
    assert aligned.ctypes.data % 64 == 0 and unaligned.ctypes.data % 64 == 4
    assert measure_arrays(reg, [aligned], jax_spec) == {
        "result": "zero-copy", "steps": 1, "arrays": 1, "shared": 1
    }  # fmt: skip
    cell = measure_arrays(reg, [aligned, unaligned], jax_spec)
    assert cell == {"result": "copy (alignment)", "steps": 2, "arrays": 2, "shared": 1}, cell
    cell = measure_arrays(reg, [unaligned, strided], jax_spec)  # strided: aligned, still copied
    assert cell["result"] == "copy" and cell["shared"] == 0, cell
    # Unaligned and copied, but not for its alignment: an aligned copy is copied too.
    unaligned_strided = base[1:][::2]
    assert unaligned_strided.ctypes.data % 64 == 4
    cell = measure_arrays(reg, [unaligned_strided], jax_spec)
    assert cell["result"] == "copy" and cell["shared"] == 0, cell
    readonly = base[1:65].copy()[1:]  # unaligned (numpy's own allocation, 4 bytes on)
    readonly.flags.writeable = False
    if readonly.ctypes.data % 64:  # torch gets no writable alias of it: copied, aligned or not
        cell = measure_arrays(reg, [readonly], reg.state.frameworks["torch"])
        assert cell["result"] == "copy" and cell["shared"] == 0, cell


# -- explain --------------------------------------------------------------------------------


def needs(*frameworks: str) -> None:
    missing = [fw for fw in frameworks if not available(fw)]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed")


def test_explain_numpy_to_torch_is_zero_copy() -> None:
    needs("numpy", "torch")
    run = cli("explain", "numpy", "torch")
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("Example: numpy float32 array of shape (2, 3), layout C"), lines
    assert lines[1].startswith("Route numpy@cpu -> torch@cpu: zero-copy in 1 step(s)"), lines
    assert exchange_names()[0] in lines[2] and "zero-copy" in lines[2], lines
    assert "COPY" not in run.stdout


def test_explain_f_layout_numpy_to_tensorflow_copies() -> None:
    needs("numpy", "tensorflow")
    run = cli("explain", "numpy", "tensorflow", "--layout", "F")
    assert run.returncode == 0, run.stderr
    assert "layout F" in run.stdout.splitlines()[0]
    assert "Route numpy@cpu -> tensorflow@cpu: 1 copy(ies), 24 bytes copied" in run.stdout
    assert re.search(r"^\s+\d\. .* COPY", run.stdout, re.M), run.stdout
    assert "why not zero-copy" in run.stdout


@pytest.mark.parametrize(
    ("layout", "shows"),
    [
        ("C", "layout C"),
        ("F", "layout F"),
        ("strided", "layout strided"),
        ("negative", "layout negative"),
        ("broadcast", "layout broadcast"),
        ("readonly", "read-only"),
        ("unaligned", "not 64-byte aligned"),
    ],
)
def test_explain_builds_every_layout_from_numpy(layout: str, shows: str) -> None:
    needs("numpy")
    run = cli("explain", "numpy", "np", "--layout", layout, "--shape", "3,4", "--copy", "true")
    assert run.returncode == 0, run.stderr
    first = run.stdout.splitlines()[0]
    assert first.startswith("Example: numpy float32 array of shape (3, 4), "), first
    assert shows in first, first
    assert "Route numpy@cpu -> numpy@cpu: 1 copy(ies), 48 bytes copied" in run.stdout


def test_explain_dtype_and_shape() -> None:
    needs("numpy")
    run = cli("explain", "numpy", "numpy", "--dtype", "int16", "--shape", "2,3,4")
    assert run.returncode == 0, run.stderr
    assert "numpy int16 array of shape (2, 3, 4)" in run.stdout
    assert "no conversion needed" in run.stdout


def test_explain_layout_the_source_cannot_produce_exits_2() -> None:
    # torch has no negative strides; JAX and TensorFlow arrays have no views at all.
    cases = {"torch": "negative", "jax": "F", "tensorflow": "strided"}
    usable = [fw for fw in cases if available(fw)]
    if not usable:
        pytest.skip("none of torch, jax, tensorflow is installed")
    for fw in usable:
        run = cli("explain", fw, fw, "--layout", cases[fw])
        assert run.returncode == 2, (fw, run.stdout, run.stderr)
        assert f"{fw} cannot produce a float32 array of shape (2, 3)" in run.stderr, run.stderr
        assert f"--layout {cases[fw]}" in run.stderr
        assert "Traceback" not in run.stderr and run.stdout == ""


def test_explain_dtype_the_source_cannot_hold_exits_2() -> None:
    needs("torch")
    run = cli("explain", "torch", "torch", "--dtype", "no_such_dtype")
    assert run.returncode == 2, run.stderr
    assert "torch cannot hold dtype 'no_such_dtype'" in run.stderr


def test_explain_float64_into_jax_without_x64_exits_1() -> None:
    needs("numpy", "jax")
    env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
    run = cli("explain", "numpy", "jax", "--dtype", "float64", env=env)
    assert run.returncode == 1, (run.stdout, run.stderr)
    assert "No route" in run.stderr and "jax_enable_x64" in run.stderr, run.stderr
    assert "Traceback" not in run.stderr and run.stdout == ""


def test_explain_to_a_missing_device_exits_1() -> None:
    needs("numpy", "torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: numpy -> torch on cuda has a route")
    run = cli("explain", "numpy", "torch", "--device", "cuda")
    assert run.returncode == 1, (run.stdout, run.stderr)
    assert "No route" in run.stderr and "cuda" in run.stderr, run.stderr
    assert "Traceback" not in run.stderr


def test_explain_copy_false_that_needs_a_copy_exits_1() -> None:
    needs("numpy", "torch")
    run = cli("explain", "numpy", "torch", "--layout", "negative", "--copy", "false")
    assert run.returncode == 1, (run.stdout, run.stderr)
    assert "copy=False" in run.stderr and "Traceback" not in run.stderr


@pytest.mark.parametrize("args", [("nosuchframework", "numpy"), ("numpy", "nosuchframework")])
def test_explain_unknown_framework_fails_with_a_message(args: tuple[str, str]) -> None:
    needs("numpy")  # the other side must exist for the unknown one to be the error
    run = cli("explain", *args)
    assert run.returncode == 1, (run.stdout, run.stderr)
    assert "Unknown framework 'nosuchframework'" in run.stderr, run.stderr
    assert "Traceback" not in run.stderr and run.stdout == ""


def test_explain_bad_arguments_are_usage_errors() -> None:
    for args in (("numpy",), ("numpy", "torch", "--shape", "2,x"), ("a", "b", "--layout", "Z")):
        run = cli("explain", *args)
        assert run.returncode == 2, (args, run.stderr)
        assert run.stderr.startswith("usage: "), run.stderr


# -- graph ----------------------------------------------------------------------------------

EDGE = re.compile(
    r'^  "(?P<src>[^"]+)" -> "(?P<dst>[^"]+)" \[label="(?P<label>[^"]*)", (?P<rest>.*)\];$'
)


def test_graph_prints_dot_with_one_edge_per_converter() -> None:
    needs("numpy", "torch")
    run = cli("graph")
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert out.startswith("digraph interop_core {") and out.rstrip().endswith("}")
    edges = [m.groupdict() for m in map(EDGE.match, out.splitlines()) if m]
    by_label = {(e["src"], e["dst"], e["label"]): e["rest"] for e in edges}
    rest = by_label["numpy", "torch", "torch.from_numpy"]
    assert "style=solid" in rest and "tooltip=" in rest and "interop_plugins." in rest
    loop = by_label["numpy", "numpy", "numpy aligned copy"]
    assert "style=dashed" in loop and "[interop_plugins.frameworks.numpy]" in loop
    count = re.search(r"(\d+) converters \(usable", out)
    assert count is not None and int(count.group(1)) == len(edges)
    if shutil.which("dot"):  # Graphviz parses it
        check = subprocess.run(["dot", "-Tcanon"], input=out, capture_output=True, text=True)
        assert check.returncode == 0, check.stderr


def test_graph_mermaid() -> None:
    needs("numpy", "torch")
    run = cli("graph", "--format", "mermaid")
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("flowchart LR\n")
    assert re.search(
        r'^  fw_numpy -->\|"torch\.from_numpy<br/>\[interop_plugins\.[\w.]+\]"\| fw_torch$',
        run.stdout,
        re.M,
    ), run.stdout
    assert re.search(r'^  fw_numpy -\.->\|"numpy aligned copy<br/>', run.stdout, re.M)


def test_graph_renders_svg_with_graphviz(tmp_path: Path) -> None:
    needs("numpy")
    if shutil.which("dot") is None:
        pytest.skip("Graphviz's dot is not installed")
    out = tmp_path / "graph.svg"
    run = cli("graph", "--output", str(out))
    assert run.returncode == 0, run.stderr
    svg = out.read_text()
    assert "<svg" in svg and "numpy" in svg and "</svg>" in svg
    assert run.stdout.strip() == f"wrote {out} (rendered by Graphviz)"


def test_graph_output_without_graphviz(tmp_path: Path) -> None:
    """Without Graphviz's dot, an .svg is drawn by interop_core itself; .png and .pdf still
    need dot: exit 2, naming it and what works without it, and no file is left."""
    need("numpy")  # the graph drawn names it
    env = {**os.environ, "PATH": str(tmp_path)}  # no dot on this PATH
    svg = tmp_path / "graph.svg"
    run = cli("graph", "--output", str(svg), env=env)
    assert run.returncode == 0, (run.stdout, run.stderr)
    assert run.stdout.strip() == f"wrote {svg} (drawn without Graphviz)"
    text = svg.read_text(encoding="utf-8")
    assert text.startswith("<svg xmlns='http://www.w3.org/2000/svg'") and "numpy" in text
    run = cli("graph", "--output", str(tmp_path / "graph.png"), env=env)
    assert run.returncode == 2, (run.stdout, run.stderr)
    assert "Graphviz's 'dot' program is not installed" in run.stderr
    assert "write a .svg file (drawn by interop_core itself)" in run.stderr
    assert not (tmp_path / "graph.png").exists()


def test_graph_output_text_files_and_bad_requests(tmp_path: Path) -> None:
    mmd = tmp_path / "graph.mmd"
    run = cli("graph", "--output", str(mmd))
    assert run.returncode == 0, run.stderr
    assert mmd.read_text().startswith("flowchart LR\n")
    txt = tmp_path / "graph.txt"
    run = cli("graph", "--output", str(txt))
    assert run.returncode == 0, run.stderr
    assert txt.read_text().startswith("interop_core ") and "Frameworks: " in txt.read_text()
    for args in (
        ("--format", "mermaid", "--output", str(tmp_path / "g.svg")),
        ("--format", "dot", "--output", str(tmp_path / "g.mmd")),
        ("--format", "text", "--output", str(tmp_path / "g.dot")),
        ("--output", str(tmp_path / "g.jpg")),
    ):
        run = cli("graph", *args)
        assert run.returncode == 2, (args, run.stderr)
        assert "python -m interop_core graph: " in run.stderr


class _Ghost:
    """A plugin declaring a framework that is not installed, and a converter into it."""

    @hookimpl
    def interop_frameworks(self) -> list[FrameworkSpec]:
        def unused(*args: Any) -> Any:
            raise AssertionError("never called")

        return [
            FrameworkSpec(
                name="ghost",
                array_types=("interop_ghost_not_installed.Array",),
                describe=unused,
                key=unused,
                data_ptr=unused,
                example=unused,
                dtypes=frozenset({"float32"}),
                package=Package(install_hint="pip install ghost"),
            )
        ]

    @hookimpl
    def interop_converters(self) -> list[ConverterSpec]:
        return [
            ConverterSpec(
                name="ghost.asarray", source="numpy", target="ghost", load=lambda: id,
                zero_copy=False,
            )
        ]  # fmt: skip


def test_graph_all_includes_frameworks_not_installed() -> None:
    from interop_core.face import drawing

    reg = Registry(builtins=True, entry_points=False)
    reg.register(_Ghost(), name="ghost-plugin")
    usable = drawing.to_dot(reg)
    assert '"ghost"' not in usable and "ghost.asarray" not in usable
    everything = drawing.to_dot(reg, include_all=True)
    assert re.search(
        r'^  "numpy" -> "ghost" \[label="ghost\.asarray", style=dashed, .*\[ghost-plugin\]',
        everything,
        re.M,
    ), everything
    assert re.search(
        r'^  "ghost" \[.*not installed \(pip install ghost\).*dashed', everything, re.M
    )
    assert "(declared)" in everything
    mermaid = drawing.to_mermaid(reg, include_all=True)
    assert 'fw_numpy -.->|"ghost.asarray<br/>[ghost-plugin]"| fw_ghost' in mermaid
    missing = re.search(r"^  class (\S+) missing$", mermaid, re.M)
    assert missing and "fw_ghost" in missing.group(1).split(","), mermaid
