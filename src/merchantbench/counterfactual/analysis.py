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
- **onset of decay**: the first fork day d after which taking over beats continuing by the
  margin, i.e. `curve_P(d) > max(curve_P(d') for every later fork day d', continuing) +
  margin`: handing over at d is better than letting the agent go on for any longer. The
  margin defaults, per policy, to the larger of 10 % of the initial net assets (300 RMB on
  `paper` and `small`) and 5 % of the policy's own year from day 0: a fresh policy taking
  over even a healthy run loses what the agent had learnt (the expert: its elasticities and
  risk book), and its takeovers of the expert's own run on `small` scatter by up to 4.5 % of
  its year; differences within that are not decay.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from merchantbench.counterfactual.execute import TakeoverExecutor
from merchantbench.counterfactual.parent import ForkError, Parent, fork_days
from merchantbench.counterfactual.takeover import Policy, Takeover, TakeoverTask
from merchantbench.replay import ReplayError, snapshot_blobs

DEFAULT_MARGIN_SHARE = 0.10  # of the initial net assets
START_MARGIN_SHARE = 0.05  # of the policy's year from day 0
FORMAT = 1  # of counterfactual.json

Progress = Callable[[int, int, TakeoverTask], None]  # done, total, the task just done


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
        for k, point in enumerate(self.points):
            last = k + 1 == len(self.points)
            after = self.continuing if last else self.points[k + 1].final_net_assets
            month = dt.date.fromisoformat(self.start_date) + dt.timedelta(days=point.day)
            rows.append({
                "from_day": point.day,
                "to_day": None if last else self.points[k + 1].day,
                "month": month.strftime("%Y-%m"),
                "regret": round(point.final_net_assets - after, 2),
            })  # fmt: skip
        return rows

    def onset_day(self) -> int | None:
        for k, point in enumerate(self.points):
            later = [p.final_net_assets for p in self.points[k + 1 :]] + [self.continuing]
            if point.final_net_assets > max(later) + self.margin:
                return point.day
        return None

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
            "margin": self.margin,
            "onset_day": self.onset_day(),
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
    """10 % of the initial net assets: the least margin of any policy (module docstring)."""
    money = parent.scenario.money
    return round(DEFAULT_MARGIN_SHARE * (money.initial_balance_fen + money.initial_deposit_fen)
                 / 100, 2)  # fmt: skip


def curve_margin(base: float, from_start: float) -> float:
    """A policy's default margin: `base` (`default_margin`) or 5 % of its year from day 0,
    whichever is larger."""
    return max(base, round(START_MARGIN_SHARE * from_start, 2))


def plan_windows(parent: Parent, every_days: int) -> list[tuple[int, int]]:
    """(day, window) of each fork of an analysis of `parent`."""
    if not parent.finished:
        raise ForkError(f"{parent.run_dir} has not finished: finish or resume it first")
    last = parent.windows_closed - 1  # a store closed early: no fork after its last window
    days = fork_days(every_days, parent.scenario.clock.days)
    return [(d, w) for d, w in ((d, parent.window_of_day(d)) for d in days) if w <= last]


def _tasks(
    parents: Sequence[Parent], policies: Sequence[Policy], every_days: int
) -> Iterator[TakeoverTask]:
    """The takeover tasks of every run, each made when one fast replay pass of its run reaches
    the fork window (the session's snapshot there, `merchantbench.replay.snapshot_blobs`: one
    pickling per fork window, whatever the policies and the executor)."""
    for parent in parents:
        days = dict((w, d) for d, w in plan_windows(parent, every_days))
        try:
            for window, blob in snapshot_blobs(
                parent.run_dir, sorted(days), seed=parent.seed, fast=True
            ):
                for policy in policies:
                    yield TakeoverTask(
                        str(parent.run_dir), window, days[window], policy, parent.scenario,
                        parent.seed, parent.catalog, blob,
                    )  # fmt: skip
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
) -> list[RunAnalysis]:
    """Analyse every run of `parents` under every policy (module docstring); the takeovers run
    on `executor` as the replays reach their fork windows.

    Raises:
        ForkError: a run has not finished or its replay fails.
    """
    if not policies:
        raise ForkError("name at least one takeover policy")
    total = sum(len(plan_windows(p, every_days)) for p in parents) * len(policies)
    found: dict[tuple[str, str, int], tuple[TakeoverTask, Takeover]] = {}
    for done, (task, result) in enumerate(
        executor.run(_tasks(parents, policies, every_days)), start=1
    ):
        found[(task.run, task.policy.label, task.window)] = (task, result)
        if progress is not None:
            progress(done, total, task)
    analyses = []
    for parent in parents:
        run_margin = default_margin(parent) if margin is None else margin
        curves = []
        for policy in policies:
            points = []
            for day, window in plan_windows(parent, every_days):
                task, result = found[(str(parent.run_dir), policy.label, window)]
                points.append(Point(day, window, result.final_net_assets, result.closed,
                                    result.seconds))  # fmt: skip
            mine = (
                run_margin
                if margin is not None
                else curve_margin(run_margin, points[0].final_net_assets)
            )
            curves.append(Curve(policy, points, parent.final_net_assets, mine,
                                parent.scenario.clock.start_date))  # fmt: skip
        analyses.append(RunAnalysis(parent, every_days, run_margin, curves))
    return analyses


def reanalyse(parent: Parent, data: dict[str, Any], margin: float | None = None) -> RunAnalysis:
    """The analysis of `parent` again from a `counterfactual.json` of it (`data`), with the
    measures of this code and `margin` (default: `curve_margin`): no takeover is played.

    Raises:
        ForkError: `data` is not an analysis of this run.
    """
    if data.get("format") != FORMAT or data.get("state_hash") != parent.manifest.state_hash:
        raise ForkError(f"that counterfactual.json is not an analysis of {parent.run_dir}")
    base = default_margin(parent) if margin is None else margin
    curves = []
    for c in data["curves"]:
        points = [Point(p["day"], p["window"], p["final_net_assets"], p["closed"], p["seconds"])
                  for p in c["points"]]  # fmt: skip
        mine = base if margin is not None else curve_margin(base, points[0].final_net_assets)
        policy = Policy(c["policy"], c["policy_settings"])
        start = parent.scenario.clock.start_date
        curves.append(Curve(policy, points, parent.final_net_assets, mine, start))
    return RunAnalysis(parent, data["every_days"], base, curves)
