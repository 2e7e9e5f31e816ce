"""Training episodes: a store opened on any day of its market's year, for 30, 90 or 365 days,
with a reward per window or at the end and an observation of bounded size.

An episode of seed s, starting on day d (0-based) for n days, plays the market of seed s (the
market `merchantbench run --seed s` plays: the cache key has no horizon in it) from day d to day
d + n. The store opens on day d with the initial balance, deposit and rating; the windows before
are simulated idle (no listing, so no demand, order, fee or rating evidence: the store is the
same as new) and never shown, so the first window is that calendar day's market: its launches,
demand, supplier events and festivals. `d + n` must not pass the market's year
(`market.days`, 365); for a long episode starting later in the year, shift the calendar
instead (`overrides=["clock.start_date=2025-10-01"]`: a new market).

Rewards are integer fen first (`reward_fen`), so the rewards of an episode sum exactly to its
change in net assets (after the final drain, as a run's score is taken). `reward` is that in
RMB, or divided by the initial net assets when `normalise` is set. In `"end"` mode every call
rewards 0 but the one that ends the episode, which rewards the whole change.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from merchantbench.money import fen, rmb
from merchantbench.scenario import Scenario, ScenarioError, load_scenario
from merchantbench.session import Session
from merchantbench.surface import AgentSurface
from merchantbench.tools.status import StoreStatus

__all__ = [
    "EPISODE_PRESETS",
    "Episode",
    "EpisodeConfig",
    "EpisodeError",
    "RewardMeter",
    "RewardMode",
    "StepOutcome",
    "bounded_observation",
    "episode_brief",
    "episode_scenario",
    "open_on_start_day",
]

EPISODE_PRESETS: dict[str, int] = {"30d": 30, "90d": 90, "365d": 365}
RewardMode = Literal["window", "end"]
_CUT = "\n[… {more} more characters cut: call get_observation or the query tools for them]"


class EpisodeError(ValueError):
    """An episode that cannot be made (bad preset, start day, budget); one-line reason."""


@dataclass(frozen=True)
class EpisodeConfig:
    """What an episode is, besides its seed.

    Attributes:
        scenario: The market and rules: a preset name (`paper`, `small`, `smoke`) or a
            `Scenario`; its `clock.days` is replaced by the episode's.
        length: `30d`, `90d`, `365d`, or a number of days (an int, or a string of digits).
        start_day: The market day (0-based; day 0 is `clock.start_date`) the store opens.
        reward: `"window"` (each window's change in net assets) or `"end"` (all at the end).
        normalise: Divide rewards by the initial net assets (3000 RMB in the presets).
        observation_chars: Cut the window observation after this many characters (None: whole).
        memory_chars: Show at most this many characters of the memory document after the
            observation (0: none; None: whole).
        overrides: `key=value` scenario overrides, as `--set`.
    """

    scenario: str | Scenario = "paper"
    length: str | int = "30d"
    start_day: int = 0
    reward: RewardMode = "window"
    normalise: bool = False
    observation_chars: int | None = 6000
    memory_chars: int | None = 4000
    overrides: tuple[str, ...] = field(default_factory=tuple)

    @property
    def days(self) -> int:
        if isinstance(self.length, str) and self.length.isdigit():
            return int(self.length)  # days, as a command line or a JSON field gives them
        if isinstance(self.length, str):
            if self.length not in EPISODE_PRESETS:
                names = ", ".join(EPISODE_PRESETS)
                raise EpisodeError(f"unknown episode preset {self.length!r}: {names} or days")
            return EPISODE_PRESETS[self.length]
        if isinstance(self.length, bool) or not isinstance(self.length, int):
            raise EpisodeError(f"an episode length is a preset or days, not {self.length!r}")
        return self.length

    def check(self) -> None:
        """Raise EpisodeError if a field cannot be used."""
        if self.reward not in ("window", "end"):
            raise EpisodeError(f"reward is 'window' or 'end', not {self.reward!r}")
        for name in ("observation_chars", "memory_chars"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 0):
                raise EpisodeError(f"{name} is None or a count of characters ≥ 0")
        episode_scenario(self)


def episode_scenario(config: EpisodeConfig) -> Scenario:
    """The scenario an episode runs: `config.scenario` with the horizon `start_day + days`.

    Raises:
        EpisodeError: Unknown preset or scenario, or the episode does not fit the market's year.
    """
    days, start = config.days, config.start_day
    try:
        base = config.scenario
        if isinstance(base, str):
            base = load_scenario(base, overrides=list(config.overrides))
        elif config.overrides:
            raise EpisodeError("overrides apply to a scenario preset's name, not a Scenario")
    except ScenarioError as exc:
        raise EpisodeError(str(exc)) from None
    if isinstance(start, bool) or not isinstance(start, int) or start < 0:
        raise EpisodeError(f"start_day is a market day ≥ 0, not {start!r}")
    if start >= base.market.days:
        raise EpisodeError(
            f"start_day {start} is past the market's year: a store opens on day 0 to "
            f"{base.market.days - 1}"
        )
    if days < 1:
        raise EpisodeError("an episode lasts at least one day")
    if start + days > base.market.days:
        raise EpisodeError(
            f"day {start} + {days} days passes the market's year ({base.market.days} days): "
            "start earlier, or shift clock.start_date (a new market)"
        )
    data = base.model_dump(mode="json")
    data["clock"]["days"] = start + days
    return Scenario.model_validate(data)


def open_on_start_day(session: Session, config: EpisodeConfig) -> None:
    """Bring a new session of `episode_scenario(config)` to `config.start_day`: the windows
    before are simulated idle (no listing, so no demand, order, fee or rating evidence)."""
    per_day = 24 // session.scenario.clock.hours_per_window
    for _ in range(config.start_day * per_day):
        session.engine.advance()


def episode_brief(session: Session, config: EpisodeConfig) -> str:
    """The system brief, then what the episode is: its first and last day, its windows."""
    clock = session.scenario.clock
    first = dt.date.fromisoformat(clock.start_date) + dt.timedelta(days=config.start_day)
    note = (
        f"THIS EPISODE: your store opens on Day {config.start_day + 1} ({first}) and "
        f"the episode ends after Day {clock.days}: {config.days} days, "
        f"{config.days * 24 // clock.hours_per_window} windows. Nothing was listed "
        "before; your score is the change in net assets."
    )
    return f"{session.surface.brief()}\n\n{note}"


def bounded_observation(session: Session, config: EpisodeConfig) -> str:
    """The window's observation cut to `observation_chars`, then the memory document cut to
    `memory_chars` (none when 0)."""
    text = _cut(session.surface.observation(), config.observation_chars)
    if config.memory_chars == 0:
        return text
    memory = _cut(session.memory_doc, config.memory_chars) or "(empty)"
    return f"{text}\n\nYOUR MEMORY DOCUMENT (write_memory_doc changes it):\n{memory}"


class RewardMeter:
    """Rewards of an episode from its net assets after each call, in integer fen first.

    `"window"`: each call's reward is the change since the previous call; `"end"`: 0 but for
    the call that ends the episode, which gets the whole change. Over an episode the fen
    rewards sum exactly to its change in net assets. `value` is a fen reward in RMB, or
    divided by the initial net assets with `normalise`.
    """

    def __init__(self, config: EpisodeConfig, initial_fen: int) -> None:
        self.mode, self.normalise = config.reward, config.normalise
        self.initial_fen = self._last_fen = initial_fen
        self._paid = False  # "end" mode: the end's reward was given

    def reward_fen(self, now_fen: int, over: bool) -> int:
        """The reward of the call after which net assets are `now_fen` (fen)."""
        if self.mode == "window":
            reward, self._last_fen = now_fen - self._last_fen, now_fen
            return reward
        if over and not self._paid:
            self._last_fen, self._paid = now_fen, True
            return now_fen - self.initial_fen
        return 0

    def restart_from(self, now_fen: int) -> None:
        """After a restored snapshot: the next reward counts from `now_fen`."""
        self._last_fen, self._paid = now_fen, False

    def value(self, reward_fen: int) -> float:
        if self.normalise:
            return reward_fen / self.initial_fen if self.initial_fen else 0.0
        return rmb(reward_fen)


@dataclass(frozen=True)
class StepOutcome:
    """One call's outcome: the tool's result, the reward, whether the episode is over."""

    result: dict[str, Any]
    reward: float
    reward_fen: int
    done: bool
    window: int


class Episode:
    """One training episode on the host side: a session opened on `start_day`.

    Args:
        config: The episode's preset, start day, reward and budget.
        seed: The run's seed (from `splits.episode_seed`).
        catalog: A real catalog directory instead of the synthetic market.
    """

    def __init__(self, config: EpisodeConfig, seed: int, catalog: Path | None = None) -> None:
        config.check()
        self.config = config
        self.scenario = episode_scenario(config)
        self.session = Session.open(self.scenario, seed, catalog)
        open_on_start_day(self.session, config)
        self.first_window = self.session.engine.window
        self.initial_fen = fen(self.status().net_assets)
        self._meter = RewardMeter(config, self.initial_fen)
        self.rewards_fen: list[int] = []  # one per call (0 for most)
        self.calls = 0

    # --- what the agent sees ------------------------------------------------------------------
    @property
    def surface(self) -> AgentSurface:
        return self.session.surface

    def status(self) -> StoreStatus:
        return self.session.surface.status()

    def brief(self) -> str:
        """The system brief and what this episode is (its first and last day)."""
        return episode_brief(self.session, self.config)

    def observation(self) -> str:
        """The window's observation cut to the budget, then the memory document (cut too)."""
        return bounded_observation(self.session, self.config)

    def tool_schemas(self) -> list[dict[str, Any]]:
        return self.surface.tool_schemas()

    @property
    def over(self) -> bool:
        return self.surface.over

    # --- acting --------------------------------------------------------------------------------
    def call(self, tool: str, args: dict[str, Any] | str | None = None) -> StepOutcome:
        """One tool call and its reward; bad input is a structured error, never an exception."""
        result = self.surface.call(tool, args)
        self.calls += 1
        reward_fen = self._meter.reward_fen(fen(self.status().net_assets), self.over)
        self.rewards_fen.append(reward_fen)
        return StepOutcome(
            result, self._meter.value(reward_fen), reward_fen, self.over, self.window
        )

    @property
    def window(self) -> int:
        """The open window, 0-based, numbered as the observation text numbers it (the market's
        windows: "window 241 of 300" is window 240 of an episode whose store opened on day 120
        and which ends with the market's window 300); `windows_total` once over."""
        return self.surface.window

    @property
    def windows_played(self) -> int:
        """Windows closed in this episode (0 in its first)."""
        return self.surface.window - self.first_window

    @property
    def change_fen(self) -> int:
        """Net assets now minus at the start (fen)."""
        return fen(self.status().net_assets) - self.initial_fen

    def summary(self) -> dict[str, Any]:
        """What a trainer logs at the end: reward total, change in net assets, calls, windows."""
        return {
            "days": self.config.days,
            "start_day": self.config.start_day,
            "over": self.over,
            "windows": self.windows_played,
            "first_window": self.first_window,
            "calls": self.calls,
            "reward_total_fen": sum(self.rewards_fen),
            "net_assets_change_fen": self.change_fen,
            "final_net_assets": self.status().net_assets,
            "state_hash": self.session.state_hash(),
        }


def _cut(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    return text[:limit] + _CUT.format(more=len(text) - limit)
