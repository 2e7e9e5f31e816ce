"""`transcript.jsonl`: each window's observation and each call's answer, exactly as the agent got
them, keyed by the trace's `seq`, cut back by `seq` on resume, and free of hidden state."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from merchantbench.catalog.hidden import hidden_names_in
from merchantbench.cli import app
from merchantbench.record.checkpoint import CheckpointError
from merchantbench.record.files import write_cut
from merchantbench.record.schema import TRANSCRIPT_FILE
from merchantbench.runs.lifecycle import CheckpointPolicy, RunLifecycle
from merchantbench.runs.runner import RunSpec, run_agent
from merchantbench.runs.transcript import cut_transcript
from merchantbench.scenario import load_scenario
from merchantbench.serve.mcp_run import McpDriver

SCENARIO = load_scenario("smoke", overrides=["clock.days=2"])  # 4 windows
SEED = 3_141_592_653  # long enough that its digits in the transcript would mean a leak


def lines_of(run_dir: Path, name: str = TRANSCRIPT_FILE) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / name).read_text().splitlines()]


def open_run(run_dir: Path, resume: bool = False) -> RunLifecycle:
    spec = RunSpec("mcp", SCENARIO, SEED, {"transport": "stdio"})
    driver = McpDriver.from_settings(spec.agent_settings)
    return RunLifecycle.open(spec, run_dir, resume=resume, driver=driver)


def play(run_dir: Path) -> tuple[list[Any], list[str]]:
    """A scripted front-end run: every answer and every observation the surface gave."""
    life = open_run(run_dir)
    session = life.session
    surface, answers, observations = session.surface, [], [session.surface.observation()]
    answers.append(surface.call("search_products", {"page_size": 3}))
    product = answers[0]["rows"][0][0]
    for tool, args in [
        ("search_products", {"page_size": 3}),
        ("list_product", {"items": [{"product_id": product, "sale_price": 50}]}),
        ("no_such_tool", {}),  # an error answer is an answer too
        ("query_balance", "{not json"),
        ("end_of_step", {}),
    ]:
        answers.append(surface.call(tool, args))
    observations.append(surface.observation())
    surface.record_framework_call("memory", {"op": "read"}, True)
    answers.append(None)
    while not surface.over:
        answers.append(surface.force_end_of_step())
        if not surface.over:
            observations.append(surface.observation())
    life.finish()
    return answers, observations


def test_every_answer_and_every_observation_is_the_one_the_agent_got(tmp_path) -> None:
    answers, observations = play(tmp_path / "run")
    trace = lines_of(tmp_path / "run", "trace.jsonl")
    lines = lines_of(tmp_path / "run")
    got = [line for line in lines if "answer" in line]
    assert [line["seq"] for line in got] == [e["seq"] for e in trace] == list(range(1, 11))
    assert [line["window"] for line in got] == [e["window"] for e in trace]
    assert [line["answer"] for line in got] == json.loads(json.dumps(answers))
    assert (
        got[3]["answer"]["ok"] is False and trace[3]["error"] == got[3]["answer"]["error"]["code"]
    )
    shown = [line for line in lines if "observation" in line]
    assert [line["observation"] for line in shown] == observations
    assert [line["window"] for line in shown] == list(range(SCENARIO.clock.windows))
    # Each window's observation follows the answer of the call that opened it.
    opened_by = [0] + [e["seq"] for e in trace if e["tool"] == "end_of_step"][:-1]
    assert [line["seq"] for line in shown] == opened_by
    assert lines.index(shown[1]) == lines.index(got[5]) + 1  # right after the end_of_step


def test_the_transcript_holds_no_hidden_state(tmp_path) -> None:
    play(tmp_path / "run")
    text = (tmp_path / "run" / TRANSCRIPT_FILE).read_text()
    assert str(SEED) not in text
    for line in lines_of(tmp_path / "run"):
        assert not hidden_names_in(line), line


def _write(path: Path, records: list[dict[str, Any]], tail: bytes = b"") -> bytes:
    data = b"".join(json.dumps(r).encode() + b"\n" for r in records) + tail
    path.write_bytes(data)
    return data


RECORDS = [
    {"seq": 0, "window": 0, "observation": "w0"},
    {"seq": 1, "window": 0, "answer": {"ok": True}},
    {"seq": 2, "window": 0, "answer": {"ok": True}},
    {"seq": 2, "window": 1, "observation": "w1"},
    {"seq": 3, "window": 1, "answer": None},
    {"seq": 4, "window": 1, "answer": {"ok": False}},
]


@pytest.mark.parametrize(
    ("keep", "kept", "window"), [(0, 1, 0), (1, 2, 0), (2, 4, 1), (3, 5, 1), (4, 6, 1)]
)
def test_the_cut_keeps_the_answers_the_checkpoint_covers_and_the_windows_they_opened(
    tmp_path, keep, kept, window
) -> None:
    path = tmp_path / TRANSCRIPT_FILE
    _write(path, RECORDS, tail=b'{"seq":5,"window":1,"ans')  # torn by a kill
    data, last = cut_transcript(path, keep)
    assert data == b"".join(json.dumps(r).encode() + b"\n" for r in RECORDS[:kept])
    assert last == window
    write_cut(path, data)
    assert path.read_bytes() == data


@pytest.mark.parametrize(
    ("keep", "kept", "window"), [(0, 0, None), (1, 2, 0), (2, 3, 0), (3, 5, 1), (4, 6, 1)]
)
def test_a_merchants_cut_leaves_out_the_observation_after_its_last_kept_answer(
    tmp_path, keep, kept, window
) -> None:
    """A market's merchant (runs/arena.py): the window after its last kept call may have been
    opened by another merchant's call that the resume does not keep."""
    path = tmp_path / TRANSCRIPT_FILE
    _write(path, RECORDS)
    data, last = cut_transcript(path, keep, trailing=False)
    assert data == b"".join(json.dumps(r).encode() + b"\n" for r in RECORDS[:kept])
    assert last == window


def test_the_cut_of_an_empty_transcript_keeps_nothing(tmp_path) -> None:
    path = tmp_path / TRANSCRIPT_FILE
    path.write_bytes(b"")
    assert cut_transcript(path, 0) == (b"", None)


@pytest.mark.parametrize(
    ("records", "keep", "message"),
    [
        (RECORDS[:3], 4, "has 2 answers; the checkpoint covers 4"),
        ([*RECORDS[:2], *RECORDS[3:]], 3, "line 3 is damaged or out of order"),  # answer 2 lost
        ([RECORDS[0], RECORDS[2], RECORDS[1]], 2, "line 2 is damaged or out of order"),
        ([RECORDS[0], {"seq": 1, "window": 0}], 1, "line 2 is damaged"),  # neither kind
        ([RECORDS[0], {"seq": "1", "window": 0, "answer": {}}], 1, "line 2 is damaged"),
    ],
    ids=["short", "missing", "reordered", "no-kind", "bad-seq"],
)
def test_a_damaged_transcript_within_the_checkpoint_is_refused_unchanged(
    tmp_path, records, keep, message
) -> None:
    path = tmp_path / TRANSCRIPT_FILE
    data = _write(path, records)
    with pytest.raises(CheckpointError, match=message):
        cut_transcript(path, keep)
    assert path.read_bytes() == data


def test_a_suspended_run_resumes_to_the_transcript_of_an_uninterrupted_one(tmp_path) -> None:
    def drive(run_dir: Path, suspend_at: int | None) -> None:
        life = open_run(run_dir)
        for step in range(2 * SCENARIO.clock.windows):
            if step == suspend_at:  # mid-window: the call before it is kept
                life.suspend()
                life = open_run(run_dir, resume=True)
            tool = "query_balance" if step % 2 == 0 else "end_of_step"
            life.surface.call(tool, {})
        life.finish()

    drive(tmp_path / "whole", None)
    for at in (1, 2, 5):  # mid-window, at a window's start, later
        drive(tmp_path / f"s{at}", at)
        for name in ("trace.jsonl", TRANSCRIPT_FILE):
            assert (tmp_path / f"s{at}" / name).read_bytes() == (
                tmp_path / "whole" / name
            ).read_bytes(), (at, name)


def test_rewind_cuts_the_transcript_with_the_trace(tmp_path) -> None:
    life = open_run(tmp_path / "run")
    session = life.session
    session.surface.call("query_balance", {})
    blob = session.snapshot()
    while not session.surface.over:
        session.surface.call("end_of_step", {})
    life.finish()
    life.rewind(blob)
    life.checkpoint()
    assert [(r["seq"], "answer" in r) for r in lines_of(tmp_path / "run")] == [
        (0, False),
        (1, True),
    ]


def test_without_a_transcript_none_is_written_and_none_is_started_on_resume(tmp_path) -> None:
    spec = RunSpec("rule-based", SCENARIO, 1)
    run_agent(spec, tmp_path / "off", transcript=False, checkpoints=CheckpointPolicy(windows=2))
    assert not (tmp_path / "off" / TRANSCRIPT_FILE).exists()
    stopped = tmp_path / "old"  # a record made before transcripts, killed after window 2

    def stop(session) -> None:
        if session.window == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_agent(spec, stopped, checkpoints=CheckpointPolicy(windows=2), on_window=stop)
    (stopped / TRANSCRIPT_FILE).unlink()
    run_agent(spec, stopped, resume=True, checkpoints=CheckpointPolicy(windows=2))
    assert not (stopped / TRANSCRIPT_FILE).exists()
    assert (stopped / "trace.jsonl").read_bytes() == (tmp_path / "off" / "trace.jsonl").read_bytes()


def test_the_cli_turns_the_transcript_off(tmp_path) -> None:
    args = ["run", "--no-progress", "--agent", "idle", "--scenario", "smoke", "--days", "1"]
    result = CliRunner().invoke(app, [*args, "--no-transcript", "--out", str(tmp_path / "a")])
    assert result.exit_code == 0, result.output
    assert not (tmp_path / "a" / TRANSCRIPT_FILE).exists()
    result = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "b")])
    assert result.exit_code == 0, result.output
    lines, trace = lines_of(tmp_path / "b"), lines_of(tmp_path / "b", "trace.jsonl")
    assert [r["window"] for r in lines if "observation" in r] == [0, 1]
    assert [r["seq"] for r in lines if "answer" in r] == [e["seq"] for e in trace]
