"""Acknowledged means durable (runs/journal.py), shown with real SIGKILLs: a served run is killed
at random points while a scripted client plays it over the artifact protocol and logs every
acknowledged call; after each restart the client goes on (a call whose answer it never got is
sent again with the same id). At the end every acknowledged call is in the record exactly
once, and the record is byte-identical to an uninterrupted run of the same calls.

Size: the `smoke` scenario (28 windows) with kills every 0-0.25 s; runs follow each other
until `KILLS` kills were made (about 100 over a few runs). The server is a forked child of the
test process (imports already done), so a restart costs a resume, not an interpreter.
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import threading
import time
from pathlib import Path
from typing import Any

import httpx
from protocol_client import assistant, tool_call
from script import play_window
from serve_support import ADMIN, start_server

KILLS = int(os.environ.get("MERCHANTBENCH_CRASH_KILLS", "100"))
COMPARED = ("trace.jsonl", "transcript.jsonl", "metrics.json", "orders.parquet",
            "listings.parquet", "daily.parquet", "timeseries.parquet")  # fmt: skip


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _fork_server(runs: Path, port: int) -> int:
    """A server in a forked child (SIGKILLed by the test); returns once it answers."""
    pid = os.fork()
    if pid == 0:  # the child: serve until killed
        try:
            import uvicorn

            from merchantbench.limits import ServerLimits
            from merchantbench.serve import ServeConfig, create_app

            config = ServeConfig(runs_dir=runs, admin_token=ADMIN, limits=ServerLimits())
            uvicorn.run(create_app(config), host="127.0.0.1", port=port, log_level="critical")
        finally:
            os._exit(0)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=1).status_code == 200:
                return pid
        except httpx.TransportError:
            time.sleep(0.02)
    raise AssertionError("the server did not start")


class Player:
    """The scripted client: plays `script.play_window` with call ids fixed by window and
    position, one call per turn, and logs each acknowledged call id."""

    def __init__(self, base: str, run_id: str, token: str) -> None:
        self.http = httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=30
        )
        self.agent = f"/runs/{run_id}/agents/agent_0"
        self.acknowledged: list[str] = []

    def play(self) -> bool:
        """Play from where the run stands; True once it is over. Raises on a lost server."""
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
        response = self.http.post(
            f"{self.agent}/act", json={"messages": [assistant(tool_call(call_id, name, args))]}
        )
        assert response.status_code == 200, response.text
        self.acknowledged.append(call_id)
        return json.loads(response.json()["tool_results"][0]["content"])


def _create(base: str, seed: int) -> dict[str, Any]:
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {ADMIN}"}) as admin:
        body = {"scenario": "smoke", "seed": seed, "turns_per_window": 10_000}
        response = admin.post("/api/runs", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def _uninterrupted(runs: Path, seed: int) -> Path:
    server = start_server(runs)
    try:
        run = _create(server.base_url, seed)
        assert Player(server.base_url, run["run_id"], run["agent_token"]).play()
    finally:
        server.stop()
    return runs / run["run_id"]


def _killed_run(
    runs: Path, seed: int, rng: random.Random, budget: int
) -> tuple[Path, int, list[str]]:
    """One run played under random SIGKILLs (at most `budget`); the run directory, the kills
    made and the acknowledged call ids."""
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    pid = _fork_server(runs, port)
    run = _create(base, seed)
    player = Player(base, run["run_id"], run["agent_token"])
    kills = 0
    while True:
        fired: list[int] = []

        def kill(victim: int = pid, fired: list[int] = fired) -> None:
            fired.append(victim)
            os.kill(victim, signal.SIGKILL)

        timer = threading.Timer(rng.uniform(0.0, 0.25), kill) if kills < budget else None
        if timer is not None:
            timer.start()
        try:
            over = player.play()
        except (httpx.TransportError, AssertionError, json.JSONDecodeError):
            if timer is not None:
                timer.cancel()
                timer.join()
            if not fired:  # refused, not killed: a bug
                print(player.http.get(f"{player.agent}/observation").text)
                raise
            over = False
        if timer is not None:
            timer.cancel()
            timer.join()
        if fired:
            kills += 1
        if not fired:
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        if over:
            return runs / run["run_id"], kills, player.acknowledged
        pid = _fork_server(runs, port)
        # Restarted: every call acknowledged so far is in the record, exactly once.
        _assert_once(runs / run["run_id"], player.acknowledged)


def _assert_once(record: Path, acknowledged: list[str]) -> None:
    lines = (record / "trace.jsonl").read_text().splitlines()
    keys = [json.loads(line).get("idempotency_key", "") for line in lines]
    counted = {k.rsplit(":", 1)[-1]: 0 for k in keys}
    for key in keys:
        counted[key.rsplit(":", 1)[-1]] += 1
    for call_id in acknowledged:
        assert counted.get(call_id) == 1, (call_id, counted.get(call_id))


def test_acknowledged_calls_survive_kill_9_exactly_once(tmp_path) -> None:
    rng = random.Random(32)
    kills, seed = 0, 1
    while kills < KILLS:
        record, made, acknowledged = _killed_run(tmp_path / f"k{seed}", seed, rng, KILLS - kills)
        kills += made
        print(f"seed {seed}: {made} kills, {len(acknowledged)} acknowledged calls")
        reference = _uninterrupted(tmp_path / f"u{seed}", seed)
        for name in COMPARED:
            assert (record / name).read_bytes() == (reference / name).read_bytes(), name
        assert not (record / "journal.jsonl").exists()
        _assert_once(record, acknowledged)  # its key names the call id
        seed += 1
    assert kills >= KILLS
