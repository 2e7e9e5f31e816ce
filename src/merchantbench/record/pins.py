"""What a run is, pinned, so that `--resume` cannot continue one run as another.

A run is its scenario (content hash), its seed (or, for a sealed run, the seed's commitment), its
agent and the agent's settings, the market's catalog, the tool schema the agent is offered and
the code. `run.json` and every checkpoint carry these facts (`RunPins`); a resume builds them
again from what it was asked to run and refuses, in one line naming the first difference, if
they differ from either.

Changed code is refused too unless the resume explicitly allows it (`--allow-code-change`):
results are only comparable when the whole run ran the same code, so continuing with other code
must be a visible, recorded decision (`RunManifest.code_changes`), never an accident.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from merchantbench.record.code_version import CodeVersion, current_code
from merchantbench.record.manifest import RunManifest
from merchantbench.scenario import Scenario

_UNSET = object()


class PinMismatch(ValueError):
    """A resume asked to continue a run as something it is not; the message names the fact."""


class RunPins(BaseModel):
    """The facts that make two attempts the same run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    scenario_hash: str
    seed: int | None
    seed_commitment: str | None = None  # sealed runs (docs/design.md §10): the salted commitment
    agent: str
    agent_settings: dict[str, Any]
    catalog: str | None
    tool_schema_sha256: str
    code: CodeVersion


def _catalog(path: str | Path | None) -> str | None:
    return None if path is None else os.path.abspath(path)


def pins_of_run(
    scenario: Scenario,
    seed: int,
    agent: str,
    agent_settings: Mapping[str, Any],
    catalog: Path | None,
    tool_schema_sha256: str,
    seed_commitment: str | None = None,
) -> RunPins:
    """The pins of the run being started or resumed now, with the code running now. A sealed
    run (`seed_commitment` given) pins the commitment, never the seed."""
    return RunPins(
        scenario_hash=scenario.content_hash,
        seed=None if seed_commitment is not None else seed,
        seed_commitment=seed_commitment,
        agent=agent,
        agent_settings=json.loads(json.dumps(dict(agent_settings))),  # as run.json holds them
        catalog=_catalog(catalog),
        tool_schema_sha256=tool_schema_sha256,
        code=current_code(agent),
    )


def pins_of_record(run: RunManifest, runtime: frozenset[str] = frozenset()) -> RunPins:
    """The pins `run.json` states, with the code the run continues with; `runtime` names
    reported settings that are not configuration (`BaseAgent.runtime_settings`)."""
    return RunPins(
        scenario_hash=run.scenario.hash,
        seed=run.seed,
        seed_commitment=None if run.seed_commitment is None else run.seed_commitment.sha256,
        agent=run.agent.name,
        agent_settings={k: v for k, v in run.agent.settings.items() if k not in runtime},
        catalog=_catalog(run.market.catalog),
        tool_schema_sha256=run.tool_schema_sha256,
        code=run.code(),
    )


def pins_of_checkpoint(saved: Any) -> RunPins:
    """The pins a checkpoint was saved with.

    Raises:
        PinMismatch: the checkpoint pins nothing, or not in this shape.
    """
    try:
        return RunPins.model_validate(saved)
    except ValidationError:
        raise PinMismatch("the checkpoint does not say which run it belongs to") from None


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    """Nested mappings as `a.b.c` keys, for naming the one setting that differs."""
    if not isinstance(value, Mapping) or (prefix and not value):
        return {prefix: value}
    flat: dict[str, Any] = {}
    for key in sorted(value):
        flat.update(_flat(value[key], f"{prefix}.{key}" if prefix else str(key)))
    return flat


def _shown(value: Any) -> str:
    text = "(unset)" if value is _UNSET else json.dumps(value, ensure_ascii=False)
    text = text.strip('"') if isinstance(value, str) else text
    return text if len(text) <= 60 else text[:57] + "..."


def first_key_difference(now: Any, then: Any) -> tuple[str, str, str] | None:
    """The first (sorted) key whose value differs between two nested mappings, with both values
    shown; None if they are equal."""
    a, b = _flat(now), _flat(then)
    for key in sorted(a.keys() | b.keys()):
        if a.get(key, _UNSET) != b.get(key, _UNSET):
            return key, _shown(a.get(key, _UNSET)), _shown(b.get(key, _UNSET))
    return None


def scenario_difference(now: Scenario, run: RunManifest) -> str | None:
    """How the scenario asked for differs from the run's, naming the parameter; None if equal."""
    if now.content_hash == run.scenario.hash:
        return None
    if now.name != run.scenario.name:
        return f"--scenario {now.name} differs from the run's scenario {run.scenario.name}"
    found = first_key_difference(now.model_dump(mode="json"), run.scenario_config)
    if found is None:
        return f"scenario hash {now.content_hash} differs from the run's {run.scenario.hash}"
    key, shown_now, shown_then = found
    return f"scenario {key}={shown_now} differs from the run's {key}={shown_then}"


def _identity_difference(
    seed: int | None, agent: str, catalog: str | None, then: RunPins, whose: str
) -> str | None:
    if seed != then.seed:
        return f"--seed {seed} differs from {whose} seed {then.seed}"
    if agent != then.agent:
        return f"--agent {agent} differs from {whose} agent {then.agent}"
    if catalog != then.catalog:
        shown = then.catalog or "synthetic market"
        return f"--catalog {catalog or '(none)'} differs from {whose} {shown}"
    return None


def request_difference(
    scenario: Scenario,
    seed: int | None,
    agent: str,
    catalog: Path | None,
    run: RunManifest,
    seed_commitment: str | None = None,
) -> str | None:
    """The part of `check_resume` that needs no market: the scenario (naming the parameter),
    the seed (a sealed run's commitment), the agent and the catalog asked for, against
    `run.json`. None if they match."""
    then = pins_of_record(run)
    if seed_commitment != then.seed_commitment:
        return "the sealed seed's commitment differs from the run's"
    reason = scenario_difference(scenario, run)
    return reason or _identity_difference(
        None if seed_commitment is not None else seed, agent, _catalog(catalog), then, "the run's"
    )


def _field_difference(now: RunPins, then: RunPins, whose: str) -> str | None:
    """The first pinned fact, code aside, that differs; `whose` names `then` in the message."""
    if now.scenario_hash != then.scenario_hash:
        return f"scenario hash {now.scenario_hash} differs from {whose} {then.scenario_hash}"
    if now.seed_commitment != then.seed_commitment:
        return f"the sealed seed's commitment differs from {whose}"
    reason = _identity_difference(now.seed, now.agent, now.catalog, then, whose)
    if reason is not None:
        return reason
    if (found := first_key_difference(now.agent_settings, then.agent_settings)) is not None:
        key, shown_now, shown_then = found
        return f"agent setting {key}={shown_now} differs from {whose} {key}={shown_then}"
    if now.tool_schema_sha256 != then.tool_schema_sha256:
        return (
            f"the tool schema ({now.tool_schema_sha256[:12]}) differs from {whose} "
            f"({then.tool_schema_sha256[:12]})"
        )
    return None


def check_resume(
    now: RunPins, record: RunPins, checkpoint: RunPins | None, allow_code_change: bool
) -> CodeVersion | None:
    """Refuse a resume that would continue another run.

    Args:
        now: The pins of what the resume was asked to run.
        record: The pins `run.json` states.
        checkpoint: The pins of the checkpoint resumed from, None when there is none yet.
        allow_code_change: Continue even if the code differs (the caller records it).

    Returns:
        The code that wrote the state being continued, when it differs from the code now (and
        that was allowed); None when the code is the same.

    Raises:
        PinMismatch: A pinned fact differs; the message names the first one.
    """
    for then, whose in ((record, "the run's"), (checkpoint, "the checkpoint's")):
        if then is not None and (reason := _field_difference(now, then, whose)) is not None:
            raise PinMismatch(reason)
    before = checkpoint.code if checkpoint is not None else record.code
    if now.code == before:
        before = record.code  # the checkpoint's code matches; run.json must say so too
    if now.code == before:
        return None
    if not allow_code_change:
        raise PinMismatch(
            f"the code ({now.code.short()}) differs from the code that wrote the run "
            f"({before.short()}); pass --allow-code-change to continue with it (recorded in "
            "run.json)"
        )
    return before
