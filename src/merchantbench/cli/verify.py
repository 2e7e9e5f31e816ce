"""`merchantbench verify DIR…`: replay run records and check them (docs/verify.md)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from merchantbench.cli.common import JsonOption

if TYPE_CHECKING:  # the work is imported when the command runs (cli/common.py)
    from merchantbench.session import Session

PROGRESS_SECONDS = 2.0  # a long record reports its progress on stderr this often
VERIFIED, DIFFERS, CANNOT = 0, 1, 2  # exit codes


def verify(
    run_dirs: Annotated[
        list[Path],
        typer.Argument(
            help="run directories to verify; a directory that is no run (a sweep, a folder of "
            "runs): every run record beneath it",
            metavar="DIR...",
        ),
    ],
    seed: Annotated[
        str | None,
        typer.Option("--seed", help="a sealed run's seed, as `merchantbench reveal` prints it"),
    ] = None,
    salt: Annotated[
        str | None,
        typer.Option("--salt", help="the salt of a sealed run's commitment (with --seed)"),
    ] = None,
    reveal_file: Annotated[
        Path | None,
        typer.Option("--reveal", help="a file of `merchantbench reveal --json` (seed and salt)"),
    ] = None,
    trust: Annotated[
        list[Path] | None,
        typer.Option(
            "--trust",
            help="a public key file (`merchantbench keys show --json`) whose signature is "
            "trusted; repeatable. With it, a record must also carry a good signature of one",
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Replay each run's actions in a fresh session and check every answer, window close, the
    final state hash, the tables, every metric, and that the model-call log, run.json's usage
    and the model's words agree with each other and with the trace. With --trust, the record's
    signature too. Exit 0 only when all match; 1 when a record differs (one line naming where);
    2 when one cannot be verified (unreadable, hostile, no transcript, a sealed run without its
    seed, a bad key). With --json every outcome is one JSON line."""
    out = _Printer(as_json)
    try:
        opened = _opening(seed, salt, reveal_file)
        keys = _keys(trust)
    except ValueError as exc:
        out.refused(None, str(exc))
        raise typer.Exit(CANNOT) from None
    code = VERIFIED
    for run_dir in _records(run_dirs, out):
        try:
            if _market(run_dir) == run_dir:
                found = _verify_market(run_dir, keys, out)
            else:
                found = _verify_one(run_dir, opened, keys, out)
        except Exception as exc:  # noqa: BLE001 (any error: one line, exit 2, never a traceback)
            out.refused(run_dir, f"{type(exc).__name__}: {exc}")
            found = CANNOT
        code = max(code, found)
    if code:
        raise typer.Exit(code)


class _Printer:
    """One line per record: text, or (with --json) one JSON object on stdout."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json
        self.seen = 0

    def refused(self, run_dir: Path | None, message: str) -> None:
        from merchantbench.replay.evidence import one_line

        message = one_line(message, 400)
        if self.as_json:
            where = None if run_dir is None else _shown(run_dir)
            self.line({"run_dir": where, "ok": False, "status": "cannot verify",
                       "error": message})  # fmt: skip
        typer.echo(f"error: {message}", err=True)

    def line(self, value: Any) -> None:
        from merchantbench.replay.evidence import one_line

        self.seen += 1
        typer.echo(json.dumps(value, ensure_ascii=True) if self.as_json else one_line(value, 4000))


def _shown(path: Path) -> str:
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _opening(
    seed: str | None, salt: str | None, reveal_file: Path | None
) -> tuple[int | None, str | None]:
    """The seed and salt given (--seed/--salt or a reveal file)."""
    if reveal_file is not None:
        if seed is not None or salt is not None:
            raise ValueError("give --reveal or --seed/--salt, not both")
        try:
            data = json.loads(reveal_file.read_bytes()[: 1 << 16])
            seed, salt = str(data["seed"]), str(data["salt"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"--reveal {reveal_file}: not a reveal file ({exc})") from None
    if seed is None:
        if salt is not None:
            raise ValueError("--salt needs --seed")
        return None, None
    try:
        return int(seed), salt
    except ValueError:
        raise ValueError(f"--seed {seed!r} is not an integer") from None


def _keys(trust: list[Path] | None) -> list[Any] | None:
    if not trust:
        return None
    from merchantbench.record.attest import AttestError, read_public_key

    try:
        return [read_public_key(path) for path in trust]
    except AttestError as exc:
        raise ValueError(f"--trust: {exc}") from None


def _verify_one(
    run_dir: Path, opened: tuple[int | None, str | None], keys: list[Any] | None, out: _Printer
) -> int:
    from merchantbench.replay import ReplayError, verify_record
    from merchantbench.replay.evidence import keep

    seed, salt = opened
    try:
        report = verify_record(run_dir, seed=seed, salt=salt, on_window=_progress(run_dir))
    except ReplayError as exc:
        out.refused(run_dir, str(exc))
        return CANNOT
    keep(report)
    code = {"verified": VERIFIED, "differs": DIFFERS}.get(report.status, CANNOT)
    summary = report.summary()
    code, attestation = _attested(run_dir, code, keys)
    if report.ok and code != VERIFIED:
        summary = summary.replace(": verified (", ": replayed (", 1) + "; NOT VERIFIED"
    summary += f"; model, tokens, cost: {attestation.summary()}"
    if out.as_json:
        data = report.to_dict()
        data["run_dir"] = _shown(run_dir)
        data["ok"] = code == VERIFIED
        data["status"] = {VERIFIED: "verified", DIFFERS: "differs", CANNOT: "cannot verify"}[code]
        data["attestation"] = attestation.to_dict()
        out.line(data)
    else:
        out.line(summary)
    return code


def _attested(run_dir: Path, code: int, keys: list[Any] | None) -> tuple[int, Any]:
    """The record's attestation checked against the keys given (else the trusted ones), and
    the exit code's share once it counts: with --trust, a changed or bad signature differs and
    a missing or untrusted one cannot verify."""
    from merchantbench.record.attest import check_attestation, trusted_keys

    attestation = check_attestation(run_dir, trusted_keys() if keys is None else keys)
    if keys is not None and code == VERIFIED and not attestation.ok:
        code = DIFFERS if attestation.status == "differs" else CANNOT
    return code, attestation


def _verify_market(arena_dir: Path, keys: list[Any] | None, out: _Printer) -> int:
    """Verify a market (all its merchants at once: none can be replayed alone) and each
    merchant record's signature (with --trust, it must be good); the exit code's share."""
    from merchantbench.replay import ReplayError
    from merchantbench.replay.evidence import keep_market
    from merchantbench.replay.market import verify_market

    try:
        report = verify_market(arena_dir)
    except ReplayError as exc:
        out.refused(arena_dir, str(exc))
        return CANNOT
    keep_market(report)
    failed = [m.status for m in report.merchants.values() if not m.ok]
    code = VERIFIED if report.ok else CANNOT if "cannot verify" in failed else DIFFERS
    attested: dict[str, Any] = {}
    for merchant, verdict in report.merchants.items():
        merchant_code, attested[merchant] = _attested(verdict.run_dir, VERIFIED, keys)
        code = max(code, merchant_code)
    if out.as_json:
        merchants = {m: {**r.to_dict(), "attestation": attested[m].to_dict()}
                     for m, r in report.merchants.items()}  # fmt: skip
        out.line({"arena_dir": _shown(arena_dir), "ok": code == VERIFIED,
                  "final_state_hash": report.final_state_hash, "merchants": merchants})  # fmt: skip
    else:
        signed = [f"{m}: model, tokens, cost: {a.summary()}" for m, a in attested.items()]
        for text in [*report.summary().splitlines(), *signed]:  # a line each (one_line folds)
            out.line(text)
    return code


def _beneath(path: Path) -> list[Path]:
    """Run records beneath a folder, found without following a link."""
    found = []
    for folder, dirs, files in os.walk(path, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        if "run.json" in files:
            found.append(Path(folder))
            dirs[:] = []
    return sorted(found)


def _records(paths: list[Path], out: _Printer) -> list[Path]:
    """The run directories to verify: each path that is a run record (it has `run.json`), and
    for any other directory every run record beneath it, in path order. A path with neither
    stays, so its one-line refusal is printed. A market (`arena.json`) is verified whole: a
    merchant's record, or a market found beneath, stands for its market once."""
    found: list[Path] = []
    for path in paths:
        try:
            beneath = (
                _beneath(path)
                if path.is_dir() and not (path / "run.json").exists() and not _market(path)
                else []
            )
        except OSError:
            beneath = []
        for run_dir in beneath or [path]:
            market = _market(run_dir)
            unit = market or run_dir
            if unit not in found:
                found.append(unit)
    return found


def _market(path: Path) -> Path | None:
    """The market `path` is, or whose merchant's record it is; None otherwise."""
    from merchantbench.record.arena import ARENA_FILE, MERCHANTS_DIR

    try:
        if (path / ARENA_FILE).is_file():
            return path
        arena = path.parent.parent
        if path.parent.name == MERCHANTS_DIR and (arena / ARENA_FILE).is_file():
            return arena
    except OSError:
        return None
    return None


def _progress(run_dir: Path) -> Callable[[Session], None]:
    """A window hook that says, every few seconds, how far the replay of `run_dir` is."""
    last = [time.monotonic()]

    def report(session: Session) -> None:
        now = time.monotonic()
        if now - last[0] >= PROGRESS_SECONDS:
            last[0] = now
            total = session.scenario.clock.windows
            typer.echo(
                f"verify {_shown(run_dir)}: window {session.memory.windows_closed} of {total}",
                err=True,
            )

    return report
