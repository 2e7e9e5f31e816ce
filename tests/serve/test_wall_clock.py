"""Wall-clock window limits: off by default; when set, a window held too long is closed by the
server and recorded as forced (trace and metrics)."""

from __future__ import annotations

import json
import time

from serve_support import LiveServer
from test_protocol import client_for


def test_no_limit_by_default(live: LiveServer) -> None:
    client, host = client_for(live)
    client.observation()
    time.sleep(0.5)
    assert host.settings.window_seconds is None and host.surface.window == 0


def test_a_window_held_past_the_limit_is_forced_closed(live: LiveServer) -> None:
    client, host = client_for(live, days=1, window_seconds=1.0)
    first = client.observation().json()
    assert first["tick"]["window"] == 0
    client.call("query_balance")
    deadline = time.monotonic() + 60  # bounded poll: a loaded machine wakes the watchdog late
    while not host.finished and time.monotonic() < deadline:
        time.sleep(0.05)
    assert host.finished and host.only.protocol.forced_windows == [0, 1]
    assert client.observation().status_code == 410
    trace = [json.loads(line) for line in (host.life.run_dir / "trace.jsonl").open()]
    ends = [e for e in trace if e["tool"] == "end_of_step"]
    assert [e["forced"] for e in ends] == [True, True] and [e["window"] for e in ends] == [0, 1]
    summary = client.http.get(f"/api/runs/{host.run_id}").json()
    assert summary["forced_windows"] == [0, 1] and summary["metrics"]["forced_end_of_step"] == 2
