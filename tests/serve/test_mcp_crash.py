"""`merchantbench mcp` keeps every answered tool call across kill -9 (runs/journal.py; harness:
tests/crash_harness.py): the official MCP SDK client plays a run over streamable HTTP, each call
with its idempotency key in `_meta`, while the command is SIGKILLed at random points and started
again with `--resume`; after each restart every answered call is in the record exactly once, and
the finished record is byte-identical to an uninterrupted run of the same calls. Size: `smoke`
(28 windows), runs one after another until `KILLS` kills were made. A kill at each step of the
finishing phase (runs/kill_points.py), where the last `end_of_step` is never answered, is
placed exactly: after the restart the record is finished (ended, signed, the same bytes)."""

from __future__ import annotations

import functools
import json
import os
import random
import signal
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from typer.testing import CliRunner

from crash_harness import (
    KILLS,
    assert_same_record,
    fork_server,
    free_port,
    killed_run,
    script_window,
)
from merchantbench.cli import app
from merchantbench.mcp_surface.server import IDEMPOTENCY_META_KEY, STORE_URI
from merchantbench.record.attest import check_attestation, trusted_keys
from merchantbench.record.manifest import read_manifest
from merchantbench.runs.kill_points import KILL_ENV

SEED = 5


def _command(out: Path, port: int) -> list[str]:
    resume = ["--resume"] if (out / "run.json").is_file() else []
    return ["mcp", "--scenario", "smoke", "--seed", str(SEED), "--out", str(out),
            "--http-port", str(port), *resume]  # fmt: skip


def _serve(out: Path, port: int) -> None:
    CliRunner().invoke(app, _command(out, port))


def _start(out: Path, port: int) -> int | None:
    if (out / "run.json").is_file() and not read_manifest(out).resumable:
        # Finished (a kill after its last answer): the same command restarted with --resume
        # refuses it in one line. It is run all the same, as an operator would: whatever the
        # product does on restart for a record a kill cut after run.json said so is done.
        result = CliRunner().invoke(app, _command(out, port))
        assert result.exit_code != 0 and "already finished" in result.output, result.output
        return None
    return fork_server(functools.partial(_serve, out), port, "/mcp")


class McpPlayer:
    """An MCP client's model, scripted: reads the store, plays the window, logs each answer."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.acknowledged: list[str] = []

    def play(self) -> bool:
        return anyio.run(self._play)

    async def _play(self) -> bool:
        async with Client(self.url) as client:
            while True:
                store = await client.read_resource(STORE_URI)
                status = json.loads(store.contents[0].text)
                if status["over"]:
                    return True
                window, ids = status["window"], iter(range(1000))

                def call(name: str, args: dict[str, Any], window: int = window, ids: Any = ids,
                         client: Any = client) -> dict[str, Any]:  # fmt: skip
                    key = f"w{window}c{next(ids)}"
                    meta = {IDEMPOTENCY_META_KEY: key}
                    result = anyio.from_thread.run(
                        functools.partial(client.call_tool, name, args, meta=meta)
                    )
                    assert result.structured_content is not None
                    self.acknowledged.append(key)
                    return dict(result.structured_content)

                await anyio.to_thread.run_sync(script_window, call, window)


def _killed(root: Path, rng: random.Random, budget: int) -> tuple[Path, int]:
    out, port = root / "run", free_port()
    player = McpPlayer(f"http://127.0.0.1:{port}/mcp")
    made = killed_run(functools.partial(_start, out, port), player, out, rng, budget)
    print(f"{root.name}: {made} kills, {len(player.acknowledged)} acknowledged calls")
    return out, made


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _killed(tmp_path_factory.mktemp("uninterrupted"), random.Random(0), 0)[0]


# Every step of the finishing phase (runs/kill_points.py): the last end_of_step is never
# answered, and the record is whole only once the restart (`_start`) has finished it.
@pytest.mark.parametrize("point", ["finish", "tables", "metrics", "finished"])
def test_a_kill_while_finishing_resumes_to_the_finished_record(
    tmp_path: Path, uninterrupted: Path, point: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    out, port = tmp_path / "run", free_port()
    player = McpPlayer(f"http://127.0.0.1:{port}/mcp")
    monkeypatch.setenv(KILL_ENV, point)  # the forked server kills itself there
    pid = _start(out, port)
    assert pid is not None
    with pytest.raises(Exception):  # noqa: B017 (the server vanished: the SDK says it its way)
        player.play()
    assert os.waitpid(pid, 0)[1] == signal.SIGKILL
    monkeypatch.delenv(KILL_ENV)
    pid = _start(out, port)
    if pid is not None:  # not finished on disk: the restarted server must finish it
        try:
            assert player.play()
        finally:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    assert read_manifest(out).ended == "completed"
    assert_same_record(out, uninterrupted)
    assert check_attestation(out, trusted_keys()).ok


def test_answered_mcp_calls_survive_kill_9_exactly_once(tmp_path: Path) -> None:
    rng = random.Random(35)
    reference, _ = _killed(tmp_path / "whole", rng, 0)
    kills, attempt = 0, 0
    while kills < KILLS:
        record, made = _killed(tmp_path / f"k{attempt}", rng, KILLS - kills)
        kills += made
        assert_same_record(record, reference)
        attempt += 1
