"""The conformance kit's checks of flagged forms (sparse layouts, ragged rows): what
:func:`interop_core.kit.conformance.check_framework` runs for each :class:`Form` with flags
that a framework's spec declares.

For each dtype of the form it builds two examples (other shape, other values) and checks:

- describe() carries the form's flags and agrees with the example (framework, dtype,
  shape); the values read back (``Form.read``) are those built;
- key() is hashable, stable, one for both examples, and never shared by objects whose
  PlanKeys differ (the run's table: dense arrays, other forms and dtypes);
- ``to(x, name)`` returns ``x``;
- with every other installed framework that has a route for the form: the result (cold and
  warm), ``copy=True``, ``copy=False`` and the way back hold the same values (densified, or
  values and row splits) and dtype, in a form of the target's; where explain() claims
  zero-copy the data pointers (each framework's ``data_ptr``) are equal and every buffer of
  the result (``Form.buffers``) lies in the source's memory as the kit's own reader sees it
  (:func:`interop_core.kit.buffers.protocol_view`); where it claims a copy, some buffer is
  new; ``copy=True`` shares none;
- a framework without a route refuses with NoRouteError, and with the form's ``dense``
  options gives the dense values (padded rows with ``fill_value`` for ragged forms).

This module imports no framework.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn

from ..declare.errors import CopyRequiredError, NoRouteError
from ..declare.records import NamedTuple
from ..declare.specs import Form, FrameworkSpec
from ..face.api import explain, to
from .buffers import protocol_view

if TYPE_CHECKING:
    from .conformance import _Kit


class Flagged(NamedTuple):
    """One object of a flagged form: built, or a result (then its label names the call)."""

    x: Any
    spec: FrameworkSpec
    form: Form
    dtype: str
    #: The values it holds: a dense nested list, or (with ``form.rows``) a list of rows.
    data: Any
    label: str


def _values(count: int, dtype: str, reverse: bool) -> list[Any]:
    """``count`` values that ``dtype`` holds exactly, none zero (a sparse form stores them
    all: the kit's shapes decide which are zero)."""
    order = range(count, 0, -1) if reverse else range(1, count + 1)
    if dtype == "bool":
        return [True for _ in order]
    if dtype.startswith(("int", "uint")):
        return [i % 7 + 1 for i in order]
    return [float(i % 7 + 1) for i in order]


def example_data(form: Form, which: int, dtype: str) -> Any:
    """The nested values of ``form``'s example ``which`` (0 or 1): rows of the lengths
    ``shapes[which]``, or a 2-d array of that shape with every third element zero."""
    shape = form.shapes[which]
    reverse = bool(which)
    if form.rows:
        flat = iter(_values(sum(shape), dtype, reverse))
        return [[next(flat) for _ in range(n)] for n in shape]
    count = 1
    for n in shape:
        count *= n
    flat_values = _values(count, dtype, reverse)
    zero: Any = False if dtype == "bool" else (0 if dtype.startswith(("int", "uint")) else 0.0)
    flat_values = [zero if i % 3 == 1 else v for i, v in enumerate(flat_values)]
    it = iter(flat_values)

    def build(dims: tuple[int, ...]) -> Any:
        if not dims:
            return next(it)
        return [build(dims[1:]) for _ in range(dims[0])]

    return build(tuple(shape))


def _parts(form: Form, data: Any) -> list[Any]:
    """What ``form.read`` must give for ``data``: [dense] or [values, row splits]."""
    if not form.rows:
        return [data]
    values = [v for row in data for v in row]
    splits = [0]
    for row in data:
        splits.append(splits[-1] + len(row))
    return [values, splits]


def _shape(nested: Any) -> tuple[int, ...]:
    shape = []
    while isinstance(nested, list):
        shape.append(len(nested))
        if not nested:
            break
        nested = nested[0]
    return tuple(shape)


def form_of(spec: FrameworkSpec, flags: frozenset[str]) -> Form | None:
    """The flagged form of ``spec`` whose flags an object with ``flags`` carries (the one
    naming the most, when several do)."""
    found = [f for f in spec.diagnostics.forms if f.flags and f.flags <= flags]
    return max(found, key=lambda f: len(f.flags)) if found else None


def _span(arr: Any) -> tuple[int, int] | None:
    """The bytes [lo, hi) the array ``arr`` covers, as a standard protocol says (None when
    none reads it, or it is empty)."""
    view = protocol_view(arr)
    if view is None or view.shape is None or view.strides is None or not view.itemsize:
        return None
    if any(n == 0 for n in view.shape):
        return None
    lo = hi = view.ptr
    for n, s in zip(view.shape, view.strides, strict=True):
        if s >= 0:
            hi += (n - 1) * s
        else:
            lo += (n - 1) * s
    return lo, hi + view.itemsize


class FormChecks:
    """The flagged checks of one check_framework run (``kit``: its plumbing and key table)."""

    def __init__(self, kit: _Kit, dtypes: list[str] | None) -> None:
        self.kit = kit
        self.spec = kit.spec
        self.asked = dtypes
        st = kit.reg.state
        if kit.others_given:
            self.others = list(kit.others_given)
        else:
            self.others = [
                s
                for s in st.frameworks.values()
                if s.name != self.spec.name and s.target and st.installed.get(s.name, False)
                and (not s.devices.kinds or "cpu" in s.devices.kinds)
            ]  # fmt: skip

    def fail(self, message: str, cause: BaseException | None = None) -> NoReturn:
        self.kit.fail(message, cause)

    def run(self) -> None:
        for form in self.spec.diagnostics.forms:
            if not form.flags:
                continue
            dtypes = [d for d in form.dtypes if d in self.spec.dtypes]
            if self.asked is not None:
                dtypes = [d for d in dtypes if d in self.asked]
            for dtype in dtypes:
                off = self.kit.flag_off(self.spec.name, dtype)
                if off is not None:
                    self.kit.ok(f"{form.name} {dtype}: skipped, {off}")
                    continue
                self.check_form(form, dtype)

    # -- one form, one dtype -------------------------------------------------------------

    def build(self, form: Form, which: int, dtype: str) -> Flagged:
        data = example_data(form, which, dtype)
        label = f"a {dtype} {form.name} example {form.shapes[which]}"
        x = self.kit.call(f"{self.spec.name}'s {form.name} build(values, {dtype!r})",
                          lambda: form.build(data, dtype))  # fmt: skip
        return Flagged(x, self.spec, form, dtype, data, label)

    def check_form(self, form: Form, dtype: str) -> None:
        spec, tag = self.spec, f"{form.name} {dtype}"
        if form.read is None or form.buffers is None:
            self.fail(f"Form {form.name!r} has flags but no read() or buffers()")
        first, second = self.build(form, 0, dtype), self.build(form, 1, dtype)
        pks = [self.check_object(case, built=True) for case in (first, second)]
        key = self.owned(first.x, spec, first.label).key  # its form's, where it has one
        k1 = self.kit.call(f"key({first.label})", lambda: key(first.x))
        k2 = self.kit.call(f"key({second.label})", lambda: key(second.x))
        if k1 != key(first.x):
            self.fail(f"key() of one {tag} example changed between two calls")
        same = [pk._replace(traits=pk.traits._replace(aligned=False)) for pk in pks]
        if same[0] == same[1] and k1 != k2:
            self.fail(
                f"key() differs for two {tag} examples that describe() tells apart only by "
                f"shape and values ({k1!r} vs {k2!r}): a key per array grows the plan cache "
                "without bound"
            )
        if spec.target and self.kit.convert(first.x, spec.name, first.label) is not first.x:
            self.fail(f"to({first.label}, {spec.name!r}) did not return the array itself")
        for other in self.others:
            self.check_pair(first, other)
        self.kit.ok(f"{tag}: flags described, values read back, key stable and shared")

    def check_object(self, case: Flagged, built: bool = False) -> Any:
        """``case.x`` is an object of ``case.spec`` carrying the form's flags, with its dtype,
        shape and values; returns its PlanKey (recorded in the key table when the framework
        under test owns it)."""
        x, spec, form, label = case.x, case.spec, case.form, case.label
        # Described as detection hands it out: by its form's functions where it has one.
        owner = self.owned(x, spec, label)
        info = self.kit.call(f"describe({label})", lambda: owner.describe(x))
        if info.framework != spec.name:
            self.fail(f"describe({label}).framework is {info.framework!r}, not {spec.name!r}")
        if info.dtype != case.dtype:
            self.fail(f"describe({label}).dtype is {info.dtype!r}, not {case.dtype!r}")
        missing = form.flags - info.flags
        if missing:
            self.fail(
                f"describe({label}).flags is {sorted(info.flags)}, without {sorted(missing)} "
                f"of its form {form.name!r}: dense edges would take it"
            )
        expected = _parts(form, case.data)
        if tuple(info.shape) != _shape(expected[0]):
            self.fail(f"describe({label}).shape is {info.shape}, not {_shape(expected[0])}")
        # A form told apart per object shares its framework's type: the framework's own key
        # must raise on it, or the warm path would run the framework's plans for it.
        dense = getattr(owner.key, "dense", None)
        if dense is not None:
            try:
                own = dense(x)
            except Exception:
                pass
            else:
                self.fail(
                    f"{spec.name}'s key gives {own!r} for {label}, an object of its form "
                    f"{form.name!r} told apart per object: the framework's key must raise on "
                    "the form's objects (the form keys them)"
                )
        ptr = self.kit.call(f"data_ptr({label})", lambda: owner.data_ptr(x))
        if not isinstance(ptr, int):
            self.fail(f"data_ptr({label}) is {ptr!r}, not an int")
        self.check_read(case, expected)
        pk = info.plan_key()
        if spec is self.spec:
            self.kit.record_key(x, label, pk)
        return pk

    def owned(self, x: Any, spec: FrameworkSpec, label: str) -> FrameworkSpec:
        """``x`` (built or returned as ``label``) must be detected as ``spec``'s; returns the
        spec detection hands out for it (composed with its form, where it has one)."""
        owner = self.kit.owner(x)
        if owner is None or owner.name != spec.name:
            found = repr(owner.name) if owner else "no framework"
            self.fail(f"{label} is a {type(x).__qualname__} of {found}, not of {spec.name!r}")
        return owner

    def check_read(self, case: Flagged, expected: list[Any]) -> None:
        form, label = case.form, case.label
        assert form.read is not None
        parts = self.kit.call(f"{case.spec.name}'s {form.name} read({label})",
                              lambda: form.read(case.x))  # type: ignore[misc]  # fmt: skip
        if len(parts) != len(expected):
            self.fail(f"read({label}) gave {len(parts)} arrays, not {len(expected)}")
        what = ("values", "row splits") if form.rows else ("densified values",)
        for i, (part, want) in enumerate(zip(parts, expected, strict=True)):
            if i == 0:
                got = self.kit.values(part, case.dtype)
            else:  # row splits: int32 or int64, compared as numbers
                got = self.kit.values(part, "int64", last_resort=False)
                got = got if got is not None else self.kit.values(part, "int32")
            if got is None:
                self.fail(f"the {what[i]} of {label} cannot be read (no protocol, no tolist())")
            if got != want:
                self.fail(f"{label} holds {what[i]} {got}, expected {want} ({case.dtype})")

    # -- conversions ---------------------------------------------------------------------

    def result(self, case: Flagged, other: FrameworkSpec, y: Any, label: str) -> Flagged:
        """``y``, the result of converting ``case`` into ``other``, checked as a flagged
        object of one of ``other``'s forms."""
        owner = self.owned(y, other, label)
        info = self.kit.call(f"describe() of {label}", lambda: owner.describe(y))
        form = form_of(other, info.flags)
        if form is None:
            self.fail(
                f"{label} has flags {sorted(info.flags)}, but {other.name} declares no Form "
                "with them (FrameworkSpec.diagnostics.forms): the kit cannot read it back"
            )
        if form.rows != case.form.rows:
            self.fail(f"{label} is a {form.name!r}, which does not hold {case.form.name!r}")
        out = Flagged(y, other, form, case.dtype, case.data, label)
        self.check_object(out)
        return out

    def convert(self, case: Flagged, other: FrameworkSpec, copy: bool | None = None,
                note: str = "") -> Flagged:  # fmt: skip
        label = f"to({case.label}, {other.name!r}" + (
            "" if copy is None else f", copy={copy}") + ")" + note  # fmt: skip
        y = self.kit.call(label, lambda: to(case.x, other.name, copy=copy))
        return self.result(case, other, y, label)

    def check_pair(self, case: Flagged, other: FrameworkSpec) -> None:
        tag = f"{case.form.name} {case.dtype} -> {other.name}"
        if case.dtype not in other.dtypes:
            self.kit.ok(f"{tag}: skipped, {other.name} does not hold {case.dtype}")
            return
        try:
            route = explain(case.x, other.name)
        except NoRouteError:
            self.check_refused(case, other, tag)
            return
        except Exception as exc:
            self.fail(f"explain({case.label}, {other.name!r}) raised {exc!r}", exc)
        claim = "zero-copy" if route.zero_copy else "copy"
        res = self.convert(case, other)
        self.check_memory(case, res, claim)
        self.check_memory(case, self.convert(case, other, note=" (second call)"), claim)
        try:
            explain(case.x, other.name, copy=True)
        except NoRouteError:
            pass
        else:
            self.check_memory(case, self.convert(case, other, copy=True), "copy=True")
        self.check_copy_false(case, other)
        line = f"{tag}: {claim}"
        if self.spec.target:
            back = res._replace(label=f"{other.name} result of {case.label}")
            try:
                back_route = explain(back.x, self.spec.name)
            except NoRouteError as exc:
                self.kit.ok(f"{line}; back: no route ({_first(exc)})")
                return
            self.convert(back, self.spec)
            line += f"; back: {'zero-copy' if back_route.zero_copy else 'copy'}"
        self.kit.ok(line)

    def check_copy_false(self, case: Flagged, other: FrameworkSpec) -> None:
        try:
            explain(case.x, other.name, copy=False)
        except CopyRequiredError:
            what = f"to({case.label}, {other.name!r}, copy=False)"
            try:
                to(case.x, other.name, copy=False)
            except CopyRequiredError:
                return
            except Exception as exc:
                self.fail(f"{what} raised {exc!r}, not CopyRequiredError", exc)
            self.fail(f"{what} returned although explain(copy=False) finds no route")
        self.check_memory(case, self.convert(case, other, copy=False), "copy=False")

    def check_memory(self, source: Flagged, result: Flagged, claim: str) -> None:
        """The values' data pointers (each framework's data_ptr) and every buffer's memory
        (the kit's reader): shared for "zero-copy" and "copy=False", a new buffer for "copy",
        none shared for "copy=True"."""
        label = result.label
        pa = self.owned(source.x, source.spec, source.label).data_ptr(source.x)
        pb = self.owned(result.x, result.spec, result.label).data_ptr(result.x)
        src = [s for s in map(_span, self.buffers(source)) if s is not None]
        res = [s for s in map(_span, self.buffers(result)) if s is not None]

        def inside(s: tuple[int, int]) -> bool:
            return any(lo <= s[0] and s[1] <= hi for lo, hi in src)

        def overlaps(s: tuple[int, int]) -> bool:
            return any(s[0] < hi and lo < s[1] for lo, hi in src)

        said = "explain() claims" if claim in ("zero-copy", "copy") else claim
        if claim in ("zero-copy", "copy=False"):
            if pa != pb:
                self.fail(
                    f"{label}: {said} zero-copy, but the values' data pointers differ: "
                    f"{source.spec.name}.data_ptr of the source is {pa:#x}, "
                    f"{result.spec.name}.data_ptr of the result {pb:#x}"
                )
            if src:
                outside = [s for s in res if not inside(s)]
                if outside:
                    self.fail(
                        f"{label}: {said} zero-copy, but a buffer of the result at "
                        f"{outside[0][0]:#x} lies outside the source's memory (read by the "
                        "kit's own reader)"
                    )
        elif claim == "copy":
            if pa == pb and src and res and all(inside(s) for s in res):
                self.fail(
                    f"{label}: explain() claims a copy, but every buffer of the result lies "
                    "in the source's memory"
                )
        elif pa == pb or any(overlaps(s) for s in res):
            self.fail(f"{label}: copy=True must not share memory, but the result shares the "
                      "source's")  # fmt: skip

    def buffers(self, case: Flagged) -> tuple[Any, ...]:
        fn = case.form.buffers
        assert fn is not None
        return tuple(self.kit.call(f"{case.spec.name}'s buffers({case.label})",
                                   lambda: fn(case.x)))  # fmt: skip

    def check_refused(self, case: Flagged, other: FrameworkSpec, tag: str) -> None:
        """No route: ``to()`` raises NoRouteError; the form's dense options give the dense
        values."""
        what = f"to({case.label}, {other.name!r})"
        try:
            to(case.x, other.name)
        except NoRouteError:
            pass
        except Exception as exc:
            self.fail(f"{what} raised {type(exc).__name__}, not NoRouteError: {exc}", exc)
        else:
            self.fail(f"{what} returned although explain() finds no route")
        options = dict(case.form.dense)
        if not options:
            self.kit.ok(f"{tag}: refused (NoRouteError)")
            return
        shown = ", ".join(f"{k}={v!r}" for k, v in options.items())
        try:
            explain(case.x, other.name, **options)
        except NoRouteError:
            self.kit.ok(f"{tag}: refused (NoRouteError), also with {shown}")
            return
        what = f"to({case.label}, {other.name!r}, {shown})"
        y = self.kit.call(what, lambda: to(case.x, other.name, **options))
        self.owned(y, other, what)
        info = other.describe(y)
        if info.dtype != case.dtype:
            self.fail(f"{what} has dtype {info.dtype}, not {case.dtype}")
        if info.flags & case.form.flags:
            self.fail(f"{what} still carries {sorted(info.flags & case.form.flags)}")
        want = case.data
        if case.form.rows:
            width = max((len(r) for r in want), default=0)
            fill = options.get("fill_value", 0)
            zero = type(want[0][0])(fill) if want and want[0] else fill
            want = [r + [zero] * (width - len(r)) for r in want]
        got = self.kit.values(y, case.dtype)
        if got is not None and got != want:
            self.fail(f"{what} holds {got}, expected {want}")
        self.kit.ok(f"{tag}: refused (NoRouteError); with {shown}: the dense values")


def _first(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
