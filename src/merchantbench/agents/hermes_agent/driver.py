"""`hermes-agent`: the real Hermes Agent (Nous Research, the published package) on a store.

The driver runs Hermes in its own pinned environment (`env.py`), in a private home, confined
(`process.py`: its file system and its network namespace; its terminal, file and code tools
run inside too), talking to this run's surface only through our MCP server and to the model
only through our recorder (`gateway.py`). One Hermes conversation runs through the year: each
window the driver sends the observation as a user message; Hermes works with its tools until
it calls `end_of_step` or stops answering with tools; a window it leaves open is closed and
recorded as forced. The window and Hermes' turn end when its `end_of_step` succeeds, whatever
the model would do next: the worker stops Hermes' loop before its next model call or tool
(`worker.WindowGuard`), and a call that still comes runs nothing (`gateway.WindowRun`).
Hermes' own memory, skills, todo list and context compression do the rest.

Checkpoints pickle the driver without its process and servers. On resume the store continues
from its checkpoint and Hermes restarts in the same private home: its memory, skills and
session store persist (as they stood when the run was killed, possibly past the checkpoint);
the conversation itself starts anew from the resumed window's observation.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator, model_validator

from merchantbench.agents.base import AgentOutcome, AgentSettings, BaseAgent
from merchantbench.agents.hermes_agent.env import HERMES_VERSION, ensure_env, hermes_dir
from merchantbench.agents.hermes_agent.gateway import MCP_PATH, MODEL_PREFIX, Gateway
from merchantbench.agents.hermes_agent.process import (
    SANDBOX_PORT,
    SOCKET_NAME,
    DriverFiles,
    HermesProcess,
    HermesProcessError,
    command,
    config_text,
    process_env,
    terminal_limits,
)
from merchantbench.agents.llm.models import ModelConfig, resolve_model
from merchantbench.agents.llm.usage import UsageTotals
from merchantbench.surface import AgentSurface

# Hermes toolsets that touch only Hermes' private home.
HOME_TOOLSETS = ("memory", "todo", "skills", "session_search")
# Hermes toolsets that run commands and code as Hermes' child processes: confined only
# under bubblewrap (the same file system and network namespace as Hermes).
SANDBOXED_TOOLSETS = ("terminal", "file", "code_execution")
CONFINED_TOOLSETS = HOME_TOOLSETS + SANDBOXED_TOOLSETS
MCP_TOOLSET = "mcp-merchantbench"
START_NOTE = (
    "You run this store through the merchantbench MCP tools. Each message is one window's "
    "observation: act with the tools, then call end_of_step to close the window; the next "
    "window comes as the next message. Use your memory and skills to keep what you learn."
)


class HermesAgentSettings(AgentSettings):
    """Settings of the real Hermes Agent driver.

    Attributes:
        model, base_url, api_key_env, models_file, model_entry, params: The model, as for the
            built-in LLM harnesses (the key stays in the driver; Hermes never sees it).
        version: The `hermes-agent` release to install and run.
        toolsets: Hermes' own toolsets to turn on, among `CONFINED_TOOLSETS` (those of
            `SANDBOXED_TOOLSETS` only with `confine`).
        max_iterations: Hermes' tool-calling iterations (model calls) per window; none
            follows a successful `end_of_step` (see the module docstring).
        code_timeout_seconds: Time limit of one run of Hermes' code tool (`execute_code`)
            and of one terminal command in the foreground, in seconds.
        window_timeout_seconds: A window Hermes has not finished by then is closed (forced)
            and Hermes is restarted.
        confine: Run Hermes under bubblewrap (its file system holds only its home; its
            network only the driver's server).
    """

    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    models_file: str | None = None
    model_entry: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    version: str = HERMES_VERSION
    toolsets: tuple[str, ...] = CONFINED_TOOLSETS
    max_iterations: int = Field(default=30, ge=1)
    code_timeout_seconds: int = Field(default=60, ge=1)
    window_timeout_seconds: float = Field(default=900.0, gt=0)
    confine: bool = True

    @field_validator("toolsets")
    @classmethod
    def _confined_only(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unconfined = sorted(set(value) - set(CONFINED_TOOLSETS))
        if unconfined:
            raise ValueError(
                f"toolsets {unconfined} can reach outside Hermes' home; allowed: "
                f"{', '.join(CONFINED_TOOLSETS)}"
            )
        return value

    @model_validator(mode="after")
    def _sandboxed_need_confine(self) -> HermesAgentSettings:
        unsandboxed = [t for t in self.toolsets if t in SANDBOXED_TOOLSETS]
        if unsandboxed and not self.confine:
            raise ValueError(
                f"toolsets {unsandboxed} run commands on the host without confine; "
                f"with confine=false choose toolsets among {', '.join(HOME_TOOLSETS)}"
            )
        return self


class _Live:
    """What exists only while the driver runs: the gateway, the Hermes process, and the
    directory of the gateway's socket (when confined)."""

    def __init__(self, gateway: Gateway, process: HermesProcess, socket_dir: Path | None) -> None:
        self.gateway = gateway
        self.process = process
        self.socket_dir = socket_dir
        self.turns = 0


def _record_framework_call(surface: AgentSurface, call: dict[str, Any]) -> None:
    error = call.get("error")
    surface.record_framework_call(
        str(call.get("tool")), call.get("args"), bool(call.get("ok")), str(error) if error else None
    )


def _remove(directory: Path | None) -> None:
    if directory is not None:
        shutil.rmtree(directory, ignore_errors=True)


class HermesAgentDriver(BaseAgent[HermesAgentSettings]):
    """The real Hermes Agent over MCP (see the module docstring)."""

    name = "hermes-agent"
    Settings = HermesAgentSettings
    runtime_settings = frozenset({"hermes_home"})  # a private home per run, not a setting

    def __init__(self, config: HermesAgentSettings | None = None) -> None:
        super().__init__(config)
        c = self.config
        self.model: ModelConfig = resolve_model(
            c.model, c.base_url, c.api_key_env, c.models_file, c.model_entry, c.params
        )
        self.model.api_key()  # a missing key fails now, not at window 1
        self.home_id = uuid.uuid4().hex  # pickled: a resumed run finds the same home
        self.usage = UsageTotals()
        self.setup_seconds: float | None = None
        self._seq = 0
        self._pending: list[dict[str, Any]] = []
        self._live: _Live | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_live"] = None  # no process or socket in a checkpoint
        return state

    @property
    def home(self) -> Path:
        """Hermes' private home of this run (config, memory, skills, its session store)."""
        return hermes_dir() / "homes" / self.home_id

    @property
    def files(self) -> DriverFiles:
        """What the driver writes for Hermes (settings, scripts, log), beside its home."""
        return DriverFiles(hermes_dir() / "driver-files" / self.home_id, self.home)

    def settings(self) -> dict[str, Any]:
        public = self.config.model_dump(mode="json", exclude={"model", "base_url", "api_key_env"})
        extra = {"mcp_toolset": MCP_TOOLSET, "hermes_home": str(self.home)}
        return {**public, **self.model.public_settings(), **extra}

    async def act_async(self, surface: AgentSurface) -> None:
        window = surface.window
        started = time.perf_counter()
        try:
            live = self._live or await self._start(surface)
            live.gateway.run.begin(surface)
            live.gateway.recorder.window = window
            reply = await live.process.turn(
                self._turn_text(surface, live),
                self.config.window_timeout_seconds,
                lambda call: _record_framework_call(surface, call),
            )
            live.turns += 1
            if reply.get("error"):
                surface.record_framework_call("hermes", {}, False, str(reply["error"])[:300])
        except HermesProcessError as exc:
            await self._drop_live()
            surface.record_framework_call("hermes", {}, False, str(exc)[:300])
        finally:
            self._collect()
            self.usage.wall_seconds += time.perf_counter() - started
        if not surface.over and surface.window == window:
            surface.force_end_of_step()
            self.usage.forced_windows += 1

    def _turn_text(self, surface: AgentSurface, live: _Live) -> str:
        if live.turns:
            return surface.observation()
        return f"{surface.brief()}\n\n{START_NOTE}\n\n{surface.observation()}"

    async def _start(self, surface: AgentSurface) -> _Live:
        env = await asyncio.to_thread(ensure_env, self.config.version)
        self.setup_seconds = env.setup_seconds
        self.home.mkdir(parents=True, exist_ok=True)
        # Short (Unix socket paths are limited to ~108 bytes) and owner-only.
        socket_dir = Path(tempfile.mkdtemp(prefix="mb-hermes-")) if self.config.confine else None
        unix_path = None if socket_dir is None else socket_dir / SOCKET_NAME
        gateway = Gateway(surface, self.model, self.config.window_timeout_seconds, unix_path)
        try:
            await gateway.start()
        except BaseException:
            _remove(socket_dir)
            raise
        port = gateway.port if socket_dir is None else SANDBOX_PORT
        base = f"http://127.0.0.1:{port}"
        c = self.config
        files = self.files
        files.write(
            config_text(
                self.home, base + MCP_PATH, c.window_timeout_seconds, c.code_timeout_seconds
            )
        )
        variables = process_env(
            self.home,
            env,
            {
                "MB_MODEL": self.model.model,
                "MB_BASE_URL": base + MODEL_PREFIX,
                "MB_TOOLSETS": ",".join([*self.config.toolsets, MCP_TOOLSET]),
                "MB_MAX_ITERATIONS": str(self.config.max_iterations),
                **terminal_limits(c.code_timeout_seconds),
            },
        )
        try:
            argv = command(files, env, variables, socket_dir)
            process = await HermesProcess.start(argv, variables, files, gateway.token, 300)
        except BaseException:
            await gateway.stop()
            _remove(socket_dir)
            raise
        self._live = _Live(gateway, process, socket_dir)
        return self._live

    def _collect(self) -> None:
        if self._live is None:
            return
        recorder = self._live.gateway.recorder
        for record in recorder.records:
            self.usage.add(record)
            self._seq += 1
            self._pending.append({**record.as_json(), "seq": self._seq})
        recorder.records.clear()

    async def _drop_live(self) -> None:
        live, self._live = self._live, None
        if live is not None:
            await live.process.close()
            # After the process is gone: calls Hermes made while shutting down are counted.
            self._collect_from(live)
            await live.gateway.stop()
            _remove(live.socket_dir)

    def _collect_from(self, live: _Live) -> None:
        self._live = live
        self._collect()
        self._live = None

    def outcome(self) -> AgentOutcome:
        framework: dict[str, Any] = {"framework": f"hermes-agent=={self.config.version}"}
        if self.setup_seconds is not None:
            framework["env_setup_seconds"] = round(self.setup_seconds, 2)
        return AgentOutcome(usage={**self.usage.as_json(), **framework})

    @property
    def model_calls_seq(self) -> int:
        return self._seq

    def drain_model_calls(self) -> list[dict[str, Any]]:
        drained, self._pending = self._pending, []
        return drained

    async def aclose(self) -> None:
        await self._drop_live()
