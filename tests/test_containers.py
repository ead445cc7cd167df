"""map_leaves: every container is rebuilt with the same type, order, keys and attributes.

These tests use plain Python leaves (ints are "converted" by multiplying by 10), so they
need no array framework and run in every environment.
"""

from __future__ import annotations

import sys
from collections import Counter, OrderedDict, defaultdict, namedtuple
from typing import Any, NamedTuple
from unittest import mock

import pytest
from conftest import need

from interop_core.declare.errors import ContainerError, InteropError
from interop_core.engine.containers import MAX_DEPTH, _default_state, map_leaves


def times10(x: Any) -> Any:
    """The leaf function: ints (not bools) times 10, everything else returned unchanged."""
    return x * 10 if isinstance(x, int) and not isinstance(x, bool) else x


class Recorder:
    """A leaf function that records what it was called with (by identity)."""

    def __init__(self) -> None:
        self.calls: list[Any] = []

    def __call__(self, x: Any) -> Any:
        self.calls.append(x)
        return times10(x)


Point = namedtuple("Point", "x y")


class Pair(NamedTuple):
    first: Any
    second: Any


class Named(dict):  # type: ignore[type-arg]
    """A dict subclass whose __init__ takes something other than items."""

    inits = 0

    def __init__(self, name: str) -> None:
        super().__init__()
        type(self).inits += 1
        self.name = name


class Tagged(dict):  # type: ignore[type-arg]
    """A dict subclass with the default __init__ and attributes set afterwards."""


class Stack(list):  # type: ignore[type-arg]
    """A list subclass whose __init__ takes a label and a size."""

    inits = 0

    def __init__(self, label: str, size: int) -> None:
        super().__init__(range(size))
        type(self).inits += 1
        self.label = label


class Slotted(list):  # type: ignore[type-arg]
    """A list subclass with slots, one of them name-mangled, and no __dict__."""

    __slots__ = ("__secret", "kind")

    def __init__(self, kind: str, secret: Any) -> None:
        super().__init__([1, 2])
        self.kind = kind
        self.__secret = secret

    @property
    def secret(self) -> Any:
        return self.__secret


class Coords(tuple):  # type: ignore[type-arg]
    """A tuple subclass whose __new__ and __init__ take separate arguments, not an iterable."""

    news = 0
    inits = 0

    def __new__(cls, a: Any, b: Any, unit: str) -> Coords:
        cls.news += 1
        return super().__new__(cls, (a, b))

    def __init__(self, a: Any, b: Any, unit: str) -> None:
        type(self).inits += 1
        self.unit = unit


class NamedOD(OrderedDict):  # type: ignore[type-arg]
    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name


class NamedDD(defaultdict):  # type: ignore[type-arg]
    def __init__(self, name: str) -> None:
        super().__init__(list)
        self.name = name


class Frozen(dict):  # type: ignore[type-arg]
    """A read-only dict: every mutating method and items() are overridden."""

    def __init__(self, *args: Any) -> None:
        dict.update(self, *args)

    def __setitem__(self, key: Any, value: Any) -> None:
        raise TypeError("read-only")

    def update(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("read-only")

    def items(self) -> Any:
        return []  # hides its items from anyone who asks politely


class Hidden(list):  # type: ignore[type-arg]
    """A list whose __iter__ and extend are overridden to misbehave."""

    def __iter__(self) -> Any:
        return iter(())

    def extend(self, values: Any) -> None:
        raise TypeError("no extending")


class NeedsArg(dict):  # type: ignore[type-arg]
    """__new__ needs an argument and nothing tells how to get it again."""

    def __new__(cls, name: str) -> NeedsArg:
        return super().__new__(cls)

    def __init__(self, name: str) -> None:
        super().__init__()


class GivesArg(NeedsArg):
    """Like NeedsArg, but __getnewargs__ says what __new__ needs (the pickle protocol)."""

    def __getnewargs__(self) -> tuple[str]:
        return ("again",)


class Stateful(list):  # type: ignore[type-arg]
    """Custom __getstate__/__setstate__, which the rebuild must go through."""

    def __init__(self) -> None:
        super().__init__([1])
        self.cache = "big"

    def __getstate__(self) -> Any:
        return {"cache": None}  # the cache is not part of the state

    def __setstate__(self, state: Any) -> None:
        self.__dict__.update(state)
        self.__dict__["restored"] = True


class BadState(list):  # type: ignore[type-arg]
    """__setstate__ fails (it is called only when there is a state: here an attribute)."""

    def __setstate__(self, state: Any) -> None:
        raise RuntimeError("cannot restore")


class LiesMake(tuple):  # type: ignore[type-arg]
    """Looks like a namedtuple, but _make returns a plain tuple."""

    _fields = ("a",)

    @classmethod
    def _make(cls, values: Any) -> Any:
        return tuple(values)


class DropsMake(tuple):  # type: ignore[type-arg]
    """Looks like a namedtuple, but _make drops the last item."""

    _fields = ("a", "b")

    @classmethod
    def _make(cls, values: Any) -> Any:
        return tuple.__new__(cls, list(values)[:-1])


# --- plain containers -------------------------------------------------------------------


def test_plain_dict_list_tuple() -> None:
    s = "text"
    d = {"b": 1, "a": 2, 3: s}
    out = map_leaves(d, times10)
    assert type(out) is dict
    assert out == {"b": 10, "a": 20, 3: "text"}
    assert list(out) == ["b", "a", 3]
    assert out[3] is s
    assert out is not d
    assert d == {"b": 1, "a": 2, 3: "text"}  # the input is left alone

    lst = [1, s, 2]
    out_l = map_leaves(lst, times10)
    assert type(out_l) is list
    assert out_l == [10, "text", 20]
    assert out_l[1] is s
    assert out_l is not lst

    tup = (1, s, 2)
    out_t = map_leaves(tup, times10)
    assert type(out_t) is tuple
    assert out_t == (10, "text", 20)
    assert out_t[1] is s


def test_empty_containers() -> None:
    for empty in ({}, [], ()):
        out = map_leaves(empty, times10)
        assert type(out) is type(empty)
        assert len(out) == 0


def test_nested() -> None:
    leaf = object()
    data = {"a": [1, (2, {"b": 3, "c": [leaf]})], "d": (), "e": [[4]]}
    out = map_leaves(data, times10)
    assert out == {"a": [10, (20, {"b": 30, "c": [leaf]})], "d": (), "e": [[40]]}
    assert type(out["a"]) is list
    assert type(out["a"][1]) is tuple
    assert type(out["a"][1][1]) is dict
    assert out["a"][1][1]["c"][0] is leaf
    assert out["a"] is not data["a"]
    assert out["e"][0] is not data["e"][0]


def test_keys_are_not_passed_to_fn() -> None:
    rec = Recorder()
    key = ("tuple", "key")
    out = map_leaves({1: 2, key: 3}, rec)
    assert out == {1: 20, key: 30}  # int key 1 is not multiplied
    assert rec.calls == [2, 3]
    assert next(k for k in out if isinstance(k, tuple)) is key


def test_non_containers_are_leaves() -> None:
    rec = Recorder()
    s, b, st, fs, none = "ab", b"xy", {1, 2}, frozenset({3}), None
    out = map_leaves([s, b, st, fs, none, 5], rec)
    assert out == ["ab", b"xy", {1, 2}, frozenset({3}), None, 50]
    for got, original in zip(out[:5], (s, b, st, fs, none), strict=True):
        assert got is original  # returned by fn unchanged: not rebuilt
    assert [type(c) for c in rec.calls] == [str, bytes, set, frozenset, type(None), int]
    assert rec.calls[2] is st  # the set itself went to fn, not its items
    # a bare leaf at the top goes straight to fn
    assert map_leaves(7, times10) == 70
    assert map_leaves(s, times10) is s


def test_an_object_that_only_claims_to_be_a_dict_is_a_leaf() -> None:
    fake = mock.Mock(spec=dict)
    assert isinstance(fake, dict)
    rec = Recorder()
    assert map_leaves([fake], rec) == [fake]
    assert rec.calls == [fake]


def test_shared_references_are_no_cycle() -> None:
    shared = [1, 2]
    out = map_leaves({"a": shared, "b": shared, "c": (shared, shared)}, times10)
    assert out == {"a": [10, 20], "b": [10, 20], "c": ([10, 20], [10, 20])}


def test_fn_errors_propagate_unchanged() -> None:
    def boom(x: Any) -> Any:
        raise KeyError("from fn")

    with pytest.raises(KeyError, match="from fn"):
        map_leaves({"a": [1]}, boom)


# --- standard library subclasses --------------------------------------------------------


def test_namedtuple() -> None:
    p = Point(1, "y")
    out = map_leaves([p], times10)[0]
    assert type(out) is Point
    assert out == Point(10, "y")
    assert out.x == 10
    assert out.y is p.y

    q = Pair([1], 2)
    out_q = map_leaves(q, times10)
    assert type(out_q) is Pair
    assert out_q.first == [10]
    assert out_q.second == 20


def test_ordered_dict_keeps_its_order() -> None:
    od = OrderedDict([("z", 1), ("a", 2), ("m", 3)])
    od.move_to_end("z")
    out = map_leaves(od, times10)
    assert type(out) is OrderedDict
    assert list(out.items()) == [("a", 20), ("m", 30), ("z", 10)]
    out.move_to_end("a")  # a working OrderedDict
    assert list(out) == ["m", "z", "a"]


def test_defaultdict_keeps_its_factory() -> None:
    dd: defaultdict[str, Any] = defaultdict(list, {"b": 1, "a": 2})
    out = map_leaves(dd, times10)
    assert type(out) is defaultdict
    assert out.default_factory is list
    assert list(out.items()) == [("b", 10), ("a", 20)]
    assert out["missing"] == []


def test_counter() -> None:
    c = Counter({"x": 2, "y": 1})
    out = map_leaves(c, times10)
    assert type(out) is Counter
    assert out == Counter({"x": 20, "y": 10})
    assert out["missing"] == 0


def test_ordered_dict_subclass_with_own_init() -> None:
    od = NamedOD("n")
    od["b"] = 1
    od["a"] = 2
    od.move_to_end("b")
    out = map_leaves(od, times10)
    assert type(out) is NamedOD
    assert list(out.items()) == [("a", 20), ("b", 10)]
    assert out.name == "n"
    out.move_to_end("a")  # its linked order is intact
    assert list(out) == ["b", "a"]


def test_defaultdict_subclass_with_own_init() -> None:
    dd = NamedDD("n")
    dd["a"].append(1)
    dd["b"] = 2
    out = map_leaves(dd, times10)
    assert type(out) is NamedDD
    assert out.default_factory is list
    assert out.name == "n"
    assert list(out.items()) == [("a", [10]), ("b", 20)]
    assert out["missing"] == []


# --- user subclasses ----------------------------------------------------------------------


def test_dict_subclass_with_own_init() -> None:
    d = Named("config")
    d["b"] = 1
    d["a"] = [2]
    inits = Named.inits
    out = map_leaves({"outer": d}, times10)["outer"]
    assert type(out) is Named
    assert out.name == "config"
    assert dict(out) == {"b": 10, "a": [20]}
    assert list(out) == ["b", "a"]
    assert Named.inits == inits  # __init__ was not called with the items
    assert out is not d
    assert dict(d) == {"b": 1, "a": [2]}
    assert out.__dict__ is not d.__dict__


def test_dict_subclass_with_extra_attributes() -> None:
    meta = {"source": "x"}
    d = Tagged(a=1, b="s")
    d.meta = meta  # type: ignore[attr-defined]
    d.count = 3  # type: ignore[attr-defined]
    out = map_leaves(d, times10)
    assert type(out) is Tagged
    assert dict(out) == {"a": 10, "b": "s"}
    assert out.meta is meta  # attributes are kept as they are, not mapped
    assert out.count == 3
    out.count = 4
    assert d.count == 3  # but the new object has its own __dict__


def test_list_subclass_with_own_init() -> None:
    s = Stack("st", 3)
    inits = Stack.inits
    out = map_leaves(s, times10)
    assert type(out) is Stack
    assert list(out) == [0, 10, 20]
    assert out.label == "st"
    assert Stack.inits == inits
    assert list(s) == [0, 1, 2]


def test_list_subclass_with_slots() -> None:
    secret = object()
    s = Slotted("k", secret)
    out = map_leaves(s, times10)
    assert type(out) is Slotted
    assert list(out) == [10, 20]
    assert out.kind == "k"
    assert out.secret is secret


def test_tuple_subclass_with_own_new_and_init_is_rebuilt_faithfully() -> None:
    c = Coords(1, [2], "m")
    news, inits = Coords.news, Coords.inits
    out = map_leaves(c, times10)
    assert type(out) is Coords
    assert tuple(out) == (10, [20])
    assert out.unit == "m"
    assert (Coords.news, Coords.inits) == (news, inits)  # neither was called
    assert tuple(c) == (1, [2])


def test_overridden_methods_neither_drop_nor_alter_items() -> None:
    f = Frozen({"a": 1, "b": 2})
    out = map_leaves(f, times10)
    assert type(out) is Frozen
    assert dict.items(out) == {"a": 10, "b": 20}.items()

    h = Hidden([1, 2, 3])
    out_h = map_leaves(h, times10)
    assert type(out_h) is Hidden
    assert list.__len__(out_h) == 3
    assert [out_h[i] for i in range(3)] == [10, 20, 30]


def test_custom_getstate_and_setstate_are_used() -> None:
    s = Stateful()
    out = map_leaves(s, times10)
    assert type(out) is Stateful
    assert list(out) == [10]
    assert out.cache is None
    assert out.__dict__["restored"] is True
    assert "restored" not in s.__dict__


def test_getnewargs_gives_new_its_arguments() -> None:
    g = GivesArg("first")
    g["a"] = 1
    out = map_leaves(g, times10)
    assert type(out) is GivesArg
    assert dict(out) == {"a": 10}


# --- errors ---------------------------------------------------------------------------------


def test_container_error_is_an_interop_error_and_a_type_error() -> None:
    assert issubclass(ContainerError, InteropError)
    assert issubclass(ContainerError, TypeError)
    lst: list[Any] = [1]
    lst.append(lst)
    with pytest.raises(TypeError):
        map_leaves(lst, times10)
    with pytest.raises(InteropError):
        map_leaves(lst, times10)


@pytest.mark.parametrize("kind", ["list", "dict", "tuple-via-list", "deep", "subclass"])
def test_a_cycle_raises_container_error(kind: str) -> None:
    if kind == "list":
        obj: Any = [1]
        obj.append(obj)
        path = "list -> list"
    elif kind == "dict":
        obj = {"a": 1}
        obj["self"] = obj
        path = "dict -> dict"
    elif kind == "tuple-via-list":
        inner: list[Any] = []
        obj = (inner,)
        inner.append(obj)
        path = "tuple -> list -> tuple"
    elif kind == "deep":
        inner = [1]
        obj = {"a": [2, {"b": inner}]}
        inner.append(obj["a"])
        path = "list -> dict -> list -> list"
    else:
        obj = Tagged()
        obj["me"] = [obj]
        path = f"{__name__}.Tagged -> list -> {__name__}.Tagged"
    with pytest.raises(ContainerError, match="contains itself") as info:
        map_leaves(obj, times10)
    assert f"({path})" in str(info.value)
    assert "convert its items yourself" in str(info.value)
    assert not isinstance(info.value, RecursionError)


def nested(depth: int, leaf: Any = 1) -> Any:
    """``leaf`` inside ``depth`` containers: lists, with a dict and a tuple on the way."""
    obj = leaf
    for level in range(depth):
        obj = {"k": obj} if level % 3 == 1 else (obj,) if level % 3 == 2 else [obj]
    return obj


def test_nesting_up_to_the_limit_is_walked() -> None:
    out = map_leaves(nested(MAX_DEPTH, 7), times10)
    for _ in range(MAX_DEPTH):
        out = out["k"] if isinstance(out, dict) else out[0]
    assert out == 70


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 500, 5000])
def test_nesting_too_deep_raises_container_error(depth: int) -> None:
    with pytest.raises(ContainerError) as info:
        map_leaves(nested(depth), times10)
    message = str(info.value)
    assert f"nested {depth} deep" in message
    assert f"at most {MAX_DEPTH} levels" in message
    assert "Flatten the structure" in message
    assert not isinstance(info.value, RecursionError)


def test_nesting_too_deep_in_a_subclass_and_beside_shallow_branches() -> None:
    deep = Tagged(inner=nested(MAX_DEPTH + 5))
    with pytest.raises(ContainerError, match=f"nested {MAX_DEPTH + 7} deep"):
        map_leaves([1, {"a": 2}, deep], times10)


def test_to_and_explain_refuse_deep_nesting_with_an_interop_error() -> None:
    np = need("numpy")
    from interop_core import explain, to

    deep = nested(500, np.ones(2, dtype=np.float32))
    for call in (to, explain):
        with pytest.raises(ContainerError, match="nested 500 deep") as info:
            call(deep, "numpy")
        assert isinstance(info.value, InteropError)
    leaf = np.arange(2, dtype=np.float32)
    out = to(nested(MAX_DEPTH, leaf), "numpy", copy=True)  # the limit itself converts
    for _ in range(MAX_DEPTH):
        out = out["k"] if isinstance(out, dict) else out[0]
    assert isinstance(out, np.ndarray) and out.dtype == np.float32
    assert out.tolist() == [0.0, 1.0] and not np.shares_memory(out, leaf)


class UnhashableMeta(type):
    """A metaclass whose __hash__ raises: the classes it makes cannot be dict keys."""

    def __hash__(cls) -> int:
        raise RuntimeError("no hash for you")


class HashlessProducer(metaclass=UnhashableMeta):
    """An array producer (``__array__``) whose class cannot be hashed."""

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        import numpy

        return numpy.arange(3, dtype=numpy.float32)


def test_a_class_whose_hash_raises_is_an_interop_error() -> None:
    need("numpy")
    from interop_core import explain, to

    for call in (to, explain):
        for obj in (HashlessProducer(), [1, {"x": HashlessProducer()}]):
            with pytest.raises(InteropError) as info:
                call(obj, "numpy")
            assert isinstance(info.value, TypeError)
            message = str(info.value)
            first = message.splitlines()[0]
            assert "HashlessProducer" in first
            assert "RuntimeError: no hash for you" in first
            assert "UnhashableMeta.__hash__" in message
            assert "or convert a plain array of its data instead" in message
            assert isinstance(info.value.__cause__, RuntimeError)


def test_new_without_its_arguments_raises_container_error() -> None:
    with pytest.raises(ContainerError) as info:
        map_leaves([NeedsArg("x")], times10)
    msg = str(info.value)
    assert f"{__name__}.NeedsArg (a dict subclass)" in msg
    assert "NeedsArg.__new__() failed" in msg
    assert "missing 1 required positional argument" in msg
    assert "__getnewargs__" in msg
    assert "convert it to a dict, list or tuple first" in msg
    assert isinstance(info.value.__cause__, TypeError)


def test_failing_setstate_raises_container_error() -> None:
    with pytest.raises(ContainerError, match="instance state could not be copied") as info:
        bad = BadState([1])
        bad.attr = 1  # type: ignore[attr-defined]
        map_leaves(bad, times10)
    assert "BadState (a list subclass)" in str(info.value)
    assert isinstance(info.value.__cause__, RuntimeError)


def test_a_rebuild_of_another_type_raises_container_error() -> None:
    with pytest.raises(ContainerError, match=r"LiesMake .*gave a tuple"):
        map_leaves(LiesMake((1,)), times10)


def test_a_rebuild_that_loses_items_raises_container_error() -> None:
    with pytest.raises(ContainerError, match="has 1 items instead of 2"):
        map_leaves(DropsMake((1, 2)), times10)


# --- the pre-3.11 state fallback agrees with object.__getstate__ ----------------------------


@pytest.mark.skipif(sys.version_info < (3, 11), reason="object.__getstate__ is new in 3.11")
def test_default_state_matches_object_getstate() -> None:
    tagged = Tagged(a=1)
    tagged.extra = [1]  # type: ignore[attr-defined]
    for obj in (Slotted("k", 1), tagged, Tagged(), Stack("s", 1), Coords(1, 2, "u")):
        assert _default_state(obj) == object.__getstate__(obj)  # type: ignore[attr-defined]
    assert _default_state(Slotted("k", 1)) == (None, {"_Slotted__secret": 1, "kind": "k"})
