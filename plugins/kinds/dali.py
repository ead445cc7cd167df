"""NVIDIA DALI: a pipeline becomes an iterator of the target framework's batches.

A built ``Pipeline`` or a ``@pipeline_def`` function goes to JAX and PyTorch through DALI's
own iterators, and to numpy as zero-copy views of DALI's outputs (copies when the pipeline
reuses its buffers: ``exec_dynamic=False``); every other framework is reached from numpy by
converting each batch. ``sharding=`` builds one pipeline per shard and assembles global
``jax.Array``s on the sharding's devices, CPU devices included. A list of built Pipelines
(one per GPU or shard) is batched as DALI's iterators batch it. DALI's iterator options pass
through as options of ``to()``; ``output_map`` is checked against the pipeline's outputs,
and without ``reader_name=`` or ``size=`` the pipeline's only reader ends each epoch (with
no reader or several the iterator never ends an epoch: ``to()`` warns, ``len()`` raises).
The iterators themselves live in ``dali_iterators``, which imports DALI; what both modules
use (DALI's errors as messages that say what to do) lives in ``dali_shared``, so neither
imports the other at module level. This module imports no framework.
"""

from __future__ import annotations

import operator
import os
import sys
import warnings
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from interop_core.plugin import (
    ITERATOR,
    PIPELINE,
    CallContext,
    CheckpointError,
    ConversionError,
    ConverterSpec,
    Device,
    FrameworkSpec,
    Kind,
    KindSpec,
    OptionError,
    Package,
    hookimpl,
)

from .dali_shared import DALI_ERRORS, cuda_devices, dali_errors

#: Loaded once it is imported (docs/plugins.md, "Loaded when needed").
INTEROP_ABOUT = ("nvidia.dali",)

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
#: ``dtype=`` casts the arrays of each batch (a Cast: to() reads it): before JAX sees them.
OPTIONS = ITERATOR_OPTIONS + BUILD_OPTIONS + ("dtype",)


def _is_pipeline_def(obj: Any) -> bool:
    return callable(obj) and getattr(obj, "_is_pipeline_def", False) is True


def _is_pipeline_list(obj: Any) -> bool:
    """A non-empty list or tuple of DALI pipelines: one per GPU or shard, as DALI's own
    iterators take them. Looks only at ``sys.modules``: without DALI imported no object can
    be a Pipeline (and ``@pipeline_def`` functions exist only once it is)."""
    if not isinstance(obj, (list, tuple)) or not obj:
        return False
    module = sys.modules.get("nvidia.dali.pipeline")
    if module is None:
        return False
    cls = module.Pipeline
    return all(isinstance(p, cls) or _is_pipeline_def(p) for p in obj)


def _not_an_array(obj: Any) -> Any:
    raise TypeError("DALI's own tensors are converted through the DLPack protocol")


# -- what the edges share ----------------------------------------------------------------


def check_options(options: Mapping[str, Any]) -> None:
    """The values of the DALI options given (``options``: those passed), checked before
    DALI sees any: an OptionError naming the option, the value and what it takes. It is
    every DALI edge's ``validate``, so ``to()`` and ``explain()`` refuse alike, and the
    converters (:func:`iterator_options`, :func:`pipeline`) read only values DALI takes
    as they mean (DALI itself reads ``size="8"`` as 8, ``True`` as 1, and names an
    ``output_map`` of numbers by their ``str()``)."""
    for name, value in options.items():
        check = _CHECKS.get(name)
        if check is not None and not check[0](value):
            raise OptionError(f"Option {name}={value!r} is not valid: {name}= takes {check[1]}.")
    reader = options.get("reader_name")
    if reader is not None:
        size = options.get("size")
        if size is not None and size != -1:
            raise OptionError(
                f"reader_name={reader!r} and size={size!r} both set the epoch size; pass one "
                "(reader_name= reads it from the reader)."
            )
        if options.get("last_batch_padded"):
            raise OptionError(
                f"reader_name={reader!r} and last_batch_padded=True: with reader_name= the "
                "reader's pad_last_batch decides it. Leave last_batch_padded= out."
            )


def _integer(value: Any, minimum: int) -> bool:
    """Whether ``value`` is an int (numpy's too; never a bool) >= ``minimum``."""
    if isinstance(value, (bool, float)):
        return False
    try:
        return operator.index(value) >= minimum
    except TypeError:
        return False


def _names(value: Any) -> bool:
    return (
        isinstance(value, (list, tuple))
        and len(value) > 0
        and all(isinstance(n, str) and n for n in value)
        and len(set(value)) == len(value)
    )


def _policy(value: Any) -> bool:
    from nvidia.dali.plugin.base_iterator import LastBatchPolicy

    return isinstance(value, LastBatchPolicy) or (
        isinstance(value, str) and value.upper() in LastBatchPolicy.__members__
    )


def _queue_depth(value: Any) -> bool:
    if isinstance(value, dict):
        return set(value) == {"cpu_size", "gpu_size"} and all(
            _integer(v, 1) for v in value.values()
        )
    return _integer(value, 1)


_BOOL = "True or False"
#: For each DALI option: whether a value is one DALI takes as meant, and what it takes.
_CHECKS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "output_map": (
        _names,
        "the names of the pipeline's outputs in order: a list of distinct non-empty "
        "strings, one per output (e.g. output_map=['images', 'labels']); each batch is a "
        "dict of them",
    ),
    "reader_name": (
        lambda v: v is None or (isinstance(v, str) and v != ""),
        "the name of a reader of the pipeline (its name= argument): a non-empty string",
    ),
    "size": (
        lambda v: v is None or (type(v) is int and v == -1) or _integer(v, 1),
        "the number of samples in an epoch: an int >= 1 (-1 or None: not given)",
    ),
    "auto_reset": (
        lambda v: v is None or isinstance(v, bool) or (isinstance(v, str) and v in _RESETS),
        "False, None or 'no' (reset() starts the next epoch), or True or 'yes' (the "
        "iterator resets itself at the end of an epoch)",
    ),
    "last_batch_policy": (
        _policy,
        "'fill', 'drop' or 'partial' (or a nvidia.dali.plugin.base_iterator.LastBatchPolicy)",
    ),
    "last_batch_padded": (lambda v: v is None or isinstance(v, bool), _BOOL),
    "prepare_first_batch": (lambda v: isinstance(v, bool), _BOOL),
    "batch_size": (lambda v: _integer(v, 1), "the batch size: an int >= 1"),
    "num_threads": (lambda v: _integer(v, 1), "DALI's CPU threads: an int >= 1"),
    "seed": (
        lambda v: v is None or (_integer(v, 0) and v < 2**63),
        "the seed of the pipeline's random generators: an int in [0, 2**63) (None: a random one)",
    ),
    "exec_dynamic": (lambda v: isinstance(v, bool), _BOOL),
    "prefetch_queue_depth": (
        _queue_depth,
        "how many batches DALI runs ahead: an int >= 1, or a dict {'cpu_size': n, "
        "'gpu_size': m} (separated queues)",
    ),
    "pipeline_kwargs": (
        lambda v: v is None or (isinstance(v, dict) and all(isinstance(k, str) for k in v)),
        "the @pipeline_def function's own arguments: a dict of them by name",
    ),
}
#: The names DALI's iterators take for ``auto_reset`` (besides None and the bools).
_RESETS: tuple[str, ...] = ("no", "yes")


def iterator_options(ctx: CallContext, partial_ok: bool = True) -> dict[str, Any]:
    """DALI iterator keyword arguments from the options the user gave (DALI's defaults
    for the rest); ``last_batch_policy`` may be a LastBatchPolicy or its name. Every DALI
    edge calls it before it builds a pipeline, so every option's value is checked here
    (:func:`check_options`: a route planned once is not planned, nor validated, again)."""
    from nvidia.dali.plugin.base_iterator import LastBatchPolicy

    check_options(ctx.options)
    given = {k: ctx.options[k] for k in ITERATOR_OPTIONS if k in ctx.options}
    names = given.get("output_map")
    if names is None:
        raise OptionError(
            "A DALI pipeline needs output_map=: the names of its outputs in order, e.g. "
            "to(pipe, 'jax', output_map=['images', 'labels']); each batch is a dict of them."
        )
    given["output_map"] = list(names)
    if "size" in given and given["size"] is None:
        del given["size"]  # not given (DALI's own iterators take no None)
    policy = given.get("last_batch_policy", LastBatchPolicy.FILL)
    if isinstance(policy, str):
        policy = LastBatchPolicy[policy.upper()]
    if policy == LastBatchPolicy.PARTIAL and not partial_ok:
        raise OptionError(
            "DALI's JAX iterator does not return partial last batches (each new batch shape "
            "would recompile a jitted step): pass last_batch_policy='drop', or 'fill' with "
            "pad_last_batch=True in the reader, or convert to 'numpy' for partial batches."
        )
    if "last_batch_policy" in given:
        given["last_batch_policy"] = policy
    return given


def check_outputs(pipes: list[Any], names: list[str]) -> None:
    """Refuse an ``output_map`` that does not name each output of the pipelines once:
    DALI's own iterators drop the extra outputs (JAX) or fail at the first batch."""
    for pipe in pipes:
        count = int(pipe.num_outputs)
        if count == len(names):
            continue
        fixed = (names + [f"output{i}" for i in range(len(names), count)])[:count]
        raise OptionError(
            f"output_map={names!r} names {len(names)} output(s), but the DALI pipeline has "
            f"{count}.\nPass one name per output, in the order the pipeline returns them, "
            f"e.g. output_map={fixed!r}."
        )


def epoch_options(pipes: list[Any], options: dict[str, Any]) -> dict[str, Any]:
    """``options`` with the end of an epoch settled, as DALI's iterators need it.

    ``reader_name=`` must name a reader of every pipeline. Without it and without
    ``size=``, the pipelines' only reader is taken (DALI's own iterators would never end an
    epoch and report ``len() == 0``). A pipeline with no reader, or several, has no epoch
    end: one pipeline is iterated until it stops by itself (an exhausted external_source),
    with a warning; several are refused (DALI cannot run them without an epoch size).
    """
    readers = [dict(pipe.reader_meta()) for pipe in pipes]
    name = options.get("reader_name")
    size = options.get("size", -1)
    if name is not None:
        missing = [i for i, meta in enumerate(readers) if name not in meta]
        if missing:
            have = sorted(readers[missing[0]])
            raise OptionError(
                f"reader_name={name!r} names no reader of the DALI pipeline"
                + (f" {missing[0]}" if len(pipes) > 1 else "")
                + f".\nIts readers: {have or 'none'}; pass one of them (a reader's name= "
                "argument), or leave reader_name= out."
            )
        return options  # with neither size= nor last_batch_padded= (check_options)
    if size not in (-1, None):
        return options  # the user's epoch size, as DALI takes it
    names = {tuple(sorted(meta)) for meta in readers}
    if len(names) == 1 and len(only := next(iter(names))) == 1:
        reader = only[0]
        padded = bool(readers[0][reader]["pad_last_batch"])
        given = options.get("last_batch_padded")
        if given is not None and bool(given) != padded:
            raise OptionError(
                f"last_batch_padded={given!r}, but the pipeline's reader {reader!r} has "
                f"pad_last_batch={padded}: the reader decides it. Leave last_batch_padded= "
                "out."
            )
        rest = {k: v for k, v in options.items() if k != "last_batch_padded"}
        return {**rest, "reader_name": reader}
    found = sorted(set().union(*readers))
    if found:
        what = f"has readers {found}"
        todo = f"reader_name= naming the one whose epoch counts (e.g. {found[0]!r}) or size="
    else:
        what = "has no reader (fn.readers.*) to give an epoch size"
        todo = "size= (the samples in an epoch)"
    if len(pipes) > 1:
        raise OptionError(
            f"{len(pipes)} DALI pipelines and no epoch size (their readers: "
            f"{found or 'none'}).\nDALI iterates several pipelines only with one: pass "
            "reader_name= (a reader in every pipeline) or size= (the samples of all the "
            "pipelines' shards together)."
        )
    warnings.warn(
        f"This DALI pipeline's iterator never ends an epoch and has no len().\nThe pipeline "
        f"{what}: it runs until the pipeline stops by itself (an exhausted external_source) "
        f"or forever. Pass {todo} to end epochs.",
        stacklevel=_caller_level(),
    )
    return options


def _caller_level() -> int:
    """The ``stacklevel`` of the first frame outside interop_core and its plugins (the
    user's ``to()`` call), so a warning points at the user's code."""
    # The package folders (interop_plugins: this file's grandparent), so a regrouping of the
    # tree cannot point the warning into the core's own frames.
    plugins = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    core = os.path.dirname(os.path.abspath(sys.modules["interop_core"].__file__ or "")) + os.sep
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith((plugins, core)):
        frame, level = frame.f_back, level + 1  # type: ignore[assignment]
    return level


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


def pipeline(obj: Any, ctx: CallContext, **overrides: Any) -> Any:
    """A built pipeline: ``obj`` itself, or ``obj`` (a ``@pipeline_def``) called with the build
    options, the chosen device_id and ``overrides`` (a shard's batch_size, shard_id and
    num_shards; a DALI checkpoint to restore)."""
    from nvidia.dali.pipeline import Pipeline

    build = {k: ctx.options[k] for k in BUILD_OPTIONS if k in ctx.options} | overrides
    if isinstance(obj, Pipeline):
        if build or ctx.device is not None:
            given = ", ".join([*build, *(["device"] if ctx.device is not None else [])])
            raise OptionError(
                f"{given} build a pipeline from a @pipeline_def function; this Pipeline is "
                f"made already (batch_size {obj.max_batch_size}, device_id {obj.device_id}). "
                "Pass the @pipeline_def function instead, or make the Pipeline with them."
            )
        pipe = obj
        if obj._enable_checkpointing and not obj._built and obj not in _GRAPHS:
            _GRAPHS[obj] = _graph(obj)
    else:
        kwargs = dict(build.pop("pipeline_kwargs", None) or {})
        build.setdefault("num_threads", min(4, os.cpu_count() or 1))
        with dali_errors(obj):
            pipe = obj(**kwargs, **build, device_id=device_id(ctx.device))
    with dali_errors(obj):
        pipe.build()
    return pipe


def pipelines(obj: Any, ctx: CallContext) -> list[Any]:
    """The built pipelines of ``obj``: one for a Pipeline or a ``@pipeline_def``; each of a
    list or tuple of built Pipelines (one per GPU or shard, as DALI's iterators take)."""
    if not isinstance(obj, (list, tuple)):
        return [pipeline(obj, ctx)]
    defs = [i for i, p in enumerate(obj) if _is_pipeline_def(p)]
    if defs:
        raise OptionError(
            f"Item {defs[0]} of the list of DALI pipelines is a @pipeline_def function, "
            "not a built Pipeline.\nA list takes built Pipelines, one per GPU or shard (each "
            "built with its device_id, shard_id and num_shards); or pass the @pipeline_def "
            "alone, with sharding= for JAX, to have one built per shard."
        )
    pipes = [pipeline(p, ctx) for p in obj]
    sizes = [p.max_batch_size for p in pipes]
    if len(set(sizes)) > 1:
        raise OptionError(
            f"The DALI pipelines have batch sizes {sizes}; DALI iterates several pipelines "
            "only with one batch size. Build them all with the same batch_size."
        )
    return pipes


def prepared(obj: Any, ctx: CallContext, partial_ok: bool = True) -> tuple[list[Any], Any]:
    """The built pipelines of ``obj`` and the iterator options, checked against them."""
    options = iterator_options(ctx, partial_ok)
    pipes = pipelines(obj, ctx)
    with dali_errors(obj):
        check_outputs(pipes, options["output_map"])
        return pipes, epoch_options(pipes, options)


# -- the converters ----------------------------------------------------------------------


def to_jax(obj: Any, ctx: CallContext) -> Any:
    """DALI's JAX iterator over the pipelines (dicts of jax.Arrays; several pipelines:
    stacked on a new first axis, one row per pipeline, as DALI does)."""
    from .dali_iterators import jax_iterator

    pipes, options = prepared(obj, ctx, partial_ok=False)
    with dali_errors(obj):
        it = jax_iterator(pipes, dtype=ctx.option("dtype"), **options)
    return restorable(it, obj, pipes, ctx, lambda p: p, ctx.option("dtype"), **options)


def to_torch(obj: Any, ctx: CallContext) -> Any:
    """DALI's PyTorch iterator over the pipelines (lists with one dict of tensors per
    pipeline)."""
    from .dali_iterators import torch_iterator

    pipes, options = prepared(obj, ctx)
    with dali_errors(obj):
        it = torch_iterator(pipes, dtype=ctx.option("dtype"), **options)
    return restorable(it, obj, pipes, ctx, lambda p: p, ctx.option("dtype"), **options)


def to_numpy(obj: Any, ctx: CallContext) -> Any:
    """Dicts of numpy views of DALI's outputs (copies when DALI reuses its buffers); for a
    list of pipelines, lists with one such dict per pipeline."""
    from .dali_iterators import NumpyBatches

    pipes, options = prepared(obj, ctx)
    # dtype= casts here only when numpy is the target: else the batches' to() casts them.
    cast = ctx.option("dtype") if ctx.target == "numpy" else None
    many = isinstance(obj, (list, tuple))
    with dali_errors(obj):
        it = NumpyBatches(pipes if many else pipes[0], dtype=cast, **options)
    return restorable(it, obj, pipes, ctx, lambda p: p if many else p[0], dtype=cast, **options)


#: The serialized graph of each Pipeline given to ``to()`` unbuilt with
#: ``enable_checkpointing=True`` (what a ``@pipeline_def`` call returns), taken before
#: ``to()`` built it; or why it has none (a string). DALI restores a pipeline from a
#: checkpoint only when it is built, so a restore builds a new one from this graph.
_GRAPHS: weakref.WeakKeyDictionary[Any, bytes | str] = weakref.WeakKeyDictionary()


def _graph(pipe: Any) -> bytes | str:
    """``pipe``'s serialized graph (``pipe`` not built yet), or why it cannot be rebuilt
    from one: an operator DALI cannot serialize (python_function), or an external_source
    callback (Python code, not in the graph: a pipeline built again would wait for data)."""
    try:
        graph = pipe.serialize()
    except DALI_ERRORS as exc:
        return (
            "this DALI pipeline cannot be built again from a checkpoint by interop_core: it "
            "was made before to() (a @pipeline_def called), and DALI cannot serialize its "
            f"graph ({str(exc).splitlines()[0]}). Pass the @pipeline_def function itself to "
            "to() (with batch_size= and pipeline_kwargs=): it is called again with the "
            "checkpoint"
        )
    if pipe._input_callbacks:
        return (
            "this DALI pipeline cannot be built again from a checkpoint by interop_core: it "
            "was made before to() (a @pipeline_def called), and its external_source takes a "
            "Python callback, which its serialized graph does not hold. Pass the "
            "@pipeline_def function itself to to() (with batch_size= and pipeline_kwargs=): "
            "it is called again with the checkpoint"
        )
    return graph  # type: ignore[no-any-return]


def _rebuilt(pipe: Any, graph: bytes, checkpoint: Any) -> Any:
    """A new pipeline of ``pipe``'s ``graph`` and parameters, built from ``checkpoint``."""
    from nvidia.dali.pipeline import Pipeline

    depth = pipe.prefetch_queue_depth
    if isinstance(depth, dict):  # given as cpu_size/gpu_size; read back as cpu/gpu
        depth = {f"{k}_size": depth.get(f"{k}_size", depth.get(k)) for k in ("cpu", "gpu")}
    with dali_errors(pipe):
        new = Pipeline(
            batch_size=pipe.max_batch_size, num_threads=pipe.num_threads,
            device_id=pipe.device_id, seed=pipe.seed, exec_pipelined=pipe.exec_pipelined,
            exec_async=pipe.exec_async, exec_dynamic=pipe.exec_dynamic,
            prefetch_queue_depth=depth, enable_checkpointing=True, checkpoint=checkpoint,
        )  # fmt: skip
        new.deserialize_and_build(graph)
    return new


def restorable(
    it: Any, obj: Any, pipes: list[Any], ctx: CallContext, form: Any, *args: Any, **kwargs: Any
) -> Any:
    """``it`` (made by ``type(it)(form(pipes), *args, **kwargs)``), able to start again
    from DALI checkpoints when its pipelines checkpoint and to() built them: a
    ``@pipeline_def`` is called again with ``checkpoint=``, a Pipeline given unbuilt is
    built again from its serialized graph (:data:`_GRAPHS`) with ``checkpoint=``; the
    iterator is re-made over them, in place (checkpoints.py resumes a converted iterator
    so). Pipelines built before to() cannot be: their graph was not kept."""
    if not it._enable_checkpointing:
        return it
    if _is_pipeline_def(obj):

        def build(i: int, checkpoint: Any) -> Any:
            return pipeline(obj, ctx, checkpoint=checkpoint)

    else:
        graphs = [_GRAPHS.get(p) for p in pipes]
        if any(g is None for g in graphs):
            return it  # built by the caller: checkpoints.py says so
        why = next((g for g in graphs if isinstance(g, str)), "")
        if why:
            it._unrestorable = why
            return it

        def build(i: int, checkpoint: Any) -> Any:
            return _rebuilt(pipes[i], graphs[i], checkpoint)  # type: ignore[arg-type]

    def remake(it: Any, checkpoints: list[Any]) -> None:
        if len(checkpoints) != len(pipes):
            raise CheckpointError(
                f"This state holds the checkpoints of {len(checkpoints)} DALI pipeline(s); "
                f"this iterator runs {len(pipes)}.\nLoad it into an iterator over as many "
                "pipelines, made the same way."
            )
        rebuilt = [build(i, c) for i, c in enumerate(checkpoints)]
        with dali_errors(obj):
            type(it).__init__(it, form(rebuilt), *args, **kwargs)

    it._remake = remake
    return it


def to_jax_sharded(obj: Any, ctx: CallContext) -> Any:
    """One pipeline per shard of ``sharding=``; global jax.Arrays on its devices."""
    from .dali_iterators import ShardedJaxBatches, batch_shards

    if not _is_pipeline_def(obj):
        raise OptionError(
            "sharding= builds one pipeline per shard, so it needs the @pipeline_def function "
            "(taking shard_id and num_shards and passing them to its reader), not a built "
            "Pipeline (nor a list of them: leave sharding= out to iterate those as DALI does)."
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
        check_outputs(pipes, options["output_map"])
        # One iterator per shard, each over one pipeline built from the same function: the
        # first shard's readers stand for all.
        options = epoch_options(pipes[:1], options)
        cast = {"dtype": ctx.option("dtype")}
        return ShardedJaxBatches(pipes, {**options, **cast}, sharding, shards)


# -- declarations ------------------------------------------------------------------------


#: What every DALI edge's iterator does at the end of an epoch (explain() shows it).
EPOCH_NOTE = (
    "an epoch ends where reader_name= (or size=) says; without either, at the end of the "
    "pipeline's only reader; a pipeline with no reader or several has no end of epoch "
    "(to() warns, len() raises)"
)


def _edge(name: str, target: str, load: Any, note: str, **fields: Any) -> ConverterSpec:
    fields.setdefault("options", OPTIONS)
    fields.setdefault("validate", check_options)
    return ConverterSpec(
        name=name, source="dali", target=target, load=load, kind=PIPELINE,
        result_kind=ITERATOR, zero_copy=True, context=True, rerun=False,
        devices=frozenset({"cpu", "cuda"}), note=f"{note}; {EPOCH_NOTE}", **fields,
    )  # fmt: skip


@hookimpl
def interop_frameworks() -> list[FrameworkSpec]:
    """DALI, as the owner of pipelines (its tensors are converted through DLPack)."""
    return [
        FrameworkSpec(
            name="dali", array_types=(), describe=_not_an_array, key=_not_an_array,
            data_ptr=_not_an_array, dtypes=frozenset(), aliases=("nvidia.dali",), target=False,
            package=Package(module="nvidia.dali", distribution="nvidia-dali-cuda120",
                            install_hint=INSTALL_HINT),
        )
    ]  # fmt: skip


@hookimpl
def interop_kinds() -> list[Kind | KindSpec]:
    """The pipeline kind (a pipeline becomes an iterator of the target's batches), built
    pipelines and ``@pipeline_def`` functions."""
    return [
        Kind(
            PIPELINE, becomes=ITERATOR, usage="to(pipe, target, output_map=[...]) -> an iterator"
        ),
        KindSpec(
            kind=PIPELINE, framework="dali", types=("nvidia.dali.pipeline.Pipeline",),
            description="a DALI pipeline",
        ),
        KindSpec(
            kind=PIPELINE, framework="dali", claims=_is_pipeline_def,
            description="a DALI @pipeline_def function",
        ),
        KindSpec(
            kind=PIPELINE, framework="dali", claims=_is_pipeline_list,
            description="a list of DALI pipelines (one per GPU or shard)",
        ),
    ]  # fmt: skip


@hookimpl
def interop_converters() -> list[ConverterSpec]:
    """DALI's JAX and PyTorch iterators, numpy views, and sharded JAX batches."""
    return [
        _edge("DALI JAX iterator", "jax", lambda: to_jax,
              "nvidia.dali.plugin.jax.DALIGenericIterator; batches are dicts of jax.Arrays "
              "sharing DALI's output buffers (copied when exec_dynamic=False); a list of "
              "pipelines gives arrays stacked on a new first axis, one row per pipeline"),
        _edge("DALI PyTorch iterator", "torch", lambda: to_torch,
              "nvidia.dali.plugin.pytorch.DALIGenericIterator; each batch is a list with one "
              "dict of tensors per pipeline (batch[0]['name'])"),
        _edge("DALI outputs as numpy", "numpy", lambda: to_numpy,
              "batches are dicts of numpy views of DALI's outputs; copies when the pipeline "
              "reuses its buffers (exec_dynamic=False); a list of pipelines gives lists with "
              "one dict per pipeline", cost=0.5),
        _edge("one DALI pipeline per shard", "jax", lambda: to_jax_sharded,
              "sharding=: one pipeline per shard (shard_id, num_shards), each shard put on "
              "its devices; batches are global jax.Arrays",
              opt_in="sharding", cost=0.5, options=(*OPTIONS, "sharding")),
    ]  # fmt: skip
