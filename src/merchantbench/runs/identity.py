"""What makes two runs the same run: the full configuration and the code version.

A finished record is reused (by a sweep or by calibration) only when its identity matches the one
about to be run. The identity hashes the agent's name and validated settings (with the content of
the models-file entry an LLM agent names, so an edited entry is a new run), the scenario's content
hash, the seed, the catalog, and the code version: the package version *and* a hash of the
package's source files (and of an outside agent's own code), so a changed agent under an
unchanged version number is never confused with an old record.

The identity is kept beside the run directory, in `<run_dir>.identity.json`, so the run directory
itself stays an ordinary run record.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import merchantbench
from merchantbench.agents.registry import check_settings
from merchantbench.record.agent_code import agent_source_sha256
from merchantbench.record.code_version import source_sha256
from merchantbench.record.files import atomic_write_json
from merchantbench.scenario import Scenario


def code_version() -> dict[str, str]:
    """The package version and the hash of its source (one definition: record/code_version.py)."""
    return {"package_version": merchantbench.__version__, "source_sha256": source_sha256()}


def _model_entry(settings: dict[str, Any]) -> dict[str, Any] | None:
    """The models-file entry an LLM agent's settings name, as the file holds it now."""
    path, entry = settings.get("models_file"), settings.get("model_entry")
    if not path or not entry:
        return None
    from merchantbench.agents.llm.models import load_models_file

    found = load_models_file(path).get(str(entry))
    return dict(found) if found is not None else None


def run_identity(
    agent: str,
    settings: dict[str, Any],
    scenario: Scenario,
    seed: int,
    catalog: str | None = None,
) -> dict[str, Any]:
    """The identity of a run: everything that decides what it does, and the code version.

    Raises:
        AgentConfigError: The settings are not valid for the agent.
    """
    checked = json.loads(json.dumps(check_settings(agent, settings).model_dump(mode="json")))
    entry = _model_entry(checked)
    if entry is not None:
        checked.pop("models_file")  # the entry's content counts, not where the file lies
    identity = {
        "agent": agent,
        "settings": checked,
        "model_entry": entry,
        "scenario_hash": scenario.content_hash,
        "seed": seed,
        "catalog": catalog,
        **code_version(),
    }
    own = agent_source_sha256(agent)  # an agent of your own: its code (built-ins: None)
    return identity if own is None else {**identity, "agent_source_sha256": own}


def identity_key(identity: dict[str, Any]) -> str:
    """A short stable hash of an identity."""
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def identity_path(run_dir: Path) -> Path:
    """Where the identity of `run_dir` is kept (beside it)."""
    return run_dir.with_name(run_dir.name + ".identity.json")


def write_identity(run_dir: Path, identity: dict[str, Any]) -> None:
    """Record the identity of the run about to go into `run_dir`."""
    atomic_write_json(identity_path(run_dir), {"key": identity_key(identity), **identity})


def same_identity(run_dir: Path, identity: dict[str, Any]) -> bool:
    """Whether the run in `run_dir` was made with exactly this identity."""
    try:
        stored = json.loads(identity_path(run_dir).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(stored, dict) and stored.get("key") == identity_key(identity)
