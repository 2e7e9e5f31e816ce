"""axe-core (Deque's accessibility engine, MPL-2.0) over the playground and the dashboard in
Chromium: no serious or critical violation of its WCAG 2.1 A/AA rules on any screen. axe-core
comes with the `axe-playwright-python` test dependency (its `axe.min.js` is injected into the
page from the installed package: no internet); results are recorded in docs/web.md."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from web_support import LiveServer

from merchantbench.scenario import load_scenario
from merchantbench.web.app import create_web_app
from merchantbench.web.room import PlayRoom

axe_module = pytest.importorskip("axe_playwright_python.sync_playwright")
TAGS = {"runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]}}
BLOCKING = ("serious", "critical")


def blocking(page: Any) -> list[str]:
    """The serious and critical violations on the page, one line each."""
    results = axe_module.Axe().run(page, options=TAGS).response
    return [
        f"{v['id']} ({v['impact']}): {v['help']} — {[n['target'] for n in v['nodes']][:3]}"
        for v in results["violations"]
        if v["impact"] in BLOCKING
    ]


def test_the_console_has_no_serious_axe_violation(tmp_path: Path, browser) -> None:
    room = PlayRoom(tmp_path / "play")
    [seat] = room.create(load_scenario("smoke"), [19])
    store = room.store(seat.token)
    assert store is not None
    found = store.call("search_products", {"query": "", "page_size": 30, "sort": "sales_30d"})
    items = [{"product_id": r[0], "sale_price": round(r[3] * 1.3, 2)} for r in found["rows"]]
    assert store.call("list_product", {"items": items})["ok"]
    for _ in range(8):  # a digest with orders, outcomes and supplier events
        store.end_window()
    room.close()  # saved, and paused as at a server's shutdown
    store.resume()
    with LiveServer(create_web_app(play_dir=tmp_path / "play")) as server:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{server.url}/play/{seat.token}")
        screens = {"tour": blocking(page)}
        page.click("#help-close")
        screens["today"] = blocking(page)
        # Find first, as the first window's advice says (its keyword list still empty).
        page.evaluate("document.querySelector('#find-keywords').replaceChildren()")
        page.keyboard.press("2")
        screens["find, no keywords yet"] = blocking(page)
        page.keyboard.press("1")
        page.click("form[data-tool=get_daily_report] button[type=submit]")
        page.locator("#results-today h3").wait_for()
        screens["daily report"] = blocking(page)
        for key, name in (("2", "find"), ("3", "listings"), ("4", "orders"), ("5", "supply"),
                          ("6", "money"), ("7", "notes"), ("8", "rules")):  # fmt: skip
            page.locator("body").click(position={"x": 5, "y": 5})
            page.keyboard.press(key)
            page.wait_for_function("!document.body.classList.contains('busy')")
            page.wait_for_timeout(100)
            screens[name] = blocking(page)
        page.keyboard.press("2")
        page.locator("#results-find tr[data-product]").first.wait_for()
        page.locator("#results-find tr[data-product] button.link").first.click()
        page.locator("#detail:not([hidden])").wait_for()
        screens["product detail"] = blocking(page)
        page.keyboard.press("Escape")
        page.keyboard.press("1")
        if page.locator("#digest .group-act").count():
            page.keyboard.press("b")
            page.locator("#preview-go").wait_for()
            screens["batch preview"] = blocking(page)
            page.keyboard.press("Escape")
        page.keyboard.press("p")
        page.locator("#paused").wait_for()
        screens["paused"] = blocking(page)
        page.goto(f"{server.url}/study/{room.operator_token()}")
        screens["study view"] = blocking(page)
        page.close()
    assert {name: found for name, found in screens.items() if found} == {}


def test_axe_finds_what_it_looks_for(browser) -> None:
    page = browser.new_page()
    page.set_content(
        "<html><head><title>x</title></head><body><main><h1>x</h1>"
        "<p style='color:#bbb;background:#fff'>faint text</p><button></button></main></body></html>"
    )
    found = " | ".join(blocking(page))
    assert "color-contrast (serious)" in found and "button-name (critical)" in found, found
    page.close()


def test_the_dashboard_index_has_no_serious_axe_violation(tmp_path: Path, browser) -> None:
    (tmp_path / "runs").mkdir()
    with LiveServer(create_web_app(runs_root=tmp_path / "runs")) as server:
        page = browser.new_page()
        page.goto(server.url + "/")
        assert blocking(page) == []
        page.close()
