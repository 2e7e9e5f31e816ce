"""One participant's store at the playground: a normal run record played by a person.

The store opens its run as a `RunLifecycle` (so the record is a normal one: run.json,
trace.jsonl, checkpoint, tables and metrics at the end) driven by the `human` driver, and
marks the session's environment calls with origin `human`. Everything the pages get goes
through the run's agent surface; the clock is logical, so a store waits for its participant:
every closed window is checkpointed, and a restarted server continues where the person stopped.

When the checkpoint is taken: `call` checkpoints a closed window before it returns, unless the
caller settles later (`settle=False`, then `settle()`): the web routes answer first and
checkpoint right after the answer has gone out, so the person never waits for the checkpoint's
disk syncs. Fast-forward checkpoints by wall time while it runs (every `FORWARD_CHECKPOINT_SECONDS`,
like the CLI's `CheckpointPolicy`) and settles when it stops. Every answered action is on disk
before its answer leaves (`RunLifecycle.acknowledge`, runs/journal.py): a killed server resumes
from the checkpoint and replays the logged actions after it, so the page finds every answered
action again; one in flight when the server died may or may not be there.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from merchantbench.metrics.table1 import HEADLINE_METRICS
from merchantbench.money import rmb
from merchantbench.record.files import read_json
from merchantbench.record.manifest import read_manifest
from merchantbench.record.schema import METRICS_FILE
from merchantbench.record.sealed import read_sealed
from merchantbench.refusals import Refusal
from merchantbench.runs.lifecycle import CheckpointPolicy, RunLifecycle
from merchantbench.runs.spec import RunSpec
from merchantbench.scenario import Scenario
from merchantbench.session import Session
from merchantbench.surface import StoreStatus
from merchantbench.tools.errors import failure
from merchantbench.tools.toolset import END_OF_STEP
from merchantbench.tools.window_bound import WINDOW_ENDED, window_ended
from merchantbench.web.digest import SUPPLIER_EVENTS, Before, merge_digests, window_digest
from merchantbench.web.human import HUMAN_ORIGIN, HumanDriver

HISTORY_FILE = "web-history.json"  # what the pages drew so far (public numbers only)

# Active time (the study view): the page reports the seconds it was visible and the person had
# acted within its idle cap; a report stands for the wall-clock span of that many seconds up to
# its arrival (at most this long), and only the part of it no earlier report covered counts.
ACTIVITY_REPORT_MAX = 60.0
# Fast-forward: at most this many windows per request (the page asks again to go on), and a
# checkpoint at least this often while it runs (wall time, as the CLI's CheckpointPolicy).
FORWARD_MAX = 60
FORWARD_CHECKPOINT_SECONDS = 2.0


@dataclass(frozen=True)
class WindowPoint:
    """The public numbers at the opening of one window, from its store status."""

    window: int
    day: int
    hour: int
    net_assets: float
    rating: float
    orders: int  # customer orders placed so far
    # Since the window digest (older history files lack them: no comparison then).
    stars: int | None = None
    rating_multiplier: float | None = None
    balance: float | None = None
    deposit: float | None = None
    in_transit: float | None = None
    receivable: float | None = None

    @classmethod
    def of(cls, status: StoreStatus) -> WindowPoint:
        return cls(
            status.window,
            status.day,
            status.hour_of_day,
            status.net_assets,
            status.rating,
            status.orders_placed,
            status.stars,
            status.rating_multiplier,
            status.balance,
            status.deposit,
            status.in_transit,
            status.receivable,
        )

    def before(self) -> Before | None:
        """These numbers as the next window's digest compares with them."""
        if None in (self.stars, self.rating_multiplier, self.balance, self.deposit,
                    self.in_transit, self.receivable):  # fmt: skip
            return None
        return Before(
            rating=self.rating,
            stars=int(self.stars or 0),
            rating_multiplier=float(self.rating_multiplier or 0),
            balance=float(self.balance or 0),
            deposit=float(self.deposit or 0),
            in_transit=float(self.in_transit or 0),
            receivable=float(self.receivable or 0),
            net_assets=self.net_assets,
            orders=self.orders,
        )


# A paused store acts on nothing until the person presses Continue (`resume`): a click or key that
# reached the server from a paused page, or from another tab, changes nothing.
PAUSED_ANSWER: dict[str, Any] = failure(
    Refusal.PAUSED, "the store is paused: press Continue first (nothing was done)"
)


def stale_window(window: int, open_window: int) -> dict[str, Any]:
    """The answer to an action made for a window that is not the open one (the refusal of a
    window-bound write, tools/window_bound.py; the page counts windows from 1)."""
    refusal = window_ended(window, open_window)
    refusal["error"]["message"] = (
        f"that action was for window {window + 1}, which is not open: window "
        f"{open_window + 1} is (nothing was done)"
    )
    return refusal


def clock_of(status: StoreStatus) -> dict[str, Any]:
    """The page's clock: its numbers and the line it shows (the page draws nothing itself)."""
    window = min(status.window + 1, status.windows_total)
    left = status.windows_left
    when = f"Day {status.day}, {status.hour_of_day:02d}:00"
    if status.over and status.closed_at is not None:
        text = f"{when} · run over: the store was closed at {status.closed_at}"
    elif status.over:
        text = f"{when} · run over: all {status.windows_total} windows played"
    else:
        text = (f"{when} · window {window} of {status.windows_total} · "
                f"{left} window{'' if left == 1 else 's'} left")  # fmt: skip
    return {
        "day": status.day,
        "hour": status.hour_of_day,
        "window": window,
        "windows_total": status.windows_total,
        "windows_left": status.windows_left,
        "text": text,
    }


class PlayStore:
    """A person's store (see the module docstring). Thread-safe: one call at a time."""

    def __init__(self, spec: RunSpec, run_dir: Path, resume: bool, finished: bool = False) -> None:
        self.run_dir = run_dir
        human = HumanDriver.from_settings(spec.agent_settings)
        # The store checkpoints itself (`settle`, fast-forward), never by the lifecycle's policy.
        never = CheckpointPolicy(seconds=math.inf)
        if finished:  # shown as it ended (a restarted server), never written again
            self.life = RunLifecycle.read_finished(spec, run_dir, human)
        else:
            self.life = RunLifecycle.open(
                spec, run_dir, resume=resume, driver=human, checkpoints=never
            )
        self.life.session.env_origin = HUMAN_ORIGIN
        self.surface = self.life.surface
        self.lock = threading.Lock()
        self._unsaved = False  # a window closed since the last checkpoint
        # The pages' file may run ahead of the checkpoint a killed server resumed from.
        window = self.surface.window
        self.history, self.passed, saved = _read_history(run_dir, window)
        self.paused: bool = bool(saved.get("paused", False))
        self.active_seconds = _number(saved.get("active_seconds"))
        last = saved.get("last_activity")
        self.last_activity: float | None = _number(last) if last is not None else None
        self._counted_until = float(self.last_activity or 0.0)  # wall time counted up to here
        self.metrics: dict[str, Any] | None = None
        if not resume and not finished:
            self.life.checkpoint()
        if self.surface.over:
            self._finish()
        else:
            self._note_window()

    @classmethod
    def create(
        cls, scenario: Scenario, seed: int | None, run_dir: Path, participant: str
    ) -> PlayStore:
        """A new store; `seed` None makes it a sealed run (merchantbench.record.sealed)."""
        settings = {"participant": participant}
        if seed is None:
            spec = RunSpec.sealed_run("human", scenario, agent_settings=settings)
        else:
            spec = RunSpec("human", scenario, seed, settings)
        return cls(spec, run_dir, resume=False)

    @classmethod
    def reopen(cls, run_dir: Path) -> PlayStore:
        """A store of an earlier server: resumed from its checkpoint, or its finished record."""
        meta = read_manifest(run_dir)
        secret = read_sealed(run_dir) if meta.seed_commitment is not None else None
        seed = secret.seed if secret is not None else meta.seed
        if seed is None:
            raise ValueError(f"{run_dir}: the run records neither a seed nor a sealed secret")
        spec = RunSpec("human", meta.scenario_model(), seed, meta.agent.settings, sealed=secret)
        return cls(spec, run_dir, resume=meta.resumable, finished=not meta.resumable)

    # --- what the pages read --------------------------------------------------------------------
    @property
    def session(self) -> Session:
        """The host-side session (for tests and the conformance check, never the pages)."""
        return self.life.session

    @property
    def over(self) -> bool:
        return self.metrics is not None or self.surface.over

    def state(self, history: bool = True) -> dict[str, Any]:
        """Everything the page shows besides tool answers: clock, store status, observation,
        digest, history (the charts' points; None with `history` False: the page keeps its own
        until the window changes)."""
        with self.lock:
            status = self.surface.status()
            observation = "" if self.over else self.surface.observation()
            net_assets = None if self.over else status.net_assets
            if self.over and self.metrics:
                net_assets = self.metrics.get("final_net_assets")
            return {
                "clock": clock_of(status),
                "store": status.to_json(),
                "net_assets": net_assets,
                "observation": observation,
                "digest": None if self.over else self._digest(status, self.passed),
                "fines_per_order": self._fines_per_order(),
                "listed": self._listed(),
                "history": [asdict(p) for p in self.history] if history else None,
                "paused": self.paused,
                "over": self.over,
                "final": self._public_final(),
                "activity": self.activity(),
            }

    def _listed(self) -> list[str]:
        """The product ids of my listings (what query_my_listings lists), for marking rows."""
        ids = self.session.market.product_ids
        return sorted(str(ids[p]) for p in self.session.engine.state.listings)

    def _before(self) -> Before | None:
        """The previous window's numbers, when the history has them."""
        window = self.surface.window
        for point in reversed(self.history):
            if point.window < window:
                return point.before()
        return None

    def _fines_per_order(self) -> float:
        """Fines charged so far per customer order placed (what query_product_sales_stats sums
        per product), the page's "expected fines" of one more order."""
        orders = self.session.engine.state.orders
        return round(rmb(sum(o.fines for o in orders)) / len(orders), 2) if orders else 0.0

    def _digest(
        self, status: StoreStatus, passed: list[dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        """The open window's digest; with `passed` (digests of windows a fast-forward ended
        before it), all their events first (web.digest.merge_digests)."""
        digest = window_digest(self.session, status, self._before(), status.window)
        if passed:
            digest = merge_digests([*passed, digest])
        market, engine = self.session.market, self.session.engine
        listings = {str(market.product_ids[p]): p for p in engine.state.listings}
        digest["lines"] = [dict(line) for line in digest["lines"]]  # `passed` stays as it was
        for line in digest["lines"]:
            product = listings.get(line["product_id"]) if line["product_id"] else None
            line["listed"] = product is not None if line["product_id"] else None
            if product is not None:  # what reprice needs, as review_my_listings shows it
                line["sale_price_now"] = rmb(engine.state.listings[product].price)
                line["cost_now"] = rmb(engine.suppliers.state(product, engine.t).price_fen)
        return digest

    def activity(self) -> dict[str, Any]:
        """Active seconds so far and when the person last did something (Unix seconds)."""
        return {
            "active_seconds": round(self.active_seconds, 1),
            "last_activity": self.last_activity,
        }

    def note_activity(self, seconds: float) -> None:
        """The page was visible and in use for the last `seconds` (at most ACTIVITY_REPORT_MAX).
        Only the part of that span that no earlier report covered counts: however many reports
        arrive, from however many tabs, active time grows by no more than the wall time that
        passed (after a restart, than the time since the last recorded activity)."""
        claimed = float(seconds) if math.isfinite(seconds) else 0.0
        with self.lock:
            now = time.time()
            start = max(now - min(max(claimed, 0.0), ACTIVITY_REPORT_MAX), self._counted_until)
            taken = max(0.0, now - start)
            self._counted_until = max(self._counted_until, now)
            if taken > 0:
                self.active_seconds += taken
                self.last_activity = now
                self._save_history()

    def brief(self) -> str:
        return self.surface.brief()

    def tool_schemas(self) -> list[dict[str, Any]]:
        return self.surface.tool_schemas()

    # --- what the person does ---------------------------------------------------------------------
    def call(
        self,
        tool: str,
        args: Any,
        key: str | None = None,
        window: int | None = None,
        settle: bool = True,
    ) -> dict[str, Any]:
        """One tool call through the surface; `end_of_step` closes the window. `window`: the
        window (0-based) the person's action was made in; closing a window that is no longer
        open (a double click, a retry after a lost answer, a stale tab) is refused and changes
        nothing, as is any other write for it (tools/window_bound.py). The call is on disk
        before this returns (`RunLifecycle.acknowledge`). `settle`: checkpoint a closed window
        before returning (False: the caller calls `settle()` once its answer is out)."""
        with self.lock:
            if self.over:
                return failure(Refusal.RUN_OVER, "the run has ended")
            if self.paused:
                return PAUSED_ANSWER
            if tool == END_OF_STEP and window is not None and window != self.surface.window:
                return stale_window(window, self.surface.window)
            result = self.call_locked(tool, args, key, window)
            if result.get("ok") is False and result["error"].get("code") == WINDOW_ENDED:
                return stale_window(window or 0, self.surface.window)
            self.life.acknowledge()
            if settle:
                self._settle_locked()
            return result

    def settle(self) -> None:
        """Checkpoint the windows closed since the last checkpoint, if any (the web routes call
        it after their answer has been sent)."""
        with self.lock:
            self._settle_locked()

    def _settle_locked(self) -> None:
        if self._unsaved and not self.over:
            self.life.checkpoint()
        self._unsaved = False

    def forward(
        self,
        triggers: dict[str, Any],
        window: int | None = None,
        most: int = FORWARD_MAX,
        settle: bool = True,
    ) -> dict[str, Any]:
        """End windows until something needs the person: each one an `end_of_step` through the
        surface, as the End window button sends, then the triggers are checked on the new
        window's digest and status. Stops after `most` windows or when the run ends.

        Triggers (any of): `adverse` (an order outcome or a late order), `supplier` (a supplier
        event starting on one of my listings), `cash_below` (balance under this many RMB),
        `rating` (the rating moved at least this much, or the stars changed), `day` (a new day
        begins: the first window of a day). Checkpoints every `FORWARD_CHECKPOINT_SECONDS` of
        wall time while it runs, and at the end (`settle`: before returning, else the caller
        calls `settle()`).
        """
        ended, reasons = 0, list[str]()
        with self.lock:
            if self.paused:
                return {**PAUSED_ANSWER, "ended": 0}
            if window is not None and window != self.surface.window:
                return {**stale_window(window, self.surface.window), "ended": 0}
        saved_at = time.monotonic()
        seen: list[dict[str, Any]] = []  # the digest of each window it opened
        try:
            while not reasons and ended < min(most, FORWARD_MAX) and not self.over:
                with self.lock:
                    if self.over:
                        break
                    result = self.call_locked(END_OF_STEP, {})
                    if result.get("ok") is False:
                        return {**result, "ended": ended}
                    ended += 1
                    if self.over:
                        break
                    if time.monotonic() - saved_at >= FORWARD_CHECKPOINT_SECONDS:
                        self._settle_locked()
                        saved_at = time.monotonic()
                    status = self.surface.status()
                    seen.append(window_digest(self.session, status, self._before(), status.window))
                    reasons = forward_reasons(triggers, seen[-1], status, self._before())
        finally:
            with self.lock:  # the windows it passed over: their events stay in the digest
                self.passed = seen[:-1]
                self._save_history()
                self.life.acknowledge()  # every window it ended is on disk before the answer
            if settle:
                self.settle()
        return {"ok": True, "ended": ended, "stopped_by": reasons, "over": self.over}

    def call_locked(
        self, tool: str, args: Any, key: str | None = None, made_for: int | None = None
    ) -> dict[str, Any]:
        """`call` for a caller that holds the lock."""
        self.paused = False
        self.last_activity = time.time()
        if tool == END_OF_STEP:
            self.passed = []  # the person saw them: the next digest is the next window's
        answer = self.life.call(tool, args, key, made_for)
        if answer.window_closed:
            self._after_window()
        return answer.result

    def end_window(self) -> dict[str, Any]:
        return self.call(END_OF_STEP, {})

    def pause(self) -> None:
        """Come back later: save where the store stands (mid-window is fine)."""
        with self.lock:
            if self.over:
                return
            self.paused = True
            self.life.checkpoint()
            self._unsaved = False
            self._save_history()

    def resume(self) -> None:
        with self.lock:
            self.paused = False
            self._save_history()

    # --- windows, records --------------------------------------------------------------------
    def _after_window(self) -> None:
        if self.surface.over:
            self._finish()
            return
        self._note_window()
        self.life.flush()  # readers of the run directory see the closed window at once
        self._unsaved = True  # checkpointed by `settle` (or fast-forward's wall-time policy)

    def _note_window(self) -> None:
        window = self.surface.window
        if self.history and self.history[-1].window >= window:
            return
        self.history.append(WindowPoint.of(self.surface.status()))
        self._save_history()

    def _save_history(self) -> None:
        """The pages' file: replaced whole (a reader sees the old or the new one) but not synced
        to disk, unlike the record: a crash may lose its last points, never the run."""
        body = {
            "history": [asdict(p) for p in self.history],
            "paused": self.paused,
            "active_seconds": round(self.active_seconds, 1),
            "last_activity": self.last_activity,
            "passed": self.passed,
        }
        path = self.run_dir / HISTORY_FILE
        temporary = path.with_name(f".{path.name}.tmp")
        temporary.write_bytes(json.dumps(body, separators=(",", ":")).encode())
        os.replace(temporary, path)

    def _finish(self) -> None:
        metrics_file = self.run_dir / METRICS_FILE
        if self.life.finished or self.life.manifest.ended is None:
            self.metrics = self.life.store_metrics()
        elif metrics_file.is_file():
            self.metrics = read_json(metrics_file)
        else:
            self.metrics = {}

    def _public_final(self) -> dict[str, Any] | None:
        """The Table-1 headline of a finished store (the seed stays on disk)."""
        if self.metrics is None:
            return None
        return {k: self.metrics.get(k) for k in HEADLINE_METRICS}


def _read_history(
    run_dir: Path, window: int
) -> tuple[list[WindowPoint], list[dict[str, Any]], dict[str, Any]]:
    """The pages' file (`_save_history`), cut back to the open `window`: the charts' points, the
    digests fast-forward passed (each with its `window`: shown until the person ends a window
    again) and the whole file. It holds only what the pages drew: a damaged one (unreadable, or
    not of this shape) is read as empty, never refused."""
    try:
        saved = read_json(run_dir / HISTORY_FILE) if (run_dir / HISTORY_FILE).is_file() else {}
        points = [WindowPoint(**p) for p in saved.get("history", [])]
        points = [p for p in points if p.window <= window]
        passed = [d for d in saved.get("passed", []) if d.get("window", window) < window]
    except (OSError, ValueError, TypeError, AttributeError):
        return [], [], {}
    return points, passed, saved


def _number(value: Any) -> float:
    """A non-negative finite number of the pages' file, else 0."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    return float(value) if math.isfinite(value) and value >= 0 else 0.0


def forward_reasons(
    triggers: dict[str, Any], digest: dict[str, Any], status: StoreStatus, before: Before | None
) -> list[str]:
    """Why fast-forward stops at this window (empty: go on); see `PlayStore.forward`."""
    reasons = []
    kinds = [line["kind"] for line in digest["lines"]]
    if triggers.get("adverse"):
        adverse = sorted({k for k in kinds if k in ADVERSE_KINDS})
        if adverse:
            reasons.append("adverse outcome: " + ", ".join(k.replace("_", " ") for k in adverse))
    chosen = triggers.get("supplier")  # True: any supplier event; a list: those events only
    if chosen:
        wanted = SUPPLIER_STARTS if chosen is True else frozenset(chosen) & SUPPLIER_STARTS
        events = sorted({k for k in kinds if k in wanted})
        if events:
            reasons.append("supplier event: " + ", ".join(k.replace("_", " ") for k in events))
    floor = triggers.get("cash_below")
    if isinstance(floor, int | float) and not isinstance(floor, bool) and status.balance < floor:
        reasons.append(f"balance {status.balance:,.2f} RMB is below {float(floor):,.2f} RMB")
    move = triggers.get("rating")
    if isinstance(move, int | float) and not isinstance(move, bool) and before is not None:
        if status.stars != before.stars:
            reasons.append(f"stars {before.stars} → {status.stars}")
        elif abs(status.rating - before.rating) >= max(float(move), 0.01):
            reasons.append(f"rating {before.rating:.2f} → {status.rating:.2f}")
    if triggers.get("day") and status.hour_of_day == 0 and status.window > 0:
        reasons.append(f"a new day: Day {status.day}")
    return reasons


ADVERSE_KINDS = frozenset(
    ("store_closed", "stockout", "insufficient_balance", "bad_review", "return_refund",
     "returnless_refund", "cancelled", "late")
)  # fmt: skip
SUPPLIER_STARTS = frozenset(
    k for k in SUPPLIER_EVENTS if k in ("supplier_delisted", "shipment_delayed", "price_changed")
)
