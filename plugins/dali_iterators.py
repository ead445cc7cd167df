"""The iterators the DALI plugin returns. Imports DALI and numpy (JAX and torch inside the
functions that need them), so only the plugin's converters import this module."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np
from nvidia.dali.plugin.base_iterator import LastBatchPolicy, _DaliBaseIterator

from interop_core import OptionError

from .dali import dali_error
from .numpy import aligned_copy


@functools.cache
def _checked(base: type) -> type:
    """``base`` (one of DALI's iterators) whose errors at ``next()`` say what to do."""

    class Checked(base):  # type: ignore[misc, valid-type]
        def __next__(self) -> Any:
            try:  # not a context manager: this runs once per batch
                return super().__next__()
            except RuntimeError as exc:
                raise dali_error(exc, self._pipes[0]) from exc

    Checked.__name__ = Checked.__qualname__ = base.__name__
    Checked.__doc__ = base.__doc__
    return Checked


def jax_iterator(pipes: list[Any], **options: Any) -> Any:
    """DALI's JAX DALIGenericIterator over ``pipes``."""
    from nvidia.dali.plugin.jax import DALIGenericIterator

    return _checked(DALIGenericIterator)(pipes, **options)


def torch_iterator(pipes: list[Any], **options: Any) -> Any:
    """DALI's PyTorch DALIGenericIterator over ``pipes``."""
    from nvidia.dali.plugin.pytorch import DALIGenericIterator

    return _checked(DALIGenericIterator)(pipes, **options)


class NumpyBatches(_DaliBaseIterator):  # type: ignore[misc]
    """DALI's outputs as dicts of numpy arrays, with DALI's epochs, ``len()``, ``reset()``
    and last-batch policies. Each array is a view of DALI's output buffer, or a copy when
    the pipeline reuses its buffers (``exec_dynamic=False``), so a batch the user holds
    stays valid after the next one is produced."""

    def __init__(
        self,
        pipe: Any,
        output_map: Sequence[str],
        size: int = -1,
        reader_name: str | None = None,
        auto_reset: bool | str | None = False,
        last_batch_padded: bool = False,
        last_batch_policy: LastBatchPolicy = LastBatchPolicy.FILL,
        prepare_first_batch: bool = True,
    ) -> None:
        self.output_map = list(output_map)
        self._copy = not pipe.exec_dynamic
        super().__init__(
            [pipe], size, reader_name, auto_reset, None, last_batch_padded, last_batch_policy,
            prepare_first_batch=prepare_first_batch,
        )  # fmt: skip
        self._first_batch: dict[str, np.ndarray] | None = None
        if self._prepare_first_batch:
            try:
                self._first_batch = self._next_batch()
                self._ever_consumed = False  # as DALI's iterators: preparing is not consuming
            except StopIteration:
                self._report_no_data_in_pipeline()

    def __next__(self) -> dict[str, np.ndarray]:
        self._ever_consumed = True
        if self._first_batch is not None:
            batch, self._first_batch = self._first_batch, None
            return batch
        try:
            return self._next_batch()
        except RuntimeError as exc:
            raise dali_error(exc, self._pipes[0]) from exc

    def _next_batch(self) -> dict[str, np.ndarray]:
        outputs = self._get_outputs()[0]
        if len(outputs) != len(self.output_map):
            raise OptionError(
                f"output_map={self.output_map!r} names {len(self.output_map)} outputs, but "
                f"the pipeline has {len(outputs)}: give one name per output, in order."
            )
        batch = {n: self._array(out) for n, out in zip(self.output_map, outputs, strict=True)}
        self._schedule_runs()
        self._advance_and_check_drop_last()
        keep = self._partial_size()
        if keep is not None:
            batch = {name: a[:keep] for name, a in batch.items()}
        return batch

    def _array(self, output: Any) -> np.ndarray:
        view = np.asarray(output.as_tensor())  # __array_interface__: the numpy view keeps it
        return aligned_copy(view) if self._copy else view

    def _partial_size(self) -> int | None:
        """How many samples of this batch are real under LastBatchPolicy.PARTIAL (DALI's
        PyTorch iterator's rule, for one pipeline), or None to keep it whole."""
        if self._last_batch_policy != LastBatchPolicy.PARTIAL:
            return None
        if self._reader_name:
            drop, left = self._remove_padded()
            return int(np.min(left)) if np.any(drop) else None
        if self._size > 0 and self._counter > self._size:
            return int(self.batch_size - (self._counter - self._size))
        return None


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

    def reset(self) -> None:
        """Start the next epoch (DALI's rule: only after the current one ended)."""
        for it in self._iterators:
            it.reset()
