"""The one thing pyproject.toml cannot say: the optional C extension.

``interop_plugins.frameworks._aligned_alloc`` (numpy's 64-byte aligned allocator, opt-in) is
compiled where a C compiler and Python's headers exist; ``optional=True`` lets the install
go on without it (``interop_plugins.frameworks.aligned_memory.available()`` then says so).
It needs no numpy headers. Everything else is in pyproject.toml.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "interop_plugins.frameworks._aligned_alloc",
            sources=["plugins/frameworks/_aligned_alloc.c"],
            optional=True,
        )
    ]
)
