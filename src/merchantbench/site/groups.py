"""Which runs may be ranked together, and the ranking of each comparable group.

Runs are comparable when they share a configuration identity (`comparable_key`: scenario hash,
horizon, market, tool-schema hash and code version). Within a group, runs of the same agent
configuration (name and settings, `SiteRun.config_digest`) form one entry; two copies of one run
(same configuration, seed and final state hash) count once. Entries are ranked by mean final
net assets. Nothing here pools runs of different identities.
"""

from __future__ import annotations

import hashlib
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from merchantbench.record.comparable import setting_of
from merchantbench.site.collect import SiteRun
from merchantbench.site.verification import Verification


def comparable_key(run: SiteRun) -> tuple[str, ...]:
    """The identity of the setting a run was made in (`record.comparable`: scenario hash,
    horizon, market, tool-schema hash, code version): runs are pooled only when it is equal."""
    return (setting_of(run.manifest).key,)


@dataclass
class Entry:
    """One agent configuration's runs within a comparable group."""

    name: str
    digest: str
    runs: list[SiteRun]
    duplicates: list[SiteRun] = field(default_factory=list)

    def values(self, key: str) -> list[float]:
        return [float(r.metrics[key]) for r in self.runs if _number(r.metrics.get(key))]

    def mean(self, key: str) -> float | None:
        values = self.values(key)
        return statistics.fmean(values) if values else None

    def std(self, key: str) -> float | None:
        values = self.values(key)
        return statistics.stdev(values) if len(values) > 1 else None

    @property
    def seeds(self) -> list[str]:
        return [r.seed_text for r in self.runs]

    @property
    def sealed(self) -> str:
        """`sealed` or `public` (an entry never mixes the two)."""
        return "sealed" if self.runs and self.runs[0].sealed else "public"

    @property
    def cost_per_run(self) -> float | None:
        """Mean model spend per run; None when any run's cost is unknown."""
        costs = [r.cost for r in self.runs]
        known = [c for c in costs if c is not None]
        return statistics.fmean(known) if known and len(known) == len(costs) else None

    @property
    def uses_model(self) -> bool:
        return any(r.uses_model for r in self.runs)

    @property
    def assets_per_spend(self) -> float | None:
        """Mean final net assets per unit of model spend (None: no spend, or unknown)."""
        cost, assets = self.cost_per_run, self.mean("final_net_assets")
        if cost is None or assets is None or cost <= 0:
            return None
        return assets / cost


@dataclass
class Group:
    """Comparable runs: their identity, ranked entries and what is left unranked."""

    key: tuple[str, ...]
    entries: list[Entry]
    unfinished: list[SiteRun]

    @property
    def runs(self) -> list[SiteRun]:
        return [r for e in self.entries for r in e.runs]

    @property
    def sample(self) -> SiteRun:
        return (self.runs or self.unfinished)[0]

    def provenance(self, verified: Mapping[str, Verification]) -> dict[str, Any]:
        """What the group's table stands on (shown above it)."""
        sample = self.sample
        m = sample.manifest
        runs = self.runs
        dates = sorted(r.manifest.finished or r.manifest.started for r in runs) or [m.started]
        commits = sorted({(r.manifest.git_commit or "")[:10] for r in runs} - {""})
        return {
            "scenario": f"{m.scenario.name} {m.scenario.version}",
            "scenario_hash": m.scenario.hash,
            "days": sample.days,
            "market": m.market.source
            + (f" {m.market.catalog}" if m.market.catalog else "")
            + f", {m.market.n_products:,} products",
            "tool_schema": m.tool_schema_sha256[:12],
            "code": f"merchantbench {m.package_version}, source {(m.source_sha256 or '?')[:12]}"
            + (f", commit {', '.join(commits)}" if commits else ""),
            "seeds": sorted({r.seed_text for r in runs}, key=_seed_order),
            "dates": f"{dates[0][:10]} to {dates[-1][:10]}" if dates[0][:10] != dates[-1][:10]
            else dates[0][:10],
            "identity": hashlib.sha256("\0".join(self.key).encode()).hexdigest()[:8],
            "runs": len(runs),
            "verified": sum(verified[r.slug].ok for r in runs),
            "duplicates": sum(len(e.duplicates) for e in self.entries),
            "unfinished": len(self.unfinished),
        }  # fmt: skip


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _seed_order(text: str) -> tuple[int, int | str]:
    return (0, int(text)) if text.isdigit() else (1, text)


def _entries(runs: Sequence[SiteRun]) -> list[Entry]:
    by_config: dict[tuple[str, bool], Entry] = {}
    copies: set[tuple[str, str, str | None]] = set()
    for run in runs:  # sealed and public runs of one configuration are separate entries
        name = run.manifest.agent.name + (f" · {run.model}" if run.model else "")
        entry = by_config.setdefault(
            (run.config_digest, run.sealed), Entry(name, run.config_digest, [])
        )
        copy = (run.config_digest, run.seed_text, run.manifest.state_hash)
        if copy in copies:
            entry.duplicates.append(run)
            continue
        copies.add(copy)
        entry.runs.append(run)
    names: dict[tuple[str, bool], int] = {}
    for (_, sealed), entry in by_config.items():
        names[entry.name, sealed] = names.get((entry.name, sealed), 0) + 1
    for (_, sealed), entry in by_config.items():
        if names[entry.name, sealed] > 1:  # one name, several settings: tell them apart
            entry.name = f"{entry.name} (settings {entry.digest[:6]})"
    return sorted(
        by_config.values(),
        key=lambda e: (e.mean("final_net_assets") is None, -(e.mean("final_net_assets") or 0.0),
                       e.name),
    )  # fmt: skip


def rank_groups(
    runs: Sequence[SiteRun], key: Callable[[SiteRun], tuple[str, ...]] = comparable_key
) -> list[Group]:
    """Comparable groups, each with its entries ranked; groups with the most runs first."""
    grouped: dict[tuple[str, ...], list[SiteRun]] = {}
    for run in runs:
        grouped.setdefault(key(run), []).append(run)
    groups = [
        Group(k, _entries([r for r in members if r.finished]),
              [r for r in members if not r.finished])
        for k, members in grouped.items()
    ]  # fmt: skip
    groups.sort(key=lambda g: (-len(g.runs), g.sample.manifest.scenario.name, g.key))
    return groups
