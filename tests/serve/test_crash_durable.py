"""Acknowledged means durable (runs/journal.py), shown with real SIGKILLs (tests/crash_harness.py):
a served run is killed at random points while a scripted client plays it over the artifact
protocol and logs every acknowledged call; after each restart every call acknowledged so far is
in the record exactly once, the client goes on (a call whose answer it never got is sent again
with the same id), and the finished record is byte-identical to an uninterrupted run of the
same calls.

Size: the `smoke` scenario (28 windows, about 95 calls a run), runs one after another until
`KILLS` (100 unless `MERCHANTBENCH_CRASH_KILLS` says otherwise) kills were made.
"""

from __future__ import annotations

import functools
import json
import os
import random
import signal
from pathlib import Path
from typing import Any

import httpx
from protocol_client import assistant, tool_call
from script import play_window
from serve_support import ADMIN, start_server

from crash_harness import KILLS, assert_same_record, fork_server, free_port, killed_run
from timeouts import REQUEST_SECONDS


def _serve(runs: Path) -> Any:
    def serve(port: int) -> None:
        import uvicorn

        from merchantbench.limits import ServerLimits
        from merchantbench.serve import ServeConfig, create_app

        config = ServeConfig(runs_dir=runs, admin_token=ADMIN, limits=ServerLimits())
        uvicorn.run(create_app(config), host="127.0.0.1", port=port, log_level="critical")

    return serve


class Player:
    """The scripted client: plays `script.play_window` with call ids fixed by window and
    position, one call per turn, and logs each acknowledged call id."""

    def __init__(self, base: str, run_id: str, token: str) -> None:
        headers = {"Authorization": f"Bearer {token}"}
        self.http = httpx.Client(base_url=base, headers=headers, timeout=REQUEST_SECONDS)
        self.agent = f"/runs/{run_id}/agents/agent_0"
        self.acknowledged: list[str] = []

    def play(self) -> bool:
        while True:
            packet = self.http.get(f"{self.agent}/observation", params={"timeout": 5})
            if packet.status_code == 410:
                return True
            assert packet.status_code == 200, packet.text
            self.play_window(packet.json()["tick"]["window"])

    def play_window(self, window: int) -> None:
        ids = iter(range(1000))

        def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
            return self.call(f"w{window}c{next(ids)}", name, args)

        play_window(call, window)
        call("end_of_step", {})

    def call(self, call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
        batch = {"messages": [assistant(tool_call(call_id, name, args))]}
        response = self.http.post(f"{self.agent}/act", json=batch)
        assert response.status_code == 200, response.text
        self.acknowledged.append(call_id)
        return json.loads(response.json()["tool_results"][0]["content"])


def _create(base: str, seed: int) -> dict[str, Any]:
    with httpx.Client(
        base_url=base, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=REQUEST_SECONDS
    ) as admin:
        body = {"scenario": "smoke", "seed": seed, "turns_per_window": 10_000}
        response = admin.post("/api/runs", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def _killed(tmp_path: Path, seed: int, rng: random.Random, budget: int) -> tuple[Path, int]:
    """A run created, then played under at most `budget` kills: its directory, the kills."""
    runs, port = tmp_path / f"k{seed}", free_port()
    base = f"http://127.0.0.1:{port}"
    start = functools.partial(fork_server, _serve(runs), port, "/api/health")
    pid = start()
    run = _create(base, seed)
    os.kill(pid, signal.SIGKILL)  # the run exists: `killed_run` starts its own server
    os.waitpid(pid, 0)
    player = Player(base, run["run_id"], run["agent_token"])
    record = runs / run["run_id"]
    made = killed_run(start, player, record, rng, budget)
    print(f"seed {seed}: {made} kills, {len(player.acknowledged)} acknowledged calls")
    return record, made


def _uninterrupted(runs: Path, seed: int) -> Path:
    server = start_server(runs)
    try:
        run = _create(server.base_url, seed)
        assert Player(server.base_url, run["run_id"], run["agent_token"]).play()
    finally:
        server.stop()
    return runs / run["run_id"]


def test_acknowledged_calls_survive_kill_9_exactly_once(tmp_path) -> None:
    rng = random.Random(32)
    kills, seed = 0, 1
    while kills < KILLS:
        record, made = _killed(tmp_path, seed, rng, KILLS - kills)
        kills += made
        assert_same_record(record, _uninterrupted(tmp_path / f"u{seed}", seed))
        seed += 1
