"""`merchantbench run --agent external --serve`: the run is hosted until it ends, then the
command prints its headline metrics and exits; a finished run cannot be resumed."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import httpx
from conftest import ADMIN
from protocol_client import ProtocolClient
from test_restart import free_port, play


def test_run_external_serve_hosts_one_run_until_it_ends(tmp_path) -> None:
    port, out = free_port(), tmp_path / "runs" / "served"
    env = {**os.environ, "MERCHANTBENCH_ADMIN_TOKEN": ADMIN}
    command = [sys.executable, "-m", "merchantbench.cli", "run", "--agent", "external",
               "--serve", "--port", str(port), "--scenario", "smoke", "--days", "1",
               "--out", str(out)]  # fmt: skip
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True)
    try:
        lines = []
        assert process.stdout is not None
        for line in process.stdout:  # the environment is printed once the server is up
            lines.append(line.strip())
            if line.startswith("export MERCHANTBENCH_AGENT_TOKEN="):
                break
        printed = dict(line[len("export ") :].split("=", 1) for line in lines if "=" in line)
        assert printed["MERCHANTBENCH_RUN_ID"] == "served"
        [link] = [line.split(": ", 1)[1] for line in lines if line.startswith("dashboard")]
        # The printed link opens the dashboard.
        with httpx.Client(timeout=30, follow_redirects=True) as browser:
            dashboard = browser.get(link)
            assert dashboard.status_code == 200 and "served" in dashboard.text
            assert browser.get(link.split("?")[0]).url.path == "/"  # the cookie, kept
        client = ProtocolClient(
            printed["MERCHANTBENCH_BASE_URL"], "served", printed["MERCHANTBENCH_AGENT_ID"],
            printed["MERCHANTBENCH_AGENT_TOKEN"],
        )  # fmt: skip
        play(client)
        rest, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0
    headline = json.loads(rest.strip().splitlines()[-1])
    metrics = json.loads((out / "metrics.json").read_text())
    assert headline["final_net_assets"] == metrics["final_net_assets"] and metrics["windows"] == 2
    again = subprocess.run([*command, "--resume"], env=env, capture_output=True, text=True)
    assert again.returncode == 2 and "already finished" in again.stderr
