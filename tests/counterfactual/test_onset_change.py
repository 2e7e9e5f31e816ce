"""The onset of a run that is not the policy's own store must be a change of its rate, not a
month of its own scatter (counterfactual/onset.py: `change_p`, `rise_p`), and an onset record
can be derived again with this code's rule (`from_saved`)."""

from __future__ import annotations

import itertools

import pytest

from merchantbench.counterfactual.onset import (
    CHANGE_P,
    Fork,
    OnsetSearch,
    complete,
    from_saved,
    onset_search,
    rise_p,
)


def search_of(damage: list[float], own: float = 50_000.0) -> OnsetSearch:
    """A run over fork days 0, 30, …, 330 of a 365-day year whose periods lost `damage` (RMB)
    against the policy's own run (flat at `own`)."""
    gaps = list(itertools.accumulate(damage[:-1], initial=0.0))
    this = [own - g for g in gaps]
    days = [30 * k for k in range(len(this))]
    end_gap = gaps[-1] + damage[-1]
    return onset_search(days, this, [own] * len(this), 365, this[0] - end_gap, 3000)


# Healthy runs that the expert did not build, under the expert policy (`small`, 7 December):
# their damage, RMB a period, and the day the margin alone made an onset.
HEALTHY_UNDER_EXPERT = {
    "rule-based, seed 9 (a spread of five agreeing periods)": (
        [
            4600.44,
            5978.61,
            3401.94,
            3588.99,
            3426.07,
            3246.6,
            5494.32,
            5494.51,
            2946.04,
            3946.79,
            3858.35,
            3398.26,
        ],
        6,
    ),  # fmt: skip
    "rule-based, seed 8 (the second month against the first)": (
        [
            1305.25,
            8342.0,
            3178.03,
            4345.44,
            4374.25,
            5795.99,
            3627.06,
            6311.43,
            1649.36,
            2044.47,
            3589.57,
            3663.77,
        ],
        1,
    ),  # fmt: skip
    "random, seed 8": (
        [
            2980.61,
            7855.09,
            2835.93,
            5592.45,
            6188.7,
            4817.76,
            3736.24,
            4642.03,
            645.18,
            2822.06,
            3442.61,
            3263.55,
        ],
        1,
    ),  # fmt: skip
}


@pytest.mark.parametrize("name", sorted(HEALTHY_UNDER_EXPERT))
def test_a_month_of_a_healthy_runs_own_scatter_is_no_onset(name):
    damage, k = HEALTHY_UNDER_EXPERT[name]
    search = search_of(damage)
    periods = search.damage()
    rate = search.rate_before(k)
    excess = [d - rate * (b - a) for a, b, d in periods[k:]]
    # The margin alone passes it (what made the false onset) ...
    assert excess[0] > search.margin_at(k) and sum(excess) > search.margin_at(k)
    # ... but its months' order shows no change of rate.
    p = search.change_p(k)
    assert p is not None and p > CHANGE_P
    assert search.onset_period() is None and search.onset_day is None


def test_a_change_of_rate_of_a_run_that_is_not_the_policys_own_is_an_onset():
    # 3,000–4,500 RMB a month worse than the policy (scattered), then 9,000–11,000 from day 180.
    damage = [3600, 4400, 3100, 4500, 3000, 3900, 9800, 10_900, 9100, 10_400, 9600, 11_800]
    search = search_of(damage)
    assert search.onset_period() == (180, 210)
    p = search.change_p(6)
    assert p is not None and p == pytest.approx(1 / 924)  # the only order as extreme: its own
    assert search.to_json()["change_p"] == pytest.approx(1 / 924, abs=1e-6)


def test_a_run_that_was_the_policys_own_store_is_judged_as_a_departure_not_by_the_test():
    # Damage exactly 0 before the failure: no permutation test, even in the second period
    # (where one "before" month could never beat the 1-in-12 chance of one); the run left the
    # policy's store, and is judged against its noise forks (test_onset_departure.py).
    damage = [0, 700, 650, 720, 690, 710, 700, 640, 660, 700, 690, 810]
    search = search_of(damage)
    assert search.change_p(1) is None and search.departure() == 1
    assert search.onset_period() is None and search.next_day() == 61  # a noise fork first
    assert search.to_json()["change_p"] is None


def test_rise_p_counts_the_splits_as_extreme_and_draws_beyond_the_exact_limit():
    # before = [1]: rises 1.5 (before 1), 0 (before 2), −1.5 (before 3): 1 of 3 as large.
    assert rise_p([1.0, 2.0, 3.0], 1) == pytest.approx(1 / 3)
    assert rise_p([3.0, 2.0, 1.0], 1) == 1.0
    assert rise_p([1.0, 2.0], 0) == 1.0 and rise_p([1.0, 2.0], 2) == 1.0
    # A weekly grid: C(52, 26) subsets, drawn; the same figure every time, and small for a
    # clear change (the observed split is counted, so never 0).
    weekly = [100.0 + (k % 3) for k in range(26)] + [400.0 + (k % 5) for k in range(26)]
    p = rise_p(weekly, 26)
    assert p == rise_p(weekly, 26) and 0 < p < 0.001
    shuffled = [weekly[(7 * k) % 52] for k in range(52)]
    assert rise_p(shuffled, 26) > CHANGE_P


def test_an_onset_record_is_derived_again_to_the_same_search():
    # A run the policy did not build (1,000 RMB a month worse), 7,000 a month worse from day
    # 150, bisected with three forks.
    search = search_of([1000, 1050, 980, 1020, 990, 7000, 7100, 6900, 7050, 6950, 7000, 8100])
    assert search.departure() is None and search.bracket == (150, 180)
    assert search.next_day() == 165
    search.add(Fork(165, 50_000 - 5040 - 3600, 50_000))  # 3,600 RMB more by day 165
    assert search.bracket == (150, 165) and search.next_day() == 157
    search.add(Fork(157, 50_000 - 5040 - 100, 50_000))  # 100 RMB: less than its own rate
    assert search.bracket == (157, 165) and search.next_day() == 161
    search.add(Fork(161, 50_000 - 5040 - 2000, 50_000))
    assert search.bracket == (157, 161) and complete(search)
    saved = search.to_json()
    again = from_saved(saved, 3000)
    assert again.to_json() == saved and complete(again) and again.onset_day == 157
    # A record whose bisection forks are not the ones this rule asks for stays incomplete.
    saved["bisection_forks"] = []
    partial = from_saved(saved, 3000)
    assert partial.bracket == (150, 180) and not complete(partial)
