"""Kill -9 at random points (issue 32's crash tests): a server runs in a forked child of the test
process (its imports already done, so a restart costs a resume, not an interpreter); a scripted
client plays against it and logs every acknowledged call; a timer SIGKILLs the child after a
random 0-0.25 s, the harness starts a new child on the same files, checks that every call
acknowledged so far is in the record exactly once, and the client goes on (a call whose answer
it never got is sent again with the same key)."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import httpx

from timeouts import PROBE_SECONDS, START_SECONDS

KILLS = int(os.environ.get("MERCHANTBENCH_CRASH_KILLS", "100"))
RECORD_FILES = ("trace.jsonl", "transcript.jsonl", "metrics.json", "orders.parquet",
                "listings.parquet", "daily.parquet", "timeseries.parquet")  # fmt: skip


class Client(Protocol):
    acknowledged: list[str]  # the keys of the calls whose answers it got

    def play(self) -> bool:
        """Play on from where the run stands; True once it is over. Raises if the server is
        lost (a transport error)."""


def script_window(call: Callable[[str, dict[str, Any]], dict[str, Any]], window: int) -> None:
    """A small plan that reads answers (so a wrong answer after a restart changes the record):
    list the best sellers of the first search in window 0; read the balance every window; a
    note now and then; close the window."""
    call("query_balance", {})
    if window == 0:
        found = call("search_products", {"sort": "sales_30d", "page_size": 4})
        at = found["columns"].index
        items = [{"product_id": r[at("product_id")], "sale_price": round(r[at("price")] * 1.6, 2)}
                 for r in found["rows"]]  # fmt: skip
        assert call("list_product", {"items": items})["ok"]
    elif window % 4 == 1:
        call("write_memory_doc", {"content": f"window {window}\n", "mode": "append"})
    call("end_of_step", {})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def fork_server(serve: Callable[[int], None], port: int, health: str) -> int:
    """Run `serve(port)` in a forked child; returns its pid once `health` answers 200."""
    pid = os.fork()
    if pid == 0:
        try:
            serve(port)
        finally:
            os._exit(0)
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        try:
            answer = httpx.get(f"http://127.0.0.1:{port}{health}", timeout=PROBE_SECONDS)
            if answer.status_code < 500:
                return pid
        except httpx.TransportError:
            time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    raise AssertionError("the server did not start")


def killed_run(
    start: Callable[[], int | None],
    client: Client,
    record: Path,
    rng: random.Random,
    budget: int,
) -> int:
    """Play `client` to the end against the server `start()` forks (again after each kill),
    killing it at most `budget` times; returns the kills made. After each restart every call
    acknowledged so far must be in the trace of `record` (a run directory) exactly once.
    `start()` returns None when the run on disk is over (a kill came after its last answer)."""
    pid, kills = start(), 0
    while pid is not None:
        fired: list[int] = []

        def kill(victim: int = pid, fired: list[int] = fired) -> None:
            fired.append(victim)
            os.kill(victim, signal.SIGKILL)

        timer = threading.Timer(rng.uniform(0.0, 0.25), kill) if kills < budget else None
        if timer is not None:
            timer.start()
        try:
            over = client.play()
        except Exception:  # the server vanished mid-request (each client says it its own way)
            if timer is not None:
                timer.cancel()
                timer.join()
            if not fired:  # refused, not killed: a bug (the server must not outlive the test)
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise
            over = False
        if timer is not None:
            timer.cancel()
            timer.join()
        kills += bool(fired)
        if not fired:
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        if over:
            return kills
        pid = start()
        try:
            assert_once(record, client.acknowledged)
        except AssertionError:
            if pid is not None:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            raise
    return kills


def assert_once(record: Path, acknowledged: list[str]) -> None:
    """Every acknowledged call (by the call id or key its trace line ends with) is in the
    record's trace (a market's: its merchants') exactly once."""
    counted: dict[str, int] = {}
    for trace in sorted(record.rglob("trace.jsonl")):  # a run's, or each merchant's of a market
        for line in trace.read_text().splitlines():
            key = str(json.loads(line).get("idempotency_key", "")).rsplit(":", 1)[-1]
            counted[key] = counted.get(key, 0) + 1
    for call_id in acknowledged:
        assert counted.get(call_id) == 1, (call_id, counted.get(call_id))


def assert_same_record(record: Path, reference: Path) -> None:
    """The record is byte-identical to the uninterrupted one, and its journal is gone."""
    for name in RECORD_FILES:
        assert (record / name).read_bytes() == (reference / name).read_bytes(), name
    assert not (record / "journal.jsonl").exists()
