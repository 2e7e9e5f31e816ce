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

from merchantbench.record.arena import ARENA_FILE, MERCHANTS_DIR, ArenaError, read_arena
from merchantbench.record.files import atomic_write_bytes, read_json
from merchantbench.record.manifest import ManifestError, RunManifest, read_manifest
from merchantbench.record.schema import METRICS_FILE, RUN_FILE
from merchantbench.record.sealed import SealedSeed, read_sealed
from merchantbench.runs.arena import ArenaSpec, Entrant, sealed_of
from merchantbench.runs.lifecycle import CheckpointPolicy, RunLifecycle
from merchantbench.runs.spec import RunError, RunSpec
from merchantbench.scenario import Scenario
from merchantbench.serve.act import ProtocolError
from merchantbench.serve.auth import new_token, same_secret
from merchantbench.serve.external import EXTERNAL, ExternalDriver
from merchantbench.serve.host import RunHost
from merchantbench.serve.market_host import MarketHost, MarketSettings
from merchantbench.serve.settings import FRONT_END, HostSettings, gone, hosted_settings

__all__ = [
    "TOKENS_FILE",
    "Hosted",
    "RecordedMarket",
    "RecordedRun",
    "RunRegistry",
    "damage_of",
    "market_env",
    "run_env",
]

TOKENS_FILE = ".serve-tokens.json"  # agent tokens, readable by the operator only (0600)
MAX_REASON_CHARS = 300


def run_env(base_url: str, host: RunHost | RecordedRun, token: str | None) -> dict[str, str]:
    """The environment variables an agent written for the public protocol reads."""
    env = {
        "MERCHANTBENCH_BASE_URL": base_url,
        "MERCHANTBENCH_RUN_ID": host.run_id,
        "MERCHANTBENCH_AGENT_ID": host.settings.agent_id,
    }
    if token is not None:
        env["MERCHANTBENCH_AGENT_TOKEN"] = token
    return env


def market_env(base_url: str, run_id: str, agent_id: str, token: str | None) -> dict[str, str]:
    """The environment of one merchant of a market: its own agent id and token."""
    env = {
        "MERCHANTBENCH_BASE_URL": base_url,
        "MERCHANTBENCH_RUN_ID": run_id,
        "MERCHANTBENCH_AGENT_ID": agent_id,
    }
    if token is not None:
        env["MERCHANTBENCH_AGENT_TOKEN"] = token
    return env


def agent_key(run_id: str, agent_id: str) -> str:
    """Where a market merchant's token is kept in the tokens file (run ids have no '/')."""
    return f"{run_id}/{agent_id}"


class RecordedRun:
    """A finished run found on disk: its summary only; every agent route answers 410."""

    surface = None
    finished = True
    status = "finished"

    def __init__(self, settings: HostSettings, run_dir: Path) -> None:
        self.settings = settings
        self.run_dir = run_dir
        metrics = read_json(run_dir / METRICS_FILE)  # a finished record has them
        if not isinstance(metrics, dict):
            raise ValueError(f"{run_dir / METRICS_FILE} is not a JSON object")
        self.metrics: dict[str, Any] = metrics

    @property
    def run_id(self) -> str:
        return self.settings.run_id

    async def refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise gone()

    observation = act = call_tool = register = record_usage = set_paused = refuse

    def summary(self) -> dict[str, Any]:
        metrics = self.metrics
        return {
            "run_id": self.run_id,
            "label": self.settings.label,
            "status": "finished",
            "agent_id": self.settings.agent_id,
            "sealed": self.settings.sealed,
            "over": True,
            "metrics": {k: v for k, v in metrics.items() if k != "seed"},
        }


class RecordedMarket:
    """A finished market found on disk: its summary only; every agent route answers 410."""

    surface = None
    finished = True
    status = "finished"

    def __init__(self, settings: MarketSettings, arena_dir: Path) -> None:
        self.settings = settings
        self.metrics: dict[str, dict[str, Any]] = {}
        for agent_id in settings.agents:
            found = read_json(arena_dir / MERCHANTS_DIR / agent_id / METRICS_FILE)
            if not isinstance(found, dict):
                raise ValueError(f"{agent_id}: {METRICS_FILE} is not a JSON object")
            self.metrics[agent_id] = found

    @property
    def run_id(self) -> str:
        return self.settings.run_id

    async def refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise gone()

    observation = act = call_tool = register = record_usage = set_paused = refuse

    def port(self, agent_id: str) -> RecordedMarket:
        if agent_id not in self.settings.agents:
            raise ProtocolError(404, "unknown_agent", f"this run has no agent {agent_id}")
        return self

    def summary(self, viewer: str | None = None) -> dict[str, Any]:
        shown = self.settings.agents if viewer is None else [viewer]
        return {
            "run_id": self.run_id,
            "label": self.settings.label,
            "status": "finished",
            "market": True,
            "sealed": self.settings.sealed,
            "over": True,
            "agents": {
                aid: {"metrics": {k: v for k, v in self.metrics[aid].items() if k != "seed"}}
                for aid in shown
            },
        }


Hosted = RunHost | RecordedRun | MarketHost | RecordedMarket  # what a run id names on the server
Market = MarketHost | RecordedMarket


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
    def agent_token(self, run_id: str, agent_id: str | None = None) -> str | None:
        """A run's agent token, or a market merchant's (`agent_id`)."""
        return self._tokens.get(run_id if agent_id is None else agent_key(run_id, agent_id))

    def token_owner(self, run_id: str, token: str) -> str | None:
        """The agent id whose token this is among the run's agents (a market's merchants, a
        single run's agent), or None."""
        host = self.hosts.get(run_id)
        if isinstance(host, MarketHost | RecordedMarket):
            for agent_id in host.settings.agents:
                if same_secret(token, self._tokens.get(agent_key(run_id, agent_id))):
                    return agent_id
        elif host is not None and same_secret(token, self._tokens.get(run_id)):
            return host.settings.agent_id
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

    def _new_tokens_for_all(self) -> None:
        """After a damaged tokens file: a new agent token for every live run."""
        for run_id, host in self.hosts.items():
            if isinstance(host, RunHost) and run_id not in self._tokens:
                self._tokens[run_id] = new_token()
            if isinstance(host, MarketHost):
                for agent_id in host.settings.agents:
                    self._tokens.setdefault(agent_key(run_id, agent_id), new_token())
        self._save_tokens()

    def _save_tokens(self) -> None:
        path = self.runs_dir / TOKENS_FILE
        atomic_write_bytes(path, json.dumps(self._tokens, indent=1, sort_keys=True).encode())
        os.chmod(path, 0o600)

    # --- runs ---------------------------------------------------------------------------------
    def _adopt(self, host: RunHost | MarketHost) -> Any:
        host.on_finish.append(self._finished)
        self.hosts[host.run_id] = host
        return host

    def _finished(self, host: RunHost | MarketHost) -> None:
        for callback in self.on_finish:
            callback(host)

    async def create(
        self, scenario: Scenario, seed: int, settings: HostSettings, catalog: Path | None = None
    ) -> tuple[RunHost, str]:
        """Start a new run in `<runs_dir>/<run_id>`; returns it and its agent token."""
        return await asyncio.to_thread(self.create_now, scenario, seed, settings, catalog)

    def create_now(
        self, scenario: Scenario, seed: int, settings: HostSettings, catalog: Path | None = None
    ) -> tuple[RunHost, str]:
        """`create`, blocking (for the CLI, before a server starts). A sealed run
        (`settings.sealed`) draws its own secret seed; `seed` is then not used."""
        secret = SealedSeed.draw() if settings.sealed else None
        seed = seed if secret is None else secret.seed
        agent = {"agent_id": settings.agent_id}
        spec = RunSpec(EXTERNAL, scenario, seed, agent, catalog, sealed=secret)
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        if not self._tokens:
            self._load_tokens()
        host = self._open(spec, self.runs_dir / settings.run_id, settings, False)
        token = new_token()
        self._tokens[settings.run_id] = token
        self._save_tokens()
        return self._adopt(host), token

    def _open(self, spec: RunSpec, run_dir: Path, settings: HostSettings, resume: bool) -> RunHost:
        driver = ExternalDriver.from_settings(spec.agent_settings)
        life = RunLifecycle.open(
            spec, run_dir, resume=resume, driver=driver, checkpoints=self.checkpoints
        )
        host = RunHost(settings, life)
        host.save_settings()
        host.finish_if_over()
        if not resume:
            life.checkpoint()  # a restart before the first window ends
        return host

    async def create_market(
        self, scenario: Scenario, seed: int, settings: MarketSettings, catalog: Path | None = None
    ) -> tuple[MarketHost, dict[str, str]]:
        """Start a new market in `<runs_dir>/<run_id>`; returns it and each merchant's token."""
        return await asyncio.to_thread(self.create_market_now, scenario, seed, settings, catalog)

    def create_market_now(
        self, scenario: Scenario, seed: int, settings: MarketSettings, catalog: Path | None = None
    ) -> tuple[MarketHost, dict[str, str]]:
        """`create_market`, blocking: an arena record driven by one `external` driver per
        merchant (agent id = merchant id)."""
        secret = SealedSeed.draw() if settings.sealed else None  # then `seed` is not used
        spec = _market_spec(scenario, seed, settings.agents, catalog, secret)
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        if not self._tokens:
            self._load_tokens()
        host = self._open_market(spec, self.runs_dir / settings.run_id, settings, False)
        tokens = {}
        for agent_id in settings.agents:
            tokens[agent_id] = self._tokens[agent_key(settings.run_id, agent_id)] = new_token()
        self._save_tokens()
        return self._adopt(host), tokens

    def _open_market(
        self, spec: ArenaSpec, arena_dir: Path, settings: MarketSettings, resume: bool
    ) -> MarketHost:
        drivers = {
            e.merchant: ExternalDriver.from_settings({"agent_id": e.merchant})
            for e in spec.entrants
        }
        life = RunLifecycle.open_market(
            spec, arena_dir, resume=resume, checkpoints=self.checkpoints, drivers=drivers
        )
        host = MarketHost(settings, life)
        host.save_settings()
        host.finish_if_over()
        if not resume:
            life.checkpoint()  # a restart before the first window ends
        return host

    def _load_market(self, arena_dir: Path) -> bool:
        """Host one recorded market; True if it was resumed (live)."""
        try:
            manifest = read_arena(arena_dir)
        except ArenaError as exc:
            raise RunError(str(exc)) from None
        hosted = manifest.front_end
        if not isinstance(hosted, dict) or hosted.get("name") != FRONT_END:
            return False  # an arena of `merchantbench arena`
        settings = MarketSettings(**hosted["settings"])
        if manifest.ended == "completed":
            self.hosts[settings.run_id] = RecordedMarket(settings, arena_dir)
            return False
        scenario = Scenario.model_validate(manifest.scenario_config)
        catalog = Path(manifest.catalog) if manifest.catalog else None
        secret = sealed_of(arena_dir)
        seed = manifest.seed if secret is None else secret.seed
        assert seed is not None  # a public market records its seed; a sealed one its secret
        spec = _market_spec(scenario, seed, settings.agents, catalog, secret)
        self._adopt(self._open_market(spec, arena_dir, settings, resume=True))
        return True

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
            load = self._load_market if (run_dir / ARENA_FILE).is_file() else self._load
            try:
                if load(run_dir):
                    resumed.append(run_dir.name)
            except Exception as exc:  # whatever is damaged, only this run is left out
                self.damaged[run_dir.name] = damage_of(exc, self.runs_dir)
        if self.tokens_problem is not None:
            self._new_tokens_for_all()
        return resumed

    def _load(self, run_dir: Path) -> bool:
        """Host one recorded run; True if it was resumed (live), False otherwise."""
        meta = read_manifest(run_dir)
        settings = hosted_settings(meta)
        if settings is None:
            return False  # a run of another kind (an in-process agent, MCP)
        if not meta.resumable:
            self.hosts[settings.run_id] = RecordedRun(settings, run_dir)
            return False
        spec = _spec_of(meta, run_dir)
        self._adopt(self._open(spec, run_dir, settings, resume=True))
        return True

    async def aclose_all(self) -> None:
        """Checkpoint every live run (server shutdown)."""
        for host in self.hosts.values():
            if isinstance(host, RunHost | MarketHost):
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
