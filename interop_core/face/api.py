"""The public functions: ``to()``, ``explain()``, ``register()``, ``unregister()``.

A thin face: each call finds the registry in use (:func:`using_registry`'s, else the
process-wide one), reads its current state once, and runs on that snapshot to the end
(:class:`~interop_core.engine.state.State` is the engine: warm path, slow path, explain).
"""

from __future__ import annotations

from _thread import allocate_lock
from contextvars import ContextVar

# ``import interop_core`` loads this module and nothing heavier than contextvars: the engine
# (and with it pluggy, the specs and the plugins) loads when the first call builds the
# registry. TYPE_CHECKING is typing's without importing typing, whose imports (re, enum,
# collections, functools) cost more than the rest of ``import interop_core``; mypy and IDEs
# read it as typing's. The same name imported from typing inside the block is what typeguard
# (the nox typeguard session) recognises: it then leaves these names unchecked instead of
# looking them up at run time, where they do not exist.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from contextvars import Token
    from typing import TYPE_CHECKING, Any

    from ..engine.registry import Registry

_default: Registry | None = None
_default_lock = allocate_lock()  # threading.Lock() without importing threading
#: The registry using_registry() made current in this thread or asyncio task (None: the
#: process-wide one). A ContextVar: other threads never see it.
_current: ContextVar[Registry | None] = ContextVar("interop_core_registry", default=None)


def default_registry() -> Registry:
    """The registry ``to()``/``explain()`` use here: the one ``using_registry()`` made
    current in this thread or context, else the process-wide one (built-in plugins plus
    entry points, built on first use; the built-in plugins about frameworks not imported yet
    load when a call involves them, see :class:`~interop_core.engine.registry.Registry`)."""
    global _default
    reg = _current.get() or _default  # read once: another thread may replace the global
    if reg is None:
        from ..engine.collector import paused_collection

        with paused_collection():  # the engine's import too: it allocates as much
            from ..engine.registry import Registry  # the engine loads here, on first use

            with _default_lock:
                reg = _default
                if reg is None:
                    # Lazy: the built-ins about frameworks not imported load when needed.
                    reg = _default = Registry(lazy=True)
    return reg


def set_default_registry(registry: Registry | None) -> Registry | None:
    """Replace the process-wide registry (None: rebuild on next use); returns the old one.

    A registry made current by ``using_registry()`` still wins inside its block."""
    global _default
    with _default_lock:
        old, _default = _default, registry
    return old


class using_registry:  # lower case: called like the function it was, using_registry(reg)
    """Make ``registry`` what ``to()``/``explain()`` use for a ``with`` block, in this
    thread (or asyncio task) only: other threads keep theirs. A thread started inside the
    block starts without it; run it in ``contextvars.copy_context()`` (or enter the block
    in it) to give it the same registry."""

    # A class, not @contextlib.contextmanager: contextlib would cost ``import interop_core``
    # more than this whole module.
    __slots__ = ("_tokens", "registry")

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._tokens: list[Token[Registry | None]] = []  # a stack: the block may nest

    def __enter__(self) -> Registry:
        self._tokens.append(_current.set(self.registry))
        return self.registry

    def __exit__(self, *exc_info: object) -> None:
        _current.reset(self._tokens.pop())


def to(
    obj: Any, target: Any, *, device: Any = None, copy: bool | None = None, **options: Any
) -> Any:
    """Convert ``obj`` (an array, a container of them, or a function) to ``target``.

    ``target`` is a framework name or alias (any case) or a framework module.
    ``device`` None keeps the source device. ``copy`` follows the Array API's
    ``from_dlpack``: None shares memory when possible, False never copies (raises
    CopyRequiredError), True never shares memory with ``obj``.
    ``dtype`` is the only way to() casts: a dtype (a name such as "int32", or a dtype of
    any installed framework: np.int32, torch.int32, jnp.int32, tf.int32) for every array,
    or a mapping from source to target dtype (``dtype={"int64": "int32"}``) for the arrays
    it names; others keep theirs. The cast is a step of its own (explain() shows it, it
    counts as a copy, so ``copy=False`` refuses it), made in the source framework when it
    holds the wanted dtype (int64 labels become int32 before JAX sees them), else in the
    target. It applies to each array leaf of a container and of each batch an iterator yields.
    Containers (dict, list, tuple, namedtuple, ...) keep their structure; leaves that are
    not arrays pass through unchanged, but a call that finds no array at all raises.
    A function becomes a function of ``target`` (arrays in and out, gradients carried);
    ``source=`` names the framework a plain Python function is written for, and other
    options reach the converters that declare them (``explain()`` lists them).
    """
    st = (_current.get() or _default or default_registry()).state
    if device is None and copy is None and not options:
        # The warm path of State.convert for the common request, written out here: a call
        # less on every to(). Anything unusual (nothing planned, an unhashable target, a
        # key function that raises) goes to State.convert, which handles and reports it.
        try:
            entry = st.plain[target].get(type(obj))
            run = None if entry is None else entry[1].get(entry[0](obj))
        except Exception:
            run = None
        if run is not None:
            try:
                return run(obj)
            except Exception as exc:  # the failed step is handled, never run again
                return st.warm_failed(obj, target, exc)
    return st.convert(obj, target, device, copy, options)


def explain(
    obj: Any, target: Any, *, device: Any = None, copy: bool | None = None, **options: Any
) -> Any:
    """The :class:`Route` ``to(obj, target, ...)`` would take, without converting anything.

    For a container, a :class:`RouteTree`: the same structure with a Route at each array
    leaf, printed one line per leaf.
    """
    reg = _current.get() or _default or default_registry()
    return reg.state.explain(obj, target, device=device, copy=copy, **options)


# TensorFlow's AutoGraph rewrites every function a @tf.function calls, recursively, and fails
# on ours (it logs "could not transform"; errors came out as its StagingError). It calls a
# function as it is when the function carries the attribute that its own
# tf.autograph.experimental.do_not_convert sets (tensorflow/python/autograph/impl/api.py:
# converted_call -> is_autograph_artifact, hasattr(f, "autograph_info__")); set here, it
# needs no TF import. to() then runs as plain Python, and nothing it calls is rewritten;
# its errors reach the caller as they are (InteropError.ag_pass_through).
to.autograph_info__ = None  # type: ignore[attr-defined]
explain.autograph_info__ = None  # type: ignore[attr-defined]


def _with_warm_path_in_c(python_to: Any) -> Any:
    """``python_to`` with its warm path in C (the extension ``interop_core._warm``), where
    it is built and ``INTEROP_CORE_PURE_PYTHON`` does not ask for Python; else itself.

    The C object calls ``python_to`` for everything but a planned ``to(obj, target)``, and
    carries its name, docstring, signature (``__wrapped__``) and attributes."""
    from ..native import pure_python

    if pure_python():
        return python_to
    try:
        from .._warm import Warm  # type: ignore[import-not-found]
    except ImportError:  # no C compiler when interop-core was installed
        return python_to
    fast = Warm(python_to, _current, globals())
    # functools.update_wrapper by hand: importing functools costs import interop_core more.
    for name in ("__module__", "__name__", "__qualname__", "__doc__", "__annotations__"):
        setattr(fast, name, getattr(python_to, name))
    fast.__dict__.update(python_to.__dict__)  # autograph_info__
    fast.__wrapped__ = python_to
    return fast


if not TYPE_CHECKING:
    to = _with_warm_path_in_c(to)


def register(plugin: Any, name: str | None = None) -> str:
    """Register a plugin object or module at run time; plans are rebuilt."""
    return default_registry().register(plugin, name)


def unregister(plugin: Any = None, name: str | None = None) -> None:
    """Unregister a plugin by object or name; plans are rebuilt."""
    default_registry().unregister(plugin, name)
