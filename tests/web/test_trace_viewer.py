"""The dashboard's trace viewer in Chromium, on finished smoke runs: window by window it shows
the observation the agent was given and each call with its answer, as the transcript holds them
and as the session handed them out; errors and forced closes are marked; an LLM run shows its
model calls; a record without a transcript shows its calls with a note; no page or answer of
the viewer carries hidden state or the seed."""

from __future__ import annotations

import asyncio
import copy
import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from web_support import LiveServer, assert_clean, collect_answers

from merchantbench.agents.llm.scripted_policy import silent_policy, store_policy
from merchantbench.agents.llm.scripted_server import ScriptedServer
from merchantbench.record.schema import MODEL_WORDS_FILE, TRANSCRIPT_FILE
from merchantbench.record.words import read_words
from merchantbench.runs.lifecycle import RunLifecycle
from merchantbench.runs.runner import RunSpec, run_agent
from merchantbench.scenario import load_scenario
from merchantbench.web.app import create_web_app

SEED = 2_718_281_828  # long enough that its digits on a page would mean a leak
SMOKE = load_scenario("smoke")
ERROR_WINDOW = 4  # the window (1-based) in which a call fails


@dataclass
class Handed:
    """What the session handed the agent: each window's opening observation, each answer."""

    observations: dict[int, str] = field(default_factory=dict)
    answers: dict[int, Any] = field(default_factory=dict)


class RecordingSurface:
    """The agent's surface, keeping a copy of every answer it hands out, by trace seq."""

    def __init__(self, session: Any, handed: Handed) -> None:
        self._session, self._handed = session, handed

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session.surface, name)

    def call(self, tool: str, args: Any = None, idempotency_key: str | None = None) -> Any:
        result = self._session.surface.call(tool, args, idempotency_key)
        self._handed.answers[self._session.memory.seq] = copy.deepcopy(result)
        return result


def play_recorded(run_dir: Path) -> Handed:
    """A rule-based smoke run through a recording surface (the runner's loop)."""
    handed = Handed()
    life = RunLifecycle.open(RunSpec("rule-based", SMOKE, SEED), run_dir)
    session, agent = life.session, life.agent
    assert agent is not None
    surface = RecordingSurface(session, handed)

    async def drive() -> None:
        while not session.over:
            window = session.window
            handed.observations[window] = session.surface.observation()
            if window == ERROR_WINDOW - 1:
                surface.call("no_such_tool", {"x": 1})  # an error answer to show
            await agent.act_async(surface)  # type: ignore[arg-type]
            if not session.over and session.window == window:
                handed.answers[session.memory.seq + 1] = session.force_end_of_step()

    asyncio.run(drive())
    life.finish()
    return handed


def llm_run(run_dir: Path, policy: Any) -> None:
    with ScriptedServer(policy) as server:
        settings = {"model": "scripted", "base_url": server.base_url}
        scenario = load_scenario("smoke", overrides=["clock.days=2"])
        run_agent(RunSpec("react", scenario, 1, settings), run_dir)


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Handed]:
    root = tmp_path_factory.mktemp("viewer")
    # In a thread: Playwright's sync API keeps an event loop running in this one.
    with ThreadPoolExecutor(1) as pool:
        handed = pool.submit(play_recorded, root / "rule").result()
        pool.submit(llm_run, root / "llm", store_policy).result()
        pool.submit(llm_run, root / "silent", silent_policy).result()
    shutil.copytree(root / "rule", root / "old")
    (root / "old" / TRANSCRIPT_FILE).unlink()  # as a record made before transcripts
    return root, handed


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def open_run(browser, server: LiveServer, rel: str) -> tuple[Any, list[tuple[str, str]]]:
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    answers = collect_answers(page)
    page.goto(f"{server.url}/runs/view?path={rel}")
    page.locator("#window-title").wait_for()
    return page, answers


def at_window(page, window: int) -> None:
    page.wait_for_function(
        f"document.querySelector('#window-title')?.textContent.startsWith('Window {window}:')"
    )


def check_window(page, run_dir: Path, handed: Handed, window: int) -> None:
    """Observation and every answer on screen equal the transcript's and the session's."""
    at_window(page, window)
    lines = [r for r in jsonl(run_dir / TRANSCRIPT_FILE) if r["window"] == window - 1]
    [seen] = [r["observation"] for r in lines if "observation" in r]
    assert page.locator("#observation").inner_text() == seen == handed.observations[window - 1]
    trace = [e for e in jsonl(run_dir / "trace.jsonl") if e["window"] == window - 1]
    items = page.locator("#calls > li")
    assert items.count() == len(trace)
    page.click("#calls-open")
    for i, entry in enumerate(trace):
        item = items.nth(i)
        assert item.get_attribute("data-seq") == str(entry["seq"])
        assert entry["tool"] in item.locator("summary").inner_text()
        # textContent, not innerText: it reads a call whether its <details> is open or not
        # (a page that drew a window twice once closed them under the reader:
        # test_one_navigation_draws_its_window_once).
        shown = json.loads(item.locator("pre.answer").text_content() or "")
        [line] = [r for r in lines if r.get("seq") == entry["seq"] and "answer" in r]
        assert shown == line["answer"] == json.loads(json.dumps(handed.answers[entry["seq"]]))
        assert json.loads(item.locator("pre.args").text_content() or "") == entry["args"]
        assert ("error" in (item.get_attribute("class") or "")) is (not entry["ok"])


def check_words(page, run_dir: Path, window: int) -> None:
    """The model's words of the window, each followed by the trace entries of its tool calls."""
    said = [w for w in read_words(run_dir / MODEL_WORDS_FILE) if w["window"] == window - 1]
    trace = [e for e in jsonl(run_dir / "trace.jsonl") if e["window"] == window - 1]
    items = page.locator("#calls > li")
    expected = []
    for words in said:
        expected.append(("words", str(words["seq"]), words["reasoning"]))
        expected += [("call", str(e["seq"]), e["tool"]) for e in trace if e["tool"] in
                     [c["name"] for c in words["tool_calls"]] and ("call", str(e["seq"]), e["tool"])
                     not in expected]  # fmt: skip
    shown = []
    for i in range(items.count()):
        item = items.nth(i)
        if "words" in (item.get_attribute("class") or ""):
            text = item.locator("p.reasoning").inner_text()
            shown.append(("words", item.get_attribute("data-model-seq"), text))
        else:
            shown.append(
                ("call", item.get_attribute("data-seq"), item.locator("strong").inner_text())
            )
    assert said and all(w["reasoning"] for w in said)
    assert shown == expected


def test_stepping_through_windows_shows_what_the_agent_saw_and_got(records, browser, shots) -> None:
    root, handed = records
    run_dir = root / "rule"
    with LiveServer(create_web_app(runs_root=root)) as server:
        page, answers = open_run(browser, server, "rule")
        assert page.locator("#window-count").inner_text() == f"of {SMOKE.clock.windows}"
        check_window(page, run_dir, handed, 1)
        assert page.locator("#window-prev").is_disabled()
        page.click("#window-next")
        check_window(page, run_dir, handed, 2)
        page.locator("body").click(position={"x": 5, "y": 5})
        page.keyboard.press("ArrowRight")
        check_window(page, run_dir, handed, 3)
        page.keyboard.press("ArrowRight")
        check_window(page, run_dir, handed, ERROR_WINDOW)
        failed = page.locator("#calls > li.error")
        assert failed.count() == 1 and "error: unknown_tool" in failed.inner_text()
        assert "no_such_tool" in failed.locator("pre.answer").inner_text()
        page.keyboard.press("ArrowLeft")
        check_window(page, run_dir, handed, 3)
        page.fill("#window-pick", "11")
        page.keyboard.press("Enter")
        check_window(page, run_dir, handed, 11)
        page.click("#calls-close")
        for i in (0, 4):  # two answers open, as a reader would
            page.locator("#calls > li summary").nth(i).click()
        page.evaluate("window.scrollTo(0, 0)")
        page.screenshot(path=str(shots / "dashboard-run.png"), full_page=True)
        page.fill("#window-pick", str(SMOKE.clock.windows))
        page.click("#window-go")
        check_window(page, run_dir, handed, SMOKE.clock.windows)
        assert page.locator("#window-next").is_disabled()
        page.keyboard.press("ArrowRight")  # past the last window: stays
        page.reload()  # the window is in the address
        check_window(page, run_dir, handed, SMOKE.clock.windows)
        page.click("#calls-close")
        assert page.locator("#calls details[open]").count() == 0
        page.close()
    assert_clean(answers, secret=SEED)


# Counts each drawing of the trace box, with the window the field held then.
COUNT_DRAWS = """
window.mbDraws = [];
const replace = Element.prototype.replaceChildren;
Element.prototype.replaceChildren = function (...parts) {
  if (this.id === "trace") window.mbDraws.push(document.getElementById("window-pick").value);
  return replace.apply(this, parts);
};
"""


def test_one_navigation_draws_its_window_once(records, browser) -> None:
    """The field's change and its Enter (or Go) are one navigation: a second drawing would
    replace the window, its answers closed again, while a reader (or a test) reads it."""
    root, _ = records
    with LiveServer(create_web_app(runs_root=root)) as server:
        page = browser.new_page()
        page.add_init_script(COUNT_DRAWS)

        def draws_after(*actions) -> list[str]:
            page.evaluate("window.mbDraws = []")
            for action in actions:
                action()
            page.wait_for_timeout(1000)  # any later drawing has come by then
            return page.evaluate("window.mbDraws")

        page.goto(f"{server.url}/runs/view?path=rule#window=5")
        at_window(page, 5)
        assert draws_after(page.reload) == ["5"]
        field = page.locator("#window-pick")
        assert draws_after(lambda: field.fill("11"), lambda: page.keyboard.press("Enter")) == ["11"]
        assert draws_after(lambda: field.fill("12"), lambda: page.click("#window-go")) == ["12"]
        assert draws_after(lambda: page.click("#window-next")) == ["13"]
        assert draws_after(lambda: page.click("#window-go")) == []  # on screen already
        page.close()


def test_an_llm_run_shows_its_model_calls_and_forced_closes(records, browser) -> None:
    root, _ = records
    with LiveServer(create_web_app(runs_root=root)) as server:
        page, answers = open_run(browser, server, "llm")
        calls = jsonl(root / "llm" / "model_calls.jsonl")
        for window in (1, 2):
            if window > 1:
                page.keyboard.press("ArrowRight")
            at_window(page, window)
            expected = [c for c in calls if c["window"] == window - 1]
            rows = page.locator("#model-calls tbody tr")
            assert rows.count() == len(expected) >= 1
            for i, call in enumerate(expected):
                for key in ("seq", "input_tokens", "output_tokens", "latency_s"):
                    cell = rows.nth(i).locator(f"td[data-key={key}]").inner_text()
                    assert float(cell) == call[key], (window, key)
            check_words(page, root / "llm", window)
        page.close()
        page, more = open_run(browser, server, "silent")
        forced = page.locator("#calls > li.forced")
        assert forced.count() == 1
        assert "forced close" in forced.locator("summary").inner_text()
        assert "end_of_step" in forced.locator("summary").inner_text()
        page.close()
    assert_clean(answers + more, secret=None)


def test_a_record_without_a_transcript_shows_its_calls_with_a_note(records, browser) -> None:
    root, _ = records
    with LiveServer(create_web_app(runs_root=root)) as server:
        page, _ = open_run(browser, server, "old")
        assert page.locator("#no-transcript").is_visible()
        assert page.locator("#observation").count() == 0
        trace = [e for e in jsonl(root / "old" / "trace.jsonl") if e["window"] == 0]
        assert page.locator("#calls > li").count() == len(trace)
        page.click("#calls-open")
        assert page.locator("#calls pre.answer").count() == 0
        assert page.locator("#calls pre.args").count() == len(trace)
        page.close()
