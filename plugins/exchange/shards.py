"""Sharded arrays shard by shard: a jax.Array over a Mesh <-> a torch.distributed DTensor.

The converters declared in :mod:`.sharding`. Each process converts only the shards it
holds (its addressable devices; its rank's local tensor), so a same-device route sends
nothing between processes. Layouts map both ways: a PartitionSpec names, for each array
dimension, the mesh axes splitting it (major to minor); DTensor placements name, for each
mesh dimension, the array dimension it splits (``Shard(d)``) or none (``Replicate()``).
Imports jax and torch inside the functions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from interop_core.plugin import (
    CallContext,
    ConversionError,
    CopyRequiredError,
    OptionError,
    RefusedEdge,
    c_strides,
)

from ..frameworks.jax import as_device
from ..frameworks.numpy import aligned_empty

#: Where to read about the rule that every process must hold its own rank's devices.
_LAYOUT_ADVICE = (
    "Build the jax Mesh with the devices in the DeviceMesh's rank order (one process per "
    "rank, jax.distributed.initialize(process_id=rank)), or pass sharding= to choose it"
)


def _axes(entry: Any) -> tuple[str, ...]:
    """The mesh axes of one PartitionSpec entry (None, a name, or a tuple of names)."""
    if entry is None:
        return ()
    return (entry,) if isinstance(entry, str) else tuple(entry)


def _uneven(shape: Sequence[int], dim: int, parts: int) -> ConversionError:
    return ConversionError(
        f"Dimension {dim} (size {shape[dim]}) does not split evenly into {parts} shards; "
        "DTensor pads uneven shards and jax.Array does not, so their layouts differ. Pad "
        f"the dimension to a multiple of {parts}, or gather it: to(x, target) without mesh=."
    )


def placements_from_spec(
    spec: Any, axis_names: Sequence[str], mesh_shape: Sequence[int], shape: Sequence[int]
) -> list[Any]:
    """DTensor placements (one per mesh axis) for an array of ``shape`` laid out by the
    PartitionSpec ``spec`` over a mesh with ``axis_names`` of sizes ``mesh_shape``."""
    from torch.distributed.tensor import Replicate, Shard

    if getattr(spec, "unreduced", None) or getattr(spec, "reduced", None):
        raise ConversionError(
            f"The PartitionSpec {spec} has unreduced axes, which DTensor cannot take as "
            "Shard/Replicate placements; reduce the array first (jax.lax.psum)."
        )
    placements: list[Any] = [Replicate() for _ in axis_names]
    for dim, entry in enumerate(spec):
        axes = [axis_names.index(a) for a in _axes(entry)]
        if axes != sorted(axes):
            raise ConversionError(
                f"Dimension {dim} is split over the mesh axes {_axes(entry)} in an order that "
                f"differs from the mesh's ({tuple(axis_names)}); DTensor splits a dimension "
                "over mesh dimensions in mesh order. Reorder the PartitionSpec entry."
            )
        parts = math.prod(mesh_shape[i] for i in axes)
        if shape[dim] % parts:
            raise _uneven(shape, dim, parts)
        for i in axes:
            placements[i] = Shard(dim)
    return placements


def spec_from_placements(
    placements: Sequence[Any], axis_names: Sequence[str], mesh_shape: Sequence[int],
    shape: Sequence[int],
) -> Any:  # fmt: skip
    """The PartitionSpec laying out an array of ``shape`` as ``placements`` do over a
    DeviceMesh whose axes get ``axis_names``."""
    from jax.sharding import PartitionSpec
    from torch.distributed.tensor import Shard

    dims: list[list[str]] = [[] for _ in shape]
    for i, p in enumerate(placements):
        if p.is_partial():
            raise ConversionError(
                f"Mesh dimension {i} holds a Partial placement (unreduced values), which a "
                "jax.Array cannot hold; reduce it first: dtensor.redistribute(placements="
                "[Replicate()] * mesh.ndim), or let to() gather it (without sharding=)."
            )
        if p.is_shard():
            if type(p) is not Shard:  # _StridedShard: an interleaved layout
                raise ConversionError(
                    f"Mesh dimension {i} holds {p}, an interleaved sharding that no "
                    "PartitionSpec describes; redistribute to plain Shard placements first."
                )
            dims[p.dim % len(shape)].append(axis_names[i])
    for dim, axes in enumerate(dims):
        parts = math.prod(mesh_shape[axis_names.index(a)] for a in axes)
        if shape[dim] % parts:
            raise _uneven(shape, dim, parts)
    return PartitionSpec(*(None if not a else a[0] if len(a) == 1 else tuple(a) for a in dims))


def local_region(
    placements: Sequence[Any], coordinate: Sequence[int], mesh_shape: Sequence[int],
    shape: Sequence[int],
) -> list[tuple[int, int]]:  # fmt: skip
    """[start, stop) along each dimension of the block the rank at ``coordinate`` holds
    (even shards; a dimension split over several mesh dimensions goes major to minor)."""
    chunk, parts = [0] * len(shape), [1] * len(shape)
    for i, p in enumerate(placements):
        if p.is_shard():
            dim = p.dim % len(shape)
            chunk[dim] = chunk[dim] * mesh_shape[i] + coordinate[i]
            parts[dim] *= mesh_shape[i]
    size = [n // k for n, k in zip(shape, parts, strict=True)]
    return [(c * s, (c + 1) * s) for c, s in zip(chunk, size, strict=True)]


def device_mesh(value: Any) -> Any:
    """``value`` if it is a torch DeviceMesh, else the OptionError that says what mesh= takes."""
    from torch.distributed.device_mesh import DeviceMesh

    if not isinstance(value, DeviceMesh):
        raise OptionError(
            f"mesh= takes a torch.distributed DeviceMesh, not {type(value).__name__}; build "
            "one with torch.distributed.device_mesh.init_device_mesh('cpu', (n,))."
        )
    return value


def _jax_layout(x: Any, ndim: int) -> tuple[Any, tuple[str, ...], Any]:
    """The devices (an ndarray in mesh shape), mesh axis names and PartitionSpec of ``x``;
    a one-device array is a mesh of one device in each of ``ndim`` dimensions."""
    import numpy as np
    from jax.sharding import NamedSharding, PartitionSpec

    sharding = x.sharding
    if isinstance(sharding, NamedSharding):
        return sharding.mesh.devices, sharding.mesh.axis_names, sharding.spec
    if sharding.num_devices == 1:
        device = next(iter(sharding.device_set))
        devices = np.array([device], dtype=object).reshape((1,) * ndim)
        return devices, ("",) * ndim, PartitionSpec()
    raise ConversionError(
        f"The array's sharding is a {type(sharding).__name__}, which names no mesh axes "
        "to map onto DTensor placements; lay it out with a NamedSharding(mesh, "
        "PartitionSpec(...)) (jax.device_put(x, NamedSharding(...)))."
    )


def jax_to_dtensor(x: Any, ctx: CallContext) -> Any:
    """A DTensor over ``mesh=`` whose local tensor is this rank's jax shard (zero-copy)."""
    import jax
    import torch
    from torch.distributed.tensor import DTensor

    mesh = device_mesh(ctx.option("mesh"))
    devices, names, spec = _jax_layout(x, mesh.ndim)
    if tuple(mesh.shape) != devices.shape:
        raise ConversionError(
            f"The DeviceMesh has shape {tuple(mesh.shape)} and the array's jax mesh "
            f"{devices.shape}; a DTensor holds one shard per rank, so each rank must own one "
            "device of the jax mesh at its own coordinate. Build the DeviceMesh in the jax "
            "mesh's shape (one process per device), or gather: to(x, 'torch') without mesh=."
        )
    placements = placements_from_spec(spec, names, devices.shape, x.shape)
    coordinate = mesh.get_coordinate()
    if coordinate is None:
        raise ConversionError(
            f"This rank ({torch.distributed.get_rank()}) is not in the DeviceMesh; call "
            "to(..., mesh=) only on the mesh's ranks."
        )
    device = devices[tuple(coordinate)]
    shard = next((s for s in x.addressable_shards if s.device == device), None)
    if shard is None:
        raise ConversionError(
            f"This rank sits at mesh coordinate {tuple(coordinate)}, where the jax mesh "
            f"puts {device} of process {device.process_index}, while this is process "
            f"{jax.process_index()}: its shard is not here. {_LAYOUT_ADVICE}."
        )
    kind = as_device(device).kind
    if mesh.device_type != kind:
        raise ConversionError(
            f"The DeviceMesh is a {mesh.device_type!r} mesh and the shard lives on {device}; "
            f"build the DeviceMesh with device_type={kind!r}."
        )
    return DTensor.from_local(
        torch.from_dlpack(shard.data), mesh, placements, run_check=False,
        shape=torch.Size(x.shape), stride=c_strides(tuple(x.shape), 1),
    )  # fmt: skip


def _jax_mesh(d: Any, local: Any) -> Any:
    """The jax Mesh matching ``d``'s DeviceMesh: rank r's device is process r's one device
    of the mesh's kind (or, with one rank, the local tensor's own device)."""
    import jax
    import numpy as np
    from jax.sharding import Mesh

    mesh = d.device_mesh
    platform = "gpu" if mesh.device_type == "cuda" else mesh.device_type
    names = mesh.mesh_dim_names or tuple(f"mesh_dim_{i}" for i in range(mesh.ndim))
    if mesh.size() == 1:
        device = _jax_device_of(local)
        return Mesh(np.array([device], dtype=object).reshape(tuple(mesh.shape)), names)
    if jax.process_count() == 1:
        raise ConversionError(
            f"The DTensor's mesh spans {mesh.size()} ranks but jax sees one process: call "
            "jax.distributed.initialize(coordinator, num_processes=world_size, "
            "process_id=rank) in every process first, or pass sharding= with this "
            "process's devices."
        )
    by_process: dict[int, list[Any]] = {}
    for device in jax.devices(platform):
        by_process.setdefault(device.process_index, []).append(device)
    ranks = mesh.mesh.flatten().tolist()
    if any(len(by_process.get(r, ())) != 1 for r in ranks):
        counts = {r: len(by_process.get(r, ())) for r in ranks}
        raise ConversionError(
            f"Mapping ranks to jax devices needs one {platform} device per jax process with "
            f"process_index == rank; found {counts} (rank: devices). {_LAYOUT_ADVICE}."
        )
    devices = np.array([by_process[r][0] for r in ranks], dtype=object)
    return Mesh(devices.reshape(tuple(mesh.shape)), names)


def _jax_device_of(t: Any) -> Any:
    """The jax device that DLPack imports the torch tensor ``t`` onto."""
    import jax

    if t.device.type == "cuda":
        index = t.device.index or 0
        gpus = jax.local_devices(backend="gpu")
        return next(g for g in gpus if g.local_hardware_id == index)
    return jax.local_devices(backend="cpu")[0]


def import_to_device(x: Any, device: Any) -> Any:
    """The C-contiguous DLPack exporter ``x`` (a torch tensor, a numpy array) as a jax.Array
    on ``device``, sharing its memory when jax can (on the host: 64-byte aligned)."""
    import jax

    if device.platform == "cpu":
        # jax.dlpack imports host memory onto the first CPU device only; jaxlib's own
        # importer places it on any CPU device, sharing it. It is jax's private API, so a
        # changed signature falls back to a copy (the tests check every pointer).
        try:
            from jax._src.lib import _jax

            return _jax.dlpack_managed_tensor_to_buffer(x.__dlpack__(), device, None, None, 1)
        except Exception:
            pass
    arr = jax.dlpack.from_dlpack(x)
    return arr if arr.devices() == {device} else jax.device_put(arr, device)


#: The edge whose refusal a copy=False call that meets a block to copy reports.
_EDGE, _PLUGIN = "DTensor shards as a jax.Array", "interop_plugins.exchange.sharding"


def _block_copy_reason(t: Any, device: Any) -> str | None:
    """Why the block ``t`` cannot be shared with jax on ``device`` (None: it can)."""
    if not t.is_contiguous():
        return "its rows are not adjacent (sharding= splits an inner dimension)"
    if device.platform == "cpu" and t.data_ptr() % 64:
        return "it is not 64-byte aligned"
    if t.device.type == "cuda" and device.platform == "gpu" and device != _jax_device_of(t):
        return f"it lives on {t.device}, not on {device}"
    return None


def tensor_to_jax_device(t: Any, device: Any, copy: bool | None = None) -> Any:
    """The torch block ``t`` as a jax.Array on ``device``: shared when it is C-contiguous,
    aligned and on that device; otherwise copied, unless ``copy`` is False."""
    reason = _block_copy_reason(t, device)
    if reason is not None:
        if copy is False:
            why = (
                f"a block of shape {tuple(t.shape)} must be copied onto {device}: {reason}. "
                "JAX shares only contiguous, 64-byte aligned blocks (torch's own allocations "
                "are aligned; .contiguous() copies a strided tensor; with sharding=, choose "
                "blocks that are whole rows of the local tensor)"
            )
            raise CopyRequiredError(
                "a DTensor's local tensor into jax",
                [RefusedEdge(_EDGE, _PLUGIN, "torch->jax", why, "jax", "torch")],
            )
        if not t.is_contiguous():
            t = t.contiguous()
        elif t.device.type == "cpu" and t.data_ptr() % 64:
            t = t.clone()  # torch allocates 64-byte aligned memory
    return import_to_device(t, device)


def dtensor_to_jax(d: Any, ctx: CallContext) -> Any:
    """A global jax.Array of the DTensor ``d``: each of this process's devices gets its block
    of this rank's local tensor (zero-copy when contiguous and aligned)."""
    import jax
    from jax.sharding import NamedSharding

    if d.requires_grad:  # refused by the edge; to_local() would record autograd
        raise ConversionError("The DTensor requires grad; pass dtensor.detach().")
    shape = tuple(d.shape)
    mesh = d.device_mesh
    local = d.to_local()
    sharding = ctx.option("sharding")
    if sharding is None:
        jmesh = _jax_mesh(d, local)
        spec = spec_from_placements(d.placements, jmesh.axis_names, tuple(mesh.shape), shape)
        sharding = NamedSharding(jmesh, spec)
    else:
        sharding = jax_sharding(sharding)
        names = [str(i) for i in range(mesh.ndim)]  # checks the placements map at all
        spec_from_placements(d.placements, names, tuple(mesh.shape), shape)
    coordinate = mesh.get_coordinate()
    if coordinate is None:
        raise ConversionError(
            "This rank is not in the DTensor's DeviceMesh, so it holds no shard; call "
            "to(dtensor, 'jax') only on the mesh's ranks."
        )
    region = local_region(d.placements, coordinate, tuple(mesh.shape), shape)
    if tuple(local.shape) != tuple(b - a for a, b in region):
        raise ConversionError(
            f"This rank's local tensor has shape {tuple(local.shape)}, not the "
            f"{tuple(b - a for a, b in region)} its placements {d.placements} give for the "
            f"global shape {shape}; the DTensor's metadata disagrees with its shards."
        )
    arrays = []
    for device, index in sharding.addressable_devices_indices_map(shape).items():
        block = []
        for dim, (s, (lo, hi)) in enumerate(zip(index, region, strict=True)):
            start, stop, _ = s.indices(shape[dim])
            if start < lo or stop > hi:
                raise ConversionError(
                    f"sharding= puts rows [{start}, {stop}) of dimension {dim} on {device}, "
                    f"but this rank holds only [{lo}, {hi}); a shard must come from this "
                    "rank's own block (no data moves between processes). Choose a sharding "
                    "that refines the DTensor's placements."
                )
            block.append(slice(start - lo, stop - lo))
        arrays.append(tensor_to_jax_device(local[tuple(block)], device, ctx.copy))
    return jax.make_array_from_single_device_arrays(shape, sharding, arrays)


def jax_replica(x: Any) -> Any:
    """This process's first replica of a fully replicated array (shared, not copied)."""
    return x.addressable_shards[0].data


def jax_gather(x: Any) -> Any:
    """The whole array on its first shard's device, copied once: on the host each shard is
    copied into its block of one 64-byte aligned buffer; on an accelerator by device_put."""
    import jax
    import numpy as np
    from jax.sharding import SingleDeviceSharding

    shards = x.addressable_shards
    if shards[0].device.platform != "cpu":
        return jax.device_put(x, SingleDeviceSharding(shards[0].device))
    out = aligned_empty(tuple(x.shape), x.dtype)
    for shard in shards:
        if shard.replica_id == 0:  # each block once, however often it is replicated
            out[shard.index] = np.asarray(shard.data)
    if out.dtype.kind == "V":  # numpy exports no ml_dtypes (bfloat16, float8) by DLPack
        return jax.device_put(out, shards[0].device)
    return import_to_device(out, shards[0].device)


def dtensor_local(d: Any) -> Any:
    """The local tensor of a DTensor replicated on every rank: the whole array, shared."""
    return d.to_local()


def dtensor_full(d: Any, ctx: CallContext) -> Any:
    """The whole DTensor on every rank (a collective: each rank must make this call).

    With sharding= it is on the way to a jax.Array laid out by it; a Partial DTensor is
    refused then (its layout has no jax counterpart, and this would reduce it silently).
    """
    sharding = ctx.option("sharding")
    if sharding is not None:
        jax_sharding(sharding)
        if ctx.target != "jax":
            raise OptionError(
                f"sharding= lays out a jax.Array, and this call makes a {ctx.target} array.\n"
                "Leave sharding= out, or convert to 'jax'."
            )
        partial = [i for i, p in enumerate(d.placements) if p.is_partial()]
        if partial:
            raise OptionError(
                "sharding= cannot lay out a DTensor with Partial placements.\n"
                f"Mesh dimension(s) {partial} hold unreduced values, which no jax sharding "
                "holds. Reduce them first: dtensor.redistribute(placements=[Replicate()] * "
                "mesh.ndim) (or Shard(d) placements), then convert; or leave sharding= out "
                "and to() reduces it by DTensor.full_tensor() (a collective)."
            )
    full = d.full_tensor()
    local = d.to_local()
    if local.numel() and full.untyped_storage().data_ptr() == local.untyped_storage().data_ptr():
        # One rank (a mesh of one device): full_tensor() is the local tensor itself. The
        # edge is a copy (explain() says so, copy=True relies on it): make it one.
        return full.clone()
    return full


def jax_sharding(value: Any) -> Any:
    """``sharding=`` checked: a jax.sharding.Sharding."""
    from jax.sharding import Sharding

    if isinstance(value, Sharding):
        return value
    shown = repr(value)
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    raise OptionError(
        f"Option sharding={shown} is not valid.\nsharding= takes a jax.sharding.Sharding "
        f"(this is a {type(value).__name__}), for example NamedSharding(Mesh(jax.devices(), "
        "('x',)), PartitionSpec('x')); or None for the array's own layout."
    )


def jax_lay_out(x: Any, ctx: CallContext) -> Any:
    """The jax.Array ``x`` laid out by ``sharding=`` (jax.device_put; copy=True never lets
    a shard alias ``x``)."""
    import jax

    sharding = jax_sharding(ctx.option("sharding"))
    try:
        sharding.shard_shape(tuple(x.shape))  # a layout that does not fit: refused here
    except ValueError as exc:
        raise OptionError(
            f"sharding= cannot lay out an array of shape {tuple(x.shape)}: {exc}\nChoose a "
            "sharding whose mesh axes divide the dimensions they split (or pad the array)."
        ) from exc
    if ctx.copy:
        return jax.device_put(x, sharding, may_alias=False)
    return jax.device_put(x, sharding)
