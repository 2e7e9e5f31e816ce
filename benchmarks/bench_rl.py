"""Throughput of training episodes under the scripted policy (`rl.rollouts.ScriptedPolicy`: list
ten best sellers, then per window read the snapshot and open orders and close the window, so
three tool calls a window): episodes per hour of the 30-day preset and tool calls per second,

- in one process, `--concurrency` episodes in flight (asyncio, `play_many`);
- on Ray, `--workers` processes each playing its share (`play_on_ray`; a local cluster unless
  `--address` names one).

Episodes are train-split episodes 0, 1, … starting on day 0. Run with:

    uv run python benchmarks/bench_rl.py [--scenario smoke] [--episodes 16] [--workers 2]

`--classic` measures the classic store env instead (`rl.classic`, 30-day episodes of the
`small` market, 32 slots, random start days over the 16 training markets): windows per second
of one `StoreEnv`, and of `StoreVectorEnv`s of 4 and of 64 stores (their windows advanced
together, `sim.engine.advance_stores`), under a fixed action (the first 16 slots at markup 3.0)
with resets included. The markets, the opened store of every start day and the candidates of
every start day of every market (their supplier facts over the year) are prepared before the
clock starts, so the figures are a training run's after its first few thousand episodes (it
pays for them once: about 7 ms a start day, 0.25 ms a product; the time is printed);
`--warm-every 5` prepares the candidates of every fifth start day only, as this bench did
before 2026-12-07 19:50 UTC (the rest then met on the clock). A fixed Python
loop (`reference_loop`) is timed beside it so a loaded machine's figures can be compared as
ratios, and each figure is given per CPU second of this process too (what the process got of
a shared machine); `--profile` prints where a window's time goes (cProfile, cumulative shares):

    uv run python benchmarks/bench_rl.py --classic [--seconds 20] [--profile] [--random-actions]
        [--warm-every 1] [--processes 2]

(`--random-actions`: 50 uniformly random action arrays in turn instead of the fixed action,
what a policy starts from: most slots change level each window, each change an engine call.
`--processes K` (default 2; 1: not measured): also 64 and 128 stores split over K processes,
this one and K − 1 workers (`rl.classic_workers.WorkerStoreVectorEnv`, the workers forked
after the preparation so they start with its caches), in windows per wall second: what a
training run gets from the machine's cores, which depends on how busy they are.)

and record the printed figures, with the machine, in docs/performance.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from merchantbench.rl.episode import Episode, EpisodeConfig
from merchantbench.rl.rollouts import Batch, ScriptedPolicy, play_many, play_on_ray
from merchantbench.rl.splits import episode_seed

POLICY = ScriptedPolicy()


def _config(scenario: str) -> EpisodeConfig:
    return EpisodeConfig(scenario, length="30d", start_day=0)


def warm(scenario: str, episodes: int) -> None:
    """Build the episodes' markets first (the market cache), so only play is timed."""
    for index in range(episodes):
        Episode(_config(scenario), episode_seed("train", index))


def line(label: str, batch: Batch) -> str:
    return (
        f"{label}: {len(batch.summaries)} episodes in {batch.seconds:.1f} s: "
        f"{batch.episodes_per_hour:,.0f} episodes/h, {batch.calls_per_second:,.0f} calls/s"
    )


def reference_loop(seconds: float) -> float:
    """Iterations per second of a fixed pure-Python loop: the machine's speed right now."""
    count, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        total = 0
        for i in range(1000):
            total += i * i
        count += 1
    return count / (time.perf_counter() - started)


def classic(
    seconds: float,
    profile: bool,
    random_actions: bool = False,
    warm_every: int = 1,
    workers: int = 2,
) -> None:
    """Windows per second of the classic store env: 1 env, vectors of 4 and 64 (under the
    fixed action, or 50 uniformly random action arrays in turn), then 64 and 128 stores over
    `workers` processes (wall figures: the workers' CPU is not this process's)."""
    import numpy as np

    from merchantbench.rl.classic import StoreEnv, StoreVectorEnv
    from merchantbench.rl.classic_workers import WorkerStoreVectorEnv

    action = np.zeros(32, dtype=np.int64)
    action[:16] = 4
    rng = np.random.default_rng(0)
    probe = StoreEnv()
    for index in range(probe.pool):  # the training markets
        probe.reset(options={"index": index, "start_day": 0})
    for day in range(probe.last_start + 1):  # the opened store of every start day
        probe.reset(options={"index": 0, "start_day": day})
    started = time.perf_counter()
    for index in range(probe.pool):  # every market day's candidates and their supplier facts
        for day in range(0, probe.last_start + 1, warm_every):
            probe.reset(options={"index": index, "start_day": day})
    days = len(range(0, probe.last_start + 1, warm_every))
    print(f"candidates of {days} start days a market: {time.perf_counter() - started:.1f} s")
    print(f"reference loop: {reference_loop(2.0):,.0f} iterations/s")
    sizes = [(1, 1), (4, 1), (64, 1)] + ([(64, workers), (128, workers)] if workers > 1 else [])
    for n, k in sizes:
        shape = (n, 32) if n > 1 else (32,)
        actions = (
            [rng.integers(0, 8, size=shape) for _ in range(50)]
            if random_actions
            else [np.tile(action, (n, 1)) if n > 1 else action]
        )
        envs: Any = (
            WorkerStoreVectorEnv(n, workers=k)  # forked: the workers start with the caches
            if k > 1
            else StoreVectorEnv(n)
            if n > 1
            else probe
        )
        step = _stepper(envs, actions)
        for _ in range(120):  # two episodes each
            step()
        windows, started, cpu = 0, time.perf_counter(), time.process_time()
        while time.perf_counter() - started < seconds:
            step()
            windows += n
        rate = windows / (time.perf_counter() - started)
        per_cpu = windows / (time.process_time() - cpu)
        if k > 1:
            envs.close()
            print(f"classic env, {n} at once in {k} processes: {rate:,.0f} windows/s")
            continue
        print(f"classic env, {n} at once: {rate:,.0f} windows/s, {per_cpu:,.0f} per CPU second")
        if profile:
            _profile(step, max(1, 6400 // n))
    print(f"reference loop: {reference_loop(2.0):,.0f} iterations/s")


def _stepper(envs: Any, actions: list[Any]) -> Callable[[], None]:
    """One step of `envs` (a store, reset when its episode ends; or a vector, which resets its
    stores itself), under `actions` in turn."""
    envs.reset(seed=0)
    single = not hasattr(envs, "num_envs")
    turn = iter(range(1 << 62))

    def step() -> None:
        done = envs.step(actions[next(turn) % len(actions)])[2]
        if single and done:
            envs.reset()

    return step


_PARTS = {  # (function, file) of a window's parts, as cProfile names them
    "_prepare": "classic.py",  # the actions brought to the listings (all stores at once)
    "window_arrivals": "demand.py",  # intensities and draws (batched over the stores)
    "_window": "engine.py",  # each store's open window as the arrivals read it
    "_play_window": "engine.py",  # the window's hours: orders, transitions, samples
    "_conclude": "classic.py",  # drain at the end, rewards and orders per slot
    "_observe": "classic.py",  # the observations (all stores at once)
    "_begin": "classic.py",  # new episodes (the stores whose episode ended)
}


def _profile(step: Callable[[], None], steps: int) -> None:
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(steps):
        step()
    profiler.disable()
    stats = pstats.Stats(profiler)
    total = stats.total_tt  # type: ignore[attr-defined]
    shares: dict[str, float] = {}  # (a name defined twice: the outer one, which has the other)
    for (file, _, name), (_, _, _, cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
        if _PARTS.get(name) and file.endswith(_PARTS[name]):
            shares[name] = max(shares.get(name, 0.0), cumulative / total)
    for name, share in shares.items():
        print(f"    {name}: {share:.0%} of the profiled time")


def figure(run: Path, svg: Path) -> None:
    """The training curve of an `sb3_train` or `slot_ppo` run (`curve.json`) as an SVG, with
    the held-out means of its `results.json` as reference lines; prints the held-out table
    (Markdown)."""
    import json

    import numpy as np

    from merchantbench.report.svg import Figure, HLine, Line, Panel

    curve = json.loads((run / "curve.json").read_text())
    results = json.loads((run / "results.json").read_text())
    name = "slot_ppo" if "slot_ppo_vs" in results else "ppo"
    label = "slot PPO (per-listing credit)" if name == "slot_ppo" else "PPO (SlotPolicy)"
    evaluated = [point for point in curve if point["held_out_mean_rmb"] is not None]
    minutes = np.array([point["seconds"] / 60 for point in evaluated])
    held = np.array([point["held_out_mean_rmb"] for point in evaluated], dtype=float)
    trained = [point for point in curve if point["train_return_rmb"] is not None]
    every = max(1, len(trained) // 60)  # a point a window of updates is enough to see
    train_minutes = np.array([point["seconds"] / 60 for point in trained[::every]])
    train = np.array([point["train_return_rmb"] for point in trained[::every]], dtype=float)
    means = results["means"]
    others = []  # other runs' held-out curves beside it (folders run-<label>/curve.json)
    for colour, other_label in (
        ("#ff7f0e", "mlp"),
        ("#17becf", "noprior"),
        ("#8c564b", "own-reward"),
    ):
        other = run.parent / f"{run.name}-{other_label}" / "curve.json"
        if other.exists():
            points = [
                p for p in json.loads(other.read_text()) if p["held_out_mean_rmb"] is not None
            ]
            x = np.array([point["seconds"] / 60 for point in points])
            y = np.array([point["held_out_mean_rmb"] for point in points], dtype=float)
            others.append(Line(x, y, colour, 1.5, f"held-out, {other_label} run", markers=True))
    marks = [
        Line(minutes, held, "#1f77b4", 2.0, "held-out mean", markers=True),
        *others,
        Line(train_minutes, train, "#9467bd", 1.2, "last training episodes", "dashed"),
        HLine(means["best_constant"], "#d62728", "dashed", 1.2, "best constant"),
        HLine(means["rule_based"], "#2ca02c", "dotted", 1.5, "rule-based"),
        HLine(means["random"], "#7f7f7f", "dotted", 1.2, "random"),
    ]
    top = float(np.nanmax([*held, *train, means["best_constant"]])) * 1.1
    end = float(max(minutes.max(), 1.0))
    Figure(
        f"Classic store env ({results['scenario']}, {results['length']}): {label}",
        [Panel("change in net assets (RMB)", marks, ylim=(0.0, max(500.0, top)))],
        xlim=(0.0, end),
        xticks=[(m, f"{m:g}") for m in range(0, int(end) + 1, 5)],
        xlabel="training wall-clock minutes (2 cores shared with other jobs)",
    ).save(svg)
    print("| policy | held-out mean (RMB) | learnt − policy (mean ± s.e.) | wins / ties / losses |")
    print("|---|---:|---:|---:|")
    print(f"| {label} | {means[name]:.1f} | | |")
    for other_name in ("best_constant", "rule_based", "random"):
        p = results[f"{name}_vs"][other_name]
        print(
            f"| {other_name.replace('_', ' ')} | {means[other_name]:.1f} | {p['mean_diff']:+.1f} ± "
            f"{p['se']:.1f} | {p['wins']} / {p['ties']} / {p['losses']} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", default="smoke")
    parser.add_argument("--episodes", type=int, default=16)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--workers", type=int, default=0, help="Ray processes (0: no Ray run)")
    parser.add_argument("--address", default=None, help="a Ray cluster (default: a local one)")
    parser.add_argument("--classic", action="store_true", help="the classic store env instead")
    parser.add_argument("--seconds", type=float, default=20.0, help="per classic measurement")
    parser.add_argument("--profile", action="store_true", help="with --classic: where time goes")
    parser.add_argument(
        "--random-actions",
        action="store_true",
        help="with --classic: uniformly random actions (50 in turn) instead of the fixed one",
    )
    parser.add_argument(
        "--processes",
        type=int,
        metavar="K",
        default=2,
        help="with --classic: also 64 and 128 stores over K processes, this one included (1: not)",
    )
    parser.add_argument(
        "--warm-every",
        type=int,
        default=1,
        help="with --classic: prepare the candidates of every k-th start day (default: all)",
    )
    parser.add_argument(
        "--figure",
        type=Path,
        default=None,
        help="an sb3_train or slot_ppo output folder: its curve as docs/img/rl-classic.svg "
        "(sb3_train) or docs/img/rl-slot.svg (slot_ppo)",
    )
    args = parser.parse_args()
    if args.figure is not None:
        slot = "slot_ppo_vs" in (args.figure / "results.json").read_text()
        figure(args.figure, Path("docs/img/rl-slot.svg" if slot else "docs/img/rl-classic.svg"))
        return
    print(f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    if args.classic:
        print(f"load average: {os.getloadavg()[0]:.1f}")
        classic(
            args.seconds,
            args.profile,
            args.random_actions,
            max(1, args.warm_every),
            args.processes,
        )
        return
    config = _config(args.scenario)
    started = time.perf_counter()
    warm(args.scenario, args.episodes)
    built = time.perf_counter() - started
    print(f"markets of {args.episodes} seeds ({args.scenario}): {built:.1f} s")
    indexes = range(args.episodes)
    one = asyncio.run(play_many(config, "train", indexes, POLICY, args.concurrency))
    print(line(f"one process, {args.concurrency} in flight", one))
    if args.workers:
        if args.address is None:  # a local cluster on a loaded machine starts slowly
            os.environ.setdefault("RAY_raylet_start_wait_time_s", "300")
            os.environ.setdefault("RAY_worker_register_timeout_seconds", "600")
        batch = play_on_ray(
            config, "train", indexes, POLICY, args.workers, args.concurrency, args.address
        )
        print(line(f"Ray, {args.workers} workers", batch))


if __name__ == "__main__":
    main()
