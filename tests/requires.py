"""Tests that need an optional part (`merchantbench.optional_parts`: bubblewrap, Chromium, the
Hermes Agent environment, Ray, Inspect AI, PettingZoo …) skip without it, with a one-line reason
that names the part and how to add it; with MERCHANTBENCH_REQUIRE_ALL=1 (CI) they fail instead.

    pytestmark = pytest.mark.requires("bwrap")      # a module, or @pytest.mark.requires on a test
    need("inspect", module=True)                    # at the top of a module that imports it
    missing("hermes-agent", "the package index is unreachable")   # found out at run time
"""

from __future__ import annotations

from typing import NoReturn

import pytest

from merchantbench.optional_parts import PARTS, REQUIRE_ALL_ENV, require_all


def missing(key: str, detail: str | None = None, module: bool = False) -> NoReturn:
    """Skip (or, under REQUIRE_ALL, fail) because part `key` is not here."""
    reason = PARTS[key].missing_reason(detail)
    if require_all():
        pytest.fail(f"{reason} [{REQUIRE_ALL_ENV} is set: nothing may be skipped]", pytrace=False)
    pytest.skip(reason, allow_module_level=module)


def need(key: str, module: bool = False) -> None:
    """Go on if part `key` is here, else `missing`."""
    if PARTS[key].locate() is None:
        missing(key, module=module)
