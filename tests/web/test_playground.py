"""A participant plays a store in a real browser: opens the private link, searches, lists two
products with prices, reprices one, ends several windows, reads the orders that arrive, pauses,
reloads and continues; the page's net assets agree with the session's at every step, and the
run record is a normal record with origin `human`."""

from __future__ import annotations

import json
import re
from pathlib import Path

from web_support import LiveServer, assert_clean, collect_answers

from merchantbench.money import rmb
from merchantbench.record.manifest import read_manifest
from merchantbench.scenario import load_scenario
from merchantbench.web.app import create_web_app
from merchantbench.web.room import PlayRoom
from merchantbench.web.store import PlayStore

SEED = 7  # smoke, seed 7: the two best sellers get orders within a few windows
WINDOWS = 6


def page_net_assets(page) -> float:
    return float(page.locator("#net-assets").inner_text().replace(",", ""))


def session_net_assets(store: PlayStore) -> float:
    return rmb(store.session.engine.state.ledger.accounts.net_assets)


def check_agree(page, store: PlayStore) -> None:
    page.wait_for_function("document.body.classList.contains('busy') === false")
    assert page_net_assets(page) == session_net_assets(store)
    clock = page.locator("#clock").inner_text()
    assert f"window {store.surface.window + 1} of {store.surface.windows_total}" in clock


def open_store(tmp_path: Path) -> tuple[Path, str]:
    room_dir = tmp_path / "play"
    [seat] = PlayRoom(room_dir).create(load_scenario("smoke"), [SEED])
    return room_dir, seat.token


def search_and_list(page, store: PlayStore, shots: Path) -> list[str]:
    page.keyboard.press("/")  # shortcut: the search box
    page.select_option("#f-search_products-sort", "sales_30d")
    page.fill("#f-search_products-page_size", "5")
    page.click("form[data-tool=search_products] button[type=submit]")
    table = page.locator("#results-find table.data")
    table.wait_for()
    ids = [table.locator("tbody tr").nth(i).locator("td").nth(1).inner_text() for i in range(2)]
    for pid in ids:
        page.locator("#results-find").get_by_label(f"add to the list basket {pid}").check()
    assert page.locator("#basket-count").inner_text() == "2"
    costs = {}
    for pid in ids:
        box = page.locator(f"input[data-basket='{pid}']")
        costs[pid] = float(box.input_value()) / 2
        box.fill(f"{costs[pid] * 1.3:.2f}")
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(shots / "playground-find.png"))
    page.click("#list-basket")
    page.wait_for_selector("#basket-count:text('0')")
    check_agree(page, store)
    rows = store.surface.call("query_my_listings", {})["rows"]
    prices = {r[0]: r[1] for r in rows}
    assert prices == {pid: round(costs[pid] * 1.3, 2) for pid in ids}
    return ids


def reprice_one(page, store: PlayStore, pid: str) -> None:
    page.keyboard.press("3")  # My listings: the section opens with its review
    page.locator("#results-listings h3:text('review my listings')").wait_for()
    price = page.locator("#panel-listings").get_by_label(f"new price for {pid}")
    price.wait_for()
    new = round(float(price.input_value()) * 0.95, 2)
    price.fill(f"{new:.2f}")
    # The section's table (the listings review) comes again with the new price.
    refreshed = page.expect_response(lambda r: r.url.endswith("/call/review_my_listings"))
    adjusted = page.expect_response(lambda r: r.url.endswith("/call/adjust_price"))
    with refreshed, adjusted as answer:
        price.locator("xpath=following-sibling::button").click()
    assert answer.value.json()["result"]["ok"] is True
    rows = store.surface.call("query_my_listings", {})["rows"]
    assert any(r[0] == pid and abs(r[1] - new) < 1e-9 for r in rows), rows
    check_agree(page, store)


def test_a_participant_plays_pauses_reloads_and_continues(tmp_path: Path, browser, shots) -> None:
    room_dir, token = open_store(tmp_path)
    app = create_web_app(play_dir=room_dir)
    with LiveServer(app) as server:
        context = browser.new_context(viewport={"width": 1280, "height": 1250})
        page = context.new_page()
        answers = collect_answers(page)
        page.goto(f"{server.url}/play/{token}")
        store = app.state.play_room.store(token)
        assert page.locator("#help").is_visible()  # the first-visit tour
        page.keyboard.press("Escape")
        check_agree(page, store)
        ids = search_and_list(page, store, shots)
        reprice_one(page, store, ids[0])
        for n in range(WINDOWS):
            page.locator("body").click(position={"x": 5, "y": 400})
            if n % 2:
                page.keyboard.press("e")  # shortcut
            else:
                page.click("#end-window")
            page.wait_for_function(
                f"document.querySelector('#clock').textContent.includes('window {n + 2} of')"
            )
            check_agree(page, store)
        page.keyboard.press("4")  # Orders
        page.click("form[data-tool=query_my_orders] button[type=submit]")
        orders = page.locator("#results-orders table.data tbody tr")
        orders.first.wait_for()
        session_orders = store.surface.call("query_my_orders", {})["total"]
        assert orders.count() == session_orders >= 1
        page.locator("#results-orders table.data tbody tr").first.locator(
            "button.link"
        ).first.click()
        page.wait_for_selector("#detail #detail-title:text('Order')")  # beside the orders
        assert page.locator("#results-orders table.data").is_visible()
        page.keyboard.press("1")
        page.screenshot(path=str(shots / "playground-today.png"), full_page=True)
        before = (store.surface.window, session_net_assets(store))
        page.keyboard.press("p")  # pause
        page.locator("#paused").wait_for()
        page.reload()
        page.locator("#paused").wait_for()  # the page shows the state once it has fetched it
        check_agree(page, store)
        assert (store.surface.window, session_net_assets(store)) == before
        page.click("#resume")
        page.wait_for_selector("#paused", state="hidden")
        page.click("#end-window")
        page.wait_for_function(
            f"document.querySelector('#clock').textContent.includes('window {WINDOWS + 2} of')"
        )
        check_agree(page, store)
        context.close()
        assert_clean(answers, secret=None)
    # A new server on the same directory continues where the participant stopped.
    app2 = create_web_app(play_dir=room_dir)
    with LiveServer(app2) as server:
        page = browser.new_page()
        page.goto(f"{server.url}/play/{token}")
        store2 = app2.state.play_room.store(token)
        assert store2.surface.window == WINDOWS + 1
        check_agree(page, store2)
        page.close()
    assert_human_record(room_dir / "p1")


def assert_human_record(run_dir: Path) -> None:
    meta = read_manifest(run_dir)
    assert meta.agent.name == "human" and meta.agent.settings == {"participant": "p1"}
    entries = [json.loads(line) for line in (run_dir / "trace.jsonl").read_text().splitlines()]
    assert entries and {e["origin"] for e in entries} == {"human"}
    tools = {e["tool"] for e in entries}
    assert {"search_products", "list_product", "adjust_price", "end_of_step"} <= tools
    assert [e["seq"] for e in entries] == list(range(1, len(entries) + 1))
    assert re.fullmatch(r"[0-9a-f]{64}", meta.tool_schema_sha256)
