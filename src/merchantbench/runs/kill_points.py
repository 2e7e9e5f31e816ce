"""Test-only kill points: a test SIGKILLs a run at an exact place (tests/runs/test_kill_resume).

With `MERCHANTBENCH_KILL_AT=NAME:N` in its environment, a run process kills itself with SIGKILL
the N-th time it passes the point NAME (N defaults to 1). The points the run writer passes:

- `trace`: right after a trace line is written (not flushed: what the OS got is what survives);
- `checkpoint`: after a checkpoint file is saved, before `run.json` says so;
- `finish`: the windows are over, the trace is closed, the tables not yet written;
- `tables`: the Parquet tables are written, `metrics.json` is not;
- `metrics`: `metrics.json` is written, `run.json` does not yet say the run completed.
- `finished`: `run.json` says the run ended; the journal is not yet removed, the record not
  signed (a resume of the finished record does both: `record_writer.complete_finished`).

Unset (always, outside tests), a point costs one attribute test.
"""

from __future__ import annotations

import os
import signal

KILL_ENV = "MERCHANTBENCH_KILL_AT"


class KillPoints:
    """The kill point armed for this process by `MERCHANTBENCH_KILL_AT`, if any."""

    def __init__(self, spec: str | None) -> None:
        self.name: str | None = None
        self.at = 1
        self.seen = 0
        if spec:
            name, _, count = spec.partition(":")
            self.name, self.at = name, int(count) if count.isdigit() else 1

    @classmethod
    def from_env(cls) -> KillPoints:
        return cls(os.environ.get(KILL_ENV))

    def passed(self, name: str) -> None:
        """Kill this process now if `name` is the armed point and this is its N-th pass."""
        if self.name != name:
            return
        self.seen += 1
        if self.seen == self.at:
            os.kill(os.getpid(), signal.SIGKILL)
