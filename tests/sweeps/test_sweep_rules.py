"""Sweep files, budgets, failures and identities: bad input is refused in one line, a spent
budget starts no new run, a failed run is reported and retried on request, and a changed
configuration is never taken for an old record (in sweeps and in calibration)."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from merchantbench.agents.llm.scripted_policy import store_policy
from merchantbench.agents.llm.scripted_server import ScriptedServer
from merchantbench.record.manifest import read_manifest
from merchantbench.record.sealed import read_sealed
from merchantbench.runs import calibrate
from merchantbench.runs.identity import run_identity, same_identity, write_identity
from merchantbench.scenario import load_scenario
from merchantbench.sweeps.driver import run_sweep
from merchantbench.sweeps.execute import LocalExecutor
from merchantbench.sweeps.index import read_index
from merchantbench.sweeps.plan import plan_sweep
from merchantbench.sweeps.spec import SweepFileError, parse_sweep_text

SMOKE = 'scenarios: [{name: smoke, set: ["clock.days=3"]}]\n'


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "merchantbench.cli", *args],
                          capture_output=True, text=True, timeout=120)  # fmt: skip


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("agents: [idle]\nseed: [1]\n", "seed: unknown key"),
        ("agents: [idle, idle]\n", "labels repeat: idle"),
        ("agents: [nobody]\n", "unknown agent 'nobody'"),
        ("models: [m]\n", "needs models_file"),
        ("agents: [idle]\nseeds: [1, 1]\n", "distinct"),
    ],
)
def test_bad_sweep_files_fail_in_one_line(tmp_path: Path, text: str, message: str):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    done = _cli("sweep", str(path), "--out", str(tmp_path / "out"), "--no-progress")
    assert done.returncode == 2
    assert message in done.stderr and done.stderr.count("\n") == 1
    assert not (tmp_path / "out" / "runs").exists()


def test_a_sealed_sweep_draws_a_seed_per_run_and_resumes_without_redrawing(tmp_path: Path):
    text = SMOKE + "agents: [{agent: rule-based, label: rb}]\nseeds: {sealed: 2}\n"
    runs = plan_sweep(parse_sweep_text(text, ".yaml"), tmp_path)
    assert [r.name for r in runs] == ["rb/sealed1", "rb/sealed2"] and all(r.sealed for r in runs)
    out = tmp_path / "out"
    first = run_sweep(parse_sweep_text(text, ".yaml"), tmp_path, out, LocalExecutor())
    assert len(first.finished) == 2 and not first.failed
    secrets = [read_sealed(out / "runs" / "rb" / f"sealed{n}") for n in (1, 2)]
    assert secrets[0].seed != secrets[1].seed and min(s.seed for s in secrets) >= 2**64
    for n, secret in zip((1, 2), secrets, strict=True):
        meta = read_manifest(out / "runs" / "rb" / f"sealed{n}")
        assert meta.seed is None and meta.seed_commitment is not None
        assert meta.seed_commitment.sha256 == secret.commitment.sha256
    rows = read_index(out)
    assert {(r["seed"], r["sealed"]) for r in rows} == {(None, True)}
    assert all(str(s.seed) not in (out / "index.parquet").read_bytes().decode("latin-1")
               for s in secrets)  # fmt: skip
    again = run_sweep(parse_sweep_text(text, ".yaml"), tmp_path, out, LocalExecutor())
    assert not again.finished and not again.failed  # both done: skipped, nothing redrawn
    assert [read_sealed(out / "runs" / "rb" / f"sealed{n}").seed for n in (1, 2)] == [
        s.seed for s in secrets
    ]
    with pytest.raises(SweepFileError, match="seeds"):
        parse_sweep_text("agents: [idle]\nseeds: {sealed: 0}\n", ".yaml")


def test_toml_and_yaml_plan_the_same_runs():
    yaml_runs = plan_sweep(parse_sweep_text(SMOKE + "agents: [idle]\nseeds: [1, 2]\n", ".yaml"),
                           Path("."))  # fmt: skip
    toml = (
        'seeds = [1, 2]\nagents = ["idle"]\n[[scenarios]]\nname = "smoke"\nset = ["clock.days=3"]\n'
    )
    toml_runs = plan_sweep(parse_sweep_text(toml, ".toml"), Path("."))
    assert [r.key for r in yaml_runs] == [r.key for r in toml_runs] and len(yaml_runs) == 2


def _llm_sweep(tmp_path: Path, url: str, extra: str = "") -> Path:
    entry = f'[m]\nbase_url = "{url}"\nmodel = "s"\nprice_input = 1.0\n'
    (tmp_path / "models.toml").write_text(entry)
    path = tmp_path / "sweep.yaml"
    path.write_text(SMOKE + "models_file: models.toml\nmodels: [m]\nharnesses: [react]\n"
                    "seeds: [1, 2, 3]\nmax_concurrency: 1\n"
                    "harness_settings: {react: {max_retries: 0}}\n" + extra)  # fmt: skip
    return path


def test_a_spent_budget_starts_no_new_run(tmp_path: Path):
    with ScriptedServer(store_policy) as server:
        path = _llm_sweep(tmp_path, server.base_url, "budget: {max_tokens: 1}\n")
        spec = parse_sweep_text(path.read_text(), ".yaml")
        outcome = run_sweep(spec, tmp_path, tmp_path / "out", LocalExecutor())
    assert len(outcome.finished) == 1 and len(outcome.not_started) == 2
    assert outcome.budget_reason and "tokens reached 1" in outcome.budget_reason
    statuses = sorted(r["status"] for r in read_index(tmp_path / "out"))
    assert statuses == ["done", "new", "new"]


class Flaky:
    """Answers 401 (a crash) while `broken`, else plays the store policy."""

    def __init__(self) -> None:
        self.broken = True
        self.lock = threading.Lock()

    def __call__(self, request: dict) -> dict:
        with self.lock:
            broken = self.broken
        return {"status": 401} if broken else store_policy(request)


def test_failed_runs_are_reported_and_retried_on_request(tmp_path: Path):
    flaky = Flaky()
    with ScriptedServer(flaky) as server:
        path = _llm_sweep(tmp_path, server.base_url)
        spec = parse_sweep_text(path.read_text(), ".yaml")
        first = run_sweep(spec, tmp_path, tmp_path / "out", LocalExecutor())
        reasons = list(first.failed.values())
        assert len(reasons) == 3 and all("401" in r or "Auth" in r for r in reasons)
        again = run_sweep(spec, tmp_path, tmp_path / "out", LocalExecutor())
        assert len(again.not_retried) == 3 and not again.finished
        flaky.broken = False
        retried = run_sweep(spec, tmp_path, tmp_path / "out", LocalExecutor(), retry_failed=True)
    assert len(retried.finished) == 3 and not retried.failed
    assert {r["status"] for r in read_index(tmp_path / "out")} == {"done"}


def test_a_changed_configuration_is_run_again(tmp_path: Path):
    path = tmp_path / "sweep.yaml"
    path.write_text(SMOKE + "agents: [{agent: rule-based, label: rb}]\n")
    out = tmp_path / "out"
    run_sweep(parse_sweep_text(path.read_text(), ".yaml"), tmp_path, out, LocalExecutor())
    changed = SMOKE + "agents: [{agent: rule-based, label: rb, settings: {markup: 3.0}}]\n"
    outcome = run_sweep(parse_sweep_text(changed, ".yaml"), tmp_path, out, LocalExecutor())
    assert outcome.finished == ["rb/s1"] and not outcome.skipped
    assert (out / "runs" / "rb" / "s1.stale-1" / "run.json").is_file()  # the old one, set aside


def test_calibration_reuses_only_a_record_of_the_same_identity(tmp_path: Path, monkeypatch):
    scenario = load_scenario("smoke", overrides=["clock.days=2"])
    run = calibrate.GridRun("idle", "idle", 1)
    calibrate.run_grid(scenario, [run], root=tmp_path, jobs=1)
    run_dir = run.run_dir(tmp_path, scenario)
    assert calibrate._finished(run_dir, scenario, run) is not None
    # Same package version, changed source: the record is not reused.
    monkeypatch.setattr("merchantbench.runs.identity.source_sha256", lambda: "changed")
    assert calibrate._finished(run_dir, scenario, run) is None
    monkeypatch.undo()
    other = run_identity("idle", {}, scenario, 2)
    write_identity(run_dir, other)
    assert calibrate._finished(run_dir, scenario, run) is None
    assert same_identity(run_dir, other)


def test_transcripts_are_written_unless_the_sweep_turns_them_off(tmp_path: Path):
    for flag, expected in (("", True), ("transcript: false\n", False)):
        text = SMOKE + "agents: [{agent: rule-based, label: rb}]\n" + flag
        out = tmp_path / f"out-{expected}"
        done = run_sweep(parse_sweep_text(text, ".yaml"), tmp_path, out, LocalExecutor())
        assert len(done.finished) == 1 and not done.failed
        run_dir = out / "runs" / "rb" / "s1"
        assert (run_dir / "trace.jsonl").stat().st_size > 0
        assert (run_dir / "transcript.jsonl").is_file() is expected
