"""Every table reads the records, never an index or a verdict file inside a record: for a test
sweep with one edited record (net assets raised by 1,000), the CLI leaderboard, the sweep report
(of the sweep and of a folder of sweeps), the static site and the dashboard show the same number
for every configuration, and each leaves the edited record out and names it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from merchantbench.cli import app
from merchantbench.site import build_site
from merchantbench.sweeps.report import write_sweep_report
from sweep_fixtures import SHORT_SWEEP


@pytest.fixture(scope="module")
def edited(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`folder/short`: the short sweep (idle, rule-based × seeds 1, 2), `idle/s1` edited, and
    its index raised by 5,000 on every row (which no table may read)."""
    from merchantbench.sweeps.driver import run_sweep
    from merchantbench.sweeps.execute import LocalExecutor
    from merchantbench.sweeps.spec import load_sweep_file

    base = tmp_path_factory.mktemp("tables")
    (base / "short.yaml").write_text(SHORT_SWEEP)
    sweep = base / "folder" / "short"
    outcome = run_sweep(load_sweep_file(base / "short.yaml"), base, sweep, LocalExecutor(1))
    assert not outcome.failed and not outcome.not_started
    metrics_path = sweep / "runs" / "idle" / "s1" / "metrics.json"
    metrics = json.loads(metrics_path.read_text())
    metrics["final_net_assets"] += 1000
    metrics_path.write_text(json.dumps(metrics))
    index = pq.read_table(sweep / "index.parquet").to_pylist()
    for row in index:
        if row.get("final_net_assets") is not None:
            row["final_net_assets"] += 5000
    pq.write_table(pa.Table.from_pylist(index), sweep / "index.parquet")
    return sweep


def _assets(run_dir: Path) -> float:
    return float(json.loads((run_dir / "metrics.json").read_text())["final_net_assets"])


def _expected(sweep: Path) -> dict[str, float]:
    """Each configuration's mean net assets over its records that were not edited."""
    runs = sweep / "runs"
    return {"idle": _assets(runs / "idle" / "s2"),
            "rule-based": (_assets(runs / "rule-based" / "s1")
                           + _assets(runs / "rule-based" / "s2")) / 2}  # fmt: skip


def _written(value: float) -> tuple[str, ...]:
    """How a table may write a number of RMB (each table has its own format)."""
    forms = (f"{value:,.2f}", f"{value:,.1f}")
    return (*forms, f"{int(value):,}") if value.is_integer() else forms


def test_every_table_shows_the_same_numbers_and_names_the_edited_record(edited, tmp_path):
    expected = _expected(edited)
    shown = {label: _written(value) for label, value in expected.items()}
    named = "runs/idle/s1"
    difference = "differs: metrics.json final_net_assets"

    board = CliRunner().invoke(app, ["leaderboard", str(edited)], terminal_width=250)
    assert board.exit_code == 0, board.output
    text = " ".join(board.stdout.split())
    assert f"left out (does not verify): {edited / named}: {difference}" in text
    for label, value in expected.items():
        row = next(line for line in board.stdout.splitlines() if f"│ {label} " in line)
        cells = [cell.strip() for cell in row.strip("│").split("│")]
        assert float(cells[5].replace(",", "")) == pytest.approx(value), (label, row)

    for root in (edited, edited.parent):  # the sweep, and a folder of sweeps (issue item 6)
        out = tmp_path / f"report-{root.name}"
        write_sweep_report(root, out)
        data = json.loads((out / "report.json").read_text())
        [group] = data["groups"]
        by_config = group["net_assets_by_configuration"]
        means = {label: sum(v) / len(v) for label, v in by_config.items()}
        assert means == pytest.approx(expected)
        [left] = [m for m in data["not_done"] if m["status"] == "left out"]
        assert named in left["reason"] and difference in left["reason"]
        markdown = (out / "report.md").read_text()
        assert named in markdown and "## smoke · 2 days" in markdown

    site = tmp_path / "site"
    build_site([edited], site)
    index = (site / "index.html").read_text()
    assert "left out of the ranking: differs: metrics.json final_net_assets" in index
    for label, forms in shown.items():
        entry = re.search(rf"data-entry=.{re.escape(label)}.*?</tr>", index, re.S)
        assert entry is not None and any(form in entry.group(0) for form in forms), label

    from fastapi.testclient import TestClient

    from merchantbench.web.app import create_web_app

    page = TestClient(create_web_app(runs_root=edited)).get("/").text
    assert f"{named}: {difference}" in " ".join(page.split())
    for label, forms in shown.items():
        row = re.search(rf'<tr data-config="{re.escape(label)}">.*?</tr>', page, re.S)
        assert row is not None and any(form in row.group(0) for form in forms), label
