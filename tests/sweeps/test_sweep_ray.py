"""The same sweep on a local Ray cluster (started here, on 127.0.0.1) gives the same index as the
local executor."""

from __future__ import annotations

import os

import pytest

from merchantbench.sweeps.driver import run_sweep
from merchantbench.sweeps.execute import LocalExecutor
from merchantbench.sweeps.index import read_index
from merchantbench.sweeps.spec import load_sweep_file
from sweep_fixtures import comparable_rows

os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")  # workers: this interpreter
ray = pytest.importorskip("ray", reason="Ray is not installed: install the `ray` extra")


START_ATTEMPTS = 3


@pytest.fixture(scope="module")
def cluster():
    # A loaded 2-core CI machine starts a node slowly; the defaults time out.
    os.environ.setdefault("RAY_raylet_start_wait_time_s", "300")
    os.environ.setdefault("RAY_agent_register_timeout_ms", "300000")
    for attempt in range(START_ATTEMPTS):
        try:
            ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
                     log_to_driver=False)  # fmt: skip
            break
        except Exception:  # a node that timed out starting (an overloaded machine): once more
            ray.shutdown()
            if attempt == START_ATTEMPTS - 1:
                raise
    yield
    ray.shutdown()


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
