"""Arenas as cells of a sweep: planned × scenarios × seeds, run by the local executor into the
record `merchantbench arena` writes (byte for byte), resumed after a real kill, indexed one
row per merchant, and reported with the arena report's across-seed numbers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from merchantbench.record.arena import read_arena
from merchantbench.report.arena import markets_analysis
from merchantbench.runs.arena import ArenaSpec, Entrant, run_arena
from merchantbench.runs.kill_points import KILL_ENV
from merchantbench.scenario import load_scenario
from merchantbench.sweeps.driver import run_sweep
from merchantbench.sweeps.execute import LocalExecutor
from merchantbench.sweeps.index import read_index
from merchantbench.sweeps.plan import SweepPlanError, plan_sweep
from merchantbench.sweeps.report import write_sweep_report
from merchantbench.sweeps.spec import SweepFileError, parse_sweep_text

SET = ["clock.days=4", "market.seller_substitution=4"]
SWEEP = f"""
name: market
scenarios: [{{name: small, set: {json.dumps(SET)}}}]
seeds: [1, 2]
agents: [idle]
arena: [expert, rule-based, random]
"""
LABEL = "arena-expert+rule-based+random"
MERCHANTS = ("expert", "rule-based", "random")
RECORD_FILES = (
    "metrics.json", "trace.jsonl", "transcript.jsonl", "orders.parquet", "daily.parquet",
    "listings.parquet", "timeseries.parquet",
)  # fmt: skip


def _same_arena(one: Path, other: Path) -> None:
    assert read_arena(one).state_hash == read_arena(other).state_hash
    for merchant in MERCHANTS:
        for name in RECORD_FILES:
            a = (one / "merchants" / merchant / name).read_bytes()
            assert a == (other / "merchants" / merchant / name).read_bytes(), (merchant, name)


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("arena-sweep")
    spec = parse_sweep_text(SWEEP, ".yaml")
    outcome = run_sweep(spec, base, base / "out", LocalExecutor(2))
    assert sorted(outcome.finished) == sorted(
        [f"idle/s{s}" for s in (1, 2)] + [f"{LABEL}/s{s}" for s in (1, 2)]
    )
    assert not outcome.failed
    return base / "out"


def test_an_arena_cell_is_the_arena_commands_record(swept: Path, tmp_path: Path) -> None:
    entrants = tuple(Entrant(m, m) for m in MERCHANTS)
    alone = run_arena(ArenaSpec(load_scenario("small", overrides=SET), 2, entrants), tmp_path)
    cell = swept / "runs" / LABEL / "s2"
    _same_arena(cell, tmp_path)
    rows = [r for r in read_index(swept) if r["label"] == LABEL and r["seed"] == 2]
    assert [r["merchant"] for r in rows] == list(MERCHANTS)
    for row in rows:
        assert row["status"] == "done" and row["arena"] is True
        assert row["agent"] == row["merchant"] and row["run_dir"] == f"runs/{LABEL}/s2"
        assert row["final_net_assets"] == alone[row["merchant"]]["final_net_assets"]
        assert row["state_hash"] == alone[row["merchant"]]["state_hash"]
    single = [r for r in read_index(swept) if r["label"] == "idle"]
    assert len(single) == 2 and all(not r["arena"] and r["merchant"] is None for r in single)


def test_a_finished_sweep_of_arenas_runs_nothing_again(swept: Path) -> None:
    before = (swept / "runs" / LABEL / "s1" / "arena.json").read_bytes()
    again = run_sweep(parse_sweep_text(SWEEP, ".yaml"), swept.parent, swept, LocalExecutor())
    assert not again.finished and len(again.skipped) == 4
    assert (swept / "runs" / LABEL / "s1" / "arena.json").read_bytes() == before


def test_the_report_has_the_arena_reports_numbers(swept: Path) -> None:
    write_sweep_report(swept)
    data = json.loads((swept / "report" / "report.json").read_text())
    assert data["runs_planned"] == 4 and data["runs_done"] == 4 and not data["not_done"]
    [single] = data["groups"]  # the arena's merchants are never pooled with the single store
    assert [row["label"] for row in single["table1"]] == ["idle"]
    [group] = data["arenas"]
    assert group["arena"] == LABEL
    assert [row["label"] for row in group["table1"]] == list(MERCHANTS)
    assert all(row["runs"] == 2 for row in group["table1"])
    assert "market of 3: expert, random, rule-based" in group["provenance"]["market"]
    dirs = [swept / "runs" / LABEL / f"s{s}" for s in (1, 2)]
    expected = json.loads(json.dumps(markets_analysis(dirs, [1, 2])))
    assert group["markets"] == expected
    shares = [m["mean_order_share"] for m in expected["merchants"].values()]
    assert sum(shares) == pytest.approx(1.0)
    text = (swept / "report" / "report.md").read_text()
    for heading in (f"## Arena {LABEL}", "### Table 1 per merchant", "mean GMV share",
                    "Rank stability: mean Kendall τ", "95 % interval"):  # fmt: skip
        assert heading in text
    assert (swept / "report" / "arena_net_assets-1.png").is_file()
    assert "arena_net_assets-1.png" not in (swept / "report" / "report.html").read_text()


def test_a_market_whose_merchant_record_was_edited_is_left_out(swept: Path, tmp_path) -> None:
    """The arena section counts a market only when its merchants' records verify (the market
    replayed whole): a merchant's metrics.json edited leaves that market out, with why."""
    import shutil

    copy = Path(shutil.copytree(swept, tmp_path / "copy"))
    metrics = copy / "runs" / LABEL / "s1" / "merchants" / "random" / "metrics.json"
    data = json.loads(metrics.read_text())
    data["final_net_assets"] = 1_000_000.0
    metrics.write_text(json.dumps(data))
    write_sweep_report(copy)
    report = json.loads((copy / "report" / "report.json").read_text())
    [left] = report["not_done"]
    assert left["run"] == f"{LABEL}/s1" and left["status"] == "left out"
    assert "random: differs" in left["reason"], left["reason"]
    [group] = report["arenas"]
    assert all(row["runs"] == 1 for row in group["table1"])  # seed 2 alone
    assert 1_000_000.0 not in group["net_assets_by_configuration"]["random"]


KILLER = """
import sys
from pathlib import Path
from merchantbench.sweeps.execute import SweepOutcome, prepare
from merchantbench.sweeps.plan import plan_sweep
from merchantbench.sweeps.spec import parse_sweep_text
from merchantbench.sweeps.worker import execute_run

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
runs = [r for r in plan_sweep(parse_sweep_text(sys.argv[2], ".yaml"), out) if r.is_arena]
todo = prepare(runs[:1], out, False, SweepOutcome())
execute_run(todo[0].run, str(out), todo[0].resume)
"""


@pytest.mark.parametrize("point", ["trace:150", "finish"])
def test_a_killed_arena_cell_resumes_to_the_same_bytes(swept: Path, tmp_path: Path, point):
    out = tmp_path / "out"
    text = SWEEP.replace("agents: [idle]\n", "")
    env = {**os.environ, KILL_ENV: point}
    proc = subprocess.run([sys.executable, "-c", KILLER, str(out), text], env=env,
                          capture_output=True, timeout=600)  # fmt: skip
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]
    assert read_arena(out / "runs" / LABEL / "s1").ended is None  # killed mid-way
    spec = parse_sweep_text(text, ".yaml")
    outcome = run_sweep(spec, tmp_path, out, LocalExecutor())
    assert sorted(outcome.finished) == [f"{LABEL}/s1", f"{LABEL}/s2"] and not outcome.failed
    for seed in (1, 2):
        _same_arena(out / "runs" / LABEL / f"s{seed}", swept / "runs" / LABEL / f"s{seed}")


def test_a_damaged_arena_record_is_kept_then_moved_aside(swept: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    text = SWEEP.replace("agents: [idle]\n", "").replace("seeds: [1, 2]", "seeds: [1]")
    spec = parse_sweep_text(text, ".yaml")
    assert run_sweep(spec, tmp_path, out, LocalExecutor()).finished == [f"{LABEL}/s1"]
    arena = out / "runs" / LABEL / "s1"
    (arena / "arena.json").write_text('{"format": 1, "scen')
    again = run_sweep(spec, tmp_path, out, LocalExecutor())
    assert not again.finished and list(again.damaged) == [f"{LABEL}/s1"]
    assert (arena / "arena.json").read_text() == '{"format": 1, "scen'
    [row] = read_index(out)
    assert row["status"] == "damaged" and row["merchant"] is None
    retried = run_sweep(spec, tmp_path, out, LocalExecutor(), retry_failed=True)
    assert retried.finished == [f"{LABEL}/s1"]
    [(aside, _reason)] = retried.set_aside.values()
    assert (aside / "arena.json").read_text() == '{"format": 1, "scen'
    _same_arena(arena, swept / "runs" / LABEL / "s1")


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("arena: [oracle, expert]", "sees hidden state"),
        ("arena: [nosuch]", "nosuch"),
        (
            "agents: [{agent: idle, label: duel}]\narenas: [{label: duel, agents: [expert]}]",
            "labels repeat: duel",
        ),  # fmt: skip
    ],
)
def test_bad_arena_entries_are_refused_in_one_line(text: str, error: str) -> None:
    try:
        plan_sweep(parse_sweep_text(text, ".yaml"), Path("."))
    except (SweepPlanError, SweepFileError) as exc:
        assert error in str(exc) and "\n" not in str(exc)
    else:
        raise AssertionError("planned")


def test_both_arena_keys_are_refused() -> None:
    with pytest.raises(SweepFileError, match="arena or arenas"):
        parse_sweep_text("arena: [expert]\narenas: [[random]]", ".yaml")


def test_an_llm_merchant_in_an_arena_cell(tmp_path: Path, server) -> None:
    """A ReAct merchant on a scripted model (the official client over HTTP) beside the expert:
    its model use is in its index row and the sweep's spending; a budget needs its prices."""
    (tmp_path / "models.toml").write_text(
        f'[alpha]\nbase_url = "{server.base_url}"\nmodel = "scripted-alpha"\n'
        "price_input = 1.0\nprice_output = 4.0\n"
    )
    text = """
models_file: models.toml
scenarios: [{name: smoke, set: ["clock.days=2", "market.seller_substitution=4"]}]
seeds: [1]
arenas: [{label: llm, agents: [{agent: react, settings: {model_entry: alpha}}, expert]}]
"""
    outcome = run_sweep(parse_sweep_text(text, ".yaml"), tmp_path, tmp_path / "out",
                        LocalExecutor())  # fmt: skip
    assert outcome.finished == ["llm/s1"] and not outcome.failed, outcome.failed
    rows = {row["merchant"]: row for row in read_index(tmp_path / "out")}
    assert sorted(rows) == ["expert", "react"]
    assert rows["react"]["llm_calls"] > 0 and rows["react"]["llm_cost"] > 0
    assert not rows["expert"]["llm_calls"]
    progress = json.loads((tmp_path / "out" / "progress" / "llm" / "s1.json").read_text())
    # model calls reach the log at checkpoints: progress may lag the finished record
    assert 0 <= progress["model_calls"] <= rows["react"]["llm_calls"]
    assert 0 <= progress["cost"] <= rows["react"]["llm_cost"]
    assert set(progress["merchants"]) == {"react", "expert"}
    (tmp_path / "free.toml").write_text(
        f'[alpha]\nbase_url = "{server.base_url}"\nmodel = "scripted-alpha"\n'
    )
    priced = text.replace("models.toml", "free.toml") + "budget: {max_cost: 1.0}\n"
    with pytest.raises(SweepPlanError, match="price_input"):
        plan_sweep(parse_sweep_text(priced, ".yaml"), tmp_path)
