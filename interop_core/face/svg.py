"""The converter graph as an SVG picture drawn in pure Python (``graph --output X.svg`` where
Graphviz's ``dot`` is missing).

Frameworks are boxes: in columns when the graph is narrowed to a pair (``--from`` left,
``--to`` right, the frameworks between in the middle), else on a circle. Converters between
two frameworks are drawn as one curved arrow per kind of step (blue and solid: zero-copy;
orange and dashed: copy; green and dotted: functions, iterators, pipelines), labelled with
their names (the first two, and how many more); steps within a framework are loops above
its box. Every arrow's tooltip (``<title>``) lists all its converters with their plugins.
Frameworks not installed (``--all``) are dashed and grey; sources only are pills.

No layout engine, no dependency: a picture for a README or a quick look; DOT (Graphviz)
and ``--format text`` hold the same edges.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape
from typing import NamedTuple

from ..declare.specs import ANY, ConverterSpec, FrameworkSpec, Kind
from ..engine.registry import Registry
from .drawing import ANY_LABEL, _title, edge_mark, graph_parts

#: Stroke colour and dash pattern of each kind of arrow.
_STYLES = {
    "zero-copy": ("#1f77b4", ""),
    "copy": ("#e6550d", "7 4"),
    "other": ("#2ca02c", "2 3"),
}
_FONT = "font-family='Helvetica, Arial, sans-serif'"
_BOX_H = 32
_CHAR_W = 7.2  # px per character at 13 px Helvetica, roughly
_GAP = 46  # px between the curves of two arrows joining the same two frameworks
_LONGEST = 30  # characters of a converter's name in a label (the tooltip has them whole)


class _Box(NamedTuple):
    name: str
    x: float
    y: float
    w: float
    dashed: bool
    pill: bool


class _Group(NamedTuple):
    source: str
    target: str
    style: str
    edges: tuple[ConverterSpec, ...]


def _style(edge: ConverterSpec, kinds: Mapping[str, Kind]) -> str:
    mark = edge_mark(edge, kinds)
    return mark if mark in ("zero-copy", "copy") else "other"


def _groups(edges: Sequence[ConverterSpec], kinds: Mapping[str, Kind], whole: bool) -> list[_Group]:
    """The arrows: one per pair of frameworks and kind of step, or with ``whole`` (the
    whole graph) one per pair, styled by its best converter (zero-copy, copy, other)."""
    found: dict[tuple[str, str, str], list[ConverterSpec]] = {}
    for e in edges:
        found.setdefault((e.source, e.target, "" if whole else _style(e, kinds)), []).append(e)
    best = ("zero-copy", "copy", "other")
    return [
        _Group(s, t, st or min((_style(e, kinds) for e in es), key=best.index), tuple(es))
        for (s, t, st), es in found.items()
    ]


def _width(label: str) -> float:
    return max(90.0, len(label) * _CHAR_W + 28)


def _place(
    names: list[str],
    sources_only: set[str],
    source: str | None,
    target: str | None,
    loops: Mapping[str, int],
) -> tuple[dict[str, tuple[float, float]], set[str]]:
    """Centre of each framework's box, and the frameworks whose loops go below their box.

    A pair: ``source`` and ``target`` side by side on top, the frameworks between them in a
    row below (their loops under them). One end: it alone on one side, the others in a
    column on the other. The whole graph: the frameworks only converted from (protocols,
    files, tables) in a column on the left, the others on a circle.
    """
    lift = 40.0 + 34 * max(loops.values(), default=0)  # room for the loops above a box
    others = [n for n in names if n not in (source, target)]
    out: dict[str, tuple[float, float]] = {}
    if source is not None and target is not None:
        span = max(700.0, 230.0 * len(others))
        top = 80 + lift
        out[source], out[target] = (120.0, top), (120 + span, top)
        gap = span / max(len(others), 1)
        for i, n in enumerate(others):
            out[n] = (120 + gap * (i + 0.5) if len(others) > 1 else 120 + span / 2, top + 280)
        return out, set(others)
    if source is not None or target is not None:
        step = 60.0 + lift
        middle = 80 + lift + (len([n for n in others if n != ANY]) - 1) * step / 2
        one = source if source is not None else target
        assert one is not None
        near, far = (140.0, 640.0) if source is not None else (640.0, 140.0)
        out[one] = (near, middle)
        for i, n in enumerate(n for n in others if n != ANY):
            out[n] = (far, 80 + lift + i * step)
        if ANY in others:  # beside the end it stands for, not across the column
            out[ANY] = (near, middle + step)
        return out, set()
    left = [n for n in names if n in sources_only]
    ring = [n for n in names if n not in sources_only]
    radius = max(320.0, len(ring) * 200 / (2 * math.pi))
    tall = (len(left) - 1) * 64.0
    cx = 140 + 260 + radius if left else 100 + radius
    cy = 90 + lift + max(radius, tall / 2)
    out.update((n, (140.0, cy - tall / 2 + i * 64)) for i, n in enumerate(left))
    count = max(len(ring), 1)
    for i, n in enumerate(ring):
        angle = 2 * math.pi * i / count - math.pi / 2
        out[n] = (cx + radius * math.cos(angle), cy + radius * math.sin(angle))
    return out, set()


def _clip(box: _Box, tx: float, ty: float) -> tuple[float, float]:
    """Where the line from ``box``'s centre towards (tx, ty) leaves the box."""
    dx, dy = tx - box.x, ty - box.y
    if dx == 0 and dy == 0:
        return box.x, box.y
    scale = min(
        (box.w / 2 + 3) / abs(dx) if dx else math.inf,
        (_BOX_H / 2 + 3) / abs(dy) if dy else math.inf,
    )
    return box.x + dx * scale, box.y + dy * scale


def _label(group: _Group, detailed: bool) -> list[str]:
    """An arrow's label: its converters' names (the first, and how many more), or with
    ``detailed`` False how many there are."""
    names = [e.name for e in group.edges]
    if not detailed:
        return [f"{len(names)} converter{'s' if len(names) > 1 else ''}"]
    short = [n if len(n) <= _LONGEST else n[: _LONGEST - 1] + "\u2026" for n in names]
    if len(short) <= 2:
        return short
    return [short[0], f"+{len(short) - 1} more"]


def _tooltip(group: _Group) -> str:
    head = f"{_name(group.source)} -> {_name(group.target)}, {group.style}:"
    return "\n".join([head, *(f"{e.name} [{e.plugin}]" for e in group.edges)])


def _name(node: str) -> str:
    return ANY_LABEL if node == ANY else node


def _text(x: float, y: float, lines: list[str], colour: str, size: int = 11) -> str:
    """Lines of text centred on (x, y), over a white halo so they read over the arrows
    (drawn twice, not with paint-order, which not every renderer knows)."""
    top = y - (len(lines) - 1) * (size + 2) / 2
    spans = "".join(
        f"<tspan x='{x:.0f}' y='{top + i * (size + 2) + size / 3:.0f}'>{escape(t)}</tspan>"
        for i, t in enumerate(lines)
    )
    font = f"text-anchor='middle' {_FONT} font-size='{size}'"
    return (
        f"<text {font} fill='white' stroke='white' stroke-width='4'>{spans}</text>"
        f"<text {font} fill='{colour}'>{spans}</text>"
    )


def _arrow(
    group: _Group, boxes: Mapping[str, _Box], offset: float, detailed: bool, t: float = 0.5
) -> str:
    """The curved arrow of ``group``, ``offset`` px off the straight line between its
    boxes, its label at ``t`` along it."""
    a, b = boxes[group.source], boxes[group.target]
    colour, dash = _STYLES[group.style]
    # The normal of the pair taken in name order: both directions share it, so arrows
    # A -> B and B -> A curve to opposite sides by the sign of their offsets.
    first, second = (a, b) if a.name <= b.name else (b, a)
    dx, dy = second.x - first.x, second.y - first.y
    length = math.hypot(dx, dy) or 1.0
    nx, ny = -dy / length, dx / length
    mx, my = (a.x + b.x) / 2 + nx * offset * 2, (a.y + b.y) / 2 + ny * offset * 2
    x0, y0 = _clip(a, mx, my)
    x1, y1 = _clip(b, mx, my)
    lx = (1 - t) ** 2 * x0 + 2 * t * (1 - t) * mx + t * t * x1
    ly = (1 - t) ** 2 * y0 + 2 * t * (1 - t) * my + t * t * y1
    dashes = f" stroke-dasharray='{dash}'" if dash else ""
    return (
        f"<g><title>{escape(_tooltip(group))}</title>"
        f"<path d='M{x0:.1f},{y0:.1f} Q{mx:.1f},{my:.1f} {x1:.1f},{y1:.1f}' fill='none' "
        f"stroke='{colour}' stroke-width='1.6'{dashes} marker-end='url(#head-{group.style})'/>"
        f"{_text(lx, ly, _label(group, detailed), colour)}</g>"
    )


def _loop(group: _Group, box: _Box, k: int, below: bool) -> str:
    """The ``k``-th loop of a framework's box (steps within it), above it or ``below``."""
    colour, dash = _STYLES[group.style]
    sign = 1 if below else -1
    rise = sign * (34 + 34 * k)
    x0, x1, y = box.x - box.w / 4, box.x + box.w / 4, box.y + sign * _BOX_H / 2
    dashes = f" stroke-dasharray='{dash}'" if dash else ""
    words = {"zero-copy": "zero-copy", "copy": "copying", "other": "bridging"}[group.style]
    label = f"{len(group.edges)} {words} step{'s' if len(group.edges) > 1 else ''}"
    return (
        f"<g><title>{escape(_tooltip(group))}</title>"
        f"<path d='M{x0:.1f},{y:.1f} C{x0 - 20:.1f},{y + rise:.1f} {x1 + 20:.1f},"
        f"{y + rise:.1f} {x1:.1f},{y + sign:.1f}' fill='none' stroke='{colour}' "
        f"stroke-width='1.4'{dashes} marker-end='url(#head-{group.style})'/>"
        f"{_text(box.x, y + rise * 0.75, [label], colour)}</g>"
    )


def _box_svg(box: _Box) -> str:
    stroke = "#888888" if box.dashed else "#4a6fa5"
    dash = " stroke-dasharray='5 4'" if box.dashed else ""
    radius = _BOX_H / 2 if box.pill else 7
    return (
        f"<rect x='{box.x - box.w / 2:.1f}' y='{box.y - _BOX_H / 2:.1f}' width='{box.w:.1f}' "
        f"height='{_BOX_H}' rx='{radius:.0f}' fill='#eef3fb' stroke='{stroke}' "
        f"stroke-width='1.5'{dash}/>"
        f"<text x='{box.x:.1f}' y='{box.y + 5:.1f}' text-anchor='middle' {_FONT} "
        f"font-size='14' fill='{'#666666' if box.dashed else '#1a1a1a'}'>"
        f"{escape(_name(box.name))}</text>"
    )


def _legend(x: float, y: float, whole: bool) -> str:
    rows = [("zero-copy", "zero-copy"), ("copy", "copy"),
            ("other", "functions, iterators, pipelines")]  # fmt: skip
    if whole:  # one arrow per pair, styled by its best converter
        rows = [("zero-copy", "a zero-copy converter among them"),
                ("copy", "converters that copy"),
                ("other", "functions, iterators, pipelines only")]  # fmt: skip
    out = [f"<text x='{x}' y='{y}' {_FONT} font-size='12' fill='#333333'>Legend (hover an "
           "arrow for its converters and plugins):</text>"]  # fmt: skip
    for i, (style, words) in enumerate(rows):
        colour, dash = _STYLES[style]
        dashes = f" stroke-dasharray='{dash}'" if dash else ""
        yy = y + 20 + i * 18
        out.append(
            f"<line x1='{x}' y1='{yy - 4}' x2='{x + 40}' y2='{yy - 4}' stroke='{colour}' "
            f"stroke-width='1.6'{dashes}/><text x='{x + 50}' y='{yy}' {_FONT} font-size='12' "
            f"fill='{colour}'>{words}</text>"
        )
    return "".join(out)


def to_svg(
    reg: Registry, include_all: bool = False, source: str | None = None, target: str | None = None
) -> str:
    """The converter graph (the edges :func:`~.drawing.graph_parts` gives) as an SVG document."""
    nodes, edges = graph_parts(reg, include_all, source, target)
    kinds = reg.state.graph.kinds
    installed = reg.state.installed
    specs: dict[str, FrameworkSpec] = {s.name: s for s in nodes}
    names = [s.name for s in nodes]
    if any(ANY in (e.source, e.target) for e in edges):
        names.append(ANY)
    whole = source is None and target is None
    groups = _groups(edges, kinds, whole)
    loops: dict[str, int] = {}
    for g in groups:
        if g.source == g.target:
            loops[g.source] = loops.get(g.source, 0) + 1
    pills = {n for n in names if n == ANY or not specs[n].target}
    centres, below = _place(names, pills, source, target, loops)
    boxes = {
        n: _Box(n, *centres[n], _width(_name(n)),
                dashed=n != ANY and not installed.get(n, False), pill=n in pills)
        for n in names
    }  # fmt: skip
    body: list[str] = []
    pairs: dict[tuple[str, str], list[_Group]] = {}
    for g in groups:
        if g.source != g.target:
            pairs.setdefault((min(g.source, g.target), max(g.source, g.target)), []).append(g)
    # Labels of the arrows through the frameworks between a pair alternate in height, so
    # that neighbours do not cover each other.
    middle = {n: i for i, n in enumerate(n for n in names if n in below)}
    for joined in pairs.values():  # side by side, along the pair's normal
        for i, g in enumerate(joined):
            offset = (i - (len(joined) - 1) / 2) * _GAP
            way = middle.get(g.target, middle.get(g.source))
            t = 0.5 if way is None else 0.38 if way % 2 else 0.62
            body.append(_arrow(g, boxes, offset, detailed=not whole, t=t))
    seen: dict[str, int] = {}
    for g in groups:
        if g.source == g.target:
            k = seen.get(g.source, 0)
            seen[g.source] = k + 1
            body.append(_loop(g, boxes[g.source], k, g.source in below))
    body.extend(_box_svg(b) for b in boxes.values())
    right = max((b.x + b.w / 2 for b in boxes.values()), default=400) + 140
    bottom = (
        max((b.y for b in boxes.values()), default=200)
        + 60
        + (34 * (1 + max((loops.get(n, 0) for n in below), default=0)) if below else 0)
    )
    width, height = max(right, 560), bottom + 80
    heads = "".join(
        f"<marker id='head-{style}' viewBox='0 0 10 10' refX='9' refY='5' markerWidth='7' "
        f"markerHeight='7' orient='auto-start-reverse'><path d='M0,0 L10,5 L0,10 z' "
        f"fill='{colour}'/></marker>"
        for style, (colour, _) in _STYLES.items()
    )
    title = _title(nodes, edges, include_all, source, target)
    head, _, rest = title.partition(" (")
    heading = "".join(
        f"<text x='20' y='{28 + 18 * i}' {_FONT} font-size='14' fill='#1a1a1a'>{escape(t)}</text>"
        for i, t in enumerate([head, f"({rest}" if rest else ""])
    )
    return (
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{width:.0f}' height='{height:.0f}' "
        f"viewBox='0 0 {width:.0f} {height:.0f}'>\n<title>{escape(title)}</title>\n"
        f"<defs>{heads}</defs>\n<rect width='100%' height='100%' fill='white'/>\n"
        f"{heading}\n" + "\n".join(body) + f"\n{_legend(20, bottom + 10, whole)}\n</svg>\n"
    )
