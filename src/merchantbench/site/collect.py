"""The runs a site is made of: run directories found under the paths given (a run, a sweep, a
folder of sweeps), each read once into a `SiteRun` (never written).

A run directory is any directory with a `run.json` (`web.records.find_runs`). A record that
cannot be read is kept as a `Skipped` entry with its reason, so the site says what it left out.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from merchantbench.record.files import json_value
from merchantbench.record.manifest import ManifestError, RunManifest, read_manifest
from merchantbench.record.safe_read import read_record_bytes
from merchantbench.record.schema import METRICS_FILE
from merchantbench.web.records import find_runs
from merchantbench.web.windows import damaged_trace

# Agent settings that say where or how a model was reached, not what was run: left out of the
# configuration a run is ranked under (a scripted server's port differs from run to run).
TRANSPORT_SETTINGS = frozenset({"base_url", "api_key_env", "request_timeout", "max_retries",
                                "retry_base_seconds", "retry_cap_seconds"})  # fmt: skip
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class SiteInputError(ValueError):
    """A path given to the site is not a run, a sweep or a folder holding runs (one line)."""


@dataclass(frozen=True)
class SiteRun:
    """One finished or unfinished run as the site shows it.

    Attributes:
        slug: The run's folder name in the site (unique, safe in a URL).
        path: The run directory on disk.
        label: Where it came from, for people: `INPUT/relative/path`.
        manifest: Its `run.json`.
        metrics: Its `metrics.json` ({} while unfinished or if unreadable).
    """

    slug: str
    path: Path
    label: str
    manifest: RunManifest
    metrics: dict[str, Any] = field(default_factory=dict)

    @property
    def finished(self) -> bool:
        return self.manifest.ended == "completed" and bool(self.metrics)

    @property
    def sealed(self) -> bool:
        return self.manifest.seed_commitment is not None

    @property
    def seed_text(self) -> str:
        """The seed, or the first digits of a sealed run's commitment (never its seed)."""
        commitment = self.manifest.seed_commitment
        if commitment is not None:
            return f"sealed {commitment.sha256[:12]}"
        return str(self.manifest.seed)

    @property
    def days(self) -> int | None:
        clock = self.manifest.scenario_config.get("clock") or {}
        days = clock.get("days") if isinstance(clock, dict) else None
        return days if isinstance(days, int) else None

    @property
    def model(self) -> str | None:
        settings = self.manifest.agent.settings
        model = settings.get("model_entry") or settings.get("model")
        return str(model) if model else None

    @property
    def config_digest(self) -> str:
        """A short hash of the agent's name and settings (transport settings left out)."""
        settings = {
            k: v for k, v in self.manifest.agent.settings.items() if k not in TRANSPORT_SETTINGS
        }
        text = json.dumps([self.manifest.agent.name, settings], sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:10]

    @property
    def cost(self) -> float | None:
        """Model spend of the run: 0.0 without a model, None when unknown (a price missing)."""
        usage = self.manifest.llm_usage
        if usage is None:
            return 0.0
        cost = usage.get("cost")
        if usage.get("cost_known") is False or not isinstance(cost, int | float):
            return None
        return float(cost)

    @property
    def uses_model(self) -> bool:
        return self.manifest.llm_usage is not None


@dataclass(frozen=True)
class Skipped:
    """A run directory the site could not read, and why."""

    label: str
    reason: str


def _read_metrics(run_dir: Path) -> dict[str, Any]:
    try:
        value = json_value(read_record_bytes(run_dir, METRICS_FILE).decode("utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _slug(label: str, taken: set[str]) -> str:
    base = _UNSAFE.sub("-", label).strip("-.")[:80] or "run"
    slug, n = base, 1
    while slug in taken:
        n += 1
        slug = f"{base}-{n}"
    taken.add(slug)
    return slug


def collect_runs(inputs: list[Path]) -> tuple[list[SiteRun], list[Skipped]]:
    """Every run directory under `inputs`, read.

    Raises:
        SiteInputError: A path does not exist, or holds no run directory at all.
    """
    runs: list[SiteRun] = []
    skipped: list[Skipped] = []
    taken: set[str] = set()
    seen: set[Path] = set()
    for given in inputs:
        if not given.is_dir():
            raise SiteInputError(f"{given}: no such directory")
        found = find_runs(given)
        if not found:
            raise SiteInputError(f"{given}: no run directory (with a run.json) in it")
        for run_dir in found:
            resolved = run_dir.resolve()
            if resolved in seen:
                continue  # given twice (a sweep and a run inside it)
            seen.add(resolved)
            rel = run_dir.relative_to(given).as_posix()
            label = given.name if rel == "." else f"{given.name}/{rel}"
            try:
                manifest = read_manifest(run_dir)
            except ManifestError as exc:
                skipped.append(Skipped(label, str(exc).split(": ", 1)[-1]))
                continue
            damaged = damaged_trace(run_dir)
            if damaged is not None:
                skipped.append(Skipped(label, damaged))
                continue
            runs.append(SiteRun(_slug(label, taken), run_dir, label, manifest,
                                _read_metrics(run_dir)))  # fmt: skip
    return runs, skipped
