"""Runs test_sharded.py in a process with four jax host devices, when this one has fewer.

jax fixes its device count at import, and in a test session another module has usually
imported it already; the ``sharded`` nox session sets XLA_FLAGS itself and runs them here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import need

FOUR_DEVICES = "--xla_force_host_platform_device_count=4"


def test_sharded_module_in_a_four_device_process() -> None:
    jax = need("jax")
    if jax.device_count() >= 4:
        pytest.skip("this process has four jax devices: test_sharded.py runs in it")
    env = {**os.environ, "XLA_FLAGS": FOUR_DEVICES}
    module = Path(__file__).with_name("test_sharded.py")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(module)],
        capture_output=True, text=True, env=env, timeout=600, cwd=module.parent.parent,
    )  # fmt: skip
    tail = done.stdout[-6000:] + done.stderr[-3000:]
    assert done.returncode == 0, tail
    # INTEROP_REQUIRE passes through: a framework the session names fails rather than skips.
    assert " passed" in done.stdout, tail
