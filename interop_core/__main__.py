"""Command line of interop_core: ``python -m interop_core COMMAND``.

Commands:

- ``doctor``: frameworks, plugins, devices and the route matrix, measured live.
- ``explain SOURCE TARGET``: the route ``to()`` would take, without converting anything, for
  an example of SOURCE (a framework: any dtype, shape and dense layout; ``--form sparse``,
  ``ragged``, ``table`` or another form its plugins declare) or for a file (SOURCE a path:
  safetensors, Parquet, Arrow IPC, .npy, .npz), told per tensor or column.
- ``graph``: the converter graph as Graphviz DOT, a Mermaid flowchart or text, or written to
  SVG (drawn without Graphviz where it is missing), PNG or PDF; ``--from``/``--to`` narrow
  it to how one framework reaches another.
- ``bench``: this machine's routes timed: warm ``to()`` per installed pair against the
  route's own steps, for a small and a larger array.

Exit status: 0 on success, 1 when interop_core refuses (no route, unknown or missing
framework) or a doctor cell is wrong, 2 for a usage error, an example the source framework
cannot build or a file that cannot be read.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .declare.errors import (
    FrameworkNotInstalledError,
    InteropError,
    TensorFileError,
    UnknownFrameworkError,
)
from .declare.specs import FrameworkSpec
from .face.api import default_registry, explain
from .face.doctor import doctor_report, native_stderr_silenced, print_doctor, wrong_cells
from .face.drawing import FORMATS, OutputError, graph_text, write_graph
from .face.example_arrays import (
    LAYOUT_CHOICES,
    ExampleError,
    describe_example,
    make_example,
    parse_shape,
)
from .face.example_forms import (
    DENSE,
    SPARSE_LAYOUTS,
    available,
    describe_form,
    make_form_example,
)
from .face.files import FileSourceError, looks_like_file, path_line, read_source

#: ``explain --copy``: the ``copy=`` argument of ``explain()``.
_COPY = {"none": None, "true": True, "false": False}


def run_doctor(args: argparse.Namespace) -> int:
    """``doctor``: print the report; 1 when a measured cell is wrong."""
    report = doctor_report(default_registry())
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
    else:
        print_doctor(report)
    return 1 if wrong_cells(report) else 0


class UsageError(Exception):
    """Options that do not go together (exit status 2)."""


class _Refused(Exception):
    """interop_core refuses a file's contents (exit status 1), with a hint for the CLI."""


def _source_spec(name: str) -> FrameworkSpec:
    """The framework SOURCE names, sources only included (polars, pandas, safetensors):
    ``resolve()`` answers for targets. Raises UnknownFrameworkError (with close names) or
    FrameworkNotInstalledError."""
    reg = default_registry()
    st = reg.load_all()
    found = st.names.get(name.lower())
    if found is None:
        return reg.resolve(name)  # raises, suggesting close names
    spec = st.frameworks[found]
    if not st.installed.get(found, False):
        raise FrameworkNotInstalledError(spec.name, spec.install_hint)
    return spec


def _is_framework(name: str) -> bool:
    return name.lower() in default_registry().load_all().names


def _explain_file(args: argparse.Namespace) -> tuple[str, Any]:
    """``explain`` of a file: the line about what was read, and the route(s)."""
    given = [f for f in ("form", "layout", "shape", "densify") if getattr(args, f)]
    if given or args.dtype is not None:
        flags = ", ".join(f"--{f}" for f in [*given, *(["dtype"] if args.dtype else [])])
        raise UsageError(
            f"{flags}: these describe an example to build; a file SOURCE is explained as it "
            "is (--columns picks columns of a table file)."
        )
    columns = args.columns.split(",") if args.columns else None
    src = read_source(args.source, columns)
    try:
        route = explain(src.obj, args.target, device=args.device, copy=_COPY[args.copy])
    except TensorFileError as exc:  # the project's own reader refuses the file
        raise FileSourceError(str(exc)) from None
    except InteropError as exc:
        if src.line and columns is None:  # a table or arrays the CLI read: some may convert
            raise _Refused(
                f"{exc}\n(--columns NAME,... explains only the columns or arrays named)"
            ) from None
        raise
    line = src.line
    if not line:  # a Path to() opened itself
        spec = default_registry().state.detect(src.obj)
        line = path_line(args.source, spec.name if spec else "?", len(route.routes))
    return line, route


def _explain_form(args: argparse.Namespace) -> tuple[str, Any]:
    """``explain --form``: an example of the form, and its route(s)."""
    if args.layout in LAYOUT_CHOICES:
        raise UsageError(f"--layout {args.layout} is a dense layout: it goes without --form.")
    if args.columns:
        raise UsageError("--columns picks columns of a file SOURCE.")
    reg = default_registry()
    spec = _source_spec(args.source)  # loads every plugin: the forms' too
    example = make_form_example(spec, args.form, args.layout, args.shape, args.dtype or "float32")
    if args.densify and not example.dense:
        raise UsageError(f"--densify: --form {args.form} has no dense form to make.")
    options = example.dense if args.densify else {}
    route = explain(example.obj, args.target, device=args.device, copy=_COPY[args.copy], **options)
    info = None
    if not hasattr(route, "routes"):  # one array, not a container of them
        owner = reg.state.detect(example.obj)
        info = owner.describe(example.obj) if owner is not None else None
    return describe_form(spec.name, example, info), route


def _explain_dense(args: argparse.Namespace) -> tuple[str, Any]:
    """``explain`` of a dense example array."""
    if args.layout in SPARSE_LAYOUTS:
        raise UsageError(f"--layout {args.layout} is a sparse layout: add --form sparse.")
    if args.densify:
        raise UsageError("--densify goes with --form sparse or ragged.")
    if args.columns:
        raise UsageError("--columns picks columns of a file SOURCE.")
    spec = _source_spec(args.source)
    if spec.example is None and spec.diagnostics.forms:
        raise ExampleError(
            f"{spec.name} builds no dense example arrays; pick a --form: {available(spec)}."
        )
    x = make_example(spec, args.shape or (2, 3), args.dtype or "float32", args.layout or "C")
    info = spec.describe(x)
    route = explain(x, args.target, device=args.device, copy=_COPY[args.copy])
    return describe_example(info), route


def run_explain(args: argparse.Namespace) -> int:
    """``explain``: print the route ``to()`` would take for an example or a file."""
    with native_stderr_silenced():
        try:
            if looks_like_file(args.source, _is_framework):
                line, route = _explain_file(args)
            elif args.form is not None and args.form.lower() != DENSE:
                line, route = _explain_form(args)
            else:
                line, route = _explain_dense(args)
        except (ExampleError, FileSourceError, UsageError) as exc:
            failure: tuple[int, str] | None = (2, str(exc))
        except (InteropError, _Refused) as exc:
            failure = (1, str(exc))
        else:
            failure = None
    if failure is not None:
        print(f"python -m interop_core explain: {failure[1]}", file=sys.stderr)
        return failure[0]
    print(line)
    print(route)
    return 0


def _names(args: argparse.Namespace, command: str) -> tuple[str | None, str | None] | None:
    """``--from``/``--to`` as framework names (None: not given); None after printing the
    error when one names no framework."""
    st = default_registry().load_all()
    found: list[str | None] = []
    for name in (args.source, args.target):
        if name is None:
            found.append(None)
        elif name.lower() in st.names:  # sources only too (polars, safetensors, dlpack)
            found.append(st.names[name.lower()])
        else:
            try:
                default_registry().resolve(name)  # raises, suggesting close names
            except UnknownFrameworkError as exc:
                print(f"python -m interop_core {command}: {exc}", file=sys.stderr)
                return None
            found.append(name)
    return found[0], found[1]


def run_graph(args: argparse.Namespace) -> int:
    """``graph``: print the converter graph, or write/render it to ``--output``."""
    reg = default_registry()
    names = _names(args, "graph")
    if names is None:
        return 1
    source, target = names
    if args.output is None:
        fmt = args.format or ("text" if sys.stdout.isatty() else "dot")
        sys.stdout.write(graph_text(reg, fmt, args.all, source, target))
        return 0
    try:
        how = write_graph(reg, args.output, args.format, args.all, source, target)
    except (OutputError, OSError) as exc:
        print(f"python -m interop_core graph: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, OutputError) else 1
    print(f"wrote {args.output} ({how})")
    return 0


def run_bench(args: argparse.Namespace) -> int:
    """``bench``: time this machine's routes; print a table or JSON."""
    from .face.bench import BenchError, bench_report, print_bench

    try:
        report = bench_report(default_registry(), args.source, args.target, args.quick)
    except BenchError as exc:
        print(f"python -m interop_core bench: {exc}", file=sys.stderr)
        return 2
    except InteropError as exc:
        print(f"python -m interop_core bench: {exc}", file=sys.stderr)
        return 1
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
    else:
        print_bench(report)
    return 0


def _para(text: str) -> str:
    """``text`` wrapped for a help screen that keeps its own line breaks (the examples)."""
    return textwrap.fill(text, 88)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``python -m interop_core``."""
    parser = argparse.ArgumentParser(
        prog="python -m interop_core",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    doc = sub.add_parser("doctor", help="frameworks, plugins, devices and the live route matrix")
    doc.add_argument("--json", action="store_true", help="print the report as JSON")
    doc.set_defaults(run=run_doctor)

    exp = sub.add_parser(
        "explain",
        help="the route to() would take for an example array or a file, without converting",
        description=_para(
            "Print the route to() would take from SOURCE to TARGET, step by step, "
            "with what it copies and why, without converting anything. SOURCE is a framework "
            "(an example array of it is built: --dtype, --shape, --layout, --form) or a file "
            "of a kind a plugin reads (a path or a known suffix: the plugins declare them, "
            "docs/cli.md lists the built-in ones), whose tensors or columns are "
            "explained one by one. Exit 1 when interop_core refuses (no route), 2 when SOURCE "
            "cannot build the example asked for or the file cannot be read."
        ),
        epilog="examples:\n"
        "  python -m interop_core explain numpy tensorflow --layout F\n"
        "  python -m interop_core explain scipy torch --form sparse --layout csr\n"
        "  python -m interop_core explain tensorflow torch --form ragged --shape 3,0,2\n"
        "  python -m interop_core explain polars jax --form table --shape 1000,4\n"
        "  python -m interop_core explain model.safetensors jax\n"
        "  python -m interop_core explain data.parquet torch --columns x,y",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    exp.add_argument(
        "source", metavar="SOURCE", help="framework of the example (name or alias), or a file"
    )
    exp.add_argument("target", metavar="TARGET", help="framework to convert to (name or alias)")
    exp.add_argument(
        "--form",
        default=None,
        metavar="FORM",
        help="what to build: dense (default), sparse, ragged, table (pyarrow, polars, "
        "pandas), or another form SOURCE's plugins declare (file, series); an unknown one "
        "lists those SOURCE has",
    )
    exp.add_argument("--dtype", default=None, help="canonical dtype (default float32)")
    exp.add_argument(
        "--shape",
        type=parse_shape,
        default=None,
        help="sizes, e.g. 2,3 (dense default) or 4,5,6; with --form ragged the row lengths "
        "(default 3,0,2,1); with --form table ROWS,COLUMNS (default 3,2); with --form sparse "
        "the dense shape (default 3,4)",
    )
    exp.add_argument(
        "--layout",
        choices=(*LAYOUT_CHOICES, *SPARSE_LAYOUTS),
        default=None,
        help="dense: C (default), F (transposed), strided (x[..., ::2]), negative (x[::-1]), "
        "broadcast (stride 0), readonly, unaligned (offset by one element); with --form "
        "sparse: coo (default), csr, csc, bsr",
    )
    exp.add_argument("--device", default=None, help="target device, e.g. cpu, cuda, cuda:1")
    exp.add_argument(
        "--copy",
        choices=tuple(_COPY),
        default="none",
        help="none: share memory when possible (default); true: always copy; false: never copy",
    )
    exp.add_argument(
        "--densify",
        action="store_true",
        help="with --form sparse or ragged: ask for a dense result, with the options the "
        "form declares (densify=True; ragged='pad', fill_value=0)",
    )
    exp.add_argument(
        "--columns",
        default=None,
        metavar="NAME,...",
        help="with a file SOURCE of a table or of named arrays: only these columns (arrays); "
        "the line explain prints first says how the file was read",
    )
    exp.set_defaults(run=run_explain)

    gr = sub.add_parser(
        "graph",
        help="the converter graph as DOT, Mermaid or text, or drawn to SVG/PNG/PDF",
        description=_para(
            "Print the converter graph: frameworks are nodes, each converter an edge "
            "labelled with its name (solid: zero-copy, dashed: copy, dotted: functions, "
            "iterators, pipelines; loops: copies and device moves within a framework), coloured "
            "by plugin. --from A --to B keeps how A reaches B: the converters of the routes of "
            "at most two hops (straight, or through one framework routes may pass through) and "
            "the steps within the frameworks on them; --from or --to alone keeps the edges "
            "leaving or entering it."
        ),
        epilog="examples:\n"
        "  python -m interop_core graph --from torch --to jax --format text\n"
        "  python -m interop_core graph --from numpy --output numpy.svg\n"
        "  python -m interop_core graph | dot -Tpng -o graph.png",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    gr.add_argument(
        "--format",
        choices=tuple(FORMATS),
        default=None,
        help="dot (Graphviz; the default when printing to a pipe or file), mermaid (a "
        "flowchart LR) or text (the default on a terminal)",
    )
    gr.add_argument(
        "--output",
        type=Path,
        default=None,
        metavar="FILE",
        help="write to FILE instead: .svg is rendered by Graphviz's dot, or drawn by "
        "interop_core itself where dot is missing; .png/.pdf need dot; .dot/.gv/.mmd/.txt "
        "are written as text",
    )
    gr.add_argument(
        "--from",
        dest="source",
        metavar="FRAMEWORK",
        default=None,
        help="only the edges leaving FRAMEWORK (with --to: how it reaches it)",
    )
    gr.add_argument("--to", dest="target", metavar="FRAMEWORK", default=None,
                    help="only the edges entering FRAMEWORK")  # fmt: skip
    gr.add_argument(
        "--all",
        action="store_true",
        help="include converters between frameworks that are not installed",
    )
    gr.set_defaults(run=run_graph)

    be = sub.add_parser(
        "bench",
        help="time this machine's routes: warm to() per installed pair, beside its own steps",
        description="Time the warm to(x, TARGET) of every installed pair (a source that "
        "builds example arrays, a target to() reaches) for a 64 B and a 1 MiB 1-d float32 array, "
        "against the route's own steps called directly (the converter functions to()'s plan "
        "cache holds: for one step, the framework's own call). Medians of interleaved "
        "rounds, in µs per call; pairs with no route are listed apart.",
        epilog="example: python -m interop_core bench --from numpy --quick",
    )
    be.add_argument(
        "--from", dest="source", metavar="FRAMEWORK", default=None, help="only pairs from FRAMEWORK"
    )
    be.add_argument("--to", dest="target", metavar="FRAMEWORK", default=None,
                    help="only pairs into FRAMEWORK")  # fmt: skip
    be.add_argument("--quick", action="store_true", help="fewer, shorter rounds (a few seconds)")
    be.add_argument("--json", action="store_true", help="print the report as JSON")
    be.set_defaults(run=run_bench)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m interop_core``."""
    args = build_parser().parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TensorFlow's C++ start-up chatter
    run: Callable[[argparse.Namespace], int] = args.run
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
