"""``python -m interop_core explain`` of files (safetensors, Parquet, Arrow IPC, .npy, .npz)
and of forms (``--form sparse``, ``ragged``, ``table``, a plugin's own).

The command lines run in one child process per group (:func:`cli_runs`: each imports the
frameworks once, ~3-5 s), each case's exit status, stdout and stderr kept apart.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import available

#: Runs ``main(argv)`` for each argv of a JSON list in one process; prints the results.
_DRIVER = """
import contextlib, io, json, os, sys
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
from interop_core.__main__ import main
done = []
for argv in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as exc:  # argparse's usage errors
            rc = exc.code
    done.append({"rc": rc, "out": out.getvalue(), "err": err.getvalue()})
print("CLI-RUNS " + json.dumps(done))
"""


def cli_runs(
    runs: Sequence[Sequence[str]], cwd: Path | None = None, env: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """``python -m interop_core ARGS`` for each ARGS of ``runs``, all in one child process:
    a dict of ``rc``, ``out`` and ``err`` per run."""
    done = subprocess.run(
        [sys.executable, "-c", _DRIVER, json.dumps([list(r) for r in runs])],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONWARNINGS": "ignore", **(env or {})},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("CLI-RUNS "))
    found: list[dict[str, Any]] = json.loads(line[len("CLI-RUNS ") :])
    return found


def needs(*frameworks: str) -> None:
    missing = [fw for fw in frameworks if not available(fw)]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed")


# -- files ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory of files to explain, written with the frameworks' own writers."""
    needs("numpy", "torch", "pyarrow")
    import numpy as np
    import pyarrow as pa
    import pyarrow.feather
    import pyarrow.parquet

    root = tmp_path_factory.mktemp("cli-files")
    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    save_safetensors(root / "model.safetensors", {"w": w, "b": np.arange(5, dtype=np.float32)})
    np.save(root / "a.npy", w)
    np.savez(root / "b.npz", x=np.arange(3, dtype=np.float32), y=np.ones((2, 2), np.int32))
    table = pa.table(
        {"a": np.arange(5, dtype=np.float32), "b": np.arange(5, dtype=np.int32),
         "s": ["a", "b", "c", "d", "e"]}
    )  # fmt: skip
    pyarrow.parquet.write_table(table, root / "data.parquet")
    pyarrow.feather.write_feather(table, root / "data.arrow", compression="uncompressed")
    (root / "bad.safetensors").write_bytes(b"garbage!")
    (root / "bad.parquet").write_bytes(b"PAR1 not parquet PAR1")
    (root / "notes.txt").write_text("not a tensor file")
    (root / "numpy").write_text("a file named like a framework")
    os.mkfifo(root / "pipe.parquet")  # reading it would block forever
    return root


def save_safetensors(path: Path, tensors: dict[str, Any]) -> None:
    """A safetensors file of numpy arrays, written by hand (header, then the bytes)."""
    import struct

    header: dict[str, Any] = {}
    data = b""
    for name, a in tensors.items():
        raw = a.tobytes()
        code = {"float32": "F32", "int32": "I32"}[str(a.dtype)]
        span = [len(data), len(data) + len(raw)]
        header[name] = {"dtype": code, "shape": list(a.shape), "data_offsets": span}
        data += raw
    head = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(head)) + head + data)


FILE_RUNS = {
    "safetensors": ("explain", "model.safetensors", "torch", "--copy", "false"),
    "safetensors_jax": ("explain", "./model.safetensors", "jax"),
    "npy": ("explain", "a.npy", "torch"),
    "npz": ("explain", "b.npz", "torch"),
    "parquet_strings": ("explain", "data.parquet", "torch"),
    "parquet": ("explain", "data.parquet", "torch", "--columns", "a,b"),
    "parquet_missing_column": ("explain", "data.parquet", "torch", "--columns", "a,zz"),
    "ipc": ("explain", "data.arrow", "torch", "--columns", "a"),
    "missing": ("explain", "nosuch.safetensors", "jax"),
    "missing_dir": ("explain", "no/such/file", "jax"),
    "bad_safetensors": ("explain", "bad.safetensors", "jax"),
    "bad_parquet": ("explain", "bad.parquet", "jax"),
    "txt": ("explain", "notes.txt", "jax"),
    "fifo": ("explain", "pipe.parquet", "jax"),
    "directory": ("explain", ".", "torch"),
    "framework_named_file": ("explain", "numpy", "torch"),
    "file_with_dtype": ("explain", "a.npy", "torch", "--dtype", "int32"),
}


@pytest.fixture(scope="module")
def file_runs(files: Path) -> dict[str, dict[str, Any]]:
    done = cli_runs(list(FILE_RUNS.values()), cwd=files)
    return dict(zip(FILE_RUNS, done, strict=True))


def test_safetensors_file_is_opened_by_to_itself(file_runs: dict[str, Any]) -> None:
    run = file_runs["safetensors"]
    assert run["rc"] == 0, run["err"]
    lines = run["out"].splitlines()
    assert lines[0] == (
        "File: model.safetensors (safetensors, opened by to() itself from a pathlib.Path: the "
        "header read, nothing converted): 2 tensor(s)"
    )
    assert lines[1] == "2 array(s), 0 of them copied:"  # copy=False: every tensor is shared
    assert "['w']: safetensors@cpu -> torch@cpu: zero-copy in 1 step(s)" in run["out"]
    assert "['b']: safetensors@cpu -> torch@cpu: zero-copy in 1 step(s)" in run["out"]


def test_safetensors_into_jax_copies_the_unaligned_tensor(file_runs: dict[str, Any]) -> None:
    needs("jax")
    run = file_runs["safetensors_jax"]
    assert run["rc"] == 0, run["err"]
    # The header's length decides where "w" starts; "b" starts 48 bytes after it, so at most
    # one of them starts on a 64-byte boundary: at least one is copied once.
    assert "2 tensor(s)" in run["out"].splitlines()[0]
    assert "safetensors@cpu -> jax@cpu: 1 copy(ies)" in run["out"], run["out"]


def test_npy_is_a_read_only_memory_map(file_runs: dict[str, Any]) -> None:
    run = file_runs["npy"]
    assert run["rc"] == 0, run["err"]
    first = run["out"].splitlines()[0]
    assert first == (
        "File: a.npy (.npy, read with numpy.load(path, mmap_mode='r')): a float32 array of "
        "shape (3, 4)"
    )
    # Rule 8: a read-only map is not handed to torch as writable memory: one copy of 48 bytes.
    assert "Route numpy@cpu -> torch@cpu: 1 copy(ies), 48 bytes copied" in run["out"]
    assert "read-only" in run["out"]


def test_npz_arrays_each_get_a_route(file_runs: dict[str, Any]) -> None:
    run = file_runs["npz"]
    assert run["rc"] == 0, run["err"]
    assert run["out"].splitlines()[0].endswith("2 array(s): x, y")
    assert "['x']: numpy@cpu -> torch@cpu: zero-copy" in run["out"]
    assert "['y']: numpy@cpu -> torch@cpu: zero-copy" in run["out"]


def test_parquet_with_a_string_column_is_refused_with_a_hint(file_runs: dict[str, Any]) -> None:
    run = file_runs["parquet_strings"]
    assert run["rc"] == 1, run
    assert "'s': strings" in run["err"] and "--columns NAME,..." in run["err"]
    assert run["out"] == ""


def test_parquet_columns(file_runs: dict[str, Any]) -> None:
    run = file_runs["parquet"]
    assert run["rc"] == 0, run["err"]
    first = run["out"].splitlines()[0]
    assert first == (
        "File: data.parquet (Parquet, read with pyarrow.parquet.read_table(path, "
        "memory_map=True)): a pyarrow Table of 5 rows and 2 column(s): a, b"
    )
    # Parquet is decoded into memory pyarrow allocates: shared with torch.
    assert "['a']: pyarrow@cpu -> torch@cpu: zero-copy" in run["out"]
    assert "['b']: pyarrow@cpu -> torch@cpu: zero-copy" in run["out"]
    missing = file_runs["parquet_missing_column"]
    assert missing["rc"] == 2 and "--columns names 'zz'" in missing["err"], missing


def test_arrow_ipc_file_stays_in_the_read_only_mapping(file_runs: dict[str, Any]) -> None:
    run = file_runs["ipc"]
    assert run["rc"] == 0, run["err"]
    assert "Arrow IPC, read with pyarrow.ipc.open_file(pyarrow.memory_map(path))" in run["out"]
    # The column lies in the file's read-only mapping: torch gets a copy (rule 8).
    assert "1 array(s), 1 of them copied:" in run["out"], run["out"]


@pytest.mark.parametrize(
    ("case", "says"),
    [
        ("missing", "no such file: 'nosuch.safetensors'"),
        ("missing_dir", "no such file: 'no/such/file'"),
        ("bad_safetensors", "Cannot open 'bad.safetensors' as a safetensors file"),
        ("bad_parquet", "cannot read 'bad.parquet' as a Parquet file: ArrowInvalid"),
        ("txt", "its name ends in '.txt', not '.safetensors'"),
        ("fifo", "cannot read 'pipe.parquet': it is not a regular file"),
        ("directory", "cannot read '.': it is a directory"),
        ("file_with_dtype", "--dtype: these describe an example to build"),
    ],
)
def test_files_that_cannot_be_read_exit_2(file_runs: dict[str, Any], case: str, says: str) -> None:
    run = file_runs[case]
    assert run["rc"] == 2, run
    assert says in run["err"], run["err"]
    assert run["err"].startswith("python -m interop_core explain: ") and run["out"] == ""
    assert "Traceback" not in run["err"]


def test_a_framework_name_stays_a_framework_beside_a_file_of_that_name(
    file_runs: dict[str, Any],
) -> None:
    run = file_runs["framework_named_file"]  # run where a file "numpy" lies
    assert run["rc"] == 0, run["err"]
    assert run["out"].startswith("Example: numpy float32 array of shape (2, 3)")


# -- forms ----------------------------------------------------------------------------------

FORM_RUNS = {
    "torch_coo": (("torch", "scipy"), ("explain", "torch", "scipy", "--form", "sparse")),
    "scipy_csr": (("scipy", "torch"),
                  ("explain", "scipy", "torch", "--form", "sparse", "--layout", "csr")),
    "scipy_csc": (("scipy", "jax"),
                  ("explain", "scipy", "jax", "--form", "sparse", "--layout", "csc")),
    "torch_bsr": (("torch", "scipy"),
                  ("explain", "torch", "scipy", "--form", "sparse", "--layout", "bsr")),
    "jax_csc": (("jax",), ("explain", "jax", "jax", "--form", "sparse", "--layout", "csc")),
    "tf_csr": (("tensorflow",),
               ("explain", "tensorflow", "torch", "--form", "sparse", "--layout", "csr")),
    "sparse_densify": (("scipy", "numpy"),
                       ("explain", "scipy", "numpy", "--form", "sparse", "--densify")),
    "tf_ragged": (("tensorflow", "torch"), ("explain", "tf", "torch", "--form", "ragged")),
    "arrow_ragged": (("pyarrow", "torch"),
                     ("explain", "pyarrow", "torch", "--form", "ragged", "--shape", "1,2",
                      "--dtype", "int32")),
    "ragged_to_numpy": (("torch", "numpy"), ("explain", "torch", "numpy", "--form", "ragged")),
    "ragged_densify": (("torch", "numpy"),
                       ("explain", "torch", "numpy", "--form", "ragged", "--densify")),
    "polars_table": (("polars", "torch"),
                     ("explain", "polars", "torch", "--form", "table", "--shape", "4,3")),
    "pandas_table": (("pandas", "numpy"), ("explain", "pandas", "numpy", "--form", "table")),
    "arrow_table": (("pyarrow", "numpy"), ("explain", "arrow", "numpy", "--form", "table")),
    "torch_table": (("torch",), ("explain", "torch", "torch", "--form", "table")),
    "pandas_series": (("pandas", "torch"), ("explain", "pandas", "torch", "--form", "series")),
    "pandas_dense": (("pandas", "torch"), ("explain", "pandas", "torch")),
    "unknown_form": (("scipy",), ("explain", "scipy", "numpy", "--form", "blob")),
    "dense_layout_with_form": (("scipy",),
                               ("explain", "scipy", "torch", "--form", "sparse", "--layout", "F")),
    "sparse_layout_without_form": (("numpy",), ("explain", "numpy", "torch", "--layout", "csr")),
    "layout_for_ragged": (("torch",),
                          ("explain", "torch", "torch", "--form", "ragged", "--layout", "coo")),
    "densify_dense": (("numpy",), ("explain", "numpy", "torch", "--densify")),
    "bad_layout": ((), ("explain", "numpy", "torch", "--layout", "zz")),
}  # fmt: skip


@pytest.fixture(scope="module")
def form_runs() -> dict[str, dict[str, Any]]:
    usable = {k: argv for k, (fws, argv) in FORM_RUNS.items() if all(map(available, fws))}
    done = cli_runs(list(usable.values()))
    return dict(zip(usable, done, strict=True))


def form_run(form_runs: dict[str, Any], case: str) -> dict[str, Any]:
    if case not in form_runs:
        pytest.skip(f"{', '.join(FORM_RUNS[case][0])}: not all installed")
    run: dict[str, Any] = form_runs[case]
    assert "Traceback" not in run["err"], run["err"]
    return run


def test_sparse_coo_is_the_default_layout(form_runs: dict[str, Any]) -> None:
    run = form_run(form_runs, "torch_coo")
    assert run["rc"] == 0, run["err"]
    first = run["out"].splitlines()[0]
    # (3, 4) with every third value non-zero: 4 values (16 bytes) and (2, 4) int64 indices.
    assert first.startswith("Example: torch sparse coo float32 array of shape (3, 4), 80 bytes "
                            "stored, flags "), first  # fmt: skip
    assert "coo" in first and "sparse" in first
    assert "Route torch@cpu -> scipy@cpu: zero-copy in 1 step(s)" in run["out"]


def test_sparse_csr_from_scipy(form_runs: dict[str, Any]) -> None:
    run = form_run(form_runs, "scipy_csr")
    assert run["rc"] == 0, run["err"]
    first = run["out"].splitlines()[0]
    # 4 values, 4 int32 column indices, 4 int32 row pointers: 48 bytes.
    assert first.startswith("Example: scipy sparse csr float32 array of shape (3, 4), 48 bytes")
    assert "Route scipy@cpu -> torch@cpu: zero-copy in 1 step(s)" in run["out"]


def test_sparse_layout_made_by_the_arrays_own_method(form_runs: dict[str, Any]) -> None:
    run = form_run(form_runs, "scipy_csc")
    assert run["rc"] == 0, run["err"]
    assert run["out"].startswith("Example: scipy sparse csc float32 array of shape (3, 4)")
    assert "scipy .tocsr()" in run["out"]  # only COO and CSR cross frameworks
    bsr = form_run(form_runs, "torch_bsr")
    assert bsr["rc"] == 1 and "No route from torch" in bsr["err"], bsr  # made, then refused
    csc = form_run(form_runs, "jax_csc")
    assert csc["rc"] == 2, csc
    assert "jax cannot produce a sparse csc float32 array" in csc["err"]
    assert "no tocsc() or to_sparse_csc()" in csc["err"]
    tf = form_run(form_runs, "tf_csr")
    assert tf["rc"] == 2 and "tensorflow cannot produce a sparse csr" in tf["err"], tf


def test_densify_passes_the_forms_dense_options(form_runs: dict[str, Any]) -> None:
    run = form_run(form_runs, "sparse_densify")
    assert run["rc"] == 0, run["err"]
    assert "Route scipy@cpu -> numpy@cpu: 1 copy(ies)" in run["out"], run["out"]
    refused = form_run(form_runs, "ragged_to_numpy")
    assert refused["rc"] == 1 and "ragged='pad'" in refused["err"], refused
    padded = form_run(form_runs, "ragged_densify")
    assert padded["rc"] == 0, padded["err"]
    assert "padded" in padded["out"]
    assert "Route torch@cpu -> numpy@cpu: 1 copy(ies)" in padded["out"]


def test_ragged_rows(form_runs: dict[str, Any]) -> None:
    run = form_run(form_runs, "tf_ragged")
    assert run["rc"] == 0, run["err"]
    first = run["out"].splitlines()[0]
    assert first.startswith(
        "Example: tensorflow ragged float32 array of 4 rows of lengths (3, 0, 2, 1)"
    ), first
    assert "Route tensorflow@cpu -> torch@cpu: zero-copy in 1 step(s)" in run["out"]
    arrow = form_run(form_runs, "arrow_ragged")
    assert arrow["rc"] == 0, arrow["err"]
    assert "pyarrow ragged int32 array of 2 rows of lengths (1, 2)" in arrow["out"]


def test_tables(form_runs: dict[str, Any]) -> None:
    run = form_run(form_runs, "polars_table")
    assert run["rc"] == 0, run["err"]
    lines = run["out"].splitlines()
    assert lines[0] == "Example: polars table of 4 rows and 3 float32 columns"
    assert lines[1] == "3 array(s), 0 of them copied:"
    for name in ("c0", "c1", "c2"):
        assert f"['{name}']: polars@cpu -> torch@cpu: zero-copy" in run["out"]
    pandas = form_run(form_runs, "pandas_table")
    assert pandas["rc"] == 0, pandas["err"]
    assert pandas["out"].startswith("Example: pandas table of 3 rows and 2 float32 columns\n")
    assert "['c1']: pandas@cpu -> numpy@cpu: zero-copy" in pandas["out"]
    arrow = form_run(form_runs, "arrow_table")
    assert arrow["rc"] == 0 and "['c0']: pyarrow@cpu -> numpy@cpu: zero-copy" in arrow["out"]
    torch = form_run(form_runs, "torch_table")
    assert torch["rc"] == 2 and "torch cannot produce a table" in torch["err"], torch


def test_a_plugins_own_form_and_sources_only(form_runs: dict[str, Any]) -> None:
    run = form_run(form_runs, "pandas_series")
    assert run["rc"] == 0, run["err"]
    assert run["out"].startswith("Example: pandas 1-d Series of float32 values of shape (6,)")
    assert "Route pandas@cpu -> torch@cpu: zero-copy" in run["out"]
    dense = form_run(form_runs, "pandas_dense")  # pandas builds no dense example: say what
    assert dense["rc"] == 2, dense
    assert "pandas builds no dense example arrays; pick a --form: 1-d series" in dense["err"]


@pytest.mark.parametrize(
    ("case", "says"),
    [
        ("unknown_form", "scipy has no 'blob' examples; it builds: sparse (coo, csr)"),
        ("dense_layout_with_form", "--layout F is a dense layout: it goes without --form"),
        ("sparse_layout_without_form", "--layout csr is a sparse layout: add --form sparse"),
        ("layout_for_ragged", "--layout has no meaning for --form ragged"),
        ("densify_dense", "--densify goes with --form sparse or ragged"),
        ("bad_layout", "usage: "),
    ],
)
def test_form_usage_errors_exit_2(form_runs: dict[str, Any], case: str, says: str) -> None:
    run = form_run(form_runs, case)
    assert run["rc"] == 2, run
    assert says in run["err"], run["err"]
    assert run["out"] == ""
