"""Forks of a run record and counterfactual takeovers (docs/counterfactual.md).

- `parent.py`: the run a fork starts from, and its fork windows.
- `fork.py`: `fork_run`, a fork as a normal run record naming its parent and fork window
  (`merchantbench fork`).
- `takeover.py`: one takeover without a record (the final net assets if a policy had run the
  store from a window on), the unit of work of the analysis.
- `execute.py`: where takeovers run: in this process, a local process pool, or Ray.
- `rounds.py`: takeovers played in rounds, each distinct takeover once.
- `analysis.py`: takeover curves and what they say of a run (value built, damage done, regret
  by period), the policy's takeovers of its own run and the bisection; `onset.py`: the onset of
  damage against the run itself; `sweep.py` aggregates them by configuration.
- `output.py`: what an analysis writes (the JSON, the figure, the report again); the tables
  and figures are drawn by `report/counterfactual.py`.
"""
