"""Whether a run was replayed to the same result, for the site's marks.

A run is *verified* when replaying its record (`merchantbench.replay.verify_record`, the
library behind `merchantbench verify`) matched every answer, every metric and the final state
hash, and that hash is the one `run.json` states. `_verification` is the one place that calls
the replay; the site only reads its `Verification`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from merchantbench.replay import VerifyReport, verify_record
from merchantbench.site.collect import SiteRun


@dataclass(frozen=True)
class Verification:
    """The site's mark of one run.

    Attributes:
        status: `verified`, `diverged` (replayed, and something differed), or `unverified`
            (not replayed: unfinished, skipped with --no-verify, or the record cannot be).
        detail: One line for people: the first divergence, or why it was not replayed.
    """

    status: str
    detail: str

    @property
    def ok(self) -> bool:
        return self.status == "verified"

    def as_json(self) -> dict[str, Any]:
        return {"status": self.status, "detail": self.detail}


def _verification(run_dir: Path) -> VerifyReport:
    """Replay one record (`merchantbench.replay.verify_record`; a sealed run with the seed its
    record keeps); its report has `.ok`, `.first_divergence` and `.final_state_hash`.

    Raises:
        ReplayError: the record cannot be replayed.
    """
    return verify_record(run_dir)


def verify_run(run: SiteRun) -> Verification:
    """Replay a finished run and say whether it matched its record."""
    if not run.finished:
        return Verification("unverified", "not finished: nothing to replay")
    try:
        report = _verification(run.path)
    except Exception as exc:  # a damaged record, a sealed run without its seed: one line
        return Verification("unverified", f"could not replay: {' '.join(str(exc).split())[:200]}")
    if not report.ok:
        where = report.first_divergence
        return Verification("diverged", f"replay diverged: {' '.join(str(where).split())[:200]}")
    if report.final_state_hash != run.manifest.state_hash:
        return Verification("diverged", "replay ended in another state than run.json states")
    return Verification("verified", f"replayed to state {str(report.final_state_hash)[:16]}")
