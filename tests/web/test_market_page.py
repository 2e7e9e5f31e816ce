"""The dashboard's market pages in Chromium: a market's merchants side by side with the numbers
of its arena report, one line per merchant in each chart, its contested products with each
merchant's orders from its record, every merchant linking to its run page; a running market's
progress followed live until the page shows it finished; no answer carries the seed or hidden
state; no serious accessibility violation."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from web_support import LiveServer, assert_clean, collect_answers

from merchantbench.report.arena import arena_analysis, contested_products, listing_spells
from merchantbench.runs.arena import ArenaSpec, Entrant, run_arena
from merchantbench.runs.lifecycle import CheckpointPolicy, RunLifecycle
from merchantbench.scenario import load_scenario
from merchantbench.web.app import create_web_app

MERCHANTS = ("expert", "rule-based", "random")
SEED = 3_141_592_653  # long enough that finding its digits in an answer means a leak
SMALL = ["clock.days=6", "market.seller_substitution=4"]


def _spec(seed: int, days: int = 6) -> ArenaSpec:
    sc = load_scenario("small", overrides=[f"clock.days={days}", SMALL[1]])
    return ArenaSpec(sc, seed, tuple(Entrant(m, m) for m in MERCHANTS))


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("markets")
    # In a thread: Playwright's sync API keeps an event loop running in this one.
    with ThreadPoolExecutor(1) as pool:
        pool.submit(run_arena, _spec(SEED), base / "arenas" / "market").result()
    return base


def _share(value: float) -> str:
    return f"{value * 100:.1f} %"


def test_a_market_shows_its_merchants_side_by_side(root: Path, browser, shots: Path) -> None:
    arena_dir = root / "arenas" / "market"
    analysis = arena_analysis(arena_dir)
    with LiveServer(create_web_app(runs_root=root)) as server:
        page = browser.new_page(viewport={"width": 1500, "height": 1000})
        answers = collect_answers(page)
        page.goto(server.url + "/")
        row = page.locator("tr[data-market='arenas/market']")
        assert row.locator("[data-status]").inner_text() == "completed"
        assert row.locator("[data-progress]").inner_text() == "12 / 12"
        for merchant in MERCHANTS:  # each merchant's record is a run of the list too
            assert page.locator(f"tr[data-path='arenas/market/merchants/{merchant}']").count()
        row.locator("a").click()
        page.wait_for_selector("#merchants")
        assert page.locator("h1").inner_text() == "Market arenas/market"
        for merchant in MERCHANTS:
            figures = analysis["merchants"][merchant]
            cells = page.locator(f"#merchants tr[data-merchant='{merchant}']")
            shown = {key: cells.locator(f"[data-key={key}]").inner_text()
                     for key in ("final_net_assets", "orders", "order_share", "gmv_share",
                                 "products_listed", "contested_products")}  # fmt: skip
            assert shown == {
                "final_net_assets": f"{figures['final_net_assets']:,.2f}",
                "orders": f"{figures['orders']:,}",
                "order_share": _share(figures["order_share"]),
                "gmv_share": _share(figures["gmv_share"]),
                "products_listed": f"{figures['products_listed']:,}",
                "contested_products": f"{figures['contested_products']:,}",
            }, merchant
        assert sum(analysis["merchants"][m]["orders"] for m in MERCHANTS) > 0
        for chart in ("chart-net", "chart-rating", "chart-orders"):
            assert page.locator(f"#{chart} polyline").count() == len(MERCHANTS)
        contested = contested_products(listing_spells(arena_dir))
        assert contested and len(contested) == analysis["contested_products"]
        rows = page.locator("#contested tbody tr")
        assert rows.count() == min(len(contested), 30)
        for i in range(rows.count()):
            product = rows.nth(i).get_attribute("data-product")
            assert product in contested
            assert rows.nth(i).locator("td").first.inner_text() not in ("", "None")
            for merchant in MERCHANTS:
                orders = (
                    pq.read_table(
                        arena_dir / "merchants" / merchant / "orders.parquet",
                        columns=["product_id"],
                    )
                    .column(0)
                    .to_pylist()
                )
                cell = rows.nth(i).locator(f"td[data-merchant='{merchant}']").inner_text()
                count = orders.count(product)
                assert cell == "—" or cell.startswith(f"{count} "), (product, merchant, cell)
        page.screenshot(path=str(shots / "dashboard-market.png"), full_page=True)
        page.click("#merchants a:text('rule-based')")
        page.wait_for_selector("#metrics")
        assert page.locator("h1").inner_text() == "Run arenas/market/merchants/rule-based"
        page.wait_for_function(
            "document.querySelector('#window-title')?.textContent.startsWith('Window 1:')"
        )
        page.keyboard.press("ArrowRight")
        page.wait_for_function(
            "document.querySelector('#window-title')?.textContent.startsWith('Window 2:')"
        )
        page.goto(server.url + "/markets/view?path=../..")
        page.goto(server.url + "/markets/progress?path=arenas")
        page.close()
    assert any("/markets/view" in url for url, _ in answers)
    # The list's leaderboard says how many seeds a row pools ("1 seed"), never which: the
    # word is allowed there, the seed's digits nowhere; every other answer names no hidden
    # field or word at all.
    index = [(url, body) for url, body in answers if url == server.url + "/"]
    assert index and all(str(SEED) not in body for _, body in index)
    assert_clean([a for a in answers if a not in index], secret=SEED)


def test_a_running_market_is_followed_until_it_finishes(tmp_path: Path, browser) -> None:
    root = tmp_path / "runs"
    life = RunLifecycle.open_market(
        _spec(5, days=3), root / "live", checkpoints=CheckpointPolicy(seconds=0)
    )

    async def windows(n: int) -> None:
        for _ in range(n):
            await life.play_window()

    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, windows(2)).result()
        with LiveServer(create_web_app(runs_root=root)) as server:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(server.url + "/")
            row = page.locator("tr[data-market='live']")
            assert row.locator("[data-status]").inner_text() == "running"
            assert row.locator("[data-progress]").inner_text() == "2 / 6"
            page.goto(server.url + "/markets/view?path=live")
            assert page.locator("#running-note").is_visible()
            assert page.locator("[data-key=order_share]").first.inner_text() == "—"
            pool.submit(
                asyncio.run, life.play()
            ).result()  # the rest of the market, while the page polls
            page.wait_for_function(
                "document.querySelector('[data-status]').textContent === 'completed'",
                timeout=60_000,
            )
            page.wait_for_selector("#merchants [data-key=order_share]:not(:text('—'))")
            assert not page.locator("#running-note").count()
            shares = [page.locator(f"tr[data-merchant='{m}'] [data-key=order_share]").inner_text()
                      for m in MERCHANTS]  # fmt: skip
            assert all(share.endswith(" %") for share in shares)
            page.goto(server.url + "/")
            assert row.locator("[data-status]").inner_text() == "completed"
            page.close()


def test_a_damaged_market_is_left_out_and_refused(tmp_path: Path, browser) -> None:
    root = tmp_path / "runs"
    (root / "broken").mkdir(parents=True)
    (root / "broken" / "arena.json").write_text('{"format": 1, "scen')
    with LiveServer(create_web_app(runs_root=root)) as server:
        page = browser.new_page()
        page.goto(server.url + "/")
        assert not page.locator("#markets").count()
        answer = page.goto(server.url + "/markets/view?path=broken")
        assert answer is not None and answer.status == 404
        assert json.loads(page.locator("body").inner_text())["ok"] is False
        page.close()


def test_the_market_page_has_no_serious_axe_violation(root: Path, browser) -> None:
    from test_axe import blocking

    with LiveServer(create_web_app(runs_root=root)) as server:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(server.url + "/")
        assert blocking(page) == []
        page.goto(server.url + "/markets/view?path=arenas/market")
        page.wait_for_selector("#chart-net polyline")
        assert blocking(page) == []
        page.close()
