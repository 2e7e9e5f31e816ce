"""The test suite's `requires(part, ...)` marker (tests/requires.py): a test that needs an optional
part skips without it (fails under MERCHANTBENCH_REQUIRE_ALL=1). Here, not in tests/, so that
`conftest` stays the name of the test folders' own fixtures."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

from merchantbench.optional_parts import PARTS
from requires import need


def pytest_configure(config: pytest.Config) -> None:
    # Runs sign their records and tables cache their checks: in a folder of the test session,
    # never the user's own keys or cache (record/attest.py, record/verification.py).
    for name in ("MERCHANTBENCH_KEYS", "MERCHANTBENCH_CHECKS"):
        if name not in os.environ:
            os.environ[name] = folder = tempfile.mkdtemp(prefix=f"{name.lower()}-")
            config.add_cleanup(lambda folder=folder: shutil.rmtree(folder, ignore_errors=True))
    config.addinivalue_line(
        "markers",
        f"requires(*parts): needs optional parts ({', '.join(PARTS)}); skipped without them, "
        "failed without them under MERCHANTBENCH_REQUIRE_ALL=1",
    )


def pytest_runtest_setup(item: pytest.Item) -> None:
    for mark in item.iter_markers("requires"):
        for key in mark.args:
            need(key)
