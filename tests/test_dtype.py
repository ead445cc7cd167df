"""dtype=: the only cast to() makes, as a step of its own that explain() reports.

Checked against the frameworks: result dtypes and values (equal to the framework's own
cast), where the cast happens (explain()'s steps), memory sharing by each framework's own
data pointers where no cast is needed, and errors: copy=False, unknown names, casts a
framework cannot make.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from conftest import need

from interop_core import (
    ConversionError,
    CopyRequiredError,
    NoRouteError,
    OptionError,
    explain,
    to,
)

np = need("numpy")

#: int64 values, some beyond int32 (they wrap as the frameworks' own casts wrap them).
BIG = [0, 1, -7, 2**31 + 5, 2**40 + 3]


def _x64_off() -> None:
    jax = need("jax")
    if jax.config.read("jax_enable_x64"):
        pytest.skip("x64 is on in this process: JAX takes int64 as it is")


# -- arrays --------------------------------------------------------------------------------


def test_int64_torch_to_jax_is_cast_to_int32_in_torch_before_jax_sees_it() -> None:
    torch = need("torch")
    jax = need("jax")
    _x64_off()
    t = torch.tensor(BIG, dtype=torch.int64)
    out = to(t, "jax", dtype={"int64": "int32"})
    assert isinstance(out, jax.Array) and str(out.dtype) == "int32"
    # The values torch's own cast gives (JAX never narrowed them itself).
    assert np.asarray(out).tolist() == t.to(torch.int32).tolist()
    assert t.dtype == torch.int64  # the input is left alone


def test_int64_numpy_to_jax_is_cast_to_int32() -> None:
    jax = need("jax")
    _x64_off()
    a = np.array(BIG, dtype=np.int64)
    out = to(a, "jax", dtype={"int64": "int32"})
    assert isinstance(out, jax.Array) and str(out.dtype) == "int32"
    assert np.asarray(out).tolist() == a.astype(np.int32).tolist()


def test_explain_shows_the_cast_step_and_counts_it_as_a_copy() -> None:
    torch = need("torch")
    _x64_off()
    t = torch.arange(6, dtype=torch.int64)
    route = explain(t, "jax", dtype={"int64": "int32"})
    first = route.steps[0]
    assert first.converter == "cast int64 -> int32"
    assert (first.plugin, first.source, first.target) == (
        "interop_plugins.frameworks.torch",
        "torch@cpu",
        "torch@cpu",
    )
    assert not first.zero_copy
    assert [s.zero_copy for s in route.steps[1:]] == [True]  # the int32 tensor is shared
    assert route.steps[1].target == "jax@cpu"
    assert route.copies == 1 and not route.zero_copy
    assert route.bytes_copied == 6 * 4  # the int32 result
    text = str(route)
    assert (
        "torch@cpu -> torch@cpu: cast int64 -> int32 [interop_plugins.frameworks.torch] COPY"
        in text
    )
    assert "dtype= casts int64 to int32 in torch, before the conversion" in text


def test_the_route_after_the_cast_is_the_route_of_an_array_of_that_dtype() -> None:
    torch = need("torch")
    t = torch.arange(6, dtype=torch.float64)
    route = explain(t, "numpy", dtype="float32")
    plain = explain(t.to(torch.float32), "numpy")
    assert route.steps[1:] == plain.steps
    out = to(t, "numpy", dtype="float32")
    assert out.dtype == np.float32 and out.tolist() == t.tolist()


def test_copy_false_with_a_cast_is_a_copy_required_error() -> None:
    torch = need("torch")
    t = torch.arange(4, dtype=torch.int64)
    with pytest.raises(CopyRequiredError, match="cast int64 -> int32") as err:
        to(t, "numpy", dtype={"int64": "int32"}, copy=False)
    assert isinstance(err.value, BufferError)
    with pytest.raises(CopyRequiredError, match="dtype="):
        explain(t, "numpy", dtype="int32", copy=False)


def test_copy_false_is_honoured_when_nothing_needs_a_cast() -> None:
    torch = need("torch")
    t = torch.arange(4, dtype=torch.int32)
    out = to(t, "numpy", dtype={"int64": "int32"}, copy=False)  # no entry for int32
    assert out.ctypes.data == t.data_ptr() and out.dtype == np.int32
    same = to(t, "numpy", dtype="int32", copy=False)  # already the dtype asked
    assert same.ctypes.data == t.data_ptr()


def test_copy_true_with_a_cast_copies_once() -> None:
    torch = need("torch")
    t = torch.arange(4, dtype=torch.int64)
    route = explain(t, "numpy", dtype="int32", copy=True)
    assert route.copies == 1 and route.steps[0].converter == "cast int64 -> int32"
    out = to(t, "numpy", dtype="int32", copy=True)
    assert out.dtype == np.int32 and out.ctypes.data != t.data_ptr()
    out[0] = 99
    assert t[0].item() == 0


def test_without_dtype_nothing_is_ever_cast() -> None:
    torch = need("torch")
    t = torch.tensor(BIG, dtype=torch.int64)
    for kwargs in ({}, {"dtype": None}):
        out = to(t, "numpy", **kwargs)
        assert out.dtype == np.int64 and out.tolist() == BIG
        assert out.ctypes.data == t.data_ptr()  # zero-copy: no cast step
        route = explain(t, "numpy", **kwargs)
        assert route.zero_copy and not any(s.converter.startswith("cast") for s in route.steps)
    f = np.arange(3, dtype=np.float64)
    assert to(f, "torch").dtype == torch.float64


def test_a_mapping_without_the_source_dtype_or_the_same_dtype_does_not_cast() -> None:
    torch = need("torch")
    a = np.arange(4, dtype=np.float32)
    for dtype in ({"int64": "int32"}, "float32", np.float32, {"float32": "float32"}):
        out = to(a, "torch", dtype=dtype)
        assert out.dtype == torch.float32 and out.data_ptr() == a.ctypes.data
        assert explain(a, "torch", dtype=dtype).zero_copy


def test_a_container_casts_only_the_leaves_the_mapping_names() -> None:
    torch = need("torch")
    jax = need("jax")
    _x64_off()
    images = torch.ones(2, 3, dtype=torch.float32)
    labels = torch.tensor([3, 1], dtype=torch.int64)
    ids = np.array([7, 8], dtype=np.int64)
    counts = np.array([1, 2], dtype=np.int32)
    batch = {"images": images, "labels": labels, "more": [ids, "tag", counts]}
    out = to(batch, "jax", dtype={"int64": "int32"})
    assert set(out) == {"images", "labels", "more"} and out["more"][1] == "tag"
    assert [str(out[k].dtype) for k in ("images", "labels")] == ["float32", "int32"]
    assert [str(x.dtype) for x in (out["more"][0], out["more"][2])] == ["int32", "int32"]
    assert all(isinstance(x, jax.Array) for x in (out["images"], out["more"][2]))
    assert np.asarray(out["labels"]).tolist() == [3, 1]
    assert np.asarray(out["more"][0]).tolist() == [7, 8]
    routes = explain(batch, "jax", dtype={"int64": "int32"})
    casts = {
        k: [s.converter for s in r.steps if s.converter.startswith("cast")]
        for k, r in (("images", routes["images"]), ("labels", routes["labels"]),
                     ("ids", routes["more"][0]), ("counts", routes["more"][2]))
    }  # fmt: skip
    assert casts == {
        "images": [], "labels": ["cast int64 -> int32"], "ids": ["cast int64 -> int32"],
        "counts": [],
    }  # fmt: skip


def test_float64_to_float32_into_tensorflow() -> None:
    tf = need("tensorflow")
    torch = need("torch")
    a = np.linspace(0, 1, 6, dtype=np.float64).reshape(2, 3)
    out = to(a, "tensorflow", dtype=tf.float32)
    assert isinstance(out, tf.Tensor) and out.dtype == tf.float32
    assert np.array_equal(out.numpy(), a.astype(np.float32))
    route = explain(a, "tensorflow", dtype={"float64": "float32"})
    assert route.steps[0].converter == "cast float64 -> float32"
    assert route.steps[0].source == "numpy@cpu"
    t = torch.tensor([0.1, 2.5], dtype=torch.float64)
    out = to(t, "tf", dtype={torch.float64: "float32"})
    assert out.dtype == tf.float32 and np.array_equal(out.numpy(), t.float().numpy())


def test_a_strided_array_is_cast_into_a_contiguous_one() -> None:
    torch = need("torch")
    a = np.arange(12, dtype=np.int64).reshape(3, 4)[:, ::2]
    out = to(a, "torch", dtype="int16", copy=True)
    assert out.dtype == torch.int16 and out.is_contiguous()
    assert out.tolist() == a.tolist()
    t = torch.arange(12, dtype=torch.float64).reshape(3, 4).T  # F-ordered
    out = to(t, "numpy", dtype="float32")
    assert out.flags.c_contiguous and out.tolist() == t.tolist()


def test_dtype_objects_of_every_framework_are_understood() -> None:
    torch = need("torch")
    jnp = need("jax").numpy
    tf = need("tensorflow")
    spellings: list[Any] = [
        "int32", "INT32", " torch.int32", np.int32, np.dtype("int32"), torch.int32, jnp.int32,
        tf.int32,
    ]  # fmt: skip
    a = np.arange(3, dtype=np.int64)
    b = np.arange(3, dtype=np.int32)
    for spelling in spellings:
        assert to(a, "torch", dtype=spelling).dtype == torch.int32, spelling
        assert to(b, "torch", dtype={spelling: tf.int16}).dtype == torch.int16, spelling
    assert to(a, "torch", dtype={np.int64: jnp.bfloat16}).dtype == torch.bfloat16
    assert to(a, "numpy", dtype=bool).tolist() == [False, True, True]


def test_an_unknown_dtype_name_is_an_option_error_listing_close_names() -> None:
    a = np.arange(3)
    with pytest.raises(OptionError, match=r"Unknown dtype 'int23'.*Did you mean 'int32'"):
        to(a, "numpy", dtype="int23")
    with pytest.raises(OptionError, match=r"Unknown dtype 'flaot32'.*Did you mean 'float32'"):
        explain(a, "numpy", dtype={"int64": "flaot32"})
    with pytest.raises(OptionError, match="'float32' or 'float64'"):
        to(a, "numpy", dtype="float")  # numpy's float is float64, torch's float32
    with pytest.raises(OptionError, match="names no width"):
        to(a, "numpy", dtype=int)
    with pytest.raises(OptionError, match="is not a dtype"):
        to(a, "numpy", dtype=5)
    with pytest.raises(OptionError, match="maps int64 twice"):
        to(a, "numpy", dtype={"int64": "int32", np.int64: "int16"})


def test_casts_the_frameworks_cannot_make_say_so() -> None:
    torch = need("torch")
    tf = need("tensorflow")
    z = np.array([1 + 2j], dtype=np.complex64)
    with pytest.raises(OptionError, match="imaginary part"):
        to(z, "torch", dtype="float32")
    t = torch.ones(2)
    with pytest.raises(NoRouteError, match="tensorflow has no dtype float8_e4m3fn"):
        to(t, tf, dtype="float8_e4m3fn")


def test_a_buffer_is_cast_before_it_is_shared() -> None:
    """The buffer protocol's source casts itself (one reported copy, first), then the
    cast array is shared with the target."""
    torch = need("torch")
    data = np.arange(4, dtype=np.float64)
    view = memoryview(data)
    route = explain(view, "torch", dtype="float32")
    first = route.steps[0]
    assert (first.converter, first.zero_copy) == ("cast float64 -> float32", False)
    assert route.copies == 1 and "dtype= casts float64 to float32" in str(route)
    out = to(view, "torch", dtype="float32")
    assert out.dtype == torch.float32 and out.tolist() == data.tolist()


def test_a_jax_cast_to_64_bits_without_x64_is_refused() -> None:
    jax = need("jax")
    _x64_off()
    x = jax.numpy.arange(3, dtype="float32")
    with pytest.raises(ConversionError, match="jax_enable_x64"):
        to(x, "jax", dtype="float64")  # JAX would make a float32 array
    assert str(to(x, "jax", dtype="int16").dtype) == "int16"


def test_the_x64_refusal_suggests_dtype() -> None:
    torch = need("torch")
    _x64_off()
    with pytest.raises(NoRouteError) as err:
        to(torch.arange(3), "jax")
    first = str(err.value).splitlines()[0]
    assert "jax_enable_x64" in first and "dtype={'int64': 'int32'" in first


def test_functions_are_not_cast() -> None:
    need("torch")
    need("jax")
    with pytest.raises(OptionError, match="dtype= casts arrays"):
        to(lambda x: x, "jax", source="torch", dtype="int32")


# -- iterators -----------------------------------------------------------------------------


def test_a_dataloader_of_images_and_int64_labels_reaches_jax_as_int32() -> None:
    torch = need("torch")
    jax = need("jax")
    _x64_off()
    images = torch.rand(10, 3, 4, 4)
    labels = torch.arange(10, dtype=torch.int64) % 3
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(images, labels), batch_size=4
    )
    with pytest.raises(NoRouteError, match="dtype="):  # what the user hits without dtype=
        next(iter(to(loader, "jax")))
    out = to(loader, "jax", dtype={"int64": "int32"})
    assert len(out) == 3
    for _ in range(2):  # two epochs
        epoch = list(out)
        assert all(isinstance(x, jax.Array) and isinstance(y, jax.Array) for x, y in epoch)
        assert {str(x.dtype) for x, _ in epoch} == {"float32"}
        assert {str(y.dtype) for _, y in epoch} == {"int32"}
        got = np.concatenate([np.asarray(y) for _, y in epoch])
        assert got.tolist() == labels.tolist()
        assert np.array_equal(np.concatenate([np.asarray(x) for x, _ in epoch]), images.numpy())
    route = explain(loader, "jax", dtype={"int64": "int32"})
    assert "dtype= apply to every batch" in str(route)


def test_an_iterator_casts_each_batch_and_copy_false_fails_at_the_batch() -> None:
    torch = need("torch")
    batches = [
        {"x": np.arange(3, dtype=np.int64) + i, "y": np.ones(2, np.float32)} for i in range(2)
    ]
    out = list(to(iter(batches), "torch", dtype={"int64": "int32"}))
    assert [b["x"].dtype for b in out] == [torch.int32, torch.int32]
    assert [b["x"].tolist() for b in out] == [[0, 1, 2], [1, 2, 3]]
    assert out[0]["y"].data_ptr() == batches[0]["y"].ctypes.data  # not cast: shared
    lazy = to(iter(batches), "torch", dtype="int32", copy=False)  # nothing pulled yet
    with pytest.raises(CopyRequiredError):
        next(lazy)


def test_a_dali_pipeline_casts_before_jax_and_refuses_silent_narrowing() -> None:
    need("dali")
    jax = need("jax")
    torch = need("torch")
    _x64_off()
    from nvidia.dali import fn, pipeline_def

    values = [5, 2**40 + 3, -2, 7]

    @pipeline_def  # type: ignore[misc]
    def labels() -> Any:
        def sample(info: Any) -> Any:
            return np.array([values[info.idx_in_epoch % 4]], np.int64)

        return fn.external_source(source=sample, batch=False)

    options: dict[str, Any] = {"batch_size": 2, "num_threads": 1, "output_map": ["y"], "size": 4}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # DALI's own notices about external sources
        with pytest.raises(OptionError, match=r"'y' is int64.*dtype="):
            next(iter(to(labels, "jax", **options)))  # JAX would narrow 2**40 + 3 silently
        wanted = np.array(values, np.int64).astype(np.int32).reshape(4, 1)
        for target in ("jax", "torch", "numpy", "tensorflow"):
            if target == "tensorflow":
                need("tensorflow")
            out = to(labels, target, dtype={"int64": "int32"}, **options)
            got = []
            for batch in out:
                y = (batch[0] if isinstance(batch, list) else batch)["y"]
                assert "int32" in str(y.dtype), target
                got.append(np.asarray(y))
            assert np.array_equal(np.concatenate(got), wanted), target
            if target == "jax":
                assert isinstance(y, jax.Array)
            if target == "torch":
                assert isinstance(y, torch.Tensor)


# -- dtype="canonical": the target's own dtypes ----------------------------------------------

#: What JAX itself makes of each 64-bit dtype while x64 is off (jnp.asarray's dtype).
NARROWED = {"int64": "int32", "uint64": "uint32", "float64": "float32", "complex128": "complex64"}


@pytest.mark.parametrize("name", list(NARROWED))
def test_canonical_into_jax_is_what_jnp_asarray_makes(name: str) -> None:
    jax = need("jax")
    _x64_off()
    import jax.numpy as jnp

    a = np.array([0, 1, 7, 2**20 + 3], dtype=name)
    out = to(a, "jax", dtype="canonical")
    own = jnp.asarray(a)  # JAX's own conversion: the dtype and values canonical promises
    assert isinstance(out, jax.Array) and out.dtype == own.dtype == np.dtype(NARROWED[name])
    assert np.asarray(out).tolist() == np.asarray(own).tolist()
    route = explain(a, "jax", dtype="canonical")
    assert route.steps[0].converter == f"cast {name} -> {NARROWED[name]}"
    assert any(n.startswith(f"dtype='canonical' casts {name} to {NARROWED[name]}")
               for n in route.notes), route.notes  # fmt: skip
    with pytest.raises(CopyRequiredError):
        to(a, "jax", dtype="canonical", copy=False)


def test_canonical_keeps_what_the_target_holds_and_shares_it() -> None:
    torch = need("torch")
    jax = need("jax")
    a = np.arange(4, dtype=np.int64)
    t = to(a, "torch", dtype="canonical")  # torch holds int64: nothing to cast
    assert t.dtype == torch.int64 and t.data_ptr() == a.ctypes.data
    assert explain(a, "torch", dtype="canonical").copies == 0
    f = torch.ones(3)
    out = to(f, "jax", dtype="canonical")  # float32 is JAX's own: shared
    assert isinstance(out, jax.Array) and out.dtype == np.float32
    assert out.unsafe_buffer_pointer() == f.data_ptr()


def test_canonical_follows_the_x64_switch_at_each_call() -> None:
    """The policy is asked per call: with x64 on JAX takes int64 as it is (a child process,
    so this process's switch stays as it is)."""
    from hostile import run_child

    need("jax")
    done = run_child(
        """
        import numpy as np, jax, interop_core
        a = np.arange(3, dtype=np.int64)
        before = interop_core.to(a, "jax", dtype="canonical").dtype
        jax.config.update("jax_enable_x64", True)
        after = interop_core.to(a, "jax", dtype="canonical").dtype
        steps = interop_core.explain(a, "jax", dtype="canonical").steps
        print(before, after, any(s.converter.startswith("cast") for s in steps))
        """
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["int32", "int64", "False"]


def test_canonical_casts_each_batch_of_a_dataloader_with_int64_labels() -> None:
    torch = need("torch")
    jax = need("jax")
    _x64_off()
    labels = torch.arange(10, dtype=torch.int64) % 3
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.rand(10, 3), labels), batch_size=4
    )
    epoch = list(to(loader, "jax", dtype="canonical"))
    assert {str(y.dtype) for _, y in epoch} == {"int32"}
    assert {str(x.dtype) for x, _ in epoch} == {"float32"}
    assert all(isinstance(y, jax.Array) for _, y in epoch)
    assert np.concatenate([np.asarray(y) for _, y in epoch]).tolist() == labels.tolist()


@pytest.mark.parametrize("value", [" Canonical", "CANONICAL"])
def test_canonical_is_read_in_any_case(value: str) -> None:
    need("jax")
    _x64_off()
    assert str(to(np.arange(2), "jax", dtype=value).dtype) == "int32"


def test_canonical_is_a_policy_not_a_dtype_of_a_mapping() -> None:
    with pytest.raises(OptionError, match="Unknown dtype 'canonical'"):
        to(np.arange(2), "numpy", dtype={"int64": "canonical"})
