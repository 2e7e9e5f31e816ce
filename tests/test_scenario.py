"""Scenarios: presets, content hash, overrides from --set and YAML, clear errors."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from merchantbench.cli import app
from merchantbench.scenario import PRESETS, ScenarioError, load_scenario


def test_presets_have_the_documented_scale():
    paper, small, smoke = PRESETS["paper"], PRESETS["small"], PRESETS["smoke"]
    assert (paper.market.n_products, paper.market.n_suppliers, paper.clock.days) == (
        98_843, 36_576, 365,
    )  # fmt: skip
    assert small.market.n_products == 2_000 and small.clock.days == 365
    assert smoke.market.n_products == 200 and smoke.clock.days == 14
    assert paper.clock.windows == 730 and paper.clock.hours == 8760


def test_paper_defaults_match_the_spec():
    sc = PRESETS["paper"]
    assert (sc.money.initial_balance_fen, sc.money.initial_deposit_fen) == (200_000, 100_000)
    fines = sc.orders.fines
    assert (fines.return_refund_fen, fines.bad_review_fen, fines.stockout_fen) == (800, 500, 500)
    assert (fines.late_fen, fines.insufficient_balance_fen) == (300, 500)
    assert sc.rating.gamma == pytest.approx(2 ** (-1 / 30))
    assert sc.clock.calls_per_window == 100 and sc.tools.max_active_listings == 50
    assert not sc.tools.market_brief and not sc.tools.hot_search_terms


def test_content_hash_is_stable_and_follows_content():
    assert load_scenario("paper").content_hash == PRESETS["paper"].content_hash
    changed = load_scenario("paper", ["orders.fines.late_fen=400"])
    assert changed.content_hash != PRESETS["paper"].content_hash
    assert len(changed.content_hash) == 16


@pytest.mark.parametrize(
    ("override", "words"),
    [
        ("market.no_such_thing=1", "market.no_such_thing"),
        ("nonsense.key=1", "nonsense.key"),
        ("clock.days=0", "clock.days"),
        ("clock.hours_per_window=7", "hours_per_window"),
        ("missing-equals", "key=value"),
        ("clock.days=400", "clock.days"),
    ],
)
def test_bad_overrides_name_the_key(override, words):
    with pytest.raises(ScenarioError) as err:
        load_scenario("paper", [override])
    assert words in str(err.value)


def test_yaml_file_overrides_a_base_preset(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("base: small\nname: mine\nclock:\n  days: 30\nmarket:\n  trap_fraction: 0.1\n")
    sc = load_scenario(file=path)
    assert (sc.name, sc.clock.days, sc.market.n_products, sc.market.trap_fraction) == (
        "mine", 30, 2_000, 0.1,
    )  # fmt: skip
    path.write_text("clock:\n  dayz: 3\n")
    with pytest.raises(ScenarioError, match="clock.dayz"):
        load_scenario(file=path)


def test_scenario_show_prints_yaml_and_errors_are_one_line():
    runner = CliRunner()
    shown = runner.invoke(app, ["scenario", "show", "smoke", "--set", "clock.days=7"])
    assert shown.exit_code == 0 and "days: 7" in shown.output and "content_hash" in shown.output
    bad = runner.invoke(app, ["scenario", "show", "smoke", "--set", "clock.dayz=7"])
    assert bad.exit_code == 2 and bad.output.strip().count("\n") == 0
    assert "clock.dayz" in bad.output
    unknown = runner.invoke(app, ["scenario", "show", "huge"])
    assert unknown.exit_code == 2 and "unknown scenario" in unknown.output
