"""Start-up time of the `merchantbench` command, as a user meets it: whole processes.

- `merchantbench --help` and every subcommand's `--help` (goal ≤ 0.3 s each);
- the README's main job, `merchantbench run --agent rule-based --report` (a rule-based paper
  year with its record and report), with the market and search index already cached (goal
  ≤ 3 s), each repetition in a fresh working directory as a new user's would be.

Each is run `--repeat` times (after one untimed warm-up, which also builds the market cache if
it is missing); the table gives the fastest and the median wall time and the least CPU time
(user + system, of the process and its children), with the load average before and after: on a
shared machine only the CPU time is comparable between measurements.

    uv run python benchmarks/bench_cli.py [--repeat 5] [--main-repeat 3] [--no-main-job]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HELP_GOAL = 0.3
MAIN_JOB = ("run", "--agent", "rule-based", "--report")
MAIN_GOAL = 3.0


def command() -> list[str]:
    """The installed `merchantbench` script beside this interpreter (what a user runs)."""
    script = Path(sys.executable).with_name("merchantbench")
    if not script.is_file():
        raise SystemExit(f"no merchantbench script beside {sys.executable}: run under `uv run`")
    return [str(script)]


def subcommands() -> list[tuple[str, ...]]:
    """Every command path of the CLI (`run`, `catalog build`, ...), read from the app itself."""
    import typer

    from merchantbench.cli import app

    root = typer.main.get_command(app)
    found: list[tuple[str, ...]] = []

    def walk(group, path: tuple[str, ...]) -> None:
        ctx = group.context_class(group, info_name="merchantbench")  # nothing parsed
        for name in group.list_commands(ctx):
            sub = group.get_command(ctx, name)
            found.append((*path, name))
            if hasattr(sub, "list_commands"):
                walk(sub, (*path, name))

    walk(root, ())
    return found


def timed(argv: list[str], cwd: Path | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one process, which must exit 0."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=cwd)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        tail = err.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}: {tail[0]}")
    return wall, usage.ru_utime + usage.ru_stime


def measure(argv: list[str], repeat: int, fresh_dir: bool = False) -> tuple[float, float, float]:
    """(fastest wall, median wall, least CPU) over `repeat` runs after one warm-up."""
    samples = []
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp:
        for i in range(repeat + 1):
            cwd = Path(tmp) / f"r{i}"
            cwd.mkdir()
            sample = timed(argv, cwd if fresh_dir else None)
            if i:  # the first is the warm-up
                samples.append(sample)
    walls = [s[0] for s in samples]
    return min(walls), statistics.median(walls), min(s[1] for s in samples)


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5, help="timed runs of each --help")
    parser.add_argument("--main-repeat", type=int, default=3, help="timed runs of the main job")
    parser.add_argument("--no-main-job", action="store_true", help="only the --help commands")
    args = parser.parse_args()
    base = command()
    rows: list[tuple[str, float, float, float, float]] = []
    print(f"before: {load_average()}")
    for path in [(), *subcommands()]:
        label = " ".join(("merchantbench", *path, "--help"))
        rows.append((label, *measure([*base, *path, "--help"], args.repeat), HELP_GOAL))
    if not args.no_main_job:
        label = " ".join(("merchantbench", *MAIN_JOB))
        figures = measure([*base, *MAIN_JOB], args.main_repeat, fresh_dir=True)
        rows.append((label, *figures, MAIN_GOAL))
    print(f"after: {load_average()}")
    width = max(len(r[0]) for r in rows)
    print(f"{'command':<{width}}  wall min  wall median  CPU min  goal")
    for label, fastest, median, cpu, goal in rows:
        mark = "" if fastest <= goal else "  (over)"
        print(
            f"{label:<{width}}  {fastest:7.2f}s  {median:10.2f}s  {cpu:6.2f}s  ≤ {goal:g} s{mark}"
        )
    helps = [r for r in rows if r[0].endswith("--help")]
    print(
        f"--help: slowest fastest-wall {max(r[1] for r in helps):.2f} s, "
        f"slowest CPU {max(r[3] for r in helps):.2f} s over {len(helps)} commands"
    )


if __name__ == "__main__":
    main()
