"""Forms of arrays, each a plugin of its own (``interop_forms``)."""
