"""Every page and network answer of a playground session, every form of every section
submitted: no hidden market field, no hidden-state word, and never the seed. The same for the
session's transcript and for the dashboard's trace viewer paging through it."""

from __future__ import annotations

import json
from pathlib import Path

from web_support import LiveServer, assert_clean, collect_answers

from merchantbench.catalog.hidden import hidden_names_in
from merchantbench.record.schema import TRANSCRIPT_FILE
from merchantbench.scenario import load_scenario
from merchantbench.web.app import create_web_app
from merchantbench.web.forms import PANELS
from merchantbench.web.room import PlayRoom

SEED = 3_141_592_653  # long enough that finding its digits in an answer means a leak


def fill_required(page, form, ids: dict[str, str]) -> None:
    for name, value in ids.items():
        field = form.locator(f"input[name={name}]")
        if field.count():
            field.fill(value)


def submit_every_form(page, ids: dict[str, str]) -> int:
    submitted = 0
    for n, (key, _title, _tools) in enumerate(PANELS, start=1):
        page.keyboard.press(str(n))
        panel = page.locator(f"#panel-{key}")
        assert panel.is_visible()
        forms = panel.locator("form.tool")
        for i in range(forms.count()):
            form = forms.nth(i)
            fill_required(page, form, ids)
            tool = form.get_attribute("data-tool")
            if tool == "query_order_detail" and "order_id" not in ids:
                continue  # no order yet: nothing to look up
            with page.expect_response(lambda r, t=tool: r.url.endswith(f"/call/{t}")) as answer:
                form.locator("button[type=submit]").click()
            assert answer.value.json()["result"]["ok"] is True, tool
            submitted += 1
            page.locator("body").click(position={"x": 5, "y": 5})
    return submitted


def test_no_answer_of_a_session_carries_hidden_state(tmp_path: Path, browser) -> None:
    room_dir = tmp_path / "study"
    [seat] = PlayRoom(room_dir).create(load_scenario("smoke"), [SEED])
    app = create_web_app(play_dir=room_dir)
    with LiveServer(app) as server:
        page = browser.new_page()
        answers = collect_answers(page)
        page.goto(f"{server.url}/play/{seat.token}")
        page.click("#help-close")
        store = app.state.play_room.store(seat.token)
        found = store.surface.call("search_products", {"page_size": 1})["rows"][0]
        product, supplier = found[0], found[8]
        store.surface.call("list_product", {"items": [{"product_id": product, "sale_price": 9}]})
        for n in range(2, 6):
            page.click("#end-window")
            page.wait_for_function(
                f"document.querySelector('#clock').textContent.includes('window {n} of')"
            )
        orders = store.surface.call("query_my_orders", {})
        ids = {"product_id": product, "supplier_id": supplier, "sale_price": "9.5"}
        if orders["rows"]:
            ids["order_id"] = str(orders["rows"][0][0])
        submitted = submit_every_form(page, ids)
        every = sum(len(tools) for _key, _title, tools in PANELS)
        assert submitted == every - ("order_id" not in ids)
        page.keyboard.press("7")  # notes: loaded from the store's memory document
        with page.expect_response(lambda r: r.url.endswith("/call/write_memory_doc")):
            page.fill("#notes-text", "try cheaper pet toys")
            page.click("#notes-save")
        assert store.surface.call("read_memory_doc", {})["content"] == "try cheaper pet toys"
        page.keyboard.press("p")
        page.reload()
        page.goto(f"{server.url}/play/not-a-token")
        page.close()
    bodies = [body for url, body in answers if "/call/" in url]
    assert len(bodies) >= submitted
    assert_clean(answers, secret=SEED)
    browse_the_record(room_dir, browser)


def browse_the_record(root: Path, browser) -> None:
    """The store's transcript, and every window of it in the trace viewer, answers opened."""
    [run_dir] = [p.parent for p in root.rglob("run.json")]
    text = (run_dir / TRANSCRIPT_FILE).read_text()
    assert str(SEED) not in text
    lines = [json.loads(line) for line in text.splitlines()]
    assert [r["window"] for r in lines if "observation" in r] == list(range(5))
    for line in lines:
        assert not hidden_names_in(line), line
    with LiveServer(create_web_app(runs_root=root)) as server:
        page = browser.new_page()
        answers = collect_answers(page)
        page.goto(server.url + "/")
        page.click(f"a:text('{run_dir.relative_to(root).as_posix()}')")
        for window in range(1, 6):
            page.wait_for_function(
                "document.querySelector('#window-title')?.textContent"
                f".startsWith('Window {window}:')"
            )
            page.click("#calls-open")
            assert page.locator("#calls pre.answer").count() >= 1
            page.keyboard.press("ArrowRight")
        page.close()
    assert len([url for url, _ in answers if "/runs/trace" in url]) >= 5
    assert_clean(answers, secret=SEED)
