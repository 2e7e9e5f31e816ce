"""A small sweep for the tests: 2 baselines and 2 scripted models × react/hermes × 2 seeds on
`smoke`, against one scripted server (each model entry a different model id and price)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from merchantbench.agents.llm.scripted_policy import store_policy
from merchantbench.agents.llm.scripted_server import ScriptedServer

DAYS = 8  # 16 windows: a checkpoint after window 10, so a killed run resumes from one
TIMING = ("wall_seconds", "date")  # wall time; the provenance's dates


def sweep_text(base_url: str) -> str:
    return f"""
name: e2e
models_file: models.toml
scenarios: [{{name: smoke, set: ["clock.days={DAYS}"]}}]
seeds: [1, 2]
agents: [rule-based, {{agent: expert, label: expert}}]
models: [alpha, beta]
harnesses: [react, hermes]
max_concurrency: 6
"""


def models_text(base_url: str) -> str:
    return f"""
[alpha]
base_url = "{base_url}"
model = "scripted-alpha"
price_input = 1.0
price_output = 4.0
max_concurrency = 2

[beta]
base_url = "{base_url}"
model = "scripted-beta"
price_input = 0.5
price_cached_input = 0.05
price_output = 2.0
"""


@pytest.fixture(scope="session")
def server():
    with ScriptedServer(store_policy) as served:
        yield served


@pytest.fixture
def sweep_file(tmp_path: Path, server: ScriptedServer) -> Path:
    (tmp_path / "models.toml").write_text(models_text(server.base_url))
    path = tmp_path / "sweep.yaml"
    path.write_text(sweep_text(server.base_url))
    return path


def strip_timing(value):
    """A report or index without wall-clock figures (they differ between two equal sweeps)."""
    if isinstance(value, dict):
        return {k: strip_timing(v) for k, v in value.items() if not any(t in k for t in TIMING)}
    if isinstance(value, list):
        return [strip_timing(v) for v in value]
    return value


def comparable_rows(rows: list[dict]) -> list[dict]:
    return sorted((strip_timing(row) for row in rows), key=lambda r: (r["label"], r["seed"]))


def report_numbers(sweep_dir: Path) -> dict:
    return strip_timing(json.loads((sweep_dir / "report" / "report.json").read_text()))


# A folder of sweeps that no table may pool: two horizons of `smoke` (2 and 3 days), a second
# scenario (`other`, 2 days: the same market as smoke's 2 days but another scenario), and an
# identical copy of the first sweep (its runs count once).
SHORT_SWEEP = """
name: short
scenarios: [{name: smoke, set: ["clock.days=2"]}]
seeds: [1, 2]
agents: [idle, rule-based]
"""
LONGER_SWEEP = """
name: longer
scenarios: [{name: smoke, set: ["clock.days=3"]}, {file: other.yaml, label: other}]
seeds: [1, 2]
agents: [idle, rule-based]
"""
OTHER_SCENARIO = "base: smoke\nname: other\nclock: {days: 2}\n"
FOLDER_SETTINGS = ("smoke · 2 days", "smoke · 3 days", "other · 2 days")


def sweep_folder(base: Path) -> Path:
    """`base/sweeps/{short,longer,short-copy}`: three settings, one duplicated sweep."""
    import shutil

    from merchantbench.sweeps.driver import run_sweep
    from merchantbench.sweeps.execute import LocalExecutor
    from merchantbench.sweeps.spec import load_sweep_file

    (base / "short.yaml").write_text(SHORT_SWEEP)
    (base / "longer.yaml").write_text(LONGER_SWEEP)
    (base / "other.yaml").write_text(OTHER_SCENARIO)
    folder = base / "sweeps"
    for name in ("short", "longer"):
        spec = load_sweep_file(base / f"{name}.yaml")
        outcome = run_sweep(spec, base, folder / name, LocalExecutor(1))
        assert not outcome.failed and not outcome.not_started
    shutil.copytree(folder / "short", folder / "short-copy")
    return folder
