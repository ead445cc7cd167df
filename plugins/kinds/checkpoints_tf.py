"""The checkpointer of a tf.data Dataset or iterator: TensorFlow's own serialized iterator
state (what ``tf.train.Checkpoint(iterator=it)`` saves), as bytes.

The state holds the iterator's buffers (a shuffle buffer's elements, prefetched
batches), so its size and the time to take it grow with them. A pipeline with state
TensorFlow cannot save (a Python generator or function, a stateful random op) is refused
when a position is asked for (``position()`` raises CheckpointError). Only
:func:`.checkpoints.checkpointer` imports this module, for a tf.data object (so TensorFlow
is imported already).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from interop_core.plugin import CheckpointError

TF_NAME = "tf.data iterator: its own serialized state (its buffers included)"


def tf_checkpointer(source: Any) -> TFCheckpointer | str:
    """The checkpointer of a tf.data Dataset or iterator (whether TensorFlow can save its
    state is known when it is asked: :meth:`TFCheckpointer.position`)."""
    if not hasattr(source, "_iterator_resource") and not hasattr(source, "_variant_tensor"):
        return (
            f"this tf.data object ({type(source).__qualname__}) cannot be checkpointed: it is "
            "neither a Dataset nor an iterator of one. Convert the tf.data Dataset itself"
        )
    return TFCheckpointer(source)


def _fail() -> int:
    """ExternalStatePolicy.FAIL: refuse state TensorFlow cannot save."""
    import tensorflow as tf

    return int(tf.data.experimental.ExternalStatePolicy.FAIL.value)


def _refusal(exc: Any) -> CheckpointError:
    """TensorFlow's refusal to save a pipeline's state, said as a CheckpointError."""
    found = re.search(r"\} (.*?)(?: \[Op:|$)", exc.message)
    why = found.group(1) if found else exc.message.splitlines()[0]
    return CheckpointError(
        f"This tf.data pipeline cannot record its position: TensorFlow cannot save its state "
        f"({why}).\nA Python generator or function (from_generator, py_function, "
        "numpy_function) or a stateful random op (tf.random.uniform in map) keeps state "
        "outside the pipeline; use Dataset.from_tensor_slices or a file reader, and "
        "tf.random.stateless_* or Dataset.random()."
    )


class TFCheckpointer:
    """tf.data passes: a new iterator of a Dataset (or the iterator given, for one pass);
    a state is that iterator's serialized state, restored into the next pass's iterator."""

    name = TF_NAME
    replayable = False

    def __init__(self, source: Any) -> None:
        self.source = source
        self._it: Any = None
        self._refused: CheckpointError | None = None  # TensorFlow said it cannot save it

    def begin(self, state: dict[str, Any] | None) -> Iterator[Any]:
        import tensorflow as tf

        it = self._it = iter(self.source)
        if state is not None:
            serialized = tf.io.parse_tensor(state["state"], tf.variant)
            handle = it._iterator_resource
            tf.raw_ops.DeserializeIterator(resource_handle=handle, serialized=serialized)
        return it  # type: ignore[no-any-return]

    def position(self, produced: int) -> dict[str, Any]:
        """The pass's iterator state; CheckpointError where TensorFlow cannot save it (its
        check, made when saving, is the only exact one: checking the dataset's graph
        before iterating would serialize the constants it holds, for every user)."""
        import tensorflow as tf

        if self._refused is not None:
            raise self._refused
        try:
            variant = tf.raw_ops.SerializeIterator(
                resource_handle=self._it._iterator_resource, external_state_policy=_fail()
            )
        except tf.errors.OpError as exc:
            self._refused = _refusal(exc)
            raise self._refused from None
        return {"state": bytes(tf.io.serialize_tensor(variant).numpy())}
