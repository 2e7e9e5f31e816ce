"""The same sweep on a local Ray cluster gives the same index as the local executor.

The cluster is started here with `ray start --head` on 127.0.0.1 and ended by its process group.
The head and the sweep driver (`merchantbench sweep --executor ray --address …`, as a user runs
it) are fresh processes with an environment built from nothing but what they need: a driver
inside the pytest process inherits its threads and forked pools, with which the cluster's
workers were seen never to start.
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

from merchantbench.sweeps.driver import run_sweep
from merchantbench.sweeps.execute import LocalExecutor
from merchantbench.sweeps.index import read_index
from merchantbench.sweeps.spec import load_sweep_file
from requires import need
from sweep_fixtures import comparable_rows

need("ray", module=True)
START_SECONDS = 300
SWEEP_SECONDS = 900
BIN = Path(sys.executable).parent
# A cluster private to this test: no token, workers on this interpreter (not `uv run`).
RAY_ENV = {
    "RAY_AUTH_MODE": "disabled",
    "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0",
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_worker_register_timeout_seconds": "600",  # workers start slowly on a loaded machine
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
    """The address of a running one-node cluster (2 CPUs)."""
    base = tmp_path_factory.mktemp("ray")
    port, env = _free_port(), _clean_env(base)
    # A fixed agent port: with port 0 the raylet waits for the agent's port file and, on a loaded
    # machine, gives up before the agent has written it. A short temp dir: Ray's socket paths
    # must stay under the 107-byte limit.
    command = [str(BIN / "ray"), "start", "--head", "--block", "--node-ip-address=127.0.0.1",
               f"--port={port}", f"--dashboard-agent-grpc-port={_free_port()}",
               "--include-dashboard=false", "--num-cpus=2", "--disable-usage-stats",
               f"--temp-dir=/tmp/mb-ray-{port}"]  # fmt: skip
    with open(base / "head.log", "w") as log:
        head = subprocess.Popen(command, env=env, start_new_session=True, stdout=log,
                                stderr=subprocess.STDOUT)  # fmt: skip
        try:
            _wait_until_up(f"127.0.0.1:{port}", env, head)
            yield f"127.0.0.1:{port}", env
        finally:
            os.killpg(head.pid, signal.SIGTERM)  # the head and the processes it started
            head.wait(timeout=60)
            shutil.rmtree(f"/tmp/mb-ray-{port}", ignore_errors=True)


def _wait_until_up(address: str, env: dict[str, str], head: subprocess.Popen) -> None:
    deadline = time.monotonic() + START_SECONDS
    probe = [str(BIN / "python"), "-c", f"import ray; ray.init(address={address!r})"]
    while subprocess.run(probe, env=env, capture_output=True, timeout=START_SECONDS).returncode:
        assert head.poll() is None and time.monotonic() < deadline, "ray did not start"
        time.sleep(2)


def test_ray_executor_gives_the_local_index(cluster, sweep_file, tmp_path):
    address, env = cluster
    out = str(tmp_path / "ray")
    command = [str(BIN / "python"), "-m", "merchantbench.cli", "sweep", str(sweep_file), "--out",
               out, "--executor", "ray", "--address", address, "--no-progress"]  # fmt: skip
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=SWEEP_SECONDS)
    assert done.returncode == 0, done.stderr[-2000:]
    sweep = load_sweep_file(sweep_file)
    local = run_sweep(sweep, sweep_file.parent, tmp_path / "local", LocalExecutor(2))
    assert len(local.finished) == 12
    rows = comparable_rows(read_index(tmp_path / "ray"))
    assert len(rows) == 12 and all(row["status"] == "done" for row in rows)
    assert rows == comparable_rows(read_index(tmp_path / "local"))


OWN_SWEEP = """
scenarios: [{name: smoke, set: ["clock.days=3"]}]
seeds: [1, 2]
agents:
  - ownpkg.agents:Lister
  - {agent: files/mine.py:Lister, label: file}
"""


def test_ray_runs_agents_of_your_own(cluster, tmp_path, monkeypatch):
    """A module found only on the driver's PYTHONPATH (the cluster's workers were started
    without it) and a file named relative to the sweep file run on Ray as they do locally."""
    address, env = cluster
    source = Path(__file__).parents[1] / "own_agent.py"
    package = tmp_path / "lib" / "ownpkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    shutil.copy(source, package / "agents.py")
    (tmp_path / "files").mkdir()
    shutil.copy(source, tmp_path / "files" / "mine.py")
    sweep_file = tmp_path / "sweep.yaml"
    sweep_file.write_text(OWN_SWEEP)
    command = [str(BIN / "python"), "-m", "merchantbench.cli", "sweep", str(sweep_file),
               "--out", str(tmp_path / "ray"), "--executor", "ray", "--address", address,
               "--no-progress"]  # fmt: skip
    driver_env = {**env, "PYTHONPATH": str(tmp_path / "lib")}
    done = subprocess.run(command, env=driver_env, cwd=tmp_path / "files", capture_output=True,
                          text=True, timeout=SWEEP_SECONDS)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    monkeypatch.syspath_prepend(str(tmp_path / "lib"))
    local = run_sweep(load_sweep_file(sweep_file), tmp_path, tmp_path / "local", LocalExecutor(2))
    assert len(local.finished) == 4 and not local.failed
    rows = comparable_rows(read_index(tmp_path / "ray"))
    assert len(rows) == 4 and all(row["status"] == "done" for row in rows), rows
    assert rows == comparable_rows(read_index(tmp_path / "local"))
    assert {row["agent"] for row in rows} == {
        "ownpkg.agents:Lister",
        f"{sweep_file.parent}/files/mine.py:Lister",
    }


ARENA_SWEEP = """
scenarios: [{name: smoke, set: ["clock.days=3", "market.seller_substitution=4"]}]
seeds: [1, 2]
agents: [rule-based]
arena: [expert, rule-based, random]
"""


def test_ray_runs_arenas_as_the_local_executor(cluster, tmp_path):
    """Arena cells (one Ray task each) give the local executor's index, one row per merchant,
    and the same market records."""
    address, env = cluster
    sweep_file = tmp_path / "sweep.yaml"
    sweep_file.write_text(ARENA_SWEEP)
    command = [str(BIN / "python"), "-m", "merchantbench.cli", "sweep", str(sweep_file),
               "--out", str(tmp_path / "ray"), "--executor", "ray", "--address", address,
               "--no-progress"]  # fmt: skip
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=SWEEP_SECONDS)
    assert done.returncode == 0, done.stderr[-2000:]
    local = run_sweep(load_sweep_file(sweep_file), tmp_path, tmp_path / "local", LocalExecutor(2))
    assert len(local.finished) == 4 and not local.failed
    rows = comparable_rows(read_index(tmp_path / "ray"))
    assert len(rows) == 2 + 2 * 3 and all(row["status"] == "done" for row in rows), rows
    assert rows == comparable_rows(read_index(tmp_path / "local"))
    assert sorted({row["merchant"] for row in rows if row["arena"]}) == [
        "expert", "random", "rule-based"
    ]  # fmt: skip
    for seed in (1, 2):
        cell = f"runs/arena-expert+rule-based+random/s{seed}/arena.json"
        ray_arena = json.loads((tmp_path / "ray" / cell).read_text())
        local_arena = json.loads((tmp_path / "local" / cell).read_text())
        assert ray_arena["state_hash"] == local_arena["state_hash"]
        assert ray_arena["ended"] == "completed"


SEALED_ARENA_SWEEP = """
scenarios: [{name: smoke, set: ["clock.days=3", "market.seller_substitution=4"]}]
seeds: {sealed: 2}
arenas: [{label: duel, agents: [rule-based, random]}]
"""


def test_ray_runs_sealed_arenas_on_their_own_secrets(cluster, tmp_path):
    """Sealed arena cells on Ray draw their secrets in their tasks (one each, kept in the
    merchants' `sealed/`) and play the market `run_arena` plays on that secret."""
    from merchantbench.record.arena import read_arena
    from merchantbench.record.sealed import read_sealed
    from merchantbench.runs.arena import ArenaSpec, Entrant, run_arena
    from merchantbench.scenario import load_scenario

    address, env = cluster
    sweep_file = tmp_path / "sweep.yaml"
    sweep_file.write_text(SEALED_ARENA_SWEEP)
    command = [str(BIN / "python"), "-m", "merchantbench.cli", "sweep", str(sweep_file),
               "--out", str(tmp_path / "ray"), "--executor", "ray", "--address", address,
               "--no-progress"]  # fmt: skip
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=SWEEP_SECONDS)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = read_index(tmp_path / "ray")
    assert len(rows) == 2 * 2 and all(r["status"] == "done" for r in rows), rows
    assert {(r["seed"], r["sealed"]) for r in rows} == {(None, True)}
    scenario = load_scenario("smoke", overrides=["clock.days=3", "market.seller_substitution=4"])
    entrants = (Entrant("rule-based", "rule-based"), Entrant("random", "random"))
    secrets = []
    for slot in ("sealed1", "sealed2"):
        arena = tmp_path / "ray" / "runs" / "duel" / slot
        manifest = read_arena(arena)
        assert manifest.seed is None and manifest.ended == "completed"
        secret = read_sealed(arena / "merchants" / "random")
        assert manifest.seed_commitment == secret.commitment
        secrets.append(secret.seed)
        alone = tmp_path / f"alone-{slot}"
        run_arena(ArenaSpec(scenario, 0, entrants).with_secret(secret), alone)
        assert read_arena(alone).state_hash == manifest.state_hash
    assert secrets[0] != secrets[1]
