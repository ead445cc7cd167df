"""sharding= for any iterator (issue 20): each process's local batches become global
jax.Arrays (jax.make_array_from_process_local_data), with four host devices and with two
processes on the loopback address.

jax fixes its device count when it is first imported: the four-device tests run in a process
started with ``XLA_FLAGS=--xla_force_host_platform_device_count=4`` (the ``sharded`` nox
session is one); in any other, ``test_four_device_tests_in_a_process_that_has_them`` runs
them in such a process. The two-process test starts its own processes, two CPU devices each.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import free_port, need, rank_facts

from interop_core import ConversionError, OptionError, explain, to

np = need("numpy")
jax = need("jax")
Mesh, NamedSharding, P = jax.sharding.Mesh, jax.sharding.NamedSharding, jax.sharding.PartitionSpec

ROOT = Path(__file__).resolve().parent.parent
EDGE = "jax.make_array_from_process_local_data"
FOUR_DEVICES = "--xla_force_host_platform_device_count=4"
four_devices = pytest.mark.skipif(
    jax.device_count() < 4,
    reason="needs four jax devices (XLA_FLAGS); test_four_device_tests_in_a_process_that_"
    "has_them runs them in a process that has them",
)


def batch_axis(devices: int = 4) -> Any:
    """A sharding of the batch axis over the first ``devices`` devices."""
    return NamedSharding(Mesh(np.array(jax.devices()[:devices]), ("b",)), P("b"))


def local_batches(n: int = 3, rows: int = 8) -> list[dict[str, Any]]:
    return [
        {
            "x": np.arange(rows * 3, dtype=np.float32).reshape(rows, 3) + 100 * i,
            "pair": (np.arange(rows, dtype=np.int32) + i, f"b{i}"),
        }
        for i in range(n)
    ]


def check_global(x: Any, want: Any, sharding: Any) -> None:
    """``x`` is one jax.Array laid out by ``sharding``, of ``want``'s values and dtype, each
    device holding its block of rows."""
    assert isinstance(x, jax.Array) and x.sharding.is_equivalent_to(sharding, x.ndim)
    assert x.dtype == want.dtype and x.shape == want.shape
    np.testing.assert_array_equal(np.asarray(x), want)
    for shard in x.addressable_shards:
        np.testing.assert_array_equal(np.asarray(shard.data), want[shard.index])
    assert len({s.device for s in x.addressable_shards}) == len(sharding.device_set)


# --- four host devices, one process ----------------------------------------------------------


@four_devices
def test_generator_batches_become_global_arrays() -> None:
    s = batch_axis()
    source = local_batches()

    def gen() -> Iterator[dict[str, Any]]:
        yield from source

    route = explain(gen(), "jax", sharding=s)
    assert [step.converter for step in route.steps] == [EDGE]
    assert "make_array_from_process_local_data" in str(route)
    out = list(to(gen(), "jax", sharding=s))
    assert len(out) == 3
    for got, want in zip(out, source, strict=True):
        assert set(got) == {"x", "pair"} and type(got["pair"]) is tuple
        check_global(got["x"], want["x"], s)
        check_global(got["pair"][0], want["pair"][0], s)
        assert got["pair"][1] == want["pair"][1]  # a string stays as it is
        assert [sh.data.shape for sh in got["x"].addressable_shards] == [(2, 3)] * 4
    ahead = list(to(gen(), "jax", sharding=s, prefetch=2))  # laid out on the prefetch thread
    for got, want in zip(ahead, source, strict=True):
        check_global(got["x"], want["x"], s)


@four_devices
def test_a_mesh_axis_that_replicates_keeps_each_block_on_its_devices() -> None:
    mesh = Mesh(np.array(jax.devices()[:4]).reshape(2, 2), ("x", "y"))
    s = NamedSharding(mesh, P("x"))  # two blocks of rows, each on two devices
    want = local_batches(1, rows=6)[0]["x"]
    got = next(to(iter([want]), "jax", sharding=s))
    check_global(got, want, s)
    assert sorted(sh.data.shape for sh in got.addressable_shards) == [(3, 3)] * 4


@four_devices
def test_copy_true_never_shares_the_source_memory() -> None:
    source = np.zeros((8, 16), np.float32)
    lo, hi = source.ctypes.data, source.ctypes.data + source.nbytes
    got = next(to(iter([source]), "jax", sharding=batch_axis(), copy=True))
    assert not [s for s in got.addressable_shards if lo <= s.data.unsafe_buffer_pointer() < hi]
    source[:] = 1
    assert float(np.asarray(got).sum()) == 0.0


@four_devices
def test_a_dataloader_batches_become_global_arrays_int64_labels_cast() -> None:
    torch = need("torch")
    data = torch.utils.data
    xs = torch.arange(20 * 3, dtype=torch.float32).reshape(20, 3)
    labels = torch.arange(20)  # int64: JAX without x64 takes them only cast
    loader = data.DataLoader(data.TensorDataset(xs, labels), batch_size=8, drop_last=True)
    s = batch_axis()
    if not jax.config.read("jax_enable_x64"):
        with pytest.raises(ConversionError, match="jax_enable_x64 is off"):
            next(iter(to(loader, "jax", sharding=s)))
    out = list(to(loader, "jax", sharding=s, dtype={"int64": "int32"}))
    assert len(out) == 2  # drop_last: 20 rows make two batches of 8
    for (x, y), (want_x, want_y) in zip(out, loader, strict=True):
        check_global(x, want_x.numpy(), s)
        check_global(y, want_y.numpy().astype(np.int32), s)


@four_devices
def test_a_tf_dataset_batches_become_global_arrays() -> None:
    tf = need("tensorflow")
    xs = np.arange(16 * 2, dtype=np.float32).reshape(16, 2)
    ys = np.arange(16, dtype=np.int32)
    dataset = tf.data.Dataset.from_tensor_slices({"x": xs, "y": ys}).batch(8)
    s = batch_axis()
    out = list(to(dataset, "jax", sharding=s))
    assert len(out) == 2
    for i, got in enumerate(out):
        check_global(got["x"], xs[8 * i : 8 * i + 8], s)
        check_global(got["y"], ys[8 * i : 8 * i + 8], s)
    assert len(list(to(dataset, "jax", sharding=s))) == 2  # a Dataset restarts each pass


@four_devices
def test_sharding_errors_say_what_to_do() -> None:
    s = batch_axis()
    short = to(iter([np.zeros((8, 2), np.float32), np.zeros((6, 2), np.float32)]), "jax",
               sharding=s)  # fmt: skip
    next(short)
    with pytest.raises(OptionError, match=r"dimension 0 has 6 rows.*hold 4 block") as info:
        next(short)
    assert "multiple of 4" in str(info.value) and "drop_last=True" in str(info.value)
    with pytest.raises(OptionError, match=r"jax\.sharding\.Sharding"):
        to(iter(local_batches()), "jax", sharding="b")
    with pytest.raises(OptionError, match="copy=False"):
        to(iter(local_batches()), "jax", sharding=s, copy=False)
    with pytest.raises(OptionError, match="sharding"):
        to(iter(local_batches()), "numpy", sharding=s)  # no global arrays in numpy
    scalar = to(iter([np.float32(1)]), "jax", sharding=s)
    with pytest.raises(OptionError, match="cannot lay out a batch array of shape"):
        next(scalar)


def test_a_dali_pipeline_keeps_its_own_sharded_edge() -> None:
    need("dali")
    from nvidia.dali import fn, pipeline_def

    @pipeline_def  # type: ignore[misc]
    def noise() -> Any:
        return fn.random.uniform(shape=[2])

    route = explain(noise, "jax", sharding=batch_axis(1), output_map=["x"], batch_size=4)
    assert [step.converter for step in route.steps] == ["one DALI pipeline per shard"]


def test_four_device_tests_in_a_process_that_has_them() -> None:
    if jax.device_count() >= 4:
        pytest.skip("this process has four jax devices: the tests run in it")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k",
         "not process", str(Path(__file__))],
        capture_output=True, text=True, env={**os.environ, "XLA_FLAGS": FOUR_DEVICES},
        timeout=600, cwd=ROOT,
    )  # fmt: skip
    tail = done.stdout[-6000:] + done.stderr[-3000:]
    assert done.returncode == 0, tail
    # INTEROP_REQUIRE passes through: a framework the session names fails rather than skips.
    assert " passed" in done.stdout, tail


# --- two processes on the loopback address ---------------------------------------------------

#: One process of two: jax.distributed on 127.0.0.1, two CPU devices, its own batches.
#: argv: process id, coordinator port. Prints one JSON line of what it saw.
RANK = """
import faulthandler, json, os, sys
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
faulthandler.dump_traceback_later(150, exit=True)  # a peer that died must not hang us
import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

rank, port = int(sys.argv[1]), int(sys.argv[2])
jax.distributed.initialize(f"127.0.0.1:{port}", num_processes=2, process_id=rank)
from interop_core import explain, to

s = NamedSharding(Mesh(np.array(jax.devices()), ("b",)), P("b"))
local = [np.arange(12, dtype=np.float32).reshape(4, 3) + 1000 * step + 100 * rank
         for step in range(3)]
steps = []
for got, want in zip(to(iter(local), "jax", sharding=s), local, strict=True):
    shards = sorted(got.addressable_shards, key=lambda sh: sh.index[0].start)
    steps.append({
        "shape": list(got.shape), "dtype": str(got.dtype),
        "addressable": got.is_fully_addressable,
        "same_sharding": got.sharding == s,
        "rows": [list(sh.index[0].indices(8)[:2]) for sh in shards],
        "local": all(sh.device.process_index == rank for sh in shards),
        "equal": bool(np.array_equal(np.concatenate([np.asarray(sh.data) for sh in shards]),
                                     want)),
    })
route = [step.converter for step in explain(iter(local), "jax", sharding=s).steps]
print(json.dumps({"rank": rank, "processes": jax.process_count(), "steps": steps,
                  "route": route}), flush=True)
jax.distributed.shutdown()
"""


def test_two_processes_each_feed_their_share_of_a_global_batch(tmp_path: Path) -> None:
    port = str(free_port())
    script = tmp_path / "rank.py"
    script.write_text(textwrap.dedent(RANK))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    ranks = [
        subprocess.Popen(
            [sys.executable, str(script), str(rank), port],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env=env,
        )
        for rank in range(2)
    ]
    seen = rank_facts(ranks, 240, "process")
    for rank, facts in enumerate(seen):
        assert facts["rank"] == rank and facts["processes"] == 2
        assert facts["route"] == [EDGE]
        assert len(facts["steps"]) == 3
        for step in facts["steps"]:
            assert step["shape"] == [8, 3] and step["dtype"] == "float32"
            assert step["addressable"] is False and step["same_sharding"] and step["local"]
            # this process's rows of the global batch, in process order, hold its batch
            assert step["rows"] == [[4 * rank, 4 * rank + 2], [4 * rank + 2, 4 * rank + 4]]
            assert step["equal"]
