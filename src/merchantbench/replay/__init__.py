"""Replay a run record's actions in a fresh session: check it (`verify_record`), or reach the
state it had at any window (`snapshots`, `restore`), e.g. to fork it (docs/verify.md).

A run is deterministic: the same scenario, market, seed and actions give the same answers, the
same window closes, the same state hash and the same metrics. The record keeps all of them
(`run.json`, `trace.jsonl`, `transcript.jsonl`, the tables, `metrics.json`), so anyone holding
it can play its actions again and compare, without the agent that made them:

    from merchantbench.replay import restore, snapshots, verify_record

    report = verify_record(Path("runs/x"))          # VerifyReport; ReplayError if unreadable
    print(report.ok, report.first_divergence)
    for window, session in snapshots(Path("runs/x"), [10, 200]):   # one replay pass
        print(window, session.state_hash())
    session = restore(Path("runs/x"), 100)          # the session as window 100 opened
    for window, blob in snapshot_blobs(Path("runs/x"), [10, 200], fast=True):  # Session.snapshot()
        print(window, len(blob))

`fast=True` rebuilds the store only (reads counted, not made; no transcript): how a fork or a
counterfactual analysis reaches its windows.

Above the driver (`merchantbench.runs`) and below the front ends: it imports no front end.
"""

from merchantbench.replay.divergence import Divergence
from merchantbench.replay.snapshots import copy_session, restore, snapshot_blobs, snapshots
from merchantbench.replay.source import ReplayError
from merchantbench.replay.verify import VerifyReport, verify_record

__all__ = [
    "Divergence",
    "ReplayError",
    "VerifyReport",
    "copy_session",
    "restore",
    "snapshot_blobs",
    "snapshots",
    "verify_record",
]
