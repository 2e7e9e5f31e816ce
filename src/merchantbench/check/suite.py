"""`run_check`: play the action script through an adapter and run every check on what it saw."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

from merchantbench.check import checks
from merchantbench.check.adapter import Adapter, StoreRun, get_adapter
from merchantbench.check.checks import CheckResult
from merchantbench.check.play import Player, Recording, transcript_sha256
from merchantbench.scenario import Scenario, load_scenario
from merchantbench.seeds import CHECK_SEED

__all__ = ["DEFAULT_SEED", "CheckReport", "run_check"]

DEFAULT_SEED = CHECK_SEED


@dataclass(frozen=True)
class CheckReport:
    """The verdict of `run_check`: every check in order, and what was played."""

    adapter: str
    scenario: str
    seed: int
    checks: list[CheckResult]
    calls: int
    seconds: float
    final_hash: str = ""
    transcript_sha256: str = ""  # calls and results of the first run, to compare front ends
    failures: list[str] = field(init=False)

    def __post_init__(self) -> None:
        lines = [f"{c.name}: {c.detail}" for c in self.checks if not c.ok]
        object.__setattr__(self, "failures", lines)

    @property
    def ok(self) -> bool:
        return not self.failures

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


def run_check(
    scenario: Scenario | str = "smoke",
    seed: int = DEFAULT_SEED,
    adapter: Adapter | str = "python",
    against: Adapter | str | None = None,
) -> CheckReport:
    """Check a front end: three runs of the action script, judged by every check.

    Args:
        scenario: A scenario or a preset name (`smoke` plays 28 windows in about a second).
        seed: The run's seed (the market's too). Seeds of fewer than six digits are not
            looked for by value in the outputs.
        adapter: An adapter or its registered name (see `merchantbench.check.ADAPTERS`).
        against: Another adapter (or name), usually `"python"`: adds the `agreement` check,
            that both give the same calls, results and state hashes.

    Returns:
        The report; `report.ok` is true when every check passed.

    Raises:
        AdapterError: `adapter` or `against` names no registered adapter.
        ScenarioError: `scenario` names no preset.
    """
    sc = load_scenario(scenario) if isinstance(scenario, str) else scenario
    front = get_adapter(adapter) if isinstance(adapter, str) else adapter
    reference = get_adapter(against) if isinstance(against, str) else against
    started = time.perf_counter()
    bound = sc.clock.windows * (sc.clock.calls_per_window + 50)
    one, two = (_play(front, sc, seed, bound) for _ in range(2))
    results = [
        checks.script(one, sc.clock.windows),
        checks.determinism(one, two),
        _snapshot_check(front, sc, seed, bound),
        checks.refusals(one),
        checks.ledger(one),
        checks.hidden(one, seed),
    ]
    if reference is not None:
        name = getattr(reference, "name", type(reference).__name__)
        results.append(checks.agreement(one, _play(reference, sc, seed, bound), name))
    return CheckReport(
        adapter=getattr(front, "name", type(front).__name__),
        scenario=sc.name,
        seed=seed,
        checks=results,
        calls=len(one.steps),
        seconds=round(time.perf_counter() - started, 3),
        final_hash=one.final_hash,
        transcript_sha256=transcript_sha256(one.steps),
    )


def _open(front: Adapter, sc: Scenario, seed: int) -> tuple[StoreRun | None, str | None]:
    try:
        return front.open(sc, seed), None
    except Exception as exc:  # a front end that cannot open fails the check, loudly
        return None, f"the adapter could not open a run: {type(exc).__name__}: {exc}"


def _play(front: Adapter, sc: Scenario, seed: int, bound: int) -> Recording:
    run, failure = _open(front, sc, seed)
    if run is None:
        return Recording(failure=failure)
    try:
        player = Player(run, bound)
        player.start()
        player.play()
        return player.rec
    finally:
        run.close()


def _snapshot_check(front: Adapter, sc: Scenario, seed: int, bound: int) -> CheckResult:
    """Play to mid-run, snapshot, play on; restore, replay the script's prefix, play on."""
    middle = sc.clock.windows // 2
    run, failure = _open(front, sc, seed)
    if run is None:
        return CheckResult("snapshot", False, failure or "")
    try:
        first = Player(run, bound)
        first.start()
        first.play(until_window=middle)
        prefix = list(first.rec.steps)
        try:
            blob, at_snapshot = run.snapshot(), run.state_hash()
        except Exception as exc:
            return CheckResult("snapshot", False, f"snapshot failed: {type(exc).__name__}: {exc}")
        first.play()
        first.rec.steps = first.rec.steps[len(prefix) :]
        again = Player(run, bound)
        try:
            run.restore(blob)
            restored = run.state_hash() == at_snapshot and run.window == middle
        except Exception as exc:
            return CheckResult("snapshot", False, f"restore failed: {type(exc).__name__}: {exc}")
        again.start(replay=prefix)
        again.play()
        first.rec.observations = [o for o in first.rec.observations if o[0] >= middle]
        return checks.snapshot(first.rec, again.rec, middle, restored)
    finally:
        run.close()
