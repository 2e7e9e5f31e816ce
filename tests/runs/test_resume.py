"""`--resume` cannot lie (issue 9): a resume that asks for another run is refused in one line
naming the difference, damaged records are refused without a byte changed, and records a kill
left behind resume to the very bytes of an uninterrupted run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from merchantbench.cli import app
from merchantbench.record import code_version
from merchantbench.record.checkpoint import CHECKPOINT, read_checkpoint_pins
from merchantbench.record.manifest import read_manifest
from merchantbench.record.pins import pins_of_checkpoint, pins_of_record
from merchantbench.runs.runner import CheckpointPolicy, RunError, RunSpec, run_agent
from merchantbench.scenario import load_scenario
from merchantbench.session import Session

COMPARED = (
    "metrics.json", "trace.jsonl", "transcript.jsonl", "timeseries.parquet", "orders.parquet",
    "daily.parquet", "listings.parquet",
)  # fmt: skip
BASE = ("--agent", "rule-based", "--scenario", "smoke", "--seed", "1")  # smoke: 28 windows
EVERY_10 = CheckpointPolicy(windows=10)  # checkpoints at known windows: 10, 20, ...


def run_every_10(*args: Any, **kwargs: Any) -> dict[str, Any]:
    return run_agent(*args, checkpoints=EVERY_10, **kwargs)


STOP_AT = 15  # the checkpoint is from window 10; windows 10-14 are traced after it


def _spec(seed: int = 1) -> RunSpec:
    return RunSpec("rule-based", load_scenario("smoke"), seed)


def _stop_at(window: int):
    def hook(session: Session) -> None:
        if session.window == window:
            raise KeyboardInterrupt  # as Ctrl-C: the record says "interrupted"

    return hook


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """An uninterrupted smoke run and the same run interrupted at window 15."""
    root = tmp_path_factory.mktemp("resume")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MERCHANTBENCH_CACHE", str(root / "cache"))
        run_every_10(_spec(), root / "whole")
        with pytest.raises(KeyboardInterrupt):
            run_every_10(_spec(), root / "stopped", on_window=_stop_at(STOP_AT))
        yield root


@pytest.fixture
def stopped(runs, tmp_path, monkeypatch):
    """A private copy of the interrupted run."""
    monkeypatch.setenv("MERCHANTBENCH_CACHE", str(runs / "cache"))
    copy = tmp_path / "run"
    shutil.copytree(runs / "stopped", copy)
    return copy


def _files(run_dir: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(run_dir)): p.read_bytes()
        for p in sorted(run_dir.rglob("*"))
        if p.is_file()
    }


def _resume_cli(run_dir: Path, *args: str):
    return CliRunner().invoke(
        app, ["run", "--no-progress", *args, "--out", str(run_dir), "--resume"]
    )


def _refused(result, expected: str) -> None:
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit), result.exception  # not a traceback
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], result.output


def _same_as_whole(run_dir: Path, runs: Path) -> None:
    for name in COMPARED:
        assert (run_dir / name).read_bytes() == (runs / "whole" / name).read_bytes(), name


def test_the_interrupted_run_resumes_to_the_same_bytes(stopped, runs):
    assert json.loads((stopped / "run.json").read_text())["ended"] == "interrupted"
    result = _resume_cli(stopped, *BASE)
    assert result.exit_code == 0, result.output
    _same_as_whole(stopped, runs)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        # Before: rc 0, results written under seed 1's label (net assets 3,584.44, not 4,153.25).
        (("--seed", "2"), "cannot resume: --seed 2 differs from the run's seed 1"),
        # Before: a 60-window run whose run.json said 365 days.
        (("--set", "clock.days=30"), "scenario clock.days=30 differs from the run's clock.days=14"),
        (("--days", "7"), "scenario clock.days=7 differs from the run's clock.days=14"),
        # Before: the other agent was silently ignored.
        (
            ("--agent", "random"),
            "cannot resume: --agent random differs from the run's agent rule-based",
        ),
        (("--agent-opt", "markup=3"), "agent setting markup=3.0 differs from the run's markup=2.0"),
        # Before: an IndexError traceback.
        (("--scenario", "small"), "--scenario small differs from the run's scenario smoke"),
    ],
    ids=["seed", "set-days", "days", "agent", "agent-opt", "scenario"],
)
def test_a_resume_asking_for_another_run_is_refused_and_changes_nothing(stopped, args, expected):
    before = _files(stopped)
    _refused(_resume_cli(stopped, *BASE, *args), expected)  # a repeated option: the last counts
    assert _files(stopped) == before


def test_a_checkpoint_of_another_run_is_refused(stopped, runs, tmp_path):
    other = tmp_path / "other"
    with pytest.raises(KeyboardInterrupt):
        run_every_10(_spec(seed=2), other, on_window=_stop_at(12))
    shutil.copy(other / CHECKPOINT, stopped / CHECKPOINT)
    before = _files(stopped)
    _refused(_resume_cli(stopped, *BASE), "--seed 1 differs from the checkpoint's seed 2")
    assert _files(stopped) == before


def _lines(run_dir: Path, name: str = "trace.jsonl") -> list[bytes]:
    return (run_dir / name).read_bytes().split(b"\n")


def _damage_line(run_dir: Path, index: int, name: str = "trace.jsonl") -> None:
    lines = _lines(run_dir, name)
    lines[index] = lines[index][: len(lines[index]) // 2] + b"\x00garbage"
    (run_dir / name).write_bytes(b"\n".join(lines))


def _first_line_of_window(run_dir: Path, window: int, name: str = "trace.jsonl") -> int:
    entries = [json.loads(line) for line in _lines(run_dir, name) if line]
    return next(i for i, entry in enumerate(entries) if entry["window"] == window)


@pytest.mark.parametrize("name", ["trace.jsonl", "transcript.jsonl"])
def test_a_damaged_line_the_checkpoint_covers_is_refused_and_nothing_deleted(stopped, name):
    _damage_line(stopped, _first_line_of_window(stopped, 4, name), name)
    before = _files(stopped)
    result = _resume_cli(stopped, *BASE)
    _refused(result, f"{name} line")
    assert "damaged" in result.output and "nothing was changed" in result.output
    assert _files(stopped) == before


@pytest.mark.parametrize("name", ["trace.jsonl", "transcript.jsonl"])
def test_a_damaged_line_after_the_checkpoint_resumes_to_the_same_bytes(stopped, runs, name):
    # Before: resume cut the trace at the first unparseable line (229 valid lines lost, SWR 0.517).
    _damage_line(stopped, _first_line_of_window(stopped, 12, name), name)
    result = _resume_cli(stopped, *BASE)
    assert result.exit_code == 0, result.output
    _same_as_whole(stopped, runs)


def test_completed_without_metrics_resumes_to_the_same_bytes(runs, tmp_path, monkeypatch):
    # Before: a kill between "completed" in run.json and metrics.json left a run that --resume
    # refused ("already finished") and that had no metrics.
    monkeypatch.setenv("MERCHANTBENCH_CACHE", str(runs / "cache"))
    run_dir = tmp_path / "run"
    shutil.copytree(runs / "whole", run_dir)
    (run_dir / "metrics.json").unlink()
    assert json.loads((run_dir / "run.json").read_text())["ended"] == "completed"
    result = _resume_cli(run_dir, *BASE)
    assert result.exit_code == 0, result.output
    _same_as_whole(run_dir, runs)
    _refused(_resume_cli(run_dir, *BASE), "already finished (completed); nothing to resume")


def _other_code(monkeypatch) -> str:
    code_version.source_sha256.cache_clear()
    changed = "f" * 64
    monkeypatch.setattr(code_version, "source_sha256", lambda: changed)
    return changed


def test_changed_code_is_refused_unless_allowed_and_then_recorded(stopped, runs, monkeypatch):
    started = json.loads((stopped / "run.json").read_text())
    assert started["source_sha256"] == code_version.source_sha256()
    before = _files(stopped)
    changed = _other_code(monkeypatch)
    with pytest.raises(RunError, match=r"cannot resume: the code .* differs .*--allow-code-change"):
        run_every_10(_spec(), stopped, resume=True)
    assert _files(stopped) == before
    result = _resume_cli(stopped, *BASE)
    _refused(result, "pass --allow-code-change")
    result = _resume_cli(stopped, *BASE, "--allow-code-change")
    assert result.exit_code == 0, result.output
    _same_as_whole(stopped, runs)  # the "change" is only a different hash: the same results
    meta = json.loads((stopped / "run.json").read_text())
    assert meta["source_sha256"] == started["source_sha256"]  # the code the run started with
    [change] = meta["code_changes"]
    assert change["window"] == 10
    assert change["before"]["source_sha256"] == started["source_sha256"]
    assert change["after"]["source_sha256"] == changed


def test_a_second_resume_with_the_allowed_code_needs_no_flag(stopped, runs, monkeypatch):
    _other_code(monkeypatch)
    with pytest.raises(KeyboardInterrupt):  # the allowed resume, interrupted again at window 25
        run_every_10(_spec(), stopped, resume=True, on_window=_stop_at(25), allow_code_change=True)
    run_every_10(_spec(), stopped, resume=True)  # its checkpoint (window 20) ran the new code
    _same_as_whole(stopped, runs)
    assert len(json.loads((stopped / "run.json").read_text())["code_changes"]) == 1


def test_run_json_and_the_checkpoint_pin_the_same_run(stopped):
    meta = read_manifest(stopped)
    found, saved = read_checkpoint_pins(stopped)
    assert found and pins_of_checkpoint(saved) == pins_of_record(meta)
    pins = pins_of_record(meta)
    assert (pins.seed, pins.agent, pins.catalog, pins.seed_commitment) == (
        1,
        "rule-based",
        None,
        None,
    )
    assert pins.scenario_hash == load_scenario("smoke").content_hash
    assert pins.code.source_sha256 == code_version.source_sha256()
    assert len(pins.tool_schema_sha256) == 64 and meta.code_changes == []


def test_a_record_without_a_code_pin_is_refused(stopped):
    data = json.loads((stopped / "run.json").read_text())
    data["source_sha256"] = None  # as a record written before code was pinned
    (stopped / "run.json").write_text(json.dumps(data))
    with pytest.raises(RunError, match=r"source unknown\); pass --allow-code-change"):
        run_every_10(_spec(), stopped, resume=True)


def test_a_run_killed_before_its_run_json_starts_again(tmp_path):
    """Killed while writing `run.json` for the first time: the folder holds only the cut
    write's temporary file. `--resume` says there is nothing to resume and how to go on; the
    run started again (no --resume) takes the folder and removes the leftover."""
    run_dir = tmp_path / "r"
    run_dir.mkdir()
    (run_dir / ".run.json.k3j2.tmp").write_text('{"sche')
    _refused(_resume_cli(run_dir, *BASE), "start it again without --resume")
    started = CliRunner().invoke(app, ["run", "--no-progress", *BASE, "--out", str(run_dir)])
    assert started.exit_code == 0, started.output
    assert read_manifest(run_dir).ended == "completed"
    assert not list(run_dir.glob(".*.tmp"))  # the new start removed the leftover
