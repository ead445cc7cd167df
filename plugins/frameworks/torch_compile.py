"""``to()`` under ``torch.compile``: a stand-in that dynamo traces in place of ``to()``.

Dynamo cannot trace ``to()`` itself: the C object of its warm path is opaque to it ("does not
know how to trace method __call__ of class Warm"), and the Python ``to()`` reads a
ContextVar, which it cannot trace either. Every route was a graph break (a hard error under
``fullgraph=True``), and the eager call after the break ran with dynamo compiling the
engine's frames one by one (seconds on a first call; some converters failed on its fake
tensors: ``to(t, "torch", copy=True)`` raised a ConversionError).

What this module registers with dynamo (``torch.compiler.substitute_in_graph``) is a pure
Python function of torch operations that dynamo traces wherever compiled code calls
``to()``; eager calls never see it (dynamo consults its polyfills only while tracing):

- numpy arrays (which dynamo traces as tensors) and torch tensors, alone or in plain dicts,
  lists and tuples (other leaves such as ints and strings pass through), to ``"torch"``
  with ``copy=`` None/True, ``dtype=`` (any spelling eager ``to()`` reads) and ``device=``
  None or the source's own device: traced, no graph break;
- anything else is left to eager ``to()``: a graph break whose reason (``_WHY``) says what
  is not traced and what to do; under ``fullgraph=True`` dynamo raises its ``Unsupported``
  error with that reason (an InteropError cannot cross dynamo: raised in traced code it
  becomes "Observed exception"). Dynamo runs the engine's and the built-in plugins' frames
  as they are (:func:`_skip_the_engine`), so eager ``to()`` behaves as outside compile.

The results keep eager ``to()``'s dtype, shape and values. Memory differs in one place:
dynamo turns a numpy input into a tensor over the array's memory before ``to()`` runs (and
makes a read-only array writable while tracing, pytorch/pytorch#112524), and traced code
cannot read the writeable flag, which eager ``to()`` needs to refuse sharing a read-only
array (rule 8). So numpy -> torch copies under ``torch.compile`` (``copy=None`` allows it;
inductor folds the copy into the consumers of a result that is not returned), and
``copy=False`` of a numpy array is left to eager ``to()``.

When it is registered: dynamo must know the stand-in before it first traces a function
that calls ``to()`` (a frame traced with the graph break keeps it). The torch plugin calls
frameworks/dynamo_hook.py's ``arm`` when it loads: it registers the stand-in at once when
``torch._dynamo`` is imported, else right after it is (a one-shot import hook), importing
this module only then; importing ``torch._dynamo`` costs ~1.5 s and is never done there.
:func:`enable` imports it and registers, for a program whose first ``to()`` is inside a
compiled function before any other ``to()`` ran.
"""

from __future__ import annotations

from _thread import allocate_lock
from collections.abc import Callable
from typing import Any

#: Why a call is left to eager to(), by the category the stand-in finds: dynamo shows it as
#: the graph break's reason (and in its error under fullgraph=True).
_WHY = {
    "invalid": "to() would raise for these arguments (an unknown target, device or dtype, "
    "copy=False where a copy is needed, no array at all): the call is left to eager to(), "
    "which raises the error; call it outside torch.compile to read it",
    "target": "only conversions to torch are traced: converting to another framework "
    "(numpy, jax, tensorflow, ...) cannot be part of a torch graph; convert the result after "
    "the compiled function returns",
    "source": "only numpy arrays and torch tensors (alone or in plain dicts, lists and "
    "tuples) are traced: other frameworks' arrays cross through DLPack or their own exports, "
    "which dynamo cannot trace; convert them to torch before calling the compiled function",
    "tensor": "only strided torch tensors on the CPU or CUDA are traced (not sparse, nested, "
    "quantized or meta tensors, nor subclasses such as DTensor); convert it outside the "
    "compiled function",
    "device": "device moves are not traced (only device=None or the source's own device); "
    "call tensor.to(device) in the compiled function instead, or convert outside it",
    "options": "options other than device=, copy= and dtype= are not traced; convert "
    "outside the compiled function",
    "numpy copy=False": "copy=False of a numpy array is not traced: to() must refuse to "
    "share a read-only array, and traced code cannot read the writeable flag; pass "
    "copy=None (traced; the result is a copy) or convert outside the compiled function",
}
#: Leaves that eager to() passes through unchanged (exact types).
_PASS = (type(None), bool, int, float, complex, str, bytes)
#: How deep the stand-in follows containers; deeper ones are left to eager to().
_MAX_DEPTH = 16

_lock = allocate_lock()
_installed = False
#: Filled by :func:`_install`; the stand-in reads them while dynamo traces it.
_torch: Any = None
_ndarray: Any = None
_dtypes: dict[str, Any] = {}
_names: dict[Any, str] = {}
_eager: dict[str, Callable[..., Any]] = {}


def enable() -> None:
    """Register the stand-in now, importing ``torch._dynamo`` if needed (~1.5 s once per
    process). Needed only before the first trace of a program whose first ``to()`` call is
    inside a compiled function; otherwise the torch plugin registers it
    (frameworks/dynamo_hook.py's ``arm``)."""
    import torch._dynamo  # noqa: F401  (what registration needs)

    _install()


def installed() -> bool:
    """Whether dynamo traces the stand-in in place of ``to()`` in this process."""
    return _installed


def _install() -> None:
    """Register the stand-in with dynamo (once per process)."""
    global _installed, _torch, _ndarray
    with _lock:
        if _installed:
            return
        import torch

        import interop_core
        from interop_core.plugin import DTYPES

        try:
            import numpy
        except ImportError:  # no numpy arrays to trace
            _ndarray = None
        else:
            _ndarray = numpy.ndarray
        _torch = torch
        _dtypes.update((n, getattr(torch, n)) for n in DTYPES if hasattr(torch, n))
        _names.update((d, n) for n, d in _dtypes.items())
        public = interop_core.to
        python_to = getattr(public, "__wrapped__", public)  # the C warm path wraps it
        for why, text in _WHY.items():
            _eager[why] = torch.compiler.disable(python_to, reason=f"interop_core.to(): {text}")
        substitute = torch.compiler.substitute_in_graph
        substitute(_request, can_constant_fold_through=True)(_request_untraced)
        substitute(python_to)(_traced_to)
        if public is not python_to:
            _alias(public, python_to)
        _skip_the_engine()
        _installed = True


def _alias(public: Any, python_to: Any) -> None:
    """Make dynamo treat ``public`` (the C object of the warm path) as ``python_to``,
    whose stand-in is registered.

    ``substitute_in_graph`` takes functions only, and the C object is a callable instance;
    this writes the same four entries substitute_in_graph wrote for ``python_to`` (torch
    2.13: torch/_dynamo/decorators.py), keyed by the C object."""
    from torch._dynamo.trace_rules import _polyfilled_function_ids, get_torch_obj_rule_map
    from torch._dynamo.variables import PolyfilledFunctionVariable
    from torch._dynamo.variables.builder import VariableBuilder

    by_id = VariableBuilder._id_dispatch()
    handlers = PolyfilledFunctionVariable._get_polyfill_handlers()
    rules = get_torch_obj_rule_map()
    by_id[id(public)] = by_id[id(python_to)]
    handlers[public] = handlers[python_to]
    rules[public] = rules[python_to]
    _polyfilled_function_ids.add(id(public))


def _skip_the_engine() -> None:
    """Have dynamo run the frames of interop_core and of the built-in plugins (all but this
    module, which it must trace) as they are, never compile them.

    After a graph break at to(), eager to() runs while dynamo still watches every new
    frame: it analysed the engine's and the plugins' frames one by one (741 frames and 4.1 s
    for a first call that built the registry, against 237 frames and 0.4 s with them
    skipped), and counted graph breaks inside them with the user's. Torch skips a module
    by the path prefixes in ``trace_rules.SKIP_DIRS`` (what ``trace_rules.add`` appends,
    recompiling its pattern each time: ~1 ms a call, so the paths go in at once)."""
    import os

    from torch._dynamo import trace_rules

    import interop_core

    here = os.path.dirname(os.path.abspath(__file__))
    package = os.path.dirname(here)
    paths = [os.path.dirname(os.path.abspath(interop_core.__file__)) + os.sep]
    for folder in (package, here):
        for entry in sorted(os.listdir(folder)):
            full = os.path.join(folder, entry)
            if entry.startswith("_") or full in (here, os.path.abspath(__file__)):
                continue  # __init__.py (a prefix of everything), C extensions, this module
            if os.path.isdir(full) and os.path.exists(os.path.join(full, "__init__.py")):
                paths.append(full + os.sep)
            elif entry.endswith(".py"):
                paths.append(full)
    skip_dirs = getattr(trace_rules, "SKIP_DIRS", None)
    recompile = getattr(trace_rules, "_recompile_re", None)
    if isinstance(skip_dirs, list) and callable(recompile):
        skip_dirs.extend(p.replace(os.sep, "/") for p in paths)
        recompile()


# -- what runs while dynamo traces ----------------------------------------------------------


def _request(target: Any, device: Any, copy: Any, options: Any) -> tuple[Any, ...]:
    """What a call asks for, read by the registry in use as eager to() reads it:
    ``(why, device, cast_to, cast_map)``. ``why`` is "" when the stand-in can trace the
    call, else a key of ``_WHY``; ``device`` is (kind, index) or None; ``cast_to`` the
    canonical dtype of every array ("" for none) and ``cast_map`` pairs (source, target).

    Dynamo calls this function itself at trace time (its arguments are constants there),
    so it may run any Python; it must not raise (dynamo would wrap the error as its own)."""
    import interop_core

    try:
        state = interop_core.default_registry().ready()
        if state.resolve(target).name != "torch":
            return ("target", None, "", ())
        if not (copy is None or copy is True or copy is False):
            return ("invalid", None, "", ())
        rest = dict(options)
        dtype = rest.pop("dtype", None)
        if rest:
            return ("options", None, "", ())
        where = state.parse_device(device)
        cast = None if dtype is None else _parse_dtype(dtype, state)
    except Exception:  # eager to() raises it, with its message
        return ("invalid", None, "", ())
    place = None if where is None else (where.kind, where.index)
    if cast is not None and cast.canonical is not None:  # each dtype as torch makes it
        mapping = {d: cast.wanted(d) for d in state.frameworks["torch"].dtypes}
        cast = type(cast)(mapping={d: to for d, to in mapping.items() if to is not None})
    if cast is None:
        return ("", place, "", ())
    return ("", place, cast.to, tuple(sorted(cast.mapping.items())))


def _request_untraced(target: Any, device: Any, copy: Any, options: Any) -> tuple[Any, ...]:
    """What dynamo traces instead of :func:`_request` when an argument is not a constant
    (a tensor given as device=, say): left to eager to()."""
    return ("options", None, "", ())


def _parse_dtype(dtype: Any, state: Any) -> Any:
    """``dtype=`` read as eager to() reads it (every framework's dtype objects and names;
    "canonical" as torch's own dtypes: torch keeps every dtype it holds)."""
    from interop_core.plugin import parse_dtype

    return parse_dtype(dtype, state.frameworks.values(), state.frameworks["torch"])


def _traced_to(
    obj: Any, target: Any, *, device: Any = None, copy: bool | None = None, **options: Any
) -> Any:
    """What dynamo traces where compiled code calls ``to()``: torch operations for the
    calls it can trace, else the call to eager ``to()`` with the reason of the graph break."""
    why, place, cast_to, cast_map = _request(target, device, copy, options)
    if why == "":
        found = [0]
        out, why = _convert(obj, place, copy, cast_to, cast_map, 0, found)
        if why == "" and found[0] == 0:
            why = "invalid"  # no array anywhere: eager to() raises NotAnArrayError
        if why == "":
            return out
    return _eager[why](obj, target, device=device, copy=copy, **options)


def _convert(
    obj: Any, place: Any, copy: Any, cast_to: str, cast_map: Any, depth: int, found: list[int]
) -> tuple[Any, str]:
    """``obj`` converted, and "" (or None and the key of ``_WHY`` that stops it)."""
    cls = type(obj)
    if cls is dict or cls is list or cls is tuple:
        if depth >= _MAX_DEPTH:
            return None, "invalid"
        if cls is dict:
            mapped = {}
            for key, value in obj.items():
                mapped[key], why = _convert(value, place, copy, cast_to, cast_map, depth + 1, found)
                if why != "":
                    return None, why
            return mapped, ""
        items = []
        for value in obj:
            out, why = _convert(value, place, copy, cast_to, cast_map, depth + 1, found)
            if why != "":
                return None, why
            items.append(out)
        return (items if cls is list else tuple(items)), ""
    if cls in _PASS:
        return obj, ""
    torch = _torch
    if _ndarray is not None and cls is _ndarray:
        if copy is False:
            return None, "numpy copy=False"
        # Dynamo made the array a tensor over its memory; a copy keeps a read-only array
        # out of reach of writes (eager to() copies those, and shares writable ones).
        tensor = torch.as_tensor(obj)
        wanted, why = _wanted(tensor, cast_to, cast_map)
        if why != "":
            return None, why
        found[0] += 1
        if wanted is not None:
            return tensor.to(wanted, memory_format=torch.contiguous_format), ""
        if copy is True:
            return tensor.clone(memory_format=torch.contiguous_format), ""
        return tensor.clone(), ""
    if cls is torch.Tensor or cls is torch.nn.Parameter:
        if (
            obj.layout != torch.strided
            or obj.is_nested
            or obj.is_quantized
            or obj.device.type not in ("cpu", "cuda")
        ):
            return None, "tensor"
        if place is not None and (place[0] != obj.device.type or place[1] != _index(obj)):
            return None, "device"
        wanted, why = _wanted(obj, cast_to, cast_map)
        if why != "":
            return None, why
        found[0] += 1
        if wanted is not None:  # the torch plugin's astype: a contiguous copy
            if copy is False:
                return None, "invalid"  # eager: CopyRequiredError
            return obj.to(wanted, memory_format=torch.contiguous_format), ""
        if copy is True:  # the torch plugin's copy: contiguous, conj/neg bits resolved
            return torch.empty_like(obj, memory_format=torch.contiguous_format).copy_(obj), ""
        return obj, ""
    if isinstance(obj, torch.Tensor):  # a subclass: DTensor, a user's wrapper subclass
        return None, "tensor"
    return None, "source"


def _index(tensor: Any) -> int:
    """The device index as a Device has it (0 on the CPU)."""
    index = tensor.device.index
    return 0 if index is None else index


def _wanted(tensor: Any, cast_to: str, cast_map: Any) -> tuple[Any, str]:
    """The torch dtype ``tensor`` is cast to (None: kept), or "invalid" when torch lacks it."""
    name = _names.get(tensor.dtype)
    if name is None:
        return None, "tensor"
    want = cast_to
    if want == "":
        for source, target in cast_map:
            if source == name:
                want = target
    if want == "" or want == name:
        return None, ""
    dtype = _dtypes.get(want)
    if dtype is None:
        return None, "invalid"
    return dtype, ""
