"""`merchantbench arena`: several agents, one merchant each, in one market (docs/design.md §11)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from merchantbench.cli.common import (
    CatalogOption,
    DaysOption,
    ScenarioFile,
    SetOption,
    fail,
    scenario_from_options,
    writable_dir,
)

if TYPE_CHECKING:
    from merchantbench.runs.arena import ArenaSpec
    from merchantbench.session import MarketSession


def _parse_seeds(text: str) -> list[int]:
    """`1,2,3` or `1-5` (or both: `1-3,7`)."""
    from merchantbench.seeds import SeedError, check_seed

    seeds: list[int] = []
    for part in text.split(","):
        lo, dash, hi = part.strip().partition("-")
        try:
            first = int(lo)
            last = int(hi) if dash else first
        except ValueError:
            fail(f"--seeds wants numbers like 1,2,3 or 1-5, got {part.strip()!r}")
        if last < first or last - first > 1000:
            fail(f"--seeds: {part.strip()!r} is not a range of at most 1000 seeds")
        for seed in range(first, last + 1):
            try:
                seeds.append(check_seed(seed))
            except SeedError as exc:
                fail(f"--seeds: {exc}")
    if len(set(seeds)) != len(seeds):
        fail("--seeds names a seed twice")
    return seeds


def _entrant(text: str) -> tuple[str, dict[str, Any]]:
    """`NAME` or `NAME:MODEL` for a registered LLM agent (react:gpt-4o), else an agent of your
    own (`MODULE:CLASS`, `FILE.py:CLASS`): the agent and the settings the text gives."""
    from merchantbench.agents.load import resolve_agent_name
    from merchantbench.agents.registry import AgentConfigError, agent_entry

    name, colon, model = text.partition(":")
    try:
        try:
            agent_entry(name)
            return name, ({"model": model} if colon else {})
        except AgentConfigError:
            agent = resolve_agent_name(text)
            agent_entry(agent)
            return agent, {}
    except AgentConfigError as exc:
        fail(str(exc))


def _merchant_options(pairs: list[str], ids: list[str]) -> dict[str, list[str]]:
    """`--agent-opt MERCHANT.KEY=VALUE` by merchant: MERCHANT is a merchant id (`react`,
    `expert-2`) or the position of its `--agent` (1, 2, …); `KEY=VALUE` as `run --agent-opt`."""
    found: dict[str, list[str]] = {merchant: [] for merchant in ids}
    for pair in pairs:
        target, dot, setting = pair.partition(".")
        if not dot or "=" not in setting or "=" in target:
            fail(
                f"--agent-opt wants MERCHANT.KEY=VALUE (MERCHANT: a merchant id or the --agent's "
                f"position 1, 2, …), got {pair!r}"
            )
        if target in found:
            merchant = target
        elif target.isdigit() and 1 <= int(target) <= len(ids):
            merchant = ids[int(target) - 1]
        else:
            fail(f"--agent-opt {pair!r}: no merchant {target!r} (merchants: {', '.join(ids)})")
        found[merchant].append(setting)
    return found


def _progress(market: MarketSession) -> str:
    from merchantbench.money import rmb

    parts = []
    for merchant, session in market.sessions.items():
        state = session.engine.state
        mark = " (closed)" if state.closed else ""
        parts.append(f"{merchant} ¥{rmb(state.ledger.accounts.net_assets):,.0f}{mark}")
    return " · ".join(parts)


def arena(
    agent: Annotated[
        list[str],
        typer.Option(
            "--agent",
            "-a",
            help="an agent per merchant, repeated (NAME, NAME:MODEL for an LLM agent, "
            "MODULE:CLASS); merchants are named after their agents",
        ),
    ],
    scenario: Annotated[
        str, typer.Option("--scenario", "-s", help="preset: arena, paper, small, smoke")
    ] = "arena",
    seed: Annotated[int, typer.Option("--seed", help="market and outcome seed")] = 1,
    seeds: Annotated[
        str | None,
        typer.Option("--seeds", help="one arena per seed (1,2,3 or 1-5), each in OUT/seed-N"),
    ] = None,
    catalog: CatalogOption = None,
    days: DaysOption = None,
    out: Annotated[Path | None, typer.Option("--out", help="arena directory")] = None,
    resume: Annotated[bool, typer.Option("--resume", help="continue a killed arena")] = False,
    checkpoint_seconds: Annotated[
        float,
        typer.Option(
            "--checkpoint-seconds",
            min=0,
            help="checkpoint after S seconds (0: every window); a checkpoint pickles the whole "
            "market, so the default is longer than a single run's",
        ),
    ] = 10.0,
    report: Annotated[
        bool,
        typer.Option(
            "--report",
            help="write the arena report when done (with --resume on a finished arena: only "
            "the report)",
        ),
    ] = False,
    sealed: Annotated[
        bool,
        typer.Option(
            "--sealed",
            help="a secret seed nobody sees until `merchantbench reveal` (one market; "
            "docs/sealed.md)",
        ),
    ] = False,
    progress: Annotated[bool, typer.Option(help="show a progress bar")] = True,
    agent_opt: Annotated[
        list[str] | None,
        typer.Option(
            "--agent-opt",
            help="a setting of one merchant's agent, MERCHANT.KEY=VALUE (MERCHANT: its id or "
            "its --agent's position 1, 2, …), e.g. react.base_url=http://127.0.0.1:8321/v1",
        ),
    ] = None,
    file: ScenarioFile = None,
    set_: SetOption = None,
) -> None:
    """Run several agents as merchants of one market (or one market per --seeds) and write an
    arena record to --out: each merchant's run record, and the market's."""
    from rich.console import Console

    from merchantbench.catalog.real_format import CatalogError
    from merchantbench.runs.arena import (
        ArenaSpec,
        Entrant,
        market_secret,
        merchant_ids,
    )
    from merchantbench.runs.lifecycle import CheckpointPolicy
    from merchantbench.runs.spec import RunError

    if not agent:
        fail("--agent is required, once per merchant")
    sc = scenario_from_options(scenario, file, set_, days)
    from merchantbench.cli.run import _agent_settings

    parsed = [_entrant(text) for text in agent]
    ids = merchant_ids(agent)
    options = _merchant_options(agent_opt or [], ids)
    entrants = [
        Entrant(m, name, _agent_settings(name, given, None, options[m], f"merchant {m!r}: "))
        for m, (name, given) in zip(ids, parsed, strict=True)
    ]
    seed_list = _parse_seeds(seeds) if seeds is not None else [seed]
    if sealed and seeds is not None:
        fail("--sealed plays one market: drop --seeds")
    name = "-".join(e.merchant for e in entrants) + ("-sealed" if sealed else "")
    root = out or Path("runs") / f"arena-{sc.name}-{name}"
    writable_dir(root, "--out")
    console = Console(stderr=True)
    policy = CheckpointPolicy(seconds=checkpoint_seconds)
    summaries = {}
    for one in seed_list:
        arena_dir = root if seeds is None else root / f"seed-{one}"
        again = resume and arena_dir.exists()
        try:
            secret = market_secret(arena_dir, again, sealed)
        except RunError as exc:
            fail(str(exc))
        spec = ArenaSpec(sc, one, tuple(entrants), catalog).with_secret(secret)
        if again and report and _finished(arena_dir):  # nothing to play: its report only
            metrics = _recorded_metrics(arena_dir)
        else:
            try:
                metrics = _run_with_progress(spec, arena_dir, again, progress, console, policy)
            except (RunError, CatalogError) as exc:
                fail(str(exc))
        console.print(f"arena record: {arena_dir}")
        summaries[one] = {
            m: {"final_net_assets": v["final_net_assets"], "orders": v["orders"]}
            for m, v in metrics.items()
        }
        shown = "sealed" if secret is not None else one
        typer.echo(json.dumps({"seed": shown, "merchants": summaries[one]}, ensure_ascii=False))
        if report:
            from merchantbench.report import write_report

            console.print(f"report: {write_report(arena_dir)}")
    if report and seeds is not None:
        from merchantbench.report.arena import write_seeds_report

        console.print(f"report across seeds: {write_seeds_report(root, seed_list)}")


def _finished(arena_dir: Path) -> bool:
    """Whether the arena's record says it completed (a damaged one is for `run_arena` to say)."""
    from merchantbench.record.arena import ArenaError, read_arena

    try:
        return read_arena(arena_dir).ended == "completed"
    except ArenaError:
        return False


def _recorded_metrics(arena_dir: Path) -> dict[str, dict[str, Any]]:
    """Each merchant's metrics as its finished record holds them."""
    from merchantbench.record.arena import read_arena

    manifest = read_arena(arena_dir)
    return {
        entry.id: json.loads(
            (manifest.merchant_dir(arena_dir, entry.id) / "metrics.json").read_text()
        )
        for entry in manifest.merchants
    }


def _run_with_progress(
    spec: ArenaSpec, arena_dir: Path, resume: bool, show: bool, console: Any, policy: Any
) -> dict[str, dict[str, Any]]:
    from merchantbench.cli.progress import progress_display
    from merchantbench.runs.arena import run_arena

    total = spec.scenario.clock.windows
    label = "sealed" if spec.sealed is not None else f"seed {spec.seed}"
    with progress_display(console, label, show=show) as bar:
        task = bar.add_task("starting", total=total)

        def on_window(market: MarketSession) -> None:
            bar.update(task, completed=min(market.window, total), description=_progress(market))

        return run_arena(spec, arena_dir, resume=resume, on_window=on_window, checkpoints=policy)
