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
import re
import warnings
from collections.abc import Container
from functools import cache
from typing import Any

import pluggy

from ..declare import hookspecs
from ..declare.errors import PluginError, PluginWarning
from ..declare.records import NamedTuple

ENTRY_POINT_GROUP = "interop_core"
DISABLE_AUTOLOAD_ENV = "INTEROP_CORE_DISABLE_PLUGIN_AUTOLOAD"

#: The package of the built-in plugins (``plugins/`` in the source tree, see pyproject.toml).
BUILTIN_PACKAGE = "interop_plugins"


#: The attribute pluggy's HookimplMarker sets on a hook implementation.
MARK = f"{hookspecs.PROJECT}_impl"

#: The name of the tuple a built-in plugin module declares the modules it is about with.
ABOUT = "INTEROP_ABOUT"
_ABOUT_LINE = re.compile(rb"^INTEROP_ABOUT\s*=\s*(.+?)\s*$", re.MULTILINE)


class Builtin(NamedTuple):
    """A built-in plugin module, and when a call needs it.

    ``about`` is what its ``INTEROP_ABOUT`` says, each entry a set of modules: the plugin
    is needed once every module of one entry is imported (its objects can exist only
    then: detection never imports). None: always needed (no declaration, or a plugin whose
    objects exist without any framework, such as Python callables or a pathlib.Path).
    """

    name: str
    about: tuple[frozenset[str], ...] | None = None

    def due(self, modules: Container[str]) -> bool:
        """Whether a call needs the plugin when ``modules`` (``sys.modules``) are imported."""
        return self.about is None or any(all(m in modules for m in need) for need in self.about)


@cache
def builtin_manifest(package: str = BUILTIN_PACKAGE) -> tuple[Builtin, ...]:
    """The modules of ``package`` (and its subpackages) that implement an ``interop_*``
    hook: the built-in plugins, in the order they are registered, each with the modules
    it is about.

    Found in the package's directories (:func:`_modules`), sorted, so the order is the same
    wherever the package is installed. A module whose source never says ``hookimpl`` is a
    helper (a converter's code loaded on first use, shared tables) and is not imported. A
    module whose source declares ``INTEROP_ABOUT`` is a plugin by that declaration, read
    from the source without importing the module (a lazy registry imports it when a call
    needs it); the others are imported and kept when a function of theirs carries the
    ``hookimpl`` mark. Modules whose name starts with ``_`` (a compiled extension) are
    private to their package. The answer is cached: the package's files do not change
    while the process runs.
    """
    modules = _modules(package)
    found = []
    for name, path in modules:
        source = _read(path)
        if source is not None and b"hookimpl" not in source:
            continue
        about = None if source is None else _about(name, source)
        if about is not None:
            found.append(Builtin(name, about))
            continue
        module = importlib.import_module(name)
        if any(
            attr.startswith("interop_") and hasattr(getattr(module, attr), MARK)
            for attr in dir(module)
        ):
            found.append(Builtin(name))
    return tuple(found)


@cache
def builtin_plugins(package: str = BUILTIN_PACKAGE) -> tuple[str, ...]:
    """The built-in plugins' module names, in the order they are registered (see
    :func:`builtin_manifest`)."""
    return tuple(b.name for b in builtin_manifest(package))


def _reraise(name: str) -> None:
    """pkgutil's onerror: a subpackage of the built-ins that fails to import is an error
    (pkgutil's default skips it, which would drop its plugins without a word)."""
    raise  # pkgutil calls this inside its ``except ImportError:``


def _modules(package: str) -> list[tuple[str, str | None]]:
    """The public modules of ``package`` and of its subpackages, sorted by name, each with
    the path of its source (None: only bytecode or an extension, imported to look for
    hooks). Names starting with ``_`` (a compiled extension) are private to their package.

    Plain folders are listed with ``os.scandir``, as pkgutil's file finder lists them
    (~0.3 ms; pkgutil, which goes through the import system and imports each subpackage,
    spends 2-3 ms of the first call); a package anywhere else (a zip file) goes through
    pkgutil."""
    root = importlib.import_module(package)
    folders = list(root.__path__)
    if not all(os.path.isdir(folder) for folder in folders):
        infos = pkgutil.walk_packages(folders, f"{package}.", _reraise)
        return sorted(
            (info.name, _source(info)) for info in infos
            if not any(part.startswith("_") for part in info.name.split(".")[1:])
        )  # fmt: skip
    import inspect  # imported by dataclasses already

    found: dict[str, str | None] = {}

    def walk(folder: str, prefix: str) -> None:
        with os.scandir(folder) as entries:
            listed = sorted(entries, key=lambda e: e.name)
        for entry in listed:
            if entry.name.startswith("_"):
                continue
            if entry.is_dir():
                init = os.path.join(entry.path, "__init__.py")
                if "." not in entry.name and os.path.isfile(init):
                    found.setdefault(prefix + entry.name, init)
                    walk(entry.path, f"{prefix}{entry.name}.")
                continue
            stem = inspect.getmodulename(entry.name)
            if stem is not None and "." not in stem:
                source = entry.path if entry.name.endswith(".py") else None
                if found.get(prefix + stem) is None:
                    found[prefix + stem] = source

    for folder in folders:
        walk(folder, f"{package}.")
    return sorted(found.items())


def _source(info: pkgutil.ModuleInfo) -> str | None:
    """The path of a module's source that pkgutil found, or None (none to read)."""
    folder = getattr(info.module_finder, "path", None)  # a FileFinder's directory
    if folder is None:
        return None
    stem = info.name.rpartition(".")[2]
    parts = (stem, "__init__.py") if info.ispkg else (f"{stem}.py",)
    return os.path.join(folder, *parts)


def _read(path: str | None) -> bytes | None:
    """A module's source, or None when there is none to read (then it is imported to look
    for hooks)."""
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def _about_line(source: bytes) -> re.Match[bytes] | None:
    """The ``INTEROP_ABOUT = ...`` line of a source (a search with ``^`` over every line
    of the 26 plugins' 420 kB costs 1.5 ms; finding the name first, 0.05)."""
    at = source.find(b"INTEROP_ABOUT")
    while at >= 0:
        if at == 0 or source[at - 1] == 0x0A:  # at the start of a line
            line = _ABOUT_LINE.match(source, at)
            if line is not None:
                return line
        at = source.find(b"INTEROP_ABOUT", at + 1)
    return None


def _about(module: str, source: bytes) -> tuple[frozenset[str], ...] | None:
    """What the ``INTEROP_ABOUT = (...)`` line of a module's source declares (None: no
    such line). Each entry is a module name, or a tuple of them all needed at once:
    ``("torch",)``, ``(("jax", "tensorflow"),)``. Anything else raises PluginError."""
    line = _about_line(source)
    if line is None:
        return None
    import ast

    try:  # module names hold no "#": what follows one is a comment
        value = ast.literal_eval(line.group(1).decode().partition("#")[0])
    except (ValueError, SyntaxError, UnicodeDecodeError):
        value = None
    entries = (
        [frozenset((e,) if isinstance(e, str) else e) for e in value]
        if isinstance(value, tuple) and value
        and all(isinstance(e, str) or (isinstance(e, tuple) and e) for e in value)
        else []
    )  # fmt: skip
    if not entries or not all(isinstance(m, str) and m for e in entries for m in e):
        raise PluginError(
            f"Built-in plugin {module!r} declares {ABOUT} as {line.group(1).decode()!r}: it "
            "must be a tuple of module names on one line, an entry that is a tuple naming "
            'modules needed together, as in INTEROP_ABOUT = ("mylib", ("one", "other")).'
        )
    return tuple(entries)


def may_declare_entry_points(group: str) -> bool:
    """Whether a distribution on ``sys.path`` may declare an entry point in ``group``.

    importlib.metadata finds entry points by building every distribution's metadata (10-30
    ms here, with ~180 installed). This reads their ``entry_points.txt`` files alone
    (~2 ms): False when none names the group. It answers True, leaving the search to
    importlib.metadata, wherever it would look somewhere this does not: a path entry that
    is a zip file, a finder on ``sys.meta_path`` with distributions of its own.
    """
    import sys
    from importlib.machinery import PathFinder

    if any(hasattr(f, "find_distributions") and f is not PathFinder for f in sys.meta_path):
        return True
    header = f"[{group}]".encode()
    for entry in sys.path:
        folder = entry or "."
        if not os.path.isdir(folder):
            if os.path.exists(folder):
                return True  # a zip file: importlib.metadata reads it
            continue
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            suffix = name[-10:].lower()
            if suffix == ".dist-info" or suffix == ".egg-info":
                found = os.path.join(folder, name, "entry_points.txt")
            elif suffix.endswith(".egg"):
                found = os.path.join(folder, name, "EGG-INFO", "entry_points.txt")
            else:
                continue
            try:
                with open(found, "rb") as f:
                    if header in f.read():
                        return True
            except OSError:  # none (or an egg-info file: metadata only)
                if suffix.endswith(".egg") and os.path.isfile(os.path.join(folder, name)):
                    return True  # a zipped egg: importlib.metadata reads it
    return False


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

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> Any:
        """pluggy's answer, asked only for attributes carrying the mark: pluggy asks it of
        every attribute of a plugin (a module has dozens) and checks each with
        ``inspect.isroutine`` first (registering five built-ins: 1.1 ms -> 0.74)."""
        try:
            marked = hasattr(getattr(plugin, name), MARK)
        except Exception:  # pluggy's own handling decides
            marked = True
        return super().parse_hookimpl_opts(plugin, name) if marked else None

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
        if autoload_disabled() or not may_declare_entry_points(group):
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
