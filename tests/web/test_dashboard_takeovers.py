"""The run page's takeover curves in Chromium: a run with a counterfactual analysis shows its
curves (one line per policy) and the table of its `counterfactual.json`; a run without one, or
with a damaged one, shows no such section and the page still loads."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from web_support import LiveServer

from merchantbench.counterfactual.analysis import analyse
from merchantbench.counterfactual.execute import InProcess
from merchantbench.counterfactual.output import write_run
from merchantbench.counterfactual.parent import Parent
from merchantbench.counterfactual.takeover import Policy
from merchantbench.runs.runner import RunSpec, run_agent
from merchantbench.scenario import load_scenario
from merchantbench.web.app import create_web_app

POLICIES = ("idle", "rule-based")


def _record(root: Path) -> None:
    scenario = load_scenario("smoke", overrides=["clock.days=6"])
    for name, seed in (("analysed", 3), ("plain", 4), ("damaged", 5)):
        run_agent(RunSpec("rule-based", scenario, seed), root / "runs" / name)
    parent = Parent.read(root / "runs" / "analysed")
    analysis = analyse([parent], [Policy(p) for p in POLICIES], 2, InProcess())[0]
    write_run(analysis)
    broken = json.loads((root / "runs" / "analysed" / "counterfactual.json").read_text())
    broken["curves"][0]["points"][1]["final_net_assets"] = "lots"
    (root / "runs" / "damaged" / "counterfactual.json").write_text(json.dumps(broken))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("takeovers")
    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API keeps a loop in this thread
        pool.submit(_record, root).result()
    return root


def test_the_run_page_shows_the_takeover_curves(runs: Path, browser, shots) -> None:
    data = json.loads((runs / "runs" / "analysed" / "counterfactual.json").read_text())
    with LiveServer(create_web_app(runs_root=runs)) as server:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(server.url + "/runs/view?path=runs/analysed")
        section = page.locator("#takeovers")
        section.wait_for()
        assert section.locator("svg polyline").count() == len(POLICIES)
        assert section.locator("svg").get_attribute("viewBox") is not None
        labels = section.locator("svg text").all_text_contents()
        assert set(POLICIES) <= set(labels) and "continuing" in labels
        days = [p["day"] for p in data["curves"][0]["points"]]
        assert days == [0, 2, 4]
        for day_index, day in enumerate(days):
            cells = section.locator(f"tr[data-day='{day}'] td").all_inner_texts()
            expected = [
                f"{c['points'][day_index]['final_net_assets']:,.2f}" for c in data["curves"]
            ]
            assert cells == [str(day), *expected]
        for curve in data["curves"]:
            onset = curve["onset_day"]
            cell = section.locator(f"tfoot td[data-policy='{curve['label']}']").inner_text()
            assert cell == ("none" if onset is None else f"day {onset}")
        assert f"seed {data['seed']}" not in section.inner_text()  # the seed is never shown
        assert f"{data['continuing']:,.2f}" in section.inner_text()
        section.screenshot(path=str(shots / "dashboard-takeovers.png"))
        for name in ("plain", "damaged"):
            page.goto(server.url + f"/runs/view?path=runs/{name}")
            page.locator("#metrics").wait_for()
            assert page.locator("#takeovers").count() == 0
        page.close()


def test_a_policy_label_is_shown_as_text(runs: Path, tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    run = runs / "runs" / "analysed"
    data = json.loads((run / "counterfactual.json").read_text())
    data["curves"][0]["label"] = "<script>alert(1)</script>"
    data["agent"] = "<img src=x onerror=alert(2)>"
    root = tmp_path / "root"
    (root / "runs").mkdir(parents=True)
    copy = root / "runs" / "x"
    copy.mkdir()
    for item in run.iterdir():
        if item.is_file():
            (copy / item.name).write_bytes(item.read_bytes())
    (copy / "counterfactual.json").write_text(json.dumps(data))
    page = TestClient(create_web_app(runs_root=root)).get("/runs/view", params={"path": "runs/x"})
    assert page.status_code == 200 and 'id="takeovers"' in page.text
    assert "<script>alert" not in page.text and "<img src=x" not in page.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
