"""`run.json`: the typed, versioned description of one run (docs/run-record.md).

One model, `RunManifest`, is the only shape of `run.json`. The runner creates it once when a run
starts (`RunManifest.start`) and changes it only through its methods (`progress`, `record_agent`,
`finish`, `fail`), writing the whole file atomically each time. Readers go through
`read_manifest`, which refuses a file of another format version with a one-line reason.
"""

from __future__ import annotations

import asyncio
import platform
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    SerializerFunctionWrapHandler,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)

import merchantbench
from merchantbench.money import rmb
from merchantbench.record.code_version import CodeVersion, current_code
from merchantbench.record.files import atomic_write_json, json_value
from merchantbench.record.safe_read import read_record_bytes
from merchantbench.record.schema import RUN_FILE
from merchantbench.scenario import Scenario
from merchantbench.seeds import COMMITMENT_SCHEME

FORMAT: Literal[1] = 1  # bump (and the Literal) when a key or column changes meaning or goes
Ended = Literal["completed", "closed", "stopped", "interrupted", "error"]
RESUMABLE: tuple[Ended | None, ...] = (None, "error", "interrupted")
# Who plays a run driven from outside the process (runs/driver.py): a person at the
# playground, an agent over HTTP, the model of an MCP client, a model run by Inspect AI.
DriverName = Literal["human", "external", "mcp", "inspect", "gym"]
DRIVERS: tuple[DriverName, ...] = ("human", "external", "mcp", "inspect", "gym")


class ManifestError(ValueError):
    """A `run.json` that cannot be read as this format; the message says why, on one line."""


class _Part(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ScenarioRef(_Part):
    """Which scenario ran: its name, version and content hash."""

    name: str
    version: str
    hash: str


class MarketRef(_Part):
    """Where the market came from: `synthetic` or a real `catalog` directory."""

    source: Literal["synthetic", "catalog"]
    catalog: str | None = None
    n_products: int


class AgentRef(_Part):
    """The agent's registered name (or, for an agent from outside the package, its
    `module:Class` or absolute `file.py:Class`), its settings (never a secret), whether it was
    handed the hidden market (the oracle), and the hash of an outside agent's code
    (record/agent_code.py; not written for built-in agents, whose code the package hash covers)."""

    name: str
    settings: dict[str, Any]
    privileged: bool = False
    source_sha256: str | None = None

    @model_serializer(mode="wrap")
    def _without_builtin_source(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict) and data.get("source_sha256") is None:
            data.pop("source_sha256", None)
        return data


class CodeChange(_Part):
    """A resume allowed to continue with other code (`--allow-code-change`): the code that wrote
    the state continued from (`before`), the code that continued it (`after`), the windows
    closed at that point and when."""

    window: int
    before: CodeVersion
    after: CodeVersion
    at: str


class FinalAccounts(_Part):
    """The four accounts and net assets after draining, in RMB."""

    balance: float
    deposit: float
    in_transit: float
    receivable: float
    net_assets: float


class FrontEndRef(BaseModel):
    """How a front end hosts a run whose agent lives outside the process: the front end's
    name (`http`), its settings for the run (the HTTP server's pause flag, turn cap, wall-clock
    limit...; they change while the run goes on) and what the agent said when it registered."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    name: str
    settings: dict[str, Any]
    registration: dict[str, Any] | None = None


class SeedCommitment(_Part):
    """A sealed run's seed, committed to: SHA-256 (hex) of
    ``merchantbench-seed-v1:<salt hex>:<seed decimal>`` (`merchantbench.seeds.commitment`).
    The seed and salt stay in the run's `sealed/` directory until `merchantbench reveal`."""

    scheme: Literal["sha256(merchantbench-seed-v1:salt:seed)"] = COMMITMENT_SCHEME
    sha256: str


class ForkRef(_Part):
    """Where a fork record comes from (docs/counterfactual.md): the parent run directory as it
    was named when the fork was made, its state hash and agent, and the window at whose opening
    the store was handed over. The fork's record holds the parent's record up to that window,
    then the continuation; `fresh_agent` says whether the continuing agent started with no
    memory (another policy taking over) or was rebuilt by playing the parent's own prefix."""

    parent: str
    parent_state_hash: str | None
    parent_agent: str
    window: int
    day: int
    fresh_agent: bool


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def stopped_from_outside(exc: BaseException) -> bool:
    """A run that broke off with `exc` was stopped from outside (Ctrl-C, SIGTERM, its task
    cancelled): `interrupted`, not `error`."""
    return isinstance(exc, KeyboardInterrupt | asyncio.CancelledError)


class RunManifest(BaseModel):
    """The content of `run.json`. Keys and meaning: docs/run-record.md."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    format: Literal[1] = FORMAT
    scenario: ScenarioRef
    scenario_config: dict[str, Any]
    seed: int | None  # None for a sealed run, whose seed is committed to instead
    seed_commitment: SeedCommitment | None = None
    market: MarketRef
    agent: AgentRef
    tool_schema_sha256: str
    package_version: str
    git_commit: str | None
    source_sha256: str | None = None  # of the package's files (record/code_version.py)
    code_changes: list[CodeChange] = []
    python: str
    initial_net_assets: float
    started: str
    ended: Ended | None = None
    finished: str | None = None
    windows: int | None = None
    closed: bool | None = None
    final_accounts: FinalAccounts | None = None
    state_hash: str | None = None
    llm_usage: dict[str, Any] | None = None
    stop_reason: str | None = None
    error: str | None = None
    front_end: FrontEndRef | None = None
    driver: DriverName | None = None  # None: the runner drove an in-process agent
    fork: ForkRef | None = None  # a fork of another run (written only for a fork)

    @model_serializer(mode="wrap")
    def _without_fork(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)  # a record that is no fork keeps the keys it always had
        if isinstance(data, dict) and data.get("fork") is None:
            data.pop("fork", None)
        return data

    @model_validator(mode="before")
    @classmethod
    def _driver_of_older_records(cls, data: Any) -> Any:
        """Records written before `driver` existed named the driver as their agent."""
        if isinstance(data, dict) and "driver" not in data:
            agent = data.get("agent")
            name = agent.get("name") if isinstance(agent, dict) else None
            if name in DRIVERS:
                return {**data, "driver": name}
        return data

    @field_validator("scenario_config")
    @classmethod
    def _a_valid_scenario(cls, config: dict[str, Any]) -> dict[str, Any]:
        Scenario.model_validate(config)  # a record whose scenario cannot be rebuilt is unusable
        return config

    @model_validator(mode="after")
    def _seed_or_commitment(self) -> RunManifest:
        if (self.seed is None) == (self.seed_commitment is None):
            raise ValueError("a run record has either a seed or a seed commitment (sealed)")
        return self

    @classmethod
    def start(
        cls,
        scenario: Scenario,
        seed: int | None,
        market: MarketRef,
        agent: AgentRef,
        tool_schema_sha256: str,
        git_commit: str | None,
        seed_commitment: SeedCommitment | None = None,
        driver: DriverName | None = None,
        fork: ForkRef | None = None,
    ) -> RunManifest:
        """The record of a run that starts now: of `seed`, or of a sealed seed known only by
        its `seed_commitment` (then `seed` is None); `driver` for a run played from outside."""
        money = scenario.money
        code = current_code(agent.name)
        if code.agent_source_sha256 is not None:
            agent = agent.model_copy(update={"source_sha256": code.agent_source_sha256})
        return cls(
            scenario=ScenarioRef(
                name=scenario.name, version=scenario.version, hash=scenario.content_hash
            ),
            scenario_config=scenario.model_dump(mode="json"),
            seed=seed,
            seed_commitment=seed_commitment,
            market=market,
            agent=agent,
            tool_schema_sha256=tool_schema_sha256,
            package_version=merchantbench.__version__,
            git_commit=git_commit,
            source_sha256=code.source_sha256,
            python=platform.python_version(),
            initial_net_assets=rmb(money.initial_balance_fen + money.initial_deposit_fen),
            started=_now(),
            driver=driver,
            fork=fork,
        )

    @property
    def sealed(self) -> bool:
        """Whether the run's seed is sealed (recorded as a commitment only)."""
        return self.seed_commitment is not None

    @property
    def seed_pin(self) -> str:
        """What a resume must match about the seed, printable: the seed of a public run, the
        commitment of a sealed one (never the sealed seed)."""
        if self.seed_commitment is not None:
            return f"sealed:{self.seed_commitment.sha256}"
        return str(self.seed)

    @property
    def resumable(self) -> bool:
        """Whether `--resume` may continue this run (it has not ended, or ended by a failure)."""
        return self.ended in RESUMABLE

    def code(self) -> CodeVersion:
        """The code the run continues with: that of its start, or of its last allowed change."""
        if self.code_changes:
            return self.code_changes[-1].after
        return CodeVersion(
            package_version=self.package_version,
            source_sha256=self.source_sha256,
            agent_source_sha256=self.agent.source_sha256,
        )

    def record_code_change(self, before: CodeVersion, after: CodeVersion, window: int) -> None:
        """A resume continues the state `before` wrote, at `window`, with the code `after`. A
        repeat of the last change (the same resume, killed and done again) is recorded once."""
        last = self.code_changes[-1] if self.code_changes else None
        if last is not None and (last.before, last.after, last.window) == (before, after, window):
            return
        change = CodeChange(window=window, before=before, after=after, at=_now())
        self.code_changes = [*self.code_changes, change]

    def scenario_model(self) -> Scenario:
        """The scenario exactly as the run used it."""
        return Scenario.model_validate(self.scenario_config)

    def record_agent(self, usage: dict[str, Any] | None, stop_reason: str | None) -> None:
        """What the agent reported: its usage totals (LLM agents) and why it stopped early.
        Replaces what an earlier attempt of a resumed run recorded."""
        self.llm_usage = usage
        self.stop_reason = stop_reason or None

    def host(self, front_end: str, settings: dict[str, Any]) -> None:
        """A front end hosts the run with these settings (kept across its changes)."""
        registration = self.front_end.registration if self.front_end is not None else None
        self.front_end = FrontEndRef(name=front_end, settings=settings, registration=registration)

    def record_registration(self, registration: dict[str, Any]) -> None:
        """What the agent of a hosted run said about itself when it registered."""
        if self.front_end is None:
            raise ValueError("only a run hosted by a front end has a registration")
        self.front_end = self.front_end.model_copy(update={"registration": registration})

    def progress(self, windows: int) -> None:
        """Windows closed so far (written with each checkpoint, so a live run shows it)."""
        self.windows = windows

    def finish(
        self,
        ended: Literal["completed", "closed"],
        windows: int,
        closed: bool,
        final_accounts: FinalAccounts,
        state_hash: str,
    ) -> None:
        """The run is over and drained. A completed run whose agent stopped early is `stopped`
        (its remaining windows ran idle)."""
        self.ended = "stopped" if ended == "completed" and self.stop_reason else ended
        self.finished = _now()
        self.windows = windows
        self.closed = closed
        self.final_accounts = final_accounts
        self.state_hash = state_hash
        self.error = None

    def fail(self, exc: BaseException) -> None:
        """The run broke off: `interrupted` when stopped from outside (Ctrl-C, SIGTERM, its task
        cancelled), else `error` (both resumable)."""
        self.ended = "interrupted" if stopped_from_outside(exc) else "error"
        self.error = f"{type(exc).__name__}: {exc}"

    def reopen(self) -> None:
        """The run goes on again from an earlier state (its session was restored)."""
        self.ended = self.finished = self.closed = None
        self.final_accounts = None
        self.state_hash = self.error = None

    def interrupt(self) -> None:
        """The agent went away before the end (a front end's client left): resumable."""
        self.ended = "interrupted"
        self.error = None

    def write(self, run_dir: Path) -> None:
        """Write `run.json` into `run_dir` (atomically)."""
        atomic_write_json(run_dir / RUN_FILE, self.model_dump(mode="json"))


def _one_line(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "(top level)"
    return f"{where}: {first['msg']}"


def parse_manifest(data: Any, source: str = RUN_FILE) -> RunManifest:
    """Validate a parsed `run.json`.

    Raises:
        ManifestError: It is not an object, its `format` is not `FORMAT`, or a key is wrong.
    """
    if not isinstance(data, dict):
        raise ManifestError(f"{source}: must hold a JSON object")
    found = data.get("format")
    if found != FORMAT:
        shown = "none" if found is None else repr(found)
        raise ManifestError(
            f"{source}: run record format {shown} is not supported (this version reads "
            f"format {FORMAT}); re-run or use the merchantbench version that wrote it"
        )
    try:
        return RunManifest.model_validate(data)
    except ValidationError as exc:
        raise ManifestError(f"{source}: {_one_line(exc)}") from exc


def read_manifest(run_dir: Path | str) -> RunManifest:
    """Read and validate `run.json` of a run directory.

    Raises:
        ManifestError: The file is missing, not JSON, or not a `run.json` of this format.
    """
    path = Path(run_dir) / RUN_FILE
    try:
        data = json_value(read_record_bytes(Path(run_dir), RUN_FILE).decode("utf-8"))
    except OSError as exc:
        raise ManifestError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
    except ValueError as exc:  # not JSON, not UTF-8, nested too deeply
        raise ManifestError(f"{path}: not valid JSON") from exc
    return parse_manifest(data, str(path))
