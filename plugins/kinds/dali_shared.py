"""What the DALI plugin (:mod:`.dali`) and its iterators (:mod:`.dali_iterators`) share: DALI's
errors as ConversionErrors that say what to do, and the number of CUDA devices DALI sees.

Both modules import this one and it imports neither, so neither imports the other at
module level. DALI is imported only inside :func:`cuda_devices`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from interop_core.plugin import ConversionError, InteropError

#: DALI's message for a batch whose samples differ in shape.
RAGGED = "representable as a tensor"


def cuda_devices() -> int:
    """How many CUDA devices DALI sees (0 without a driver)."""
    from nvidia.dali import backend

    try:
        return int(backend.GetCUDADeviceCount())  # type: ignore[attr-defined]
    except Exception:
        return 0


#: What DALI raises for a pipeline or a batch it cannot make (its iterators assert, too).
DALI_ERRORS = (RuntimeError, ValueError, TypeError, AssertionError)


@contextmanager
def dali_errors(obj: Any) -> Iterator[None]:
    """DALI's errors building or running ``obj`` (a pipeline), as :func:`dali_error` says;
    the library's own errors pass as they are."""
    try:
        yield
    except InteropError:
        raise
    except DALI_ERRORS as exc:
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
    if "Please double-check the `" in text:  # DALI's words for an argument it takes not
        argument = text.split("`")[1]
        return ConversionError(
            f"{name} takes no argument {argument!r}: neither its function nor DALI's "
            "Pipeline has one of that name. pipeline_kwargs= passes the @pipeline_def "
            "function's own arguments: check their names."
        )
    return ConversionError(f"{name} failed: {type(exc).__name__}: {text}")
