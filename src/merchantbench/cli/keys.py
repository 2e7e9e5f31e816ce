"""`merchantbench keys`: make and show the host's signing key, and trust others' (docs/verify.md,
"Attestation")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from merchantbench.cli.common import JsonOption, fail

app = typer.Typer(
    help="the host's Ed25519 signing key and the keys it trusts", no_args_is_help=True
)


@app.command("new")
def new(
    force: Annotated[bool, typer.Option("--force", help="replace the key there is")] = False,
) -> None:
    """Make the host's key pair (the private key stays in the keys folder, mode 0600)."""
    from merchantbench.record.attest import AttestError, keys_dir, make_key

    try:
        signer = make_key(keys_dir(), replace=force)
    except (AttestError, OSError) as exc:
        fail(str(exc))
    typer.echo(f"made key {signer.keyid} in {keys_dir()}")
    typer.echo(json.dumps(signer.public_json()))


@app.command("show")
def show(as_json: JsonOption = False) -> None:
    """Show the host's public key (made first if there is none) and the keys it trusts."""
    from merchantbench.record.attest import AttestError, keys_dir, load_signer, trusted_keys

    try:
        mine = load_signer(keys_dir(), make=True)
    except (AttestError, OSError) as exc:
        fail(str(exc))
    if as_json:
        typer.echo(json.dumps(mine.public_json()))
        return
    typer.echo(f"host key: {mine.keyid} (ed25519) in {keys_dir()}")
    typer.echo(f"public: {mine.public_json()['keyval']['public']}")
    for key in trusted_keys():
        if key.keyid != mine.keyid:
            typer.echo(f"trusted: {key.keyid}")


@app.command("trust")
def trust(
    path: Annotated[Path, typer.Argument(help="a public key file (`keys show --json` of a host)")],
) -> None:
    """Trust a host's public key in the tables (leaderboard, report, site, dashboard)."""
    from merchantbench.record.attest import (
        TRUSTED_DIR,
        AttestError,
        key_json,
        keys_dir,
        read_public_key,
    )
    from merchantbench.record.files import atomic_write_bytes

    try:
        key = read_public_key(path)
        atomic_write_bytes(keys_dir() / TRUSTED_DIR / f"{key.keyid}.json",
                           json.dumps(key_json(key)).encode())  # fmt: skip
    except (AttestError, OSError) as exc:
        fail(str(exc))
    typer.echo(f"trusted: {key.keyid}")
