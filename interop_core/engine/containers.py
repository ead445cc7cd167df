"""Walking nested containers: :func:`map_leaves` rebuilds dicts, lists and tuples around
their converted leaves, and :class:`ContainerError` says when one cannot be rebuilt.

A container is an instance of ``dict``, ``list`` or ``tuple`` (or of a subclass); anything
else is a leaf. Plain ``dict``, ``list``, ``tuple``, ``OrderedDict``, ``defaultdict`` and
namedtuples are rebuilt directly. Any other subclass is rebuilt the way ``copy.copy`` and
pickle rebuild an object, so that its own ``__init__`` is never called with the wrong
arguments:

1. allocate: ``cls.__new__(cls, *__getnewargs__())`` (no arguments if it defines none);
   a tuple subclass gets its items at allocation instead, ``tuple.__new__(cls, values)``
   (``cls._make(values)`` for a namedtuple);
2. restore the instance's state: ``__getstate__()`` passed to ``__setstate__`` when it has
   one, else put back into its ``__dict__`` and slots;
3. fill the converted items through the built-in base class (``dict.update``,
   ``list.extend``, ``OrderedDict.__setitem__``), so that overridden methods of the subclass
   neither drop nor alter items; a ``defaultdict`` keeps its ``default_factory``;
4. check that the result has the same type and exactly the new items, keys in order.

When a step fails, a container contains itself, or containers nest deeper than
:data:`MAX_DEPTH`, :class:`ContainerError` is raised: an item is never lost and another
type is never returned silently.

An :class:`InteropError` raised for an item says where the item sits: each level it passes
on the way out notes its key (:func:`note_key`), and the caller that passed the outermost
container puts the path in front of the message and into ``item_path``
(:func:`name_path`): "At ['batch'][0]: ...".
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable
from typing import Any, NoReturn

from ..declare.errors import ContainerError, InteropError

__all__ = ["MAX_DEPTH", "ContainerError", "map_leaves", "name_path", "note_key"]

_CONTAINERS = (dict, list, tuple)
#: How deep containers may nest. The walk recurses (two Python frames a level) and the
#: conversion of a leaf at the bottom needs frames of its own: 200 levels stay well inside
#: Python's default limit of 1000 frames.
MAX_DEPTH = 200
_ADVICE = "convert it to a dict, list or tuple first, or convert its items yourself."


def map_leaves(obj: Any, fn: Callable[[Any], Any]) -> Any:
    """Apply ``fn`` to every leaf of nested containers, rebuilding each container.

    Dict keys are kept as they are; values, list items and tuple items are mapped. Raises
    :class:`~interop_core.ContainerError` for a container that contains itself, cannot be
    rebuilt, or nests deeper than ``MAX_DEPTH`` (200). An
    :class:`~interop_core.InteropError` from ``fn`` comes out with the item's keys noted
    (``name_path()`` names them in its message).
    """
    return _map(obj, fn, {})


def note_key(exc: InteropError, key: Any) -> None:
    """Note that ``exc`` was raised for the item at ``key`` of a container (called by each
    level on the way out, innermost first)."""
    exc.__dict__.setdefault("_keys", []).append(key)


def name_path(exc: InteropError) -> None:
    """Put the keys noted on ``exc`` in front of its message and into ``exc.item_path``:
    called by the caller of the outermost container. A path named already (an inner
    container converted on its own, a table's columns) is extended, not repeated."""
    keys = exc.__dict__.pop("_keys", None)
    if not keys:
        return
    exc.item_path = (*reversed(keys), *exc.item_path)
    message = exc.__dict__.get("_message")
    if message is None:
        if len(exc.args) != 1 or not isinstance(exc.args[0], str):
            return
        message = exc.__dict__["_message"] = exc.args[0]
    where = "".join(f"[{k!r}]" for k in exc.item_path)
    exc.args = (f"At {where}: {message}",)


def _map(obj: Any, fn: Callable[[Any], Any], active: dict[int, type]) -> Any:
    # ``active`` holds the containers on the path from the root (id -> type), in order.
    t = type(obj)
    if t is dict or t is list or t is tuple:
        key = id(obj)
        if key in active:
            _cycle(active, key)
        if len(active) >= MAX_DEPTH:
            _too_deep(obj)
        active[key] = t
        if t is dict:
            out: Any = {k: _item(k, v, fn, active) for k, v in obj.items()}
        elif t is list:
            out = [_item(i, v, fn, active) for i, v in enumerate(obj)]
        else:
            out = tuple([_item(i, v, fn, active) for i, v in enumerate(obj)])
        del active[key]
        return out
    if not issubclass(t, _CONTAINERS):  # the real type: a Mock(spec=dict) is a leaf
        return fn(obj)
    key = id(obj)
    if key in active:
        _cycle(active, key)
    if len(active) >= MAX_DEPTH:
        _too_deep(obj)
    active[key] = t
    if isinstance(obj, dict):
        ordered = isinstance(obj, OrderedDict)
        pairs = OrderedDict.items(obj) if isinstance(obj, OrderedDict) else dict.items(obj)
        items = [(k, _item(k, v, fn, active)) for k, v in pairs]
        if t is OrderedDict:
            out = OrderedDict(items)
        elif t is defaultdict and isinstance(obj, defaultdict):
            out = defaultdict(obj.default_factory, items)
        else:
            out = _rebuild_mapping(obj, items, ordered)
    elif isinstance(obj, list):
        numbered = enumerate(list.__iter__(obj))
        out = _rebuild_list(obj, [_item(i, v, fn, active) for i, v in numbered])
    else:
        numbered = enumerate(tuple.__iter__(obj))
        out = _rebuild_tuple(obj, [_item(i, v, fn, active) for i, v in numbered])
    del active[key]
    return out


def _item(key: Any, value: Any, fn: Callable[[Any], Any], active: dict[int, type]) -> Any:
    """``_map`` of the item at ``key``: an error raised for it notes the key."""
    try:
        return _map(value, fn, active)
    except InteropError as exc:
        note_key(exc, key)
        raise


def _cycle(active: dict[int, type], key: int) -> NoReturn:
    ids = list(active)
    path = [_name(active[i]) for i in ids[ids.index(key) :]]
    path.append(path[0])
    raise ContainerError(
        f"Cannot convert a container that contains itself ({' -> '.join(path)}): its items "
        "would be converted forever. Break the reference cycle first (e.g. replace the inner "
        "reference with a copy), or convert its items yourself."
    )


def _too_deep(obj: Any) -> NoReturn:
    """Raise for ``obj``, found MAX_DEPTH containers down: how deep the nesting goes."""
    depth = MAX_DEPTH + _depth(obj)
    raise ContainerError(
        f"Cannot convert containers nested {depth} deep: to() walks at most {MAX_DEPTH} "
        "levels of dicts, lists and tuples (deeper would exhaust Python's stack). Flatten the "
        "structure (for example a dict keyed by each array's path), or convert the arrays of "
        "the deep levels yourself."
    )


def _depth(obj: Any) -> int:
    """How many levels of containers ``obj`` has (itself included), found level by level
    without recursion; a container met again (shared or in a cycle) is counted once."""
    depth, level, seen = 0, [obj], set()
    while True:
        found = [c for c in level if issubclass(type(c), _CONTAINERS) and id(c) not in seen]
        if not found:
            return depth
        depth += 1
        level = []
        for c in found:
            seen.add(id(c))
            if isinstance(c, dict):
                level.extend(dict.values(c))
            else:
                level.extend(list.__iter__(c) if isinstance(c, list) else tuple.__iter__(c))


def _name(cls: type) -> str:
    if cls.__module__ == "builtins":
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


def _fail(obj: Any, why: str, cause: BaseException | None = None, hint: str = "") -> ContainerError:
    base = next(b.__name__ for b in type(obj).__mro__ if b in _CONTAINERS)
    detail = f" ({type(cause).__name__}: {cause})" if cause is not None else ""
    return ContainerError(
        f"Cannot rebuild a {_name(type(obj))} (a {base} subclass) with converted items: "
        f"{why}{detail}. {hint or 'You can '}{_ADVICE}"
    )


def _allocate(obj: Any) -> Any:
    """A new, empty instance of ``type(obj)`` made as copy/pickle would, without __init__."""
    cls = type(obj)
    args: Iterable[Any] = ()
    kwargs: dict[str, Any] = {}
    try:
        getnewargs_ex = getattr(cls, "__getnewargs_ex__", None)
        getnewargs = getattr(cls, "__getnewargs__", None)
        if getnewargs_ex is not None:
            args, kwargs = getnewargs_ex(obj)
        elif getnewargs is not None:
            args = getnewargs(obj)
        return cls.__new__(cls, *args, **kwargs)
    except Exception as exc:
        hint = "Give it a __getnewargs__() method that returns __new__'s arguments, or "
        raise _fail(obj, f"{cls.__qualname__}.__new__() failed", exc, hint) from exc


def _restore_state(obj: Any, new: Any) -> None:
    """Give ``new`` the instance state of ``obj`` (``__dict__``, slots, or ``__getstate__``)."""
    cls = type(obj)
    try:
        getstate = getattr(cls, "__getstate__", None)
        state = getstate(obj) if getstate is not None else _default_state(obj)
        if state is None:
            return
        setstate = getattr(cls, "__setstate__", None)
        if setstate is not None:
            setstate(new, state)
            return
        slots: Any = None
        if isinstance(state, tuple) and len(state) == 2:
            state, slots = state
        if state:
            new.__dict__.update(state)
        if slots:
            for name, value in slots.items():
                setattr(new, name, value)
    except ContainerError:
        raise
    except Exception as exc:
        raise _fail(obj, "its instance state could not be copied", exc) from exc


def _default_state(obj: Any) -> Any:
    """``object.__getstate__()`` for Pythons before 3.11: the ``__dict__`` and the slots."""
    slots: dict[str, Any] = {}
    for klass in type(obj).__mro__:
        names = klass.__dict__.get("__slots__", ())
        for name in (names,) if isinstance(names, str) else names:
            if name in ("__dict__", "__weakref__"):
                continue
            if name.startswith("__") and not name.endswith("__"):
                stripped = klass.__name__.lstrip("_")
                if stripped:
                    name = f"_{stripped}{name}"
            with contextlib.suppress(AttributeError):
                slots[name] = getattr(obj, name)
    attrs = getattr(obj, "__dict__", None) or None
    return (attrs, slots) if slots else attrs


def _rebuild_mapping(obj: Any, items: list[tuple[Any, Any]], ordered: bool) -> Any:
    new = _allocate(obj)
    _restore_state(obj, new)
    if isinstance(obj, defaultdict):
        try:
            new.default_factory = obj.default_factory
        except Exception as exc:
            raise _fail(obj, "its default_factory could not be set", exc) from exc
    if not isinstance(new, dict):
        raise _fail(obj, f"allocating it gave a {_name(type(new))}")
    if ordered:
        if not isinstance(new, OrderedDict):
            raise _fail(obj, f"allocating it gave a {_name(type(new))}")
        if OrderedDict.__len__(new):
            OrderedDict.clear(new)
        for k, v in items:
            OrderedDict.__setitem__(new, k, v)
        got = list(OrderedDict.items(new))
    else:
        if dict.__len__(new):
            dict.clear(new)
        dict.update(new, items)
        got = list(dict.items(new))
    _verify(obj, new, got, items, pairs=True)
    return new


def _rebuild_list(obj: Any, values: list[Any]) -> Any:
    new = _allocate(obj)
    _restore_state(obj, new)
    if not isinstance(new, list):
        raise _fail(obj, f"allocating it gave a {_name(type(new))}")
    if list.__len__(new):
        list.clear(new)
    list.extend(new, values)
    _verify(obj, new, list(list.__iter__(new)), values, pairs=False)
    return new


def _rebuild_tuple(obj: Any, values: list[Any]) -> Any:
    cls = type(obj)
    make = getattr(cls, "_make", None) if hasattr(cls, "_fields") else None
    try:
        new = make(values) if make is not None else tuple.__new__(cls, values)
    except Exception as exc:
        how = f"{cls.__qualname__}._make()" if make is not None else "tuple.__new__()"
        raise _fail(obj, f"{how} failed", exc) from exc
    _restore_state(obj, new)
    if not isinstance(new, tuple):
        raise _fail(obj, f"rebuilding it gave a {_name(type(new))}")
    _verify(obj, new, list(tuple.__iter__(new)), values, pairs=False)
    return new


def _verify(obj: Any, new: Any, got: list[Any], expected: list[Any], pairs: bool) -> None:
    """Same type, and exactly the expected items (the same objects, in the same order)."""
    if type(new) is not type(obj):
        raise _fail(obj, f"rebuilding it gave a {_name(type(new))}")
    if len(got) != len(expected):
        raise _fail(obj, f"the rebuilt one has {len(got)} items instead of {len(expected)}")
    if pairs:
        same = all(a[0] is b[0] and a[1] is b[1] for a, b in zip(got, expected, strict=True))
    else:
        same = all(a is b for a, b in zip(got, expected, strict=True))
    if not same:
        raise _fail(obj, "the rebuilt one does not hold the converted items in their order")
