"""Which finished runs may be pooled, and the provenance of a table that pools them.

Every table that pools runs (the CLI leaderboard, the sweep report, the web dashboard, the static
site) goes through this module, so "comparable" has one definition:

- `Setting`: what the runs were measured against: scenario (name and content hash), horizon in
  days, market (synthetic with the market seed equal to the run's seed, or a real catalog),
  tool-schema hash and code version (package version, source hash, an outside agent's code
  hash, every code change a resume allowed). Runs of different settings are never in one table.
- `ConfigIdentity`: a setting plus the agent and its recorded settings (hashed). One row of a
  table pools the runs of one identity.
- A run's own identity is its configuration, its seed (or sealed commitment) and its final
  state hash: copies of one run (a sweep copied twice into a folder) count once.

Everything is read from `run.json` and `metrics.json` of records that verify: each run carries
the `RunCheck` its table made (`replay/evidence.py`: replayed, or matched in the check cache by
the hash of every file), and a run that does not verify is left out of every ranking and named
with its first difference (`counted`, `left_out_lines`). A record that cannot be read, or has
not finished, is left out (`read_finished` returns None) and never breaks a table. Sealed runs
(their seed proven by its commitment) are rows of their own, never pooled with public runs.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import merchantbench
from merchantbench.record.code_version import source_sha256
from merchantbench.record.manifest import ManifestError, RunManifest, read_manifest
from merchantbench.record.safe_read import read_record_bytes
from merchantbench.record.schema import METRICS_FILE, RUN_FILE
from merchantbench.record.verification import CANNOT, RunCheck

SYNTHETIC_MARKET = "synthetic (market seed = run seed)"
FINISHED = ("completed", "closed", "stopped")
MAX_DEPTH = 6  # how deep under a folder run directories are looked for
SET_ASIDE = re.compile(
    r"\.(stale|damaged|replaced)-\d+$"
)  # records kept, not counted (runs/aside.py)
# The paper's setting (Table 1): a year, RMB 2,000 balance + 1,000 deposit, 50 listing slots.
PAPER_DAYS, PAPER_BALANCE_FEN, PAPER_DEPOSIT_FEN, PAPER_SLOTS = 365, 200_000, 100_000, 50
MIN_SEEDS_FOR_INTERVALS = 5  # fewer seeds: a bootstrap interval is flagged as unreliable


def _sha(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True, order=True)
class Setting:
    """What a run was measured against; only runs of one setting share a table."""

    scenario_name: str
    scenario_hash: str
    days: int
    market: str
    tool_schema_sha256: str
    code: str  # package version and source hash(es), e.g. "0.1.0 src 1a2b3c4d5e6f"
    paper_like: bool = field(compare=False)  # 365 days, 2,000 + 1,000 RMB, 50 slots

    @property
    def key(self) -> str:
        return _sha([self.scenario_hash, self.days, self.market, self.tool_schema_sha256,
                     self.code])  # fmt: skip

    @property
    def label(self) -> str:
        """`smoke · 8 days`: the scenario's real name and horizon."""
        return f"{self.scenario_name} · {self.days} days"


@dataclass(frozen=True, order=True)
class ConfigIdentity:
    """A setting and an agent configuration: the runs one table row may pool."""

    setting: Setting
    agent: str
    settings_sha256: str
    sealed: bool = False  # sealed runs: a row of their own

    @property
    def key(self) -> str:
        return _sha([self.setting.key, self.agent, self.settings_sha256, self.sealed])


def _code(meta: RunManifest) -> str:
    versions = [meta.code(), *(change.before for change in meta.code_changes)]
    parts = []
    for code in dict.fromkeys(versions):
        text = f"{code.package_version} src {(code.source_sha256 or 'unknown')[:12]}"
        parts.append(text + (f" agent {code.agent_source_sha256[:12]}"
                             if code.agent_source_sha256 else ""))  # fmt: skip
    return " + ".join(sorted(parts))


def paper_setting(config: dict[str, Any]) -> bool:
    """Whether a scenario (as `run.json` records it) is in the paper's setting: 365 days,
    RMB 2,000 balance + 1,000 deposit, 50 listing slots (Table 1 compares only there)."""
    clock, money, tools = (config.get(k) or {} for k in ("clock", "money", "tools"))
    return (clock.get("days"), money.get("initial_balance_fen"),
            money.get("initial_deposit_fen"), tools.get("max_active_listings")) == (
        PAPER_DAYS, PAPER_BALANCE_FEN, PAPER_DEPOSIT_FEN, PAPER_SLOTS)  # fmt: skip


def market_of(meta: RunManifest) -> tuple[str, list[str]] | None:
    """A merchant's run record in a market of several (docs/design.md §11, docs/arena.md): its
    merchant id and every merchant of the market; None for a single store."""
    settings = meta.front_end.settings if meta.front_end is not None else {}
    merchant, merchants = settings.get("merchant"), settings.get("merchants")
    if not isinstance(merchant, str) or not isinstance(merchants, list):
        return None
    return merchant, sorted(str(m) for m in merchants)


def setting_of(meta: RunManifest) -> Setting:
    """The setting a run record was made in. A merchant of a market competes with the others:
    its market names them, so it is never pooled with single stores or other markets."""
    config = meta.scenario_config
    market = (
        SYNTHETIC_MARKET if meta.market.source == "synthetic" else f"catalog {meta.market.catalog}"
    )
    arena = market_of(meta)
    if arena is not None:
        market += f" · market of {len(arena[1])}: {', '.join(arena[1])}"
    return Setting(
        scenario_name=meta.scenario.name,
        scenario_hash=meta.scenario.hash,
        days=int(config.get("clock", {}).get("days", 0)),
        market=market,
        tool_schema_sha256=meta.tool_schema_sha256,
        code=_code(meta),
        paper_like=paper_setting(config),
    )


def identity_of(meta: RunManifest) -> ConfigIdentity:
    """The configuration identity of a run record. The agent's settings count as recorded, but
    where a models file lay does not (its entry's content is recorded beside it), nor, for a
    playground run, which participant played (the participants of a study pool in one row)."""
    ignored = {"models_file", *(("participant",) if meta.driver == "human" else ())}
    settings = {k: v for k, v in meta.agent.settings.items() if k not in ignored}
    name = meta.agent.name if meta.driver is None else f"{meta.driver}:{meta.agent.name}"
    arena = market_of(meta)
    if arena is not None:  # two merchants of one market are two rows, even with one agent
        settings = {"merchant": arena[0], **settings}
    return ConfigIdentity(setting_of(meta), name, _sha(settings), meta.seed_commitment is not None)


@dataclass(frozen=True)
class PooledRun:
    """A finished run as a table reads it."""

    run_dir: Path
    label: str  # the configuration's label (a sweep's folder name, else the agent)
    identity: ConfigIdentity
    seed: int | None  # None: sealed
    commitment: str | None  # a sealed run's seed commitment (SHA-256 hex)
    state_hash: str
    finished: str
    metrics: dict[str, Any]
    usage: dict[str, Any] | None
    check: RunCheck

    @property
    def verified(self) -> bool:
        return self.check.ok

    @property
    def run_key(self) -> tuple[str, str, str]:
        """Copies of one run share it: configuration, seed (or commitment), final state."""
        seed = str(self.seed) if self.seed is not None else f"sealed:{self.commitment}"
        return self.identity.key, seed, self.state_hash

    @property
    def cost(self) -> float | None:
        """Model spend of the run: None when it called no model or its cost is unknown."""
        cost = (self.usage or {}).get("cost")
        return None if cost is None or not self.model_calls else float(cost)

    @property
    def model_calls(self) -> int:
        return int((self.usage or {}).get("calls") or 0)


def _default_label(meta: RunManifest) -> str:
    """A run outside a sweep: its agent, and the models-file entry (or model) an LLM agent
    called (`react-gpt-mini`, the sweep's naming); a merchant of a market, its merchant id."""
    arena = market_of(meta)
    if arena is not None:
        return arena[0]
    settings = meta.agent.settings
    model = settings.get("model_entry") or settings.get("model")
    return f"{meta.agent.name}-{model}" if isinstance(model, str) and model else meta.agent.name


NOT_CHECKED = RunCheck(CANNOT, "not checked")
Check = Callable[[Path], RunCheck]


def read_finished(
    run_dir: Path, label: str | None = None, check: Check | None = None
) -> PooledRun | None:
    """The finished run in `run_dir` with `check`'s verdict of it (none: "not checked"), or
    None (unfinished, unreadable, or not a run record)."""
    try:
        meta = read_manifest(run_dir)
        metrics = json.loads(read_record_bytes(Path(run_dir), METRICS_FILE).decode("utf-8"))
    except (ManifestError, OSError, ValueError):
        return None
    if meta.ended not in FINISHED or not meta.state_hash or not isinstance(metrics, dict):
        return None
    return PooledRun(
        run_dir=Path(run_dir),
        label=label or _default_label(meta),
        identity=identity_of(meta),
        seed=meta.seed,
        commitment=None if meta.seed_commitment is None else meta.seed_commitment.sha256,
        state_hash=meta.state_hash,
        finished=meta.finished or meta.started,
        metrics=metrics,
        usage=meta.llm_usage,
        check=NOT_CHECKED if check is None else check(Path(run_dir)),
    )


def find_run_dirs(
    root: Path, max_depth: int = MAX_DEPTH, max_runs: int | None = None
) -> list[Path]:
    """Run directories under `root` (itself included), sorted, at most `max_depth` folders
    down (and, with `max_runs`, the first that many found by depth); hidden folders are
    skipped."""
    found: list[Path] = []
    frontier = [Path(root)]
    for _ in range(max_depth + 1):
        deeper = []
        for folder in frontier:
            if (folder / RUN_FILE).is_file():
                found.append(folder)
                continue
            try:
                deeper += [p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")]
            except OSError:
                continue
        frontier = sorted(deeper)
        if (max_runs is not None and len(found) >= max_runs) or not frontier:
            break
    return sorted(found)[:max_runs]


def config_label(root: Path, run_dir: Path) -> str | None:
    """A sweep run's configuration label: the folder of `…/runs/<label>/<slot>`."""
    parts = run_dir.relative_to(root).parts if run_dir != root else ()
    return parts[-2] if len(parts) >= 3 and parts[-3] == "runs" else None


@dataclass
class Pool:
    """The runs of one configuration identity (copies of a run counted once)."""

    identity: ConfigIdentity
    runs: list[PooledRun]
    copies: int = 0  # duplicate copies left out
    label: str = ""  # set by `pool_runs`: the runs' labels, made distinct within a setting

    @property
    def seeds(self) -> list[int]:
        return sorted({run.seed for run in self.runs if run.seed is not None})

    @property
    def sealed(self) -> int:
        return len({run.commitment for run in self.runs if run.commitment is not None})

    @property
    def verified(self) -> int:
        return sum(run.verified for run in self.runs)

    def what(self, show_seeds: bool = True) -> str:
        """What the row pools: `2 runs · seeds 1, 2 · not verified` (`2 seeds` where seeds are
        not shown, as on the dashboard)."""
        seeds = []
        if self.seeds:
            word = "seeds" if len(self.seeds) > 1 else "seed"
            values = ", ".join(map(str, self.seeds))
            seeds.append(f"{word} {values}" if show_seeds else f"{len(self.seeds)} {word}")
        if self.sealed:
            seeds.append(f"{self.sealed} sealed")
        runs = f"{len(self.runs)} run{'s' if len(self.runs) != 1 else ''}"
        copies = f" ({self.copies} duplicate cop{'ies' if self.copies > 1 else 'y'} left out)"
        verified = "replayed" if self.verified == len(self.runs) else "not verified"
        if 0 < self.verified < len(self.runs):
            verified = f"{self.verified} of {len(self.runs)} replayed"
        return " · ".join([runs + (copies if self.copies else ""), *seeds, verified,
                           attested_text(self.runs)])  # fmt: skip


def attested_text(runs: Sequence[PooledRun]) -> str:
    """Whether the runs' model, tokens and cost (never replayed) are attested, how and by which
    keys (`self-attested 6427fa2d`), in a few words for a table's cell."""
    signed = [run.check for run in runs if run.check.attested]
    keys = ", ".join(sorted({(c.key_id or "")[:8] for c in signed}))
    kinds = " / ".join(sorted({c.assurance or "attested" for c in signed}))
    if not signed:
        return "not attested"
    share = "" if len(signed) == len(runs) else f"{len(signed)} of {len(runs)} "
    return f"{share}{kinds} {keys}"


def counted(runs: Iterable[PooledRun]) -> tuple[list[PooledRun], list[PooledRun]]:
    """The runs a table counts (their record verifies) and those it leaves out."""
    runs = list(runs)
    return [r for r in runs if r.check.ok], [r for r in runs if not r.check.ok]


def left_out_lines(runs: Iterable[PooledRun]) -> list[str]:
    """One line per run left out of a table: where it is and its first difference."""
    return [f"{run.run_dir}: {run.check.status}: {run.check.detail}" for run in runs]


def pool_runs(runs: Iterable[PooledRun]) -> dict[Setting, list[Pool]]:
    """Runs pooled by configuration identity and grouped by setting (one table each), copies
    of a run counted once; settings and pools in the order their first run came."""
    pools: dict[ConfigIdentity, Pool] = {}
    seen: set[tuple[str, str, str]] = set()
    for run in runs:
        pool = pools.setdefault(run.identity, Pool(run.identity, []))
        if run.run_key in seen:
            pool.copies += 1
            continue
        seen.add(run.run_key)
        pool.runs.append(run)
    tables: dict[Setting, list[Pool]] = {}
    for identity, pool in pools.items():
        pool.label = " = ".join(dict.fromkeys(run.label for run in pool.runs))
        if identity.sealed:
            pool.label += " (sealed)"
        tables.setdefault(identity.setting, []).append(pool)
    for table in tables.values():
        labels = [pool.label for pool in table]
        for pool in table:
            if labels.count(pool.label) > 1:  # one label, other settings: say which
                pool.label += f" #{pool.identity.settings_sha256[:6]}"
    return tables


def finished_runs(root: Path, check: Check | None = None) -> list[PooledRun]:
    """Every finished run under a folder (a run, a sweep, a folder of sweeps and runs), each
    with `check`'s verdict."""
    found = []
    for run_dir in find_run_dirs(root):
        if SET_ASIDE.search(run_dir.name):
            continue
        run = read_finished(run_dir, config_label(root, run_dir), check)
        if run is not None:
            found.append(run)
    return found


def provenance(setting: Setting, pools: Sequence[Pool]) -> dict[str, Any]:
    """Where the numbers of one table come from (JSON-ready; `provenance_lines` renders it)."""
    runs = [run for pool in pools for run in pool.runs]
    dates = sorted(run.finished[:10] for run in runs)
    return {
        "scenario": setting.scenario_name,
        "scenario_hash": setting.scenario_hash,
        "days": setting.days,
        "market": setting.market,
        "tool_schema_sha256": setting.tool_schema_sha256,
        "code": setting.code,
        "seeds": sorted({run.seed for run in runs if run.seed is not None}),
        "sealed_commitments": sorted({run.commitment[:16] for run in runs if run.commitment}),
        "runs_counted": len(runs),
        "duplicates_left_out": sum(pool.copies for pool in pools),
        "verified": sum(run.verified for run in runs),
        "attested": attested_text(runs),
        "run_dates": [dates[0], dates[-1]] if dates else [],
        "comparable_to_paper": setting.paper_like,
        "generated_by": f"{merchantbench.__version__} src {source_sha256()[:12]}",
        "generated_date": datetime.now(UTC).date().isoformat(),
    }


def provenance_lines(block: dict[str, Any], show_seeds: bool = True) -> list[tuple[str, str]]:
    """The provenance block as (label, text) lines for any renderer (without the public seeds'
    values where a page never shows a seed, as the dashboard)."""
    seeds = ", ".join(map(str, block["seeds"])) or "none public"
    if not show_seeds:
        seeds = f"{len(block['seeds'])} public (values not shown here)"
    if block["sealed_commitments"]:
        seeds += f"; sealed, commitments {', '.join(block['sealed_commitments'])}"
    dates = block["run_dates"]
    return [
        ("scenario", f"{block['scenario']} (hash {block['scenario_hash']}), "
                     f"{block['days']} days"),
        ("market", block["market"]),
        ("tool schema", block["tool_schema_sha256"][:16]),
        ("code of the runs", f"merchantbench {block['code']}"),
        ("seeds", seeds),
        ("runs counted", f"{block['runs_counted']}" + (
            f" ({block['duplicates_left_out']} duplicate copies left out)"
            if block["duplicates_left_out"] else "")),
        ("verified", f"{block['verified']} of {block['runs_counted']} (store, answers, tables "
                     "and metrics replayed; model-call log, usage and cost consistent)"),
        ("attested", f"model, tokens and cost (not replayed): {block.get('attested', '?')}"),
        ("runs finished", " to ".join(dict.fromkeys(dates)) if dates else "none"),
        ("paper's setting", "yes (365 days, 2,000 + 1,000 RMB, 50 slots)"
         if block["comparable_to_paper"] else
         "no: not comparable with the paper's Table 1 (365 days, 2,000 + 1,000 RMB, 50 slots)"),
        ("generated", f"{block['generated_date']} by merchantbench {block['generated_by']}"),
    ]  # fmt: skip


def pool_cost(pool: Pool) -> tuple[str, float | None]:
    """Mean model spend per run: `(text, value)`; "—" without model calls, "unknown" when a
    run that called a model has no cost (a price not stated): never a silent 0."""
    billed = [run for run in pool.runs if run.model_calls]
    if not billed:
        return "—", None
    if any(run.cost is None for run in billed):
        return "unknown", None
    value = sum(run.cost or 0.0 for run in pool.runs) / len(pool.runs)
    return f"{value:.4f}", value


def spend_efficiency(net_assets: float | None, cost: float | None) -> float | None:
    """Net assets per unit of model spend (None without a known, positive spend)."""
    if net_assets is None or cost is None or cost <= 0:
        return None
    return net_assets / cost


def integer_text(value: float | int | None, decimals: int = 2) -> str:
    """A number for a table: integers (and whole-number counts) without decimals."""
    if value is None:
        return "—"
    if isinstance(value, int) or float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.{decimals}f}"
