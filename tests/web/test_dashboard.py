"""The dashboard in Chromium on a small sweep's records: its numbers are those of each run's
metrics.json (and their means on the leaderboard); a running run shows its progress."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from web_support import LiveServer

from merchantbench.metrics.diagnosis import DETECTORS
from merchantbench.metrics.table1 import TABLE1_KEYS
from merchantbench.runs.lifecycle import RunLifecycle
from merchantbench.runs.runner import RunSpec, run_agent
from merchantbench.scenario import load_scenario
from merchantbench.web.app import create_web_app

CONFIGS = ("idle", "rule-based")
SEEDS = (3, 4)
MONEY = ("final_net_assets", "gmv", "fines")


def shown(key: str, value: float | int | None) -> str:
    """The dashboard's rendering of a metric (the template's filters)."""
    if value is None:
        return "—"
    if key in MONEY:
        return f"{value:,.2f}"
    return f"{value:,}" if isinstance(value, int) else f"{value:,.3f}"


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sweep")
    scenario = load_scenario("smoke", overrides=["clock.days=3"])
    # In a thread: Playwright's sync API keeps an event loop running in this one.
    with ThreadPoolExecutor(1) as pool:
        for agent in CONFIGS:
            for seed in SEEDS:
                spec = RunSpec(agent, scenario, seed)
                pool.submit(run_agent, spec, root / "runs" / agent / f"s{seed}").result()
    # A run still going: its record has started, two windows are checkpointed.
    life = RunLifecycle.open(RunSpec("idle", scenario, 5), root / "runs" / "live" / "s5")
    for _ in range(2):
        life.surface.call("end_of_step", {})
        life.checkpoint()
    return root


def metrics_of(run_dir: Path) -> dict:
    return json.loads((run_dir / "metrics.json").read_text())


def test_the_dashboard_shows_the_records_numbers(sweep: Path, browser, shots) -> None:
    with LiveServer(create_web_app(runs_root=sweep)) as server:
        page = browser.new_page(viewport={"width": 1400, "height": 800})
        page.goto(server.url + "/")
        for agent in CONFIGS:
            for seed in SEEDS:
                row = page.locator(f"tr[data-path='runs/{agent}/s{seed}']")
                metrics = metrics_of(sweep / "runs" / agent / f"s{seed}")
                for key in TABLE1_KEYS:
                    cell = row.locator(f"td[data-metric={key}]").inner_text()
                    assert cell == shown(key, metrics[key]), (agent, seed, key)
            board = page.locator(f"#leaderboard tr[data-config='{agent}']")
            for key in TABLE1_KEYS:
                values = [metrics_of(sweep / "runs" / agent / f"s{s}")[key] for s in SEEDS]
                mean = sum(values) / len(values)
                if key in ("orders", "tool_calls") and mean.is_integer():
                    mean = int(mean)  # counts print as integers: "452", not "452.000"
                assert board.locator(f"td[data-metric={key}]").inner_text() == shown(key, mean)
        live = page.locator("tr[data-path='runs/live/s5']")
        assert live.locator("[data-status]").inner_text() == "running"
        assert live.locator("[data-progress]").inner_text() == "2 / 6"
        page.screenshot(path=str(shots / "dashboard.png"), full_page=True)
        check_run_page(page, sweep)
        page.close()


def check_run_page(page, sweep: Path) -> None:
    page.click("a:text('runs/rule-based/s3')")
    page.locator("#metrics").wait_for()
    run_dir = sweep / "runs" / "rule-based" / "s3"
    metrics = metrics_of(run_dir)
    for key in TABLE1_KEYS:
        assert page.locator(f"#metrics td[data-metric={key}]").inner_text() == shown(
            key, metrics[key]
        )
    assert page.locator("#chart-net polyline").count() == 1
    for name in DETECTORS:  # the failure-mode detectors, as metrics.json has them
        row = page.locator(f"#diagnosis tr[data-detector='{name.replace('_', ' ')}']")
        flagged = metrics["diagnosis"][name]["flagged"]
        assert row.locator("td").nth(1).inner_text() == ("yes" if flagged else "no")
    trace = [json.loads(line) for line in (run_dir / "trace.jsonl").read_text().splitlines()]
    for window in (1, 2):
        expected = [e for e in trace if e["window"] == window - 1]
        page.fill("#window-pick", str(window))
        page.dispatch_event("#window-pick", "change")
        page.wait_for_selector(f"#trace h3:text('Window {window}: {len(expected)} calls')")
        tools = page.locator("#calls > li summary strong").all_inner_texts()
        assert tools == [e["tool"] for e in expected]


def test_the_dashboard_refuses_paths_outside_its_root(sweep: Path) -> None:
    from fastapi.testclient import TestClient

    client = TestClient(create_web_app(runs_root=sweep / "runs" / "idle"))
    assert client.get("/runs/view", params={"path": "../rule-based/s3"}).status_code == 404
    assert client.get("/runs/view", params={"path": "s3"}).status_code == 200
    assert client.get("/runs/trace", params={"path": "/etc", "window": 0}).status_code == 404
    assert "seed" not in client.get("/runs/progress").text
