"""MerchantBench as a training environment for language-model RL (docs/rl.md).

- `splits`: train, validation and test seeds, disjoint by construction; test is a sealed pool.
- `episode`: training episodes (presets of 30, 90 and 365 days starting on any day of the
  market's year), rewards per window or at the end, a bounded observation.
- Framework adapters, each a thin layer over `episode`: `openenv_env` (OpenEnv, the `openenv`
  extra), `trl_env` (TRL's `environment_factory`; `trl_tiny`: a GRPO run of TRL on the CPU with
  a tiny local model, in TRL's own environment), `mcp_episode` (an episode as an MCP server
  over stdio: the tools of the `verifiers` environment, `verifiers_env/`), `rollouts` (many
  episodes in one process, and on Ray).

It imports no front end; the Gymnasium front end (`merchantbench.gym`) plays `episode`'s
episodes with its training options. The isolated environments of verifiers and TRL are made by
`merchantbench.training_envs`.
"""
