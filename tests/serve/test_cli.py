"""`merchantbench run --agent external --serve`: the run is hosted until it ends, then the
command prints its headline metrics and exits; a finished run cannot be resumed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
from protocol_client import ProtocolClient, assistant, tool_call
from script import play_window
from serve_support import ADMIN
from test_restart import free_port, play

from timeouts import REQUEST_SECONDS, STOP_SECONDS


def _serve_one(out: Path) -> tuple[list[str], subprocess.Popen, list[str]]:
    """`run --agent external --serve` of a 1-day smoke run into `out`: its command, the
    process, and what it printed up to the agent's token (printed once the server is up)."""
    env = {**os.environ, "MERCHANTBENCH_ADMIN_TOKEN": ADMIN}
    command = [sys.executable, "-m", "merchantbench.cli", "run", "--agent", "external",
               "--serve", "--port", str(free_port()), "--scenario", "smoke", "--days", "1",
               "--out", str(out)]  # fmt: skip
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True)
    lines = []
    assert process.stdout is not None
    for line in process.stdout:
        lines.append(line.strip())
        if line.startswith("export MERCHANTBENCH_AGENT_TOKEN="):
            break
    return command, process, lines


def _printed_env(lines: list[str]) -> dict[str, str]:
    return dict(line[len("export ") :].split("=", 1) for line in lines if "=" in line)


def test_run_external_serve_hosts_one_run_until_it_ends(tmp_path) -> None:
    out = tmp_path / "runs" / "served"
    command, process, lines = _serve_one(out)
    env = {**os.environ, "MERCHANTBENCH_ADMIN_TOKEN": ADMIN}
    try:
        printed = _printed_env(lines)
        assert printed["MERCHANTBENCH_RUN_ID"] == "served"
        [link] = [line.split(": ", 1)[1] for line in lines if line.startswith("dashboard")]
        # The printed link opens the dashboard.
        with httpx.Client(timeout=REQUEST_SECONDS, follow_redirects=True) as browser:
            dashboard = browser.get(link)
            assert dashboard.status_code == 200 and "served" in dashboard.text
            assert browser.get(link.split("?")[0]).url.path == "/"  # the cookie, kept
        client = ProtocolClient(
            printed["MERCHANTBENCH_BASE_URL"], "served", printed["MERCHANTBENCH_AGENT_ID"],
            printed["MERCHANTBENCH_AGENT_TOKEN"],
        )  # fmt: skip
        play(client)
        rest, _ = process.communicate(timeout=STOP_SECONDS)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0
    headline = json.loads(rest.strip().splitlines()[-1])
    metrics = json.loads((out / "metrics.json").read_text())
    assert headline["final_net_assets"] == metrics["final_net_assets"] and metrics["windows"] == 2
    again = subprocess.run([*command, "--resume"], env=env, capture_output=True, text=True)
    assert again.returncode == 2 and "already finished" in again.stderr


def test_run_external_serve_tells_a_slow_agent_the_run_is_over(tmp_path) -> None:
    """The host stops once the run has ended and the agent has been told so (410), not as soon
    as the last window closes: an agent that asks again a while after its last `end_of_step`
    (a slow machine, CI under load) gets the answer, not a refused connection."""
    _, process, lines = _serve_one(tmp_path / "runs" / "served")
    printed = _printed_env(lines)
    client = ProtocolClient(
        printed["MERCHANTBENCH_BASE_URL"], "served", printed["MERCHANTBENCH_AGENT_ID"],
        printed["MERCHANTBENCH_AGENT_TOKEN"],
    )  # fmt: skip
    try:
        play(client, until_window=1)
        play_window(lambda name, args: client.call(name, args), 1)
        assert client.act(assistant(tool_call("end", "end_of_step"))).json()["step_done"]
        time.sleep(1.5)  # the server's shutdown check runs every 0.1 s
        assert client.observation().status_code == 410
        client.close()
        process.communicate(timeout=STOP_SECONDS)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0
