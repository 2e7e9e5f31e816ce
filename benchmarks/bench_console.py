"""The playground's cost to a person: UI actions (clicks, keys, typed characters) and browser time
per window for the rule-based agent's workload (tests/web/console_driver.py), and the projected
active time of a paper year.

The server runs in its own process (`merchantbench study create` then `merchantbench play`), from
this checkout or, with `--src`, from another version's `src/` (the forms page before issue 22:
`git archive 7dcdb94 src | tar -x -C /tmp/base`, then `--src /tmp/base/src --ui forms`).
Chromium is driven by Playwright; each gesture's browser time runs from the gesture to the first
frame after the page is idle again, measured in the page (console_driver.INSTRUMENT).

Projected active time (docs/web.md, "What a year costs a person"): every action costs the
Keystroke-Level Model's operator times (Card, Moran and Newell): a click is point + press
(1.10 + 0.20 s), a key press 0.28 s (an average typist), a typed character 0.28 s, plus one
mental preparation (1.35 s) per click or command key (not per typed character); then the page's
own time. Mean per window (the first window, which sets the search filters, included) × the
paper's 730 windows. Reading time is not modelled.

    uv run python benchmarks/bench_console.py [--windows 32] [--ui console|forms] [--src DIR]

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

from console_driver import INSTRUMENT, ConsoleDriver, FormsDriver, Ui  # noqa: E402

PAPER_WINDOWS = 730
CLICK, KEY, MENTAL = 1.30, 0.28, 1.35  # seconds (KLM: P + B, K, M)


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


def run(windows: int, ui_kind: str, src: str | None, scenario: str, seed: int) -> dict:
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
            driver = ConsoleDriver(ui) if ui_kind == "console" else FormsDriver(ui)
            per_window, person = [], []
            for _ in range(windows):
                actions, marks = ui.actions, len(ui.labels)
                driver.play_window()
                per_window.append(ui.actions - actions)
                labels = ui.labels[marks:]
                typed = sum(1 for lab in labels if lab == "typed")
                clicks = sum(1 for lab in labels if lab.startswith("click") or lab == "choose")
                keys = len(labels) - typed - clicks
                person.append(clicks * (CLICK + MENTAL) + keys * (KEY + MENTAL) + typed * KEY)
            browser_times = ui.browser_times()
            gestures = ui.gestures()
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    page_seconds = sum(browser_times) / windows
    per_window_seconds = statistics.mean(person) + page_seconds
    return {
        "ui": ui_kind,
        "scenario": scenario,
        "seed": seed,
        "windows": windows,
        "actions_per_window": round(statistics.mean(per_window), 2),
        "actions_per_window_after_first": round(statistics.mean(per_window[1:]), 2),
        "actions_by_window": per_window,
        "gestures_timed": len(browser_times),
        "browser_ms_p50": round(1000 * percentile(browser_times, 0.50), 1),
        "browser_ms_p95": round(1000 * percentile(browser_times, 0.95), 1),
        "browser_ms_max": round(1000 * max(browser_times), 1),
        "person_seconds_per_window": round(statistics.mean(person), 2),
        "page_seconds_per_window": round(page_seconds, 3),
        "paper_year_hours": round(per_window_seconds * PAPER_WINDOWS / 3600, 2),
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
    parser.add_argument("--windows", type=int, default=32)
    parser.add_argument("--ui", choices=("console", "forms"), default="console")
    parser.add_argument("--src", default=None, help="another version's src/ (its server)")
    parser.add_argument("--scenario", default="small")
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    print(json.dumps(run(args.windows, args.ui, args.src, args.scenario, args.seed), indent=1))


if __name__ == "__main__":
    main()
