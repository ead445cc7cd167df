"""The engine: one consistent build of the registry, and the calls that run on it.

A :class:`State` holds what the plugins declared (validated), the route graph, the
detector and the plan cache. ``to()``, ``explain()``, ``resolve()`` and ``parse_device()``
are its methods: a call reads the registry's current state once and runs on that snapshot
to the end, so a plugin registered meanwhile never reaches a call in flight. The public
functions in :mod:`interop_core.face.api` only find the state and call it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any

from ..declare.errors import (
    DeviceError,
    FrameworkNotInstalledError,
    InteropError,
    NoRouteError,
    NotAnArrayError,
    OptionError,
    UnknownFrameworkError,
)
from ..declare.records import NamedTuple
from ..declare.specs import (
    ANY,
    ARRAYS,
    ConverterSpec,
    Device,
    FrameworkSpec,
    KindSpec,
    KnownFramework,
)
from .casting import convert_cast, explain_cast, parse_dtype
from .containers import MAX_DEPTH, map_leaves, name_path, note_key
from .detect import Detector, first_claiming
from .forms import Split
from .plancache import Entry, PlanCache
from .planner import Graph
from .plans import Runner
from .reuse import Reused, arguments
from .router import Asked, Request, Router, describe, object_request, request, snapshot
from .routes import RouteTree


def _hint(spec: FrameworkSpec, obj: Any) -> str | None:
    """A protocol's advice for an object nothing converts (its ``Detection.hint``); a hint
    that fails is no hint: the error being built must not become another."""
    hint = spec.detection.hint
    if hint is None:
        return None
    try:
        found = hint(obj)
    except Exception:
        return None
    return found if isinstance(found, str) else None


def _by_whole_key(entry: Entry | None, x: Any) -> Runner:
    """The runner of a leaf whose entry's first key function raised: by the whole key
    function, for an object of a form told apart per object; else :class:`_Unplanned`."""
    if entry is None or entry[2] is entry[0]:
        raise _Unplanned from None
    try:
        run = entry[1].get(entry[2](x))
    except Exception:
        raise _Unplanned from None
    if run is None:
        raise _Unplanned
    return run


#: The errors a built-in plugin not loaded yet may be the cause of: a name, option or device
#: only it declares, a route through its edges, an object only it claims (see State._slow).
_MAYBE_PENDING = (UnknownFrameworkError, NoRouteError, NotAnArrayError, OptionError, DeviceError)


class _Unplanned(Exception):
    """A leaf of a container met on the warm path has no runner yet."""


_UNKNOWN: Any = object()
_CONTAINERS = (dict, list, tuple)


class Hooks(NamedTuple):
    """The plugins' per-object hooks, each a function of its one argument (None where no
    plugin implements it)."""

    #: ``interop_detect(obj)``: the framework a plugin names for an object.
    detect: Callable[[Any], str | None] | None = None
    #: ``interop_parse_device(device)``: a framework's own device object as a Device.
    parse_device: Callable[[Any], Device | None] | None = None
    #: The plugin manager's hook relay (``pm.hook``): converters ask the hooks they need at
    #: run time (``interop_checkpointer``, ``interop_worker_policy``) through
    #: ``CallContext.hook``. None: they use their own plugin's answers.
    relay: Any = None


class Declared(NamedTuple):
    """What the plugins declared, validated by the registry."""

    frameworks: dict[str, FrameworkSpec]
    #: Lower-case name or alias -> framework name.
    names: dict[str, str]
    kinds: tuple[KindSpec, ...]
    edges: tuple[ConverterSpec, ...]
    known: dict[str, KnownFramework]
    #: Framework name -> its spec composed with each of its forms found by type (see
    #: engine/forms.py).
    forms: dict[str, tuple[FrameworkSpec, ...]]
    #: Framework name -> (test, composed spec) of its forms told apart per object.
    split: dict[str, Split]


class State:
    """One consistent build of the registry (replaced wholesale on every change): the
    specs, the graph, the detector, the plan cache, and ``to()``/``explain()`` on them."""

    __slots__ = (
        "array_options", "cache", "declared", "detect", "fast", "frameworks", "generation",
        "graph", "grow", "hook", "installed", "kinds", "known", "loads", "names",
        "owned_claims", "parse_hook", "plain", "reused", "router",
    )  # fmt: skip

    def __init__(
        self,
        generation: int,
        specs: Declared,
        graph: Graph,
        installed: dict[str, bool],
        hooks: Hooks | None = None,
        grow: Callable[[State, bool], State | None] | None = None,
        loads: int = 0,
    ) -> None:
        self.generation = generation
        #: The lazy registry's :meth:`~interop_core.engine.registry.Registry.grow` while it
        #: has built-in plugins to load (None: every plugin is loaded), and how many loads
        #: this state was built after.
        self.grow = grow
        self.loads = loads
        self.frameworks = specs.frameworks
        #: Lower-case name or alias -> framework name.
        self.names = specs.names
        #: Specs of the non-array objects (functions, ...), in registration order.
        self.kinds = specs.kinds
        #: Valid converters declared, usable or not (the graph holds the usable ones).
        self.declared = specs.edges
        #: Frameworks known by name only (no plugin converts them yet), by lower-case alias.
        self.known = specs.known
        #: Options some array edge takes (``nulls=``, ...): a kind whose ``copy=`` reaches
        #: its items (iterators) takes them too and hands them to each item's ``to()``.
        self.array_options = frozenset(
            o for e in self.declared if e.kind == ARRAYS.name for o in e.options
        )
        self.graph = graph
        hooks = hooks or Hooks()
        self.detect = Detector(
            self.frameworks.values(), self.kinds, hooks.detect, specs.forms, specs.split
        )
        #: Structural checks of kinds a framework owns: the ones that may take a whole list
        #: or tuple as one object (a list of pipelines, one per GPU).
        self.owned_claims = tuple(
            k for k in self.detect.kind_claims if k.framework not in ("", ANY)
        )
        #: Framework name -> importable (checked once per build, without importing).
        self.installed = installed
        #: The plugins' ``interop_parse_device`` hook (None: no plugin implements it).
        self.parse_hook = hooks.parse_device
        #: The hook relay handed to converters (``CallContext.hook``).
        self.hook = hooks.relay
        self.cache = PlanCache()
        #: The warm path's tables, read on every call (the cache's own dicts).
        self.plain = self.cache.plain
        self.fast = self.cache.fast
        #: The slow path: routes planned, bound, cached and run for this state.
        self.router = Router(self)
        #: Results of kinds that declare reuse (functions), by source and arguments.
        self.reused = Reused()

    # -- the calls ---------------------------------------------------------------------

    def to(
        self, obj: Any, target: Any, *, device: Any = None, copy: bool | None = None,
        **options: Any,
    ) -> Any:  # fmt: skip
        """``to()`` on this state (see :func:`interop_core.to`)."""
        return self.convert(obj, target, device, copy, options)

    def convert(
        self, obj: Any, target: Any, device: Any, copy: Any, options: Mapping[str, Any]
    ) -> Any:
        """``to()`` with its arguments as given: the warm path, else the slow path."""
        # copy=1 or 0 hash like True/False: only the three real values may take the warm path.
        if options or not (copy is None or copy is True or copy is False):
            return self._slow(obj, target, device, copy, options, False)
        failed: Exception | None = None
        cls = type(obj)
        try:
            if device is None and copy is None:  # the common request: two one-object lookups
                entry = self.plain[target].get(cls)
            else:
                entry = self.fast.get((cls, target, device, copy))
        except Exception:  # nothing planned for the target, or unhashable arguments
            entry = None
        if entry is None:  # no exception raised: a batch comes here on every call
            if cls is dict or cls is list or cls is tuple:
                return self._tree(obj, target, device, copy)
            run = None
        else:
            keyfn = entry[0]
            try:
                run = entry[1].get(keyfn(obj))
            except Exception as exc:  # the framework's key function failed on obj
                failed, run = exc, None
                if entry[2] is not keyfn:  # an object of a form told apart per object
                    keyfn = entry[2]
                    try:
                        run, failed = entry[1].get(keyfn(obj)), None
                    except Exception as again:
                        failed = again
        if run is None:  # outside the except: the lookup's KeyError is no context of its errors
            result = self._slow(obj, target, device, copy, options, False)
            if failed is not None:  # converted, but slowly each time: say so once
                self.cache.key_failed(keyfn, obj, failed)
            return result
        try:
            return run(obj)
        except Exception as exc:  # the failed step is handled, never run again
            return self.router.warm_failure(obj, (cls, target, device, copy), exc)

    def warm_failed(self, obj: Any, target: Any, exc: Exception) -> Any:
        """The runner ``to()``'s own warm path found for ``obj`` (device=None, copy=None)
        raised ``exc``: handled as :meth:`convert` handles it."""
        return self.router.warm_failure(obj, (type(obj), target, None, None), exc)

    def _tree(self, obj: Any, target: Any, device: Any, copy: bool | None) -> Any:
        """The warm path of a plain dict, list or tuple (a batch): each leaf whose type and
        key have a runner runs it, a leaf of a type detection found to be no array passes
        through, and containers are rebuilt as :func:`map_leaves` rebuilds them; no target,
        device or leaf is looked at twice. Anything else (a leaf not planned yet, a
        subclass, nesting past MAX_DEPTH or a cycle, no array at all) takes the slow path,
        which converts the whole call and says what is wrong."""
        found = [0]
        try:
            get = self.plain[target].get if device is None and copy is None else None
        except Exception:  # nothing planned for this target yet (slow path outside except:
            get = _UNKNOWN  # its errors must not carry this lookup's KeyError)
        # A list or tuple a kind takes whole is that kind's object (the slow path says so).
        whole = type(obj) is not dict and first_claiming(self.owned_claims, obj) is not None
        if get is not _UNKNOWN and not whole:
            try:
                out = self._walk(obj, type(obj), get, (target, device, copy), 0, found)
            except _Unplanned:  # a converter's own error passes: its step must not run again
                found[0] = 0
            except InteropError as exc:
                name_path(exc)
                raise
            if found[0]:
                return out
        return self._slow(obj, target, device, copy, {}, False)

    def _walk(
        self, x: Any, cls: type, get: Callable[[type], Any] | None, asked: tuple[Any, ...],
        depth: int, found: list[int],
    ) -> Any:  # fmt: skip
        """The items of the container ``x`` (of exact type ``cls``) converted on the warm
        path, in a container of the same type (see :meth:`_tree`); ``found`` counts arrays.
        The leaf step is written out here, not called: a batch pays no frame per array."""
        is_dict = cls is dict
        out: Any = {} if is_dict else []
        for k, v in x.items() if is_dict else enumerate(x):
            t = type(v)
            entry = None
            try:
                entry = get(t) if get is not None else self.fast.get((t, *asked))
                run = None if entry is None else entry[1].get(entry[0](v))
            except Exception:  # a key function failed, a hash raised: the slow path says
                run = _by_whole_key(entry, v)
            if run is not None:
                found[0] += 1
                try:
                    v = run(v)
                except Exception as exc:  # handled as the warm path does: never run again
                    try:
                        v = self.router.warm_failure(v, (t, *asked), exc)
                    except InteropError as err:
                        note_key(err, k)
                        raise
            elif entry is not None:  # a key not planned yet
                raise _Unplanned
            elif t is dict or t is list or t is tuple:
                if depth + 1 >= MAX_DEPTH:  # or a cycle: the slow path says which
                    raise _Unplanned
                try:
                    v = self._walk(v, t, get, asked, depth + 1, found)
                except InteropError as err:
                    note_key(err, k)
                    raise
            elif issubclass(t, _CONTAINERS) or self.detect.cache.get(t, _UNKNOWN) is not None:
                raise _Unplanned  # a subclass is rebuilt by the slow path; None: not an array
            if is_dict:
                out[k] = v
            else:
                out.append(v)
        return out if is_dict or cls is list else tuple(out)

    def explain(
        self, obj: Any, target: Any, *, device: Any = None, copy: bool | None = None,
        **options: Any,
    ) -> Any:  # fmt: skip
        """``explain()`` on this state (see :func:`interop_core.explain`)."""
        return self._slow(obj, target, device, copy, options, True)

    def _slow(
        self, obj: Any, target: Any, device: Any, copy: Any, options: Mapping[str, Any],
        explaining: bool,
    ) -> Any:  # fmt: skip
        """What ``to()`` does (or, ``explaining``, would do) for ``obj`` off the warm path:
        one dispatch for both, so explain() shows exactly the route to() takes.

        A lazy registry's state first loads the built-in plugins about modules imported
        since it was built; a call that fails in a way a plugin not loaded yet might mend
        (an unknown name, option or device, no route, no framework owning the object) loads
        them all and runs again, so a call's answer is the one all plugins give."""
        grow = self.grow
        if grow is None:
            return self._planned(obj, target, device, copy, options, explaining)
        newer = grow(self, False)
        if newer is None:
            try:
                return self._planned(obj, target, device, copy, options, explaining)
            except _MAYBE_PENDING:
                newer = grow(self, True)
                if newer is None:
                    raise
        return newer._slow(obj, target, device, copy, options, explaining)

    def _planned(
        self, obj: Any, target: Any, device: Any, copy: Any, options: Mapping[str, Any],
        explaining: bool,
    ) -> Any:  # fmt: skip
        """:meth:`_slow` on this state's plugins."""
        if not explaining and id(obj) in self.reused.entries:  # converted before: reused?
            try:
                again = self.reused.get(obj, arguments(target, device, copy, options))
            except TypeError:
                again = None
            if again is not None:
                return again
        asked = self._prepare(target, device, copy, options)
        # A plain dict, list or tuple is no array (a subclass may be one, or a kind; a plain
        # list may still be a kind's object as a whole: a list of pipelines).
        cls = type(obj)  # identity tests: a class's own __hash__ may raise (detect says so)
        src = None if cls is dict or cls is list or cls is tuple else self.detect(obj)
        if src is not None:
            self._check_source(asked.source, src.name, obj)
            # A producer is asked once: its snapshot is what is described and converted,
            # and the warm path keys by the snapshot's type.
            snap = snapshot(src, obj)
            if snap is not obj:
                if type(snap) is dict and not snap:  # a source that holds no arrays (a
                    return RouteTree({}) if explaining else {}  # tensor file of none): {}
                again = self.explain if explaining else self.to
                return again(snap, target, device=device, copy=copy, **options)
            rest = dict(asked.options)
            cast = rest.pop("dtype", None)
            asked = asked._replace(options=rest)
            if cast is not None:  # the cast is a step of its own; the route is to()'s as usual
                info = describe(src, obj)
                if explaining:
                    req = request(obj, src, asked, info)
                    return explain_cast(
                        info, src, asked.target, copy, cast,
                        lambda i, c: self.router.find_route(req.described(i, c))[0],
                    )  # fmt: skip
                return convert_cast(
                    info, obj, src, asked.target, copy, cast,
                    lambda x, c: self.convert(x, target, device, c, rest),
                )  # fmt: skip
            if explaining:
                return self.router.find_route(request(obj, src, asked))[0]
            fast_key: tuple[Any, ...] | None = (type(obj), target, device, copy)
            try:
                hash(fast_key)
            except Exception:  # unhashable, or a hash that raises (a str subclass's own):
                fast_key = None  # planned on every call rather than kept
            # The warm path keys no options: a request with options is planned every time.
            req = request(obj, src, asked)
            return self.router.convert(obj, req, None if rest else fast_key)
        kind = None if cls is dict else self._kind_of(obj)
        if kind is not None:
            req = self._object_request(obj, kind, asked)
            if explaining:
                return self.router.object_route(obj, req)[0]
            remember = None
            if req.kind.reuse:
                # an option that cannot be hashed (TypeError): converted every time
                with contextlib.suppress(TypeError):
                    remember = arguments(target, device, copy, options)
            return self.router.convert(obj, req, remember=remember)

        # Options apply to the items whose routes take them (nulls= for a table's columns,
        # not for an array beside it); one that no item's route takes is unknown.
        taken: set[str] = set()
        left_out: dict[str, OptionError] = {}

        def attempt(x: Any, given: Mapping[str, Any]) -> Any:  # to()'s own path for a leaf
            if explaining:
                return self.explain(x, target, device=device, copy=copy, **given)
            return self.convert(x, target, device, copy, given)

        def leaf(x: Any, _: FrameworkSpec) -> Any:
            try:
                out = attempt(x, options)
            except OptionError as exc:
                if not exc.unknown or not set(exc.unknown) <= options.keys():
                    raise
                for name in exc.unknown:
                    left_out.setdefault(name, exc)
                rest = {k: v for k, v in options.items() if k not in exc.unknown}
                try:
                    out = attempt(x, rest)
                except InteropError:
                    if set(exc.unknown) <= taken:  # another item's options: this one fails
                        raise
                    raise exc from None  # a misspelt option, most likely: say so, not this
                taken.update(rest)
                return out
            taken.update(options)
            return out

        tree = self._containers(obj, asked.target, leaf, plain=not explaining)
        unknown = [name for name in left_out if name not in taken]
        if unknown:
            raise left_out[unknown[0]]
        return RouteTree(tree) if explaining else tree

    # -- names and devices ---------------------------------------------------------------

    def resolve(self, target: Any) -> FrameworkSpec:
        """The spec a target names: a name or alias (any case) or a framework module."""
        if isinstance(target, str):
            name = self.names.get(target.lower())
            if name is None:
                raise self._unknown(target)
        elif type(target).__name__ == "module":
            top = target.__name__.partition(".")[0]
            found = [s.name for s in self.frameworks.values() if s.import_name == top and s.target]
            if not found:
                raise self._unknown(target.__name__)
            name = found[0]
        else:
            raise self._not_a_name(target)
        spec = self.frameworks[name]
        if not spec.target:
            raise UnknownFrameworkError(
                target,
                self._targets(),
                f"{spec.name!r} is a source "
                f"{'protocol' if spec.detection.protocol else 'only'}, not a framework to "
                "convert to.",
            )
        if not self.installed.get(spec.name, False):
            raise FrameworkNotInstalledError(spec.name, spec.install_hint)
        return spec

    def _targets(self) -> list[str]:
        return [n for n, f in self.names.items() if self.frameworks[f].target]

    def _not_a_name(self, target: Any) -> UnknownFrameworkError:
        """The error for a target that is neither a name nor a module, without its repr (an
        array's runs to pages); an array or function there means to()'s arguments are swapped."""
        what = f"{type(target).__module__}.{type(target).__qualname__}"
        example = next((s.name for s in self.frameworks.values() if s.target), "<framework>")
        try:
            convertible = self.detect(target) is not None or self.detect.kind(target) is not None
        except Exception:  # an object that cannot even be looked up is no array either
            convertible = False
        why = (
            "It is what to() converts: the arguments look swapped. to() takes the object "
            f"first, then the target: to(x, {example!r})."
            if convertible
            else f"Pass a framework name such as {example!r}, or the framework's module."
        )
        head = f"The target is a {what}, not a framework name."
        return UnknownFrameworkError(what, self._targets(), why, head=head)

    def _unknown(self, name: str) -> Exception:
        """FrameworkNotInstalledError for a framework known by name only, else Unknown..."""
        from .registry import importable

        known = self.known.get(name.lower())
        if known is None:
            return UnknownFrameworkError(name, self._targets())
        if importable(known.module or known.name):
            return UnknownFrameworkError(
                name, self._targets(),
                f"{known.name} is installed, but no installed interop_core plugin converts its "
                f"arrays yet ({known.plugin!r} knows it by name only).",
            )  # fmt: skip
        return FrameworkNotInstalledError(known.name, known.install_hint)

    def parse_device(self, device: Any) -> Device | None:
        """A Device from None, "cpu"/"cuda:1", or a device object or string of a framework
        (asked of the plugins' ``interop_parse_device`` hook)."""
        if device is None or isinstance(device, Device):
            return device
        why = ""  # why a string is not a device, when it is not
        if isinstance(device, str):
            try:
                parsed = Device.parse(device)
            except ValueError:
                why = f"{device!r} is not a device."
            else:
                if parsed.kind in ("cpu", "cuda"):
                    return parsed
                # "banana:0" is spelled like a device: a kind no plugin knows is still none.
                kinds = {k for s in self.frameworks.values() for k in s.devices.kinds}
                kinds.update(
                    k for e in self.declared for k in (*e.devices, e.array.to_device or "cpu")
                )
                if parsed.kind in kinds:
                    return parsed
                why = (
                    f"{device!r} is not a device: no installed plugin knows the device kind "
                    f"{parsed.kind!r} (they know {', '.join(sorted(kinds | {'cpu', 'cuda'}))})."
                )
        found = self._parse_by_plugins(device)
        if found is not None:
            return found
        raise DeviceError(
            f"{why or f'Cannot understand device={device!r}.'}\nPass None (the source's "
            f"device), one of {Device.SPELLINGS}, or a device object or string of an "
            "installed framework."
        )

    def _parse_by_plugins(self, device: Any) -> Device | None:
        """A framework's own spelling of a device, as the plugins read it (None: none does)."""
        if self.parse_hook is None:
            return None
        try:
            return self.parse_hook(device)
        except Exception:  # a plugin's reader failed on it: nobody understood it
            return None

    # -- what an object is ---------------------------------------------------------------

    def _prepare(self, target: Any, device: Any, copy: Any, options: Mapping[str, Any]) -> Asked:
        """Check what every request needs: the target's spec, the device, copy; ``source=``
        is taken out of the options, and ``dtype=`` is read into a :class:`~.casting.Cast`
        (arrays are cast before routing; iterators hand it to each batch's ``to()``)."""
        if not (copy is None or copy is True or copy is False):  # 1 == True must not pass
            raise OptionError(
                f"copy must be None, True or False, not {copy!r} ({type(copy).__name__}): "
                "copy=1 or copy=0 would read as a different request."
            )
        rest = dict(options)
        source = rest.pop("source", None)
        spec = self.resolve(target)
        if rest.get("dtype") is not None:
            rest["dtype"] = parse_dtype(rest["dtype"], self.frameworks.values(), spec)
        else:
            rest.pop("dtype", None)  # dtype=None: nothing is cast, as without it
        return Asked(spec, self.parse_device(device), copy, rest, source)

    def _source_name(self, source: Any) -> str:
        """The framework ``source=`` names (any alias or case, or its module)."""
        if isinstance(source, str) and source.lower() in self.names:
            return self.names[source.lower()]
        return self.resolve(source).name

    def _check_source(self, source: Any, found: str, obj: Any) -> None:
        """``source=`` may only confirm what detection found."""
        if source is not None and self._source_name(source) != found:
            raise OptionError(
                f"source={source!r} does not match the object: it is a {found} "
                f"{type(obj).__name__}. source= names the framework of objects that do not "
                "say it themselves (plain Python functions); leave it out here."
            )

    def _kind_of(self, obj: Any) -> KindSpec | None:
        """The kind spec of a non-array object. A class a kind declares among its ``types``
        is that kind, a dict, list or tuple subclass too (a checkpoint that is a dict);
        otherwise a dict is a container, and a list or tuple is a kind only when the
        structural check of a kind a framework owns takes it whole (a list of pipelines,
        one per GPU, as some loaders take them)."""
        found = self.detect.kind_by_type(obj)
        if found is not None or isinstance(obj, dict):
            return found
        if isinstance(obj, (list, tuple)):
            return first_claiming(self.owned_claims, obj) if obj else None
        return first_claiming(self.detect.kind_claims, obj)

    def _object_request(self, obj: Any, spec: KindSpec, asked: Asked) -> Request:
        """The request for an object of a kind other than arrays, its framework settled."""
        copy, options, source, target = asked.copy, asked.options, asked.source, asked.target
        what = getattr(obj, "__qualname__", None) or type(obj).__qualname__
        kind = self.graph.kind(spec.kind)
        if copy is not None and not kind.copy:
            raise OptionError(
                f"copy={copy!r} applies to arrays; {what} is a {kind.name}, which is wrapped, "
                "not copied (the arrays it takes and returns cross zero-copy where possible). "
                "Leave copy= out."
            )
        if "dtype" in options and not any(
            "dtype" in e.options for e in self.declared if e.kind == kind.name
        ):
            raise OptionError(
                f"dtype= casts arrays (and the arrays iterators yield); {what} is a "
                f"{kind.name}, which is wrapped, not cast. Leave dtype= out, and cast the "
                "arrays it takes or returns yourself."
            )
        framework: FrameworkSpec | None
        if spec.framework == ANY:
            if source is not None:
                described = spec.description or f"a {kind.name}"
                raise OptionError(
                    f"source={source!r} does not apply to {what}: it is {described}, whose "
                    "items each say their framework when they are converted. Leave source= out."
                )
            framework = None
        elif spec.framework:
            self._check_source(source, spec.framework, obj)
            framework = self.frameworks[spec.framework]
        elif source is None:
            frameworks = sorted({e.source for e in self.declared if e.kind == kind.name})
            if not frameworks:
                raise NotAnArrayError(
                    f"Cannot convert {what!r}: it is a {kind.name}, and no installed plugin "
                    f"converts {kind.plural}."
                )
            raise OptionError(
                f"Cannot tell which framework the {kind.name} {what!r} is written for: it "
                f"does not say. Pass source= naming it (one of: {', '.join(frameworks)}), "
                f"e.g. to(f, {target.name!r}, source={frameworks[0]!r})."
            )
        else:
            framework = self.frameworks[self._source_name(source)]
        return object_request(spec, kind, framework, asked)

    def _containers(
        self, obj: Any, target: FrameworkSpec, one: Callable[[Any, FrameworkSpec], Any],
        plain: bool = True,
    ) -> Any:  # fmt: skip
        """Apply ``one`` to each array leaf of a container; raise when there is no array at
        all. Other leaves stay as they are (``plain``) or become None (explain's Routes)."""
        arrays = 0

        def counted(leaf: Any) -> Any:
            nonlocal arrays
            src = self.detect(leaf)
            if src is None:
                return leaf if plain else None
            arrays += 1
            return one(leaf, src)

        if isinstance(obj, (dict, list, tuple)):
            try:
                out = map_leaves(obj, counted)
            except InteropError as exc:
                name_path(exc)
                raise
            if arrays:
                return out
        raise NotAnArrayError(self._not_an_array(obj, target))

    def _not_an_array(self, obj: Any, target: FrameworkSpec) -> str:
        """Why ``obj`` converts nothing, and what to do instead."""
        kind = f"{type(obj).__module__}.{type(obj).__qualname__}"
        frameworks = ", ".join(n for n, s in self.frameworks.items() if s.array_types)
        protocols = ", ".join(
            s.detection.protocol for s in self.detect.protocols if s.detection.protocol
        )
        make = (
            f"{target.diagnostics.constructor}(...)"
            if target.diagnostics.constructor
            else f"{target.name}'s array constructor"
        )
        if isinstance(obj, (dict, list, tuple)):
            found = f"a {kind} with no array anywhere in it"
            todo = (
                f"To build a {target.name} array from Python values, use {make}; "
                "to() converts arrays (and containers holding at least one)."
            )
        else:
            found = f"a {kind}: it is not an array of any registered framework ({frameworks})"
            if protocols:
                found += f" and speaks none of the array protocols looked for ({protocols})"
            kinds = sorted({k.kind for k in self.kinds})
            if kinds:
                found += f"; nor is it a {' or '.join(kinds)} of one"
            hints = [h for s in self.detect.protocols if (h := _hint(s, obj))]
            todo = " ".join(
                [f"To build a {target.name} array from Python values, use {make}.", *hints]
            )
        return f"Cannot convert {found}. {todo}"
