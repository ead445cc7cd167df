"""The plugin manager: built-ins found in their package, third parties from entry points.

Modelled on tox 4 and pytest: the built-in plugins are the modules of the
``interop_plugins`` package that implement an ``interop_*`` hook (found by
:func:`builtin_plugins`, so a new built-in file is registered without being listed here);
each entry point of the ``interop_core`` group is loaded on its own so that a broken one is
dropped with a warning naming it and its distribution, and
``INTEROP_CORE_DISABLE_PLUGIN_AUTOLOAD=1`` turns entry-point loading off.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import warnings
from functools import cache
from typing import Any, NamedTuple

import pluggy

from ..declare import hookspecs
from ..declare.errors import PluginError, PluginWarning

ENTRY_POINT_GROUP = "interop_core"
DISABLE_AUTOLOAD_ENV = "INTEROP_CORE_DISABLE_PLUGIN_AUTOLOAD"

#: The package of the built-in plugins (``plugins/`` in the source tree, see pyproject.toml).
BUILTIN_PACKAGE = "interop_plugins"


@cache
def builtin_plugins(package: str = BUILTIN_PACKAGE) -> tuple[str, ...]:
    """The modules of ``package`` (and its subpackages) that implement an ``interop_*``
    hook, by dotted name: the built-in plugins, in the order they are registered.

    Found by ``pkgutil`` over the package's directories, sorted, so the order is the same
    wherever the package is installed. A module whose source never says ``hookimpl`` is a
    helper (a converter's code loaded on first use, shared tables) and is not imported
    here; the others are imported and kept when a function of theirs carries the
    ``hookimpl`` mark. Modules whose name starts with ``_`` (a compiled extension) are
    private to their package. The answer is cached: the package's files do not change
    while the process runs.
    """
    root = importlib.import_module(package)
    modules = sorted(
        (info for info in pkgutil.walk_packages(root.__path__, f"{package}.", _reraise)
         if not any(part.startswith("_") for part in info.name.split(".")[1:])),
        key=lambda info: info.name,
    )  # fmt: skip
    mark = f"{hookspecs.PROJECT}_impl"  # the attribute pluggy's HookimplMarker sets
    found = []
    for info in modules:
        if not _may_implement_hooks(info):
            continue
        module = importlib.import_module(info.name)
        if any(
            name.startswith("interop_") and hasattr(getattr(module, name), mark)
            for name in dir(module)
        ):
            found.append(info.name)
    return tuple(found)


def _reraise(name: str) -> None:
    """pkgutil's onerror: a subpackage of the built-ins that fails to import is an error
    (pkgutil's default skips it, which would drop its plugins without a word)."""
    raise  # pkgutil calls this inside its ``except ImportError:``


def _may_implement_hooks(info: pkgutil.ModuleInfo) -> bool:
    """False when the module's source never says ``hookimpl`` (importing it cannot find a
    hook); True when it does, or when there is no source to read (then it is imported)."""
    folder = getattr(info.module_finder, "path", None)  # a FileFinder's directory
    if folder is None:
        return True
    stem = info.name.rpartition(".")[2]
    parts = (stem, "__init__.py") if info.ispkg else (f"{stem}.py",)
    try:
        with open(os.path.join(folder, *parts), "rb") as f:
            return b"hookimpl" in f.read()
    except OSError:  # no source (bytecode or an extension only): import it to see
        return True


class DroppedPlugin(NamedTuple):
    """A plugin that could not be loaded, and why."""

    name: str
    distribution: str
    reason: str


def autoload_disabled() -> bool:
    """True when the environment switch turns entry-point loading off."""
    return os.environ.get(DISABLE_AUTOLOAD_ENV, "").strip().lower() not in ("", "0", "false", "no")


class InteropPluginManager(pluggy.PluginManager):
    """A pluggy PluginManager that counts changes and loads entry points in isolation."""

    def __init__(self) -> None:
        super().__init__(hookspecs.PROJECT)
        self.add_hookspecs(hookspecs)
        self.generation = 0
        self.dropped: list[DroppedPlugin] = []
        self.distributions: dict[str, str] = {}

    def register(self, plugin: Any, name: str | None = None) -> str | None:
        """Register a plugin and bump the generation so plans are rebuilt.

        Raises PluginError, leaving nothing registered, for a plugin that implements an
        ``interop_*`` hook no hookspec declares (see :meth:`check_hooks`)."""
        try:
            result = super().register(plugin, name)
        except (ValueError, pluggy.PluginValidationError) as exc:
            raise PluginError(f"Cannot register plugin {name or plugin!r}: {exc}") from exc
        if result is not None:
            try:
                self.check_hooks(plugin, result)
            except PluginError:
                super().unregister(plugin)
                for hook, caller in list(vars(self.hook).items()):  # the callers it made
                    unused = not caller.has_spec() and not caller.get_hookimpls()
                    if not hook.startswith("_") and unused:
                        delattr(self.hook, hook)
                raise
        self.generation += 1
        return result

    def check_hooks(self, plugin: Any, name: str) -> None:
        """Raise PluginError when the registered ``plugin`` implements an ``interop_*`` hook
        no hookspec has.

        pluggy's ``check_pending()`` rule, applied to one plugin as it is registered: a
        hookimpl whose hook has no spec would never be called (a misspelt
        ``interop_converter``), so the plugin is refused instead of silently half-working.
        Implementations marked ``optionalhook=True`` are allowed, as in pluggy, and names
        outside the ``interop_`` namespace are not this project's hooks.
        """
        unknown = [
            caller.name
            for caller in self.get_hookcallers(plugin) or ()
            if not caller.has_spec() and caller.name.startswith("interop_")
            and any(i.plugin is plugin and not i.optionalhook for i in caller.get_hookimpls())
        ]  # fmt: skip
        if not unknown:
            return
        import difflib

        known = sorted(
            n for n, h in vars(self.hook).items() if not n.startswith("_") and h.has_spec()
        )

        def guess(hook: str) -> str:
            # Compare what follows the shared "interop_", which would make any name look close.
            stems = {k.removeprefix("interop_"): k for k in known}
            close = difflib.get_close_matches(hook.removeprefix("interop_"), stems, n=1)
            return f" (did you mean {stems[close[0]]!r}?)" if close else ""

        listed = ", ".join(f"{h!r}{guess(h)}" for h in unknown)
        raise PluginError(
            f"Plugin {name!r} implements unknown hook {listed}.\nNo hookspec of interop_core "
            f"has that name, so it would never be called. Rename it to one of "
            f"{', '.join(known)}, or mark it @hookimpl(optionalhook=True) if it is meant for "
            "another version of interop_core."
        )

    def unregister(self, plugin: Any = None, name: str | None = None) -> Any:
        """Unregister a plugin and bump the generation so plans are rebuilt."""
        result = super().unregister(plugin, name)
        self.generation += 1
        return result

    def load_builtins(self, modules: tuple[str, ...] | None = None) -> None:
        """Register the built-in plugins (:func:`builtin_plugins`), or ``modules`` by name.

        A built-in whose hooks are misspelt is dropped with a warning; the others load."""
        for modname in builtin_plugins() if modules is None else modules:
            try:
                self.register(importlib.import_module(modname), name=modname)
            except PluginError as exc:  # a misspelt hook: the other plugins keep working
                self.drop(modname, "interop-core", str(exc))
                continue
            self.distributions[modname] = "interop-core"

    def load_entry_points(self, group: str = ENTRY_POINT_GROUP) -> None:
        """Load each entry point of ``group`` on its own; drop (and warn about) broken ones."""
        if autoload_disabled():
            return
        from importlib import metadata  # ~30 ms: only when entry points are loaded

        for ep in metadata.entry_points(group=group):
            dist = ep.dist.name if ep.dist is not None else "unknown distribution"
            if self.is_blocked(ep.name):
                continue
            if self.get_plugin(ep.name) is not None:
                if self.distribution_of(ep.name) != dist:
                    warnings.warn(
                        f"interop_core ignored entry point {ep.name!r} of distribution {dist!r}: "
                        f"the name is taken by {self.distribution_of(ep.name) or 'a plugin'!r}. "
                        "Rename the entry point.",
                        PluginWarning,
                        stacklevel=2,
                    )
                continue
            try:
                plugin = ep.load()
                self.register(plugin, name=ep.name)
            except Exception as exc:  # a broken third-party plugin must not break the rest
                self.drop(ep.name, dist, f"{type(exc).__name__}: {exc}")
                continue
            self.distributions[ep.name] = dist

    def drop(self, name: str, distribution: str, reason: str) -> None:
        """Unregister a misbehaving plugin, remember why, and warn naming it."""
        if self.get_plugin(name) is not None:
            self.unregister(name=name)
        self.dropped.append(DroppedPlugin(name, distribution, reason))
        warnings.warn(
            f"interop_core dropped plugin {name!r} (distribution {distribution!r}): {reason}",
            PluginWarning,
            stacklevel=3,
        )

    def distribution_of(self, name: str) -> str:
        """The distribution that provided plugin ``name`` ('' when registered at run time)."""
        return self.distributions.get(name, "")
