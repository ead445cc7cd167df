"""JAX: framework spec (with the x64 flag as state), the in-framework copy, device moves."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from interop_core.plugin import (
    DTYPES,
    MOVE_COST,
    ArrayEdge,
    Casting,
    ConverterSpec,
    Device,
    Devices,
    Diagnostics,
    Flag,
    FrameworkSpec,
    GlobalFlag,
    ImportRules,
    KindSpec,
    Needs,
    Package,
    TensorInfo,
    hookimpl,
)

#: Loaded once one is imported (docs/plugins.md, "Loaded when needed"); jax.jit's
#: functions are a jaxlib type.
INTEROP_ABOUT = ("jax", "jaxlib")


def x64_enabled() -> bool:
    """JAX's jax_enable_x64 flag: without it JAX narrows 64-bit inputs to 32 bits."""
    import jax

    return bool(jax.config.read("jax_enable_x64"))


#: What JAX makes of 64-bit dtypes while jax_enable_x64 is off (``jnp.asarray``'s).
NARROWED = {"int64": "int32", "uint64": "uint32", "float64": "float32", "complex128": "complex64"}


def canonical_dtype(dtype: str) -> str | None:
    """The dtype JAX itself makes of ``dtype`` now (``dtype="canonical"``): the 32-bit kind
    of a 64-bit one while x64 is off (read without importing JAX), else None."""
    narrowed = NARROWED.get(dtype)
    return None if narrowed is None or X64.value() else narrowed


def x64_from_environment() -> bool:
    """The jax_enable_x64 JAX will start with, read without importing it: its
    ``JAX_ENABLE_X64`` variable, in JAX's words for true (an unreadable value fails JAX's
    own import, so it counts as off here)."""
    return os.environ.get("JAX_ENABLE_X64", "").lower() in ("y", "yes", "t", "true", "on", "1")


#: Every importer into JAX needs this flag for 64-bit dtypes (the spec's ``switches``: the
#: planner applies it to every array edge into JAX); routes of other dtypes never read it
#: (the plan cache keys only 64-bit requests by it).
X64 = GlobalFlag(
    name="jax_enable_x64",
    read=x64_enabled,
    module="jax",
    unloaded=x64_from_environment,
    dtypes=frozenset({"int64", "uint64", "float64", "complex128"}),
    reason=(
        "jax_enable_x64 is off, so JAX would silently narrow {dtype} (to its 32-bit kind: int32, "
        "uint32, float32 or complex64); pass dtype= "
        "to cast it first (e.g. to(x, 'jax', dtype={{'int64': 'int32', 'float64': "
        "'float32'}})) or enable x64 (jax.config.update('jax_enable_x64', True))"
    ),
)


def as_device(d: Any) -> Device:
    """A jax device as a Device, indexed by ``local_hardware_id``, not JAX's global id:
    JAX's "gpu" platform is our "cuda" with the CUDA ordinal (torch's and CuPy's index);
    "cpu:N" is this process's N-th host device (``jax.local_devices(backend="cpu")[N]``)."""
    index = d.local_hardware_id
    kind = "cuda" if d.platform == "gpu" else d.platform
    return Device(kind, int(index if index is not None else d.id))


@hookimpl(trylast=True)
def interop_parse_device(device: Any) -> Device | None:
    """A JAX device object (``jax.devices()[i]``) as a Device (None for anything else)."""
    platform = getattr(device, "platform", None)
    if isinstance(platform, str) and type(device).__module__.startswith("jax"):
        return as_device(device)
    return None


def _is_tracer(x: Any) -> bool:
    import jax

    return isinstance(x, jax.core.Tracer)


def describe(x: Any) -> TensorInfo:
    """Describe a jax.Array (always C-contiguous, never marked read-only)."""
    shape = tuple(x.shape)
    flags: set[str] = set()
    if _is_tracer(x):
        flags.add("tracer")
        device = Device("cpu")
    else:  # on one device (one over several is of the sharded form, which describes it)
        device = as_device(next(iter(x.devices())))
    return TensorInfo(
        framework="jax",
        dtype=str(x.dtype),
        device=device,
        shape=shape,
        layout="C",
        readonly=False,
        aligned=True,
        flags=frozenset(flags),
    )


#: 64-bit dtypes, which JAX narrows unless x64 is on (the public importer canonicalises).
_WIDE_NAMES = ("int64", "uint64", "float64", "complex128")


def host_importer() -> Callable[[Any], Any] | None:
    """``import_capsule(capsule) -> jax.Array``: a legacy DLPack capsule of host memory as a
    jax.Array on the first host device, sharing it; None where jaxlib lacks the call.

    ``jax.dlpack.from_dlpack`` spends 30-90 us around one C++ call (device lookup, a stream
    query that raises on the CPU, ``jnp.asarray`` canonicalisation); this is that call
    (~5 us) with the public call's semantics kept: the same device (committed), the same
    capsule ownership and deleter, 64-bit dtypes canonicalised as JAX would without x64, and
    ``copy=False``, so an unaligned buffer raises instead of JAX copying it on a worker
    thread (the deadlock in FACTS). jaxlib's private API, so it is checked once on a real
    array and the public call is used wherever it differs (its signature changed at jaxlib
    extension version 467)."""
    try:
        import jax
        import numpy as np
        from jax._src import xla_bridge
        from jax._src.lib import _jax, jaxlib_extension_version
    except ImportError:
        return None
    buffer = _jax.dlpack_managed_tensor_to_buffer
    device = xla_bridge.get_backend("cpu").device_from_local_hardware_id(0)
    wide = frozenset(np.dtype(n) for n in _WIDE_NAMES)
    read_x64 = jax.config.read

    if jaxlib_extension_version >= 467:

        def raw(capsule: Any) -> Any:
            return buffer(capsule, device, None, False, 1)  # 1: kDLCPU
    else:

        def raw(capsule: Any) -> Any:
            return buffer(capsule, device, None, False)

    def import_capsule(capsule: Any) -> Any:
        arr = raw(capsule)
        if arr.dtype in wide and not read_x64("jax_enable_x64"):
            import jax.numpy as jnp

            return jnp.asarray(arr, dtype=jax.dtypes.canonicalize_dtype(arr.dtype))
        return arr

    probe = _aligned_probe(np)
    try:
        got = import_capsule(probe.__dlpack__())
        same = (
            isinstance(got, jax.Array)
            and got.unsafe_buffer_pointer() == probe.ctypes.data
            and got.devices() == {device}
            and got.dtype == probe.dtype
            and got.shape == probe.shape
            and bool(getattr(got, "_committed", True))
        )
    except Exception:  # a changed private API: the public call, always
        return None
    return import_capsule if same else None


def _aligned_probe(np: Any) -> Any:
    """A small 64-byte aligned float32 array (a view into a larger allocation)."""
    base = np.zeros(32, np.float32)
    skip = (-base.ctypes.data % 64) // 4
    return base[skip : skip + 8]


def key(x: Any) -> Any:
    """Warm-path key: dtype and device (a SingleDeviceSharding holds only a device and a
    memory kind); it raises on an array over several devices (the sharded form keys it)."""
    try:
        sharding = x.sharding
    except Exception:  # a tracer has no concrete sharding
        return (x.dtype, None)
    if type(sharding).__name__ == "SingleDeviceSharding":
        # Its device and memory kind, not the sharding: a sharding hashes (and compares,
        # when two arrays hold different but equal ones) in Python, ~0.3 us a call; the
        # aval's dtype is x.dtype without the property's Python frame.
        try:
            return (x.aval.dtype, sharding._device, sharding._memory_kind)
        except AttributeError:  # a jax without these fields: the public ones
            return (x.dtype, sharding.device_set, sharding.memory_kind)
    # A one-device NamedSharding is keyed by its device, like a SingleDeviceSharding.
    if sharding.num_devices != 1:
        raise TypeError("an array over several devices is keyed by the sharded form")
    return (x.dtype, next(iter(sharding.device_set)))


def data_ptr(x: Any) -> int:
    """Address of the first element (single-device arrays)."""
    return int(x.unsafe_buffer_pointer())


def example(data: Any, dtype: str) -> Any:
    """A jax.Array of ``data`` with canonical ``dtype`` (64-bit ones only with x64 on)."""
    import jax.numpy as jnp

    if dtype in X64.dtypes and not X64.read():
        raise ValueError(X64.reason.format(dtype=dtype))  # JAX would build a 32-bit array
    return jnp.asarray(data, dtype=dtype)


def astype(x: Any, dtype: str) -> Any:
    """``x`` cast to canonical ``dtype`` (``to(..., dtype=)``); a sharded array keeps its
    sharding. A 64-bit dtype without x64 is refused: JAX would make a 32-bit array."""
    import jax.numpy as jnp

    if dtype in X64.dtypes and not X64.read():
        raise ValueError(X64.reason.format(dtype=dtype))
    return x.astype(getattr(jnp, dtype))


def _devices() -> list[str]:
    # jax.devices() lists the default backend's only: the host is there beside a GPU.
    # Several host devices exist with XLA_FLAGS=--xla_force_host_platform_device_count=N.
    return [str(as_device(d)) for d in (*hosts(), *gpus())]


def hosts() -> list[Any]:
    """This process's JAX host (CPU) devices, in index order ("cpu", "cpu:1", ...)."""
    import jax

    return sorted(jax.local_devices(backend="cpu"), key=lambda d: as_device(d).index)


def gpus() -> list[Any]:
    """This process's JAX GPU devices (none when JAX has no GPU backend)."""
    import jax

    try:
        return list(jax.local_devices(backend="gpu"))
    except RuntimeError:
        return []


def gpus_by_index() -> dict[int, Any]:
    """This process's JAX GPU devices by CUDA ordinal (the index of "cuda:N")."""
    return {int(d.local_hardware_id): d for d in gpus()}


def _load_copy() -> Any:
    import jax.numpy as jnp

    def copy(x: Any) -> Any:
        return jnp.array(x, copy=True)

    return copy


def _load_to_gpu() -> Any:
    import jax

    by_index = gpus_by_index()  # JAX's devices are fixed once its backend has started

    def put(x: Any, device: Device) -> Any:
        # Asynchronous: JAX orders the copy after the kernels that produce x.
        return jax.device_put(x, by_index[device.index])

    return put


def _load_to_cpu() -> Any:
    """``jax.device_put`` onto a host device by index: from a GPU or another host device it
    copies; an aligned C-contiguous numpy buffer it shares on any host device
    (jax.dlpack.from_dlpack places that on the first one only)."""
    import jax

    by_index = {as_device(d).index: d for d in hosts()}  # fixed once JAX has started

    def put(x: Any, device: Device) -> Any:
        return jax.device_put(x, by_index[device.index])

    return put


def _load_share_on_host() -> Any:
    import numpy as np

    put = _load_to_cpu()

    def share(x: Any, device: Device) -> Any:
        # np.asarray is a read-only view of x's host buffer, which jax.device_put shares
        # on any host device (JAX's own device_put of x copies). Both arrays are immutable
        # and donating either never writes the shared buffer.
        return put(np.asarray(x), device)

    return share


#: A single-device array (tracers and sharded arrays carry opaque flags: never taken here).
_PLAIN = Needs(no_flags=frozenset())

#: A single-device array whose host buffer jax.device_put can share on another host device
#: (a 64-bit one only while x64 is on: device_put would narrow it).
_HOST_SHARED = Needs(no_flags=frozenset(), flag=X64)

#: What jax.device_put shares rather than copies: what JAX imports (IMPORTS, which the
#: planner checks). Read-only memory stays out, as on the DLPack edge (rule 8): the JAX
#: array would reach torch later as a writable alias of memory its owner protects.
_NUMPY_SHARED = Needs(extra=lambda key: "the buffer is read-only" if key.readonly else None)

#: JAX can import F-contiguous buffers, but the array then keeps a column-major layout that
#: np.asarray silently copies and TensorFlow rejects: only C crosses into JAX.
_LAYOUT = "JAX shares only C-contiguous buffers here (an F-order JAX array copies on export)"

#: What JAX imports without copying (the spec's ``imports``, checked by the planner on every
#: zero-copy edge into JAX): C-contiguous, 64-byte aligned buffers. JAX copies others itself,
#: on a worker thread, which can deadlock against a caller holding the GIL.
IMPORTS = Needs(layouts=frozenset({"C"}), layout_reason=_LAYOUT, aligned=True, no_flags=frozenset())


def read_dtype(value: Any) -> str | None:
    """The canonical name of a JAX scalar type (jnp.int32, which holds a numpy dtype), or of
    a name written "jnp.int32"; None for anything else. Imports nothing."""
    if isinstance(value, str):
        for prefix in ("jnp.", "jax.numpy."):
            if value.startswith(prefix):
                return value.removeprefix(prefix)
        return None
    if type(value).__module__.partition(".")[0] in ("jax", "jaxlib"):
        inner = getattr(value, "dtype", None)
        name = getattr(inner, "name", None) if inner is not value else None
        return name if isinstance(name, str) else None
    return None


#: The flags a jax.Array or a jax function may carry (``describe``; "host_callback" from
#: the pure_callback bridge of torch functions) and what a refusal over one tells the user.
_FLAGS = (
    Flag("tracer", "a traced JAX value has no buffer (convert outside jit/grad/vmap)", opaque=True),
    Flag(
        "host_callback",
        "the function calls back into Python on the host (a torch function bridged to JAX "
        "through jax.pure_callback), which cannot be exported or serialized",
    ),
)


@hookimpl
def interop_frameworks() -> list[FrameworkSpec]:
    """JAX: jax.Array; 64-bit dtypes only with jax_enable_x64."""
    return [
        FrameworkSpec(
            name="jax",
            # Tracers are not jax.Array subclasses; they are owned (and refused) by JAX.
            array_types=("jax.Array", "jax.core.Tracer"),
            describe=describe,
            key=key,
            data_ptr=data_ptr,
            example=example,
            dtypes=frozenset(DTYPES),
            flags=_FLAGS,
            package=Package(distribution="jax", install_hint="pip install 'interop-core[jax]'"),
            rules=ImportRules(imports=IMPORTS, switches=(X64,)),
            devices=Devices(
                visible=_devices,
                advice="JAX makes several host devices only when started with "
                "XLA_FLAGS=--xla_force_host_platform_device_count=N.",
                kinds=("cpu", "cuda"),
            ),
            casting=Casting(astype=astype, read_dtype=read_dtype, canonical=canonical_dtype),
            diagnostics=Diagnostics(constructor="jax.numpy.asarray"),
        )
    ]


@hookimpl
def interop_converters() -> list[ConverterSpec]:
    """The JAX copy and device moves."""
    return [
        ConverterSpec(
            name="jnp.array(copy=True)",
            source="jax",
            target="jax",
            load=_load_copy,
            zero_copy=False,
            # A sharded array is copied shard by shard and keeps its sharding (a ragged or
            # sparse one, of an opaque form, by its own edges).
            accepts=Needs(no_flags=frozenset()),
            keeps_flags=frozenset({"sharded", "replicated", "multiprocess"}),
            devices=frozenset({"cpu", "cuda"}),
            cost=5.0,
            array=ArrayEdge(forms=frozenset({"sharded"})),
        ),
        ConverterSpec(
            name="jax.device_put(gpu)",
            source="jax",
            target="jax",
            load=_load_to_gpu,
            zero_copy=False,
            accepts=_PLAIN,
            devices=frozenset({"cpu", "cuda"}),
            cost=MOVE_COST,
            array=ArrayEdge(to_device="cuda"),
        ),
        ConverterSpec(
            name="jax.device_put(cpu)",
            source="jax",
            target="jax",
            load=_load_to_cpu,
            zero_copy=False,
            accepts=_PLAIN,
            # From a GPU, and between host devices (cpu:3 -> cpu:1).
            devices=frozenset({"cpu", "cuda"}),
            cost=MOVE_COST,
            array=ArrayEdge(to_device="cpu"),
        ),
        # Between host devices, sharing the buffer (cpu:3 -> cpu:1).
        ConverterSpec(
            name="jax.device_put(np.asarray)",
            source="jax",
            target="jax",
            load=_load_share_on_host,
            zero_copy=True,
            accepts=_HOST_SHARED,
            cost=MOVE_COST,
            array=ArrayEdge(to_device="cpu"),
        ),
        # numpy -> a JAX host device other than the first (the DLPack edges land on that
        # one); the planner takes it only for "cpu:N", a move to where the array is not.
        ConverterSpec(
            name="jax.device_put(numpy)",
            source="numpy",
            target="jax",
            load=_load_to_cpu,
            zero_copy=True,
            accepts=_NUMPY_SHARED,
            cost=MOVE_COST,
            array=ArrayEdge(to_device="cpu"),
        ),
    ]


def _is_jax_function(f: Any) -> bool:
    """A callable object made by JAX itself (jax.jit, jax.custom_vjp, ...): its type lives in
    jax or jaxlib. Plain functions (and jax.grad's, which are plain) need source=."""
    return callable(f) and type(f).__module__.partition(".")[0] in ("jax", "jaxlib")


@hookimpl
def interop_kinds() -> list[KindSpec]:
    """JAX functions that say they are JAX's: jax.jit-wrapped ones (and custom_vjp/jvp)."""
    return [
        KindSpec(
            kind="function",
            framework="jax",
            types=("jaxlib._jax.PjitFunction",),
            claims=_is_jax_function,
            description="a jax.jit-wrapped function",
        ),
    ]
