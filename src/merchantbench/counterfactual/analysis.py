"""Takeover curves and what they say of a run (docs/counterfactual.md).

For each fork day d and takeover policy P, `curve_P(d)` is the final net assets if P had run
the store from the opening of day d on (the same seed: common random numbers), and
`continuing` the run's own final net assets. From them, per policy:

- **value built by d** (the idle policy's curve): what the store the agent had built by d is
  worth if nobody touches it again;
- **damage done by d**: `curve_P(0) − curve_P(d)`, what the agent's first d days cost against
  P running the store from day 0 (with P = expert: "expert takeover at d against expert from
  day 0");
- **regret by period**: for consecutive fork days d_k < d_{k+1}, `curve_P(d_k) −
  curve_P(d_{k+1})` (the last period ends with the run: `curve_P(d_k) − continuing`), what
  letting the agent run that period rather than handing over cost; they add up to
  `curve_P(0) − continuing`;
- **onset of damage**: defined against the run itself (onset.py): the damage of a period is
  what P would have kept taking over at its start rather than its end, less P's natural drift
  over the period on its own run; the first period (after the first) whose damage exceeds the
  run's own earlier rate by a margin of 3 times the store's common-random-numbers noise, then
  bisected with further forks to within 7 days.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from merchantbench.agents.registry import agent_entry
from merchantbench.counterfactual.execute import TakeoverExecutor
from merchantbench.counterfactual.onset import MIN_MARGIN_SHARE, Fork, OnsetSearch, onset_search
from merchantbench.counterfactual.parent import ForkError, Parent, fork_days
from merchantbench.counterfactual.rounds import Found, Progress, Rounds
from merchantbench.counterfactual.takeover import Kept, Policy, Takeover, TakeoverTask, play_on
from merchantbench.replay import ReplayError, snapshot_blobs

FORMAT = 1  # of counterfactual.json


@dataclass(frozen=True)
class Point:
    """One takeover: the fork day and window, and the final net assets it came to."""

    day: int
    window: int
    final_net_assets: float
    closed: bool
    seconds: float


@dataclass(frozen=True)
class Curve:
    """A policy's takeover curve over a run's fork days, and what it says (module docstring)."""

    policy: Policy
    points: list[Point]
    continuing: float
    margin: float
    start_date: str
    search: OnsetSearch | None = None  # the onset against the run itself (onset.py)

    @property
    def from_start(self) -> float:
        """The policy's year from day 0 (the fork at day 0)."""
        return self.points[0].final_net_assets

    def damage(self) -> list[tuple[int, float]]:
        start = self.from_start
        return [(p.day, round(start - p.final_net_assets, 2)) for p in self.points]

    def advantage(self) -> list[tuple[int, float]]:
        """How much taking over at each fork day beats continuing (negative: loses)."""
        return [(p.day, round(p.final_net_assets - self.continuing, 2)) for p in self.points]

    def regret_by_period(self) -> list[dict[str, Any]]:
        rows = []
        start = dt.date.fromisoformat(self.start_date)
        end_day = self.search.end_day if self.search is not None else None
        for k, point in enumerate(self.points):
            last = k + 1 == len(self.points)
            after = self.continuing if last else self.points[k + 1].final_net_assets
            to_day = None if last else self.points[k + 1].day
            first = start + dt.timedelta(days=point.day)
            until = to_day if to_day is not None else end_day
            rows.append({
                "from_day": point.day,
                "to_day": to_day,
                # the dates the period covers (its last day included) and the month of its
                # middle day: 30-day periods are not calendar months
                "dates": first.isoformat() if until is None else
                f"{first.isoformat()} – {(start + dt.timedelta(days=until - 1)).isoformat()}",
                "month": (start + dt.timedelta(days=(point.day + (until or point.day)) // 2))
                .strftime("%Y-%m"),
                "regret": round(point.final_net_assets - after, 2),
            })  # fmt: skip
        return rows

    def onset_day(self) -> int | None:
        """The onset against the run itself (onset.py), dated by bisection when it was run."""
        return None if self.search is None else self.search.onset_day

    def to_json(self) -> dict[str, Any]:
        return {
            "policy": self.policy.agent,
            "policy_settings": self.policy.settings,
            "label": self.policy.label,
            "points": [
                {
                    "day": p.day,
                    "window": p.window,
                    "final_net_assets": p.final_net_assets,
                    "closed": p.closed,
                    "seconds": round(p.seconds, 3),
                }
                for p in self.points
            ],  # fmt: skip
            "from_start": self.from_start,
            "damage": [{"day": d, "damage": v} for d, v in self.damage()],
            "advantage": [{"day": d, "advantage": v} for d, v in self.advantage()],
            "regret_by_period": self.regret_by_period(),
            "total_regret": round(self.from_start - self.continuing, 2),
            # the search's, once its forks are in (a departure's margin comes from them)
            "margin": self.margin if self.search is None else self.search.margin,
            "onset_day": self.onset_day(),
            "onset": None if self.search is None else self.search.to_json(),
        }


@dataclass(frozen=True)
class RunAnalysis:
    """The counterfactual analysis of one run: its curves under each policy."""

    parent: Parent
    every_days: int
    margin: float
    curves: list[Curve] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        manifest = self.parent.manifest
        idle = next((c for c in self.curves if c.policy.agent == "idle"), None)
        return {
            "format": FORMAT,
            "run": str(self.parent.run_dir),
            "agent": manifest.agent.name,
            "agent_settings": manifest.agent.settings,
            "scenario": manifest.scenario.name,
            "scenario_hash": manifest.scenario.hash,
            "seed": manifest.seed,
            "state_hash": manifest.state_hash,
            "initial_net_assets": manifest.initial_net_assets,
            "continuing": self.parent.final_net_assets,
            "every_days": self.every_days,
            "margin": self.margin,
            "value_built": None
            if idle is None
            else [{"day": p.day, "value": p.final_net_assets} for p in idle.points],
            "curves": [c.to_json() for c in self.curves],
        }


def default_margin(parent: Parent) -> float:
    """The least margin of any curve: MIN_MARGIN_SHARE of the initial net assets (onset.py)."""
    money = parent.scenario.money
    return round(MIN_MARGIN_SHARE * (money.initial_balance_fen + money.initial_deposit_fen)
                 / 100, 2)  # fmt: skip


def plan_windows(parent: Parent, every_days: int) -> list[tuple[int, int]]:
    """(day, window) of each fork of an analysis of `parent`."""
    if not parent.finished:
        raise ForkError(f"{parent.run_dir} has not finished: finish or resume it first")
    last = parent.windows_closed - 1  # a store closed early: no fork after its last window
    days = fork_days(every_days, parent.scenario.clock.days)
    return [(d, w) for d, w in ((d, parent.window_of_day(d)) for d in days) if w <= last]


def is_own_run(parent: Parent, policy: Policy) -> bool:
    """Whether `parent` is the policy's own run (its agent with its settings from day 0, not a
    fork, no model): then its takeovers of its own run are this run's (onset.py)."""
    if parent.agent != policy.agent or parent.plays_a_model or parent.manifest.fork is not None:
        return False
    return _resolved(policy.agent, parent.agent_settings) == _resolved(
        policy.agent, policy.settings
    )


def _resolved(agent: str, settings: dict[str, Any]) -> dict[str, Any] | None:
    """An agent's settings with its defaults filled in (a record keeps them all), or None when
    they cannot be read (then no run counts as its own)."""
    try:
        return agent_entry(agent).load().Settings(**settings).model_dump()
    except Exception:  # noqa: BLE001 — any unreadable settings: not the same run
        return None


def _own_key(parent: Parent, policy: Policy, window: int) -> tuple[Any, ...]:
    """A takeover of the policy's own run depends on the policy, the store and the window."""
    return (policy.label, parent.manifest.scenario.hash, parent.seed, str(parent.catalog), window)


def _tasks(
    parents: Sequence[Parent], policies: Sequence[Policy], every_days: int
) -> Iterator[TakeoverTask]:
    """The takeover tasks of every run, each made when one fast replay pass of its run reaches
    the fork window (the session's snapshot there, `merchantbench.replay.snapshot_blobs`: one
    pickling per fork window, whatever the policies and the executor). The day-0 takeover of a
    policy whose own run this is not keeps its own run (store and agent) at the fork windows."""
    for parent in parents:
        days = dict((w, d) for d, w in plan_windows(parent, every_days))
        later = tuple(w for w in sorted(days) if w > 0)
        for window, blob in _snapshots(parent, sorted(days)):
            for policy in policies:
                if window == 0 and is_own_run(parent, policy):
                    continue  # the policy's year from day 0 is this run: no takeover to play
                keep = later if window == 0 else ()
                yield TakeoverTask(
                    str(parent.run_dir), window, days[window], policy, parent.scenario,
                    parent.seed, parent.catalog, blob, keep,
                )  # fmt: skip


def _day0_task(parent: Parent, policy: Policy) -> TakeoverTask:
    """The day-0 takeover of `parent` by `policy`, as a task (its snapshot made again: the
    bisection starts its own-run forks from it)."""
    blob = next(b for _, b in _snapshots(parent, [0]))
    return TakeoverTask(str(parent.run_dir), 0, 0, policy, parent.scenario, parent.seed,
                        parent.catalog, blob)  # fmt: skip


def _snapshots(parent: Parent, windows: list[int]) -> Iterator[tuple[int, bytes]]:
    try:
        yield from snapshot_blobs(parent.run_dir, windows, seed=parent.seed, fast=True)
    except ReplayError as exc:
        raise ForkError(f"cannot replay {parent.run_dir}: {exc}") from None


def analyse(
    parents: Sequence[Parent],
    policies: Sequence[Policy],
    every_days: int,
    executor: TakeoverExecutor,
    *,
    margin: float | None = None,
    progress: Progress | None = None,
    bisect: bool = True,
) -> list[RunAnalysis]:
    """Analyse every run of `parents` under every policy (module docstring); the takeovers run
    on `executor` in rounds, each distinct takeover once (rounds.py): the fork grid, then the
    policy's takeovers of its own run at the fork days (onset.py; none when the run is its own
    run), then the bisection of each onset period (`bisect`). `margin` (RMB) replaces every
    curve's own margin.

    Raises:
        ForkError: a run has not finished or its replay fails.
    """
    if not policies:
        raise ForkError("name at least one takeover policy")
    rounds = Rounds(executor, progress)
    found = rounds.found
    rounds.run(
        ((t.run, t.policy.label, t.window), t) for t in _tasks(parents, policies, every_days)
    )
    for parent in parents:  # a run that is the policy's own run is its takeover at day 0
        for policy in (p for p in policies if is_own_run(parent, p)):
            own_year = Takeover(parent.final_net_assets, bool(parent.manifest.closed), 0.0)
            found[(str(parent.run_dir), policy.label, 0)] = (_day0_task(parent, policy), own_year)
    own_tasks: dict[tuple[Any, ...], TakeoverTask] = {}
    own_states: dict[tuple[str, str], dict[int, Kept]] = {}
    for parent in parents:
        for policy in policies:
            if is_own_run(parent, policy):
                continue
            start, result = found[(str(parent.run_dir), policy.label, 0)]
            # the kept states go to their tasks (and to the bisection), not into memory for
            # the whole analysis
            found[(str(parent.run_dir), policy.label, 0)] = (start, replace(result, kept={}))
            own_states[(str(parent.run_dir), policy.label)] = dict(result.kept)
            for window, kept in result.kept.items():
                own_tasks.setdefault(
                    _own_key(parent, policy, window),
                    replace(
                        start,
                        window=window,
                        session=kept.session,
                        keep=(),
                        day=window // parent.windows_per_day(),
                    ),
                )
    rounds.run(own_tasks.items())
    analyses = []
    for parent in parents:
        curves = [_curve(parent, policy, every_days, found, margin) for policy in policies]
        analyses.append(RunAnalysis(parent, every_days, default_margin(parent), curves))
    if bisect:
        onsets = {(str(a.parent.run_dir), c.policy.label) for a in analyses for c in a.curves
                  if c.search is not None and c.search.next_day() is not None}  # fmt: skip
        _bisect(analyses, rounds, {k: v for k, v in own_states.items() if k in onsets})
    return analyses


def _curve(
    parent: Parent, policy: Policy, every_days: int, found: Found, margin: float | None
) -> Curve:
    points, own = [], []
    for day, window in plan_windows(parent, every_days):
        _, result = found[(str(parent.run_dir), policy.label, window)]
        points.append(Point(day, window, result.final_net_assets, result.closed, result.seconds))
        if is_own_run(parent, policy) or window == 0:
            own.append(result.final_net_assets)
        elif _own_key(parent, policy, window) in found:
            own.append(found[_own_key(parent, policy, window)][1].final_net_assets)
        else:  # the policy's own store closed before this window: its end is all there is
            own.append(own[0])
    search = onset_search(
        [p.day for p in points], [p.final_net_assets for p in points], own,
        parent.scenario.clock.days, parent.final_net_assets, parent.manifest.initial_net_assets,
        margin,
    )  # fmt: skip
    return Curve(policy, points, parent.final_net_assets, search.margin,
                 parent.scenario.clock.start_date, search)  # fmt: skip


def _bisect(
    analyses: list[RunAnalysis], rounds: Rounds, own_states: dict[tuple[str, str], dict[int, Kept]]
) -> None:
    """Halve every onset period with forks at its middle day until it is BRACKET_DAYS wide.
    `own_states`: the policy's own run (store and agent) at the fork windows, by run and
    policy label (the day-0 takeover's `kept`); each step adds the one it reaches."""
    found = rounds.found
    blobs = _bisection_snapshots(analyses)
    while True:
        wanted: dict[tuple[Any, ...], TakeoverTask] = {}
        asks: list[tuple[Parent, Curve, int]] = []
        for analysis in analyses:
            parent = analysis.parent
            for curve in analysis.curves:
                day = curve.search.next_day() if curve.search is not None else None
                if day is None:
                    continue
                window = parent.window_of_day(day)
                start, day0 = found[(str(parent.run_dir), curve.policy.label, 0)]
                blob = blobs[(str(parent.run_dir), window)]
                this = replace(start, window=window, day=day, session=blob, keep=())
                wanted[(str(parent.run_dir), curve.policy.label, window)] = this
                own_key = _own_key(parent, curve.policy, window)
                if not is_own_run(parent, curve.policy) and own_key not in wanted:
                    states = own_states[(str(parent.run_dir), curve.policy.label)]
                    own = _own_fork(start, states, window, day)
                    if own is not None:
                        wanted[own_key] = own
                    else:  # the policy's own store closed before: its end is all there is
                        found[own_key] = (start, replace(day0, seconds=0.0))
                asks.append((parent, curve, window))
        if not asks:
            return
        rounds.run(wanted.items())
        for parent, curve, window in asks:
            mine = found[(str(parent.run_dir), curve.policy.label, window)][1].final_net_assets
            its_own = mine
            if not is_own_run(parent, curve.policy):
                its_own = found[_own_key(parent, curve.policy, window)][1].final_net_assets
            assert curve.search is not None
            curve.search.add(Fork(window // parent.windows_per_day(), mine, its_own))


def _bisection_snapshots(analyses: list[RunAnalysis]) -> dict[tuple[str, int], bytes]:
    """The run's store at every window its bisections may fork at (`days_to_come`), by run
    and window: one replay pass per run, not one per step."""
    blobs: dict[tuple[str, int], bytes] = {}
    for analysis in analyses:
        parent = analysis.parent
        days = {d for c in analysis.curves if c.search is not None for d in c.search.days_to_come()}
        windows = sorted(parent.window_of_day(d) for d in days)
        blobs.update(((str(parent.run_dir), w), b) for w, b in _snapshots(parent, windows))
    return blobs


def _own_fork(
    start: TakeoverTask, states: dict[int, Kept], window: int, day: int
) -> TakeoverTask | None:
    """The policy's takeover of its own run at `window` (Q at a bisection day, onset.py): its
    own run continued from the nearest earlier window whose store and agent were kept (`play_on`;
    with none, from the day-0 takeover's start: a fresh agent handed the empty store), then
    handed to a fresh copy; None when the own run ended before `window`. The store reached is
    kept in `states` for the next step."""
    earlier = [w for w, kept in states.items() if w < window and kept.agent is not None]
    base = max(earlier, default=None)
    if base is None:
        reached = play_on(replace(start, keep=()), None, window)
    else:
        reached = play_on(replace(start, window=base, keep=()), states[base], window)
    if reached is None:
        return None
    states[window] = reached
    return replace(start, window=window, day=day, session=reached.session, keep=())


def reanalyse(parent: Parent, data: dict[str, Any], margin: float | None = None) -> RunAnalysis:
    """The analysis of `parent` again from a `counterfactual.json` of it (`data`), with the
    measures of this code and `margin` (default: each curve's own, onset.py): no takeover is
    played, so the onset is that of the fork grid, and the saved bisection forks are applied
    again when the grid gives the same onset period.

    Raises:
        ForkError: `data` is not an analysis of this run (or one without the own-run curves).
    """
    if data.get("format") != FORMAT or data.get("state_hash") != parent.manifest.state_hash:
        raise ForkError(f"that counterfactual.json is not an analysis of {parent.run_dir}")
    curves = []
    for c in data["curves"]:
        points = [Point(p["day"], p["window"], p["final_net_assets"], p["closed"], p["seconds"])
                  for p in c["points"]]  # fmt: skip
        onset = c.get("onset") or {}
        own = [p["final_net_assets"] for p in onset.get("own_run", [])]
        if len(own) != len(points):
            raise ForkError("that counterfactual.json has no own-run takeovers: analyse again")
        search = onset_search(
            [p.day for p in points], [p.final_net_assets for p in points], own,
            parent.scenario.clock.days, parent.final_net_assets,
            parent.manifest.initial_net_assets, margin,
        )  # fmt: skip
        search.add_saved([*onset.get("noise_forks", []), *onset.get("bisection_forks", [])])
        policy = Policy(c["policy"], c["policy_settings"])
        start = parent.scenario.clock.start_date
        curves.append(Curve(policy, points, parent.final_net_assets, search.margin, start, search))
    return RunAnalysis(parent, data["every_days"], default_margin(parent), curves)
