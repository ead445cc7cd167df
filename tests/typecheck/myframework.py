"""A third-party plugin's module, as far as types go: its array class and the token it
exports (docs: /tmp/notes/types_docs.md). Never run."""

from __future__ import annotations

from typing import Any

from interop_core.targets import Target


class MyArray:
    """The plugin's array: DLPack makes it an array for to()'s overloads (as a source)."""

    def __dlpack__(self, **kwargs: Any) -> Any:
        raise NotImplementedError

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)


MYARRAY: Target[MyArray] = Target("myframework")
