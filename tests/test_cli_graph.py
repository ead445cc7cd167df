"""``python -m interop_core graph --from/--to``, ``--format text`` and the SVG drawn without
Graphviz; :func:`interop_core.face.drawing.between` on the built-in registry.

Drawing imports no framework: most checks run here, on a registry of the built-in plugins
(the graph of what is usable depends on what is installed, which the checks read from it).
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import need
from test_cli_explain import cli_runs

from interop_core import Registry
from interop_core.declare.specs import ANY
from interop_core.face import drawing
from interop_core.face.svg import to_svg


@pytest.fixture(scope="module")
def reg() -> Registry:
    return Registry(builtins=True, entry_points=False)


def installed_pair(reg: Registry) -> tuple[str, str]:
    st = reg.load_all()
    for a, b in (("torch", "jax"), ("numpy", "torch"), ("numpy", "jax"), ("numpy", "pyarrow")):
        if st.installed.get(a) and st.installed.get(b):
            return a, b
    pytest.skip("no two of numpy, torch, jax, pyarrow installed")


def test_between_keeps_the_routes_of_at_most_two_hops(reg: Registry) -> None:
    src, dst = installed_pair(reg)
    st = reg.load_all()
    edges = list(st.graph.edges)
    kept = drawing.between(edges, st.frameworks, src, dst)
    kept_ids = {id(e) for e in kept}
    ways = {e.target for e in kept if e.source == src and e.target not in (dst, src, ANY)}
    # The frameworks in between are exactly the waypoints with an edge from each end.
    waypoints = {
        n for n, spec in st.frameworks.items()
        if spec.waypoint and n not in (src, dst)
        and any(e.source == src and e.target == n for e in edges)
        and any(e.source == n and e.target == dst for e in edges)
    }  # fmt: skip
    assert ways == waypoints, (ways, waypoints)
    for e in kept:
        if e.source == e.target != ANY:  # a step within a framework on the routes
            assert e.source in {src, dst, *ways}, e
        elif e.source in (src, ANY):
            assert e.target in (dst, ANY) or e.target in ways, e
        else:
            assert e.source in ways and e.target in (dst, ANY), e
    for w in ways:  # each one is a waypoint with edges on both legs
        assert st.frameworks[w].waypoint
        assert any(e.source == w and e.target == dst for e in kept), w
    # Every direct edge is kept; a framework no route passes through is never in between.
    assert all(id(e) in kept_ids for e in edges if e.source == src and e.target == dst)
    ends = {n for n, s in st.frameworks.items() if not s.waypoint} - {src, dst}
    assert not ways & ends, ways & ends


def test_between_one_end(reg: Registry) -> None:
    src, dst = installed_pair(reg)
    st = reg.load_all()
    edges = list(st.graph.edges)
    leaving = drawing.between(edges, st.frameworks, src, None)
    assert leaving and all(e.source in (src, ANY) for e in leaving)
    assert {id(e) for e in edges if e.source == src} <= {id(e) for e in leaving}
    entering = drawing.between(edges, st.frameworks, None, dst)
    assert entering and all(e.target in (dst, ANY) for e in entering)
    assert {id(e) for e in edges if e.target == dst} <= {id(e) for e in entering}


def test_text_format_lists_every_kept_converter_once(reg: Registry) -> None:
    src, dst = installed_pair(reg)
    st = reg.load_all()
    text = drawing.to_text(reg, False, src, dst)
    lines = text.splitlines()
    assert lines[0].startswith("interop_core ") and f"graph from {src} to {dst}: " in lines[0]
    kept = drawing.between(list(st.graph.edges), st.frameworks, src, dst)
    count = re.search(r"(\d+) converters \(usable", lines[0])
    assert count is not None and int(count.group(1)) == len(kept)
    rows = [ln for ln in lines if ln.startswith("  ") and "[interop_plugins." in ln]
    assert len(rows) == len(kept)
    direct = sum(e.source == src and e.target == dst for e in kept)
    head = lines.index(f"{src} -> {dst} ({direct}):")
    assert lines[head - 1] == ""
    assert lines.index("Steps within a framework (copies, device moves):") > head
    first = next(e for e in kept if e.source == src and e.target == dst)
    assert re.search(rf"^  {re.escape(first.name)}\s+(zero-copy|copy|\w+)\s+\[", text, re.M)


def test_svg_is_well_formed_and_names_every_framework(reg: Registry) -> None:
    src, dst = installed_pair(reg)
    for args in ((False, src, dst), (False, src, None), (False, None, dst), (False, None, None)):
        svg = to_svg(reg, *args)
        root = ET.fromstring(svg)  # well-formed XML
        assert root.tag == "{http://www.w3.org/2000/svg}svg"
        nodes, edges = drawing.graph_parts(reg, *args)
        texts = {"".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text")}
        for node in nodes:
            assert node.name in texts, (args, node.name)
        tips = " ".join(t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}title"))
        for e in edges:  # every converter is in an arrow's tooltip, with its plugin
            assert f"{e.name} [{e.plugin}]" in tips, (args, e.name)


def test_graph_command_lines(tmp_path: Path) -> None:
    for name in ("numpy", "torch", "polars"):  # the routes and the source asked about
        need(name)
    env = {"PATH": str(tmp_path)}  # no Graphviz
    runs = cli_runs(
        [
            ("graph", "--from", "numpy", "--to", "torch", "--format", "text"),
            ("graph", "--from", "np", "--to", "pytorch"),  # aliases; DOT on a pipe
            ("graph", "--from", "numpy", "--output", str(tmp_path / "numpy.svg")),
            ("graph", "--to", "polars", "--format", "text"),  # a source only: nothing enters
            ("graph", "--from", "nosuchframework"),
        ],
        env={**os.environ, **env},
    )
    text, dot, svg, polars, unknown = runs
    assert text["rc"] == 0, text["err"]
    assert "graph from numpy to torch: " in text["out"].splitlines()[0]
    assert re.search(r"^numpy -> torch \(\d+\):$", text["out"], re.M), text["out"]
    assert dot["rc"] == 0 and dot["out"].startswith("digraph interop_core {"), dot
    assert "graph from numpy to torch" in dot["out"]
    assert svg["rc"] == 0, svg["err"]
    assert svg["out"].strip() == f"wrote {tmp_path / 'numpy.svg'} (drawn without Graphviz)"
    ET.fromstring((tmp_path / "numpy.svg").read_text(encoding="utf-8"))
    assert polars["rc"] == 0 and "Frameworks: polars (source only)" in polars["out"], polars
    assert unknown["rc"] == 1, unknown
    assert "Unknown framework 'nosuchframework'" in unknown["err"] and unknown["out"] == ""
