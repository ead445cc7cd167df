"""The public functions: ``to()``, ``explain()``, ``register()``, ``unregister()``.

``to()`` has a warm path of two dict lookups and the route's steps; everything else
(argument checks, containers, planning) is on the slow path in :func:`_convert`. A call
reads the registry's state once and keeps that snapshot to the end.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from ..declare.errors import DeviceError, NotAnArrayError, OptionError
from ..declare.specs import ANY, Device, FrameworkSpec, KindSpec
from ..engine.casting import convert_cast, parse_dtype
from ..engine.containers import map_leaves
from ..engine.detect import first_claiming
from ..engine.planner import RouteTree
from ..engine.registry import Registry, State
from ..engine.router import (
    ANY_SOURCE,
    Request,
    convert,
    convert_object,
    describe,
    explain_object,
    find_route,
    object_request,
    snapshot,
    warm_failure,
)

_default: Registry | None = None
_default_lock = threading.Lock()
#: The registry using_registry() made current in this thread or asyncio task (None: the
#: process-wide one). A ContextVar: other threads never see it.
_current: ContextVar[Registry | None] = ContextVar("interop_core_registry", default=None)


def default_registry() -> Registry:
    """The registry ``to()``/``explain()`` use here: the one :func:`using_registry` made
    current in this thread or context, else the process-wide one (built-in plugins plus
    entry points, built on first use)."""
    global _default
    reg = _current.get() or _default  # read once: another thread may replace the global
    if reg is None:
        with _default_lock:
            reg = _default
            if reg is None:
                reg = _default = Registry()
    return reg


def set_default_registry(registry: Registry | None) -> Registry | None:
    """Replace the process-wide registry (None: rebuild on next use); returns the old one.

    A registry made current by :func:`using_registry` still wins inside its block."""
    global _default
    with _default_lock:
        old, _default = _default, registry
    return old


@contextmanager
def using_registry(registry: Registry) -> Iterator[Registry]:
    """Make ``registry`` what ``to()``/``explain()`` use for a ``with`` block, in this
    thread (or asyncio task) only: other threads keep theirs. A thread started inside the
    block starts without it; run it in ``contextvars.copy_context()`` (or enter the block
    in it) to give it the same registry."""
    token = _current.set(registry)
    try:
        yield registry
    finally:
        _current.reset(token)


def to(
    obj: Any, target: Any, *, device: Any = None, copy: bool | None = None, **options: Any
) -> Any:
    """Convert ``obj`` (an array, a container of them, or a function) to ``target``.

    ``target`` is a framework name or alias (any case) or a framework module.
    ``device`` None keeps the source device. ``copy`` follows the Array API's
    ``from_dlpack``: None shares memory when possible, False never copies (raises
    CopyRequiredError), True never shares memory with ``obj``.
    ``dtype`` is the only way to() casts: a dtype (a name such as "int32", or a dtype of
    any installed framework: np.int32, torch.int32, jnp.int32, tf.int32) for every array,
    or a mapping from source to target dtype (``dtype={"int64": "int32"}``) for the arrays
    it names; others keep theirs. The cast is a step of its own (explain() shows it, it
    counts as a copy, so ``copy=False`` refuses it), made in the source framework when it
    holds the wanted dtype (int64 labels become int32 before JAX sees them), else in the
    target. It applies to each array leaf of a container and of each batch an iterator yields.
    Containers (dict, list, tuple, namedtuple, ...) keep their structure; leaves that are
    not arrays pass through unchanged, but a call that finds no array at all raises.
    A function becomes a function of ``target`` (arrays in and out, gradients carried);
    ``source=`` names the framework a plain Python function is written for, and other
    options reach the converters that declare them (``explain()`` lists them).
    """
    reg = _current.get() or _default or default_registry()
    return _to(reg, reg.state, obj, target, device, copy, options)


def _to(
    reg: Registry, st: State, obj: Any, target: Any, device: Any, copy: Any,
    options: dict[str, Any],
) -> Any:  # fmt: skip
    """``to()`` on the registry snapshot ``st``: the warm path, else :func:`_convert`."""
    # copy=1 or 0 hash like True/False: only the three real values may take the warm path.
    if options or not (copy is None or copy is True or copy is False):
        return _convert(reg, st, obj, target, device, copy, options)
    try:
        if device is None and copy is None:  # the common request: two one-object lookups
            keyfn, runners = st.plain[target][type(obj)]
        else:
            keyfn, runners = st.fast[type(obj), target, device, copy]
        run = runners[keyfn(obj)]
    except Exception:  # not planned yet, unhashable arguments, or a key the spec can't read
        run = None
    if run is None:  # outside the except: the lookup's KeyError is no context of its errors
        return _convert(reg, st, obj, target, device, copy, options)
    try:
        return run(obj)
    except Exception as exc:  # the failed step is handled, never run again
        return warm_failure(
            st, obj, reg.resolve(target, st), parse_device(st, device), copy,
            (type(obj), target, device, copy), exc,
        )  # fmt: skip


def bound_to(reg: Registry, st: State) -> Callable[..., Any]:
    """A ``to()`` that always uses the snapshot ``st`` of ``reg`` (for converters that
    convert on every call, such as function bridges)."""

    def to_in_snapshot(
        obj: Any, target: Any, *, device: Any = None, copy: bool | None = None, **options: Any
    ) -> Any:
        return _to(reg, st, obj, target, device, copy, options)

    return to_in_snapshot


def explain(
    obj: Any, target: Any, *, device: Any = None, copy: bool | None = None, **options: Any
) -> Any:
    """The :class:`Route` ``to(obj, target, ...)`` would take, without converting anything.

    For a container, a :class:`RouteTree`: the same structure with a Route at each array
    leaf, printed one line per leaf.
    """
    reg = _current.get() or _default or default_registry()
    st = reg.state
    spec, dev, source, options = _prepare(reg, st, target, device, copy, options)
    src = st.detect(obj)
    if src is not None:
        _check_source(reg, st, source, src.name, obj)
        return explain_object(st, snapshot(src, obj), src, spec, dev, copy, options)
    kind = _kind_of(st, obj)
    if kind is not None:
        req = _object_request(reg, st, obj, kind, source, spec, dev, copy, options)
        return find_route(st, req)[0]

    def one(leaf: Any, src: FrameworkSpec) -> Any:
        _check_source(reg, st, source, src.name, leaf)
        return explain_object(st, leaf, src, spec, dev, copy, options)

    return RouteTree(_containers(st, obj, spec, one, plain=False))


# TensorFlow's AutoGraph rewrites every function a @tf.function calls, recursively, and fails
# on ours (it logs "could not transform"; errors came out as its StagingError). It calls a
# function as it is when the function carries the attribute that its own
# tf.autograph.experimental.do_not_convert sets (tensorflow/python/autograph/impl/api.py:
# converted_call -> is_autograph_artifact, hasattr(f, "autograph_info__")); set here, it
# needs no TF import. to() then runs as plain Python, and nothing it calls is rewritten;
# its errors reach the caller as they are (InteropError.ag_pass_through).
to.autograph_info__ = None  # type: ignore[attr-defined]
explain.autograph_info__ = None  # type: ignore[attr-defined]


def register(plugin: Any, name: str | None = None) -> str:
    """Register a plugin object or module at run time; plans are rebuilt."""
    return default_registry().register(plugin, name)


def unregister(plugin: Any = None, name: str | None = None) -> None:
    """Unregister a plugin by object or name; plans are rebuilt."""
    default_registry().unregister(plugin, name)


def parse_device(st: State, device: Any) -> Device | None:
    """A Device from None, "cpu"/"cuda:1", or a device object or string of a framework."""
    if device is None or isinstance(device, Device):
        return device
    why = ""  # why a string is not a device, when it is not
    if isinstance(device, str):
        try:
            parsed = Device.parse(device)
        except ValueError:
            why = f"{device!r} is not a device."
        else:
            if parsed.kind in ("cpu", "cuda"):
                return parsed
            # "banana:0" is spelled like a device: a kind no plugin knows is still none.
            kinds = {k for s in st.frameworks.values() for k in s.device_kinds}
            kinds.update(k for e in st.declared for k in (*e.devices, e.to_device or "cpu"))
            if parsed.kind in kinds:
                return parsed
            why = (
                f"{device!r} is not a device: no installed plugin knows the device kind "
                f"{parsed.kind!r} (they know {', '.join(sorted(kinds | {'cpu', 'cuda'}))})."
            )
    for spec in st.frameworks.values():  # the framework's own spelling ("/device:GPU:0")
        if spec.parse_device is not None:
            try:
                found = spec.parse_device(device)
            except Exception:
                continue
            if found is not None:
                return found
    raise DeviceError(
        f"{why or f'Cannot understand device={device!r}.'}\nPass None (the source's device), "
        f"one of {Device.SPELLINGS}, or a framework's device object or string (torch.device, "
        "a JAX device, '/device:GPU:0')."
    )


def _prepare(
    reg: Registry, st: State, target: Any, device: Any, copy: Any, options: Mapping[str, Any]
) -> tuple[FrameworkSpec, Device | None, Any, dict[str, Any]]:
    """Check what every request needs: the target's spec, the device, copy; ``source=``
    is taken out of the options, and ``dtype=`` is read into a :class:`~.casting.Cast`
    (arrays are cast before routing; iterators hand it to each batch's ``to()``)."""
    if not (copy is None or copy is True or copy is False):  # 1 == True must not pass
        raise OptionError(
            f"copy must be None, True or False, not {copy!r} ({type(copy).__name__}): "
            "copy=1 or copy=0 would read as a different request."
        )
    options = dict(options)
    source = options.pop("source", None)
    if options.get("dtype") is not None:
        options["dtype"] = parse_dtype(options["dtype"])
    else:
        options.pop("dtype", None)  # dtype=None: nothing is cast, as without it
    return reg.resolve(target, st), parse_device(st, device), source, options


def _source_name(reg: Registry, st: State, source: Any) -> str:
    """The framework ``source=`` names (any alias or case, or its module)."""
    if isinstance(source, str) and source.lower() in st.names:
        return st.names[source.lower()]
    return reg.resolve(source, st).name


def _check_source(reg: Registry, st: State, source: Any, found: str, obj: Any) -> None:
    """``source=`` may only confirm what detection found."""
    if source is not None and _source_name(reg, st, source) != found:
        raise OptionError(
            f"source={source!r} does not match the object: it is a {found} "
            f"{type(obj).__name__}. source= names the framework of objects that do not say "
            "it themselves (plain Python functions); leave it out here."
        )


def _kind_of(st: State, obj: Any) -> KindSpec | None:
    """The kind spec of a non-array object. A dict is never one; a list or tuple is one
    only when the structural check of a kind a framework owns takes it whole (a list of
    DALI pipelines, one per GPU, as DALI's iterators take them); else it is a container."""
    if isinstance(obj, dict):
        return None
    if isinstance(obj, (list, tuple)):
        owned = (k for k in st.detect.kind_claims if k.framework not in ("", ANY))
        return first_claiming(owned, obj) if obj else None
    return st.detect.kind(obj)


def _object_request(
    reg: Registry, st: State, obj: Any, kind: KindSpec, source: Any, target: FrameworkSpec,
    device: Device | None, copy: Any, options: Mapping[str, Any],
) -> Request:  # fmt: skip
    """The request for a function (or another non-array kind), its framework settled."""
    what = getattr(obj, "__qualname__", None) or type(obj).__qualname__
    if copy is not None and not kind.takes_copy:
        raise OptionError(
            f"copy={copy!r} applies to arrays; {what} is a {kind.kind}, which is wrapped, "
            "not copied (the arrays it takes and returns cross zero-copy where possible). "
            "Leave copy= out."
        )
    if "dtype" in options and not any(
        "dtype" in e.options for e in st.declared if e.kind == kind.kind
    ):
        raise OptionError(
            f"dtype= casts arrays (and the arrays iterators yield); {what} is a {kind.kind}, "
            "which is wrapped, not cast. Leave dtype= out, and cast the arrays it takes or "
            "returns yourself."
        )
    if kind.framework == ANY:
        if source is not None:
            described = kind.description or f"a {kind.kind}"
            raise OptionError(
                f"source={source!r} does not apply to {what}: it is {described}, whose "
                "items each say their framework when they are converted. Leave source= out."
            )
        framework = ANY_SOURCE
    elif kind.framework:
        _check_source(reg, st, source, kind.framework, obj)
        framework = st.frameworks[kind.framework]
    elif source is None:
        frameworks = sorted({e.source for e in st.declared if e.kind == kind.kind})
        if not frameworks:
            raise NotAnArrayError(
                f"Cannot convert {what!r}: it is a {kind.kind}, and no installed plugin "
                f"converts {kind.kind}s."
            )
        raise OptionError(
            f"Cannot tell which framework the {kind.kind} {what!r} is written for: a plain "
            f"Python callable does not say. Pass source= naming it (one of: "
            f"{', '.join(frameworks)}), e.g. to(f, {target.name!r}, source={frameworks[0]!r})."
        )
    else:
        framework = st.frameworks[_source_name(reg, st, source)]
    return object_request(kind, framework, target, device, copy, options)


def _convert(
    reg: Registry, st: State, obj: Any, target: Any, device: Any, copy: Any,
    options: Mapping[str, Any],
) -> Any:  # fmt: skip
    spec, dev, source, rest = _prepare(reg, st, target, device, copy, options)
    src = st.detect(obj)
    if src is not None:
        _check_source(reg, st, source, src.name, obj)
        if src.snapshot is not None:
            # A producer is asked once: its snapshot is what is described and converted,
            # and the warm path keys by the snapshot's type.
            snap = snapshot(src, obj)
            if snap is not obj:
                return _to(reg, st, snap, target, device, copy, dict(options))
        cast = rest.pop("dtype", None)
        if cast is not None:  # the cast is a step of its own; the route is to()'s as usual
            return convert_cast(
                describe(src, obj), obj, src, spec, copy, cast,
                lambda x, c: _to(reg, st, x, target, device, c, rest),
            )  # fmt: skip
        fast_key: tuple[Any, ...] | None = (type(obj), target, device, copy)
        try:
            hash(fast_key)
        except TypeError:
            fast_key = None
        # The warm path keys no options: a request with options is planned every time.
        return convert(st, obj, src, spec, dev, copy, None if rest else fast_key, rest)
    kind = _kind_of(st, obj)
    if kind is not None:
        return convert_object(
            st, obj, _object_request(reg, st, obj, kind, source, spec, dev, copy, rest)
        )

    def leaf(x: Any, _: FrameworkSpec) -> Any:  # each array leaf takes to()'s warm path
        return _to(reg, st, x, target, device, copy, dict(options))

    return _containers(st, obj, spec, leaf)


def _containers(
    st: State,
    obj: Any,
    target: FrameworkSpec,
    one: Callable[[Any, FrameworkSpec], Any],
    plain: bool = True,
) -> Any:
    """Apply ``one`` to each array leaf of a container; raise when there is no array at all.

    Other leaves stay as they are (``plain``) or become None (explain's Routes).
    """
    arrays = 0

    def counted(leaf: Any) -> Any:
        nonlocal arrays
        src = st.detect(leaf)
        if src is None:
            return leaf if plain else None
        arrays += 1
        return one(leaf, src)

    if isinstance(obj, (dict, list, tuple)):
        out = map_leaves(obj, counted)
        if arrays:
            return out
    raise NotAnArrayError(_not_an_array(st, obj, target))


def _not_an_array(st: State, obj: Any, target: FrameworkSpec) -> str:
    """Why ``obj`` converts nothing, and what to do instead."""
    kind = f"{type(obj).__module__}.{type(obj).__qualname__}"
    frameworks = ", ".join(n for n, s in st.frameworks.items() if s.array_types)
    protocols = ", ".join(s.protocol for s in st.detect.protocols if s.protocol)
    make = (
        f"{target.constructor}(...)" if target.constructor else f"{target.name}'s array constructor"
    )
    if isinstance(obj, (dict, list, tuple)):
        found = f"a {kind} with no array anywhere in it"
        todo = (
            f"To build a {target.name} array from Python values, use {make}; "
            "to() converts arrays (and containers holding at least one)."
        )
    else:
        found = f"a {kind}: it is not an array of any registered framework ({frameworks})"
        if protocols:
            found += f" and speaks none of the array protocols looked for ({protocols})"
        kinds = sorted({k.kind for k in st.kinds})
        if kinds:
            found += f"; nor is it a {' or '.join(kinds)} of one"
        todo = f"To build a {target.name} array from Python values, use {make}."
    return f"Cannot convert {found}. {todo}"
