"""A run SIGKILLed at any point — mid-window, mid-checkpoint, while finishing — resumes to the
bytes of an uninterrupted run: `metrics.json`, `trace.jsonl` and every Parquet table (issue 9).

The kills are placed exactly with the test-only kill points (runs/kill_points.py): the child
process SIGKILLs itself at the N-th trace line or at a named step of the finishing phase. Half
the killed runs checkpoint after every window, the other half by the default wall-time policy
(in a run this short: none before it finishes), and every resume uses the default policy: the
bytes must not depend on when checkpoints were taken.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from merchantbench.cli import app
from merchantbench.record.attest import ATTESTATION_FILE
from merchantbench.replay.verify import verify_record
from merchantbench.runs.kill_points import KILL_ENV

COMPARED = (
    "metrics.json", "trace.jsonl", "transcript.jsonl", "timeseries.parquet", "orders.parquet",
    "daily.parquet", "listings.parquet",
)  # fmt: skip
ARGS = ("--agent", "rule-based", "--scenario", "small", "--days", "30")  # 60 windows
TRACE_KILLS = 8  # one random trace line in each eighth of the run
STEP_KILLS = ("checkpoint:3", "finish", "tables", "metrics")
PARALLEL = 2


def _command(out: Path) -> list[str]:
    return [sys.executable, "-m", "merchantbench.cli", "run", "--no-progress", *ARGS, "--out",
            str(out)]  # fmt: skip


def _start_killed(
    out: Path, point: str, cache: Path, resume: bool = False, every_window: bool = True
) -> subprocess.Popen:
    env = {**os.environ, "MERCHANTBENCH_CACHE": str(cache), KILL_ENV: point}
    policy = ["--checkpoint-seconds", "0"] if every_window else []
    command = [*_command(out), *(["--resume"] if resume else []), *policy]
    return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _kill_all(jobs: list[tuple[Path, str, bool]], cache: Path) -> None:
    """Run every (directory, kill point, resume) job, `PARALLEL` at a time; each must die by
    SIGKILL (not finish first, not fail)."""
    for start in range(0, len(jobs), PARALLEL):
        started = [
            (point, _start_killed(out, point, cache, resume, every_window=(start + k) % 2 == 0))
            for k, (out, point, resume) in enumerate(jobs[start : start + PARALLEL])
        ]
        for point, proc in started:
            _, err = proc.communicate(timeout=300)
            assert proc.returncode == -signal.SIGKILL, (point, err.decode()[-2000:])


def _resume(out: Path) -> None:
    result = CliRunner().invoke(app, ["run", "--no-progress", *ARGS, "--out", str(out), "--resume"])
    assert result.exit_code == 0, result.output


def _trace_points(lines: int) -> list[str]:
    """One kill point per equal slice of the trace, at a random line of the slice."""
    rng = random.Random(20261201)
    edges = [1 + lines * k // TRACE_KILLS for k in range(TRACE_KILLS + 1)]
    return [f"trace:{rng.randrange(lo, hi)}" for lo, hi in zip(edges, edges[1:], strict=False)]


@pytest.mark.slow
def test_kills_anywhere_resume_to_the_bytes_of_an_uninterrupted_run(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("MERCHANTBENCH_CACHE", str(cache))
    whole = tmp_path / "whole"
    result = CliRunner().invoke(app, ["run", "--no-progress", *ARGS, "--out", str(whole)])
    assert result.exit_code == 0, result.output
    lines = (whole / "trace.jsonl").read_bytes().count(b"\n")
    points = [*_trace_points(lines), *STEP_KILLS]
    assert len(points) >= 10
    runs = {point: tmp_path / point.replace(":", "-") for point in points}
    _kill_all([(out, point, False) for point, out in runs.items()], cache)
    # A kill during a resume, too: the run killed mid-way is killed again as it resumes.
    twice = runs[points[TRACE_KILLS // 2]]
    _kill_all([(twice, "trace:5", True)], cache)
    for point, out in runs.items():
        meta = json.loads((out / "run.json").read_text())
        assert meta["ended"] is None, point  # nothing killed says it finished
        _resume(out)
        for name in COMPARED:
            assert (out / name).read_bytes() == (whole / name).read_bytes(), (point, name)
        assert json.loads((out / "run.json").read_text())["ended"] == "completed"


def test_a_kill_after_run_json_said_finished_is_completed_by_the_resume(tmp_path):
    """Killed between `run.json` saying finished and the signature: the record is unsigned;
    `--resume` signs it (the journal, if any, removed) and then refuses: already finished."""
    out, cache = tmp_path / "run", tmp_path / "cache"
    env = {**os.environ, "MERCHANTBENCH_CACHE": str(cache), KILL_ENV: "finished"}
    smoke = ["--agent", "random", "--scenario", "smoke"]
    command = [sys.executable, "-m", "merchantbench.cli", "run", "--no-progress", *smoke,
               "--out", str(out)]  # fmt: skip
    killed = subprocess.run(command, env=env, capture_output=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()[-2000:]
    assert json.loads((out / "run.json").read_text())["ended"] == "completed"
    assert not (out / ATTESTATION_FILE).exists()
    again = CliRunner().invoke(app, ["run", "--no-progress", *smoke, "--out", str(out), "--resume"])
    assert again.exit_code == 2 and "already finished" in again.output, again.output
    assert (out / ATTESTATION_FILE).is_file() and verify_record(out).ok
