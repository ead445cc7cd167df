"""DALI pipelines through ``to()`` against DALI's own iterators, measured side by side.

Every comparison is interleaved in one process and reports medians, as in bench.py, whose
report includes this section; each also runs the other side a second time in the same rounds
(A, B, B', A, B, B', ...): the ratio B'/B, the "control", is the noise of that run. One epoch
= a fresh iterator over a freshly built pipeline (so the pipeline build is timed on both
sides), every batch pulled, the last one blocked on. The data: a folder of 2 classes x 64
JPEGs, 64x64, written with pillow (seeded) to a temporary directory; the pipeline reads,
decodes on the CPU and resizes to 32x32, batch 16, 2 threads. Targets:

- one epoch of ``to(pipe_def, "jax", ...)`` <= 1.02 x one epoch of DALI's own
  ``nvidia.dali.plugin.jax.DALIGenericIterator`` over the same ``@pipeline_def``;
- the same for ``"torch"`` and ``nvidia.dali.plugin.pytorch.DALIGenericIterator``.

The ``"tensorflow"`` row (numpy views of DALI's outputs, each batch converted by DLPack when
pulled) is compared with a naive route that copies through numpy (``pipe.run()`` per batch,
``tf.convert_to_tensor(out.as_array())``); it is informational.

Usage: python benchmarks/pipelines.py [--quick]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
from bench import print_sections
from functions import installed, skip_row

from interop_core import to

Row = list[str]
Section = tuple[str, Row, list[Row]]
#: One side of a comparison: make an epoch's iterator; wait for its last batch.
Side = tuple[Callable[[], Iterable[Any]], Callable[[Any], Any]]

#: The image folder: classes, images per class, their side (pixels, RGB JPEG).
CLASSES, PER_CLASS, SIDE = 2, 64, 64
#: What the pipeline makes of them: side after fn.resize, batch size, DALI threads.
OUT_SIDE, BATCH, THREADS = 32, 16, 2
OUTPUT_MAP = ["images", "labels"]
#: Epochs per side, by --quick: single epochs are noisy, a 2% target needs many.
ROUNDS = {False: 65, True: 15}
HEAD = ["target", "to() ms", "compared with", "ms", "ratio", "control", "<= 1.02x"]
#: Lines bench.py adds to its report's notes.
NOTES = [
    "- DALI rows: an epoch is timed from the `to()` call (or the other side's constructor) "
    "to the last batch being ready, so the pipeline build and DALI's first-batch prefetch "
    "are in it on both sides; the teardown of the pipeline after it is not. A 10 ms idle "
    "precedes each epoch. On the 2-core VM single epochs (~30 ms) vary by +-30%, so medians "
    "of many rounds are compared; even so the control column (the compared side against "
    "itself, in the same rounds) shows that a ratio moves by a few percent from run to run: "
    "DALI against DALI measured 0.96-1.03x in repeated runs of 81 epochs.",
    "- What `to()` adds to DALI's own iterator: detecting the pipeline, the cached route "
    "(cached by option names, so `output_map=[...]` need not be hashable), binding this "
    "call's options, and a try/except per batch that turns DALI's errors into ones that say "
    "what to do.",
    "- DALI -> TensorFlow: `to()` gives numpy views of DALI's output buffers and converts "
    "each batch by DLPack (zero-copy where the buffer is 64-byte aligned, which DALI's CPU "
    "outputs were here); the naive route copies each output to numpy (`as_array()`) and "
    "again into a TensorFlow tensor.",
]


def write_images(root: str) -> int:
    """``CLASSES`` folders of ``PER_CLASS`` seeded random JPEGs under ``root``; their count."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    for label in range(CLASSES):
        folder = os.path.join(root, str(label))
        os.makedirs(folder, exist_ok=True)
        for i in range(PER_CLASS):
            pixels = rng.integers(0, 256, (SIDE, SIDE, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(os.path.join(folder, f"{i:03d}.jpg"), quality=90)
    return CLASSES * PER_CLASS


def image_pipeline() -> Any:
    """The ``@pipeline_def`` function: read, decode on the CPU, resize; images and labels."""
    from nvidia.dali import fn, pipeline_def

    @pipeline_def  # type: ignore[misc]
    def images(root: str) -> tuple[Any, Any]:
        jpegs, labels = fn.readers.file(file_root=root, name="Reader")
        decoded = fn.decoders.image(jpegs, device="cpu")
        return fn.resize(decoded, resize_x=OUT_SIDE, resize_y=OUT_SIDE), labels

    return images


def epoch_ms(make: Callable[[], Iterable[Any]], finish: Callable[[Any], Any]) -> float:
    """ms of one epoch: ``make()`` an iterator, pull every batch, ``finish`` the last one
    (block on it). What the iterator leaves behind is freed after the clock stops."""
    started = time.perf_counter()
    batches = make()  # held until the return: the pipeline's shutdown is not timed
    last = None
    for batch in batches:
        last = batch
    finish(last)
    return (time.perf_counter() - started) * 1e3


def interleaved_epochs(sides: list[Side], rounds: int) -> list[float]:
    """Medians (ms per epoch) of ``sides`` timed in alternating rounds, after two warm-up
    epochs each; 10 ms idle before each epoch."""
    for _ in range(2):
        for make, finish in sides:
            epoch_ms(make, finish)
    times: list[list[float]] = [[] for _ in sides]
    for _ in range(rounds):
        for (make, finish), t in zip(sides, times, strict=True):
            time.sleep(0.01)
            t.append(epoch_ms(make, finish))
    return [statistics.median(t) for t in times]


def compare(
    target: str, ours: Side, other: str, theirs: Side, limit: float | None, rounds: int
) -> Row:
    """A row: ``ours`` vs ``theirs``, interleaved with a second run of ``theirs`` (A, B, B',
    A, B, B', ...) whose ratio to the first is the control: the noise of this run."""
    t_ours, t_theirs, t_again = interleaved_epochs([ours, theirs, theirs], rounds)
    ratio = t_ours / t_theirs
    met = "-" if limit is None else ("yes" if ratio <= limit else "NO")
    return [target, f"{t_ours:.1f}", other, f"{t_theirs:.1f}", f"{ratio:.3f}x",
            f"{t_again / t_theirs:.3f}x", met]  # fmt: skip


def _done(batch: Any) -> Any:
    """CPU torch and eager TensorFlow tensors are ready when returned."""
    return batch


def pipeline_rows(root: str, quick: bool) -> list[Row]:
    """A row per target: one epoch of ``to()`` vs DALI's iterator or the naive route."""
    from interop_plugins.kinds.dali import device_id

    pipe_def = image_pipeline()
    build = {"batch_size": BATCH, "num_threads": THREADS, "pipeline_kwargs": {"root": root}}
    iterator = {"output_map": OUTPUT_MAP, "reader_name": "Reader"}
    device = device_id(None)  # what to() builds with: None here (no GPU), else GPU 0

    def built() -> Any:
        """The pipeline the comparison sides build by hand, as to() builds it."""
        return pipe_def(batch_size=BATCH, num_threads=THREADS, device_id=device, root=root)

    def ours(target: str) -> Callable[[], Iterable[Any]]:
        return lambda: to(pipe_def, target, **iterator, **build)

    rounds = ROUNDS[quick]
    rows: list[Row] = []
    width = len(HEAD)
    if installed("jax"):
        import jax
        from nvidia.dali.plugin import jax as dali_jax

        def dali_jax_epoch() -> Iterable[Any]:
            return dali_jax.DALIGenericIterator([built()], OUTPUT_MAP, reader_name="Reader")

        block = jax.block_until_ready
        rows.append(compare("jax", (ours("jax"), block), "DALI's JAX DALIGenericIterator",
                            (dali_jax_epoch, block), 1.02, rounds))  # fmt: skip
    else:
        rows.append(skip_row("jax", "jax is not installed", width))
    if installed("torch"):
        from nvidia.dali.plugin import pytorch as dali_torch

        def dali_torch_epoch() -> Iterable[Any]:
            return dali_torch.DALIGenericIterator([built()], OUTPUT_MAP, reader_name="Reader")

        rows.append(compare("torch", (ours("torch"), _done), "DALI's PyTorch DALIGenericIterator",
                            (dali_torch_epoch, _done), 1.02, rounds))  # fmt: skip
    else:
        rows.append(skip_row("torch", "torch is not installed", width))
    if installed("tensorflow"):
        import tensorflow as tf

        def naive_epoch() -> Iterator[list[Any]]:
            pipe = built()
            pipe.build()
            for _ in range(math.ceil(pipe.epoch_size("Reader") / BATCH)):
                yield [tf.convert_to_tensor(out.as_array()) for out in pipe.run()]

        naive = "naive: `pipe.run()`, `tf.convert_to_tensor(out.as_array())` per output"
        rows.append(compare("tensorflow", (ours("tensorflow"), _done), naive,
                            (naive_epoch, _done), None, rounds))  # fmt: skip
    else:
        rows.append(skip_row("tensorflow", "tensorflow is not installed", width))
    return rows


def sections(quick: bool) -> list[Section]:
    """The DALI pipeline section, as (title, head, rows)."""
    title = (
        f"DALI pipeline -> framework iterators: one epoch of `to(pipe_def, target, "
        f"output_map=..., reader_name='Reader', batch_size={BATCH}, num_threads={THREADS})` "
        "vs DALI's own DALIGenericIterator over `pipe_def(..., device_id=None)` (the "
        "device_id to() picks without a GPU) for jax and torch, "
        "and vs a naive numpy-copy route for tensorflow. "
        f"{CLASSES * PER_CLASS} JPEGs {SIDE}x{SIDE} decoded on the CPU and resized to "
        f"{OUT_SIDE}x{OUT_SIDE}; each epoch builds a fresh pipeline and iterator on both sides "
        "(build included, teardown not), pulls every batch and blocks on the last; "
        "interleaved with a second run of the compared side (control = second / first: the "
        f"noise), medians of {ROUNDS[quick]} epochs each (ms per epoch)"
    )
    if not (installed("nvidia.dali") and installed("PIL")):
        return [(title, HEAD, [skip_row("all", "needs nvidia.dali and pillow", len(HEAD))])]
    with tempfile.TemporaryDirectory(prefix="interop-bench-jpegs-") as root:
        write_images(root)
        rows = pipeline_rows(root, quick)
    return [(title, HEAD, rows)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (a smoke run)")
    args = parser.parse_args()
    started = time.time()
    return print_sections(sections(args.quick), started)


if __name__ == "__main__":
    sys.exit(main())
