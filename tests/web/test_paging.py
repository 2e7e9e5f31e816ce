"""The playground's paged answers (search first): previous and next controls with the page
count, by mouse, by keyboard focus and by the `[` `]` keys; each page is the session's."""

from __future__ import annotations

from pathlib import Path

from web_support import LiveServer

from merchantbench.scenario import load_scenario
from merchantbench.web.app import create_web_app
from merchantbench.web.room import PlayRoom

PAGE_SIZE = 7
QUERY = {"sort": "sales_30d", "page_size": PAGE_SIZE}


def shown_ids(page) -> list[str]:
    rows = page.locator("#results-find table.data tbody tr")
    return [rows.nth(i).locator("td").nth(1).inner_text() for i in range(rows.count())]


def at_page(page, n: int, pages: int) -> None:
    page.wait_for_selector(f"#results-find .page-of:text-matches('^Page {n} of {pages} ')")


def test_search_results_page_back_and_forth(tmp_path: Path, browser) -> None:
    [seat] = PlayRoom(tmp_path / "play").create(load_scenario("smoke"), [4])
    app = create_web_app(play_dir=tmp_path / "play")
    with LiveServer(app) as server:
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        page.goto(f"{server.url}/play/{seat.token}")
        page.click("#help-close")
        store = app.state.play_room.store(seat.token)

        def session_page(n: int) -> list[str]:
            answer = store.surface.call("search_products", {**QUERY, "page": n})
            return [str(row[0]) for row in answer["rows"]]

        first = store.surface.call("search_products", QUERY)
        pages, total = first["pages"], first["total"]
        assert pages >= 3
        page.keyboard.press("2")
        page.select_option("#f-search_products-sort", "sales_30d")
        page.fill("#f-search_products-page_size", str(PAGE_SIZE))
        page.click("form[data-tool=search_products] button[type=submit]")
        at_page(page, 1, pages)
        assert f"({total} results)" in page.locator("#results-find .page-of").inner_text()
        assert page.locator("#results-find .page-prev").is_disabled()
        assert shown_ids(page) == session_page(1)
        page.click("#results-find .page-next")  # the mouse
        at_page(page, 2, pages)
        assert shown_ids(page) == session_page(2)
        assert page.locator("#f-search_products-page").input_value() == "2"
        page.locator("#results-find .page-next").focus()  # the keyboard: focus and Enter
        page.keyboard.press("Enter")
        at_page(page, 3, pages)
        assert shown_ids(page) == session_page(3)
        page.locator("body").click(position={"x": 5, "y": 5})
        page.keyboard.press("[")  # the shortcut
        at_page(page, 2, pages)
        page.keyboard.press("]")
        at_page(page, 3, pages)
        page.fill("#f-search_products-page", str(pages))
        page.click("form[data-tool=search_products] button[type=submit]")
        at_page(page, pages, pages)
        assert page.locator("#results-find .page-next").is_disabled()
        assert shown_ids(page) == session_page(pages)
        page.close()
