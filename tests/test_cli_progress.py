"""Progress without a terminal (a pipe, a CI log): whole plain lines, never a bar cut to 80
columns ("730/7…", "0:00:…"); on a terminal, rich's bar."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

from rich.console import Console

from merchantbench.cli.progress import PlainProgress, progress_display

LINE = re.compile(r"^random: (\d+)/28 day +\d+ · net ¥.* \(\d+:\d\d:\d\d\)$")


def test_a_run_piped_prints_whole_progress_lines(tmp_path: Path) -> None:
    env = {**os.environ, "MERCHANTBENCH_CACHE": str(tmp_path / "cache"), "COLUMNS": "60"}
    args = ["run", "--agent", "random", "--scenario", "smoke", "--out", str(tmp_path / "r")]
    done = subprocess.run([sys.executable, "-m", "merchantbench.cli", *args],
                          capture_output=True, text=True, timeout=600, env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "…" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("random:")]
    assert lines and all(LINE.match(line) for line in lines), done.stderr
    counts = [int(LINE.match(line)[1]) for line in lines]  # type: ignore[index]
    assert counts == sorted(counts) and counts[-1] == 28 and len(counts) <= 11


def test_a_terminal_gets_the_bar_and_silence_is_silent() -> None:
    terminal = Console(file=io.StringIO(), force_terminal=True)
    assert not isinstance(progress_display(terminal, "x"), PlainProgress)
    piped = io.StringIO()
    with progress_display(Console(file=piped), "x", show=False) as bar:
        task = bar.add_task("a", total=3)
        for _ in range(3):
            bar.update(task, advance=1)
    assert piped.getvalue() == ""


def test_a_total_that_grows_after_the_end_prints_on_to_the_new_end() -> None:
    """The counterfactual analysis finds more rounds of work once the first is done: 4/4, then
    the total becomes 7; the lines go on to 7/7 rather than stopping at 4/4."""
    piped = io.StringIO()
    with progress_display(Console(file=piped), "x", elapsed=False) as bar:
        task = bar.add_task("a", total=None)
        for done in range(1, 5):
            bar.update(task, completed=done, total=4)
        for done in range(5, 8):
            bar.update(task, completed=done, total=7)
    lines = piped.getvalue().splitlines()
    assert lines[-1] == "x: 7/7 a" and "x: 4/4 a" in lines and "x: 5/7 a" in lines
