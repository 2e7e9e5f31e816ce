"""The confusion table of the failure-mode detectors (docs/diagnosis.md): every detector against
every validation agent (agents/baselines/failing.py) and the healthy baselines, over seeds.

Runs the grid as sweeps (`merchantbench sweep`, seed by seed; resumable: run it again to finish
it or to add seeds), then diagnoses each run's record again (metrics/diagnosis.py) and prints
the table as Markdown:

    uv run python benchmarks/diagnosis_confusion.py --seeds 10 --jobs 2 --out sweeps/diagnosis

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
TOLERANCE_DAYS = {
    "activity_decay": 31,
    "premature_abandonment": 1,
    "control_loop_narrowing": 31,
    "early_sourcing_stop": 14,
}
SHORT = {
    "activity_decay": "decay", "premature_abandonment": "abandon",
    "control_loop_narrowing": "narrow", "early_sourcing_stop": "stop",
    "flat_procurement_prices": "flat", "adverse_response": "risk", "rating_adaptation": "rating",
}  # fmt: skip


def sweep_file(seeds: list[int], scenario: str) -> dict[str, Any]:
    cases = [{"agent": c.agent, "label": label, "settings": c.settings}
             for label, c in VALIDATION.items()]  # fmt: skip
    return {
        "name": "diagnosis",
        "scenarios": [{"name": scenario}],
        "seeds": seeds,
        "agents": [*HEALTHY, *cases],
        "transcript": False,
    }


def run_grid(out: Path, seeds: int, scenario: str, jobs: int) -> None:
    """Run the grid seed by seed (each round a sweep of seeds 1..k), so that a grid cut short has
    every agent on the same seeds; runs already finished are kept."""
    out.mkdir(parents=True, exist_ok=True)
    spec = out.parent / f"{out.name}.sweep.yaml"  # JSON is YAML
    for upto in range(1, seeds + 1):
        spec.write_text(json.dumps(sweep_file(list(range(1, upto + 1)), scenario), indent=2))
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


def _cell(runs: Sequence[dict[str, Any]], detector: str, agent: str) -> str:
    flags = [run[detector] for run in runs if run[detector]["flagged"]]
    own, truth = VALIDATION.get(agent, (None, None))
    text = f"{len(flags)}/{len(runs)}"
    if detector == own and truth is not None:
        tolerance = TOLERANCE_DAYS[detector]
        close = sum(f["onset_day"] is not None and abs(f["onset_day"] - truth) <= tolerance
                    for f in flags)  # fmt: skip
        text = f"**{text}** (onset ±{tolerance} d: {close})"
    elif detector == own:
        text = f"**{text}**"
    return text


def onsets(found: dict[str, list[dict[str, Any]]]) -> list[list[Any]]:
    rows = []
    for agent, (detector, truth) in VALIDATION.items():
        days = [r[detector]["onset_day"] for r in found.get(agent, []) if r[detector]["flagged"]]
        shown = ", ".join("none" if d is None else str(d) for d in days) or "–"
        rows.append([agent, SHORT[detector], "not set" if truth is None else truth, shown])
    return rows


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
    for agent in HEALTHY:
        for detector, key, pick, threshold in MARGINS:
            values = [r[detector]["evidence"].get(key) for r in found.get(agent, [])]
            kept = [v for v in values if v is not None]
            shown = f"{pick(kept):.4g}" if kept else "–"
            rows.append([agent, SHORT[detector], key.replace("_", " "), shown, threshold])
    return rows


def markdown(found: dict[str, list[dict[str, Any]]], seeds: list[int], scenario: str) -> str:
    from merchantbench.report.markdown import markdown_table

    agents = [a for a in (*VALIDATION, *HEALTHY) if a in found]
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
    days = markdown_table(["agent", "detector", "true onset day", "onset days found"],
                          onsets(found))  # fmt: skip
    return "\n\n".join([
        f"Scenario `{scenario}`, seeds {', '.join(map(str, seeds))}; cells: runs flagged / runs. "
        "On each validation "
        "agent's own detector (bold), the runs whose onset day is within the tolerance of the "
        "true day.",
        table, "False positives on the healthy baselines (expert and rule-based):", fp,
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
    args = parser.parse_args()
    if not args.no_run:
        run_grid(args.out, args.seeds, args.scenario, args.jobs)
    seeds = sorted({int(r["seed"]) for r in read_index(args.out) if r["status"] == "done"})
    text = markdown(diagnoses(args.out), seeds, args.scenario)
    print(text)
    if args.markdown:
        args.markdown.write_text(text)


if __name__ == "__main__":
    main()
