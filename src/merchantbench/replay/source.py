"""A run record opened for replay: its manifest, scenario, seed and catalog, and its trace and
transcript read line by line (`RecordSource`). Anything that keeps a record from being replayed
(a missing or damaged file, a sealed run without its seed, other tools) is a `ReplayError`."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from merchantbench.record.files import json_value
from merchantbench.record.manifest import ManifestError, RunManifest, read_manifest
from merchantbench.record.safe_read import open_record_file
from merchantbench.record.schema import RUN_FILE, TRACE_FILE, TRANSCRIPT_FILE
from merchantbench.record.sealed import FINISHED, SEED_FILE, SealedError, reveal
from merchantbench.record.trace import TraceEntry, TraceEntryError
from merchantbench.scenario import Scenario
from merchantbench.seeds import is_sealed_range, verify_commitment
from merchantbench.tools.toolset import build_registry


class ReplayError(Exception):
    """A record that cannot be replayed (damaged, truncated or unreadable files, a sealed run
    without its seed, a record of other tools); the message says why in one line."""


MAX_LINE = 16 << 20  # characters of one trace or transcript line (memory stays bounded)


@dataclass(frozen=True)
class TraceLine:
    """One trace line: its number in the file, its text (without the newline), its entry."""

    number: int
    text: str
    entry: TraceEntry


@dataclass
class RecordSource:
    """A run record ready to replay.

    Attributes:
        run_dir: The run directory.
        manifest: Its `run.json`.
        scenario: The scenario exactly as the run used it.
        seed: The run's seed (for a sealed run: the revealed or given one).
        catalog: The real catalog directory, or None for the synthetic market.
        sealed: Whether the run is sealed.
    """

    run_dir: Path
    manifest: RunManifest
    scenario: Scenario
    seed: int = field(repr=False)
    catalog: Path | None
    sealed: bool

    @classmethod
    def open(cls, run_dir: Path, seed: int | None = None, salt: str | None = None) -> RecordSource:
        """Read `run.json` and check that the record can be replayed.

        Raises:
            ReplayError: no run record, an unreadable `run.json`, a sealed run without its
                seed, a seed other than the record's, a scenario or tool list that is not the
                one recorded, or a missing catalog.
        """
        run_dir = Path(run_dir)
        if not run_dir.is_dir():
            raise ReplayError(f"{run_dir} is not a directory")
        if not (run_dir / RUN_FILE).exists() and not (run_dir / RUN_FILE).is_symlink():
            raise ReplayError(f"{run_dir} is not a run record (no {RUN_FILE})")
        if not (run_dir / TRACE_FILE).exists() and not (run_dir / TRACE_FILE).is_symlink():
            raise ReplayError(f"{run_dir} has no {TRACE_FILE}: nothing to replay")
        try:
            manifest = read_manifest(run_dir)
        except ManifestError as exc:
            raise ReplayError(str(exc)) from None
        except (OSError, ValueError) as exc:
            raise ReplayError(f"{run_dir / RUN_FILE}: cannot be read ({exc})") from None
        scenario = _scenario(run_dir, manifest)
        registry = build_registry(scenario)
        if registry.schema_sha256() != manifest.tool_schema_sha256:
            raise ReplayError(
                f"{run_dir}: the run offered other tools (schema {manifest.tool_schema_sha256[:12]}"
                f"…) than this code does ({registry.schema_sha256()[:12]}…); replay it with the "
                f"code that wrote it (merchantbench {manifest.package_version})"
            )
        return cls(
            run_dir=run_dir,
            manifest=manifest,
            scenario=scenario,
            seed=_seed(run_dir, manifest, seed, salt),
            catalog=_catalog(run_dir, manifest),
            sealed=manifest.seed_commitment is not None,
        )

    @property
    def finished(self) -> bool:
        return self.manifest.ended in FINISHED

    def trace(self) -> Iterator[TraceLine]:
        """The trace's lines, each checked to be a whole entry in sequence.

        Raises:
            ReplayError: a line is torn, not JSON, lacks a field, or is out of sequence.
        """
        path = self.run_dir / TRACE_FILE
        try:
            with open_text(self.run_dir, TRACE_FILE) as lines:
                reads = iter(lambda: lines.readline(MAX_LINE), "")
                for number, raw in enumerate(reads, start=1):
                    if len(raw) >= MAX_LINE:
                        raise ReplayError(f"{path} line {number} is longer than a record line")
                    if not raw.endswith("\n"):
                        raise ReplayError(
                            f"{path} line {number} is torn (no newline at its end): the record "
                            "is truncated"
                        )
                    text = raw[:-1]
                    entry = _entry(path, number, text)
                    if entry.seq != number:
                        raise ReplayError(
                            f"{path} line {number} holds call {entry.seq}: lines are missing "
                            "or out of order"
                        )
                    yield TraceLine(number, text, entry)
        except UnicodeDecodeError:
            raise ReplayError(f"{path} is not UTF-8 text: the record is damaged") from None
        except OSError as exc:
            raise ReplayError(f"{path}: cannot be read ({exc.strerror or exc})") from None

    def transcript(self) -> Transcript | None:
        """The transcript, read line by line; None if the run kept none."""
        path = self.run_dir / TRANSCRIPT_FILE
        if not path.exists() and not path.is_symlink():
            return None
        return Transcript(self.run_dir, TRANSCRIPT_FILE)


class Transcript:
    """`transcript.jsonl` read in order, one line at a time (`next_line`)."""

    def __init__(self, run_dir: Path, name: str) -> None:
        self.path = run_dir / name
        self.number = 0
        self._stack = contextlib.ExitStack()
        try:
            self._file = self._stack.enter_context(open_text(run_dir, name))
        except OSError as exc:
            raise ReplayError(f"{self.path}: cannot be read ({exc.strerror or exc})") from None

    def next_line(self) -> str | None:
        """The next line without its newline, or None at the end of the file.

        Raises:
            ReplayError: the file is not UTF-8, or its last line is torn.
        """
        try:
            raw = self._file.readline(MAX_LINE)
        except UnicodeDecodeError:
            raise ReplayError(f"{self.path} is not UTF-8 text: the record is damaged") from None
        if not raw:
            return None
        self.number += 1
        if len(raw) >= MAX_LINE:
            raise ReplayError(f"{self.path} line {self.number} is longer than a record line")
        if not raw.endswith("\n"):
            raise ReplayError(
                f"{self.path} line {self.number} is torn (no newline at its end): the record "
                "is truncated"
            )
        return raw[:-1]

    def close(self) -> None:
        self._stack.close()


@contextlib.contextmanager
def open_text(run_dir: Path, name: str) -> Iterator[io.TextIOWrapper]:
    """A record file as UTF-8 text lines, opened as `record.safe_read` allows (a regular file
    inside the record, under its size cap; a link, FIFO, device or folder is refused)."""
    with open_record_file(run_dir, name) as handle:
        yield io.TextIOWrapper(handle, encoding="utf-8", newline="\n")


def parse_line(text: str) -> Any:
    """A JSONL line's value, or None if it is not JSON (a damaged line is a difference)."""
    try:
        return json_value(text)
    except ValueError:
        return None


def json_object(path: Path, number: int, text: str | bytes, what: str) -> dict[str, Any]:
    """Line `number` of a JSONL record file as a JSON object, else a `ReplayError` saying it
    is not JSON (nested too deeply included) or not `what` (a trace entry, a model call)."""
    try:
        value = json_value(text)
    except ValueError as exc:
        raise ReplayError(
            f"{path} line {number} is not readable JSON ({exc}): the record is damaged"
        ) from None
    if not isinstance(value, dict):
        raise ReplayError(f"{path} line {number} is not {what}: the record is damaged")
    return value


def _entry(path: Path, number: int, text: str) -> TraceEntry:
    try:
        return TraceEntry.parse(text)
    except TraceEntryError as exc:
        raise ReplayError(f"{path} line {number}: {exc}: the record is damaged") from None


def _scenario(run_dir: Path, manifest: RunManifest) -> Scenario:
    try:
        scenario = manifest.scenario_model()
    except ValueError as exc:
        reason = " ".join(str(exc).split())[:200]
        raise ReplayError(
            f"{run_dir / RUN_FILE}: scenario_config is not valid ({reason})"
        ) from None
    if scenario.content_hash != manifest.scenario.hash:
        raise ReplayError(
            f"{run_dir / RUN_FILE}: scenario_config does not match the recorded scenario hash "
            f"{manifest.scenario.hash[:12]}…: the record is damaged or from other code"
        )
    return scenario


def _seed(run_dir: Path, manifest: RunManifest, given: int | None, salt: str | None) -> int:
    """The seed to replay with. A public run's is its own; a sealed run's must open its
    commitment (seed and salt given, or the record's sealed seed file) and lie in the sealed
    range, so a run of a public seed never passes as sealed (docs/sealed.md)."""
    if manifest.seed is not None:
        if manifest.seed_commitment is not None:
            raise ReplayError(f"{run_dir / RUN_FILE} states both a public seed and a sealed "
                              "commitment: the record is damaged")  # fmt: skip
        if given is not None and given != manifest.seed:
            raise ReplayError(f"--seed {given} differs from the run's seed {manifest.seed}")
        return manifest.seed
    if manifest.seed_commitment is None:
        raise ReplayError(f"{run_dir / RUN_FILE} states neither a seed nor a sealed commitment")
    if given is not None:
        return _opened(run_dir, manifest, given, salt)
    if (run_dir / SEED_FILE).is_file() and manifest.ended in FINISHED:
        try:
            secret, _ = reveal(run_dir)
        except SealedError as exc:
            raise ReplayError(str(exc)) from None
        return secret.seed
    raise ReplayError(
        f"{run_dir} is a sealed run and its seed is not here: give the revealed seed and salt "
        "(`merchantbench reveal` prints them) with --seed and --salt, or --reveal FILE"
    )


def _opened(run_dir: Path, manifest: RunManifest, seed: int, salt: str | None) -> int:
    """A given sealed seed, checked: in the sealed range, and with `salt` opening the
    commitment `run.json` records."""
    assert manifest.seed_commitment is not None
    if salt is None:
        raise ReplayError(
            f"{run_dir} is sealed: --seed needs the commitment's salt too (--salt, as "
            "`merchantbench reveal` prints it), else any seed would pass"
        )
    if not is_sealed_range(seed):
        raise ReplayError(
            f"seed {seed} is a public seed, outside the sealed range [2^64, 2^128): a run of "
            "a public seed never passes as sealed"
        )
    if not verify_commitment(seed, salt, manifest.seed_commitment.sha256):
        raise ReplayError(
            f"the given seed and salt do not open the commitment in {run_dir / RUN_FILE} "
            f"({manifest.seed_commitment.sha256[:16]}…)"
        )
    return seed


def _catalog(run_dir: Path, manifest: RunManifest) -> Path | None:
    if manifest.market.source != "catalog":
        return None
    if manifest.market.catalog is None or not Path(manifest.market.catalog).is_dir():
        raise ReplayError(
            f"{run_dir} was run on the catalog {manifest.market.catalog}, which is not here"
        )
    return Path(manifest.market.catalog)
