"""The console cannot be misused and works in batches, in Chromium: the pause screen stops every
click (header buttons, tabs, digest buttons) and the server refuses a paused store's calls; the
digest after a 5-window fast-forward lists every event of the 5 windows; one key replaces N
listings whose supplier delisted them; a reload keeps the basket, the query, the section and an
unsaved note; a write from a stale tab is refused; keys act after a mouse tick on a checkbox; a
price below cost asks first."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from web_support import LiveServer

from merchantbench.scenario import load_scenario
from merchantbench.web.app import create_web_app
from merchantbench.web.digest import COMPARISONS
from merchantbench.web.room import PlayRoom
from merchantbench.web.store import PlayStore


def open_page(browser: Any, server: LiveServer, token: str) -> Any:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.errors = errors
    page.goto(f"{server.url}/play/{token}")
    page.click("#help-close")
    return page


def listed_store(room: PlayRoom, seed: int, n: int) -> tuple[str, PlayStore]:
    """A smoke store with its `n` best sellers listed at 1.3 × cost."""
    [seat] = room.create(load_scenario("smoke"), [seed])
    store = room.store(seat.token)
    assert store is not None
    found = store.call("search_products", {"query": "", "page_size": n, "sort": "sales_30d"})
    items = [{"product_id": r[0], "sale_price": round(r[3] * 1.3, 2)} for r in found["rows"]]
    assert store.call("list_product", {"items": items})["ok"]
    return seat.token, store


def wait_window(page: Any, n: int) -> None:
    """Until the header's clock shows window `n` (1-based)."""
    page.wait_for_function(
        f"document.querySelector('#clock').textContent.includes('window {n} of')"
    )


def trace_tools(run_dir: Path, store: PlayStore) -> list[str]:
    """The tools of the store's trace so far (handed to the file first)."""
    store.life.flush()
    return [json.loads(line)["tool"] for line in (run_dir / "trace.jsonl").open()]


def test_the_pause_screen_stops_every_click_and_the_server_refuses(tmp_path: Path, browser) -> None:
    room = PlayRoom(tmp_path / "play")
    token, _ = listed_store(room, 19, 20)
    app = create_web_app(play_dir=tmp_path / "play")
    with LiveServer(app) as server:
        page = open_page(browser, server, token)
        store: PlayStore = app.state.play_room.store(token)
        calls = len(trace_tools(tmp_path / "play" / "p1", store))
        page.click("#pause")
        page.locator("#paused").wait_for()
        for target in ("#end-window", "#forward", "#tab-find", "#tab-listings", "#forward-go"):
            page.click(target)
        page.wait_for_timeout(300)
        assert store.surface.window == 0 and store.paused
        assert page.locator("#panel-today").is_visible()  # the tab click did not switch
        assert len(trace_tools(tmp_path / "play" / "p1", store)) == calls  # no call was made
        assert "paused" in page.locator("#status").inner_text()
        # Another tab (or a script) calling the server: refused while paused.
        answer = page.evaluate(
            "fetch(`${BASE}/call/end_of_step`, {method: 'POST', headers: {'Content-Type': "
            "'application/json'}, body: '{}'}).then(r => r.json())"
        )
        assert answer["result"]["error"]["code"] == "paused" and store.surface.window == 0
        page.click("#resume")
        page.wait_for_selector("#paused", state="hidden")
        page.click("#end-window")
        wait_window(page, 2)
        assert not page.errors
        page.close()


def event_keys(lines: list[dict[str, Any]]) -> Counter[tuple[Any, ...]]:
    """Events (not the comparisons with the window before) as comparable keys."""
    return Counter(
        (line["window"], line["kind"], line["product_id"], line["order_id"], line["at"])
        for line in lines
        if line["kind"] not in COMPARISONS and line["kind"] != "stars"
    )


def test_the_digest_after_a_fast_forward_lists_every_event_of_every_window(
    tmp_path: Path, browser
) -> None:
    room = PlayRoom(tmp_path / "play")
    token, store = listed_store(room, 19, 30)
    # The same store played window by window: each window's digest events, as the oracle.
    twin_room = PlayRoom(tmp_path / "twin")
    _, twin = listed_store(twin_room, 19, 30)
    expected: Counter[tuple[Any, ...]] = Counter()
    for _ in range(5):
        twin.end_window()
        expected += event_keys(twin.state()["digest"]["lines"])
    assert len({key[0] for key in expected}) >= 3  # events in several windows
    room.close()
    store.resume()
    app = create_web_app(play_dir=tmp_path / "play")
    with LiveServer(app) as server:
        page = open_page(browser, server, token)
        for box in ("#ff-adverse", "#ff-supplier", "#ff-supplier-late", "#ff-supplier-cost",
                    "#ff-cash-on", "#ff-rating-on"):  # fmt: skip
            page.uncheck(box)
        page.fill("#ff-most", "5")
        page.keyboard.press("Escape")
        page.keyboard.press("f")
        page.wait_for_selector("#status:text('fast-forward: ended 5 windows')")
        live: PlayStore = app.state.play_room.store(token)
        digest = live.state()["digest"]
        assert digest["windows"] == 5
        assert event_keys(digest["lines"]) == expected
        on_screen = page.evaluate(
            "() => [...document.querySelectorAll('#digest li.line')].map(li => "
            "[Number(li.dataset.window), li.dataset.kind, li.dataset.product || null])"
        )
        shown = Counter((w, k, p) for w, k, p in on_screen if k not in COMPARISONS and k != "stars")
        assert shown == Counter((k[0], k[1], k[2]) for k in expected.elements())
        assert "(5 windows, fast-forwarded)" in page.locator("#digest .since").inner_text()
        # A reload shows the same digest; the next End window shows the next window only.
        page.reload()
        page.locator("#digest li.line").first.wait_for()
        assert page.locator("#digest li.line").count() == len(on_screen)
        page.locator("body").click(position={"x": 5, "y": 5})
        page.keyboard.press("e")
        wait_window(page, 7)
        assert {line["window"] for line in live.state()["digest"]["lines"]} <= {6}
        assert not page.errors
        page.close()


def test_one_key_replaces_every_listing_its_supplier_delisted(
    tmp_path: Path, browser, shots
) -> None:
    room = PlayRoom(tmp_path / "play")
    token, store = listed_store(room, 19, 50)
    for _ in range(26):  # window 27 opens with two supplier delistings (and a stockout)
        store.end_window()
    room.close()
    store.resume()
    app = create_web_app(play_dir=tmp_path / "play")
    with LiveServer(app) as server:
        page = open_page(browser, server, token)
        live: PlayStore = app.state.play_room.store(token)
        group = page.locator("#digest .group-act[data-group=replace]")
        text = page.locator("#digest .group[data-group=replace]").inner_text()
        gone = page.evaluate(
            "() => [...new Set([...document.querySelectorAll('#digest li.line')].filter(li => "
            "li.querySelector('.act-replace') && ['supplier_delisted', 'stockout']"
            ".includes(li.dataset.kind)).map(li => li.dataset.product))]"
        )
        assert len(gone) >= 2 and text.startswith(f"{len(gone)} listings lost their supplier")
        before = trace_tools(tmp_path / "play" / "p1", live)
        group.click()  # the preview: a search per product type, nothing changed yet
        page.locator("#preview-go").wait_for()
        rows = page.locator("#preview tbody tr")
        assert rows.count() == len(gone)
        page.evaluate("window.scrollTo(0, 0)")
        page.screenshot(path=str(shots / "playground-batch.png"))
        picks = [rows.nth(i).locator("td").nth(1).inner_text() for i in range(len(gone))]
        listed_now = {
            str(live.session.market.product_ids[p]) for p in live.session.engine.state.listings
        }
        assert set(gone) <= listed_now
        writes_before = [t for t in before if t in ("delist_product", "list_product")]
        page.keyboard.press("Enter")  # one key
        page.wait_for_selector("#status:text('replaced')")
        after = trace_tools(tmp_path / "play" / "p1", live)
        new = after[len(before) :]
        assert new.count("delist_product") == 1 and new.count("list_product") <= 1
        assert (
            len([t for t in after if t in ("delist_product", "list_product")])
            <= len(writes_before) + 2
        )
        ids = live.session.market.product_ids
        now = {str(ids[p]) for p in live.session.engine.state.listings}
        assert not set(gone) & now
        instead = [p.rsplit("(", 1)[1].rstrip(")") for p in picks if "nothing found" not in p]
        assert instead and set(instead) <= now
        assert not page.errors
        page.close()


def test_a_reload_keeps_the_basket_query_section_and_note(tmp_path: Path, browser) -> None:
    [seat] = PlayRoom(tmp_path / "play").create(load_scenario("smoke"), [7])
    app = create_web_app(play_dir=tmp_path / "play")
    with LiveServer(app) as server:
        page = open_page(browser, server, seat.token)
        store: PlayStore = app.state.play_room.store(seat.token)
        page.keyboard.press("2")
        rows = page.locator("#results-find tr[data-product]")
        rows.first.wait_for()
        ids = [rows.nth(i).get_attribute("data-product") for i in range(2)]
        for pid in ids:
            page.click(f"#results-find input[data-product='{pid}']")
        page.fill(f"input[data-basket='{ids[0]}']", "77.70")
        page.fill("#f-search_products-query", "lamp")
        page.keyboard.press("Escape")
        page.keyboard.press("7")
        page.fill("#notes-text", "try the lamps tomorrow")
        page.keyboard.press("Escape")
        page.keyboard.press("2")
        calls = len(trace_tools(tmp_path / "play" / "p1", store))
        page.reload()
        page.locator("#panel-find:not([hidden])").wait_for()  # the section it was on
        page.wait_for_function("!document.body.classList.contains('busy')")
        assert page.locator("#basket-count").inner_text() == "2"
        assert page.input_value(f"input[data-basket='{ids[0]}']") == "77.70"
        assert page.input_value("#f-search_products-query") == "lamp"
        # Find's answer of this window came back from the page's store: no new call.
        assert page.locator("#results-find tr[data-product]").count() >= 2
        assert len(trace_tools(tmp_path / "play" / "p1", store)) == calls
        page.keyboard.press("7")
        page.wait_for_function("document.querySelector('#notes-text').value.includes('lamps')")
        assert store.surface.window == 0
        assert not page.errors
        page.close()


def test_a_write_from_a_stale_tab_is_refused(tmp_path: Path, browser) -> None:
    pytest.importorskip("merchantbench.tools.window_bound")  # issue 32's window-bound writes
    room = PlayRoom(tmp_path / "play")
    token, store = listed_store(room, 7, 5)
    room.close()
    store.resume()
    app = create_web_app(play_dir=tmp_path / "play")
    with LiveServer(app) as server:
        old = open_page(browser, server, token)
        old.keyboard.press("3")
        cell = old.locator("#results-listings input.reprice").first
        cell.wait_for()
        pid = cell.get_attribute("aria-label").rsplit(" ", 1)[1]
        live: PlayStore = app.state.play_room.store(token)
        ids = live.session.market.product_ids
        price = {str(ids[p]): li.price for p, li in live.session.engine.state.listings.items()}[pid]
        new = open_page(browser, server, token)
        new.keyboard.press("e")  # the other tab moves the store on
        wait_window(new, 2)
        cell.fill(f"{price / 100 * 1.5:.2f}")
        cell.locator("xpath=following-sibling::button").click()
        old.wait_for_selector("#status:text('this tab was behind')")
        now = {str(ids[p]): li.price for p, li in live.session.engine.state.listings.items()}
        assert now[pid] == price and live.surface.window == 1
        assert old.locator("#clock").inner_text().count("window 2 of") == 1  # it caught up
        old.close()
        new.close()


def test_keys_act_after_a_mouse_tick_on_a_checkbox(tmp_path: Path, browser) -> None:
    [seat] = PlayRoom(tmp_path / "play").create(load_scenario("smoke"), [7])
    app = create_web_app(play_dir=tmp_path / "play")
    with LiveServer(app) as server:
        page = open_page(browser, server, seat.token)
        store: PlayStore = app.state.play_room.store(seat.token)
        page.keyboard.press("2")
        rows = page.locator("#results-find tr[data-product]")
        rows.first.wait_for()
        pid = rows.first.get_attribute("data-product")
        page.click(f"#results-find input[data-product='{pid}']")  # the checkbox has the focus
        price = round(float(page.input_value(f"input[data-basket='{pid}']")) * 1.5, 2)
        page.keyboard.press("=")  # = : the basket's first price, selected
        page.keyboard.type(f"{price:.2f}")
        page.keyboard.press("Escape")
        page.keyboard.press("l")  # L lists the basket
        page.wait_for_selector("#basket-report li.ok")
        ids = store.session.market.product_ids
        listed = {str(ids[p]): li.price for p, li in store.session.engine.state.listings.items()}
        assert listed == {pid: round(price * 100)}
        page.keyboard.press("3")  # a section key
        page.locator("#panel-listings:not([hidden])").wait_for()
        page.keyboard.press("1")
        page.click("#ff-day")  # a fast-forward option ticked with the mouse
        page.keyboard.press("e")  # E ends the window
        wait_window(page, 2)
        page.click("#ff-day")
        page.keyboard.press("f")  # F fast-forwards
        page.wait_for_selector("#status:text('fast-forward: ended')")
        assert store.surface.window >= 2
        assert not page.errors
        page.close()


def test_a_price_below_cost_asks_first(tmp_path: Path, browser) -> None:
    room = PlayRoom(tmp_path / "play")
    token, store = listed_store(room, 7, 3)
    room.close()
    store.resume()
    app = create_web_app(play_dir=tmp_path / "play")
    with LiveServer(app) as server:
        page = open_page(browser, server, token)
        live: PlayStore = app.state.play_room.store(token)
        page.keyboard.press("3")
        cell = page.locator("#results-listings input.reprice").first
        cell.wait_for()
        pid = cell.get_attribute("aria-label").rsplit(" ", 1)[1]
        ids = live.session.market.product_ids
        index = {str(ids[p]): p for p in live.session.engine.state.listings}[pid]
        price = live.session.engine.state.listings[index].price
        cost = live.session.engine.suppliers.state(index, live.session.engine.t).price_fen
        asked: list[str] = []

        def answer(dialog: Any, accept: bool) -> None:
            asked.append(dialog.message)
            dialog.accept() if accept else dialog.dismiss()

        page.once("dialog", lambda d: answer(d, False))
        cell.fill(f"{cost / 100 * 0.5:.2f}")
        cell.locator("xpath=following-sibling::button").click()
        page.wait_for_selector("#status:text('nothing done')")
        assert "below cost" in asked[0] and live.session.engine.state.listings[index].price == price
        page.once("dialog", lambda d: answer(d, True))
        cell.locator("xpath=following-sibling::button").click()
        page.wait_for_timeout(200)
        page.wait_for_function("!document.body.classList.contains('busy')")
        assert len(asked) == 2 and live.session.engine.state.listings[index].price < cost
        page.close()


def test_today_shows_the_current_report_and_find_has_its_keywords(tmp_path: Path, browser) -> None:
    [seat] = PlayRoom(tmp_path / "play").create(load_scenario("smoke"), [7])
    app = create_web_app(play_dir=tmp_path / "play")
    with LiveServer(app) as server:
        page = open_page(browser, server, seat.token)
        page.keyboard.press("2")  # Find first: the day's keywords come without visiting Today
        page.locator("#find-keywords button.link").first.wait_for()
        assert page.locator("#find-keywords").inner_text().startswith("Day 1 keywords")
        page.keyboard.press("1")
        assert "Day 1" in page.locator("#results-today").inner_text()
        for n in (2, 3):  # window 3 is Day 2
            page.keyboard.press("e")
            wait_window(page, n)
        assert page.locator("#results-today").inner_text() == ""  # no report of an old day
        page.keyboard.press("2")
        page.wait_for_function(
            "document.querySelector('#find-keywords').textContent.startsWith('Day 2 keywords')"
        )
        page.fill("#f-search_products-query", "storage box")  # smoke has none: suggestions
        page.keyboard.press("Enter")
        page.wait_for_selector("#results-find .empty")
        empty = page.locator("#results-find .empty")
        assert "browse everything" in empty.inner_text() and "hot keywords:" in empty.inner_text()
        assert not page.errors
        page.close()


def test_digest_wording() -> None:
    from merchantbench.web.digest import ORDER_EVENTS

    assert "customer" in ORDER_EVENTS["cancelled"][1]
    script = (Path(__file__).parents[2] / "src/merchantbench/web/static/format.js").read_text()
    assert '"±"' not in script  # a zero is "0.00", never "±0.00"


def test_line_actions_fit_their_kind_and_sections_open_at_their_top(
    tmp_path: Path, browser
) -> None:
    [seat] = PlayRoom(tmp_path / "play").create(load_scenario("smoke"), [7])
    app = create_web_app(play_dir=tmp_path / "play")
    with LiveServer(app) as server:
        page = open_page(browser, server, seat.token)
        buttons = """(line) => [...lineActions({product_id: 'p1', title: 'Steel Storage Box',
          listed: true, detail: {}, ...line}).querySelectorAll('button')].map(b => b.className)"""
        restored = {"kind": "price_restored", "cost_now": 5.0, "sale_price_now": 20.0}
        assert "act-reprice" not in page.evaluate(buttons, restored)  # never a lower price
        risen = {"kind": "price_changed", "cost_now": 15.0, "sale_price_now": 20.0}
        assert "act-reprice" in page.evaluate(buttons, risen)  # 2 × 15 raises it
        gone = {"kind": "supplier_delisted", "cost_now": 5.0, "sale_price_now": 20.0}
        assert page.evaluate(buttons, gone) == ["act-delist", "act-similar", "act-replace"]
        page.keyboard.press("3")
        page.locator("#results-listings h3").wait_for()
        page.keyboard.press("1")
        page.evaluate("window.scrollTo(0, 600)")
        page.keyboard.press("8")
        assert page.evaluate("window.scrollY") == 0  # a section opens at its top
        page.close()


def test_end_window_asked_while_a_read_loads_waits_its_turn(tmp_path: Path, browser) -> None:
    """A read under way (a search whose answer is slow) never swallows the End window asked
    meanwhile: it goes out once the read is answered (only a second change during a change is
    dropped, the double click)."""
    [seat] = PlayRoom(tmp_path / "play").create(load_scenario("smoke"), [7])
    app = create_web_app(play_dir=tmp_path / "play")
    with LiveServer(app) as server:
        page = open_page(browser, server, seat.token)
        held: list[Any] = []

        def hold(route: Any) -> None:
            held.append(route)

        page.route("**/call/search_products", hold)
        page.keyboard.press("2")
        page.fill("#f-search_products-query", "bag")
        page.keyboard.press("Enter")
        page.wait_for_function("document.body.classList.contains('busy')")
        page.click("#end-window")  # while the search is held
        page.wait_for_timeout(300)
        assert "window 1 of" in page.locator("#clock").inner_text()
        for route in held:
            route.continue_()
        page.unroute("**/call/search_products", hold)
        wait_window(page, 2)
        assert not page.errors
        page.close()
