"""An accessibility pass over the playground and the dashboard in Chromium: every control has
a label or name, charts are labelled images, text contrast meets WCAG AA (4.5:1, 3:1 large),
keyboard focus is visible and reaches the main controls, the tour dialog takes focus."""

from __future__ import annotations

from pathlib import Path

from web_support import LiveServer

from merchantbench.runs.lifecycle import RunLifecycle
from merchantbench.runs.runner import RunSpec
from merchantbench.scenario import load_scenario
from merchantbench.web.app import create_web_app
from merchantbench.web.forms import PANELS
from merchantbench.web.room import PlayRoom

CHECKS = (Path(__file__).parent / "a11y_checks.js").read_text()


def focus_ring(page) -> str:
    return page.evaluate(
        "() => { const s = getComputedStyle(document.activeElement);"
        " return s.outlineStyle + ' ' + s.outlineWidth; }"
    )


def test_the_playground_passes_the_checks(tmp_path: Path, browser) -> None:
    [seat] = PlayRoom(tmp_path / "play").create(load_scenario("smoke"), [2])
    with LiveServer(create_web_app(play_dir=tmp_path / "play")) as server:
        page = browser.new_page()
        page.goto(f"{server.url}/play/{seat.token}")
        assert page.evaluate("document.activeElement.id") == "help-close"  # the tour has focus
        assert page.evaluate(CHECKS) == []
        page.keyboard.press("Escape")
        page.keyboard.press("2")
        page.click("form[data-tool=search_products] button[type=submit]")
        page.locator("#results-find table.data").wait_for()
        for n in range(1, len(PANELS) + 1):
            page.locator("body").click(position={"x": 5, "y": 300})
            page.keyboard.press(str(n))
            assert page.evaluate(CHECKS) == [], f"section {n}"
        page.keyboard.press("1")
        page.locator("body").click(position={"x": 5, "y": 300})
        reached = set()
        for _ in range(60):
            page.keyboard.press("Tab")
            reached.add(
                page.evaluate("document.activeElement.id || document.activeElement.textContent")
            )
            active = page.evaluate("document.activeElement.outerHTML.slice(0, 80)")
            if active.startswith("<body"):
                continue  # past the last control, focus leaves the page once
            assert focus_ring(page).startswith("solid 3px"), (focus_ring(page), active)
        assert {"pause", "end-window", "help-open", "tab-find"} <= reached
        page.close()


def test_the_dashboard_passes_the_checks(tmp_path: Path, browser) -> None:
    scenario = load_scenario("smoke", overrides=["clock.days=2"])
    life = RunLifecycle.open(RunSpec("idle", scenario, 3), tmp_path / "runs" / "a")
    for _ in range(2):  # two windows of calls: the viewer can page
        life.surface.call("query_balance", {})
        life.surface.call("end_of_step", {})
    life.checkpoint()
    with LiveServer(create_web_app(runs_root=tmp_path / "runs")) as server:
        page = browser.new_page()
        page.goto(server.url + "/")
        assert page.evaluate(CHECKS) == []
        page.click("a:text('a')")
        page.locator("#trace h3").wait_for()
        assert page.evaluate(CHECKS) == []
        page.click("#calls-open")  # the answers open
        assert page.evaluate(CHECKS) == []
        page.focus("#window-pick")
        reached = set()
        for _ in range(8):  # the viewer's controls and its calls, by keyboard
            page.keyboard.press("Tab")
            reached.add(
                page.evaluate("document.activeElement.id || document.activeElement.tagName")
            )
            if "BODY" in reached:
                break  # past the last control
            assert focus_ring(page).startswith("solid 3px"), reached
        assert {"window-go", "window-next", "calls-open", "calls-close", "SUMMARY"} <= reached
        page.close()


def test_the_checks_catch_what_they_look_for(browser) -> None:
    page = browser.new_page()
    page.set_content(
        "<html><head><title>x</title></head><body><h1>x</h1>"
        "<p style='color:#bbb;background:#fff'>faint</p><input id=q><button></button>"
        "<svg></svg></body></html>"
    )
    problems = " | ".join(page.evaluate(CHECKS))
    for expected in ("no lang", "contrast", "unlabelled input", "nameless", "svg chart"):
        assert expected in problems, problems
    page.close()
