"""`verify_record` and `merchantbench verify` on records of the Python runner: untouched records
verify; a changed sale price, an edited metric, a changed result and a truncated trace are
caught, naming where; sealed runs need their seed; refusals, retries and forced closes replay."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from merchantbench.cli import app
from merchantbench.replay import ReplayError, verify_record
from merchantbench.runs.runner import RunSpec, run_agent
from merchantbench.scenario import load_scenario

SMOKE = load_scenario("smoke")
SHORT = load_scenario("smoke", overrides=["clock.days=3", "clock.calls_per_window=12"])


@pytest.fixture(scope="module")
def record(tmp_path_factory) -> Path:
    """A rule-based smoke run (14 days) of the Python runner."""
    out = tmp_path_factory.mktemp("python") / "run"
    run_agent(RunSpec("rule-based", SMOKE, seed=3), out)
    return out


@pytest.fixture
def copy(record, tmp_path) -> Path:
    """A copy of the record to damage."""
    return Path(shutil.copytree(record, tmp_path / "copy"))


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def rewrite(path: Path, entries: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(e, separators=(",", ":")) + "\n" for e in entries))


def verify_cli(*args: str) -> Any:
    return CliRunner().invoke(app, ["verify", *args])


def said(result: Any) -> list[str]:
    """What a verify command printed, without its progress lines (on a loaded machine a
    smoke record can take the 2 s after which progress is shown)."""
    return [line for line in result.output.splitlines() if not line.startswith("verify ")]


def test_an_untouched_record_verifies(record) -> None:
    report = verify_record(record)
    assert report.ok and report.first_divergence is None, report.summary()
    assert report.windows == 28 and report.calls == len(lines(record / "trace.jsonl"))
    assert report.final_state_hash == json.loads((record / "run.json").read_text())["state_hash"]
    assert report.answers_checked and report.transcript_lines > report.calls
    assert report.metrics_checked > 100 and len(report.tables_checked) == 4
    data = json.loads(report.to_json())
    assert data["ok"] is True and data["first_divergence"] is None and data["windows"] == 28
    result = verify_cli(str(record))
    assert result.exit_code == 0, result.output
    assert "verified" in result.output


def test_a_changed_sale_price_in_the_trace_fails_naming_that_call(copy) -> None:
    trace = lines(copy / "trace.jsonl")
    listing = next(e for e in trace if e["tool"] == "list_product")
    listing["args"]["items"][0]["sale_price"] += 3
    rewrite(copy / "trace.jsonl", trace)
    report = verify_record(copy)
    found = report.first_divergence
    assert not report.ok and found is not None
    assert (found.seq, found.tool, found.window) == (
        listing["seq"],
        "list_product",
        listing["window"],
    )
    result = verify_cli(str(copy))
    assert result.exit_code == 1
    [line] = said(result)
    assert f"call {listing['seq']} (list_product)" in line and f"window {listing['window']}" in line


def test_without_a_transcript_a_changed_price_still_fails(tmp_path) -> None:
    out = tmp_path / "bare"
    run_agent(RunSpec("rule-based", SMOKE, seed=3), out, transcript=False)
    untouched = verify_record(out)  # matched, but no answer was there to check: never "verified"
    assert not untouched.ok and untouched.first_divergence is None
    assert untouched.status == "cannot verify" and "CANNOT FULLY VERIFY" in untouched.summary()
    trace = lines(out / "trace.jsonl")
    listing = next(e for e in trace if e["tool"] == "list_product")
    listing["args"]["items"][0]["sale_price"] += 3
    rewrite(out / "trace.jsonl", trace)
    report = verify_record(out)
    assert not report.answers_checked and not report.ok
    assert report.first_divergence is not None
    assert report.first_divergence.file in ("run.json", "metrics.json", "orders.parquet")


def test_a_changed_result_of_a_call_fails(copy) -> None:
    trace = lines(copy / "trace.jsonl")
    call = next(e for e in trace if e["tool"] == "query_balance" and e["window"] == 4)
    call["ok"], call["error"] = False, "limit"
    rewrite(copy / "trace.jsonl", trace)
    found = verify_record(copy).first_divergence
    assert found is not None and (found.file, found.seq, found.field) == (
        "trace.jsonl",
        call["seq"],
        "ok",
    )


def test_an_edited_metric_fails(copy) -> None:
    metrics = json.loads((copy / "metrics.json").read_text())
    metrics["net_profit"] = metrics["net_profit"] + 100
    (copy / "metrics.json").write_text(json.dumps(metrics, indent=2))
    report = verify_record(copy)
    assert not report.ok and report.first_divergence is not None
    assert (report.first_divergence.file, report.first_divergence.field) == (
        "metrics.json",
        "net_profit",
    )
    result = verify_cli(str(copy))
    assert result.exit_code == 1 and "metrics.json net_profit" in result.output


def test_an_edited_state_hash_fails(copy) -> None:
    meta = json.loads((copy / "run.json").read_text())
    meta["state_hash"] = "0" * 64
    (copy / "run.json").write_text(json.dumps(meta))
    found = verify_record(copy).first_divergence
    assert found is not None and (found.file, found.field) == ("run.json", "state_hash")


@pytest.mark.parametrize("cut", ["mid_line", "whole_lines"])
def test_a_truncated_trace_fails_in_one_line(copy, cut) -> None:
    data = (copy / "trace.jsonl").read_bytes()
    keep = len(data) // 2 if cut == "mid_line" else data.rindex(b"\n", 0, len(data) // 2) + 1
    (copy / "trace.jsonl").write_bytes(data[:keep])
    with pytest.raises(ReplayError, match="truncated"):
        verify_record(copy)
    result = verify_cli(str(copy))
    assert result.exit_code == 2 and "Traceback" not in result.output
    [line] = said(result)
    assert line.startswith("error: ") and "truncated" in line


def test_damaged_and_missing_records_fail_in_one_line(copy, tmp_path) -> None:
    trace = (copy / "trace.jsonl").read_text().splitlines(keepends=True)
    trace[5] = "{not json\n"
    (copy / "trace.jsonl").write_text("".join(trace))
    for target in (copy, tmp_path / "nothing", tmp_path):
        result = verify_cli(str(target))
        assert result.exit_code == 2 and "Traceback" not in result.output, result.output
        [line] = said(result)
        assert line.startswith("error: ")


def test_several_records_and_json(record, copy) -> None:
    metrics = json.loads((copy / "metrics.json").read_text())
    metrics["orders"] += 1
    (copy / "metrics.json").write_text(json.dumps(metrics))
    result = verify_cli("--json", str(record), str(copy))
    assert result.exit_code == 1
    reports = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["ok"] for r in reports] == [True, False]
    assert reports[1]["first_divergence"]["field"] == "orders"


def test_refusals_retries_framework_calls_and_forced_closes_replay(tmp_path) -> None:
    out = tmp_path / "adversary"
    run_agent(RunSpec("adversary_agent:Adversary", SHORT, seed=5), out)
    trace = lines(out / "trace.jsonl")
    assert sum(e["forced"] for e in trace) == 2  # windows 2 and 5 were left open
    assert any(e.get("idempotency_key") == "key-beside" for e in trace)
    assert any(e["error"] == "idempotency_conflict" for e in trace)
    assert any(e["error"] == "limit" for e in trace)
    assert any(e["origin"] == "framework" for e in trace)
    report = verify_record(out)
    assert report.ok, report.summary()
    # Three refused before any tool: bad JSON twice (once past the cap), a NaN. A name that is
    # no text is answered by the registry, as any unknown name, and replays as the call it was;
    # so does the real `_raw` argument.
    assert report.hostile_refusals == 3
    assert any(e["tool"] == "12345" and e["error"] == "unknown_tool" for e in trace)


def test_a_sealed_run_needs_its_seed(tmp_path) -> None:
    from merchantbench.record.sealed import read_sealed

    out = tmp_path / "sealed"
    spec = RunSpec.sealed_run("rule-based", load_scenario("smoke", overrides=["clock.days=2"]))
    run_agent(spec, out)
    assert verify_record(out).sealed  # the harness still holds the seed: replayed with it
    secret = read_sealed(out)
    shutil.rmtree(out / "sealed")
    with pytest.raises(ReplayError, match="sealed run"):
        verify_record(out)
    result = verify_cli(str(out))
    assert result.exit_code == 2 and "--seed" in result.output
    with pytest.raises(ReplayError, match="salt"):  # a seed alone proves nothing
        verify_record(out, seed=secret.seed)
    assert verify_record(out, seed=secret.seed, salt=secret.salt).ok
    args = ("--seed", str(secret.seed), "--salt", secret.salt, str(out))
    assert verify_cli(*args).exit_code == 0
    with pytest.raises(ReplayError, match="do not open the commitment"):
        verify_record(out, seed=secret.seed + 1, salt=secret.salt)


def test_an_unfinished_record_is_not_verified(copy) -> None:
    meta = json.loads((copy / "run.json").read_text())
    meta["ended"] = "interrupted"
    (copy / "run.json").write_text(json.dumps(meta))
    with pytest.raises(ReplayError, match="has not finished"):
        verify_record(copy)


def test_verify_caches_its_result_outside_the_record_and_a_later_edit_undoes_it(copy) -> None:
    from merchantbench.record.verification import cached_check, record_key
    from merchantbench.replay.evidence import check_run

    assert verify_cli(str(copy)).exit_code == 0
    kept = cached_check(record_key(copy))
    assert kept is not None and kept.ok and not (copy / "verified.json").exists()
    assert check_run(copy).ok
    metrics = json.loads((copy / "metrics.json").read_text())
    metrics["net_profit"] += 100  # edited after the check: another key, replayed again
    (copy / "metrics.json").write_text(json.dumps(metrics, indent=2))
    again = cached_check(record_key(copy))  # the same edit by another test may be cached
    assert again is None or not again.ok
    check = check_run(copy)
    assert check.status == "differs" and "net_profit" in check.detail
    assert verify_cli(str(copy)).exit_code == 1


def test_progress_goes_to_stderr(record, monkeypatch) -> None:
    monkeypatch.setattr("merchantbench.cli.verify.PROGRESS_SECONDS", 0.0)
    result = verify_cli(str(record))
    assert result.exit_code == 0
    assert f"verify {record}: window 27 of 28" in result.stderr
    assert "window" not in result.stdout.replace("windows", "")


def test_a_call_that_breaks_a_tool_fails_in_one_line(copy, monkeypatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a tool's bug")

    monkeypatch.setattr("merchantbench.tools.registry.ToolRegistry.call", broken)
    with pytest.raises(ReplayError, match="line 1: replaying call 1 .* raised RuntimeError"):
        verify_record(copy)


def test_a_transcript_line_past_the_trace_fails(copy) -> None:
    with (copy / "transcript.jsonl").open("a") as transcript:
        transcript.write('{"seq":9999,"window":27,"answer":{"ok":true}}\n')
    found = verify_record(copy).first_divergence
    assert found is not None and found.file == "transcript.jsonl"


def test_a_changed_observation_fails_at_its_window(copy) -> None:
    rows = lines(copy / "transcript.jsonl")
    seen = [r for r in rows if "observation" in r]
    seen[5]["observation"] = seen[5]["observation"].replace("Day", "Dya", 1)
    rewrite(copy / "transcript.jsonl", rows)
    found = verify_record(copy).first_divergence
    assert found is not None and (found.file, found.field, found.window) == (
        "transcript.jsonl",
        "observation",
        seen[5]["window"],
    )


def test_a_folder_of_runs_verifies_each_record_beneath_it(record, copy, tmp_path) -> None:
    folder = tmp_path / "sweep" / "runs" / "rule-based"
    shutil.copytree(record, folder / "s1")
    shutil.copytree(record, folder / "s2")
    metrics = json.loads((folder / "s2" / "metrics.json").read_text())
    metrics["gmv"] += 1
    (folder / "s2" / "metrics.json").write_text(json.dumps(metrics))
    result = verify_cli(str(tmp_path / "sweep"))
    assert result.exit_code == 1
    assert [line.split(":")[0] for line in result.stdout.splitlines()] == [
        str(folder / "s1"),
        str(folder / "s2"),
    ]
    empty = tmp_path / "empty"
    empty.mkdir()
    refused = verify_cli(str(empty))
    assert refused.exit_code == 2 and "not a run record" in refused.output
