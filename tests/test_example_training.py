"""examples/train_on_images.py, run as a user runs it: a DALI pipeline through ``to()`` feeds a
tiny model in JAX (DALI's JAX iterator) and in torch (its PyTorch one), and the model learns.

Each run is a subprocess (a few seconds); it is skipped when the framework, DALI or pillow is
missing (failed instead when INTEROP_REQUIRE names the framework, see conftest.need).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import need

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "train_on_images.py"


def run_example(framework: str, data: Path) -> subprocess.CompletedProcess[bytes]:
    """The example trained with ``framework`` on an image folder it writes in ``data``; its
    output as bytes (text mode would turn the step counter's ``\\r`` into newlines)."""
    need(framework)
    need("dali")
    pytest.importorskip("PIL", reason="pillow is not installed (the example writes JPEGs)")
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    cmd = [sys.executable, str(EXAMPLE), "--framework", framework, "--data", str(data)]
    return subprocess.run(cmd, capture_output=True, timeout=300, env=env)


@pytest.mark.parametrize("framework", ["jax", "torch"])
def test_example_trains(framework: str, tmp_path: Path) -> None:
    """Exit status 0; the loss falls; the accuracy on the training images is >= 0.8."""
    run = run_example(framework, tmp_path / "images")
    out = run.stdout.decode()
    assert run.returncode == 0, f"stdout:\n{out}\nstderr:\n{run.stderr.decode()}"
    accuracy = re.search(r"^final accuracy: ([0-9.]+)$", out, re.MULTILINE)
    losses = re.search(r"^first loss: ([0-9.]+) last loss: ([0-9.]+)$", out, re.MULTILINE)
    assert accuracy and losses, out
    first, last = float(losses[1]), float(losses[2])
    assert last < first, out
    assert float(accuracy[1]) >= 0.8, out
    assert "\repoch 3/3 step 8/8 loss " in out, out  # the step counter, rewritten by \r
    assert "\repoch 3/3 mean loss " in out, out  # the epoch's line over it
    assert sorted(p.name for p in (tmp_path / "images").iterdir()) == ["0", "1"]
