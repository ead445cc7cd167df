"""The error hierarchy, argument errors, and rule 6 (a failing converter is routed around).

Rule-6 tests use two tiny fake frameworks ("boxa", "boxb") declared by a test plugin in an
isolated registry, so they need no real framework and control exactly what fails.
"""

from __future__ import annotations

import contextlib
import logging
import re
import sys
import traceback
import types
import warnings
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest
from adapters import aligned_numpy

import interop_core
from interop_core import (
    ConversionError,
    ConverterSpec,
    CopyRequiredError,
    DeviceError,
    FrameworkNotInstalledError,
    FrameworkSpec,
    InteropError,
    KnownFramework,
    NoRouteError,
    NotAnArrayError,
    OptionError,
    PluginError,
    TensorInfo,
    UnknownFrameworkError,
    explain,
    hookimpl,
    to,
)
from interop_core.declare.errors import PluginWarning
from interop_core.declare.specs import CPU
from interop_core.plugin import Package
from interop_core.testing import isolated_registry

# -- the hierarchy ------------------------------------------------------------------------

HIERARCHY = {
    "InteropError": Exception,
    "UnknownFrameworkError": LookupError,
    "FrameworkNotInstalledError": ImportError,
    "NoRouteError": LookupError,
    "CopyRequiredError": BufferError,
    "NotAnArrayError": TypeError,
    "ConversionError": RuntimeError,
    "PluginError": InteropError,
    "OptionError": TypeError,
    "DeviceError": ValueError,
}


@pytest.mark.parametrize(("name", "builtin"), list(HIERARCHY.items()))
def test_errors_importable_and_subclass_builtins(name: str, builtin: type) -> None:
    cls = getattr(interop_core, name)
    assert name in interop_core.__all__
    assert issubclass(cls, InteropError)
    assert issubclass(cls, builtin)


def test_unknown_framework_suggests_close_names(np: Any) -> None:
    a = np.zeros(3, dtype=np.float32)
    with pytest.raises(UnknownFrameworkError) as info:
        to(a, "pytorh")
    err = info.value
    assert isinstance(err, LookupError)
    assert "torch" in err.suggestions
    assert "Did you mean" in str(err) and "'torch'" in str(err)
    assert err.name == "pytorh"
    with pytest.raises(UnknownFrameworkError, match="'tensorflow'"):
        explain(a, "tensorflw")


@pytest.mark.parametrize("target", ["", "nosuchframework", None, 3, ("torch",)])
def test_unknown_targets_raise_unknown_framework(target: Any, np: Any) -> None:
    with pytest.raises(UnknownFrameworkError):
        to(np.zeros(2), target)


def test_module_that_is_no_framework_raises_unknown_framework(np: Any) -> None:
    import json

    with pytest.raises(UnknownFrameworkError, match="json"):
        to(np.zeros(2), json)


class GhostPlugin:
    """Declares a framework whose module does not exist."""

    @hookimpl
    def interop_frameworks(self) -> list[FrameworkSpec]:
        return [
            FrameworkSpec(
                name="ghostfw",
                aliases=("ghost",),
                array_types=("interop_no_such_module_xyz.Array",),
                describe=lambda x: None,  # type: ignore[arg-type, return-value]
                key=lambda x: None,
                data_ptr=lambda x: 0,
                example=lambda data, dtype: None,
                dtypes=frozenset({"float32"}),
                package=Package(distribution="ghostfw", install_hint="pip install ghostfw-runtime"),
            )
        ]


def test_framework_not_installed_has_install_hint(np: Any) -> None:
    a = np.zeros(3, dtype=np.float32)
    with isolated_registry(GhostPlugin(), builtins=True):
        for target in ("ghostfw", "Ghost"):
            with pytest.raises(FrameworkNotInstalledError) as info:
                to(a, target)
            err = info.value
            assert isinstance(err, ImportError)
            assert "pip install ghostfw-runtime" in str(err)
            assert err.install_hint == "pip install ghostfw-runtime"
            assert "ghostfw" in str(err)
        with pytest.raises(FrameworkNotInstalledError):
            explain(a, "ghostfw")
        # the built-ins keep working beside it
        assert to(a, "numpy") is a


class NamedOnlyPlugin:
    """Frameworks known by name only (KnownFramework): no plugin converts them."""

    @hookimpl
    def interop_frameworks(self) -> list[KnownFramework]:
        return [
            # Its module (the name, by default) is not importable: not installed.
            KnownFramework(name="farlib", install_hint="pip install farlib-interop",
                           aliases=("FL",)),
            # json stands for a framework that is installed, with no plugin for it.
            KnownFramework(name="jsonfw", install_hint="pip install jsonfw-interop",
                           module="json"),
            # Names a real FrameworkSpec declares: that one is used, never these.
            KnownFramework(name="ghostfw", install_hint="pip install the-wrong-hint"),
            KnownFramework(name="numpy", install_hint="pip install the-wrong-hint",
                           module="interop_no_such_module_xyz"),
        ]  # fmt: skip


def test_known_framework_not_installed_raises_its_install_hint(np: Any) -> None:
    a = np.zeros(3, dtype=np.float32)
    with isolated_registry(builtins=True) as reg:
        reg.register(NamedOnlyPlugin(), name="named-only")
        for target in ("farlib", "fl", "FarLib"):  # name or alias, any case
            for call in (to, explain):
                with pytest.raises(FrameworkNotInstalledError) as info:
                    call(a, target)
                assert type(info.value) is FrameworkNotInstalledError
                assert info.value.install_hint == "pip install farlib-interop"
                assert "'farlib' is known but not installed" in str(info.value)
                assert "pip install farlib-interop" in str(info.value)


def test_known_framework_installed_says_no_plugin_converts_it(np: Any) -> None:
    a = np.zeros(3, dtype=np.float32)
    with isolated_registry(builtins=True) as reg:
        reg.register(NamedOnlyPlugin(), name="named-only")
        for call in (to, explain):
            with pytest.raises(UnknownFrameworkError) as info:
                call(a, "JSONFW")
            assert type(info.value) is UnknownFrameworkError
            msg = str(info.value)
            assert "jsonfw is installed, but no installed interop_core plugin converts" in msg
            assert "'named-only' knows it by name only" in msg
            assert "jsonfw-interop" not in msg  # installing would not help


@pytest.mark.parametrize("known_first", [True, False], ids=["known-first", "spec-first"])
def test_a_framework_spec_takes_precedence_over_a_known_framework(
    np: Any, known_first: bool
) -> None:
    a = np.zeros(3, dtype=np.float32)
    plugins = [NamedOnlyPlugin(), GhostPlugin()]
    with isolated_registry(builtins=True) as reg:
        for plugin in plugins if known_first else plugins[::-1]:
            reg.register(plugin)
        with pytest.raises(FrameworkNotInstalledError) as info:
            to(a, "ghostfw")  # the spec's own install hint, not the KnownFramework's
        assert info.value.install_hint == "pip install ghostfw-runtime"
        assert "the-wrong-hint" not in str(info.value)
        assert to(a, "numpy") is a  # numpy's spec, installed, wins over its name
        assert explain(a, "numpy").steps == ()


def test_no_route_lists_refused_edges_with_plugins_and_reasons(np: Any, jax: Any) -> None:
    if jax.config.read("jax_enable_x64"):
        pytest.skip("x64 is on in this process")
    a = np.arange(4, dtype=np.int64)
    with pytest.raises(NoRouteError) as info:
        to(a, "jax")
    err = info.value
    assert isinstance(err, LookupError)
    msg = str(err)
    assert re.search(r"jax\.dlpack\.from_dlpack \[numpy->jax[,\]]", msg), msg
    assert "from plugin 'interop_plugins.exchange.dlpack'" in msg
    assert "jax_enable_x64" in msg
    assert err.refused, "the refusals are kept on the error"
    for r in err.refused:
        assert r.converter and r.plugin and "->" in r.edge and r.reason and r.target
        assert r.edge.endswith(f"->{r.target}") or "*" in r.edge
    x64 = [r for r in err.refused if r.category == "global_flag"]
    assert x64, "the x64 refusal is a record of its category"
    assert all(r.target == "jax" and r.reason.subject == "jax_enable_x64" for r in x64)
    assert any(r.plugin == "interop_plugins.exchange.dlpack" for r in x64)


# -- argument errors ----------------------------------------------------------------------


@pytest.mark.illtyped
@pytest.mark.parametrize("copy", ["yes", "True", 2, 0.5, [], "never"])
def test_bad_copy_value_raises_option_error(copy: Any, np: Any) -> None:
    a = np.zeros(3, dtype=np.float32)
    with pytest.raises(OptionError, match="copy must be None, True or False"):
        to(a, "numpy", copy=copy)
    with pytest.raises(OptionError):
        explain(a, "numpy", copy=copy)


@pytest.mark.illtyped
def test_copy_one_and_zero_are_rejected_or_honoured(np: Any, torch: Any) -> None:
    """copy=1/0 compare equal to True/False: either refuse them or give them those meanings."""
    a = np.arange(4, dtype=np.float32)
    try:
        t = to(a, "torch", copy=1)
    except OptionError:
        pass
    else:
        assert t.data_ptr() != a.ctypes.data, "copy=1 returned memory shared with the input"
    neg = np.arange(4, dtype=np.float32)[::-1]
    with pytest.raises((OptionError, CopyRequiredError)):
        to(neg, "torch", copy=0)


@pytest.mark.illtyped
def test_copy_one_does_not_poison_copy_true(np: Any, torch: Any) -> None:
    """The warm-path cache must not hand a copy=1 plan to a later copy=True call."""
    a = np.arange(4, dtype=np.float32)
    for _ in range(2):
        with contextlib.suppress(OptionError):
            to(a, "torch", copy=1)
    b = np.arange(4, dtype=np.float32)
    t = to(b, "torch", copy=True)
    assert t.data_ptr() != b.ctypes.data, "copy=True returned memory shared with the input"


# dtype= is an option of to() (a cast); a dtype it does not know is the OptionError.
@pytest.mark.parametrize("options", [{"bogus": 1}, {"source": "jax"}, {"dtype": "flaot32"}])
def test_unknown_option_raises_option_error(options: dict[str, Any], np: Any) -> None:
    a = np.zeros(3, dtype=np.float32)
    with pytest.raises(OptionError) as info:
        to(a, "numpy", **options)
    assert next(iter(options)) in str(info.value)
    with pytest.raises(OptionError):
        explain(a, "numpy", **options)


@pytest.mark.parametrize("device", ["cuda:x", "", "cuda:-1", "cpu:one", ":0"])
def test_bad_device_string_raises_device_error(device: str, np: Any) -> None:
    a = np.zeros(3, dtype=np.float32)
    with pytest.raises(DeviceError) as info:
        to(a, "numpy", device=device)
    assert isinstance(info.value, ValueError)
    assert repr(device) in str(info.value)
    with pytest.raises(DeviceError):
        explain(a, "numpy", device=device)


def test_device_that_is_no_device_raises_device_error(np: Any) -> None:
    with pytest.raises(DeviceError):
        to(np.zeros(2), "numpy", device=object())


def test_unavailable_device_raises_no_route_with_reason(np: Any, torch: Any) -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(NoRouteError, match=r"torch sees no cuda:0 device .*it sees: cpu") as info:
        to(np.zeros(2, dtype=np.float32), "torch", device="cuda:0")
    assert "Pass device= one of cpu" in str(info.value)


def test_not_an_array_error(np: Any) -> None:
    with pytest.raises(NotAnArrayError) as info:
        to(object(), "numpy")
    assert isinstance(info.value, TypeError)
    assert "builtins.object" in str(info.value)


def _chain(err: BaseException) -> list[BaseException]:
    """The exceptions a traceback of ``err`` shows before it (its context and causes)."""
    found: list[BaseException] = []
    seen = err.__cause__ or (None if err.__suppress_context__ else err.__context__)
    while seen is not None and seen not in found:
        found.append(seen)
        seen = seen.__cause__ or (None if seen.__suppress_context__ else seen.__context__)
    return found


@pytest.mark.illtyped
@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda a: to(a, "torchh"), UnknownFrameworkError),  # the plain warm lookup misses
        (lambda a: to(a, "nosuch", copy=False), UnknownFrameworkError),  # the keyed one misses
        (lambda a: to(a, "numpy", device="cpu:one"), DeviceError),
        (lambda a: to("numpy", a), UnknownFrameworkError),  # an unhashable target
        (lambda a: to([a, {"b": a}], "torchh"), UnknownFrameworkError),  # a container
    ],
    ids=["target", "target-copy", "device", "swapped", "container"],
)
def test_errors_carry_no_internal_lookup_as_context(
    call: Callable[[Any], Any], error: type[Exception], np: Any
) -> None:
    a = np.zeros(3, dtype=np.float32)
    to(a, "numpy")  # warm: the warm path's tables hold this type
    to(a, "numpy", copy=False)
    for _ in range(2):  # cold, then with the failure seen once
        with pytest.raises(error) as info:
            call(a)
        chain = _chain(info.value)
        internal = [e for e in chain if isinstance(e, (LookupError, TypeError))]
        assert not internal, f"{info.value!r} shows the internal {internal!r} before it"
        text = "".join(traceback.format_exception(info.value))
        assert "During handling of the above exception" not in text, text


def test_to_inside_a_tf_function_raises_the_interop_error_itself(
    np: Any, tf: Any, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    w = aligned_numpy(np.array([3.0, 4.0], dtype=np.float32))

    @tf.function  # AutoGraph on, as by default
    def good(t: Any) -> Any:
        return to(t, "tensorflow") * to(w, "tf")

    @tf.function
    def bad(t: Any) -> Any:
        return to(t, "torchh")

    x = tf.constant([1.0, 2.0])
    with caplog.at_level(logging.WARNING):
        assert good(x).numpy().tolist() == [3.0, 8.0]
        with pytest.raises(UnknownFrameworkError) as info:
            bad(x)
    assert type(info.value) is UnknownFrameworkError
    assert str(info.value).startswith("Unknown framework 'torchh'. Did you mean"), info.value
    assert info.value.name == "torchh"
    logged = caplog.text + "".join(capfd.readouterr())
    assert "could not transform" not in logged, logged


def test_conflicting_plugin_raises_plugin_error_naming_both(np: Any) -> None:
    class Clash:
        @hookimpl
        def interop_frameworks(self) -> list[FrameworkSpec]:
            return [box_spec("numpy", "interop_test_boxes.BoxA")]

    with isolated_registry(builtins=True) as reg:
        with pytest.raises(PluginError) as info:
            reg.register(Clash(), name="clash-plugin")
        msg = str(info.value)
        assert "clash-plugin" in msg and "interop_plugins.frameworks.numpy" in msg
        a = np.zeros(2)
        assert to(a, "numpy") is a  # the registry still works, numpy's own spec in it


# -- rule 6: fake frameworks and a flaky converter ------------------------------------------


class BoxA:
    """A fake array: a list of floats."""

    def __init__(self, values: list[float]) -> None:
        self.values = list(values)


class BoxB(BoxA):
    """The fake target framework's array."""


def box_describe(framework: str) -> Callable[[Any], TensorInfo]:
    def describe(x: Any) -> TensorInfo:
        n = len(x.values)
        return TensorInfo(framework, "float32", CPU, (n,), "C", False, True)

    return describe


def box_spec(name: str, path: str) -> FrameworkSpec:
    return FrameworkSpec(
        name=name,
        array_types=(path,),
        describe=box_describe(name),
        key=lambda x: "box",
        data_ptr=id,
        example=lambda data, dtype: None,
        dtypes=frozenset({"float32"}),
        package=Package(module=path.partition(".")[0]),
    )


@pytest.fixture
def boxes(monkeypatch: pytest.MonkeyPatch) -> Iterator[types.ModuleType]:
    """A module in sys.modules that owns BoxA and BoxB (detection looks only there)."""
    mod = types.ModuleType("interop_test_boxes")
    mod.BoxA = BoxA  # type: ignore[attr-defined]
    mod.BoxB = BoxB  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "interop_test_boxes", mod)
    yield mod


class BoxPlugin:
    """Frameworks boxa/boxb; a cheap 'flaky' converter and a dearer 'fallback'."""

    def __init__(self, flaky: Callable[[Any], Any], fallback: bool = True) -> None:
        self.flaky = flaky
        self.fallback = fallback
        self.calls: list[str] = []

    @hookimpl
    def interop_frameworks(self) -> list[FrameworkSpec]:
        return [
            box_spec("boxa", "interop_test_boxes.BoxA"),
            box_spec("boxb", "interop_test_boxes.BoxB"),
        ]

    @hookimpl
    def interop_converters(self) -> list[ConverterSpec]:
        def load_flaky() -> Callable[[Any], Any]:
            def run(x: Any) -> Any:
                self.calls.append("flaky")
                return self.flaky(x)

            return run

        def load_fallback() -> Callable[[Any], Any]:
            def run(x: Any) -> Any:
                self.calls.append("fallback")
                return BoxB(x.values)

            return run

        edges = [ConverterSpec("flaky box", "boxa", "boxb", load_flaky, zero_copy=True, cost=0.1)]
        if self.fallback:
            edges.append(
                ConverterSpec(
                    "fallback box", "boxa", "boxb", load_fallback, zero_copy=True, cost=5.0
                )
            )
        return edges


def raiser(exc: BaseException) -> Callable[[Any], Any]:
    def run(x: Any) -> Any:
        raise exc

    return run


@pytest.mark.parametrize("exc", [BufferError("buffer is gone"), NotImplementedError("nope")])
def test_rule6_failing_converter_is_excluded_and_replanned(
    exc: BaseException, boxes: types.ModuleType
) -> None:
    plugin = BoxPlugin(raiser(exc))
    with isolated_registry() as reg:
        reg.register(plugin, name="test-box-plugin")
        route = explain(BoxA([1.0, 2.0]), "boxb")
        assert [s.converter for s in route.steps] == ["flaky box"]
        with pytest.warns(PluginWarning) as record:
            out = to(BoxA([1.0, 2.0]), "boxb")
        assert isinstance(out, BoxB) and out.values == [1.0, 2.0]
        assert plugin.calls == ["flaky", "fallback"]
        messages = [str(w.message) for w in record if issubclass(w.category, PluginWarning)]
        assert len(messages) == 1, messages
        assert "flaky box" in messages[0] and "test-box-plugin" in messages[0]
        assert type(exc).__name__ in messages[0]
        # a later call still gets the right answer
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PluginWarning)
            again = to(BoxA([3.0]), "boxb")
        assert isinstance(again, BoxB) and again.values == [3.0]


def test_rule6_replans_only_once(boxes: types.ModuleType) -> None:
    """When the re-planned route fails the same way, a ConversionError names it."""
    plugin = BoxPlugin(raiser(BufferError("flaky gone")))
    with isolated_registry() as reg:
        reg.register(plugin, name="test-box-plugin")
        original = plugin.interop_converters

        def both_fail() -> list[ConverterSpec]:
            edges = original()
            return [edges[0], ConverterSpec("fallback box", "boxa", "boxb",
                                            lambda: raiser(BufferError("fallback gone")),
                                            zero_copy=True, cost=5.0)]  # fmt: skip

        plugin.interop_converters = hookimpl(both_fail)  # type: ignore[method-assign]
        reg.unregister(name="test-box-plugin")
        reg.register(plugin, name="test-box-plugin")
        with pytest.warns(PluginWarning) as warned, pytest.raises(ConversionError) as info:
            to(BoxA([1.0]), "boxb")
        # Each converter is excluded once, with its warning: the flaky one, then the fallback.
        ours = [str(w.message) for w in warned if issubclass(w.category, PluginWarning)]
        assert ["flaky box" in m for m in ours] == [True, False]
        assert "fallback box" in ours[1]
        assert "fallback box" in str(info.value) and "test-box-plugin" in str(info.value)
        assert isinstance(info.value.__cause__, BufferError)


def test_rule6_without_alternative_raises_interop_error(boxes: types.ModuleType) -> None:
    plugin = BoxPlugin(raiser(BufferError("gone")), fallback=False)
    with isolated_registry() as reg:
        reg.register(plugin, name="test-box-plugin")
        with pytest.warns(PluginWarning, match="flaky box"), pytest.raises(InteropError):
            to(BoxA([1.0]), "boxb")


@pytest.mark.parametrize("exc", [ValueError("bad value"), TypeError("bad type"),
                                 RuntimeError("boom"), KeyError("k")])  # fmt: skip
def test_other_converter_exception_becomes_conversion_error(
    exc: BaseException, boxes: types.ModuleType
) -> None:
    plugin = BoxPlugin(raiser(exc))
    with isolated_registry() as reg:
        reg.register(plugin, name="test-box-plugin")
        for _ in range(2):  # the slow path, then the warm path
            with warnings.catch_warnings():
                warnings.simplefilter("error", PluginWarning)  # no silent re-plan
                with pytest.raises(ConversionError) as info:
                    to(BoxA([1.0]), "boxb")
            msg = str(info.value)
            assert "flaky box" in msg and "test-box-plugin" in msg
            assert type(exc).__name__ in msg
            assert info.value.__cause__ is exc
        assert "fallback" not in plugin.calls


def test_converter_whose_load_fails_raises_conversion_error(boxes: types.ModuleType) -> None:
    class BadLoad(BoxPlugin):
        @hookimpl
        def interop_converters(self) -> list[ConverterSpec]:
            def load() -> Callable[[Any], Any]:
                raise RuntimeError("cannot build converter")

            return [ConverterSpec("bad load", "boxa", "boxb", load, zero_copy=True)]

    with isolated_registry() as reg:
        reg.register(BadLoad(lambda x: x), name="bad-load-plugin")
        with pytest.raises(ConversionError, match=r"bad load.*bad-load-plugin"):
            to(BoxA([1.0]), "boxb")


def test_converter_whose_load_cannot_import_raises_not_installed(
    boxes: types.ModuleType,
) -> None:
    class MissingImport(BoxPlugin):
        @hookimpl
        def interop_converters(self) -> list[ConverterSpec]:
            def load() -> Callable[[Any], Any]:
                import interop_no_such_module_xyz  # type: ignore[import-not-found]  # noqa: F401

                raise AssertionError("unreachable")

            return [ConverterSpec("needs module", "boxa", "boxb", load, zero_copy=True)]

    with isolated_registry() as reg:
        reg.register(MissingImport(lambda x: x), name="missing-import-plugin")
        with pytest.raises(FrameworkNotInstalledError) as info:
            to(BoxA([1.0]), "boxb")
        assert isinstance(info.value, ImportError)
        assert "pip install interop_no_such_module_xyz" in str(info.value)


def test_missing_framework_module_names_its_install_hint(boxes: types.ModuleType) -> None:
    """A converter whose framework import fails points at that framework's install line."""

    class NeedsNumpy(BoxPlugin):
        @hookimpl
        def interop_converters(self) -> list[ConverterSpec]:
            def load() -> Callable[[Any], Any]:
                raise ModuleNotFoundError("No module named 'numpy'", name="numpy")

            return [ConverterSpec("numpy based", "boxa", "boxb", load, zero_copy=True)]

    with isolated_registry(builtins=True) as reg:
        reg.register(NeedsNumpy(lambda x: x), name="needs-numpy")
        with pytest.raises(FrameworkNotInstalledError, match=r"interop-core\[numpy\]"):
            to(BoxA([1.0]), "boxb")


def test_describe_failure_is_a_conversion_error(boxes: types.ModuleType) -> None:
    """A describe() that raises surfaces as ConversionError naming the plugin."""

    class Broken:
        @hookimpl
        def interop_frameworks(self) -> list[FrameworkSpec]:
            def describe(x: Any) -> TensorInfo:
                raise ValueError("cannot describe")

            spec = box_spec("boxa", "interop_test_boxes.BoxA")
            return [replace(spec, describe=describe), box_spec("boxb", "interop_test_boxes.BoxB")]

    with isolated_registry() as reg:
        reg.register(Broken(), name="broken-describe")
        with pytest.raises(ConversionError, match=r"broken-describe.*cannot describe"):
            to(BoxA([1.0]), "boxb")


# -- errors that fit the input ------------------------------------------------------------


def test_no_route_leads_with_the_decisive_reason(np: Any, torch: Any, jax: Any) -> None:
    """float64 into JAX without x64: the first line names the flag; no unrelated lines."""
    if jax.config.read("jax_enable_x64"):
        pytest.skip("x64 is on in this process")
    a = np.zeros((2, 3), dtype=np.float64)
    assert a.flags.writeable
    with pytest.raises(NoRouteError) as info:
        to(a, "jax")
    first, *rest = str(info.value).splitlines()
    assert "jax_enable_x64" in first
    assert "CUDA" not in str(info.value) and "read-only" not in str(info.value)
    listed = [line for line in rest if line.startswith("  - ")]
    assert len(listed) == 1  # one line per converter and reason
    edges = listed[0].partition("[")[2].partition("]")[0].split(", ")
    assert "numpy->jax" in edges and all(e.endswith("->jax") for e in edges)  # into jax only
    assert len(info.value.refused) > len(edges)  # the full list stays on the error


def test_route_keeps_every_refusal(np: Any, tf: Any) -> None:
    a = np.asfortranarray(np.zeros((2, 3), dtype=np.float32))
    route = explain(a, "tensorflow")
    assert route.copies == 1
    assert any("C-contiguous" in r.reason for r in route.refusals)
    assert all(r.edge.endswith("->tensorflow") for r in route.refused)


KNOWN = [
    ("cupy", "pip install 'interop-core[cupy-cuda12x]'"),
    ("cp", "pip install 'interop-core[cupy-cuda12x]'"),
]


@pytest.mark.parametrize(("name", "hint"), KNOWN)
def test_known_frameworks_not_installed_say_what_to_install(np: Any, name: str, hint: str) -> None:
    from interop_core.engine.registry import importable

    if importable("cupy"):
        pytest.skip(f"{name} is installed here")
    with pytest.raises(FrameworkNotInstalledError) as info:
        to(np.zeros(2), name)
    assert hint in str(info.value) and "did you mean" not in str(info.value).lower()


def test_array_type_that_does_not_exist_is_reported_at_registration(np: Any) -> None:
    class Typo:
        @hookimpl
        def interop_frameworks(self) -> list[FrameworkSpec]:
            return [
                replace(box_spec("typo", "numpy.NDArray_typo"), package=Package(module="numpy"))
            ]

    with isolated_registry() as reg, pytest.raises(PluginError) as info:
        reg.register(Typo(), name="typo-plugin")
    assert "typo-plugin" in str(info.value) and "numpy.NDArray_typo" in str(info.value)


def test_array_type_missing_after_a_later_import_warns_naming_the_plugin(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Late:
        @hookimpl
        def interop_frameworks(self) -> list[FrameworkSpec]:
            return [box_spec("late", "interop_test_late.Missing")]

    monkeypatch.delitem(sys.modules, "interop_test_boxes", raising=False)
    with isolated_registry() as reg:
        reg.register(Late(), name="late-plugin")
        monkeypatch.setitem(sys.modules, "interop_test_late", types.ModuleType("interop_test_late"))
        with pytest.warns(PluginWarning, match="late-plugin.*interop_test_late.Missing"):
            reg.state.detect(object())
