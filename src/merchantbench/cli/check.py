"""`merchantbench check`: the conformance check of a front end (docs/check.md)."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from merchantbench.cli.common import (
    ScenarioFile,
    ScenarioName,
    SetOption,
    fail,
    scenario_from_options,
)
from merchantbench.seeds import CHECK_SEED, SeedError, check_seed, draw_sealed_seed

_SEED_HELP = "run and market seed (one of 6+ digits is also looked for in every output)"


def check(
    scenario: ScenarioName = "smoke",
    seed: Annotated[int, typer.Option("--seed", help=_SEED_HELP)] = CHECK_SEED,
    sealed: Annotated[
        bool, typer.Option("--sealed", help="check on a fresh secret 128-bit seed (never shown)")
    ] = False,
    adapter: Annotated[
        str, typer.Option("--adapter", help="front end to check (see --list-adapters)")
    ] = "python",
    against: Annotated[
        str | None,
        typer.Option("--against", help="also compare with this adapter's play (e.g. python)"),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the report as JSON")] = False,
    list_adapters: Annotated[
        bool, typer.Option("--list-adapters", help="list the registered adapters")
    ] = False,
    file: ScenarioFile = None,
    set_: SetOption = None,
) -> None:
    """Play the action script through an adapter and assert determinism, snapshot/restore,
    refusals, the ledger identity and that nothing hidden is shown; exit 1 on any failure."""
    from merchantbench.check import AdapterError, adapter_names, run_check

    if list_adapters:
        typer.echo("\n".join(adapter_names()))
        return
    sc = scenario_from_options(scenario, file, set_)
    try:
        seed = draw_sealed_seed() if sealed else check_seed(seed)
    except SeedError as exc:
        fail(f"--seed: {exc}")
    try:
        report = run_check(sc, seed=seed, adapter=adapter, against=against)
    except AdapterError as exc:
        fail(str(exc))
    shown: int | str = "sealed" if sealed else report.seed
    if as_json:
        typer.echo(json.dumps({**report.as_dict(), "seed": shown}, ensure_ascii=False, indent=2))
    else:
        head = f"merchantbench check: adapter {report.adapter}, scenario {report.scenario}"
        typer.echo(f"{head}, seed {shown}, {report.calls} calls, {report.seconds:.2f} s")
        for result in report.checks:
            typer.echo(f"  {'PASS' if result.ok else 'FAIL'}  {result.name:<12} {result.detail}")
    for line in report.failures:
        typer.echo(f"error: {line}", err=True)
    if not report.ok:
        raise typer.Exit(1)
