"""The Inspect AI task (issue 11, item 2), end to end over real HTTP: Inspect's OpenAI-compatible
provider talks to our scripted server, the task writes an Inspect log and a run record beside it,
and the score is the record's final net assets with its Table-1 metrics."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from requires import need

need("inspect", module=True)

from inspect_ai import eval as inspect_eval  # noqa: E402
from inspect_ai.log import EvalLog, read_eval_log  # noqa: E402

from merchantbench.agents.llm.scripted_policy import POLICIES  # noqa: E402
from merchantbench.agents.llm.scripted_server import ScriptedServer  # noqa: E402
from merchantbench.inspect_eval.task import merchantbench  # noqa: E402
from merchantbench.metrics.table1 import TABLE1_KEYS  # noqa: E402
from merchantbench.record.schema import MODEL_WORDS_FILE  # noqa: E402
from merchantbench.record.words import read_words  # noqa: E402
from merchantbench.runs.runner import RunError, RunSpec, run_agent  # noqa: E402
from merchantbench.scenario import load_scenario  # noqa: E402

SMOKE = load_scenario("smoke")
SHORT = ["clock.days=3"]
SECRET = "sk-inspect-test-secret-4711"
MODEL = "openai-api/scripted/policy"
# strict_tools: our optional parameters are not OpenAI "strict" schemas (docs/frameworks.md).
MODEL_ARGS = {"strict_tools": False}


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedServer]:
    """The scripted server, wired to Inspect's `openai-api/scripted/...` provider; its policy
    is set per test (`server.responder = ...`)."""
    with ScriptedServer(POLICIES["store"]) as server:
        monkeypatch.setenv("SCRIPTED_BASE_URL", server.base_url)
        monkeypatch.setenv("SCRIPTED_API_KEY", SECRET)
        yield server


def _eval(tmp_path: Path, server: ScriptedServer, **params: Any) -> EvalLog:
    logs = inspect_eval(
        merchantbench(**params),
        model=MODEL,
        # Inspect keeps the models it made for the process, keyed by base URL among others:
        # each test's server has its own port, so it is named here (the env var is read once).
        model_base_url=server.base_url,
        model_args=MODEL_ARGS,
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert len(logs) == 1 and logs[0].status == "success", logs[0].error
    return read_eval_log(logs[0].location)  # what `inspect view` reads back from disk


def _trace(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "trace.jsonl").read_text().splitlines()]


def _closes(trace: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in trace if e["tool"] == "end_of_step" and e["ok"]]


def test_a_store_run_scores_net_assets_and_writes_its_record_beside_the_log(tmp_path, endpoint):
    log = _eval(tmp_path, endpoint, scenario="smoke", seed=1)
    assert log.samples is not None and len(log.samples) == 1
    score = log.samples[0].scores["net_assets"]  # type: ignore[index]
    run_dir = Path(score.metadata["run_dir"])  # type: ignore[index]
    # Beside the log: logs/X.eval has its run records in logs/X/.
    assert run_dir.parent == Path(log.location).with_suffix("")
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert score.value == metrics["final_net_assets"]
    assert {k: score.metadata[k] for k in TABLE1_KEYS} == {k: metrics[k] for k in TABLE1_KEYS}  # type: ignore[index]
    assert log.results is not None
    assert log.results.scores[0].metrics["mean"].value == metrics["final_net_assets"]
    run = json.loads((run_dir / "run.json").read_text())
    assert run["ended"] == "completed" and run["windows"] == SMOKE.clock.windows == 28
    assert run["agent"]["name"] == "inspect" and run["agent"]["settings"]["model"] == MODEL
    trace = _trace(run_dir)
    assert [e["window"] for e in _closes(trace)] == list(range(28))
    assert not any(e["forced"] for e in trace) and metrics["tool_calls"] > 28
    # One model_calls.jsonl line per request the endpoint answered, with its tokens.
    calls = (run_dir / "model_calls.jsonl").read_text().splitlines()
    assert len(calls) == len(endpoint.requests) == run["llm_usage"]["calls"]
    assert all(json.loads(c)["input_tokens"] > 0 for c in calls)
    # What the model said at each call, line for line: its tool calls as it made them.
    words = list(read_words(run_dir / MODEL_WORDS_FILE))
    assert [w["seq"] for w in words] == [json.loads(c)["seq"] for c in calls]
    assert [len(w["tool_calls"]) for w in words] == [json.loads(c)["tool_calls"] for c in calls]
    assert {c["name"] for w in words for c in w["tool_calls"]} >= {"end_of_step"}
    # The key went to the endpoint and nowhere into the record.
    assert endpoint.authorizations[0] == f"Bearer {SECRET}"
    for path in run_dir.rglob("*"):
        assert not path.is_file() or SECRET.encode() not in path.read_bytes(), path
    # The same policy through our own ReAct harness plays the very same store.
    monkeyed = {"model": "policy", "base_url": endpoint.base_url, "api_key_env": "SCRIPTED_API_KEY"}
    react = run_agent(RunSpec("react", SMOKE, 1, monkeyed), tmp_path / "react")
    assert react["state_hash"] == metrics["state_hash"] == score.metadata["state_hash"]  # type: ignore[index]
    assert react["tool_calls"] == metrics["tool_calls"]


def test_a_model_that_never_calls_a_tool_has_every_window_forced(tmp_path, endpoint):
    endpoint.responder = POLICIES["silent"]
    log = _eval(tmp_path, endpoint, scenario="smoke", seed=2)
    score = log.samples[0].scores["net_assets"]  # type: ignore[index]
    run_dir = Path(score.metadata["run_dir"])  # type: ignore[index]
    closes = _closes(_trace(run_dir))
    assert len(closes) == 28 and all(e["forced"] for e in closes)
    run = json.loads((run_dir / "run.json").read_text())
    assert run["llm_usage"]["forced_windows"] == 28 and run["llm_usage"]["calls"] == 28
    assert score.value == run["final_accounts"]["net_assets"] == 3000.0  # nothing was done
    # The next window's message tells the model why its window was closed.
    assert "closed for you because you replied without calling a tool" in str(
        endpoint.requests[1]["messages"][-1]["content"]
    )


def _two_calls(first: dict[str, Any], second: dict[str, Any]) -> Any:
    return lambda _request: {"tool_calls": [first, second]}


def test_calls_after_end_of_step_and_calls_inspect_refuses_never_reach_the_store(
    tmp_path, endpoint
):
    # end_of_step, then a call in the same turn: it belonged to a window that is gone.
    endpoint.responder = _two_calls(
        {"name": "end_of_step", "arguments": {}}, {"name": "query_open_orders", "arguments": {}}
    )
    log = _eval(tmp_path / "late", endpoint, scenario="smoke", seed=1, overrides=SHORT)
    run_dir = Path(log.samples[0].scores["net_assets"].metadata["run_dir"])  # type: ignore[index]
    trace = _trace(run_dir)
    assert [e["tool"] for e in trace] == ["end_of_step"] * 6 and not any(e["forced"] for e in trace)
    late = [m for m in endpoint.requests[1]["messages"] if m["role"] == "tool"]
    assert "window_closed" in late[-1]["content"]
    # Arguments that break the schema: Inspect answers them itself (counted, not traced).
    endpoint.requests.clear()
    endpoint.responder = _two_calls(
        {"name": "list_product", "arguments": {"items": "not a list"}},
        {"name": "end_of_step", "arguments": {}},
    )
    log = _eval(
        tmp_path / "refused", endpoint, scenario="smoke", seed=1, overrides=["clock.days=3"]
    )
    run_dir = Path(log.samples[0].scores["net_assets"].metadata["run_dir"])  # type: ignore[index]
    assert [e["tool"] for e in _trace(run_dir)] == ["end_of_step"] * 6
    run = json.loads((run_dir / "run.json").read_text())
    assert run["llm_usage"]["inspect_refused_calls"] == 6


def test_an_inspect_token_limit_stops_the_model_and_the_store_idles_to_the_end(tmp_path, endpoint):
    logs = inspect_eval(
        merchantbench(scenario="smoke", seed=1),
        model=MODEL,
        model_args=MODEL_ARGS,
        model_base_url=endpoint.base_url,
        log_dir=str(tmp_path / "logs"),
        display="none",
        token_limit=20_000,
    )
    sample = read_eval_log(logs[0].location).samples[0]  # type: ignore[index]
    run_dir = Path(sample.scores["net_assets"].metadata["run_dir"])  # type: ignore[index]
    run = json.loads((run_dir / "run.json").read_text())
    assert run["ended"] == "stopped" and run["windows"] == 28
    assert run["stop_reason"].startswith("inspect limit:") and "Token limit" in run["stop_reason"]
    trace = _trace(run_dir)
    # ~7k tokens a call: the limit cuts window 0 short, after the model's first calls.
    assert trace[0]["tool"] == "get_daily_report" and not trace[0]["forced"]
    closes = _closes(trace)
    assert len(closes) == 28 and all(e["forced"] for e in closes)
    # The call whose answer crossed the limit was made, but Inspect raises instead of handing
    # its answer back: it is in the Inspect log, not in model_calls.jsonl.
    assert len(endpoint.requests) == run["llm_usage"]["calls"] + 1 < 10


def test_bad_task_parameters_are_refused_in_one_line():
    with pytest.raises(ValueError, match="compaction must be none or one of auto"):
        merchantbench(compaction="squash")
    with pytest.raises(ValueError, match="unknown"):
        merchantbench(scenario="no-such-scenario")


def test_the_runner_refuses_to_drive_the_inspect_driver(tmp_path):
    with pytest.raises(RunError, match="plays through `inspect eval merchantbench/merchantbench`"):
        run_agent(RunSpec("inspect", load_scenario("smoke"), 1), tmp_path / "run")


@pytest.mark.slow
def test_the_inspect_cli_runs_one_sample_per_seed(tmp_path, endpoint):
    endpoint.responder = POLICIES["idle"]
    inspect_cli = Path(sys.executable).parent / "inspect"
    result = subprocess.run(
        [
            str(inspect_cli), "eval", "merchantbench/merchantbench", "--model", MODEL,
            "-T", "scenario=smoke", "-T", "seed=[1,2]", "-T", "overrides=[clock.days=2]",
            "-M", "strict_tools=false", "--log-dir", str(tmp_path / "logs"), "--display", "none",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "SCRIPTED_BASE_URL": endpoint.base_url, "SCRIPTED_API_KEY": SECRET},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    (log_file,) = (tmp_path / "logs").glob("*.eval")
    log = read_eval_log(str(log_file))
    assert log.status == "success" and log.samples is not None
    assert sorted(s.id for s in log.samples) == [1, 2]  # type: ignore[type-var]
    for sample in log.samples:
        run_dir = Path(sample.scores["net_assets"].metadata["run_dir"])  # type: ignore[index]
        assert run_dir == log_file.with_suffix("") / f"seed{sample.id}-epoch1"
        run = json.loads((run_dir / "run.json").read_text())
        assert run["seed"] == sample.id and run["windows"] == 4
        assert sample.scores["net_assets"].value == run["final_accounts"]["net_assets"]  # type: ignore[index]
