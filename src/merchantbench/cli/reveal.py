"""`merchantbench reveal DIR`: disclose a finished sealed run's seed and salt, verified against
the commitment in its run.json, and optionally replay the run with it (docs/sealed.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from merchantbench.cli.common import fail

if TYPE_CHECKING:  # the work is imported when the command runs (cli/common.py)
    from merchantbench.record.manifest import RunManifest
    from merchantbench.record.sealed import SealedSeed


def reveal(
    run_dir: Annotated[Path, typer.Argument(help="the run directory of a sealed run")],
    force: Annotated[
        bool, typer.Option("--force", help="reveal although the run has not finished")
    ] = False,
    replay: Annotated[
        Path | None,
        typer.Option(
            "--replay",
            help="replay the run with the revealed seed into this new directory and compare "
            "state hash and final net assets (needs a deterministic agent)",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
) -> None:
    """Disclose a sealed run's seed and salt after the run, checked against its commitment."""
    from merchantbench.record.sealed import SealedError
    from merchantbench.record.sealed import reveal as reveal_seed

    try:
        secret, meta = reveal_seed(run_dir, force)
    except SealedError as exc:
        fail(str(exc))
    assert meta.seed_commitment is not None  # reveal_seed refuses a public run
    facts = {
        "seed": str(secret.seed),
        "salt": secret.salt,
        "commitment": meta.seed_commitment.sha256,
        "verified": True,
        "replay": replay_command(meta, secret),
    }
    if replay is not None:
        facts.update(_replay(meta, secret, replay))
    if as_json:
        typer.echo(json.dumps(facts))
        return
    typer.echo(f"seed: {facts['seed']}")
    typer.echo(f"salt: {facts['salt']}")
    typer.echo(f"commitment: {facts['commitment']} (verified: sha256 of seed and salt)")
    typer.echo(f"replay with: {facts['replay']}")
    if replay is not None:
        verdict = "same" if facts["replay_matches"] else "DIFFERENT"
        typer.echo(f"replayed into {replay}: {verdict} state hash and final net assets")
    if replay is not None and not facts["replay_matches"]:
        raise typer.Exit(1)


def replay_command(meta: RunManifest, secret: SealedSeed) -> str:
    """A command line that replays the run as a public run of the revealed seed: with the
    preset and --days when the recorded scenario is one, else with the recorded scenario
    written to a YAML file (`scenario_config` of run.json)."""
    from merchantbench.scenario import ScenarioError, load_scenario

    scenario = meta.scenario_model()
    where = "--scenario-file SCENARIO.yaml (run.json's scenario_config as YAML)"
    for days in (None, scenario.clock.days):
        overrides = [] if days is None else [f"clock.days={days}"]
        try:
            preset = load_scenario(scenario.name, overrides=overrides)
        except ScenarioError:
            break
        if preset.content_hash == scenario.content_hash:
            where = f"--scenario {scenario.name}" + ("" if days is None else f" --days {days}")
            break
    return f"merchantbench run --agent {meta.agent.name} {where} --seed {secret.seed} --out DIR"


def _replay(meta: RunManifest, secret: SealedSeed, out: Path) -> dict[str, object]:
    """Run the recorded agent, settings and scenario again with the revealed seed."""
    from merchantbench.record.manifest import ManifestError, read_manifest
    from merchantbench.runs.runner import RunError, RunSpec, run_agent

    spec = RunSpec(
        meta.agent.name,
        meta.scenario_model(),
        secret.seed,
        dict(meta.agent.settings),
        Path(meta.market.catalog) if meta.market.catalog else None,
    )
    try:
        run_agent(spec, out)
        again = read_manifest(out)
    except (RunError, ManifestError, ValueError) as exc:
        fail(f"replay: {exc}")
    same = again.state_hash == meta.state_hash and again.final_accounts == meta.final_accounts
    return {"replay_dir": str(out), "replay_state_hash": again.state_hash, "replay_matches": same}
