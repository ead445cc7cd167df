"""CuPy: framework spec, the in-framework copy and the moves between GPUs and the host.

CuPy arrays live on CUDA devices only: with ``device=None`` a host array sent to CuPy lands
on cuda:0 and a CuPy array sent to numpy on the host (``FrameworkSpec.devices.kinds``).
Whichever wheel provides it (cupy-cuda12x, cupy-cuda13x, a source build), the module is
``cupy``. Moves are ordered on CuPy's current streams; none synchronizes the device.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from interop_core.plugin import (
    ALIGNMENT,
    DTYPES,
    MOVE_COST,
    ArrayEdge,
    Casting,
    ConverterSpec,
    Device,
    Devices,
    Diagnostics,
    FrameworkSpec,
    ImportRules,
    Needs,
    Package,
    TensorInfo,
    classify_layout,
    hookimpl,
)

#: Loaded once it is imported (docs/plugins.md, "Loaded when needed").
INTEROP_ABOUT = ("cupy",)

#: The canonical dtypes CuPy has (no bfloat16 or float8).
CUPY_DTYPES = frozenset(
    {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
     "float16", "float32", "float64", "complex64", "complex128"}
)  # fmt: skip
#: For edges into CuPy from frameworks that have more dtypes.
NOT_CUPY = Needs(
    no_dtypes=frozenset(DTYPES) - CUPY_DTYPES,
    dtype_reason="CuPy has no bfloat16 or float8 dtypes",
)
#: What CuPy imports without copying (the spec's ``imports``, checked by the planner on every
#: zero-copy edge into CuPy): any layout, but only the dtypes it has.
IMPORTS = replace(NOT_CUPY, no_flags=frozenset())
INSTALL_HINT = "pip install 'interop-core[cupy-cuda12x]' (or [cupy-cuda13x] for CUDA 13)"


def describe(x: Any) -> TensorInfo:
    """Describe a cupy.ndarray (strides in bytes, as numpy's)."""
    shape = tuple(x.shape)
    return TensorInfo(
        framework="cupy",
        dtype=str(x.dtype),
        device=Device("cuda", int(x.data.device_id)),
        shape=shape,
        layout=classify_layout(shape, tuple(x.strides), x.itemsize),
        readonly=False,
        aligned=x.data.ptr % ALIGNMENT == 0,
    )


def key(x: Any) -> Any:
    """Warm-path key: dtype, device, and the layout class unless C-contiguous."""
    if x.flags.c_contiguous:  # relaxed like numpy's: implies layout "C"
        return (x.dtype, x.data.device_id)
    return (
        x.dtype,
        x.data.device_id,
        classify_layout(tuple(x.shape), tuple(x.strides), x.itemsize),
    )


def aligned_key(x: Any) -> Any:
    """key() plus whether the data is 64-byte aligned."""
    return (key(x), not x.data.ptr % ALIGNMENT)


def data_ptr(x: Any) -> int:
    """Device address of the first element."""
    return int(x.data.ptr)


def example(data: Any, dtype: str) -> Any:
    """A CuPy array of ``data`` on the current device."""
    import cupy

    return cupy.asarray(data, dtype=dtype)


@hookimpl(trylast=True)
def interop_parse_device(device: Any) -> Device | None:
    """A ``cupy.cuda.Device`` as a Device (None for anything else)."""
    if type(device).__name__ == "Device" and type(device).__module__.startswith("cupy"):
        return Device("cuda", int(device.id))
    return None


def astype(x: Any, dtype: str) -> Any:
    """``x`` cast to canonical ``dtype`` (``to(..., dtype=)``): a C-contiguous copy on its
    device, made with that device current (CuPy runs on the current device's stream)."""
    import cupy

    with cupy.cuda.Device(x.data.device_id):
        return x.astype(dtype, order="C")


def _devices() -> list[str]:
    import cupy

    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except cupy.cuda.runtime.CUDARuntimeError:  # no driver, or none that fits this build
        return []
    return [f"cuda:{i}" for i in range(count)]


def on_device_of(convert: Any) -> Any:
    """``convert`` run with the array's device current: CuPy's exporter and ``get()`` use
    the current device's stream, which must be the one that produced the array."""
    import cupy

    current, Dev = cupy.cuda.runtime.getDevice, cupy.cuda.Device

    def run(x: Any, *args: Any, **kwargs: Any) -> Any:
        index = x.data.device_id
        if index == current():
            return convert(x, *args, **kwargs)
        with Dev(index):
            return convert(x, *args, **kwargs)

    return run


def _load_copy() -> Any:
    return on_device_of(lambda x: x.copy(order="C"))


def _load_to_gpu() -> Any:
    import cupy

    def to_gpu(x: Any, device: Device) -> Any:
        # Stream-safe peer copy: the target device's stream waits for the source's.
        with cupy.cuda.Device(x.data.device_id):
            ready = cupy.cuda.get_current_stream().record()
        with cupy.cuda.Device(device.index):
            stream = cupy.cuda.get_current_stream()
            stream.wait_event(ready)
            out = cupy.empty(x.shape, x.dtype)
            out.data.copy_from_device_async(x.data, x.nbytes, stream)
            return out

    return to_gpu


def _load_from_host() -> Any:
    import cupy

    def from_host(x: Any, device: Device) -> Any:
        with cupy.cuda.Device(device.index):
            return cupy.asarray(x)

    return from_host


def _load_to_host() -> Any:
    from .numpy import aligned_empty

    def get(x: Any, out: Any) -> Any:
        return x.get(out=out)

    to_host_on_device = on_device_of(get)

    def to_host(x: Any, device: Device) -> Any:
        # Into a 64-byte aligned buffer, so JAX and TensorFlow can share the result.
        return to_host_on_device(x, aligned_empty(x.shape, x.dtype))

    return to_host


def read_dtype(value: Any) -> str | None:
    """A name written "cp.int32" (CuPy's dtypes are numpy's, which the numpy plugin reads);
    None for anything else."""
    if isinstance(value, str):
        for prefix in ("cp.", "cupy."):
            if value.startswith(prefix):
                return value.removeprefix(prefix)
    return None


@hookimpl
def interop_frameworks() -> list[FrameworkSpec]:
    """CuPy: cupy.ndarray, on CUDA devices only."""
    return [
        FrameworkSpec(
            name="cupy",
            aliases=("cp",),
            array_types=("cupy.ndarray",),
            describe=describe,
            key=key,
            aligned_key=aligned_key,
            data_ptr=data_ptr,
            example=example,
            dtypes=CUPY_DTYPES,
            # Each CUDA build is its own distribution; the doctor finds the installed one.
            package=Package(distribution="cupy", install_hint=INSTALL_HINT),
            rules=ImportRules(imports=IMPORTS),
            devices=Devices(visible=_devices, kinds=("cuda",)),
            casting=Casting(astype=astype, read_dtype=read_dtype),
            diagnostics=Diagnostics(constructor="cupy.asarray"),
        )
    ]


_C = Needs(layouts=frozenset({"C"}), layout_reason="moves C-contiguous arrays (others copy first)")


@hookimpl
def interop_converters() -> list[ConverterSpec]:
    """The CuPy copy, a move to another GPU, and the moves to and from the host."""
    return [
        ConverterSpec(
            name="cupy.ndarray.copy()", source="cupy", target="cupy", load=_load_copy,
            zero_copy=False, devices=frozenset({"cuda"}), cost=3.0,
        ),
        ConverterSpec(
            name="cupy copy to another GPU", source="cupy", target="cupy", load=_load_to_gpu,
            zero_copy=False, accepts=_C, devices=frozenset({"cuda"}),
            cost=MOVE_COST, array=ArrayEdge(to_device="cuda"),
        ),
        ConverterSpec(
            name="cupy.asarray (host to GPU)", source="numpy", target="cupy",
            load=_load_from_host, zero_copy=False, devices=frozenset({"cpu"}),
            accepts=replace(
                NOT_CUPY, layouts=frozenset({"C", "F"}), layout_reason="uploads contiguous arrays"
            ),
            cost=MOVE_COST, array=ArrayEdge(to_device="cuda"),
        ),
        ConverterSpec(
            name="cupy.ndarray.get() (GPU to host)", source="cupy", target="numpy",
            load=_load_to_host, zero_copy=False, accepts=_C, devices=frozenset({"cuda"}),
            cost=MOVE_COST, array=ArrayEdge(to_device="cpu"),
        ),
    ]  # fmt: skip
