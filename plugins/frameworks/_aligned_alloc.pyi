"""Types of the C extension _aligned_alloc.c (numpy's 64-byte aligned NEP 49 handler)."""

from typing import Any

#: The alignment of every block this handler returns, in bytes.
ALIGNMENT: int
#: The handler's name, as numpy's get_handler_name() reports it.
NAME: str

def handler() -> Any:
    """This module's handler: a capsule named "mem_handler"."""

def get_handler() -> Any:
    """numpy's current handler in this context (loads numpy's C-API table)."""

def set_handler(capsule: Any, /) -> Any:
    """Make ``capsule`` (None: numpy's default) numpy's handler in this context; returns
    the one it replaced."""

def enable() -> Any:
    """set_handler(handler())."""

def set_hugepage(flag: object, /) -> bool:
    """Whether blocks of 4 MiB and more get madvise(MADV_HUGEPAGE); returns the previous."""
