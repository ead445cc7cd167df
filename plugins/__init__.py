"""Built-in plugins of interop_core, imported as ``interop_plugins``.

Each module is a pluggy plugin; none imports its framework at module level.
"""
