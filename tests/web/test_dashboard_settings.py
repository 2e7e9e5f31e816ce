"""The dashboard in Chromium on a folder of sweeps of different horizons and scenarios (and a
copy of one sweep): one leaderboard per setting, none pooling two, each row saying what it pools
and each board its provenance; counts print as integers; the runs table names scenario and days."""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from web_support import LiveServer

from merchantbench.web.app import create_web_app
from sweep_fixtures import FOLDER_SETTINGS, sweep_folder


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # In a thread: Playwright's sync API keeps an event loop running in this one.
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(sweep_folder, tmp_path_factory.mktemp("settings")).result()


def _net_assets(run_dir: Path) -> float:
    return json.loads((run_dir / "metrics.json").read_text())["final_net_assets"]


def test_no_leaderboard_pools_two_settings(folder: Path, browser, shots) -> None:
    with LiveServer(create_web_app(runs_root=folder)) as server:
        page = browser.new_page(viewport={"width": 1600, "height": 900})
        page.goto(server.url + "/")
        boards = page.locator("#leaderboard table.leaderboard")
        assert boards.count() == 3
        titles = page.locator("#leaderboard [data-setting-label]").all_inner_texts()
        assert sorted(titles) == sorted(FOLDER_SETTINGS)
        assert "3 settings" in page.locator("#settings-note").inner_text()
        for i in range(3):
            board = boards.nth(i)
            title = board.locator("[data-setting-label]").inner_text()
            scenario, days = re.match(r"(\w+) · (\d+) days", title).groups()  # type: ignore[union-attr]
            configs = board.locator("tbody tr").evaluate_all(
                "rows => rows.map(r => r.dataset.config)"
            )
            expected = ["idle", "rule-based"] if title == "smoke · 2 days" else [
                f"idle@{scenario}", f"rule-based@{scenario}"]  # fmt: skip
            assert sorted(configs) == expected
            for config in configs:
                row = board.locator(f"tr[data-config='{config}']")
                # Two runs each: the copy of `short` counted once, not four runs.
                assert row.locator("[data-runs]").inner_text() == "2"
                pools = row.locator("[data-pools]").inner_text()
                copies = " (2 duplicate copies left out)" if title == "smoke · 2 days" else ""
                assert re.fullmatch(
                    rf"2 runs{re.escape(copies)} · 2 seeds · replayed · "
                    r"self-attested [0-9a-f]{8}",
                    pools,
                )  # no seed value shown
                orders = row.locator("td[data-metric=orders]").inner_text()
                assert re.fullmatch(r"\d+|\d+\.\d+", orders) and not orders.endswith(".000")
                assert row.locator("[data-cost]").inner_text() == "—"  # no model called
                sweep = "short" if title == "smoke · 2 days" else "longer"
                runs = [folder / sweep / "runs" / config / f"s{s}" for s in (1, 2)]
                mean = sum(map(_net_assets, runs)) / 2
                shown = row.locator("td[data-metric=final_net_assets]").inner_text()
                assert shown == f"{mean:,.2f}"
            provenance = page.locator("[data-provenance]").nth(i).inner_text()
            assert f"{days} days" in provenance and "runs counted\n4" in provenance
            assert "4 of 4" in provenance and "not comparable with the paper" in provenance
        # The runs table names the real scenario and its days.
        cell = page.locator("tr[data-path='longer/runs/idle@other/s1'] td").nth(1).inner_text()
        assert cell == "other · 2 days"
        page.screenshot(path=str(shots / "dashboard-settings.png"), full_page=True)
        page.close()
