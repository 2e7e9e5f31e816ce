"""Validation agents: a base agent with one failure mode of the paper built in, from a known day.

Most are `expert` (agents/baselines/expert.py); `fail-decay-rb`, `fail-abandon-rb` and
`fail-stop-sourcing-rb` are the rule-based operator (agents/baselines/rule_based.py) failing the
same way, so that the detectors and the counterfactual onset are checked on two bases. Each is
its base with every decision unchanged but one, so a
failure-mode detector (metrics/diagnosis.py, docs/diagnosis.md) that flags it flags that one
failure. The day the failure starts is a setting (`onset_day`, 0-based like the records' days;
day 0 is the first day); before it the agent plays exactly as the expert.

- `fail-decay` (and `-rb`): activity decays; the share of windows it acts in falls from the
  onset by `shape`: `straight` (`decline_per_month` every 30 days), `halving` (half every 30
  days) or `step` (to `step_share` at once), never below `floor`;
- `fail-abandon` (and `-rb`): abandons the store; every window is closed at once, nothing else;
- `fail-narrow`: control-loop narrowing; sources (report, browsing, new listings) only every
  `source_every_days` days, supplier handling unchanged;
- `fail-stop-sourcing` (and `-rb`): early sourcing stop; never lists a product it has not
  listed before;
- `fail-flat-prices`: never moves its procurement band; lists nothing dearer than `band_max`;
- `fail-no-risk-response`: ignores adverse outcomes; no replacement of risky listings, no
  delisting on a supplier's delisting, no repricing on delays;
- `fail-no-rating-repricing`: holds every price for `hold_days` days from each rating drop.

Skipped windows (`fail-decay`) are chosen by a hash of the window index and `skip_seed`, so the
same settings skip the same windows in every run and on resume.
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal

from merchantbench.agents.base import AgentSettings
from merchantbench.agents.baselines.expert import ExpertAgent, ExpertSettings
from merchantbench.agents.baselines.expert_holdings import Candidate, Holding
from merchantbench.agents.baselines.rule_based import RuleBasedAgent, RuleBasedSettings
from merchantbench.agents.baselines.tables import rows_of
from merchantbench.surface import AgentSurface

HOURS_PER_DAY = 24
DAYS_PER_MONTH = 30
# The detectors' rating drop (metrics/coherence.py): 0.05 below the maximum of the last 7 days.
RATING_DROP = 0.05
RATING_LOOKBACK_DAYS = 7
RATING_TOLERANCE = 1e-9


def _today(surface: AgentSurface) -> int:
    """The 0-based day of the open window (costs no call)."""
    return surface.hour // HOURS_PER_DAY


class _Onset:
    """The day a validation agent's failure starts (its setting `onset_day`)."""

    config: Any

    def failing(self, day: int) -> bool:
        onset: int = self.config.onset_day
        return day >= onset


class _FailingExpert(_Onset, ExpertAgent):
    """The expert, plus the day its failure starts."""


# --- activity -------------------------------------------------------------------------------
DECAY_SHAPES = ("straight", "halving", "step")


class _ActivityFields(AgentSettings):
    """The settings of a decaying agent, on any base."""

    onset_day: int = 92  # September 1st on `paper` and `small`: the start of month 4
    shape: Literal["straight", "halving", "step"] = "straight"
    decline_per_month: float = 0.08  # straight: the share of windows falls this much per 30 days
    floor: float = 0.2  # the share never falls below this
    step_share: float = 0.4  # step: the share from the onset on
    skip_seed: int = 0


class _Decaying(_Onset):
    """From `onset_day` the agent acts in a falling share of windows (`shape`): `straight`
    falls `decline_per_month` every 30 days, `halving` halves every 30 days, `step` drops to
    `step_share` at once; none below `floor`. A skipped window is closed at once."""

    config: Any

    def acting_share(self, day: int) -> float:
        """Share of windows acted in on `day`: 1 before the onset, then by `shape`."""
        c = self.config
        if not self.failing(day):
            return 1.0
        months = (day - c.onset_day) / DAYS_PER_MONTH
        share = {
            "straight": 1.0 - c.decline_per_month * months,
            "halving": 0.5**months,
            "step": c.step_share,
        }[c.shape]
        return float(max(c.floor, share))

    def skips(self, window: int, day: int) -> bool:
        digest = hashlib.sha256(f"{self.config.skip_seed}:{window}".encode()).digest()
        draw = int.from_bytes(digest[:8], "big") / 2**64
        return draw >= self.acting_share(day)

    def act(self, surface: AgentSurface) -> None:
        if self.skips(surface.window, _today(surface)):
            surface.call("end_of_step", {})
            return
        super().act(surface)  # type: ignore[misc]


class _Abandoning(_Onset):
    """From `onset_day` every window is closed at once."""

    config: Any

    def act(self, surface: AgentSurface) -> None:
        if self.failing(_today(surface)):
            surface.call("end_of_step", {})
            return
        super().act(surface)  # type: ignore[misc]


class DecaySettings(_ActivityFields, ExpertSettings):
    pass


class DecayAgent(_Decaying, _FailingExpert):
    """`fail-decay`: the expert, from `onset_day` acting in a falling share of windows."""

    name = "fail-decay"
    Settings = DecaySettings
    config: DecaySettings


class AbandonSettings(ExpertSettings):
    onset_day: int = 100


class AbandonAgent(_Abandoning, _FailingExpert):
    """`fail-abandon`: the expert, from `onset_day` closing every window at once."""

    name = "fail-abandon"
    Settings = AbandonSettings


class RuleBasedDecaySettings(_ActivityFields, RuleBasedSettings):
    pass


class RuleBasedDecayAgent(_Decaying, RuleBasedAgent):
    """`fail-decay-rb`: the rule-based operator, from `onset_day` acting in a falling share of
    windows (the same shapes as `fail-decay`)."""

    name = "fail-decay-rb"
    Settings = RuleBasedDecaySettings  # type: ignore[assignment]
    config: RuleBasedDecaySettings  # type: ignore[assignment]


class RuleBasedAbandonSettings(RuleBasedSettings):
    onset_day: int = 100


class RuleBasedAbandonAgent(_Abandoning, RuleBasedAgent):
    """`fail-abandon-rb`: the rule-based operator, from `onset_day` closing every window."""

    name = "fail-abandon-rb"
    Settings = RuleBasedAbandonSettings  # type: ignore[assignment]
    config: RuleBasedAbandonSettings  # type: ignore[assignment]


class RuleBasedStopSourcingSettings(RuleBasedSettings):
    onset_day: int = 285


class RuleBasedStopSourcingAgent(_Onset, RuleBasedAgent):
    """`fail-stop-sourcing-rb`: the rule-based operator, from `onset_day` listing nothing new
    (it still delists, and still answers supplier anomalies)."""

    name = "fail-stop-sourcing-rb"
    Settings = RuleBasedStopSourcingSettings  # type: ignore[assignment]
    config: RuleBasedStopSourcingSettings  # type: ignore[assignment]

    def _refill(self, surface: AgentSurface, free: int, listed: set[str]) -> None:
        if not self.failing(_today(surface)):
            super()._refill(surface, free, listed)


# --- sourcing -------------------------------------------------------------------------------
class NarrowSettings(ExpertSettings):
    onset_day: int = 61  # August 1st on `paper` and `small`: the start of month 3
    source_every_days: int = 7


class NarrowAgent(_FailingExpert):
    """`fail-narrow`: from `onset_day` it reads the daily report, browses and fills free slots
    only every `source_every_days` days; supplier handling, risk watching, rotation and the
    price experiment go on as before (so the share of supplier-handling calls grows)."""

    name = "fail-narrow"
    Settings = NarrowSettings
    config: NarrowSettings

    def _sources_today(self) -> bool:
        if not self.failing(self.day):
            return True
        return (self.day - self.config.onset_day) % self.config.source_every_days == 0

    def _read_report(self, surface: AgentSurface) -> None:
        if self._sources_today():
            super()._read_report(surface)

    def _candidates(
        self,
        surface: AgentSurface,
        keywords: list[str],
        snapshot: dict[str, Any],
        browse: bool = True,
    ) -> list[Candidate]:
        if browse and not self._sources_today():
            return []  # the daily sourcing; substitutes for a replaced listing are still sought
        return super()._candidates(surface, keywords, snapshot, browse)


class StopSourcingSettings(ExpertSettings):
    onset_day: int = 285  # 80 days before the end of a 365-day year


class StopSourcingAgent(_FailingExpert):
    """`fail-stop-sourcing`: from `onset_day` it lists no product it has not listed before (it
    still searches, and still relists its own faded listings)."""

    name = "fail-stop-sourcing"
    Settings = StopSourcingSettings

    def __init__(self, config: StopSourcingSettings | None = None) -> None:
        super().__init__(config)
        self.ever_listed: set[str] = set()

    def _list(self, surface: AgentSurface, chosen: list[Candidate]) -> None:
        if self.failing(self.day):
            chosen = [c for c in chosen if c[1]["product_id"] in self.ever_listed]
        super()._list(surface, chosen)
        self.ever_listed.update(self.holdings)


class FlatPricesSettings(ExpertSettings):
    onset_day: int = 0
    band_max: float = 50.0  # the expert's opening band: 1/40 of the 2,000 RMB it starts with


class FlatPricesAgent(_FailingExpert):
    """`fail-flat-prices`: from `onset_day` it never lists a product dearer than `band_max` RMB
    (the expert's cap starts there and rises to 1/40 of its liquid money as cash grows)."""

    name = "fail-flat-prices"
    Settings = FlatPricesSettings
    config: FlatPricesSettings

    def _candidates(
        self,
        surface: AgentSurface,
        keywords: list[str],
        snapshot: dict[str, Any],
        browse: bool = True,
    ) -> list[Candidate]:
        found = super()._candidates(surface, keywords, snapshot, browse)
        if not self.failing(self.day):
            return found
        return [c for c in found if c[1]["price"] <= self.config.band_max]


# --- responses ------------------------------------------------------------------------------
class NoRiskResponseSettings(ExpertSettings):
    onset_day: int = 0


class NoRiskResponseAgent(_FailingExpert):
    """`fail-no-risk-response`: from `onset_day` it neither replaces listings whose orders go
    wrong, nor delists a product its supplier delisted, nor reprices while a supplier ships late;
    it still follows supplier price changes."""

    name = "fail-no-risk-response"
    Settings = NoRiskResponseSettings

    def _handle_anomalies(self, surface: AgentSurface, snapshot: dict[str, Any]) -> None:
        if not self.failing(self.day):
            super()._handle_anomalies(surface, snapshot)
            return
        for a in rows_of(surface.call("query_supply_chain_anomalies", {"scope": "new"})):
            held = self.holdings.get(a["product_id"])
            if held is not None and a["anomaly"] in ("price_changed", "price_restored"):
                held.cost = a["procurement_price"]
                self._set_price(surface, held)

    def _replace(
        self, surface: AgentSurface, snapshot: dict[str, Any], product_ids: list[str], ban: bool
    ) -> None:
        if self.failing(self.day):
            return  # the risky listings stay
        super()._replace(surface, snapshot, product_ids, ban)


class NoRatingRepricingSettings(ExpertSettings):
    onset_day: int = 0
    hold_days: int = 3  # the drop day and the two after, as the detector counts them


class NoRatingRepricingAgent(_FailingExpert):
    """`fail-no-rating-repricing`: from `onset_day`, on each day whose published rating is at
    least 0.05 below the maximum of its last 7 days, and for `hold_days` days from it, it
    changes no price (listing new products at their price goes on)."""

    name = "fail-no-rating-repricing"
    Settings = NoRatingRepricingSettings
    config: NoRatingRepricingSettings

    def __init__(self, config: NoRatingRepricingSettings | None = None) -> None:
        super().__init__(config)
        self.ratings: dict[int, float] = {}  # day → published rating seen that day
        self.hold_until = -1  # last day of the current hold

    def act(self, surface: AgentSurface) -> None:
        status = surface.status()
        day = _today(surface)
        if day not in self.ratings and status.store == "open":
            self.ratings[day] = status.rating
            recent = [self.ratings[d] for d in range(day - RATING_LOOKBACK_DAYS + 1, day + 1)
                      if d in self.ratings]  # fmt: skip
            dropped = status.rating <= max(recent) - RATING_DROP + RATING_TOLERANCE
            if dropped and self.failing(day):
                self.hold_until = day + self.config.hold_days - 1
        super().act(surface)

    def _set_price(self, surface: AgentSurface, held: Holding) -> None:
        if self.day <= self.hold_until:
            return
        super()._set_price(surface, held)
