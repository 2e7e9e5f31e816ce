"""Reports, figures, the paper's table and the `report` / `compare` commands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import numpy as np
import pytest
from typer.testing import CliRunner

from merchantbench.metrics import compute_metrics
from merchantbench.record.manifest import AgentRef
from merchantbench.report import PAPER_LABEL, load_paper_table, table1_line, write_report
from record_rows import fen, run_manifest, write_run_record

DAYS = 60
WINDOWS = DAYS * 2
FIGURES = ("net_assets", "rating", "active_listings", "weekly_orders", "monthly_effective_windows")
FINES = {"bad_review": 5.0, "return_refund": 8.0, "stockout": 5.0}
OUTCOMES = ("normal", "normal", "normal", "bad_review", "return_refund", "cancelled", "stockout")


def _timeseries(rng: np.random.Generator) -> list[dict[str, Any]]:
    net = 3000 + np.cumsum(rng.normal(0.5, 3.0, DAYS * 24))
    listings = np.minimum(50, np.arange(DAYS * 24) // 30)
    return [{"t": t, "day": t // 24, "balance": fen(net[t] - 1300), "deposit": fen(1000.0),
             "in_transit": fen(200.0), "receivable": fen(100.0), "net_assets": fen(net[t]),
             "rating": 4.0, "stars": 4, "active_listings": int(listings[t])}
            for t in range(DAYS * 24)]  # fmt: skip


def _orders(rng: np.random.Generator) -> list[dict[str, Any]]:
    rows = []
    for i in range(300):
        placed = int(rng.integers(0, DAYS * 24 - 200))
        outcome = OUTCOMES[i % len(OUTCOMES)]
        rows.append({"order_id": i, "product_id": f"p{i % 12}", "product_type": f"type{i % 4}",
                     "sale_price": fen(60.0), "cost": fen(38.5), "placed_t": placed,
                     "ship_t": placed + 6, "cancel_t": -1, "delivered_t": placed + 40,
                     "resolved_t": placed + 120, "late": i % 11 == 0, "outcome": outcome,
                     "fees": 0, "fines_assessed": fen(FINES.get(outcome, 0.0)),
                     "fines_collected": fen(FINES.get(outcome, 0.0))})  # fmt: skip
    return rows


def _trace(active_until: int) -> list[dict[str, Any]]:
    lines = []
    for window in range(WINDOWS):
        tools = ["search_products", "query_my_orders"] if window < active_until else []
        for tool in [*tools, "end_of_step"]:
            lines.append({"seq": len(lines), "window": window, "t": window * 12, "tool": tool,
                          "args": {}, "ok": True, "error": None, "origin": "env",
                          "forced": False})  # fmt: skip
    return lines


def write_demo_record(path: Path, agent: str = "react", seed: int = 1, shift: float = 0) -> Path:
    """A 60-day run record with a varied history, as the run writer lays it out."""
    rng = np.random.default_rng(seed)
    series = _timeseries(rng)
    final = {"balance": 1500.0 + shift, "deposit": 1000.0, "in_transit": 0.0, "receivable": 0.0}
    run = run_manifest(seed=seed, agent=AgentRef(name=agent, settings={"model": "scripted"}),
                       windows=WINDOWS, ended="completed", state_hash="f00d",
                       final_accounts=final | {"net_assets": 2500.0 + shift})  # fmt: skip
    ratings = 4.0 + 0.3 * np.sin(np.arange(DAYS) / 6)
    tables = {"timeseries": series, "orders": _orders(rng),
              "daily": [{"day": d, "rating": float(r), "stars": 4 if r < 4.2 else 5}
                        for d, r in enumerate(ratings)],
              "listings": [{"product_id": f"p{i}", "product_type": f"type{i % 4}", "listed_t": 0,
                            "delisted_t": -1, "first_price": fen(60.0),
                            "last_price": fen(60.0), "cost_at_listing": fen(38.5)}
                           for i in range(12)]}  # fmt: skip
    return write_run_record(path, run, _trace(active_until=90 - seed), tables)


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return write_demo_record(tmp_path / "run")


def test_write_report_writes_markdown_metrics_and_figures(run_dir):
    report = write_report(run_dir)
    assert report == run_dir / "report.md"
    for name in FIGURES:
        svg = (run_dir / f"{name}.svg").read_text()
        assert svg.startswith("<svg xmlns=") and svg.rstrip().endswith("</svg>")
        ElementTree.fromstring(svg)  # well-formed XML
        assert svg.count("<polyline") + svg.count("<rect") > 3, name  # something drawn
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics == compute_metrics(run_dir)
    text = report.read_text()
    assert PAPER_LABEL in text
    assert "| Baseline | Human (n=3) | 217.61 | 608.06 |" in text
    assert f"| this run | react / scripted | {metrics['final_net_assets'] / 1000:.2f} |" in text
    assert all(f"]({name}.svg)" in text for name in FIGURES)


def test_report_goes_to_out_dir_when_given(run_dir, tmp_path):
    report = write_report(run_dir, tmp_path / "elsewhere")
    assert report == tmp_path / "elsewhere" / "report.md"
    assert not (run_dir / "report.md").exists()


def test_paper_table_is_shipped_with_the_package():
    rows = load_paper_table()
    assert len(rows) == 18
    human = rows[-1]
    assert (human.framework, human.model) == ("Baseline", "Human (n=3)")
    assert human.values["final_net_assets_k"] == 217.61
    assert human.values["fines"] == 5622.0
    assert rows[0].values["avg_store_rating"] is None


def test_table1_line_uses_the_papers_units():
    metrics = {"agent": "react / m", "seed": 3, "final_net_assets": 24480.0, "gmv": 53370.0,
               "net_profit_margin": 0.403, "orders": 1605, "swr": 1.0, "tool_calls": 3236,
               "fines": 5622.0, "avg_store_rating": 3.98, "anomaly_rate": 0.125,
               "avg_active_listings": 49.1}  # fmt: skip
    assert table1_line(metrics) == (
        "react / m seed 3: Net assets (k RMB) 24.48 | GMV (k RMB) 53.37 | Margin (%) 40.3 | "
        "Orders 1605 | SWR (%) 100.0 | Tool calls 3236 | Fines (RMB) 5622 | Rating 3.98 | "
        "Anomaly (%) 12.5 | Active listings 49.1"
    )


def invoke(*args: str):
    from merchantbench.cli import app

    return CliRunner().invoke(app, list(args))


def test_cli_report_prints_the_table1_line(run_dir):
    result = invoke("report", str(run_dir))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == table1_line(compute_metrics(run_dir))
    assert (run_dir / "report.md").is_file()


def test_cli_report_on_a_directory_that_is_not_a_record_exits_2(tmp_path):
    result = invoke("report", str(tmp_path))
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("error: ") and "not a run record" in result.stderr


def test_cli_compare_summarises_and_pairs_by_seed(tmp_path):
    """Only records that verify are compared: real runs, paired by seed; synthetic records (no
    replay can back them) are left out and named."""
    from merchantbench.runs.runner import RunSpec, run_agent
    from merchantbench.scenario import load_scenario

    short = load_scenario("smoke", overrides=["clock.days=2"])
    runs = []
    for agent in ("rule-based", "random"):
        for seed in (1, 2):
            run_agent(RunSpec(agent, short, seed), tmp_path / f"{agent}-{seed}")
            runs.append(tmp_path / f"{agent}-{seed}")
    result = invoke("compare", *map(str, runs), "--out", str(tmp_path / "cmp"))
    assert result.exit_code == 0, result.output
    text = (tmp_path / "cmp" / "compare.md").read_text()
    assert "## Paired by seed:" in text and "| Net assets (k RMB) | 2 |" in text
    demos = [write_demo_record(tmp_path / f"demo-{seed}", "react", seed, 0.0) for seed in (1, 2)]
    refused = invoke("compare", *map(str, demos))
    assert refused.exit_code == 2
    assert f"left out (does not verify): {demos[0]}: cannot verify" in refused.stderr
    assert "none of the records verifies" in refused.stderr


def test_cli_compare_rejects_a_non_record(run_dir, tmp_path):
    result = invoke("compare", str(run_dir), str(tmp_path / "missing"))
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
