"""``dtype=``: the only cast ``to()`` ever makes, and only when it is asked for.

``to(x, "jax", dtype={"int64": "int32"})`` casts each array leaf whose dtype the mapping
names (``dtype="int32"``: every array leaf) as a step of its own, before the route: in the
source framework when it holds the wanted dtype (so an int64 tensor becomes int32 before
JAX sees it), else in the target after the route. The route itself is planned as for an
array of the cast dtype, so the planner knows nothing of casts; ``explain()`` shows the
step ("cast int64 -> int32") and counts it in ``Route.copies``. A cast copies, so it is a
CopyRequiredError under ``copy=False``. Iterators hand ``dtype=`` to each batch's ``to()``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..declare.errors import (
    CopyRequiredError,
    NoRouteError,
    OptionError,
    RefusedEdge,
    framework_failures,
)
from ..declare.records import NamedTuple
from ..declare.specs import DTYPES, FrameworkSpec, TensorInfo
from .routes import Route, Step

_EXAMPLES = (
    "a dtype name such as 'int32', a dtype object of an installed framework, a mapping "
    "from source to target dtype such as {'int64': 'int32'}, or 'canonical' for the dtypes "
    "the target itself makes of each (what its own asarray gives)"
)
#: Names that mean one dtype in every framework; "float" and "int" do not (one framework's
#: float is float64, another's float32), so they are refused with the names to use instead.
_ALIASES = {"half": "float16", "double": "float64", "bool_": "bool"}
_AMBIGUOUS = {
    "float": "'float32' or 'float64'", "int": "'int32' or 'int64'",
    "complex": "'complex64' or 'complex128'", "uint": "'uint32' or 'uint64'",
}  # fmt: skip
#: Reads a framework's dtype objects and module-qualified names
#: (``FrameworkSpec.casting.read_dtype``).
DtypeReader = Callable[[Any], str | None]


#: ``dtype=`` by name of a policy rather than a dtype: each array becomes what the target
#: itself makes of its dtype (``Casting.canonical``: JAX's 32-bit kinds while x64 is off).
CANONICAL = "canonical"


class Cast:
    """What ``dtype=`` asks for: one dtype for every array, a mapping from the dtypes to
    cast (canonical names) to the dtypes they become, or the target's own dtypes
    (``dtype="canonical"``: ``canonical`` is the target's ``Casting.canonical``)."""

    __slots__ = ("canonical", "mapping", "to")

    def __init__(
        self,
        to: str = "",
        mapping: Mapping[str, str] | None = None,
        canonical: Callable[[str], str | None] | None = None,
    ) -> None:
        #: The dtype of every array ("" when ``mapping`` or ``canonical`` says).
        self.to = to
        self.mapping = dict(mapping or {})
        #: ``dtype="canonical"``: the target's answer for each dtype, asked each time.
        self.canonical = canonical

    def wanted(self, dtype: str) -> str | None:
        """The dtype an array of ``dtype`` is cast to; None when it is not cast."""
        if self.canonical is not None:
            found = self.canonical(dtype)
        else:
            found = self.to or self.mapping.get(dtype)
        return None if found is None or found == dtype else found

    def __repr__(self) -> str:
        if self.canonical is not None:
            return f"dtype={CANONICAL!r}"
        return f"dtype={self.to!r}" if self.to else f"dtype={self.mapping!r}"


def _keeps(dtype: str) -> None:
    """The canonical policy of a target that keeps every dtype it holds."""
    return None


def parse_dtype(
    value: Any, frameworks: Iterable[FrameworkSpec] = (), target: FrameworkSpec | None = None
) -> Cast:
    """``dtype=`` as a :class:`Cast`; an OptionError naming close names when it is not one.

    ``frameworks`` read their own dtype objects and names ("torch.int32"): pass every
    registered spec; without them only canonical names are understood. ``target``: the
    framework converted to, whose own dtypes ``dtype="canonical"`` asks for."""
    if isinstance(value, Cast):
        return value
    if isinstance(value, str) and value.strip().lower() == CANONICAL:
        if target is None:
            raise OptionError(
                "dtype='canonical' asks for the target framework's own dtypes, and this call "
                "names no target framework. Pass a dtype or a mapping instead."
            )
        return Cast(canonical=target.casting.canonical or _keeps)
    readers = [s.casting.read_dtype for s in frameworks if s.casting.read_dtype is not None]
    if isinstance(value, Mapping):
        mapping: dict[str, str] = {}
        for key, to in value.items():
            src = dtype_name(key, "a key of dtype=", readers)
            dst = dtype_name(to, f"dtype=[{key!r}]", readers)
            if mapping.get(src, dst) != dst:
                raise OptionError(
                    f"dtype= maps {src} twice, to {mapping[src]} and to {dst} ({key!r} names "
                    f"{src} too). Give each source dtype once."
                )
            mapping[src] = dst
        return Cast(mapping=mapping)
    return Cast(to=dtype_name(value, "dtype=", readers))


def dtype_name(value: Any, where: str = "dtype=", readers: Iterable[DtypeReader] = ()) -> str:
    """The canonical name (``specs.DTYPES``) of a dtype name or of a framework's dtype
    object, which one of ``readers`` (``FrameworkSpec.casting.read_dtype``) knows."""
    if isinstance(value, type) and value in (int, float, complex):
        raise OptionError(
            f"{where} {value.__name__} names no width: pass "
            f"{_AMBIGUOUS[value.__name__]} (frameworks disagree on what {value.__name__} is)."
        )
    name = _name_of(value, readers)
    if name is None:
        raise OptionError(f"{where} {value!r} is not a dtype.\nPass {_EXAMPLES}.")
    if name in DTYPES:
        return name
    if name in _AMBIGUOUS:
        raise OptionError(
            f"Unknown dtype {value!r} in {where}: pass {_AMBIGUOUS[name]} (frameworks "
            f"disagree on what {name!r} is)."
        )
    import difflib  # only for this message: it costs ~2 ms at import

    close = difflib.get_close_matches(name, DTYPES, n=3, cutoff=0.6)
    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    raise OptionError(
        f"Unknown dtype {value!r} in {where}.{hint}\nKnown dtypes: {', '.join(DTYPES)}."
    )


def _name_of(value: Any, readers: Iterable[DtypeReader]) -> str | None:
    """A lower-case dtype name for ``value``, or None when it is no dtype at all. The
    frameworks' readers look only at modules already imported: a dtype object implies its
    framework is."""
    if isinstance(value, str):
        name = value.strip().lower()
        for read in readers:  # "torch.int32" written as a string
            found = read(name)
            if found is not None:
                name = found
                break
        return _ALIASES.get(name, name)
    if value is bool:
        return "bool"
    for read in readers:
        found = read(value)
        if found is not None:
            return found
    return None


class CastStep(NamedTuple):
    """The cast one array gets: in framework ``spec``, from dtype ``source`` to ``target``,
    before the route (``before``) or after it (in the target)."""

    spec: FrameworkSpec
    source: str
    target: str
    before: bool

    @property
    def name(self) -> str:
        """The step's name in explain()."""
        return f"cast {self.source} -> {self.target}"

    def run(self, obj: Any) -> Any:
        """Cast ``obj``; a framework's failure is a ConversionError saying what was asked."""
        assert self.spec.casting.astype is not None, "plan_cast picks only frameworks that cast"
        what = f"{self.spec.name} could not cast {self.source} to {self.target}"
        with framework_failures(f"{what} (dtype=, plugin {self.spec.plugin!r})"):
            return self.spec.casting.astype(obj, self.target)


def plan_cast(
    info: TensorInfo, source: FrameworkSpec, target: FrameworkSpec, copy: bool | None,
    cast: Cast,
) -> CastStep | None:  # fmt: skip
    """The cast ``cast`` asks of the array ``info`` describes on its way from ``source`` to
    ``target``, or None when its dtype is not to change; raises when it cannot be made."""
    wanted = cast.wanted(info.dtype)
    if wanted is None:
        return None
    what = f"a {info.framework} {info.dtype} array to {target.name}"
    if info.dtype.startswith("complex") and not wanted.startswith("complex"):
        raise OptionError(
            f"dtype= asks to cast {what} as {wanted}, which would drop the imaginary part. "
            "Take .real (or abs()) of it first, or map it to a complex dtype."
        )
    if wanted not in target.dtypes:
        raise NoRouteError(
            f"from {info.framework} {info.dtype} to {target.name} {wanted}",
            [
                RefusedEdge(
                    "(dtype check)",
                    target.plugin,
                    f"*->{target.name}",
                    f"{target.name} has no dtype {wanted}",
                )
            ],
            f"dtype= asks for {wanted}; pick one {target.name} holds: "
            f"{', '.join(d for d in DTYPES if d in target.dtypes)}.",
        )
    if source.casting.astype is not None and wanted in source.dtypes:
        step = CastStep(source, info.dtype, wanted, True)
    elif target.casting.astype is not None:
        step = CastStep(target, info.dtype, wanted, False)
    else:
        raise NoRouteError(
            f"from {info.framework} {info.dtype} to {target.name} {wanted}",
            [
                RefusedEdge(
                    "(cast)",
                    target.plugin,
                    f"{source.name}->{target.name}",
                    f"neither {source.name} nor {target.name} can cast arrays "
                    "(no FrameworkSpec.casting.astype)",
                )
            ],
            "Cast it yourself, or convert it first to a framework that can cast (its "
            "plugin declares FrameworkSpec.casting.astype) and pass dtype= then.",
        )
    if copy is False:
        where = step.spec.name
        raise CopyRequiredError(
            f"{what} as {wanted} (dtype=)",
            [
                RefusedEdge(
                    step.name,
                    step.spec.plugin,
                    f"{where}->{where}",
                    f"a cast to {wanted} makes a new array",
                )
            ],
        )
    return step


def convert_cast(
    info: TensorInfo, obj: Any, source: FrameworkSpec, target: FrameworkSpec,
    copy: bool | None, cast: Cast, then: Callable[[Any, bool | None], Any],
) -> Any:  # fmt: skip
    """``to()`` of the array ``obj`` (described by ``info``) with ``dtype=``:
    ``then(x, copy)`` converts ``x`` to the target. After a cast the route need not copy
    again (the cast made a new array), so it is asked with ``copy=None``."""
    step = plan_cast(info, source, target, copy, cast)
    if step is None:
        return then(obj, copy)
    if step.before:
        return then(step.run(obj), None)
    return step.run(then(obj, None))


def explain_cast(
    info: TensorInfo, source: FrameworkSpec, target: FrameworkSpec, copy: bool | None,
    cast: Cast, route: Callable[[TensorInfo, bool | None], Route],
) -> Route:  # fmt: skip
    """The Route of ``to(..., dtype=)`` for the array ``info`` describes: ``route(info,
    copy)`` finds the route for an array so described, and the cast is a step of its own."""
    step = plan_cast(info, source, target, copy, cast)
    if step is None:
        return route(info, copy)
    after = info._replace(dtype=step.target)
    if step.before:  # the cast's result: a new C-contiguous, writable, aligned array
        rest = route(after._replace(layout="C", readonly=False, aligned=True), None)
        node = rest.source
    else:
        rest = route(info, None)
        node = rest.target
    cast_step = Step(step.name, step.spec.plugin, node, node, zero_copy=False)
    where = "before the conversion" if step.before else f"after the conversion to {target.name}"
    why = (
        f"dtype='canonical' casts {step.source} to {step.target}, what {target.name} itself "
        f"makes of {step.source} now (as its own asarray would), in {step.spec.name}, {where}"
        if cast.canonical is not None
        else f"dtype= casts {step.source} to {step.target} in {step.spec.name}, {where}"
    )
    return rest._replace(
        steps=(cast_step, *rest.steps) if step.before else (*rest.steps, cast_step),
        copies=rest.copies + 1,
        bytes_copied=rest.bytes_copied + after.nbytes,
        notes=(*rest.notes, why),
    )
