"""Publishable tables: a folder of sweeps of different horizons and scenarios is never pooled by
the CLI leaderboard or the sweep report, each row says what it pools, copies of a run count once,
every table carries its provenance; costs are stated or "unknown", never a silent 0."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from merchantbench.agents.llm.models import ModelConfigError, resolve_model
from merchantbench.agents.llm.scripted_policy import store_policy
from merchantbench.agents.llm.scripted_server import ScriptedServer
from merchantbench.cli import app
from merchantbench.sweeps.plan import SweepPlanError, plan_sweep
from merchantbench.sweeps.report import write_sweep_report
from merchantbench.sweeps.spec import parse_sweep_text
from sweep_fixtures import FOLDER_SETTINGS, sweep_folder


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return sweep_folder(tmp_path_factory.mktemp("publish"))


def _leaderboard(path: Path) -> str:
    result = CliRunner().invoke(app, ["leaderboard", str(path)], terminal_width=250)
    assert result.exit_code == 0, result.output
    return result.output


def _tables(output: str) -> dict[str, list[list[str]]]:
    """The rows of each ranking the CLI printed, by its setting title."""
    tables: dict[str, list[list[str]]] = {}
    title = None
    for line in output.splitlines():
        found = re.match(r"^(.+ · \d+ days): ranked by", line)
        if found:
            title = found.group(1)
            tables[title] = []
        elif title and line.startswith("│"):
            tables[title].append([cell.strip() for cell in line.strip("│").split("│")])
    return tables


def test_the_cli_leaderboard_ranks_each_setting_apart(folder: Path) -> None:
    output = _leaderboard(folder)
    tables = _tables(output)
    assert sorted(tables) == sorted(FOLDER_SETTINGS)  # the real scenario names and days
    assert "3 settings: runs of different settings are ranked apart, never pooled" in output
    short = {row[1]: row for row in tables["smoke · 2 days"]}
    assert set(short) == {"idle", "rule-based"}  # short-copy's runs pooled with short's, once
    assert re.fullmatch(
        r"2 runs \(2 duplicate copies left out\) · seeds 1, 2 · replayed · "
        r"self-attested [0-9a-f]{8}",
        short["idle"][2],
    )
    longer = {row[1] for row in tables["smoke · 3 days"]}
    assert longer == {"idle@smoke", "rule-based@smoke"}
    assert {row[1] for row in tables["other · 2 days"]} == {"idle@other", "rule-based@other"}
    for rows in tables.values():
        for row in rows:
            assert re.fullmatch(r"\d+(\.\d)?", row[6]), row  # orders: "1", never "1.000"
            assert row[8] == "—"  # no model: no cost
    # Each table's provenance: scenario and hash, days, seeds, code, runs counted, verified.
    assert output.count("runs counted: 4") == 3 and "(4 duplicate copies left out)" in output
    assert output.count(
        "verified: 4 of 4 (store, answers"
    ) == 3 and "left out" not in output.replace("duplicate copies left out", "")
    assert output.count("not comparable with the paper's Table 1") == 3
    assert re.search(r"scenario: smoke \(hash [0-9a-f]{16}\), 3 days", output)
    assert re.search(r"code of the runs: merchantbench \S+ src [0-9a-f]{12}", output)


def test_a_hand_written_verified_file_is_not_a_verdict(folder: Path, tmp_path: Path) -> None:
    """The issue's forgery: net assets raised by 1,000 and a `verified.json` with the right file
    hashes: a file in the record is never read as a verdict; the record is replayed, left out
    and named with its first difference."""
    import hashlib
    import shutil

    sweep = Path(shutil.copytree(folder / "short", tmp_path / "short"))
    run_dir = sweep / "runs" / "idle" / "s1"
    metrics = json.loads((run_dir / "metrics.json").read_text())
    metrics["final_net_assets"] += 1000
    (run_dir / "metrics.json").write_text(json.dumps(metrics))
    digests = {name: hashlib.sha256((run_dir / name).read_bytes()).hexdigest()
               for name in ("run.json", "metrics.json", "trace.jsonl")}  # fmt: skip
    state_hash = json.loads((run_dir / "run.json").read_text())["state_hash"]
    forged = {"ok": True, "state_hash": state_hash, "sha256": digests, "detail": "verified"}
    (run_dir / "verified.json").write_text(json.dumps(forged))
    output = _leaderboard(sweep)
    assert f"left out (does not verify): {run_dir}: differs: metrics.json final_net_assets" in (
        " ".join(output.split())
    )
    rows = {row[1]: row for row in _tables(output)["smoke · 2 days"]}
    assert rows["idle"][2].startswith("1 run · seed 2 · replayed")


def test_the_sweep_report_has_a_section_per_setting_with_provenance(folder: Path) -> None:
    sweep_dir = folder / "longer"
    write_sweep_report(sweep_dir)
    data = json.loads((sweep_dir / "report" / "report.json").read_text())
    groups = {g["setting"]: g for g in data["groups"]}
    assert set(groups) == {"smoke · 3 days", "other · 2 days"}
    for setting, group in groups.items():
        scenario = setting.split(" · ")[0]
        assert {row["label"] for row in group["table1"]} == {
            f"idle@{scenario}",
            f"rule-based@{scenario}",
        }
        assert group["provenance"]["runs_counted"] == 4 and group["provenance"]["seeds"] == [1, 2]
        assert group["figure5"]["months"] == ["2025-06"]  # the horizon's month, not twelve
        assert all(row["share_of_human"] is None for row in group["table1"])
        assert all(p["few_seeds"] and p["distinct_resamples"] == 3 for p in group["paired"])
    text = (sweep_dir / "report" / "report.md").read_text()
    assert "## smoke · 3 days" in text and "## other · 2 days" in text
    assert "no number pools runs of two settings" in text
    assert text.count("### Provenance") == 2 and "share of human" not in text
    assert text.count("The paper's Table 1 is not shown beside these runs") == 2
    assert "⚠ 2 seeds (< 5): only 3 distinct resamples, interval unreliable" in text
    assert "The axis covers the 1 calendar month of the 3-day horizon" in text
    assert text.count("No run of this setting called a model") == 2
    html = (sweep_dir / "report" / "report.html").read_text()
    assert html.count("data:image/png;base64,") == 4  # two figures per setting, embedded


MODELS = """
[full]
base_url = "{url}"
model = "scripted-full"
price_input = 1.0
price_output = 4.0

[unpriced]
base_url = "{url}"
model = "scripted-unpriced"
price_output = 4.0
"""


def test_cached_input_costs_the_input_price_unless_a_cached_price_is_given(tmp_path) -> None:
    models = tmp_path / "models.toml"
    cheap = '[cheap]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\nprice_input = 1.0\n'
    cheap += "price_cached_input = 0.1\nprice_output = 4.0\n"
    models.write_text(MODELS.format(url="http://127.0.0.1:9/v1") + cheap)
    full = resolve_model(None, None, None, str(models), "full")
    # 1M input of which 980k cached, no output: every input token at the input price.
    assert full.cost(1_000_000, 980_000, 0) == pytest.approx(1.0)
    assert full.public_settings()["prices_per_million"]["cached_input"] == 1.0
    cheaper = resolve_model(None, None, None, str(models), "cheap")
    assert cheaper.cost(1_000_000, 980_000, 0) == pytest.approx(0.02 + 0.098)
    unpriced = resolve_model(None, None, None, str(models), "unpriced")
    assert unpriced.cost(1_000, 0, 10) is None and unpriced.unpriced == ["price_input"]
    with pytest.raises(ModelConfigError, match="states no price_input"):
        unpriced.require_prices("--max-cost")


def _run_react(tmp_path: Path, server: ScriptedServer, entry: str, *extra: str):
    models = tmp_path / "models.toml"
    models.write_text(MODELS.format(url=server.base_url))
    out = tmp_path / (entry + ("-budget" if extra else ""))
    command = [sys.executable, "-m", "merchantbench.cli", "run", "--agent", "react",
               "--scenario", "smoke", "--days", "1", "--out", str(out), "--no-progress",
               "--models-file", str(models), "--model-entry", entry, *extra]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=300), out


def test_costs_are_billed_at_stated_prices_or_unknown(tmp_path: Path) -> None:
    with ScriptedServer(store_policy) as server:
        priced, priced_dir = _run_react(tmp_path, server, "full")
        unknown, unknown_dir = _run_react(tmp_path, server, "unpriced")
        refused, refused_dir = _run_react(tmp_path, server, "unpriced", "--max-cost", "1")
    assert priced.returncode == 0 and unknown.returncode == 0, priced.stderr + unknown.stderr
    calls = [json.loads(line) for line in (priced_dir / "model_calls.jsonl").open()]
    assert any(c["cached_tokens"] for c in calls)  # the scripted server reports cached tokens
    for call in calls:  # no cached price: cached tokens at the full input price
        expected = (call["input_tokens"] * 1.0 + call["output_tokens"] * 4.0) / 1e6
        assert call["cost"] == pytest.approx(expected)
    usage = json.loads((unknown_dir / "run.json").read_text())["llm_usage"]
    assert usage["calls"] > 0 and usage["cost"] is None
    unknown_calls = (unknown_dir / "model_calls.jsonl").read_text().splitlines()
    assert all(json.loads(line)["cost"] is None for line in unknown_calls)
    # --max-cost on an unknown cost: refused before anything starts, in one line.
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert refused.stderr.count("\n") == 1
    assert "--max-cost needs the model's prices" in refused.stderr
    assert not refused_dir.exists()
    # The leaderboard over both: the priced run's cost per run, the other's "unknown".
    output = _leaderboard(tmp_path)
    rows = {row[1]: row for rows in _tables(output).values() for row in rows}
    total = json.loads((priced_dir / "run.json").read_text())["llm_usage"]["cost"]
    assert rows["react-full"][8] == f"{total:.4f}" and rows["react-unpriced"][8] == "unknown"
    assert rows["react-full"][9] != "—" and rows["react-unpriced"][9] == "—"  # per unit spent


def test_a_sweep_budget_on_cost_refuses_an_unpriced_entry(tmp_path: Path) -> None:
    (tmp_path / "models.toml").write_text(MODELS.format(url="http://127.0.0.1:9/v1"))
    text = ("models_file: models.toml\nscenarios: [{name: smoke, set: ['clock.days=1']}]\n"
            "models: [full, unpriced]\nbudget: {max_cost: 2.0}\n")  # fmt: skip
    with pytest.raises(SweepPlanError, match="budget.max_cost needs the model's prices"):
        plan_sweep(parse_sweep_text(text, ".yaml"), tmp_path)
    priced = text.replace("models: [full, unpriced]", "models: [full]")
    assert plan_sweep(parse_sweep_text(priced, ".yaml"), tmp_path)  # every price stated: runs


def test_compare_refuses_runs_of_two_settings(folder: Path) -> None:
    runs = [
        folder / "short" / "runs" / "idle" / "s1",
        folder / "longer" / "runs" / "idle@smoke" / "s1",
    ]
    result = CliRunner().invoke(app, ["compare", *map(str, runs)])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert "2 settings, which are never pooled: smoke · 2 days" in result.stderr
    same = [
        folder / "short" / "runs" / "idle" / "s1",
        folder / "short-copy" / "runs" / "rule-based" / "s1",
    ]
    assert CliRunner().invoke(app, ["compare", *map(str, same)]).exit_code == 0
