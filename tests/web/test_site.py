"""`merchantbench site`: a static leaderboard site of runs and sweeps.

Runs of different horizons or scenarios are ranked in separate groups, two copies of a run
count once; the site opens in Chromium from file:// and requests nothing outside its folder;
a scripted ReAct run's page shows the model's words beside its tool calls; a sealed run's seed
is on no page; bad input gets one line and a non-zero exit. Every run replays to its state
(`merchantbench.replay.evidence.check_run`); an edited record is left out of the ranking and
named.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from merchantbench.agents.llm.scripted_policy import store_policy
from merchantbench.agents.llm.scripted_server import ScriptedServer
from merchantbench.catalog.hidden import hidden_names_in
from merchantbench.record.schema import MODEL_WORDS_FILE
from merchantbench.record.words import read_words
from merchantbench.runs.runner import RunSpec, run_agent
from merchantbench.scenario import load_scenario
from merchantbench.site import SiteError, build_site

A11Y_CHECKS = (Path(__file__).parent / "a11y_checks.js").read_text()
CLI = [sys.executable, "-c", "from merchantbench.cli import main; main()"]


def rule_run(out: Path, scenario: str, days: int, seed: int) -> None:
    spec = RunSpec("rule-based", load_scenario(scenario, overrides=[f"clock.days={days}"]), seed)
    run_agent(spec, out)


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder as a researcher has it: two horizons of one scenario, another scenario, a copy
    of a run, a scripted ReAct run, a sealed run, and a damaged record."""
    root = tmp_path_factory.mktemp("results")
    sealed_cache = tmp_path_factory.mktemp("sealed-cache")
    # In a thread: Playwright's sync API keeps an event loop running in this one.
    with ThreadPoolExecutor(1) as pool:
        pool.submit(make_results, root, sealed_cache).result()
    return root


def make_results(root: Path, sealed_cache: Path) -> None:
    for seed in (1, 2):
        rule_run(root / "short" / f"s{seed}", "smoke", 2, seed)
    rule_run(root / "long" / "s1", "smoke", 3, 1)
    rule_run(root / "other" / "s1", "small", 2, 1)
    subprocess.run(["cp", "-r", str(root / "short" / "s1"), str(root / "short" / "s1-copy")],
                   check=True)  # fmt: skip
    with ScriptedServer(store_policy) as server:
        settings = {"model": "scripted", "base_url": server.base_url}
        spec = RunSpec("react", load_scenario("smoke", overrides=["clock.days=2"]), 1, settings)
        run_agent(spec, root / "llm" / "react-s1")
    env = {**os.environ, "MERCHANTBENCH_CACHE": str(sealed_cache)}
    sealed = [*CLI, "run", "--agent", "rule-based", "--scenario", "smoke", "--days", "2",
              "--sealed", "--no-progress", "--out", str(root / "sealed" / "run")]  # fmt: skip
    subprocess.run(sealed, check=True, env=env, capture_output=True)
    (root / "broken").mkdir()
    (root / "broken" / "run.json").write_text("{not json")


@pytest.fixture(scope="module")
def site(sweeps: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site") / "public"
    lines: list[str] = []
    summary = build_site([sweeps], out, progress=lines.append)
    assert summary.runs == 7 and summary.skipped == 1 and summary.verified == 7  # all replay
    assert lines[0] == "7 runs found, 1 unreadable"
    return out


def test_the_index_ranks_each_comparable_group_apart(sweeps: Path, site: Path) -> None:
    from merchantbench.site.collect import collect_runs
    from merchantbench.site.groups import rank_groups

    runs, _ = collect_runs([sweeps])
    groups = rank_groups(runs)
    # short (2 days, seeds 1 and 2 and a copy, plus the ReAct run and the sealed run: all smoke
    # 2 days), long (3 days), other (small): three identities.
    assert sorted((g.sample.days, g.sample.manifest.scenario.name, len(g.runs)) for g in groups) \
        == [(2, "small", 1), (2, "smoke", 4), (3, "smoke", 1)]  # fmt: skip
    [short] = [g for g in groups if len(g.runs) == 4]
    rule = next(e for e in short.entries if e.name == "rule-based" and e.sealed == "public")
    assert [r.seed_text for r in rule.runs] == ["1", "2"] and len(rule.duplicates) == 1
    sealed = next(e for e in short.entries if e.sealed == "sealed")
    assert sealed.name == "rule-based" and sealed.seeds[0].startswith("sealed ")
    html = (site / "index.html").read_text()
    assert html.count('<table class="data ranking">') == 3
    assert "1 duplicate copy not counted" in html
    assert "broken" in html and "Records left out" in html
    assert "react · scripted" in html and "no model spend" in html


def test_a_sealed_runs_seed_is_on_no_page(sweeps: Path, site: Path) -> None:
    secret = json.loads((sweeps / "sealed" / "run" / "sealed" / "seed").read_text())
    for name in ("seed", "salt"):
        value = str(secret[name])
        for path in site.rglob("*"):
            if path.is_file() and path.suffix in (".html", ".js", ".css"):
                assert value not in path.read_text(encoding="utf-8"), (name, path)
    assert "sealed" in (site / "index.html").read_text()
    # The trace windows hold what the agents were shown, as the dashboard serves it: no
    # hidden market field, outcome draw or seed.
    windows = list(site.glob("runs/*/trace/w*.js"))
    assert len(windows) > 20
    for path in windows:
        text = path.read_text(encoding="utf-8")
        view = json.loads(text[text.index(",") + 1 : text.rindex(");")])
        assert hidden_names_in(view) == [], path


def test_marks_come_from_the_replay(sweeps: Path, tmp_path: Path) -> None:
    """A run whose record verifies is marked verified and ranked; one edited after its run (net
    assets raised by 1,000) is left out of the ranking and named with its first difference."""
    short = Path(shutil.copytree(sweeps / "short", tmp_path / "short"))
    metrics = json.loads((short / "s2" / "metrics.json").read_text())
    metrics["final_net_assets"] += 1000
    (short / "s2" / "metrics.json").write_text(json.dumps(metrics))
    out = tmp_path / "site"
    summary = build_site([short, sweeps / "long"], out)
    assert summary.verified == 3  # short/s1, its copy, long/s1
    html = (out / "index.html").read_text()
    assert "short/s2" in html and "left out of the ranking: differs: metrics.json" in html
    page = (out / "runs" / "short-s2" / "index.html").read_text()
    assert "final_net_assets" in page and "diverged" in page
    assert "1/1 verified" in html and "1/2 verified" not in html  # s2 is in no ranking


def test_bad_input_gets_one_line(sweeps: Path, tmp_path: Path) -> None:
    cases = [
        ([str(tmp_path / "absent")], "no such directory"),
        ([str(tmp_path)], "no run directory"),
    ]
    for inputs, reason in cases:
        done = subprocess.run([*CLI, "site", *inputs, "--out", str(tmp_path / "o")],
                              capture_output=True, text=True)  # fmt: skip
        assert done.returncode != 0 and reason in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    with pytest.raises(SiteError, match="not a site made by"):
        build_site([sweeps / "long"], mine)
    assert (mine / "notes.txt").read_text() == "keep me"
    done = subprocess.run([*CLI, "site", str(sweeps / "long"), "--out", str(mine)],
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode != 0 and len(done.stderr.strip().splitlines()) == 1
    # A site made before is replaced, with progress on stderr and the summary on stdout.
    again = tmp_path / "again"
    for _ in range(2):
        fresh = {**os.environ, "MERCHANTBENCH_CHECKS": str(tmp_path / "no-checks")}
        command = [*CLI, "site", str(sweeps / "long"), "--out", str(again), "--no-verify"]
        done = subprocess.run(command, capture_output=True, text=True, env=fresh)
        assert done.returncode == 0, done.stderr
        assert "site: 1 runs found" in done.stderr
        # --no-verify and not in the check cache: not verified, so left out of the ranking
        assert "1 runs, 0 comparable groups, 0 verified, 1 left out" in done.stdout
    assert sorted(p.name for p in again.iterdir()) == [".merchantbench-site", "assets",
                                                        "index.html", "runs"]  # fmt: skip


@pytest.mark.requires("chromium")
def test_the_site_opens_from_file_with_nothing_from_outside(sweeps, site, browser, shots) -> None:
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    requests: list[str] = []
    failures: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.on("requestfailed", lambda r: failures.append(r.url))
    page.on("pageerror", lambda e: failures.append(str(e)))
    page.goto((site / "index.html").as_uri())
    page.wait_for_load_state("load")
    assert page.locator("table.ranking").count() == 3
    assert page.evaluate(A11Y_CHECKS) == []
    page.screenshot(path=str(shots / "site-index.png"), full_page=True)
    # The ReAct run's page: the model's words, each before the tool calls it made.
    page.locator("tr[data-entry='react · scripted'] a.run-link").click()
    page.locator("#window-title").wait_for()
    run_dir = sweeps / "llm" / "react-s1"
    said = [w for w in read_words(run_dir / MODEL_WORDS_FILE) if w["window"] == 0]
    words = page.locator("#calls > li.words")
    assert words.count() == len(said) >= 2
    for i, line in enumerate(said):
        assert words.nth(i).locator("p.reasoning").inner_text() == line["reasoning"]
    first_call = page.locator("#calls > li").nth(1)
    assert said[0]["tool_calls"][0]["name"] in first_call.locator("summary").inner_text()
    assert page.locator("#model-calls tbody tr").count() == len(said)
    assert page.locator("img[src^='figures/']").count() == 5
    for i in range(5):  # every figure loaded
        assert page.locator("img").nth(i).evaluate("img => img.naturalWidth") > 0
    page.keyboard.press("ArrowRight")
    page.wait_for_function(
        "document.querySelector('#window-title').textContent.startsWith('Window 2:')"
    )
    page.keyboard.press("ArrowLeft")
    page.wait_for_function(
        "document.querySelector('#window-title').textContent.startsWith('Window 1:')"
    )
    page.locator("#calls > li.call summary").nth(2).click()
    assert page.evaluate(A11Y_CHECKS) == []
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(shots / "site-run.png"), full_page=True)
    page.click("text=all results")
    page.locator("table.ranking").first.wait_for()
    page.close()
    inside = site.resolve().as_uri() + "/"
    assert requests and all(url.startswith(inside) for url in requests), requests
    assert not failures, failures
