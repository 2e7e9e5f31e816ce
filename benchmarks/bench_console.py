"""The playground's cost to a person, projected to a paper year with a published model of
human performance, reading included (docs/web.md, "What a year costs a person").

Two workloads, played in Chromium with keys and clicks only against a server in its own process
(`merchantbench study create`, then `merchantbench play`; `--src` runs another version's src/):

- `competent` (the default; tests/web/console_driver.CompetentDriver) on `paper`: the search
  set once, ~20 listings kept, fast-forward until a supplier event on a listing, the balance
  under 500 RMB or a star change; at each stop every digest line is read (its summary, batches
  and headings), each batch previewed, read and done with one key, the listings refilled to 20
  from the search, listings without a sale in 7 days pruned once a week.
- `rule-based` (ConsoleDriver / FormsDriver): the rule-based agent's routine, window by window
  (the figures of issue 22's console; `--ui forms` for the forms page it replaced).

The model: the Keystroke-Level Model (Card, Moran and Newell, "The Keystroke-Level Model for
User Performance Time with Interactive Systems", CACM 23(7), 1980): K 0.28 s a key or typed
character (an average 40 wpm typist), P 1.10 s to point, B 0.10 s a button press or release
(a click is P + 2B), H 0.40 s to move a hand between keyboard and mouse, M 1.35 s of mental
preparation before each click or command key (one per run of the same key: J J J is one
chunk), the page's own time as the system's response (measured in the browser); plus reading,
0.252 s a word (238 words a minute, the mean silent reading rate of English non-fiction in
Brysbaert, "How many words do we read per minute? A review and meta-analysis of reading rate",
Journal of Memory and Language 109, 2019), counted on the words the person reads on the page
(tests/web/console_driver: DIGEST_READ, PREVIEW, STATUS, ROW_READ); a scroll to an off-screen
target costs P + M (our assumption: KLM has no scroll operator). Per window = the run's total /
windows played (those the fast-forward passed over included) × the paper's 730 windows.

    uv run python benchmarks/bench_console.py [--workload competent] [--windows 120]
    uv run python benchmarks/bench_console.py --workload rule-based --scenario small --windows 32

Results are recorded in docs/web.md and docs/performance.md ("## Playground console").
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "web"))

from console_driver import (  # noqa: E402
    INSTRUMENT,
    CompetentDriver,
    ConsoleDriver,
    FormsDriver,
    Ui,
    window_index,
)

PAPER_WINDOWS = 730
K, P, B, H, M = 0.28, 1.10, 0.10, 0.40, 1.35  # seconds (KLM, Card, Moran and Newell 1980)
CLICK = P + 2 * B
SCROLL = P + M  # our assumption (KLM has no scroll operator)
WORD = 60 / 238  # seconds a word (Brysbaert 2019: 238 words a minute, non-fiction)


def klm_seconds(labels: list[str]) -> dict[str, float]:
    """The KLM time of a sequence of gestures (Ui.labels), by operator."""
    out = {"K": 0.0, "P+B": 0.0, "H": 0.0, "M": 0.0, "scroll": 0.0}
    hand, previous = None, None
    for label in labels:
        if label == "scroll":
            out["scroll"] += SCROLL
            continue
        mouse = label.startswith("click") or label == "choose"
        if hand is not None and mouse != hand:
            out["H"] += H
        hand = mouse
        if mouse:
            out["P+B"] += CLICK
        else:
            out["K"] += K
        if label != "typed" and label != previous:
            out["M"] += M
        previous = label
    return out


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def cli(args: list[str], src: str | None) -> subprocess.Popen[str]:
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = src
    command = [sys.executable, "-m", "merchantbench.cli", *args]
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run(
    windows: int, ui_kind: str, src: str | None, scenario: str, seed: int, workload: str
) -> dict:
    from playwright.sync_api import sync_playwright

    from merchantbench.optional_parts import chromium_path

    work = Path(tempfile.mkdtemp(prefix="bench-console-"))
    port = free_port()
    study = str(work / "study")
    options = ["--scenario", scenario, "--seed", str(seed), "--dir", study, "--port", str(port)]
    create = cli(["study", "create", "--participants", "1", *options], src)
    out, _ = create.communicate(timeout=600)
    link = next(line.split(": ", 1)[1] for line in out.splitlines() if "/play/" in line)
    server = cli(["play", "--dir", study, "--port", str(port)], src)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(chromium_path()), args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.add_init_script(INSTRUMENT)
            deadline = time.monotonic() + 60
            while True:
                try:
                    page.goto(link)
                    break
                except Exception:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.3)
            page.click("#help-close")
            ui = Ui(page)
            per_window: list[int] = []
            stops = 0
            if workload.startswith("competent"):
                driver = CompetentDriver(ui, batches=workload == "competent")
                driver.setup()
                first = ui.actions
                per_window.append(first)
                while window_index(ui) < windows and not ui.read("() => over"):
                    driver.stop(window_index(ui))
                    ended = driver.forward()
                    stops += 1
                    if ended == 0:
                        break
                played = window_index(ui)
                digest_words = driver.digest_words_all
                net_assets = ui.read("() => document.querySelector('#net-assets').textContent")
                listings = ui.read("() => store.active_listings")
            else:
                digest_words = net_assets = listings = None
                play = ConsoleDriver(ui) if ui_kind == "console" else FormsDriver(ui)
                for _ in range(windows):
                    actions = ui.actions
                    play.play_window()
                    per_window.append(ui.actions - actions)
                played = windows
            browser_times = ui.browser_times()
            gestures = ui.gestures()
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    klm = klm_seconds(ui.labels)
    reading = ui.read_words * WORD
    page_seconds = sum(browser_times)
    person = sum(klm.values()) + reading
    per_window_seconds = (person + page_seconds) / played
    actions = ui.actions
    return {
        "workload": workload,
        "ui": ui_kind,
        "scenario": scenario,
        "seed": seed,
        "windows_played": played,
        "stops": stops,
        "actions": actions,
        "actions_per_window": round(actions / played, 2),
        "actions_per_window_after_setup": round((actions - per_window[0]) / max(played - 1, 1), 2)
        if workload.startswith("competent")
        else round(statistics.mean(per_window[1:]), 2),
        "actions_per_stop": round((actions - per_window[0]) / max(stops, 1), 2)
        if workload.startswith("competent")
        else None,
        "scrolls": ui.labels.count("scroll"),
        "words_read": ui.read_words,
        "words_read_by": ui.words_by,
        "digest_words_shown": digest_words,
        "net_assets_at_the_end": net_assets,
        "listings_at_the_end": listings,
        "seconds_by_operator": {k: round(v, 1) for k, v in klm.items()},
        "reading_seconds": round(reading, 1),
        "page_seconds": round(page_seconds, 1),
        "seconds_per_window": round(per_window_seconds, 2),
        "paper_year_hours": round(per_window_seconds * PAPER_WINDOWS / 3600, 2),
        "paper_year_hours_without_reading": round(
            (per_window_seconds - reading / played) * PAPER_WINDOWS / 3600, 2
        ),
        "browser_ms_p50": round(1000 * percentile(browser_times, 0.50), 1),
        "browser_ms_p95": round(1000 * percentile(browser_times, 0.95), 1),
        "load_average": os.getloadavg()[0],
        **breakdown(gestures),
    }


def breakdown(gestures: list[dict]) -> dict:
    """Where a gesture's time goes: on the server (its `Server-Timing`), on the wire and in
    the server's framework (each request's time less the server's), and in the page (the
    gesture's time less its requests'), with the slowest kinds of gesture."""
    rows = []
    for g in gestures:
        wire = sum(f["ms"] for f in g["fetches"])
        server = sum(f["server"] or 0.0 for f in g["fetches"])
        rows.append({**g, "wire": wire, "server": server, "page": max(g["ms"] - wire, 0.0)})
    if not rows:
        return {}
    kinds: dict[str, list[dict]] = {}
    for r in rows:
        kinds.setdefault(r["what"], []).append(r)

    def p(values: list[float], q: float) -> float:
        return round(percentile(values, q), 1)

    slowest = sorted(kinds.items(), key=lambda kv: -percentile([r["ms"] for r in kv[1]], 0.95))
    return {
        "server_ms_p50_p95": [p([r["server"] for r in rows], q) for q in (0.5, 0.95)],
        "wire_less_server_ms_p50_p95": [
            p([r["wire"] - r["server"] for r in rows], q) for q in (0.5, 0.95)
        ],
        "page_ms_p50_p95": [p([r["page"] for r in rows], q) for q in (0.5, 0.95)],
        "over_150_ms": sum(1 for r in rows if r["ms"] > 150),
        "kinds": {
            what: {
                "n": len(rs),
                "ms_p50_p95": [p([r["ms"] for r in rs], q) for q in (0.5, 0.95)],
                "server_ms_mean": round(statistics.mean(r["server"] for r in rs), 1),
                "wire_ms_mean": round(statistics.mean(r["wire"] for r in rs), 1),
                "page_ms_mean": round(statistics.mean(r["page"] for r in rs), 1),
                "requests": sorted({f["path"] for r in rs for f in r["fetches"]}),
            }
            for what, rs in slowest[:12]
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--workload", choices=("competent", "competent-lines", "rule-based"), default="competent"
    )
    parser.add_argument("--windows", type=int, default=120, help="windows to play (at least)")
    parser.add_argument("--ui", choices=("console", "forms"), default="console")
    parser.add_argument("--src", default=None, help="another version's src/ (its server)")
    parser.add_argument("--scenario", default="paper")
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    found = run(args.windows, args.ui, args.src, args.scenario, args.seed, args.workload)
    print(json.dumps(found, indent=1))


if __name__ == "__main__":
    main()
