"""`merchantbench scripted-server`: a scripted OpenAI-compatible endpoint for demos and tests."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path
from typing import Annotated

import typer

from merchantbench.agents.llm.faults import FAULT_KINDS
from merchantbench.agents.llm.scripted_policy import POLICIES
from merchantbench.cli.common import fail


def _load_script(path: Path) -> list[dict]:
    """A JSON or YAML list of reply specs (see `merchantbench.agents.llm.scripted_server`)."""
    import yaml

    try:
        text = path.read_text()
    except OSError as exc:
        fail(f"cannot read script {path}: {exc.strerror}")
    try:
        replies = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        fail(f"script {path} is not valid: {exc}")
    if not isinstance(replies, list) or not all(isinstance(r, dict) for r in replies):
        fail(f"script {path} must be a list of replies")
    return replies


def _stop(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM (e.g. from a test or a container) stops like Ctrl-C


def scripted_server(
    script: Annotated[
        Path | None, typer.Option("--script", help="JSON/YAML list of replies to replay")
    ] = None,
    policy: Annotated[
        str | None, typer.Option("--policy", help=f"built-in policy: {', '.join(POLICIES)}")
    ] = None,
    port: Annotated[int, typer.Option("--port", help="port on 127.0.0.1 (0: a free one)")] = 0,
    fault_rate: Annotated[
        float, typer.Option("--fault-rate", help="share of requests meeting a fault")
    ] = 0.0,
    fault: Annotated[
        list[str] | None, typer.Option("--fault", help=f"fault kinds: {', '.join(FAULT_KINDS)}")
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="seed of the fault draws")] = 0,
    latency: Annotated[
        float, typer.Option("--latency", help="seconds every answer waits, like a model")
    ] = 0.0,
) -> None:
    """Serve scripted chat completions until Ctrl-C; point `run --base-url` at it."""
    if (script is None) == (policy is None):
        fail("give exactly one of --script FILE or --policy NAME")
    if policy is not None and policy not in POLICIES:
        fail(f"unknown policy {policy!r}; choose from {', '.join(POLICIES)}")
    from merchantbench.agents.llm.scripted_server import (
        FaultPlan,
        ScriptedServer,
        script_responder,
    )

    responder = script_responder(_load_script(script)) if script else POLICIES[policy or ""]
    try:
        plan = FaultPlan(rate=fault_rate, kinds=tuple(fault or FAULT_KINDS), seed=seed)
        server = ScriptedServer(responder, plan, port=port, latency=latency, keep_requests=False)
    except (ValueError, OSError) as exc:
        fail(str(exc))
    signal.signal(signal.SIGTERM, _stop)
    with server:
        typer.echo(f"scripted server at {server.base_url} (Ctrl-C to stop)", err=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    typer.echo(f"served {server.request_count} requests; faults {server.faults_injected}", err=True)
