"""The takeover curves pictured in docs/counterfactual.md (issue 21): a year on `small` of the
rule-based operator, the expert and each validation agent (`fail-*`, docs/diagnosis.md), each
analysed every 30 days, its figure drawn by the package's own SVG code (report/svg.py) and
copied to docs/img/counterfactual-small-AGENT.svg, and a Markdown table of the onsets of decay
found against each validation agent's true onset day.

Runs and analyses already in `--out` are kept (resumable): a run with its `counterfactual.json`
is analysed again from it (`reanalyse`: the measures of this code, no takeover played).

    uv run python benchmarks/counterfactual_figures.py --out /tmp/cf-figures --jobs 2 \\
        [--img docs/img] [--markdown onsets.md]
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path
from typing import Any

from merchantbench.counterfactual.analysis import RunAnalysis, analyse, reanalyse
from merchantbench.counterfactual.execute import LocalPool
from merchantbench.counterfactual.output import write_run
from merchantbench.counterfactual.parent import Parent
from merchantbench.counterfactual.takeover import Policy
from merchantbench.report.counterfactual import COUNTERFACTUAL_FIGURE, read_counterfactual
from merchantbench.report.table import markdown_table
from merchantbench.runs.runner import run_agent
from merchantbench.runs.spec import RunSpec
from merchantbench.scenario import load_scenario

SCENARIO = "small"
EVERY_DAYS = 30
HEALTHY = ("rule-based", "expert")
# Each validation agent's true onset day (its default `onset_day`; 0: failing from the start).
VALIDATION = {
    "fail-decay": 92,
    "fail-abandon": 100,
    "fail-narrow": 61,
    "fail-stop-sourcing": 285,
    "fail-flat-prices": 0,
    "fail-no-risk-response": 0,
    "fail-no-rating-repricing": 0,
}
MONTH_DAYS = 31


def policies_of(agent: str) -> list[Policy]:
    names = ("idle", "rule-based", "expert") if agent in HEALTHY else ("idle", "expert")
    return [Policy(name) for name in names]


def analysis_of(run_dir: Path, agent: str, jobs: int) -> RunAnalysis:
    parent = Parent.read(run_dir)
    saved = read_counterfactual(run_dir)
    wanted = [p.label for p in policies_of(agent)]
    if saved is not None and [c["label"] for c in saved["curves"]] == wanted:
        return reanalyse(parent, saved)
    return analyse([parent], policies_of(agent), EVERY_DAYS, LocalPool(jobs))[0]


def onset_row(agent: str, data: dict[str, Any]) -> list[Any]:
    expert = next(c for c in data["curves"] if c["label"] == "expert")
    found, truth = expert["onset_day"], VALIDATION.get(agent)
    off = None if found is None or truth is None else abs(found - truth)
    within = "—" if off is None else ("yes" if off <= MONTH_DAYS else "no")
    return [agent, "—" if truth is None else truth, "none" if found is None else found,
            "—" if off is None else off, within, f"{expert['margin']:,.2f}",
            f"{data['continuing']:,.2f}", f"{expert['from_start']:,.2f}"]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="where the runs go")
    parser.add_argument("--img", type=Path, default=Path("docs/img"))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--markdown", type=Path, help="write the onset table here too")
    args = parser.parse_args()
    scenario = load_scenario(SCENARIO)
    rows = []
    for agent in (*HEALTHY, *VALIDATION):
        run_dir = args.out / f"{SCENARIO}-{agent}"
        if not (run_dir / "metrics.json").is_file():
            run_agent(RunSpec(agent, scenario, args.seed), run_dir)
        analysis = analysis_of(run_dir, agent, args.jobs)
        write_run(analysis)
        args.img.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(run_dir / COUNTERFACTUAL_FIGURE,
                        args.img / f"counterfactual-{SCENARIO}-{agent}.svg")  # fmt: skip
        data = json.loads((run_dir / "counterfactual.json").read_text())
        rows.append(onset_row(agent, data))
        print(agent, json.dumps({c["label"]: c["onset_day"] for c in data["curves"]}), flush=True)
    table = markdown_table(
        ["agent", "true onset day", "expert's onset found", "days off", "within a month",
         "margin (RMB)", "continuing", "expert from day 0"], rows)  # fmt: skip
    print(table)
    if args.markdown is not None:
        args.markdown.write_text(table + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
