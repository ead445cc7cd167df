"""DataLoader workers with JAX loaded (issue 20, "Workers"): a start method safe after JAX's
threads started, chosen before a pass forks, and said in a sentence.

The soak runs in a child process (its own session, killed whole on timeout): a worker forked
after JAX ran a computation hangs as soon as it runs JAX code (jax#9190), so without the
safe start method the child never finishes. The other checks read what
``plan_workers``/``safe_workers`` decide, starting no worker.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import need

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(),
    reason="workers fork only where fork exists (Linux, macOS)",
)

#: A script run as a child's main module: a dataset whose items JAX makes in the worker,
#: a JAX computation in the parent (its threads run), then three passes of a DataLoader
#: with two workers converted to JAX. argv[1]: "direct" calls safe_workers() itself;
#: "to" relies on to() alone.
SOAK = '''
import json
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
from torch.utils.data import DataLoader

from interop_core import to
from interop_plugins.kinds.loader_workers import safe_workers


class JaxMade:
    """Twelve items, each made by JAX in the worker (a jnp transform)."""

    def __len__(self):
        return 12

    def __getitem__(self, i):
        return np.asarray(jnp.full((3,), i, jnp.float32) * 2.0), np.int32(i)


def main(how):
    (jnp.ones((128, 128)) @ jnp.ones((128, 128))).block_until_ready()
    loader = DataLoader(JaxMade(), batch_size=4, num_workers=2)
    said = safe_workers(loader, "jax") if how == "direct" else ""
    batches = to(loader, "jax")
    context = loader.multiprocessing_context
    if context is None:  # to() chose nothing: a pass would fork, and hang
        print(json.dumps({"method": None, "said": said}), flush=True)
        return
    passes = []
    for _ in range(3):
        seen = []
        for x, i in batches:
            assert isinstance(x, jax.Array) and isinstance(i, jax.Array)
            assert x.dtype == jnp.float32 and i.dtype == jnp.int32 and x.shape == (4, 3)
            expected = np.repeat(2.0 * np.asarray(i)[:, None], 3, axis=1)
            np.testing.assert_array_equal(np.asarray(x), expected)
            seen += np.asarray(i).tolist()
        passes.append(seen)
    out = {"method": context.get_start_method(), "said": said, "passes": passes}
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
'''


def run_child(script: str, args: list[str], tmp_path: Path, timeout: float) -> dict[str, Any]:
    """Run ``script`` as a main module; its last stdout line, read as JSON. The child gets a
    session of its own, so a timeout kills it with every worker it started."""
    path = tmp_path / "child_main.py"
    path.write_text(textwrap.dedent(script))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
    child = subprocess.Popen(
        [sys.executable, str(path), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, cwd=tmp_path, env=env, start_new_session=True,
    )  # fmt: skip
    try:
        out, err = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        out, err = child.communicate()
        pytest.fail(f"the child did not finish in {timeout} s (hung workers?):\n{err[-3000:]}")
    assert child.returncode == 0, err[-5000:]
    return dict(json.loads(out.strip().splitlines()[-1]))


def check_soak(seen: dict[str, Any]) -> None:
    assert seen["method"] == "forkserver"
    assert seen["passes"] == [list(range(12))] * 3


def test_workers_that_run_jax_finish_every_pass_with_jax_running(tmp_path: Path) -> None:
    need("torch")
    need("jax")
    seen = run_child(SOAK, ["direct"], tmp_path, timeout=400)
    check_soak(seen)
    assert "forkserver, not fork" in seen["said"] and "jax#9190" in seen["said"]
    assert "persistent_workers=True" in seen["said"]


def test_to_makes_workers_safe_by_itself(tmp_path: Path) -> None:
    need("torch")
    need("jax")
    check_soak(run_child(SOAK, ["to"], tmp_path, timeout=400))


def test_the_converted_iterator_says_how_its_workers_start() -> None:
    need("torch")
    need("jax")
    import interop_core

    it = interop_core.to(loader(), "jax")
    assert "forkserver, not fork" in it.workers and "jax#9190" in it.workers
    assert [it.workers] == [p.workers for p in [iter(it)]]
    assert interop_core.to(loader(num_workers=0), "jax").workers == ""


# -- what is decided, starting no worker ------------------------------------------------------


class Items:
    """A picklable map-style dataset of numpy rows."""

    def __len__(self) -> int:
        return 8

    def __getitem__(self, i: int) -> Any:
        np = need("numpy")
        return np.full((2,), i, np.float32)


def loader(**kwargs: Any) -> Any:
    torch = need("torch")
    kwargs.setdefault("num_workers", 2)
    return torch.utils.data.DataLoader(Items(), batch_size=4, **kwargs)


def default_is_fork() -> None:
    method = multiprocessing.get_start_method(allow_none=True)
    if (method or multiprocessing.get_all_start_methods()[0]) != "fork":
        pytest.skip(f"this process starts workers by {method}, not fork")


def test_a_context_the_user_set_is_never_changed() -> None:
    from interop_plugins.kinds.loader_workers import safe_workers

    need("jax")
    dl = loader(multiprocessing_context="fork")
    context = dl.multiprocessing_context
    said = safe_workers(dl, "jax")
    assert dl.multiprocessing_context is context
    assert said.startswith("DataLoader workers start by fork, the loader's")
    assert "may hang (jax#9190)" in said
    spawned = loader(multiprocessing_context="spawn")
    assert safe_workers(spawned, "jax") == (
        "DataLoader workers start by spawn, the loader's multiprocessing_context."
    )


def test_a_picklable_loader_gets_forkserver_and_says_why() -> None:
    from interop_plugins.kinds.loader_workers import plan_workers, safe_workers

    need("jax")
    default_is_fork()
    dl = loader(persistent_workers=True)
    assert plan_workers(dl, "jax").method == "forkserver"
    assert dl.multiprocessing_context is None  # planning changes nothing
    said = safe_workers(dl, "jax")
    assert dl.multiprocessing_context.get_start_method() == "forkserver"
    # "jax is loaded", or "jax and tensorflow are loaded" after tests that imported TF.
    assert re.match(r"DataLoader workers start by forkserver, not fork: jax (is|and)", said)
    assert "persistent_workers" not in said  # they are persistent already
    assert safe_workers(dl, "jax") == said  # a second call says the same, changes nothing


def test_an_unpicklable_loader_keeps_fork_and_says_so() -> None:
    from interop_plugins.kinds.loader_workers import safe_workers

    need("jax")
    default_is_fork()
    dl = loader(collate_fn=lambda batch: batch)
    said = safe_workers(dl, "jax")
    assert dl.multiprocessing_context is None
    assert said.startswith("DataLoader workers start by fork, kept because forkserver cannot")
    assert "collate_fn cannot be pickled" in said and "jax#9190" in said


def test_nothing_to_do_without_workers_or_a_dataloader() -> None:
    from interop_plugins.kinds import loader_workers

    need("jax")
    default_is_fork()
    assert loader_workers.safe_workers(loader(num_workers=0), "jax") == ""
    assert loader_workers.safe_workers(iter([1, 2]), "jax") == ""
    dl = loader()
    with pytest.MonkeyPatch.context() as patch:  # as if neither JAX nor TF were loaded
        patch.setattr(loader_workers, "THREADED", ("no_such_framework",))
        assert loader_workers.safe_workers(dl, "torch") == ""
    assert dl.multiprocessing_context is None


#: Loaders made where a forkserver worker could not rebuild them, as JSON of what each gets.
PLANS = """
import json
import sys

from torch.utils.data import DataLoader

from interop_plugins.kinds.loader_workers import plan_workers


class Rows:
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return i


unguarded = plan_workers(DataLoader(Rows(), num_workers=1), "jax")
if __name__ == "__main__":
    guarded = plan_workers(DataLoader(Rows(), num_workers=1), "jax")
    print(json.dumps({"unguarded": unguarded, "guarded": guarded}))
"""


def test_code_outside_the_main_guard_keeps_fork(tmp_path: Path) -> None:
    need("torch")
    default_is_fork()
    seen = run_child(PLANS, [], tmp_path, timeout=120)
    method, said = seen["unguarded"]
    assert method is None and "kept because forkserver cannot start them" in said
    assert 'outside an `if __name__ == "__main__":` block' in said
    assert seen["guarded"][0] == "forkserver"


def test_a_dataset_defined_in_a_main_that_is_no_file_keeps_fork() -> None:
    need("torch")
    default_is_fork()
    code = textwrap.dedent(PLANS).replace("unguarded = ", "unguarded = None and ")
    code = code.replace('if __name__ == "__main__":', "if True:")
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    method, said = json.loads(done.stdout.strip().splitlines()[-1])["guarded"]
    assert method is None
    assert "dataset cannot be pickled" in said and "Rows is defined in __main__" in said
