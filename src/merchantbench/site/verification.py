"""Whether a run's record verifies, for the site's marks.

A run is *verified* when `merchantbench.replay.evidence.check_run` says so: its record was
replayed (or found in the check cache by the hash of every file, kept outside the records) and
matched every answer, every metric and the final state hash, and its files agree with each
other (usage, cost, the model's words). The mark's detail says what is only attested (model,
tokens, cost) and by which key. Only verified runs are ranked; the others are named.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from merchantbench.record.verification import DIFFERS, RunCheck
from merchantbench.replay.evidence import check_run
from merchantbench.site.collect import SiteRun


@dataclass(frozen=True)
class Verification:
    """The site's mark of one run.

    Attributes:
        status: `verified`, `diverged` (replayed, and something differed), or `unverified`
            (not replayed: unfinished, skipped with --no-verify and not in the check cache, or
            the record cannot be).
        detail: One line for people: what is replayed and what only attested, the first
            divergence, or why it was not replayed.
    """

    status: str
    detail: str

    @property
    def ok(self) -> bool:
        return self.status == "verified"

    def as_json(self) -> dict[str, Any]:
        return {"status": self.status, "detail": self.detail}


def mark(check: RunCheck) -> Verification:
    """A table's check as the site's mark."""
    if check.ok:
        return Verification("verified", check.what())
    status = "diverged" if check.status == DIFFERS else "unverified"
    return Verification(status, f"{check.status}: {check.detail}")


def verify_run(run: SiteRun, replay: bool = True) -> Verification:
    """Check a finished run (replayed, or its state found in the check cache)."""
    if not run.finished:
        return Verification("unverified", "not finished: nothing to replay")
    return mark(check_run(run.path, replay=replay))
