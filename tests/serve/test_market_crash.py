"""A market of two merchants on the HTTP server keeps every answered call across kill -9
(runs/journal.py: the arena's journal says how far each merchant's calls were acknowledged, in
order; harness: tests/crash_harness.py). One scripted client plays both merchants over the
artifact protocol, merchant after merchant in each window, while the server is SIGKILLed at
random points; after each restart every answered call is in the records exactly once, and
the finished merchants' records are byte-identical to an uninterrupted market's. Size: `smoke`
(28 windows, two merchants), markets one after another until `KILLS` kills were made."""

from __future__ import annotations

import functools
import json
import os
import random
import shutil
import signal
from pathlib import Path
from typing import Any

import httpx
import pytest
from protocol_client import assistant, tool_call
from script import play_window
from serve_support import ADMIN, start_server
from test_crash_durable import _serve

from crash_harness import KILLS, assert_same_record, fork_server, free_port, killed_run
from merchantbench.runs.arena import ArenaSpec, Entrant
from merchantbench.runs.lifecycle import CheckpointPolicy, RunLifecycle
from merchantbench.scenario import load_scenario
from merchantbench.serve.external import ExternalDriver, ExternalSettings
from timeouts import REQUEST_SECONDS

AGENTS = ("alpha", "beta")


class WindowClosed(Exception):
    """The merchant closed this window already (425): the other one plays on."""


class MarketPlayer:
    """Both merchants' scripted agents; logs each acknowledged call id."""

    def __init__(self, base: str, run_id: str, tokens: dict[str, str]) -> None:
        self.http = {
            a: httpx.Client(base_url=base, headers={"Authorization": f"Bearer {tokens[a]}"},
                            timeout=REQUEST_SECONDS)
            for a in AGENTS
        }  # fmt: skip
        self.run = f"/runs/{run_id}/agents"
        self.acknowledged: list[str] = []

    def play(self) -> bool:
        while True:
            for agent in AGENTS:
                packet = self.http[agent].get(
                    f"{self.run}/{agent}/observation", params={"nowait": "1"}
                )
                if packet.status_code == 410:
                    return True
                assert packet.status_code == 200, packet.text
                window = packet.json()["tick"]["window"]
                try:
                    self.play_window(agent, window)
                except WindowClosed:
                    continue

    def play_window(self, agent: str, window: int) -> None:
        ids = iter(range(1000))

        def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
            return self.call(agent, f"{agent}-w{window}c{next(ids)}", name, args)

        play_window(call, window)
        call("end_of_step", {})

    def call(self, agent: str, call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
        batch = {"messages": [assistant(tool_call(call_id, name, args))]}
        response = self.http[agent].post(f"{self.run}/{agent}/act", json=batch)
        if response.status_code == 425 and response.json()["error"] == "window_closed":
            raise WindowClosed
        assert response.status_code == 200, response.text
        self.acknowledged.append(call_id)
        return json.loads(response.json()["tool_results"][0]["content"])


def _create(base: str, seed: int) -> dict[str, Any]:
    with httpx.Client(
        base_url=base, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=REQUEST_SECONDS
    ) as admin:
        body = {"scenario": "smoke", "seed": seed, "turns_per_window": 10_000,
                "agents": list(AGENTS)}  # fmt: skip
        response = admin.post("/api/runs", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def _killed(tmp_path: Path, seed: int, rng: random.Random, budget: int) -> tuple[Path, int]:
    runs, port = tmp_path / f"k{seed}", free_port()
    base = f"http://127.0.0.1:{port}"
    start = functools.partial(fork_server, _serve(runs), port, "/api/health")
    pid = start()
    market = _create(base, seed)
    os.kill(pid, signal.SIGKILL)  # the market exists: `killed_run` starts its own server
    os.waitpid(pid, 0)
    player = MarketPlayer(base, market["run_id"], market["agent_tokens"])
    record = runs / market["run_id"]
    made = killed_run(start, player, record, rng, budget)
    print(f"seed {seed}: {made} kills, {len(player.acknowledged)} acknowledged calls")
    return record, made


def _uninterrupted(runs: Path, seed: int) -> Path:
    server = start_server(runs)
    try:
        market = _create(server.base_url, seed)
        assert MarketPlayer(server.base_url, market["run_id"], market["agent_tokens"]).play()
    finally:
        server.stop()
    return runs / market["run_id"]


def test_a_market_keeps_every_answered_call_across_kill_9(tmp_path: Path) -> None:
    rng = random.Random(36)
    kills, seed = 0, 1
    while kills < KILLS:
        record, made = _killed(tmp_path, seed, rng, KILLS - kills)
        kills += made
        reference = _uninterrupted(tmp_path / f"u{seed}", seed)
        for agent in AGENTS:
            assert_same_record(record / "merchants" / agent, reference / "merchants" / agent)
        assert not (record / "journal.jsonl").exists()
        seed += 1


def _open_market(arena: Path, resume: bool, checkpoints: CheckpointPolicy) -> RunLifecycle:
    """The market of `AGENTS` as the server opens it (one external driver per merchant)."""
    spec = ArenaSpec(load_scenario("smoke"), 3, tuple(Entrant(a, "external") for a in AGENTS))
    drivers = {a: ExternalDriver(ExternalSettings(agent_id=a)) for a in AGENTS}
    return RunLifecycle.open_market(
        spec, arena, resume=resume, checkpoints=checkpoints, drivers=drivers
    )


def _play(life: RunLifecycle, crash_at: int | None = None, crashed: Path | None = None) -> None:
    """Each window: alpha reads its balance and closes, then beta does, through the host's one
    call path (`life.call`: checkpointed when the policy says, finished when over); every call
    is acknowledged as the server acknowledges it (`life.acknowledge()`). With `crash_at`: in
    that window, the files as a kill leaves them between beta's closing call and its
    acknowledgement (every record flushed, the journal not yet saying so) are copied to
    `crashed`, and play stops."""
    while not life.over:
        window = life.market.window
        for agent in AGENTS:
            for n, tool in enumerate(("query_balance", "end_of_step")):
                life.call(tool, {}, f"{agent}-w{window}c{n}", merchant=agent)
                if window == crash_at and agent == AGENTS[-1] and tool == "end_of_step":
                    for record in life.records.values():
                        record.acknowledge()  # acknowledge()'s first half: the records
                    assert crashed is not None
                    shutil.copytree(life.layout.root, crashed)
                    return
                life.acknowledge()
    assert life.finished


@pytest.mark.parametrize("every", [None, 2], ids=["no-checkpoint", "checkpoint-every-2nd-window"])
def test_a_kill_after_the_last_close_is_flushed_resumes_to_the_same_transcript(
    tmp_path: Path, every: int | None
) -> None:
    """The instant the random kills found: beta's end_of_step opened the next window, which
    wrote alpha's observation of it to alpha's transcript (flushed with every record before
    the journal line); the kill came before the journal said that call was acknowledged. The
    resumed market is in the window alpha closed, so that observation is not alpha's yet:
    the resume drops it, beta's retried close writes it once, and every merchant's record is
    the uninterrupted one's."""
    policy = CheckpointPolicy(seconds=3600.0, windows=every)
    reference = _open_market(tmp_path / "whole", False, policy)
    _play(reference)
    crashed = tmp_path / "crashed"
    _play(_open_market(tmp_path / "live", False, policy), crash_at=4, crashed=crashed)
    alpha = crashed / "merchants" / "alpha" / "transcript.jsonl"
    assert b'"window":5,"observation"' in alpha.read_bytes()  # the flushed, unacknowledged line
    _play(_open_market(crashed, True, policy))
    for agent in AGENTS:
        assert_same_record(crashed / "merchants" / agent, tmp_path / "whole" / "merchants" / agent)
