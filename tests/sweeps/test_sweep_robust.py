"""A sweep (or calibration) never deletes a run record, and its worker processes end with it
(issue 19, items 6 and 7)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from merchantbench.runs import calibrate
from merchantbench.runs.identity import identity_path
from merchantbench.scenario import load_scenario
from merchantbench.sweeps.driver import run_sweep
from merchantbench.sweeps.execute import LocalExecutor
from merchantbench.sweeps.index import read_index
from merchantbench.sweeps.report import write_sweep_report
from merchantbench.sweeps.spec import parse_sweep_text
from merchantbench.sweeps.state import read_set_aside

SWEEP = (
    'scenarios: [{name: smoke, set: ["clock.days=3"]}]\nagents: [{agent: rule-based, label: rb}]\n'
)


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _sweep(tmp_path: Path, **options) -> object:
    spec = parse_sweep_text(SWEEP, ".yaml")
    return run_sweep(spec, tmp_path, tmp_path / "out", LocalExecutor(), **options)


@pytest.mark.parametrize(
    "damage",
    [
        lambda d: (d / "run.json").write_text('{"ended": "compl'),  # truncated
        lambda d: (d / "run.json").write_bytes(b"\xff\xfe\x00garbage"),  # not text
        lambda d: (d / "run.json").unlink(),  # gone, the rest still there
        lambda d: (d / "metrics.json").unlink(),  # "completed" without its metrics
    ],
    ids=["truncated", "binary", "missing", "no-metrics"],
)
def test_an_unreadable_record_is_kept_then_moved_aside_on_request(tmp_path: Path, damage):
    first = _sweep(tmp_path)
    assert first.finished == ["rb/s1"]
    run_dir = tmp_path / "out" / "runs" / "rb" / "s1"
    damage(run_dir)
    before = _tree(run_dir)

    again = _sweep(tmp_path)  # refused: the record stays as it is, nothing runs, nothing spent
    assert not again.finished and list(again.damaged) == ["rb/s1"]
    assert _tree(run_dir) == before
    [row] = read_index(tmp_path / "out")
    assert row["status"] == "damaged" and row["reason"]

    noticed = []
    retried = _sweep(tmp_path, retry_failed=True, on_set_aside=lambda *a: noticed.append(a))
    assert retried.finished == ["rb/s1"]
    kept = run_dir.with_name("s1.damaged-1")
    assert _tree(kept) == before  # the damaged record, byte for byte
    assert identity_path(kept).is_file()
    assert [(n, t) for n, t, _ in noticed] == [("rb/s1", kept)]
    [entry] = read_set_aside(tmp_path / "out")
    assert entry["run"] == "rb/s1" and entry["moved_to"] == "runs/rb/s1.damaged-1"
    assert read_index(tmp_path / "out")[0]["status"] == "done"
    report = write_sweep_report(tmp_path / "out", None)
    assert "runs/rb/s1.damaged-1" in (report.parent / "report.md").read_text()


def test_the_cli_says_a_record_is_damaged_and_exits_1(tmp_path: Path):
    path = tmp_path / "sweep.yaml"
    path.write_text("name: t\n" + SWEEP)
    args = [sys.executable, "-m", "merchantbench.cli", "sweep", str(path), "--out",
            str(tmp_path / "out"), "--no-progress"]  # fmt: skip
    assert subprocess.run(args, capture_output=True, timeout=300).returncode == 0
    (tmp_path / "out" / "runs" / "rb" / "s1" / "run.json").write_text("{")
    refused = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert refused.returncode == 1 and "damaged (kept as it is): rb/s1" in refused.stderr
    retried = subprocess.run([*args, "--retry-failed"], capture_output=True, text=True,
                             timeout=300)  # fmt: skip
    assert retried.returncode == 0, retried.stderr
    assert "notice: rb/s1: record moved aside to" in retried.stderr
    assert (tmp_path / "out" / "runs" / "rb" / "s1.damaged-1" / "run.json").read_text() == "{"
    (tmp_path / "out" / "index.parquet").write_bytes(b"junk")  # a cache, never a source:
    for command in (["report", str(tmp_path / "out")], ["leaderboard", str(tmp_path / "out")]):
        result = subprocess.run([sys.executable, "-m", "merchantbench.cli", *command],
                                capture_output=True, text=True, timeout=300)  # fmt: skip
        assert result.returncode == 0 and "Traceback" not in result.stderr  # tables read records


def test_calibration_moves_aside_what_it_does_not_reuse(tmp_path: Path):
    scenario = load_scenario("smoke", overrides=["clock.days=2"])
    run = calibrate.GridRun("idle", "idle", 1)
    run_dir = run.run_dir(tmp_path, scenario)
    calibrate.run_grid(scenario, [run], root=tmp_path, jobs=1)
    (run_dir / "run.json").write_text("not json")
    before = _tree(run_dir)
    moved: list[Path] = []
    calibrate.run_grid(scenario, [run], root=tmp_path, jobs=1,
                       on_set_aside=lambda _, where: moved.append(where))  # fmt: skip
    assert moved == [run_dir.with_name(run_dir.name + ".damaged-1")]
    assert _tree(moved[0]) == before
    assert calibrate._finished(run_dir, scenario, run) is not None  # run again, finished
    calibrate.run_grid(scenario, [run], root=tmp_path, jobs=1, fresh=True,
                       on_set_aside=lambda _, where: moved.append(where))  # fmt: skip
    assert moved[1] == run_dir.with_name(run_dir.name + ".replaced-1")
    assert json.loads((moved[1] / "run.json").read_text())["ended"] == "completed"


# --- workers end with their driver ----------------------------------------------------------
def _children(pid: int) -> set[int]:
    """Every live descendant of `pid` (from /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if fields[0] != "Z":
                parents[int(entry.name)] = int(fields[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _poll(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


def _sweep_command(tmp_path: Path) -> list[str]:
    path = tmp_path / "sweep.yaml"
    path.write_text("name: t\nscenarios: [smoke]\nseeds: [1, 2, 3, 4, 5, 6]\n"
                    "agents: [{agent: rule-based, label: rb}]\n")  # fmt: skip
    return ["sweep", str(path), "--out", str(tmp_path / "out"), "--jobs", "2", "--no-progress"]


def _calibrate_command(tmp_path: Path) -> list[str]:
    return ["calibrate", "--scenario", "smoke", "--agents", "rule-based,expert", "--seeds", "3",
            "--ablation-seeds", "0", "--jobs", "2", "--root", str(tmp_path / "runs"),
            "--out", str(tmp_path / "calibration.md")]  # fmt: skip


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
@pytest.mark.parametrize(
    ("command", "how"),
    [(_sweep_command, signal.SIGKILL), (_sweep_command, signal.SIGTERM),
     (_calibrate_command, signal.SIGKILL)],
    ids=["sweep-SIGKILL", "sweep-SIGTERM", "calibrate-SIGKILL"],
)  # fmt: skip
def test_killing_the_driver_ends_its_workers(tmp_path: Path, command, how: signal.Signals):
    driver = subprocess.Popen(
        [sys.executable, "-m", "merchantbench.cli", *command(tmp_path)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    workers: set[int] = set()
    try:
        assert _poll(lambda: len(_children(driver.pid)) >= 2, 240), "no workers started"
        workers = _children(driver.pid)
        os.kill(driver.pid, how)
        driver.wait(timeout=30)
        assert _poll(lambda: not any(_alive(w) for w in workers), 10), "workers outlived it"
        if how == signal.SIGTERM:
            assert driver.returncode != 0
            assert "Traceback" not in driver.stderr.read().decode()  # type: ignore[union-attr]
    finally:
        for pid in [driver.pid, *workers]:  # never leave a process of this test behind
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        driver.wait()


def test_sigterm_leaves_llm_runs_resumable_not_failed(tmp_path: Path):
    """The driver's own LLM runs, stopped by SIGTERM, are `interrupted` and resume by
    themselves on the next invocation (no --retry-failed needed)."""
    from merchantbench.agents.llm.scripted_policy import store_policy
    from merchantbench.agents.llm.scripted_server import ScriptedServer

    with ScriptedServer(store_policy) as server:
        (tmp_path / "models.toml").write_text(
            f'[m]\nbase_url = "{server.base_url}"\nmodel = "scripted"\n'
        )
        path = tmp_path / "sweep.yaml"
        path.write_text("name: t\nmodels_file: models.toml\nmodels: [m]\nharnesses: [react]\n"
                        'scenarios: [{name: smoke, set: ["clock.days=30"]}]\n'
                        "seeds: [1, 2]\n")  # fmt: skip
        args = [sys.executable, "-m", "merchantbench.cli", "sweep", str(path), "--out",
                str(tmp_path / "out"), "--no-progress"]  # fmt: skip
        driver = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            progress = tmp_path / "out" / "progress"
            assert _poll(lambda: progress.is_dir() and any(progress.rglob("*.json")), 240)
            driver.send_signal(signal.SIGTERM)
            driver.wait(timeout=60)
        finally:
            if driver.poll() is None:
                driver.kill()
                driver.wait()
        assert driver.returncode == 130
        ended = [json.loads(p.read_text())["ended"] for p in tmp_path.rglob("run.json")]
        assert "interrupted" in ended and set(ended) <= {"interrupted", None}  # never "error"
        again = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    statuses = {r["status"] for r in read_index(tmp_path / "out")}
    assert statuses == {"done"}


DRIVER = """
import os, sys, threading, time
from merchantbench.runs.pool import worker_pool

def main():
    with worker_pool(2) as pool:  # made off the main thread: the watchdog alone ties workers
        pids = {pool.submit(os.getpid).result() for _ in range(8)}
        futures = [pool.submit(time.sleep, 600) for _ in range(2)]
        print(" ".join(map(str, sorted(pids))), flush=True)
        futures[0].result()

thread = threading.Thread(target=main)
thread.start()
thread.join()
"""


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_the_watchdog_alone_ends_workers_of_a_killed_driver(tmp_path: Path):
    driver = subprocess.Popen([sys.executable, "-c", DRIVER], stdout=subprocess.PIPE, text=True)
    workers: set[int] = set()
    try:
        line = driver.stdout.readline()  # type: ignore[union-attr]
        workers = {int(p) for p in line.split()}
        assert workers and all(_alive(w) for w in workers)
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait(timeout=30)
        assert _poll(lambda: not any(_alive(w) for w in workers), 10), "workers outlived it"
    finally:
        for pid in [driver.pid, *workers]:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        driver.wait()


ASYNC_DRIVER = """
import asyncio, os, signal
from merchantbench.runs.pool import worker_pool

async def main():
    with worker_pool(1):
        os.kill(os.getpid(), signal.SIGTERM)
        total = sum(range(3_000_000))  # the signal lands while this line runs
        print("the synchronous part ran to its end", total > 0, flush=True)
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            print("cancelled at the await", flush=True)
            raise

asyncio.run(main())
"""


def test_sigterm_under_asyncio_cancels_at_an_await_not_at_any_line(tmp_path: Path):
    """SIGTERM in an event loop is Ctrl-C there: the runner cancels its main task, which stops at
    its next await; an exception raised at whatever line the signal lands on could land inside
    the loop's own machinery (a sweep driver once hung there for a minute)."""
    done = subprocess.run([sys.executable, "-c", ASYNC_DRIVER], capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode == -signal.SIGINT and "KeyboardInterrupt" in done.stderr, done.stderr
    assert done.stdout.splitlines() == ["the synchronous part ran to its end True",
                                        "cancelled at the await"]  # fmt: skip
