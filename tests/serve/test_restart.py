"""A restarted server picks its runs up: after a clean stop from where the run stood (even mid-
window), after a kill -9 from the last checkpoint (the window the agent was in opens again); and
either way the run ends exactly as an uninterrupted one."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from protocol_client import ProtocolClient, assistant, tool_call
from script import play_window
from serve_support import ADMIN, start_server
from test_full_run import play_in_process

from merchantbench.scenario import load_scenario
from timeouts import REQUEST_SECONDS, START_SECONDS, STOP_SECONDS


def play(client: ProtocolClient, until_window: int | None = None) -> None:
    """Play the script window by window, up to `until_window` (which is left open, unplayed)."""
    while True:
        response = client.observation()
        if response.status_code == 410:
            return
        window = response.json()["tick"]["window"]
        if window == until_window:
            return
        play_window(lambda name, args: client.call(name, args), window)
        assert client.act(assistant(tool_call("end", "end_of_step"))).json()["step_done"]


def final_state_hash(runs: Path, run_id: str) -> str:
    return json.loads((runs / run_id / "metrics.json").read_text())["state_hash"]


def test_a_clean_restart_continues_mid_window(tmp_path) -> None:
    runs = tmp_path / "runs"
    first = start_server(runs)
    run = first.create_run(seed=3)
    client = ProtocolClient(first.base_url, run["run_id"], "agent_0", run["agent_token"])
    play(client, until_window=5)
    play_window(lambda name, args: client.call(name, args), 5)  # window 5 played, not closed
    first.stop()
    client.close()
    second = start_server(runs)
    try:
        client = ProtocolClient(second.base_url, run["run_id"], "agent_0", run["agent_token"])
        packet = client.observation().json()
        assert packet["tick"]["window"] == 5 and "brief" not in packet  # it was served already
        assert client.call("read_memory_doc")["content"] == "window 1\nwindow 5\n"
        assert client.act(assistant(tool_call("end", "end_of_step"))).json()["step_done"]
        play(client)
    finally:
        second.stop()
    local = play_in_process(load_scenario("smoke"), 3, tmp_path / "local")
    assert final_state_hash(runs, run["run_id"]) == local["state_hash"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_process(runs: Path, port: int) -> subprocess.Popen:
    env = {**os.environ, "MERCHANTBENCH_ADMIN_TOKEN": ADMIN}
    command = [sys.executable, "-m", "merchantbench.cli", "serve", "--port", str(port),
               "--runs-dir", str(runs)]  # fmt: skip
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + START_SECONDS
    while True:
        assert process.poll() is None and time.monotonic() < deadline, "server did not start"
        try:
            health = httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=REQUEST_SECONDS)
            if health.status_code == 200:
                return process
        except httpx.TransportError:
            time.sleep(0.1)


def test_after_kill_9_the_run_resumes_at_its_last_answered_call(tmp_path) -> None:
    """The write answered just before the kill is there after it (runs/journal.py)."""
    runs, port = tmp_path / "runs", free_port()
    base = f"http://127.0.0.1:{port}"
    process = serve_process(runs, port)
    try:
        admin = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {ADMIN}"},
                             timeout=REQUEST_SECONDS)  # fmt: skip
        run = admin.post("/api/runs", json={"scenario": "smoke", "seed": 4}).json()
        client = ProtocolClient(base, run["run_id"], "agent_0", run["agent_token"])
        play(client, until_window=7)
        client.call("write_memory_doc", {"content": "lost\n", "mode": "append"})
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=STOP_SECONDS)
    process = serve_process(runs, port)
    try:
        output_lines = []
        client = ProtocolClient(base, run["run_id"], "agent_0", run["agent_token"])
        packet = client.observation().json()
        assert packet["tick"]["window"] == 7  # the window it was in
        assert "lost" in client.call("read_memory_doc")["content"]  # answered: durable
        play(client)
    finally:
        process.send_signal(signal.SIGTERM)
        output_lines = process.communicate(timeout=STOP_SECONDS)[0].splitlines()
    assert f"export MERCHANTBENCH_RUN_ID={run['run_id']}" in output_lines
    assert f"export MERCHANTBENCH_AGENT_TOKEN={run['agent_token']}" in output_lines
    local = play_in_process(load_scenario("smoke"), 4, tmp_path / "local")
    assert final_state_hash(runs, run["run_id"]) == local["state_hash"]


def test_a_run_over_but_not_recorded_is_finished_when_picked_up(tmp_path) -> None:
    """The last window closed, then the server stopped before the record was finished."""
    from merchantbench.serve.host import Host, HostSettings
    from merchantbench.serve.registry import RunRegistry

    runs = tmp_path / "runs"
    registry = RunRegistry(runs, ADMIN)
    host, _ = registry.create_now(
        load_scenario("smoke"), 5, HostSettings("late", turns_per_window=9)
    )
    while not host.surface.over:
        host.surface.call("end_of_step")
    host.close()  # checkpointed over, metrics never written
    assert not (runs / "late" / "metrics.json").exists()
    again = RunRegistry(runs, ADMIN)
    assert again.load_existing() == ["late"]
    picked = again.hosts["late"]
    assert isinstance(picked, Host) and picked.finished
    assert json.loads((runs / "late" / "run.json").read_text())["ended"] == "completed"
    assert picked.summary()["metrics"]["windows"] == 28


def test_a_restarted_run_answers_the_protocol_from_its_saved_state(tmp_path) -> None:
    """The protocol's memory (call ids of the open window, reported usage, registration, the
    served brief) is the driver's state, saved with the checkpoint as JSON: after a restart a
    reused call id with another call is still a 409, a usage report still a duplicate."""
    import asyncio

    from merchantbench.record.checkpoint import load_checkpoint
    from merchantbench.serve.act import ProtocolError
    from merchantbench.serve.host import Host, HostSettings
    from merchantbench.serve.registry import RunRegistry

    runs = tmp_path / "runs"
    host, _ = RunRegistry(runs, ADMIN).create_now(load_scenario("smoke"), 6, HostSettings("r"))
    usage = {"usage_id": "u1", "token_usage": {"input": 5}}

    async def first() -> None:
        await host.observation("agent_0", 1.0, nowait=True)
        await host.register("agent_0", {"agent_id": "agent_0", "model": "m"})
        await host.act("agent_0", [assistant(tool_call("c1", "query_balance"))], {"input": 3}, None)
        await host.record_usage("agent_0", usage)

    asyncio.run(first())
    host.close()
    saved = load_checkpoint(runs / "r")
    assert saved is not None and saved["agent"] is None and "c1" in saved["driver"]

    again = RunRegistry(runs, ADMIN)
    assert again.load_existing() == ["r"]
    picked = again.hosts["r"]
    assert isinstance(picked, Host)

    async def second() -> None:
        packet = await picked.observation("agent_0", 1.0, nowait=True)
        assert "brief" not in packet and packet["turn_count"] == 1
        with pytest.raises(ProtocolError) as conflict:
            await picked.act("agent_0", [assistant(tool_call("c1", "query_products"))], None, None)
        assert conflict.value.status == 409
        assert (await picked.record_usage("agent_0", usage))["duplicate"] is True

    asyncio.run(second())
    assert picked.only.protocol.registration == {"agent_id": "agent_0", "model": "m"}
    assert picked.only.driver.usage_summary()["act"] == {"input": 3}
    picked.close()
