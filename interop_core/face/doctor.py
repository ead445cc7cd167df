"""The ``doctor`` report: frameworks, plugins, devices and the route matrix, measured live.

Also :func:`native_stderr_silenced`, which the command line runs frameworks under (the C++
start-up lines frameworks write to file descriptor 2 sent to /dev/null).

Imported by the command line only; frameworks are imported when the report is measured.
"""

from __future__ import annotations

import os
import platform
import re
import sys
import textwrap
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from importlib import metadata
from typing import IO, Any

from .. import __version__
from ..declare.errors import InteropError
from ..declare.specs import (
    ALIGNMENT,
    ANY,
    FrameworkSpec,
    Kind,
    OrdinaryArrays,
    PlanKey,
)
from ..engine.planner import Goal
from ..engine.registry import Registry
from ..engine.state import State
from ..native import warm_path
from .api import explain, to, using_registry
from .example_arrays import ORDINARY_NBYTES, ExampleError, make_example, sizes_text
from .memory import _allocators as allocators
from .memory import aligned_memory

#: The array every cell of the matrix converts: contiguous float32, shape 2x3.
_EXAMPLE = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]

# -- running frameworks quietly ----------------------------------------------------------


#: A duplicate of the original stderr, kept open for the whole process: a logging handler
#: created while native output is silenced may hold it, and must keep working afterwards.
_python_stderr: IO[str] | None = None


def _writes_to_fd2(stream: Any) -> bool:
    try:
        return bool(stream is not None and stream.fileno() == 2)
    except (AttributeError, OSError, ValueError):  # pytest's capture, StringIO, closed
        return False


@contextmanager
def native_stderr_silenced() -> Iterator[None]:
    """Send what native code writes to file descriptor 2 to /dev/null for the block.

    Frameworks log from C++ when they are imported or first run (TensorFlow's absl,
    oneDNN and cpu_feature_guard lines) straight to descriptor 2, which no Python-level
    setting reaches. Python's own ``sys.stderr`` (warnings, logging, tracebacks) keeps
    going to the real stderr: it is pointed at a duplicate of the original descriptor
    while the block runs. Both are restored when the block ends, even by an exception.
    """
    global _python_stderr
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (AttributeError, OSError, ValueError):  # no descriptor 2: nothing to silence
        yield
        return
    python_stream = sys.stderr
    swapped = False
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, 2)
        finally:
            os.close(devnull)
        if _writes_to_fd2(python_stream):
            if _python_stderr is None or _python_stderr.closed:
                _python_stderr = os.fdopen(
                    os.dup(saved),
                    "w",
                    buffering=1,
                    encoding=getattr(python_stream, "encoding", None) or "utf-8",
                    errors="backslashreplace",
                )
            sys.stderr = _python_stderr
            swapped = True
        yield
    finally:
        if swapped:
            sys.stderr.flush()
            sys.stderr = python_stream
        os.dup2(saved, 2)
        os.close(saved)


# -- measuring ---------------------------------------------------------------------------


def _version(spec: FrameworkSpec) -> str:
    """The installed version of the framework's distribution (or its -cpu build), or "?"."""
    if not spec.package.distribution:
        return "?"
    for dist in (spec.package.distribution, f"{spec.package.distribution}-cpu"):
        try:
            return metadata.version(dist)
        except (metadata.PackageNotFoundError, ValueError):
            continue
    # A framework built per platform has other names (cupy-cuda12x): ask who provides it
    # (a scan of every installed distribution, so only when the names above fail).
    for dist in metadata.packages_distributions().get(spec.import_name, []):
        return metadata.version(dist)
    return "?"


def measure_cell(reg: Registry, src: FrameworkSpec, dst: FrameworkSpec) -> dict[str, Any]:
    """Convert a contiguous float32 example live and say what really happened.

    ``reg`` must be the default registry (``to()`` and ``explain()`` plan with it).
    """
    if "float32" not in src.dtypes or "float32" not in dst.dtypes or src.example is None:
        return {"result": "none", "why": "no float32"}
    try:
        x = src.example(_EXAMPLE, "float32")
        claimed = explain(x, dst.name)
        y = to(x, dst.name)
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


def measure_arrays(reg: Registry, arrays: Sequence[Any], dst: FrameworkSpec) -> dict[str, Any]:
    """Convert each of ``arrays`` (one source framework) to ``dst`` and say what happened.

    The cell is "zero-copy" when every result shares its source's memory; "copy
    (alignment)" when every array that was copied starts off a 64-byte boundary (what
    JAX and TensorFlow need to share it) and an aligned copy of one of them is shared;
    else "copy". ``arrays`` and ``shared`` count. Read by data pointers, like
    :func:`measure_cell`.
    """
    shared = steps = disagree = 0
    copied_aligned = False
    unaligned: Any = None  # an array that was copied and is not aligned
    for x in arrays:
        try:
            src = reg.state.detect(x)
            claimed = explain(x, dst.name)
            y = to(x, dst.name)
        except InteropError as exc:
            return {"result": "none", "why": str(exc).splitlines()[0]}
        except Exception as exc:  # a converter misbehaving: report it
            return {"result": "wrong", "why": f"{type(exc).__name__}: {exc}"}
        owner = reg.state.detect(y)
        if src is None or owner is None or owner.name != dst.name:
            return {"result": "wrong", "why": f"result is {type(y).__qualname__}, not {dst.name}"}
        ptr = src.data_ptr(x)
        same = ptr == dst.data_ptr(y)
        shared += same
        copied_aligned |= not same and ptr % ALIGNMENT == 0
        if not same and ptr % ALIGNMENT and unaligned is None:
            unaligned = x
        disagree += same != claimed.zero_copy
        steps = max(steps, len(claimed.steps))
        del y  # a copy of 16 MiB need not outlive its check
    if shared == len(arrays):
        result = "zero-copy"
    elif copied_aligned or not _shared_when_aligned(reg, unaligned, dst):
        result = "copy"
    else:
        result = "copy (alignment)"
    cell: dict[str, Any] = {
        "result": result, "steps": steps, "arrays": len(arrays), "shared": shared
    }  # fmt: skip
    if disagree:
        cell["why"] = f"explain() disagreed with the data pointers for {disagree} of {len(arrays)}"
    return cell


def _shared_when_aligned(reg: Registry, x: Any, dst: FrameworkSpec) -> bool:
    """Whether a 64-byte aligned copy of ``x`` (its framework's own copy) converts to
    ``dst`` zero-copy, by data pointers: then alignment alone made ``x`` copy."""
    src = reg.state.detect(x)
    if src is None:
        return False
    try:
        twin = to(x, src.name, copy=True)
        return bool(
            # the same array but for its alignment (a copy may change layout or read-only)
            src.describe(twin)._replace(aligned=False) == src.describe(x)
            and src.data_ptr(twin) % ALIGNMENT == 0
            and src.data_ptr(twin) == dst.data_ptr(to(twin, dst.name))
        )
    except Exception:  # no aligned copy, or no route for it: not an alignment copy
        return False


def measure_rows(
    reg: Registry, sources: list[FrameworkSpec], targets: list[FrameworkSpec]
) -> tuple[dict[str, dict[str, dict[str, Any]]], dict[str, dict[str, Any]], dict[str, str]]:
    """The matrix: a row per source's example, and rows of arrays made as user code makes
    them (``FrameworkSpec.diagnostics.ordinary``; one named after its framework takes that
    framework's row, and the example moves to "<name>, 64-byte aligned"). Also what each row
    measured, and the row of each source's example."""
    installed = {s.name for s in sources}
    block = _aligned_block()
    matrix: dict[str, dict[str, dict[str, Any]]] = {}
    rows: dict[str, dict[str, Any]] = {}
    example_rows: dict[str, str] = {}

    def example_row(s: FrameworkSpec, label: str, what: str) -> None:
        matrix[label] = {d.name: measure_cell(reg, s, d) for d in targets}
        rows[label] = {"what": what, "framework": s.name, "example": True}
        example_rows[s.name] = label

    for s in sources:
        own = [r for r in s.diagnostics.ordinary if set(r.needs) <= installed]
        if not any(r.label == s.name for r in own):
            example_row(s, s.name, f"a 2x3 array {s.name} allocated (its example())")
        for row in sorted(own, key=lambda r: r.label != s.name):  # the framework's own first
            arrays = row.build(ORDINARY_NBYTES)
            matrix[row.label] = {d.name: measure_arrays(reg, arrays, d) for d in targets}
            aligned = sum(s.data_ptr(a) % ALIGNMENT == 0 for a in arrays)
            rows[row.label] = {
                "what": row.what.replace("{sizes}", sizes_text()), "framework": s.name,
                "example": False,
                "arrays": len(arrays), "aligned": aligned,
            }  # fmt: skip
            del arrays
            if block is not None:  # the same arrays, allocated with the allocators on
                with block:
                    arrays = row.build(ORDINARY_NBYTES)
                label = f"{row.label}, aligned_memory()"
                matrix[label] = {d.name: measure_arrays(reg, arrays, d) for d in targets}
                rows[label] = {
                    "what": "the same, allocated inside interop_core.aligned_memory()",
                    "framework": s.name, "example": False, "arrays": len(arrays),
                    "aligned": sum(s.data_ptr(a) % ALIGNMENT == 0 for a in arrays),
                }  # fmt: skip
                del arrays
            if row.label == s.name:
                example_row(
                    s, f"{s.name}, 64-byte aligned",
                    f"a 2x3 {s.name} array on a 64-byte boundary (its example())",
                )  # fmt: skip
    return matrix, rows, example_rows


def _aligned_block() -> aligned_memory | None:
    """A block that switches on every installed aligned allocator, or None where there is
    none to switch (none declared, or its C extension not built)."""
    try:
        usable = all(a.available() is None for a in allocators())
    except InteropError:
        return None
    return aligned_memory() if usable else None


def alignment_bound(
    src: FrameworkSpec, targets: Iterable[FrameworkSpec], matrix_row: dict[str, dict[str, Any]]
) -> list[str]:
    """Targets whose zero-copy route from ``src`` holds only for 64-byte aligned buffers.

    Asks ``explain()`` about an example of ``src`` offset by one element (not aligned)
    for each target the matrix measured zero-copy; a route that then copies depends on
    alignment. Sources that cannot build such a view are skipped.
    """
    try:
        x = make_example(src, (2, 3), "float32", "unaligned")
    except ExampleError:
        return []
    bound = []
    for dst in targets:
        if matrix_row.get(dst.name, {}).get("result") != "zero-copy" or dst.name == src.name:
            continue
        try:
            if not explain(x, dst.name).zero_copy:
                bound.append(dst.name)
        except Exception:  # no route for the unaligned view either: nothing to say here
            continue
    return bound


def doctor_report(reg: Registry) -> dict[str, Any]:
    """Frameworks, plugins, devices and the live route matrix of this machine.

    The matrix has a row per framework's example and rows of arrays made the way user
    code makes them (``FrameworkSpec.diagnostics.ordinary``: numpy's own allocations, which JAX and
    TensorFlow copy when they are not 64-byte aligned); ``rows`` says what each row
    measured. Frameworks are imported and measured with ``reg`` as the default registry,
    their native stderr silenced, and without their DeprecationWarnings.
    """
    st = reg.load_all()  # every framework, imported or not
    frameworks = []
    installed = []
    with using_registry(reg), native_stderr_silenced(), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for spec in st.frameworks.values():
            row: dict[str, Any] = {"name": spec.name, "plugin": spec.plugin}
            if not spec.target:
                row["source_only"] = spec.detection.protocol or spec.name
            if reg.state.installed.get(spec.name, False):
                row["version"] = _version(spec)
                try:
                    visible = spec.devices.visible
                    row["devices"] = visible() if visible is not None else []
                except Exception as exc:  # a framework that fails to import is reported
                    row["error"] = f"{type(exc).__name__}: {exc}"
                else:  # one that finds no device (CuPy without a GPU) has nothing to measure
                    if row["devices"] or visible is None:
                        installed.append(spec)
            else:
                row["install"] = spec.install_hint
            frameworks.append(row)
        # Rows: what can build an example; columns: what to() may target.
        sources = [s for s in installed if s.example is not None]
        targets = [d for d in installed if d.target]
        matrix, rows, example_rows = measure_rows(reg, sources, targets)
        aligned_only = {
            s.name: alignment_bound(s, targets, matrix[example_rows[s.name]]) for s in sources
        }
        ordinary = {row.label: row for s in sources for row in s.diagnostics.ordinary}
    plugins = [
        {"name": name, "distribution": reg.pm.distribution_of(name) or "registered at run time"}
        for name, _ in reg.pm.list_name_plugin()
    ]
    return {
        "interop_core": __version__,
        "warm_path": warm_path(),
        "python": platform.python_version(),
        "platform": f"{platform.system()} {platform.machine()}",
        "frameworks": frameworks,
        "plugins": plugins,
        "dropped": [d._asdict() for d in reg.pm.dropped],
        "converters": len(st.declared),
        "usable_converters": len(st.graph.edges),
        "matrix": matrix,
        "rows": rows,
        "notes": alignment_notes(aligned_only, matrix, rows, ordinary),
        "kinds": [
            {"name": k.name, "plural": k.plural, "usage": k.usage, "plugin": k.plugin}
            for k in st.graph.kinds.values()
        ],
        # Per kind converted once and used many times (functions, pipelines, ...).
        **{k.plural: kind_routes(st, k) for k in st.graph.kinds.values() if not k.warm},
    }


def kind_routes(st: State, kind: Kind) -> dict[str, dict[str, list[str]]]:
    """For each installed framework that owns objects of ``kind`` (has edges of it leaving),
    the converters of the route such an object takes to each other framework (planned, not
    run: [] when there is none). A kind that becomes another (a pipeline: an iterator), or
    has edges to any framework, is routed to every installed framework; others to the
    frameworks their edges reach."""
    edges = [e for e in st.graph.edges if e.kind == kind.name]
    owners = {e.source for e in edges} - {ANY}
    sources = [n for n in st.frameworks if n in owners]
    if kind.becomes or any(e.target == ANY for e in edges):
        targets = [n for n, s in st.frameworks.items() if s.target and st.installed.get(n)]
    else:
        reached = owners | {e.target for e in edges}
        targets = [n for n in st.frameworks if n in reached]
    routes: dict[str, dict[str, list[str]]] = {}
    for src in sources:
        start = PlanKey(kind.name, src, "", None)
        routes[src] = {}
        for dst in targets:
            if dst != src:
                found = st.graph.search(start, Goal(dst, "", kind.becomes))
                routes[src][dst] = [e.name for _, e, _ in found.path] if found.found else []
    return routes


def wrong_cells(report: dict[str, Any]) -> int:
    """How many cells of the report's matrix measured something wrong (exit status 1)."""
    return sum(c["result"] == "wrong" for row in report["matrix"].values() for c in row.values())


# -- printing ----------------------------------------------------------------------------


def _join(items: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def alignment_notes(
    aligned_only: dict[str, list[str]],
    matrix: dict[str, dict[str, dict[str, Any]]] | None = None,
    rows: dict[str, dict[str, Any]] | None = None,
    ordinary: Mapping[str, OrdinaryArrays] | None = None,
) -> list[str]:
    """The notes printed under the matrix about routes that need 64-byte alignment, and the
    notes ``ordinary`` rows declare about their "copy (alignment)" cells."""
    pairs = [f"{src} -> {dst}" for src, dsts in aligned_only.items() for dst in dsts]
    notes = []
    if pairs:
        notes.append(
            f"{_join(pairs)} share memory only with 64-byte aligned buffers; an unaligned "
            "one is copied once."
        )
    matrix, rows, ordinary = matrix or {}, rows or {}, ordinary or {}
    for label, row in ordinary.items():
        cells = matrix.get(label, {})
        copied = [dst for dst, cell in cells.items() if cell["result"] == "copy (alignment)"]
        if not row.note or not copied:
            continue
        measured = rows.get(label, {})
        k = measured.get("aligned", 0)
        seen = (
            f" ({k} of the {measured['arrays']} measured here {'was' if k == 1 else 'were'})"
            if "arrays" in measured else ""
        )  # fmt: skip
        # Rows built over these arrays (tensors sharing them) are copied for the same reason.
        also = "".join(
            f" and {other.what}"
            for name, other in ordinary.items()
            if name != label and name in matrix and not other.note
            and measured.get("framework") in other.needs
        )  # fmt: skip
        fill = {"{seen}": seen, "{also}": also, "{targets}": _join(copied)}
        note = row.note
        for field, value in fill.items():
            note = note.replace(field, value)
        notes.append(note)
    return notes


def _wrap(text: str, first: str) -> str:
    """``text`` wrapped at 100 columns after ``first``, never inside "a -> b"."""
    kept = text.replace(" -> ", "\u00a0->\u00a0")  # textwrap breaks only at ASCII spaces
    kept = re.sub(r"(\d) (B|KiB|MiB)\b", "\\1\u00a0\\2", kept)  # nor inside "16 MiB"
    lines = textwrap.wrap(kept, 100, initial_indent=first, subsequent_indent="  ")
    return "\n".join(lines).replace("\u00a0", " ")


_MARK = {
    "zero-copy": "zero-copy", "copy": "copy", "copy (alignment)": "copy (alignment)",
    "none": "none", "wrong": "WRONG",
}  # fmt: skip


def print_doctor(report: dict[str, Any]) -> None:
    """The doctor report as text."""
    print(
        f"interop_core {report['interop_core']} on Python {report['python']} ({report['platform']})"
    )
    print(f"C extensions: to()'s warm path runs {report['warm_path']}")
    print("\nFrameworks:")
    frameworks = [f for f in report["frameworks"] if "source_only" not in f]
    w = max([len(f["name"]) for f in frameworks] + [12])
    for f in frameworks:
        if "version" in f and "error" not in f:
            devices = ", ".join(f["devices"]) or "none found (not measured)"
            print(f"  {f['name']:<{w}} {f['version']:<10} devices: {devices:<14} [{f['plugin']}]")
        elif "error" in f:
            print(f"  {f['name']:<{w}} {f['version']:<10} BROKEN: {f['error']}")
        else:
            print(f"  {f['name']:<{w}} {'-':<10} not installed: {f['install']}")
    sources = [f for f in report["frameworks"] if "source_only" in f and "install" not in f]
    if sources:
        print("\nAlso converted from (sources only):")
        sw = max(len(f["name"]) for f in sources)
        for f in sources:
            what = f["source_only"] if f["source_only"] != f["name"] else ""
            print(f"  {f['name']:<{sw}}  [{f['plugin']}]  {what}".rstrip())
    print(
        f"\nPlugins loaded ({report['converters']} converters, "
        f"{report['usable_converters']} usable with the installed frameworks):"
    )
    for p in report["plugins"]:
        print(f"  {p['name']}  ({p['distribution']})")
    print("Plugins dropped:" + ("" if report["dropped"] else " none"))
    for d in report["dropped"]:
        print(f"  {d['name']} ({d['distribution']}): {d['reason']}")
    names = list(next(iter(report["matrix"].values()), {}))
    print("\nRoute matrix, measured now (contiguous float32; zero-copy = data pointers equal):")
    marks = [_MARK[c["result"]] + "*" for row in report["matrix"].values() for c in row.values()]
    width = max([len(n) for n in names] + [len(m) for m in marks] + [11]) + 2
    first = max([len(src) for src in report["matrix"]] + [12]) + 2
    print((" " * (first + 2) + "".join(f"{n:<{width}}" for n in names)).rstrip())
    notes = []
    for src, row in report["matrix"].items():
        cells = []
        for dst, cell in row.items():
            mark = _MARK[cell["result"]]
            if "why" in cell:
                notes.append(f"  {src} -> {dst}: {cell['why']}")
                mark += "*"
            cells.append(f"{mark:<{width}}")
        print(f"  {src:<{first}}" + "".join(cells).rstrip())
    rows = report.get("rows", {})
    if not all(r["example"] for r in rows.values()):  # say what each row is once they differ
        own = [label for label, r in rows.items() if r["example"] and label == r["framework"]]
        said = [f"{label}: {r['what']}" for label, r in rows.items() if label not in own]
        if own:  # with numpy alone, every row is one of numpy's
            said.append(f"{_join(own)}: a 2x3 array the framework allocated")
        print(_wrap("; ".join(said) + ".", "Rows: "))
    for n in notes:
        print(n)
    for n in report.get("notes", ()):
        print(_wrap(n, "Note: "))
    for kind in report.get("kinds", ()):
        if report.get(kind["plural"]):
            usage = f" ({kind['usage']})" if kind["usage"] else ""
            print(f"\n{kind['name'].capitalize()} routes, planned{usage}:")
            for src, row in report[kind["plural"]].items():
                for dst, steps in row.items():
                    print(f"  {src} -> {dst}: {' then '.join(steps) if steps else 'none'}")
