"""PyTorch: framework spec, the in-framework copy and moves between the CPU and CUDA devices."""

from __future__ import annotations

from typing import Any

from interop_core.plugin import (
    ALIGNMENT,
    DTYPES,
    MOVE_COST,
    ArrayEdge,
    Casting,
    ConversionError,
    ConverterSpec,
    Device,
    Devices,
    Diagnostics,
    Flag,
    FrameworkSpec,
    ImportRules,
    KindSpec,
    Needs,
    NotAnArrayError,
    OrdinaryArrays,
    Package,
    TensorInfo,
    classify_layout,
    hookimpl,
)

from ..native import native
from . import dynamo_hook

#: Loaded once it is imported (docs/plugins.md, "Loaded when needed").
INTEROP_ABOUT = ("torch",)

#: What torch imports without copying (the spec's ``imports``, checked by the planner on
#: every zero-copy edge into torch): no negative strides, which torch cannot hold (it aborts
#: the interpreter on them through DLPack), and no read-only memory: torch cannot mark a
#: result read-only, so writes through it would reach memory its owner protects (rule 8).
IMPORTS = Needs(
    layouts=frozenset({"C", "F", "strided", "broadcast"}),
    layout_reason="torch cannot hold negative strides (and aborts the interpreter on them via "
    "DLPack)",
    writable=True,
    no_flags=frozenset(),
)

#: Quantized dtypes are described by their storage dtype; the "quantized" flag refuses them.
_QUANTIZED_STORAGE = {"qint8": "int8", "quint8": "uint8", "qint32": "int32", "quint4x2": "uint8"}


def dtype_name(dt: Any) -> str:
    """Canonical name of a torch dtype ("torch.float32" -> "float32")."""
    name = str(dt).removeprefix("torch.")
    return _QUANTIZED_STORAGE.get(name, name)


def torch_dtype(name: str) -> Any:
    """The torch dtype for a canonical name."""
    import torch

    return getattr(torch, name)


def _flags(t: Any) -> frozenset[str]:
    flags = []
    if t.requires_grad:
        flags.append("requires_grad")
    if t.is_quantized:
        flags.append("quantized")
    else:
        if t.is_conj():
            flags.append("conj")
        if t.is_neg():
            flags.append("neg")
    return frozenset(flags)


_NESTED_STRIDED = (
    "Cannot convert a torch nested tensor of the strided layout: only jagged ones "
    "(layout=torch.jagged) convert as ragged arrays.\nMake one: torch.nested."
    "nested_tensor(list(t.unbind()), layout=torch.jagged), or pad it: "
    "torch.nested.to_padded_tensor(t, fill_value)."
)
_NO_LAYOUT = (
    "Cannot convert a torch tensor of layout {layout}: no registered plugin declares it (the "
    "built-in interop_plugins.exchange.sparse declares the sparse layouts). Call "
    ".to_dense() for a strided tensor."
)
_NO_RAGGED = (
    "Cannot convert a torch jagged tensor: no registered plugin declares ragged arrays of "
    "torch (the built-in interop_plugins.exchange.ragged does). Convert t.values() and "
    "t.offsets() instead."
)


def refuse_meta(t: Any) -> None:
    """A tensor on the meta device (of any form) has no data: no route can help, so say so
    before any planning."""
    if t.is_meta:
        raise NotAnArrayError(
            "Cannot convert a torch meta tensor (device='meta'): it has no data.\n"
            f"It holds only a shape {tuple(t.shape)} and a dtype {dtype_name(t.dtype)}: create "
            "it on a real device (device='cpu' or 'cuda'), or build the target's array from "
            "its shape and dtype."
        )


def describe(t: Any) -> TensorInfo:
    """Describe a strided tensor without copying it."""
    import torch

    refuse_meta(t)
    if t.is_nested:  # a jagged one is a ragged array, which its form describes
        raise ConversionError(_NESTED_STRIDED if t.layout == torch.strided else _NO_RAGGED)
    if t.layout != torch.strided:  # a sparse one is of the sparse form, which describes it
        raise ConversionError(_NO_LAYOUT.format(layout=t.layout))
    shape = tuple(t.shape)
    return TensorInfo(
        framework="torch",
        dtype=dtype_name(t.dtype),
        device=Device(t.device.type, t.device.index or 0),
        shape=shape,
        layout=classify_layout(shape, tuple(t.stride()), 1),
        readonly=False,
        aligned=t.data_ptr() % ALIGNMENT == 0,
        flags=_flags(t),
    )


# key() and aligned_key() are spelled out separately: they run on every warm call, where a
# flag test or a functools.partial costs more than the duplication. get_device() is -1 on
# the CPU and the index on an accelerator: an int hashes and compares faster than a
# torch.device. The conjugate and negative bits exist only on views (x.conj(), x.imag),
# so they are read only for views.


def key(t: Any) -> Any:
    """Warm-path key: dtype, device, grad, contiguity, view bits (layout if not contiguous)."""
    # A sparse CSR/BSR tensor has no is_contiguous(): it raises, as a key must on the
    # objects of a form (the sparse form keys them).
    k: tuple[Any, ...] = (t.dtype, t.get_device(), t.requires_grad, t.is_contiguous(), t._is_view())
    if k[4]:
        k += (t.is_conj(), t.is_neg())
    return k if k[3] else _strided_key(t, k)


def aligned_key(t: Any) -> Any:
    """key() plus whether the data is 64-byte aligned."""
    k: tuple[Any, ...] = (
        t.dtype, t.get_device(), t.requires_grad, t.is_contiguous(), t._is_view(),
        not t.data_ptr() % ALIGNMENT,
    )  # fmt: skip
    if k[4]:
        k += (t.is_conj(), t.is_neg())
    return k if k[3] else _strided_key(t, k)


def warm_keys() -> tuple[Any, Any]:
    """key and aligned_key: for a C-contiguous strided tensor read in C through torch's
    DLPack exchange table where the extension is built (dtype and device from one C call,
    not four Python ones; the tuples differ from these, never equal to one of them), the
    others by these Python functions; else these alone."""
    fast = native()
    if fast is None:
        return key, aligned_key
    fast.set_torch_keys(key, aligned_key)
    return fast.torch_key, fast.torch_aligned_key


def _strided_key(t: Any, k: tuple[Any, ...]) -> tuple[Any, ...]:
    if t.is_sparse:  # COO: not contiguous, its stride() all zeros (no strides of its own)
        raise TypeError("a sparse COO tensor is keyed by its form, not as a strided tensor")
    return (*k, classify_layout(tuple(t.shape), tuple(t.stride()), 1))


def data_ptr(t: Any) -> int:
    """Address of the first element."""
    return int(t.data_ptr())


def example(data: Any, dtype: str) -> Any:
    """A tensor of ``data`` with canonical ``dtype``."""
    import torch

    return torch.tensor(data, dtype=torch_dtype(dtype))


@hookimpl(trylast=True)
def interop_parse_device(device: Any) -> Device | None:
    """A torch.device as a Device (None for anything else)."""
    if type(device).__module__ == "torch" and type(device).__name__ == "device":
        return Device(device.type, device.index or 0)
    return None


def astype(t: Any, dtype: str) -> Any:
    """``t`` cast to canonical ``dtype`` (``to(..., dtype=)``): a new contiguous tensor on
    its device (autograd records the cast)."""
    import torch

    return t.to(torch_dtype(dtype), memory_format=torch.contiguous_format)


def _devices() -> list[str]:
    import torch

    return ["cpu", *(f"cuda:{i}" for i in range(torch.cuda.device_count()))]


def _load_copy() -> Any:
    import torch

    contiguous = torch.contiguous_format
    try:
        import numpy as np

        from .numpy import aligned_empty
    except ImportError:
        np = None  # type: ignore[assignment]

    def copy(t: Any) -> Any:
        if np is None or not t.is_cpu or t.numel() == 0:
            # copy_ materialises conj/neg bits and stays on the autograd graph: one copy.
            return torch.empty_like(t, memory_format=contiguous).copy_(t)
        # On CPU, allocate through numpy: its large buffers get transparent huge pages, and
        # for plain contiguous data numpy's copy is several times faster than torch's copy_
        # here (64 MiB: 12 ms against 60-90 ms; docs/benchmarks.md).
        raw = aligned_empty((t.numel() * t.element_size(),), np.uint8)
        out = torch.from_numpy(raw).view(t.dtype).view(t.shape)
        plain = not (t.requires_grad or t.is_conj() or t.is_neg())
        if plain and t.numel() > 1 and t.is_contiguous():  # (a size-1 dim may keep any stride)
            np.copyto(raw, t.reshape(-1).view(torch.uint8).numpy())
            return out
        return out.copy_(t)

    return copy


def _load_to_cuda() -> Any:
    def to_cuda(t: Any, device: Device) -> Any:
        # Ordered on torch's current streams of both devices (no device-wide synchronize).
        return t.to(f"cuda:{device.index}")

    return to_cuda


def _load_to_cpu() -> Any:
    def to_cpu(t: Any, device: Device) -> Any:
        return t.cpu()

    return to_cpu


def read_dtype(value: Any) -> str | None:
    """The canonical name of a torch dtype, or of a name written "torch.int32"; None for
    anything else. Imports nothing."""
    if isinstance(value, str):
        return value.removeprefix("torch.") if value.startswith("torch.") else None
    if type(value).__module__ == "torch" and type(value).__name__ == "dtype":
        return str(value).removeprefix("torch.")
    return None


def example_view(x: Any, layout: str, shape: tuple[int, ...]) -> Any:
    """A broadcast view: ``expand`` (tensors have no Array API namespace)."""
    return x.expand(*shape) if layout == "broadcast" else None


def _from_numpy_arrays(sizes: tuple[int, ...]) -> list[Any]:
    """``torch.from_numpy`` over numpy's own allocations (the numpy plugin's ordinary arrays)."""
    import torch

    from .numpy import ordinary_arrays

    return [torch.from_numpy(a) for a in ordinary_arrays(sizes)]


#: Tensors over numpy's allocations share their (mostly unaligned) memory.
_ORDINARY = OrdinaryArrays(
    "torch.from_numpy",
    "torch tensors made by torch.from_numpy over such numpy arrays",
    _from_numpy_arrays,
    needs=("numpy",),
)


#: The flags a tensor may carry (``describe``) and what a refusal over
#: one tells the user to do.
_FLAGS = (
    # A conjugate or negative view's memory holds the values before the bit applies, and a
    # quantized tensor's its integer storage: no edge but torch's copy reads them.
    Flag("conj", "the tensor has its conjugate bit set (call .resolve_conj())", opaque=True),
    Flag("neg", "the tensor has its negative bit set (call .resolve_neg())", opaque=True),
    Flag(
        "quantized",
        "quantized tensors have no plain buffer (call .dequantize() first)",
        opaque=True,
    ),
    Flag("requires_grad", "the tensor requires grad"),
)


@hookimpl
def interop_frameworks() -> list[FrameworkSpec]:
    """PyTorch: torch.Tensor on CPU or CUDA."""
    keys = warm_keys()
    return [
        FrameworkSpec(
            name="torch",
            aliases=("pytorch",),
            array_types=("torch.Tensor",),
            describe=describe,
            key=keys[0],
            aligned_key=keys[1],
            data_ptr=data_ptr,
            example=example,
            dtypes=frozenset(DTYPES),
            flags=_FLAGS,
            package=Package(distribution="torch", install_hint="pip install 'interop-core[torch]'"),
            rules=ImportRules(imports=IMPORTS),
            devices=Devices(visible=_devices, kinds=("cpu", "cuda")),
            casting=Casting(astype=astype, read_dtype=read_dtype),
            diagnostics=Diagnostics(
                constructor="torch.asarray", example_view=example_view, ordinary=(_ORDINARY,)
            ),
        )
    ]


#: The copies and moves take any strided tensor but a DTensor (its own edges gather it).
_DENSE = Needs(no_flags=frozenset())
#: The copies resolve the conjugate and negative bits (copy_ materialises them).
_RESOLVES = frozenset({"conj", "neg"})


@hookimpl
def interop_converters() -> list[ConverterSpec]:
    """The torch copy (contiguous, keeps autograd) and device moves."""
    return [
        ConverterSpec(
            name="torch contiguous copy",
            source="torch",
            target="torch",
            load=_load_copy,
            zero_copy=False,
            accepts=_DENSE,
            devices=frozenset({"cpu", "cuda"}),
            keeps_flags=frozenset({"requires_grad"}),
            array=ArrayEdge(forms=_RESOLVES),
        ),
        ConverterSpec(
            name="Tensor.to(cuda)",
            source="torch",
            target="torch",
            load=_load_to_cuda,
            zero_copy=False,
            accepts=_DENSE,
            devices=frozenset({"cpu", "cuda"}),
            cost=MOVE_COST,
            keeps_flags=frozenset({"requires_grad"}),
            array=ArrayEdge(to_device="cuda", forms=_RESOLVES),
        ),
        ConverterSpec(
            name="Tensor.cpu()",
            source="torch",
            target="torch",
            load=_load_to_cpu,
            zero_copy=False,
            accepts=_DENSE,
            devices=frozenset({"cuda"}),
            cost=MOVE_COST,
            keeps_flags=frozenset({"requires_grad"}),
            array=ArrayEdge(to_device="cpu", forms=_RESOLVES),
        ),
    ]


@hookimpl
def interop_kinds() -> list[KindSpec]:
    """torch.nn.Module: a function of its inputs, its parameters carried along."""
    return [
        KindSpec(
            kind="function",
            framework="torch",
            types=("torch.nn.Module",),
            description="a torch.nn.Module",
        ),
    ]


# torch.compile traces to() through a stand-in registered with dynamo (torch_compile.py): now
# if torch._dynamo is imported, else right after it is (dynamo_hook.py). This imports nothing.
dynamo_hook.arm()
