"""Records (``interop_core.declare.records``) behave as the frozen dataclasses and
``typing.NamedTuple`` classes they stand for: each test builds the same class both ways."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import typing
from dataclasses import field
from typing import Any

import pytest

from interop_core.declare import records
from interop_core.declare.specs import ConverterSpec, Device


def _both() -> list[type]:
    """The same class as a frozen dataclass and as a record."""
    made = []
    for decorate in (dataclasses.dataclass(frozen=True), records.record):

        class Point:
            """A point."""

            x: int
            y: int = 2
            tags: tuple[str, ...] = field(default_factory=tuple)
            seen: list[int] = field(default_factory=list, compare=False, repr=False)
            label: str = field(default="", compare=False)

        made.append(decorate(Point))
    return made


def test_construction_equality_hash_and_repr_match_a_frozen_dataclass() -> None:
    dc, rec = _both()
    for args, kwargs in [((1,), {}), ((1, 3), {}), ((), {"x": 1, "tags": ("a",)}),
                         ((1,), {"label": "p", "seen": [1]})]:  # fmt: skip
        a, b = dc(*args, **kwargs), rec(*args, **kwargs)
        assert repr(a).replace("test_construction", "") == repr(b).replace("test_construction", "")
        assert dataclasses.astuple(a) == dataclasses.astuple(b)
        assert hash(a) == hash(rec(*args, **kwargs))
        assert b == rec(*args, **kwargs) and b != rec(99)
    # compare=False fields do not take part in equality or hash; repr=False ones are not shown
    assert rec(1, label="a") == rec(1, label="b") and hash(rec(1, label="a")) == hash(rec(1))
    assert "seen" not in repr(rec(1, seen=[5])) and "label='q'" in repr(rec(1, label="q"))
    assert rec(1).__eq__(dc(1)) is NotImplemented  # another class: not equal
    assert rec(1).seen is not rec(1).seen  # a factory runs per record


def test_bad_arguments_raise_as_a_dataclass_does() -> None:
    dc, rec = _both()
    for args, kwargs in [((), {}), ((1, 2, (), [], "", 9), {}), ((1,), {"x": 2}),
                         ((1,), {"z": 3})]:  # fmt: skip
        with pytest.raises(TypeError) as expected:
            dc(*args, **kwargs)
        with pytest.raises(TypeError) as got:
            rec(*args, **kwargs)
        for word in ("missing", "multiple", "unexpected", "positional"):
            assert (word in str(expected.value)) == (word in str(got.value)), (args, kwargs)


def test_a_record_is_frozen_and_a_dataclass_for_the_standard_library() -> None:
    _, rec = _both()
    p = rec(1, tags=("a",))
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 5  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del p.x  # type: ignore[misc]
    assert dataclasses.is_dataclass(p) and [f.name for f in dataclasses.fields(p)] == [
        "x", "y", "tags", "seen", "label"]  # fmt: skip
    q = dataclasses.replace(p, y=7)
    assert (q.x, q.y, q.tags) == (1, 7, ("a",)) and p.y == 2
    assert rec.__match_args__ == ("x", "y", "tags", "seen", "label")
    assert copy.deepcopy(p) == p and copy.copy(p) == p


def test_post_init_runs_last_with_every_field_set() -> None:
    seen: list[tuple[int, int]] = []

    @records.record
    class Checked:
        a: int
        b: int = 4

        def __post_init__(self) -> None:
            seen.append((self.a, self.b))
            if self.a < 0:
                raise ValueError("a must be >= 0")

    Checked(1)
    dataclasses.replace(Checked(2), b=5)
    assert seen == [(1, 4), (2, 4), (2, 5)]
    with pytest.raises(ValueError, match="a must be"):
        Checked(-1)


def test_replace_of_a_record_equals_the_standard_one() -> None:
    calls = []

    @records.record
    class Checked:
        a: int
        b: tuple[int, ...] = ()
        c: str = field(default="", compare=False)

        def __post_init__(self) -> None:
            calls.append(self.a)

    x = Checked(1, (2,))
    for changes in ({}, {"a": 5}, {"b": (), "c": "z"}):
        fast, standard = records.replace(x, **changes), dataclasses.replace(x, **changes)
        assert fast == standard and repr(fast) == repr(standard) and fast is not x
    assert calls == [1, 1, 1, 5, 5, 1, 1]  # __post_init__ runs for each copy
    with pytest.raises(TypeError, match="unexpected keyword argument 'd'"):
        records.replace(x, d=1)


def test_methods_a_class_defines_stay_and_its_hash_follows_dataclass_rules() -> None:
    made = []
    for decorate in (dataclasses.dataclass(frozen=True), records.record):

        class Own:
            a: int
            b: int = 0

            def __eq__(self, other: object) -> bool:  # equal whatever b is
                return type(other) is type(self) and self.a == other.a  # type: ignore[attr-defined]

            def __repr__(self) -> str:
                return f"Own<{self.a}>"

        made.append(decorate(Own))
    for cls in made:
        assert cls(1, 2) == cls(1, 3) and repr(cls(4)) == "Own<4>"
        assert hash(cls(1, 2)) == hash((1, 2))  # the fields' hash, as dataclass adds it


def test_fields_a_record_does_not_take_are_refused() -> None:
    class NotInit:
        a: int = field(default=0, init=False)

    with pytest.raises(TypeError, match="init=True, positional"):
        records.record(NotInit)


def _load() -> Any:
    return abs


def test_specs_pickle_and_keep_their_value_semantics() -> None:
    spec = ConverterSpec("numpy_to_torch", "numpy", "torch", load=_load, zero_copy=True)
    assert pickle.loads(pickle.dumps(spec)) == spec
    assert dataclasses.replace(spec, plugin="p") == spec  # plugin is not compared
    assert Device.parse("cuda:1") == Device("cuda", 1) and len({Device(), Device("cpu", 0)}) == 1
    assert repr(spec).startswith("ConverterSpec(name='numpy_to_torch', source='numpy'")


class _Typed(typing.NamedTuple):
    a: int
    b: tuple[str, ...] = ()

    def both(self) -> tuple[Any, ...]:
        return (self.a, self.b)


class _Cheap(records.NamedTuple):
    a: int
    b: tuple[str, ...] = ()

    def both(self) -> tuple[Any, ...]:
        return (self.a, self.b)


def test_named_tuples_match_typing_named_tuple() -> None:
    for cls in (_Typed, _Cheap):
        t = cls(1)
        assert t == (1, ()) and t.both() == (1, ()) and t._replace(b=("x",)).b == ("x",)
        assert cls._fields == ("a", "b") and cls._field_defaults == {"b": ()}
        assert pickle.loads(pickle.dumps(t)) == t and t._asdict() == {"a": 1, "b": ()}
        assert cls.__qualname__ == cls.__name__ and cls.__module__ == __name__
        assert list(cls.__annotations__) == ["a", "b"]
    assert repr(_Cheap(1)) == repr(_Typed(1)).replace("_Typed", "_Cheap")
    with pytest.raises(TypeError, match="follows"):

        class _Bad(records.NamedTuple):
            a: int = 0
            b: int

    with pytest.raises(AttributeError, match="_fields"):

        class _Worse(records.NamedTuple):
            a: int
            _fields = ("z",)
