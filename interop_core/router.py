"""Planning and running the route for one array: the slow path behind ``to()``.

The slow path describes the array, plans its route, binds the converters, stores the
runner in the plan cache (keyed only by what predicates read) and runs the steps one by
one, so that a step failing with BufferError/NotImplementedError can be excluded and the
route re-planned once (rule 6). The warm path in :mod:`interop_core.api` only looks the
runner up again.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Hashable
from typing import Any

from .errors import (
    ConversionError,
    CopyRequiredError,
    FrameworkNotInstalledError,
    InteropError,
    NoRouteError,
    RefusedEdge,
)
from .manager import PluginWarning
from .planner import Plan, Route, make_route
from .registry import Registry, Runner, _State
from .specs import ConverterSpec, Device, FrameworkSpec, TensorInfo

Excluded = frozenset[tuple[str, str]]


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


def _what(info: TensorInfo, target: str, device: Device) -> str:
    shape = "x".join(map(str, info.shape)) or "0-d"
    return (
        f"from {info.framework} {info.dtype} {shape} ({info.layout} layout) on {info.device} "
        f"to {target} on {device}"
    )


def find_route(
    st: _State,
    info: TensorInfo,
    target: FrameworkSpec,
    device: Device,
    copy: bool | None,
    excluded: Excluded = frozenset(),
) -> tuple[Route, tuple[ConverterSpec, ...], str]:
    """The cheapest route for ``info``, its edges, and whether the array's alignment changes
    it ("yes", "no", "maybe"); raises when there is none."""
    if info.dtype not in target.dtypes and info.framework != target.name:
        reason = RefusedEdge(("(dtype check)", target.plugin, f"*->{target.name}",
                              f"{target.name} has no dtype {info.dtype}"))  # fmt: skip
        raise NoRouteError(
            _what(info, target.name, device), [reason],
            f"Cast the array to a dtype {target.name} can hold.",
        )  # fmt: skip
    key = info.plan_key(copy)
    found = st.graph.search(key, target.name, device.kind, excluded)
    if not found.found:
        what = _what(info, target.name, device)
        if copy is False and st.graph.search(key._replace(copy=None), target.name,
                                             device.kind, excluded).found:  # fmt: skip
            raise CopyRequiredError(what, found.refused)
        advice = ""
        if device.kind != info.device.kind:
            advice = (
                f"No plugin moves {info.framework} arrays from {info.device.kind} to {device.kind}."
            )
        raise NoRouteError(what, found.refused, advice)
    edges = tuple(e for _, e in found.path)
    route = make_route(info, key, target.name, device.kind, found.path, found.refused)
    by_alignment = "yes" if found.path_aligned else "maybe" if found.refused_aligned else "no"
    return route, edges, by_alignment


def plan(
    st: _State,
    info: TensorInfo,
    target: FrameworkSpec,
    device: Device,
    copy: bool | None,
    excluded: Excluded = frozenset(),
) -> Plan:
    """The cheapest route for ``info``, bound to its functions; raises when there is none."""
    route, edges, by_alignment = find_route(st, info, target, device, copy, excluded)
    return Plan(route, bind(st, edges, device), edges, by_alignment)


def bind(st: _State, edges: tuple[ConverterSpec, ...], device: Device) -> tuple[Runner, ...]:
    """The conversion functions of ``edges`` (each loaded once per registry state)."""
    funcs = []
    for edge in edges:
        func = st.loaded.get(edge)
        if func is None:
            func = st.loaded[edge] = _load(edge)
        funcs.append(functools.partial(func, device=device) if edge.to_device else func)
    return tuple(funcs)


def _load(edge: ConverterSpec) -> Callable[..., Any]:
    try:
        return edge.load()
    except ImportError as exc:
        raise FrameworkNotInstalledError(
            edge.target, f"pip install interop-core[{edge.target}]"
        ) from exc
    except Exception as exc:
        raise ConversionError(
            f"Converter {edge.name!r} [{edge.edge}] of plugin {edge.plugin!r} failed to load: "
            f"{type(exc).__name__}: {exc}"
        ) from exc


def explain_array(
    reg: Registry, obj: Any, spec: FrameworkSpec, target: FrameworkSpec, device: Device | None,
    copy: bool | None,
) -> Route:  # fmt: skip
    """The Route ``to()`` would take, without converting."""
    info = describe(spec, obj)
    return find_route(reg.state, info, target, device or info.device, copy)[0]


def convert_array(
    reg: Registry,
    obj: Any,
    spec: FrameworkSpec,
    target: FrameworkSpec,
    device: Device | None,
    copy: bool | None,
    fast_key: tuple[Any, ...] | None,
) -> Any:
    """Plan (or look up) the route for ``obj``, cache its runner, and run it step by step.

    ``fast_key`` is the warm-path key (type, target, device, copy) as the user gave them,
    or None when they are not hashable (nothing is cached then).
    """
    st = reg.state
    info = describe(spec, obj)
    dev = device or info.device
    the_plan = plan(st, info, target, dev, copy)
    if fast_key is not None:
        _cache(st, obj, info, spec, target, dev, copy, the_plan, fast_key)
    return _execute(
        the_plan, obj, info, retry=lambda edge: _retry(st, obj, info, target, dev, copy, edge)
    )


def _retry(
    st: _State, obj: Any, info: TensorInfo, target: FrameworkSpec, device: Device,
    copy: bool | None, failed: ConverterSpec,
) -> Any:  # fmt: skip
    again = plan(st, info, target, device, copy, frozenset({(failed.plugin, failed.name)}))
    return _execute(again, obj, info, retry=None)


def _execute(
    the_plan: Plan, obj: Any, info: TensorInfo, retry: Callable[[ConverterSpec], Any] | None
) -> Any:
    x = obj
    for func, edge in zip(the_plan.funcs, the_plan.edges, strict=True):
        try:
            x = func(x)
        except InteropError:
            raise
        except (BufferError, NotImplementedError) as exc:
            if retry is None:
                raise ConversionError(
                    _failure(edge, info, exc) + " Re-planning found no other route."
                ) from exc
            warnings.warn(
                _failure(edge, info, exc) + " Re-planning without it.", PluginWarning, stacklevel=5
            )
            return retry(edge)
        except Exception as exc:
            raise ConversionError(_failure(edge, info, exc)) from exc
    return x


def _failure(edge: ConverterSpec, info: TensorInfo, exc: BaseException) -> str:
    return (
        f"Converter {edge.name!r} [{edge.edge}] of plugin {edge.plugin!r} failed on a "
        f"{info.dtype} {info.layout} array of shape {info.shape}: {type(exc).__name__}: {exc}."
    )


def _cache(
    st: _State, obj: Any, info: TensorInfo, spec: FrameworkSpec, target: FrameworkSpec,
    device: Device, copy: bool | None, the_plan: Plan, fast_key: tuple[Any, ...],
) -> None:  # fmt: skip
    """Store the runner under the key predicates read, and the warm-path entry for it."""
    # Alignment costs too much to read on every call: read it only for requests whose route
    # depends on it. The search knows when it does, and when it might: then plan the other.
    by_alignment = spec.aligned_key is not None and the_plan.by_alignment == "yes"
    if spec.aligned_key is not None and the_plan.by_alignment == "maybe":
        flipped = info._replace(aligned=not info.aligned)
        try:
            by_alignment = find_route(st, flipped, target, device, copy)[1] != the_plan.edges
        except InteropError:
            by_alignment = True  # that alignment has no route at all
    # Keyed by the device as asked (None: "stay"), so arrays on several devices share it.
    slot = (type(obj), target.name, fast_key[2], copy)
    entry = st.plans.get(slot)
    if entry is None or (by_alignment and not entry[2]):  # once by alignment, always
        keyfn = spec.aligned_key if by_alignment and spec.aligned_key else spec.key
        if target.state is not None:  # the target's global state (JAX's x64) joins the key
            keyfn = _with_state(keyfn, target.state)
        entry = st.plans[slot] = (keyfn, {}, by_alignment)
    keyfn, runners, _ = entry
    try:
        runners[keyfn(obj)] = the_plan.run
        st.fast[fast_key] = (keyfn, runners)
    except Exception:  # an unhashable or unreadable key: this object stays on the slow path
        pass


def _with_state(
    key: Callable[[Any], Hashable], state: Callable[[], Hashable]
) -> Callable[[Any], Hashable]:
    def keyfn(x: Any) -> Hashable:
        return (key(x), state())

    return keyfn
