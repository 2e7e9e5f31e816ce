"""One idempotency key per user action, in a real browser: a double click (also one whose first
click's answer arrived before the second click), and a retry after an answer the browser never
got, act once; a new action gets a new key. The page takes the write tools from the server."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from web_support import LiveServer

from merchantbench.scenario import load_scenario
from merchantbench.web.app import create_web_app
from merchantbench.web.room import PlayRoom
from merchantbench.web.store import PlayStore

SEED = 7


class Sent:
    """The tool calls the page sends: (tool, idempotency key, window header)."""

    def __init__(self, page: Any) -> None:
        self.calls: list[tuple[str, str | None, str | None]] = []
        page.on("request", self._keep)

    def _keep(self, request: Any) -> None:
        if "/call/" in request.url and request.method == "POST":
            headers = request.headers
            tool = request.url.rsplit("/call/", 1)[1]
            self.calls.append((tool, headers.get("idempotency-key"), headers.get("x-window")))

    def of(self, tool: str) -> list[tuple[str, str | None, str | None]]:
        return [c for c in self.calls if c[0] == tool]


def env_calls(run_dir: Path, tool: str) -> list[dict[str, Any]]:
    """The recorded calls of `tool` (the trace is on disk once a window closed)."""
    lines = (run_dir / "trace.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["tool"] == tool]


def wait_window(page: Any, n: int) -> None:
    """The page shows window n (1-based) and is idle."""
    page.wait_for_function(
        f"document.querySelector('#clock').textContent.includes('window {n} of')"
    )
    page.wait_for_function("document.body.classList.contains('busy') === false")


def open_page(browser: Any, tmp_path: Path) -> tuple[Any, Any, PlayStore, Path, LiveServer]:
    room_dir = tmp_path / "play"
    [seat] = PlayRoom(room_dir).create(load_scenario("smoke"), [SEED])
    app = create_web_app(play_dir=room_dir)
    server = LiveServer(app).__enter__()
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    page.add_init_script("localStorage.setItem('merchantbench-tour-seen', '1')")
    page.goto(f"{server.url}/play/{seat.token}")
    store = app.state.play_room.store(seat.token)
    return context, page, store, room_dir / "p1", server


def click_twice_with_the_answer_in_between(page: Any, selector: str, answered: str) -> None:
    """A double click on `selector` whose first click is answered (`answered`: a JS condition)
    before the second: the second click is the double click's (its `detail` is 2)."""
    box = page.locator(selector).bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.up()
    page.wait_for_function(answered)
    page.mouse.down(click_count=2)
    page.mouse.up(click_count=2)


def test_a_double_click_on_end_window_closes_one_window(tmp_path: Path, browser) -> None:
    context, page, store, run_dir, server = open_page(browser, tmp_path)
    try:
        sent = Sent(page)
        page.dblclick("#end-window")  # both clicks at once
        wait_window(page, 2)
        page.wait_for_timeout(300)
        assert store.surface.window == 1
        # The first click's answer arrives before the second click: the window on screen has
        # moved on, yet the second click repeats the first action (same key, same window).
        click_twice_with_the_answer_in_between(
            page,
            "#end-window",
            "document.querySelector('#clock').textContent.includes('window 3 of')",
        )
        page.wait_for_selector(
            "#status:text('end of step: window ended: that action was for window 2')"
        )
        assert store.surface.window == 2
        ends = sent.of("end_of_step")
        assert len(ends) >= 3 and ends[-1] == ends[-2] and ends[-1][2] == "1"
        # One key per double click, each for one window. (The first double click's second click
        # is dropped when it comes while the first is under way, or repeats it when its answer
        # came first: the machine's speed decides, the server acts once either way.)
        assert len({key for _, key, _ in ends}) == 2
        assert len({(key, window) for _, key, window in ends}) == 2
        wait_window(page, 3)
        assert len(env_calls(run_dir, "end_of_step")) == 2
        # A new click is a new action: it closes the window on screen.
        page.click("#end-window")
        wait_window(page, 4)
        assert store.surface.window == 3 and len({k for _, k, _ in sent.of("end_of_step")}) == 3
    finally:
        context.close()
        server.__exit__()


def test_a_retry_after_a_lost_answer_acts_once(tmp_path: Path, browser) -> None:
    context, page, store, run_dir, server = open_page(browser, tmp_path)
    try:
        sent = Sent(page)
        lost = {"list_product": 0, "end_of_step": 0}

        def lose_first_answer(route: Any) -> None:
            tool = route.request.url.rsplit("/call/", 1)[1]
            route.fetch()  # the server acts...
            if lost[tool] == 0:
                lost[tool] += 1
                route.abort()  # ...but the page never hears of it
            else:
                route.continue_()

        page.route("**/call/list_product", lose_first_answer)
        page.route("**/call/end_of_step", lose_first_answer)
        page.keyboard.press("/")
        page.fill("#f-search_products-page_size", "2")
        page.click("form[data-tool=search_products] button[type=submit]")
        table = page.locator("#results-find table.data")
        table.wait_for()
        for i in range(2):
            table.locator("tbody tr").nth(i).locator("input[type=checkbox]").check()
        page.click("#list-basket")
        page.wait_for_selector("#status:text('could not reach the server')")
        assert store.surface.status().active_listings == 2  # it did act
        page.wait_for_timeout(600)  # past any double-click interval: a new click
        with page.expect_response(lambda r: r.url.endswith("/call/list_product")) as answer:
            page.click("#list-basket")
        # The same key: the first outcome again, not `already_listed`.
        assert answer.value.json()["result"]["ok"] is True
        page.wait_for_selector("#basket-count:text('0')")
        first, second = sent.of("list_product")
        assert first == second and first[1] is not None
        assert store.session.idempotency_store[first[1]]["tool"] == "list_product"
        assert store.surface.status().active_listings == 2

        page.click("#end-window")
        page.wait_for_selector("#status:text('could not reach the server')")
        assert store.surface.window == 1  # it did close window 1
        page.wait_for_timeout(600)
        page.click("#end-window")  # the retry of "end window 1"
        wait_window(page, 2)
        assert store.surface.window == 1 and len(env_calls(run_dir, "end_of_step")) == 1
        ends = sent.of("end_of_step")
        assert len(ends) == 2 and ends[0] == ends[1]
        # Reads carry no key.
        assert all(key is None for tool, key, _ in sent.calls if tool == "search_products")
    finally:
        context.close()
        server.__exit__()


def test_a_click_while_a_table_loads_is_not_lost(tmp_path: Path, browser) -> None:
    """A read clicked while another call is under way (an order's detail while the orders
    table is being fetched again) waits its turn and is answered, never dropped."""
    context, page, store, run_dir, server = open_page(browser, tmp_path)
    try:
        rows = store.call("search_products", {"page_size": 5, "sort": "sales_30d"})["rows"]
        items = [{"product_id": r[0], "sale_price": round(r[3] * 1.3, 2)} for r in rows]
        assert store.call("list_product", {"items": items})["ok"] is True
        for _ in range(6):  # smoke seed 7: orders arrive within a few windows
            store.end_window()
        page.reload()
        page.keyboard.press("4")  # Orders: the section opens with its table
        first = page.locator("#results-orders table.data tbody tr").first
        first.wait_for()
        page.wait_for_function("document.body.classList.contains('busy') === false")
        real_call, slowed = store.call, []

        def slow_orders(tool: str, *args: Any, **kwargs: Any) -> Any:
            if tool == "query_my_orders":  # the table's second fetch takes its time...
                slowed.append(tool)
                time.sleep(1.5)
            return real_call(tool, *args, **kwargs)

        store.call = slow_orders
        page.click("form[data-tool=query_my_orders] button[type=submit]")
        page.wait_for_function("document.body.classList.contains('busy')")
        first.locator("button.link").first.click()  # ...when the person opens an order
        page.wait_for_selector("#detail #detail-title:text('Order')")
        assert slowed and page.locator("#results-orders table.data").is_visible()
    finally:
        context.close()
        server.__exit__()
