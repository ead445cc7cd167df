"""The route planner: the graph of converter edges, Dijkstra over it, and the ranking of
the refusals it meets (the routes it yields are told by routes.py, run by plans.py).

Nodes are :class:`PlanKey` values (framework, device with index, dtype, layout, read-only,
aligned, flags) paired with whether the route has copied yet. The cost of a path is the
tuple (copies, hops, estimated µs), compared in that order, so a route with fewer copies
always wins (rule 5); every copy moves the array's bytes once, so ordering by copies is
ordering by bytes moved. Modelled on astropy's TransformGraph: a small Dijkstra of its own
and a cache that is dropped whenever the graph changes.

An edge is taken when its own ``accepts`` and what its target framework declares for every
import agree (:class:`Rules`: JAX's and TensorFlow's alignment and layout, torch's negative
strides, JAX's x64), so those rules are written once, in the framework's spec.
"""

from __future__ import annotations

import functools
import heapq
import itertools
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping

from ..declare.errors import (
    DTYPE,
    FLAG,
    GLOBAL_FLAG,
    LAYOUT,
    ON_REQUEST,
    READONLY,
    UNALIGNED,
    VARIANT,
    Reason,
    RefusedEdge,
    category,
)
from ..declare.predicates import GlobalFlag, Needs, reads_alignment, reads_flag
from ..declare.records import NamedTuple
from ..declare.specs import (
    ANY,
    ARRAYS,
    ArrayTraits,
    ConverterSpec,
    Device,
    FormSpec,
    FrameworkSpec,
    Kind,
    PlanKey,
    device_kind,
)
from .forms import taken_flags

Predicate = Callable[[PlanKey], str | None]


def advance(
    key: PlanKey, edge: ConverterSpec, kind: Kind, goal: Goal, lands: str | None = None
) -> PlanKey:
    """The node of the result of taking ``edge`` from ``key`` (of ``kind``) towards
    ``goal`` (whose framework an edge to ``ANY`` reaches); ``lands`` is its device when
    already known (see :func:`landing`)."""
    traits = key.traits
    if edge.result_kind and edge.result_kind != key.kind:
        traits = None  # a new kind of object: none of the old one's traits hold
    else:
        traits = kind.advance(traits, edge)
    return PlanKey(
        edge.result_kind or key.kind, goal.framework if edge.target == ANY else edge.target,
        landing(key, edge, kind, goal) if lands is None else lands, traits,
        (key.flags & edge.keeps_flags) | edge.adds_flags, key.copy,
    )  # fmt: skip


def landing(key: PlanKey, edge: ConverterSpec, kind: Kind, goal: Goal) -> str:
    """The device the result of taking ``edge`` from ``key`` lands on."""
    device = key.device
    if edge.array.to_device is not None:  # a move lands on the goal's index when it goes there
        if device_kind(goal.device) == edge.array.to_device:
            return goal.device
        return str(Device(edge.array.to_device))
    if kind.on_device and edge.target not in (key.framework, ANY) and device != "cpu":
        # Host device indexes are each framework's own (JAX's cpu:3); CUDA ordinals are
        # shared. An object crossing frameworks on the host lands on the target's "cpu".
        return device if device_kind(device) != "cpu" else "cpu"
    return device


class Goal(NamedTuple):
    """Where a search ends, and what the request opens on the way."""

    framework: str
    #: The goal device with its index ("cuda:1"); "" for an object bound to no device.
    device: str
    #: The kind of the goal node ("" the start's): a pipeline's route ends in an iterator.
    kind: str = ""
    #: Flags the goal node must carry (what an opt-in edge marks its result with: mesh=
    #: asks for a "sharded" DTensor, not any torch tensor).
    flags: frozenset[str] = frozenset()
    #: Options the user passed with a value (they open ``opt_in`` edges).
    opted_in: frozenset[str] = frozenset()
    #: Options the user passed as False (they close ``opt_out`` edges).
    opted_out: frozenset[str] = frozenset()


class Refusals:
    """Collects the refusals a search meets and ranks them: edges into the goal's framework
    first, real refusals before variant mismatches, nearest the source first."""

    __slots__ = ("met", "target")

    def __init__(self, target: str) -> None:
        self.target = target
        #: (id(edge), reason) -> (rank, edge, reason, the cost of a path through the edge)
        self.met: dict[
            tuple[int, str], tuple[tuple[bool, bool, float], ConverterSpec, str, tuple[float, ...]]
        ] = {}

    def add(self, edge: ConverterSpec, reason: str, cost: tuple[float, ...]) -> None:
        """Record that ``edge`` refused for ``reason``, where a path through it would have
        cost at least ``cost`` (copies, hops, µs)."""
        if (id(edge), reason) not in self.met:  # messages are built at the end
            rank = (edge.target != self.target, category(reason) == VARIANT, cost[1])
            self.met[id(edge), reason] = (rank, edge, reason, cost)

    def ranked(self) -> list[tuple[ConverterSpec, str, tuple[float, ...]]]:
        """Every refusal met, most useful first: (edge, reason, cost through it)."""
        order = sorted(
            (rank, i, e, why, c) for i, (rank, e, why, c) in enumerate(self.met.values())
        )
        return [(e, why, c) for _, _, e, why, c in order]


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


class Rules(NamedTuple):
    """What an edge must meet besides its own ``accepts``: what its target declares."""

    #: The target's import rules (``FrameworkSpec.rules.imports``); None for an edge that copies.
    imports: Predicate | None
    #: The target's global switches (``FrameworkSpec.rules.switches``).
    switches: tuple[GlobalFlag, ...]


#: The order refusals are told in when an edge's own verdict and its target's rules both
#: refuse: the order one ``Needs`` checks them in (the edge is for other objects, their dtype,
#: a switch, a flag, then the memory: layout, alignment, read-only). Others come last.
_ORDER = {VARIANT: 0, DTYPE: 1, GLOBAL_FLAG: 2, FLAG: 3, LAYOUT: 4, UNALIGNED: 5, READONLY: 6}
_LAST = len(_ORDER)


def _rank(reason: str) -> int:
    return _ORDER.get(category(reason), _LAST)


class Graph:
    """Converter edges indexed by source framework, with what their targets declare.

    ``frameworks`` (the specs, by name or as a sequence) is read once, here: each array edge
    into a framework from another one gets that framework's ``switches``, and a zero-copy
    one its ``imports`` rules too (:attr:`rules`), so no author of an edge has to repeat
    them; the flags' advice (``FrameworkSpec.flags``) words the refusals over a flag.
    """

    def __init__(
        self,
        edges: Iterable[ConverterSpec],
        frameworks: Mapping[str, FrameworkSpec] | Iterable[FrameworkSpec] = (),
        kinds: Mapping[str, Kind] | Iterable[Kind] = (ARRAYS,),
        forms: Iterable[FormSpec] = (),
    ) -> None:
        self.edges = tuple(edges)
        specs = tuple(frameworks.values() if isinstance(frameworks, Mapping) else frameworks)
        by_name = {s.name: s for s in specs}
        forms = tuple(forms)
        declared = [(s.name, f) for s in specs for f in s.flags]
        declared += [(form.framework, f) for form in forms for f in form.flags]
        #: The opaque flags (``Flag.opaque``): only an edge naming one, or a form that sets
        #: one, takes an object carrying it.
        self.opaque = frozenset(f.name for _, f in declared if f.opaque)
        #: id(edge) -> the flags of the forms it names (absent: none).
        self.taken: dict[int, frozenset[str]] = {
            id(e): taken_flags(e, forms, self.opaque) for e in self.edges if e.array.forms
        }
        #: The declared kinds by name: what the search knows of each node's kind.
        self.kinds: dict[str, Kind] = {
            k.name: k for k in (kinds.values() if isinstance(kinds, Mapping) else kinds)
        }
        #: (framework, kind) -> the edges from it; an edge from ANY is listed under every
        #: framework's node of its kind (see :meth:`edges_from`).
        self.by_source: dict[tuple[str, str], list[ConverterSpec]] = defaultdict(list)
        #: id(edge) -> the rules of its target it must meet (absent: none).
        self.rules: dict[int, Rules] = {}
        #: id(edge) of the edges whose verdict may turn on a global flag (its own or its
        #: target's switches): only they are asked which flags a verdict read.
        self.flagged: set[int] = set()
        for e in self.edges:
            self.by_source[e.source, e.kind].append(e)
            rules = _rules_of(e, by_name.get(e.target), self.kinds.get(e.kind))
            if rules is not None:
                self.rules[id(e)] = rules
            if getattr(e.accepts, "flag", None) is not None or (rules and rules.switches):
                self.flagged.add(id(e))
        #: (framework, kind, dtype, flags) -> the edges a key there may take (see
        #: :meth:`edges_from`), filled as searches ask.
        self._for_key: dict[tuple[str, str, str, frozenset[str]], list[ConverterSpec]] = {}
        #: (id(edge), dtype) -> :meth:`flags_read`'s answer, filled as searches ask.
        self._flags_read: dict[tuple[int, str], tuple[GlobalFlag, ...]] = {}
        #: Frameworks that are no waypoint: entered only by routes that start or end there.
        self.ends: frozenset[str] = frozenset(s.name for s in specs if not s.waypoint)
        #: (framework, flag) -> the advice that framework declares for the flag; ("", flag):
        #: the first declared, for objects of a framework that declares none for it.
        self.advice: dict[tuple[str, str], str] = {}
        for name, f in declared:
            self.advice[name, f.name] = f.advice
            self.advice.setdefault(("", f.name), f.advice)

    def verdict(self, edge: ConverterSpec, key: PlanKey) -> str | None:
        """Why ``edge`` refuses ``key``, or None when it takes it: its own ``accepts``, its
        target's switches and import rules. When both refuse, the reason told is the one a
        single ``Needs`` checks first (a rule's on a tie); a variant mismatch of the edge
        comes first (another edge of the pair takes such keys), and a dtype it refuses
        leaves the switches unread. An opaque flag the edge does not take (it names neither
        the flag nor its form) counts as a flag its own ``Needs`` refuses, in the same order."""
        own = edge.accepts(key)
        if key.flags and not self.opaque.isdisjoint(key.flags):
            refused = key.flags & self.opaque
            refused -= self.taken.get(id(edge), frozenset())
            if refused:
                flag = min(refused)
                if (
                    own is None
                    or _rank(own) > _ORDER[FLAG]
                    or (_rank(own) == _ORDER[FLAG] and getattr(own, "subject", "") > flag)
                ):
                    own = Reason(f"the array has flag {flag!r}", FLAG, flag)
        rules = self.rules.get(id(edge))
        if rules is None or (own is not None and _rank(own) < _ORDER[GLOBAL_FLAG]):
            return own
        for switch in rules.switches:
            if key.dtype in switch.dtypes and not switch.value():
                return Reason(switch.reason.format(dtype=key.dtype), GLOBAL_FLAG, switch.name)
        ruled = rules.imports(key) if rules.imports is not None else None
        if ruled is None or (own is not None and _rank(own) < _rank(ruled)):
            return own
        return ruled

    def flags_read(self, edge: ConverterSpec, dtype: str) -> tuple[GlobalFlag, ...]:
        """The global flags the verdict on a ``dtype`` array across ``edge`` turns on: the
        edge's own (``Needs.flag``) and its target's switches for that dtype."""
        read = self._flags_read.get((id(edge), dtype))
        if read is None:
            own = reads_flag(edge.accepts, dtype)
            rules = self.rules.get(id(edge))
            found = [s for s in rules.switches if dtype in s.dtypes] if rules else []
            read = tuple(dict.fromkeys([own, *found] if own is not None else found))
            self._flags_read[id(edge), dtype] = read  # the graph keeps its edges alive
        return read

    def reads_alignment(self, edge: ConverterSpec, reason: str | None) -> bool:
        """Could ``edge``'s verdict ``reason`` (None: it took the key) change with the
        key's alignment alone? Asked of its own ``accepts`` and its target's import rules
        (see :func:`~interop_core.declare.predicates.reads_alignment`)."""
        if reads_alignment(edge.accepts, reason):
            return True
        imports = self.rules.get(id(edge), _NO_RULES).imports
        return imports is not None and reads_alignment(imports, reason)

    def advised(self, edge: ConverterSpec, reason: str) -> str:
        """``reason`` in the words of the framework that declares its flag, for a refusal
        over a flag (category FLAG) where one does; else ``reason`` itself."""
        if category(reason) != FLAG or not self.advice:
            return reason
        flag = getattr(reason, "subject", "")
        advice = self.advice.get((edge.source, flag)) or self.advice.get(("", flag))
        return Reason(advice, FLAG, flag) if advice else reason

    def kind(self, name: str) -> Kind:
        """The declared kind ``name`` (a kind nobody declared has no traits and no rules)."""
        found = self.kinds.get(name)
        return found if found is not None else Kind(name)

    def edges_from(self, key: PlanKey) -> list[ConverterSpec]:
        """The edges that may leave ``key``'s node: those from its framework and kind, and
        those of its kind from ANY (every framework), but the variants that handle other
        objects: no key visits an edge whose ``Needs`` refuses its dtype or flags as
        another variant (:func:`_another_variant`): the bfloat16 and requires_grad variants
        of most pairs, and a form's edges for objects without the form's flag. Kept per
        dtype and flags."""
        dtype = key.traits.dtype if isinstance(key.traits, ArrayTraits) else ""
        slot = (key.framework, key.kind, dtype, key.flags)
        edges = self._for_key.get(slot)
        if edges is None:
            edges = self.by_source.get((key.framework, key.kind), [])
            if key.framework != ANY:
                edges = edges + self.by_source.get((ANY, key.kind), [])
            edges = [e for e in edges if not _another_variant(e, dtype, key.flags)]
            self._for_key[slot] = edges
        return edges

    def search(
        self,
        start: PlanKey,
        goal: Goal,
        excluded: frozenset[tuple[str, str]] = frozenset(),
        sees: Callable[[str, str], str | None] | None = None,
    ) -> Search:
        """The cheapest path from ``start`` to ``goal``, honouring ``start.copy`` where the
        start's kind says copy= applies to edges.

        At each node only edges of its kind are taken; an edge with ``opt_in`` only when
        that option is in ``goal.opted_in``; the goal node must carry ``goal.flags``.
        Objects that live on devices visit only the host and the device kinds of the start
        and the goal (a CPU request never plans through a GPU); ``sees(framework, device)``
        says why a framework cannot hold one on a device other than the CPU (None: it
        can). A device "" (a function bound to no device) passes every edge's device check.
        """
        goal_kind = goal.kind or start.kind
        device = goal.device
        kinds = {"cpu", device_kind(start.device), device_kind(device)}
        # For kinds whose items copy (iterators) copy= is not about the edges.
        by_edges = self.kind(start.kind).copy == "edges"
        want_copy = start.copy is True and by_edges
        zero_only = start.copy is False and by_edges
        out = Search()
        refusals = Refusals(goal.framework)
        flags: dict[GlobalFlag, None] = {}
        tie = itertools.count()
        best: dict[tuple[PlanKey, bool], tuple[float, ...]] = {(start, False): (0, 0, 0.0)}
        back: dict[tuple[PlanKey, bool], tuple[tuple[PlanKey, bool], ConverterSpec]] = {}
        heap: list[tuple[tuple[float, ...], int, PlanKey, bool]] = [((0, 0, 0.0), 0, start, False)]
        found: tuple[float, ...] | None = None
        ends = self.ends - {start.framework, goal.framework}
        while heap:
            cost, _, key, copied = heapq.heappop(heap)
            if best.get((key, copied)) != cost:
                continue
            if (
                key.framework == goal.framework
                and key.device == device
                and key.kind == goal_kind
                and (copied or not want_copy)
                and goal.flags <= key.flags
            ):
                node: tuple[PlanKey, bool] = (key, copied)
                while node in back:
                    prev, edge = back[node]
                    out.path.append((prev[0], edge, node[0]))
                    node = prev
                out.path.reverse()
                out.found = True
                found = cost
                break
            here = device_kind(key.device)
            on_host = key.device == "cpu"
            kind = self.kind(key.kind)
            dtype = key.traits.dtype if isinstance(key.traits, ArrayTraits) else ""
            for edge in self.edges_from(key):
                if (here and here not in edge.devices) or (zero_only and not edge.zero_copy):
                    continue
                if excluded and (edge.plugin, edge.name) in excluded:
                    continue
                if ends and edge.target in ends:  # an end, not a way (FrameworkSpec.waypoint)
                    continue
                # The node after the edge is built only for edges that take the key. On
                # the host, only a move lands elsewhere (most edges: no call to landing()).
                moves = edge.array.to_device is not None
                lands = landing(key, edge, kind, goal) if moves or not on_host else "cpu"
                if moves and lands == key.device:
                    continue  # a move to where the object already is
                reason: str | None = None
                if kind.on_device:
                    there = here if lands == key.device else device_kind(lands)
                    if there not in kinds:
                        continue
                    if there != "cpu" and sees is not None:
                        framework = goal.framework if edge.target == ANY else edge.target
                        reason = sees(framework, lands)
                if reason is None:
                    if edge.opt_in and (
                        edge.opt_in not in goal.opted_in
                        or (edge.opt_value and _chosen(edge) not in goal.opted_in)
                    ):
                        reason = _on_request(_chosen(edge), True)
                    elif edge.opt_out and edge.opt_out in goal.opted_out:
                        reason = _on_request(edge.opt_out, False)
                    else:
                        reason = self.verdict(edge, key)
                if dtype and id(edge) in self.flagged and not _flags_refuse(edge, key):
                    flags.update(dict.fromkeys(self.flags_read(edge, dtype)))
                ncost = (cost[0] + (not edge.zero_copy), cost[1] + 1, cost[2] + edge.cost)
                if reason is not None:
                    refusals.add(edge, reason, ncost)
                    continue
                nxt = (advance(key, edge, kind, goal, lands), copied or not edge.zero_copy)
                if nxt not in best or ncost < best[nxt]:
                    best[nxt] = ncost
                    back[nxt] = ((key, copied), edge)
                    heapq.heappush(heap, (ncost, next(tie), nxt[0], nxt[1]))
        ranked = refusals.ranked()
        out.refused = [
            RefusedEdge(e.name, e.plugin, e.edge, self.advised(e, why), e.target, e.source)
            for e, why, _ in ranked
        ]
        # Would the other 64-byte alignment of the start change the outcome? Surely if an
        # edge of the path turns on it (its own accepts or its target's rules); perhaps if
        # a refusal did, unless every path through the refused edges costs at least as much
        # as the one found (then no alignment makes them win: no second search is needed).
        out.path_aligned = any(self.reads_alignment(e, None) for _, e, _ in out.path)
        out.refused_aligned = any(
            (found is None or through < found) and self.reads_alignment(e, why)
            for e, why, through in ranked
        )
        out.flags = tuple(flags)
        return out


_NO_RULES = Rules(None, ())


def _chosen(edge: ConverterSpec) -> str:
    """What opens an opt-in edge: its option's name, or ``name=value`` for an edge taken
    for one value (``Request.opted_in`` holds both for a str value)."""
    return f"{edge.opt_in}={edge.opt_value}" if edge.opt_value else edge.opt_in


@functools.cache
def _on_request(option: str, opt_in: bool) -> Reason:
    """The refusal of an edge taken only on request (``opt_in``) or left out on request:
    made once per option (most searches pass several opt-in edges)."""
    if opt_in:
        name, _, value = option.partition("=")
        return Reason(
            f"taken only on request: pass {name}={value!r}" if value
            else f"taken only on request: pass {name}=",
            ON_REQUEST,
        )  # fmt: skip
    return Reason(f"left out on request: {option}=False", ON_REQUEST)


def _rules_of(edge: ConverterSpec, target: FrameworkSpec | None, kind: Kind | None) -> Rules | None:
    """The rules of ``target`` that ``edge`` must meet: its switches on an edge of arrays
    (a kind whose traits are ArrayTraits) from another framework, its import rules too when
    the edge shares memory (None: none)."""
    if target is None or kind is None or kind.traits is not ArrayTraits:
        return None
    if edge.source == edge.target:
        return None
    shares = edge.zero_copy and not edge.array.imports_checked
    imports = target.rules.imports if shares else None
    if imports is None and not target.rules.switches:
        return None
    return Rules(imports, target.rules.switches)


def _another_variant(edge: ConverterSpec, dtype: str, flags: frozenset[str]) -> bool:
    """Whether ``edge``'s ``Needs`` refuses every key of ``dtype`` and ``flags`` as another
    variant, whatever else the key holds (:meth:`Needs.other_variant`)."""
    needs = edge.accepts
    return isinstance(needs, Needs) and needs.other_variant(dtype, flags) is not None


def _flags_refuse(edge: ConverterSpec, key: PlanKey) -> bool:
    """Whether ``edge`` refuses ``key`` by its flags alone (it lacks one the edge needs, or
    carries one it refuses): then no global flag can change the verdict, and the plan must
    not read one on every warm call (a ragged edge's x64 switch on a dense route)."""
    needs = edge.accepts
    wanted: frozenset[str] = getattr(needs, "flags", frozenset())
    refused: frozenset[str] = getattr(needs, "no_flags", frozenset())
    return not wanted <= key.flags or not refused.isdisjoint(key.flags)
