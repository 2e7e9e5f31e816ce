"""The playground keeps every answered action across kill -9 (runs/journal.py; the harness is
tests/crash_harness.py): a scripted page client plays a store, sending `X-Window` and an
`Idempotency-Key` with each action, while the server is SIGKILLed at random points; after each
restart every answered action is in the record exactly once, and the finished record is
byte-identical to an uninterrupted store's of the same actions. Size: `smoke` (28 windows),
stores one after another until `KILLS` kills were made."""

from __future__ import annotations

import functools
import random
from pathlib import Path
from typing import Any

import httpx
from fastapi.testclient import TestClient

from crash_harness import (
    KILLS,
    assert_same_record,
    fork_server,
    free_port,
    killed_run,
    script_window,
)
from merchantbench.scenario import load_scenario
from merchantbench.web.app import create_web_app
from merchantbench.web.room import PlayRoom
from timeouts import REQUEST_SECONDS

SCENARIO = load_scenario("smoke")


def _serve(play_dir: Path, port: int) -> None:
    import uvicorn

    uvicorn.run(create_web_app(play_dir=play_dir), host="127.0.0.1", port=port,
                log_level="critical")  # fmt: skip


class PagePlayer:
    """What the page sends: each action with the window on screen and a key of its own."""

    def __init__(self, http: httpx.Client | TestClient, token: str) -> None:
        self.http, self.base = http, f"/play/{token}"
        self.acknowledged: list[str] = []

    def play(self) -> bool:
        while True:
            state = self.http.get(f"{self.base}/state")
            assert state.status_code == 200, state.text
            if state.json()["over"]:
                return True
            window = state.json()["store"]["window"]
            ids = iter(range(1000))

            def call(name: str, args: dict[str, Any], window: int = window, ids: Any = ids) -> Any:
                key = f"w{window}c{next(ids)}"
                headers = {"X-Window": str(window), "Idempotency-Key": key}
                answer = self.http.post(f"{self.base}/call/{name}", json=args, headers=headers)
                assert answer.status_code == 200, answer.text
                self.acknowledged.append(key)
                return answer.json()["result"]

            script_window(call, window)


def _killed(root: Path, seed: int, rng: random.Random, budget: int) -> tuple[Path, int]:
    [seat] = PlayRoom(root).create(SCENARIO, [seed])
    port = free_port()
    start = functools.partial(fork_server, functools.partial(_serve, root), port, "/")
    http = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=REQUEST_SECONDS)
    player = PagePlayer(http, seat.token)
    made = killed_run(start, player, root / seat.participant, rng, budget)
    print(f"seed {seed}: {made} kills, {len(player.acknowledged)} acknowledged actions")
    return root / seat.participant, made


def _uninterrupted(root: Path, seed: int) -> Path:
    [seat] = PlayRoom(root).create(SCENARIO, [seed])
    with TestClient(create_web_app(play_dir=root)) as http:
        assert PagePlayer(http, seat.token).play()
    return root / seat.participant


def test_answered_actions_survive_kill_9_exactly_once(tmp_path: Path) -> None:
    rng = random.Random(33)
    kills, seed = 0, 1
    while kills < KILLS:
        record, made = _killed(tmp_path / f"k{seed}", seed, rng, KILLS - kills)
        kills += made
        assert_same_record(record, _uninterrupted(tmp_path / f"u{seed}", seed))
        seed += 1
