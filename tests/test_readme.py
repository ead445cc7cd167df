"""Every ```python block of README.md runs, so the README cannot drift from the code.

Blocks run in the order they appear, one subprocess per ``## `` section, in one namespace
(later blocks of a section build on earlier ones), after the section's prelude below. A
prelude builds the stand-ins the README names for the reader's own objects (``np_array``,
``jax_fn``, ``pipe``...) and imports the usual aliases (``np``, ``tf``, ``jax``, ``jnp``);
it never hides a step the reader would need. Tracebacks name README.md and its line numbers.

A section whose frameworks are missing skips (fails in a nox session that requires them);
one that needs GPUs is marked ``gpu`` and skips without them. The first line of a plain
``` block that follows a python block (a ``Route ...`` line of ``explain()``'s output) must
be printed by the section. A block that is a deliberate sketch is preceded by
``<!-- not run: reason -->``; keep those rare.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import pytest
from conftest import free_port, need, need_gpus

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
#: Seconds one section may run (imports of every framework included, on a loaded machine).
TIMEOUT = 300

_NOT_RUN = re.compile(r"^<!--\s*not run:\s*(?P<reason>.*?)\s*-->$")


class Block(NamedTuple):
    section: str
    line: int  # README line of the block's first line of code
    code: str
    not_run: str | None  # the reason given in <!-- not run: ... -->
    shows: str | None  # the first line of the output block that follows it


def readme_blocks(text: str) -> list[Block]:
    """The ```python blocks of ``text`` with their section, line and shown output."""
    lines = text.splitlines()
    blocks: list[Block] = []
    section, i = "", 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("## "):
            section = line[3:].strip()
        if not line.startswith("```"):
            i += 1
            continue
        lang, start = line[3:].strip(), i + 1
        end = next(j for j in range(start, len(lines)) if lines[j].startswith("```"))
        if lang == "python":
            before = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
            marked = _NOT_RUN.match(before.strip())
            after = end + 1
            while after < len(lines) and not lines[after].strip():
                after += 1
            shows = None
            if after + 1 < len(lines) and lines[after].strip() == "```":
                shows = lines[after + 1]
            code = "\n".join(lines[start:end])
            blocks.append(
                Block(section, start + 1, code, marked.group("reason") if marked else None, shows)
            )
        i = end + 1
    return blocks


@dataclass(frozen=True)
class Section:
    """What a README section's blocks need: frameworks, GPUs, and a prelude (Python run
    first, in the same namespace; ``{port}`` becomes a free TCP port)."""

    needs: tuple[str, ...] = ()
    gpus: int = 0
    modules: tuple[str, ...] = ()  # other importable modules it needs (pytest.importorskip)
    prelude: str = ""
    env: tuple[tuple[str, str], ...] = ()


_ARRAYS = """
import array
import interop_core
import numpy as np, torch, jax, jax.numpy as jnp, tensorflow as tf
import PIL.Image

np_array = np.arange(12, dtype=np.float32).reshape(3, 4)
torch_tensor = torch.arange(12, dtype=torch.float32).reshape(3, 4)
jax_array = jnp.arange(12, dtype=jnp.float32).reshape(3, 4)


class _DLPackOnly:  # an object of some other library that speaks only DLPack
    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


obj_with___dlpack__ = _DLPackOnly(torch.arange(4, dtype=torch.float32))
"""

_FUNCTIONS = """
import jax, jax.numpy as jnp, tensorflow as tf, torch
from interop_core import to, explain


def jax_fn(params, x):
    return jnp.tanh(x @ params["w"]).sum()


def tf_fn(x):
    return tf.sin(x) * 2.0


def torch_fn(x):
    return torch.cos(x) * 3.0


torch_module = torch.nn.Linear(3, 2)
torch_params = {"w": torch.ones(3, 2, requires_grad=True)}
torch_x = torch.ones(4, 3)
jax_x = jnp.ones((4, 3))
"""

_PIPELINES = """
import os, tempfile
import numpy as np, jax, torch
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
from nvidia.dali import fn, pipeline_def
from interop_core import to, explain

root = tempfile.mkdtemp()  # two class folders of 5 files of 48 bytes: 10 samples
for label in (0, 1):
    os.makedirs(os.path.join(root, str(label)))
    for i in range(5):
        with open(os.path.join(root, str(label), f"{i}.bin"), "wb") as f:
            f.write(bytes([10 * label + i]) * 48)


@pipeline_def
def pipe_def(shard_id=0, num_shards=1):
    data, labels = fn.readers.file(
        file_root=root, file_filters=["*.bin"], shard_id=shard_id, num_shards=num_shards,
        name="Reader",
    )
    return data, labels


pipe = pipe_def(batch_size=4, num_threads=1, device_id=None)
mesh = Mesh(np.array(jax.devices()[:1]), ("data",))
torch_dataloader = torch.utils.data.DataLoader(
    # Images and int64 class labels, as a classification dataset yields them.
    torch.utils.data.TensorDataset(torch.ones(10, 3), torch.arange(10) % 3), batch_size=4
)
"""

_SHARDED = """
import numpy as np, jax, torch
import torch.distributed as dist
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Shard, distribute_tensor
from interop_core import to, explain

# One process holding one device: a DTensor's mesh has one rank per device of the jax mesh.
dist.init_process_group("gloo", init_method="tcp://127.0.0.1:{port}", rank=0, world_size=1)
device_mesh = init_device_mesh("cpu", (1,), mesh_dim_names=("d",))
jax_mesh = Mesh(np.array(jax.devices()[:1]), ("d",))
values = np.arange(32.0, dtype=np.float32).reshape(8, 4)
sharded_jax_array = jax.device_put(values, NamedSharding(jax_mesh, P("d")))
dtensor = distribute_tensor(torch.arange(32.0).reshape(8, 4), device_mesh, [Shard(0)])
"""

_GPUS = """
import numpy as np, cupy
from interop_core import to, explain

cupy_array = cupy.arange(1024 * 1024, dtype=cupy.float32).reshape(1024, 1024)
np_array = np.arange(12, dtype=np.float32).reshape(3, 4)
"""

#: Sections of README.md with python blocks. A section not listed runs with no prelude.
SECTIONS = {
    "What it does": Section(("numpy", "torch", "jax", "tensorflow"), modules=("PIL",),
                            prelude=_ARRAYS),
    "Functions": Section(("numpy", "torch", "jax", "tensorflow"), prelude=_FUNCTIONS),
    "Pipelines and iterators": Section(("numpy", "dali", "jax", "torch", "tensorflow"),
                                       prelude=_PIPELINES),
    "Sharded and distributed arrays": Section(("numpy", "torch", "jax"), prelude=_SHARDED),
    "Tables": Section(("numpy", "torch", "jax", "pyarrow", "duckdb"),
                      prelude="import numpy as np\nfrom interop_core import explain, to\n"),
    "Tensor files": Section(("numpy", "torch", "jax", "safetensors"),
                            prelude="import numpy as np\nfrom interop_core import explain, to\n"),
    "Sparse arrays": Section(("numpy", "torch", "scipy"),
                             prelude="import numpy as np\nfrom interop_core import explain, to\n"),
    "Ragged arrays": Section(("numpy", "torch", "jax", "tensorflow", "pyarrow"),
                             prelude="import numpy as np\nfrom interop_core import explain, to\n"),
    "Types": Section(("numpy", "torch")),
    "torch.compile": Section(("numpy", "torch")),
    "GPUs: PyTorch, JAX and CuPy on CUDA": Section(("numpy", "torch", "jax", "cupy"), gpus=2,
                                                   prelude=_GPUS),
}  # fmt: skip

# Runs the prelude, then each block compiled as README.md at its own line numbers.
_DRIVER = textwrap.dedent(
    """
    import json, sys
    job = json.load(sys.stdin)
    ns = {"__name__": "__main__"}
    exec(compile(job["prelude"], "tests/test_readme.py (prelude)", "exec"), ns)
    for line, code in job["blocks"]:
        print(f"--- README.md line {line}", flush=True)
        exec(compile("\\n" * (line - 1) + code, "README.md", "exec"), ns)
    """
)

BLOCKS = readme_blocks(README.read_text(encoding="utf-8"))
_RUN = [b for b in BLOCKS if b.not_run is None]


def _params() -> list[object]:
    titles = list(dict.fromkeys(b.section for b in _RUN))
    marks = {t: [pytest.mark.gpu] if SECTIONS.get(t, Section()).gpus else [] for t in titles}
    return [pytest.param(t, id=re.sub(r"\W+", "-", t).strip("-").lower(), marks=marks[t])
            for t in titles]  # fmt: skip


def test_the_readme_has_python_blocks_in_the_sections_configured_here() -> None:
    assert len(BLOCKS) >= 8, [b.line for b in BLOCKS]
    sections = {b.section for b in BLOCKS}
    assert set(SECTIONS) <= sections, f"sections named here but gone: {set(SECTIONS) - sections}"


def test_blocks_not_run_say_why() -> None:
    for block in BLOCKS:
        if block.not_run is not None:
            assert len(block.not_run) > 10, f"README.md line {block.line}: give the reason"


def test_readme_parser_reads_sections_markers_and_shown_output() -> None:
    text = textwrap.dedent(
        """\
        ## One

        ```python
        x = 1
        ```

        ```
        Route a -> b: shown
        more
        ```

        ## Two
        <!-- not run: a sketch of a plugin's layout -->
        ```python
        import nothing
        ```
        ```bash
        echo not python
        ```
        """
    )
    assert readme_blocks(text) == [
        Block("One", 4, "x = 1", None, "Route a -> b: shown"),
        Block("Two", 15, "import nothing", "a sketch of a plugin's layout", None),
    ]


@pytest.mark.parametrize("title", _params())
def test_readme_section_runs(title: str) -> None:
    section = SECTIONS.get(title, Section())
    for name in section.needs:
        need(name)
    if section.gpus:
        need_gpus(*(n for n in section.needs if n != "numpy"), count=section.gpus)
    for module in section.modules:
        pytest.importorskip(module)
    blocks = [b for b in _RUN if b.section == title]
    job = {
        "prelude": textwrap.dedent(section.prelude).replace("{port}", str(free_port())),
        "blocks": [(b.line, b.code) for b in blocks],
    }
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", **dict(section.env)}
    try:
        run = subprocess.run(
            [sys.executable, "-c", _DRIVER], input=json.dumps(job), capture_output=True,
            text=True, cwd=ROOT, env=env, timeout=TIMEOUT,
        )  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
        started = re.findall(r"--- (README\.md line \d+)", out)
        pytest.fail(f"section {title!r} ran past {TIMEOUT} s, in {started[-1:]}:\n{out[-3000:]}")
    assert run.returncode == 0, f"section {title!r}:\n{run.stdout[-3000:]}\n{run.stderr[-6000:]}"
    for block in blocks:
        if block.shows is not None:
            assert block.shows in run.stdout.splitlines(), (
                f"README.md line {block.line}: the output shown below the block starts with "
                f"{block.shows!r}, but the block printed:\n{run.stdout[-3000:]}"
            )
