"""`merchantbench check`: it passes on the in-process adapter, and each deliberately broken
adapter makes exactly the check it breaks fail, with a line that says where."""

from __future__ import annotations

import json
import pickle
from typing import Any

import pytest
from typer.testing import CliRunner

from merchantbench.check import (
    ADAPTERS,
    AdapterError,
    CheckReport,
    LedgerReport,
    StoreRun,
    get_adapter,
    run_check,
)
from merchantbench.check.python_adapter import PythonAdapter, PythonRun
from merchantbench.cli import app
from merchantbench.scenario import Scenario
from merchantbench.session import Session
from merchantbench.tools.toolset import DECLARED

CHECKS = ["script", "determinism", "snapshot", "refusals", "ledger", "hidden"]


def failed(report: CheckReport) -> set[str]:
    return {c.name for c in report.checks if not c.ok}


def detail(report: CheckReport, name: str) -> str:
    return next(c.detail for c in report.checks if c.name == name)


# --- broken front ends ---------------------------------------------------------------------------
class LeakyRun(PythonRun):
    """Shows a hidden field of the market in product details."""

    def call(self, tool: str, args: dict[str, Any] | None, key: str | None) -> dict[str, Any]:
        result = super().call(tool, args, key)
        if tool == "get_product_detail" and result["ok"]:
            index = self.session.market.index_of[result["product_id"]]
            result["stock_capacity"] = int(self.session.market.stock_capacity[index])
        return result


class ForgetfulRun(PythonRun):
    """Takes snapshots but never restores them."""

    def restore(self, blob: bytes) -> None:
        pass


class EngineOnlyRestoreRun(PythonRun):
    """Restores the engine but not the session's memory (notes, idempotency keys)."""

    def restore(self, blob: bytes) -> None:
        self.session.engine.restore(pickle.loads(blob)["engine"])


class StickyRefusalRun(PythonRun):
    """A refused call still nudges a listing's price by one fen."""

    def call(self, tool: str, args: dict[str, Any] | None, key: str | None) -> dict[str, Any]:
        result = super().call(tool, args, key)
        listings = self.session.engine.state.listings
        if not result["ok"] and listings:
            listings[min(listings)].price += 1
        return result


class MiscountedRun(PythonRun):
    """Reports a balance one fen off the ledger."""

    def ledger(self) -> LedgerReport:
        true = super().ledger()
        balance, *rest = true.accounts
        return LedgerReport(true.initial, (balance + 1, *rest), true.movements, 0, true.drained)


class SeedEchoRun(PythonRun):
    """Signs every observation with the run's seed."""

    def observation(self) -> str:
        return f"{super().observation()}\nrun {self.session.seed}"


class WireRun(PythonRun):
    """A faithful front end: arguments and results cross a JSON wire."""

    def call(self, tool: str, args: dict[str, Any] | None, key: str | None) -> dict[str, Any]:
        sent = json.loads(json.dumps(args))
        return json.loads(json.dumps(super().call(tool, sent, key)))


class RewordingRun(PythonRun):
    """Sound in every way, but words its refusals its own way."""

    def call(self, tool: str, args: dict[str, Any] | None, key: str | None) -> dict[str, Any]:
        result = super().call(tool, args, key)
        if not result["ok"]:
            result["error"]["message"] = "request refused"
        return result


def adapter_of(run_type: type[PythonRun]) -> PythonAdapter:
    class Broken(PythonAdapter):
        name = run_type.__name__

    Broken.run_type = run_type
    return Broken()


class ClockSeededAdapter(PythonAdapter):
    """Seeds each run's outcomes from how many runs it has opened (like a wall clock would)."""

    opened = 0

    def open(self, scenario: Scenario, seed: int) -> PythonRun:
        run = super().open(scenario, seed)
        ClockSeededAdapter.opened += 1
        session = run.session
        fresh = Session(scenario, session.market, seed + self.opened, session.search_index)
        return PythonRun(fresh)


class UnopenableAdapter(PythonAdapter):
    def open(self, scenario: Scenario, seed: int) -> PythonRun:
        raise ConnectionRefusedError("nothing listens on 127.0.0.1:9")


# --- the check -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def python_report() -> CheckReport:
    return run_check("smoke", adapter="python")


def test_the_check_passes_on_the_python_adapter(python_report: CheckReport) -> None:
    assert [c.name for c in python_report.checks] == CHECKS
    assert python_report.ok, python_report.failures
    assert python_report.calls > 300 and python_report.seconds < 10
    assert f"all {len(DECLARED.tools())} tools answered" in detail(python_report, "script")
    assert "28 windows" in detail(python_report, "script")
    refusals = detail(python_report, "refusals")
    for code in ("unknown_tool", "invalid_argument", "limit", "listing_limit", "too_large",
                 "idempotency_conflict", "unknown_product", "price_out_of_range"):  # fmt: skip
        assert code in refusals
    assert "nor the seed 314159" in detail(python_report, "hidden")


def test_the_check_is_itself_deterministic(python_report: CheckReport) -> None:
    again = run_check("smoke", adapter=PythonAdapter())
    assert again.transcript_sha256 == python_report.transcript_sha256
    assert again.final_hash == python_report.final_hash != ""


@pytest.mark.parametrize(
    ("adapter", "check", "says"),
    [
        (adapter_of(LeakyRun), "hidden", "get_product_detail shows key 'stock_capacity'"),
        (adapter_of(ForgetfulRun), "snapshot", "restore did not bring back window 14"),
        (adapter_of(EngineOnlyRestoreRun), "snapshot", "after restoring window 14: window 14,"),
        (ClockSeededAdapter(), "determinism", "run 2 differs from run 1"),
        (adapter_of(StickyRefusalRun), "refusals", "a refused call changed the state hash"),
        (adapter_of(MiscountedRun), "ledger", "window 0: opening + movements"),
        (adapter_of(SeedEchoRun), "hidden", "window 0, observation shows the seed 314159"),
    ],
    ids=["leak", "restore", "half-restore", "nondeterminism", "refusal-state", "ledger", "seed"],
)
def test_a_broken_adapter_fails_exactly_its_check(adapter: Any, check: str, says: str) -> None:
    report = run_check("smoke", adapter=adapter)
    assert failed(report) == {check}, report.failures
    assert says in detail(report, check)
    assert report.failures == [f"{check}: {detail(report, check)}"]


def test_agreement_with_a_reference_adapter() -> None:
    faithful = run_check("smoke", adapter=adapter_of(WireRun), against="python")
    assert faithful.ok, faithful.failures
    assert [c.name for c in faithful.checks] == [*CHECKS, "agreement"]
    reworded = run_check("smoke", adapter=adapter_of(RewordingRun), against="python")
    assert failed(reworded) == {"agreement"}
    assert detail(reworded, "agreement").startswith(
        "differs from adapter python: window 0, list_product: a different result"
    )


def test_an_adapter_that_cannot_open_fails_every_check_without_raising() -> None:
    report = run_check("smoke", adapter=UnopenableAdapter())
    assert failed(report) == set(CHECKS)
    assert "ConnectionRefusedError" in detail(report, "script")


def test_optional_tools_are_exercised_when_the_scenario_turns_them_on() -> None:
    result = CliRunner().invoke(
        app, ["check", "--set", "tools.market_brief=true", "--set", "tools.hot_search_terms=true",
              "--seed", "1", "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["ok"] and "all 28 tools answered" in report["checks"][0]["detail"]
    assert "not looked for by value" in report["checks"][-1]["detail"]


# --- adapters and the command line ---------------------------------------------------------------
def test_the_python_adapter_is_a_store_run_and_is_found_by_name() -> None:
    from merchantbench.scenario import load_scenario

    run = get_adapter("python").open(load_scenario("smoke"), 1)
    assert isinstance(run, StoreRun) and (run.window, run.hour, run.over) == (0, 0, False)
    with pytest.raises(AdapterError, match="unknown adapter 'nope'; choose from .*gym.*python"):
        get_adapter("nope")


def test_a_lazily_registered_adapter_that_cannot_load_is_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(ADAPTERS, "mcp", "merchantbench.no_such_module:McpAdapter")
    result = CliRunner().invoke(app, ["check", "--adapter", "mcp"])
    assert result.exit_code == 2
    assert result.stderr.strip().startswith("error: adapter 'mcp' cannot be loaded")
    assert len(result.stderr.strip().splitlines()) == 1


def test_the_command_prints_each_check_and_exits_by_the_verdict(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runner = CliRunner()
    good = runner.invoke(app, ["check", "--scenario", "smoke"])
    assert good.exit_code == 0, good.output
    assert [line.split()[:2] for line in good.stdout.splitlines()[1:]] == [
        ["PASS", name] for name in CHECKS
    ]
    monkeypatch.setitem(ADAPTERS, "leaky", lambda: adapter_of(LeakyRun))
    bad = runner.invoke(app, ["check", "--adapter", "leaky"])
    assert bad.exit_code == 1
    assert "FAIL  hidden" in bad.stdout
    assert bad.stderr.strip().splitlines() == [
        "error: hidden: " + bad.stdout.split("FAIL  hidden")[1].strip().split("\n")[0].strip()
    ]
    unknown = runner.invoke(app, ["check", "--scenario", "nope"])
    assert unknown.exit_code == 2 and unknown.stderr.startswith("error: ")
