"""The expanded plan of a sweep: every run with its configuration label, settings and identity.

Written to `SWEEP_DIR/sweep.json`; each run goes into `SWEEP_DIR/runs/<label>/s<seed>/`. An arena
(a market of several merchants, docs/arena.md) is one run of the plan too: its directory holds
the record `merchantbench arena` writes (`arena.json`, `merchants/<id>/`). With sealed seeds a
run's directory is `sealed<n>/` and its seed (a single store's or a whole market's) is drawn
when it first starts and kept in its `sealed/` folder(s).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from merchantbench.agents.llm.models import ModelConfigError, entry_max_concurrency, resolve_model
from merchantbench.agents.load import AgentConfigError, agent_slug, resolve_agent_name
from merchantbench.agents.registry import agent_entry
from merchantbench.record.arena import ARENA_FILE
from merchantbench.record.files import atomic_write_json
from merchantbench.record.schema import RUN_FILE
from merchantbench.record.sealed import SEED_FILE, read_sealed
from merchantbench.runs.arena import merchant_ids
from merchantbench.runs.identity import code_version, identity_key, run_identity
from merchantbench.runs.runner import RunSpec
from merchantbench.scenario import Scenario, ScenarioError, load_scenario
from merchantbench.sweeps.spec import (
    HARNESSES,
    ArenaAxis,
    ScenarioAxis,
    SealedSeeds,
    SweepFile,
)

PLAN_FILE = "sweep.json"
RUNS_DIR = "runs"
ARENA_AGENT = "arena"  # the `agent` of an arena run of the plan (its merchants: `entrants`)


class SweepPlanError(ValueError):
    """A sweep that cannot be planned; the message says why in one line."""


@dataclass(frozen=True)
class SweepRun:
    """One run of a sweep.

    Attributes:
        label: The configuration's label (shared by its seeds).
        agent: Registered agent name, or the target of an agent of your own (a file's path
            absolute).
        settings: The agent's settings.
        scenario: The scenario, overrides applied.
        seed: The seed.
        harness: `react`/`hermes` for LLM runs, else `None`.
        model_entry: The models-file entry of an LLM run.
        max_concurrency: The entry's cap on runs calling it at once.
        key: Hash of the run's identity (configuration + code version).
        sealed: A sealed run (docs/design.md §10): `seed` is then only the slot's number; the real
        seed
            is drawn when the run starts and kept in its `sealed/` directory.
        transcript: Write the run's `transcript.jsonl` (a recording choice, not part of the
            run's identity).
        entrants: An arena's merchants, `{"merchant", "agent", "settings"}` each (`agent` is
            then `arena`); `None` for a single store.
    """

    label: str
    agent: str
    settings: dict[str, Any]
    scenario: Scenario
    seed: int
    harness: str | None
    model_entry: str | None
    max_concurrency: int | None
    key: str
    sealed: bool = False
    transcript: bool = True
    entrants: list[dict[str, Any]] | None = None

    @property
    def is_llm(self) -> bool:
        return self.agent in HARNESSES

    @property
    def is_arena(self) -> bool:
        return self.entrants is not None

    @property
    def record_file(self) -> str:
        """The file that says where the run's record stands: run.json, or an arena's."""
        return ARENA_FILE if self.is_arena else RUN_FILE

    @property
    def agents(self) -> list[str]:
        """The agents the run plays: its own, or an arena's merchants'."""
        if self.entrants is None:
            return [self.agent]
        return [str(e["agent"]) for e in self.entrants]

    @property
    def slot(self) -> str:
        """The run's directory name under its configuration: `s<seed>` or `sealed<n>`."""
        return f"sealed{self.seed}" if self.sealed else f"s{self.seed}"

    @property
    def name(self) -> str:
        return f"{self.label}/{self.slot}"

    def run_dir(self, sweep_dir: Path) -> Path:
        return sweep_dir / RUNS_DIR / self.label / self.slot

    def spec(self, run_dir: Path | None = None) -> RunSpec:
        """The run's spec. A sealed slot draws its seed on first start and reads it back from
        `run_dir` afterwards (to resume)."""
        if not self.sealed:
            return RunSpec(self.agent, self.scenario, self.seed, dict(self.settings))
        secret = None
        if run_dir is not None and (run_dir / SEED_FILE).is_file():
            secret = read_sealed(run_dir)
        if secret is None:
            return RunSpec.sealed_run(self.agent, self.scenario, agent_settings=dict(self.settings))
        return RunSpec(self.agent, self.scenario, secret.seed, dict(self.settings), sealed=secret)

    def identity(self) -> dict[str, Any]:
        if self.entrants is not None:
            return arena_identity(self.entrants, self.scenario, self.seed, self.sealed)
        identity = run_identity(self.agent, self.settings, self.scenario, self.seed)
        return {**identity, "sealed": True} if self.sealed else identity

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["scenario"] = self.scenario.model_dump(mode="json")
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SweepRun:
        return cls(**{**data, "scenario": Scenario.model_validate(data["scenario"])})


def arena_identity(
    entrants: list[dict[str, Any]], scenario: Scenario, seed: int, sealed: bool = False
) -> dict[str, Any]:
    """An arena's identity: each merchant's id and its agent's run identity (settings, code);
    a sealed market's `seed` is its slot's number, marked `sealed`."""
    merchants = [
        [e["merchant"], run_identity(e["agent"], e["settings"], scenario, seed)] for e in entrants
    ]
    identity = {"arena": merchants, "scenario_hash": scenario.content_hash, "seed": seed}
    return {**identity, "sealed": True} if sealed else identity


def _entrants(axis: ArenaAxis, sweep: SweepFile, base: Path) -> list[dict[str, Any]]:
    """The merchants of an arena entry: ids after their labels or agents (`merchant_ids`)."""
    found = []
    for member in axis.agents:
        try:
            agent = resolve_agent_name(member.agent, base)
            entry = agent_entry(agent)
        except AgentConfigError as exc:
            raise SweepPlanError(str(exc)) from None
        if entry.privileged:
            raise SweepPlanError(f"agent {member.agent!r} sees hidden state: not in an arena")
        settings = dict(member.settings)
        if agent in HARNESSES and "model_entry" in settings:
            if sweep.models_file is None:
                raise SweepPlanError("an arena's model_entry needs models_file")
            settings.setdefault("models_file", str((base / sweep.models_file).resolve()))
        _check_prices(agent, settings, sweep, axis.label or "arena")
        found.append((member.label or agent_slug(agent), agent, settings))
    ids = merchant_ids([label for label, _, _ in found])
    return [
        {"merchant": merchant, "agent": agent, "settings": settings}
        for merchant, (_, agent, settings) in zip(ids, found, strict=True)
    ]


def _arena_label(axis: ArenaAxis, entrants: list[dict[str, Any]]) -> str:
    if axis.label is not None:
        return axis.label
    label = "arena-" + "+".join(e["merchant"] for e in entrants)
    if len(label) > 80:
        raise SweepPlanError(f"arena label {label[:40]}… is too long; set label:")
    return label


def _arenas(
    sweep: SweepFile,
    arenas: list[tuple[str, list[dict[str, Any]]]],
    scenarios: list[tuple[str, Scenario]],
    seeds: Any,
) -> list[SweepRun]:
    """An arena run per arena entry × scenario × seed (or sealed slot: the market draws its
    own secret when it first starts, as `merchantbench arena --sealed`)."""
    sealed = isinstance(sweep.seeds, SealedSeeds)
    runs = []
    for label, entrants in arenas:
        for scenario_label, scenario in scenarios:
            full = label if len(scenarios) == 1 else f"{label}@{scenario_label}"
            for seed in seeds:
                try:
                    key = identity_key(arena_identity(entrants, scenario, seed, sealed))
                except (AgentConfigError, ModelConfigError) as exc:
                    raise SweepPlanError(f"{full}: {exc}") from None
                runs.append(SweepRun(full, ARENA_AGENT, {}, scenario, seed, None, None, None, key,
                                     sealed, sweep.transcript, entrants))  # fmt: skip
    return runs


def _scenario(axis: ScenarioAxis, base: Path) -> tuple[str, Scenario]:
    file = None if axis.file is None else base / axis.file
    try:
        scenario = load_scenario(axis.name, overrides=axis.set, file=file and str(file))
    except (ScenarioError, OSError, ValueError) as exc:
        raise SweepPlanError(f"scenario {axis.name!r}: {' '.join(str(exc).split())}") from None
    return axis.label or (scenario.name if file is None else file.stem), scenario


def _configurations(sweep: SweepFile, base: Path) -> list[tuple[str, str, dict[str, Any]]]:
    """(label, agent, settings) of every configuration, in the file's order."""
    configs = []
    for axis in sweep.agents:
        try:
            agent = resolve_agent_name(axis.agent, base)  # a file: relative to the sweep file
            agent_entry(agent)
        except AgentConfigError as exc:
            raise SweepPlanError(str(exc)) from None
        configs.append((axis.label or agent_slug(agent), agent, dict(axis.settings)))
    if sweep.models and sweep.models_file is None:
        raise SweepPlanError("models: needs models_file, the file holding those entries")
    for model in sweep.models:
        for harness in sweep.harnesses:
            settings = {
                **sweep.harness_settings.get(harness, {}),
                "models_file": str((base / str(sweep.models_file)).resolve()),
                "model_entry": model,
            }
            configs.append((f"{harness}-{model}", harness, settings))
    if not configs and not sweep.arenas:
        raise SweepPlanError("the sweep has no configuration: give agents, models or arenas")
    return configs


def _cap(agent: str, settings: dict[str, Any]) -> int | None:
    if agent not in HARNESSES or not settings.get("models_file") or not settings.get("model_entry"):
        return None
    try:
        return entry_max_concurrency(settings["models_file"], settings["model_entry"])
    except ModelConfigError as exc:
        raise SweepPlanError(str(exc)) from None


def _check_prices(agent: str, settings: dict[str, Any], sweep: SweepFile, label: str) -> None:
    """A budget on cost (the sweep's or a run's) needs every billed price of the entry."""
    if agent not in HARNESSES or not settings.get("model_entry"):
        return
    budgets = [("budget.max_cost", sweep.budget.max_cost), ("max_cost", settings.get("max_cost"))]
    for what, limit in budgets:
        if limit is not None:
            try:
                config = resolve_model(None, None, None, settings.get("models_file"),
                                       settings.get("model_entry"))  # fmt: skip
                config.require_prices(what)
            except ModelConfigError as exc:
                raise SweepPlanError(f"{label}: {exc}") from None


def plan_sweep(sweep: SweepFile, base: Path) -> list[SweepRun]:
    """Every run of the sweep, configurations × scenarios × seeds, identities computed.

    Raises:
        SweepPlanError: An unknown agent, bad settings, a missing models entry, a bad scenario,
            or repeated labels. `seeds: {sealed: N}` plans N sealed slots per configuration.
    """
    sealed = isinstance(sweep.seeds, SealedSeeds)
    seeds = (
        range(1, sweep.seeds.sealed + 1) if isinstance(sweep.seeds, SealedSeeds) else sweep.seeds
    )
    scenarios = [_scenario(axis, base) for axis in sweep.scenarios]
    configurations = _configurations(sweep, base)
    arenas = []
    for axis in sweep.arenas:
        entrants = _entrants(axis, sweep, base)
        arenas.append((_arena_label(axis, entrants), entrants))
    labels = [label for label, _, _ in configurations] + [label for label, _ in arenas]
    duplicates = sorted({label for label in labels if labels.count(label) > 1})
    if duplicates:
        raise SweepPlanError(f"configuration labels repeat: {', '.join(duplicates)}; set label:")
    runs = []
    for label, agent, settings in configurations:
        cap = _cap(agent, settings)
        _check_prices(agent, settings, sweep, label)
        for scenario_label, scenario in scenarios:
            full = label if len(scenarios) == 1 else f"{label}@{scenario_label}"
            for seed in seeds:
                try:
                    identity = run_identity(agent, settings, scenario, seed)
                    key = identity_key({**identity, "sealed": True} if sealed else identity)
                except (AgentConfigError, ModelConfigError) as exc:
                    raise SweepPlanError(f"{full}: {exc}") from None
                entry = settings.get("model_entry") if agent in HARNESSES else None
                harness = agent if agent in HARNESSES else None
                config = (full, agent, settings, scenario, seed, harness, entry, cap, key)
                runs.append(SweepRun(*config, sealed, sweep.transcript))
    return runs + _arenas(sweep, arenas, scenarios, seeds)


def write_plan(sweep_dir: Path, sweep: SweepFile, runs: list[SweepRun]) -> None:
    """Write `sweep.json`: the sweep file as read, the code version and every run."""
    atomic_write_json(
        sweep_dir / PLAN_FILE,
        {
            "format": 1,
            "sweep": sweep.model_dump(mode="json"),
            "code_version": code_version(),
            "runs": [run.to_json() for run in runs],
        },
    )


def read_plan(sweep_dir: Path) -> tuple[dict[str, Any], list[SweepRun]]:
    """The sweep file section and the runs of `SWEEP_DIR/sweep.json`."""
    path = sweep_dir / PLAN_FILE
    try:
        data = json.loads(path.read_text())
        return data["sweep"], [SweepRun.from_json(r) for r in data["runs"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SweepPlanError(f"{path}: not a sweep plan ({type(exc).__name__})") from None
