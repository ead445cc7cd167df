"""NVIDIA DALI: a pipeline becomes an iterator of the target framework's batches.

A built ``Pipeline`` or a ``@pipeline_def`` function goes to JAX and PyTorch through DALI's
own iterators, and to numpy as zero-copy views of DALI's outputs (copies when the pipeline
reuses its buffers: ``exec_dynamic=False``); every other framework is reached from numpy by
converting each batch. ``sharding=`` builds one pipeline per shard and assembles global
``jax.Array``s on the sharding's devices, CPU devices included. DALI's iterator options pass
through as options of ``to()``. The iterators themselves live in ``dali_iterators``, which
imports DALI: this module imports no framework.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from interop_core import (
    CallContext,
    ConversionError,
    ConverterSpec,
    Device,
    FrameworkSpec,
    KindSpec,
    OptionError,
    hookimpl,
)
from interop_core.specs import ITERATOR, PIPELINE

INSTALL_HINT = "pip install nvidia-dali-cuda120 (nvidia-dali-cuda130 for CUDA 13)"

#: Options of DALI's iterators, passed through as DALI defines them.
ITERATOR_OPTIONS = (
    "output_map", "reader_name", "size", "auto_reset", "last_batch_policy",
    "last_batch_padded", "prepare_first_batch",
)  # fmt: skip
#: Options that build a pipeline from a ``@pipeline_def`` function (``pipeline_kwargs``: the
#: function's own arguments).
BUILD_OPTIONS = (
    "batch_size", "num_threads", "seed", "exec_dynamic", "prefetch_queue_depth",
    "pipeline_kwargs",
)  # fmt: skip
OPTIONS = ITERATOR_OPTIONS + BUILD_OPTIONS

#: DALI's message for a batch whose samples differ in shape.
RAGGED = "representable as a tensor"


def _is_pipeline_def(obj: Any) -> bool:
    return callable(obj) and getattr(obj, "_is_pipeline_def", False) is True


def _not_an_array(obj: Any) -> Any:
    raise TypeError("DALI's own tensors are converted through the DLPack protocol")


# -- what the edges share ----------------------------------------------------------------


def iterator_options(ctx: CallContext, partial_ok: bool = True) -> dict[str, Any]:
    """DALI iterator keyword arguments from the options the user gave (DALI's defaults
    for the rest); ``last_batch_policy`` may be a LastBatchPolicy or its name."""
    from nvidia.dali.plugin.base_iterator import LastBatchPolicy

    given = {k: ctx.options[k] for k in ITERATOR_OPTIONS if k in ctx.options}
    names = given.get("output_map")
    if names is None or isinstance(names, str) or not names:
        raise OptionError(
            "A DALI pipeline needs output_map=: the names of its outputs in order, e.g. "
            "to(pipe, 'jax', output_map=['images', 'labels']); each batch is a dict of them."
        )
    names = [str(n) for n in names]
    if len(set(names)) != len(names):
        raise OptionError(f"output_map={names!r} repeats a name; each must be distinct.")
    given["output_map"] = names
    policy = given.get("last_batch_policy", LastBatchPolicy.FILL)
    if isinstance(policy, str):
        try:
            policy = LastBatchPolicy[policy.upper()]
        except KeyError:
            raise OptionError(
                f"last_batch_policy={policy!r}: expected 'fill', 'drop' or 'partial' "
                "(or a nvidia.dali.plugin.base_iterator.LastBatchPolicy)."
            ) from None
    if policy == LastBatchPolicy.PARTIAL and not partial_ok:
        raise OptionError(
            "DALI's JAX iterator does not return partial last batches (each new batch shape "
            "would recompile a jitted step): pass last_batch_policy='drop', or 'fill' with "
            "pad_last_batch=True in the reader, or convert to 'numpy' for partial batches."
        )
    if "last_batch_policy" in given:
        given["last_batch_policy"] = policy
    return given


def cuda_devices() -> int:
    """How many CUDA devices DALI sees (0 without a driver)."""
    from nvidia.dali import backend

    try:
        return int(backend.GetCUDADeviceCount())  # type: ignore[attr-defined]
    except Exception:
        return 0


def device_id(device: Device | None) -> int | None:
    """The ``device_id`` a pipeline is built with: the device asked for, else the first GPU
    when there is one, else None (a CPU-only pipeline; DALI's own default, 0, fails
    without a GPU)."""
    if device is None:
        return 0 if cuda_devices() else None
    if device.kind == "cpu":
        return None
    if device.index >= cuda_devices():
        raise ConversionError(
            f"device={str(device)!r} was asked for, but DALI sees {cuda_devices()} CUDA "
            "device(s). Leave device= out for a CPU pipeline (device_id=None)."
        )
    return device.index


def pipeline(obj: Any, ctx: CallContext, **overrides: int) -> Any:
    """A built pipeline: ``obj`` itself, or ``obj`` (a ``@pipeline_def``) called with the build
    options, the chosen device_id and ``overrides`` (a shard's batch_size, shard_id and
    num_shards)."""
    from nvidia.dali.pipeline import Pipeline

    build = {k: ctx.options[k] for k in BUILD_OPTIONS if k in ctx.options} | overrides
    if isinstance(obj, Pipeline):
        if build or ctx.device is not None:
            given = ", ".join([*build, *(["device"] if ctx.device is not None else [])])
            raise OptionError(
                f"{given} build a pipeline from a @pipeline_def function; this Pipeline is "
                f"built already (batch_size {obj.max_batch_size}, device_id {obj.device_id}). "
                "Pass the @pipeline_def function instead, or build the Pipeline with them."
            )
        pipe = obj
    else:
        kwargs = dict(build.pop("pipeline_kwargs", None) or {})
        build.setdefault("num_threads", min(4, os.cpu_count() or 1))
        with dali_errors(obj):
            pipe = obj(**kwargs, **build, device_id=device_id(ctx.device))
    with dali_errors(obj):
        pipe.build()
    return pipe


@contextmanager
def dali_errors(obj: Any) -> Iterator[None]:
    """DALI's errors building or running ``obj`` (a pipeline), as :func:`dali_error` says."""
    try:
        yield
    except (RuntimeError, ValueError, TypeError, AssertionError) as exc:
        raise dali_error(exc, obj) from exc


def dali_error(exc: Exception, obj: Any) -> ConversionError:
    """DALI's error ``exc`` as a ConversionError that says what to do: a pipeline that needs
    a GPU that is not there; a batch of differently shaped samples; a missing batch size;
    a ``@pipeline_def`` that cannot be sharded."""
    text = str(exc)
    # A @pipeline_def has a name; a built Pipeline does not.
    name = (
        f"DALI pipeline {obj.__qualname__!r}" if hasattr(obj, "__qualname__") else "DALI pipeline"
    )
    if RAGGED in text:
        return ConversionError(
            f"{name} produced a batch whose samples differ in shape, which no framework's "
            "array can hold. Give the samples one shape in the pipeline (fn.resize, "
            "fn.crop, fn.pad) before its outputs."
        )
    if "CUDA" in text or "GPU" in text:
        return ConversionError(
            f"{name} needs a GPU, and DALI sees {cuda_devices()} CUDA device(s) here. On a "
            "machine without one, use CPU operators only (device='cpu', no .gpu(), no "
            "device='mixed'), built with device_id=None (what to() chooses then). DALI "
            f"said: {text.splitlines()[0]}"
        )
    if "batch size must be set" in text:
        return ConversionError(f"{name} has no batch size: pass batch_size= to to().")
    if "shard_id" in text or "num_shards" in text:
        return ConversionError(
            f"{name} cannot be sharded: sharding= calls it with shard_id= and num_shards=; "
            f"give it those parameters and pass them to its reader. DALI said: {text}"
        )
    return ConversionError(f"{name} failed: {type(exc).__name__}: {text}")


# -- the converters ----------------------------------------------------------------------


def to_jax(obj: Any, ctx: CallContext) -> Any:
    """DALI's JAX iterator over the pipeline (dicts of jax.Arrays)."""
    from .dali_iterators import jax_iterator

    options = iterator_options(ctx, partial_ok=False)
    pipe = pipeline(obj, ctx)
    with dali_errors(obj):
        return jax_iterator([pipe], **options)


def to_torch(obj: Any, ctx: CallContext) -> Any:
    """DALI's PyTorch iterator over the pipeline (lists with one dict of tensors)."""
    from .dali_iterators import torch_iterator

    options = iterator_options(ctx)
    pipe = pipeline(obj, ctx)
    with dali_errors(obj):
        return torch_iterator([pipe], **options)


def to_numpy(obj: Any, ctx: CallContext) -> Any:
    """Dicts of numpy views of DALI's outputs (copies when DALI reuses its buffers)."""
    from .dali_iterators import NumpyBatches

    options = iterator_options(ctx)
    pipe = pipeline(obj, ctx)
    with dali_errors(obj):
        return NumpyBatches(pipe, **options)


def to_jax_sharded(obj: Any, ctx: CallContext) -> Any:
    """One pipeline per shard of ``sharding=``; global jax.Arrays on its devices."""
    from .dali_iterators import ShardedJaxBatches, batch_shards

    if not _is_pipeline_def(obj):
        raise OptionError(
            "sharding= builds one pipeline per shard, so it needs the @pipeline_def function "
            "(taking shard_id and num_shards and passing them to its reader), not a built "
            "Pipeline."
        )
    sharding = ctx.options["sharding"]
    batch_size = ctx.options.get("batch_size")
    if not isinstance(batch_size, int) or batch_size <= 0:
        raise OptionError(
            "sharding= needs batch_size=: the global batch size, split evenly over the shards."
        )
    shards = batch_shards(sharding, batch_size)
    options = iterator_options(ctx, partial_ok=False)
    n = len(shards)
    per_shard = batch_size // n
    pipes = [pipeline(obj, ctx, batch_size=per_shard, shard_id=i, num_shards=n) for i in range(n)]
    with dali_errors(obj):
        return ShardedJaxBatches(pipes, options, sharding, shards)


# -- declarations ------------------------------------------------------------------------


def _edge(name: str, target: str, load: Any, note: str, **fields: Any) -> ConverterSpec:
    fields.setdefault("options", OPTIONS)
    return ConverterSpec(
        name=name, source="dali", target=target, load=load, kind=PIPELINE,
        result_kind=ITERATOR, zero_copy=True, context=True, rerun=False,
        devices=frozenset({"cpu", "cuda"}), note=note, **fields,
    )  # fmt: skip


@hookimpl
def interop_frameworks() -> list[FrameworkSpec]:
    """DALI, as the owner of pipelines (its tensors are converted through DLPack)."""
    return [
        FrameworkSpec(
            name="dali", array_types=(), describe=_not_an_array, key=_not_an_array,
            data_ptr=_not_an_array, dtypes=frozenset(), aliases=("nvidia.dali",),
            module="nvidia.dali", distribution="nvidia-dali-cuda120",
            install_hint=INSTALL_HINT, target=False,
        )
    ]  # fmt: skip


@hookimpl
def interop_kinds() -> list[KindSpec]:
    """Built pipelines and ``@pipeline_def`` functions; both become iterators."""
    return [
        KindSpec(
            kind=PIPELINE, framework="dali", types=("nvidia.dali.pipeline.Pipeline",),
            description="a DALI pipeline", becomes=ITERATOR,
        ),
        KindSpec(
            kind=PIPELINE, framework="dali", claims=_is_pipeline_def,
            description="a DALI @pipeline_def function", becomes=ITERATOR,
        ),
    ]  # fmt: skip


@hookimpl
def interop_converters() -> list[ConverterSpec]:
    """DALI's JAX and PyTorch iterators, numpy views, and sharded JAX batches."""
    return [
        _edge("DALI JAX iterator", "jax", lambda: to_jax,
              "nvidia.dali.plugin.jax.DALIGenericIterator; batches are dicts of jax.Arrays "
              "sharing DALI's output buffers (copied when exec_dynamic=False)"),
        _edge("DALI PyTorch iterator", "torch", lambda: to_torch,
              "nvidia.dali.plugin.pytorch.DALIGenericIterator; each batch is a list with one "
              "dict of tensors per pipeline (batch[0]['name'])"),
        _edge("DALI outputs as numpy", "numpy", lambda: to_numpy,
              "batches are dicts of numpy views of DALI's outputs; copies when the pipeline "
              "reuses its buffers (exec_dynamic=False)", cost=0.5),
        _edge("one DALI pipeline per shard", "jax", lambda: to_jax_sharded,
              "sharding=: one pipeline per shard (shard_id, num_shards), each shard put on "
              "its devices; batches are global jax.Arrays",
              opt_in="sharding", cost=0.5, options=(*OPTIONS, "sharding")),
    ]  # fmt: skip
