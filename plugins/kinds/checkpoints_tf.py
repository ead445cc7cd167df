"""The checkpointer of a tf.data Dataset or iterator: TensorFlow's own serialized iterator
state (what ``tf.train.Checkpoint(iterator=it)`` saves), as bytes.

The state holds the iterator's buffers (a shuffle buffer's elements, prefetched
batches), so its size and the time to take it grow with them. A pipeline with state
TensorFlow cannot save (a Python generator or function, a stateful random op) is refused
when a position is asked for (``position()`` raises CheckpointError).

TensorFlow restores a state into an iterator of whatever dataset it is given (a state of
``range(200)`` restored into ``range(8)`` goes on counting past 8), so a position also
records what its dataset is (its element_spec, cardinality and the classes of its
transformations) and a state of another dataset is refused. TensorFlow parses the state
itself: a state is trusted input (a crafted one can crash TensorFlow; one damaged on the
way is caught by the state's digest, batches.py). Only
:func:`.checkpoints.checkpointer` imports this module, for a tf.data object (so TensorFlow
is imported already).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from interop_core.plugin import CheckpointError

from .checkpoints import MADE_FOR, blob, count, damaged, fields, made_for, restoring

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
        self._identity: dict[str, Any] | None = None
        #: The last state check() parsed and its tensor (begin() does not parse it again).
        self._parsed: tuple[bytes, Any] | None = None

    def begin(self, state: dict[str, Any] | None) -> Iterator[Any]:
        import tensorflow as tf

        if state is not None:
            serialized = self._parse(state)
        it = self._it = iter(self.source)
        if state is not None:
            try:
                tf.raw_ops.DeserializeIterator(
                    resource_handle=it._iterator_resource, serialized=serialized
                )
            except (tf.errors.OpError, ValueError, TypeError) as exc:
                raise restoring("TensorFlow", exc) from exc
        return it  # type: ignore[no-any-return]

    def _parse(self, position: Any) -> Any:
        """The variant tensor of ``position``'s state, checked (parsed once per state)."""
        self.check(position)  # parses the state, or found it parsed already
        assert self._parsed is not None
        return self._parsed[1]

    def _parse_state(self, state: bytes) -> Any:
        import tensorflow as tf

        try:
            variant = tf.io.parse_tensor(state, tf.variant)
        except (tf.errors.OpError, ValueError, TypeError) as exc:
            raise damaged(
                f"its tf.data iterator state is not a serialized iterator ({_first(exc)})"
            ) from exc
        self._parsed = (state, variant)
        return variant

    def identity(self) -> dict[str, Any]:
        """What the source's dataset is (computed once: its element_spec, its cardinality
        and the classes of its transformations, walking its inputs): no graph is serialized,
        so it costs the same for a dataset holding gigabytes of constants."""
        if self._identity is None:
            dataset = getattr(self.source, "_dataset", self.source)  # an iterator's dataset
            kinds: list[str] = []
            todo = [dataset]
            while todo and len(kinds) < 10_000:
                node = todo.pop()
                kinds.append(type(node).__name__)
                inputs = getattr(node, "_inputs", None)
                todo.extend(reversed(inputs() if inputs is not None else []))
            self._identity = {
                "element_spec": repr(dataset.element_spec),
                "cardinality": int(dataset.cardinality()),
                "transformations": kinds,
            }
        return self._identity

    def check(self, position: Any, batches: int | None = None) -> None:
        fields(position, "its position", ("state", MADE_FOR))
        blob(position["state"], "its tf.data iterator state")
        has = self.identity()
        made_for(position, has, "the same transformations of the same data")
        if batches is not None and has["cardinality"] >= 0:
            count(batches, "its count of batches handed out", has["cardinality"], "batches")
        state = position["state"]
        cached = self._parsed
        if cached is None or cached[0] is not state:
            self._parse_state(state)  # at load_state_dict(): a garbled state is refused there

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
        has = self.identity()  # each state its own copy
        made = {**has, "transformations": list(has["transformations"])}
        return {"state": bytes(tf.io.serialize_tensor(variant).numpy()), MADE_FOR: made}


def _first(exc: BaseException) -> str:
    """The first line of ``exc``'s message, without TensorFlow's op prefix."""
    text = getattr(exc, "message", None) or str(exc)
    line = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return re.sub(r"^\{\{[^}]*\}\}\s*", "", line)[:300]
