"""`merchantbench check`: the conformance check of a front end, shipped with the package.

It plays one deterministic action script (`merchantbench.check.script`) that exercises every
tool through an adapter's agent side, watches the host side, and asserts: the script ran to the
end (`script`); the same scenario, seed and script give the same state hash and results
(`determinism`); a restored mid-run snapshot continues to the identical end (`snapshot`); a
refused call leaves the state hash unchanged (`refusals`); the ledger identity holds after every
window (`ledger`); no hidden field and not the seed appears in any output (`hidden`).

    from merchantbench.check import run_check

    report = run_check("smoke", seed=314159, adapter="python")
    assert report.ok, report.failures

A front end registers its adapter by name (see `merchantbench.check.adapter`):

    from merchantbench.check import register_adapter

    register_adapter("mine", "my_front_end.check_adapter:MyAdapter")
"""

from __future__ import annotations

from merchantbench.check.adapter import (
    ADAPTERS,
    Adapter,
    AdapterError,
    LedgerReport,
    StoreRun,
    adapter_names,
    get_adapter,
    register_adapter,
)
from merchantbench.check.checks import CheckResult
from merchantbench.check.script import Call, action_script
from merchantbench.check.suite import DEFAULT_SEED, CheckReport, run_check

__all__ = [
    "ADAPTERS",
    "DEFAULT_SEED",
    "Adapter",
    "AdapterError",
    "Call",
    "CheckReport",
    "CheckResult",
    "LedgerReport",
    "StoreRun",
    "action_script",
    "adapter_names",
    "get_adapter",
    "register_adapter",
    "run_check",
]
