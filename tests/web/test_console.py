"""The playground as an operator console, in Chromium: a person plays 32 windows of a `small`
store with keys and clicks only, doing what the rule-based agent does, and the store matches the
rule-based agent's window by window; the window digest shows a stockout, a refund, a bad review, a
supplier delisting and a star drop with their orders, products and amounts, and its buttons act;
fast-forward ends windows until a trigger, each one an end_of_step in the record; a batch lists
what it can; the pause screen has no action key; an empty search says so."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from console_driver import ConsoleDriver, Ui, window_index
from web_support import LiveServer

from merchantbench.money import rmb
from merchantbench.runs.lifecycle import RunLifecycle
from merchantbench.runs.spec import RunSpec
from merchantbench.scenario import load_scenario
from merchantbench.session import Session
from merchantbench.web.app import create_web_app
from merchantbench.web.room import PlayRoom
from merchantbench.web.store import PlayStore

WINDOWS = 32


def listings(session: Session) -> dict[str, int]:
    """product_id -> sale price (fen) of a store's listings (host side)."""
    ids = session.market.product_ids
    return {str(ids[p]): listing.price for p, listing in session.engine.state.listings.items()}


def open_page(browser: Any, server: LiveServer, token: str) -> Any:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.errors = errors
    page.goto(f"{server.url}/play/{token}")
    page.click("#help-close")
    return page


def test_an_operator_plays_like_the_rule_based_agent(tmp_path: Path, browser) -> None:
    scenario = load_scenario("small")
    [seat] = PlayRoom(tmp_path / "play").create(scenario, [3])
    rule_based = RunLifecycle.open(RunSpec("rule-based", scenario, 3), tmp_path / "rule-based")
    app = create_web_app(play_dir=tmp_path / "play")
    with LiveServer(app) as server:
        page = open_page(browser, server, seat.token)
        store: PlayStore = app.state.play_room.store(seat.token)
        ui = Ui(page)
        driver = ConsoleDriver(ui)
        per_window = []
        for window in range(WINDOWS):
            before = ui.actions
            driver.play_window()
            per_window.append(ui.actions - before)
            rule_based.agent.act(rule_based.surface)  # it closes its window itself
            assert window_index(ui) == window + 1
            assert listings(store.session) == listings(rule_based.session), f"window {window}"
        assert store.state()["net_assets"] == rule_based.surface.status().net_assets
        assert listings(store.session)  # it listed products
        assert not page.errors
        page.close()
    trace = [json.loads(line) for line in (tmp_path / "play" / "p1" / "trace.jsonl").open()]
    assert {e["origin"] for e in trace} == {"human"}
    ends = [e["window"] for e in trace if e["tool"] == "end_of_step"]
    assert ends == list(range(WINDOWS))
    # Keys and clicks per window (the first sets the search filters): see docs/web.md.
    assert sum(per_window[1:]) / (WINDOWS - 1) <= 12, per_window


def digest_store(tmp_path: Path) -> tuple[Path, str]:
    """smoke, seed 19: 50 best sellers listed at 1.3 × cost and left alone; window 27 opens
    with a stockout, a refund, a bad review, two supplier delistings and a star drop."""
    room = PlayRoom(tmp_path / "play")
    [seat] = room.create(load_scenario("smoke"), [19])
    store = room.store(seat.token)
    assert store is not None
    found = store.call("search_products", {"query": "", "page_size": 50, "sort": "sales_30d"})
    items = [{"product_id": r[0], "sale_price": round(r[3] * 1.3, 2)} for r in found["rows"]]
    assert store.call("list_product", {"items": items})["ok"]
    for _ in range(26):
        store.end_window()
    room.close()  # saved where it stands (and paused, as at a server's shutdown)
    store.resume()
    return tmp_path / "play", seat.token


DIGEST_LINES = """() => [...document.querySelectorAll('#digest li.line')].map(li => ({
  kind: li.dataset.kind, product: li.dataset.product || null, text: li.textContent}))"""


def test_the_digest_shows_each_event_and_its_actions_work(tmp_path: Path, browser, shots) -> None:
    play_dir, token = digest_store(tmp_path)
    app = create_web_app(play_dir=play_dir)
    with LiveServer(app) as server:
        page = open_page(browser, server, token)
        store: PlayStore = app.state.play_room.store(token)
        session = store.session
        lines = page.evaluate(DIGEST_LINES)
        kinds = [line["kind"] for line in lines]
        for kind in ("stockout", "return_refund", "bad_review", "supplier_delisted", "stars"):
            assert kind in kinds, kinds
        assert kinds.index("stockout") < kinds.index("bad_review")  # most urgent first
        fines = session.scenario.orders.fines
        amounts = {"stockout": fines.stockout_fen, "return_refund": fines.return_refund_fen,
                   "bad_review": fines.bad_review_fen}  # fmt: skip
        for line in lines:
            if line["kind"] in amounts:  # the order's product and the rules' fine, in words
                order_id = int(line["text"].split("Order #")[1].split(" ")[0])
                order = session.engine.state.orders[order_id - 1]
                assert line["product"] == str(session.market.product_ids[order.product])
                assert f"−{rmb(amounts[line['kind']]):.2f} RMB" in line["text"]
        stars = next(line for line in lines if line["kind"] == "stars")
        status = store.surface.status()
        assert f"→ {status.stars}" in stars["text"] and "Cause:" in stars["text"]
        page.screenshot(path=str(shots / "playground-digest.png"), full_page=False)
        # Delist, from the supplier delisting's line: the product is no longer listed.
        gone = next(line["product"] for line in lines if line["kind"] == "supplier_delisted")
        page.click(f"#digest li[data-kind=supplier_delisted][data-product='{gone}'] .act-delist")
        page.wait_for_selector(f"#status:text('delisted {gone}')")
        assert gone not in listings(session)
        # Each line's actions fit its kind: no reprice on an order outcome or a delisted product.
        for kind in ("bad_review", "return_refund", "supplier_delisted", "stockout"):
            assert page.locator(f"#digest li[data-kind={kind}] .act-reprice").count() == 0
        # Find similar: the search runs with the product's type words, results beside it.
        page.locator("#digest li[data-kind=return_refund] .act-similar").first.click()
        page.locator("#results-find h3:text('search products')").wait_for()
        assert page.locator("#panel-find").is_visible()
        # Replace (the other delisted product): a preview, then Enter delists it and lists the
        # best similar product instead.
        page.keyboard.press("1")
        other = page.locator("#digest li[data-kind=supplier_delisted] .act-replace").first
        replace_pid = other.locator("xpath=ancestor::li").get_attribute("data-product")
        other.click()
        page.locator("#preview-go").wait_for()
        instead = page.locator("#preview tbody td").nth(1).inner_text()
        page.keyboard.press("Enter")
        page.wait_for_selector("#status:text('replaced')")
        assert replace_pid not in listings(session)
        if "nothing found" not in instead:
            assert instead.rsplit("(", 1)[1].rstrip(")") in listings(session)
        assert not page.errors
        page.close()


def test_fast_forward_stops_at_a_trigger_and_records_every_window(tmp_path: Path, browser) -> None:
    [seat] = PlayRoom(tmp_path / "play").create(load_scenario("smoke"), [19])
    app = create_web_app(play_dir=tmp_path / "play")
    with LiveServer(app) as server:
        page = open_page(browser, server, seat.token)
        store: PlayStore = app.state.play_room.store(seat.token)
        found = store.call("search_products", {"query": "", "page_size": 20, "sort": "sales_30d"})
        items = [{"product_id": r[0], "sale_price": round(r[3] * 1.3, 2)} for r in found["rows"]]
        assert store.call("list_product", {"items": items})["ok"]
        page.reload()
        for box in (
            "#ff-supplier",
            "#ff-supplier-late",
            "#ff-supplier-cost",
            "#ff-cash-on",
            "#ff-rating-on",
        ):
            page.uncheck(box)  # stop only at an adverse outcome
        page.locator("body").click(position={"x": 5, "y": 5})
        page.keyboard.press("f")
        page.wait_for_selector("#status:text('fast-forward: ended')")
        status = page.locator("#status").inner_text()
        assert "stopped: adverse outcome" in status, status
        window = store.surface.window
        assert window >= 2
        kinds = {line["kind"] for line in store.state()["digest"]["lines"]}
        assert kinds & {"stockout", "late", "bad_review", "return_refund", "cancelled"}
        page.close()
    trace = [json.loads(line) for line in (tmp_path / "play" / "p1" / "trace.jsonl").open()]
    skipped = [e for e in trace if e["window"] >= 1]
    assert [e["tool"] for e in skipped] == ["end_of_step"] * (window - 1)  # each one recorded


def test_a_batch_lists_what_it_can_and_reports_each_item(tmp_path: Path, browser) -> None:
    [seat] = PlayRoom(tmp_path / "play").create(load_scenario("smoke"), [7])
    app = create_web_app(play_dir=tmp_path / "play")
    with LiveServer(app) as server:
        page = open_page(browser, server, seat.token)
        store: PlayStore = app.state.play_room.store(seat.token)
        page.keyboard.press("2")  # Find opens with every product (browse)
        rows = page.locator("#results-find tr[data-product]")
        rows.first.wait_for()
        ids = [rows.nth(i).get_attribute("data-product") for i in range(3)]
        assert store.call("list_product", {"items": [{"product_id": ids[0], "sale_price": 99}]})[
            "ok"
        ]
        page.click("form[data-tool=search_products] button[type=submit]")
        page.wait_for_selector(f"tr[data-product='{ids[0]}'].listed")  # marked, not offered
        assert page.locator(f"#results-find input[data-product='{ids[0]}']").is_disabled()
        page.keyboard.press("j")
        page.keyboard.press("j")
        page.keyboard.press("x")  # the second row
        page.keyboard.press("j")
        page.keyboard.press("x")  # the third
        page.fill(f"input[data-basket='{ids[1]}']", "1000000")  # over 100 × cost: refused
        page.locator("body").click(position={"x": 5, "y": 5})
        page.keyboard.press("l")
        page.wait_for_selector("#basket-report li.ok")
        report = page.locator("#basket-report").inner_text()
        assert f"({ids[2]}): listed at" in report and f"({ids[1]}): price out of range" in report
        assert set(listings(store.session)) == {ids[0], ids[2]}
        assert not page.errors
        page.close()


def test_the_pause_screen_has_no_action_key_and_search_says_when_empty(
    tmp_path: Path, browser
) -> None:
    [seat] = PlayRoom(tmp_path / "play").create(load_scenario("smoke"), [7])
    app = create_web_app(play_dir=tmp_path / "play")
    with LiveServer(app) as server:
        page = open_page(browser, server, seat.token)
        store: PlayStore = app.state.play_room.store(seat.token)
        page.keyboard.press("p")
        page.locator("#paused").wait_for()
        for key in ("e", "f", "2", "l", "d"):
            page.keyboard.press(key)
        page.wait_for_timeout(300)
        assert store.surface.window == 0 and store.paused
        assert page.locator("#paused").is_visible()
        page.keyboard.press("Enter")  # Continue has the focus
        page.wait_for_selector("#paused", state="hidden")
        page.keyboard.press("/")
        page.keyboard.type("storage box")  # the README's example: smoke has no such product
        page.keyboard.press("Enter")
        page.wait_for_selector("#results-find .empty")
        text = page.locator("#results-find .empty").inner_text()
        assert 'No product matches every word of "storage box"' in text
        page.locator("#results-find .empty button:text('browse everything (empty query)')").click()
        page.locator("#results-find tr[data-product]").first.wait_for()
        page.close()


def test_the_study_view_shows_each_participant(tmp_path: Path, browser, shots) -> None:
    room = PlayRoom(tmp_path / "study")
    seats = room.create(load_scenario("smoke"), [7, 8], names=["ann", "bob"])
    operator = room.operator_token()
    app = create_web_app(play_dir=tmp_path / "study")
    with LiveServer(app) as server:
        page = open_page(browser, server, seats[0].token)  # ann plays two windows, then pauses
        for n in (2, 3):
            page.keyboard.press("e")
            page.wait_for_function(
                f"document.querySelector('#clock').textContent.includes('window {n} of')"
            )
        report = "{method: 'POST', headers: {'Content-Type': 'application/json'}, body: BODY}"
        page.evaluate(
            f"fetch(`${{BASE}}/activity`, {report})".replace("BODY", "'{\"seconds\": 12}'")
        )
        page.keyboard.press("p")
        page.locator("#paused").wait_for()
        page.wait_for_timeout(200)
        view = browser.new_page()
        assert view.goto(f"{server.url}/study/{seats[0].token}").status == 404  # not a seat's
        view.goto(f"{server.url}/study/{operator}")
        ann = view.locator("tr[data-participant=ann] td")
        bob = view.locator("tr[data-participant=bob] td")
        store = app.state.play_room.store(seats[0].token)
        status = store.surface.status()
        assert ann.nth(1).inner_text() == "paused" and bob.nth(1).inner_text() == "not opened"
        assert ann.nth(2).inner_text() == f"3 of {status.windows_total}"
        assert ann.nth(4).inner_text() == f"{status.net_assets:,.2f}"
        assert ann.nth(7).inner_text() == "0 h 00 min 12 s"
        rows = view.evaluate(f"fetch('/study/{operator}/data').then(r => r.json())")
        assert [r["participant"] for r in rows["participants"]] == ["ann", "bob"]
        view.set_viewport_size({"width": 1280, "height": 200})
        view.screenshot(path=str(shots / "playground-study.png"))
        view.close()
        page.close()


def test_the_end_screen_agrees_with_the_header(tmp_path: Path, browser) -> None:
    scenario = load_scenario("smoke", overrides=["clock.days=1"])
    [seat] = PlayRoom(tmp_path / "play").create(scenario, [7])
    app = create_web_app(play_dir=tmp_path / "play")
    with LiveServer(app) as server:
        page = open_page(browser, server, seat.token)
        store: PlayStore = app.state.play_room.store(seat.token)
        found = store.call("search_products", {"query": "", "page_size": 5, "sort": "sales_30d"})
        items = [{"product_id": r[0], "sale_price": round(r[3] * 1.5, 2)} for r in found["rows"]]
        assert store.call("list_product", {"items": items})["ok"]
        page.reload()
        page.keyboard.press("f")  # to the end: no trigger fires before the run is over
        page.locator("#finished").wait_for()
        final = page.locator("#final td[data-metric=final_net_assets]").inner_text()
        assert final == page.locator("#net-assets").inner_text()
        assert final == f"{store.metrics['final_net_assets']:,.2f}"
        margin = page.locator("#final td[data-metric=net_profit_margin]").inner_text()
        assert margin.endswith(" %") and page.locator("#final").inner_text().count("RMB") >= 2
        clock = page.locator("#clock").inner_text()
        assert "run over: all 2 windows played" in clock and "window 3" not in clock
        assert page.locator("#end-window").is_disabled()
        page.close()
