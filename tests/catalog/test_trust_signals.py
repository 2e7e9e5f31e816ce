"""The trust-signal model shared by the generator and the real-catalog loader."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from merchantbench.catalog import population, trust_signals
from merchantbench.catalog.trust_signals import (
    PRODUCT_RATING,
    RETURN_BUYER_RATE,
    RISK_MEDIAN,
    RISK_SHARES,
    SHOP_RATING,
    expected_risks,
)

PACKAGE = Path(trust_signals.__file__).parents[1]


def test_quality_weights_are_the_best_linear_predictor_rounded() -> None:
    """Readings r = 0.6 q + 0.8 ε of the product (q) and twice of its supplier (s), with
    q = ρ s + √(1 − ρ²) z: the weights solve Σ w = Cov(readings, q)."""
    a, rho = trust_signals.SIGNAL_WEIGHT, population.QUALITY_FROM_SUPPLIER
    product_shop, shop_shop = a * a * rho, a * a
    cov = np.array(
        [
            [1, product_shop, product_shop],
            [product_shop, 1, shop_shop],
            [product_shop, shop_shop, 1],
        ]
    )
    exact = np.linalg.solve(cov, np.array([a, a * rho, a * rho]))
    np.testing.assert_allclose(trust_signals.QUALITY_WEIGHTS, exact, atol=0.0025)


@pytest.mark.parametrize("curve", [PRODUCT_RATING, SHOP_RATING, RETURN_BUYER_RATE])
def test_a_curve_reads_back_what_it_shows(curve: object) -> None:
    readings = np.linspace(-2.5, 2.5, 51)
    shown = curve.show(readings)  # type: ignore[attr-defined]
    np.testing.assert_allclose(curve.read(shown), readings, atol=1e-9)  # type: ignore[attr-defined]


def test_expected_risks_follow_the_signals() -> None:
    median = (PRODUCT_RATING.show(0.0), SHOP_RATING.show(0.0), RETURN_BUYER_RATE.show(0.0))
    risks = expected_risks(*(np.array([value]) for value in median))
    np.testing.assert_allclose([r[0] for r in risks], np.array(RISK_SHARES) * RISK_MEDIAN)
    good = expected_risks(np.array([4.9]), np.array([4.9]), np.array([0.6]))
    poor = expected_risks(np.array([4.0]), np.array([4.0]), np.array([0.1]))
    assert sum(r[0] for r in good) < RISK_MEDIAN < sum(r[0] for r in poor)


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_the_catalog_imports_nothing_downstream() -> None:
    """Data flows catalog → sim → tools → agents: no catalog module imports those."""
    downstream = ("merchantbench.sim", "merchantbench.tools", "merchantbench.agents")
    for path in sorted((PACKAGE / "catalog").glob("*.py")):
        bad = [name for name in _imports(path) if name.startswith(downstream)]
        assert not bad, f"{path.name} imports {bad}"
