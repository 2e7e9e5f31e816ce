"""The public protocol through a real socket: the schema, the brief in the first packet, the
tick, long-poll and each refusal (408, 410, 425, 429, 409, 400), none of which changes a thing."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from protocol_client import ProtocolClient, assistant, tool_call
from serve_support import LiveServer

from frontend_script import assert_status_states
from merchantbench.serve.host import Host
from merchantbench.tools.toolset import DECLARED


def client_for(live: LiveServer, **create: Any) -> tuple[ProtocolClient, Host]:
    run = live.create_run(**create)
    client = ProtocolClient(live.base_url, run["run_id"], run["agent_id"], run["agent_token"])
    host = live.registry.hosts[run["run_id"]]
    assert isinstance(host, Host)
    return client, host


def fingerprint(host: Host) -> tuple[Any, ...]:
    """Everything a refused request must leave as it was."""
    state = host.only.protocol
    return (host.session.state_hash(), host.session.memory.seq, state.turns,
            dict(state.fingerprints), dict(state.auxiliary), host.surface.window)  # fmt: skip


def test_schema_lists_the_tools_with_their_openai_schema_and_hash(live: LiveServer) -> None:
    client, host = client_for(live)
    body = client.schema().json()
    assert [t["openai"] for t in body["tools"]] == host.surface.tool_schemas()
    assert (
        len(body["tools"]) == len(DECLARED.tools())
        and body["tools"][0]["openai"]["type"] == "function"
    )
    assert body["tool_schema_sha256"] == host.surface.tool_schema_sha256()
    assert body["protocol"]["windows_total"] == 28 and body["scenario_id"] == "smoke"


def test_first_packet_carries_the_brief_and_the_tick_gives_the_hour(live: LiveServer) -> None:
    client, host = client_for(live)
    first = client.observation().json()
    assert first["brief"]["system_prompt"] == host.surface.brief()
    assert first["tick"] == {"step": 0, "day": 1, "hour": 0, "window": 0, "windows_total": 28}
    assert first["text"] == host.surface.observation()
    client.act(assistant(tool_call("e", "end_of_step")))
    second = client.observation().json()
    assert "brief" not in second
    assert second["tick"]["step"] == 12 == host.surface.hour and second["tick"]["hour"] == 12


def test_long_poll_waits_for_a_window_and_408_means_poll_again(live: LiveServer) -> None:
    client, host = client_for(live, paused=True)
    started = time.monotonic()
    assert client.observation(timeout=0.2).status_code == 408
    assert 0.2 <= time.monotonic() - started < 5
    answers: list[Any] = []
    poll = threading.Thread(target=lambda: answers.append(client.observation(timeout=20)))
    poll.start()
    time.sleep(0.3)
    assert not answers  # still waiting
    with live.client() as admin:
        assert admin.post(f"/api/runs/{host.run_id}/resume").status_code == 200
    poll.join(timeout=20)
    assert answers[0].status_code == 200 and answers[0].json()["tick"]["step"] == 0


def test_410_once_no_window_will_open_again(live: LiveServer) -> None:
    client, host = client_for(live, days=1)
    for _ in range(2):
        client.observation()
        assert client.act(assistant(tool_call("e", "end_of_step"))).json()["step_done"]
    assert host.finished
    assert client.observation().status_code == 410
    assert client.act(assistant(tool_call("q", "query_balance"))).status_code == 410


def test_stale_step_and_a_closed_window_answer_425(live: LiveServer) -> None:
    client, host = client_for(live)
    client.observation()
    before = fingerprint(host)
    stale = client.act(assistant(tool_call("a", "query_balance")), step=5)
    assert stale.status_code == 425 and stale.json()["error"] == "stale_step"
    assert fingerprint(host) == before
    with live.client() as admin:
        admin.post(f"/api/runs/{host.run_id}/pause")
    closed = client.act(assistant(tool_call("a", "query_balance")))
    assert closed.status_code == 425 and fingerprint(host) == before


def test_turns_over_the_window_cap_answer_429_but_end_of_step_passes(live: LiveServer) -> None:
    client, host = client_for(live, turns_per_window=2)
    client.observation()
    for n in range(2):
        assert client.act(assistant(tool_call(f"q{n}", "query_balance"))).status_code == 200
    before = fingerprint(host)
    capped = client.act(assistant(tool_call("q3", "query_balance")))
    assert capped.status_code == 429 and fingerprint(host) == before
    mixed = client.act(assistant(tool_call("q4", "query_balance"), tool_call("e", "end_of_step")))
    assert mixed.status_code == 429 and fingerprint(host) == before
    end = client.act(assistant(tool_call("e", "end_of_step")))
    assert end.status_code == 200 and end.json()["hook_released"] and host.surface.window == 1
    client.observation()
    assert client.act(assistant(tool_call("q5", "query_balance"))).status_code == 200


def test_a_call_id_reused_with_other_arguments_is_a_409(live: LiveServer) -> None:
    client, host = client_for(live)
    client.observation()
    doc = {"content": "first\n", "mode": "append"}
    first = client.act(assistant(tool_call("w1", "write_memory_doc", doc)))
    assert first.status_code == 200
    before = fingerprint(host)
    other = {"content": "second\n", "mode": "append"}
    conflict = client.act(
        assistant(tool_call("r1", "query_balance"), tool_call("w1", "write_memory_doc", other))
    )
    assert conflict.status_code == 409 and conflict.json()["error"] == "idempotency_conflict"
    assert fingerprint(host) == before  # the read before it did not run either
    again = client.act(assistant(tool_call("w1", "write_memory_doc", doc)))
    assert again.status_code == 200
    assert json.loads(again.json()["tool_results"][0]["content"]) == json.loads(
        first.json()["tool_results"][0]["content"]
    )
    assert client.call("read_memory_doc")["content"] == "first\n"  # written once


@pytest.mark.parametrize(
    "messages",
    [
        [assistant(tool_call("e", "end_of_step"), tool_call("q", "query_balance"))],
        [],
        [{"role": "robot"}],
        [assistant({"type": "function", "function": {"name": "query_balance"}})],
        [assistant(tool_call("x", "query_balance"), tool_call("x", "query_balance"))],
        [{"role": "tool", "tool_call_id": "x", "content": "{}"}],
        ["not a message"],
    ],
)
def test_malformed_batches_and_end_of_step_not_last_answer_400(
    live: LiveServer, messages: list[Any]
) -> None:
    client, host = client_for(live)
    client.observation()
    before = fingerprint(host)
    response = client.act(*messages)
    assert response.status_code == 400 and response.json()["ok"] is False
    assert fingerprint(host) == before


def test_a_batch_replaying_history_runs_only_the_new_calls(live: LiveServer) -> None:
    client, host = client_for(live)
    client.observation()
    old = tool_call("old", "write_memory_doc", {"content": "once\n", "mode": "append"})
    assert client.act(assistant(old)).status_code == 200
    answered = {"role": "tool", "tool_call_id": "old", "tool_origin": "merchantbench_env"}
    history = [
        {"role": "user", "content": "observation"},
        assistant(old),
        {**answered, "content": "{}"},
        assistant(tool_call("new", "read_memory_doc"),
                  {**tool_call("fw", "my_notes"), "tool_origin": "hermes_native"}),
    ]  # fmt: skip
    seq = host.session.memory.seq
    response = client.act(*history)
    results = response.json()["tool_results"]
    assert [r["tool_call_id"] for r in results] == ["new"]
    assert json.loads(results[0]["content"])["content"] == "once\n"
    assert host.session.memory.seq == seq + 2  # the read, and the framework call recorded
    again = client.act(*history)  # resent again: the framework call is recorded once per
    # window, and the read (same id, same call) is answered from the log, not run again
    assert again.json()["tool_results"] == results
    assert host.session.memory.seq == seq + 2


def test_usage_is_recorded_once_per_id_and_a_different_report_is_409(live: LiveServer) -> None:
    client, host = client_for(live)
    report = {"usage_id": "review-1", "token_usage": {"input": 200, "output": 50}}
    assert client.usage(**report).json() == {"ok": True, "usage_id": "review-1", "duplicate": False}
    assert client.usage(**report).json()["duplicate"] is True
    before = fingerprint(host)
    changed = client.usage(**{**report, "token_usage": {"input": 1}})
    assert changed.status_code == 409 and fingerprint(host) == before
    assert client.usage(usage_id="x").status_code == 400
    assert host.only.driver.usage_summary()["auxiliary"] == {"input": 200, "output": 50}
    client.observation()
    client.act(assistant(tool_call("q", "query_balance")), token_usage={"input": 7, "total": 9})
    assert host.only.driver.usage_summary()["act"] == {"input": 7, "total": 9}


def test_register_records_the_agent_and_rejects_another_agent_id(live: LiveServer) -> None:
    client, host = client_for(live)
    assert client.register(model="m1", version="3").json()["model"] == "m1"
    assert host.only.protocol.registration is not None
    assert host.only.protocol.registration["version"] == "3"
    other = client.http.post(f"{client.run}/agent/register", json={"agent_id": "agent_9"})
    assert other.status_code == 404
    wrong = client.http.get(f"{client.run}/agents/agent_9/observation")
    assert wrong.status_code == 404


def test_the_json_api_serves_the_store_status_the_tick_and_the_text_agree(
    live: LiveServer,
) -> None:
    run = live.create_run(days=2, seed=7)
    host = live.registry.hosts[run["run_id"]]
    assert isinstance(host, Host)
    base = f"/api/runs/{host.run_id}"
    with live.client(run["agent_token"]) as agent:
        search = {"page_size": 3, "sort": "sales_30d"}
        rows = agent.post(f"{base}/tools/search_products", json=search).json()["rows"]
        items = [{"product_id": r[0], "sale_price": round(r[3] * 1.3, 2)} for r in rows]
        assert agent.post(f"{base}/tools/list_product", json={"items": items}).json()["ok"]
        orders = 0
        for window in range(4):
            seen = agent.get(f"{base}/observation").json()
            store = agent.get(f"{base}/store").json()
            assert seen["store"] == store == host.surface.status().to_json()
            assert store["window"] == window and store["active_listings"] == 3
            assert seen["tick"] == {"step": store["hour"], "day": store["day"],
                                   "hour": store["hour_of_day"], "window": store["window"],
                                   "windows_total": store["windows_total"]}  # fmt: skip
            orders = assert_status_states(store, seen["text"], orders)
            ended = agent.post(f"{base}/end-window").json()
            assert ended["store"] == agent.get(f"{base}/store").json()
            assert ended["store"]["window"] == window + 1
        assert orders > 0
    with live.client(None) as nobody:
        assert nobody.get(f"{base}/store").status_code == 401
