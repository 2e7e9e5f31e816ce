"""The store rating of docs/design.md §6: the published formula, stars and multipliers."""

from __future__ import annotations

import pytest

from merchantbench.scenario import RatingConfig
from merchantbench.sim.rating import RatingState, stars_for

CFG = RatingConfig()


@pytest.mark.parametrize(
    ("rating", "stars"),
    [(1.0, 1), (2.49, 1), (2.50, 2), (3.29, 2), (3.30, 3), (3.79, 3), (3.80, 4), (4.19, 4),
     (4.20, 5), (5.0, 5)],
)  # fmt: skip
def test_star_thresholds(rating, stars):
    assert stars_for(rating, CFG) == stars


def test_new_store_starts_at_four_stars_times_one():
    state = RatingState.initial(CFG)
    assert (state.published, state.stars, state.multiplier) == (4.0, 4, 1.0)


def test_published_rating_matches_the_formula():
    gamma = 2 ** (-1 / 30)
    outcomes = {0: [(4.5, 1), (1.0, 2)], 1: [(4.5, 1)], 3: [(1.0, 3), (2.0, 1)]}
    state = RatingState.initial(CFG)
    for day in range(5):
        for u, v in outcomes.get(day, []):
            state.add(u, v)
        state.publish(CFG)  # end of `day`: rating for day+1
        d = day + 1
        num = 20 * 4.0 + sum(
            gamma ** (d - 1 - dj) * v * u
            for dj, os in outcomes.items()
            if dj <= d - 1
            for u, v in os
        )
        den = 20 + sum(
            gamma ** (d - 1 - dj) * v for dj, os in outcomes.items() if dj <= d - 1 for _, v in os
        )
        assert state.published == pytest.approx(num / den, rel=1e-12)


def test_multiplier_follows_stars():
    state = RatingState.initial(CFG)
    for _ in range(40):
        state.add(1.0, 2.0)
    state.publish(CFG)
    assert state.published == pytest.approx((80 + 80) / 100)
    assert (state.stars, state.multiplier) == (1, 0.10)
