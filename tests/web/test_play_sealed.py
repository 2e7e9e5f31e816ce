"""`merchantbench play --sealed`, started as the command it is: a participant plays the printed
link in Chromium to the end of the run, every form of every section submitted; no page or
network answer carries hidden state, the seed (in any form) or its salt; the record is sealed
(a commitment, no seed) and `merchantbench reveal` opens it afterwards."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
from pathlib import Path

from test_hidden import submit_every_form
from typer.testing import CliRunner
from web_support import assert_clean, collect_answers

from merchantbench.cli import app
from merchantbench.record.sealed import SEED_FILE
from merchantbench.seeds import is_sealed_range, verify_commitment

DAYS = 2  # four windows


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_play(directory: Path, port: int) -> tuple[subprocess.Popen[str], str]:
    """`merchantbench play --sealed` in a process of its own; returns it and the printed link."""
    options = ["--scenario", "smoke", "--sealed", "--days", str(DAYS), "--dir", str(directory)]
    command = [sys.executable, "-m", "merchantbench.cli", "play", *options, "--port", str(port)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=dict(os.environ))
    assert process.stdout is not None
    link = process.stdout.readline().strip().split(": ", 1)[1]  # "p1: http://…/play/<token>"
    assert link.startswith(f"http://127.0.0.1:{port}/play/")
    return process, link


def call(page, link: str, tool: str, args: dict) -> dict:
    """A tool call the page makes itself (its own fetch), so its answer is a network answer."""
    script = """async ([url, body]) => {
        const r = await fetch(url, {method: "POST", headers: {"Content-Type": "application/json"},
                                    body: JSON.stringify(body)});
        return await r.json();
    }"""
    return page.evaluate(script, [f"{link}/call/{tool}", args])["result"]


def play_to_the_end(page, link: str) -> int:
    page.wait_for_selector("#help-close", timeout=60_000)  # the server opens the store first
    page.click("#help-close")
    row = call(page, link, "search_products", {"page_size": 1})["rows"][0]
    product, supplier = row[0], row[8]
    listed = call(page, link, "list_product", {"items": [{"product_id": product, "sale_price": 9}]})
    assert listed["ok"]
    page.click("#end-window")
    page.wait_for_function("document.querySelector('#clock').textContent.includes('window 2 of')")
    ids = {"product_id": product, "supplier_id": supplier, "sale_price": "9.5"}
    orders = call(page, link, "query_my_orders", {})
    if orders["rows"]:
        ids["order_id"] = str(orders["rows"][0][0])
    submitted = submit_every_form(page, ids)
    for _ in range(DAYS * 2 - 1):
        page.click("#end-window")
        page.wait_for_timeout(200)
    page.locator("#finished").wait_for(state="visible", timeout=30_000)
    page.reload()  # the finished store, shown again
    page.locator("#finished").wait_for(state="visible")
    return submitted


def test_a_sealed_playground_never_shows_its_seed(tmp_path: Path, browser) -> None:
    directory, port = tmp_path / "play", free_port()
    process, link = start_play(directory, port)
    try:
        page = browser.new_page()
        answers = collect_answers(page)
        page.goto(link, timeout=120_000)
        submitted = play_to_the_end(page, link)
        page.goto(f"http://127.0.0.1:{port}/play/not-a-token")
        page.close()
    finally:
        process.send_signal(signal.SIGINT)  # Ctrl-C: the store is saved
        process.communicate(timeout=60)
    run_dir = directory / "p1"
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["seed"] is None and meta["ended"] == "completed"
    assert stat.S_IMODE((run_dir / SEED_FILE).stat().st_mode) == 0o600
    result = CliRunner().invoke(app, ["reveal", str(run_dir), "--json"])
    assert result.exit_code == 0, result.output
    facts = json.loads(result.stdout)
    seed = int(facts["seed"])
    assert is_sealed_range(seed) and facts["commitment"] == meta["seed_commitment"]["sha256"]
    assert verify_commitment(seed, facts["salt"], facts["commitment"])
    assert submitted >= 10 and len(answers) > submitted
    assert_clean(answers, secret=seed)
    bodies = " ".join(body for _, body in answers)
    forms = [f"{seed:x}", str(seed >> 64), str(seed & (2**64 - 1)), facts["salt"], str(tmp_path)]
    assert not [form for form in forms if form in bodies]
