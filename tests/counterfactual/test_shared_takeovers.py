"""Work the analysis does not do twice (counterfactual/rounds.py, `takeover.play_on`): the
policy's own run continued from a kept store and agent instead of played again from day 0,
and a takeover of a store already played given that takeover's result."""

from __future__ import annotations

import pickle
from dataclasses import replace

import pytest

from merchantbench.counterfactual.analysis import _day0_task, analyse
from merchantbench.counterfactual.execute import InProcess
from merchantbench.counterfactual.parent import Parent
from merchantbench.counterfactual.rounds import as_value
from merchantbench.counterfactual.takeover import (
    Kept,
    Policy,
    TakeoverTask,
    play_on,
    run_takeover,
)
from merchantbench.runs.runner import run_agent
from merchantbench.runs.spec import RunSpec
from merchantbench.scenario import load_scenario
from merchantbench.session import Session


@pytest.fixture(scope="module")
def parent(tmp_path_factory: pytest.TempPathFactory) -> Parent:
    """A smoke run (14 days) of the rule-based operator that abandons its store on day 7."""
    run_dir = tmp_path_factory.mktemp("shared") / "run"
    run_agent(RunSpec("fail-abandon-rb", load_scenario("smoke"), 2, {"onset_day": 7}), run_dir)
    return Parent.read(run_dir)


def state_hash(parent: Parent, blob: bytes) -> str:
    session = Session.open(parent.scenario, parent.seed, parent.catalog)
    session.restore(blob)
    return session.state_hash()


@pytest.mark.parametrize("policy", ["expert", "rule-based"])
def test_the_own_run_played_on_from_a_kept_store_and_agent_is_the_one_played_from_day_0(
    parent, policy
):
    """The bisection's own-run fork at day 9 (window 18), from the own run kept at day 3
    (window 6), against the same fork with the own run played from day 0: the same store at
    day 9 (state hash, and equal as values) and the same takeover from it (final net assets)."""
    start = replace(_day0_task(parent, Policy(policy)), keep=(6, 18))
    own_year = run_takeover(start)
    from_day_0 = play_on(replace(start, keep=()), None, 18)
    played_on = play_on(replace(start, window=6, keep=()), own_year.kept[6], 18)
    assert from_day_0 is not None and played_on is not None
    # the own run's store at day 9: played through by the takeover, from day 0, from day 3
    assert from_day_0.session == own_year.kept[18].session
    assert state_hash(parent, played_on.session) == state_hash(parent, from_day_0.session)
    assert as_value(played_on.session) == as_value(from_day_0.session)

    def fresh_copy_at_day_9(kept: Kept) -> tuple[float, bool]:
        took = run_takeover(replace(start, window=18, day=9, session=kept.session, keep=()))
        return took.final_net_assets, took.closed

    assert fresh_copy_at_day_9(played_on) == fresh_copy_at_day_9(from_day_0)
    if policy == "expert":  # its memory matters: a fresh expert at day 3 builds another store
        forgetful = play_on(
            replace(start, window=6, keep=()), Kept(own_year.kept[6].session, None), 18
        )
        assert forgetful is not None
        assert state_hash(parent, forgetful.session) != state_hash(parent, from_day_0.session)


def test_a_store_played_once_gives_every_task_of_it_the_same_result(parent):
    """Under the rule-based policy the run is the policy's own store until day 7: its fork at
    day 3 and the policy's takeover of its own run at day 3 are one takeover, played once.
    Every result the analysis filed without playing it is the one playing it gives."""
    played: list[TakeoverTask] = []
    filed: list[TakeoverTask] = []

    class Counting(InProcess):
        def run(self, tasks):  # type: ignore[no-untyped-def]
            for task, result in super().run(tasks):
                played.append(task)
                yield task, result

    [analysis] = analyse([parent], [Policy("rule-based")], 3, Counting(),
                         progress=lambda d, t, task: filed.append(task))  # fmt: skip
    curve = analysis.curves[0]
    assert [p.day for p in curve.points] == [0, 3, 6, 9]
    assert len(filed) > len(played)
    reused = [t for t in filed if all(t is not p for p in played)]
    assert 3 in {t.day for t in reused}  # the own run at day 3: the run's own fork
    assert curve.search is not None
    own = {f.day: f.own for f in [*curve.search.forks, *curve.search.bisection]}
    this = {p.day: p.final_net_assets for p in curve.points}
    this.update({f.day: f.this for f in curve.search.bisection})
    for task in reused:  # a store given another task's result is the same store
        assert run_takeover(task).final_net_assets == own[task.day] == this[task.day]
    # and a store that differs (the run after its failure) is played: day 9 twice
    assert sum(t.day == 9 for t in played) == 2


def test_stores_are_equal_as_values_whatever_objects_they_share():
    """A store played on from a restored snapshot holds its own copy of a string the code's
    constant is in the store played through: other bytes, the same value; another value is
    another store; a store whose objects hold themselves is compared by its bytes only."""
    word = "bad_review"

    def snapshot(engine: object) -> bytes:
        return pickle.dumps({"engine": pickle.dumps(engine), "memory": 1})

    shared, apart = snapshot([word, word]), snapshot([word, "".join(["bad_", "review"])])
    assert shared != apart and as_value(shared) == as_value(apart)
    assert as_value(snapshot([word, "good_review"])) != as_value(shared)
    cyclic: list[object] = []
    cyclic.append(cyclic)
    assert as_value(snapshot(cyclic)) is None


def test_a_bisection_step_plays_the_own_run_on_from_the_nearest_kept_window(parent, monkeypatch):
    """`_own_fork` at day 9 with the own run kept at days 2 and 6 (windows 4 and 12) plays it on
    from day 6 only, keeps day 9 for the next step, and hands a fresh copy the store the own
    run had at day 9 when played through."""
    import merchantbench.counterfactual.analysis as analysis

    start = replace(_day0_task(parent, Policy("expert")), keep=(4, 12, 18))
    own_year = run_takeover(start)
    states = {w: own_year.kept[w] for w in (4, 12)}
    bases: list[int] = []

    def spied(task: TakeoverTask, kept: Kept | None, until: int) -> Kept | None:
        bases.append(task.window)
        return play_on(task, kept, until)

    monkeypatch.setattr(analysis, "play_on", spied)
    fork = analysis._own_fork(replace(start, keep=()), states, 18, 9)
    assert bases == [12] and sorted(states) == [4, 12, 18]
    assert fork is not None and (fork.window, fork.day, fork.keep) == (18, 9, ())
    assert as_value(fork.session) == as_value(own_year.kept[18].session)


def test_a_departures_noise_forks_are_the_takeovers_a_finer_grid_plays(parent):
    """Under the rule-based policy the run leaves the policy's store in day 6–9 (onset.py: a
    departure); its noise fork a day after fork day 9 is the fork a one-day grid plays at day
    10: the same P (the run's store handed to a fresh copy) and Q (the policy's own run)."""
    [coarse] = analyse([parent], [Policy("rule-based")], 3, InProcess())
    search = coarse.curves[0].search
    assert search is not None and search.departure() == 2
    assert [f.day for f in search.noise_forks] == [10]
    assert search.to_json()["departure"]["noise"] is not None
    [fine] = analyse([parent], [Policy("rule-based")], 1, InProcess(), bisect=False)
    grid = fine.curves[0].search
    assert grid is not None
    [noise] = search.noise_forks
    at_10 = next(f for f in grid.forks if f.day == 10)
    assert (noise.this, noise.own) == (at_10.this, at_10.own)
