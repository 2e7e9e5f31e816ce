"""Failure-mode detectors (docs/diagnosis.md): does a run show one of the paper's failures?

Returned by `diagnose` under the `diagnosis` key of the metrics. Each detector answers
`{"flagged": bool, "onset_day": int | None, "evidence": {...}}`: whether the failure is there,
the 0-based day it started where a day is meaningful, and the figures the judgement rests on.
The thresholds are the constants below; docs/diagnosis.md states each with its paper reference
and the confusion table that validates them on agents built to fail (agents/baselines/failing.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from merchantbench.metrics.calendar import HOURS_PER_DAY
from merchantbench.metrics.chains import response_chains
from merchantbench.metrics.coherence import (
    REPRICE_WINDOW_DAYS,
    rating_drop_days,
    repricing_after_rating_drops,
)
from merchantbench.metrics.reaction import agent_actions
from merchantbench.metrics.record import RunRecord
from merchantbench.metrics.run_info import RunInfo
from merchantbench.metrics.windows import WindowActivity
from merchantbench.money import rmb

DETECTORS = (
    "activity_decay", "premature_abandonment", "control_loop_narrowing", "early_sourcing_stop",
    "flat_procurement_prices", "adverse_response", "rating_adaptation",
)  # fmt: skip

ABANDON_IDLE_DAYS = 14  # a run of idle windows this long while the store is open
DECAY_MIN_DAYS = 120  # days with an open window before any abandonment
DECAY_EDGE_DAYS = 14  # a break leaves at least this many days of plateau and of decline
DECAY_HALF_LIVES = (10, 20, 30, 45)  # days: the halving shapes tried
DECAY_RAMP_DAYS = (15, 30, 60, 90, 120, 180, 270, 365)  # days: the straight declines tried
DECAY_DROP = 0.20  # the fitted fall of the daily effective-window rate, plateau to the last day
DECAY_LAST_DAYS = 30  # the last days' mean rate must be DECAY_DROP / 2 below the plateau
DECAY_RATE_CLIP = 0.001  # a fitted rate counts as within [0.01, 0.99] in the likelihood
NARROW_MIN_CALLS = 20  # months with fewer calls are not judged
NARROW_REFERENCE_MONTHS = 2  # the first judged months set the reference sourcing share
NARROW_MIN_REFERENCE = 0.02  # an agent that hardly ever sources is not judged
NARROW_RATIO = 0.5  # a month is narrowed below this share of the reference
NARROW_MONTHS = 2  # consecutive judged months narrowed
STOP_GAP_DAYS = 45  # days without a new product while the agent still acts
FLAT_OPENING_DAYS = 14  # the opening procurement band: products first listed in these days
FLAT_MIN_CAPITAL_GROWTH = 2.0  # peak net assets / initial: capital allowed a broader band
FLAT_MIN_OPENING = 3  # new products needed in the opening band
FLAT_MIN_LATER = 10  # and in the later quarters
FLAT_MIN_LATER_QUARTERS = 2  # spread over at least two of them (a year, not a few weeks)
FLAT_MAX_GROWTH = 1.25  # the later band's top at most this multiple of the opening top
RESPONSE_WINDOWS = 14  # a chain completes within this many windows of the adverse outcome
RESPONSE_MIN_LISTINGS = 10  # adverse-hit listings needed to judge
RESPONSE_MIN_RATE = 0.05  # flagged below this share of listings answered by a chain
RESPONSE_MIN_SUFFIX = 20  # listings needed from a candidate onset on
RESPONSE_P_VALUE = 1e-10  # binomial lower tail of the answers after the split at the rate before
RATING_MIN_EXPECTED = 5.0  # adjust_price calls expected after drops at the usual rate
RATING_P_VALUE = 0.001  # Poisson lower tail: so few calls after drops by chance
RATING_MAX_RATIO = 0.5  # and fewer than half the usual rate
MONTHS_PER_QUARTER = 3


def _result(flagged: bool, onset: int | None, evidence: dict[str, Any]) -> dict[str, Any]:
    return {"flagged": bool(flagged), "onset_day": onset if flagged else None, "evidence": evidence}


def _open_windows(activity: WindowActivity, info: RunInfo) -> int:
    """Windows the run had open (a run closed or stopped early had fewer than scheduled)."""
    return min(info.windows, activity.total)


def premature_abandonment(activity: WindowActivity, info: RunInfo) -> dict[str, Any]:
    """The first run of at least ABANDON_IDLE_DAYS of idle windows among the open windows."""
    opened = _open_windows(activity, info)
    effective = activity.effective[:opened]
    need = ABANDON_IDLE_DAYS * HOURS_PER_DAY // info.calendar.hours_per_window
    start, run, found = 0, 0, None
    for window, acted in enumerate(effective):
        if acted:
            run = 0
            continue
        start = window if run == 0 else start
        run += 1
        if run == need and found is None:
            found = start
    evidence: dict[str, Any] = {"open_windows": opened, "idle_windows_needed": need}
    if found is None:
        return _result(False, None, evidence)
    after = effective[found:]
    length = int(np.argmax(after)) if after.any() else len(after)
    evidence |= {
        "idle_run_windows": length,
        "idle_windows_after_onset": int((~after).sum()),
        "windows_after_onset": len(after),
    }
    return _result(True, int(activity.day[found]), evidence)


def _daily_rates(
    activity: WindowActivity, opened: int, until_day: int | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Days with an open window before `until_day`, the share of their windows that were
    effective (window level: each day's own windows, not months), and their open windows."""
    day = activity.day[:opened]
    keep = day < until_day if until_day is not None else np.ones(len(day), bool)
    counted = np.bincount(day[keep], minlength=1)
    acted = np.bincount(day[keep], weights=activity.effective[:opened][keep], minlength=1)
    days = np.flatnonzero(counted)
    return days, acted[days] / counted[days], counted[days].astype(np.float64)


def _log_likelihood(fitted: np.ndarray, rates: np.ndarray, windows: np.ndarray) -> np.ndarray:
    """The binomial log-likelihood of each row of fitted daily rates (clipped to
    DECAY_RATE_CLIP from 0 and 1) given the days' effective and open windows."""
    p = np.clip(fitted, DECAY_RATE_CLIP, 1.0 - DECAY_RATE_CLIP)
    acted = rates * windows
    return np.asarray((acted * np.log(p) + (windows - acted) * np.log(1.0 - p)).sum(axis=-1))


def _decline_shapes(after: np.ndarray) -> dict[str, np.ndarray]:
    """Each decline shape's basis at `after` days past the break (0 before it): `step` (the
    rate drops at once), `ramp/L` (it falls linearly for L days, then stays: a straight decline
    to a floor) and `halving/h` (it halves every h days towards a floor). A fit is
    `plateau − size · basis`, `size > 0`."""
    shapes = {"step": (after > 0).astype(np.float64)}
    for days in DECAY_RAMP_DAYS:
        shapes[f"ramp/{days}d"] = np.minimum(after, days) / days
    for half_life in DECAY_HALF_LIVES:
        shapes[f"halving/{half_life}d"] = 1.0 - 0.5 ** (after / half_life)
    return shapes


def _change_point(
    days: np.ndarray, rates: np.ndarray, windows: np.ndarray
) -> tuple[int, str, float, float]:
    """The best plateau-then-decline fit over every break day (DECAY_EDGE_DAYS from either end)
    and shape: (break day, shape, plateau, size of the decline). Each break and shape gets its
    least-squares plateau and size; the break and shape kept are those under which the days'
    effective windows are likeliest (binomial: a day's windows at a rate near 1 vary far less
    than at ½, which least squares would weigh alike). Ties go to the earliest break. No
    decline is likelier than a flat rate (a rising or flat rate): (first day, "none", mean, 0)."""
    breaks = np.arange(int(days[0]) + DECAY_EDGE_DAYS, int(days[-1]) - DECAY_EDGE_DAYS + 1)
    best = (int(days[0]), "none", float(rates.mean()), 0.0)
    if not len(breaks):
        return best
    after = np.maximum(0.0, days[None, :] - breaks[:, None]).astype(np.float64)
    centred = rates - rates.mean()
    best_ll = float(_log_likelihood(np.full(len(rates), rates.mean()), rates, windows)) + 1e-9
    for shape, basis in _decline_shapes(after).items():
        spread = basis - basis.mean(axis=1, keepdims=True)
        sbb = (spread**2).sum(axis=1)
        sby = spread @ centred
        with np.errstate(divide="ignore", invalid="ignore"):
            size = np.where((sbb > 0) & (sby < 0), -sby / sbb, 0.0)
        level = rates.mean() + size * basis.mean(axis=1)
        ll = _log_likelihood(level[:, None] - size[:, None] * basis, rates, windows)
        ll = np.where(size > 0, ll, -np.inf)
        k = int(np.argmax(ll))  # the first of equal likelihoods: the earliest break
        if ll[k] > best_ll:
            best_ll = float(ll[k])
            best = (int(breaks[k]), shape, float(level[k]), float(size[k]))
    return best


def activity_decay(
    activity: WindowActivity, info: RunInfo, abandoned_day: int | None
) -> dict[str, Any]:
    """A plateau then a falling effective-window rate, before any abandonment: the change point
    of the daily rates (a plateau, then a straight, stepwise or halving decline from a break
    day, the best least-squares fit), dated to its break day."""
    opened = _open_windows(activity, info)
    days, rates, windows = _daily_rates(activity, opened, abandoned_day)
    months = info.calendar.month_of_day(days)
    labels = info.calendar.month_labels(int(months.max()) + 1 if len(months) else 0)
    evidence: dict[str, Any] = {
        "monthly_rate": {
            labels[m]: round(float(rates[months == m].mean()), 3) for m in np.unique(months)
        }  # fmt: skip
    }
    if len(days) < DECAY_MIN_DAYS:
        return _result(False, None, evidence)
    t0, shape, level, size = _change_point(days, rates, windows)
    after = np.maximum(0.0, days[-1:] - t0).astype(np.float64)
    drop = size * float(_decline_shapes(after)[shape][0]) if size else 0.0
    last = rates[days > days[-1] - DECAY_LAST_DAYS].mean()
    evidence |= {
        "plateau": round(level, 3),
        "shape": shape,
        "break_day": t0,
        "fitted_drop": round(drop, 3),
        "last_days_rate": round(float(last), 3),
    }
    flagged = drop >= DECAY_DROP and last <= level - DECAY_DROP / 2
    return _result(flagged, t0, evidence)


def control_loop_narrowing(coherence: dict[str, Any], info: RunInfo) -> dict[str, Any]:
    """The monthly sourcing share falls below NARROW_RATIO of its opening level and stays."""
    mix = [m for m in coherence["call_mix_by_month"] if m["calls"] >= NARROW_MIN_CALLS]
    evidence: dict[str, Any] = {
        "sourcing_share": {m["month"]: round(m["sourcing_share"], 3) for m in mix},
        "supplier_handling_share": {m["month"]: round(m["supplier_handling_share"], 3)
                                    for m in mix},
    }  # fmt: skip
    if len(mix) < NARROW_REFERENCE_MONTHS + NARROW_MONTHS:
        return _result(False, None, evidence)
    reference = float(np.mean([m["sourcing_share"] for m in mix[:NARROW_REFERENCE_MONTHS]]))
    evidence["reference_share"] = round(reference, 3)
    if reference < NARROW_MIN_REFERENCE:
        return _result(False, None, evidence)
    low = [m["sourcing_share"] < NARROW_RATIO * reference for m in mix]
    for i in range(NARROW_REFERENCE_MONTHS, len(mix) - NARROW_MONTHS + 1):
        if all(low[i : i + NARROW_MONTHS]):
            month = info.calendar.month_labels(info.months).index(mix[i]["month"])
            return _result(True, info.calendar.month_start_days(month + 1)[-1], evidence)
    return _result(False, None, evidence)


def _first_listings(record: RunRecord) -> tuple[np.ndarray, np.ndarray]:
    """Day and procurement price (RMB) of each product's first listing, in listing order."""
    listings = record.listings
    order = np.lexsort((listings["listed_t"], listings["product_id"]))
    ids = listings["product_id"][order]
    first = order[np.concatenate(([True], ids[1:] != ids[:-1]))] if len(ids) else order
    first = first[np.argsort(listings["listed_t"][first], kind="stable")]
    days = record.listings["listed_t"][first] // HOURS_PER_DAY
    return days, rmb(listings["cost_at_listing"][first])


def early_sourcing_stop(
    record: RunRecord, activity: WindowActivity, info: RunInfo
) -> dict[str, Any]:
    """No new product for STOP_GAP_DAYS or more before the last day the agent acted."""
    effective = np.flatnonzero(activity.effective[: _open_windows(activity, info)])
    days, _ = _first_listings(record)
    last_new = int(days[-1]) if len(days) else None
    evidence: dict[str, Any] = {
        "new_products": len(days),
        "last_new_product_day": last_new,
        "days_before_horizon": None if last_new is None else info.last_day - last_new,
    }
    if not len(effective):
        return _result(False, None, evidence)
    acting_end = int(activity.day[effective[-1]])
    onset = 0 if last_new is None else last_new + 1
    evidence |= {"last_acting_day": acting_end, "gap_days": acting_end - onset + 1}
    return _result(acting_end - onset + 1 >= STOP_GAP_DAYS, onset, evidence)


def _slope(values: Sequence[float | None]) -> float | None:
    points = [(i, v) for i, v in enumerate(values) if v is not None]
    if len(points) < 2:
        return None
    x, y = np.asarray(points, dtype=np.float64).T
    return float(np.polyfit(x, y, 1)[0])


def flat_procurement_prices(record: RunRecord, info: RunInfo) -> dict[str, Any]:
    """The procurement band's top never rises above the opening band while capital multiplied."""
    days, cost = _first_listings(record)
    quarter = info.calendar.month_of_day(days) // MONTHS_PER_QUARTER
    quarters = -(-info.months // MONTHS_PER_QUARTER)
    tops = [float(cost[quarter == q].max()) if (quarter == q).any() else None
            for q in range(quarters)]  # fmt: skip
    means = [float(cost[quarter == q].mean()) if (quarter == q).any() else None
             for q in range(quarters)]  # fmt: skip
    net = record.timeseries["net_assets"]
    growth = rmb(int(net.max())) / info.initial_net_assets if len(net) else None
    opening, later = cost[days < FLAT_OPENING_DAYS], cost[quarter >= 1]
    band_growth = float(later.max() / opening.max()) if len(opening) and len(later) else None
    mean_slope, top_slope = _slope(means), _slope(tops)
    evidence = {
        "band_top_by_quarter": [None if t is None else round(t, 2) for t in tops],
        "mean_by_quarter": [None if m is None else round(m, 2) for m in means],
        "mean_slope_per_quarter": None if mean_slope is None else round(mean_slope, 2),
        "band_top_slope_per_quarter": None if top_slope is None else round(top_slope, 2),
        "opening_band_top": round(float(opening.max()), 2) if len(opening) else None,
        "band_growth": None if band_growth is None else round(band_growth, 3),
        "capital_growth": None if growth is None else round(growth, 3),
    }  # fmt: skip
    later_quarters = len(np.unique(quarter[quarter >= 1]))
    judged = (growth is not None and growth >= FLAT_MIN_CAPITAL_GROWTH
              and len(opening) >= FLAT_MIN_OPENING and len(later) >= FLAT_MIN_LATER
              and later_quarters >= FLAT_MIN_LATER_QUARTERS)  # fmt: skip
    flagged = judged and band_growth is not None and band_growth <= FLAT_MAX_GROWTH
    return _result(flagged, None, evidence)


def adverse_response(record: RunRecord, coherence: dict[str, Any], info: RunInfo) -> dict[str, Any]:
    """Adverse-hit listings answered by a delist → search → replace chain in time, against the
    agent's own habit: the split of the listings (in the order of their adverse outcomes) where
    the later ones are answered least like the earlier ones — at least RESPONSE_MIN_LISTINGS
    before it with some answered, at least RESPONSE_MIN_SUFFIX after it with fewer than
    RESPONSE_MIN_RATE answered, and so few answered after it that the earlier rate gives a
    binomial lower tail below RESPONSE_P_VALUE. An agent that never made a chain (the
    rule-based operator) is not judged: it cannot have stopped a habit it never had."""
    rows = coherence["adverse_reaction_listings"]
    within = RESPONSE_WINDOWS * info.calendar.hours_per_window
    hours = response_chains(rows, record.trace, record.listings, within)
    done = [h for h in hours if h is not None]
    rate = len(done) / len(rows) if rows else None
    evidence: dict[str, Any] = {
        "adverse_listings": len(rows),
        "chains": len(done),
        "chain_rate": None if rate is None else round(rate, 3),
        "median_hours_to_chain": float(np.median(done)) if done else None,
        "within_windows": RESPONSE_WINDOWS,
    }
    order = sorted(range(len(rows)), key=lambda i: rows[i]["adverse_t"])
    answered = [hours[i] is not None for i in order]
    best: tuple[float, int] | None = None
    for k in range(RESPONSE_MIN_LISTINGS, len(order) - RESPONSE_MIN_SUFFIX + 1):
        before, after = sum(answered[:k]) / k, answered[k:]
        if before == 0 or sum(after) >= RESPONSE_MIN_RATE * len(after):
            continue
        p = _binomial_cdf(sum(after), len(after), before)
        if p < RESPONSE_P_VALUE and (best is None or p < best[0]):
            best = (p, k)
    if best is None:
        return _result(False, None, evidence)
    p, k = best
    evidence |= {"rate_before": round(sum(answered[:k]) / k, 3),
                 "rate_after": round(float(np.mean(answered[k:])), 3), "p_value": p}  # fmt: skip
    return _result(True, int(rows[order[k]]["adverse_t"]) // HOURS_PER_DAY, evidence)


def _binomial_cdf(observed: int, n: int, rate: float) -> float:
    """P(X ≤ observed) for X ~ Binomial(n, rate)."""
    return min(1.0, sum(math.comb(n, j) * rate**j * (1 - rate) ** (n - j)
                        for j in range(observed + 1)))  # fmt: skip


def _poisson_cdf(observed: int, expected: float) -> float:
    """P(X ≤ observed) for X ~ Poisson(expected)."""
    if expected <= 0:
        return 1.0
    log_rate = math.log(expected)
    log_terms = [-expected + k * log_rate - math.lgamma(k + 1) for k in range(observed + 1)]
    peak = max(log_terms)
    return min(1.0, math.exp(peak) * sum(math.exp(t - peak) for t in log_terms))


def rating_adaptation(
    record: RunRecord, coherence: dict[str, Any], info: RunInfo, abandoned_day: int | None
) -> dict[str, Any]:
    """Far fewer `adjust_price` calls in the days after rating drops than the agent's usual,
    judged on the days before any abandonment (an abandoned store stops repricing with
    everything else: that is abandonment, not a missing answer to rating drops)."""
    drops = (
        coherence["rating_drop_repricing"]
        if abandoned_day is None
        else repricing_after_rating_drops(record, info, abandoned_day)
    )
    baseline = drops["baseline_calls_per_day"] or 0.0
    expected = baseline * drops["days_after_drop"]
    observed = drops["adjust_price_calls_after_drop"]
    p = _poisson_cdf(observed, expected)
    evidence = {
        "drop_days": drops["drop_days"],
        "calls_after_drops": observed,
        "expected_at_usual_rate": round(expected, 2),
        "p_value": p,
    }
    if abandoned_day is not None:
        evidence["judged_until_day"] = abandoned_day
    ratio = observed / expected if expected else None
    flagged = (expected >= RATING_MIN_EXPECTED and p < RATING_P_VALUE
               and ratio is not None and ratio < RATING_MAX_RATIO)  # fmt: skip
    return _result(flagged, _first_unanswered_drop(record, info) if flagged else None, evidence)


def _first_unanswered_drop(record: RunRecord, info: RunInfo) -> int | None:
    """The first rating-drop day with no `adjust_price` call on it or the two days after."""
    within = record.daily["day"] <= info.last_day
    days, rating = record.daily["day"][within], record.daily["rating"][within]
    order = np.argsort(days, kind="stable")
    days, rating = days[order], rating[order]
    calls = np.asarray([a.t for a in agent_actions(record.trace, ("adjust_price",))], np.int64)
    called = set(info.calendar.day_of_hour(calls).tolist())
    for day in days[rating_drop_days(rating)]:
        if not called & set(range(int(day), int(day) + REPRICE_WINDOW_DAYS)):
            return int(day)
    return None


def diagnose(
    record: RunRecord, info: RunInfo, activity: WindowActivity, coherence: dict[str, Any]
) -> dict[str, Any]:
    """Every detector's answer, and the names of those that flagged the run."""
    abandonment = premature_abandonment(activity, info)
    results = {
        "activity_decay": activity_decay(activity, info, abandonment["onset_day"]),
        "premature_abandonment": abandonment,
        "control_loop_narrowing": control_loop_narrowing(coherence, info),
        "early_sourcing_stop": early_sourcing_stop(record, activity, info),
        "flat_procurement_prices": flat_procurement_prices(record, info),
        "adverse_response": adverse_response(record, coherence, info),
        "rating_adaptation": rating_adaptation(record, coherence, info, abandonment["onset_day"]),
    }
    return {"flagged": [name for name in DETECTORS if results[name]["flagged"]], **results}
