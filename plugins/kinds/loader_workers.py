"""DataLoader workers that survive JAX and TensorFlow: a start method safe after they load.

A torch DataLoader starts its workers by fork (Linux's default). Forking a process whose
JAX or TensorFlow runtime has started its threads copies their locks, held, into every
worker: a worker that then runs JAX or TF code (a ``jnp`` transform, a ``tf.image`` op)
waits forever (jax#9190). Measured here (jax 0.10, TF 2.21, Python 3.11, 2 workers): after
one JAX computation in the parent, a worker calling ``jnp`` or ``jax.jit`` hangs, and so
does one running a TF matmul after one in the parent; workers that use only numpy or torch
do not hang; with JAX imported but no computation run yet, nothing hangs. A DataLoader
starts new workers at every pass, after the first batches have run JAX's computations, so
the choice is made when JAX or TF is loaded (or is the target), before any pass starts.

``forkserver`` is the safe method chosen: each worker is forked from a fresh server process
that never ran JAX, and it started them two to three times faster than ``spawn`` here
(which starts a new interpreter per worker). Both send the dataset to each worker by
pickle and import the main module again in it, so a loader whose dataset (or collate_fn,
worker_init_fn) cannot be pickled, or whose script runs outside an
``if __name__ == "__main__":`` block, keeps fork: changing it would break a loader that
works today (a numpy-only dataset is safe under fork), and the sentence returned says so.
A ``multiprocessing_context`` the user set, or a start method the process set, is never
changed. It is the built-in answer to the ``interop_worker_policy`` hook (iterators.py), which
a third party's implementation overrides. Imports no framework: torch is reached through
``sys.modules``.
"""

from __future__ import annotations

import ast
import multiprocessing
import pickle
import sys
import weakref
from collections.abc import Callable
from types import FrameType, ModuleType
from typing import Any

from interop_core.plugin import WorkersPlan

#: Frameworks whose runtime threads make a forked worker that uses them hang.
THREADED = ("jax", "tensorflow")
#: The issue to read about it.
ISSUE = "jax#9190"

#: The sentence said for each loader whose start method this module changed, so that a
#: second call on it says the same (its multiprocessing_context is then set).
_changed: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def plan_workers(loader: Any, target: str = "") -> WorkersPlan:
    """What :func:`safe_workers` would do with ``loader``, changing nothing: the built-in
    plugins' answer to the ``interop_worker_policy`` hook (``WorkersPlan(None, "")`` when
    the object is no DataLoader with workers).

    ``target`` is the framework the batches go to: converting them into JAX starts JAX's
    threads before the next pass forks, even when JAX is not imported yet.
    """
    data = sys.modules.get("torch.utils.data")
    if data is None or not isinstance(loader, data.DataLoader) or loader.num_workers <= 0:
        return WorkersPlan(None, "")
    if loader in _changed:
        return WorkersPlan(None, _changed[loader])
    loaded = [m for m in THREADED if m in sys.modules or m == target]
    hazard = (
        f" With {' and '.join(loaded)} loaded, a worker that runs {loaded[0]} code may hang "
        f"({ISSUE})."
        if loaded
        else ""
    )
    context = loader.multiprocessing_context
    if context is not None:
        method = context.get_start_method()
        said = f"DataLoader workers start by {method}, the loader's multiprocessing_context."
        return WorkersPlan(None, said + (hazard if method == "fork" else ""))
    method = _process_start_method()
    if method != "fork":
        return WorkersPlan(None, f"DataLoader workers start by {method}, this process's start "
                           "method.")  # fmt: skip
    if not loaded:
        return WorkersPlan(None, "")  # fork, and nothing that makes it hang is loaded
    if getattr(loader, "_iterator", None) is not None:
        # persistent_workers: the workers of the first pass serve every pass; a new start
        # method would reach only workers that are never started.
        return WorkersPlan(None, "DataLoader workers start by fork: they were started "
                           f"before this call (persistent_workers=True).{hazard}")  # fmt: skip
    safe = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    why_not = _cannot_respawn(loader)
    if why_not:
        return WorkersPlan(None, f"DataLoader workers start by fork, kept because {safe} "
                           f"cannot start them: {why_not}.{hazard} Fix that, or pass "
                           "multiprocessing_context= to the DataLoader.")  # fmt: skip
    said = (
        f"DataLoader workers start by {safe}, not fork: {' and '.join(loaded)} "
        f"{'is' if len(loaded) == 1 else 'are'} loaded, and a worker forked after "
        f"{'its' if len(loaded) == 1 else 'their'} threads started hangs as soon as it runs "
        f"{loaded[0]} code ({ISSUE})."
    )
    if not loader.persistent_workers:
        said += (
            " Each pass starts new workers, which import the main module again: "
            "persistent_workers=True starts them once."
        )
    return WorkersPlan(safe, said)


def safe_workers(
    loader: Any, target: str = "", policy: Callable[[Any, str], WorkersPlan] = plan_workers
) -> str:
    """Make ``loader``'s workers start as ``policy`` plans (the ``interop_worker_policy``
    hook's answer; the built-in one: by a method safe with JAX and TF loaded, where they
    would fork after their threads started); say what they start by and why ("" for
    anything but a torch DataLoader with workers, and for fork with neither loaded).

    Call it before the loader's first pass (the method is read when a pass starts its
    workers); calling it again is harmless.
    """
    plan = policy(loader, target)
    if plan.method is not None:
        # The property's setter (allowed after construction; read at each iter()).
        loader.multiprocessing_context = plan.method
        _changed[loader] = plan.sentence
    return plan.sentence


def _process_start_method() -> str:
    """The start method a DataLoader without a context uses, without fixing it (the first
    listed is the platform's default, as multiprocessing documents)."""
    default = multiprocessing.get_all_start_methods()[0]
    return multiprocessing.get_start_method(allow_none=True) or default


def _cannot_respawn(loader: Any) -> str:
    """Why ``loader``'s workers cannot start by forkserver or spawn ("" when they can): what
    each worker is sent must pickle, and the main module must import again without running
    the code that made the loader."""
    main = sys.modules.get("__main__")
    main_file = getattr(main, "__file__", None)
    if main is not None and main_file is not None:
        unguarded = _unguarded_main(main, main_file)
        if unguarded:
            return unguarded
    parts = (
        ("dataset", loader.dataset),
        ("collate_fn", loader.collate_fn),
        ("worker_init_fn", loader.worker_init_fn),
    )
    for name, obj in parts:
        why = _unpicklable(obj, main_importable=main_file is not None)
        if why:
            return f"the DataLoader's {name} {why}"
    return ""


class _Discard:
    """A file that keeps nothing: pickling into it only checks that pickling works."""

    def write(self, data: Any) -> int:
        return len(data)


class _Checker(pickle.Pickler):
    """A pickler that only checks: it skips torch tensors (a worker gets them through shared
    memory; pickled here they would be copied whole) and, when ``__main__`` is no file
    (``python -c``, a notebook), refuses what only it defines: a worker cannot import it."""

    def __init__(self, main_importable: bool) -> None:
        # Buffers that allow it (numpy's) are handed out of band: never copied.
        super().__init__(_Discard(), protocol=5, buffer_callback=lambda b: False)
        self._main_importable = main_importable
        torch = sys.modules.get("torch")
        self._tensor: type | None = torch.Tensor if torch is not None else None

    def reducer_override(self, obj: Any) -> Any:
        if self._tensor is not None and isinstance(obj, self._tensor):
            return (_skipped, ())
        if not self._main_importable:
            # A class or function pickles by reference; an instance by its class.
            owner = obj if isinstance(obj, type) or callable(obj) else type(obj)
            if getattr(owner, "__module__", None) == "__main__":
                name = getattr(owner, "__qualname__", repr(owner))
                raise pickle.PicklingError(f"{name} is defined in __main__, which is no file")
        return NotImplemented


def _skipped() -> None:
    """What a skipped object pickles as (nothing: the pickle is never read)."""


def _unpicklable(obj: Any, main_importable: bool) -> str:
    """Why ``obj`` cannot be sent to a worker ("" when it can)."""
    if obj is None:
        return ""
    try:
        _Checker(main_importable).dump(obj)
    except Exception as exc:  # any failure to pickle: PicklingError, TypeError, ...
        text = str(exc).splitlines()[0] if str(exc) else ""
        text = text if len(text) <= 120 else text[:117] + "..."
        return f"cannot be pickled ({type(exc).__name__}: {text})"
    return ""


def _unguarded_main(main: ModuleType, path: str) -> str:
    """Why re-importing the main module would run the code making this call again ("" when
    the call runs inside an ``if __name__ == "__main__":`` block, or from no top-level
    code of the main module)."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and not (
        frame.f_code.co_name == "<module>" and frame.f_globals is vars(main)
    ):
        frame = frame.f_back
    if frame is None:
        return ""  # not called while the main module's top-level code runs
    line = frame.f_lineno
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
    except (OSError, SyntaxError, ValueError):
        return f"the main module {path} cannot be read to check its __main__ guard"
    guards = [n for n in tree.body if isinstance(n, ast.If) and _is_main_guard(n.test)]
    if any(g.lineno <= line <= (g.end_lineno or g.lineno) for g in guards):
        return ""
    return (
        f"the main module ({path}) runs this code outside an "
        '`if __name__ == "__main__":` block, which its workers would run again'
    )


def _is_main_guard(test: ast.expr) -> bool:
    """``__name__ == "__main__"`` (either way round)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return False
    if not isinstance(test.ops[0], ast.Eq):
        return False
    sides = [test.left, test.comparators[0]]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    consts = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    return len(names) == 1 and len(consts) == 1
