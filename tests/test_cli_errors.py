"""Every CLI error is one line on stderr and a non-zero exit; nothing is created before the
inputs are checked; `--debug` shows the traceback (issue 9, item 7)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def cli(*args: str, cache: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MERCHANTBENCH_CACHE": str(cache)} if cache else None
    return subprocess.run(
        [sys.executable, "-m", "merchantbench.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def one_line_error(result: subprocess.CompletedProcess[str], expected: str) -> None:
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1 and expected in lines[0], result.stderr
    assert all(len(line) < 400 for line in result.stderr.splitlines())


BAD = [
    (["run", "--agent", "react", "--agent-opt", "max_model_calls=abc", "--model", "m",
      "--base-url", "http://127.0.0.1:9/v1"], "max_model_calls"),
    (["run", "--agent", "react", "--model", "m", "--base-url", "http://127.0.0.1:0.5/v1"],
     "not a valid URL"),
    (["run", "--agent", "react", "--model", "m", "--base-url", "ftp://x/v1"], "http://"),
    (["run", "--agent", "rule-based", "--seed", "abc"], "--seed"),
    (["run", "--agent", "idle", "--scenario", "nope"], "unknown scenario"),
    (["run", "--agent", "idle", "--set", "clock.nope=1"], "clock.nope"),
    (["run", "--agent", "idle", "--days", "-3"], "clock.days"),
    (["run", "--agent", "idle", "--scenario-file", "/no/such.yaml"], "no/such.yaml"),
    (["run", "--agent", "idle", "--resume"], "--resume needs --out"),
    (["report", "/no/such/run"], "/no/such/run"),
    (["nocommand"], "nocommand"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "expected"), BAD, ids=[" ".join(a[:4]) for a, _ in BAD])
def test_bad_input_is_one_line(args, expected, tmp_path):
    out = tmp_path / "run"
    extra = ["--out", str(out)] if args[0] == "run" and "--resume" not in args else []
    one_line_error(cli(*args, *extra, cache=tmp_path / "cache"), expected)
    assert not out.exists()  # nothing created before the inputs were checked


def test_out_naming_a_file_is_refused(tmp_path):
    target = tmp_path / "a-file"
    target.write_text("mine")
    result = cli("run", "--agent", "idle", "--scenario", "smoke", "--out", str(target))
    one_line_error(result, "is a file")
    assert target.read_text() == "mine"


@pytest.fixture(scope="module")
def broken_run(tmp_path_factory) -> Path:
    """A smoke run stopped at window 12 (ended "error"), with a checkpoint at window 10."""
    root = tmp_path_factory.mktemp("broken")
    out = root / "run"
    result = cli("run", "--agent", "idle", "--scenario", "smoke", "--out", str(out),
                 "--no-progress", cache=root / "cache")  # fmt: skip
    assert result.returncode == 0, result.stderr
    meta = json.loads((out / "run.json").read_text())
    meta["ended"] = "error"
    (out / "run.json").write_text(json.dumps(meta))
    return out


def test_a_damaged_checkpoint_is_refused_in_one_line(broken_run, tmp_path):
    run = tmp_path / "run"
    subprocess.run(["cp", "-r", str(broken_run), str(run)], check=True)
    state = run / "checkpoint" / "state.pkl"
    data = bytearray(state.read_bytes())
    data[len(data) // 2] ^= 0xFF
    state.write_bytes(bytes(data))
    trace = (run / "trace.jsonl").read_bytes()
    result = cli("run", "--agent", "idle", "--scenario", "smoke", "--out", str(run), "--resume",
                 cache=broken_run.parent / "cache")  # fmt: skip
    one_line_error(result, "damaged")
    assert (run / "trace.jsonl").read_bytes() == trace  # nothing deleted


def test_a_damaged_run_json_is_refused_in_one_line(broken_run, tmp_path):
    run = tmp_path / "run"
    subprocess.run(["cp", "-r", str(broken_run), str(run)], check=True)
    (run / "run.json").write_text('{"ended": "err')
    result = cli("run", "--agent", "idle", "--scenario", "smoke", "--out", str(run), "--resume",
                 cache=broken_run.parent / "cache")  # fmt: skip
    one_line_error(result, "run.json")


def test_an_unreachable_endpoint_is_one_line_and_resumable(tmp_path):
    result = cli("run", "--agent", "react", "--model", "m", "--base-url", "http://127.0.0.1:9/v1",
                 "--agent-opt", "max_retries=0", "--agent-opt", "max_failed_windows=1",
                 "--scenario", "smoke", "--days", "1", "--out", str(tmp_path / "r"),
                 "--no-progress", cache=tmp_path / "cache")  # fmt: skip
    one_line_error(result, "--resume")
    assert json.loads((tmp_path / "r" / "run.json").read_text())["ended"] == "error"


def test_debug_shows_the_traceback_of_an_unexpected_error(tmp_path):
    not_a_dir = tmp_path / "cache-is-a-file"
    not_a_dir.write_text("x")
    args = ("run", "--agent", "idle", "--scenario", "smoke", "--out", str(tmp_path / "r"))
    one_line_error(cli(*args, cache=not_a_dir), "--debug shows the traceback")
    loud = cli("--debug", *args[:-1], str(tmp_path / "r2"), cache=not_a_dir)
    assert loud.returncode != 0 and "Traceback (most recent call last)" in loud.stderr


# --- issue 19, item 8: more inputs that must be refused in one line, before anything starts --
def _binary(tmp_path: Path) -> str:
    path = tmp_path / "binary.yaml"
    path.write_bytes(bytes(range(256)) * 4)
    return str(path)


def _bad_yaml(tmp_path: Path) -> str:
    path = tmp_path / "bad.yaml"
    path.write_text("clock: [\n  days")
    return str(path)


def _sweep_file(tmp_path: Path) -> str:
    path = tmp_path / "sweep.yaml"
    path.write_text('name: t\nscenarios: [{name: smoke, set: ["clock.days=1"]}]\nagents: [idle]\n')
    return str(path)


MORE_BAD = [
    (lambda t: ["run", "--agent", "idle", "--scenario-file", _binary(t)], "not UTF-8"),
    (lambda t: ["run", "--agent", "idle", "--scenario-file", str(t)], "is a directory"),
    (lambda t: ["run", "--agent", "idle", "--scenario-file", _bad_yaml(t)], "not valid YAML"),
    (lambda t: ["run", "--agent", "idle", "--set", "clock.days=["], "not a valid value"),
    (lambda t: ["run", "--agent", "idle", "--set", "clock.days=*x"], "not a valid value"),
    (lambda t: ["run", "--agent", "idle", "--days", "0"], "clock.days"),
    (lambda t: ["run", "--agent", "idle", "--scenario", "smoke", "--out", "/proc/mb/run"],
     "cannot write in /proc"),
    (lambda t: ["mcp", "--scenario", "smoke", "--out", "/proc/mb/run"], "cannot write in /proc"),
    (lambda t: ["calibrate", "--seeds", "0", "--root", str(t / "out")], "--seeds"),
    (lambda t: ["calibrate", "--seeds", "-3", "--root", str(t / "out")], "--seeds"),
    (lambda t: ["calibrate", "--jobs", "0", "--root", str(t / "out")], "--jobs"),
    (lambda t: ["calibrate", "--ablation-seeds", "-1", "--root", str(t / "out")],
     "--ablation-seeds"),
    (lambda t: ["calibrate", "--agents", ",", "--root", str(t / "out")], "no agent"),
    (lambda t: ["calibrate", "--out", str(t), "--root", str(t / "out")], "is a directory"),
    (lambda t: ["calibrate", "--root", "/proc/mb/calibration"], "cannot write in /proc"),
    (lambda t: ["sweep", _sweep_file(t), "--jobs", "0", "--out", str(t / "out")], "--jobs"),
    (lambda t: ["sweep", _sweep_file(t), "--jobs", "100000", "--out", str(t / "out")], "--jobs"),
    (lambda t: ["sweep", _sweep_file(t), "--out", "/proc/mb/sweep"], "cannot write in /proc"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "expected"), MORE_BAD, ids=[e for _, e in MORE_BAD])
def test_more_bad_input_is_one_line(args, expected, tmp_path):
    out = tmp_path / "out"
    extra = (
        ["--out", str(out)] if args(tmp_path)[0] == "run" and "--out" not in args(tmp_path) else []
    )
    one_line_error(cli(*args(tmp_path), *extra, cache=tmp_path / "cache"), expected)
    assert not out.exists()  # nothing created: no run started


def _play(*args: str) -> subprocess.CompletedProcess[str]:
    """`play` on a free port; a refused input ends it at once (a served one would time out)."""
    return subprocess.run([sys.executable, "-m", "merchantbench.cli", "play", "--port", "0", *args],
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def test_play_refuses_a_file_as_its_directory(tmp_path):
    target = tmp_path / "a-file"
    target.write_text("mine")
    one_line_error(_play("--dir", str(target)), "is a file")
    assert target.read_text() == "mine"
    one_line_error(_play("--dir", str(target / "below")), "is a file")


@pytest.mark.parametrize(
    "content",
    [b"garbage{", b"\xff\xfe\x00", b"[1, 2]", b'{"t": {"participant": "p1"}}',
     b'{"t": {"participant": "p1", "run": "../../elsewhere"}}'],
    ids=["not-json", "binary", "a-list", "no-run", "run-outside"],
)  # fmt: skip
def test_play_refuses_a_damaged_participants_file(tmp_path, content):
    (tmp_path / "participants.json").write_bytes(content)
    one_line_error(_play("--dir", str(tmp_path)), "participants.json is damaged")
    assert (tmp_path / "participants.json").read_bytes() == content


def test_report_refuses_an_unwritable_out(broken_run):
    one_line_error(cli("report", str(broken_run), "--out", "/proc/mb/report"), "cannot write")
