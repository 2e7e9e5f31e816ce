"""Sealed runs end to end: `run --sealed`, the commitment, `reveal`, resume, replay
(docs/design.md §10)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from merchantbench.check import run_check
from merchantbench.cli import app
from merchantbench.record.manifest import read_manifest
from merchantbench.record.sealed import SEED_FILE, SealedError, read_sealed, reveal
from merchantbench.runs.lifecycle import RunLifecycle
from merchantbench.runs.runner import RunSpec
from merchantbench.scenario import load_scenario
from merchantbench.seeds import commitment, draw_sealed_seed, is_sealed_range

AGENT = "expert"  # deterministic and active on smoke: orders, listings, money moving


@pytest.fixture(scope="module", autouse=True)
def private_cache(tmp_path_factory):
    cache = tmp_path_factory.mktemp("market-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MERCHANTBENCH_CACHE", str(cache))
        yield cache


def cli(*args: str):
    return CliRunner().invoke(app, list(args))


def forms(seed: int) -> list[str]:
    """Every way a sealed seed could be written down."""
    return [str(seed), f"{seed:x}", f"{seed:X}", str(seed & ((1 << 64) - 1)), str(seed >> 64)]


@pytest.fixture(scope="module")
def sealed_dir(tmp_path_factory, private_cache):
    """A finished sealed run of the expert on smoke, and what the CLI printed."""
    out = tmp_path_factory.mktemp("sealed") / "run"
    result = CliRunner().invoke(
        app,
        ["run", "--no-progress", "--agent", AGENT, "-s", "smoke", "--sealed", "--out", str(out)],
    )
    assert result.exit_code == 0, result.output
    return out, result.output


def test_a_sealed_run_records_a_commitment_and_keeps_the_seed_private(sealed_dir):
    out, _ = sealed_dir
    meta = read_manifest(out)
    assert meta.ended == "completed" and meta.seed is None and meta.sealed
    assert len(meta.seed_commitment.sha256) == 64
    secret = read_sealed(out)
    assert is_sealed_range(secret.seed) and secret.seed.bit_length() > 64
    assert commitment(secret.seed, secret.salt) == meta.seed_commitment.sha256
    assert (out / SEED_FILE).stat().st_mode & 0o777 == 0o600
    assert (out / SEED_FILE).parent.stat().st_mode & 0o777 == 0o700
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["seed"] is None and metrics["orders"] > 0


def test_nothing_but_the_sealed_file_holds_the_seed(sealed_dir, private_cache):
    out, printed = sealed_dir
    seed = read_sealed(out).seed
    assert not any(f in printed for f in forms(seed))
    for path in out.rglob("*"):
        if path.is_file() and path != out / SEED_FILE:
            blob = path.read_bytes()
            text = blob.decode("latin-1").lower()
            assert not any(f.lower() in text for f in forms(seed)), path
            binary = [seed.to_bytes(16, order) for order in ("big", "little")]
            assert not any(b in blob for b in binary), path  # e.g. a pickled int
    names = [p.name for p in private_cache.iterdir()] + [out.name]
    assert not any(f in name for f in forms(seed) for name in names)


def test_reveal_prints_a_verified_seed_and_a_replay_that_gives_the_same_run(sealed_dir, tmp_path):
    out, _ = sealed_dir
    result = cli("reveal", str(out), "--json")
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)
    secret = read_sealed(out)
    assert shown["seed"] == str(secret.seed) and shown["salt"] == secret.salt
    assert shown["verified"] and shown["commitment"] == read_manifest(out).seed_commitment.sha256
    assert f"--scenario smoke --seed {secret.seed}" in shown["replay"]
    again = tmp_path / "replay"
    result = cli("run", "--no-progress", "--agent", AGENT, "-s", "smoke", "--seed",
                 shown["seed"], "--out", str(again))  # fmt: skip
    assert result.exit_code == 0, result.output
    sealed_meta, public_meta = read_manifest(out), read_manifest(again)
    assert public_meta.seed == secret.seed and public_meta.state_hash == sealed_meta.state_hash
    assert public_meta.final_accounts == sealed_meta.final_accounts
    one, two = (json.loads((d / "metrics.json").read_text()) for d in (out, again))
    assert {k: v for k, v in one.items() if k != "seed"} == {
        k: v for k, v in two.items() if k != "seed"
    }
    assert (out / "trace.jsonl").read_bytes() == (again / "trace.jsonl").read_bytes()


def test_reveal_replay_reruns_and_compares(sealed_dir, tmp_path):
    out, _ = sealed_dir
    result = cli("reveal", str(out), "--replay", str(tmp_path / "again"))
    assert result.exit_code == 0, result.output
    assert "same state hash and final net assets" in result.output


def open_unfinished_sealed_run(run_dir: Path) -> RunSpec:
    spec = RunSpec.sealed_run(AGENT, load_scenario("smoke"))
    RunLifecycle.open(spec, run_dir)
    return spec


def test_reveal_refuses_an_unfinished_run_unless_forced(tmp_path):
    spec = open_unfinished_sealed_run(tmp_path / "run")
    result = cli("reveal", str(tmp_path / "run"))
    assert result.exit_code == 2 and "has not finished" in result.output
    assert str(spec.seed) not in result.output
    with pytest.raises(SealedError):
        reveal(tmp_path / "run")
    forced = cli("reveal", str(tmp_path / "run"), "--force")
    assert forced.exit_code == 0 and f"seed: {spec.seed}" in forced.output


def test_a_resumed_sealed_run_reads_its_seed_back_and_ends_as_a_replay(tmp_path):
    spec = open_unfinished_sealed_run(tmp_path / "run")
    other = cli("run", "--no-progress", "--agent", AGENT, "-s", "smoke", "--resume", "--seed",
                "5", "--out", str(tmp_path / "run"))  # fmt: skip
    assert other.exit_code == 2 and "without --seed" in other.output
    resumed = cli("run", "--no-progress", "--agent", AGENT, "-s", "smoke", "--resume",
                  "--out", str(tmp_path / "run"))  # fmt: skip
    assert resumed.exit_code == 0, resumed.output
    replay = cli("run", "--no-progress", "--agent", AGENT, "-s", "smoke", "--seed",
                 str(spec.seed), "--out", str(tmp_path / "replay"))  # fmt: skip
    assert replay.exit_code == 0, replay.output
    first, second = read_manifest(tmp_path / "run"), read_manifest(tmp_path / "replay")
    assert first.sealed and first.state_hash == second.state_hash


def test_a_tampered_secret_or_commitment_fails_the_reveal(tmp_path):
    spec = open_unfinished_sealed_run(tmp_path / "run")
    path = tmp_path / "run" / SEED_FILE
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "seed": str(spec.seed + 1)}))
    result = cli("reveal", str(tmp_path / "run"), "--force")
    assert result.exit_code == 2 and "does not match the commitment" in result.output
    path.unlink()
    result = cli("reveal", str(tmp_path / "run"), "--force")
    assert result.exit_code == 2 and "cannot be read" in result.output


def test_bad_combinations_are_one_line_errors(tmp_path, sealed_dir):
    both = cli("run", "--agent", "idle", "--sealed", "--seed", "3", "--out", str(tmp_path / "a"))
    assert both.exit_code == 2 and "not both" in both.output and not (tmp_path / "a").exists()
    huge = cli("run", "--agent", "idle", "-s", "smoke", "--seed", str(1 << 128))
    assert huge.exit_code == 2 and "2^128" in huge.output
    public = tmp_path / "public"
    assert cli("run", "--no-progress", "--agent", "idle", "-s", "smoke", "--days", "1",
               "--out", str(public)).exit_code == 0  # fmt: skip
    refused = cli("reveal", str(public))
    assert refused.exit_code == 2 and "not a sealed run" in refused.output


def test_the_conformance_check_finds_no_sealed_seed_in_any_output():
    seed = draw_sealed_seed()
    report = run_check("smoke", seed=seed, adapter="python")
    assert report.ok, report.failures
    hidden = next(c for c in report.checks if c.name == "hidden")
    assert "nor the seed sealed" in hidden.detail and str(seed) not in hidden.detail
