"""The onset of damage of a run, defined against the run itself (docs/counterfactual.md).

For a takeover policy P, `P(t)` is the final net assets had P taken the store over at day t,
and `Q(t)` the same for P taking over **its own run** at day t (P played from day 0 on the same
seed: the day-0 takeover, forked again). Then:

- `D(t) = Q(t) − P(t)`: what P loses by taking over this run rather than its own at day t, a
  **paired** takeover difference: two fresh copies of P, handed two stores on the same day,
  under common random numbers. `D(0) = 0` (both stores are empty); at the end,
  `D = P(0) − continuing`.
- **damage in a period** `[a, b]`: `D(b) − D(a)`, i.e. what P would have kept had it taken
  over at a rather than at b (`P(a) − P(b)`), less what P loses over the same period when it
  takes over its own run (`Q(a) − Q(b)`, its natural drift: a fresh copy forgets what its
  own run had learnt). A period the agent played as P would have is no damage.
- **the noise of the damage** is that of the paired difference D, measured on D itself: the
  run's own spread, how much its damage scatters from one period to the next (the median
  absolute difference of consecutive periods' daily damage, over the normal's 0.954; over
  the periods before a period when there are `SPREAD_PERIODS` undamaged or
  `SPREAD_DAMAGED_PERIODS` in all, with fewer damaged ones also the run's, else over the run:
  `spread`). Not the
  natural drift's spread (`drift_noise`, reported): a drift moves the *day* a fresh copy
  takes over, which D never does; both takeovers of a D share it. On `small` the rule-based
  policy's own takeovers move by up to 600 RMB from one fork day to one 5 days later, while
  D over a store that is its own run until a failure is exactly 0 until then.
- **the run's own rate**: an agent worse (or better) than P damages P's store at a steady
  rate all year (the rule-based operator under the expert policy: about 5,000 RMB a month on
  `small`), which is not a failure. The excess of a period is its damage less the median daily
  damage of the periods before it (when positive) times its length.
- **onset**: the first fork period after the first whose excess exceeds its margin
  (`MARGIN_NOISES` times the noise, at least `MIN_MARGIN_SHARE` of the initial net assets) and
  whose excess summed from it to the end of the run (each later period against the same rate,
  the one before the candidate) does too: the damage lasts. The first period has no earlier
  run to compare with: a failure from day 0 has no onset here (the detectors of
  metrics/diagnosis.py judge those).
- **a change, not a month of the run's own scatter**: when the periods before the candidate
  already have damage (the run is not the policy's own store: an agent worse than P damages
  it every month, 2,000–9,000 RMB on `small` under the expert, and its months scatter), the
  candidate must also be a change of the run's rate that its months' order shows: the rise of
  the mean daily damage from the periods before it to those from it on is matched or beaten
  by at most `CHANGE_P` of all the ways to pick that many of the run's periods as "before"
  (an exact permutation test; `change_p`). Under no change every order of the months is as
  likely, so a healthy run passes it with a chance of at most `CHANGE_P` per candidate. What
  it does not cover: a store that is not P's own cannot have an onset in its first two
  periods (one or two "before" months are beaten by chance in 1 of 12 or 66 orders), and a
  decline that comes in several small steps is judged as one change. A run that is P's own
  store until the failure (damage exactly 0 before it) is judged as a departure (below).
- **a departure from the policy's own store**: a run whose D is exactly 0 at the first fork
  after day 0 was the policy's own store, hash for hash, until it left it (an agent built on P
  that fails from some day; P's own run never leaves). There the periods before the departure
  say nothing of the noise (it is exactly 0), and the periods after it mix the noise that the
  two stores' divergence brings with the failure's own growth (a decline's damage rises from
  period to period), so neither can measure it. The noise is measured instead by **noise
  forks**: at each fork day t after the departure, P and Q again one day later (`NOISE_LAG_DAYS`):
  a day's damage is next to nothing, so what D moves by in that day is its noise (a fresh copy
  started a day later plays the store differently). The noise is the median of those moves
  over the normal's 0.954. Such a run is judged once, as a whole: its onset is the **departure
  period** (the first whose D is not 0) when `D(end)`, the damage from the departure to the
  end, exceeds `MARGIN_NOISES` times that noise (`departure_margin`, at least the floor), else
  it has none. What it does not cover: a run that leaves P's way harmlessly and fails later is
  dated at its departure; a departure after the last fork day has no noise fork and is not
  judged (no onset).
- **bisection**: the onset period `[a, b]` is halved with forks at its middle day m (P(m) and
  Q(m)): the onset is in `[a, m]` when the excess by m exceeds the period's noise (a third of
  its margin) times the square root of the share of the period from the bracket's start to m,
  at least the floor, else in `[m, b]`; for a departure, in `[a, m]` when D(m) is not 0 (the
  run had left the policy's store by m), else in `[m, b]`; until the bracket is at most
  `BRACKET_DAYS` wide. The onset day is the bracket's start.
"""

from __future__ import annotations

import itertools
import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

MARGIN_NOISES = 3.0
MIN_MARGIN_SHARE = 0.01  # of the initial net assets
BRACKET_DAYS = 7
SPREAD_PERIODS = 3  # earlier periods needed to measure the run's own spread before a period
SPREAD_DAMAGED_PERIODS = 5  # as many, when some of them have damage (4 differences or more)
CHANGE_P = 0.01  # the permutation test's level for a run with damage before the candidate
EXACT_SPLITS = 20_000  # permutation splits counted exactly up to this many, else drawn
NOISE_LAG_DAYS = 1  # a noise fork's lag after its fork day (a departure's noise)


@dataclass(frozen=True)
class Fork:
    """The policy's takeover of this run (`this`) and of its own run (`own`) at `day`."""

    day: int
    this: float
    own: float

    @property
    def gap(self) -> float:
        """`D(day)`: what the policy loses by taking over this run rather than its own."""
        return self.own - self.this


@dataclass
class OnsetSearch:
    """The onset of one policy's curves over one run (module docstring)."""

    forks: list[Fork]  # the fork grid, day 0 first
    end_day: int  # the run's last day + 1
    end_gap: float  # D at the end: P(0) − continuing
    floor: float  # MIN_MARGIN_SHARE of the initial net assets
    fixed_margin: float | None = None  # replaces the noise-based margin when given
    bisection: list[Fork] = field(default_factory=list)
    noise_forks: list[Fork] = field(default_factory=list)  # a departure's (module docstring)
    bracket: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        self.bracket = self.onset_period()

    # --- the grid ---------------------------------------------------------------------------
    def _bounds(self) -> list[tuple[int, float]]:
        return [(f.day, f.gap) for f in self.forks] + [(self.end_day, self.end_gap)]

    def damage(self) -> list[tuple[int, int, float]]:
        """(from day, to day, damage) of each fork period."""
        bounds = self._bounds()
        return [
            (a, b, round(gb - ga, 2)) for (a, ga), (b, gb) in zip(bounds, bounds[1:], strict=False)
        ]

    def drifts(self) -> list[float]:
        """The natural drift `Q(t_k) − Q(t_{k+1})` of each period (the last: Q(t) − P(0))."""
        own = [f.own for f in self.forks] + [self.forks[0].own]
        return [a - b for a, b in zip(own, own[1:], strict=False)]

    @property
    def drift_noise(self) -> float:
        """The root mean square of the natural drifts (reported; not the noise of D)."""
        drifts = self.drifts()
        return math.sqrt(sum(d * d for d in drifts) / len(drifts)) if drifts else 0.0

    @property
    def noise(self) -> float:
        """The noise of the damage over a grid period: the run's own spread over the run."""
        return self.spread()

    @property
    def margin(self) -> float:
        """The margin the run is judged by: a departure's, once its noise forks are in
        (`departure_margin`), else that of a grid period judged against the whole run's spread
        (each period's own is `margin_at`)."""
        judged = self.departure_margin()  # the fixed margin, if one is given
        return (
            judged if judged is not None else round(max(self.floor, MARGIN_NOISES * self.noise), 2)
        )

    def rate_before(self, k: int) -> float:
        """The run's own daily damage before period k: the median over periods 0..k-1, or 0
        when that is negative (a store being built gains value fast at first and then less:
        that slowing is no damage)."""
        rates = [d / (b - a) for a, b, d in self.damage()[:k] if b > a]
        return max(0.0, statistics.median(rates)) if rates else 0.0

    def excess(self) -> list[float]:
        return [d - self.rate_before(k) * (b - a) for k, (a, b, d) in enumerate(self.damage())]

    def spread(self, k: int | None = None) -> float:
        """How much the run's damage scatters from period to period, robust to a change of
        level: the median absolute difference of consecutive periods' daily damage rates,
        over the normal's 0.954 (the median of |X − Y| for X, Y ~ N(0, σ²) is 0.954 σ), for
        the grid's period length (its first period). Over the periods before k (a failure's
        own scatter does not hide its start) when there are at least SPREAD_PERIODS of them
        with no damage at all (the run was the policy's own store, hash for hash: its spread
        is exactly 0) or SPREAD_DAMAGED_PERIODS with some; with fewer (a median of two or
        three differences is no measure of a scatter) the larger of that and the whole run's;
        with fewer than SPREAD_PERIODS, over the whole run."""
        periods = self.damage()
        if k is None or k < SPREAD_PERIODS:
            return self._spread_of(periods)
        before = periods[:k]
        if all(d == 0 for _, _, d in before) or k >= SPREAD_DAMAGED_PERIODS:
            return self._spread_of(before)
        return max(self._spread_of(before), self._spread_of(periods))

    @staticmethod
    def _spread_of(periods: list[tuple[int, int, float]]) -> float:
        rates = [d / (b - a) for a, b, d in periods if b > a]
        steps = [abs(x - y) for x, y in zip(rates, rates[1:], strict=False)]
        if not steps:
            return 0.0
        return statistics.median(steps) / 0.954 * (periods[0][1] - periods[0][0])

    def margin_at(self, k: int) -> float:
        """The margin of period k: MARGIN_NOISES times the run's own spread (scaled to the
        period's length), at least the floor, or a fixed `margin`."""
        if self.fixed_margin is not None:
            return self.fixed_margin
        a, b, _ = self.damage()[k]
        grid = self.damage()[0][1] - self.damage()[0][0]
        noise = self.spread(k) * (b - a) / grid if grid else 0.0
        return round(max(self.floor, MARGIN_NOISES * noise), 2)

    def departure(self) -> int | None:
        """The index of the fork period in which the run left the policy's own store (the first
        whose D at its end is not exactly 0), when it was that store through the first period at
        least; None when it never was (D at the first fork is not 0) or never left."""
        gaps = [gap for _, gap in self._bounds()]
        first = next((i for i, gap in enumerate(gaps) if gap != 0), None)
        return None if first is None or first < 2 else first - 1

    def noise_days(self) -> list[int]:
        """The days of a departure's noise forks: `NOISE_LAG_DAYS` after each fork day after
        the departure period's start (none without a departure)."""
        k = self.departure()
        if k is None:
            return []
        return [f.day + NOISE_LAG_DAYS for f in self.forks[k + 1 :]
                if f.day + NOISE_LAG_DAYS < self.end_day]  # fmt: skip

    def _noise_pending(self) -> list[int]:
        done = {f.day for f in self.noise_forks}
        return [d for d in self.noise_days() if d not in done]

    def departure_noise(self) -> float | None:
        """The noise of D after a departure: the median move of D from a fork day to its noise
        fork, over the normal's 0.954 (None until every noise fork is in, or with none)."""
        if not self.noise_days() or self._noise_pending():
            return None
        gaps = {f.day: f.gap for f in self.forks}
        moves = [abs(f.gap - gaps[f.day - NOISE_LAG_DAYS]) for f in self.noise_forks]
        return statistics.median(moves) / 0.954

    def departure_margin(self) -> float | None:
        """The margin of the damage from a departure to the end: MARGIN_NOISES times its noise
        (`departure_noise`), at least the floor, or a fixed `margin`; None while the noise is not
        measured, or cannot be (no departure, or none after the last fork day)."""
        if self.fixed_margin is not None:
            return self.fixed_margin
        noise = self.departure_noise()
        return None if noise is None else round(max(self.floor, MARGIN_NOISES * noise), 2)

    def onset_period(self) -> tuple[int, int] | None:
        periods = self.damage()
        k = self.departure()
        if k is not None:  # judged once, as a whole (module docstring)
            a, b, _ = periods[k]
            margin = self.departure_margin()
            return (a, b) if margin is not None and self.end_gap > margin else None
        for k in range(1, len(periods)):
            rate, margin = self.rate_before(k), self.margin_at(k)
            excess = [d - rate * (b - a) for a, b, d in periods[k:]]
            if excess[0] > margin and sum(excess) > margin:
                p = self.change_p(k)
                if p is None or p <= CHANGE_P:
                    return periods[k][0], periods[k][1]
        return None

    def change_p(self, k: int) -> float | None:
        """The permutation test of a change at period k (module docstring): the share of the
        ways to pick k of the run's periods as "before" whose rise of the mean daily damage
        is at least the observed one; None when the periods before k have no damage at all
        (the run was the policy's own store: no test)."""
        periods = self.damage()
        if all(d == 0 for _, _, d in periods[:k]):
            return None
        rates = [d / (b - a) for a, b, d in periods if b > a]
        return rise_p(rates, k)

    # --- bisection --------------------------------------------------------------------------
    def next_day(self) -> int | None:
        """The day to fork at next: a departure's next noise fork, else the bracket's middle
        day; None when the bracket is narrow enough (or there is none)."""
        pending = self._noise_pending()
        if pending:
            return pending[0]
        return None if self.bracket is None else _middle(self.bracket)

    def days_to_come(self) -> list[int]:
        """Every day the search may fork at from here: a departure's noise forks still to come,
        and every day the bisection may fork at, whichever side each step takes (a 30-day
        period: 5 days, of which it forks at 2 or 3), in order."""
        bracket, pending = self.bracket, self._noise_pending()
        k = self.departure()
        if k is not None and pending:  # the bracket, should the departure be damaged
            a, b, _ = self.damage()[k]
            bracket = (a, b)
        days, brackets = list(pending), [] if bracket is None else [bracket]
        while brackets:
            lo, hi = brackets.pop()
            day = _middle((lo, hi))
            if day is not None:
                days.append(day)
                brackets += [(lo, day), (day, hi)]
        return sorted(days)

    def add(self, fork: Fork) -> None:
        """Add the fork `next_day` asked for: a departure's noise fork (the last one judges the
        departure), or a bisection fork that narrows the bracket."""
        if fork.day in self._noise_pending():
            self.noise_forks.append(fork)
            if not self._noise_pending():
                self.bracket = self.onset_period()
            return
        assert self.bracket is not None
        lo, hi = self.bracket
        if self.departure() is not None:  # where the run left the policy's store
            self.bisection.append(fork)
            self.bracket = (lo, fork.day) if fork.gap != 0 else (fork.day, hi)
            return
        k = next(i for i, (a, b, _) in enumerate(self.damage()) if a <= lo < b)
        excess = fork.gap - self._gap_at(lo) - self.rate_before(k) * (fork.day - lo)
        self.bisection.append(fork)
        a, b, _ = self.damage()[k]
        noise = self.margin_at(k) / MARGIN_NOISES * math.sqrt((fork.day - lo) / (b - a))
        threshold = max(noise, self.floor)
        self.bracket = (lo, fork.day) if excess > threshold else (fork.day, hi)

    def add_saved(self, forks: list[dict[str, Any]]) -> None:
        """Apply saved forks (`to_json`'s `noise_forks`, then `bisection_forks`) again, each
        while it is the one this rule asks for next."""
        for fork in forks:
            if self.next_day() == fork["day"]:
                self.add(Fork(fork["day"], fork["this"], fork["own"]))

    def _found_change_p(self) -> float | None:
        period = self.onset_period()
        if period is None:
            return None
        p = self.change_p(next(k for k, (a, _, _) in enumerate(self.damage()) if a == period[0]))
        return None if p is None else round(p, 6)

    def _departure_json(self) -> dict[str, Any] | None:
        k = self.departure()
        if k is None:
            return None
        a, b, _ = self.damage()[k]
        noise = self.departure_noise()
        return {"period": [a, b], "damage_to_end": round(self.end_gap, 2),
                "noise": None if noise is None else round(noise, 2),
                "margin": self.departure_margin()}  # fmt: skip

    def _gap_at(self, day: int) -> float:
        return next(f.gap for f in [*self.forks, *self.bisection] if f.day == day)

    @property
    def onset_day(self) -> int | None:
        return None if self.bracket is None else self.bracket[0]

    def to_json(self) -> dict[str, Any]:
        return {
            "onset_day": self.onset_day,
            "period": None if self.onset_period() is None else list(self.onset_period() or ()),
            "bracket": None if self.bracket is None else list(self.bracket),
            "noise": round(self.noise, 2),
            "drift_noise": round(self.drift_noise, 2),
            "margin": self.margin,
            "change_p": self._found_change_p(),
            "departure": self._departure_json(),
            "damage": [
                {
                    "from_day": a,
                    "to_day": b,
                    "damage": d,
                    "excess": round(e, 2),
                    "margin": self.margin_at(k),
                }
                for k, ((a, b, d), e) in enumerate(zip(self.damage(), self.excess(), strict=True))
            ],  # fmt: skip
            "own_run": [{"day": f.day, "final_net_assets": f.own} for f in self.forks],
            "bisection_forks": [
                {"day": f.day, "this": f.this, "own": f.own} for f in self.bisection
            ],  # fmt: skip
            "noise_forks": [
                {"day": f.day, "this": f.this, "own": f.own} for f in self.noise_forks
            ],  # fmt: skip
        }


def rise_p(rates: Sequence[float], k: int) -> float:
    """Permutation p-value of the rise `mean(rates[k:]) − mean(rates[:k])`: the share of the
    k-subsets of `rates`, taken as "before", whose rise is at least as large. Exact up to
    `EXACT_SPLITS` subsets (a 30-day grid has at most 924); beyond (a finer grid), as many
    subsets drawn by a generator seeded with (n, k), counting the observed one: the same
    figure every time."""
    n, total = len(rates), sum(rates)
    if not 0 < k < n:
        return 1.0

    def rise(before: float) -> float:
        return (total - before) / (n - k) - before / k

    observed = rise(sum(rates[:k])) - 1e-9 * max(1.0, abs(total))
    if math.comb(n, k) <= EXACT_SPLITS:
        splits = [rise(sum(c)) >= observed for c in itertools.combinations(rates, k)]
        return sum(splits) / len(splits)
    draw = random.Random(n * 1_000_003 + k)
    hits = sum(rise(sum(draw.sample(list(rates), k))) >= observed for _ in range(EXACT_SPLITS))
    return (hits + 1) / (EXACT_SPLITS + 1)


def _middle(bracket: tuple[int, int]) -> int | None:
    lo, hi = bracket
    return None if hi - lo <= BRACKET_DAYS else (lo + hi) // 2


def from_saved(saved: dict[str, Any], initial: float) -> OnsetSearch:
    """The search again, with this code's rule, from an onset record (`to_json`) of a run whose
    initial net assets were `initial`: the policy's own-run takeovers and the damage of each
    period give the fork grid (P(t) = Q(t) − D(t), D summed from the periods' damage, which the
    record rounds to the fen), and its bisection forks are applied again while they are the
    ones this rule asks for. A bisection fork the record lacks (the onset moved to another
    period) cannot be played here: the bracket then stays wider than `BRACKET_DAYS`
    (`complete` is False)."""
    damage = saved["damage"]
    days = [d["from_day"] for d in damage]
    own = [o["final_net_assets"] for o in saved["own_run"]]
    gaps = [0.0]
    for d in damage:
        gaps.append(round(gaps[-1] + d["damage"], 2))
    this = [o - g for o, g in zip(own, gaps, strict=False)]
    search = OnsetSearch(
        [Fork(d, t, o) for d, t, o in zip(days, this, own, strict=True)],
        damage[-1]["to_day"], gaps[-1], MIN_MARGIN_SHARE * initial,
    )  # fmt: skip
    search.add_saved([*saved.get("noise_forks", []), *saved.get("bisection_forks", [])])
    return search


def complete(search: OnsetSearch) -> bool:
    """Whether the search's bracket is as narrow as the bisection makes it (or no onset)."""
    return search.next_day() is None


def onset_search(
    days: Sequence[int], this: Sequence[float], own: Sequence[float], end_day: int,
    continuing: float, initial: float, margin: float | None = None,
) -> OnsetSearch:  # fmt: skip
    """The search over a fork grid (`this`: P(t), `own`: Q(t), by fork day); `margin` (RMB)
    replaces the noise-based margin."""
    forks = [Fork(d, t, o) for d, t, o in zip(days, this, own, strict=True)]
    return OnsetSearch(forks, end_day, this[0] - continuing, MIN_MARGIN_SHARE * initial, margin)
