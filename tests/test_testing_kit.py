"""The conformance kit (interop_core.testing.check_framework) and independent_data_ptr.

The kit must pass on every built-in framework that is installed, and must fail, naming the
broken rule, on a toy framework broken on purpose in one way at a time.
"""

from __future__ import annotations

import array
import ctypes
import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest
from conftest import available, framework_spec, frameworks, need

from interop_core import ConverterSpec, FrameworkSpec, Registry, default_registry, hookimpl
from interop_core.plugin import Devices, Package
from interop_core.testing import (
    ConformanceError,
    check_framework,
    independent_data_ptr,
    protocol_view,
)

#: The frameworks the kit checks (target, example, on the host), from the registry; the
#: built-ins among them.
FRAMEWORKS = frameworks()
BUILTINS = frameworks(builtin=True)

# -- every framework conforms ----------------------------------------------------------------


@pytest.mark.parametrize("name", FRAMEWORKS)
def test_registered_framework_conforms(name: str) -> None:
    """Each built-in against the other built-ins (a third-party plugin installed here is not
    theirs to answer for); a plugin's framework against every installed one, as its
    author's tests run the kit."""
    need(name)
    others = [o for o in BUILTINS if o != name and available(o)]
    done = check_framework(name, others=others if name in BUILTINS else None)
    assert done[0].startswith("spec: "), done
    if name in BUILTINS and others:  # the built-ins share memory with each other
        assert any(" -> " in line and "zero-copy" in line for line in done), done
    if "float32" in framework_spec(name).dtypes:
        assert any(line.startswith("float32: identity") for line in done), done


def test_jax_and_numpy_conform_with_x64_on() -> None:
    """With jax_enable_x64 on, the 64-bit dtypes cross into JAX too (in a subprocess: the
    flag is process-wide and other tests expect it off)."""
    need("jax")
    need("numpy")
    code = textwrap.dedent(
        """
        import jax
        jax.config.update("jax_enable_x64", True)
        from interop_core.testing import check_framework
        for name in ("jax", "numpy"):
            done = check_framework(name, dtypes=["int64", "float64", "complex128", "float32"])
            assert any(line.startswith("float64 -> ") for line in done), done
            print(name, *[line for line in done if "jax" in line and "64" in line], sep="\\n")
        """
    )
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "float64 -> jax: zero-copy; back: zero-copy" in done.stdout, done.stdout
    assert "jax_enable_x64 is off" not in done.stdout


def test_default_registry_is_used_and_kept() -> None:
    need("numpy")
    before = default_registry()
    check_framework("np", dtypes=["float32"], others=[])  # an alias names it too
    assert default_registry() is before


# -- a toy framework over numpy, broken on purpose ------------------------------------------


class _ToyBase:
    """A toy array over a numpy array, with numpy's transpose and slicing views."""

    __slots__ = ("a",)

    def __init__(self, a: Any) -> None:
        self.a = a

    @property
    def T(self) -> Any:
        return type(self)(self.a.T)

    def __getitem__(self, index: Any) -> Any:
        return type(self)(self.a[index])


class Toy(_ToyBase):
    """The toy exposing __array_interface__, as numpy does."""

    __slots__ = ()

    @property
    def __array_interface__(self) -> Any:
        return self.a.__array_interface__


class OpaqueToy(_ToyBase):
    """The toy without any protocol: only its plugin's data_ptr knows its address."""

    __slots__ = ()

    def tolist(self) -> Any:
        return self.a.tolist()


#: Ways to break the toy plugin, and what the kit must say about each.
BREAKS = {
    "data_ptr lies": r"data_ptr\(example float32 \(2, 3\)\) is 0x[0-9a-f]+, but "
    r"__array_interface__ says",
    "zero-copy converter copies": r"explain\(\) claims zero-copy, but the data pointers differ",
    "copy converter shares": r"shares the source's memory",
    "key reads identity": r"key\(\) differs for two C-contiguous float32 examples",
    "key ignores dtype": r"the same key .*\(dtype 'float32' vs 'float64'\)",
    "key ignores layout": r"the same key .*layout 'C' vs 'F'",
    "describe lies about dtype": r"describe\(example float64 \(2, 3\)\)\.dtype is float32, but "
    r"__array_interface__ says 8-byte items",
    "describe lies about layout": r"layout is 'C', but __array_interface__ says strides",
    "describe lies about alignment": r"\.aligned is False, but data_ptr 0x[0-9a-f]+ is 64-byte",
    "aligned_key missing": r"describe\(x\[::-1\] of a float32 example\)\.aligned is False, but "
    r"the spec has no aligned_key",
    "converter changes values": r"holds \[\[1\.0, 2\.0, 3\.0\], \[4\.0, 5\.0, 6\.0\]\], "
    r"expected \[\[0\.0, 1\.0, 2\.0\], \[3\.0, 4\.0, 5\.0\]\]",
    "converter changes dtype": r"has dtype float64, not float32",
    "copy lies about alignment": r"promise 64-byte aligned memory, but the result is not aligned "
    r"\(last step 'Toy\(a\)' \[toy\]",
    "view lies about writability": r"promise writable memory, but the result is read-only "
    r"\(last step 'toy.a' \[toy\]",
    "converter raises": r"raised ConversionError: Converter 'toy.a' \[toy->numpy\]",
    "converter raises BufferError": r"raised PluginWarning: Converter 'toy.a'",
    "example narrows": r"describe\(example float64 \(2, 3\)\)\.dtype is 'float32', not "
    r"'float64' \(example\(\) must build the dtype it is asked for, never narrow it\)",
    "array_types wrong": r"detected as 'no framework'",
}


class ToyPlugin:
    """The toy framework: honest unless ``broken`` names one of BREAKS."""

    def __init__(self, broken: str = "", cls: type[_ToyBase] = Toy) -> None:
        self.broken = broken
        self.cls = cls

    def describe(self, t: Any) -> Any:
        from interop_plugins.frameworks import numpy as npp

        info = npp.describe(t.a)._replace(framework="toy")
        if self.broken == "describe lies about dtype":
            info = info._replace(dtype="float32")
        elif self.broken == "describe lies about layout":
            info = info._replace(layout="C")
        elif self.broken == "describe lies about alignment":
            info = info._replace(aligned=False)
        return info

    def key(self, t: Any) -> Any:
        from interop_plugins.frameworks import numpy as npp

        k = npp.key(t.a)
        if self.broken == "key reads identity":
            return (id(t), k)
        if self.broken == "key ignores dtype":
            return k[1:]
        if self.broken == "key ignores layout":
            return t.a.dtype
        return k

    def aligned_key(self, t: Any) -> Any:
        from interop_plugins.frameworks import numpy as npp

        return npp.aligned_key(t.a)

    def data_ptr(self, t: Any) -> int:
        return int(t.a.ctypes.data) + (64 if self.broken == "data_ptr lies" else 0)

    def example(self, data: Any, dtype: str) -> Any:
        from interop_plugins.frameworks import numpy as npp

        if self.broken == "example narrows":
            dtype = "float32"
        return self.cls(npp.example(data, dtype))

    @hookimpl
    def interop_frameworks(self) -> list[FrameworkSpec]:
        wrong = {Toy: OpaqueToy, OpaqueToy: Toy}[self.cls]
        cls = wrong if self.broken == "array_types wrong" else self.cls
        return [
            FrameworkSpec(
                name="toy",
                array_types=(f"{__name__}.{cls.__name__}",),
                describe=self.describe,
                key=self.key,
                aligned_key=None if self.broken == "aligned_key missing" else self.aligned_key,
                data_ptr=self.data_ptr,
                example=self.example,
                dtypes=frozenset({"float32", "float64"}),
                package=Package(module=__name__),
                devices=Devices(visible=lambda: ["cpu"]),
            )
        ]

    @hookimpl
    def interop_converters(self) -> list[ConverterSpec]:
        broken, cls = self.broken, self.cls

        def to_numpy() -> Any:
            import numpy as np

            def convert(t: Any) -> Any:
                if broken == "zero-copy converter copies":
                    return t.a.copy()
                if broken == "converter changes values":
                    return t.a + 1
                if broken == "converter changes dtype":
                    return t.a.astype(np.float64)
                if broken == "converter raises":
                    raise RuntimeError("toy exploded")
                if broken == "converter raises BufferError":
                    raise BufferError("toy cannot export")
                if broken == "view lies about writability":
                    view = t.a.view()
                    view.flags.writeable = False
                    return view
                return t.a

            return convert

        def from_numpy() -> Any:
            from interop_plugins.frameworks import numpy as npp

            def unaligned_copy(a: Any) -> Any:
                out = npp.aligned_empty((a.size + 1,), a.dtype)[1:].reshape(a.shape)
                out[...] = a
                return cls(out)

            return unaligned_copy if broken == "copy lies about alignment" else cls

        copies = broken in ("converter changes values", "converter changes dtype")
        return [
            ConverterSpec(
                name="toy.a", source="toy", target="numpy", load=to_numpy, zero_copy=not copies
            ),
            ConverterSpec(
                name="Toy(a)",
                source="numpy",
                target="toy",
                load=from_numpy,
                zero_copy=broken not in ("copy converter shares", "copy lies about alignment"),
            ),
        ]


def toy_registry(plugin: ToyPlugin) -> Registry:
    """numpy and the toy only: the kit checks the toy against numpy."""
    from interop_plugins.frameworks import numpy as npp

    reg = Registry(builtins=False, entry_points=False)
    reg.register(npp, name="interop_plugins.frameworks.numpy")
    reg.register(plugin, name="toy")
    return reg


@pytest.mark.parametrize("cls", [Toy, OpaqueToy], ids=["with-protocol", "opaque"])
def test_honest_toy_conforms(np: Any, cls: type[_ToyBase]) -> None:
    done = check_framework("toy", registry=toy_registry(ToyPlugin(cls=cls)))
    assert "float32 -> numpy: zero-copy; back: zero-copy" in done, done
    views = [line for line in done if line.startswith("float32 views")]
    assert views == ["float32 views x.T, x[:, ::2], x[::-1], x[1:]: described, converted, "
                     "round-tripped"]  # fmt: skip
    assert any(line.startswith("dtypes it does not hold raise NoRouteError") for line in done)


@pytest.mark.parametrize("broken", sorted(BREAKS))
def test_kit_fails_on_a_broken_plugin(np: Any, broken: str) -> None:
    reg = toy_registry(ToyPlugin(broken))
    with pytest.raises(AssertionError, match=BREAKS[broken]) as caught:
        check_framework("toy", registry=reg)
    assert isinstance(caught.value, ConformanceError)
    assert str(caught.value).startswith("check_framework('toy'): ")


def test_a_lying_data_ptr_is_caught_without_any_protocol(np: Any) -> None:
    """An opaque array: the kit catches the lie through the zero-copy claim into numpy."""
    reg = toy_registry(ToyPlugin("data_ptr lies", cls=OpaqueToy))
    with pytest.raises(AssertionError, match=r"claims zero-copy, but the data pointers differ"):
        check_framework("toy", registry=reg)


def test_unknown_or_unusable_framework_names(np: Any) -> None:
    reg = toy_registry(ToyPlugin())
    with pytest.raises(AssertionError, match=r"no registered framework is called 'tyo'.*toy"):
        check_framework("tyo", registry=reg)
    with pytest.raises(AssertionError, match=r"has no example\(\)"):
        check_framework("numpy.generic", registry=reg)
    with pytest.raises(ValueError, match="toy does not hold dtype"):
        check_framework("toy", registry=reg, dtypes=["int64"])


def test_dtypes_and_others_narrow_the_run(np: Any) -> None:
    reg = toy_registry(ToyPlugin())
    done = check_framework("toy", registry=reg, dtypes=["float64"], others=[])
    assert not any(" -> " in line for line in done), done
    assert any(line.startswith("float64: identity") for line in done), done
    assert not any(line.startswith("float32") for line in done), done


# -- independent_data_ptr ---------------------------------------------------------------------


def test_independent_data_ptr_of_numpy_views(np: Any) -> None:
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    ro = a.copy()
    ro.flags.writeable = False
    for v in (a, a[1:], a[:, 1:], a.T, a[::-1], a[:, ::-2], a[2, 3, ...], ro):
        assert independent_data_ptr(v) == v.ctypes.data
    view = protocol_view(a[::-1])
    assert view is not None and view.protocol == "__array_interface__"
    assert (view.shape, view.strides, view.itemsize) == ((4, 6), (-24, 4), 4)
    assert protocol_view(ro).readonly is True  # type: ignore[union-attr]


def test_independent_data_ptr_of_torch_tensors(torch: Any) -> None:
    t = torch.arange(24, dtype=torch.float64).reshape(4, 6)
    for v in (t, t[1:], t[:, 1:], t.T, t[:, ::2], t[2, 3]):
        assert independent_data_ptr(v) == v.data_ptr()
    view = protocol_view(t[:, 1:])
    assert view is not None and view.protocol == "DLPack"
    assert (view.shape, view.strides, view.device) == ((4, 5), (48, 8), "cpu")
    # torch refuses to export a tensor that requires grad; no other protocol reads it.
    assert independent_data_ptr(torch.ones(3, requires_grad=True)) is None


def test_independent_data_ptr_of_jax_and_tensorflow(jax: Any, tf: Any) -> None:
    x = jax.numpy.arange(6.0, dtype="float32").reshape(2, 3)
    assert independent_data_ptr(x) == x.unsafe_buffer_pointer()
    from interop_plugins.frameworks import tensorflow as tfp

    t = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    assert independent_data_ptr(t) == tfp.data_ptr(t)


def test_independent_data_ptr_through_the_buffer_protocol() -> None:
    buf = bytearray(b"0123456789")
    base = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    assert independent_data_ptr(buf) == base
    assert independent_data_ptr(memoryview(buf)[3:]) == base + 3
    data = b"read-only bytes"
    assert independent_data_ptr(data) == ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value
    floats = array.array("d", [1.0, 2.0, 3.0])
    assert independent_data_ptr(floats) == floats.buffer_info()[0]
    view = protocol_view(memoryview(floats)[::-1])
    assert view is not None and view.protocol == "buffer protocol"
    assert (view.ptr, view.shape, view.strides) == (floats.buffer_info()[0] + 16, (3,), (-8,))


def test_independent_data_ptr_of_interfaces_and_capsules(np: Any) -> None:
    class CudaLike:
        __cuda_array_interface__ = {
            "shape": (2, 3), "typestr": "<f4", "data": (0xDEAD0000, False), "version": 3,
        }  # fmt: skip

    view = protocol_view(CudaLike())
    assert view == (0xDEAD0000, "__cuda_array_interface__", (2, 3), (12, 4), 4, False, None)

    a = np.arange(12, dtype=np.int16).reshape(3, 4)[:, ::2]

    class Producer:
        def __init__(self, versioned: bool) -> None:
            self.versioned = versioned

        def __dlpack__(self, **kwargs: Any) -> Any:
            return a.__dlpack__(max_version=(1, 0)) if self.versioned else a.__dlpack__()

    for versioned in (False, True):
        view = protocol_view(Producer(versioned))
        assert view is not None and view.protocol == "DLPack"
        assert (view.ptr, view.shape, view.strides, view.itemsize) == (
            a.ctypes.data, (3, 2), (8, 4), 2,
        )  # fmt: skip


def test_independent_data_ptr_of_non_arrays_is_none() -> None:
    class Refuses:
        def __dlpack__(self) -> Any:
            raise BufferError("no")

    for obj in (object(), 3, [1.0, 2.0], "text", Refuses()):
        assert independent_data_ptr(obj) is None


def test_ctypes_shared_capsule_prototypes_are_left_alone(np: Any) -> None:
    """Only private prototypes are used: ctypes.pythonapi's shared ones keep their types."""
    shared = ctypes.pythonapi.PyCapsule_GetPointer
    before = (shared.restype, shared.argtypes)
    valid = ctypes.pythonapi.PyCapsule_IsValid
    before_valid = (valid.restype, valid.argtypes)
    a = np.ones(3)

    class Producer:
        def __dlpack__(self) -> Any:
            return a.__dlpack__()

    assert independent_data_ptr(Producer()) == a.ctypes.data
    assert (shared.restype, shared.argtypes) == before
    assert (valid.restype, valid.argtypes) == before_valid


def test_the_kit_imports_no_framework() -> None:
    code = (
        "import sys, interop_core.testing; "
        "print(sorted(m for m in ('numpy', 'torch', 'jax', 'tensorflow', 'ml_dtypes') "
        "if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "[]"
