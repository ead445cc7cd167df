"""Train a tiny classifier on a folder of images fed by a DALI pipeline through interop_core.

1. Writes a small image folder (2 classes x 64 JPEGs, 32x32; class 1 is brighter than
   class 0, so the task is learnable), unless ``--data DIR`` already holds class folders.
2. Defines a CPU-only DALI ``@pipeline_def``: files read in a seeded random order, decoded on
   the CPU, resized, normalized to float32 in [-1, 1].
3. ``interop_core.to(pipeline_def, "jax", ...)`` gives DALI's JAX iterator (``--framework
   torch``: its PyTorch iterator, whose batches are ``[dict]``), which feeds logistic
   regression on the mean-pooled pixels, trained with plain SGD for a few epochs.

It prints a step counter within each epoch, a line per epoch, then ``final accuracy: X``
(on the training images) and ``first loss: A last loss: B`` (of the first and last step).

Usage: python examples/train_on_images.py [--framework jax|torch] [--data DIR] [--epochs N]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

import interop_core

CLASSES, PER_CLASS, SIDE = 2, 64, 32
#: Side of the images the pipeline gives, batch size, learning rate, DALI threads, seed.
OUT_SIDE, BATCH, LR, THREADS, SEED = 16, 16, 1.0, 2, 42
OUTPUT_MAP = ["images", "labels"]


def write_images(root: str) -> None:
    """``CLASSES`` folders (``0``, ``1``) of ``PER_CLASS`` JPEGs each under ``root``; each
    image a uniform brightness plus noise, class 1 brighter than class 0."""
    try:
        from PIL import Image
    except ImportError:
        sys.exit(
            "This example writes its images with pillow: pip install pillow "
            "(or pass --data DIR, a folder of class folders of JPEGs)."
        )

    rng = np.random.default_rng(SEED)
    for label in range(CLASSES):
        folder = os.path.join(root, str(label))
        os.makedirs(folder, exist_ok=True)
        low, high = (40, 110) if label == 0 else (145, 215)
        for i in range(PER_CLASS):
            base = rng.uniform(low, high, size=(1, 1, 3))
            noise = rng.normal(0.0, 25.0, size=(SIDE, SIDE, 3))
            pixels = np.clip(base + noise, 0, 255).astype(np.uint8)
            Image.fromarray(pixels).save(os.path.join(folder, f"{i:03d}.jpg"), quality=90)


def has_classes(root: str) -> bool:
    """Whether ``root`` already holds class folders of files."""
    if not os.path.isdir(root):
        return False
    folders = [e for e in os.scandir(root) if e.is_dir()]
    return bool(folders) and all(any(os.scandir(f.path)) for f in folders)


def make_pipeline() -> Any:
    """The DALI ``@pipeline_def`` function: CPU operators only, so it runs without a GPU."""
    from nvidia.dali import fn, pipeline_def, types

    @pipeline_def  # type: ignore[misc]
    def images(root: str) -> tuple[Any, Any]:
        jpegs, labels = fn.readers.file(
            file_root=root, random_shuffle=True, seed=SEED, name="Reader"
        )
        decoded = fn.decoders.image(jpegs, device="cpu")
        resized = fn.resize(decoded, resize_x=OUT_SIDE, resize_y=OUT_SIDE)
        normalized = fn.crop_mirror_normalize(
            resized, dtype=types.FLOAT, output_layout="HWC", mean=[127.5] * 3, std=[127.5] * 3
        )
        return normalized, labels

    return images


def batches(pipeline_def: Any, framework: str, root: str) -> Any:
    """``to()`` the pipeline: DALI's JAX or PyTorch iterator, restarting each epoch."""
    return interop_core.to(
        pipeline_def,
        framework,
        output_map=OUTPUT_MAP,
        reader_name="Reader",
        batch_size=BATCH,
        num_threads=THREADS,
        seed=SEED,
        auto_reset=True,
        pipeline_kwargs={"root": root},
    )


# -- the same model in each framework: logits = mean-pooled RGB @ w + b -------------------

#: (train step on a batch -> loss, predictions of a batch -> correct count, batch's size).
Trainer = tuple[Callable[[Any], float], Callable[[Any], int], Callable[[Any], int]]


def jax_trainer() -> Trainer:
    """Logistic regression in JAX: a jax.jit'd SGD step with jax.grad."""
    import jax
    import jax.numpy as jnp

    params = {"w": jnp.zeros(3, jnp.float32), "b": jnp.zeros((), jnp.float32)}

    def logits(p: dict[str, Any], images: Any) -> Any:
        return images.mean(axis=(1, 2)) @ p["w"] + p["b"]

    def loss_fn(p: dict[str, Any], images: Any, labels: Any) -> tuple[Any, Any]:
        z = logits(p, images)
        y = labels.reshape(-1).astype(jnp.float32)
        loss = jnp.mean(jnp.logaddexp(0.0, z) - y * z)  # binary cross-entropy of logits
        return loss, loss

    @jax.jit
    def sgd_step(p: dict[str, Any], images: Any, labels: Any) -> tuple[dict[str, Any], Any]:
        grads, loss = jax.grad(loss_fn, has_aux=True)(p, images, labels)
        return jax.tree.map(lambda v, g: v - LR * g, p, grads), loss

    @jax.jit
    def correct(p: dict[str, Any], images: Any, labels: Any) -> Any:
        return jnp.sum((logits(p, images) > 0) == (labels.reshape(-1) == 1))

    def train(batch: dict[str, Any]) -> float:
        nonlocal params
        params, loss = sgd_step(params, batch["images"], batch["labels"])
        return float(loss)

    def count(batch: dict[str, Any]) -> int:
        return int(correct(params, batch["images"], batch["labels"]))

    return train, count, lambda batch: int(batch["labels"].shape[0])


def torch_trainer() -> Trainer:
    """The same model in torch, with torch.optim.SGD; DALI's batches are ``[dict]``."""
    import torch

    torch.manual_seed(SEED)
    w = torch.zeros(3, requires_grad=True)
    b = torch.zeros((), requires_grad=True)
    optimizer = torch.optim.SGD([w, b], lr=LR)

    def logits(images: Any) -> Any:
        return images.mean(dim=(1, 2)) @ w + b

    def train(batch: list[dict[str, Any]]) -> float:
        images, labels = batch[0]["images"], batch[0]["labels"]
        optimizer.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(
            logits(images), labels.reshape(-1).float()
        )
        loss.backward()
        optimizer.step()
        return loss.item()

    def count(batch: list[dict[str, Any]]) -> int:
        images, labels = batch[0]["images"], batch[0]["labels"]
        with torch.no_grad():
            return int(((logits(images) > 0) == (labels.reshape(-1) == 1)).sum())

    return train, count, lambda batch: int(batch[0]["labels"].shape[0])


def fit(it: Iterable[Any], trainer: Trainer, epochs: int) -> tuple[list[float], float]:
    """Train for ``epochs`` epochs of ``it``; the step losses and the final accuracy."""
    train, count, size = trainer
    steps = len(it)  # type: ignore[arg-type]
    losses: list[float] = []
    for epoch in range(1, epochs + 1):
        started, epoch_losses = time.perf_counter(), []
        for step, batch in enumerate(it, 1):
            epoch_losses.append(train(batch))
            line = f"epoch {epoch}/{epochs} step {step}/{steps} loss {epoch_losses[-1]:.3f}"
            print("\r" + line, end="", flush=True)
        losses += epoch_losses
        took, n = time.perf_counter() - started, len(epoch_losses)
        mean = sum(epoch_losses) / n
        line = f"epoch {epoch}/{epochs} mean loss {mean:.3f} ({n} steps, {took:.2f} s)"
        print("\r" + line.ljust(40), flush=True)
    right = seen = 0
    for batch in it:  # one more epoch, to measure (auto_reset restarted the iterator)
        right += count(batch)
        seen += size(batch)
    return losses, right / seen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--framework", choices=["jax", "torch"], default="jax")
    parser.add_argument(
        "--data",
        metavar="DIR",
        help="image folder, one subfolder per class (default: a temporary one); "
        "the images are written there unless it already holds class folders",
    )
    parser.add_argument("--epochs", type=int, default=3, metavar="N")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="interop-images-") as tmp:
        root = args.data or tmp
        if not has_classes(root):
            write_images(root)
        trainer = jax_trainer() if args.framework == "jax" else torch_trainer()
        it = batches(make_pipeline(), args.framework, root)
        print(f"{args.framework}: {type(it).__name__}, {len(it)} batches of {BATCH} per epoch")
        losses, accuracy = fit(it, trainer, args.epochs)
    print(f"final accuracy: {accuracy:.3f}")
    print(f"first loss: {losses[0]:.4f} last loss: {losses[-1]:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
