"""Immutable specs that plugins declare, and the descriptions the core derives from objects.

Plugins return :class:`FrameworkSpec` and :class:`ConverterSpec` (frozen dataclasses) from
their hooks; the registry stamps each with the plugin that gave it (``dataclasses.replace``),
validates it and builds the route graph from them. :class:`TensorInfo` describes one array;
:class:`PlanKey` is the part of it that converter predicates may read and that keys the plan
cache. Those two are NamedTuples: immutable, hashable, cheap to create
and to import.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from .errors import PluginError
from .records import NamedTuple, record

if TYPE_CHECKING:  # predicates builds on this module
    from .predicates import GlobalFlag

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


@record
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


#: The host: ``Device("cpu", 0)``.
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


class ArrayTraits(NamedTuple):
    """The traits of an array node: what converter predicates read besides framework,
    device and flags."""

    #: The canonical dtype name (one of ``DTYPES``).
    dtype: str
    #: Layout class: "C", "F", "strided", "negative" or "broadcast" (see classify_layout).
    layout: str
    #: Its owner marks the memory read-only.
    readonly: bool
    #: The data is 64-byte aligned.
    aligned: bool


class PlanKey(NamedTuple):
    """A node of the route graph: what a converter predicate may read about the object at
    one step of a route.

    The plan cache is keyed by exactly these fields (plus the target and options), so a
    predicate that reads only them keeps the cache faithful. ``traits`` is the record its
    kind declares (``Kind.traits``: :class:`~interop_core.plugin.ArrayTraits` for arrays),
    None for a kind that declares none (functions); ``dtype``, ``layout``, ``readonly`` and
    ``aligned`` read an array's.
    """

    #: The kind of object ("array", "function", ...).
    kind: str
    #: The framework that owns it at this step (``ANY`` for an object of none).
    framework: str
    #: The device with its index, as ``str(Device)``: "cpu", "cuda:1"; "" for an object
    #: bound to no device.
    device: str
    #: What its kind declares (see above); None for a kind without traits.
    traits: Any
    #: The flags it carries ("sparse", "requires_grad", ...), which edges may refuse.
    flags: frozenset[str] = frozenset()
    #: The request's ``copy=`` (None, False or True).
    copy: bool | None = None

    @property
    def dtype(self) -> str:
        """The array's dtype (``traits.dtype``)."""
        return self.traits.dtype  # type: ignore[no-any-return]

    @property
    def layout(self) -> str:
        """The array's layout class (``traits.layout``)."""
        return self.traits.layout  # type: ignore[no-any-return]

    @property
    def readonly(self) -> bool:
        """Whether the array's memory is marked read-only (``traits.readonly``)."""
        return self.traits.readonly  # type: ignore[no-any-return]

    @property
    def aligned(self) -> bool:
        """Whether the array's data is 64-byte aligned (``traits.aligned``)."""
        return self.traits.aligned  # type: ignore[no-any-return]


class TensorInfo(NamedTuple):
    """A description of one array, made without converting it."""

    #: The framework that owns it.
    framework: str
    #: The canonical dtype name (one of ``DTYPES``).
    dtype: str
    #: Where it lives.
    device: Device
    shape: tuple[int, ...]
    #: Layout class: "C", "F", "strided", "negative" or "broadcast".
    layout: str
    #: Its owner marks the memory read-only.
    readonly: bool
    #: The data is 64-byte aligned.
    aligned: bool
    #: The flags it carries ("sparse", "requires_grad", ...).
    flags: frozenset[str] = frozenset()
    #: Bytes its buffers hold where the shape does not say (a sparse array: its values and
    #: indices, not the dense size); -1: the shape times the item size.
    stored: int = -1

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return ITEMSIZE.get(self.dtype, 0)

    @property
    def nbytes(self) -> int:
        """Bytes the elements occupy (a broadcast view counts its logical size), or what a
        sparse array's buffers hold (``stored``)."""
        if self.stored >= 0:
            return self.stored
        n = self.itemsize
        for d in self.shape:
            n *= d
        return n

    @property
    def traits(self) -> ArrayTraits:
        """What a predicate may read of the array besides framework, device and flags."""
        return ArrayTraits(self.dtype, self.layout, self.readonly, self.aligned)

    def plan_key(self, copy: bool | None = None) -> PlanKey:
        """The node the array starts from, with the user's copy request."""
        return PlanKey(ARRAY, self.framework, str(self.device), self.traits, self.flags, copy)


def _plain_arrays() -> Callable[[PlanKey], str | None]:
    """The default predicate: ``Needs()``, which refuses opaque arrays (sparse, traced, ...)
    and arrays requiring grad, so a converter must opt in to those."""
    from .predicates import Needs  # predicates builds on this module

    return Needs()


@record
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
    #: No route may look inside an object carrying it (a masked array's values without its
    #: mask would be wrong, a conjugate view's memory holds the unconjugated values): the
    #: planner keeps every edge off it but those that name it or a form setting it
    #: (``ConverterSpec.forms``).
    opaque: bool = False


@record
class OrdinaryArrays:
    """Arrays of a framework made the way user code makes them, a row of the doctor's matrix
    beside the framework's own (64-byte aligned) example: what users get may differ from it.

    ``label`` equal to the framework's name replaces its row (the example then gets the row
    "<name>, 64-byte aligned"); any other label is a row of its own.
    """

    label: str
    #: What the row holds, for the report; "{sizes}" becomes the sizes measured.
    what: str
    #: The arrays for the given sizes in bytes (1-d float32; builds them, importing the
    #: framework).
    build: Callable[[tuple[int, ...]], list[Any]]
    #: Frameworks besides this one that must be installed for ``build``.
    needs: tuple[str, ...] = ()
    #: The note printed when these arrays are copied into some framework only because they
    #: are not 64-byte aligned: "{seen}" says how many of them were, "{also}" the rows built
    #: over them (their ``what``), "{targets}" where they are copied.
    note: str = ""


@record
class Form:
    """Examples of one form of a framework's objects that the conformance kit
    (``interop_core.testing.check_framework``) builds beside ``FrameworkSpec.example`` and
    checks: arrays carrying flags (a sparse layout, ragged rows), 1-d arrays (a pandas
    Series), or files a snapshot opens (a safetensors file: each entry is checked as an
    array). The doctor never builds them.

    Without ``flags`` the kit runs its dense checks on ``build``'s arrays of ``shapes``. With
    ``flags`` it checks that describe() carries them, the key, round trips with every
    framework that has a route for the form (compared through ``read``), memory sharing
    where explain() claims it (through ``buffers``), and that frameworks without a route
    refuse unless ``dense`` options are given.
    """

    #: What it is, for messages: "sparse coo", "ragged", "1-d Series".
    name: str
    #: ``build(values, dtype)``: an example holding nested Python ``values`` as canonical
    #: ``dtype``. They are a dense array of a shape of ``shapes`` (a sparse form stores its
    #: non-zeros), or with ``rows`` a list of rows of different lengths.
    build: Callable[[Any, str], Any]
    #: Flags describe() gives every example (and how a converted result's form is found:
    #: the form of its framework whose flags it carries).
    flags: frozenset[str] = frozenset()
    #: The shapes of the two examples the kit builds per dtype (their key must be one);
    #: with ``rows``, the lengths of their rows.
    shapes: tuple[tuple[int, ...], tuple[int, ...]] = ((2, 3), (3, 2))
    #: The values are rows of different lengths (ragged); describe()'s shape is the
    #: values' (all rows one after another).
    rows: bool = False
    #: ``read(x)``: what a flagged ``x`` holds, as arrays the kit reads through a standard
    #: protocol or ``tolist()`` (numpy arrays do): the dense array; with ``rows``, the
    #: values and the row splits.
    read: Callable[[Any], tuple[Any, ...]] | None = None
    #: ``buffers(x)``: the framework's own arrays a flagged ``x`` is made of, values first
    #: (the kit reads their memory with its own reader to check zero-copy claims).
    buffers: Callable[[Any], tuple[Any, ...]] | None = None
    #: The options of ``to()`` that make a dense array of a flagged example (``(("densify",
    #: True),)``); a target with no route for the form must refuse without them.
    dense: tuple[tuple[str, Any], ...] = ()
    #: The dtypes of flagged examples (a few: every pair of frameworks is converted).
    dtypes: tuple[str, ...] = ("float32", "int32")


@record
class FormSpec:
    """A form of one framework's arrays (a masked array, a sparse layout, ragged rows),
    declared by a plugin of its own through ``interop_forms()``.

    An object whose type is one of ``types`` is an array of ``framework``: the core
    describes and keys it as the framework does (its functions work on the object itself,
    as for numpy's masked arrays, a subclass of ndarray) and adds the form's flags, unless
    the form gives functions of its own. A form no route may look inside declares its
    flags opaque (``Flag.opaque``): they keep every edge that does not name the form
    (``ConverterSpec.forms``) off its objects, and refusals give the flags' advice. The
    form's converters are declared by ``interop_converters`` as any others.
    """

    #: What it is, for messages and ``ConverterSpec.forms``: "masked".
    name: str
    #: The framework whose arrays these are (a declared FrameworkSpec's name).
    framework: str
    #: Dotted paths of the types of its objects, resolved from imported modules only (as
    #: ``FrameworkSpec.array_types``); checked before the framework's own types.
    types: tuple[str, ...]
    #: The flags its objects may carry, with their advice (why an edge refuses such an
    #: object and what the user can do); an opaque one keeps every edge that does not name
    #: the form off its objects. Without a ``describe`` of its own, every object of the
    #: form carries them all.
    flags: tuple[Flag, ...]
    #: Its own description (which sets the flags of each object), key, aligned key, data
    #: address and cast (``to(..., dtype=)``: see ``FrameworkSpec.casting.astype``); None: the
    #: framework's, applied to the object, with the form's flags added to the description.
    describe: Callable[[Any], TensorInfo] | None = None
    key: Callable[[Any], Hashable] | None = None
    aligned_key: Callable[[Any], Hashable] | None = None
    data_ptr: Callable[[Any], int] | None = None
    astype: Callable[[Any, str], Any] | None = None
    #: For a form whose objects are of the framework's own types (torch's sparse layouts
    #: are torch.Tensors): which objects of ``types`` are of the form. Asked when an object
    #: is described, and on the warm path only when the framework's ``key`` raises, as it
    #: must on the form's objects (it keys only what it describes): the core then keys
    #: them with the form's ``key`` (required), tagged with the form's name. None: every
    #: object of ``types`` is of the form.
    test: Callable[[Any], bool] | None = None
    #: Examples for the conformance kit (:class:`Form`, with the form's flags): the kit
    #: checks them with the framework's (``FrameworkSpec.diagnostics.forms``).
    examples: tuple[Form, ...] = ()
    plugin: str = field(default="", compare=False)

    @property
    def flag_names(self) -> frozenset[str]:
        """The names of its flags."""
        return frozenset(f.name for f in self.flags)


class AlignedAllocator(Protocol):
    """What :attr:`Allocator.load` returns: a switch for a framework's allocations."""

    def available(self) -> str | None:
        """None when it can be used here, else why not (one sentence)."""

    def switch(self, on: bool) -> Any:
        """Allocate 64-byte aligned memory (``on``) or as by default, in the current
        thread's context; returns what it replaced, for :meth:`restore`."""

    def restore(self, token: Any) -> None:
        """Put back what the :meth:`switch` returning ``token`` replaced."""

    def active(self) -> bool:
        """Whether allocations in the current context are aligned by it."""


@record
class Allocator:
    """A framework's opt-in allocator of 64-byte aligned host memory, which
    ``interop_core.aligned_memory()`` switches on: arrays the framework allocates then
    reach frameworks that import only aligned buffers (JAX, TensorFlow) zero-copy."""

    #: Imports and returns the switch (:class:`AlignedAllocator`); called when first used.
    load: Callable[[], AlignedAllocator]
    #: What a switch reaches, in a sentence (threads, tasks), for the docs and doctor.
    scope: str = ""


@record
class Package:
    """How a framework is installed and found: for install hints, the doctor and detection
    (a framework is installed when its import name can be imported)."""

    #: Import name whose presence means "installed" (default: the first array type's).
    module: str = ""
    #: Distribution name for version lookup and the install hint.
    distribution: str = ""
    #: What to run to install it (default ``pip install <distribution or name>``).
    install_hint: str = ""

    def __post_init__(self) -> None:
        _check_fields(self, str, ("module", "distribution", "install_hint"))


@record
class Detection:
    """Detection by structure, for array protocols: the spec owns objects of any type for
    which ``claims`` is true. Such specs are asked only when no ``array_types`` match, in
    registration order; the answer is cached per type."""

    #: True when the spec owns ``obj``; None: detection by ``array_types`` only.
    claims: Callable[[Any], bool] | None = None
    #: What it looks for ("__dlpack__ with __dlpack_device__"), for messages.
    protocol: str = ""
    #: Advice for an object it does not claim but a user may have meant for it (a ``str``
    #: where a ``pathlib.Path`` opens a file): a sentence, or None. Asked only when nothing
    #: converts the object, for the error's message.
    hint: Callable[[Any], str | None] | None = None

    def __post_init__(self) -> None:
        _check_callables(self, ("claims", "hint"))
        _check_fields(self, str, ("protocol",))


@record
class ImportRules:
    """What memory must be for the framework to take it, checked by the planner on every
    array edge into it from another framework, beside the edge's own ``accepts``: an edge
    written without the rules cannot hand the framework memory that crashes it."""

    #: A predicate like ``ConverterSpec.accepts``, usually a ``Needs`` (declare
    #: ``no_flags=frozenset()``: flags are each edge's business), checked on zero-copy edges
    #: (JAX and TensorFlow: C-contiguous and 64-byte aligned; torch: no negative strides,
    #: not read-only). None: whatever an edge accepts.
    imports: Callable[[PlanKey], str | None] | None = None
    #: Process-wide switches that must be on for some dtypes on every edge into it, copying
    #: or not (JAX's ``jax_enable_x64``; see ``GlobalFlag``). Routes of other dtypes never
    #: read them.
    switches: tuple[GlobalFlag, ...] = ()

    def __post_init__(self) -> None:
        _check_callables(self, ("imports",))
        _check_fields(self, tuple, ("switches",))


@record
class Devices:
    """Where a framework's arrays live and how its host memory may be allocated."""

    #: Devices visible to the framework, as strings ("cpu", "cuda:0"); imports it. The
    #: router asks once per registry build, and only for devices other than "cpu" (cpu:0).
    visible: Callable[[], list[str]] | None = None
    #: Device kinds its arrays can live on, the default first: with ``device=None`` an array
    #: from a kind not listed lands on the first kind's device 0 (a CUDA tensor to numpy:
    #: "cpu"; a numpy array to CuPy: "cuda:0"). Empty: the array keeps its device.
    kinds: tuple[str, ...] = ()
    #: How a user makes more devices visible to it, for errors about a device no framework
    #: sees ("" for nothing to say).
    advice: str = ""
    #: An opt-in allocator of 64-byte aligned memory for the arrays it allocates
    #: (:func:`interop_core.aligned_memory`); None: the framework has none.
    allocator: Allocator | None = None

    def __post_init__(self) -> None:
        _check_callables(self, ("visible",))
        _check_fields(self, tuple, ("kinds",))
        _check_fields(self, str, ("advice",))
        if self.allocator is not None and not isinstance(self.allocator, Allocator):
            raise PluginError(f"Devices.allocator is an Allocator, not {self.allocator!r}")


@record
class Casting:
    """What ``to(..., dtype=)`` needs of a framework; only that option reads it."""

    #: ``astype(x, dtype)``: a copy of ``x`` cast to canonical ``dtype`` (one of the spec's
    #: ``dtypes``), C-contiguous, writable and 64-byte aligned, on ``x``'s device; raises
    #: when the framework cannot make it. None: no casts here.
    astype: Callable[[Any, str], Any] | None = None
    #: The canonical dtype name for one of its dtype objects (``torch.int32``, a
    #: ``numpy.dtype``) or a dtype name written with its module ("torch.int32", lower-case,
    #: stripped); None for anything else. Every framework's is asked; it must import
    #: nothing (a dtype object means its module is imported already).
    read_dtype: Callable[[Any], str | None] | None = None
    #: ``canonical(dtype)``: the dtype the framework itself makes of an array of canonical
    #: ``dtype`` where that is another (JAX while ``jax_enable_x64`` is off: int64 -> int32,
    #: float64 -> float32, as ``jnp.asarray`` does), else None. What ``dtype="canonical"``
    #: casts to, a reported step. Asked on every such call (it may read a switch); it must
    #: import nothing. None: the framework keeps every dtype it holds.
    canonical: Callable[[str], str | None] | None = None

    def __post_init__(self) -> None:
        _check_callables(self, ("astype", "read_dtype", "canonical"))


@record
class FileReader:
    """A kind of file that ``python -m interop_core explain FILE TARGET`` reads the way user
    code would before calling ``to()`` (a Parquet file as a pyarrow Table), declared by the
    plugin of the framework that reads it. A file ``to()`` opens itself (a safetensors file
    from a ``pathlib.Path``) declares ``read=pathlib.Path``: the command line then explains
    the Path."""

    #: Lower-case suffixes, with the dot: (".parquet", ".pq").
    suffixes: tuple[str, ...]
    #: What kind of file it is, for messages: "Parquet".
    kind: str
    #: ``read(path, columns)``: the object to explain (``columns``: the names ``--columns``
    #: picks, or None for all; a reader of files without names raises when given some).
    #: Imports its library when it runs; raises on a file it cannot read.
    read: Callable[[Any, tuple[str, ...] | None], Any]
    #: How it reads, in the words a user would write: "pyarrow.parquet.read_table(path,
    #: memory_map=True)".
    how: str = ""

    def __post_init__(self) -> None:
        _check_fields(self, tuple, ("suffixes",))
        _check_fields(self, str, ("kind", "how"))
        _check_callables(self, ("read",))
        bad = [x for x in self.suffixes if not (isinstance(x, str) and x.startswith(".")
                                                 and x == x.lower())]  # fmt: skip
        if bad or not self.suffixes:
            raise PluginError(
                f"FileReader.suffixes are lower-case suffixes with their dot ('.parquet'), "
                f"not {self.suffixes!r}"
            )


@record
class Diagnostics:
    """What the doctor, the conformance kit, ``explain`` and error messages use beside the
    spec's ``example``; routing never reads it."""

    #: How users build an array of this framework from Python values (advice in errors).
    constructor: str = ""
    #: ``example_view(x, layout, shape)``: the framework's own view of its example ``x`` for
    #: a ``--layout`` the generic operations cannot make ("broadcast" to ``shape`` without the
    #: Array API's ``broadcast_to``; "readonly"), or None to use them (``explain``).
    example_view: Callable[[Any, str, tuple[int, ...]], Any] | None = None
    #: Arrays made the way user code makes them, which the doctor measures beside the
    #: example (see :class:`OrdinaryArrays`).
    ordinary: tuple[OrdinaryArrays, ...] = ()
    #: Examples the conformance kit builds besides ``example`` (see :class:`Form`): flagged
    #: forms (sparse, ragged), 1-d arrays, files.
    forms: tuple[Form, ...] = ()
    #: Files the command line's ``explain`` reads with this framework (see
    #: :class:`FileReader`).
    files: tuple[FileReader, ...] = ()

    def __post_init__(self) -> None:
        _check_fields(self, str, ("constructor",))
        _check_callables(self, ("example_view",))
        _check_fields(self, tuple, ("ordinary", "forms", "files"))


#: The role records of a FrameworkSpec, by field: each is validated on its own.
_ROLES = {
    "package": Package, "detection": Detection, "rules": ImportRules,
    "devices": Devices, "casting": Casting, "diagnostics": Diagnostics,
}  # fmt: skip


def _check_fields(record: Any, kind: type, names: tuple[str, ...]) -> None:
    for name in names:
        value = getattr(record, name)
        if not isinstance(value, kind):
            raise PluginError(f"{type(record).__name__}.{name} is a {kind.__name__}, not {value!r}")


def _check_callables(record: Any, names: tuple[str, ...]) -> None:
    for name in names:
        value = getattr(record, name)
        if value is not None and not callable(value):
            raise PluginError(
                f"{type(record).__name__}.{name} is a function or None, not {value!r}"
            )


@record
class FrameworkSpec:
    """A framework (or an array protocol) a plugin teaches the core about.

    The fields every framework gives describe its dense arrays (detection by type,
    description, keys); the optional parts of a framework are records by role, each
    validated on its own, so an author reads only the ones they need:
    :class:`~interop_core.plugin.Package` (installation),
    :class:`~interop_core.plugin.Detection` (array protocols),
    :class:`~interop_core.plugin.ImportRules`, :class:`~interop_core.plugin.Devices`,
    :class:`~interop_core.plugin.Casting` and :class:`~interop_core.plugin.Diagnostics`.

    Detection looks only in ``sys.modules``: ``array_types`` are dotted paths resolved
    from already-imported modules, so the core never imports a framework to find out.
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
    #: ``key`` plus whether the data is 64-byte aligned; None when arrays always are. Used
    #: only for requests whose route depends on alignment (reading it costs ~0.1-1 µs).
    aligned_key: Callable[[Any], Hashable] | None = None
    #: For producers that may answer differently each time they are asked (the array
    #: protocols): asks ``obj`` once and returns a stable object holding that answer
    #: (returning it unchanged when it is one already). The router describes, keys and
    #: converts the snapshot, never ``obj`` again, so what was described is exactly what is
    #: converted; the warm path keys by the snapshot's type.
    snapshot: Callable[[Any], Any] | None = None
    #: The flags its objects may carry, with their advice (see
    #: :class:`~interop_core.plugin.Flag`).
    flags: tuple[Flag, ...] = ()
    #: Whether ``to()`` may target it (False for source-only protocols and wrappers).
    target: bool = True
    #: Whether a route between two other frameworks may pass through it. False for an end,
    #: not a way (Arrow: a route through it would tie with the direct ones, and its refusals
    #: would crowd their errors): the planner then takes edges into it only for requests
    #: that start or end there.
    waypoint: bool = True
    package: Package = Package()
    detection: Detection = Detection()
    rules: ImportRules = ImportRules()
    devices: Devices = Devices()
    casting: Casting = Casting()
    diagnostics: Diagnostics = Diagnostics()
    plugin: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        for name, role in _ROLES.items():
            value = getattr(self, name)
            if not isinstance(value, role):
                raise PluginError(
                    f"FrameworkSpec {self.name!r}: {name}= takes a {role.__name__} record "
                    f"({name}={role.__name__}(...)), not {value!r}"
                )

    @property
    def import_name(self) -> str:
        """The top-level module that must be in sys.modules before detection looks ("" for
        protocols, which need no module)."""
        if self.package.module or not self.array_types:
            return self.package.module
        return self.array_types[0].partition(".")[0]

    @property
    def install_hint(self) -> str:
        """What to run to install it, for messages."""
        return self.package.install_hint or f"pip install {self.package.distribution or self.name}"


@record
class KindSpec:
    """Objects of a kind other than arrays (functions, ...) that a framework owns: how they
    are found. What the kind itself is (its traits, how ``copy=`` applies, ...) is its
    :class:`Kind`, declared once.

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
    plugin: str = field(default="", compare=False)

    @property
    def import_name(self) -> str:
        """The top-level module of the first type ("" when detected by ``claims`` only)."""
        return self.types[0].partition(".")[0] if self.types else ""


@record
class Kind:
    """A kind of object the graph routes, declared once: arrays by the core, functions,
    iterators, pipelines (and any other) by plugins, through ``interop_kinds()``.

    A node of the graph is (kind, framework, device, traits, flags): what the kind declares
    here is all the planner, the router and the plan cache know of it, so none of them
    branches on a kind's name. Objects of the kind are found by :class:`KindSpec` entries
    (and, for arrays, by each framework's :class:`FrameworkSpec`).
    """

    name: str
    #: How ``copy=`` applies: "edges" (the route honours it: False takes zero-copy edges
    #: only, True must copy), "items" (each item the object yields is converted with it:
    #: iterators), or "" (refused: a function is wrapped, not copied).
    copy: str = ""
    #: Its objects live on a device: ``device=None`` keeps theirs, a route lands only on
    #: devices the target framework sees, and a framework's host device index is its own.
    #: False: bound to no device unless ``device=`` names one (functions).
    on_device: bool = False
    #: The kind its objects become ("" the same): a pipeline becomes an iterator.
    becomes: str = ""
    #: Edges of this kind may name ``ANY`` (objects that belong to no framework).
    any_framework: bool = True
    #: How explain() and the drawing name one of its steps ("bridge" for functions); ""
    #: says whether the step copies instead.
    label: str = ""
    #: How ``python -m interop_core doctor`` tells users to convert one, e.g. "to(f,
    #: target, source=...); explain() has the caveats" ("" for nothing).
    usage: str = ""
    #: How a node is named in explain(), messages and the drawing; fields ``framework``,
    #: ``device``, ``kind``, ``owner`` ("jax " or "" for ANY) and ``at`` ("@cpu" or "").
    display: str = "{owner}{kind}{at}"
    #: Converting the same object again with the same arguments may give the same result:
    #: to() hands out the one it made while both are alive (engine/reuse.py), so a repeated
    #: to(f, ...) is a lookup. For objects whose conversion has no state of its own
    #: (functions: a wrapper); never for iterators or pipelines, which are consumed.
    reuse: bool = False
    plugin: str = field(default="", compare=False)

    #: Only the core's array kind (``ARRAYS``) has traits (ArrayTraits: dtype, layout,
    #: read-only, alignment, which converter predicates read and the plan cache keys by)
    #: and the warm path (plans per type, keyed by the framework's ``key``). The objects of
    #: a plugin's kind have neither: they are converted once and used many times, and their
    #: routes are cached by option names.
    traits: ClassVar[type | None] = None
    warm: ClassVar[bool] = False

    def advance(self, traits: Any, edge: ConverterSpec) -> Any:
        """The traits after ``edge`` (a kind without traits: None)."""
        return None

    def node_name(self, framework: str, device: str) -> str:
        """The name of a node of this kind, e.g. "numpy@cpu", "jax function", "iterator"."""
        return self.display.format(
            framework=framework, device=device, kind=self.name,
            owner="" if framework == ANY else f"{framework} ", at=f"@{device}" if device else "",
        )  # fmt: skip

    @property
    def plural(self) -> str:
        """The kind's name in messages about several ("functions", "arrays")."""
        return f"{self.name}es" if self.name.endswith("s") else f"{self.name}s"


def _array_advance(traits: ArrayTraits, edge: ConverterSpec) -> ArrayTraits:
    """An array's traits after ``edge``: sharing keeps layout, alignment and read-only
    (unless the edge says otherwise); a copy is C-contiguous, writable and aligned (unless
    the edge says its copies may not be)."""
    if edge.zero_copy:
        if edge.array.aligned_result is None and edge.array.readonly_result is None:
            return traits  # most shares: the same traits
        layout, readonly, aligned = traits.layout, traits.readonly, traits.aligned
        if edge.array.aligned_result is not None:
            aligned = edge.array.aligned_result
    else:
        layout, readonly, aligned = "C", False, edge.array.aligned_result is not False
    if edge.array.readonly_result is not None:
        readonly = edge.array.readonly_result
    return ArrayTraits(traits.dtype, layout, readonly, aligned)


@record
class _ArrayKind(Kind):
    """The array kind: traits and the warm path (see :class:`Kind`)."""

    traits: ClassVar[type | None] = ArrayTraits
    warm: ClassVar[bool] = True

    def advance(self, traits: Any, edge: ConverterSpec) -> Any:
        """An array's traits after ``edge`` (see :func:`_array_advance`)."""
        return _array_advance(traits, edge)


#: Arrays: the kind the core declares itself (each framework's arrays are its FrameworkSpec).
ARRAYS = _ArrayKind(
    ARRAY,
    copy="edges",
    on_device=True,
    any_framework=False,
    display="{framework}@{device}",
    plugin="interop_core",
)


@record
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


@record
class ArrayEdge:
    """What only an edge of arrays declares (``ConverterSpec.array``): where its result
    lives, what its memory is like, the forms it takes. The registry ignores, with a
    warning, an edge of another kind that gives one."""

    #: For a device move: the device kind it moves to (the index comes from the request).
    #: Its function is called as ``func(x, device=Device)``.
    to_device: str | None = None
    #: Result is read-only (True), writable (False), or like the input (None).
    readonly_result: bool | None = None
    #: Result is 64-byte aligned (True) or not guaranteed (False); None: like the input for
    #: a zero-copy edge, aligned for a copy (say False when your copy may not be).
    aligned_result: bool | None = None
    #: The forms of arrays (``FormSpec.name``) whose objects it takes: the flags of an
    #: opaque form keep every other edge off them. A framework's own opaque flag
    #: (``Flag.opaque``, e.g. torch's "conj") named here is taken too. What the result
    #: keeps of them is ``ConverterSpec.keeps_flags``, as for any flag (a copy within the
    #: form keeps them, a densifying edge does not).
    forms: frozenset[str] = frozenset()
    #: The note is about the memory the step's result shares (an alias, a read-only view):
    #: a copy later in the route makes it moot, and ``Route.notes`` then leaves it out.
    memory_note: bool = False
    #: For an edge that copies part of the object and shares the rest: what it copies ("the
    #: row splits"), which explain() names instead of counting the whole object's bytes.
    copies: str = ""
    #: The converter itself makes what it hands the target meet the target's import rules
    #: (``FrameworkSpec.rules.imports``): one that splits a DTensor into blocks and copies
    #: those that are not aligned, say. The planner then skips those rules for this edge
    #: (never the target's ``switches``); its own ``accepts`` must refuse what it cannot
    #: handle.
    imports_checked: bool = False

    def __post_init__(self) -> None:
        _check_fields(self, frozenset, ("forms",))
        _check_fields(self, str, ("copies",))
        if self.to_device is not None and not isinstance(self.to_device, str):
            raise PluginError(f"ArrayEdge.to_device is a str or None, not {self.to_device!r}")


@record
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
    #: Flags of the input the result keeps (all others are cleared).
    keeps_flags: frozenset[str] = frozenset()
    #: Flags the result gets (a bridged function that calls back into Python on the host:
    #: "host_callback"), so later edges can refuse it.
    adds_flags: frozenset[str] = frozenset()
    #: Shown by explain() whenever the step is taken (e.g. aliasing an immutable buffer).
    note: str = ""
    #: The kind of object the edge converts.
    kind: str = ARRAY
    #: The kind of its result, when it differs ("" for the same): a pipeline edge's
    #: result is an "iterator".
    result_kind: str = ""
    #: Options of ``to()`` the converter takes; the user's values reach it in its context.
    options: tuple[str, ...] = ()
    #: Checks the values given for ``options`` (a mapping of those passed) and raises
    #: OptionError naming what is wrong; run when the route is found, by to() and explain()
    #: alike, so explain() refuses what to() would. Imports only the frameworks the
    #: edge's ends name.
    validate: Callable[[Mapping[str, Any]], None] | None = None
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
    #: With ``opt_in``: the value (a str) the option must have for the planner to take this
    #: edge, one edge per value (``layout="coo"`` takes the edges that make COO arrays);
    #: "" for any truthy value. A value no edge into the target declares is refused, naming
    #: the values it takes.
    opt_value: str = ""
    #: The name of an option (one of ``options``) that, passed as False, keeps the planner
    #: off this edge: the user asks for the route without it (``trace=False`` for the
    #: traced TF -> JAX edge). Absent or any other value: the edge is taken as usual.
    opt_out: str = ""
    #: For kinds converted once (functions, pipelines): a look at the object itself, for
    #: what no key says (a TF function's graph holds operations the converter cannot
    #: translate). ``inspects(obj)`` gives None to accept or the reason to refuse; the route
    #: is then re-planned without this edge for that object only, and explain() names the
    #: reason. Called on every conversion through the edge: keep it cheap.
    inspects: Callable[[Any], str | None] | None = None
    #: For kinds that declare ``Kind.reuse`` (functions): may to() hand out this edge's
    #: result again for the same source and arguments? True; False where the result holds
    #: state read at conversion (tf2jax: the variables' values; a fresh to() must see new
    #: ones); or ``reuse(obj)``, asked when the result is made and each time it would be
    #: handed out again (jax2tf: not under a JAX transformation, where it refuses to convert).
    reuse: bool | Callable[[Any], bool] = True
    #: What only an edge of arrays says: its result's memory, device moves, forms taken.
    array: ArrayEdge = ArrayEdge()
    plugin: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.array, ArrayEdge):
            raise PluginError(
                f"ConverterSpec {self.name!r}: array= takes an ArrayEdge record "
                f"(array=ArrayEdge(...)), not {self.array!r}"
            )

    @property
    def edge(self) -> str:
        """ "source->target" for messages."""
        return f"{self.source}->{self.target}"
