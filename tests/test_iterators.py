"""Iterators of batches: converted lazily, one batch at a time, structure kept.

Checked against the frameworks themselves: result types and values, memory sharing by each
framework's own data pointers, and "nothing pulled before the user asks" by counting pulls.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import need

from interop_core import NotAnArrayError, OptionError, explain, to

np = need("numpy")


class Counted:
    """An iterator over ``batches`` that counts how many were pulled."""

    def __init__(self, batches: list[Any]) -> None:
        self.pulled = 0
        self._it = iter(batches)

    def __iter__(self) -> Counted:
        return self

    def __next__(self) -> Any:
        item = next(self._it)
        self.pulled += 1
        return item


def batches(n: int = 3) -> list[dict[str, Any]]:
    return [
        {
            "x": np.full((2, 3), i, np.float32),
            "pair": (np.arange(4, dtype=np.int32) + i, f"b{i}"),
            "i": i,
        }
        for i in range(n)
    ]


def test_nothing_is_pulled_before_the_user_asks() -> None:
    torch = need("torch")
    source = Counted(batches())
    out = to(source, "torch")
    assert source.pulled == 0
    first = next(out)
    assert source.pulled == 1
    assert isinstance(first["x"], torch.Tensor) and first["x"].dtype == torch.float32
    rest = list(out)
    assert source.pulled == 3 and len(rest) == 2
    with pytest.raises(StopIteration):
        next(out)


def test_structure_and_values_are_kept() -> None:
    jax = need("jax")
    for i, b in enumerate(to(iter(batches()), "jax")):
        assert set(b) == {"x", "pair", "i"}
        assert isinstance(b["x"], jax.Array) and b["x"].dtype == np.float32
        assert np.array_equal(np.asarray(b["x"]), np.full((2, 3), i, np.float32))
        assert isinstance(b["pair"], tuple) and b["pair"][1] == f"b{i}" and b["i"] == i
        assert np.array_equal(np.asarray(b["pair"][0]), np.arange(4) + i)


def test_generator_batches_are_zero_copy_by_default_and_copied_on_request() -> None:
    torch = need("torch")
    source = [np.arange(6, dtype=np.float32) for _ in range(2)]
    shared = next(to(iter(source), "torch"))
    assert shared.data_ptr() == source[0].ctypes.data
    copied = next(to(iter(source), "torch", copy=True))
    assert copied.data_ptr() != source[0].ctypes.data
    assert torch.equal(copied, torch.arange(6, dtype=torch.float32))


def test_copy_false_raises_only_for_the_batch_that_would_need_a_copy() -> None:
    need("torch")
    from interop_core import CopyRequiredError

    plain = np.arange(4, dtype=np.float32)
    reversed_ = np.arange(4, dtype=np.float32)[::-1]  # torch cannot view negative strides
    out = to(iter([plain, reversed_]), "torch", copy=False)
    assert next(out).data_ptr() == plain.ctypes.data
    with pytest.raises(CopyRequiredError):
        next(out)


def test_a_dataloader_restarts_each_epoch_and_keeps_its_len() -> None:
    torch = need("torch")
    jax = need("jax")
    data = torch.utils.data.TensorDataset(torch.arange(10.0), torch.arange(10, dtype=torch.int32))
    loader = torch.utils.data.DataLoader(data, batch_size=4)
    out = to(loader, "jax")
    assert len(out) == 3
    for _ in range(2):  # two epochs
        epoch = list(out)
        assert [b[0].shape for b in epoch] == [(4,), (4,), (2,)]
        assert all(isinstance(b[0], jax.Array) for b in epoch)
        assert np.array_equal(np.concatenate([np.asarray(b[1]) for b in epoch]), np.arange(10))


def test_a_tf_dataset_converts_batch_by_batch() -> None:
    tf = need("tensorflow")
    torch = need("torch")
    ds = tf.data.Dataset.from_tensor_slices({"a": np.arange(6.0, dtype=np.float32)}).batch(4)
    out = [b["a"] for b in to(ds, "torch")]
    assert all(isinstance(t, torch.Tensor) for t in out)
    assert [t.tolist() for t in out] == [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0]]
    assert [b["a"].shape for b in to(ds, "numpy")] == [(4,), (2,)]  # restartable


def test_explain_names_the_lazy_step() -> None:
    route = explain(iter(batches()), "numpy")
    assert [s.converter for s in route.steps] == ["to() on each batch"]
    assert route.source == "iterator" and route.target == "numpy iterator"
    assert "each batch is converted when it is pulled" in str(route)


def test_source_is_refused_for_iterators() -> None:
    with pytest.raises(OptionError, match="source="):
        to(iter(batches()), "numpy", source="torch")


def test_a_batch_without_arrays_fails_when_pulled_not_before() -> None:
    out = to(iter(["text"]), "numpy")
    with pytest.raises(NotAnArrayError):
        next(out)


def test_an_iterable_that_is_not_an_iterator_says_what_to_do() -> None:
    with pytest.raises(NotAnArrayError) as info:
        to({1, 2}, "numpy")
    msg = str(info.value)
    assert msg.startswith("Cannot convert a builtins.set: it is not an array"), msg
    assert re.search(r"; nor is it an? [^.;]*\biterator\b", msg), msg  # what to() takes
    assert "To build a numpy array from Python values, use numpy.asarray(...)" in msg, msg
    assert isinstance(to(iter({1, 2}), "numpy"), Iterator)


def test_reconverting_a_converted_iterator_chains_lazily() -> None:
    torch = need("torch")
    jax = need("jax")
    source = Counted(batches(2))
    out = to(to(source, "torch"), "jax")
    assert source.pulled == 0
    b = next(out)
    assert isinstance(b["x"], jax.Array) and not isinstance(b["x"], torch.Tensor)
    assert source.pulled == 1
