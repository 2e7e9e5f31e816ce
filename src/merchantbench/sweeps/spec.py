"""A sweep file (YAML or TOML): the axes of a grid of runs (docs/sweeps.md).

    name: demo
    models_file: models.toml          # relative to the sweep file
    scenarios: [{name: smoke, set: ["clock.days=20"]}]
    seeds: [1, 2]                     # or {sealed: 3}
    agents: [{agent: rule-based}, {agent: expert, label: expert-2x, settings: {fixed_markup: 2}}]
    # your own agents: {agent: mypkg.agents:MyAgent} or {agent: agents/mine.py:MyAgent}
    models: [model-a, model-b]        # entries of models_file
    harnesses: [react, hermes]
    harness_settings: {hermes: {review_every: 20}}
    max_concurrency: 32               # LLM runs in flight at once, over the whole sweep
    budget: {max_cost: 5.0, max_tokens: 20000000}
    transcript: true                  # false: no transcript.jsonl per run (saves disk)
    arenas:                           # markets of several merchants (docs/arena.md)
      - [expert, rule-based, random]  # label arena-expert+rule-based+random
      - {label: duel, agents: [expert, {agent: expert, settings: {fixed_markup: 2}}]}

Every agent entry is one configuration; so is every model × harness pair (label
`<harness>-<model>`) and every arena (one market, one merchant per agent); each is crossed with
every scenario and seed. `arena: [...]` is short for one entry of `arenas`.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

HARNESSES = ("react", "hermes")
LABEL_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,79}$"


class SweepFileError(ValueError):
    """A sweep file that cannot be used; the message says why in one line."""


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class AgentAxis(_Strict):
    """One agent configuration: a registered agent, or your own (`module:Class`, or
    `file.py:Class` relative to the sweep file), with settings."""

    agent: str
    label: str | None = Field(default=None, pattern=LABEL_PATTERN)
    settings: dict[str, Any] = Field(default_factory=dict)


def _agent_names_as_entries(value: Any) -> Any:
    if isinstance(value, list):
        return [{"agent": v} if isinstance(v, str) else v for v in value]
    return value


class ArenaAxis(_Strict):
    """One market of several merchants, one per agent entry (merchants named after their
    agents: `expert`, `expert-2` …), crossed with every scenario and seed."""

    agents: list[AgentAxis] = Field(min_length=1, max_length=64)
    label: str | None = Field(default=None, pattern=LABEL_PATTERN)

    @field_validator("agents", mode="before")
    @classmethod
    def _names_allowed(cls, value: Any) -> Any:
        return _agent_names_as_entries(value)


class ScenarioAxis(_Strict):
    """A scenario by name (or file) with `section.key=value` overrides."""

    name: str = "paper"
    file: str | None = None
    label: str | None = Field(default=None, pattern=LABEL_PATTERN)
    set: list[str] = Field(default_factory=list)


class SealedSeeds(_Strict):
    """N sealed runs per configuration: each draws its own 128-bit seed when it starts, keeps
    it in its run directory's `sealed/` and records a commitment (docs/sealed.md)."""

    sealed: int = Field(ge=1)


class Budget(_Strict):
    """Sweep-wide limits: once reached, no new run starts."""

    max_cost: float | None = Field(default=None, ge=0)
    max_tokens: int | None = Field(default=None, ge=0)


class SweepFile(_Strict):
    """The content of a sweep file."""

    name: str = Field(default="sweep", pattern=LABEL_PATTERN)
    models_file: str | None = None
    scenarios: list[ScenarioAxis] = Field(default_factory=lambda: [ScenarioAxis()], min_length=1)
    seeds: list[int] | SealedSeeds = Field(default_factory=lambda: [1])
    agents: list[AgentAxis] = Field(default_factory=list)
    models: list[str] = Field(default_factory=list)
    harnesses: list[Literal["react", "hermes"]] = Field(
        default_factory=lambda: ["react"]  # type: ignore[arg-type]
    )
    harness_settings: dict[Literal["react", "hermes"], dict[str, Any]] = Field(default_factory=dict)
    max_concurrency: int = Field(default=64, ge=1)
    budget: Budget = Field(default_factory=Budget)
    transcript: bool = True
    arenas: list[ArenaAxis] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _one_arena(cls, data: Any) -> Any:
        """`arena: [a, b]` is one entry of `arenas`."""
        if isinstance(data, dict) and "arena" in data:
            data = dict(data)
            if "arenas" in data:
                raise ValueError("give arena or arenas, not both")
            data["arenas"] = [data.pop("arena")]
        return data

    @field_validator("arenas", mode="before")
    @classmethod
    def _lists_allowed(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [{"agents": v} if isinstance(v, list) else v for v in value]
        return value

    @field_validator("scenarios", mode="before")
    @classmethod
    def _names_allowed(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [{"name": v} if isinstance(v, str) else v for v in value]
        return value

    @field_validator("agents", mode="before")
    @classmethod
    def _agent_names_allowed(cls, value: Any) -> Any:
        return _agent_names_as_entries(value)

    @field_validator("seeds")
    @classmethod
    def _seeds_distinct(cls, value: list[int] | SealedSeeds) -> list[int] | SealedSeeds:
        if isinstance(value, list) and (not value or len(set(value)) != len(value)):
            raise ValueError("seeds must be a non-empty list of distinct integers")
        return value


def _one_line(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "(top level)"
    message = "unknown key" if first["type"] == "extra_forbidden" else first["msg"]
    return f"{where}: {message}"


def parse_sweep_text(text: str, suffix: str, source: str = "sweep file") -> SweepFile:
    """Parse and validate the text of a sweep file (`suffix`: .yaml, .yml or .toml)."""
    try:
        if suffix == ".toml":
            data: Any = tomllib.loads(text)
        elif suffix in (".yaml", ".yml"):
            data = yaml.safe_load(text)
        else:
            raise SweepFileError(f"{source} must end in .yaml, .yml or .toml")
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        raise SweepFileError(f"{source} is not valid: {' '.join(str(exc).split())}") from None
    if not isinstance(data, dict):
        raise SweepFileError(f"{source} must hold a mapping of sweep keys")
    try:
        return SweepFile.model_validate(data)
    except ValidationError as exc:
        raise SweepFileError(f"{source}: {_one_line(exc)}") from None


def load_sweep_file(path: Path) -> SweepFile:
    """Read a sweep file; `SweepFileError` says in one line what is wrong with it."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SweepFileError(f"cannot read sweep file {path}: {exc}") from None
    return parse_sweep_text(text, path.suffix, str(path))
