"""Planning and running the route for one array: the slow path behind ``to()``.

A :class:`Request` records what is asked (the source array's description, the target,
the device with its index, copy, options). The router plans its route, binds the
converters, stores the runner in the plan cache and runs it. A step that fails is never
run again in the same call: BufferError/NotImplementedError exclude its converter for that
request until the registry changes (one warning) and the route is re-planned; any other
exception becomes a ConversionError naming the converter and its plugin.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

from .errors import (
    ConversionError,
    CopyRequiredError,
    FrameworkNotInstalledError,
    InteropError,
    NoRouteError,
    RefusedEdge,
)
from .manager import PluginWarning
from .plancache import FastKey, RouteKey, StalePlan
from .planner import Plan, Route, Search, make_route
from .registry import State
from .specs import ConverterSpec, Device, FrameworkSpec, PlanKey, TensorInfo


class Request(NamedTuple):
    """One conversion asked of the router."""

    #: The source array's description (the start node).
    info: TensorInfo
    source: FrameworkSpec
    target: FrameworkSpec
    #: The goal device with its index (the source's device when None was asked).
    device: Device
    copy: bool | None
    options: tuple[tuple[str, Any], ...] = ()

    @property
    def start(self) -> PlanKey:
        """The node the route starts from."""
        return self.info.plan_key(self.copy)

    @property
    def route_key(self) -> RouteKey:
        """What the route depends on: the start node, the target and the goal device."""
        return (self.start, self.target.name, str(self.device))

    def what(self) -> str:
        """The request in words, for messages."""
        info = self.info
        shape = "x".join(map(str, info.shape)) or "0-d"
        return (
            f"from {info.framework} {info.dtype} {shape} ({info.layout} layout) on "
            f"{info.device} to {self.target.name} on {self.device}"
        )


def describe(spec: FrameworkSpec, obj: Any) -> TensorInfo:
    """The spec's description of ``obj``, with a framework failure turned into an InteropError."""
    try:
        return spec.describe(obj)
    except InteropError:
        raise
    except Exception as exc:
        raise ConversionError(
            f"Plugin {spec.plugin!r} could not describe this {spec.name} object "
            f"({type(obj).__name__}): {type(exc).__name__}: {exc}"
        ) from exc


def request(
    obj: Any, source: FrameworkSpec, target: FrameworkSpec, device: Device | None,
    copy: bool | None,
) -> Request:  # fmt: skip
    """Describe ``obj`` and record what is asked of it."""
    info = describe(source, obj)
    return Request(info, source, target, device or info.device, copy)


def _relevant(refused: list[RefusedEdge], target: str) -> list[RefusedEdge]:
    """The refusals that decided the outcome: those of edges into the target, if any."""
    into = [r for r in refused if r.edge.endswith(f"->{target}")]
    return into or refused


def find_route(st: State, req: Request) -> tuple[Route, Search]:
    """The cheapest route for ``req`` and the search that found it; raises when there is none."""
    info, target = req.info, req.target
    if info.dtype not in target.dtypes and info.framework != target.name:
        reason = RefusedEdge("(dtype check)", target.plugin, f"*->{target.name}",
                             f"{target.name} has no dtype {info.dtype}")  # fmt: skip
        raise NoRouteError(
            req.what(), [reason], f"Cast the array to a dtype {target.name} can hold."
        )
    start, goal = req.start, str(req.device)
    excluded = st.cache.excluded.get(req.route_key, frozenset())
    found = st.graph.search(start, target.name, goal, excluded)
    if not found.found:
        relevant = _relevant(found.refused, target.name)
        if (
            req.copy is False
            and st.graph.search(start._replace(copy=None), target.name, goal, excluded).found
        ):
            raise CopyRequiredError(req.what(), found.refused, relevant)
        advice = ""
        if req.device != info.device:
            advice = (
                f"{goal} is reached only by a device move that accepts this array; "
                "`python -m interop_core doctor` lists the devices each framework sees."
            )
        raise NoRouteError(req.what(), found.refused, advice, relevant)
    route = make_route(info, start, target.name, goal, found.path, found.refused)
    return route, found


def plan(st: State, req: Request) -> Plan:
    """The cheapest route for ``req``, bound to its functions; raises when there is none."""
    route, found = find_route(st, req)
    edges = tuple(e for _, e, _ in found.path)
    load = _loader(st)
    funcs = tuple(
        functools.partial(st.cache.load(e, load), device=Device.parse(after.device))
        if e.to_device
        else st.cache.load(e, load)
        for _, e, after in found.path
    )
    by_alignment = "yes" if found.path_aligned else "maybe" if found.refused_aligned else "no"
    return Plan(route, funcs, edges, by_alignment, found.flags)


def _loader(st: State) -> Callable[[ConverterSpec], Any]:
    """Loads an edge's function; a missing module names the framework and its install hint."""

    def load(edge: ConverterSpec) -> Any:
        try:
            return edge.load()
        except ImportError as exc:
            top = (exc.name or "").partition(".")[0]
            owner = next((s for s in st.frameworks.values() if top and s.import_name == top), None)
            if owner is None:
                missing = exc.name or edge.target
                raise FrameworkNotInstalledError(missing, f"pip install {top or missing}") from exc
            hint = owner.install_hint or f"pip install {owner.distribution or owner.name}"
            raise FrameworkNotInstalledError(owner.name, hint) from exc
        except Exception as exc:
            raise ConversionError(
                f"Converter {edge.name!r} [{edge.edge}] of plugin {edge.plugin!r} failed to "
                f"load: {type(exc).__name__}: {exc}"
            ) from exc

    return load


def explain_object(
    st: State, obj: Any, source: FrameworkSpec, target: FrameworkSpec, device: Device | None,
    copy: bool | None,
) -> Route:  # fmt: skip
    """The Route ``to()`` would take for ``obj``, without converting."""
    return find_route(st, request(obj, source, target, device, copy))[0]


def convert(
    st: State, obj: Any, source: FrameworkSpec, target: FrameworkSpec, device: Device | None,
    copy: bool | None, fast_key: FastKey | None,
) -> Any:  # fmt: skip
    """Plan the route for ``obj``, cache its runner, and run it.

    ``fast_key`` is the warm-path key (type, target, device, copy) as the user gave them,
    or None when they are not hashable (nothing is cached then).
    """
    req = request(obj, source, target, device, copy)
    the_plan = plan(st, req)
    if fast_key is not None:
        _store(st, obj, req, the_plan, fast_key)
    return run(st, req, obj, the_plan, fast_key)


def run(st: State, req: Request, obj: Any, the_plan: Plan, fast_key: FastKey | None) -> Any:
    """Run ``the_plan`` on ``obj``; a failed step is handled once, never re-run."""
    try:
        return the_plan.run(obj)
    except Exception as exc:
        return recover(st, req, obj, the_plan, exc, fast_key)


def recover(
    st: State, req: Request, obj: Any, the_plan: Plan, exc: Exception, fast_key: FastKey | None
) -> Any:
    """Handle the failure ``exc`` of a step of ``the_plan`` (which must not run again).

    BufferError/NotImplementedError: the converter is excluded for this request until the
    registry changes (warned once) and the route re-planned; an InteropError raised on
    purpose by a converter passes through; anything else is a ConversionError.
    """
    edge, error = the_plan.failed_step(exc)
    if isinstance(error, InteropError):
        raise error
    if not isinstance(error, (BufferError, NotImplementedError)):
        raise ConversionError(_failure(edge, req.info, error)) from error
    if st.cache.exclude(req.route_key, edge):
        warnings.warn(
            _failure(edge, req.info, error) + " It is left out of this route from now on.",
            PluginWarning,
            stacklevel=5,
        )
    try:
        again = plan(st, req)
    except InteropError as no_route:
        raise ConversionError(
            _failure(edge, req.info, error) + f" Without it there is no route: {no_route}"
        ) from error
    if fast_key is not None:
        _store(st, obj, req, again, fast_key)
    return run(st, req, obj, again, fast_key)


def warm_failure(
    st: State, obj: Any, target: FrameworkSpec, device: Device | None, copy: bool | None,
    fast_key: FastKey, exc: Exception,
) -> Any:  # fmt: skip
    """A cached runner raised ``exc``: handle it without running the failed step again."""
    source = st.detect(obj)
    if source is None:  # cached, so detected before: cannot happen
        raise exc
    the_plan = st.cache.cached_plan(obj, target.name, fast_key)
    if the_plan is None or isinstance(exc, StalePlan):
        # A global flag changed since planning (or the entry is gone): plan afresh.
        return convert(st, obj, source, target, device, copy, fast_key)
    return recover(st, request(obj, source, target, device, copy), obj, the_plan, exc, fast_key)


def _failure(edge: ConverterSpec, info: TensorInfo, exc: BaseException) -> str:
    return (
        f"Converter {edge.name!r} [{edge.edge}] of plugin {edge.plugin!r} failed on a "
        f"{info.dtype} {info.layout} array of shape {info.shape}: {type(exc).__name__}: {exc}."
    )


def _store(st: State, obj: Any, req: Request, the_plan: Plan, fast_key: FastKey) -> None:
    """Cache the runner under the key the route's predicates read."""
    # Alignment costs too much to read on every call: key by it only when the route turns
    # on it. The search knows when it does, and when it might: then plan the other.
    by_alignment = the_plan.by_alignment == "yes"
    if the_plan.by_alignment == "maybe" and req.source.aligned_key is not None:
        flipped = req._replace(info=req.info._replace(aligned=not req.info.aligned))
        try:
            by_alignment = plan_edges(st, flipped) != the_plan.edges
        except InteropError:
            by_alignment = True  # that alignment has no route at all
    st.cache.store(obj, req.source, req.target.name, fast_key, the_plan, by_alignment)


def plan_edges(st: State, req: Request) -> tuple[ConverterSpec, ...]:
    """The edges of the route ``req`` would take (nothing is loaded)."""
    return tuple(e for _, e, _ in find_route(st, req)[1].path)
