"""A playground server killed (SIGKILL) right after answering: the store resumes from its last
checkpoint (taken after each answer, and by wall time during fast-forward), and the same
actions played on from there give the same record, byte for byte, as a store never killed."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from merchantbench.record.schema import TRACE_FILE, TRANSCRIPT_FILE
from merchantbench.scenario import load_scenario
from merchantbench.web.room import PlayRoom
from merchantbench.web.store import PlayStore
from timeouts import REQUEST_SECONDS, START_SECONDS

SCENARIO = load_scenario("smoke", overrides=["clock.days=6"])  # 12 windows
SEED = 7
KEY = "list-best-sellers"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def best_sellers(call: Any) -> list[dict[str, Any]]:
    rows = call("search_products", {"page_size": 3, "sort": "sales_30d"})["rows"]
    return [{"product_id": r[0], "sale_price": round(r[3] * 1.5, 2)} for r in rows]


def play_on(store: PlayStore) -> None:
    """The participant's plan from wherever the store stands: list three best sellers in the
    first window, then end windows to the end."""
    if store.surface.window == 0 and store.session.memory.seq == 0:
        store.call("list_product", {"items": best_sellers(store.call)}, KEY)
    while not store.over:
        store.call("end_of_step", {})


def test_a_killed_playground_resumes_to_the_same_bytes(tmp_path: Path) -> None:
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    PlayRoom(whole).create(SCENARIO, [SEED])
    [seat] = PlayRoom(killed).create(SCENARIO, [SEED])
    reference = PlayRoom(whole).store(next(iter(PlayRoom(whole).seats)))
    assert reference is not None
    play_on(reference)

    port = free_port()
    command = [sys.executable, "-m", "merchantbench.cli", "play", "--dir", str(killed),
               "--port", str(port)]  # fmt: skip
    server = subprocess.Popen(command, start_new_session=True, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)  # fmt: skip
    base = f"http://127.0.0.1:{port}/play/{seat.token}"
    try:
        with httpx.Client(timeout=REQUEST_SECONDS) as client:
            deadline = time.monotonic() + START_SECONDS
            while True:
                try:
                    client.get(f"{base}/state").raise_for_status()
                    break
                except httpx.HTTPError:
                    assert time.monotonic() < deadline, "the playground server did not start"
                    time.sleep(0.2)

            def call(tool: str, args: dict[str, Any], key: str | None = None) -> dict[str, Any]:
                headers = {"Idempotency-Key": key} if key else {}
                answer = client.post(f"{base}/call/{tool}", json=args, headers=headers)
                return dict(answer.json()["result"])

            assert call("list_product", {"items": best_sellers(call)}, KEY)["ok"]
            for _ in range(3):
                assert call("end_of_step", {})["ok"]
            forward = client.post(f"{base}/forward", json={"triggers": {}, "most": 5}).json()
            assert forward["result"]["ended"] == 5
    finally:
        os.killpg(server.pid, signal.SIGKILL)  # right after the answer: no shutdown, no pause
        server.wait()

    resumed = PlayStore.reopen(killed / "p1")
    # Window 4's checkpoint was taken before fast-forward began; the later ones may be lost.
    assert 3 <= resumed.surface.window <= 8
    play_on(resumed)
    for name in (TRACE_FILE, TRANSCRIPT_FILE, "metrics.json", "orders.parquet"):
        assert (killed / "p1" / name).read_bytes() == (whole / "p1" / name).read_bytes(), name
