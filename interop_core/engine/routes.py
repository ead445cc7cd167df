"""Routes and how they are presented: what ``explain()`` returns and errors quote.

A :class:`Route` is a path the planner found, told as steps (:class:`Step`) with what it
copies, its notes and every refusal met; a :class:`RouteTree` holds one per array leaf of
a container. :func:`make_route` turns a search's path (engine/planner.py) into one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..declare.errors import RefusedEdge, shown_refusals
from ..declare.records import NamedTuple
from ..declare.specs import ARRAY, ConverterSpec, PlanKey, device_kind

if TYPE_CHECKING:
    from .planner import Goal, Graph, Search


class Step(NamedTuple):
    """One conversion step of a route."""

    #: The converter's name (``ConverterSpec.name``), e.g. "torch.from_numpy".
    converter: str
    #: The plugin that declared the converter.
    plugin: str
    #: The node the step leaves, named as its kind names nodes: "numpy@cpu", "torch@cuda:0",
    #: "jax function".
    source: str
    #: The node the step reaches.
    target: str
    #: True when the step's result shares its input's memory.
    zero_copy: bool
    #: The converter's caveat (``ConverterSpec.note``), "" for none.
    note: str = ""
    #: The kind of object the step converts ("array", "function", ...).
    kind: str = ARRAY
    #: What the step is called after its plugin, for kinds whose steps neither copy nor
    #: share ("bridge" for functions; "" for nothing): its Kind's ``label``. None: the
    #: step copies or shares memory, and says which ("zero-copy", "COPY (note)").
    label: str | None = None
    #: What a step that copies part of the object copies (``ConverterSpec.array.copies``); "" for
    #: the whole object (or no copy).
    copies: str = ""

    def __str__(self) -> str:
        head = f"{self.source} -> {self.target}: {self.converter} [{self.plugin}]"
        if self.label is not None:  # its caveats are long: the Route lists them once
            return f"{head} {self.label}" if self.label else head
        kind = "zero-copy" if self.zero_copy else "COPY"
        note = f"  ({self.note})" if self.note else ""
        return f"{head} {kind}{note}"


class Route(NamedTuple):
    """What ``to()`` does (or would do) for one object: its steps and what they copy."""

    #: The node the object starts from ("numpy@cpu").
    source: str
    #: The node it reaches ("torch@cpu").
    target: str
    #: The conversion steps, in order (none when the object is already what was asked).
    steps: tuple[Step, ...]
    #: Steps that copy; 0 means the result shares the input's memory.
    copies: int
    #: Bytes the copies of the whole array move (those copies x its bytes), when the array is
    #: known; steps that copy a part say which (``Step.copies``), uncounted.
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
        if any(s.label is not None for s in self.steps):  # steps that neither copy nor share
            return f"{self.kind} in {len(self.steps)} step(s)"
        if self.zero_copy:
            return f"zero-copy in {len(self.steps)} step(s)"
        parts = list(dict.fromkeys(s.copies for s in self.steps if s.copies))
        copied = f"{self.copies} copy(ies)"
        if not parts:
            return f"{copied}, {self.bytes_copied} bytes copied"
        if self.copies > sum(bool(s.copies) for s in self.steps):
            return f"{copied}, {self.bytes_copied} bytes copied and {', '.join(parts)}"
        return f"{copied}: {', '.join(parts)}"

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
            if isinstance(node, RouteTree):  # an item that is a container itself (a table)
                node = node.tree
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

    @property
    def copies(self) -> int:
        """The copies of all array leaves together (0: every result shares memory)."""
        return sum(r.copies for r in self.routes.values())

    @property
    def bytes_copied(self) -> int:
        """The bytes all array leaves' copies move (as :attr:`Route.bytes_copied` counts)."""
        return sum(r.bytes_copied for r in self.routes.values())

    @property
    def notes(self) -> tuple[str, ...]:
        """The caveats of every leaf's route, each once."""
        return tuple(dict.fromkeys(n for r in self.routes.values() for n in r.notes))

    @property
    def refused(self) -> tuple[RefusedEdge, ...]:
        """Why zero-copy edges were refused, over every leaf's route, each once."""
        return tuple(dict.fromkeys(e for r in self.routes.values() for e in r.refused))

    def __str__(self) -> str:
        routes = self.routes
        copying = sum(not r.zero_copy for r in routes.values())
        lines = [f"{len(routes)} array(s), {copying} of them copied:"]
        lines += [f"  {path}: {route.summary()}" for path, route in routes.items()]
        lines += [f"  note: {n}" for n in self.notes]
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


def make_route(graph: Graph, start: PlanKey, goal: Goal, found: Search, nbytes: int = 0) -> Route:
    """Describe the path ``found`` from ``start`` to ``goal`` as a Route; ``nbytes`` is
    what one copy of the object moves (0: not known)."""
    kinds = graph.kinds
    path = found.path
    source_kind = graph.kind(start.kind)

    def step(key: PlanKey, e: ConverterSpec, after: PlanKey) -> Step:
        kind = graph.kind(key.kind)
        label = None if kind.copy == "edges" else kind.label  # steps that copy say so
        name = kind.node_name
        return Step(
            e.name, e.plugin, name(key.framework, key.device),
            kinds.get(after.kind, kind).node_name(after.framework, after.device),
            e.zero_copy, e.note, e.kind, label, "" if e.zero_copy else e.array.copies,
        )  # fmt: skip

    steps = tuple(step(*p) for p in path)
    copies = sum(not s.zero_copy for s in steps) if source_kind.copy == "edges" else 0
    # A note about shared memory is moot once a later step copies (the result is the copy).
    last_copy = max((i for i, s in enumerate(steps) if not s.zero_copy), default=-1)
    notes = tuple(dict.fromkeys(
        s.note for i, (s, (_, e, _)) in enumerate(zip(steps, path, strict=True))
        if s.note and not (e.array.memory_note and i < last_copy)
    ))  # fmt: skip
    # The planner goes through the host between devices only when no route stays on them.
    ends = (device_kind(start.device), device_kind(goal.device))
    host_to_host = ends == ("cpu", "cpu")
    if (
        source_kind.on_device
        and "cpu" not in ends
        and any(device_kind(after.device) == "cpu" for _, _, after in path)
    ):
        notes += (
            f"the route goes through host memory: no converter carries this "
            f"{source_kind.name} from {start.device} to {goal.device} without it (see the "
            "refusals)",
        )
    # "Why not zero-copy": edges into the target from a framework the route passed through.
    passed = {k.framework for k, _, _ in path}
    why = tuple(
        shown_refusals(
            [r for r in found.refused if r.target == goal.framework and r.source in passed]
        )
    )
    goal_kind = graph.kind(goal.kind or start.kind)
    # One copy between devices is the move itself: no refusal explains it (between host
    # devices, which share memory, a move need not copy).
    moved = copies == 1 and start.device != goal.device and not host_to_host
    # A copy the caller asked for (copy=True) has no "why not".
    asked = start.copy is True
    return Route(
        source=source_kind.node_name(start.framework, start.device),
        target=goal_kind.node_name(goal.framework, goal.device),
        steps=steps,
        copies=copies,
        bytes_copied=(copies - sum(bool(s.copies) for s in steps)) * nbytes,
        refused=why if copies and not moved and not asked else (),
        notes=notes,
        refusals=tuple(found.refused),
        kind=start.kind,
    )
