"""Two processes, each with its own CPU device: jax.distributed and torch.distributed both
initialised, each rank converting its own shards (distributed_worker.py does the checks)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import free_port, need, rank_facts

WORKER = Path(__file__).with_name("distributed_worker.py")
WORLD = 2


def test_two_processes_convert_their_own_shards(tmp_path: Path) -> None:
    need("jax")
    need("torch")
    ports = [str(free_port()), str(free_port())]
    ranks = [
        subprocess.Popen(
            [sys.executable, str(WORKER), str(rank), str(WORLD), *ports, str(tmp_path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=WORKER.parent.parent,
        )
        for rank in range(WORLD)
    ]
    facts = rank_facts(ranks, 180)
    assert [f["rank"] for f in facts] == [f["jax_process"] for f in facts] == [0, 1]
    for f in facts:
        assert f["ok"] and f["gather_refused"]
        assert f["explain"] == ["jax shards as a DTensor"]
        assert f["numpy_route"][0] == "DTensor.full_tensor()"
