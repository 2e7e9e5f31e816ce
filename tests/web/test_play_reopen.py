"""A playground server restarted after a store finished shows it again (issue 32): the finished
record is read back (`RunLifecycle.read_finished`), never resumed nor written again. A kill at
any step of the finish (runs/kill_points.py: `finish`, `tables`, `metrics`, `finished`) leaves
files a restarted server serves: resumed and finished again, or read back and signed; the
record's files are those of a store never killed, its journal is gone, and no temporary file a
cut write left is signed with it. A damaged record
answers a structured 409, never a 500."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from crash_harness import assert_same_record
from merchantbench.record.attest import ATTESTATION_FILE, check_attestation, trusted_keys
from merchantbench.record.schema import METRICS_FILE
from merchantbench.runs.kill_points import KILL_ENV
from merchantbench.scenario import load_scenario
from merchantbench.web.app import create_web_app
from merchantbench.web.room import PlayRoom
from merchantbench.web.store import PlayStore

SCENARIO = load_scenario("smoke", overrides=["clock.days=2"])  # 4 windows
SEED = 5


def _play_to_the_end(store: PlayStore) -> None:
    """A short plan: list two best sellers in the first window, then end windows (each action
    with a key and its window, as the page sends it)."""
    found = store.call("search_products", {"page_size": 2, "sort": "sales_30d"}, "s", 0)
    at = found["columns"].index
    items = [{"product_id": r[at("product_id")], "sale_price": round(r[at("price")] * 1.5, 2)}
             for r in found["rows"]]  # fmt: skip
    assert store.call("list_product", {"items": items}, "l", 0)["ok"]
    while not store.over:
        window = store.surface.window
        store.call("end_of_step", {}, f"e{window}", window)


def _finished(root: Path) -> tuple[Path, str, PlayStore]:
    [seat] = PlayRoom(root).create(SCENARIO, [SEED])
    store = PlayRoom(root).store(seat.token)
    assert store is not None
    _play_to_the_end(store)
    return root / seat.run, seat.token, store


def _state(root: Path, token: str) -> dict[str, Any]:
    """GET /state from a server started afresh on `root` (a restart)."""
    with TestClient(create_web_app(play_dir=root)) as http:
        answer = http.get(f"/play/{token}/state")
        assert answer.status_code == 200, answer.text
        assert http.get(f"/play/{token}").status_code == 200  # the page too
        refused = http.post(f"/play/{token}/call/end_of_step", json={}).json()["result"]
        assert refused["ok"] is False and refused["error"]["code"] == "run_over"
        state: dict[str, Any] = answer.json()
        return state


def test_a_finished_store_is_shown_again_after_a_restart(tmp_path: Path) -> None:
    run, token, store = _finished(tmp_path / "room")
    before = store.state()  # what the server that finished it showed
    files = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
    after = _state(tmp_path / "room", token)
    assert after["over"] and after["final"] == before["final"] and after["final"]
    assert after["store"] == before["store"] and after["clock"] == before["clock"]
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()} == files


@pytest.mark.parametrize("point", ["finish", "tables", "metrics", "finished"])
def test_a_kill_while_finishing_leaves_a_store_a_restart_serves(tmp_path: Path, point: str) -> None:
    reference, _, _ = _finished(tmp_path / "whole")
    [seat] = PlayRoom(tmp_path / "killed").create(SCENARIO, [SEED])
    run = tmp_path / "killed" / seat.run
    cut = run / "checkpoint" / ".state.pkl.k1lled00.tmp"  # a write an earlier kill cut short
    cut.write_bytes(b"half a checkpoint")
    pid = os.fork()
    if pid == 0:  # the server that finishes the store, killed at `point`
        try:
            os.environ[KILL_ENV] = point
            store = PlayRoom(tmp_path / "killed").store(seat.token)
            assert store is not None
            _play_to_the_end(store)
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, point
    assert _state(tmp_path / "killed", seat.token)["over"]
    assert_same_record(run, reference)  # the files, byte for byte, and no journal
    assert not cut.exists()  # removed as the store resumed, never signed
    assert check_attestation(run, trusted_keys()).ok  # signed, as `finish` signs


def test_a_damaged_record_answers_a_structured_error(tmp_path: Path) -> None:
    run, token, _ = _finished(tmp_path / "room")
    (run / METRICS_FILE).write_bytes(b'{"final_net_')
    (run / ATTESTATION_FILE).unlink()
    with TestClient(create_web_app(play_dir=tmp_path / "room")) as http:
        answer = http.get(f"/play/{token}/state")
        assert answer.status_code == 409, answer.text
        reason = answer.json()["error"]
        assert "cannot be opened" in reason and str(tmp_path) not in reason
        assert http.get(f"/play/{token}/state").status_code == 409  # asked again, same answer
    assert not (run / ATTESTATION_FILE).exists()  # a record it cannot read is never signed
