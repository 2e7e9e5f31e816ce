"""The confusion table of the failure-mode detectors (docs/diagnosis.md): every detector against
every validation agent (agents/baselines/failing.py) and the healthy baselines, over seeds.

Runs the grid as sweeps (`merchantbench sweep`, seed by seed; resumable: run it again to finish
it or to add seeds), then diagnoses each run's record again (metrics/diagnosis.py) and prints
the table as Markdown:

    uv run python benchmarks/diagnosis_confusion.py --seeds 10 --jobs 2 --out sweeps/diagnosis

`--labels` narrows the grid to some configurations (the rule-based base's on `paper`, with the
healthy `rule-based` run their net assets are compared with: `--scenario paper --labels
rule-based,rb-decay-straight-143,…`); the tables name the scenario of the grid's runs.

With `--counterfactual-seeds N`, each run of seeds 1..N is also analysed by counterfactual
takeovers (`merchantbench counterfactual`, every 30 days with bisection; a healthy run under
idle, expert and rule-based, a validation agent under its base's policy and idle, a
perturbation under its base's policy; a pool of
`--jobs` workers; seed by seed, one analysis per policy, so the policy's takeovers of its own
run are played once per seed; `--counterfactual-labels` and `--counterfactual-policies`
narrow it, `--counterfactual-cached` tables only what was analysed, `--counterfactual-rederive
HASH` derives the onsets an earlier code cached again with this code's rule, playing only the
bisections whose onset moved) and the onsets are tabled
against the true days and the first day each run's store differs from its base's run
(`store_differs_from`), with the healthy runs' false positives.

Each cell counts the seeds a detector flagged; on an agent's own detector it also counts the
flags whose onset falls within the stated tolerance of the agent's true onset day. `--markdown
FILE` also writes the table there (the one in docs/diagnosis.md was made so).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from merchantbench.metrics.diagnosis import DETECTORS
from merchantbench.metrics.record import load_run_record
from merchantbench.metrics.run_metrics import metrics_of
from merchantbench.record.code_version import source_sha256
from merchantbench.sweeps.index import read_index

HEALTHY = ("expert", "rule-based", "random")


class Case(NamedTuple):
    """A validation agent of the grid: its agent and settings, the detector of its failure and
    the true onset day (None: the failure runs from day 0 and the detector gives no day)."""

    agent: str
    settings: dict[str, Any]
    detector: str
    onset: int | None


# Labels name the base (`rb-`: the rule-based operator; else the expert), the failure, its shape
# and its true onset day; the onsets are off the 30-day fork grid (docs/diagnosis.md).
VALIDATION: dict[str, Case] = {
    "decay-straight-97": Case("fail-decay", {"onset_day": 97}, "activity_decay", 97),
    "decay-halving-143": Case("fail-decay", {"onset_day": 143, "shape": "halving"},
                              "activity_decay", 143),
    "decay-step-211": Case("fail-decay", {"onset_day": 211, "shape": "step"},
                           "activity_decay", 211),
    "abandon-143": Case("fail-abandon", {"onset_day": 143}, "premature_abandonment", 143),
    "narrow-97": Case("fail-narrow", {"onset_day": 97}, "control_loop_narrowing", 97),
    "stop-sourcing-285": Case("fail-stop-sourcing", {}, "early_sourcing_stop", 285),
    "flat-prices": Case("fail-flat-prices", {}, "flat_procurement_prices", None),
    "no-risk-response-97": Case("fail-no-risk-response", {"onset_day": 97}, "adverse_response",
                                97),
    "no-rating-repricing": Case("fail-no-rating-repricing", {}, "rating_adaptation", None),
    "rb-decay-straight-143": Case("fail-decay-rb", {"onset_day": 143}, "activity_decay", 143),
    "rb-decay-halving-211": Case("fail-decay-rb", {"onset_day": 211, "shape": "halving"},
                                 "activity_decay", 211),
    "rb-decay-step-97": Case("fail-decay-rb", {"onset_day": 97, "shape": "step"},
                             "activity_decay", 97),
    "rb-abandon-211": Case("fail-abandon-rb", {"onset_day": 211}, "premature_abandonment", 211),
    "rb-stop-sourcing-285": Case("fail-stop-sourcing-rb", {}, "early_sourcing_stop", 285),
}  # fmt: skip
# Perturbations: a base that skips four windows of its year (days 176, 195, 198 and 254: a
# step to 99 % of the windows from day 97, `skip_seed` 0). Not a failure mode: the store leaves
# the base's own store from day 176, so they show what the counterfactual onset makes of a run
# that leaves its policy's store at next to no cost (docs/diagnosis.md).
PERTURBATIONS: dict[str, Case] = {
    "perturb-97": Case("fail-decay", {"onset_day": 97, "shape": "step", "step_share": 0.99},
                       "", 97),
    "rb-perturb-97": Case("fail-decay-rb", {"onset_day": 97, "shape": "step",
                                            "step_share": 0.99}, "", 97),
}  # fmt: skip
BUILT = {**VALIDATION, **PERTURBATIONS}  # the configurations built on a base, by label
TOLERANCE_DAYS = {
    "activity_decay": 15,  # the change point (docs/diagnosis.md)
    "premature_abandonment": 1,
    "control_loop_narrowing": 31,  # a monthly detector: the first day of a month
    "early_sourcing_stop": 14,
    "adverse_response": 30,  # the first unanswered outcome: when outcomes come is the run's
}
SHORT = {
    "activity_decay": "decay", "premature_abandonment": "abandon",
    "control_loop_narrowing": "narrow", "early_sourcing_stop": "stop",
    "flat_procurement_prices": "flat", "adverse_response": "risk", "rating_adaptation": "rating",
}  # fmt: skip


def sweep_file(seeds: list[int], scenario: str, labels: Sequence[str]) -> dict[str, Any]:
    cases = [{"agent": c.agent, "label": label, "settings": c.settings}
             for label, c in BUILT.items() if label in labels]  # fmt: skip
    return {
        "name": "diagnosis",
        "scenarios": [{"name": scenario}],
        "seeds": seeds,
        "agents": [*(a for a in HEALTHY if a in labels), *cases],
        "transcript": False,
    }


def run_grid(
    out: Path, seeds: int, scenario: str, jobs: int, labels: Sequence[str], first: int = 1
) -> None:
    """Run the grid's configurations `labels` seed by seed (each round a sweep of seeds
    first..k), so that a grid cut short has every agent on the same seeds; runs already
    finished are kept."""
    out.mkdir(parents=True, exist_ok=True)
    spec = out.parent / f"{out.name}.sweep.yaml"  # JSON is YAML
    for upto in range(first, seeds + 1):
        spec.write_text(
            json.dumps(sweep_file(list(range(first, upto + 1)), scenario, labels), indent=2)
        )
        command = [sys.executable, "-m", "merchantbench.cli", "sweep", str(spec), "--out",
                   str(out), "--jobs", str(jobs), "--no-progress"]  # fmt: skip
        if subprocess.run(command).returncode != 0:
            sys.exit(f"the sweep {out} did not finish (run again to resume it)")


def diagnosis_of(out: Path, run_dir: str) -> dict[str, Any]:
    """A run's `diagnosis` computed again from its record by this code (so a changed detector
    needs no new runs), cached in OUT/diagnosis-cache/ under the package's source hash."""
    cache = out / "diagnosis-cache" / source_sha256()[:16] / (run_dir.replace("/", "_") + ".json")
    if cache.is_file():
        return dict(json.loads(cache.read_text()))
    found = metrics_of(load_run_record(out / run_dir))["diagnosis"]
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(found))
    return dict(found)


def diagnoses(out: Path) -> dict[str, list[dict[str, Any]]]:
    """Each configuration's finished runs' `diagnosis`, by seed order."""
    found: dict[str, list[dict[str, Any]]] = {}
    for row in sorted(read_index(out), key=lambda r: (r["label"], r["seed"])):
        if row["status"] == "done":
            found.setdefault(row["label"], []).append(diagnosis_of(out, row["run_dir"]))
    return found


def _cell(runs: Sequence[dict[str, Any]], detector: str, label: str) -> str:
    flags = [run[detector] for run in runs if run[detector]["flagged"]]
    case = VALIDATION.get(label)
    text = f"{len(flags)}/{len(runs)}"
    if case is not None and detector == case.detector and case.onset is not None:
        tolerance = TOLERANCE_DAYS[detector]
        close = sum(f["onset_day"] is not None and abs(f["onset_day"] - case.onset) <= tolerance
                    for f in flags)  # fmt: skip
        text = f"**{text}** (onset ±{tolerance} d: {close})"
    elif case is not None and detector == case.detector:
        text = f"**{text}**"
    return text


def onsets(found: dict[str, list[dict[str, Any]]]) -> list[list[Any]]:
    rows = []
    for label, case in VALIDATION.items():
        runs = found.get(label, [])
        days = [r[case.detector]["onset_day"] for r in runs if r[case.detector]["flagged"]]
        shown = ", ".join("none" if d is None else str(d) for d in days) or "–"
        errors = [d - case.onset for d in days if d is not None and case.onset is not None]
        worst = max(errors, key=abs) if errors else None
        rows.append([label, SHORT[case.detector], "not set" if case.onset is None else case.onset,
                     shown, "–" if worst is None else f"{worst:+d}"])  # fmt: skip
    return rows


# --- the counterfactual onset (docs/counterfactual.md) ---------------------------------------
def policies_of(label: str) -> list[str]:
    """The takeover policies an analysis of a configuration uses: a healthy run every default
    policy (idle, expert) and rule-based; a validation agent its base's policy and idle; a
    perturbation its base's policy."""
    if label in HEALTHY:
        return ["idle", "expert", "rule-based"]
    if label in PERTURBATIONS:
        return [base_of(label)]
    return [base_of(label), "idle"]


def base_of(label: str) -> str:
    """The healthy agent a validation configuration or a perturbation is built on."""
    return "rule-based" if BUILT[label].agent.endswith("-rb") else "expert"


def store_differs_from(out: Path, run_dir: str, label: str, seed: int) -> int | None:
    """The first day the run's store differs from its base's run's on the same seed: the two
    records replayed side by side (fast replay: the calls that change the store), their state
    hashes compared as each window opens; the day of the window before the first that opens on
    a different store (the day the run first did something to its store that its base did
    not). No store-based measure, the counterfactual onset included, can tell the two runs
    apart before it. None when the stores never differ (or the base's run is missing)."""
    from merchantbench.replay.replayer import Replayer
    from merchantbench.replay.source import RecordSource

    base = out / "runs" / base_of(label) / f"s{seed}"
    if not (base / "run.json").is_file():
        return None
    mine = Replayer(RecordSource.open(out / run_dir, None), check_reads=False)
    theirs = Replayer(RecordSource.open(base, None), check_reads=False)
    try:
        per_day = 24 // mine.session.scenario.clock.hours_per_window
        for window, _ in zip(mine.windows(), theirs.windows(), strict=False):
            if mine.session.state_hash() != theirs.session.state_hash():
                return int((window - 1) // per_day)
        return None
    finally:
        mine.close()
        theirs.close()


def _cache_file(out: Path, run_dir: str, policy: str) -> Path:
    return (out / "counterfactual-cache" / source_sha256()[:16]
            / f"{run_dir.replace('/', '_')}.{policy}.json")  # fmt: skip


def rederive(out: Path, rows: Sequence[dict[str, Any]], policy: str, earlier: str) -> None:
    """Each run's onset under `policy` derived again with this code's rule from the record
    cached by the code of source hash `earlier` (`onset.from_saved`: no takeover played), when
    this code has none and the record's bisection forks are the ones this rule asks for (an
    onset that moved to another period is left to `analyse_seed`, which plays it)."""
    from merchantbench.counterfactual.onset import complete, from_saved
    from merchantbench.counterfactual.parent import Parent

    for row in rows:
        mine = _cache_file(out, row["run_dir"], policy)
        theirs = mine.parent.parent / earlier / mine.name
        if mine.is_file() or not theirs.is_file():
            continue
        initial = Parent.read(out / row["run_dir"]).manifest.initial_net_assets
        search = from_saved(json.loads(theirs.read_text()), initial)
        if complete(search):
            mine.parent.mkdir(parents=True, exist_ok=True)
            mine.write_text(json.dumps(search.to_json()))
        else:
            print(f"{row['run_dir']} under {policy}: its onset moved; analysed again",
                  file=sys.stderr)  # fmt: skip


def analyse_seed(out: Path, rows: Sequence[dict[str, Any]], policy: str, jobs: int) -> None:
    """The onset under `policy` of every run of `rows` (one seed) without one cached, in one
    analysis (`analyse`, every 30 days, bisection): the policy's takeovers of its own run are
    played once for all of them. Each run's onset is cached in OUT/counterfactual-cache/ under
    the package's source hash."""
    from merchantbench.counterfactual.analysis import analyse
    from merchantbench.counterfactual.execute import executor_of
    from merchantbench.counterfactual.parent import Parent
    from merchantbench.counterfactual.takeover import Policy

    todo = [r for r in rows if not _cache_file(out, r["run_dir"], policy).is_file()]
    if not todo:
        return
    print(f"counterfactual {policy}: {', '.join(r['run_dir'] for r in todo)}", file=sys.stderr,
          flush=True)  # fmt: skip
    parents = [Parent.read(out / r["run_dir"]) for r in todo]
    analyses = analyse(parents, [Policy(policy)], 30, executor_of("local", jobs))
    for row, analysis in zip(todo, analyses, strict=True):
        cache = _cache_file(out, row["run_dir"], policy)
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(analysis.curves[0].to_json()["onset"]))


def counterfactuals(
    out: Path,
    jobs: int,
    labels: Sequence[str],
    seeds: Sequence[int],
    policies: Sequence[str],
    analyse_missing: bool = True,
    earlier: str | None = None,
) -> dict[str, list[dict[str, Any]]]:
    """Each configuration's analysed runs (seeds in order): their onsets by policy (those of
    `policies_of` among `policies`), with `seed` and, for a configuration built on a base,
    `store_day` (store_differs_from). Seed by seed, one
    analysis per policy (with `analyse_missing`; else only the cached analyses are read); with
    `earlier` (a source hash), the onsets that code cached are derived again first
    (`rederive`)."""
    done = [r for r in read_index(out) if r["status"] == "done" and r["label"] in labels
            and r["seed"] in seeds]  # fmt: skip
    for seed in sorted({r["seed"] for r in done}):
        for policy in policies:
            rows = [r for r in done if r["seed"] == seed and policy in policies_of(r["label"])]
            if rows and earlier:
                rederive(out, rows, policy, earlier)
            if rows and analyse_missing:
                analyse_seed(out, rows, policy, jobs)
    found: dict[str, list[dict[str, Any]]] = {}
    for row in sorted(done, key=lambda r: (r["seed"], r["label"])):
        onsets: dict[str, Any] = {"seed": row["seed"]}
        for policy in policies_of(row["label"]):
            cache = _cache_file(out, row["run_dir"], policy)
            if cache.is_file():
                onsets[policy] = json.loads(cache.read_text())
        if row["label"] in BUILT:
            onsets["store_day"] = store_differs_from(out, row["run_dir"], row["label"],
                                                     row["seed"])  # fmt: skip
        found.setdefault(row["label"], []).append(onsets)
    return found


def _margin(onset: dict[str, Any]) -> float:
    """A curve's margin: a departure's (its noise forks', onset.py) when it has one, else the
    largest of its later periods' (noise and the run's own spread)."""
    departure = onset.get("departure") or {}
    if departure.get("margin") is not None:
        return float(departure["margin"])
    return float(max((d.get("margin", onset["margin"]) for d in onset["damage"][1:]),
                     default=onset["margin"]))  # fmt: skip


def _errors(days: Sequence[int | None], truths: Sequence[int | None]) -> list[int]:
    return [d - t for d, t in zip(days, truths, strict=True) if d is not None and t is not None]


def counterfactual_markdown(found: dict[str, list[dict[str, Any]]], scenario: str) -> str:
    from merchantbench.report.markdown import markdown_table

    rows: list[list[Any]] = []
    healthy_runs, healthy_flags, perturbed_runs, perturbed_flags = 0, 0, 0, 0
    by_base: dict[tuple[str, str], list[int]] = {}
    for label in [*HEALTHY, *VALIDATION, *PERTURBATIONS]:
        for policy in policies_of(label):
            runs = [r for r in found.get(label, []) if policy in r]
            if not runs:
                continue
            days = [r[policy]["onset_day"] for r in runs]
            truth = VALIDATION[label].onset if label in VALIDATION else None
            errors = _errors(days, [truth] * len(days))
            store_days = [r.get("store_day") for r in runs]
            after_store = _errors(days, store_days)
            forks = [len(r[policy]["bisection_forks"]) for r in runs
                     if r[policy]["onset_day"] is not None]  # fmt: skip
            noise = [len(r[policy].get("noise_forks", [])) for r in runs]
            if label in HEALTHY:
                healthy_runs += len(runs)
                healthy_flags += sum(d is not None for d in days)
            elif label in PERTURBATIONS:
                perturbed_runs += len(runs)
                perturbed_flags += sum(d is not None for d in days)
            else:
                tally = by_base.setdefault((base_of(label), policy), [0, 0, 0, 0, 0])
                tally[0] += len(runs)
                tally[1] += sum(d is not None for d in days)
                tally[2] += sum(abs(e) <= 15 for e in errors)
                tally[3] += sum(v is not None and v - truth <= 15 for v in store_days)
                tally[4] += sum(abs(e) <= 15 for e in after_store)
            rows.append([
                label, policy, "none" if truth is None else truth,
                ", ".join("none" if d is None else str(d) for d in days),
                "–" if truth is None else f"{sum(abs(e) <= 15 for e in errors)}/{len(runs)}",
                "–" if not errors else ", ".join(f"{e:+d}" for e in errors),
                "–" if label in HEALTHY else
                ", ".join("never" if v is None else str(v) for v in store_days),
                "–" if label in HEALTHY else
                f"{sum(abs(e) <= 15 for e in after_store)}/{len(runs)}",
                "–" if not forks else f"{min(forks)}–{max(forks)}",
                "–" if not any(noise) else f"{min(noise)}–{max(noise)}",
                f"{min(_margin(r[policy]) for r in runs):,.0f}–"
                f"{max(_margin(r[policy]) for r in runs):,.0f}",
            ])  # fmt: skip
    rate = f"{100 * healthy_flags / healthy_runs:.1f} %" if healthy_runs else "–"
    summary = markdown_table(
        ["base", "policy", "runs", "onset found", "within ±15 d of the failure day",
         "store differs by the failure day + 15", "within ±15 d of the first day the store "
         "differs"],
        [[base, policy, n, found_, f"{near}/{n}", f"{reachable}/{n}", f"{near_store}/{n}"]
         for (base, policy), (n, found_, near, reachable, near_store) in by_base.items()],
    )  # fmt: skip
    perturbed = (f" Perturbations (a base skipping 4 windows of its year) with an onset: "
                 f"{perturbed_flags} of {perturbed_runs}." if perturbed_runs else "")  # fmt: skip
    return "\n\n".join([
        f"Counterfactual onset of damage, scenario `{scenario}` (every 30 days, bisected to 7 "
        "days; docs/counterfactual.md). `store differs from day`: the first day the run did "
        "something to its store that its base's run on the same seed did not (the two records "
        "replayed side by side, state hashes compared at every window; `never`: the stores "
        "never differ): no store-based onset can date a failure before it. `margin`: a "
        "departure's from its noise forks (docs/counterfactual.md, step 6), else the largest "
        "of the later periods'.",
        markdown_table(["configuration", "policy", "true onset day", "onset days found",
                        "within ±15 d", "errors (days)", "store differs from day",
                        "within ±15 d of it", "bisection steps", "noise forks",
                        "margin (RMB)"],
                       rows),
        "By base and policy (validation agents):",
        summary,
        f"Healthy runs × policies with an onset (false positives): {healthy_flags} of "
        f"{healthy_runs} ({rate}).{perturbed}",
    ]) + "\n"  # fmt: skip


# The healthy baselines' figure closest to each threshold: (detector, evidence key, max or min,
# the threshold as docs/diagnosis.md states it).
MARGINS = (
    ("activity_decay", "fitted_drop", max, "flagged at ≥ 0.20"),
    ("early_sourcing_stop", "gap_days", max, "flagged at ≥ 45"),
    ("flat_procurement_prices", "band_growth", min, "flagged at ≤ 1.25 (if capital ≥ 2×)"),
    ("flat_procurement_prices", "capital_growth", min, "judged at ≥ 2"),
    ("adverse_response", "chain_rate", min, "flagged below 0.05 (≥ 10 listings)"),
    ("rating_adaptation", "p_value", min, "flagged below 0.001 (and < ½ the usual rate)"),
)


def margins(found: dict[str, list[dict[str, Any]]]) -> list[list[Any]]:
    rows = []
    for agent in (a for a in HEALTHY if a in found):
        for detector, key, pick, threshold in MARGINS:
            values = [r[detector]["evidence"].get(key) for r in found.get(agent, [])]
            kept = [v for v in values if v is not None]
            shown = f"{pick(kept):.4g}" if kept else "–"
            rows.append([agent, SHORT[detector], key.replace("_", " "), shown, threshold])
    return rows


def markdown(found: dict[str, list[dict[str, Any]]], seeds: list[int], scenario: str) -> str:
    from merchantbench.report.markdown import markdown_table

    agents = [a for a in (*VALIDATION, *PERTURBATIONS, *HEALTHY) if a in found]
    healthy_names = ", ".join(a for a in HEALTHY if a in found)
    table = markdown_table(
        ["agent \\ detector", *(SHORT[d] for d in DETECTORS)],
        [[a, *(_cell(found[a], d, a) for d in DETECTORS)] for a in agents],
    )
    healthy = [r for a in HEALTHY for r in found.get(a, [])]
    false = [sum(r[d]["flagged"] for r in healthy) for d in DETECTORS]
    fp = markdown_table(
        ["detector", "healthy runs", "flagged", "false-positive rate"],
        [[SHORT[d], len(healthy), f, f"{100 * f / len(healthy):.1f} %" if healthy else "–"]
         for d, f in zip(DETECTORS, false, strict=True)],
    )  # fmt: skip
    days = markdown_table(["configuration", "detector", "true onset day", "onset days found",
                           "largest error (days)"], onsets(found))  # fmt: skip
    return "\n\n".join([
        f"Scenario `{scenario}`, seeds {', '.join(map(str, seeds))}; cells: runs flagged / runs. "
        "On each validation "
        "agent's own detector (bold), the runs whose onset day is within the tolerance of the "
        "true day.",
        table, f"False positives on the healthy baselines ({healthy_names}):", fp,
        "Onset days found on each validation agent's own detector:", days,
        "The healthy baselines' figures closest to each threshold (over their runs):",
        markdown_table(["agent", "detector", "figure", "closest", "threshold"], margins(found)),
    ]) + "\n"  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--scenario", default="small")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("sweeps/diagnosis"))
    parser.add_argument("--markdown", type=Path, help="also write the table to this file")
    parser.add_argument("--no-run", action="store_true", help="only read the finished runs")
    parser.add_argument("--first-seed", type=int, default=1,
                        help="the grid's and the counterfactual's seeds start here (held-out "
                        "seeds: --first-seed 11 --seeds 20)")  # fmt: skip
    parser.add_argument(
        "--labels",
        default="",
        help="comma-separated configurations the grid runs (all: the healthy and validation ones)",
    )
    parser.add_argument(
        "--counterfactual-seeds",
        type=int,
        default=0,
        help="also the counterfactual onset on seeds 1..N (slow: forks)",
    )
    parser.add_argument(
        "--counterfactual-labels",
        default="",
        help="comma-separated configurations for the counterfactual (all)",
    )
    parser.add_argument(
        "--counterfactual-policies",
        default="idle,rule-based,expert",
        help="comma-separated policies to analyse with (each configuration's own among them)",
    )
    parser.add_argument("--counterfactual-cached", action="store_true",
                        help="table only the counterfactual analyses already cached")  # fmt: skip
    parser.add_argument("--counterfactual-rederive", metavar="SOURCE_HASH", default=None,
                        help="derive the onsets cached by that code again with this code's rule, "
                        "no takeover played (OUT/counterfactual-cache/SOURCE_HASH)")  # fmt: skip
    args = parser.parse_args()
    grid = args.labels.split(",") if args.labels else [*HEALTHY, *VALIDATION, *PERTURBATIONS]
    unknown = [label for label in grid if label not in HEALTHY and label not in BUILT]
    if unknown:
        parser.error(f"unknown configurations: {', '.join(unknown)}")
    if not args.no_run:
        run_grid(args.out, args.seeds, args.scenario, args.jobs, grid, args.first_seed)
    done = [r for r in read_index(args.out) if r["status"] == "done"]
    seeds = sorted({int(r["seed"]) for r in done})
    scenario = ", ".join(sorted({str(r["scenario"]) for r in done})) or args.scenario
    text = markdown(diagnoses(args.out), seeds, scenario)
    if args.counterfactual_seeds:
        labels = args.counterfactual_labels.split(",") if args.counterfactual_labels else grid
        found = counterfactuals(
            args.out,
            args.jobs,
            labels,
            range(args.first_seed, args.counterfactual_seeds + 1),
            args.counterfactual_policies.split(","),
            not args.counterfactual_cached,
            args.counterfactual_rederive,
        )
        text += "\n" + counterfactual_markdown(found, scenario)
    print(text)
    if args.markdown:
        args.markdown.write_text(text)


if __name__ == "__main__":
    main()
