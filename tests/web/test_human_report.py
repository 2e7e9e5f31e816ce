"""Human rows in a sweep's report, end to end: participants of a study play their stores
through the playground's HTTP routes (one with fast-forward), `merchantbench verify` passes on
their records, and `merchantbench report SWEEP --humans STUDY` shows them as `Human (n=2)` beside
the sweep's agents, with their own numbers; a participant still playing is listed, not counted."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from merchantbench.cli import app as cli_app
from merchantbench.replay.evidence import check_run
from merchantbench.scenario import load_scenario
from merchantbench.web.app import create_web_app
from merchantbench.web.room import PlayRoom

DAYS = 2  # 4 windows
SEED = 7
SWEEP = f"""
name: humans
scenarios: [{{name: smoke, set: ["clock.days={DAYS}"]}}]
seeds: [{SEED}]
agents: [rule-based, idle]
"""


class Participant:
    """One participant's store, played through the playground's HTTP routes."""

    def __init__(self, client: TestClient, token: str) -> None:
        self.client, self.base = client, f"/play/{token}"

    def call(self, tool: str, args: dict, key: str | None = None) -> dict:
        headers = {"Idempotency-Key": key} if key else {}
        answer = self.client.post(f"{self.base}/call/{tool}", json=args, headers=headers)
        assert answer.status_code == 200, answer.text
        return answer.json()

    def list_best_sellers(self, n: int, markup: float) -> None:
        rows = self.call("search_products", {"page_size": n, "sort": "sales_30d"})["result"]
        items = [{"product_id": r[0], "sale_price": round(r[3] * markup, 2)} for r in rows["rows"]]
        assert self.call("list_product", {"items": items}, key=f"list-{n}")["result"]["ok"]


def run_sweep(tmp_path: Path, text: str) -> Path:
    """The sweep of `text` run by the CLI in its own process (the browser tests of this session
    keep an event loop running in this one)."""
    (tmp_path / "sweep.yaml").write_text(text)
    sweep_dir = tmp_path / "sweep"
    command = [sys.executable, "-m", "merchantbench.cli", "sweep", str(tmp_path / "sweep.yaml"),
               "--out", str(sweep_dir), "--no-progress"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return sweep_dir


def play_study(study: Path) -> None:
    scenario = load_scenario("smoke", overrides=[f"clock.days={DAYS}"])
    seats = PlayRoom(study).create(scenario, [SEED, SEED, SEED])
    client = TestClient(create_web_app(play_dir=study))
    one, two, three = (Participant(client, seat.token) for seat in seats)
    # p1 ends every window by hand.
    one.list_best_sellers(2, 1.4)
    while not one.call("end_of_step", {})["state"]["over"]:
        pass
    # p2 fast-forwards: two windows without a trigger, then to the end.
    two.list_best_sellers(4, 1.8)
    body = f"{two.base}/forward"
    first = client.post(body, json={"triggers": {}, "most": 2}, headers={"X-Window": "0"}).json()
    assert first["result"]["ended"] == 2 and first["state"]["store"]["window"] == 2
    rest = client.post(body, json={"triggers": {}, "most": 60}).json()
    assert rest["result"]["over"] and rest["state"]["over"]
    # p3 plays one window and stops: not finished.
    three.list_best_sellers(1, 2.0)
    three.call("end_of_step", {})


def test_finished_playground_runs_are_human_rows_of_a_sweep_report(tmp_path: Path) -> None:
    study = tmp_path / "study"
    play_study(study)
    trace = [json.loads(line) for line in (study / "p2" / "trace.jsonl").read_text().splitlines()]
    assert [e["tool"] for e in trace].count("end_of_step") == 2 * DAYS  # every skipped window
    runner = CliRunner()
    verified = runner.invoke(cli_app, ["verify", str(study / "p1"), str(study / "p2")])
    assert verified.exit_code == 0, verified.output
    assert check_run(study / "p1").ok and check_run(study / "p2").ok
    assert check_run(study / "p1").assurance == "host-attested"  # the playground served it

    sweep_dir = run_sweep(tmp_path, SWEEP)
    result = runner.invoke(cli_app, ["report", str(sweep_dir), "--humans", str(study)])
    assert result.exit_code == 0, result.output

    data = json.loads((sweep_dir / "report" / "report.json").read_text())
    [group] = data["groups"]  # the humans played the sweep's setting: one table
    label = "Human (n=2)"
    assert [row["label"] for row in group["table1"]] == ["rule-based", "idle", label]
    humans = [json.loads((study / p / "metrics.json").read_text()) for p in ("p1", "p2")]
    assets = [m["final_net_assets"] for m in humans]
    assert group["net_assets_by_configuration"][label] == assets
    [row] = [r for r in group["table1"] if r["label"] == label]
    assert row["runs"] == 2
    assert row["final_net_assets_k_mean"] == pytest.approx(np.mean(assets) / 1000, abs=1e-12)
    assert re.fullmatch(
        rf"2 runs · seed {SEED} · replayed · host-attested [0-9a-f]{{8}}", group["pools"][label]
    )
    pairs = {(p["baseline"], p["candidate"]): p for p in group["paired"]}
    idle = json.loads(next((sweep_dir / "runs" / "idle").glob("s*/metrics.json")).read_text())
    difference = pairs[("idle", label)]["mean_difference"]
    assert difference == np.mean(assets) - idle["final_net_assets"]
    assert data["humans"]["runs"] == 2
    assert any(m["run"].endswith("p3") and "not finished" in m["reason"] for m in data["not_done"])
    report = (sweep_dir / "report" / "report.md").read_text()
    assert f"| {label} | 2 runs · seed {SEED} · replayed · host-attested " in report
    assert "Human rows: 2 finished playground runs" in report


def test_humans_is_refused_for_a_missing_folder_or_a_single_run(tmp_path: Path) -> None:
    sweep_dir = run_sweep(tmp_path, SWEEP.replace("[rule-based, idle]", "[idle]"))
    runner = CliRunner()
    missing = runner.invoke(cli_app, ["report", str(sweep_dir), "--humans", str(tmp_path / "no")])
    assert missing.exit_code != 0 and "no such folder" in missing.output
    run_dir = next((sweep_dir / "runs" / "idle").glob("s*"))
    single = runner.invoke(cli_app, ["report", str(run_dir), "--humans", str(tmp_path)])
    assert single.exit_code != 0 and "give a sweep directory" in single.output
