"""CuPy where it is installed: what holds with or without a GPU.

cupy imports on a machine without a GPU but cannot allocate there, so these check what a
user of such a machine meets (a clear error before anything runs, the doctor's report);
tests/test_gpu.py checks the arrays themselves on a GPU.
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata

import pytest
from conftest import gpu_count, need

from interop_core import NoRouteError, explain, to

cupy = need("cupy")
np = need("numpy")


def no_gpu() -> None:
    if gpu_count("cupy"):
        pytest.skip("cupy sees a GPU here: arrays are made, not refused")


def test_no_array_is_made_without_a_gpu() -> None:
    no_gpu()
    a = np.arange(3, dtype=np.float32)
    for call in (to, explain):
        with pytest.raises(NoRouteError) as info:
            call(a, "cupy")
        text = str(info.value)
        assert "cupy sees no cuda:0 device on this machine (it sees: none)" in text
        assert "No cupy array can be made on this machine" in text
    with pytest.raises(NoRouteError, match="cupy sees no cuda:1 device"):
        to(a, "cp", device="cuda:1")


def test_a_cupy_device_object_names_a_cuda_device() -> None:
    torch = need("torch")
    a = np.arange(3, dtype=np.float32)
    if torch.cuda.is_available():
        assert to(a, "torch", device=cupy.cuda.Device(0)).device == torch.device("cuda:0")
    else:  # parsed as cuda:0, which torch does not see here
        with pytest.raises(NoRouteError, match="torch sees no cuda:0 device"):
            to(a, "torch", device=cupy.cuda.Device(0))


def test_doctor_reports_cupy_with_its_devices_and_version() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "interop_core", "doctor", "--json"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads(run.stdout)
    row = next(f for f in report["frameworks"] if f["name"] == "cupy")
    dists = metadata.packages_distributions()["cupy"]
    assert row["version"] == metadata.version(dists[0])  # from whichever wheel provides it
    gpus = gpu_count("cupy")
    assert row["devices"] == [f"cuda:{i}" for i in range(gpus)]
    # The route matrix is measured with host examples' partners on the host: without a
    # GPU, CuPy cannot be measured and is left out rather than reported broken.
    if not gpus:
        assert "cupy" not in report["matrix"]
        assert all("cupy" not in row for row in report["matrix"].values())
