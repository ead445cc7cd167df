"""The converter graph as text: Graphviz DOT, a Mermaid flowchart or plain text, or a picture
(rendered by Graphviz, or an SVG drawn by :mod:`.svg` where Graphviz is missing).

Frameworks are the nodes, each converter an edge labelled with its name (solid: zero-copy,
dashed: copy, dotted: function bridges; loops: in-framework copies and device moves),
coloured by plugin. ``source``/``target`` narrow it to how one framework reaches another
(:func:`between`).

Imported by the command line only; drawing the graph imports no framework.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from .. import __version__
from ..declare.specs import ANY, ConverterSpec, FrameworkSpec, Kind
from ..engine.registry import Registry

#: Edge colours, one per plugin (cycled).
_PALETTE = (
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e",
    "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22",
)  # fmt: skip

#: ``--output`` suffixes: rendered by Graphviz, or written as text in a format.
_RENDERED = ("svg", "png", "pdf")
_TEXT = {"dot": "dot", "gv": "dot", "mmd": "mermaid", "txt": "text"}


class OutputError(Exception):
    """The graph cannot be written to a file as asked (exit status 2 of ``graph``)."""


def graph_parts(
    reg: Registry, include_all: bool, source: str | None = None, target: str | None = None
) -> tuple[list[FrameworkSpec], list[ConverterSpec]]:
    """The frameworks (nodes) and converters (edges) ``graph`` draws.

    Only what is usable with the installed frameworks, or with ``include_all`` every
    framework and every valid converter the plugins declare; with ``source`` and/or
    ``target`` (framework names), only the edges :func:`between` keeps.
    """
    st = reg.load_all()  # every framework, imported or not
    edges = list(st.declared) if include_all else list(st.graph.edges)
    if source is not None or target is not None:
        edges = between(edges, st.frameworks, source, target)
    named = {e.source for e in edges} | {e.target for e in edges} | {source, target}
    if include_all and source is None and target is None:
        nodes = list(st.frameworks.values())
    else:
        nodes = [
            s for s in st.frameworks.values()
            if s.name in named or (source is target is None and st.installed.get(s.name))
        ]  # fmt: skip
    return nodes, edges


def between(
    edges: Sequence[ConverterSpec],
    frameworks: Mapping[str, FrameworkSpec],
    source: str | None,
    target: str | None,
) -> list[ConverterSpec]:
    """The converters that answer "how does ``source`` reach ``target``".

    Both given: the edges of the routes of at most two hops between frameworks, straight
    from ``source`` to ``target`` or through one waypoint (a framework routes may pass
    through, ``FrameworkSpec.waypoint``), and the steps within each framework on them
    (copies, device moves: self-loops). Only ``source``: every edge leaving it and its own
    steps; only ``target``: every edge entering it and its own steps. An edge from or to
    every framework (ANY) counts as leaving or entering each.
    """

    def own(e: ConverterSpec, name: str) -> bool:  # a step within the framework
        return e.source == e.target == name

    def leaves(e: ConverterSpec, name: str) -> bool:
        return e.source in (name, ANY) and not own(e, name)

    def enters(e: ConverterSpec, name: str) -> bool:
        return e.target in (name, ANY) and not own(e, name)

    if target is None:
        assert source is not None
        return [e for e in edges if leaves(e, source) or own(e, source)]
    if source is None:
        return [e for e in edges if enters(e, target) or own(e, target)]
    ways = {
        e.target for e in edges
        if leaves(e, source) and e.target not in (source, target, ANY)
        and (spec := frameworks.get(e.target)) is not None and spec.waypoint
    }  # fmt: skip
    ways &= {e.source for e in edges if enters(e, target)}
    on_path = {source, target, *ways}
    return [
        e for e in edges
        if (leaves(e, source) and (e.target in (target, ANY) or e.target in ways))
        or (enters(e, target) and e.source in ways)
        or any(own(e, name) for name in on_path)
    ]  # fmt: skip


def _every(edges: Iterable[ConverterSpec]) -> bool:
    """Whether the drawing needs the one node that stands for every framework (ANY)."""
    return any(ANY in (e.source, e.target) for e in edges)


#: How the node standing for every framework is labelled.
ANY_LABEL = "any framework"


def _copies(edge: ConverterSpec, kinds: Mapping[str, Kind]) -> bool:
    """Whether the edge's kind copies or shares (arrays), rather than wrapping."""
    kind = kinds.get(edge.kind)
    return kind is not None and kind.copy == "edges"


def _edge_label(edge: ConverterSpec, kinds: Mapping[str, Kind]) -> str:
    if not _copies(edge, kinds):  # functions, iterators, ... share the frameworks' nodes
        kind = kinds.get(edge.kind)
        return f"{edge.name} ({kind.plural if kind else edge.kind})"
    return f"{edge.name} (to {edge.array.to_device})" if edge.array.to_device else edge.name


def _edge_style(edge: ConverterSpec, kinds: Mapping[str, Kind]) -> str:
    if not _copies(edge, kinds):
        return "dotted"
    return "solid" if edge.zero_copy else "dashed"


def _edge_tooltip(edge: ConverterSpec, kinds: Mapping[str, Kind]) -> str:
    kind = (
        ("zero-copy" if edge.zero_copy else "copy")
        if _copies(edge, kinds)
        else f"{edge.kind} {kinds[edge.kind].label}".rstrip() if edge.kind in kinds
        else edge.kind
    )  # fmt: skip
    text = (
        f"{edge.name} [{edge.plugin}]: {edge.source} -> {edge.target}, {kind}, "
        f"devices {', '.join(sorted(edge.devices))}"
    )
    if edge.array.to_device:
        text += f", moves to {edge.array.to_device}"
    return f"{text}. {edge.note}" if edge.note else text


def _dot_quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _plugin_colours(edges: Iterable[ConverterSpec]) -> dict[str, str]:
    plugins = sorted({e.plugin for e in edges})
    return {p: _PALETTE[i % len(_PALETTE)] for i, p in enumerate(plugins)}


def _title(
    nodes: Sequence[FrameworkSpec],
    edges: Sequence[ConverterSpec],
    include_all: bool,
    source: str | None = None,
    target: str | None = None,
) -> str:
    which = "declared" if include_all else "usable with the installed frameworks"
    if source is not None and target is not None:
        which += "; routes of at most two hops, and the steps within their frameworks"
    pair = (
        "" if source is None and target is None
        else f" from {source}" if target is None
        else f" into {target}" if source is None
        else f" from {source} to {target}"
    )  # fmt: skip
    return (
        f"interop_core {__version__} converter graph{pair}: {len(nodes)} frameworks, "
        f"{len(edges)} converters ({which})"
    )


def to_dot(
    reg: Registry, include_all: bool = False, source: str | None = None, target: str | None = None
) -> str:
    """The converter graph as Graphviz DOT.

    Nodes are frameworks (dashed and grey when not installed); each converter is one
    edge labelled with its name, solid when zero-copy, dashed when it copies, coloured
    by its plugin (legend below the graph, plugin and details in each edge's tooltip).
    In-framework copies and device moves are self-loops. ``source``/``target``: only the
    edges :func:`between` keeps.
    """
    nodes, edges = graph_parts(reg, include_all, source, target)
    kinds = reg.state.graph.kinds
    colours = _plugin_colours(edges)
    lines = [
        "digraph interop_core {",
        f"  // {_title(nodes, edges, include_all, source, target)}",
        f"  graph [rankdir=LR, fontname=Helvetica, fontsize=12, labelloc=t, nodesep=0.6, "
        f"ranksep=2.2, label={_dot_quote(_title(nodes, edges, include_all, source, target))}];",
        '  node [shape=box, style="rounded,filled", fillcolor="#eef3fb", fontname=Helvetica, '
        "fontsize=14, height=0.9, width=1.5];",
        "  edge [fontname=Helvetica, fontsize=9, arrowsize=0.7];",
    ]
    if _every(edges):
        tip = "edges from or to every framework (iterators: each batch is converted)"
        attrs = [f"label={_dot_quote(ANY_LABEL)}", f"tooltip={_dot_quote(tip)}",
                 'style="filled,dotted"', "shape=ellipse"]  # fmt: skip
        lines.append(f"  {_dot_quote(ANY)} [{', '.join(attrs)}];")
    for spec in nodes:
        attrs = [f"tooltip={_dot_quote(f'{spec.name} [{spec.plugin}]')}"]
        if not spec.target:
            tip = f"{spec.name} [{spec.plugin}]: a source only (to() cannot target it)"
            attrs = [f"tooltip={_dot_quote(tip)}", 'style="filled"', "shape=ellipse"]
        if not reg.state.installed.get(spec.name, False):
            hint = spec.install_hint
            attrs = [
                f"tooltip={_dot_quote(f'{spec.name} [{spec.plugin}]: not installed ({hint})')}",
                'style="rounded,dashed"',
                "fontcolor=grey40",
                "color=grey50",
            ]
        lines.append(f"  {_dot_quote(spec.name)} [{', '.join(attrs)}];")
    for edge in edges:
        colour = colours[edge.plugin]
        attrs = [
            f"label={_dot_quote(_edge_label(edge, kinds))}",
            f"style={_edge_style(edge, kinds)}",
            f'color="{colour}"',
            f'fontcolor="{colour}"',
            f"tooltip={_dot_quote(_edge_tooltip(edge, kinds))}",
        ]
        lines.append(
            f"  {_dot_quote(edge.source)} -> {_dot_quote(edge.target)} [{', '.join(attrs)}];"
        )
    rows = "".join(
        f'<tr><td align="left"><font color="{c}">&#9472;&#9472; {_html(p)}</font></td></tr>'
        for p, c in colours.items()
    )
    lines += [
        "  subgraph cluster_legend {",
        '    label="Legend"; fontsize=10; style=rounded; color=grey70;',
        '    legend [shape=plaintext, style="", fontsize=10, label=<<table border="0" '
        'cellspacing="2"><tr><td align="left">solid: zero-copy, dashed: copy, dotted: '
        "functions, pipelines, iterators; loops: copies and device moves; ovals: sources "
        "only</td></tr>"
        f'<tr><td align="left">edge colour: plugin</td></tr>{rows}</table>>];',
        "  }",
        "}",
    ]
    return "\n".join(lines) + "\n"


def _mermaid_text(text: str) -> str:
    return text.replace('"', "#quot;")


def to_mermaid(
    reg: Registry, include_all: bool = False, source: str | None = None, target: str | None = None
) -> str:
    """The converter graph as a Mermaid ``flowchart LR``.

    Same content as :func:`to_dot`: ``-->`` for zero-copy, ``-.->`` for copies, each edge
    labelled with its converter and plugin; frameworks not installed are drawn dashed.
    """
    nodes, edges = graph_parts(reg, include_all, source, target)
    kinds = reg.state.graph.kinds
    ids: dict[str, str] = {}
    names = [s.name for s in nodes] + ([ANY] if _every(edges) else [])
    for node in names:
        base = "fw_" + re.sub(r"\W", "_", node)
        ident, n = base, 1
        while ident in ids.values():
            n += 1
            ident = f"{base}_{n}"
        ids[node] = ident
    lines = [
        "flowchart LR",
        f"  %% {_title(nodes, edges, include_all, source, target)}",
        "  %% solid: zero-copy, dotted: copy, thick: functions, pipelines, iterators; loops: "
        "copies and device moves; pills: sources only",
    ]
    missing = []
    for spec in nodes:
        left, right = ("[", "]") if spec.target else ("([", "])")  # sources only: pills
        lines.append(f'  {ids[spec.name]}{left}"{_mermaid_text(spec.name)}"{right}')
        if not reg.state.installed.get(spec.name, False):
            missing.append(ids[spec.name])
    if ANY in ids:
        lines.append(f'  {ids[ANY]}(["{_mermaid_text(ANY_LABEL)}"])')
    for edge in edges:
        arrow = "==>" if not _copies(edge, kinds) else "-->" if edge.zero_copy else "-.->"
        label = _mermaid_text(f"{_edge_label(edge, kinds)}<br/>[{edge.plugin}]")
        lines.append(f'  {ids[edge.source]} {arrow}|"{label}"| {ids[edge.target]}')
    if missing:
        lines.append("  classDef missing stroke-dasharray: 5 5,color:#777")
        lines.append(f"  class {','.join(missing)} missing")
    return "\n".join(lines) + "\n"


def edge_mark(edge: ConverterSpec, kinds: Mapping[str, Kind]) -> str:
    """What an edge does, in a word or two: "zero-copy", "copy", or its kind's plural
    ("functions") for edges that neither copy nor share."""
    if not _copies(edge, kinds):
        kind = kinds.get(edge.kind)
        return kind.plural if kind else edge.kind
    return "zero-copy" if edge.zero_copy else "copy"


def to_text(
    reg: Registry, include_all: bool = False, source: str | None = None, target: str | None = None
) -> str:
    """The converter graph as plain text: a title, the frameworks, then the converters
    grouped by the pair of frameworks they join (each with what it does and its plugin),
    the steps within a framework last."""
    nodes, edges = graph_parts(reg, include_all, source, target)
    kinds = reg.state.graph.kinds
    installed = reg.state.installed
    names = [
        s.name + ("" if installed.get(s.name, False) else " (not installed)")
        + ("" if s.target else " (source only)")
        for s in nodes
    ]  # fmt: skip
    lines = [_title(nodes, edges, include_all, source, target), ""]
    lines += textwrap.wrap("Frameworks: " + ", ".join(names), 100, subsequent_indent="  ")
    groups: dict[tuple[str, str], list[ConverterSpec]] = {}
    for edge in edges:
        groups.setdefault((edge.source, edge.target), []).append(edge)
    # The pair asked about first, then what leaves the source, what enters the target,
    # the rest; steps within a framework last.
    order = sorted(groups, key=lambda p: (p[0] == p[1], p != (source, target), p[0] != source, p))
    width = max([len(e.name) + len(_to_device(e)) for e in edges] + [10])
    within = False
    for src, dst in order:
        if src == dst and not within:
            lines += ["", "Steps within a framework (copies, device moves):"]
            within = True
        pair = _node(src) if src == dst else f"{_node(src)} -> {_node(dst)}"
        lines.append(("" if within else "\n") + f"{pair} ({len(groups[src, dst])}):")
        for e in groups[src, dst]:
            label = f"{e.name}{_to_device(e)}"
            lines.append(f"  {label:<{width}}  {edge_mark(e, kinds):<10}  [{e.plugin}]")
    if not edges:
        lines += ["", "No converters."]
    return "\n".join(lines) + "\n"


def _node(name: str) -> str:
    return ANY_LABEL if name == ANY else name


def _to_device(edge: ConverterSpec) -> str:
    return f" (to {edge.array.to_device})" if edge.array.to_device else ""


def render(dot_text: str, path: Path) -> None:
    """Render DOT to ``path`` with Graphviz; the format is the file's suffix."""
    dot = shutil.which("dot")
    if dot is None:
        raise OutputError(
            f"cannot render {path}: Graphviz's 'dot' program is not installed (apt-get install "
            "graphviz, brew install graphviz or conda install graphviz). Without it, write a "
            ".svg file (drawn by interop_core itself) or print the graph as DOT, Mermaid or "
            "text (--format)."
        )
    done = subprocess.run(
        [dot, f"-T{path.suffix[1:].lower()}", "-o", str(path)],
        input=dot_text,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise OSError(f"dot failed (exit {done.returncode}) rendering {path}: {done.stderr}")


#: ``--format`` -> the function writing the graph in it.
FORMATS = {"dot": to_dot, "mermaid": to_mermaid, "text": to_text}


def graph_text(
    reg: Registry,
    fmt: str = "dot",
    include_all: bool = False,
    source: str | None = None,
    target: str | None = None,
) -> str:
    """The converter graph as "dot" (:func:`to_dot`), "mermaid" (:func:`to_mermaid`) or
    "text" (:func:`to_text`)."""
    return FORMATS[fmt](reg, include_all, source, target)


def write_graph(
    reg: Registry,
    path: Path,
    fmt: str | None = None,
    include_all: bool = False,
    source: str | None = None,
    target: str | None = None,
) -> str:
    """Write the graph to ``path`` in the format its suffix names; returns how it was made.

    .svg, .png and .pdf are rendered by Graphviz; .svg without Graphviz is drawn by
    :mod:`.svg` (frameworks in columns or on a circle, edges grouped by pair). .dot and .gv
    are written as DOT text, .mmd as Mermaid, .txt as text. Raises OutputError for another
    suffix, a ``fmt`` the suffix cannot hold or .png/.pdf without Graphviz, and OSError
    when writing or Graphviz fails.
    """
    suffix = path.suffix[1:].lower()
    if suffix not in (*_RENDERED, *_TEXT):
        raise OutputError(
            f"--output {path}: use a .svg, .png or .pdf file (rendered by Graphviz; .svg "
            "is drawn without it too) or a .dot, .gv, .mmd or .txt file (written as text)."
        )
    wanted = _TEXT.get(suffix, "dot")
    if fmt is not None and fmt != wanted:
        raise OutputError(f"--format {fmt} cannot be written to a .{suffix} file.")
    if suffix == "svg" and shutil.which("dot") is None:
        from .svg import to_svg

        path.write_text(to_svg(reg, include_all, source, target), encoding="utf-8")
        return "drawn without Graphviz"
    text = graph_text(reg, wanted, include_all, source, target)
    if suffix in _RENDERED:
        render(text, path)
        return "rendered by Graphviz"
    path.write_text(text, encoding="utf-8")
    return f"written as {wanted}"
