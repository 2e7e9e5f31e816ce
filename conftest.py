"""The test suite's `requires(part, ...)` marker (tests/requires.py): a test that needs an optional
part skips without it (fails under MERCHANTBENCH_REQUIRE_ALL=1). Here, not in tests/, so that
`conftest` stays the name of the test folders' own fixtures."""

from __future__ import annotations

import pytest

from merchantbench.optional_parts import PARTS
from requires import need


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"requires(*parts): needs optional parts ({', '.join(PARTS)}); skipped without them, "
        "failed without them under MERCHANTBENCH_REQUIRE_ALL=1",
    )


def pytest_runtest_setup(item: pytest.Item) -> None:
    for mark in item.iter_markers("requires"):
        for key in mark.args:
            need(key)
