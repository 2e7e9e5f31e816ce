"""A keyed `end_of_step` whose answer was lost is retried after the window it closed, in the
next one (or after the run's end): it gets its first answer again and closes nothing more
(tools/answer_log.py). Through the JSON API of a served run (no `X-Window`), with the
official MCP client against `HostedRun`, and on the Python surface."""

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
from merchantbench.session import Session


def _closes(trace_file: Path) -> int:
    lines = [json.loads(line) for line in trace_file.read_text().splitlines()]
    return sum(line.get("tool") == "end_of_step" for line in lines)


def test_the_json_api_answers_a_retried_close_again(live) -> None:
    run = live.create_run(days=1, label="retried-close")
    client = ProtocolClient(live.base_url, run["run_id"], run["agent_id"], run["agent_token"])
    url = f"/api/runs/{run['run_id']}/tools/end_of_step"

    def close(key: str) -> Any:
        return client.http.post(url, json={}, headers={"Idempotency-Key": key})

    try:
        assert client.register(model="scripted").status_code == 200
        first = close("close-0")
        assert first.status_code == 200 and first.json()["ok"]
        again = close("close-0")  # in window 1 now: the answer of window 0's close
        assert (again.status_code, again.json()) == (200, first.json())
        assert client.observation().json()["tick"]["window"] == 1
        last = close("close-1")
        assert last.status_code == 200 and last.json()["ok"]
        assert (close("close-1").status_code, close("close-1").json()) == (200, last.json())
        assert close("close-2").status_code == 410  # any other call: the run is over
    finally:
        client.close()
    assert _closes(live.registry.runs_dir / run["run_id"] / "trace.jsonl") == 2


def test_an_mcp_client_retrying_end_of_step_gets_the_same_answer(tmp_path: Path) -> None:
    spec = RunSpec(MCP_AGENT, load_scenario("smoke", overrides=["clock.days=1"]), 3)
    run = HostedRun(spec, tmp_path / "run")

    async def body(client: Client) -> list[Any]:
        async def close(key: str) -> Any:
            meta = {IDEMPOTENCY_META_KEY: key}
            return (await client.call_tool("end_of_step", {}, meta=meta)).structured_content  # type: ignore[arg-type]

        answers = [await close("a"), await close("a")]
        answers.append((await client.call_tool("query_balance", {})).structured_content)
        answers += [await close("b"), await close("b"), await close("c")]
        return answers

    first, again, balance, last, last_again, other = run_client(
        build_mcp_server(run), body, timeout=60
    )
    assert first["run_over"] is False and again == first and balance["ok"]
    assert last["run_over"] is True and last_again == last
    assert last["summary"]["windows_played"] == 2
    assert other["error"]["code"] == "run_over"
    assert _closes(tmp_path / "run" / "trace.jsonl") == 2


def test_the_python_surface_answers_a_retried_close_once() -> None:
    session = Session.open(load_scenario("smoke", overrides=["clock.days=2"]), 3)
    surface = session.surface
    first = surface.call("end_of_step", {}, idempotency_key="x")
    assert surface.window == 1
    assert surface.call("end_of_step", {}, idempotency_key="x") == first
    assert surface.window == 1  # not closed again
    surface.call("end_of_step", {}, idempotency_key="y")
    assert surface.window == 2
    assert surface.call("end_of_step", {}, idempotency_key="x")["ok"]  # two windows later:
    assert surface.window == 3  # a new close (what the log does not cover, documented)


def test_a_market_merchant_retrying_its_close_gets_the_answer_waiting_and_after(live) -> None:
    """While the other merchant has not closed the window (before: 425 `window_closed`), and
    in the next window, alpha's retried close gets its first answer; nothing closes twice."""
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
        assert close("beta", "b0").json()["ok"]  # the hours run: window 1 opens
        assert clients["alpha"].observation().json()["tick"]["window"] == 1
        after = close("alpha", "a0")
        assert (after.status_code, after.json()) == (200, first.json())
        assert close("beta", "b1").json()["ok"]  # beta closes window 1: alpha has not
        assert clients["alpha"].observation().json()["tick"]["window"] == 1
    finally:
        for client in clients.values():
            client.close()
