"""The route planner: Dijkstra over converter edges, and the routes and plans it yields.

Nodes are :class:`PlanKey` values (framework, device with index, dtype, layout, read-only,
aligned, flags) paired with whether the route has copied yet. The cost of a path is the
tuple (copies, hops, estimated µs), compared in that order, so a route with fewer copies
always wins (rule 5); every copy moves the array's bytes once, so ordering by copies is
ordering by bytes moved. Modelled on astropy's TransformGraph: a small Dijkstra of its own
and a cache that is dropped whenever the graph changes.
"""

from __future__ import annotations

import heapq
import itertools
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple

from ..declare.errors import ON_REQUEST, VARIANT, Reason, RefusedEdge, category
from ..declare.predicates import GlobalFlag, reads_alignment, reads_flag
from ..declare.specs import (
    ANY,
    ARRAY,
    FUNCTION,
    ConverterSpec,
    Device,
    PlanKey,
    TensorInfo,
    device_kind,
)


class Step(NamedTuple):
    """One conversion step of a route."""

    converter: str
    plugin: str
    source: str
    target: str
    zero_copy: bool
    note: str = ""
    #: The kind of object the step converts ("array", "function", ...).
    kind: str = ARRAY

    def __str__(self) -> str:
        if self.kind != ARRAY:  # its caveats are long: the Route lists them once
            bridge = " bridge" if self.kind == FUNCTION else ""
            return f"{self.source} -> {self.target}: {self.converter} [{self.plugin}]{bridge}"
        kind = "zero-copy" if self.zero_copy else "COPY"
        note = f"  ({self.note})" if self.note else ""
        return f"{self.source} -> {self.target}: {self.converter} [{self.plugin}] {kind}{note}"


class Route(NamedTuple):
    """What ``to()`` does (or would do) for one object: its steps and what they copy."""

    source: str
    target: str
    steps: tuple[Step, ...]
    #: Steps that copy; 0 means the result shares the input's memory.
    copies: int
    #: Bytes the copies move (copies x the array's bytes), when the array is known.
    bytes_copied: int = 0
    #: Why zero-copy edges were refused along the way (for routes that copy).
    refused: tuple[RefusedEdge, ...] = ()
    #: Caveats of the chosen steps (aliasing immutable memory, dropped autograd, ...).
    notes: tuple[str, ...] = ()
    #: Every refusal the search met, ranked (edges into the target first).
    refusals: tuple[RefusedEdge, ...] = ()
    #: The kind of object routed ("array", "function", ...).
    kind: str = ARRAY

    @property
    def zero_copy(self) -> bool:
        """True when the result will share the input's memory (data pointers equal)."""
        return self.copies == 0

    def _outcome(self) -> str:
        if not self.steps:
            return "no conversion needed (the object is returned as it is)"
        if self.kind != ARRAY:
            return f"{self.kind} in {len(self.steps)} step(s)"
        if self.zero_copy:
            return f"zero-copy in {len(self.steps)} step(s)"
        return f"{self.copies} copy(ies), {self.bytes_copied} bytes copied"

    def summary(self) -> str:
        """The route on one line: where from and to, what it copies, its converters."""
        via = f", via {' then '.join(s.converter for s in self.steps)}" if self.steps else ""
        return f"{self.source} -> {self.target}: {self._outcome()}{via}"

    def __str__(self) -> str:
        head = f"Route {self.source} -> {self.target}: {self._outcome()}"
        lines = [head, *(f"  {i}. {s}" for i, s in enumerate(self.steps, 1))]
        if self.copies and self.refused:
            lines.append("  why not zero-copy:")
            lines.extend(f"  {r}" for r in self.refused)
        lines.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(lines)


class RouteTree:
    """What ``explain()`` gives for a container: its structure, ``tree``, with a Route at
    each array leaf and None at other leaves.

    Indexing, iteration, ``len()``, ``==`` and attributes reach ``tree`` (``r["a"]``,
    ``r[0]``, ``r.items()``); ``routes`` maps each array leaf's path to its Route, and
    ``str()`` gives one line per leaf.
    """

    __slots__ = ("tree",)

    def __init__(self, tree: Any) -> None:
        self.tree = tree

    @property
    def routes(self) -> dict[str, Route]:
        """Each array leaf's path, as indexing spells it ("['a'][0]", ".field"), and its
        Route, in the container's order."""
        found: dict[str, Route] = {}
        stack: list[tuple[str, Any]] = [("", self.tree)]
        while stack:  # no recursion: containers may nest deeper than the stack allows
            path, node = stack.pop()
            items: list[tuple[str, Any]]
            if isinstance(node, Route):  # a NamedTuple: before tuples
                found[path] = node
                continue
            if isinstance(node, dict):
                items = [(f"{path}[{k!r}]", v) for k, v in dict.items(node)]
            elif isinstance(node, tuple) and hasattr(node, "_fields"):  # a namedtuple
                items = [(f"{path}.{f}", v) for f, v in zip(node._fields, node, strict=False)]
            elif isinstance(node, (list, tuple)):
                items = [(f"{path}[{i}]", v) for i, v in enumerate(node)]
            else:
                continue
            stack.extend(reversed(items))
        return found

    @property
    def zero_copy(self) -> bool:
        """True when every array leaf's result will share its memory."""
        return all(r.zero_copy for r in self.routes.values())

    def __str__(self) -> str:
        routes = self.routes
        copying = sum(not r.zero_copy for r in routes.values())
        lines = [f"{len(routes)} array(s), {copying} of them copied:"]
        lines += [f"  {path}: {route.summary()}" for path, route in routes.items()]
        notes = dict.fromkeys(n for r in routes.values() for n in r.notes)
        lines += [f"  note: {n}" for n in notes]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"RouteTree({self.tree!r})"

    def __getitem__(self, key: Any) -> Any:
        return self.tree[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.tree)

    def __len__(self) -> int:
        return len(self.tree)

    def __contains__(self, item: Any) -> bool:
        return item in self.tree

    def __eq__(self, other: object) -> bool:
        return bool(self.tree == (other.tree if isinstance(other, RouteTree) else other))

    __hash__ = None  # type: ignore[assignment]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "tree":  # copy/pickle probes; an unset slot
            raise AttributeError(name)
        return getattr(self.tree, name)


def node_name(key: PlanKey) -> str:
    """A node's readable name, e.g. "numpy@cpu", "jax function", "iterator"."""
    if key.kind == ARRAY:
        return f"{key.framework}@{key.device}"
    owner = "" if key.framework == ANY else f"{key.framework} "
    return f"{owner}{key.kind}" + (f"@{key.device}" if key.device else "")


def advance(key: PlanKey, edge: ConverterSpec, goal: str, target: str = "") -> PlanKey:
    """The PlanKey of the result of taking ``edge`` from ``key`` towards device ``goal``
    (and framework ``target``, which an edge to ``ANY`` reaches)."""
    if edge.zero_copy:
        layout, aligned, readonly = key.layout, key.aligned, key.readonly
        if edge.aligned_result is not None:
            aligned = edge.aligned_result
    else:
        layout, aligned, readonly = "C", edge.aligned_result is not False, False
    if edge.readonly_result is not None:
        readonly = edge.readonly_result
    device = key.device
    if edge.to_device is not None:  # a move lands on the goal's index when it goes there
        device = goal if device_kind(goal) == edge.to_device else str(Device(edge.to_device))
    elif edge.target not in (key.framework, ANY) and key.kind == ARRAY and device != "cpu":
        # Host device indexes are each framework's own (JAX's cpu:3); CUDA ordinals are
        # shared. An array crossing frameworks on the host lands on the target's "cpu".
        device = device if device_kind(device) != "cpu" else "cpu"
    return PlanKey(
        target if edge.target == ANY else edge.target, device, key.dtype, layout, readonly,
        aligned, (key.flags & edge.keeps_flags) | edge.adds_flags, key.copy,
        edge.result_kind or key.kind,
    )  # fmt: skip


class Search:
    """The outcome of one search: the steps of the best path, or every refusal met."""

    __slots__ = ("flags", "found", "path", "path_aligned", "refused", "refused_aligned")

    def __init__(self) -> None:
        #: (node before, edge, node after) for each step of the best path.
        self.path: list[tuple[PlanKey, ConverterSpec, PlanKey]] = []
        self.found = False
        #: Every refusal met, ranked: edges into the target first, nearest the source first.
        self.refused: list[RefusedEdge] = []
        #: An edge of the path needs the start's alignment (the other one has another route).
        self.path_aligned = True
        #: An edge was refused over alignment (the other one might have another route).
        self.refused_aligned = True
        #: Global flags a verdict of this search turned on (they join the plan key).
        self.flags: tuple[GlobalFlag, ...] = ()


class Graph:
    """Converter edges indexed by source framework."""

    def __init__(self, edges: Iterable[ConverterSpec]) -> None:
        self.edges = tuple(edges)
        self.by_source: dict[str, list[ConverterSpec]] = defaultdict(list)
        for e in self.edges:
            self.by_source[e.source].append(e)

    def search(
        self,
        start: PlanKey,
        target: str,
        device: str,
        excluded: frozenset[tuple[str, str]] = frozenset(),
        opted_in: frozenset[str] = frozenset(),
        goal_kind: str = "",
        goal_flags: frozenset[str] = frozenset(),
        sees: Callable[[str, str], str | None] | None = None,
    ) -> Search:
        """Cheapest path from ``start`` to ``target@device`` honouring ``start.copy``.

        ``device`` is a device string with its index ("cuda:1"); edges declare kinds.
        At each node only edges of its kind are taken, and the goal is an object of
        ``goal_kind`` (default: the start's kind); "" (a function bound to no device)
        passes every edge's device check. An edge with ``opt_in`` is taken only when that
        option is in ``opted_in`` (the options the user passed, truthy); the goal node must
        carry ``goal_flags`` (what such an edge marks its result with: ``mesh=`` asks for a
        "sharded" DTensor, not any torch tensor).

        Arrays visit only the host and the device kinds of the start and the goal (a CPU
        request never plans through a GPU); ``sees(framework, device)`` says why a
        framework cannot hold an array on a device other than the CPU (None: it can).
        """
        goal_kind = goal_kind or start.kind
        kinds = {"cpu", device_kind(start.device), device_kind(device)}
        anywhere = self.by_source.get(ANY, [])
        # For other kinds copy= is about the arrays they yield, not the edges (iterators).
        want_copy = start.copy is True and start.kind == ARRAY
        zero_only = start.copy is False and start.kind == ARRAY
        out = Search()
        refusals: dict[tuple[int, str], tuple[tuple[bool, bool, float], ConverterSpec]] = {}
        flags: dict[GlobalFlag, None] = {}
        tie = itertools.count()
        best: dict[tuple[PlanKey, bool], tuple[float, ...]] = {(start, False): (0, 0, 0.0)}
        back: dict[tuple[PlanKey, bool], tuple[tuple[PlanKey, bool], ConverterSpec]] = {}
        heap: list[tuple[tuple[float, ...], int, PlanKey, bool]] = [((0, 0, 0.0), 0, start, False)]
        while heap:
            cost, _, key, copied = heapq.heappop(heap)
            if best.get((key, copied)) != cost:
                continue
            if (
                key.framework == target
                and key.device == device
                and key.kind == goal_kind
                and (copied or not want_copy)
                and goal_flags <= key.flags
            ):
                node: tuple[PlanKey, bool] = (key, copied)
                while node in back:
                    prev, edge = back[node]
                    out.path.append((prev[0], edge, node[0]))
                    node = prev
                out.path.reverse()
                out.found = True
                break
            kind = device_kind(key.device)
            edges = self.by_source.get(key.framework, [])
            if key.kind != ARRAY and key.framework != ANY:  # edges from any framework too
                edges = edges + anywhere
            for edge in edges:
                if edge.kind != key.kind:
                    continue
                if (kind and kind not in edge.devices) or (zero_only and not edge.zero_copy):
                    continue
                if excluded and (edge.plugin, edge.name) in excluded:
                    continue
                nxt_key = advance(key, edge, device, target)
                if edge.to_device is not None and nxt_key.device == key.device:
                    continue  # a move to where the array already is
                reason: str | None = None
                if nxt_key.kind == ARRAY:
                    landing = device_kind(nxt_key.device)
                    if landing not in kinds:
                        continue
                    if landing != "cpu" and sees is not None:
                        reason = sees(nxt_key.framework, nxt_key.device)
                if reason is None:
                    if edge.opt_in and edge.opt_in not in opted_in:
                        reason = Reason(f"taken only on request: pass {edge.opt_in}=", ON_REQUEST)
                    else:
                        reason = edge.accepts(key)
                flag = reads_flag(edge.accepts, key.dtype)
                if flag is not None:
                    flags[flag] = None
                if reason is not None:
                    if (id(edge), reason) not in refusals:  # messages are built at the end
                        rank = (edge.target != target, category(reason) == VARIANT, cost[1])
                        refusals[id(edge), reason] = (rank, edge)
                    continue
                nxt = (nxt_key, copied or not edge.zero_copy)
                ncost = (cost[0] + (not edge.zero_copy), cost[1] + 1, cost[2] + edge.cost)
                if nxt not in best or ncost < best[nxt]:
                    best[nxt] = ncost
                    back[nxt] = ((key, copied), edge)
                    heapq.heappush(heap, (ncost, next(tie), nxt[0], nxt[1]))
        # Most useful first: edges into the target, real refusals before variant
        # mismatches, nearest the source first.
        ranked = sorted(
            (rank, i, edge, why) for i, ((_, why), (rank, edge)) in enumerate(refusals.items())
        )
        out.refused = [RefusedEdge(e.name, e.plugin, e.edge, why) for _, _, e, why in ranked]
        # Would the other 64-byte alignment of the start change the outcome? Surely if an
        # edge of the path turns on it; perhaps if a refusal did.
        out.path_aligned = any(reads_alignment(e.accepts, None) for _, e, _ in out.path)
        out.refused_aligned = any(reads_alignment(e.accepts, why) for _, _, e, why in ranked)
        out.flags = tuple(flags)
        return out


def make_route(
    info: TensorInfo | None,
    source: PlanKey,
    target: str,
    device: str,
    path: Sequence[tuple[PlanKey, ConverterSpec, PlanKey]],
    refused: Sequence[RefusedEdge] = (),
    goal_kind: str = "",
) -> Route:
    """Describe a found path as a Route (to an object of ``goal_kind``, default the
    source's kind)."""
    steps = tuple(
        Step(e.name, e.plugin, node_name(k), node_name(after), e.zero_copy, e.note, e.kind)
        for k, e, after in path
    )
    copies = sum(not s.zero_copy for s in steps)
    # "Why not zero-copy": edges from a framework the route passed through into the target.
    why_edges = {f"{k.framework}->{target}" for k, _, _ in path}
    # A note about shared memory is moot once a later step copies (the result is the copy).
    last_copy = max((i for i, s in enumerate(steps) if not s.zero_copy), default=-1)
    notes = tuple(dict.fromkeys(
        s.note for i, (s, (_, e, _)) in enumerate(zip(steps, path, strict=True))
        if s.note and not (e.memory_note and i < last_copy)
    ))  # fmt: skip
    # The planner goes through the host between devices only when no route stays on them.
    ends = (device_kind(source.device), device_kind(device))
    host_to_host = ends == ("cpu", "cpu")
    on_devices = source.kind == ARRAY and "cpu" not in ends
    if on_devices and any(device_kind(after.device) == "cpu" for _, _, after in path):
        notes += (
            f"the route goes through host memory: no converter carries this array from "
            f"{source.device} to {device} without it (see the refusals)",
        )
    return Route(
        source=node_name(source),
        target=node_name(
            source._replace(framework=target, device=device, kind=goal_kind or source.kind)
        ),
        steps=steps,
        copies=copies,
        bytes_copied=copies * info.nbytes if info is not None else 0,
        refused=tuple(r for r in refused if r.edge in why_edges and r.category != VARIANT)
        # One copy between devices is the move itself: no refusal explains it (between
        # host devices, which share memory, a move need not copy).
        if copies and not (copies == 1 and source.device != device and not host_to_host)
        else (),
        notes=notes,
        refusals=tuple(refused),
        kind=source.kind,
    )


Runner = Callable[[Any], Any]


class StepFailed(Exception):
    """Raised by a multi-step runner: step ``index`` failed with ``error``."""

    def __init__(self, index: int, error: Exception) -> None:
        super().__init__(index, error)
        self.index = index
        self.error = error


class Plan(NamedTuple):
    """A route bound to its conversion functions: ``run(x)`` performs it."""

    route: Route
    funcs: tuple[Runner, ...]
    edges: tuple[ConverterSpec, ...]
    #: Does the array's 64-byte alignment change the route: "yes", "no" or "maybe".
    by_alignment: str = "maybe"
    #: Global flags the route turns on: their values join the plan key.
    flags: tuple[GlobalFlag, ...] = ()

    @property
    def run(self) -> Runner:
        """The fastest callable performing the route (the single function when one step).

        A one-step runner raises what its converter raises; a longer one raises
        :class:`StepFailed` naming the step, so no step is ever run twice to find out.
        """
        if not self.funcs:
            return _identity
        if len(self.funcs) == 1:
            return self.funcs[0]
        funcs = tuple(enumerate(self.funcs))

        def run(x: Any) -> Any:
            for i, f in funcs:
                try:
                    x = f(x)
                except Exception as exc:
                    raise StepFailed(i, exc) from exc
            return x

        return run

    def failed_step(self, exc: Exception) -> tuple[ConverterSpec, Exception]:
        """The edge whose step raised ``exc`` (as raised by :attr:`run`), and its error."""
        if isinstance(exc, StepFailed):
            return self.edges[exc.index], exc.error
        return self.edges[0], exc


def _identity(x: Any) -> Any:
    return x
