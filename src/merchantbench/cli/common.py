"""Shared CLI plumbing: one-line errors and scenario options.

Every command module imports at its top only typer, the standard library, this module and other
light ones (their options need nothing more); what a command does is imported inside it, when it
runs. So `merchantbench --help` and each `--help` start fast (tests/test_cli_start.py).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from merchantbench.seeds import SeedError, check_seed

if TYPE_CHECKING:
    from merchantbench.record.sealed import SealedSeed
    from merchantbench.scenario import Scenario

ScenarioName = Annotated[
    str, typer.Option("--scenario", "-s", help="preset: paper, small, smoke, arena")
]
ScenarioFile = Annotated[
    str | None, typer.Option("--scenario-file", help="YAML file of overrides (key `base` = preset)")
]
SetOption = Annotated[
    list[str] | None,
    typer.Option("--set", help="override one parameter, e.g. --set market.n_products=5000"),
]
SeedOption = Annotated[int, typer.Option("--seed", help="market and outcome seed")]
RunSeedOption = Annotated[
    int | None, typer.Option("--seed", help="market and outcome seed [default: 1]")
]
SealedOption = Annotated[
    bool,
    typer.Option(
        "--sealed",
        help="a sealed run: a secret 128-bit seed from the OS, recorded as a commitment and "
        "disclosed by `merchantbench reveal` after the run (docs/sealed.md)",
    ),
]
DaysOption = Annotated[int | None, typer.Option("--days", help="simulate fewer days")]
HostOption = Annotated[str, typer.Option("--host", help="address to listen on (loopback default)")]
PortOption = Annotated[int, typer.Option("--port", help="TCP port", min=0, max=65535)]
JsonOption = Annotated[bool, typer.Option("--json", help="print one JSON object instead")]
CatalogOption = Annotated[
    Path | None,
    typer.Option("--catalog", help="a real catalog directory (docs/catalog.md) instead of the "
                 "synthetic market", exists=True, file_okay=False),
]  # fmt: skip


def fail(message: str, code: int = 2) -> NoReturn:
    """Print a one-line reason to stderr and exit non-zero."""
    typer.echo(f"error: {' '.join(message.split())}", err=True)
    raise typer.Exit(code)


def writable_dir(path: Path, option: str) -> None:
    """Fail in one line unless `path` is a directory that exists, or can be made, and takes
    files. Nothing is left behind (a probe directory is made and removed at once)."""
    where = path
    try:
        if path.exists() and not path.is_dir():
            fail(f"{option} {path} is a file, not a directory")
        while not where.exists():
            where = where.parent
    except OSError as exc:
        fail(f"{option} {path}: cannot be reached ({exc.strerror})")
    if not where.is_dir():
        fail(f"{option} {path}: {where} is a file, not a directory")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".merchantbench-probe-", dir=where))
    except OSError as exc:
        fail(f"{option} {path}: cannot write in {where} ({exc.strerror or exc})")


def run_seed(
    seed: int | None, sealed: bool, resume: bool, out: Path | None
) -> tuple[int, SealedSeed | None]:
    """The seed of a run the CLI starts or resumes, and its secret if it is sealed.

    A new sealed run draws its seed; a resumed sealed run reads it back from its directory
    (checked against the commitment in run.json); any other run uses --seed (default 1).
    """
    from merchantbench.record.manifest import ManifestError, read_manifest
    from merchantbench.record.schema import RUN_FILE
    from merchantbench.record.sealed import SealedError, SealedSeed, read_sealed

    if sealed and seed is not None:
        fail("--sealed draws the seed; give --seed or --sealed, not both")
    if resume and out is not None and (out / RUN_FILE).is_file():
        try:
            meta = read_manifest(out)
        except ManifestError as exc:
            fail(str(exc))
        if meta.sealed:
            if seed is not None:
                fail(f"{out} is a sealed run: its seed is read back, resume it without --seed")
            try:
                secret = read_sealed(out, meta)
            except SealedError as exc:
                fail(str(exc))
            return secret.seed, secret
        if sealed:
            fail(f"{out} is not a sealed run; resume it without --sealed")
    if sealed:
        secret = SealedSeed.draw()
        return secret.seed, secret
    try:
        return check_seed(1 if seed is None else seed), None
    except SeedError as exc:
        fail(f"--seed: {exc}")


def scenario_from_options(
    name: str, file: str | None, overrides: list[str] | None, days: int | None = None
) -> Scenario:
    """The scenario of `--scenario`, `--scenario-file`, `--set` and `--days` (a one-line
    failure if it is not valid)."""
    from merchantbench.scenario import ScenarioError, load_scenario

    with_days = list(overrides or []) + ([f"clock.days={days}"] if days is not None else [])
    try:
        return load_scenario(name, overrides=with_days, file=file)
    except ScenarioError as exc:
        fail(str(exc))
