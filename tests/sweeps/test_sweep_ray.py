"""The same sweep on a local Ray cluster (started here with `ray start --head` on 127.0.0.1, and
ended by its process group) gives the same index as the local executor."""

from __future__ import annotations

import os
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
from sweep_fixtures import comparable_rows

ray = pytest.importorskip("ray", reason="Ray is not installed: install the `ray` extra")
# Not verified yet: on the 2-core CI machine the local cluster starts but its workers never
# register, so the test hangs until its time-out. Opt in where Ray works.
pytestmark = pytest.mark.skipif(
    os.environ.get("MERCHANTBENCH_RAY_TESTS") != "1",
    reason="the Ray executor is not verified on this machine; set MERCHANTBENCH_RAY_TESTS=1",
)
START_SECONDS = 300
# A cluster private to this test: no token, workers on this interpreter (not `uv run`).
ENV = {
    "RAY_AUTH_MODE": "disabled",
    "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0",
    "RAY_worker_register_timeout_seconds": "600",  # workers start slowly on a loaded machine
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    port = _free_port()
    log = open(tmp_path_factory.mktemp("ray") / "head.log", "w")  # noqa: SIM115 (closed below)
    ray_cli = str(Path(sys.executable).with_name("ray"))
    # A fixed agent port: with port 0 the raylet waits for the agent's port file and, on a loaded
    # machine, gives up before the agent has written it.
    command = [ray_cli, "start", "--head", "--block", "--node-ip-address=127.0.0.1",
               f"--port={port}", f"--dashboard-agent-grpc-port={_free_port()}",
               "--include-dashboard=false", "--num-cpus=2", "--disable-usage-stats"]  # fmt: skip
    os.environ.update(ENV)
    head = subprocess.Popen(command, env={**os.environ}, start_new_session=True,
                            stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
    try:
        deadline = time.monotonic() + START_SECONDS
        while True:
            try:
                ray.init(address=f"127.0.0.1:{port}", log_to_driver=False)
                break
            except ConnectionError:
                assert head.poll() is None and time.monotonic() < deadline, "ray did not start"
                time.sleep(2)
        yield
    finally:
        ray.shutdown()
        os.killpg(head.pid, signal.SIGTERM)  # the head and the processes it started
        head.wait(timeout=60)
        log.close()


def test_ray_executor_gives_the_local_index(cluster, sweep_file, tmp_path):
    from merchantbench.sweeps.ray_executor import RayExecutor

    sweep = load_sweep_file(sweep_file)
    on_ray = run_sweep(sweep, sweep_file.parent, tmp_path / "ray", RayExecutor())
    assert len(on_ray.finished) == 12 and not on_ray.failed
    local = run_sweep(sweep, sweep_file.parent, tmp_path / "local", LocalExecutor(2))
    assert len(local.finished) == 12
    rows = comparable_rows(read_index(tmp_path / "ray"))
    assert rows == comparable_rows(read_index(tmp_path / "local"))
    assert all(row["status"] == "done" for row in rows)
