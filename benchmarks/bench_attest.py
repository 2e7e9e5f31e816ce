"""What signing and checking a record cost (issue 31): a paper-year rule-based record is
verified (replay, key-free consistency) and its signature checked in at most twice the run's
own CPU time, and signing adds at most 5 % to the main job.

1. In process: `run_agent` of a paper year (record, transcript, warm market cache) with the
   signing hook (`record.attest.attest_finished`) timed inside it; then `verify_record` and
   `check_attestation` on the record. Times are the main thread's CPU (`thread_time`).
2. The main job as users run it, `merchantbench run --agent rule-based`, in child processes,
   alternately with signing and with `MERCHANTBENCH_NO_SIGN=1`: the children's CPU time
   (user + system, `resource.RUSAGE_CHILDREN`), pairs compared within this run.

    uv run python benchmarks/bench_attest.py [--scenario paper] [--days N] [--pairs 2]

Results are recorded in docs/performance.md ("## Attestation and checks").
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from merchantbench.record import attest
from merchantbench.replay import verify_record
from merchantbench.runs import lifecycle
from merchantbench.runs.runner import RunSpec, run_agent
from merchantbench.scenario import load_scenario


def in_process(scenario: str, days: int | None, out: Path) -> dict[str, float]:
    overrides = [] if days is None else [f"clock.days={days}"]
    spec = RunSpec("rule-based", load_scenario(scenario, overrides=overrides), 1)
    signing = [0.0]
    hook = lifecycle.attest_finished

    def timed(run_dir: Path, meta: Any) -> str | None:
        began = time.thread_time()
        try:
            return hook(run_dir, meta)
        finally:
            signing[0] += time.thread_time() - began

    lifecycle.attest_finished = timed  # type: ignore[assignment]
    try:
        began = time.thread_time()
        run_agent(spec, out)
        run_cpu = time.thread_time() - began
    finally:
        lifecycle.attest_finished = hook  # type: ignore[assignment]
    began = time.thread_time()
    report = verify_record(out)
    verify_cpu = time.thread_time() - began
    assert report.ok, report.summary()
    began = time.thread_time()
    check = attest.check_attestation(out, attest.trusted_keys())
    check_cpu = time.thread_time() - began
    assert check.ok, check.summary()
    return {"run_cpu": run_cpu, "signing_cpu": signing[0], "verify_cpu": verify_cpu,
            "signature_check_cpu": check_cpu, "calls": report.calls,
            "windows": report.windows}  # fmt: skip


def child_cpu(command: list[str], env: dict[str, str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main_job(scenario: str, days: int | None, pairs: int, work: Path) -> dict[str, Any]:
    signed, unsigned = [], []
    for i in range(pairs):
        for sign, sink in ((True, signed), (False, unsigned)):
            out = work / f"job-{i}-{'signed' if sign else 'unsigned'}"
            command = [sys.executable, "-m", "merchantbench.cli", "run", "--agent", "rule-based",
                       "--scenario", scenario, "--out", str(out), "--no-progress"]  # fmt: skip
            if days is not None:
                command += ["--days", str(days)]
            env = dict(os.environ)
            if not sign:
                env["MERCHANTBENCH_NO_SIGN"] = "1"
            sink.append(child_cpu(command, env))
    return {"signed_cpu": signed, "unsigned_cpu": unsigned,
            "added": statistics.median(signed) / statistics.median(unsigned) - 1}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="paper")
    parser.add_argument("--days", type=int, default=None)
    parser.add_argument("--pairs", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-attest-") as tmp:
        work = Path(tmp)
        os.environ.setdefault("MERCHANTBENCH_KEYS", str(work / "keys"))
        os.environ.setdefault("MERCHANTBENCH_CHECKS", str(work / "checks"))
        one = in_process(args.scenario, args.days, work / "run")
        ratio = (one["verify_cpu"] + one["signature_check_cpu"]) / one["run_cpu"]
        print(f"record: rule-based, {args.scenario}, {one['calls']} calls / {one['windows']} "
              f"windows")  # fmt: skip
        print(f"run CPU {one['run_cpu']:.2f} s, of which signing {one['signing_cpu']:.3f} s "
              f"({one['signing_cpu'] / one['run_cpu']:.1%})")  # fmt: skip
        print(
            f"verify CPU {one['verify_cpu']:.2f} s + signature check "
            f"{one['signature_check_cpu']:.3f} s = {ratio:.2f}x the run's CPU (goal <= 2x)"
        )
        job = main_job(args.scenario, args.days, args.pairs, work)
        signed = ", ".join(f"{v:.2f}" for v in job["signed_cpu"])
        unsigned = ", ".join(f"{v:.2f}" for v in job["unsigned_cpu"])
        print(
            f"main job CPU (process): signed {signed} s; unsigned {unsigned} s; "
            f"signing adds {job['added']:+.1%} (median; goal <= 5 %)"
        )


if __name__ == "__main__":
    main()
