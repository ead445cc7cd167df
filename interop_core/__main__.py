"""Command line: ``python -m interop_core doctor`` and ``python -m interop_core explain``."""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import warnings
from importlib import metadata
from typing import Any

from . import __version__
from .api import default_registry
from .errors import InteropError
from .registry import Registry
from .router import convert_array, explain_array
from .specs import FrameworkSpec

_EXAMPLE = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]


def _version(spec: FrameworkSpec) -> str:
    if not spec.distribution:
        return "?"
    for dist in (spec.distribution, f"{spec.distribution}-cpu"):
        try:
            return metadata.version(dist)
        except (metadata.PackageNotFoundError, ValueError):
            continue
    return "?"


def measure_cell(reg: Registry, src: FrameworkSpec, dst: FrameworkSpec) -> dict[str, Any]:
    """Convert a contiguous float32 example live and say what really happened."""
    if "float32" not in src.dtypes or "float32" not in dst.dtypes:
        return {"result": "none", "why": "no float32"}
    try:
        x = src.example(_EXAMPLE, "float32")
        claimed = explain_array(reg, x, src, dst, None, None)
        y = convert_array(reg, x, src, dst, None, None, None)
    except InteropError as exc:
        return {"result": "none", "why": str(exc).splitlines()[0]}
    except Exception as exc:  # a plugin's example() or converter misbehaving: report it
        return {"result": "wrong", "why": f"{type(exc).__name__}: {exc}"}
    owner = reg.state.detect(y)
    if owner is None or owner.name != dst.name:
        return {"result": "wrong", "why": f"result is {type(y).__qualname__}, not {dst.name}"}
    shared = src.data_ptr(x) == dst.data_ptr(y)
    cell = {"result": "zero-copy" if shared else "copy", "steps": len(claimed.steps)}
    if shared != claimed.zero_copy:
        cell["why"] = f"explain() claimed zero_copy={claimed.zero_copy}, pointers say {shared}"
    return cell


def doctor_report(reg: Registry) -> dict[str, Any]:
    """Frameworks, plugins, devices and the live route matrix of this machine."""
    st = reg.state
    frameworks = []
    installed = []
    for spec in st.frameworks.values():
        row: dict[str, Any] = {"name": spec.name, "plugin": spec.plugin}
        if reg.installed(spec):
            row["version"] = _version(spec)
            try:
                row["devices"] = spec.devices() if spec.devices else []
                installed.append(spec)
            except Exception as exc:  # a framework that fails to import is reported, not fatal
                row["error"] = f"{type(exc).__name__}: {exc}"
        else:
            row["install"] = spec.install_hint
        frameworks.append(row)
    matrix = {s.name: {d.name: measure_cell(reg, s, d) for d in installed} for s in installed}
    plugins = [
        {"name": name, "distribution": reg.pm.distribution_of(name) or "registered at run time"}
        for name, _ in reg.pm.list_name_plugin()
    ]
    dropped = [d._asdict() for d in reg.pm.dropped]
    return {
        "interop_core": __version__,
        "python": platform.python_version(),
        "platform": f"{platform.system()} {platform.machine()}",
        "frameworks": frameworks,
        "plugins": plugins,
        "dropped": dropped,
        "converters": st.declared,
        "usable_converters": len(st.graph.edges),
        "matrix": matrix,
    }


_MARK = {"zero-copy": "zero-copy", "copy": "copy", "none": "none", "wrong": "WRONG"}


def print_doctor(report: dict[str, Any]) -> None:
    """The doctor report as text."""
    print(
        f"interop_core {report['interop_core']} on Python {report['python']} ({report['platform']})"
    )
    print("\nFrameworks:")
    for f in report["frameworks"]:
        if "version" in f and "error" not in f:
            devices = ", ".join(f["devices"])
            print(f"  {f['name']:<12} {f['version']:<10} devices: {devices:<14} [{f['plugin']}]")
        elif "error" in f:
            print(f"  {f['name']:<12} {f['version']:<10} BROKEN: {f['error']}")
        else:
            print(f"  {f['name']:<12} {'-':<10} not installed: {f['install']}")
    print(
        f"\nPlugins loaded ({report['converters']} converters, "
        f"{report['usable_converters']} usable with the installed frameworks):"
    )
    for p in report["plugins"]:
        print(f"  {p['name']}  ({p['distribution']})")
    print("Plugins dropped:" + ("" if report["dropped"] else " none"))
    for d in report["dropped"]:
        print(f"  {d['name']} ({d['distribution']}): {d['reason']}")
    names = list(report["matrix"])
    print("\nRoute matrix, measured now (contiguous float32 2x3; zero-copy = data pointers equal):")
    width = max([len(n) for n in names] + [11]) + 2
    print(" " * 14 + "".join(f"{n:<{width}}" for n in names))
    notes = []
    for src, row in report["matrix"].items():
        cells = []
        for dst, cell in row.items():
            mark = _MARK[cell["result"]]
            if "why" in cell:
                notes.append(f"  {src} -> {dst}: {cell['why']}")
                mark += "*"
            cells.append(f"{mark:<{width}}")
        print(f"  {src:<12}" + "".join(cells))
    for n in notes:
        print(n)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m interop_core``."""
    parser = argparse.ArgumentParser(prog="python -m interop_core", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    doc = sub.add_parser("doctor", help="frameworks, plugins, devices and the live route matrix")
    doc.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TensorFlow's C++ start-up chatter
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        report = doctor_report(default_registry())
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
    else:
        print_doctor(report)
    bad = [c for row in report["matrix"].values() for c in row.values() if c["result"] == "wrong"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
