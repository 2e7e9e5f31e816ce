"""A ReAct run killed mid-window resumes from its checkpoint with its conversation and usage, and
ends exactly as an uninterrupted run does, without counting any model call twice."""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from merchantbench.agents.llm.models import ModelConfigError
from merchantbench.agents.llm.scripted_policy import store_policy
from merchantbench.agents.llm.scripted_server import ScriptedServer
from merchantbench.agents.registry import make_agent
from merchantbench.record.words import members
from merchantbench.runs.runner import RunSpec, run_agent
from merchantbench.scenario import load_scenario

DAYS = 10  # 20 windows: checkpoints after windows 10 and 20
TIMING = ("latency_s", "wall_seconds")


class Interrupter:
    """The store policy, except that the `at`-th request of a run (counted once armed) kills
    the run's process or answers 401, which crashes it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.at: int | None = None
        self.seen = 0
        self.pid: int | None = None

    def arm(self, at: int, pid: int | None = None) -> None:
        with self.lock:
            self.at, self.seen, self.pid = at, 0, pid

    def __call__(self, request: dict) -> dict:
        with self.lock:
            self.seen += 1
            fire = self.seen == self.at
        if fire and self.pid is not None:
            os.kill(self.pid, signal.SIGKILL)
            return {"status": 503}  # never read: the client is dead
        if fire:
            return {"status": 401}
        return store_policy(request)


@pytest.fixture(scope="module")
def served():
    interrupter = Interrupter()
    with ScriptedServer(interrupter) as server:
        yield server, interrupter


def _settings(server: ScriptedServer) -> dict:
    return {"model": "scripted", "base_url": server.base_url}


def _spec(server: ScriptedServer) -> RunSpec:
    scenario = load_scenario("smoke", overrides=[f"clock.days={DAYS}"])
    return RunSpec("react", scenario, 1, _settings(server))


def _record(run_dir: Path) -> tuple[dict, dict, list[dict], bytes]:
    metrics = json.loads((run_dir / "metrics.json").read_text())
    usage = json.loads((run_dir / "run.json").read_text())["llm_usage"]
    calls = [json.loads(x) for x in (run_dir / "model_calls.jsonl").read_text().splitlines()]
    return metrics, usage, calls, (run_dir / "model_words.jsonl.gz").read_bytes()


def read_words_file(data: bytes) -> list[dict]:
    return [json.loads(text) for _, _, text in members(data)]


def _without_timing(entries: list[dict] | dict):
    if isinstance(entries, dict):
        return {k: v for k, v in entries.items() if k not in TIMING}
    return [_without_timing(e) for e in entries]


@pytest.fixture(scope="module")
def reference(served, tmp_path_factory):
    server, interrupter = served
    interrupter.arm(at=-1)
    run_dir = tmp_path_factory.mktemp("reference") / "run"
    run_agent(_spec(server), run_dir)
    return _record(run_dir)


def _mid_window_request(calls: list[dict], window: int) -> int:
    """Number of the second model call of `window`: the window has already acted."""
    return [c["seq"] for c in calls if c["window"] == window][1]


def _assert_same_run(resumed: tuple, reference: tuple) -> None:
    metrics, usage, calls, words = resumed
    assert metrics == reference[0]
    assert _without_timing(usage) == _without_timing(reference[1])
    assert _without_timing(calls) == _without_timing(reference[2])
    assert words == reference[3]  # the model's words: the same bytes, line for line
    lines = list(read_words_file(words))
    assert [w["seq"] for w in lines] == [c["seq"] for c in calls]
    assert all(w["reasoning"] for w in lines)  # the store policy explains every step


def test_killed_process_resumes_mid_window(served, reference, tmp_path):
    server, interrupter = served
    run_dir = tmp_path / "run"
    kill_at = _mid_window_request(reference[2], window=13)
    cli = [sys.executable, "-c", "from merchantbench.cli import main; main()", "run"]
    args = ["--agent", "react", "--scenario", "smoke", "--days", str(DAYS), "--out", str(run_dir),
            "--no-progress", "--model", "scripted", "--base-url", server.base_url]  # fmt: skip
    child = subprocess.Popen(cli + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    interrupter.arm(at=kill_at, pid=child.pid)
    child.wait(timeout=300)
    assert child.returncode == -signal.SIGKILL
    assert json.loads((run_dir / "run.json").read_text())["ended"] is None
    interrupter.arm(at=-1)
    resumed = subprocess.run(cli + args + ["--resume"], capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    _assert_same_run(_record(run_dir), reference)


def test_crash_after_a_checkpoint_drops_the_calls_made_since(served, reference, tmp_path):
    server, interrupter = served
    run_dir = tmp_path / "run"
    interrupter.arm(at=_mid_window_request(reference[2], window=12))
    with pytest.raises(ModelConfigError, match="401"):
        run_agent(_spec(server), run_dir)
    assert json.loads((run_dir / "run.json").read_text())["ended"] == "error"
    # The crash flushed calls made after the checkpoint (window 10); resuming must drop them.
    logged = (run_dir / "model_calls.jsonl").read_text().splitlines()
    assert len(logged) > len([c for c in reference[2] if c["window"] < 10])
    interrupter.arm(at=-1)
    run_agent(_spec(server), run_dir, resume=True)
    _assert_same_run(_record(run_dir), reference)


def test_checkpointed_agent_keeps_its_conversation_but_no_client(served, monkeypatch):
    server, _ = served
    monkeypatch.setenv("MB_RESUME_KEY", "sk-resume-secret-1234")
    agent = make_agent("react", {**_settings(server), "api_key_env": "MB_RESUME_KEY"})
    agent.conversation.start("brief", [])
    agent.conversation.add_user("window 1")
    agent._client = object()  # stands for the live HTTP client
    blob = pickle.dumps(agent)
    assert b"sk-resume-secret-1234" not in blob
    restored = pickle.loads(blob)
    assert restored._client is None
    assert restored.conversation.messages == agent.conversation.messages
