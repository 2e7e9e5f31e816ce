"""A run that was its policy's own store and left it (counterfactual/onset.py, "a departure
from the policy's own store"): judged once, as a whole, against the noise its noise forks
measure; dated where it left, by forks that ask only whether D is still exactly 0."""

from __future__ import annotations

import itertools

from merchantbench.counterfactual.onset import (
    NOISE_LAG_DAYS,
    Fork,
    OnsetSearch,
    from_saved,
    onset_search,
)

OWN = 50_000.0


def search_of(gaps: list[float], end_gap: float) -> OnsetSearch:
    """A run over fork days 0, 30, …, 330 of a 365-day year whose D at the fork days is `gaps`
    (the first 0: both stores are empty) and `end_gap` at the end; the policy's own run flat."""
    this = [OWN - g for g in gaps]
    days = [30 * k for k in range(len(gaps))]
    return onset_search(days, this, [OWN] * len(gaps), 365, this[0] - end_gap, 3000)


def add_noise(search: OnsetSearch, moves: list[float]) -> None:
    """The noise forks, each D moved by `moves` (cycled) from its fork day's."""
    gaps = {f.day: f.gap for f in search.forks}
    for move in itertools.cycle(moves):
        day = search.next_day()
        if day is None or day not in search.noise_days():
            return
        search.add(Fork(day, OWN - gaps[day - NOISE_LAG_DAYS] - move, OWN))


DECLINE = [0, 0, 0, 0, -300, 700, 2_200, 4_400, 7_000, 9_900, 13_000, 16_000]


def test_a_departure_damaged_to_the_end_is_dated_where_the_run_left_the_policys_store():
    # The policy's own store to day 90; then a decline that costs nothing in its first period
    # (D at 120 is even negative: once the stores differ, they no longer share their noise),
    # then 1,000–3,000 RMB a period.
    found = search_of(DECLINE, 19_000)
    assert found.departure() == 3 and found.bracket is None
    # Its noise forks come first: a day after each fork day from the departure period's end.
    assert found.noise_days() == [121, 151, 181, 211, 241, 271, 301, 331]
    assert found.next_day() == 121 and 105 in found.days_to_come()
    add_noise(found, [400, -250, 600])
    assert found.departure_noise() == 400 / 0.954
    assert found.onset_period() == (90, 120) and found.next_day() == 105
    data = found.to_json()
    assert data["change_p"] is None and data["departure"]["period"] == [90, 120]
    assert data["departure"]["margin"] == round(3 * 400 / 0.954, 2)
    # A fork whose D is still exactly 0: the run had not left by then.
    found.add(Fork(105, OWN, OWN))
    assert found.bracket == (105, 120) and found.next_day() == 112
    # A fork that has left, though it shows a gain, not a damage: the departure is before it.
    found.add(Fork(112, OWN + 400, OWN))
    assert found.bracket == (105, 112) and found.next_day() is None
    assert found.onset_day == 105


def test_a_departure_within_the_noise_its_noise_forks_measure_is_no_onset():
    # The same run, but a day's shift of the takeover moves D by thousands: 19,000 RMB at the
    # end is within 3 times that.
    found = search_of(DECLINE, 19_000)
    add_noise(found, [7_000, -6_500, 8_000])
    assert found.onset_period() is None and found.onset_day is None
    assert found.next_day() is None and found.days_to_come() == []
    assert found.to_json()["departure"]["damage_to_end"] == 19_000


def test_a_departure_is_judged_by_its_noise_not_by_the_scatter_of_its_periods():
    # Lumpy damage after the departure (a small store: an order missed now and then): its
    # periods scatter by more than a third of what it costs, but a day's shift moves D by
    # 20 RMB at most.
    gaps = [0, 0, 0, 0, 0, 0, 0, 0, 63, 56, 236, 236]
    found = search_of(gaps, 236)
    assert found.departure() == 7
    add_noise(found, [20, -10, 0])
    assert found.onset_period() == (210, 240)


def test_a_departure_after_the_last_fork_day_has_no_noise_fork_and_no_onset():
    found = search_of([0.0] * 12, 5_000)
    assert found.departure() == 11 and found.noise_days() == []
    assert found.onset_day is None and found.next_day() is None


def test_a_run_that_never_was_the_policys_store_is_judged_by_its_changes_not_as_a_departure():
    # D is not 0 at the first fork: the run was never the policy's own store.
    damage = [4_000, 4_200, 3_900, 4_100, 4_050, 9_000, 10_000, 9_500, 9_800, 10_200, 9_900, 9_700]
    gaps = list(itertools.accumulate(damage[:-1], initial=0.0))
    found = search_of(gaps, gaps[-1] + damage[-1])
    assert found.departure() is None and found.noise_days() == []
    assert found.onset_period() == (150, 180)
    assert found.to_json()["departure"] is None


def test_the_policys_own_run_never_departs():
    found = search_of([0.0] * 12, 0.0)
    assert found.departure() is None and found.onset_day is None


def test_a_departure_derived_again_from_its_record_is_the_same_search():
    found = search_of(DECLINE, 19_000)
    add_noise(found, [400, -250, 600])
    found.add(Fork(105, OWN, OWN))
    found.add(Fork(112, OWN + 400, OWN))
    again = from_saved(found.to_json(), 3000)
    assert again.to_json() == found.to_json() and again.onset_day == 105
