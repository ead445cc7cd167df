"""FrameworkSpec by role: the optional parts of a framework are records (Package, Detection,
ImportRules, Devices, Casting, Diagnostics), each validated on its own, and documented field
by field in docs/plugins.md."""

from __future__ import annotations

import dataclasses
import re
import types
from pathlib import Path
from typing import Any

import pytest

from interop_core import NotAnArrayError, PluginError, Registry, hookimpl
from interop_core.declare.errors import PluginWarning
from interop_core.plugin import (
    CPU,
    ArrayEdge,
    Casting,
    ConverterSpec,
    Detection,
    Devices,
    Diagnostics,
    FileReader,
    FrameworkSpec,
    ImportRules,
    Package,
    TensorInfo,
)

ROLES = {
    "package": Package, "detection": Detection, "rules": ImportRules,
    "devices": Devices, "casting": Casting, "diagnostics": Diagnostics,
}  # fmt: skip
DOCS = Path(__file__).resolve().parents[1] / "docs" / "plugins.md"


class Box:
    pass


def box(**roles: Any) -> FrameworkSpec:
    return FrameworkSpec(
        name="box", array_types=(f"{__name__}.Box",),
        describe=lambda x: TensorInfo("box", "float64", CPU, (1,), "C", False, True),
        key=lambda x: 0, data_ptr=id, dtypes=frozenset({"float64"}), **roles,
    )  # fmt: skip


def test_the_roles_default_to_empty_records() -> None:
    spec = box()
    for name, record in ROLES.items():
        assert getattr(spec, name) == record()
    assert spec.import_name == __name__.partition(".")[0]
    assert spec.install_hint == "pip install box"
    named = box(package=Package(module="json", distribution="boxlib"))
    assert (named.import_name, named.install_hint) == ("json", "pip install boxlib")


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda: Devices(visible=["cpu"]), "Devices.visible is a function or None"),
        (lambda: Devices(kinds="cpu"), "Devices.kinds is a tuple"),
        (lambda: Devices(allocator=object()), "Devices.allocator is an Allocator"),
        (lambda: Package(module=None), "Package.module is a str"),
        (lambda: Detection(claims="__dlpack__"), "Detection.claims is a function or None"),
        (lambda: Detection(hint="use a Path"), "Detection.hint is a function or None"),
        (lambda: ImportRules(switches=["x64"]), "ImportRules.switches is a tuple"),
        (lambda: Casting(astype="float32"), "Casting.astype is a function or None"),
        (lambda: Casting(canonical={"int64": "int32"}), "Casting.canonical is a function or None"),
        (lambda: Diagnostics(forms=[]), "Diagnostics.forms is a tuple"),
        (lambda: Diagnostics(files=[]), "Diagnostics.files is a tuple"),
        (
            lambda: FileReader(("npy",), ".npy", lambda p, c: p),
            "lower-case suffixes with their dot",
        ),
        (
            lambda: FileReader((".NPY",), ".npy", lambda p, c: p),
            "lower-case suffixes with their dot",
        ),
        (lambda: FileReader((".npy",), ".npy", "numpy.load"), "FileReader.read is a function"),
        # A role given flat, as the fields were before the records.
        (lambda: box(devices=lambda: ["cpu"]), "devices= takes a Devices record"),
        (lambda: box(rules=lambda key: None), "rules= takes a ImportRules record"),
    ],
)
def test_each_record_is_validated_on_its_own(make: Any, says: str) -> None:
    with pytest.raises(PluginError, match=re.escape(says)):
        make()


def test_a_plugin_with_a_flat_field_is_refused_by_name() -> None:
    """A plugin written against the flat spec fails when registered, naming the field."""
    mod = types.ModuleType("flat_plugin")

    @hookimpl
    def interop_frameworks() -> list[FrameworkSpec]:
        return [box(install_hint="pip install box")]

    mod.interop_frameworks = interop_frameworks  # type: ignore[attr-defined]
    reg = Registry(builtins=False, entry_points=False)
    with pytest.raises(PluginError, match=r"'flat_plugin' is invalid.*install_hint"):
        reg.register(mod, name="flat_plugin")


class Claimed:
    pass


def _hinting(hint: Any) -> types.ModuleType:
    """A plugin of Box arrays and a protocol that claims Claimed objects with ``hint``."""
    mod = types.ModuleType("hinting_plugin")

    @hookimpl
    def interop_frameworks() -> list[FrameworkSpec]:
        spec = box(detection=Detection(claims=lambda o: isinstance(o, Claimed), hint=hint))
        return [box(), dataclasses.replace(spec, name="claimed", array_types=())]

    mod.interop_frameworks = interop_frameworks  # type: ignore[attr-defined]
    return mod


def test_a_hint_is_added_to_the_not_an_array_message_and_a_failing_one_left_out() -> None:
    def hint(obj: Any) -> str | None:
        if isinstance(obj, int):
            return "Wrap the int in Claimed()."
        raise RuntimeError("a broken hint")

    reg = Registry(builtins=False, entry_points=False)
    reg.register(_hinting(hint), name="hinting_plugin")
    with pytest.raises(NotAnArrayError, match=r"Wrap the int in Claimed\(\)\.$"):
        reg.state.convert(3, "box", None, None, {})
    with pytest.raises(NotAnArrayError) as info:
        reg.state.convert("x", "box", None, None, {})  # the hint raises: no hint
    assert "broken" not in str(info.value) and "Claimed" not in str(info.value)


def _listed(part: str) -> set[str]:
    """The field names a docs table lists, from the backticked names of its first column."""
    cells = re.findall(r"^\| ([^|]*) \|", part, re.M)
    return {m for cell in cells for m in re.findall(r"`(\w+)", cell)}


def test_the_docs_list_every_field_of_every_record() -> None:
    text = DOCS.read_text()
    section = text[text.index("### FrameworkSpec\n") : text.index("### KnownFramework")]
    documented = _listed(section)
    top = {f.name for f in dataclasses.fields(FrameworkSpec)} - set(ROLES)
    assert top <= documented, f"FrameworkSpec fields not in docs: {sorted(top - documented)}"
    for name, record in ROLES.items():
        head = f"`FrameworkSpec.{name}`"
        assert head in section, f"docs/plugins.md has no part for {head}"
        part = section[section.index(head) :]
        part = part[: part.index("\n#### ")] if "\n#### " in part else part
        fields = {f.name for f in dataclasses.fields(record)}
        listed = _listed(part)
        assert fields <= listed, f"{record.__name__} fields not in docs: {fields - listed}"


def test_the_docs_list_every_field_of_a_converter_and_its_array_edge() -> None:
    text = DOCS.read_text()
    section = text[text.index("### ConverterSpec\n") : text.index("### PlanKey")]
    head, array = section.split("#### ArrayEdge", 1)
    for record, part in ((ConverterSpec, head), (ArrayEdge, array)):
        fields = {f.name for f in dataclasses.fields(record)}
        listed = _listed(part)
        assert fields <= listed, f"{record.__name__} fields not in docs: {fields - listed}"


def test_an_array_edge_record_is_validated_and_refused_on_other_kinds() -> None:
    with pytest.raises(PluginError, match=r"ArrayEdge\.forms is a frozenset"):
        ArrayEdge(forms={"sparse"})  # type: ignore[arg-type]
    with pytest.raises(PluginError, match="array= takes an ArrayEdge record"):
        ConverterSpec("e", "box", "box", load=lambda: id, zero_copy=False, array=True)  # type: ignore[arg-type]


def test_an_edge_of_another_kind_with_an_array_record_is_ignored() -> None:
    """Only edges of arrays read ArrayEdge: a function edge giving one would be believed about
    memory it never has, so the registry leaves it out and says why."""
    mod = types.ModuleType("function_edge_plugin")

    @hookimpl
    def interop_converters() -> list[ConverterSpec]:
        return [
            ConverterSpec(
                "odd function edge", "numpy", "torch", load=lambda: id, zero_copy=False,
                kind="function", array=ArrayEdge(readonly_result=True),
            ),
            ConverterSpec("plain function edge", "numpy", "torch", load=lambda: id,
                          zero_copy=False, kind="function"),
        ]  # fmt: skip

    mod.interop_converters = interop_converters  # type: ignore[attr-defined]
    reg = Registry(entry_points=False)
    with pytest.warns(PluginWarning, match="'odd function edge'.*declares array="):
        reg.register(mod, name="function_edge_plugin")
        names = {e.name for e in reg.state.declared}
    assert "plain function edge" in names and "odd function edge" not in names
