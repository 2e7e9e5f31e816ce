"""`merchantbench mcp --sealed` over stdio, driven by the official `mcp` SDK client: a sealed run
played across a kill-free interruption and a `--resume`; its record has a commitment and no
seed; no tool answer, error, prompt or resource carries the seed, its salt or a path; after the
run `merchantbench reveal` discloses a seed that opens the commitment, and replaying the client's
calls in process with that seed gives the record's state hash."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp_play import Transcript, read_everything, run_client
from platformdirs import user_cache_dir
from typer.testing import CliRunner

from frontend_script import SCENARIO, Call, play_in_process, scan
from merchantbench.cli import app
from merchantbench.record.sealed import SEED_FILE
from merchantbench.seeds import is_sealed_range, verify_commitment
from merchantbench.tools.toolset import DECLARED

FIRST_WINDOWS = 10  # windows played before the client leaves; the rest after --resume


def server(out: Path, *extra: str) -> StdioServerParameters:
    args = ["-m", "merchantbench.cli", "mcp", "--scenario", SCENARIO, "--out", str(out), *extra]
    return StdioServerParameters(command=sys.executable, args=args, env=dict(os.environ))


class Player:
    """A client that knows nothing but what the tools answer: it finds products, lists five,
    makes a few refused calls, and closes windows; every call is kept for the replay."""

    def __init__(self, transcript: Transcript) -> None:
        self.transcript = transcript
        self.calls: list[Call] = []

    async def call(self, client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        self.calls.append((tool, args))
        result = self.transcript.keep(await client.call_tool(tool, args))
        assert result.is_error == (not result.structured_content["ok"])
        return result.structured_content

    async def open_store(self, client: Client) -> None:
        found = await self.call(client, "search_products", {"sort": "sales_30d", "page_size": 5})
        items = [{"product_id": r[0], "sale_price": round(r[3] * 1.7, 2)} for r in found["rows"]]
        assert (await self.call(client, "list_product", {"items": items}))["ok"]
        refused = [("adjust_price", {"product_id": "NOPE", "sale_price": 2}),
                   ("no_such_tool", {"x": 1}), ("search_products", {"page_size": 500}),
                   ("query_order_detail", {"order_id": "O-1"})]  # fmt: skip
        for tool, args in refused:
            assert not (await self.call(client, tool, args))["ok"], tool

    async def windows(self, client: Client, count: int | None) -> dict[str, Any]:
        """Close `count` windows (None: until the run is over); the last end_of_step answer."""
        closed, last = 0, {}
        while count is None or closed < count:
            await self.call(client, "query_balance", {})
            if closed % 3 == 1:
                await self.call(client, "query_my_orders", {"page_size": 20})
            last = await self.call(client, "end_of_step", {})
            closed += 1
            if last.get("run_over"):
                break
        return last


@pytest.fixture(scope="module")
def sealed_run(tmp_path_factory) -> tuple[Path, Player, dict[str, Any], dict[str, Any]]:
    out = tmp_path_factory.mktemp("mcp-sealed") / "run"
    player = Player(Transcript())

    async def first(client: Client) -> dict[str, Any]:
        seen = await read_everything(client, player.transcript)
        await player.open_store(client)
        await player.windows(client, FIRST_WINDOWS)
        return seen

    async def rest(client: Client) -> dict[str, Any]:
        await read_everything(client, player.transcript)
        return await player.windows(client, None)

    seen = run_client(server(out, "--sealed"), first)
    interrupted = json.loads((out / "run.json").read_text())
    assert interrupted["ended"] == "interrupted" and interrupted["seed"] is None
    last = run_client(server(out, "--resume"), rest)  # the seed is read back, never given
    return out, player, seen, last


def test_the_record_commits_to_a_seed_it_does_not_show(sealed_run) -> None:
    out, _, _, last = sealed_run
    assert last["run_over"] and last["summary"]["ended"] == "completed"
    meta = json.loads((out / "run.json").read_text())
    assert meta["seed"] is None and meta["ended"] == "completed"
    assert len(meta["seed_commitment"]["sha256"]) == 64
    assert json.loads((out / "metrics.json").read_text())["seed"] is None
    secret_file = out / SEED_FILE
    assert stat.S_IMODE(secret_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(secret_file.parent.stat().st_mode) == 0o700


def test_reveal_opens_the_commitment_and_the_calls_replay_to_its_hash(sealed_run) -> None:
    out, player, _, _ = sealed_run
    result = CliRunner().invoke(app, ["reveal", str(out), "--json"])
    assert result.exit_code == 0, result.output
    facts = json.loads(result.stdout)
    seed = int(facts["seed"])
    meta = json.loads((out / "run.json").read_text())
    assert is_sealed_range(seed) and facts["verified"] is True
    assert facts["commitment"] == meta["seed_commitment"]["sha256"]
    assert verify_commitment(seed, facts["salt"], facts["commitment"])
    replay = play_in_process(seed, [player.calls])
    assert replay.session.state_hash() == meta["state_hash"]
    trace = [json.loads(line) for line in (out / "trace.jsonl").read_text().splitlines()]
    assert [e["tool"] for e in trace] == [tool for tool, _ in player.calls]


def test_no_answer_or_error_carries_the_seed_the_salt_or_a_path(sealed_run) -> None:
    out, player, seen, _ = sealed_run
    facts = json.loads(CliRunner().invoke(app, ["reveal", str(out), "--json"]).stdout)
    seed = int(facts["seed"])
    forbidden = [str(seed), f"{seed:x}", f"{seed:X}", str(seed >> 64), str(seed & (2**64 - 1)),
                 facts["salt"], str(out), user_cache_dir("merchantbench"), "/tmp"]  # fmt: skip
    responses = player.transcript.responses
    errors = [r for r in responses if isinstance(r, dict) and r.get("isError")]
    assert len(responses) == len(player.calls) + 2 * 8  # + read_everything on each connection
    assert len(errors) == 4
    for response in responses:  # tools, prompt, resources, instructions and every call's
        scan(response, forbidden)
    assert len(seen["tools"]) == len(DECLARED.tools()) and seen["observation"].startswith(
        "Day 1 00:00"
    )
