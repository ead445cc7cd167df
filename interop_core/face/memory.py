"""Opt-in 64-byte aligned host memory: :class:`aligned_memory` and :func:`set_aligned_memory`.

JAX and TensorFlow import a host buffer without copying only when it starts on a 64-byte
boundary, and a framework's default allocator may rarely give one. A framework plugin that
can make its allocations aligned declares it (``FrameworkSpec.devices.allocator``); these switch
every installed one. Allocators keep the switch in a context variable: it applies to the
current thread and to what inherits its context (asyncio tasks created afterwards,
``contextvars.copy_context().run``), not to threads started with ``threading.Thread`` or a
thread pool, which begin with the default (they switch on for themselves).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's, without importing typing (see api.py)
if TYPE_CHECKING:
    from typing import TYPE_CHECKING, Any

    from ..declare.specs import AlignedAllocator


def _allocators() -> list[AlignedAllocator]:
    """The allocator switch of every installed framework that declares one."""
    from ..declare.errors import PluginError
    from .api import default_registry

    st = default_registry().load_all()  # every framework's, imported or not
    found = [
        spec.devices.allocator.load()
        for spec in st.frameworks.values()
        if spec.devices.allocator is not None and st.installed.get(spec.name, False)
    ]
    if not found:
        declared = [s.name for s in st.frameworks.values() if s.devices.allocator is not None]
        why = (
            f"the frameworks whose plugins declare one ({', '.join(declared)}) are not installed"
            if declared
            else "no installed plugin declares one (FrameworkSpec.devices.allocator)"
        )
        raise PluginError(
            f"Cannot switch to 64-byte aligned allocations: {why}.\nInstall the framework "
            "(or the plugin that declares its allocator); arrays still convert without it, "
            "copied where a framework needs aligned memory."
        )
    return found


class aligned_memory:  # lower case: used like a function, ``with aligned_memory():``
    """Arrays allocated inside the block start on a 64-byte boundary, so they reach JAX and
    TensorFlow zero-copy (numpy's: ``np.ones``, ``np.random``, ``astype``, ...).

    For the current thread (and what inherits its context) only; threads started inside the
    block allocate as by default. Arrays made inside stay valid after it. Raises an
    :class:`~interop_core.PluginError` (an InteropError) where no installed framework has
    such an allocator or it cannot be used (its C extension was not built).
    """

    __slots__ = ("_tokens",)

    def __init__(self) -> None:
        self._tokens: list[list[tuple[AlignedAllocator, Any]]] = []  # a stack: blocks nest

    def __enter__(self) -> aligned_memory:
        switched: list[tuple[AlignedAllocator, Any]] = []
        try:
            for allocator in _allocators():
                switched.append((allocator, allocator.switch(True)))
        except BaseException:
            _restore(switched)
            raise
        self._tokens.append(switched)
        return self

    def __exit__(self, *exc_info: object) -> None:
        _restore(self._tokens.pop())


def _restore(switched: list[tuple[AlignedAllocator, Any]]) -> None:
    for allocator, token in reversed(switched):
        allocator.restore(token)


def set_aligned_memory(on: bool) -> None:
    """Switch 64-byte aligned allocations on (or back to each framework's default) for the
    rest of the current thread (and what inherits its context); see :class:`aligned_memory`.
    """
    if not isinstance(on, bool):
        from ..declare.errors import OptionError

        raise OptionError(
            f"set_aligned_memory() takes True or False, not {on!r}.\n"
            "Pass True to allocate aligned memory from now on, False for the default."
        )
    for allocator in _allocators():
        allocator.switch(on)
