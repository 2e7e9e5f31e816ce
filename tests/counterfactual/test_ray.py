"""The counterfactual analysis on a local Ray cluster gives the local executor's curves.

As in tests/sweeps/test_sweep_ray.py, the cluster (`ray start --head` on 127.0.0.1) and the
driver (`merchantbench counterfactual … --executor ray --address …`) are fresh processes with an
environment built from nothing but what they need.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from merchantbench.counterfactual.analysis import analyse
from merchantbench.counterfactual.execute import InProcess
from merchantbench.counterfactual.parent import Parent
from merchantbench.counterfactual.takeover import Policy
from merchantbench.runs.runner import run_agent
from merchantbench.runs.spec import RunSpec
from merchantbench.scenario import load_scenario
from requires import need

need("ray", module=True)
START_SECONDS = 300
BIN = Path(sys.executable).parent
RAY_ENV = {
    "RAY_AUTH_MODE": "disabled",
    "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0",
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_worker_register_timeout_seconds": "600",
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _clean_env(tmp: Path) -> dict[str, str]:
    keep = ("HOME", "LANG", "MERCHANTBENCH_CACHE", "SSL_CERT_FILE")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    return {**env, **RAY_ENV, "PATH": f"{BIN}:/usr/bin:/bin", "TMPDIR": str(tmp)}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    base = tmp_path_factory.mktemp("ray")
    port, env = _free_port(), _clean_env(base)
    command = [str(BIN / "ray"), "start", "--head", "--block", "--node-ip-address=127.0.0.1",
               f"--port={port}", f"--dashboard-agent-grpc-port={_free_port()}",
               "--include-dashboard=false", "--num-cpus=2", "--disable-usage-stats",
               f"--temp-dir=/tmp/mb-ray-{port}"]  # fmt: skip
    with open(base / "head.log", "w") as log:
        head = subprocess.Popen(command, env=env, start_new_session=True, stdout=log,
                                stderr=subprocess.STDOUT)  # fmt: skip
        try:
            deadline = time.monotonic() + START_SECONDS
            probe = [str(BIN / "python"), "-c", f"import ray; ray.init(address='127.0.0.1:{port}')"]
            while subprocess.run(
                probe, env=env, capture_output=True, timeout=START_SECONDS
            ).returncode:
                assert head.poll() is None and time.monotonic() < deadline, "ray did not start"
                time.sleep(2)
            yield f"127.0.0.1:{port}", env
        finally:
            os.killpg(head.pid, signal.SIGTERM)
            head.wait(timeout=60)
            shutil.rmtree(f"/tmp/mb-ray-{port}", ignore_errors=True)


def test_ray_gives_the_local_curves(cluster, tmp_path):
    address, env = cluster
    run_dir = tmp_path / "run"
    run_agent(RunSpec("rule-based", load_scenario("smoke"), 4), run_dir)
    local = analyse([Parent.read(run_dir)], [Policy("idle"), Policy("expert")], 4, InProcess())
    command = [str(BIN / "python"), "-m", "merchantbench.cli", "counterfactual", str(run_dir),
               "--policy", "idle", "--policy", "expert", "--every", "4d", "--executor", "ray",
               "--address", address, "--out", str(tmp_path / "ray"), "--no-progress"]  # fmt: skip
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    data = json.loads((tmp_path / "ray" / "counterfactual.json").read_text())
    assert [[p["final_net_assets"] for p in c["points"]] for c in data["curves"]] == [
        [p.final_net_assets for p in c.points] for c in local[0].curves
    ]
