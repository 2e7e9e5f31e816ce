"""`merchantbench run` under SIGKILLs at random times (issue 32's crash test of the in-process
host): an in-process agent acknowledges nothing to anyone outside the process, so its record
is synced at checkpoints (batched, docs/run-record.md) and a resume plays on from the last one.
What must hold: after every kill the trace on disk is a prefix of the uninterrupted run's, and
the finished record is byte-identical to it.

Size: the random agent on `smoke` (28 windows), checkpoints after every window (else a run
killed every 0-0.25 s might never get past its first checkpoint); runs one after another until
`KILLS` kills were made. The run is a forked child of the test process (imports done)."""

from __future__ import annotations

import json
import os
import random
import signal
import threading
from pathlib import Path

from typer.testing import CliRunner

from crash_harness import KILLS, RECORD_FILES
from merchantbench.cli import app
from merchantbench.record.attest import ATTESTATION_FILE

ARGS = ["run", "--no-progress", "--agent", "random", "--scenario", "smoke",
        "--checkpoint-seconds", "0"]  # fmt: skip


def _run_in_child(out: Path, resume: bool) -> int:
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            result = CliRunner().invoke(app, [*ARGS, "--out", str(out), *(["--resume"] * resume)])
            code = result.exit_code
            _said(out).write_text(result.output)
        finally:
            os._exit(code)
    return pid


def _killed_run(out: Path, reference: bytes, rng: random.Random, budget: int) -> int:
    kills, resume = 0, False
    while True:
        pid = _run_in_child(out, resume)
        fired: list[int] = []

        def kill(victim: int = pid, fired: list[int] = fired) -> None:
            fired.append(victim)
            os.kill(victim, signal.SIGKILL)

        timer = threading.Timer(rng.uniform(0.0, 0.25), kill) if kills < budget else None
        if timer is not None:
            timer.start()
        status = os.waitpid(pid, 0)[1]
        if timer is not None:
            timer.cancel()
            timer.join()
        if (out / "trace.jsonl").is_file():  # never a line the uninterrupted run lacks
            assert reference.startswith((out / "trace.jsonl").read_bytes().rsplit(b"\n", 1)[0])
        if not fired or os.WIFEXITED(status):
            assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, (
                status,
                _said(out).read_text(),
            )
            return kills
        kills += 1
        if _finished(out):  # killed after run.json said so: the resume signs, then refuses
            assert _run_in_child_status(out) == 2 and (out / ATTESTATION_FILE).is_file()
            return kills
        resume = (out / "run.json").is_file()


def _said(out: Path) -> Path:
    """Where the child writes what the command printed (beside the run directory)."""
    return out.with_name(out.name + ".output")


def _finished(out: Path) -> bool:
    run = out / "run.json"
    return run.is_file() and json.loads(run.read_text()).get("ended") is not None


def _run_in_child_status(out: Path) -> int:
    status = os.waitpid(_run_in_child(out, True), 0)[1]
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1


def test_a_run_killed_at_random_times_resumes_to_the_same_bytes(tmp_path: Path) -> None:
    reference = tmp_path / "whole"
    assert CliRunner().invoke(app, [*ARGS, "--out", str(reference)]).exit_code == 0
    trace = (reference / "trace.jsonl").read_bytes()
    rng = random.Random(34)
    kills, attempt = 0, 0
    while kills < KILLS:
        out = tmp_path / f"k{attempt}"
        made = _killed_run(out, trace, rng, KILLS - kills)
        kills += made
        print(f"run {attempt}: {made} kills")
        for name in RECORD_FILES:
            assert (out / name).read_bytes() == (reference / name).read_bytes(), name
        attempt += 1
