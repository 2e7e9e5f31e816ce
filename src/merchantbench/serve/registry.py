"""The runs a server hosts: created over the API or the CLI, found again in the runs directory
after a restart (a live run resumes from its checkpoint, a finished one is served read-only)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
from pathlib import Path
from typing import Any

from merchantbench.record.arena import (
    ARENA_FILE,
    MERCHANTS_DIR,
    ArenaError,
    ArenaManifest,
    read_arena,
)
from merchantbench.record.files import atomic_write_bytes, read_json
from merchantbench.record.manifest import ManifestError, RunManifest, read_manifest
from merchantbench.record.schema import METRICS_FILE, RUN_FILE
from merchantbench.record.sealed import SealedSeed, read_sealed
from merchantbench.runs.arena import ArenaSpec, Entrant, sealed_of
from merchantbench.runs.lifecycle import CheckpointPolicy, RunLifecycle
from merchantbench.runs.spec import RunError, RunSpec
from merchantbench.scenario import Scenario
from merchantbench.serve.auth import new_token, same_secret
from merchantbench.serve.external import EXTERNAL, ExternalDriver
from merchantbench.serve.host import Host
from merchantbench.serve.settings import (
    FRONT_END,
    HostSettings,
    gone,
    hosted_settings,
    public_metrics,
    summary_of,
)

__all__ = [
    "TOKENS_FILE",
    "Hosted",
    "RecordedRun",
    "RunRegistry",
    "agent_environment",
    "damage_of",
]

TOKENS_FILE = ".serve-tokens.json"  # agent tokens, readable by the operator only (0600)
MAX_REASON_CHARS = 300


def agent_environment(
    base_url: str, run_id: str, agent_id: str, token: str | None
) -> dict[str, str]:
    """The environment variables of one agent written for the public protocol: its own agent
    id and token (a market's merchant: nothing of the others')."""
    env = {
        "MERCHANTBENCH_BASE_URL": base_url,
        "MERCHANTBENCH_RUN_ID": run_id,
        "MERCHANTBENCH_AGENT_ID": agent_id,
    }
    if token is not None:
        env["MERCHANTBENCH_AGENT_TOKEN"] = token
    return env


def token_key(settings: HostSettings, agent_id: str) -> str:
    """Where an agent's token is kept in the tokens file: a store's under its run id, a
    market merchant's under `run/agent` (run ids have no '/')."""
    return settings.run_id if settings.agents is None else f"{settings.run_id}/{agent_id}"


class RecordedRun:
    """A finished run (a store or a market) found on disk: its summary only; every agent
    route answers 410."""

    finished = True
    status = "finished"

    def __init__(self, settings: HostSettings, run_dir: Path) -> None:
        self.settings = settings
        self.metrics: dict[str, dict[str, Any]] = {}
        for agent_id in settings.merchants:
            record = run_dir if settings.agents is None else run_dir / MERCHANTS_DIR / agent_id
            found = read_json(record / METRICS_FILE)  # a finished record has them
            if not isinstance(found, dict):
                raise ValueError(f"{record / METRICS_FILE} is not a JSON object")
            self.metrics[agent_id] = found

    @property
    def run_id(self) -> str:
        return self.settings.run_id

    async def refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise gone()

    observation = act = call_tool = view = store_status = refuse
    register = record_usage = set_paused = refuse

    def summary(self, viewer: str | None = None) -> dict[str, Any]:
        head = {
            "run_id": self.run_id,
            "label": self.settings.label,
            "status": "finished",
            "sealed": self.settings.sealed,
            "over": True,
        }
        agents = {
            agent_id: {"metrics": public_metrics(metrics)}
            for agent_id, metrics in self.metrics.items()
            if viewer is None or agent_id == viewer
        }
        return summary_of(self.settings, head, agents)


Hosted = Host | RecordedRun  # what a run id names on the server


def new_run_id(label: str) -> str:
    stem = re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")[:40] or "run"
    return f"{stem}-{secrets.token_hex(4)}"


class RunRegistry:
    """Runs by id, their agent tokens, and the directory they live in."""

    def __init__(
        self,
        runs_dir: Path,
        admin_token: str | None,
        checkpoints: CheckpointPolicy | None = None,
        only: set[str] | None = None,
    ) -> None:
        self.runs_dir = runs_dir
        self.admin_token = admin_token
        self.checkpoints = checkpoints or CheckpointPolicy(seconds=0)
        self.only = only
        self.hosts: dict[str, Hosted] = {}
        self.damaged: dict[str, str] = {}  # runs found but not served: id → why (one line)
        self.tokens_problem: str | None = None  # why the tokens file was set aside, if it was
        self._tokens: dict[str, str] = {}
        self.on_finish: list[Any] = []  # callbacks(host) for every run that ends

    # --- tokens -------------------------------------------------------------------------------
    def agent_token(self, run_id: str, agent_id: str) -> str | None:
        """The token of one agent of a run (a store's agent, a market's merchant)."""
        host = self.hosts.get(run_id)
        if host is None:
            return None
        return self._tokens.get(token_key(host.settings, agent_id))

    def token_owner(self, run_id: str, token: str) -> str | None:
        """The agent id whose token this is among the run's agents, or None."""
        host = self.hosts.get(run_id)
        if host is None:
            return None
        for agent_id in host.settings.merchants:
            if same_secret(token, self._tokens.get(token_key(host.settings, agent_id))):
                return agent_id
        return None

    def _load_tokens(self) -> None:
        """The agent tokens of the runs. A damaged tokens file is moved aside (kept, for the
        operator) and the runs get new tokens (`tokens_problem` says so)."""
        path = self.runs_dir / TOKENS_FILE
        try:
            tokens = json.loads(path.read_text()) if path.is_file() else {}
            if not isinstance(tokens, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in tokens.items()
            ):
                raise ValueError("not an object of run ids and tokens")
        except (OSError, ValueError) as exc:
            aside = path.with_name(f"{TOKENS_FILE}.damaged-{secrets.token_hex(3)}")
            path.replace(aside)
            self.tokens_problem = (
                f"{path} cannot be read ({damage_of(exc, self.runs_dir)}); kept as {aside.name}, "
                "and the runs get new agent tokens"
            )
            tokens = {}
        self._tokens = tokens

    def _give_tokens(self, settings: HostSettings, fresh: bool) -> dict[str, str]:
        """A new token for every agent of the run (`fresh`: a new run), or for those that
        have none; returns each agent's."""
        tokens = {}
        for agent_id in settings.merchants:
            key = token_key(settings, agent_id)
            if fresh or key not in self._tokens:
                self._tokens[key] = new_token()
            tokens[agent_id] = self._tokens[key]
        return tokens

    def _save_tokens(self) -> None:
        path = self.runs_dir / TOKENS_FILE
        atomic_write_bytes(path, json.dumps(self._tokens, indent=1, sort_keys=True).encode())
        os.chmod(path, 0o600)

    # --- runs ---------------------------------------------------------------------------------
    def _adopt(self, host: Host) -> Host:
        host.on_finish.append(self._finished)
        self.hosts[host.run_id] = host
        return host

    def _finished(self, host: Host) -> None:
        for callback in self.on_finish:
            callback(host)

    async def create(
        self, scenario: Scenario, seed: int, settings: HostSettings, catalog: Path | None = None
    ) -> tuple[Host, dict[str, str]]:
        """Start a new run in `<runs_dir>/<run_id>`: a store alone, or a market of
        `settings.agents`; returns it and each agent's token."""
        return await asyncio.to_thread(self.create_now, scenario, seed, settings, catalog)

    def create_now(
        self, scenario: Scenario, seed: int, settings: HostSettings, catalog: Path | None = None
    ) -> tuple[Host, dict[str, str]]:
        """`create`, blocking (for the CLI, before a server starts). A sealed run
        (`settings.sealed`) draws its own secret seed; `seed` is then not used."""
        secret = SealedSeed.draw() if settings.sealed else None
        seed = seed if secret is None else secret.seed
        if settings.agents is None:
            agent = {"agent_id": settings.agent_id}
            spec: RunSpec | ArenaSpec = RunSpec(
                EXTERNAL, scenario, seed, agent, catalog, sealed=secret
            )
        else:
            spec = _market_spec(scenario, seed, settings.agents, catalog, secret)
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        if not self._tokens:
            self._load_tokens()
        host = self._open(spec, self.runs_dir / settings.run_id, settings, False)
        tokens = self._give_tokens(settings, fresh=True)
        self._save_tokens()
        return self._adopt(host), tokens

    def _open(
        self, spec: RunSpec | ArenaSpec, run_dir: Path, settings: HostSettings, resume: bool
    ) -> Host:
        """Open (or resume) the run's lifecycle, driven by one `external` driver per agent."""
        if isinstance(spec, RunSpec):
            driver = ExternalDriver.from_settings(spec.agent_settings)
            life = RunLifecycle.open(
                spec, run_dir, resume=resume, driver=driver, checkpoints=self.checkpoints
            )
        else:
            drivers = {
                e.merchant: ExternalDriver.from_settings({"agent_id": e.merchant})
                for e in spec.entrants
            }
            life = RunLifecycle.open_market(
                spec, run_dir, resume=resume, checkpoints=self.checkpoints, drivers=drivers
            )
        host = Host(settings, life)
        host.save_settings()
        host.finish_if_over()
        if not resume:
            life.checkpoint()  # a restart before the first window ends
        return host

    def load_existing(self) -> list[str]:
        """Pick up the runs of the runs directory; returns the ids of those resumed. A run
        that cannot be opened (a damaged record) is skipped and listed in `damaged`: one
        damaged run never keeps the others offline."""
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        self._load_tokens()
        resumed = []
        found = [p for p in self.runs_dir.iterdir() if (p / RUN_FILE).is_file()]
        found += [p for p in self.runs_dir.iterdir() if (p / ARENA_FILE).is_file()]
        for run_dir in sorted(found):
            if self.only is not None and run_dir.name not in self.only:
                continue
            try:
                if self._load(run_dir):
                    resumed.append(run_dir.name)
            except Exception as exc:  # whatever is damaged, only this run is left out
                self.damaged[run_dir.name] = damage_of(exc, self.runs_dir)
        if self.tokens_problem is not None:  # a new agent token for every live run
            for host in self.hosts.values():
                if isinstance(host, Host):
                    self._give_tokens(host.settings, fresh=False)
            self._save_tokens()
        return resumed

    def _load(self, run_dir: Path) -> bool:
        """Host one recorded run: live (resumed; returns True) or finished (read-only). A
        record another front end made is left alone."""
        found = _recorded(run_dir)
        if found is None:
            return False
        settings, spec = found
        if spec is None:
            self.hosts[settings.run_id] = RecordedRun(settings, run_dir)
            return False
        self._adopt(self._open(spec, run_dir, settings, resume=True))
        return True

    async def aclose_all(self) -> None:
        """Checkpoint every live run (server shutdown)."""
        for host in self.hosts.values():
            if isinstance(host, Host):
                await host.aclose()


def damage_of(exc: BaseException, runs_dir: Path) -> str:
    """Why a record could not be opened, on one short line; paths are given from the runs
    directory (no answer names the server's directories)."""
    text = " ".join(str(exc).split()) or "no details"
    text = text.replace(f"{runs_dir.resolve()}/", "").replace(f"{runs_dir}/", "")
    if not isinstance(exc, RunError | ManifestError):
        text = f"{type(exc).__name__}: {text}"
    return text[:MAX_REASON_CHARS]


def _market_spec(
    scenario: Scenario,
    seed: int,
    agents: list[str],
    catalog: Path | None,
    sealed: SealedSeed | None = None,
) -> ArenaSpec:
    entrants = tuple(Entrant(a, EXTERNAL, {"agent_id": a}) for a in agents)
    return ArenaSpec(scenario, seed if sealed is None else sealed.seed, entrants, catalog, sealed)


def _recorded(run_dir: Path) -> tuple[HostSettings, RunSpec | ArenaSpec | None] | None:
    """What the server needs of a record it hosted: its settings and, unless it finished,
    the spec to resume it with. None for a record of another front end."""
    if (run_dir / ARENA_FILE).is_file():
        try:
            arena = read_arena(run_dir)
        except ArenaError as exc:
            raise RunError(str(exc)) from None
        hosted = arena.front_end
        if not isinstance(hosted, dict) or hosted.get("name") != FRONT_END:
            return None  # an arena of `merchantbench arena`
        settings = HostSettings.from_json({"agents": [], **hosted["settings"]})
        finished = arena.ended == "completed"
        return settings, None if finished else _market_spec_of(arena, settings, run_dir)
    meta = read_manifest(run_dir)
    found = hosted_settings(meta)
    if found is None:
        return None  # a run of another kind (an in-process agent, MCP)
    return found, _spec_of(meta, run_dir) if meta.resumable else None


def _market_spec_of(arena: ArenaManifest, settings: HostSettings, arena_dir: Path) -> ArenaSpec:
    """The spec of a recorded market, from its arena.json (and a sealed market's secret)."""
    scenario = Scenario.model_validate(arena.scenario_config)
    catalog = Path(arena.catalog) if arena.catalog else None
    secret = sealed_of(arena_dir)
    seed = arena.seed if secret is None else secret.seed
    assert seed is not None and settings.agents is not None  # a public market records its seed
    return _market_spec(scenario, seed, settings.agents, catalog, secret)


def _spec_of(meta: RunManifest, run_dir: Path) -> RunSpec:
    """The spec of a recorded run, from its run.json (and a sealed run's secret)."""
    catalog = meta.market.catalog
    secret = read_sealed(run_dir) if meta.seed_commitment is not None else None
    seed = meta.seed if secret is None else secret.seed
    assert seed is not None  # a public run records its seed; a sealed one its secret
    return RunSpec(
        EXTERNAL,
        meta.scenario_model(),
        seed,
        dict(meta.agent.settings),
        Path(catalog) if catalog else None,
        sealed=secret,
    )
