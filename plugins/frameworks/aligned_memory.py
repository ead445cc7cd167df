"""Opt-in 64-byte aligned numpy allocations, so numpy arrays reach JAX and TensorFlow zero-copy.

JAX and TensorFlow import a host buffer without copying only when it starts on a 64-byte
boundary, and numpy's default allocator mostly returns addresses 16 past one (every array of
1 MiB and more), so ``to(a, "jax")`` copies most numpy arrays. :func:`switch` installs a
NEP 49 data-memory handler (the C extension ``_aligned_alloc`` beside this module) that makes
every array numpy allocates from then on start on a 64-byte boundary.

Scope: numpy keeps the handler in a ContextVar. A switch applies to the current thread's
context and to what inherits it: asyncio tasks created afterwards, ``asyncio.to_thread`` and
``contextvars.copy_context().run``. Threads started with ``threading.Thread`` or a
``ThreadPoolExecutor`` begin with a fresh context and numpy's default handler (unless
Python 3.14's ``sys.flags.thread_inherit_context`` is set); they switch on for themselves.
numpy stores the handler with each array that owns its data, so arrays allocated here are
freed here whenever they die, whatever is current then.

Not aligned even with it on: arrays numpy does not allocate (``np.frombuffer``, memory
maps, arrays unpickled from their pickle's bytes, views at an offset).

Nothing is imported at module import; numpy and the extension load on the first call.
"""

from __future__ import annotations

from typing import Any

from interop_core.plugin import FrameworkNotInstalledError, OptionError, PluginError

_EXTENSION = "interop_plugins.frameworks._aligned_alloc"
_NUMPY_HINT = "pip install numpy"


class Token:
    """What :func:`switch` replaced: numpy's previous handler, for :func:`restore`."""

    __slots__ = ("handler",)

    def __init__(self, handler: Any) -> None:
        self.handler = handler

    def __repr__(self) -> str:
        return "<aligned_memory.Token>"


def _load() -> Any:
    """The C extension (by its full name: it is this module's own, not another plugin's)."""
    import importlib

    return importlib.import_module(_EXTENSION)


def _check() -> tuple[str, str] | None:
    """None when usable, else (why not, what the user can do)."""
    try:
        import numpy  # noqa: F401
    except ImportError:
        return "numpy is not installed", _NUMPY_HINT
    try:
        ext = _load()
    except ImportError as exc:
        return (
            f"the C extension {_EXTENSION} is not built ({exc}); interop-core was installed "
            "without a C compiler",
            "reinstall interop-core where a C compiler and Python's headers exist "
            "(pip install --force-reinstall --no-deps interop-core)",
        )
    try:
        ext.get_handler()
    except (ImportError, RuntimeError) as exc:  # numpy < 1.22, or a C API it cannot trust
        return (
            f"this numpy offers no usable data-memory handler API (NEP 49): {exc}",
            "use numpy >= 1.22",
        )
    return None


def available() -> str | None:
    """None when the aligned allocator can be used here, else why not (one sentence)."""
    found = _check()
    return None if found is None else found[0]


def _extension() -> Any:
    """The extension, ready to use; raises an InteropError saying why not."""
    found = _check()
    if found is None:
        return _load()
    why, todo = found
    if todo == _NUMPY_HINT:
        raise FrameworkNotInstalledError("numpy", todo)
    raise PluginError(
        f"The 64-byte aligned numpy allocator is unavailable.\n{why[0].upper()}{why[1:]}.\n"
        f"To use it, {todo}. Without it numpy arrays still convert, copied where they are "
        "not 64-byte aligned."
    )


def _sync_hugepages(np: Any, ext: Any) -> None:
    """Advise huge pages for blocks of 4 MiB and more exactly when numpy's own handler does
    (numpy's switch: NUMPY_MADVISE_HUGEPAGE, np._core.multiarray._set_madvise_hugepage)."""
    core = getattr(np, "_core", None) or np.core
    get = getattr(core.multiarray, "_get_madvise_hugepage", None)
    if get is not None:
        ext.set_hugepage(bool(get()))


def switch(on: bool) -> Token:
    """Make numpy allocate 64-byte aligned memory (``on``) or with its default allocator,
    in the current context; returns a :class:`Token` for :func:`restore`."""
    ext = _extension()
    if on:
        import numpy as np

        _sync_hugepages(np, ext)
        return Token(ext.enable())
    return Token(ext.set_handler(None))


def restore(token: Token) -> None:
    """Put back the handler that the :func:`switch` returning ``token`` replaced."""
    if not isinstance(token, Token):
        raise OptionError(
            f"restore() takes the token switch() returned, not {type(token).__name__}.\n"
            "Call it as: token = switch(True); ...; restore(token)."
        )
    _extension().set_handler(token.handler)


def active() -> bool:
    """True when numpy allocates with the aligned allocator in the current context; False
    when it does not or cannot."""
    if available() is not None:
        return False
    ext = _load()
    return ext.get_handler() is ext.handler()


def owns(array: Any) -> bool:
    """True when ``array``'s memory was allocated by the aligned allocator: numpy's record of
    the handler on the array that owns the data (a view's base, followed to its end)."""
    if available() is not None:
        return False
    import numpy as np

    while isinstance(array, np.ndarray) and array.base is not None:
        array = array.base
    if not isinstance(array, np.ndarray):
        return False  # memory numpy did not allocate (a buffer, another framework's tensor)
    core = getattr(np, "_core", None) or np.core
    return bool(core.multiarray.get_handler_name(array) == _load().NAME)
