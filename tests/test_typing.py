"""Typed results: what mypy and pyright say ``to()`` and ``explain()`` return, and typed
target tokens (``interop_core.targets``) at run time.

The samples in tests/typecheck/ call ``reveal_type()`` on names, aliases, tokens (a plugin's
own too), functions, iterators, containers, tables and ``explain()``; each checker runs once
over all of them (a module fixture) and the types it reveals must be those of its golden
file (tests/typecheck/mypy.txt, pyright.txt). A golden file names the frameworks' own types,
so it holds for the frameworks it was made with: the samples' frameworks must be installed,
and each typed (py.typed or stubs) or not as the header says, else the comparison skips
saying which differs (it fails where INTEROP_REQUIRE names them, or "typing" for the
checkers). Regenerate after reading the diff: ``python tests/test_typing.py --update``.
"""

from __future__ import annotations

import difflib
import importlib.util
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import need, required
from hostile import run_child

from interop_core import OptionError, Target, UnknownFrameworkError, default_registry, explain, to
from interop_core.targets import CUPY, JAX, NUMPY, PYARROW, SCIPY, TENSORFLOW, TORCH

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "tests" / "typecheck"
CHECKERS = ("mypy", "pyright")
#: The frameworks the samples import (their types appear in the golden files), and those
#: seen only through interop_core's own annotations (cupy: Any or Unknown unless typed).
SAMPLED = ("jax", "numpy", "pandas", "polars", "pyarrow", "scipy", "tensorflow", "torch")
ANNOTATED = ("cupy",)
UPDATE = "python tests/test_typing.py --update"
#: What a checker's run gives: the revealed types (golden lines), the errors, its version.
Checked = tuple[list[str], list[str], str]


# -- the situation the golden files hold for -------------------------------------------


def _typed(module: str) -> str:
    """How a type checker finds ``module``: "typed" (py.typed, or a -stubs package beside
    it), "untyped" (its source, or nothing readable: compiled), or "missing"."""
    spec = importlib.util.find_spec(module)
    if spec is None:
        return "missing"
    stubs = any((Path(p) / f"{module}-stubs").is_dir() for p in sys.path if p)
    places = spec.submodule_search_locations or []
    return "typed" if stubs or any((Path(p) / "py.typed").exists() for p in places) else "untyped"


def situation() -> dict[str, str]:
    """Each framework's state as the golden files' header records it (an annotated-only
    framework that is missing reads as untyped: both give Any)."""
    found = {m: _typed(m) for m in SAMPLED}
    found.update({m: _typed(m).replace("missing", "untyped") for m in ANNOTATED})
    return dict(sorted(found.items()))


def _golden_path(checker: str) -> Path:
    return SAMPLES / f"{checker}.txt"


def _read_golden(checker: str) -> tuple[dict[str, str], list[str]]:
    """The golden file's frameworks line (as a dict) and its revealed types."""
    header: dict[str, str] = {}
    body: list[str] = []
    for line in _golden_path(checker).read_text(encoding="utf-8").splitlines():
        if line.startswith("# frameworks:"):
            header = dict(p.split("=") for p in line.split(":", 1)[1].split())
        elif line and not line.startswith("#"):
            body.append(line)
    return header, body


def _sample_files() -> list[Path]:
    return sorted(SAMPLES.glob("*.py"))


def _expression(path: Path, line: int) -> str:
    """What the sample's ``reveal_type(...)`` on ``line`` reveals, as written."""
    text = path.read_text(encoding="utf-8").splitlines()[line - 1].split("  #")[0].strip()
    return text.removeprefix("reveal_type(").removesuffix(")")


# -- running the checkers ----------------------------------------------------------------


def _fallback_names(revealed: str) -> str:
    """mypy's NamedTuple as its name: ``tuple[str, ..., fallback=pkg.Route]`` -> ``pkg.Route``
    (its fields are the engine's, not this test's)."""
    while (at := revealed.find("fallback=")) >= 0:
        depth, start = 0, at
        while depth >= 0:  # back to the "[" that encloses fallback=
            start -= 1
            depth += {"]": 1, "[": -1}.get(revealed[start], 0)
        start -= len("tuple")
        end = revealed.index("]", at)
        revealed = revealed[:start] + revealed[at + len("fallback=") : end] + revealed[end + 1 :]
    return revealed


def _in_order(revealed: list[str]) -> list[str]:
    """By file, then line (mypy reports files in the order it checks them)."""
    return sorted(revealed, key=lambda r: (r.split(":")[0], int(r.split(":")[1].split()[0])))


def _run(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=ROOT, capture_output=True, text=True, timeout=900, check=False,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


def run_mypy() -> Checked:
    """mypy with the project's configuration (strict) over the samples: the revealed types,
    the errors, and mypy's version."""
    files = [str(p.relative_to(ROOT)) for p in _sample_files()]
    done = _run(
        [sys.executable, "-m", "mypy", "--config-file", "pyproject.toml", "--warn-unused-ignores",
         *files]
    )  # fmt: skip
    revealed, errors = [], []
    pattern = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+): (?P<kind>\w+): (?P<msg>.*)$")
    for line in done.stdout.splitlines():
        m = pattern.match(line)
        if m is None:
            continue
        path, number = ROOT / m["file"], int(m["line"])
        if m["kind"] == "note" and m["msg"].startswith("Revealed type is "):
            shown = _fallback_names(m["msg"].removeprefix("Revealed type is ").strip('"'))
            revealed.append(f"{path.name}:{number}  {_expression(path, number)}  =>  {shown}")
        elif m["kind"] == "error" and path.parent == SAMPLES:  # not the modules they import
            errors.append(line)
    if done.returncode not in (0, 1):
        errors.append(f"mypy exited {done.returncode}: {done.stderr[-2000:]}")
    version = _run([sys.executable, "-m", "mypy", "--version"]).stdout.split()[1]
    return _in_order(revealed), errors, version


def run_pyright() -> Checked:
    """pyright (tests/typecheck/pyrightconfig.json, this interpreter's packages) over the
    samples: the revealed types, the errors and warnings, and pyright's version."""
    env = {"PYRIGHT_PYTHON_IGNORE_WARNINGS": "1"}  # no "a newer version exists" check
    done = _run(
        [sys.executable, "-m", "pyright", "-p", str(SAMPLES / "pyrightconfig.json"),
         "--pythonpath", sys.executable, "--outputjson"],
        env,
    )  # fmt: skip
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        return [], [f"pyright exited {done.returncode}: {done.stdout[-2000:]}{done.stderr}"], "?"
    revealed, errors = [], []
    for d in report["generalDiagnostics"]:
        path, number = Path(d["file"]), d["range"]["start"]["line"] + 1
        if d["severity"] == "information" and d["message"].startswith("Type of "):
            shown = d["message"].rsplit(' is "', 1)[1].removesuffix('"')
            revealed.append(f"{path.name}:{number}  {_expression(path, number)}  =>  {shown}")
        else:
            errors.append(f"{path.name}:{number}: {d['severity']}: {d['message']}")
    return _in_order(revealed), errors, str(report.get("version", "?"))


def _checker_missing(checker: str) -> str | None:
    module = "mypy" if checker == "mypy" else "pyright"
    if importlib.util.find_spec(module) is None:
        return f"{checker} is not installed (pip install {module}; the lint extra has it)"
    return None


@pytest.fixture(scope="module")
def checked() -> Callable[[str], Checked]:
    """A checker's revealed types, errors and version over the samples: each checker runs
    once per module, when a test first asks for it (not at all when its test skips)."""
    done: dict[str, Checked] = {}

    def result(checker: str) -> Checked:
        if checker not in done:
            done[checker] = run_mypy() if checker == "mypy" else run_pyright()
        return done[checker]

    return result


def _skip_or_fail(why: str, names: set[str]) -> None:
    if names & required():  # a session that names them must run this test
        pytest.fail(why)
    pytest.skip(why)


@pytest.mark.parametrize("checker", CHECKERS)
def test_revealed_types_are_the_golden_ones(
    checker: str, checked: Callable[[str], Checked]
) -> None:
    missing = _checker_missing(checker)
    if missing:
        _skip_or_fail(missing, {"typing"})
    header, golden = _read_golden(checker)
    here = situation()
    lacking = sorted(m for m, state in here.items() if state == "missing")
    if lacking:
        _skip_or_fail(
            f"the golden files name the types of {', '.join(lacking)}, not installed here",
            set(lacking),
        )
    differs = {
        m: f"{header.get(m)} there, {here[m]} here" for m in here if here[m] != header.get(m)
    }
    if differs:
        _skip_or_fail(
            f"{_golden_path(checker).name} was made with other frameworks' types ({differs}); "
            f"check the diff of `{UPDATE}` and commit it for this set",
            set(differs),
        )
    revealed, errors, version = checked(checker)
    assert errors == [], f"{checker} {version} finds errors in the samples:\n" + "\n".join(errors)
    diff = "\n".join(difflib.unified_diff(golden, revealed, "golden", checker, lineterm=""))
    assert revealed == golden, (
        f"{checker} {version} reveals other types than {_golden_path(checker).name} (made "
        f"with {_version_in_golden(checker)}); if the change is meant, run `{UPDATE}`:\n{diff}"
    )


def _version_in_golden(checker: str) -> str:
    first = _golden_path(checker).read_text(encoding="utf-8").splitlines()[0]
    return first.removeprefix("# ").split(" reveals")[0]


def test_every_reveal_is_in_the_golden_files() -> None:
    """A sample line without its golden line (or a golden line whose sample moved) fails
    here, whatever is installed: the golden files and the samples change together."""
    wanted = {
        f"{path.name}:{number}"
        for path in _sample_files()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if line.strip().startswith("reveal_type(")
    }
    assert len(wanted) >= 80, sorted(wanted)  # the samples are all there
    for checker in CHECKERS:
        found = {line.split("  ")[0] for line in _read_golden(checker)[1]}
        assert found == wanted, (checker, sorted(found ^ wanted))


# -- tokens at run time ------------------------------------------------------------------


def test_a_token_is_its_name_interned() -> None:
    """Target(name) is the name itself (as typing.NewType hands back its argument): the warm
    path's lookup of TORCH is the lookup of "torch", an identity test."""
    builtin = {NUMPY: "numpy", TORCH: "torch", JAX: "jax", TENSORFLOW: "tensorflow"}
    builtin.update({CUPY: "cupy", PYARROW: "pyarrow", SCIPY: "scipy"})
    for token, name in builtin.items():
        assert type(token) is str and token == name and hash(token) == hash(name)
    assert TORCH is sys.intern("torch")  # the very object a "torch" literal is
    assert Target[Any]("my" + "framework") is sys.intern("myframework")  # built at run time
    assert Target(type("Name", (str,), {})("torch")) is TORCH  # a str subclass: the str


@pytest.mark.parametrize("bad", [3, b"torch", None, ""], ids=["int", "bytes", "None", "empty"])
def test_a_token_needs_a_name(bad: Any) -> None:
    with pytest.raises(OptionError, match=r"Target\(\) takes a framework's name") as err:
        Target(bad)
    assert isinstance(err.value, TypeError) and type(bad).__qualname__ in str(err.value)


def test_to_with_a_token_is_to_with_its_name(np: Any, torch: Any) -> None:
    """Same result, zero-copy (the frameworks' own pointers), same route, one plan."""
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    by_name, by_token = to(x, "torch"), to(x, TORCH)
    for t in (by_name, by_token):
        assert type(t) is torch.Tensor and t.dtype == torch.float32 and t.shape == (3, 4)
        assert t.data_ptr() == x.ctypes.data and t.tolist() == x.tolist()
    assert str(explain(x, TORCH)) == str(explain(x, "torch"))
    back = to(by_token, NUMPY)
    assert back.ctypes.data == x.ctypes.data and back.dtype == np.float32
    assert to({"w": x, "n": 3}, TORCH)["w"].data_ptr() == x.ctypes.data
    plain = default_registry().state.plain
    assert [k for k in plain if k == "torch"] == ["torch"]  # one entry for both spellings


def test_a_token_of_a_framework_not_registered_fails_as_its_name(np: Any) -> None:
    x = np.arange(3.0)
    with pytest.raises(UnknownFrameworkError) as by_name:
        to(x, "myframework")
    with pytest.raises(UnknownFrameworkError) as by_token:
        to(x, Target("myframework"))
    assert str(by_token.value) == str(by_name.value) and "myframework" in str(by_name.value)


class _Name(str):
    """A str subclass: its hash and equality are str's (a user's own name type)."""


def test_the_c_warm_path_takes_a_str_subclass_target(np: Any, torch: Any) -> None:
    """The C warm path (interop_core._warm) looks a target up by str's hash and equality:
    a str subclass finds the plan "torch" made, and no Python frame of interop_core runs
    (counted)."""
    if not hasattr(to, "python"):
        pytest.skip("to() is the Python function here (no C extension, or pure Python asked)")
    x = np.ones((4, 4), np.float32)
    to(x, "torch")
    seen: list[str] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            seen.append(frame.f_code.co_filename)

    target = _Name("torch")
    sys.setprofile(profile)
    try:
        out, again = to(x, target), to(x, TORCH)
    finally:
        sys.setprofile(None)
    assert out.data_ptr() == again.data_ptr() == x.ctypes.data
    assert not [f for f in seen if "interop" in f], seen


def test_the_python_warm_path_takes_tokens_and_str_subclasses() -> None:
    """INTEROP_CORE_PURE_PYTHON=1 (a child process): the Python warm path finds the plan for
    a token and for a str subclass without calling the slow path (counted)."""
    need("numpy")
    need("torch")
    out = run_child(
        """
        import os
        os.environ["INTEROP_CORE_PURE_PYTHON"] = "1"
        import numpy as np, torch
        import interop_core as ic
        from interop_core.engine.state import State
        from interop_core.targets import TORCH
        assert not hasattr(ic.to, "python"), ic.to
        class Name(str):
            pass
        x = np.arange(6, dtype=np.float64)
        first = ic.to(x, "torch")
        calls = []
        convert = State.convert
        def counting(self, *args):
            calls.append(args[1])
            return convert(self, *args)
        State.convert = counting
        got = [ic.to(x, TORCH), ic.to(x, Name("torch")), ic.to(x, "torch")]
        assert all(type(t) is torch.Tensor and t.data_ptr() == x.ctypes.data for t in got)
        assert all(t.tolist() == x.tolist() for t in got)
        assert calls == [], calls
        ic.to(x, "torch", copy=True)  # the counter counts: this one is not on the warm path
        assert len(calls) == 1, calls
        print("ok")
        """
    )
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]


# -- regenerating the golden files ---------------------------------------------------------


def _update() -> None:
    here = situation()
    frameworks = " ".join(f"{m}={s}" for m, s in here.items())
    for checker in CHECKERS:
        revealed, errors, version = run_mypy() if checker == "mypy" else run_pyright()
        if errors:
            sys.exit(f"{checker} finds errors in the samples:\n" + "\n".join(errors))
        head = [
            f"# {checker} {version} reveals these types in tests/typecheck/*.py "
            "(tests/test_typing.py compares them).",
            f"# Regenerate after reading the diff: {UPDATE}",
            f"# frameworks: {frameworks}",
        ]
        _golden_path(checker).write_text("\n".join(head + revealed) + "\n", encoding="utf-8")
        print(f"wrote {_golden_path(checker)} ({len(revealed)} types)")


if __name__ == "__main__" and sys.argv[1:] == ["--update"]:
    _update()
