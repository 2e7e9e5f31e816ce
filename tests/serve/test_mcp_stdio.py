"""`merchantbench mcp` over stdio, driven by the official `mcp` SDK client in a real subprocess:
the tools are the declarations, a whole smoke run plays through end_of_step with the in-process
results and state hash, nothing hidden reaches the client, and an interrupted run resumes."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp_play import (
    Transcript,
    assert_matches_surface,
    assert_same_as_in_process,
    play,
    read_everything,
    run_client,
)
from platformdirs import user_cache_dir
from typer.testing import CliRunner

from frontend_script import SCENARIO, action_script, play_in_process, scan
from merchantbench.cli import app

SEED = 918273645  # a seed whose digits would stand out in any response


def server(out: Path, *extra: str) -> StdioServerParameters:
    args = ["-m", "merchantbench.cli", "mcp", "--scenario", SCENARIO, "--seed", str(SEED)]
    return StdioServerParameters(
        command=sys.executable, args=[*args, "--out", str(out), *extra], env=dict(os.environ)
    )


@pytest.fixture(scope="module")
def reference():
    script = action_script(SEED)
    return script, play_in_process(SEED, script)


@pytest.fixture(scope="module")
def full_run(tmp_path_factory, reference):
    """A whole run over stdio: what the client saw, and the run directory."""
    script, _ = reference
    out = tmp_path_factory.mktemp("mcp") / "run"
    transcript = Transcript()

    async def body(client: Client) -> tuple[dict, list[dict]]:
        seen = await read_everything(client, transcript)
        return seen, await play(client, script, transcript)

    seen, results = run_client(server(out), body)
    return seen, results, transcript, out


def test_tools_prompt_and_resources_are_the_surface(full_run, reference) -> None:
    seen, *_ = full_run
    assert_matches_surface(seen, reference[1])


def test_a_whole_run_gives_the_in_process_results_and_hash(full_run, reference) -> None:
    _, results, _, out = full_run
    in_process = reference[1]
    assert_same_as_in_process(results, in_process)
    last = results[-1]
    assert last["run_over"] and last["summary"]["windows_played"] == 28
    assert (
        last["summary"]["final_net_assets"]
        == in_process.session.engine.state.ledger.accounts.net_assets / 100
    )
    meta = json.loads((out / "run.json").read_text())
    assert meta["ended"] == "completed" and meta["state_hash"] == in_process.session.state_hash()
    assert meta["agent"] == {"name": "mcp", "settings": {"transport": "stdio"}, "privileged": False}
    trace = (out / "trace.jsonl").read_text().splitlines()
    assert [json.loads(line)["tool"] for line in trace] == [
        e["tool"] for e in in_process.session.trace
    ]
    assert (out / "metrics.json").is_file()


def test_no_response_shows_a_hidden_field_the_seed_or_a_path(full_run) -> None:
    *_, transcript, out = full_run
    forbidden = [str(SEED), str(out), str(out.parent), user_cache_dir("merchantbench"), "/tmp"]
    assert len(transcript.responses) > 100
    for response in transcript.responses:
        scan(response, forbidden)


def test_an_older_client_on_the_handshake_protocol_plays_too(tmp_path, reference) -> None:
    script, in_process = reference

    async def body(client: Client) -> tuple[str, list[dict]]:
        results = await play(client, script[:2], Transcript())
        return client.protocol_version, results

    version, results = run_client(server(tmp_path / "run"), body, mode="legacy")
    assert version < "2026"  # a handshake-era version, e.g. 2025-11-25
    assert results[-1]["observation"] == in_process.observations[1]


def test_an_interrupted_run_resumes_where_the_client_left(tmp_path, reference) -> None:
    script, in_process = reference
    out = tmp_path / "run"
    calls = [call for window in script for call in window]
    cut = sum(len(window) for window in script[:12]) + 2  # past a checkpoint, mid-window 12
    first_half = [calls[:cut]]
    rest = [calls[cut:]]

    first = run_client(server(out), lambda c: play(c, first_half, Transcript()))
    assert json.loads((out / "run.json").read_text())["ended"] == "interrupted"
    second = run_client(server(out, "--resume"), lambda c: play(c, rest, Transcript()))
    assert_same_as_in_process(first + second, in_process)
    meta = json.loads((out / "run.json").read_text())
    assert meta["ended"] == "completed" and meta["state_hash"] == in_process.session.state_hash()
    seqs = [json.loads(line)["seq"] for line in (out / "trace.jsonl").read_text().splitlines()]
    assert seqs == list(range(1, len(calls) + 1))


def test_bad_command_lines_fail_with_one_line(tmp_path) -> None:
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "x").write_text("x")
    cases = [
        (["--out", str(tmp_path / "busy")], "exists; use --resume"),
        (["--out", str(tmp_path / "none"), "--resume"], "nothing to resume"),
        (["--out", str(tmp_path / "s"), "--scenario", "nope"], "nope"),
    ]
    for args, reason in cases:
        result = CliRunner().invoke(app, ["mcp", *args])
        assert result.exit_code != 0, args
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error:") and reason in lines[0], lines
