"""An agent of your own (issue 18, item 4), named `module:Class` or `file.py:Class`, runs wherever
a built-in one does: `run`, `--resume` (in a fresh process, from its checkpoint), a local sweep
and calibration; its settings are validated like a built-in's; the record names it so that a
resume finds it again, and a resume with its code changed is refused unless allowed. Every
mistake is one line. (The Ray sweep: tests/sweeps/test_sweep_ray.py.)"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import own_agent
from merchantbench.agents.load import AgentConfigError, resolve_agent_name
from merchantbench.agents.registry import agent_entry, check_settings, make_agent
from merchantbench.cli import app
from merchantbench.record.manifest import read_manifest
from merchantbench.record.schema import (
    DAILY_FILE,
    METRICS_FILE,
    ORDERS_FILE,
    PARQUET_SCHEMAS,
    TRACE_FILE,
    TRANSCRIPT_FILE,
)
from merchantbench.runs.calibrate import plan_grid, run_grid
from merchantbench.runs.identity import identity_key, run_identity
from merchantbench.runs.runner import RunSpec, run_agent
from merchantbench.scenario import load_scenario
from merchantbench.session import Session
from merchantbench.sweeps.driver import run_sweep
from merchantbench.sweeps.execute import LocalExecutor
from merchantbench.sweeps.spec import parse_sweep_text

MODULE = "own_agent:Lister"
SOURCE = Path(own_agent.__file__)
COMPARED = (METRICS_FILE, TRACE_FILE, TRANSCRIPT_FILE, *PARQUET_SCHEMAS)
STOP_AT = 15  # smoke has 28 windows; the checkpoint is from window 10


def _file_agent(where: Path) -> str:
    """A copy of the test agent as a file of its own; its target, absolute."""
    where.mkdir(parents=True, exist_ok=True)
    shutil.copy(SOURCE, where / "mine.py")
    return f"{where / 'mine.py'}:Lister"


def _spec(agent: str) -> RunSpec:
    return RunSpec(agent, load_scenario("smoke"), 1)


def _stop_at(window: int):
    def hook(session: Session) -> None:
        if session.window == window:
            raise KeyboardInterrupt

    return hook


def _refused(result, expected: str) -> None:
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit), result.exception  # not a traceback
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], result.output


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """The CLI in a fresh process (nothing of the test's imports carried over)."""
    command = [sys.executable, "-m", "merchantbench.cli", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300)


def _files(run_dir: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(run_dir)): p.read_bytes()
        for p in sorted(run_dir.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize(
    ("agent", "options", "expected"),
    [
        ("nowhere_pkg.agents:Mine", (), "no module named 'nowhere_pkg'"),
        ("own_agent:Missing", (), "module own_agent has no attribute 'Missing'"),
        ("own_agent:NotAnAgent", (), "NotAnAgent is a class but not a BaseAgent subclass"),
        ("own_agent:rows_of", (), "rows_of is a function, not a BaseAgent subclass"),
        ("{tmp}/absent.py:Lister", (), "absent.py not found"),
        ("{tmp}/broken.py:Lister", (), "broken.py failed: RuntimeError: no agent here"),
        ("own_agent:Peeker", (), "only built-in agents may be privileged"),
        ("own_agent:", (), "give a built-in name, MODULE:CLASS or FILE.py:CLASS"),
        ("nobody", (), "unknown agent 'nobody'"),
        (MODULE, ("--agent-opt", "markup=abc"), "agent 'own_agent:Lister': markup: Input should"),
        (MODULE, ("--agent-opt", "colour=red"), "colour: unknown setting (got 'red')"),
    ],
    ids=[
        "no-module", "no-attribute", "not-an-agent", "not-a-class", "no-file", "file-raises",
        "privileged", "malformed", "unknown-name", "bad-setting", "unknown-setting",
    ],
)  # fmt: skip
def test_every_mistake_is_one_line_and_writes_nothing(tmp_path, agent, options, expected):
    (tmp_path / "broken.py").write_text("raise RuntimeError('no agent here')\n")
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        ["run", "--agent", agent.format(tmp=tmp_path), *options, "--scenario", "smoke",
         "--out", str(out), "--no-progress"],
    )  # fmt: skip
    _refused(result, expected)
    assert not out.exists()


def test_settings_are_validated_by_the_agents_own_model(tmp_path):
    file_agent = _file_agent(tmp_path)
    for name in (MODULE, file_agent):
        assert check_settings(name, {"markup": "2.5"}).model_dump() == {
            "markup": 2.5,
            "keywords": ("bag", "lamp", "mug"),
        }
        with pytest.raises(AgentConfigError, match="keywords"):
            check_settings(name, {"keywords": 3})
        assert make_agent(name, {"markup": 2}).settings()["markup"] == 2.0
        assert agent_entry(name).summary == "Lists the two cheapest in-stock products of one " \
            "keyword a day at a fixed markup."  # fmt: skip


def test_the_record_names_it_so_that_it_is_found_again(tmp_path, monkeypatch):
    _file_agent(tmp_path)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    for agent, out in ((MODULE, "by-module"), ("mine.py:Lister", "by-file")):
        result = runner.invoke(app, ["run", "--agent", agent, "--scenario", "smoke",
                                     "--out", out, "--no-progress"])  # fmt: skip
        assert result.exit_code == 0, result.output
    by_module, by_file = read_manifest(tmp_path / "by-module"), read_manifest(tmp_path / "by-file")
    assert by_module.agent.name == MODULE
    assert by_file.agent.name == f"{tmp_path / 'mine.py'}:Lister"  # absolute: found from anywhere
    assert by_module.agent.settings == {"markup": 1.8, "keywords": ["bag", "lamp", "mug"]}
    assert by_module.agent.source_sha256 and by_file.agent.source_sha256
    for name in (TRACE_FILE, ORDERS_FILE, DAILY_FILE):  # the same code, the same run
        assert (tmp_path / "by-module" / name).read_bytes() == (
            tmp_path / "by-file" / name
        ).read_bytes()
    orders = json.loads((tmp_path / "by-module" / METRICS_FILE).read_text())["orders"]
    assert orders > 0  # it really played


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A whole smoke run of the file agent, and the same run interrupted at window 15."""
    root = tmp_path_factory.mktemp("own")
    agent = _file_agent(root / "agent")
    run_agent(_spec(agent), root / "whole")
    with pytest.raises(KeyboardInterrupt):
        run_agent(_spec(agent), root / "stopped", on_window=_stop_at(STOP_AT))
    return root


@pytest.fixture
def stopped(runs, tmp_path):
    """A private copy of the interrupted run, and of the agent's file it names."""
    copy = tmp_path / "run"
    shutil.copytree(runs / "stopped", copy)
    return copy


def test_an_interrupted_run_resumes_in_a_new_process_to_the_same_bytes(runs, stopped, tmp_path):
    assert read_manifest(stopped).ended == "interrupted"
    done = _cli("run", "--agent", "agent/mine.py:Lister", "--scenario", "smoke", "--out",
                str(stopped), "--resume", "--no-progress", cwd=runs)  # fmt: skip
    assert done.returncode == 0, done.stderr
    for name in COMPARED:
        assert (stopped / name).read_bytes() == (runs / "whole" / name).read_bytes(), name


def test_a_resume_with_the_agents_code_changed_is_refused_unless_allowed(tmp_path):
    agent = _file_agent(tmp_path)
    run_dir = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        run_agent(_spec(agent), run_dir, on_window=_stop_at(STOP_AT))
    started = read_manifest(run_dir).agent.source_sha256
    assert started is not None
    with (tmp_path / "mine.py").open("a") as fh:
        fh.write("\n# a change of the agent's code\n")
    before = _files(run_dir)
    args = ["run", "--agent", agent, "--scenario", "smoke", "--out", str(run_dir), "--resume",
            "--no-progress"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    _refused(result, "pass --allow-code-change")
    assert f"agent {started[:12]}" in result.output  # the message names the agent's code
    assert _files(run_dir) == before
    result = CliRunner().invoke(app, [*args, "--allow-code-change"])
    assert result.exit_code == 0, result.output
    change = read_manifest(run_dir).code_changes[-1]
    assert change.before.agent_source_sha256 == started
    assert change.after.agent_source_sha256 not in (None, started)


def test_a_resume_as_a_built_in_agent_is_refused(stopped):
    before = _files(stopped)
    args = ["run", "--agent", "rule-based", "--scenario", "smoke", "--out", str(stopped),
            "--resume", "--no-progress"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    _refused(result, "--agent rule-based differs from the run's agent")
    assert _files(stopped) == before


SWEEP = """
scenarios: [{name: smoke, set: ["clock.days=4"]}]
seeds: [1]
agents:
  - own_agent:Lister
  - {agent: agents/mine.py:Lister, label: file, settings: {markup: 2.2}}
"""


def test_a_local_sweep_runs_them_and_reruns_one_whose_code_changed(tmp_path):
    _file_agent(tmp_path / "agents")
    sweep = parse_sweep_text(SWEEP, ".yaml")
    first = run_sweep(sweep, tmp_path, tmp_path / "out", LocalExecutor(2))
    assert sorted(first.finished) == ["Lister/s1", "file/s1"] and not first.failed
    recorded = read_manifest(tmp_path / "out" / "runs" / "file" / "s1").agent
    assert recorded.name == f"{tmp_path / 'agents' / 'mine.py'}:Lister"  # relative to the file
    assert recorded.settings["markup"] == 2.2
    with (tmp_path / "agents" / "mine.py").open("a") as fh:
        fh.write("\n# changed\n")
    second = run_sweep(sweep, tmp_path, tmp_path / "out", LocalExecutor(2))
    assert second.skipped == ["Lister/s1"] and second.finished == ["file/s1"]


def test_the_identity_of_a_run_holds_the_agents_code(tmp_path):
    agent = _file_agent(tmp_path)
    scenario = load_scenario("smoke")
    key = identity_key(run_identity(agent, {}, scenario, 1))
    assert "agent_source_sha256" not in run_identity("rule-based", {}, scenario, 1)
    (tmp_path / "mine.py").write_text(SOURCE.read_text() + "\n# changed\n")
    assert identity_key(run_identity(agent, {}, scenario, 1)) != key


def test_calibration_takes_them(tmp_path):
    agent = resolve_agent_name(_file_agent(tmp_path / "agents"))
    runs = plan_grid([MODULE, agent], [1])
    assert [(r.label, r.agent) for r in runs] == [("Lister", MODULE), ("Lister", agent)]
    scenario = load_scenario("smoke", overrides=["clock.days=3"])
    results = run_grid(scenario, runs[:1], root=tmp_path / "cal", jobs=1)
    assert results[runs[0]]["windows"] == 6
    assert read_manifest(tmp_path / "cal" / "smoke" / "Lister-s1").agent.name == MODULE
