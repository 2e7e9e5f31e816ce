"""`merchantbench serve`: the HTTP server (docs/http.md); and `run --agent external --serve`."""

from __future__ import annotations

import json
import os
import signal
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from merchantbench.cli.common import HostOption, PortOption, fail

if TYPE_CHECKING:  # the work is imported when the command runs (cli/common.py)
    from merchantbench.runs.spec import RunSpec

ADMIN_ENV = "MERCHANTBENCH_ADMIN_TOKEN"
LIMIT_HELP = {  # the defaults are ServerLimits' (merchantbench.limits; docs/http.md)
    "body": "largest request body in bytes, else 413 [default: 8 MiB]",
    "extra": "largest /agent/register `extra` in bytes of JSON, else 413 [default: 64 KiB]",
    "idle": "seconds after which an idle MCP session closes [default: 600]",
    "sessions": "open MCP sessions a run (its agent token) may hold, else 429 [default: 16]",
}
GRACE_SECONDS = 5  # on shutdown, open long-polls are cut after this; then runs are checkpointed
# `run --agent external --serve`: once the run has ended, the host waits at most this long for
# the agent to ask again and hear that the run is over (410) before it stops.
TELL_SECONDS = 30.0


def _admin_token(no_auth: bool, host: str) -> str | None:
    from merchantbench.serve.auth import is_loopback, new_token  # FastAPI only when serving

    if no_auth:
        if not is_loopback(host):
            fail(f"refusing to listen on {host} without tokens: drop --no-auth or use 127.0.0.1")
        return None
    token = os.environ.get(ADMIN_ENV)
    if not token:
        token = new_token()
        typer.echo(f"admin token (set {ADMIN_ENV} to choose one): {token}")
    return token


def _announce(base_url: str):
    from merchantbench.serve.dashboard_mount import dashboard_link
    from merchantbench.serve.registry import RunRegistry, agent_environment

    def on_ready(registry: RunRegistry) -> None:
        report_damage(registry)
        typer.echo(f"MerchantBench server at {base_url} (OpenAPI: {base_url}/docs)")
        typer.echo(f"dashboard (operator): {dashboard_link(base_url, registry.admin_token)}")
        for run_id, host in registry.hosts.items():
            typer.echo(f"\n# run {run_id} ({host.status})")
            market = host.settings.market  # each merchant its own env and MCP endpoint
            for agent_id in host.settings.merchants:
                token = registry.agent_token(run_id, agent_id)
                if market:
                    typer.echo(f"# merchant {agent_id}")
                for key, value in agent_environment(base_url, run_id, agent_id, token).items():
                    typer.echo(f"export {key}={value}")
                mcp = f"/agents/{agent_id}/mcp" if market else "/mcp"
                typer.echo(f"# MCP (streamable HTTP, same token): {base_url}/runs/{run_id}{mcp}")

    return on_ready


def report_damage(registry) -> None:
    """One line on stderr for each run left out (and for a damaged tokens file)."""
    if registry.tokens_problem is not None:
        typer.echo(f"warning: {registry.tokens_problem}", err=True)
    for run_id, reason in registry.damaged.items():
        typer.echo(f"run {run_id} is damaged and not served: {reason}", err=True)


def listen(host: str, port: int) -> socket.socket:
    """A socket bound and listening on host:port, or a one-line failure. Bound before the app
    starts, addresses announced before or while it starts up accept connections at once (they
    wait in the backlog until uvicorn serves them)."""
    try:
        listener = socket.create_server((host, port), family=_family(host), backlog=128)
    except OSError as exc:
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")
    listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return listener


def serve_app(
    app, host: str, port: int, registry_hook=None, listener: socket.socket | None = None
) -> None:
    """Run `app` with uvicorn on `listener` (or a new one on host:port) until Ctrl-C/SIGTERM."""
    import uvicorn

    config = uvicorn.Config(
        app, host=host, port=port, log_level="warning", lifespan="on",
        timeout_graceful_shutdown=GRACE_SECONDS,
    )  # fmt: skip
    server = uvicorn.Server(config)
    if registry_hook is not None:
        registry_hook(server)
    signal.signal(signal.SIGTERM, lambda *_: setattr(server, "should_exit", True))
    server.run(sockets=[listener or listen(host, port)])


def body_limited(app):
    """The web app (playground, dashboard) with the same request-body limit as `serve`."""
    from merchantbench.limits import BodyLimit, ServerLimits

    app.add_middleware(BodyLimit, max_bytes=ServerLimits().max_body_bytes)
    return app


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def serve(
    host: HostOption = "127.0.0.1",
    port: PortOption = 8000,
    runs_dir: Annotated[Path, typer.Option("--runs-dir", help="where runs live")] = Path("runs"),
    no_auth: Annotated[
        bool, typer.Option("--no-auth", help="no tokens at all (loopback addresses only)")
    ] = False,
    max_body_bytes: Annotated[
        int | None, typer.Option("--max-body-bytes", min=1024, help=LIMIT_HELP["body"])
    ] = None,
    max_extra_bytes: Annotated[
        int | None, typer.Option("--max-extra-bytes", min=1, help=LIMIT_HELP["extra"])
    ] = None,
    mcp_idle_seconds: Annotated[
        float | None, typer.Option("--mcp-idle-seconds", min=0.1, help=LIMIT_HELP["idle"])
    ] = None,
    mcp_sessions_per_run: Annotated[
        int | None, typer.Option("--mcp-sessions-per-run", min=1, help=LIMIT_HELP["sessions"])
    ] = None,
) -> None:
    """Serve runs over HTTP: the public artifact's agent protocol and a JSON API (/docs)."""
    from merchantbench.limits import ServerLimits
    from merchantbench.serve import ServeConfig, create_app

    token = _admin_token(no_auth, host)
    if runs_dir.exists() and not runs_dir.is_dir():
        fail(f"--runs-dir {runs_dir} is not a directory")
    defaults = ServerLimits()
    limits = ServerLimits(
        max_body_bytes=max_body_bytes or defaults.max_body_bytes,
        max_extra_bytes=max_extra_bytes or defaults.max_extra_bytes,
        mcp_idle_seconds=mcp_idle_seconds or defaults.mcp_idle_seconds,
        mcp_sessions_per_run=mcp_sessions_per_run or defaults.mcp_sessions_per_run,
    )
    announce = _announce(f"http://{host}:{port}")
    config = ServeConfig(runs_dir, token, on_ready=announce, limits=limits)
    serve_app(create_app(config, extensions=_extensions(host)), host, port)


def _extensions(host: str) -> list:
    """Every run also over MCP, at /runs/{run}/mcp (docs/mcp.md); the operator's read-only
    dashboard of the runs directory at / (docs/http.md)."""
    from merchantbench.serve.dashboard_mount import dashboard_extension
    from merchantbench.serve.mcp_mount import mcp_extension
    from merchantbench.web.app import web_extension

    return [mcp_extension(host), dashboard_extension(web_extension)]


def serve_run(spec: RunSpec, run_dir: Path, resume: bool, host: str, port: int) -> None:
    """`run --agent external --serve`: host this one run until it ends, then print its metrics."""
    from merchantbench.runs.runner import RunError
    from merchantbench.serve import ServeConfig, create_app
    from merchantbench.serve.registry import RunRegistry
    from merchantbench.serve.settings import HostSettings

    token = _admin_token(False, host)
    if resume:
        _check_resumable(run_dir)
    if not resume:
        settings = HostSettings(
            run_id=run_dir.name,
            agent_id=spec.agent_settings.get("agent_id", "agent_0"),
            turns_per_window=spec.scenario.clock.calls_per_window,
            sealed=spec.sealed is not None,
        )
        registry = RunRegistry(run_dir.parent, token)
        try:
            created, _ = registry.create_now(spec.scenario, spec.seed, settings, spec.catalog)
        except RunError as exc:
            fail(str(exc))
        created.close()  # the server below picks it up from its checkpoint
    announce = _announce(f"http://{host}:{port}")
    servers: list = []
    damage: list[str] = []

    def on_ready(registry: RunRegistry) -> None:
        reason = registry.damaged.get(run_dir.name)
        if reason is None:
            return announce(registry)
        damage.append(reason)  # nothing to serve: stop at once, and say why below
        for server in servers:
            server.should_exit = True

    config = ServeConfig(
        run_dir.parent, token, only_runs=frozenset({run_dir.name}), on_ready=on_ready
    )
    app = create_app(config, extensions=_extensions(host))
    until_told = UntilTold(app)

    def stop_when_done(server) -> None:
        servers.append(server)
        until_told.server = server
        app.state.registry.on_finish.append(lambda _: until_told.run_ended())

    serve_app(until_told, host, port, stop_when_done)
    if damage:
        fail(f"cannot resume {run_dir}: {damage[0]}")
    from merchantbench.metrics.table1 import HEADLINE_METRICS
    from merchantbench.record.schema import METRICS_FILE

    metrics_file = run_dir / METRICS_FILE
    if not metrics_file.is_file():
        fail(f"the server stopped before the run ended; continue it with --resume --out {run_dir}")
    metrics = json.loads(metrics_file.read_text())
    typer.echo(json.dumps({k: metrics[k] for k in HEADLINE_METRICS}, ensure_ascii=False))


class UntilTold:
    """The app of `run --agent external --serve`, which stops its server once the run has
    ended and the agent has been told so: when a request is answered 410 (the run is over)
    after the end, or `TELL_SECONDS` after it if the agent never asks again. Stopping at the
    end itself would refuse the connection of an agent that asks once more after its last
    `end_of_step`, as the protocol has it, a moment too late."""

    def __init__(self, app) -> None:
        self.app = app
        self.server = None  # the uvicorn server, set before it starts
        self.ended = False

    def run_ended(self) -> None:
        import asyncio

        self.ended = True
        try:
            asyncio.get_running_loop().call_later(TELL_SECONDS, self._stop)
        except RuntimeError:  # not on the server's loop: nothing can wait for the agent
            self._stop()

    def _stop(self) -> None:
        if self.server is not None:
            self.server.should_exit = True

    async def __call__(self, scope, receive, send) -> None:
        told = False

        async def watch(message) -> None:
            nonlocal told
            if message["type"] == "http.response.start" and message["status"] == 410:
                told = self.ended
            await send(message)

        await self.app(scope, receive, watch)
        if told:  # after the answer was sent
            self._stop()


def _check_resumable(run_dir: Path) -> None:
    """`--resume` of a served run: its record must be one the server hosted, not finished."""
    from merchantbench.record.manifest import ManifestError, read_manifest
    from merchantbench.serve.settings import hosted_settings

    try:
        meta = read_manifest(run_dir)
    except ManifestError as exc:
        fail(f"cannot resume {run_dir}: {exc}")
    if hosted_settings(meta) is None:
        fail(f"{run_dir} is not a served run: nothing to resume")
    if not meta.resumable:
        from merchantbench.runs.record_writer import complete_finished

        complete_finished(run_dir)  # a kill after run.json: the journal and the signature
        fail(f"{run_dir} already finished; nothing to resume")
