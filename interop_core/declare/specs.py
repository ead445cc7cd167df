"""Immutable specs that plugins declare, and the descriptions the core derives from objects.

Plugins return :class:`FrameworkSpec` and :class:`ConverterSpec` (frozen dataclasses) from
their hooks; the registry stamps each with the plugin that gave it (``dataclasses.replace``),
validates it and builds the route graph from them. :class:`TensorInfo` describes one array;
:class:`PlanKey` is the part of it that converter predicates may read and that keys the plan
cache. Those two are NamedTuples: immutable, hashable, cheap to create
and to import.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

#: Canonical dtype names shared by every plugin (framework dtypes map onto these).
DTYPES = (
    "bool",
    "int8", "int16", "int32", "int64",
    "uint8", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64",
    "complex64", "complex128",
    "float8_e4m3fn", "float8_e5m2",
)  # fmt: skip

#: Bytes per element of each canonical dtype.
ITEMSIZE = {
    "bool": 1, "int8": 1, "uint8": 1, "float8_e4m3fn": 1, "float8_e5m2": 1,
    "int16": 2, "uint16": 2, "float16": 2, "bfloat16": 2,
    "int32": 4, "uint32": 4, "float32": 4,
    "int64": 8, "uint64": 8, "float64": 8, "complex64": 8,
    "complex128": 16,
}  # fmt: skip

#: Address alignment (bytes) that zero-copy consumers such as JAX on CPU require.
ALIGNMENT = 64

#: Estimated cost (µs) of a device move: it copies every byte across a bus, so it costs more
#: than any zero-copy route and, among routes with as many copies, the one that stays wins.
MOVE_COST = 50.0

#: The kinds of object the graph routes: arrays (FrameworkSpec); functions, iterators of
#: batches and data pipelines (KindSpec). Plugins may declare others.
ARRAY = "array"
FUNCTION = "function"
ITERATOR = "iterator"
PIPELINE = "pipeline"

#: In place of a framework name: an edge from or to any framework, or a kind whose objects
#: belong to none (an iterator: each item says). Only kinds other than arrays use it.
ANY = "*"


@dataclass(frozen=True)
class Device:
    """Where an array lives: a kind ("cpu", "cuda", ...) and an index."""

    kind: str = "cpu"
    index: int = 0

    #: How a device is written, for messages.
    SPELLINGS = "'cpu', 'cpu:N', 'cuda', 'cuda:N'"

    @classmethod
    def parse(cls, spec: str) -> Device:
        """Parse "cpu", "cpu:2", "cuda", "cuda:1": a kind of letters, then ":" and an index
        (case-insensitive; "gpu", as JAX says it, is "cuda"). "cpu" is "cpu:0"."""
        kind, colon, index = spec.strip().lower().partition(":")
        if not (kind.isascii() and kind.isalpha()) or (
            colon and not (index.isascii() and index.isdigit())
        ):
            raise ValueError(f"{spec!r} is not a device; write one of {cls.SPELLINGS}")
        return cls("cuda" if kind == "gpu" else kind, int(index) if index else 0)

    def __str__(self) -> str:
        # The host's first device is plain "cpu"; other host devices keep their index
        # (JAX can have several: --xla_force_host_platform_device_count).
        if self.kind == "cpu" and not self.index:
            return "cpu"
        return f"{self.kind}:{self.index}"


CPU = Device()


def device_kind(device: str) -> str:
    """The kind of a device string: "cuda" for "cuda:1"."""
    return device.partition(":")[0]


def c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """Row-major strides of ``shape`` in bytes (size-0 dims count as 1, as numpy does)."""
    strides, acc = [], itemsize
    for n in reversed(shape):
        strides.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(strides))


def classify_layout(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> str:
    """Layout class of a strided array; strides in bytes. Size-1 and empty dims never count."""
    if any(n == 0 for n in shape):
        return "C"
    dims = [(n, s) for n, s in zip(shape, strides, strict=True) if n != 1]
    if any(s < 0 for _, s in dims):
        return "negative"
    if any(s == 0 for _, s in dims):
        return "broadcast"
    expected = itemsize
    for n, s in reversed(dims):
        if s != expected:
            break
        expected *= n
    else:
        return "C"
    expected = itemsize
    for n, s in dims:
        if s != expected:
            return "strided"
        expected *= n
    return "F"


class PlanKey(NamedTuple):
    """What a converter predicate may read about the array at one node of a route.

    The plan cache is keyed by exactly these fields (plus the target and options), so a
    predicate that reads only them keeps the cache faithful.
    """

    framework: str
    #: The device with its index, as ``str(Device)``: "cpu", "cuda:1".
    device: str
    dtype: str
    layout: str
    readonly: bool
    aligned: bool
    flags: frozenset[str] = frozenset()
    copy: bool | None = None
    #: What the object is: "array", "function", ... Array traits (dtype, layout, readonly,
    #: aligned) are read only on array nodes.
    kind: str = ARRAY


class TensorInfo(NamedTuple):
    """A description of one array, made without converting it."""

    framework: str
    dtype: str
    device: Device
    shape: tuple[int, ...]
    layout: str
    readonly: bool
    aligned: bool
    flags: frozenset[str] = frozenset()

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return ITEMSIZE.get(self.dtype, 0)

    @property
    def nbytes(self) -> int:
        """Bytes the elements occupy (a broadcast view counts its logical size)."""
        n = self.itemsize
        for d in self.shape:
            n *= d
        return n

    def plan_key(self, copy: bool | None = None) -> PlanKey:
        """The fields a predicate may read, with the user's copy request."""
        return PlanKey(
            self.framework,
            str(self.device),
            self.dtype,
            self.layout,
            self.readonly,
            self.aligned,
            self.flags,
            copy,
        )


def _plain_arrays() -> Callable[[PlanKey], str | None]:
    """The default predicate: ``Needs()``, which refuses opaque arrays (sparse, traced, ...)
    and arrays requiring grad, so a converter must opt in to those."""
    from .predicates import Needs  # predicates builds on this module

    return Needs()


@dataclass(frozen=True)
class Flag:
    """A flag the objects of a framework may carry (a node trait such as "conj"), and what
    it means for a user: why a converter refuses such an object and how to clear the flag.

    The core knows flags only by name; the framework that sets a flag declares its advice
    (``FrameworkSpec.flags``), and refusals over that flag read it.
    """

    name: str
    #: Why an edge refuses it and what to do, e.g. "the tensor has its conjugate bit set
    #: (call .resolve_conj())".
    advice: str


@dataclass(frozen=True)
class FrameworkSpec:
    """A framework (or an array protocol) a plugin teaches the core about.

    Detection looks only in ``sys.modules``: ``array_types`` are dotted paths resolved
    from already-imported modules, so the core never imports a framework to find out.
    A spec with ``claims`` instead owns objects of any type that pass that check (an
    array protocol such as ``__dlpack__``); those are consulted only when no
    ``array_types`` match, in registration order.
    """

    name: str
    #: Dotted paths of the array types, e.g. ("torch.Tensor",); resolved lazily.
    array_types: tuple[str, ...]
    #: Full description of an array of this framework (slow path, explain, tests).
    describe: Callable[[Any], TensorInfo]
    #: Cheap hashable that determines every PlanKey field except ``aligned`` (and ``copy``,
    #: which the request gives), the device index included (warm path).
    key: Callable[[Any], Hashable]
    #: Address of the first element (memory-sharing checks, doctor).
    data_ptr: Callable[[Any], int]
    #: Canonical dtype names this framework can hold.
    dtypes: frozenset[str]
    #: Build an example array from a nested list and a canonical dtype (doctor, the
    #: conformance kit); None for source-only protocols.
    example: Callable[[Any, str], Any] | None = None
    aliases: tuple[str, ...] = ()
    #: Distribution name for version lookup and the install hint.
    distribution: str = ""
    install_hint: str = ""
    #: ``key`` plus whether the data is 64-byte aligned; None when arrays always are. Used
    #: only for requests whose route depends on alignment (reading it costs ~0.1-1 µs).
    aligned_key: Callable[[Any], Hashable] | None = None
    #: Devices visible to the framework, as strings ("cpu", "cuda:0"); imports it. The
    #: router asks once per registry build, and only for devices other than "cpu" (cpu:0).
    devices: Callable[[], list[str]] | None = None
    #: Device kinds its arrays can live on, the default first: with ``device=None`` an array
    #: from a kind not listed lands on the first kind's device 0 (a CUDA tensor to numpy:
    #: "cpu"; a numpy array to CuPy: "cuda:0"). Empty: the array keeps its device.
    device_kinds: tuple[str, ...] = ()
    #: The framework's own device objects or strings (a torch.device, "/device:GPU:0") as a
    #: Device; None when ``device=`` is not one of them.
    parse_device: Callable[[Any], Device | None] | None = None
    #: Import name whose presence means "installed" (defaults to the first array type's).
    module: str = ""
    #: Whether ``to()`` may target it (False for source-only protocols and wrappers).
    target: bool = True
    #: Structural detection (array protocols): True when the spec owns ``obj``; the answer
    #: is cached per type. ``protocol`` names what it looks for, for messages.
    claims: Callable[[Any], bool] | None = None
    protocol: str = ""
    #: How users build an array of this framework from Python values (advice in errors).
    constructor: str = ""
    #: For producers that may answer differently each time they are asked (the array
    #: protocols): asks ``obj`` once and returns a stable object holding that answer
    #: (returning it unchanged when it is one already). The router describes, keys and
    #: converts the snapshot, never ``obj`` again, so what was described is exactly what is
    #: converted; the warm path keys by the snapshot's type.
    snapshot: Callable[[Any], Any] | None = None
    plugin: str = field(default="", compare=False)
    #: ``astype(x, dtype)``: a copy of ``x`` cast to canonical ``dtype`` (one of ``dtypes``),
    #: C-contiguous, writable and 64-byte aligned, on ``x``'s device; raises when the
    #: framework cannot make it. Only ``to(..., dtype=)`` calls it; None: no casts here.
    astype: Callable[[Any, str], Any] | None = None
    #: The flags its objects may carry, with their advice (see :class:`Flag`).
    flags: tuple[Flag, ...] = ()

    @property
    def import_name(self) -> str:
        """The top-level module that must be in sys.modules before detection looks ("" for
        protocols, which need no module)."""
        if self.module or not self.array_types:
            return self.module
        return self.array_types[0].partition(".")[0]


@dataclass(frozen=True)
class KindSpec:
    """Objects of a kind other than arrays (functions, ...) that a framework owns.

    Detected like arrays, without importing anything: ``types`` are dotted paths resolved
    from imported modules; ``claims`` is a structural check asked only when no type of any
    spec matches. ``framework`` "" means the object does not say which framework it is
    written for (a plain Python callable): ``to(..., source=...)`` names it.
    """

    kind: str
    framework: str
    types: tuple[str, ...] = ()
    claims: Callable[[Any], bool] | None = None
    #: What these objects are, for messages ("a jax.jit-wrapped function").
    description: str = ""
    #: Flags of the node such objects start from (converter predicates may read them).
    flags: frozenset[str] = frozenset()
    #: The kind these objects are converted into ("" for the same kind): a pipeline
    #: becomes an iterator of the target's batches.
    becomes: str = ""
    #: Whether ``copy=`` applies, to each array the object yields (iterators); for other
    #: kinds it is refused (a function is wrapped, not copied).
    takes_copy: bool = False
    plugin: str = field(default="", compare=False)

    @property
    def import_name(self) -> str:
        """The top-level module of the first type ("" when detected by ``claims`` only)."""
        return self.types[0].partition(".")[0] if self.types else ""


@dataclass(frozen=True)
class KnownFramework:
    """A framework known by name only: no installed plugin converts it yet.

    Naming it as a target raises FrameworkNotInstalledError with ``install_hint`` when it
    is not installed (instead of "unknown framework"); a real FrameworkSpec of the same
    name takes precedence.
    """

    name: str
    install_hint: str
    aliases: tuple[str, ...] = ()
    #: Import name whose presence means "installed" (defaults to ``name``).
    module: str = ""
    plugin: str = field(default="", compare=False)


@dataclass(frozen=True)
class ConverterSpec:
    """One edge of the route graph: turns an array of ``source`` into one of ``target``.

    ``source == target`` declares an in-framework copy (or layout change). Edges of kinds
    other than arrays may name ``ANY`` ("*") as source (from every framework's node of
    their kind) or target (to the framework the request targets).
    """

    name: str
    source: str
    target: str
    #: Returns the conversion function; called when a plan is built, so it is the place
    #: to import the framework. The function takes the array (device moves: array, Device).
    load: Callable[[], Callable[..., Any]]
    #: True when the result shares the input's memory (data pointers equal).
    zero_copy: bool
    #: Returns None to accept, or the reason it refuses this PlanKey (default ``Needs()``:
    #: any dense array without opaque flags or requires_grad).
    accepts: Callable[[PlanKey], str | None] = field(default_factory=_plain_arrays)
    #: Estimated warm cost in µs: the tie-breaker among routes with equal copies and hops.
    cost: float = 1.0
    #: Device kinds the edge works on (and keeps).
    devices: frozenset[str] = frozenset({"cpu"})
    #: For a device move: the device kind it moves to (the index comes from the request).
    #: Its function is called as ``func(x, device=Device)``.
    to_device: str | None = None
    #: Result is read-only (True), writable (False), or like the input (None).
    readonly_result: bool | None = None
    #: Result is 64-byte aligned (True) or not guaranteed (False); None: like the input for
    #: a zero-copy edge, aligned for a copy (say False when your copy may not be).
    aligned_result: bool | None = None
    #: Flags of the input the result keeps (all others are cleared).
    keeps_flags: frozenset[str] = frozenset()
    #: Flags the result gets (a bridged function that calls back into Python on the host:
    #: "host_callback"), so later edges can refuse it.
    adds_flags: frozenset[str] = frozenset()
    #: Shown by explain() whenever the step is taken (e.g. aliasing an immutable buffer).
    note: str = ""
    #: The note is about the memory the step's result shares (an alias, a read-only view):
    #: a copy later in the route makes it moot, and ``Route.notes`` then leaves it out.
    memory_note: bool = False
    #: The kind of object the edge converts.
    kind: str = ARRAY
    #: The kind of its result, when it differs ("" for the same): a pipeline edge's
    #: result is an "iterator".
    result_kind: str = ""
    #: Options of ``to()`` the converter takes; the user's values reach it in its context.
    options: tuple[str, ...] = ()
    #: The function is called as ``func(obj, ctx)`` with a :class:`~.context.CallContext`
    #: (device, the options it declared, a ``to()`` bound to the same registry snapshot).
    context: bool = False
    #: After this step fails, may the router re-plan and hand the same input to another
    #: route? False for inputs a failed attempt may have used up (iterators) or that must
    #: never run twice (callables): the failure is raised as it is.
    rerun: bool = True
    #: The name of an option (one of ``options``) the user must pass, truthy, for the
    #: planner to take this edge at all: for routes with process-wide side effects.
    opt_in: str = ""
    plugin: str = field(default="", compare=False)

    @property
    def edge(self) -> str:
        """ "source->target" for messages."""
        return f"{self.source}->{self.target}"
