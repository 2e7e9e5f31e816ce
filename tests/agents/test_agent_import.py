"""An agent module of your own that misbehaves at import (hardening round 3): one that loops or
waits is refused after a bounded time, one that calls `sys.exit(3)` or `os._exit(0)` is refused
(never a silent exit, never a success), each in one line; `./x.py` without `:Class` is told the
FILE.py:CLASS form. The CLI runs in a fresh process, as a person runs it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

LIMIT = 10  # seconds the import may take in these tests (the default is 60)
MODULES = {
    "sleeps": "import time\ntime.sleep(3600)\n",
    "loops": "while True:\n    pass\n",
    "exits3": "import sys\nsys.exit(3)\n",
    "exits0": "import os\nos._exit(0)\n",
}


def _run(agent: str, cwd: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    env = {**os.environ, "MERCHANTBENCH_AGENT_IMPORT_SECONDS": str(LIMIT),
           "MERCHANTBENCH_CACHE": str(cwd / "cache")}  # fmt: skip
    args = ["run", "--agent", agent, "--scenario", "smoke", "--out", "out", "--no-progress"]
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "merchantbench.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=240)  # fmt: skip
    return done, time.monotonic() - started


def _one_line(done: subprocess.CompletedProcess[str], expected: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0], lines


@pytest.mark.parametrize(
    ("module", "expected"),
    [
        ("sleeps", f"did not finish in {LIMIT} s"),
        ("loops", f"did not finish in {LIMIT} s"),
        ("exits3", "called sys.exit(3) at import"),
        ("exits0", "ended the process (exit code 0) before it finished loading"),
    ],
)
def test_a_module_that_misbehaves_at_import_is_refused(
    tmp_path: Path, module: str, expected: str
) -> None:
    (tmp_path / f"{module}.py").write_text(MODULES[module])
    for agent in (f"./{module}.py:Mine", f"{module}:Mine"):  # a file, a module of the directory
        done, seconds = _run(agent, tmp_path)
        _one_line(done, expected)
        assert seconds < LIMIT + 60, seconds
        assert not (tmp_path / "out").exists()


def test_a_file_without_its_class_is_told_the_form(tmp_path: Path) -> None:
    (tmp_path / "x.py").write_text("")
    done, _ = _run("./x.py", tmp_path)
    _one_line(done, "a file agent is named FILE.py:CLASS")
    assert "./x.py:" in done.stderr
