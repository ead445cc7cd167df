"""Frozen records and named tuples made without compiling code per class.

Python 3.11's ``@dataclass(frozen=True)`` writes the source of six methods per class and
compiles each (``exec``): ~1 ms a class here, 20-40 ms of the first call of a process for
the specs alone. ``@record`` makes the same frozen dataclass (``dataclasses.fields()``,
``replace()``, pickling and ``__match_args__`` work as for any dataclass) with ``__init__``,
``__repr__``, ``__eq__``, ``__hash__`` and the frozen guard written once below, reading each
class's fields from a layout computed when the class is made. Type checkers see a frozen
dataclass (``typing.dataclass_transform``).

What differs from ``@dataclass(frozen=True)``: ``__init__`` takes the fields by keyword or
position without per-class code (a record of two fields takes up to ~1.5 µs more to make,
one of twenty ~1.5 µs less: it sets its dict at once), and methods a class defines itself
are kept (so is ``__post_init__``, called last). ``field(init=False)`` and ``kw_only``
fields are refused, and ``InitVar`` is not supported: no record uses them.

``NamedTuple`` is ``typing.NamedTuple`` for type checkers; at run time it makes the same
``collections.namedtuple`` class without ``typing``'s check of each annotation (under
``from __future__ import annotations`` each is a string that check compiles: ~0.25 ms a
class). The annotations stay the strings written.
"""

from __future__ import annotations

import collections
import dataclasses
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING or sys.version_info >= (3, 11):
    from typing import dataclass_transform
else:  # Python 3.10: type checkers read the 3.11 branch

    def dataclass_transform(**_: Any) -> Callable[[Any], Any]:
        return lambda decorator: decorator


T = TypeVar("T", bound=type)

if TYPE_CHECKING:
    from typing import NamedTuple as NamedTuple
else:

    class _NamedTupleMeta(type):
        """Makes ``class X(NamedTuple): ...`` a ``collections.namedtuple`` class, as
        ``typing.NamedTuple`` does, without checking each annotation."""

        def __new__(mcs, name: str, bases: tuple[type, ...], ns: dict[str, Any]) -> type:
            if bases != (_NamedTupleBase,):
                raise TypeError("a NamedTuple may inherit from NamedTuple only")
            fields = list(ns.get("__annotations__", {}))
            defaults = [ns[f] for f in fields if f in ns]
            if any(f not in ns for f in fields[len(fields) - len(defaults) :]):
                raise TypeError(f"{name}: a field without a default follows one with one")
            made = collections.namedtuple(name, fields, defaults=defaults, module=ns["__module__"])
            for key, value in ns.items():
                if key in _NAMEDTUPLE_OWN:
                    raise AttributeError(f"Cannot overwrite NamedTuple attribute {key}")
                if key not in ("__module__", "__annotations__") and key not in made._fields:
                    setattr(made, key, value)
            made.__annotations__ = ns.get("__annotations__", {})
            return made

    _NAMEDTUPLE_OWN = frozenset(
        ("_source", "_field_defaults", "__slots__", "_replace", "__getnewargs__",
         "__new__", "_fields", "_asdict", "_make", "__init__")
    )  # fmt: skip
    _NamedTupleBase = type.__new__(_NamedTupleMeta, "NamedTuple", (), {})

    def NamedTuple(*_: Any, **__: Any) -> Any:
        """Only as a base class: ``class X(NamedTuple): ...``."""
        raise TypeError("use NamedTuple as a base class")

    NamedTuple.__mro_entries__ = lambda bases: (_NamedTupleBase,)


class _Layout(NamedTuple):
    """What the shared methods read from a record class, computed once per class."""

    names: tuple[str, ...]  # every field, in order: positional arguments bind to these
    known: frozenset[str]
    required: frozenset[str]
    defaults: dict[str, Any]
    factories: tuple[tuple[str, Callable[[], Any]], ...]
    compared: tuple[str, ...]  # __eq__
    hashed: tuple[str, ...]  # __hash__
    shown: tuple[str, ...]  # __repr__
    post_init: bool


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field,))
def record(cls: T) -> T:
    """Make ``cls`` a frozen dataclass with shared methods (see the module's docstring)."""
    made: Any = dataclasses.dataclass(init=False, repr=False, eq=False)(cls)
    fields = dataclasses.fields(made)
    for f in fields:
        if not f.init or f.kw_only is True:
            raise TypeError(
                f"{made.__qualname__}.{f.name}: a record takes init=True, positional fields"
            )
    made.__record_layout__ = _Layout(
        names=tuple(f.name for f in fields),
        known=frozenset(f.name for f in fields),
        required=frozenset(
            f.name
            for f in fields
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        ),
        defaults={f.name: f.default for f in fields if f.default is not dataclasses.MISSING},
        factories=tuple(
            (f.name, f.default_factory)
            for f in fields
            if f.default_factory is not dataclasses.MISSING
        ),
        compared=tuple(f.name for f in fields if f.compare),
        hashed=tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash)),
        shown=tuple(f.name for f in fields if f.repr),
        post_init=hasattr(made, "__post_init__"),
    )
    own = made.__dict__
    for name, method in _METHODS.items():
        if name not in own:
            setattr(made, name, method)
    # As dataclass(frozen=True) does: a __hash__ of the class's own stays; the None that
    # Python sets for a class defining __eq__ alone does not.
    if own.get("__hash__", _NONE) is _NONE or (own["__hash__"] is None and "__eq__" in own):
        made.__hash__ = _hash
    return made  # type: ignore[no-any-return]


R = TypeVar("R")


def replace(obj: R, /, **changes: Any) -> R:
    """``dataclasses.replace(obj, **changes)`` for a record, without binding every field
    again (~15 µs a spec; the registry stamps each spec with its plugin): the values are
    copied, the changes set and ``__post_init__`` run."""
    layout: _Layout = obj.__record_layout__  # type: ignore[attr-defined]
    if not layout.known.issuperset(changes):
        return dataclasses.replace(obj, **changes)  # type: ignore[type-var]  # its error
    made: Any = object.__new__(type(obj))
    made.__dict__.update(obj.__dict__)
    made.__dict__.update(changes)
    if layout.post_init:
        made.__post_init__()
    return made  # type: ignore[no-any-return]


_NONE = object()  # a marker: no such entry


def _init(self: Any, *args: Any, **kwargs: Any) -> None:
    layout: _Layout = self.__record_layout__
    if args:
        if kwargs or len(args) > len(layout.names):
            kwargs = _bind(self, layout.names, args, kwargs)
        else:  # positional only (Device("cuda", 1)): nothing to check
            kwargs = dict(zip(layout.names, args, strict=False))
    given = kwargs.keys()
    if not (given <= layout.known and given >= layout.required):
        _refuse(self, layout, given)
    values = self.__dict__  # the frozen guard is __setattr__; the record's own dict is not
    values.update(layout.defaults)
    for name, factory in layout.factories:
        if name not in kwargs:
            values[name] = factory()
    values.update(kwargs)
    if layout.post_init:
        self.__post_init__()


def _bind(self: Any, names: tuple[str, ...], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The keyword arguments with the positional ones bound to the first fields."""
    if len(args) > len(names):
        raise TypeError(
            f"{type(self).__qualname__}.__init__() takes {len(names)} positional arguments "
            f"but {len(args)} were given"
        )
    for name in names[: len(args)]:
        if name in kwargs:
            raise TypeError(
                f"{type(self).__qualname__}.__init__() got multiple values for argument {name!r}"
            )
    kwargs.update(zip(names, args, strict=False))
    return kwargs


def _refuse(self: Any, layout: _Layout, given: Any) -> None:
    """Raise the TypeError Python raises for an unknown or a missing argument."""
    unknown = sorted(given - layout.known)
    if unknown:
        raise TypeError(
            f"{type(self).__qualname__}.__init__() got an unexpected keyword argument "
            f"{unknown[0]!r}"
        )
    missing = [n for n in layout.names if n in layout.required and n not in given]
    raise TypeError(
        f"{type(self).__qualname__}.__init__() missing {len(missing)} required positional "
        f"argument{'s' if len(missing) > 1 else ''}: {', '.join(map(repr, missing))}"
    )


def _repr(self: Any) -> str:
    shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__record_layout__.shown)
    return f"{type(self).__qualname__}({shown})"


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is not self.__class__:
        return NotImplemented
    names = self.__record_layout__.compared
    return tuple([getattr(self, n) for n in names]) == tuple([getattr(other, n) for n in names])


def _hash(self: Any) -> int:
    return hash(tuple([getattr(self, n) for n in self.__record_layout__.hashed]))


def _setattr(self: Any, name: str, value: Any) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")


def _delattr(self: Any, name: str) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")


_METHODS: dict[str, Callable[..., Any]] = {
    "__init__": _init,
    "__repr__": _repr,
    "__eq__": _eq,
    "__setattr__": _setattr,
    "__delattr__": _delattr,
}
