"""The verifiers taskset, in verifiers' own environment, evaluated with verifiers' own command
(`vf-eval`, its chat harness and MCP tool servers) against the scripted OpenAI-compatible model:
every episode completes and its reward is the change in net assets of the same play in process.

The environment is the one made ahead (`python -m merchantbench.training_envs verifiers`, as CI
does) when it is there, else it is made now (uv and the package index: minutes); without them
the test skips with a one-line reason, and fails under MERCHANTBENCH_REQUIRE_ALL (CI), like the
tests of the other optional parts."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from merchantbench.agents.llm.scripted_server import ScriptedServer
from merchantbench.rl.episode import Episode, EpisodeConfig
from merchantbench.rl.splits import episode_seed
from merchantbench.rl.verifiers_env import (
    VerifiersEnv,
    VerifiersEnvError,
    ensure_env,
    eval_command,
    eval_env,
    find_env,
)
from requires import missing

EVAL_SECONDS = 1200
KEY_VAR = "MERCHANTBENCH_SCRIPTED_KEY"


@pytest.fixture(scope="module")
def vf_env() -> VerifiersEnv:
    found = find_env()
    if found is not None:
        return found
    try:
        return ensure_env()
    except VerifiersEnvError as exc:
        missing("verifiers", str(exc))


def _text(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)


def merchant(body: dict[str, Any]) -> dict[str, Any]:
    """The scripted model: list the five best sellers at 1.6 times their price, then close
    windows until the episode is over, then say so (and stop)."""
    answers = [_text(m) for m in body["messages"] if m.get("role") == "tool"]
    if answers and '"episode_over":true' in answers[-1].replace(" ", ""):
        return {"content": "The episode is over."}
    if not answers:
        args = {"sort": "sales_30d", "page_size": 5}
        return {"tool_calls": [{"name": "search_products", "arguments": args}]}
    if len(answers) == 1:
        rows = json.loads(answers[0])["rows"]
        items = [{"product_id": r[0], "sale_price": round(r[3] * 1.6, 2)} for r in rows]
        return {"tool_calls": [{"name": "list_product", "arguments": {"items": items}}]}
    return {"tool_calls": [{"name": "end_of_step", "arguments": {}}]}


def in_process(index: int) -> int:
    episode = Episode(
        EpisodeConfig("smoke", length=3, start_day=60), episode_seed("validation", index)
    )
    found = episode.call("search_products", {"sort": "sales_30d", "page_size": 5}).result
    items = [{"product_id": r[0], "sale_price": round(r[3] * 1.6, 2)} for r in found["rows"]]
    episode.call("list_product", {"items": items})
    while not episode.over:
        episode.call("end_of_step")
    return episode.change_fen


def test_vf_eval_plays_the_taskset_with_the_scripted_model(
    vf_env: VerifiersEnv, tmp_path: Path
) -> None:
    with ScriptedServer(merchant, keep_requests=False) as model:
        command = eval_command(
            vf_env, base_url=model.base_url, model="scripted", api_key_var=KEY_VAR,
            out=tmp_path / "out", count=2, length="3", start_day=60,
        )  # fmt: skip
        done = subprocess.run(
            command, env=eval_env(KEY_VAR, "scripted"), capture_output=True, text=True,
            timeout=EVAL_SECONDS, cwd=tmp_path,
        )  # fmt: skip
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    traces = [json.loads(line) for line in next(tmp_path.glob("out/*/traces.jsonl")).open()]
    assert sorted(t["task"]["data"]["index"] for t in traces) == [0, 1]
    for trace in traces:
        assert trace["ok"], trace["errors"]
        (rollout,) = trace["traces"]
        change = in_process(trace["task"]["data"]["index"])
        assert change != 0
        assert rollout["metrics"]["episode_over"] == 1.0
        assert rollout["metrics"]["net_assets_change_fen"] == change
        assert rollout["rewards"]["net_assets"]["score"] == pytest.approx(change / 100)
