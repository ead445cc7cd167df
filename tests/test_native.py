"""The optional C fast paths: to()'s warm path (interop_core._warm), numpy's and torch's keys
and the exchanges through DLPack's C exchange API (interop_plugins._native).

Each C path is checked against the Python one it replaces: the same results, errors and
routes; keys that split objects where the Python keys do; zero-copy by the frameworks' own
pointers; lifetimes by weak references; hostile input in child processes. The pure-Python
paths are the same code with ``INTEROP_CORE_PURE_PYTHON=1`` (the torch and typeguard nox
sessions run the whole suite so); a child process here checks the switch.
"""

from __future__ import annotations

import gc
import inspect
import json
import weakref
from typing import Any

import pytest
from conftest import need, required
from hostile import run_child

import interop_core
from interop_core import ConversionError, explain, to
from interop_core.face import api
from interop_core.native import PURE_PYTHON_ENV, pure_python

np = need("numpy")


def _native() -> Any:
    """interop_plugins._native, or skip (fail where the session requires it: every session
    but the pure-Python ones builds it)."""
    from interop_plugins.native import native

    module = native()
    if module is None:
        why = (
            f"{PURE_PYTHON_ENV}=1: this session tests the pure-Python paths"
            if pure_python()
            else "the C extension interop_plugins._native is not built"
        )
        if "all" in required() and not pure_python():
            pytest.fail(f"the full-stack session builds the C extensions: {why}")
        pytest.skip(why)
    return module


def _warm_in_c() -> None:
    if not hasattr(to, "python"):
        if "all" in required() and not pure_python():
            pytest.fail("the full-stack session builds interop_core._warm")
        pytest.skip("to() is the Python function here (no C extension, or pure Python asked)")


# -- the switch -----------------------------------------------------------------------


def test_pure_python_switch_turns_every_c_path_off() -> None:
    need("torch")
    out = run_child(
        f"""
        import os
        os.environ[{PURE_PYTHON_ENV!r}] = "1"
        import numpy as np, torch
        import interop_core as ic
        from interop_core.face import api
        from interop_plugins.frameworks import numpy as npp, torch as tp
        assert ic.to is api.to and not hasattr(ic.to, "python"), ic.to
        st = ic.default_registry().ready()
        assert st.frameworks["numpy"].key is npp.key
        key = st.frameworks["torch"].key  # composed with torch's per-tensor forms
        assert getattr(key, "dense", key) is tp.key
        a = np.arange(6, dtype=np.float32)
        route = ic.explain(a, "torch")
        assert route.steps[0].converter == "torch.from_numpy", route
        assert any("not built" in str(r) and {PURE_PYTHON_ENV!r} in str(r)
                   for r in route.refusals), route.refusals
        t = ic.to(a, "torch")
        assert t.data_ptr() == a.ctypes.data and t.tolist() == a.tolist()
        print("ok")
        """
    )
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


# -- to()'s warm path in C ------------------------------------------------------------


def test_the_c_to_carries_the_python_functions_face() -> None:
    _warm_in_c()
    python_to = to.python
    assert to.__wrapped__ is python_to and inspect.signature(to) == inspect.signature(python_to)
    assert (to.__name__, to.__qualname__, to.__module__) == ("to", "to", api.__name__)
    assert to.__doc__ == python_to.__doc__ and to.__doc__
    assert to.autograph_info__ is None  # TF's AutoGraph calls it as it is
    assert interop_core.to is to is api.to


def test_the_c_warm_path_runs_no_python_frame(torch: Any) -> None:
    """A planned to(obj, target) in C: nothing of interop_core's Python runs (counted)."""
    _warm_in_c()
    import sys

    a = np.ones((4, 4), np.float32)
    to(a, "torch")
    seen: list[str] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            seen.append(frame.f_code.co_filename)

    sys.setprofile(profile)
    try:
        out = to(a, "torch")
    finally:
        sys.setprofile(None)
    assert out.data_ptr() == a.ctypes.data
    assert not [f for f in seen if "interop" in f], seen


@pytest.mark.parametrize(
    "kwargs",
    [{"copy": True}, {"device": None}, {"copy": False}, {}],
    ids=["copy", "device-None", "copy-False", "plain"],
)
@pytest.mark.parametrize("target", ["torch", "TORCH", "numpy"])
def test_the_c_to_gives_what_the_python_to_gives(torch: Any, kwargs: Any, target: str) -> None:
    _warm_in_c()
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    for obj in (a, {"x": a, "y": [a]}, a[:, ::2]):
        got, expected = to(obj, target, **kwargs), to.python(obj, target, **kwargs)
        got_leaves, expected_leaves = _leaves(got), _leaves(expected)
        assert len(got_leaves) == len(expected_leaves)
        for g, e in zip(got_leaves, expected_leaves, strict=True):
            assert type(g) is type(e) and str(g.dtype) == str(e.dtype)
            assert g.tolist() == e.tolist()
            assert _pointer(g) == _pointer(e) or kwargs.get("copy") is True


def _leaves(x: Any) -> list[Any]:
    if isinstance(x, dict):
        return [leaf for v in x.values() for leaf in _leaves(v)]
    if isinstance(x, list):
        return [leaf for v in x for leaf in _leaves(v)]
    return [x]


def _pointer(x: Any) -> int:
    return int(x.data_ptr()) if hasattr(x, "data_ptr") else int(x.ctypes.data)


def test_the_c_to_reports_errors_as_the_python_to(torch: Any) -> None:
    _warm_in_c()
    a = np.ones(3, np.float32)
    for target in ("no-such-framework", ["unhashable"], None):
        with pytest.raises(Exception) as fast:
            to(a, target)
        with pytest.raises(Exception) as slow:
            to.python(a, target)
        assert type(fast.value) is type(slow.value) and str(fast.value) == str(slow.value)


def test_a_failing_warm_step_goes_to_warm_failed_in_c(torch: Any) -> None:
    """A runner that raises on the warm path is handled as the Python path handles it
    (State.warm_failed: the step named, never run again); counted."""
    _warm_in_c()
    from interop_core import ConverterSpec, Registry, hookimpl
    from interop_core.face.api import using_registry

    class Boom(Exception):
        pass

    calls = {"n": 0, "fail": False}

    def convert(x: Any) -> Any:
        calls["n"] += 1
        if calls["fail"]:
            raise Boom("the warm call fails")
        return torch.from_numpy(x)

    class Plugin:
        @hookimpl
        def interop_converters(self) -> list[ConverterSpec]:
            return [ConverterSpec(name="counted from_numpy", source="numpy", target="torch",
                                  load=lambda: convert, zero_copy=True, cost=0.01)]  # fmt: skip

    reg = Registry()
    reg.register(Plugin(), "counted")
    a = np.ones(3, np.float32)
    with using_registry(reg):
        assert to(a, "torch").data_ptr() == a.ctypes.data  # planned: a slow call
        assert calls["n"] == 1
        calls["fail"] = True
        with pytest.raises(ConversionError, match="counted from_numpy") as err:
            to(a, "torch")  # the warm call, in C: fails, is reported
        assert isinstance(err.value.__cause__, Boom)
        assert calls["n"] == 2  # the failed step was not run again to find out which failed
        calls["fail"] = False
        assert to(a, "torch").data_ptr() == a.ctypes.data and calls["n"] == 3
    # the registry made current in this block only
    assert to(a, "torch").data_ptr() == a.ctypes.data and calls["n"] == 3


def test_the_c_to_follows_using_registry_per_thread(torch: Any) -> None:
    _warm_in_c()
    import threading

    from interop_core import Registry
    from interop_core.face.api import using_registry

    empty = Registry(builtins=False, entry_points=False)
    a = np.ones(3, np.float32)
    to(a, "torch")
    seen: dict[str, Any] = {}

    def other() -> None:
        seen["other"] = to(a, "torch")  # the process-wide registry: converts

    with using_registry(empty):
        with pytest.raises(interop_core.InteropError):
            to(a, "torch")  # this thread's registry knows no framework
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
    assert seen["other"].data_ptr() == a.ctypes.data


# -- numpy's keys ---------------------------------------------------------------------


def _arrays() -> list[Any]:
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    ro = base.copy()
    ro.flags.writeable = False
    raw = np.zeros(24 * 4 + 64, np.uint8)
    start = (-raw.ctypes.data) % 64
    aligned = raw[start : start + 96].view(np.float32).reshape(4, 6)
    return [
        base, base.T, base[:, ::2], base[::-1], ro, aligned,
        raw[start + 4 : start + 100].view(np.float32),
        np.zeros((0, 3)), np.float64(1.0) * np.ones(()), np.ones((1, 5))[::-1],
        np.ones(3, ">f4"), np.ones(3, "U2"), np.zeros(3, [("a", "f4"), ("b", "i1")]),
        np.ma.masked_array([1.0, 2.0], mask=[0, 1]), np.matrix([[1, 2]]), np.ones(4, np.int64),
        np.ones(4, np.complex64), np.ones(4, bool),
    ]  # fmt: skip


def test_numpy_keys_in_c_equal_the_python_keys() -> None:
    native = _native()
    from interop_plugins.frameworks import numpy as npp

    for x in _arrays():
        assert native.numpy_key(x) == npp.key(x), x
        assert native.numpy_aligned_key(x) == npp.aligned_key(x), x
    assert interop_core.default_registry().ready().frameworks["numpy"].key is native.numpy_key


def test_numpy_keys_of_what_is_not_an_ndarray_are_the_python_keys() -> None:
    native = _native()
    for x in (None, 3, [1.0, 2.0], b"bytes", object()):
        for fast, slow in ((native.numpy_key, None), (native.numpy_aligned_key, None)):
            from interop_plugins.frameworks import numpy as npp

            slow = npp.key if fast is native.numpy_key else npp.aligned_key
            try:
                expected: Any = slow(x)
            except Exception as exc:
                with pytest.raises(type(exc)):
                    fast(x)
            else:
                assert fast(x) == expected


# -- torch's keys ---------------------------------------------------------------------


def test_torch_keys_in_c_split_tensors_where_the_python_keys_do(torch: Any) -> None:
    """Two tensors share a C key exactly when they share a Python key (over a set that
    differs in each thing the key holds), and no C key equals a Python key."""
    native = _native()
    from interop_plugins.frameworks import torch as tp

    c = torch.tensor([1j, 2j, 3 + 1j], dtype=torch.complex64)
    base = torch.ones(64 + 16)
    tensors = [
        torch.ones(2, 3), torch.ones(2, 3, dtype=torch.float64),
        torch.ones(2, 3, dtype=torch.int64),
        torch.ones(2, 3, requires_grad=True), torch.ones(2, 3)[:, :2], torch.ones(2, 3).T,
        torch.ones(6)[2:], c, c.conj(), c.conj().imag, torch.ones(3, dtype=torch.bool),
        torch.ones(3, dtype=torch.bfloat16), torch.ones(()), torch.ones(0, 3),
        base[:16], base[1:17],
        torch.nn.Parameter(torch.ones(3)), torch.ones(3, 1)[:, 0],
    ]  # fmt: skip
    for fast, slow in ((native.torch_key, tp.key), (native.torch_aligned_key, tp.aligned_key)):
        keys = [(fast(t), slow(t)) for t in tensors]
        for i, (fi, si) in enumerate(keys):
            # read in C (an int first) or the Python key's own tuple (a torch.dtype first)
            assert isinstance(fi[0], int) or fi == si, (tensors[i], fi, si)
            for j, (fj, sj) in enumerate(keys):
                assert (fi == fj) == (si == sj), (tensors[i], tensors[j], fi, fj, si, sj)


def test_torch_keys_in_c_raise_where_the_python_keys_raise(torch: Any) -> None:
    """A form's tensors (sparse layouts) are keyed by their form: both keys raise."""
    native = _native()
    from interop_plugins.frameworks import torch as tp

    for t in (torch.eye(3).to_sparse(), torch.eye(3).to_sparse_csr()):
        with pytest.raises(Exception) as slow:
            tp.key(t)
        with pytest.raises(type(slow.value)):
            native.torch_key(t)


# -- DLPack's C exchange API ------------------------------------------------------------

_C_DTYPES = (
    "bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
)  # fmt: skip


@pytest.mark.parametrize("dtype", _C_DTYPES)
def test_numpy_to_torch_and_back_through_the_c_exchange(torch: Any, dtype: str) -> None:
    _native()
    a = (np.arange(12) % 5).astype(dtype).reshape(3, 4)
    route = explain(a, "torch")
    assert route.zero_copy and route.steps[0].converter == "torch's C exchange API (DLPack 1.3)"
    t = to(a, "torch")
    assert t.data_ptr() == a.ctypes.data and str(t.dtype) == f"torch.{dtype}"
    assert t.tolist() == a.tolist()
    back = to(t, "numpy")
    assert explain(t, "numpy").steps[0].converter == "torch's C exchange API (DLPack 1.3)"
    assert back.ctypes.data == t.data_ptr() and back.dtype == a.dtype and back.flags.writeable
    assert (back == a).all()
    back[0, 0] = 1
    assert a[0, 0] == 1  # one memory: writes show through


@pytest.mark.parametrize(
    "make",
    [
        lambda: np.ones((0, 3), np.float32),
        lambda: np.array(3.5, np.float32),
        lambda: np.ones((1, 5), np.float32)[::-1],  # negative stride on a size-1 dim
        lambda: np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)),
        lambda: np.ones((2, 1, 3), np.float32)[:, ::-1],
    ],
    ids=["empty", "0-d", "size-1-negative", "fortran", "size-1-middle"],
)
def test_odd_shapes_cross_the_c_exchange(torch: Any, make: Any) -> None:
    _native()
    a = make()
    t = to(a, "torch")
    assert tuple(t.shape) == a.shape and t.tolist() == a.tolist()
    if a.size:
        assert t.data_ptr() == a.ctypes.data
    back = to(t, "numpy")
    assert back.shape == a.shape and (back == a).all()


def test_what_the_c_exchange_does_not_take_goes_another_way(torch: Any) -> None:
    """Read-only, strided, negative strides, conj/neg bits, requires_grad: the C edges
    refuse or take them as the Python ones would, and the values are right."""
    _native()
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    ro = base.copy()
    ro.flags.writeable = False
    for a in (base[:, ::2], base[::-1], ro):  # none is handed to the C edge as it is
        route = explain(a, "torch")
        assert route.steps[0].converter != "torch's C exchange API (DLPack 1.3)", route
        assert to(a, "torch").tolist() == a.tolist()
    c = torch.tensor([1j, 2j, 3 + 1j], dtype=torch.complex64)
    for t in (c.conj(), c.conj().imag):
        assert to(t, "numpy").tolist() == t.resolve_conj().resolve_neg().tolist()
    g = torch.ones(3, requires_grad=True)
    route = explain(g, "numpy")
    assert "detached" in route.steps[0].converter and route.zero_copy
    assert to(g, "numpy").ctypes.data == g.data_ptr()


def test_c_exchange_results_keep_their_source_alive_exactly_as_long_as_they_live(
    torch: Any,
) -> None:
    _native()
    a = np.arange(1000, dtype=np.float32)
    gone = weakref.ref(a)
    t = to(a, "torch")
    del a
    gc.collect()
    assert gone() is not None and t[999].item() == 999.0
    del t
    gc.collect()
    assert gone() is None

    # torch -> numpy: the export holds torch's storage (here numpy memory lent to torch)
    src = np.arange(1000, dtype=np.float32)
    gone = weakref.ref(src)
    tensor = torch.from_numpy(src)
    del src
    out = to(tensor, "numpy")
    assert explain(tensor, "numpy").steps[0].converter.startswith("torch's C exchange")
    del tensor
    gc.collect()
    assert gone() is not None and out[999] == 999.0
    del out
    gc.collect()
    assert gone() is None


# -- hostile input, in child processes ------------------------------------------------

_HOSTILE = """
import numpy as np, torch
from interop_plugins import _native as n
imp = n.Importer(torch.Tensor)
def refuses(f, *args):
    try:
        f(*args)
    except (TypeError, BufferError, ValueError, RuntimeError) as exc:
        return type(exc).__name__
    raise AssertionError(f"{{f}}{{args}} did not refuse")
class Liar:
    __dlpack_c_exchange_api__ = "not a capsule"
class NoApi:
    pass
import ctypes
named = ctypes.pythonapi.PyCapsule_New
named.restype = ctypes.py_object
named.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
class WrongName:
    __dlpack_c_exchange_api__ = named(1, b"something_else", None)
ro = np.ones(3, np.float32); ro.flags.writeable = False
cases = [
    (imp, 3), (imp, None), (imp, [1.0]), (imp, ro), (imp, np.ones(3, ">f4")),
    (imp, np.array([1, None])), (imp, np.ones(3, "U2")), (imp, np.ones(3, np.longdouble)),
    (imp, np.zeros(3, [("a", "f4"), ("b", "i1")])), (imp, np.arange(6.0)[::-1]),
    (imp, np.zeros(4, [("a", "f4"), ("b", "i1")])["a"]),
    (n.to_numpy, np.ones(3)), (n.to_numpy, Liar()), (n.to_numpy, NoApi()),
    (n.to_numpy, WrongName()),
    (n.to_numpy, torch.ones(3, dtype=torch.bfloat16)), (n.to_numpy, torch.eye(2).to_sparse()),
    (n.to_numpy, torch.empty(3, device="meta")),
]
print(sorted({{refuses(f, x) for f, x in cases}}))
for bad in (Liar, NoApi, WrongName, int):
    try:
        n.Importer(bad)
    except TypeError:
        pass
    else:
        raise AssertionError(bad)
big = np.ones((1,) * 64, np.float32)
assert imp(big).dim() == 64 and n.to_numpy(imp(big)).shape == big.shape
assert n.has_exchange_api(torch.Tensor) and not n.has_exchange_api(np.ndarray)
print("ok")
"""


def test_hostile_input_to_the_c_exchange_is_refused_without_a_crash(torch: Any) -> None:
    _native()
    out = run_child(_HOSTILE.format())
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("ok"), out.stdout


def test_c_keys_on_hostile_objects_do_not_crash(torch: Any) -> None:
    _native()
    out = run_child(
        """
        import numpy as np, torch
        from interop_plugins import _native as n
        import interop_core as ic
        ic.default_registry()  # the keys' Python halves are set when the plugins load
        class Fake(np.ndarray):
            pass
        f = np.ones(3).view(Fake)
        assert n.numpy_key(f) == (f.dtype, f.flags.num & 0x403)
        for x in (torch.ones(3), torch.empty(3, device="meta"), object(), None, 1.5):
            for k in (n.numpy_key, n.numpy_aligned_key, n.torch_key, n.torch_aligned_key):
                try:
                    k(x)
                except Exception:
                    pass
        print("ok")
        """
    )
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_the_doctor_says_whether_the_c_paths_are_there() -> None:
    out = run_child("import interop_core.__main__ as m; m.main(['doctor'])", timeout=300)
    text = out.stdout + out.stderr
    assert "C extensions: to()'s warm path runs " in text, text[-2000:]
    assert "interop_core._warm" in text or PURE_PYTHON_ENV in text


# -- the generic pieces: AttrKey (TensorFlow's key) and Chain (two-step runners) ----------


def test_tensorflow_keys_in_c_equal_the_python_keys() -> None:
    native = _native()
    tf = need("tensorflow")
    from interop_plugins.frameworks import tensorflow as tfp

    key = interop_core.default_registry().ready().frameworks["tensorflow"].key
    key = getattr(key, "dense", key)
    assert type(key).__name__ == "AttrKey"
    tensors = [tf.ones((2, 3)), tf.constant(1, tf.int64), tf.ones((0,), tf.bfloat16)]
    for t in tensors:
        assert key(t) == tfp.key(t)

    @tf.function
    def symbolic(x: Any) -> Any:  # a symbolic tensor has no _datatype_enum: the Python key
        seen.append((key(x), tfp.key(x)))
        return x

    seen: list[Any] = []
    symbolic(tf.ones(2))
    assert seen[0][0] == seen[0][1]
    assert native.AttrKey(("nope",), (False,), lambda x: "fallback")(object()) == "fallback"


def test_tensorflow_imports_through_its_c_importer_before_and_after_its_context_exists() -> None:
    # The exchange calls TF's pywrap_tfe.TFE_FromDlpackCapsule itself, with the eager
    # context's handle; before TF has made its context (a process whose first TF operation
    # is this to()) it goes through tf.experimental.dlpack.from_dlpack, which makes it.
    need("tensorflow")
    need("torch")
    done = run_child(
        """
        import json
        import numpy as np, tensorflow as tf, torch
        from tensorflow.python.eager import context
        from interop_core import to
        from interop_plugins.frameworks.numpy import aligned_empty

        before = context.context()._context_handle is None
        a = aligned_empty((4, 8), np.float32)
        a[...] = np.arange(32, dtype=np.float32).reshape(4, 8)
        first, second = to(a, "tensorflow"), to(a, "tensorflow")
        t = torch.arange(6, dtype=torch.int32).reshape(2, 3)
        from_torch = to(t, "tensorflow")
        print(json.dumps({
            "before": before,
            "shared": [np.from_dlpack(r).ctypes.data == a.ctypes.data for r in (first, second)],
            "values": first.numpy().tolist() == a.tolist(),
            "torch": np.from_dlpack(from_torch).ctypes.data == t.data_ptr(),
            "torch_values": from_torch.numpy().tolist() == t.tolist(),
        }))
        """
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {
        "before": True, "shared": [True, True], "values": True, "torch": True,
        "torch_values": True,
    }  # fmt: skip


def test_tensorflow_tensors_reach_torch_through_their_own_numpy_view(torch: Any) -> None:
    # tf -> torch takes the eager tensor's numpy view (EagerTensor._numpy(), what np.asarray
    # gets from TF) without numpy's protocol around it: the same memory, kept alive by the
    # torch tensor; a 0-d tensor's view is a scalar, so it goes through np.asarray.
    tf = need("tensorflow")
    x = tf.reshape(tf.range(12, dtype=tf.float32), (3, 4))
    address = np.asarray(x).ctypes.data
    y = to(x, "torch")
    assert y.data_ptr() == address and y.dtype == torch.float32
    assert y.tolist() == np.arange(12, dtype=np.float32).reshape(3, 4).tolist()
    del x
    gc.collect()
    assert y.sum().item() == 66.0  # the view's base holds the tensor
    for value, dtype in [(2.5, tf.float32), (7, tf.int64), (True, tf.bool)]:
        z = to(tf.constant(value, dtype), "torch")
        assert z.shape == () and z.item() == value
    assert str(to(tf.constant(7, tf.int64), "torch").dtype) == "torch.int64"


def test_a_chain_runs_both_steps_and_passes_their_errors() -> None:
    native = _native()
    chained = native.Chain(np.asarray, np.sum)
    assert chained([1, 2, 3]) == 6

    def boom(x: Any) -> Any:
        raise ValueError("second step")

    with pytest.raises(ValueError, match="second step"):
        native.Chain(np.asarray, boom)([1])
    for bad in ((1, np.sum), (np.sum,)):
        with pytest.raises(TypeError):
            native.Chain(*bad)
    with pytest.raises(TypeError):
        chained()
