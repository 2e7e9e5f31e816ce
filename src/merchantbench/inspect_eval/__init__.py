"""MerchantBench as an Inspect AI task (the optional extra `merchantbench[inspect]`).

    inspect eval merchantbench/merchantbench --model PROVIDER/MODEL -T scenario=smoke -T seed=1

- `task.merchantbench`: the task (one sample per seed, the score is final net assets);
- `solver.play_store`: the window loop over Inspect's model API and tool executor;
- `tools.env_tool_defs`: the environment tools as Inspect `ToolDef`s, from their schemas;
- `driver.InspectDriver`: the run's driver as the run record names it (`inspect`).

Guide: docs/frameworks.md, section "Inspect AI".
"""
