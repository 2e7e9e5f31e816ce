"""verifiers starts a rollout's tool server as `python -m merchantbench_rl`."""

from merchantbench_rl import StoreTools

StoreTools.run()
