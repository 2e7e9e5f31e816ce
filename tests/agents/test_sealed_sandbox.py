"""Code in the `execute_code` sandbox cannot recover a sealed seed from what it sees
(docs/design.md §10).

The attack of issue 9: product ids were the first draws of the seed's "ids" stream, and seeds
were small, so ten lines of numpy brute-force the seed from 50 visible ids. It still works on a
public seed, whose market anyone may rebuild (reproduced here, inside the sandbox); on a sealed
seed it finds nothing, because sealed ids are keyed hashes of a 128-bit seed. Nor can a snippet
read the sealed seed file or any host path of the run.
"""

from __future__ import annotations

import asyncio
import os
import secrets

import numpy as np
import pytest

from merchantbench.agents.llm.sandbox import CodeRunner, Execution, SandboxLimits
from merchantbench.catalog.cache import get_market
from merchantbench.record.sealed import SEED_FILE, read_sealed
from merchantbench.runs.lifecycle import RunLifecycle
from merchantbench.runs.runner import RunSpec
from merchantbench.scenario import load_scenario

needs_bwrap = pytest.mark.requires("bwrap")
ATTACK_LIMITS = SandboxLimits(cpu_seconds=30, wall_seconds=60, processes=16)
PUBLIC_SEED = 37
SEARCHED = 2000  # small seeds the attack tries
VISIBLE = 50  # product ids the agent has seen

# What an agent could write: rebuild the old id stream of every small seed, look for the ids.
ATTACK = f"""
import numpy as np

def legacy_ids(seed, n):
    key = np.random.SeedSequence([seed % (1 << 64), 0x4D42, 8])  # the "ids" part
    rng = np.random.Generator(np.random.Philox(key))
    return set((600_000_000_000 + rng.choice(300_000_000_000, size=n, replace=False)).astype(str))

seen = set(ids)
found = [s for s in range({SEARCHED}) if seen <= legacy_ids(s, n_products)]
found[0] if found else None
"""


@pytest.fixture(scope="module", autouse=True)
def private_cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MERCHANTBENCH_CACHE", str(tmp_path_factory.mktemp("cache")))
        yield


@pytest.fixture(scope="module")
def sealed_run(tmp_path_factory, private_cache):
    """A sealed run opened by the harness: its directory, seed file and market."""
    run_dir = tmp_path_factory.mktemp("sealed-run") / "run"
    spec = RunSpec.sealed_run("idle", load_scenario("smoke"))
    life = RunLifecycle.open(spec, run_dir)
    return run_dir, spec.seed, life.session.market


def visible_ids(market) -> list[str]:
    picked = np.random.default_rng(0).choice(market.n_products, VISIBLE, replace=False)
    return [str(market.product_ids[i]) for i in picked]


def attack(ids: list[str], n_products: int) -> Execution:
    runner = CodeRunner(limits=ATTACK_LIMITS)
    variables = {"ids": ids, "n_products": n_products}
    return asyncio.run(runner.run(ATTACK, variables=variables))


@needs_bwrap
def test_the_old_attack_recovers_a_public_seed_from_50_ids_inside_the_sandbox():
    market = get_market(load_scenario("smoke"), PUBLIC_SEED)
    execution = attack(visible_ids(market), market.n_products)
    assert execution.error_code is None, execution.error_message
    assert execution.result == PUBLIC_SEED


@needs_bwrap
def test_the_same_attack_finds_nothing_on_a_sealed_run(sealed_run):
    _, seed, market = sealed_run
    execution = attack(visible_ids(market), market.n_products)
    assert execution.error_code is None, execution.error_message
    assert execution.result is None


def test_sealed_ids_are_no_function_of_the_seed_through_the_old_stream(sealed_run):
    _, seed, market = sealed_run
    shown = set(market.product_ids.tolist())
    for candidate in (seed, seed % (1 << 64), seed >> 64):
        key = np.random.SeedSequence([candidate % (1 << 64), 0x4D42, 8])
        rng = np.random.Generator(np.random.Philox(key))
        rebuilt = 600_000_000_000 + rng.choice(300_000_000_000, market.n_products, replace=False)
        assert not shown & set(rebuilt.astype(str).tolist())


@needs_bwrap
def test_a_snippet_cannot_read_the_sealed_seed_or_find_it_anywhere_it_can_see(sealed_run):
    run_dir, seed, _ = sealed_run
    secret = run_dir / SEED_FILE
    assert read_sealed(run_dir).seed == seed and oct(secret.stat().st_mode & 0o777) == "0o600"
    mask = secrets.randbits(128)  # the snippet's own text must not hold the seed it looks for
    code = f"""
import os
seed = {seed ^ mask} ^ {mask}
needles = [str(seed), f"{{seed:x}}", str(seed & ((1 << 64) - 1)), str(seed >> 64)]
found, read, names = [], 0, []
for top in ("/",):
    for root, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if os.path.join(root, d) not in ("/sandbox/python",
                                                                     "/sandbox/site")]
        for name in files:
            path = os.path.join(root, name)
            names.append(path)
            if not os.path.isfile(path) or os.path.islink(path):
                continue  # devices (/dev/zero…) and links: nothing stored
            try:
                with open(path, "rb") as f:
                    blob = f.read(1 << 20).decode("latin-1").lower()
            except OSError:
                continue
            read += 1
            found += [(path, n) for n in needles if n in blob]
{{"found": found, "read": read, "exists": os.path.exists({str(secret)!r}),
  "run_dir": os.path.exists({str(run_dir)!r}), "proc": os.path.exists("/proc/1/cmdline"),
  "env": [k for k, v in os.environ.items() if any(n in v for n in needles)]}}
"""
    runner = CodeRunner(limits=ATTACK_LIMITS)
    execution = asyncio.run(runner.run(code))
    assert execution.error_code is None, execution.error_message
    seen = execution.result
    assert seen["read"] > 0  # it did read files (the launcher, the snippet, its config…)
    assert seen["found"] == [] and seen["env"] == []
    assert not seen["exists"] and not seen["run_dir"] and not seen["proc"]
    direct = asyncio.run(runner.run(f"open({str(secret)!r}).read()"))
    assert direct.error_code == "exception" and "FileNotFoundError" in direct.error_message
    assert os.path.isfile(secret)  # still there on the host, for the reveal
