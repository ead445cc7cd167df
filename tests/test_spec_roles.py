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

from interop_core import PluginError, Registry, hookimpl
from interop_core.plugin import (
    CPU,
    Casting,
    Detection,
    Devices,
    Diagnostics,
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
        (lambda: ImportRules(switches=["x64"]), "ImportRules.switches is a tuple"),
        (lambda: Casting(astype="float32"), "Casting.astype is a function or None"),
        (lambda: Diagnostics(forms=[]), "Diagnostics.forms is a tuple"),
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


def test_the_docs_list_every_field_of_every_record() -> None:
    text = DOCS.read_text()
    section = text[text.index("### FrameworkSpec\n") : text.index("### KnownFramework")]
    documented = set(re.findall(r"^\| `(\w+)", section, re.M))
    top = {f.name for f in dataclasses.fields(FrameworkSpec)} - set(ROLES)
    assert top <= documented, f"FrameworkSpec fields not in docs: {sorted(top - documented)}"
    for name, record in ROLES.items():
        head = f"`FrameworkSpec.{name}`"
        assert head in section, f"docs/plugins.md has no part for {head}"
        part = section[section.index(head) :]
        part = part[: part.index("\n#### ")] if "\n#### " in part else part
        fields = {f.name for f in dataclasses.fields(record)}
        listed = set(re.findall(r"^\| `(\w+)", part, re.M))
        assert fields <= listed, f"{record.__name__} fields not in docs: {fields - listed}"
