"""Sealed markets (docs/design.md §10 for §11): `merchantbench arena --sealed` keeps the seed in
each merchant's `sealed/` only (arena.json and every run.json record the commitment), a killed
sealed arena resumes with its secret, and `merchantbench reveal` works on each merchant's record.
The served sealed market: tests/serve/test_market.py."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from merchantbench.cli import app
from merchantbench.record.arena import read_arena
from merchantbench.record.manifest import read_manifest
from merchantbench.record.sealed import SEED_FILE, read_sealed
from merchantbench.seeds import commitment, is_sealed_range

AGENTS = ["rule-based", "random"]
MERCHANTS = ["rule-based", "random"]


@pytest.fixture(scope="module", autouse=True)
def private_cache(tmp_path_factory):
    cache = tmp_path_factory.mktemp("market-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MERCHANTBENCH_CACHE", str(cache))
        yield cache


def forms(seed: int) -> list[str]:
    return [str(seed), f"{seed:x}", str(seed & ((1 << 64) - 1)), str(seed >> 64)]


def _holds_the_seed_only_in_sealed(root: Path, seed: int, printed: str) -> None:
    assert not any(f in printed for f in forms(seed))
    binary = [seed.to_bytes(16, order) for order in ("big", "little")]
    for path in root.rglob("*"):
        if not path.is_file() or path.name == Path(SEED_FILE).name:
            continue
        blob = path.read_bytes()
        text = blob.decode("latin-1").lower()
        assert not any(f.lower() in text for f in forms(seed)), path
        assert not any(b in blob for b in binary), path


def _sealed_record(arena: Path) -> int:
    manifest = read_arena(arena)
    assert manifest.seed is None and manifest.seed_commitment is not None
    assert manifest.pins["seed"] is None
    seeds = set()
    for merchant in manifest.merchants:
        run_dir = manifest.merchant_dir(arena, merchant.id)
        meta = read_manifest(run_dir)
        assert meta.seed is None and meta.seed_commitment == manifest.seed_commitment
        secret = read_sealed(run_dir)
        assert commitment(secret.seed, secret.salt) == manifest.seed_commitment.sha256
        assert json.loads((run_dir / "metrics.json").read_text())["seed"] is None
        seeds.add(secret.seed)
    (seed,) = seeds
    assert is_sealed_range(seed)
    return seed


def test_a_sealed_arena_hides_its_seed_and_reveals_per_merchant(tmp_path):
    out = tmp_path / "arena"
    args = ["arena", "--no-progress", "-s", "smoke", "--days", "3", "--sealed", "--out", str(out)]
    for agent in AGENTS:
        args += ["--agent", agent]
    result = CliRunner().invoke(app, [*args, "--report"])
    assert result.exit_code == 0, result.output
    assert '"seed": "sealed"' in result.output
    seed = _sealed_record(out)
    _holds_the_seed_only_in_sealed(out, seed, result.output)
    assert "seed sealed" in (out / "report.md").read_text()
    revealed = CliRunner().invoke(app, ["reveal", str(out / "merchants" / "random"), "--json"])
    assert revealed.exit_code == 0, revealed.output
    assert json.loads(revealed.output)["seed"] == str(seed)
    verified = CliRunner().invoke(app, ["verify", str(out / "merchants" / "rule-based")])
    assert verified.exit_code == 0, verified.output  # the whole market, with its secret
    assert verified.output.count("verified (") == 2
    metrics = out / "merchants" / "random" / "metrics.json"
    figures = json.loads(metrics.read_text())
    metrics.write_text(json.dumps({**figures, "orders": figures["orders"] + 1}))
    tampered = CliRunner().invoke(app, ["verify", str(out)])
    assert tampered.exit_code == 1 and "metrics.json" in tampered.output
    again = CliRunner().invoke(app, [*args, "--resume"])
    assert again.exit_code != 0 and "already finished" in again.output
    both = CliRunner().invoke(app, [*args[:-2], "--seeds", "1-2", "--out", str(tmp_path / "x")])
    assert both.exit_code != 0 and "--sealed plays one market" in both.output


def test_a_killed_sealed_arena_resumes_with_its_secret(tmp_path):
    from merchantbench.record.sealed import SealedSeed
    from merchantbench.runs.arena import ArenaSpec, Entrant, run_arena, sealed_of
    from merchantbench.runs.lifecycle import RunLifecycle
    from merchantbench.scenario import load_scenario

    scenario = load_scenario("smoke", overrides=["clock.days=3"])
    secret = SealedSeed.draw()
    entrants = tuple(Entrant(m, a) for m, a in zip(MERCHANTS, AGENTS, strict=True))
    spec = ArenaSpec(scenario, secret.seed, entrants, None, secret)
    whole = run_arena(spec, tmp_path / "whole")
    life = RunLifecycle.open_market(spec, tmp_path / "cut")
    for _ in range(2):  # two windows played, checkpointed, then the arena stops
        asyncio.run(life.play_window())
    life.checkpoint()
    life.fail(KeyboardInterrupt())
    found = sealed_of(tmp_path / "cut")
    assert found is not None and found.seed == secret.seed
    resumed = ArenaSpec(scenario, found.seed, entrants, None, found)
    assert run_arena(resumed, tmp_path / "cut", resume=True) == whole
    assert read_arena(tmp_path / "cut").state_hash == read_arena(tmp_path / "whole").state_hash
