"""Planning and running the route for one object: the slow path behind ``to()``.

A :class:`Request` records what is asked (the start node, the object's kind and framework,
the target, the device with its index, copy, options). The router plans its route, binds
the converters, caches the plan (in the warm tables for arrays, by option names for other
kinds) and runs it. A step that fails is never run again in the same call:
BufferError/NotImplementedError leave its converter out for that object only (warned once
per route) and the route is re-planned; any other exception becomes a ConversionError
naming the converter and its plugin.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Hashable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ..declare.context import CallContext
from ..declare.errors import (
    VARIANT,
    ConversionError,
    CopyRequiredError,
    DeviceError,
    FrameworkNotInstalledError,
    InteropError,
    NoRouteError,
    OptionError,
    PluginWarning,
    RefusedEdge,
    category,
    framework_failures,
)
from ..declare.records import NamedTuple
from ..declare.specs import (
    ANY,
    ARRAYS,
    CPU,
    ConverterSpec,
    Device,
    FrameworkSpec,
    Kind,
    KindSpec,
    PlanKey,
    TensorInfo,
    device_kind,
)
from .plancache import FastKey, RouteKey, StalePlan
from .planner import Goal, Search
from .plans import Plan, Runner
from .routes import Route, make_route

if TYPE_CHECKING:  # the engine's state calls the router; the router only reads it
    from .state import State


class Asked(NamedTuple):
    """The arguments of one call, checked: what every request it makes shares."""

    target: FrameworkSpec
    #: ``device=`` read as a Device (None: none asked).
    device: Device | None
    copy: bool | None
    #: The options converters may take (``source=`` taken out, ``dtype=`` read as a Cast).
    options: Mapping[str, Any]
    #: ``source=`` as given (None: not given).
    source: Any = None


class Request(NamedTuple):
    """One conversion asked of the router."""

    #: The node the route starts from: kind, framework, device, traits, flags, copy.
    start: PlanKey
    #: The object's kind, as declared.
    kind: Kind
    #: The framework that owns the object (its key functions key the warm path); None
    #: for an object of no framework (an iterator: each item says its own).
    source: FrameworkSpec | None
    target: FrameworkSpec
    #: The goal device with its index (an array's own when None was asked); None for an
    #: object bound to no device (a function) when none was asked.
    device: Device | None
    #: The options of the call, sorted by name.
    options: tuple[tuple[str, Any], ...] = ()
    #: The object in words, for messages ("numpy float64 3 (C layout) on cpu").
    description: str = ""
    #: The array's description, for arrays (bytes copied, casts, the dtype check).
    info: TensorInfo | None = None

    @property
    def copy(self) -> bool | None:
        """The user's ``copy=``."""
        return self.start.copy

    @property
    def goal_kind(self) -> str:
        """The kind of the result (a pipeline becomes an iterator)."""
        return self.kind.becomes or self.start.kind

    @property
    def opted_in(self) -> frozenset[str]:
        """The options passed with a value other than None or False (they open ``opt_in``
        edges), and ``name=value`` for a str value (it opens the edges of that
        ``opt_value``). Never ``bool(value)``: arrays and shape structs refuse to be
        truth-tested."""
        given = [(n, v) for n, v in self.options if v is not None and v is not False]
        return frozenset(
            [n for n, _ in given] + [f"{n}={v}" for n, v in given if isinstance(v, str)]
        )

    @property
    def opted_out(self) -> frozenset[str]:
        """The options passed as False (they close ``opt_out`` edges)."""
        return frozenset(name for name, value in self.options if value is False)

    @property
    def goal(self) -> str:
        """The goal device as a string ("" for none)."""
        return "" if self.device is None else str(self.device)

    @property
    def route_key(self) -> RouteKey:
        """What the route depends on: the start node, the target and the goal device."""
        return (self.start, self.target.name, self.goal)

    def described(self, info: TensorInfo, copy: bool | None) -> Request:
        """The same request for the array ``info`` describes (a cast's result, the other
        alignment), asked with ``copy``."""
        return self._replace(start=info.plan_key(copy), info=info, description=_words(info))

    def what(self) -> str:
        """The request in words, for messages."""
        if self.kind.on_device:
            return f"from {self.description} to {self.target.name} on {self.device}"
        where = f" on {self.device}" if self.device is not None else ""
        return f"from {self.description} to a {self.target.name} {self.goal_kind}{where}"


def _words(info: TensorInfo) -> str:
    """An array in words: "numpy float64 3x4 (C layout) on cpu"."""
    shape = "x".join(map(str, info.shape)) or "0-d"
    return f"{info.framework} {info.dtype} {shape} ({info.layout} layout) on {info.device}"


def describe(spec: FrameworkSpec, obj: Any) -> TensorInfo:
    """The spec's description of ``obj``, with a framework failure turned into an InteropError."""
    what = f"Plugin {spec.plugin!r} could not describe this {spec.name} object"
    with framework_failures(f"{what} ({type(obj).__name__})"):
        return spec.describe(obj)


def snapshot(spec: FrameworkSpec, obj: Any) -> Any:
    """What the route converts for ``obj``: its spec's snapshot (the producer asked once),
    or ``obj`` itself; a producer's failure becomes an InteropError."""
    if spec.snapshot is None:
        return obj
    what = f"Could not read the {spec.name} array a {type(obj).__name__} describes"
    with framework_failures(f"{what} (plugin {spec.plugin!r})"):
        return spec.snapshot(obj)


def request(
    obj: Any, source: FrameworkSpec, asked: Asked, info: TensorInfo | None = None
) -> Request:
    """Describe the array ``obj`` of ``source`` (unless ``info`` already does) and record
    what is asked of it."""
    if info is None:
        info = describe(source, obj)
    opts = tuple(sorted(asked.options.items()))
    goal = asked.device or home(asked.target, info.device, info.framework)
    return Request(
        info.plan_key(asked.copy), ARRAYS, source, asked.target, goal, opts, _words(info), info
    )  # fmt: skip


def home(target: FrameworkSpec, here: Device, source: str = "") -> Device:
    """Where ``device=None`` sends an array of framework ``source`` now on ``here``: it
    stays, unless ``target`` cannot hold arrays on that kind of device (numpy and a GPU):
    then its default kind. A host device's index is its framework's own (JAX's cpu:3 is
    nothing to torch), so an array crossing to another framework lands on its "cpu"."""
    kinds = target.devices.kinds
    if kinds and here.kind not in kinds:
        return Device(kinds[0])
    return CPU if here.kind == "cpu" and here.index and target.name != source else here


def object_request(
    spec: KindSpec, kind: Kind, source: FrameworkSpec | None, asked: Asked
) -> Request:
    """Record what is asked of an object found by ``spec`` (a function, an iterator, ...):
    an object of ``kind`` owned by ``source`` (None: by no framework)."""
    framework = source.name if source is not None else ANY
    goal = "" if asked.device is None else str(asked.device)
    start = PlanKey(kind.name, framework, goal, None, spec.flags, asked.copy)
    what = spec.description or f"a {framework} {kind.name}"
    opts = tuple(sorted(asked.options.items()))
    return Request(start, kind, source, asked.target, asked.device, opts, what)


#: How many converters taking a misplaced option an OptionError names, per option.
_LISTED = 3


def _validate(req: Request, found: Search) -> None:
    """Each edge of the route checks the values given for its options (``validate``)."""
    for _, e, _ in found.path:
        if e.validate is not None and e.options:
            given = {k: v for k, v in req.options if k in e.options}
            if given:
                e.validate(MappingProxyType(given))


def _other_variant(edge: ConverterSpec, start: PlanKey) -> bool:
    """Is ``edge`` one from ``start``'s framework that handles other objects of it (its
    predicate refuses ``start`` as another variant: a flag it needs is missing)?"""
    if edge.source != start.framework:
        return False
    reason = edge.accepts(start)
    return reason is not None and category(reason) == VARIANT


def _inspection(found: Search, obj: Any) -> RefusedEdge | None:
    """The first refusal of ``obj`` by an edge of the path that inspects objects (None:
    none). An inspection that raises refuses, saying so: the converter would meet the
    same trouble."""
    for _, edge, _ in found.path:
        if edge.inspects is None:
            continue
        try:
            reason = edge.inspects(obj)
        except Exception as exc:
            reason = f"its inspection of the object failed ({type(exc).__name__}: {exc})"
        if reason:
            return RefusedEdge(edge.name, edge.plugin, edge.edge, reason, edge.target, edge.source)
    return None


def _failure(edge: ConverterSpec, req: Request, exc: BaseException) -> str:
    info = req.info
    what = (
        f"a {info.dtype} {info.layout} array of shape {info.shape}"
        if info is not None
        else req.description
    )
    return (
        f"Converter {edge.name!r} [{edge.edge}] of plugin {edge.plugin!r} failed on "
        f"{what}: {type(exc).__name__}: {exc}."
    )


class Router:
    """The slow path of one registry build, bound to its :class:`State` (one each, made
    with it): plans the route a request asks for, binds its converters, caches the plan and
    runs it, and handles a failed step. The state detects and describes; the router routes.
    """

    def __init__(self, st: State) -> None:
        self.st = st
        #: Framework name -> the devices it sees (None: it does not say), asked on first need.
        self.visible: dict[str, tuple[str, ...] | None] = {}

    def visible_devices(self, name: str) -> tuple[str, ...] | None:
        """The devices framework ``name`` sees, asked once per registry build (None when its
        spec does not say, or asking failed)."""
        if name in self.visible:
            return self.visible[name]
        spec = self.st.frameworks.get(name)
        found = None
        if (
            spec is not None
            and spec.devices.visible is not None
            and self.st.installed.get(name, False)
        ):
            try:
                found = tuple(spec.devices.visible())
            except Exception:  # a framework that fails to start: let its converters say why
                found = None
        self.visible[name] = found
        return found

    def device_refusal(self, name: str, device: str) -> str | None:
        """Why framework ``name`` cannot hold an array on ``device`` here (None: it can)."""
        seen = self.visible_devices(name)
        if seen is None or device in seen:
            return None
        return (
            f"{name} sees no {device} device on this machine (it sees: {', '.join(seen) or 'none'})"
        )

    def find_route(
        self, req: Request, excluded: frozenset[tuple[str, str]] = frozenset()
    ) -> tuple[Route, Search]:
        """The cheapest route for ``req`` and the search that found it, leaving out the
        ``excluded`` (plugin, converter) pairs; raises when there is none."""
        info, target = req.info, req.target
        if info is not None and info.dtype not in target.dtypes and info.framework != target.name:
            reason = RefusedEdge(
                "(dtype check)", target.plugin, f"*->{target.name}",
                f"{target.name} has no dtype {info.dtype}", target.name,
            )  # fmt: skip
            raise NoRouteError(
                req.what(), [reason], f"Cast the array to a dtype {target.name} can hold."
            )
        if req.kind.on_device and req.goal != "cpu":  # every framework holds objects on "cpu"
            self._check_device(req, req.goal)
        opted_in = req.opted_in
        # An opt-in edge into the target that marks its result asks for such a result
        # (mesh=: a DTensor, not any torch tensor).
        asked = [
            e for e in self.st.declared
            if e.opt_in in opted_in and e.adds_flags and e.target == target.name
            and e.kind == req.start.kind
            and (not e.opt_value or f"{e.opt_in}={e.opt_value}" in opted_in)
        ] if opted_in else []  # fmt: skip
        if opted_in:
            self._check_values(req, target)
        goal = Goal(
            target.name, req.goal, req.goal_kind, frozenset().union(*(e.adds_flags for e in asked)),
            opted_in, req.opted_out,
        )  # fmt: skip
        sees = self.device_refusal
        found = self.st.graph.search(req.start, goal, excluded, sees)
        if not found.found:
            relevant = [r for r in found.refused if r.target == target.name]
            if not relevant:  # the search met no edge into the target: say why none fits
                relevant = self._none_into(req, target) or found.refused
            if (
                req.copy is False
                and self.st.graph.search(req.start._replace(copy=None), goal, excluded, sees).found
            ):
                raise CopyRequiredError(req.what(), found.refused, relevant)
            advice = ""
            if asked:
                options = ", ".join(sorted({f"{e.opt_in}=" for e in asked}))
                makers = "; ".join(f"{e.name} [{e.edge}]" for e in asked)
                advice = f"{options} asks for a result only these converters make: {makers}."
            elif info is not None and req.device != info.device:
                advice = (
                    f"{req.goal} is reached only by a device move that accepts this "
                    f"{req.kind.name}; `python -m interop_core doctor` lists the devices each "
                    "framework sees."
                )
            raise NoRouteError(req.what(), found.refused, advice, relevant)
        self._check_options(req, found)
        return make_route(self.st.graph, req.start, goal, found, info.nbytes if info else 0), found

    def _check_device(self, req: Request, goal: str) -> None:
        """The target must see the goal device (asked here, before any search, for a clear
        error). A host device no framework sees (cpu:99) is a DeviceError: no route helps."""
        target = req.target.name
        unseen = self.device_refusal(target, goal)
        if device_kind(goal) == "cpu" and (
            unseen is not None or self.visible_devices(target) is None
        ):
            found = {
                n: self.visible_devices(n) for n in self.st.frameworks if self.st.installed.get(n)
            }
            listed = {n: seen for n, seen in found.items() if seen is not None}
            if listed and not any(goal in seen for seen in listed.values()):
                lines = "; ".join(f"{n}: {', '.join(seen) or 'none'}" for n, seen in listed.items())
                advice = " ".join(
                    f"({self.st.frameworks[n].devices.advice})"
                    for n in listed if self.st.frameworks[n].devices.advice
                )  # fmt: skip
                raise DeviceError(
                    f"device={goal!r}: no framework here has such a device.\nThe devices each "
                    f"sees: {lines}." + (f" {advice}" if advice else "")
                )
        if unseen is None:
            return
        seen = self.visible_devices(target)
        raise NoRouteError(
            req.what(),
            [RefusedEdge("(device check)", req.target.plugin, f"*->{target}", unseen, target)],
            f"Pass device= one of {', '.join(seen)}."
            if seen
            else f"No {target} array can be made on this machine: {target} finds no device.",
        )

    def _none_into(self, req: Request, target: FrameworkSpec) -> list[RefusedEdge]:
        """Why no edge into ``target`` takes the start's objects, when each takes another
        variant (scipy holds sparse arrays only: a dense array meets none of its edges, and
        the search never visits another variant's edges): one refusal naming the first
        three, or none when some edge would take it (a route was cut elsewhere)."""
        into = [e for e in self.st.declared if e.target == target.name and e.kind == req.start.kind]
        reasons = [(e, self.st.graph.verdict(e, req.start)) for e in into]
        if not reasons or any(r is None or category(r) != VARIANT for _, r in reasons):
            return []
        shown = "; ".join(f"{e.name} [{e.edge}]: {r}" for e, r in reasons[:3])
        more = f" (and {len(reasons) - 3} more)" if len(reasons) > 3 else ""
        return [
            RefusedEdge(
                "(every converter into it)", target.plugin, f"*->{target.name}",
                f"no converter into {target.name} takes this {req.start.kind}: each takes "
                f"another variant ({shown}{more})", target.name,
            )
        ]  # fmt: skip

    def _check_values(self, req: Request, target: FrameworkSpec) -> None:
        """An option whose edges are taken by value (``opt_value``: ``layout=``) must have a
        value some edge into ``target`` takes: any other would find a route that ignores
        it."""
        kind = req.start.kind
        for name, value in req.options:
            steered = [
                e for e in self.st.declared if e.opt_in == name and e.opt_value and e.kind == kind
            ]  # fmt: skip
            if not steered or value is None or value is False:
                continue
            values = sorted({e.opt_value for e in steered if e.target == target.name})
            if not (isinstance(value, str) and value in values):
                takes = (
                    f"one of {', '.join(repr(v) for v in values)}" if values
                    else f"no value: {target.name} has no converter that takes {name}="
                )  # fmt: skip
                raise OptionError(
                    f"{name}={value!r} is not a value {target.name} takes: {takes}.\n"
                    f"Pass {name}= with one of them, or leave it out."
                )

    def _check_options(self, req: Request, found: Search) -> None:
        """Every option of ``req`` must be declared by an edge of the route found."""
        if not req.options:  # the common request: nothing to check
            return
        taken = {name for _, e, _ in found.path for name in self._options(e)}
        # Opting in to (or out of: None, False) an edge of this kind is a valid request whichever
        # route is cheapest, unless the edge marks its result and is opted in: then the option
        # asks for that result. An opt-in of another kind (a pipeline's sharding=) is unknown here.
        # Nor is an opt-in of edges from the start's framework that handle other objects of it
        # (a masked array's nulls=, asked of a plain array): they could never take this one.
        opted, declared = req.opted_in, self.st.declared
        # An option taken by value (layout=) is always one: the goal asks for its result.
        opt_ins = {
            e.opt_in for e in declared
            if e.opt_in and e.kind == req.start.kind
            and not (e.adds_flags and e.opt_in in opted and not e.opt_value)
            and not _other_variant(e, req.start)
        } | {e.opt_out for e in declared if e.opt_out and e.kind == req.start.kind}  # fmt: skip
        unknown = sorted(name for name, _ in req.options if name not in taken | opt_ins)
        if not unknown:
            _validate(req, found)
            return
        import difflib

        # The converters for such objects that take these options; for a name none takes (a
        # misspelt one), those taking a close name: never the whole catalogue.
        own = [e for e in self.st.declared if e.kind == req.start.kind and e.options]
        names = {n for e in own for n in e.options}
        wanted = {u: [u] if u in names else difflib.get_close_matches(u, names, n=2, cutoff=0.75)
                  for u in unknown}  # fmt: skip
        takers = {n: [e for e in own if n in e.options] for ns in wanted.values() for n in ns}
        route = " -> ".join([req.start.framework, *(e.target for _, e, _ in found.path)])
        # A misspelt name is the usual cause: suggest the close names valid on this route.
        valid = {"device", "copy", "dtype", "source", *taken, *opt_ins}
        close = [m for u in unknown for m in difflib.get_close_matches(u, valid, n=1, cutoff=0.6)]
        guess = f"did you mean {', '.join(f'{m}=' for m in dict.fromkeys(close))}?"
        elsewhere = [n for u in unknown for n in wanted[u] if n != u]
        if not close and elsewhere:
            guess = f"did you mean {', '.join(f'{m}=' for m in elsewhere)} (other routes take it)?"
            close = elsewhere
        # The first line stays short; the listings follow, one item per line.
        lines = [
            f"Unknown option(s) {', '.join(unknown)} for the route {route}: "
            + (guess if close else "no converter on it takes them."),
            f"The route ({req.what()}) takes "
            + (
                f"the options {', '.join(f'{n}=' for n in sorted(taken))}"
                if taken
                else "no options"
            )
            + "; to() itself takes device=, copy=, dtype= and source=.",
        ]
        # An edge that takes the option but was refused says why the route could not use it.
        wanting = {(e.name, e.plugin) for n in unknown for e in takers.get(n, ())}
        refused = [f"  {r.converter} [{r.edge}]: {r.reason}" for r in found.refused
                   if (r.converter, r.plugin) in wanting]  # fmt: skip
        # An edge for other variants of the start's objects (a form's) is never visited by
        # the search: ask it here why it refuses this one.
        met = {(r.converter, r.plugin) for r in found.refused}
        for n in unknown:
            for e in takers.get(n, ()):
                if e.source == req.start.framework and (e.name, e.plugin) not in met:
                    reason = self.st.graph.verdict(e, req.start)
                    if reason is not None:
                        refused.append(f"  {e.name} [{e.edge}]: {reason}")
                        met.add((e.name, e.plugin))
        if refused:
            lines += ["Refused on this route:", *refused]
        if "dtype" not in unknown:  # options are no way to cast: say how to
            lines.append(
                "to() never casts: the result keeps the source's dtype unless dtype= is given."
            )
        listing = []
        for n, es in takers.items():
            firsts: dict[str, ConverterSpec] = {}  # one example per source framework
            for e in es:
                firsts.setdefault(e.source, e)
            examples = [*firsts.values()][:_LISTED]
            listing.append(
                f"  {n}=: {len(es)} converter(s), e.g. "
                + ", ".join(f"{e.name} [{e.edge}]" for e in examples)
            )
        if listing:
            lines += [f"Other routes for {req.kind.plural} take:", *listing]
        elif len(own) <= 2 * _LISTED:  # a short catalogue (a kind of few edges): all of it
            catalogue = [f"  {e.name} [{e.edge} {e.kind}]: {', '.join(e.options)}" for e in own]
            lines += [f"Options for {req.kind.plural} are taken by:", *catalogue]
        raise OptionError("\n".join(lines), unknown)

    def plan(self, req: Request, excluded: frozenset[tuple[str, str]] = frozenset()) -> Plan:
        """The cheapest route for ``req``, bound to its functions; raises when there is none."""
        return self.bind(req, *self.find_route(req, excluded))

    def bind(self, req: Request, route: Route, found: Search) -> Plan:
        """The plan that runs ``route`` (found by ``found``) for ``req``: its steps' functions
        loaded and bound to the request's device and options."""
        edges = tuple(e for _, e, _ in found.path)
        load = self.st.cache.load
        funcs = tuple(self._bind(req, e, load(e, self._load), after) for _, e, after in found.path)
        by_alignment = "yes" if found.path_aligned else "maybe" if found.refused_aligned else "no"
        return Plan(route, funcs, edges, by_alignment, found.flags)

    def _bind(self, req: Request, edge: ConverterSpec, func: Any, after: PlanKey) -> Runner:
        """The step's function of one argument: a device move gets its Device, an edge that
        takes a context gets one (its options, the device, a ``to()`` on this snapshot)."""
        if edge.array.to_device:
            return functools.partial(func, device=Device.parse(after.device))  # type: ignore[no-any-return]
        if not edge.context:
            return func  # type: ignore[no-any-return]
        options = self._options(edge)
        ctx = CallContext(
            device=req.device,
            options=MappingProxyType({k: v for k, v in req.options if k in options}),
            to=self.st.to,
            copy=req.copy,
            target=req.target.name,
            hook=self.st.hook,
        )

        def step(obj: Any) -> Any:
            return func(obj, ctx)

        return step

    def _options(self, edge: ConverterSpec) -> frozenset[str] | tuple[str, ...]:
        """The options ``edge`` takes: those it declares and, on an edge of a kind whose
        ``copy=`` reaches its items (an iterator's), every array edge's, for each item's ``to()``,
        but for the names that choose an edge of that kind (``sharding=`` picks global batches)."""
        if self.st.graph.kind(edge.kind).copy != "items":
            return edge.options
        steering = {
            n for e in self.st.declared if e.kind == edge.kind for n in (e.opt_in, e.opt_out)
        }
        return (self.st.array_options - steering).union(edge.options)

    def _load(self, edge: ConverterSpec) -> Any:
        """Loads an edge's function; a missing module names the framework and its install hint."""
        try:
            return edge.load()
        except ImportError as exc:
            top = (exc.name or "").partition(".")[0]
            frameworks = self.st.frameworks.values()
            owner = next((s for s in frameworks if top and s.import_name == top), None)
            if owner is None:
                missing = exc.name or edge.target
                raise FrameworkNotInstalledError(missing, f"pip install {top or missing}") from exc
            raise FrameworkNotInstalledError(owner.name, owner.install_hint) from exc
        except Exception as exc:
            raise ConversionError(
                f"Converter {edge.name!r} [{edge.edge}] of plugin {edge.plugin!r} failed to "
                f"load: {type(exc).__name__}: {exc}"
            ) from exc

    def convert(
        self, obj: Any, req: Request, fast_key: FastKey | None = None,
        remember: Hashable | None = None,
    ) -> Any:  # fmt: skip
        """Plan (or reuse) the route ``req`` asks for ``obj``, and run it.

        A kind with a warm path (arrays) stores the runner under ``fast_key``, the warm-path
        key (type, target, device, copy) as the user gave them (None when they are not
        hashable or options were given: the request is planned every time). Objects of other
        kinds are converted once and used many times: their route depends on the option names
        and the opt-ins, never on the values (``output_map=[...]`` need not be hashable), so
        it is cached by those, and only binding (microseconds) is repeated; the result is
        remembered under ``remember`` (to()'s arguments) where the kind reuses results.
        """
        if req.kind.warm:
            the_plan = self.plan(req)
            if fast_key is not None and req.source is not None:
                self._store(obj, req, req.source, the_plan, fast_key)
            return self.run(req, obj, the_plan)
        route, found, excluded = self.object_route(obj, req)
        the_plan = self.bind(req, route, found)
        result = self.run(req, obj, the_plan, excluded)
        if remember is not None:  # the kind reuses results (Kind.reuse)
            self.st.reused.put(obj, remember, result, the_plan.edges)
        return result

    def object_route(
        self, obj: Any, req: Request
    ) -> tuple[Route, Search, frozenset[tuple[str, str]]]:
        """The route for ``obj``, of a kind converted once, and the edges left out for it.

        Routes are cached by what planning depends on (see ``PlanCache.requests``). An edge
        that inspects objects (``ConverterSpec.inspects``) looks at this one; a refusal leaves
        the edge out for this object only, and the Route says why in its notes and refusals.
        """
        names = tuple(name for name, _ in req.options)
        excluded: frozenset[tuple[str, str]] = frozenset()
        refused: list[RefusedEdge] = []
        while True:
            key = (req.route_key, names, req.opted_in, req.opted_out, excluded)
            found = self.st.cache.requests.get(key)
            if found is None:
                try:
                    found = self.find_route(req, excluded)
                except InteropError as exc:
                    if not refused:
                        raise
                    raise ConversionError(
                        f"No route {req.what()}: "
                        + "; ".join(
                            f"{r.converter} [{r.edge}] refused it: {r.reason}" for r in refused
                        )
                        + f". Without it: {exc}"
                    ) from exc
                self.st.cache.requests[key] = found
            else:  # the key holds the options' names, not their values: checked each call
                _validate(req, found[1])
            refusal = _inspection(found[1], obj)
            if refusal is None:
                break
            refused.append(refusal)
            excluded |= {(refusal.plugin, refusal.converter)}
        route, search = found
        if refused:
            route = route._replace(
                refused=route.refused + tuple(refused),
                refusals=tuple(refused) + route.refusals,
                notes=route.notes + tuple(
                    f"not {r.converter} [{r.edge}] for this {req.kind.name}: {r.reason}"
                    for r in refused
                ),
            )  # fmt: skip
        return route, search, excluded

    def run(
        self, req: Request, obj: Any, the_plan: Plan,
        excluded: frozenset[tuple[str, str]] = frozenset(),
    ) -> Any:  # fmt: skip
        """Run ``the_plan`` on ``obj``; a failed step is handled once, never re-run."""
        try:
            return the_plan.run(obj)
        except Exception as exc:
            return self.recover(req, obj, the_plan, exc, excluded)

    def recover(
        self, req: Request, obj: Any, the_plan: Plan, exc: Exception,
        excluded: frozenset[tuple[str, str]] = frozenset(),
    ) -> Any:  # fmt: skip
        """Handle the failure ``exc`` of a step of ``the_plan`` (which must not run again).

        BufferError/NotImplementedError: the route is re-planned without that converter for
        this object only (warned once per route): one object's refusal never changes the route
        of another, so the cache keeps the plan. An InteropError raised on purpose by a
        converter passes through; anything else is a ConversionError.
        """
        edge, error = the_plan.failed_step(exc)
        if isinstance(error, InteropError):
            raise error
        if not edge.rerun or not isinstance(error, (BufferError, NotImplementedError)):
            raise ConversionError(_failure(edge, req, error)) from error
        if self.st.cache.first_failure(req.route_key, edge):
            warnings.warn(
                _failure(edge, req, error) + " It is left out of the route for this object "
                "(other objects still try it; this warning is given once).",
                PluginWarning,
                stacklevel=5,
            )
        excluded = excluded | {(edge.plugin, edge.name)}
        try:
            again = self.plan(req, excluded)
        except InteropError as no_route:
            raise ConversionError(
                _failure(edge, req, error) + f" Without it there is no route: {no_route}"
            ) from error
        return self.run(req, obj, again, excluded)

    def warm_failure(self, obj: Any, fast_key: FastKey, exc: Exception) -> Any:
        """The cached runner for ``obj`` (under ``fast_key``: type, target, device and copy as
        given) raised ``exc``: handle it without running the failed step again."""
        source = self.st.detect(obj)
        if source is None:  # cached, so detected before: cannot happen
            raise exc
        _, target, device, copy = fast_key
        req = request(
            obj, source, Asked(self.st.resolve(target), self.st.parse_device(device), copy, {})
        )
        the_plan = self.st.cache.cached_plan(obj, req.target.name, fast_key)
        if the_plan is None or isinstance(exc, StalePlan):
            # A global flag changed since planning (or the entry is gone): plan afresh.
            return self.convert(obj, req, fast_key)
        return self.recover(req, obj, the_plan, exc)

    def _store(
        self, obj: Any, req: Request, source: FrameworkSpec, the_plan: Plan, fast_key: FastKey
    ) -> None:
        """Cache the runner under the key the route's predicates read."""
        # Alignment costs too much to read on every call: key by it only when the route turns
        # on it. The search knows when it does, and when it might: then plan the other.
        by_alignment = the_plan.by_alignment == "yes"
        info = req.info
        if the_plan.by_alignment == "maybe" and source.aligned_key is not None and info:
            flipped = req.described(info._replace(aligned=not info.aligned), req.copy)
            try:
                by_alignment = self.plan_edges(flipped) != the_plan.edges
            except InteropError:
                by_alignment = True  # that alignment has no route at all
        self.st.cache.store(obj, source, req.target.name, fast_key, the_plan, by_alignment)

    def plan_edges(self, req: Request) -> tuple[ConverterSpec, ...]:
        """The edges of the route ``req`` would take (nothing is loaded)."""
        return tuple(e for _, e, _ in self.find_route(req)[1].path)
