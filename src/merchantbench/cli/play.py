"""`merchantbench play`, `merchantbench study create` and `merchantbench dashboard`: the human
playground and the read-only dashboard of run records (docs/web.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from merchantbench.cli.common import (
    HostOption,
    PortOption,
    RunSeedOption,
    ScenarioName,
    SealedOption,
    fail,
    scenario_from_options,
    writable_dir,
)
from merchantbench.cli.serve import body_limited, listen, serve_app

study_app = typer.Typer(help="Human-baseline studies: one private store per participant.")
DirOption = Annotated[Path, typer.Option("--dir", help="the playground directory (stores, links)")]
DaysOpt = Annotated[int | None, typer.Option("--days", help="play fewer days", min=1, max=365)]


def _seeds(seed: int | None, sealed: bool, count: int) -> list[int | None]:
    """One seed per store; None draws a sealed seed of its own (merchantbench reveal)."""
    if sealed and seed is not None:
        fail("give --seed or --sealed, not both")
    if sealed:
        return [None] * count
    return [1 if seed is None else seed] * count  # the same market for every participant


def _create(directory: Path, scenario: str, days: int | None, seeds: list[int | None]) -> list[str]:
    from merchantbench.web.room import PlayRoom, RoomError

    spec = scenario_from_options(scenario, None, None, days)
    try:
        seats = PlayRoom(directory).create(spec, seeds)
    except RoomError as exc:
        fail(str(exc))
    return [seat.token for seat in seats]


def _room_seats(directory: Path) -> dict[str, Any]:
    """The seats of the playground in `directory` (a one-line failure if it is damaged)."""
    from merchantbench.web.room import PlayRoom, RoomError

    writable_dir(directory, "--dir")
    try:
        return dict(PlayRoom(directory).seats)
    except RoomError as exc:
        fail(str(exc))


def _links(directory: Path, host: str, port: int) -> None:
    base = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{port}"
    for token, seat in sorted(_room_seats(directory).items(), key=lambda s: s[1].participant):
        typer.echo(f"{seat.participant}: {base}/play/{token}")
    from merchantbench.web.room import PlayRoom

    typer.echo(f"operator (study view): {base}/study/{PlayRoom(directory).operator_token()}")


def play(
    scenario: ScenarioName = "smoke",
    seed: RunSeedOption = None,
    sealed: SealedOption = False,
    days: DaysOpt = None,
    directory: DirOption = Path("play"),
    host: HostOption = "127.0.0.1",
    port: PortOption = 8000,
) -> None:
    """Play a store in your browser: prints your private link, then serves until Ctrl-C.
    An existing playground directory is served as it is (its stores continue where they were)."""
    from merchantbench.web.app import create_web_app
    from merchantbench.web.room import PARTICIPANTS_FILE

    _room_seats(directory)  # a file, an unwritable place or a damaged playground: one line
    if not (directory / PARTICIPANTS_FILE).is_file():
        _create(directory, scenario, days, _seeds(seed, sealed, 1))
    elif seed is not None or sealed or days is not None:
        fail(f"{directory} already holds stores: drop --seed/--sealed/--days or choose --dir")
    listener = listen(host, port)  # the printed link answers at once
    _links(directory, host, port)
    typer.echo("Open the link in a browser; Ctrl-C stops the server (your store is saved).")
    serve_app(body_limited(create_web_app(play_dir=directory)), host, port, listener=listener)


@study_app.command("create")
def study_create(
    participants: Annotated[int, typer.Option("--participants", min=1, max=200)] = 3,
    scenario: ScenarioName = "paper",
    seed: RunSeedOption = None,
    sealed: SealedOption = False,
    days: DaysOpt = None,
    directory: DirOption = Path("study"),
    host: HostOption = "127.0.0.1",
    port: PortOption = 8000,
) -> None:
    """Create one store per participant and print each one's private link; serve them with
    `merchantbench play --dir DIR`."""
    writable_dir(directory, "--dir")
    if (directory / "participants.json").is_file():
        fail(f"{directory} already holds a study; choose another --dir")
    _create(directory, scenario, days, _seeds(seed, sealed, participants))
    _links(directory, host, port)
    typer.echo(f"Serve them with: merchantbench play --dir {directory} --host {host} --port {port}")


def dashboard(
    runs_root: Annotated[
        Path,
        typer.Option("--runs", help="a run directory, a sweep, or a directory of run directories"),
    ] = Path("runs"),
    host: HostOption = "127.0.0.1",
    port: PortOption = 8000,
) -> None:
    """Browse run records read-only: Table-1 metrics, charts, traces, sweep leaderboards."""
    from merchantbench.serve.auth import is_loopback
    from merchantbench.web.app import create_web_app

    if not runs_root.is_dir():
        fail(f"{runs_root} is not a directory")
    if not is_loopback(host):
        fail(f"the dashboard has no tokens: refusing to listen on {host}; use 127.0.0.1")
    listener = listen(host, port)
    typer.echo(f"dashboard of {runs_root} at http://{host}:{port}/")
    serve_app(body_limited(create_web_app(runs_root=runs_root)), host, port, listener=listener)
