"""Sharded arrays in one process: jax.Arrays over four host devices, and DTensors on a
one-rank gloo process group.

jax fixes its device count when it is first imported, so these tests need a process started
with ``XLA_FLAGS=--xla_force_host_platform_device_count=4``: the ``sharded`` nox session is
one; in any other, ``test_sharded_process.py`` runs this module in such a process.
Pointers are read with the frameworks' own APIs (``unsafe_buffer_pointer``, ``data_ptr``).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import need, one_rank_mesh

from interop_core import ConversionError, CopyRequiredError, OptionError, explain, to

np = need("numpy")
jax = need("jax")
jnp = jax.numpy
Mesh, NamedSharding, P = jax.sharding.Mesh, jax.sharding.NamedSharding, jax.sharding.PartitionSpec

pytestmark = pytest.mark.skipif(
    jax.device_count() < 4,
    reason="needs four jax devices (XLA_FLAGS); test_sharded_process.py runs this module "
    "in a process that has them",
)


def ptr(a: Any) -> int:
    """A single-device jax array's data pointer, by JAX's own API."""
    return int(a.unsafe_buffer_pointer())


def sharded(spec: Any, shape: tuple[int, ...] = (8, 16), dtype: Any = np.float32) -> Any:
    """An arange of ``shape`` laid out by ``spec`` over a 2x2 mesh ("x", "y")."""
    mesh = Mesh(np.array(jax.devices()[:4]).reshape(2, 2), ("x", "y"))
    values = np.arange(np.prod(shape), dtype=dtype).reshape(shape)
    return jax.device_put(values, NamedSharding(mesh, spec)), values


# --- gathering: jax sharded -> one device --------------------------------------------


def test_sharded_jax_to_torch_is_gathered_once() -> None:
    torch = need("torch")
    x, values = sharded(P("x", "y"))
    route = explain(x, "torch")
    assert route.copies == 1 and route.steps[0].converter == "gather shards"
    t = to(x, "torch")
    assert type(t) is torch.Tensor and t.dtype == torch.float32
    np.testing.assert_array_equal(t.numpy(), values)
    assert t.data_ptr() not in {ptr(s.data) for s in x.addressable_shards}


@pytest.mark.parametrize("target", ["numpy", "tensorflow"])
def test_sharded_jax_to_host_frameworks(target: str) -> None:
    need(target)
    x, values = sharded(P("x", None), shape=(4, 6), dtype=np.int32)  # replicated over "y"
    route = explain(x, target)
    assert route.steps[0].converter == "gather shards" and route.copies == 1
    assert "gathered once" in str(route)
    out = np.asarray(to(x, target))
    np.testing.assert_array_equal(out, values)
    assert out.dtype == np.int32


def test_replicated_jax_array_shares_a_replica() -> None:
    torch = need("torch")
    x, values = sharded(P())
    route = explain(x, "torch")
    assert route.copies == 0 and route.steps[0].converter == "one replica"
    t = to(x, "torch")
    np.testing.assert_array_equal(t.numpy(), values)
    assert t.data_ptr() == ptr(x.addressable_shards[0].data)
    assert type(t) is torch.Tensor


def test_copy_of_a_sharded_jax_array_keeps_its_sharding() -> None:
    x, values = sharded(P("x", "y"))
    y = to(x, "jax", copy=True)
    assert y.sharding == x.sharding
    np.testing.assert_array_equal(np.asarray(y), values)
    assert not {ptr(s.data) for s in y.addressable_shards} & {
        ptr(s.data) for s in x.addressable_shards
    }


def test_gather_keeps_bfloat16() -> None:
    x, values = sharded(P("x"), dtype=jnp.bfloat16)
    out = to(x, "numpy")
    assert out.dtype == jnp.bfloat16
    np.testing.assert_array_equal(out.astype(np.float32), values.astype(np.float32))


def test_warm_path_reuses_the_plan_and_keys_no_sharding() -> None:
    """A second array of the same structure takes the cached route; the cache keys hold
    devices and booleans, never a sharding (which would keep its Mesh alive)."""
    need("torch")
    from interop_core import default_registry

    x, _ = sharded(P("x", "y"))
    to(x, "torch")
    y, values = sharded(P("x", "y"), dtype=np.float32)
    np.testing.assert_array_equal(to(y, "torch").numpy(), values)
    st = default_registry().state
    keys = [k for by_type in st.plain.values() for entry in by_type.values() for k in entry[1]]

    def shardings(k: Any) -> list[Any]:
        if isinstance(k, tuple):
            return [s for item in k for s in shardings(item)]
        return [k] if isinstance(k, NamedSharding) else []

    assert keys and not [s for k in keys for s in shardings(k)]


def test_sharding_option_lays_out_any_array_into_jax() -> None:
    """sharding= into jax is jax.device_put(x, sharding), for a numpy array, a torch tensor
    and a jax array, sharded or not (it was ignored); numpy takes one copy."""
    torch = need("torch")
    rows = NamedSharding(Mesh(np.array(jax.devices()[:4]), ("x",)), P("x"))
    y, values = sharded(P("x", "y"), shape=(8, 4))
    for x in (values, torch.from_numpy(values.copy()), jnp.asarray(values), y):
        a = to(x, "jax", sharding=rows)
        assert a.sharding == rows and a.dtype == jnp.float32
        assert [s.device for s in a.addressable_shards] == jax.devices()[:4]
        np.testing.assert_array_equal(np.asarray(a), values)
    route = explain(values, "jax", sharding=rows)
    assert route.copies == 1 and route.steps[-1].converter == "jax.device_put(sharding=)"
    # copy=True: no shard aliases the source, even when it is laid out so already.
    a = to(y, "jax", sharding=y.sharding, copy=True)
    assert a.sharding == y.sharding
    assert {ptr(s.data) for s in a.addressable_shards}.isdisjoint(
        ptr(s.data) for s in y.addressable_shards
    )
    # sharding=None: the array's own layout.
    assert to(y, "jax", sharding=None).sharding == y.sharding


def test_sharding_option_values_are_checked() -> None:
    with pytest.raises(OptionError) as err:
        to(np.arange(8.0, dtype=np.float32), "jax", sharding=5)
    assert str(err.value).splitlines()[0] == "Option sharding=5 is not valid."
    assert "jax.sharding.Sharding" in str(err.value)
    rows = NamedSharding(Mesh(np.array(jax.devices()[:4]), ("x",)), P("x"))
    with pytest.raises(OptionError, match=r"cannot lay out an array of shape \(6,\)"):
        to(np.arange(6.0, dtype=np.float32), "jax", sharding=rows)


# --- DTensor: a one-rank process group -------------------------------------------------


@pytest.fixture(scope="module")
def mesh() -> Iterator[Any]:
    """A one-rank gloo group on the loopback address and its 1-D CPU DeviceMesh."""
    need("torch")
    with one_rank_mesh("cpu") as device_mesh:
        yield device_mesh


def dtensor(mesh: Any, placements: list[Any], shape: tuple[int, ...] = (8, 16)) -> Any:
    import torch
    from torch.distributed.tensor import distribute_tensor

    return distribute_tensor(torch.arange(float(np.prod(shape))).reshape(shape), mesh, placements)


def test_dtensor_to_jax_shares_the_local_tensor(mesh: Any) -> None:
    from torch.distributed.tensor import Shard

    d = dtensor(mesh, [Shard(0)])
    a = to(d, "jax")
    assert isinstance(a.sharding, NamedSharding)
    assert a.sharding.mesh.axis_names == ("d",) and a.sharding.spec == P("d", None)
    assert a.dtype == jnp.float32 and a.shape == (8, 16)
    assert ptr(a.addressable_shards[0].data) == d.to_local().data_ptr()
    np.testing.assert_array_equal(np.asarray(a), d.full_tensor().numpy())


def test_dtensor_to_jax_spread_over_devices_by_sharding(mesh: Any) -> None:
    """sharding= splits the rank's block over four devices: each row block is shared."""
    from torch.distributed.tensor import Shard

    d = dtensor(mesh, [Shard(0)])  # rows of 16 float32: every 2-row block is 128-byte aligned
    target = NamedSharding(Mesh(np.array(jax.devices()[:4]), ("x",)), P("x"))
    a = to(d, "jax", sharding=target)
    assert a.sharding == target
    base, row = d.to_local().data_ptr(), 16 * 4
    for s in a.addressable_shards:
        assert ptr(s.data) == base + s.index[0].start * row
        assert s.device == jax.devices()[s.index[0].start // 2]
    np.testing.assert_array_equal(np.asarray(a), d.full_tensor().numpy())


def test_sharding_of_an_inner_dimension_copies_blocks(mesh: Any) -> None:
    from torch.distributed.tensor import Replicate

    d = dtensor(mesh, [Replicate()])
    target = NamedSharding(Mesh(np.array(jax.devices()[:4]), ("x",)), P(None, "x"))
    a = to(d, "jax", sharding=target)
    np.testing.assert_array_equal(np.asarray(a), d.full_tensor().numpy())
    base = d.to_local().data_ptr()
    assert all(ptr(s.data) != base + s.index[1].start * 4 for s in a.addressable_shards[1:])


def test_copy_false_refuses_blocks_that_must_be_copied(mesh: Any) -> None:
    from torch.distributed.tensor import Replicate

    d = dtensor(mesh, [Replicate()])
    target = NamedSharding(Mesh(np.array(jax.devices()[:4]), ("x",)), P(None, "x"))
    with pytest.raises(CopyRequiredError, match=r"copy=False(.|\n)*not adjacent"):
        to(d, "jax", sharding=target, copy=False)
    rows = NamedSharding(Mesh(np.array(jax.devices()[:4]), ("x",)), P("x"))
    a = to(d, "jax", sharding=rows, copy=False)
    assert ptr(a.addressable_shards[0].data) == d.to_local().data_ptr()


def test_gather_lands_on_the_first_shard_device() -> None:
    mesh = Mesh(np.array(jax.devices()[2:4]), ("x",))
    values = np.arange(32.0, dtype=np.float32).reshape(4, 8)
    x = jax.device_put(values, NamedSharding(mesh, P("x")))
    y = to(x, "jax", copy=True)  # keeps the sharding
    assert y.sharding == x.sharding
    from interop_plugins.exchange.shards import jax_gather

    g = jax_gather(x)
    assert g.devices() == {jax.devices()[2]}
    np.testing.assert_array_equal(np.asarray(g), values)
    assert ptr(g) % 64 == 0


def test_round_trip_jax_dtensor_jax_keeps_the_sharding(mesh: Any) -> None:
    from torch.distributed.tensor import DTensor, Shard

    jmesh = Mesh(np.array(jax.devices()[:1]), ("d",))
    values = np.arange(32.0, dtype=np.float32).reshape(8, 4)
    x = jax.device_put(values, NamedSharding(jmesh, P("d")))
    d = to(x, "torch", mesh=mesh)
    assert isinstance(d, DTensor) and d.placements == (Shard(0),)
    assert d.to_local().data_ptr() == ptr(x.addressable_shards[0].data)
    y = to(d, "jax")
    assert y.sharding.is_equivalent_to(x.sharding, 2)
    assert ptr(y.addressable_shards[0].data) == ptr(x.addressable_shards[0].data)
    del x, y
    gc.collect()
    np.testing.assert_array_equal(d.to_local().numpy(), np.arange(32.0).reshape(8, 4))


def test_explain_mesh_shows_the_per_shard_step(mesh: Any) -> None:
    x = jnp.arange(4.0)
    route = explain(x, "torch", mesh=mesh)
    assert [s.converter for s in route.steps] == ["jax shards as a DTensor"]
    assert route.copies == 0 and "per shard" in str(route)
    assert explain(x, "torch").steps[0].converter != "jax shards as a DTensor"


@pytest.mark.parametrize("target", ["numpy", "tensorflow"])
def test_dtensor_to_host_frameworks_gathers(mesh: Any, target: str) -> None:
    from torch.distributed.tensor import Shard

    need(target)
    d = dtensor(mesh, [Shard(1)])
    route = explain(d, target)
    assert route.steps[0].converter == "DTensor.full_tensor()" and route.copies == 1
    assert "collective" in str(route)
    out = np.asarray(to(d, target))
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, d.full_tensor().numpy())


def test_replicated_dtensor_to_numpy_shares_the_local_tensor(mesh: Any) -> None:
    from torch.distributed.tensor import Replicate

    d = dtensor(mesh, [Replicate()])
    assert explain(d, "numpy").copies == 0
    n = to(d, "numpy")
    assert n.ctypes.data == d.to_local().data_ptr()


def test_partial_dtensor_is_reduced_by_a_stated_copy(mesh: Any) -> None:
    import torch
    from torch.distributed.tensor import DTensor, Partial

    d = DTensor.from_local(torch.ones(2, 3), mesh, [Partial()])
    route = explain(d, "jax")
    assert route.steps[0].converter == "DTensor.full_tensor()"
    assert any("Partial" in r.reason for r in route.refused)
    np.testing.assert_array_equal(np.asarray(to(d, "jax")), np.ones((2, 3)))


def test_partial_dtensor_with_sharding_is_refused(mesh: Any) -> None:
    """A Partial DTensor has no jax layout: sharding= is refused, saying to redistribute
    (it was reduced by full_tensor() and sharding= ignored); without it, the stated copy."""
    import torch
    from torch.distributed.tensor import DTensor, Partial, Shard

    rows = NamedSharding(Mesh(np.array(jax.devices()[:4]), ("x",)), P("x"))
    d = DTensor.from_local(torch.ones(4, 3), mesh, [Partial()])
    with pytest.raises(OptionError, match="Partial placements") as err:
        to(d, "jax", sharding=rows)
    assert "redistribute" in str(err.value)
    np.testing.assert_array_equal(np.asarray(to(d, "jax")), np.ones((4, 3)))
    # sharding= on a route that makes no jax.Array.
    with pytest.raises(OptionError, match=r"lays out a jax\.Array"):
        to(dtensor(mesh, [Shard(0)]), "numpy", sharding=rows)


def test_partial_placements_map_onto_no_partition_spec(mesh: Any) -> None:
    from interop_plugins.exchange.shards import spec_from_placements
    from torch.distributed.tensor import Partial

    with pytest.raises(ConversionError, match="Partial"):
        spec_from_placements([Partial()], ["d"], (1,), (2, 3))


def test_mesh_errors(mesh: Any) -> None:
    import torch
    from torch.distributed.tensor import Replicate

    x, _ = sharded(P("x", "y"))
    with pytest.raises(ConversionError, match=r"shape \(1,\).*\(2, 2\).*one process per"):
        to(x, "torch", mesh=mesh)
    with pytest.raises(OptionError, match="DeviceMesh"):
        to(jnp.ones(2), "torch", mesh="cpu")
    # mesh= asks for a DTensor, which no torch -> jax route makes.
    with pytest.raises(OptionError, match="mesh"):
        to(torch.ones(2), "jax", mesh=mesh)
    with pytest.raises(OptionError, match=r"jax\.sharding\.Sharding"):
        to(dtensor(mesh, [Replicate()]), "jax", sharding="x")


def test_sharding_must_refine_the_rank_block(mesh: Any) -> None:
    """A sharding= that asks for rows another rank would hold is refused, not fetched."""
    from interop_plugins.exchange.shards import local_region
    from torch.distributed.tensor import Shard

    assert local_region([Shard(0), Shard(0)], (1, 0), (2, 2), (8, 4)) == [(4, 6), (0, 4)]
    assert local_region([Shard(1), Shard(0)], (1, 1), (2, 2), (8, 4)) == [(4, 8), (2, 4)]
    d = dtensor(mesh, [Shard(0)], shape=(6, 4))
    with pytest.raises(ConversionError, match="evenly"):
        to(d, "jax", sharding=NamedSharding(Mesh(np.array(jax.devices()[:4]), ("x",)), P("x")))


# --- layouts: PartitionSpec <-> placements ---------------------------------------------


@pytest.mark.parametrize(
    ("spec", "placements"),
    [
        (P("x", "y"), ["S0", "S1"]),
        (P("y", "x"), ["S1", "S0"]),
        (P(None, "x"), ["S1", "R"]),
        (P(("x", "y")), ["S0", "S0"]),
        (P(), ["R", "R"]),
    ],
)
def test_partition_specs_map_onto_placements_and_back(spec: Any, placements: list[str]) -> None:
    need("torch")
    from interop_plugins.exchange.shards import placements_from_spec, spec_from_placements
    from torch.distributed.tensor import Replicate, Shard

    want = [Replicate() if p == "R" else Shard(int(p[1])) for p in placements]
    got = placements_from_spec(spec, ("x", "y"), (2, 2), (8, 4))
    assert got == want
    back = spec_from_placements(got, ("x", "y"), (2, 2), (8, 4))
    mesh = Mesh(np.array(jax.devices()[:4]).reshape(2, 2), ("x", "y"))
    assert NamedSharding(mesh, back).is_equivalent_to(NamedSharding(mesh, spec), 2)


def test_layouts_that_do_not_map_are_refused() -> None:
    need("torch")
    from interop_plugins.exchange.shards import placements_from_spec

    with pytest.raises(ConversionError, match="mesh order"):
        placements_from_spec(P(("y", "x")), ("x", "y"), (2, 2), (8, 4))
    with pytest.raises(ConversionError, match="evenly"):
        placements_from_spec(P("x"), ("x", "y"), (2, 2), (7, 4))


def test_sharded_values_match_dtensor_layout_for_two_axes_on_one_dim() -> None:
    """P(("x", "y")) and [Shard(0), Shard(0)] give each device the same rows."""
    need("torch")
    from interop_plugins.exchange.shards import local_region
    from torch.distributed.tensor import Shard

    x, _ = sharded(P(("x", "y")))
    mesh = x.sharding.mesh
    for s in x.addressable_shards:
        coord = tuple(int(i) for i in np.argwhere(mesh.devices == s.device)[0])
        (lo, hi), _ = local_region([Shard(0), Shard(0)], coord, (2, 2), (8, 16))
        assert (s.index[0].start, s.index[0].stop) == (lo, hi)


def test_one_device_named_sharding_is_a_plain_array() -> None:
    """A NamedSharding over one device is not "sharded": every plain route takes it."""
    x = jax.device_put(np.arange(16.0, dtype=np.float32), jax.devices()[1])
    one = jax.device_put(x, NamedSharding(Mesh(np.array(jax.devices()[1:2]), ("d",)), P("d")))
    route = explain(one, "numpy")
    assert route.copies == 0 and "gather shards" not in str(route)
    out = to(one, "numpy")
    assert out.ctypes.data == ptr(one)
