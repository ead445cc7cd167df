"""The one thing pyproject.toml cannot say: the optional C extensions.

Each is compiled where a C compiler and Python's headers exist; ``optional=True`` lets the
install go on without them, and the pure-Python code they speed up runs instead (each
module says how it finds out). Neither needs numpy's or torch's headers.

- ``interop_plugins.frameworks._aligned_alloc``: numpy's 64-byte aligned allocator, opt-in
  (``interop_plugins.frameworks.aligned_memory.available()`` says whether it was built).
- ``interop_core._warm``: to()'s warm path (face/api.py says when it is used).
- ``interop_plugins._native``: numpy's warm-path keys read from the ndarray struct, and
  exchanges through DLPack's C exchange API (``interop_plugins.native`` says whether it
  was built).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "interop_plugins.frameworks._aligned_alloc",
            sources=["plugins/frameworks/_aligned_alloc.c"],
            optional=True,
        ),
        Extension("interop_plugins._native", sources=["plugins/_native.c"], optional=True),
        Extension("interop_core._warm", sources=["interop_core/_warm.c"], optional=True),
    ]
)
