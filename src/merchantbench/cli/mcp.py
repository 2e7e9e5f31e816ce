"""`merchantbench mcp`: serve one run to an MCP client, over stdio or streamable HTTP."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from merchantbench.cli import common as opt  # the shared options and checks

if TYPE_CHECKING:
    from merchantbench.serve.mcp_run import HostedRun

LOOPBACK = "127.0.0.1"


def mcp(
    out: Annotated[Path, typer.Option("--out", help="run directory (the run record)")],
    scenario: opt.ScenarioName = "paper",
    seed: opt.RunSeedOption = None,
    sealed: opt.SealedOption = False,
    catalog: opt.CatalogOption = None,
    days: opt.DaysOption = None,
    resume: Annotated[bool, typer.Option("--resume", help="continue an interrupted run")] = False,
    http_port: Annotated[
        int | None,
        typer.Option("--http-port", help="serve streamable HTTP on 127.0.0.1:PORT, not stdio"),
    ] = None,
    checkpoint_seconds: Annotated[
        float,
        typer.Option(
            "--checkpoint-seconds", min=0, help="checkpoint after a window once S seconds passed"
        ),
    ] = 2.0,
    file: opt.ScenarioFile = None,
    set_: opt.SetOption = None,
) -> None:
    """Serve one run as an MCP server; the client's model plays it. Writes a run record."""
    from merchantbench.catalog.real_format import CatalogError
    from merchantbench.runs.lifecycle import CheckpointPolicy
    from merchantbench.runs.spec import RunError, RunSpec
    from merchantbench.serve.mcp_run import MCP_AGENT, HostedRun

    sc = opt.scenario_from_options(scenario, file, set_, days)
    transport = "stdio" if http_port is None else "streamable-http"
    run_seed_, secret = opt.run_seed(seed, sealed, resume, out)
    opt.writable_dir(out, "--out")
    spec = RunSpec(
        agent=MCP_AGENT,
        scenario=sc,
        seed=run_seed_,
        agent_settings={"transport": transport},
        catalog=catalog,
        sealed=secret,
    )
    try:
        checkpoints = CheckpointPolicy(seconds=checkpoint_seconds)
        run = HostedRun(spec, out, resume=resume, checkpoints=checkpoints)
    except (RunError, CatalogError) as exc:
        opt.fail(str(exc))
    try:
        if http_port is None:
            import anyio

            from merchantbench.mcp_surface import serve_stdio

            anyio.run(serve_stdio, run)
        else:
            _serve_http(run, http_port)
    finally:
        run.suspend()  # a no-op once the run has finished
    typer.echo(f"run record: {out}" + ("" if run.finished else " (interrupted)"), err=True)


def _serve_http(run: HostedRun, port: int) -> None:
    import uvicorn

    from merchantbench.limits import ServerLimits
    from merchantbench.mcp_surface import McpHttpEndpoint

    limits = ServerLimits()  # those of `merchantbench serve` (docs/http.md)
    endpoint = McpHttpEndpoint(
        run,
        host=LOOPBACK,
        idle_seconds=limits.mcp_idle_seconds,
        max_sessions=limits.mcp_sessions_per_run,
        max_body_bytes=limits.max_body_bytes,
    )
    typer.echo(f"MCP (streamable HTTP): http://{LOOPBACK}:{port}/mcp", err=True)
    uvicorn.run(endpoint.app, host=LOOPBACK, port=port, log_level="warning")
