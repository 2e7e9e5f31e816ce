"""A scratch copy of the package, edited as a developer would edit it, and run in a fresh
interpreter: what a change to a declaration does to everything derived from it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import merchantbench

PACKAGE = Path(merchantbench.__file__).parent


def scratch_package(tmp: Path) -> Path:
    """A copy of `merchantbench` under `tmp/src`; returns `tmp/src` (the import root)."""
    root = tmp / "src"
    shutil.copytree(PACKAGE, root / "merchantbench", ignore=shutil.ignore_patterns("__pycache__"))
    return root


def edit(root: Path, relative: str, old: str, new: str) -> None:
    """Replace `old`, which must occur exactly once, by `new` in the copy's file."""
    path = root / "merchantbench" / relative
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{relative}: {old!r} occurs {text.count(old)} times"
    path.write_text(text.replace(old, new), encoding="utf-8")


def run_python(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`python ARGS` importing the copy first (it shadows the installed package)."""
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1"}
    probe = subprocess.run(
        [sys.executable, "-c", "import merchantbench; print(merchantbench.__file__)"],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert probe.stdout.startswith(str(root)), probe.stdout  # the copy, not the installed code
    return subprocess.run(
        [sys.executable, *args], env=env, capture_output=True, text=True, timeout=600
    )
