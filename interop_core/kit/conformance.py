"""The conformance kit: :func:`check_framework` checks a framework's plugin against every rule
the core relies on.

It runs a framework through its description, its warm-path key, its data pointer, its
zero-copy claims and round trips with every other installed framework, and raises
:class:`ConformanceError` (an ``AssertionError``) naming the first rule broken. A plugin's
test suite calls it once; ``interop_core.testing`` re-exports it.

Data pointers and layouts are checked against what a standard protocol says
(:func:`interop_core.kit.buffers.protocol_view`), read without any plugin, and so are the
values of host arrays (from the memory the protocol describes). This module imports no
framework.
"""

from __future__ import annotations

import ctypes
import functools
import math
import struct
import warnings
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any, NoReturn

from ..declare.errors import (
    CopyRequiredError,
    FrameworkNotInstalledError,
    NoRouteError,
    PluginWarning,
)
from ..declare.records import NamedTuple
from ..declare.specs import (
    ALIGNMENT,
    DTYPES,
    ITEMSIZE,
    ConverterSpec,
    Device,
    FrameworkSpec,
    PlanKey,
    classify_layout,
)
from ..engine.planner import Goal, advance
from ..engine.registry import Registry
from ..face.api import default_registry, explain, to, using_registry
from .buffers import ProtocolView, independent_data_ptr, protocol_view
from .forms import FormChecks

__all__ = ["ConformanceError", "check_framework"]


class ConformanceError(AssertionError):
    """A framework breaks a rule :func:`check_framework` checks; the message says which."""


#: Layout classes of TensorInfo.layout (see specs.classify_layout).
LAYOUTS = frozenset({"C", "F", "strided", "negative", "broadcast"})
#: The shapes of the two examples built per dtype (the key must not tell them apart).
_SHAPE, _OTHER_SHAPE = (2, 3), (3, 2)
_SHAPES = (_SHAPE, _OTHER_SHAPE)


def check_framework(
    name: str,
    *,
    registry: Registry | None = None,
    others: Iterable[str] | None = None,
    dtypes: Iterable[str] | None = None,
) -> list[str]:
    """Check that framework ``name`` keeps every promise the core relies on.

    For each dtype (``dtypes``, default: every dtype the spec holds, less those a global flag
    refuses right now) it builds examples with ``spec.example`` and checks:

    - ``describe()`` agrees with the array: framework name, the dtype asked for (one of
      ``spec.dtypes``), shape, a layout class, ``aligned`` and the device, each also against
      what a standard protocol says when the array exposes one;
    - ``key(x)`` is hashable, stable, the same for two arrays of one dtype and layout (other
      shape and values), and never the same for two arrays whose PlanKeys differ (so it
      differs between dtypes); ``aligned_key`` likewise, alignment included;
    - ``data_ptr(x)`` equals :func:`independent_data_ptr` when that can read it;
    - ``to(x, name)`` returns ``x`` itself; ``copy=True`` gives a new buffer;
    - with each other framework (``others``, default: every installed one that builds
      examples on the host, where the kit runs): ``to(x, other)`` (twice: cold and warm)
      and back give the same values and dtype; where ``explain()`` claims zero-copy the
      data pointers of source and result are equal, as read by each framework's ``data_ptr`` and by
      :func:`independent_data_ptr`, and where it claims a copy they differ; ``copy=False``
      shares memory exactly where ``explain(copy=False)`` finds a route, else raises
      CopyRequiredError; ``copy=True`` never shares memory; the other framework's own
      example converts in too; every result is described as its route's ConverterSpecs
      promise (layout, alignment, read-only, flags). The same for views of the float32
      example (``.T``, ``[:, ::2]``, ``[::-1]``, ``[1:]``) where the framework has them;
    - a dtype the spec does not hold raises NoRouteError.

    A spec without ``example`` is checked on the examples of its first ``Form`` without
    flags (of the shapes it declares: a Series is 1-d); an example a snapshot opens as a
    dict (a file) is checked entry by entry, and ``to(example, other)`` gives the dict of
    converted entries. Each ``Form`` with flags (sparse, ragged) is checked as
    ``interop_core.kit.forms`` says.

    ``registry`` is made the default registry of the calling thread for the run when
    given; the default registry is used otherwise. Returns one line per check
    done or skipped (and why); raises :class:`ConformanceError` (an AssertionError) naming
    the first rule broken, FrameworkNotInstalledError when the framework is not installed,
    ValueError for ``dtypes`` the spec does not hold.
    """
    if registry is None:
        registry = default_registry()
        registry.load_all()  # the others are every framework, imported or not
        return _Kit(registry, name, others, dtypes).run()
    with using_registry(registry):
        return _Kit(registry, name, others, dtypes).run()


def _nested(shape: Sequence[int], dtype: str, reverse: bool = False) -> Any:
    """Values 0, 1, 2, ... (or counting down) of ``shape`` that ``dtype`` holds exactly."""
    count = 1
    for n in shape:
        count *= n
    order = range(count - 1, -1, -1) if reverse else range(count)
    flat: list[Any]
    if dtype == "bool":
        flat = [i % 2 == 1 for i in order]
    elif dtype.startswith(("int", "uint")):
        flat = [i % 8 for i in order]
    else:  # small integers are exact in every float type, float8 included
        flat = [float(i % 8) for i in order]
    values = iter(flat)

    def build(dims: Sequence[int]) -> Any:
        if not dims:
            return next(values)
        return [build(dims[1:]) for _ in range(dims[0])]

    return build(tuple(shape))


def _shape_of(values: Any) -> tuple[int, ...]:
    shape = []
    while isinstance(values, list):
        shape.append(len(values))
        if not values:
            break
        values = values[0]
    return tuple(shape)


#: Views made with generic operations: (label, operation, what it does to nested values).
_VARIANTS: tuple[tuple[str, Callable[[Any], Any], Callable[[Any], Any]], ...] = (
    ("x.T", lambda x: x.T, lambda v: [list(r) for r in zip(*v, strict=True)]),
    ("x[:, ::2]", lambda x: x[:, ::2], lambda v: [r[::2] for r in v]),
    ("x[::-1]", lambda x: x[::-1], lambda v: v[::-1]),
    ("x[1:]", lambda x: x[1:], lambda v: v[1:]),
)


class Case(NamedTuple):
    """One array the checks take: built once, passed whole (a result is one too)."""

    #: The array.
    x: Any
    #: The spec of the framework that owns it.
    spec: FrameworkSpec
    #: The canonical dtype it must have.
    dtype: str
    #: The nested Python values it must hold (their shape is its shape).
    data: Any
    #: How messages name it: "a float32 example", "to(a float32 example, 'torch')".
    label: str


class _Kit:
    """One run of check_framework."""

    def __init__(
        self,
        reg: Registry,
        name: str,
        others: Iterable[str] | None,
        dtypes: Iterable[str] | None,
    ) -> None:
        self.reg = reg
        self.name = name
        self.done: list[str] = []
        #: (type, key(x)) -> (PlanKey without alignment, where it was seen); aligned_key
        #: likewise.
        self.keys: dict[Hashable, tuple[PlanKey, str]] = {}
        self.aligned_keys: dict[Hashable, tuple[PlanKey, str]] = {}
        self.unread: set[str] = set()
        st = reg.state
        canonical = st.names.get(name.lower())
        if canonical is None:
            dropped = "; ".join(f"{d.name}: {d.reason}" for d in reg.pm.dropped)
            self.fail(
                f"no registered framework is called {name!r} (registered: "
                f"{', '.join(sorted(st.frameworks))})"
                + (f"; dropped plugins: {dropped}" if dropped else "")
            )
        self.spec: FrameworkSpec = st.frameworks[canonical]
        self.name = self.spec.name
        if not reg.state.installed.get(self.spec.name, False):
            raise FrameworkNotInstalledError(self.spec.name, self.spec.install_hint)
        plain = [f for f in self.spec.diagnostics.forms if not f.flags]
        #: Builds the dense examples: example(), else the first Form without flags.
        self.build = self.spec.example or (plain[0].build if plain else None)
        self.shapes = plain[0].shapes if self.spec.example is None and plain else _SHAPES
        if self.build is None and not self.spec.diagnostics.forms:
            self.fail(
                "the spec has no example(): the kit (and the doctor's route matrix) build "
                "arrays with it; only source-only protocols may leave it None (declare a "
                "Form in FrameworkSpec.diagnostics.forms for the kit)"
            )
        self.asked = None if dtypes is None else list(dtypes)
        held = [d for d in DTYPES if d in self.spec.dtypes]
        if dtypes is None:
            self.dtypes = held
        else:
            self.dtypes = list(dtypes)
            unknown = [d for d in self.dtypes if d not in self.spec.dtypes]
            if unknown:
                raise ValueError(f"{self.name} does not hold dtype(s) {', '.join(unknown)}")
        if others is None:
            self.others = [
                s
                for s in st.frameworks.values()
                if s.name != self.name and s.target and s.example is not None
                and reg.state.installed.get(s.name, False)
                and (not s.devices.kinds or "cpu" in s.devices.kinds)
            ]  # fmt: skip
        else:
            self.others = [reg.resolve(o) for o in others]
            self.others = [s for s in self.others if s.name != self.name]
        #: The others the caller named (the flagged checks take every installed one else).
        self.others_given = None if others is None else self.others

    # -- plumbing -----------------------------------------------------------------------

    def fail(self, message: str, cause: BaseException | None = None) -> NoReturn:
        raise ConformanceError(f"check_framework({self.name!r}): {message}") from cause

    def ok(self, line: str) -> None:
        self.done.append(line)

    def run(self) -> list[str]:
        with warnings.catch_warnings():
            # A converter failing on what its predicates accepted is a plugin bug: the
            # router's warning becomes an error, which the checks report.
            warnings.simplefilter("error", PluginWarning)
            self.check_spec()
            if self.build is not None:
                self.check_dense()
            FormChecks(self, self.asked).run()
        return self.done

    def check_dense(self) -> None:
        """The dense checks, over every dtype."""
        reached, returned = False, False
        first: Case | None = None
        shape = self.shapes[0]
        for dtype in self.dtypes:
            off = self.flag_off(self.name, dtype)
            if off is not None:
                self.ok(f"{dtype}: skipped, {self.name} cannot hold it now: {off}")
                continue
            data = _nested(shape, dtype)
            raw, entries = self.examples(data, dtype)
            for entry, x in entries:
                case = Case(x, self.spec, dtype, data, f"a {dtype} example{entry}")
                # describe() messages name it by shape, beside the other-shape example.
                self.check_array(case._replace(label=f"example {dtype} {shape}{entry}"))
                self.check_key(case)
                self.check_self(case)
                for other in self.others:
                    there, back = self.check_pair(case, other)
                    reached, returned = reached or there, returned or back
                if first is None or dtype == "float32":
                    first = case
            if raw is not None:
                self.check_opened(raw, entries, dtype, data)
            for other in self.others:
                self.check_into(other, dtype)
        if first is not None:
            self.check_variants(first)
        self.report_keys()
        self.check_unheld()
        if self.others and self.dtypes and not reached:
            self.fail(
                f"no dtype has a route from {self.name} to any of "
                f"{', '.join(o.name for o in self.others)}"
            )
        if self.others and self.dtypes and self.spec.target and not returned:
            self.fail(f"no dtype has a route back to {self.name} from any other framework")

    def flag_off(self, target: str, dtype: str) -> str | None:
        """The reason a global flag of the edges into ``target`` (theirs, or the target's
        switches) refuses ``dtype`` now."""
        graph = self.reg.state.graph
        for edge in graph.edges:
            # An edge only for flagged arrays (a ragged array's row splits need a switch of
            # their own) says nothing of what plain arrays of the dtype need.
            if getattr(edge.accepts, "flags", None):
                continue
            if edge.target == target and edge.source != target:
                for flag in graph.flags_read(edge, dtype):
                    if not flag.value():
                        return flag.reason.format(dtype=dtype)
        return None

    def builds(self, spec: FrameworkSpec, dtype: str) -> bool:
        """Whether ``spec`` can build a faithful ``dtype`` example now (JAX without x64 cannot)."""
        return (
            dtype in spec.dtypes
            and spec.example is not None
            and self.flag_off(spec.name, dtype) is None
        )

    def example(self, data: Any, dtype: str, spec: FrameworkSpec | None = None) -> Any:
        if spec is None or spec is self.spec:
            return self.examples(data, dtype)[1][0][1]
        assert spec.example is not None
        return self.built(spec.example, spec, data, dtype)

    def built(self, build: Any, spec: FrameworkSpec, data: Any, dtype: str) -> Any:
        try:
            return build(data, dtype)
        except Exception as exc:
            self.fail(
                f"{spec.name}'s example(values, {dtype!r}) raised {type(exc).__name__}: {exc} "
                f"although {dtype} is in its dtypes",
                exc,
            )

    def examples(self, data: Any, dtype: str) -> tuple[Any, list[tuple[str, Any]]]:
        """(what the framework under test built, or None; its arrays, each with a suffix of
        its label): the example itself, or each entry its snapshot opens (a file's dict)."""
        spec = self.spec
        x = self.built(self.build, spec, data, dtype)
        snap = spec.snapshot(x) if spec.snapshot is not None else x
        if not isinstance(snap, dict):
            return None, [("", x)]
        if not snap:
            self.fail(f"the snapshot of a {dtype} example is an empty dict")
        return x, [(f"[{name!r}]", entry) for name, entry in snap.items()]

    def check_opened(self, raw: Any, entries: list[tuple[str, Any]], dtype: str, data: Any) -> None:
        """``to(example, other)`` of an example its snapshot opens: the dict of its entries,
        converted."""
        names = [entry[2:-2] for entry, _ in entries]
        for other in self.others:
            try:
                explain(raw, other.name)
            except NoRouteError:
                continue
            what = f"to(a {dtype} example, {other.name!r})"
            got = self.convert(raw, other.name, f"a {dtype} example")
            if not isinstance(got, dict) or list(got) != names:
                self.fail(f"{what} gave {type(got).__name__} {got!r:.80}, not a dict of {names}")
            for name, y in got.items():
                self.check_result(Case(y, other, dtype, data, f"{what}[{name!r}]"))
        self.ok(f"{dtype}: each entry of an opened example converts; to() gives their dict")

    def call(self, what: str, func: Callable[[], Any]) -> Any:
        try:
            return func()
        except Exception as exc:
            self.fail(f"{what} raised {type(exc).__name__}: {exc}", exc)

    def convert(self, x: Any, target: str, label: str, copy: bool | None = None) -> Any:
        return self.call(_to_call(label, target, copy), lambda: to(x, target, copy=copy))

    def owner(self, y: Any) -> FrameworkSpec | None:
        return self.reg.state.detect(y)

    def spec_of(self, case: Case) -> FrameworkSpec:
        """The spec detection hands out for ``case.x`` (composed with its form, where it has
        one: its describe and data_ptr read the form), else the case's framework's."""
        return self.owner(case.x) or case.spec

    # -- the spec -----------------------------------------------------------------------

    def check_spec(self) -> None:
        spec = self.spec
        odd = sorted(set(spec.dtypes) - set(DTYPES))
        if odd:
            self.fail(
                f"dtypes holds non-canonical name(s) {odd}; use interop_core.plugin.DTYPES names"
            )
        if not spec.dtypes:
            self.fail("dtypes is empty")
        if spec.target:
            for alias in (spec.name, *spec.aliases):
                found = self.call(f"resolve({alias!r})", functools.partial(self.reg.resolve, alias))
                if found is not spec:
                    self.fail(f"{alias!r} resolves to {found.name!r}")
        self.devices: list[str] | None = None
        if spec.devices.visible is not None:
            devices = self.call("devices()", spec.devices.visible)
            for d in devices:
                parsed = self.call(f"Device.parse({d!r})", functools.partial(Device.parse, d))
                if str(parsed) != d:
                    self.fail(f"devices() lists {d!r}; write it as {str(parsed)!r}")
            self.devices = list(devices)
        self.ok(
            f"spec: {len(spec.dtypes)} canonical dtypes, aliases resolve, devices "
            f"{self.devices if self.devices is not None else '(not declared)'}"
        )

    # -- one array ----------------------------------------------------------------------

    def check_array(self, case: Case) -> None:
        """describe(), data_ptr() and the values of ``case``, an array of the framework under
        test."""
        spec = self.spec
        x, dtype, label = case.x, case.dtype, case.label
        owner = self.owner(x)
        if owner is not spec:
            self.fail(
                f"{label} is a {type(x).__qualname__}, detected as "
                f"{owner.name if owner else 'no framework'!r}, not {self.name!r} "
                f"(check array_types {list(spec.array_types)})"
            )
        info = self.call(f"describe({label})", lambda: spec.describe(x))
        shape = _shape_of(case.data)
        if info.framework != self.name:
            self.fail(f"describe({label}).framework is {info.framework!r}, not {self.name!r}")
        ptr = self.call(f"data_ptr({label})", lambda: spec.data_ptr(x))
        if not isinstance(ptr, int):
            self.fail(f"data_ptr({label}) is {ptr!r}, not an int")
        view = protocol_view(x)
        if view is not None:  # first: it tells a lying describe() from a narrowing example()
            self.check_view(info, ptr, view, label)
        if info.dtype != dtype:
            self.fail(
                f"describe({label}).dtype is {info.dtype!r}, not {dtype!r}"
                + (
                    " (example() must build the dtype it is asked for, never narrow it)"
                    if label.startswith("example ")
                    else ""
                )
            )
        if info.dtype not in spec.dtypes:
            self.fail(f"describe({label}).dtype {info.dtype!r} is not in the spec's dtypes")
        if tuple(info.shape) != shape:
            self.fail(f"describe({label}).shape is {info.shape}, not {shape}")
        if info.layout not in LAYOUTS:
            self.fail(f"describe({label}).layout is {info.layout!r}, not one of {sorted(LAYOUTS)}")
        if not isinstance(info.device, Device):
            self.fail(f"describe({label}).device is {info.device!r}, not an interop_core Device")
        if self.devices is not None and str(info.device) not in self.devices:
            self.fail(f"describe({label}).device is {info.device}, not in devices() {self.devices}")
        if not isinstance(info.flags, frozenset):
            self.fail(f"describe({label}).flags is {info.flags!r}, not a frozenset of names")
        if spec.aligned_key is None and not info.aligned:
            self.fail(
                f"describe({label}).aligned is False, but the spec has no aligned_key: the plan "
                "cache would key routes that turn on alignment by key() alone (declare "
                "aligned_key, or describe only arrays that are always aligned)"
            )
        if info.aligned != (ptr % ALIGNMENT == 0):
            self.fail(
                f"describe({label}).aligned is {info.aligned}, but data_ptr {ptr:#x} is "
                f"{'' if ptr % ALIGNMENT == 0 else 'not '}{ALIGNMENT}-byte aligned"
            )
        self.check_values(case)
        self.record_key(case.x, case.label, info.plan_key())

    def check_view(self, info: Any, ptr: int, view: ProtocolView, label: str) -> None:
        """describe() and data_ptr() against what a standard protocol says."""
        said = f"{view.protocol} says"
        if view.ptr != ptr:
            self.fail(f"data_ptr({label}) is {ptr:#x}, but {said} {view.ptr:#x}")
        if view.shape is not None and view.shape != tuple(info.shape):
            self.fail(f"describe({label}).shape is {info.shape}, but {said} {view.shape}")
        if view.itemsize and info.dtype in ITEMSIZE and view.itemsize != ITEMSIZE[info.dtype]:
            self.fail(
                f"describe({label}).dtype is {info.dtype}, but {said} {view.itemsize}-byte items"
            )
        if view.shape is not None and view.strides is not None and view.itemsize:
            layout = classify_layout(view.shape, view.strides, view.itemsize)
            if layout != info.layout:
                self.fail(
                    f"describe({label}).layout is {info.layout!r}, but {said} strides "
                    f"{view.strides} (layout {layout!r})"
                )
        if view.readonly and not info.readonly:
            self.fail(f"describe({label}).readonly is False, but {said} read-only")
        if view.device is not None and view.device != str(info.device):
            self.fail(f"describe({label}).device is {info.device}, but {said} {view.device}")

    def check_values(self, case: Case) -> None:
        """``case.x`` holds ``case.data``: as read by :meth:`values`, else by its framework's
        == with an example of the same values."""
        y, spec, dtype, values, label = case.x, case.spec, case.dtype, case.data, case.label
        got = self.values(y, dtype)
        if got is not None:
            if got != values:
                self.fail(f"{label} holds {got}, expected {values} ({dtype})")
            return
        # No way to read the values: compare with the framework's own == on an example.
        reference = self.example(values, dtype, spec)
        same = _equal(y, reference)
        if same is False:
            self.fail(f"{label} != {spec.name}'s example of the same values ({dtype})")
        if same is None and spec.name not in self.unread:
            self.unread.add(spec.name)
            self.ok(
                f"values of {spec.name} arrays not compared: no standard protocol, tolist(), "
                "route to another framework or == reads them"
            )

    def values(self, y: Any, dtype: str, last_resort: bool = True) -> Any:
        """``y``'s values as nested Python numbers, read without interop_core when possible:
        from host memory a standard protocol describes, else by ``y.tolist()``."""
        got = _host_values(y, dtype)
        if got is not None:
            return got
        tolist = getattr(y, "tolist", None)
        if callable(tolist):
            try:
                return tolist()
            except Exception:
                pass
        owner = self.owner(y)
        if not last_resort or owner is None:
            return None
        # The last resort: the framework's own route to another one whose arrays can be read.
        st = self.reg.state
        for other in st.frameworks.values():
            if other.name == owner.name or not other.target or not st.installed.get(other.name):
                continue
            try:
                a = to(y, other.name, copy=True)
            except Exception:
                continue
            got = self.values(a, dtype, last_resort=False)
            if got is not None:
                return got
        return None

    # -- the key ------------------------------------------------------------------------

    def record_key(self, x: Any, label: str, pk: PlanKey) -> None:
        """Remember key() and aligned_key() of ``x`` (an object of the framework under test,
        described as ``pk``, named ``label``); two objects of one type with one key must
        plan alike (the warm path looks a key up among its type's only). The key functions
        are those detection hands out for ``x`` (its form's, where it has one)."""
        spec = self.owner(x) or self.spec
        for fn_name, fn, table, plan_key in (
            ("key", spec.key, self.keys, pk._replace(traits=pk.traits._replace(aligned=False))),
            ("aligned_key", spec.aligned_key, self.aligned_keys, pk),
        ):
            if fn is None:
                continue
            k = self.call(f"{fn_name}({label})", functools.partial(fn, x))
            try:
                hash(k)
            except TypeError as exc:
                self.fail(f"{fn_name}({label}) is {k!r}, which is not hashable", exc)
            seen = table.setdefault((type(x), k), (plan_key, label))
            if seen[0] != plan_key:
                fields = [
                    f"{f} {a!r} vs {b!r}"
                    for f, a, b in zip(*_fields(seen[0]), _fields(plan_key)[1], strict=True)
                    if a != b
                ]
                self.fail(
                    f"{fn_name}() gives {seen[1]} and {label} the same key {k!r} although "
                    f"their descriptions differ ({'; '.join(fields)}): the plan cache would "
                    "run the route planned for one on the other"
                )

    def check_key(self, case: Case) -> None:
        """``case`` and an example of the same dtype and layout (other shape, other values):
        one key."""
        spec, x, dtype = self.spec, case.x, case.dtype
        other_data = _nested(self.shapes[1], dtype, reverse=True)
        x2 = self.example(other_data, dtype)
        self.check_array(Case(x2, spec, dtype, other_data, f"example {dtype} {self.shapes[1]}"))
        k1, k2 = spec.key(x), spec.key(x2)
        if k1 != k2:
            self.fail(
                f"key() differs for two C-contiguous {dtype} examples ({k1!r} vs {k2!r}): it "
                "must not read shape, values or identity (a key per array grows the plan "
                "cache without bound)"
            )
        if k1 != spec.key(x):
            self.fail(f"key() of one {dtype} array changed between two calls")
        if spec.aligned_key is not None:
            a1, a2 = spec.aligned_key(x), spec.aligned_key(x2)
            aligned = spec.describe(x).aligned == spec.describe(x2).aligned
            if aligned and a1 != a2:
                self.fail(
                    f"aligned_key() differs for two C-contiguous, equally aligned {dtype} "
                    f"examples ({a1!r} vs {a2!r})"
                )
        self.ok(f"{dtype}: describe, data_ptr and values agree; key is stable and shared")

    def report_keys(self) -> None:
        self.ok(
            f"key: {len(self.keys)} distinct keys over the arrays built, none shared by arrays "
            "that plan differently"
        )

    # -- conversions --------------------------------------------------------------------

    def check_self(self, case: Case) -> None:
        """The identity route, and copy=True into the framework itself."""
        if not self.spec.target:
            return
        x, dtype, label = case.x, case.dtype, case.label
        if self.convert(x, self.name, label) is not x:
            self.fail(f"{_to_call(label, self.name)} did not return the array itself")
        route = self.call(f"explain({label}, {self.name!r})", lambda: explain(x, self.name))
        if route.steps:
            self.fail(f"explain({label}, {self.name!r}) has steps: {route}")
        if self.convert(x, self.name, label, copy=False) is not x:
            self.fail(f"{_to_call(label, self.name, False)} did not return the array itself")
        try:
            forced = explain(x, self.name, copy=True)
        except NoRouteError as exc:
            self.ok(f"{dtype}: identity; copy=True into {self.name}: no route ({_first(exc)})")
            return
        self.check_to(case, self.spec, forced, copy=True)
        self.ok(f"{dtype}: identity returns the array; copy=True gives a new buffer")

    def check_pair(self, case: Case, other: FrameworkSpec, tag: str = "") -> tuple[bool, bool]:
        """``case`` -> ``other`` -> back; returns whether each direction had a route. ``tag``
        starts its lines (default: the dtype)."""
        x, dtype, label = case.x, case.dtype, case.label
        name, oname = self.name, other.name
        tag = tag or dtype
        if dtype not in other.dtypes:
            self.ok(f"{tag} -> {oname}: skipped, {oname} does not hold {dtype}")
            return False, False
        try:
            route = explain(x, oname)
        except NoRouteError as exc:
            self.ok(f"{tag} -> {oname}: no route ({_first(exc)})")
            return False, False
        except Exception as exc:
            self.fail(f"explain({label}, {oname!r}) raised {type(exc).__name__}: {exc}", exc)
        result = self.check_to(case, other, route)
        # The warm path, keyed by key(x).
        self.check_to(case, other, route, note=" (second call)")
        self.check_copy_false(case, other)
        forced = self.call(
            f"explain({label}, {oname!r}, copy=True)", lambda: explain(x, oname, copy=True)
        )
        self.check_to(case, other, forced, copy=True)
        line = f"{tag} -> {oname}: {'zero-copy' if route.zero_copy else 'copy'}"
        if not self.spec.target:
            self.ok(line)
            return True, False
        back = result._replace(label=f"{oname} result of {label}")
        try:
            back_route = explain(back.x, name)
        except NoRouteError as exc:
            self.ok(f"{line}; back: no route ({_first(exc)})")
            return True, False
        self.check_to(back, self.spec, back_route, keyed=True)
        self.ok(f"{line}; back: {'zero-copy' if back_route.zero_copy else 'copy'}")
        return True, True

    def check_into(self, other: FrameworkSpec, dtype: str) -> None:
        """``other``'s own example of ``dtype`` converted into the framework under test."""
        if not self.spec.target or not self.builds(other, dtype):
            return
        data = _nested(_SHAPE, dtype)
        z = self.example(data, dtype, other)
        try:
            route = explain(z, self.name)
        except NoRouteError as exc:
            self.ok(f"{other.name} {dtype} -> {self.name}: no route ({_first(exc)})")
            return
        case = Case(z, other, dtype, data, f"{other.name}'s {dtype} example")
        self.check_to(case, self.spec, route, keyed=True)

    def check_copy_false(self, case: Case, other: FrameworkSpec) -> None:
        """copy=False converts without a copy exactly where explain(copy=False) finds a route."""
        x, label = case.x, case.label
        try:
            route = explain(x, other.name, copy=False)
        except CopyRequiredError:
            route = None
        except Exception as exc:
            self.fail(f"explain({label}, {other.name!r}, copy=False) raised {exc!r}", exc)
        if route is not None:
            self.check_to(case, other, route, copy=False)
            return
        what = _to_call(label, other.name, False)
        try:
            to(x, other.name, copy=False)
        except CopyRequiredError:
            return
        except Exception as exc:
            self.fail(
                f"{what} raised {type(exc).__name__} ({exc}), not CopyRequiredError, where "
                "explain() says every route copies",
                exc,
            )
        self.fail(f"{what} returned although explain() says every route copies")

    def check_to(
        self, case: Case, target: FrameworkSpec, route: Any, *,
        copy: bool | None = None, note: str = "", keyed: bool = False,
    ) -> Case:  # fmt: skip
        """``to(case.x, target, copy=copy)`` along ``route`` (what explain() planned), checked;
        returns the result as a Case named by the call (plus ``note``).

        The result holds ``case.data`` as ``case.dtype`` in ``target``'s arrays; it shares the
        source's memory exactly where it must (copy=False), must not (copy=True) or where the
        route claims zero-copy (copy=None); it is what the route's steps promise. ``keyed``:
        the result's key is recorded too (a result of the framework under test).
        """
        what = _to_call(case.label, target.name, copy) + note
        y = self.call(what, lambda: to(case.x, target.name, copy=copy))
        result = case._replace(x=y, spec=target, label=what)
        self.check_result(result)
        if copy is None:
            self.check_shared(case, result, route.zero_copy, "explain() claims")
        else:
            self.check_shared(case, result, not copy, f"copy={copy}")
        self.check_claims(case, result, route, copy)
        if keyed:
            self.record_key(result.x, result.label, target.describe(y).plan_key())
        return result

    def check_claims(
        self, source: Case, result: Case, route: Any, copy: bool | None = None
    ) -> None:
        """``result`` (of ``source`` along ``route``) is what the route's declarations promise
        the planner.

        The planner predicts each step's result from its ConverterSpec (zero-copy keeps the
        layout and alignment, a copy is C-contiguous, writable and aligned unless
        ``aligned_result=False``, ``readonly_result``, ``keeps_flags``); describe() of the
        result must not contradict that prediction, or later steps and cached plans rely on
        something false.
        """
        expected = self.spec_of(source).describe(source.x).plan_key(copy)
        graph = self.reg.state.graph
        goal = Goal(result.spec.name, route.target.rpartition("@")[2])
        for step in route.steps:
            edge = self.edge_of(step)
            if edge is None:
                return  # a step this registry cannot name (should not happen): no prediction
            expected = advance(expected, edge, graph.kind(expected.kind), goal)
        got = self.spec_of(result).describe(result.x).plan_key(copy)
        what = result.label
        last = f"{route.steps[-1].converter!r} [{route.steps[-1].plugin}]" if route.steps else ""
        for field in ("framework", "device", "dtype", "layout"):
            if getattr(got, field) != getattr(expected, field):
                self.fail(
                    f"{what}: the route's steps promise a result with {field} "
                    f"{getattr(expected, field)!r}, but describe() says {getattr(got, field)!r} "
                    f"(last step {last})"
                )
        if expected.aligned and not got.aligned:
            self.fail(
                f"{what}: the route's steps promise 64-byte aligned memory, but the result is "
                f"not aligned (last step {last}; a copy that does not guarantee alignment "
                "declares array=ArrayEdge(aligned_result=False))"
            )
        if got.readonly and not expected.readonly:
            self.fail(
                f"{what}: the route's steps promise writable memory, but the result is "
                f"read-only (last step {last}; declare array=ArrayEdge(readonly_result=True))"
            )
        extra = got.flags - expected.flags
        if extra:
            self.fail(
                f"{what}: the result has flag(s) {sorted(extra)} that the route's steps clear "
                f"(last step {last}; declare keeps_flags)"
            )

    def edge_of(self, step: Any) -> ConverterSpec | None:
        source, target = step.source.rpartition("@")[0], step.target.rpartition("@")[0]
        for edge in self.reg.state.graph.edges:
            if (edge.name, edge.plugin, edge.source, edge.target) == (
                step.converter, step.plugin, source, target,
            ):  # fmt: skip
                return edge
        return None

    def check_result(self, result: Case) -> None:
        """``result`` is an array of its spec, with its dtype, shape and values."""
        y, spec, dtype, what = result.x, result.spec, result.dtype, result.label
        owner = self.owner(y)
        if owner is None or owner.name != spec.name:
            self.fail(
                f"{what} returned a {type(y).__qualname__} "
                f"({owner.name if owner else 'no framework'}), not a {spec.name} array"
            )
        info = self.call(f"describe() of {what}", lambda: owner.describe(y))
        if info.dtype != dtype:
            self.fail(f"{what} has dtype {info.dtype}, not {dtype}")
        if tuple(info.shape) != _shape_of(result.data):
            self.fail(f"{what} has shape {info.shape}, not {_shape_of(result.data)}")
        self.check_values(result)

    def check_shared(self, source: Case, result: Case, shared: bool, why: str) -> None:
        """The data pointers of ``source`` and ``result`` are equal exactly if ``shared``
        (``why``: the claim messages quote).

        Read by each framework's own data_ptr, and by independent_data_ptr where it can.
        """
        a, a_spec, b, b_spec = source.x, self.spec_of(source), result.x, self.spec_of(result)
        what = result.label
        pa = self.call(f"{a_spec.name}'s data_ptr", lambda: a_spec.data_ptr(a))
        pb = self.call(f"{b_spec.name}'s data_ptr", lambda: b_spec.data_ptr(b))
        ia, ib = independent_data_ptr(a), independent_data_ptr(b)
        if shared:
            claim = f"{why} zero-copy"
            if pa != pb:
                self.fail(
                    f"{what}: {claim}, but the data pointers differ: {a_spec.name}.data_ptr of "
                    f"the source is {pa:#x}, {b_spec.name}.data_ptr of the result {pb:#x}"
                )
            for side, ptr, own in (("source", ia, pa), ("result", ib, pb)):
                if ptr is not None and ptr != own:
                    self.fail(
                        f"{what}: {claim}, but independent_data_ptr of the {side} is "
                        f"{ptr:#x}, not {own:#x}"
                    )
        else:
            claim = f"{why} a copy" if why != "copy=True" else "copy=True must not share memory"
            if pa == pb or (ia is not None and ib is not None and ia == ib):
                self.fail(
                    f"{what}: {claim}, but the result shares the source's memory (data "
                    f"pointers {pa:#x} and {pb:#x})"
                )

    def check_variants(self, case: Case) -> None:
        """Views of an example (transposed, strided, reversed, offset), where supported."""
        built = []
        dtype = case.dtype
        for label, op, on_values in _VARIANTS:
            try:
                v = op(case.x)
                data = on_values(case.data)
            except Exception:  # no such view, or not of this many dims
                continue
            if self.owner(v) is not self.spec:
                continue
            what = f"{label} of a {dtype} example"
            variant = Case(v, self.spec, dtype, data, what)
            self.check_array(variant)
            for other in self.others:
                self.check_pair(variant, other, f"{dtype} {label}")
            built.append(label)
        if built:
            self.ok(f"{dtype} views {', '.join(built)}: described, converted, round-tripped")
        else:
            self.ok(f"{dtype} views: none built ({self.name} has no .T or slicing views)")

    def check_unheld(self) -> None:
        """A dtype the spec does not hold: NoRouteError, never a silent cast."""
        if not self.spec.target:
            return
        unheld = [d for d in DTYPES if d not in self.spec.dtypes]
        if not unheld:
            self.ok(f"{self.name} holds every canonical dtype")
            return
        checked = []
        for dtype in unheld:
            source = next((o for o in self.others if self.builds(o, dtype)), None)
            if source is None:
                continue
            z = self.example(_nested(_SHAPE, dtype), dtype, source)
            try:
                y = to(z, self.name)
            except NoRouteError:
                checked.append(f"{dtype} (from {source.name})")
                continue
            except Exception as exc:
                self.fail(
                    f"to({source.name}'s {dtype} example, {self.name!r}) raised "
                    f"{type(exc).__name__}, not NoRouteError: {exc}",
                    exc,
                )
            owner = self.owner(y)
            held = self.spec.describe(y).dtype if owner is self.spec else type(y).__qualname__
            self.fail(
                f"to({source.name}'s {dtype} example, {self.name!r}) returned ({held}) although "
                f"{dtype} is not in the spec's dtypes: it must raise NoRouteError"
            )
        if checked:
            self.ok(f"dtypes it does not hold raise NoRouteError: {', '.join(checked)}")
        else:
            self.ok("dtypes it does not hold: no other framework builds them here")


def _to_call(label: str, target: str, copy: bool | None = None) -> str:
    """A to() call as messages name it: "to(a float32 example, 'torch', copy=True)"."""
    return f"to({label}, {target!r}" + ("" if copy is None else f", copy={copy}") + ")"


def _first(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _float8(exponent: int, mantissa: int, bias: int, ieee: bool) -> Callable[[bytes], float]:
    """The decoder of a one-byte float: sign, ``exponent`` and ``mantissa`` bits; ``ieee``:
    the top exponent is inf/NaN (e5m2), else only all ones is NaN (e4m3fn, no inf)."""
    top, ones = (1 << exponent) - 1, (1 << mantissa) - 1

    def decode(raw: bytes) -> float:
        bits = raw[0]
        sign = -1.0 if bits >> 7 else 1.0
        e, m = (bits >> mantissa) & top, bits & ones
        if e == top and (ieee or m == ones):
            return sign * math.inf if ieee and m == 0 else math.nan
        if e == 0:  # subnormal
            return sign * m * 2.0 ** (1 - bias - mantissa)
        return sign * (1 + m / (1 << mantissa)) * 2.0 ** (e - bias)

    return decode


def _unpack(fmt: str) -> Callable[[bytes], Any]:
    unpack = struct.Struct(f"={fmt}").unpack
    if len(fmt) == 2:  # complex: real and imaginary parts
        return lambda raw: complex(*unpack(raw))
    return lambda raw: unpack(raw)[0]


def _bfloat16(raw: bytes) -> float:
    """The upper half of a float32."""
    (half,) = struct.unpack("=H", raw)
    return float(struct.unpack("=f", struct.pack("=I", half << 16))[0])


#: How one element of each canonical dtype reads from native-order bytes.
_DECODE: dict[str, Callable[[bytes], Any]] = {
    "bool": _unpack("?"),
    "int8": _unpack("b"), "int16": _unpack("h"), "int32": _unpack("i"), "int64": _unpack("q"),
    "uint8": _unpack("B"), "uint16": _unpack("H"), "uint32": _unpack("I"),
    "uint64": _unpack("Q"),
    "float16": _unpack("e"), "bfloat16": _bfloat16, "float32": _unpack("f"),
    "float64": _unpack("d"), "complex64": _unpack("ff"), "complex128": _unpack("dd"),
    "float8_e4m3fn": _float8(4, 3, 7, ieee=False), "float8_e5m2": _float8(5, 2, 15, ieee=True),
}  # fmt: skip


def _host_values(x: Any, dtype: str) -> Any:
    """``x``'s values as nested Python numbers, read from the host memory a standard
    protocol describes (no plugin, no framework); None when none describes host memory
    with ``dtype``'s item size."""
    decode, size = _DECODE.get(dtype), ITEMSIZE.get(dtype)
    view = protocol_view(x)
    if decode is None or size is None or view is None or view.shape is None:
        return None
    device = (view.device or "cpu").partition(":")[0]
    host = view.protocol != "__cuda_array_interface__" and device == "cpu"
    if view.strides is None:
        return None
    if not host or view.itemsize not in (None, size) or len(view.strides) != len(view.shape):
        return None

    def read(offset: int, dims: list[tuple[int, int]]) -> Any:
        if not dims:
            return decode(ctypes.string_at(view.ptr + offset, size))
        (n, stride), rest = dims[0], dims[1:]
        return [read(offset + i * stride, rest) for i in range(n)]

    return read(0, list(zip(view.shape, view.strides, strict=True)))


def _equal(a: Any, b: Any) -> bool | None:
    """``a == b`` with the framework's own ==, reduced to one bool; None when unknown."""
    eq: Any = type(a).__eq__
    if eq is object.__eq__:
        return None
    try:
        result = a == b
        if isinstance(result, bool):
            return result
        reduce = getattr(result, "all", None)
        return bool(reduce() if callable(reduce) else result)
    except Exception:
        return None


def _fields(key: PlanKey) -> tuple[list[str], list[Any]]:
    """A node's field names and values, its traits' fields in place of ``traits``."""
    names: list[str] = []
    values: list[Any] = []
    for name, value in zip(PlanKey._fields, key, strict=True):
        if name == "traits" and hasattr(value, "_fields"):
            names += value._fields
            values += list(value)
        else:
            names.append(name)
            values.append(value)
    return names, values
