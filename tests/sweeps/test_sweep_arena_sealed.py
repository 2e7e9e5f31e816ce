"""Sealed arenas as cells of a sweep (`seeds: {sealed: N}` with `arenas:`): each market draws
its own secret when it first starts, keeps it in its merchants' `sealed/` folders only, resumes
after a real kill on the same secret to the same bytes, is revealed per merchant, and appears in
the index, the report and the dashboard with no seed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from starlette.testclient import TestClient
from typer.testing import CliRunner

from merchantbench.cli import app
from merchantbench.record.arena import read_arena
from merchantbench.record.manifest import read_manifest
from merchantbench.record.sealed import SEALED_DIR, SEED_FILE, SealedSeed, read_sealed
from merchantbench.runs.arena import ArenaSpec, Entrant, run_arena
from merchantbench.runs.kill_points import KILL_ENV
from merchantbench.scenario import load_scenario
from merchantbench.seeds import commitment, is_sealed_range
from merchantbench.sweeps.driver import run_sweep
from merchantbench.sweeps.execute import LocalExecutor
from merchantbench.sweeps.index import read_index
from merchantbench.sweeps.plan import plan_sweep
from merchantbench.sweeps.report import write_sweep_report
from merchantbench.sweeps.spec import parse_sweep_text
from merchantbench.web.app import create_web_app

SET = ["clock.days=3", "market.seller_substitution=4"]
SWEEP = f"""
name: sealed-market
scenarios: [{{name: smoke, set: {json.dumps(SET)}}}]
seeds: {{sealed: 2}}
arenas: [{{label: duel, agents: [rule-based, random]}}]
"""
MERCHANTS = ("rule-based", "random")
SLOTS = ("sealed1", "sealed2")
RECORD_FILES = (
    "metrics.json", "trace.jsonl", "transcript.jsonl", "orders.parquet", "daily.parquet",
    "listings.parquet", "timeseries.parquet",
)  # fmt: skip


@pytest.fixture(scope="module", autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory):
    cache = tmp_path_factory.mktemp("market-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MERCHANTBENCH_CACHE", str(cache))
        yield cache


def _secret(arena: Path) -> SealedSeed:
    """The market's secret: the same in every merchant's `sealed/`, matching every commitment."""
    manifest = read_arena(arena)
    assert manifest.seed is None and manifest.seed_commitment is not None
    assert manifest.pins["seed"] is None
    secrets = set()
    for merchant in MERCHANTS:
        run_dir = arena / "merchants" / merchant
        meta = read_manifest(run_dir)
        assert meta.seed is None and meta.seed_commitment == manifest.seed_commitment
        secret = read_sealed(run_dir)
        assert commitment(secret.seed, secret.salt) == manifest.seed_commitment.sha256
        secrets.add((secret.seed, secret.salt))
    [(seed, salt)] = secrets
    assert is_sealed_range(seed)
    return SealedSeed(seed, salt)


def _forms(seed: int) -> list[str]:
    return [str(seed), f"{seed:x}", str(seed & ((1 << 64) - 1)), str(seed >> 64)]


def _no_seed_outside_sealed(root: Path, seeds: list[int]) -> int:
    """No file under `root` but a `sealed/seed` holds any seed (decimal, hex, halves, bytes);
    returns the number of files read."""
    read = 0
    for path in root.rglob("*"):
        if not path.is_file() or path.parent.name == SEALED_DIR:
            continue
        blob = path.read_bytes()
        text = blob.decode("latin-1").lower()
        for seed in seeds:
            assert not any(f.lower() in text for f in _forms(seed)), path
            assert not any(seed.to_bytes(16, o) in blob for o in ("big", "little")), path
        read += 1
    return read


def _same_arena(one: Path, other: Path) -> None:
    assert read_arena(one).state_hash == read_arena(other).state_hash
    for merchant in MERCHANTS:
        for name in RECORD_FILES:
            a = (one / "merchants" / merchant / name).read_bytes()
            assert a == (other / "merchants" / merchant / name).read_bytes(), (merchant, name)


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("sealed-arena-sweep")
    outcome = run_sweep(parse_sweep_text(SWEEP, ".yaml"), base, base / "out", LocalExecutor())
    assert sorted(outcome.finished) == [f"duel/{slot}" for slot in SLOTS], outcome.failed
    return base / "out"


def test_sealed_arena_slots_are_planned() -> None:
    runs = plan_sweep(parse_sweep_text(SWEEP, ".yaml"), Path("."))
    assert [r.name for r in runs] == [f"duel/{slot}" for slot in SLOTS]
    assert all(r.is_arena and r.sealed for r in runs)
    public_sweep = parse_sweep_text(SWEEP.replace("{sealed: 2}", "[1, 2]"), ".yaml")
    public = plan_sweep(public_sweep, Path("."))
    assert {r.key for r in runs}.isdisjoint(r.key for r in public)  # sealed is in the identity


def test_each_sealed_market_has_its_own_secret_and_none_leaks(swept: Path) -> None:
    secrets = [_secret(swept / "runs" / "duel" / slot) for slot in SLOTS]
    assert secrets[0].seed != secrets[1].seed
    for slot, secret in zip(SLOTS, secrets, strict=True):  # the market of `arena --sealed`
        rows = [r for r in read_index(swept) if r["run_dir"] == f"runs/duel/{slot}"]
        assert [r["merchant"] for r in rows] == list(MERCHANTS)
        assert {(r["seed"], r["sealed"], r["status"]) for r in rows} == {(None, True, "done")}
        assert {r["seed_commitment"] for r in rows} == {secret.commitment.sha256}
    write_sweep_report(swept)
    report = (swept / "report" / "report.md").read_text()
    assert "## Arena duel" in report and "2 sealed markets" in report
    for slot in SLOTS:
        assert f"- sealed market {slot} (`runs/duel/{slot}`): ranking" in report
    data = json.loads((swept / "report" / "report.json").read_text())
    [group] = data["arenas"]
    assert group["markets"]["seeds"] == [None, None]
    assert [p["seeds"] for p in group["markets"]["paired"]] == [2]  # merchants of one market
    assert [row["label"] for row in group["table1"]] == [f"{m} (sealed)" for m in MERCHANTS]
    pages = []
    with TestClient(create_web_app(runs_root=swept)) as client:
        merchant = f"runs/duel/{SLOTS[0]}/merchants/random"
        for url in ("/", "/runs/progress", f"/runs/view?path={merchant}",
                    f"/runs/trace?path={merchant}&window=0"):  # fmt: skip
            answer = client.get(url)
            assert answer.status_code == 200, (url, answer.text[:300])
            pages.append(answer.text)
    assert "random" in pages[0]
    for page in pages:
        assert not any(f in page.lower() for s in secrets for f in _forms(s.seed))
    assert _no_seed_outside_sealed(swept, [s.seed for s in secrets]) > 30


def test_reveal_works_on_a_merchant_of_a_sealed_arena_cell(swept: Path) -> None:
    arena = swept / "runs" / "duel" / SLOTS[1]
    secret = _secret(arena)
    for merchant in MERCHANTS:
        merchant_dir = arena / "merchants" / merchant
        revealed = CliRunner().invoke(app, ["reveal", str(merchant_dir), "--json"])
        assert revealed.exit_code == 0, revealed.output
        assert json.loads(revealed.output)["seed"] == str(secret.seed)


KILLER = """
import sys
from pathlib import Path
from merchantbench.sweeps.execute import SweepOutcome, prepare
from merchantbench.sweeps.plan import plan_sweep
from merchantbench.sweeps.spec import parse_sweep_text
from merchantbench.sweeps.worker import execute_run

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
runs = plan_sweep(parse_sweep_text(sys.argv[2], ".yaml"), out)
todo = prepare(runs[:1], out, False, SweepOutcome())
execute_run(todo[0].run, str(out), todo[0].resume)
"""


@pytest.mark.parametrize("point", ["trace:40", "finish"])
def test_a_killed_sealed_arena_cell_resumes_on_its_secret(tmp_path: Path, point: str) -> None:
    out = tmp_path / "out"
    env = {**os.environ, KILL_ENV: point}
    proc = subprocess.run([sys.executable, "-c", KILLER, str(out), SWEEP], env=env,
                          capture_output=True, timeout=600)  # fmt: skip
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]
    arena = out / "runs" / "duel" / SLOTS[0]
    assert read_arena(arena).ended is None  # killed mid-way
    before = _secret(arena)
    committed = (arena / "arena.json").read_text()
    outcome = run_sweep(parse_sweep_text(SWEEP, ".yaml"), tmp_path, out, LocalExecutor())
    assert sorted(outcome.finished) == [f"duel/{slot}" for slot in SLOTS], outcome.failed
    after = _secret(arena)
    assert (after.seed, after.salt) == (before.seed, before.salt)  # read back, never redrawn
    assert read_arena(arena).seed_commitment == before.commitment
    assert (
        json.loads(committed)["seed_commitment"]
        == json.loads((arena / "arena.json").read_text())["seed_commitment"]
    )
    for merchant in MERCHANTS:
        assert (arena / "merchants" / merchant / SEED_FILE).stat().st_mode & 0o077 == 0
    entrants = tuple(Entrant(m, m) for m in MERCHANTS)
    scenario = load_scenario("smoke", overrides=SET)
    whole = tmp_path / "whole"
    run_arena(ArenaSpec(scenario, 0, entrants).with_secret(before), whole)
    _same_arena(arena, whole)
    _no_seed_outside_sealed(out, [before.seed, _secret(out / "runs" / "duel" / SLOTS[1]).seed])
