"""Command line of interop_core: ``python -m interop_core COMMAND``.

Commands:

- ``doctor``: frameworks, plugins, devices and the route matrix, measured live.
- ``explain SOURCE TARGET``: the route ``to()`` would take for an example array of SOURCE
  (any dtype, shape and layout), without converting it.
- ``graph``: the converter graph as Graphviz DOT or a Mermaid flowchart, or rendered to
  SVG/PNG/PDF through Graphviz's ``dot``.

Exit status: 0 on success, 1 when interop_core refuses (no route, unknown or missing
framework) or a doctor cell is wrong, 2 for a usage error or an example the source framework
cannot build.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

from .declare.errors import InteropError
from .face.api import default_registry, explain
from .face.doctor import doctor_report, native_stderr_silenced, print_doctor, wrong_cells
from .face.drawing import OutputError, graph_text, write_graph
from .face.example_arrays import (
    LAYOUT_CHOICES,
    ExampleError,
    describe_example,
    make_example,
    parse_shape,
)

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


def run_explain(args: argparse.Namespace) -> int:
    """``explain``: print the route ``to()`` would take for an example array."""
    reg = default_registry()
    with native_stderr_silenced():
        try:
            spec = reg.resolve(args.source)
            x = make_example(spec, args.shape, args.dtype, args.layout)
            info = spec.describe(x)
            route = explain(x, args.target, device=args.device, copy=_COPY[args.copy])
        except ExampleError as exc:
            failure: tuple[int, str] | None = (2, str(exc))
        except InteropError as exc:
            failure = (1, str(exc))
        else:
            failure = None
    if failure is not None:
        print(f"python -m interop_core explain: {failure[1]}", file=sys.stderr)
        return failure[0]
    print(describe_example(info))
    print(route)
    return 0


def run_graph(args: argparse.Namespace) -> int:
    """``graph``: print the converter graph, or write/render it to ``--output``."""
    reg = default_registry()
    if args.output is None:
        sys.stdout.write(graph_text(reg, args.format or "dot", args.all))
        return 0
    try:
        write_graph(reg, args.output, args.format, args.all)
    except (OutputError, OSError) as exc:
        print(f"python -m interop_core graph: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, OutputError) else 1
    print(f"wrote {args.output}")
    return 0


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
        help="the route to() would take for an example array, without converting",
        description="Build an example array of SOURCE and print the route to() would take to "
        "TARGET, step by step, with what it copies and why. Exit 1 when interop_core refuses "
        "(no route), 2 when SOURCE cannot build the example asked for.",
        epilog="example: python -m interop_core explain numpy tensorflow --layout F",
    )
    exp.add_argument("source", metavar="SOURCE", help="framework of the example (name or alias)")
    exp.add_argument("target", metavar="TARGET", help="framework to convert to (name or alias)")
    exp.add_argument("--dtype", default="float32", help="canonical dtype (default float32)")
    exp.add_argument(
        "--shape", type=parse_shape, default=(2, 3), help="sizes, e.g. 2,3 (default) or 4,5,6"
    )
    exp.add_argument(
        "--layout",
        choices=LAYOUT_CHOICES,
        default="C",
        help="C (default), F (transposed), strided (x[..., ::2]), negative (x[::-1]), "
        "broadcast (stride 0), readonly, unaligned (offset by one element)",
    )
    exp.add_argument("--device", default=None, help="target device, e.g. cpu, cuda, cuda:1")
    exp.add_argument(
        "--copy",
        choices=tuple(_COPY),
        default="none",
        help="none: share memory when possible (default); true: always copy; false: never copy",
    )
    exp.set_defaults(run=run_explain)

    gr = sub.add_parser(
        "graph",
        help="the converter graph as Graphviz DOT or Mermaid, or rendered to SVG/PNG",
        description="Print the converter graph: frameworks are nodes, each converter an edge "
        "labelled with its name (solid: zero-copy, dashed: copy, loops: copies and device "
        "moves), coloured by plugin.",
    )
    gr.add_argument(
        "--format",
        choices=("dot", "mermaid"),
        default=None,
        help="dot (Graphviz, the default) or mermaid (a flowchart LR)",
    )
    gr.add_argument(
        "--output",
        type=Path,
        default=None,
        metavar="FILE",
        help="write to FILE instead: .svg/.png/.pdf are rendered by Graphviz's dot, "
        ".dot/.gv/.mmd are written as text",
    )
    gr.add_argument(
        "--all",
        action="store_true",
        help="include converters between frameworks that are not installed",
    )
    gr.set_defaults(run=run_graph)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m interop_core``."""
    args = build_parser().parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TensorFlow's C++ start-up chatter
    run: Callable[[argparse.Namespace], int] = args.run
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
