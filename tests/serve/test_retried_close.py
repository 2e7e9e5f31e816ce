"""A keyed `end_of_step` whose answer was lost, retried where no call is taken any more —
after the run's last window, or (in a market) while its merchant waits for the others to close
the window — gets its first answer again (before: 410 `gone`, `run_over`, 425
`window_closed`). Keys stay scoped to their window: in the next window the same key is a new
call (tests/test_hostile_input.py; `X-Window` refuses a stale one). Through the JSON API of a
served run, a served market, and the official MCP client against `HostedRun`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mcp import Client
from mcp_play import run_client
from protocol_client import ProtocolClient

from merchantbench.mcp_surface import IDEMPOTENCY_META_KEY, build_mcp_server
from merchantbench.runs.runner import RunSpec
from merchantbench.scenario import load_scenario
from merchantbench.serve.mcp_run import MCP_AGENT, HostedRun


def _closes(trace_file: Path) -> int:
    lines = [json.loads(line) for line in trace_file.read_text().splitlines()]
    return sum(line.get("tool") == "end_of_step" for line in lines)


def test_the_json_api_answers_a_retried_last_close(live) -> None:
    run = live.create_run(days=1, label="retried-close")
    client = ProtocolClient(live.base_url, run["run_id"], run["agent_id"], run["agent_token"])
    url = f"/api/runs/{run['run_id']}/tools/end_of_step"

    def close(key: str) -> Any:
        return client.http.post(url, json={}, headers={"Idempotency-Key": key})

    try:
        assert client.register(model="scripted").status_code == 200
        assert close("close-0").json()["ok"]
        last = close("close-1")
        assert last.status_code == 200 and last.json()["ok"]
        again = close("close-1")
        assert (again.status_code, again.json()) == (200, last.json())
        assert close("close-2").status_code == 410  # any other call: the run is over
        assert close("close-0").status_code == 410  # a key of an earlier window too
    finally:
        client.close()
    assert _closes(live.registry.runs_dir / run["run_id"] / "trace.jsonl") == 2


def test_an_mcp_client_retrying_the_last_end_of_step_gets_the_summary_again(
    tmp_path: Path,
) -> None:
    spec = RunSpec(MCP_AGENT, load_scenario("smoke", overrides=["clock.days=1"]), 3)
    run = HostedRun(spec, tmp_path / "run")

    async def body(client: Client) -> list[Any]:
        async def close(key: str) -> Any:
            meta = {IDEMPOTENCY_META_KEY: key}
            return (await client.call_tool("end_of_step", {}, meta=meta)).structured_content  # type: ignore[arg-type]

        return [await close("a"), await close("b"), await close("b"), await close("c")]

    first, last, last_again, other = run_client(build_mcp_server(run), body, timeout=60)
    assert first["run_over"] is False
    assert last["run_over"] is True and last_again == last
    assert last["summary"]["windows_played"] == 2
    assert other["error"]["code"] == "run_over"
    assert _closes(tmp_path / "run" / "trace.jsonl") == 2


def test_a_market_merchant_retrying_its_close_while_waiting_gets_the_answer(live) -> None:
    created = live.create_run(days=1, agents=["alpha", "beta"], label="retried-market")
    run, tokens = created["run_id"], created["agent_tokens"]
    clients = {a: ProtocolClient(live.base_url, run, a, tokens[a]) for a in ("alpha", "beta")}

    def close(agent: str, key: str) -> Any:
        url = f"/api/runs/{run}/agents/{agent}/tools/end_of_step"
        return clients[agent].http.post(url, json={}, headers={"Idempotency-Key": key})

    try:
        first = close("alpha", "a0")
        assert first.status_code == 200 and first.json()["ok"]
        waiting = close("alpha", "a0")
        assert (waiting.status_code, waiting.json()) == (200, first.json())
        other = close("alpha", "a1")  # another call while waiting: refused as before
        assert other.status_code == 425 and other.json()["error"] == "window_closed"
        assert close("beta", "b0").json()["ok"]  # the hours run: window 1 opens
        assert clients["alpha"].observation().json()["tick"]["window"] == 1
    finally:
        for client in clients.values():
            client.close()
