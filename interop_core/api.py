"""The public functions: ``to()``, ``explain()``, ``register()``, ``unregister()``.

``to()`` has a warm path of two dict lookups and the route's steps; everything else
(argument checks, containers, planning) is on the slow path in :func:`_convert`.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable, Mapping
from typing import Any

from .errors import InteropError, NotAnArrayError
from .registry import Registry
from .router import convert_array, explain_array
from .specs import Device

_default: Registry | None = None
_default_lock = threading.Lock()


def default_registry() -> Registry:
    """The process-wide registry: built-in plugins plus entry points, built on first use."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = Registry()
    return _default


def set_default_registry(registry: Registry | None) -> Registry | None:
    """Replace the process-wide registry (None: rebuild on next use); returns the old one."""
    global _default
    old, _default = _default, registry
    return old


def to(
    obj: Any, target: Any, *, device: Any = None, copy: bool | None = None, **options: Any
) -> Any:
    """Convert ``obj`` (an array, or a container of them) to the ``target`` framework.

    ``target`` is a framework name or alias (any case) or a framework module.
    ``device`` None keeps the source device. ``copy`` follows the Array API's
    ``from_dlpack``: None shares memory when possible, False never copies (raises
    CopyRequiredError), True never shares memory with ``obj``.
    Containers (dict, list, tuple, namedtuple) keep their structure; leaves that are not
    arrays pass through unchanged.
    """
    reg = _default or default_registry()
    if not options:
        try:
            keyfn, plans = reg.state.fast[type(obj), target, device, copy]
            run = plans[keyfn(obj)]
        except Exception:  # not planned yet, unhashable arguments, or a key the spec can't read
            pass
        else:
            try:
                return run(obj)
            except Exception:
                pass  # the slow path re-runs step by step, re-plans or explains
    return _convert(reg, obj, target, device, copy, options)


def explain(
    obj: Any, target: Any, *, device: Any = None, copy: bool | None = None, **options: Any
) -> Any:
    """The :class:`Route` ``to(obj, target, ...)`` would take, without converting anything.

    For a container, the same structure with a Route at each array leaf.
    """
    reg = _default or default_registry()
    _check_options(copy, options)
    spec = reg.resolve(target)
    dev = parse_device(device)

    def one(leaf: Any) -> Any:
        src = reg.state.detect(leaf)
        return explain_array(reg, leaf, src, spec, dev, copy) if src is not None else None

    if reg.state.detect(obj) is not None:
        return one(obj)
    return _top(reg, obj, one)


def register(plugin: Any, name: str | None = None) -> str:
    """Register a plugin object or module at run time; plans are rebuilt."""
    return default_registry().register(plugin, name)


def unregister(plugin: Any = None, name: str | None = None) -> None:
    """Unregister a plugin by object or name; plans are rebuilt."""
    default_registry().unregister(plugin, name)


def parse_device(device: Any) -> Device | None:
    """A Device from None, "cpu"/"cuda:1", or a torch/JAX/TF device object."""
    if device is None or isinstance(device, Device):
        return device
    try:
        if isinstance(device, str):
            if "/device:" in device.lower():  # TensorFlow: /job:../device:GPU:0
                kind, _, index = device.lower().rpartition("/device:")[2].partition(":")
                return Device("cuda" if kind == "gpu" else kind, int(index or 0))
            return Device.parse(device)
        platform = getattr(device, "platform", None)  # a JAX device
        if isinstance(platform, str):
            return Device("cuda" if platform == "gpu" else platform, int(getattr(device, "id", 0)))
        torch_kind = getattr(device, "type", None)  # a torch.device
        if isinstance(torch_kind, str):
            return Device(torch_kind, int(getattr(device, "index", None) or 0))
    except ValueError as exc:
        raise DeviceError(str(exc)) from exc
    raise DeviceError(
        f"Cannot understand device={device!r}: pass None, 'cpu', 'cuda', 'cuda:N' or a "
        "torch/JAX/TensorFlow device object."
    )


class DeviceError(InteropError, ValueError):
    """The ``device`` argument cannot be understood."""


class OptionError(InteropError, TypeError):
    """An argument of ``to()``/``explain()`` has a wrong value or is unknown."""


def _check_options(copy: Any, options: Mapping[str, Any]) -> None:
    if not (copy is None or copy is True or copy is False):  # 1 == True must not pass
        raise OptionError(f"copy must be None, True or False, not {copy!r}.")
    if options:
        raise OptionError(
            f"Unknown option(s) for converting arrays: {', '.join(sorted(options))}. "
            "to() takes device= and copy=."
        )


def _convert(
    reg: Registry, obj: Any, target: Any, device: Any, copy: Any, options: Mapping[str, Any]
) -> Any:
    _check_options(copy, options)
    spec = reg.resolve(target)
    dev = parse_device(device)
    fast_key: tuple[Any, ...] | None = (type(obj), target, device, copy)
    try:
        hash(fast_key)
    except TypeError:
        fast_key = None

    src = reg.state.detect(obj)
    if src is not None:
        return convert_array(reg, obj, src, spec, dev, copy, fast_key)

    def leaf(x: Any) -> Any:  # each array leaf takes to()'s warm path when it can
        return to(x, target, device=device, copy=copy) if reg.state.detect(x) else x

    return _top(reg, obj, leaf)


def _top(reg: Registry, obj: Any, one: Callable[[Any], Any]) -> Any:
    """Apply ``one`` to each leaf of a container; reject anything else that is no array."""
    if isinstance(obj, (dict, list, tuple)):
        return map_leaves(obj, one)
    raise NotAnArrayError(
        f"Cannot convert a {type(obj).__module__}.{type(obj).__qualname__}: it is not an array "
        f"of any registered framework ({', '.join(reg.state.frameworks)}) nor a dict, list or "
        "tuple of them. Wrap Python scalars with the framework's array constructor "
        "(e.g. numpy.asarray) first; lists and tuples are containers, returned with their "
        "array leaves converted."
    )


def map_leaves(obj: Any, fn: Callable[[Any], Any]) -> Any:
    """Apply ``fn`` to every leaf of nested dicts, lists, tuples and namedtuples."""
    if isinstance(obj, dict):
        items = [(k, map_leaves(v, fn)) for k, v in obj.items()]
        if isinstance(obj, defaultdict):
            return defaultdict(obj.default_factory, items)
        try:
            return type(obj)(items)
        except TypeError:
            return dict(items)
    if isinstance(obj, tuple):
        values = [map_leaves(v, fn) for v in obj]
        if hasattr(obj, "_fields"):  # a namedtuple
            return type(obj)(*values)
        return type(obj)(values)
    if isinstance(obj, list):
        return type(obj)(map_leaves(v, fn) for v in obj)
    return fn(obj)
