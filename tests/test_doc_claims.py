"""Claims the docs make that a red team found stale (hardening round 3), checked against what
the code does: `report --help` names the figures' format the report writes (SVG); a bare
async `gym.make_vec` with shared memory shows each window's text, as `make_vector_env` does
(docs/gym.md: the text spaces are `spaces.StoreText`, read live out of shared memory)."""

from __future__ import annotations

import gymnasium as gym
import pytest
from typer.testing import CliRunner

from merchantbench.cli import app
from merchantbench.gym import ENV_ID, make_vector_env
from merchantbench.report.plots import FIGURE_SUFFIX


def test_report_help_names_the_format_it_writes() -> None:
    said = " ".join(CliRunner().invoke(app, ["report", "--help"]).output.split())
    assert FIGURE_SUFFIX == ".svg"
    assert "SVG figures" in said and "PNG" not in said


@pytest.fixture
def cached(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("MERCHANTBENCH_CACHE", str(tmp_path / "cache"))


def test_a_bare_async_vector_env_shows_the_text(cached) -> None:
    bare = gym.make_vec(ENV_ID, num_envs=2, vectorization_mode="async", scenario="smoke")
    try:
        obs, _ = bare.reset(seed=[1, 2])
        assert obs["text"][0].startswith("Day 1") and "\t" * 8 not in obs["text"][0]
    finally:
        bare.close()
    ours = make_vector_env(2, scenario="smoke")
    try:
        obs, _ = ours.reset(seed=[1, 2])
        assert obs["text"][0].startswith("Day 1") and "\t" * 8 not in obs["text"][0]
    finally:
        ours.close()
