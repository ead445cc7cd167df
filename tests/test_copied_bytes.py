"""What explain() says a copy moves: the whole array's bytes (a sparse array's stored
buffers, not its dense size), or the part a step copies (indices, row splits), named."""

from __future__ import annotations

from conftest import need

from interop_core import explain


def test_a_copy_of_a_dense_array_counts_its_bytes() -> None:
    np = need("numpy")
    need("torch")
    x = np.zeros((3, 5), dtype=np.float32)
    route = explain(x, "torch", copy=True)
    assert route.copies == 1 and route.bytes_copied == x.nbytes
    assert f"1 copy(ies), {x.nbytes} bytes copied" in route.summary()


def test_a_sparse_copy_counts_the_stored_buffers_not_the_dense_size() -> None:
    np, sp = need("numpy"), need("scipy")
    need("torch")
    m = sp.random(1000, 800, density=0.001, format="csr", dtype=np.float32, random_state=0)
    stored = m.data.nbytes + m.indices.nbytes + m.indptr.nbytes
    route = explain(m, "torch", copy=True)
    assert route.copies == 1 and route.bytes_copied == stored < 1000 * 800 * 4


def test_a_step_that_copies_a_part_names_it() -> None:
    np, sp = need("numpy"), need("scipy")
    need("torch")
    coo = sp.random(50, 40, density=0.1, format="coo", dtype=np.float32, random_state=0)
    route = explain(coo, "torch")
    assert route.copies == 1 and route.bytes_copied == 0
    assert [s.copies for s in route.steps] == ["the indices"]
    assert "1 copy(ies): the indices, via" in route.summary()
    dense = explain(coo, "numpy", densify=True)
    assert dense.copies == 1 and "every element, into a dense array" in dense.summary()


def test_a_ragged_row_splits_copy_is_named() -> None:
    tf = need("tensorflow")
    need("jax")
    rt = tf.ragged.constant([[1.0, 2.0, 3.0], [], [4.0, 5.0]])  # int64 splits: x64 is off
    route = explain(rt, "jax")
    assert route.copies == 1 and route.bytes_copied == 0
    assert "1 copy(ies): the row splits" in route.summary()
