"""The iterators the DALI plugin returns. Imports DALI and numpy (JAX and torch inside the
functions that need them), so only the plugin's converters import this module."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from nvidia.dali.plugin.base_iterator import LastBatchPolicy, _DaliBaseIterator

from interop_core.plugin import Cast, ConversionError, InteropError, OptionError

from ..frameworks.jax import X64
from ..frameworks.numpy import aligned_copy, dtype_name
from ..frameworks.numpy import astype as numpy_astype
from .dali_shared import DALI_ERRORS, dali_error


def endless(it: Any) -> bool:
    """Whether DALI iterator ``it`` has no epoch size (no reader, size=-1)."""
    return it._size < 0 and not it._reader_name  # type: ignore[no-any-return]


def no_length() -> OptionError:
    """The error ``len()`` raises for an iterator without an end of epoch: a TypeError, as
    for a generator, so ``list()`` and ``tqdm`` treat it as having no length (DALI's own
    iterators say 0, which reads as an empty epoch)."""
    return OptionError(
        "This iterator over a DALI pipeline never ends an epoch, so it has no len().\n"
        "The pipeline has no reader, or several, and neither reader_name= nor size= was "
        "given. Pass reader_name= (the reader whose epoch counts) or size= to to()."
    )


class _EpochLength:
    """``len()`` for DALI iterators: it raises where the epoch has no end; and ``bool()``
    is always True (not ``len() != 0``: an iterator is true, with or without a length)."""

    def __len__(self) -> int:
        if endless(self):
            raise no_length()
        return int(super().__len__())  # type: ignore[misc]

    def __bool__(self) -> bool:
        return True

    #: Makes this iterator again, in place, over pipelines built again from DALI
    #: checkpoints (one per pipeline): set by the converter that built the pipelines from a
    #: @pipeline_def with enable_checkpointing=True (DALI restores a pipeline's readers and
    #: random generators only when it is built). checkpoints.py resumes through it.
    _remake: Callable[[Any, list[Any]], None] | None = None
    #: Why ``_remake`` is None though the pipelines checkpoint and to() built them (a graph
    #: DALI cannot serialize; an external_source callback); "" otherwise.
    _unrestorable = ""

    def _restore(self, checkpoints: list[Any]) -> None:
        """Start where ``checkpoints()`` of an iterator made the same way left off."""
        assert self._remake is not None  # checkpoints.py asks only restorable iterators
        self._remake(self, checkpoints)

    #: Just restored by load_state_dict(): the next iter() goes on from there (DALI's own
    #: iter() of an iterator restored at the end of an epoch would start the next one).
    _restored = False

    def __iter__(self) -> Any:
        if self._restored:
            self._restored = False
            return self
        return super().__iter__()  # type: ignore[misc]

    def state_dict(self) -> dict[str, Any]:
        """Where this iterator is (DALI's checkpoint of each pipeline), a plain picklable
        dict for :meth:`load_state_dict` of an iterator converted the same way (a
        ``@pipeline_def`` with ``enable_checkpointing=True``); else a CheckpointError."""
        from .batches import checkpointable, make_state
        from .checkpoints import checkpointer

        cp = checkpointable(checkpointer(self))
        return make_state(cp, 0, cp.position(0))  # DALI's checkpoints hold the count

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Go on where ``state`` (from :meth:`state_dict`) says: the pipelines are built
        again from its checkpoints, and the next batch is the one after it."""
        from .batches import checkpointable, read_state
        from .checkpoints import DaliCheckpointer, checkpointer

        cp = checkpointable(checkpointer(self))
        _, position = read_state(cp, state)  # checked: a damaged state is refused here
        assert isinstance(cp, DaliCheckpointer)
        cp.restore(position)  # DALI's refusal of a checkpoint, as a CheckpointError
        self._restored = True


@functools.cache
def _checked(base: type) -> type:
    """``base`` (one of DALI's iterators) whose errors at ``next()`` say what to do, and
    whose ``len()`` raises where the epoch has no end."""

    class Checked(_EpochLength, base):  # type: ignore[misc, valid-type]
        def __next__(self) -> Any:
            try:  # not a context manager: this runs once per batch
                return super().__next__()
            except InteropError:
                raise
            except DALI_ERRORS as exc:  # an assertion of DALI's iterator at a later batch too
                raise dali_error(exc, self._pipes[0]) from exc

    Checked.__name__ = Checked.__qualname__ = base.__name__
    Checked.__doc__ = base.__doc__
    return Checked


def jax_iterator(pipes: list[Any], dtype: Cast | None = None, **options: Any) -> Any:
    """DALI's JAX DALIGenericIterator over ``pipes``; ``dtype=`` casts outputs before JAX
    sees them."""
    return _jax_class()(pipes, dtype, **options)


def torch_iterator(pipes: list[Any], dtype: Cast | None = None, **options: Any) -> Any:
    """DALI's PyTorch DALIGenericIterator over ``pipes``; ``dtype=`` casts its tensors."""
    return _torch_class()(pipes, dtype, **options)


def dali_dtype(dtype: Any) -> str:
    """The canonical name of a DALIDataType (``types.INT64``: "int64")."""
    name = str(dtype.name)
    return _DALI_FLOATS.get(name, name.lower())


#: DALIDataType names that are not the canonical name in upper case.
_DALI_FLOATS = {"FLOAT": "float32", "FLOAT16": "float16", "FLOAT64": "float64"}


@functools.cache
def _jax_class() -> type:
    """DALI's JAX iterator (checked) whose outputs ``dtype=`` casts in numpy before JAX
    sees them, and which refuses a 64-bit output JAX would narrow (x64 off)."""
    from nvidia.dali.plugin.jax import DALIGenericIterator

    class JaxIterator(_checked(DALIGenericIterator)):  # type: ignore[misc]
        def __init__(self, pipes: list[Any], dtype: Cast | None, **options: Any) -> None:
            self._cast = dtype  # before DALI's __init__, which may run the first batch
            super().__init__(pipes, **options)

        def _gather_outputs_for_category(self, outputs: Any, category: int) -> Any:
            name = dali_dtype(outputs[0][category].dtype)
            wanted = None if self._cast is None else self._cast.wanted(name)
            if (wanted or name) in X64.dtypes and not X64.read():
                raise OptionError(
                    f"DALI output {self.output_map[category]!r} is {name}"
                    + (f", cast to {wanted} by dtype=" if wanted else "")
                    + f": {X64.reason.format(dtype=wanted or name)}."
                )
            if wanted is None:
                return super()._gather_outputs_for_category(outputs, category)
            return [_jax_cast(out[category].as_tensor(), wanted) for out in outputs]

    JaxIterator.__name__ = JaxIterator.__qualname__ = DALIGenericIterator.__name__
    JaxIterator.__doc__ = DALIGenericIterator.__doc__
    return JaxIterator


def _jax_cast(tensor: Any, dtype: str) -> Any:
    """A DALI tensor as a jax.Array of canonical ``dtype``: on the host, cast in numpy into
    an aligned array that JAX then shares; on a GPU, cast by JAX (64-bit sources were
    refused above, so JAX sees the values unchanged)."""
    import jax

    if hasattr(tensor, "__array_interface__"):  # TensorCPU
        return jax.dlpack.from_dlpack(numpy_astype(np.asarray(tensor), dtype))
    return jax.dlpack.from_dlpack(tensor).astype(dtype)


@functools.cache
def _torch_class() -> type:
    """DALI's PyTorch iterator (checked) whose tensors ``dtype=`` casts (in torch, after
    DALI made them: torch holds every DALI dtype)."""
    from nvidia.dali.plugin.pytorch import DALIGenericIterator
    from nvidia.dali.plugin.pytorch.torch_utils import to_torch_type

    from ..frameworks.torch import astype, dtype_name

    class TorchIterator(_checked(DALIGenericIterator)):  # type: ignore[misc]
        def __init__(self, pipes: list[Any], dtype: Cast | None, **options: Any) -> None:
            self._cast = dtype
            self._types_checked = False  # the outputs' dtypes, at the first batch
            super().__init__(pipes, **options)

        def _get_outputs(self) -> Any:
            outputs = super()._get_outputs()
            if not self._types_checked:  # a pipeline's output dtypes are fixed: once
                for pipe_outputs in outputs:
                    for name, out in zip(self.output_map, pipe_outputs, strict=False):
                        if out.dtype not in to_torch_type:
                            raise _no_torch_type(name, out.dtype, to_torch_type)
                self._types_checked = True
            return outputs

        def __next__(self) -> Any:
            batch = super().__next__()
            cast = self._cast
            if cast is None:
                return batch
            return [
                {k: _cast(t, cast.wanted(dtype_name(t.dtype)), astype) for k, t in d.items()}
                for d in batch
            ]

    TorchIterator.__name__ = TorchIterator.__qualname__ = DALIGenericIterator.__name__
    TorchIterator.__doc__ = DALIGenericIterator.__doc__
    return TorchIterator


def _no_torch_type(name: str, dtype: Any, known: Any) -> ConversionError:
    """The error for DALI output ``name`` of ``dtype``, which DALI's PyTorch iterator has
    no torch type for (it raised a bare KeyError: uint16, uint32, uint64)."""
    have = ", ".join(sorted(dali_dtype(t) for t in known))
    return ConversionError(
        f"DALI output {name!r} is {dali_dtype(dtype)}, which DALI's PyTorch iterator cannot "
        f"give (it makes torch tensors of {have}).\nCast it in the pipeline (e.g. "
        "fn.cast(x, dtype=types.INT64)), or convert the pipeline to 'numpy' and each batch "
        "to torch (to(batch, 'torch'))."
    )


def _cast(x: Any, wanted: str | None, astype: Any) -> Any:
    return x if wanted is None else astype(x, wanted)


class NumpyBatches(_EpochLength, _DaliBaseIterator):  # type: ignore[misc]
    """DALI's outputs as dicts of numpy arrays, with DALI's epochs, ``len()``, ``reset()``
    and last-batch policies. Each array is a view of DALI's output buffer, or a copy when
    the pipeline reuses its buffers (``exec_dynamic=False``), so a batch the user holds
    stays valid after the next one is produced. Over a list of pipelines each batch is a
    list with one dict per pipeline, as DALI's PyTorch iterator gives (a last batch under
    PARTIAL may be shorter, or have fewer dicts, as there)."""

    def __init__(
        self,
        pipes: Any,
        output_map: Sequence[str],
        size: int = -1,
        reader_name: str | None = None,
        auto_reset: bool | str | None = False,
        last_batch_padded: bool = False,
        last_batch_policy: LastBatchPolicy = LastBatchPolicy.FILL,
        prepare_first_batch: bool = True,
        dtype: Cast | None = None,
    ) -> None:
        self.output_map = list(output_map)
        self._cast = dtype  # dtype=: each output cast in numpy (a copy) when it names it
        self._many = isinstance(pipes, list)  # a list gives lists of dicts, as DALI's
        pipes = pipes if self._many else [pipes]
        self._copy = [not p.exec_dynamic for p in pipes]
        super().__init__(
            pipes, size, reader_name, auto_reset, None, last_batch_padded, last_batch_policy,
            prepare_first_batch=prepare_first_batch,
        )  # fmt: skip
        self._first_batch: Any = None
        if self._prepare_first_batch:
            try:
                self._first_batch = self._next_batch()
                self._ever_consumed = False  # as DALI's iterators: preparing is not consuming
            except StopIteration:
                self._report_no_data_in_pipeline()

    def __next__(self) -> Any:
        self._ever_consumed = True
        if self._first_batch is not None:
            batch, self._first_batch = self._first_batch, None
            return batch
        try:
            return self._next_batch()
        except InteropError:
            raise
        except DALI_ERRORS as exc:
            raise dali_error(exc, self._pipes[0]) from exc

    def _next_batch(self) -> Any:
        batches = [
            {n: self._array(out, i) for n, out in zip(self.output_map, outs, strict=True)}
            for i, outs in enumerate(self._get_outputs())
        ]
        self._schedule_runs()
        self._advance_and_check_drop_last()
        batches = self._partial(batches)
        return batches if self._many else batches[0]

    def _array(self, output: Any, pipe: int) -> np.ndarray:
        view = np.asarray(output.as_tensor())  # __array_interface__: the numpy view keeps it
        wanted = None if self._cast is None else self._cast.wanted(dtype_name(view.dtype))
        if wanted is not None:
            return numpy_astype(view, wanted)
        return aligned_copy(view) if self._copy[pipe] else view

    def _partial(self, batches: list[dict[str, np.ndarray]]) -> list[dict[str, np.ndarray]]:
        """The real samples of each pipeline's batch under LastBatchPolicy.PARTIAL: DALI's
        PyTorch iterator's rule (with a reader, each pipeline's batch is cut to what is
        left of its shard; without, the last pipelines' batches past ``size`` go)."""
        if self._last_batch_policy != LastBatchPolicy.PARTIAL:
            return batches
        if self._reader_name:
            drop, left = self._remove_padded()
            if not np.any(drop):
                return batches
            return [
                {name: a[: max(0, int(n))] for name, a in b.items()}
                for b, n in zip(batches, np.broadcast_to(left, len(batches)), strict=True)
            ]
        if self._size > 0 and self._counter > self._size:
            wanted = self._num_gpus * self.batch_size - (self._counter - self._size)
            pipes = -(-wanted // self.batch_size)  # the pipelines that still hold samples
            last = wanted % self.batch_size or self.batch_size
            batches = batches[:pipes]
            batches[-1] = {name: a[:last] for name, a in batches[-1].items()}
        return batches


def batch_shards(sharding: Any, batch_size: int) -> list[list[Any]]:
    """The devices of each shard of the batch axis under ``sharding``, shard by shard; the
    other axes must not be split."""
    import jax

    if not isinstance(sharding, jax.sharding.Sharding):
        raise OptionError(f"sharding= must be a jax.sharding.Sharding, not {type(sharding)!r}.")
    spec = getattr(sharding, "spec", ())
    if any(axis is not None for axis in tuple(spec)[1:]):
        raise OptionError(
            f"sharding {spec} splits an axis other than the batch axis; a DALI pipeline "
            "shards batches only: split the first axis only, e.g. PartitionSpec('data')."
        )
    by_start: dict[int, list[Any]] = {}
    for device, index in sharding.addressable_devices_indices_map((batch_size,)).items():
        rows = index[0] if index else slice(None)  # None: the device holds everything
        start, stop, _ = rows.indices(batch_size)
        by_start.setdefault(start, []).append((stop - start, device))
    sizes = {n for devices in by_start.values() for n, _ in devices}
    if len(sizes) != 1:
        raise OptionError(
            f"batch_size={batch_size} does not split evenly over the {len(by_start)} shards "
            "of the sharding: pass a multiple of the shard count."
        )
    return [[d for _, d in by_start[s]] for s in sorted(by_start)]


class ShardedJaxBatches:
    """Batches of one DALI pipeline per shard, assembled into global jax.Arrays laid out by
    ``sharding``: each shard's arrays are put on that shard's devices (DALI's own JAX
    iterator leaves every shard on the first device when the devices are CPUs)."""

    def __init__(
        self, pipes: list[Any], options: dict[str, Any], sharding: Any, shards: list[list[Any]]
    ) -> None:
        self._iterators = [jax_iterator([p], **options) for p in pipes]
        self._sharding = sharding
        self._shards = shards

    def __iter__(self) -> ShardedJaxBatches:
        for it in self._iterators:
            iter(it)  # DALI's iterators start their next epoch here
        return self

    def __next__(self) -> dict[str, Any]:
        import jax

        parts = [next(it) for it in self._iterators]
        batch = {}
        for name in parts[0]:
            local = [p[name] for p in parts]
            shape = (local[0].shape[0] * len(local), *local[0].shape[1:])
            arrays = [
                jax.device_put(shard, device)
                for shard, devices in zip(local, self._shards, strict=True)
                for device in devices
            ]
            batch[name] = jax.make_array_from_single_device_arrays(shape, self._sharding, arrays)
        return batch

    def __len__(self) -> int:
        return len(self._iterators[0])

    def __bool__(self) -> bool:
        return True  # not len() != 0: an iterator is true, with or without a length

    def reset(self) -> None:
        """Start the next epoch (DALI's rule: only after the current one ended)."""
        for it in self._iterators:
            it.reset()
