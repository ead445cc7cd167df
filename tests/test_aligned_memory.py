"""The opt-in 64-byte aligned numpy allocator (plugins/frameworks/aligned_memory.py).

With it on, what numpy allocates reaches JAX and TensorFlow zero-copy: checked for 20 sizes x
5 dtypes x the ways arrays are made (constructors, random, astype, indexing, concatenate,
prefix slices, torch.from_numpy of them) with the frameworks' own pointer APIs. The rest:
its scope (ContextVar: threads, asyncio), arrays outliving a switch, numpy's realloc paths
and interpreter exit, each in a child process (a wrong free crashes the interpreter).

The dtypes avoid 64-bit ones: JAX holds them only with the global jax_enable_x64 flag.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import threading
import types
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from adapters import own_ptr
from conftest import need

from interop_core import OptionError, PluginError, explain, to

np = need("numpy")

from interop_plugins.frameworks import aligned_memory  # noqa: E402

EXTENSION = "interop_plugins.frameworks._aligned_alloc"
#: Element counts: 1 element to 5 Mi, odd ones and ones just past a power of two included.
SIZES = (
    1, 2, 3, 7, 16, 33, 100, 255, 1000, 1023, 4097, 10_007, 65_536, 100_003, 262_143,
    1 << 20, 1_000_003, 3 << 20, 4_194_305, 5_000_011,
)  # fmt: skip
DTYPES = ("float32", "float16", "int32", "int16", "bool")


def _random(rng: Any, n: int, dt: Any, floats: Callable[..., Any]) -> Any:
    """``floats`` (rng.random or rng.standard_normal) made into ``dt`` the usual way."""
    if dt == np.float32:
        return floats(n, dtype=np.float32)  # the generator's own allocation
    if dt.kind == "f":
        return floats(n).astype(dt)
    if dt.kind == "b":
        return floats(n) < 0.5
    return (floats(n) * 1000).astype(dt)


def made(n: int, dtype: str) -> dict[str, Any]:
    """Arrays of ``n`` elements of ``dtype``, made the ways user code makes them."""
    dt = np.dtype(dtype)
    rng = np.random.default_rng(n)
    src = (np.arange(2 * n) % 97).astype(dt)
    return {
        "empty": np.empty(n, dt),
        "ones": np.ones(n, dt),
        "zeros": np.zeros(n, dt),
        "full": np.full(n, 3, dt),
        "random": _random(rng, n, dt, rng.random),
        "standard_normal": _random(rng, n, dt, rng.standard_normal),
        "astype": (np.arange(n) % 1000).astype(dt),
        "fancy": src[np.arange(0, 2 * n, 2)],
        "boolean": src[np.arange(2 * n) % 2 == 1],
        "concatenate": np.concatenate([np.ones(n // 2, dt), np.full(n - n // 2, 2, dt)]),
        "prefix": np.full(2 * n, 5, dt)[:n],
        "2-d": np.ones((n, 3), dt),
    }


@pytest.fixture
def aligned() -> Iterator[None]:
    """The aligned allocator on for the test, numpy's previous handler back after it."""
    token = aligned_memory.switch(True)
    try:
        yield
    finally:
        aligned_memory.restore(token)


def child(code: str, timeout: float = 240) -> str:
    """Run ``code`` in a fresh interpreter; its stdout, after checking it exited cleanly."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    run = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    assert run.returncode == 0, f"exit status {run.returncode}\n{run.stderr[-3000:]}"
    assert "Fatal" not in run.stderr, run.stderr[-3000:]
    return run.stdout


def test_available_here() -> None:
    """The extension is built in this environment and this numpy has NEP 49 handlers."""
    assert aligned_memory.available() is None


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", SIZES)
def test_every_allocation_reaches_jax_and_tensorflow_zero_copy(
    aligned: None, n: int, dtype: str
) -> None:
    jax, tf, torch = need("jax"), need("tensorflow"), need("torch")
    wrong = []
    for how, a in made(n, dtype).items():
        address = a.ctypes.data
        if address % 64 or not aligned_memory.owns(a):
            wrong.append(f"{how}: address {address} % 64 = {address % 64}")
            continue
        t = torch.from_numpy(a)
        assert t.data_ptr() == address
        for src in (a, t):
            for target in ("jax", "tensorflow"):
                y = to(src, target)
                if not (explain(src, target).zero_copy and own_ptr(y) == address):
                    wrong.append(f"{how}: {type(src).__name__} -> {target} copied")
                # the bytes (a bool or float16 compare of 15 MiB is slow; the dtype is below)
                np.testing.assert_array_equal(np.asarray(y).view(np.uint8), a.view(np.uint8))
                assert y.dtype == (a.dtype if target == "jax" else tf.as_dtype(a.dtype))
        assert isinstance(to(a, "jax"), jax.Array)
    assert not wrong, "\n".join(wrong)


def test_share_with_and_without(aligned: None) -> None:
    """The handler makes 100% of the matrix aligned; numpy's default leaves part unaligned
    (counted, not asserted beyond "not all": arrays of 1 MiB and more sit 16 past a
    boundary with glibc's malloc)."""
    counts: dict[bool, list[int]] = {}
    for on in (True, False):
        token = aligned_memory.switch(on)
        try:
            seen = [
                a.ctypes.data % 64 == 0
                for n in SIZES[::3]
                for dtype in DTYPES
                for a in made(n, dtype).values()
            ]
        finally:
            aligned_memory.restore(token)
        counts[on] = [sum(seen), len(seen)]
    assert counts[True][0] == counts[True][1], counts
    assert counts[False][0] < counts[False][1], counts
    print(f"aligned with the handler {counts[True]}, without {counts[False]}")


def test_switch_restore_and_active() -> None:
    assert not aligned_memory.active()
    outer = aligned_memory.switch(True)
    try:
        assert aligned_memory.active()
        a = np.ones(1 << 18)
        inner = aligned_memory.switch(False)
        try:
            assert not aligned_memory.active()
            b = np.ones(1 << 18)
            assert not aligned_memory.owns(b)
        finally:
            aligned_memory.restore(inner)
        assert aligned_memory.active()
    finally:
        aligned_memory.restore(outer)
    assert not aligned_memory.active()
    assert aligned_memory.owns(a) and aligned_memory.owns(a[5:]) and aligned_memory.owns(a.T)
    assert not aligned_memory.owns(np.frombuffer(a.tobytes(), a.dtype))  # numpy allocated none
    assert not aligned_memory.owns(a.tolist())


def test_restore_takes_only_a_token() -> None:
    with pytest.raises(OptionError, match="takes the token switch"):
        aligned_memory.restore(np.empty(1))  # type: ignore[arg-type]


def test_scope_is_the_context(aligned: None) -> None:
    """numpy's handler lives in a ContextVar: inherited by what copies the context (asyncio
    tasks, asyncio.to_thread); a thread begins with a fresh context, so numpy's default."""
    name = np._core.multiarray.get_handler_name

    def handler_and_owns() -> tuple[str, bool]:
        return name(), aligned_memory.owns(np.empty(1 << 16))

    ours = (name(), True)
    assert ours[0] == "interop_core_aligned64"
    seen: dict[str, tuple[str, bool]] = {}
    thread = threading.Thread(target=lambda: seen.setdefault("thread", handler_and_owns()))
    thread.start()
    thread.join()
    with ThreadPoolExecutor(1) as pool:
        seen["pool"] = pool.submit(handler_and_owns).result()

    def own_switch() -> tuple[str, bool]:
        token = aligned_memory.switch(True)
        try:
            return handler_and_owns()
        finally:
            aligned_memory.restore(token)

    with ThreadPoolExecutor(1) as pool:
        seen["pool, switched there"] = pool.submit(own_switch).result()
        seen["pool, after"] = pool.submit(handler_and_owns).result()

    async def main() -> None:
        async def switched_off() -> tuple[str, bool]:
            aligned_memory.switch(False)  # only this task's context copy
            return handler_and_owns()

        seen["task"] = await asyncio.create_task(asyncio.sleep(0, handler_and_owns()))
        seen["to_thread"] = await asyncio.to_thread(handler_and_owns)
        seen["task switched off"] = await asyncio.create_task(switched_off())
        seen["after that task"] = handler_and_owns()

    asyncio.run(main())
    # Python 3.14 lets threads start in a copy of the starter's context where
    # sys.flags.thread_inherit_context is set (the default of free-threaded builds only).
    inherit = getattr(sys.flags, "thread_inherit_context", False)
    fresh = ours if inherit else ("default_allocator", False)
    assert seen.pop("thread") == fresh and seen.pop("pool") == fresh
    assert seen == {
        "pool, switched there": ours,
        "pool, after": ("default_allocator", False),
        "task": ours,
        "to_thread": ours,
        "task switched off": ("default_allocator", False),
        "after that task": ours,
    }


def test_follows_numpys_hugepage_setting() -> None:
    ext = pytest.importorskip(EXTENSION)
    multiarray = np._core.multiarray
    was_numpy = multiarray._set_madvise_hugepage(False)
    was_ours = ext.set_hugepage(True)
    try:
        aligned_memory.restore(aligned_memory.switch(True))
        assert ext.set_hugepage(True) is False  # copied from numpy by switch()
        multiarray._set_madvise_hugepage(True)
        aligned_memory.restore(aligned_memory.switch(True))
        assert ext.set_hugepage(True) is True
    finally:
        multiarray._set_madvise_hugepage(was_numpy)
        ext.set_hugepage(was_ours)


def test_without_the_extension(monkeypatch: pytest.MonkeyPatch) -> None:
    """No C compiler at install time: available() says so, switch() raises a PluginError
    saying what to do, active() and owns() answer False."""
    package = sys.modules["interop_plugins.frameworks"]
    monkeypatch.setitem(sys.modules, EXTENSION, None)
    monkeypatch.delattr(package, "_aligned_alloc", raising=False)
    why = aligned_memory.available()
    assert why is not None and "not built" in why and "C compiler" in why
    with pytest.raises(PluginError, match=r"(?s)aligned numpy allocator is unavailable.*reinstall"):
        aligned_memory.switch(True)
    assert not aligned_memory.active() and not aligned_memory.owns(np.empty(4))


def test_with_a_numpy_without_nep49(monkeypatch: pytest.MonkeyPatch) -> None:
    package = sys.modules["interop_plugins.frameworks"]

    def no_api() -> Any:
        raise RuntimeError("numpy's C API (feature version 0xd) predates NEP 49")

    fake = types.SimpleNamespace(get_handler=no_api)
    monkeypatch.setitem(sys.modules, EXTENSION, fake)
    monkeypatch.setattr(package, "_aligned_alloc", fake, raising=False)
    why = aligned_memory.available()
    assert why is not None and "NEP 49" in why
    with pytest.raises(PluginError, match="predates NEP 49"):
        aligned_memory.switch(False)


def test_importing_the_module_imports_nothing() -> None:
    out = child(
        """
        import sys
        import interop_plugins.frameworks.aligned_memory as m
        print(sorted(k for k in ("numpy", "interop_plugins.frameworks._aligned_alloc")
                     if k in sys.modules))
        assert m.available() is None
        print(m.active())
        """
    )
    assert out.split() == ["[]", "False"]


def test_zeros_stay_lazy() -> None:
    """np.zeros uses calloc: 256 MiB of zeros costs almost no resident memory."""
    if not sys.platform.startswith("linux"):
        pytest.skip("reads /proc/self/status")
    out = child(
        """
        import numpy as np
        from interop_plugins.frameworks import aligned_memory as m
        def rss():
            for line in open("/proc/self/status"):
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        m.switch(True)
        before = rss()
        z = np.zeros(256 << 20, np.uint8)
        grew = rss() - before
        assert z.ctypes.data % 64 == 0 and m.owns(z)
        assert not z[:: 1 << 20].any() and not z[-100:].any()
        print(grew)
        """
    )
    assert int(out) < 32 << 20, f"np.zeros(256 MiB) made {int(out) >> 20} MiB resident"


def test_realloc_paths_and_pickle() -> None:
    """numpy grows and shrinks data with the handler's realloc (np.fromiter of unknown
    length, ndarray.resize): the data moves to a new 64-byte boundary and keeps its values,
    also after the handler was switched off (an array keeps its own handler)."""
    out = child(
        """
        import pickle
        import numpy as np
        from interop_plugins.frameworks import aligned_memory as m
        ok = lambda a: a.ctypes.data % 64 == 0 and m.owns(a)
        m.switch(True)
        for n in (1, 7, 100, 4097, 100_003, 3 << 20):
            a = np.fromiter((i % 251 for i in range(n)), dtype=np.float32)
            assert ok(a) and a.shape == (n,) and a[-1] == (n - 1) % 251, n
        a = np.arange(10, dtype=np.int64)
        for round in range(200):
            n = [3, 10_000, 7, 1 << 20, 1, 5_000][round % 6]
            a.resize(n, refcheck=False)
            a[:] = np.arange(n)
            assert ok(a) and a[-1] == n - 1
        grown = np.arange(1000.0)
        token = m.switch(False)
        grown.resize(1 << 21, refcheck=False)  # realloc by the array's handler: ours
        assert ok(grown) and (grown[:1000] == np.arange(1000.0)).all()
        plain = np.arange(1000.0)
        m.restore(token)
        plain.resize(1 << 21, refcheck=False)  # numpy's realloc for numpy's array
        assert not m.owns(plain) and (plain[:1000] == np.arange(1000.0)).all()
        for protocol in range(2, 6):
            x = np.random.default_rng(protocol).standard_normal((33, 65)).astype(np.float32)
            assert ok(x)
            y = pickle.loads(pickle.dumps(x, protocol=protocol))
            assert (y == x).all() and y.dtype == x.dtype
            assert (np.array(y) == x).all() and ok(np.array(y))
        print("done")
        """
    )
    assert out.split() == ["done"]


def test_arrays_outlive_switches_and_the_interpreter() -> None:
    """Arrays of both handlers alive together, switched on and off many times, freed in
    random order, some alive (in cycles, on a thread's stack, shared with JAX) at exit."""
    need("jax")
    out = child(
        """
        import gc, random, threading
        import numpy as np
        import jax
        from interop_core import to
        from interop_plugins.frameworks import aligned_memory as m
        rng = random.Random(0)
        alive = []
        for round in range(3000):
            token = m.switch(round % 2 == 0)
            size = rng.choice([1, 8, 200, 5000, 70_000, 1 << 20])
            a = np.full(size, round % 256, np.uint8)
            assert m.owns(a) == (round % 2 == 0)
            alive.append((a, round))
            m.restore(token)
            while len(alive) > 40:
                b, r = alive.pop(rng.randrange(len(alive)))
                assert b[0] == b[-1] == r % 256 and m.owns(b) == (r % 2 == 0)
                del b
        m.switch(True)
        kept = [a for a, _ in alive]
        cycle = {"a": np.ones(1 << 20)}
        cycle["self"] = cycle
        shared = np.arange(1 << 16, dtype=np.float32)
        j = to(shared, "jax")
        assert j.unsafe_buffer_pointer() == shared.ctypes.data and m.owns(shared)
        del shared
        stop = threading.Event()
        def hold():
            m.switch(True)
            mine = np.ones(1 << 18)
            assert m.owns(mine)
            stop.wait()
        threading.Thread(target=hold, daemon=True).start()
        m.switch(False)
        assert m.owns(cycle["a"])
        print("done")
        """
    )
    assert out.split() == ["done"]


def test_threads_free_each_others_arrays() -> None:
    """Threads with the handler on allocate, threads without it free (and the reverse)."""
    out = child(
        """
        import queue, threading
        import numpy as np
        from interop_plugins.frameworks import aligned_memory as m
        q = queue.Queue(maxsize=64)
        errors = []
        def make(on):
            m.switch(on)
            for i in range(3000):
                a = np.full((i % 50) * 997 + 1, i % 100, np.int32)
                if on and not (a.ctypes.data % 64 == 0 and m.owns(a)):
                    errors.append(("unaligned", i))
                q.put((a, on, i))
        def take():
            for _ in range(6000):
                a, on, i = q.get()
                if m.owns(a) != on or a[-1] != i % 100:
                    errors.append(("wrong", on, i))
                a.resize(a.size * 2 + 1, refcheck=False)
                del a
        threads = [threading.Thread(target=make, args=(on,)) for on in (True, False)]
        threads += [threading.Thread(target=take)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors[:5]
        print("done")
        """
    )
    assert out.split() == ["done"]
