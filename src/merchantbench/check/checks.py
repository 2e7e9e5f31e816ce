"""The checks: each judges recordings of the action script and answers pass/fail with a line.

- `script`: the script played to the end of the run and every advertised tool answered.
- `determinism`: two independent runs of the same scenario, seed and script agree on the state
  hash after every call, on every result and on the final hash.
- `snapshot`: restoring a mid-run snapshot and playing on gives the same results and final hash
  as playing on from the snapshot the first time.
- `refusals`: a refused call, a read and an idempotent replay leave the state hash unchanged,
  and every probe the script meant to be refused was.
- `ledger`: at every window's opening and after the end, the ledger's movements sum exactly to
  the accounts, no account is negative, net assets are their sum, the agent's `query_balance`
  shows the same accounts, and a drained run has nothing in transit or receivable.
- `agreement` (only when asked for, with a reference adapter): the front end and the reference
  give the same calls, results, outputs and state hashes.
- `hidden`: no hidden name (`merchantbench.catalog.hidden`) and not the seed in the brief, any
  observation or any tool result; in a market (`--adapter market`), nor another merchant's
  private note (`OTHER_MERCHANT_MARK`, which the rival writes into its memory every window).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from merchantbench.catalog.hidden import hidden_names_in
from merchantbench.check.adapter import LedgerReport
from merchantbench.check.play import Recording, Step
from merchantbench.seeds import is_sealed_range

__all__ = [
    "SEED_DIGITS",
    "CheckResult",
    "agreement",
    "determinism",
    "hidden",
    "ledger",
    "refusals",
    "script",
    "snapshot",
]

# A seed with fewer digits is too common a number to look for by value (only by name).
SEED_DIGITS = 6
# What the rival merchant of the market adapter keeps private (check/market_adapter.py).
OTHER_MERCHANT_MARK = "rival-private-note-7f3c"
ACCOUNTS = ("balance", "deposit", "in_transit", "receivable")


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One check's verdict."""

    name: str
    ok: bool
    detail: str


def script(rec: Recording, windows: int) -> CheckResult:
    """The script ran to the end of the run and every advertised tool answered `ok` once."""
    if rec.failure:
        return CheckResult("script", False, f"the play broke off: {rec.failure}")
    played = len({s.window for s in rec.steps})
    answered = {s.call.tool for s in rec.steps if s.result.get("ok")}
    missing = [name for name in rec.tools if name not in answered]
    if played != windows or missing or not rec.tools:
        why = f"{played} of {windows} windows played; never answered ok: {missing or 'no tools'}"
        return CheckResult("script", False, why)
    line = f"{len(rec.steps)} calls over {played} windows; all {len(rec.tools)} tools answered"
    return CheckResult("script", True, line)


def determinism(one: Recording, two: Recording) -> CheckResult:
    """Two independent runs agree call by call."""
    why = _divergence(one, two)
    if why:
        return CheckResult("determinism", False, f"run 2 differs from run 1: {why}")
    line = (f"2 runs of {len(one.steps)} calls agree after every call and in every output; "
            f"final state hash {one.final_hash[:12]}")  # fmt: skip
    return CheckResult("determinism", True, line)


def agreement(mine: Recording, theirs: Recording, name: str) -> CheckResult:
    """Two front ends on the same scenario and seed play the script identically."""
    why = _divergence(theirs, mine)
    if why:
        return CheckResult("agreement", False, f"differs from adapter {name}: {why}")
    line = f"the same {len(mine.steps)} calls, results, outputs and state hashes as adapter {name}"
    return CheckResult("agreement", True, line)


def _divergence(one: Recording, two: Recording) -> str | None:
    """Where two whole plays part (calls, results, hashes, brief, observations), or None."""
    diverged = _first_difference(one.steps, two.steps) or one.failure or two.failure
    if not diverged and (one.brief, one.observations) != (two.brief, two.observations):
        diverged = "the brief or a window's observation differs"
    if not diverged and one.final_hash != two.final_hash:
        diverged = f"final state hash {one.final_hash[:12]} vs {two.final_hash[:12]}"
    return diverged


def snapshot(first: Recording, again: Recording, window: int, restored: bool) -> CheckResult:
    """Playing on from a restored snapshot repeats the first continuation exactly."""
    if not restored:
        return CheckResult("snapshot", False, f"restore did not bring back window {window}'s state")
    why = _first_difference(first.steps, again.steps) or first.failure or again.failure
    if not why and first.observations != again.observations:
        why = "a window's observation differs"
    if not why and first.final_hash != again.final_hash:
        why = "the final state hashes differ"
    if why:
        return CheckResult("snapshot", False, f"after restoring window {window}: {why}")
    line = (f"snapshot at window {window}, restored: the {len(again.steps)} calls after it "
            f"repeat their results and the final hash")  # fmt: skip
    return CheckResult("snapshot", True, line)


def _first_difference(one: list[Step], two: list[Step]) -> str | None:
    for a, b in zip(one, two, strict=False):
        if a.call != b.call:
            return f"{a.where}: the script chose {b.call.tool} instead"
        if a.result != b.result:
            return f"{a.where}: a different result"
        if a.hash_after != b.hash_after:
            return f"{a.where}: a different state hash"
    if len(one) != len(two):
        return f"{len(one)} calls vs {len(two)}"
    return None


def refusals(rec: Recording) -> CheckResult:
    """Refusals, reads and idempotent replays change nothing; probes are refused."""
    codes: set[str] = set()
    first_by_key: dict[str, dict[str, Any]] = {}
    for step in rec.steps:
        refused = not step.result.get("ok")
        if refused:
            codes.add(str((step.result.get("error") or {}).get("code")))
        elif step.call.idempotency_key and step.call.expect != "replay":
            first_by_key.setdefault(step.call.idempotency_key, step.result)
        problem = _refusal_problem(step, refused, rec.writes, first_by_key)
        if problem:
            return CheckResult("refusals", False, f"{step.where}: {problem}")
    count = sum(1 for s in rec.steps if not s.result.get("ok"))
    if not count:
        return CheckResult("refusals", False, "no call was refused: the probes were not played")
    line = (f"{count} refused calls ({len(codes)} codes: {', '.join(sorted(codes))}), reads and "
            f"idempotent replays left the state hash unchanged")  # fmt: skip
    return CheckResult("refusals", True, line)


def _refusal_problem(
    step: Step, refused: bool, writes: set[str], first: dict[str, dict[str, Any]]
) -> str | None:
    expect, changed = step.call.expect, step.hash_before != step.hash_after
    if expect == "refused" and not refused:
        return "a call that must be refused was accepted"
    if expect == "replay" and step.result != first.get(step.call.idempotency_key or ""):
        return "an idempotent replay answered differently from the first call"
    if changed and (refused or expect == "replay" or step.call.tool not in writes):
        kind = "refused call" if refused else "replay" if expect == "replay" else "read"
        return f"a {kind} changed the state hash"
    return None


def ledger(rec: Recording) -> CheckResult:
    """The ledger identity at every window's opening and after the end."""
    reports = [(f"window {w}", r) for w, r in sorted(rec.ledgers.items())]
    if rec.final_ledger is not None:
        reports.append(("the end", rec.final_ledger))
    for where, report in reports:
        problem = _identity_problem(report)
        if problem:
            return CheckResult("ledger", False, f"{where}: {problem}")
    final = rec.final_ledger
    if final is None or not final.drained:
        return CheckResult("ledger", False, f"the run did not end and drain: {rec.failure}")
    if final.accounts[2:] != (0, 0):
        return CheckResult("ledger", False, f"drained, yet in transit/receivable: {final}")
    problem = _shown_problem(rec)
    if problem:
        return CheckResult("ledger", False, problem)
    line = (f"identity exact at {len(reports)} points; query_balance agrees with the ledger; "
            f"final net assets {final.net_assets / 100:.2f}")  # fmt: skip
    return CheckResult("ledger", True, line)


def _shown_problem(rec: Recording) -> str | None:
    """Where `query_balance` shows other accounts than the ledger at that window's opening.

    Accounts move only while hours are simulated (docs/design.md §2), never during a window's calls.
    """
    for step in rec.steps:
        report = rec.ledgers.get(step.window)
        if step.call.tool != "query_balance" or not step.result.get("ok") or report is None:
            continue
        shown = tuple(_fen(step.result.get(name)) for name in (*ACCOUNTS, "net_assets"))
        if shown != (*report.accounts, report.net_assets):
            return f"{step.where} shows {shown} (fen), the ledger {report.accounts}"
    return None


def _identity_problem(report: LedgerReport) -> str | None:
    (b0, d0), accounts = report.initial, report.accounts
    opening = (b0, d0, 0, 0)
    summed = tuple(start + moved for start, moved in zip(opening, report.movements, strict=True))
    if summed != accounts:
        return f"opening + movements {summed} != accounts {accounts}"
    if min(accounts) < 0:
        return f"a negative account {accounts}"
    if sum(accounts) != report.net_assets:
        return f"net assets {report.net_assets} != the accounts' sum {sum(accounts)}"
    return None


def _fen(rmb: Any) -> int | None:
    return round(rmb * 100) if isinstance(rmb, int | float) and not isinstance(rmb, bool) else None


def _seed_patterns(seed: int) -> list[re.Pattern[str]]:
    """How a seed could show: its decimal value, and for a sealed-range seed its hex and its
    two 64-bit words too."""
    values = [str(abs(seed))]
    if is_sealed_range(seed):
        values += [f"{seed:x}", str(seed & (2**64 - 1)), str(seed >> 64)]
    return [re.compile(rf"(?<![\w.]){v}(?![\w])", re.IGNORECASE) for v in values]


def hidden(rec: Recording, seed: int) -> CheckResult:
    """No output shows a hidden name, or the seed (by value, when it is distinctive)."""
    if rec.failure or not rec.steps:
        return CheckResult("hidden", False, f"not every output was seen: {rec.failure}")
    by_value = len(str(abs(seed))) >= SEED_DIGITS
    patterns = _seed_patterns(seed)
    shown = "sealed" if is_sealed_range(seed) else str(seed)  # a sealed seed is never printed
    outputs: list[tuple[str, Any]] = [("the brief", rec.brief)]
    outputs += [(f"window {w}, observation", text) for w, text in rec.observations]
    outputs += [(step.where, step.result) for step in rec.steps]
    for where, output in outputs:
        problems = hidden_names_in(output)
        text = output if isinstance(output, str) else json.dumps(output, default=str)
        if by_value and any(p.search(text) for p in patterns):
            problems.append(f"the seed {shown}")
        if OTHER_MERCHANT_MARK in text:
            problems.append("another merchant's private note")
        if problems:
            return CheckResult("hidden", False, f"{where} shows {', '.join(problems[:3])}")
    seed_note = (
        f"nor the seed {shown}"
        if by_value
        else (f"seed {seed} not looked for by value (fewer than {SEED_DIGITS} digits)")
    )
    line = f"{len(outputs)} outputs (brief, observations, results): no hidden name, {seed_note}"
    return CheckResult("hidden", True, line)
