"""verifiers' own environment (`merchantbench.training_envs`: version-pinned, isolated from
ours, made once with uv and reused) and the `vf-eval` command that evaluates our taskset in it.

Prime Intellect's `verifiers` pins `mcp==2.0.0` and `openai<3`, which our environment cannot
hold; its environment holds `verifiers` and our taskset package (`verifiers_taskset/`, the
module `merchantbench_rl`, which never imports MerchantBench).

    MERCHANTBENCH_VERIFIERS_DIR   where the environment lives (default: the user data directory
                                  of merchantbench, `verifiers/`)
    python -m merchantbench.training_envs verifiers                  # make it ahead

`eval_command(...)` is the `vf-eval` command line of an evaluation: the taskset's episodes, the
tool server started in our interpreter (`MERCHANTBENCH_PYTHON`, set by `eval_env`), the model of
an OpenAI-compatible endpoint. docs/rl.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

from merchantbench import training_envs
from merchantbench.training_envs import VERIFIERS_VERSION, IsolatedEnv, IsolatedEnvError

__all__ = [
    "TASKSET_ID",
    "VERIFIERS_VERSION",
    "VerifiersEnv",
    "VerifiersEnvError",
    "ensure_env",
    "eval_command",
    "eval_env",
    "find_env",
]

TASKSET_ID = "merchantbench-rl"
RECIPE = training_envs.RECIPES["verifiers"]
VerifiersEnv = IsolatedEnv
VerifiersEnvError = IsolatedEnvError


def find_env() -> VerifiersEnv | None:
    """The environment if it has been made (by CI, `python -m merchantbench.training_envs
    verifiers` or an earlier `ensure_env`), else None; never makes one."""
    return training_envs.find_env(RECIPE)


def ensure_env() -> VerifiersEnv:
    """The environment, made now if it does not exist yet (blocking; a minute or two).

    Raises:
        VerifiersEnvError: uv is missing or the install failed; the message is one line.
    """
    return training_envs.ensure_env(RECIPE)


def eval_command(
    env: VerifiersEnv,
    *,
    base_url: str,
    model: str,
    api_key_var: str,
    out: Path,
    split: str = "validation",
    first: int = 0,
    count: int = 8,
    length: str = "30d",
    start_day: int = 0,
    scenario: str = "smoke",
    rollouts: int = 1,
) -> list[str]:
    """The `vf-eval` command of an evaluation on our taskset, with verifiers' own chat harness
    (`null`: the model and the MCP tools, nothing else) in a local subprocess runtime."""
    return [
        str(env.bin("vf-eval")), TASKSET_ID,
        "--env.taskset.split", split, "--env.taskset.first", str(first),
        "--env.taskset.count", str(count), "--env.taskset.length", length,
        "--env.taskset.start-day", str(start_day),
        "--env.taskset.task.tools.scenario", scenario,
        "--env.agent.harness.id", "null", "--env.agent.runtime.type", "subprocess",
        "-m", model, "--client.base-url", base_url, "--client.api-key-var", api_key_var,
        "-r", str(rollouts), "--no-push", "-o", str(out),
    ]  # fmt: skip


def eval_env(api_key_var: str, api_key: str) -> dict[str, str]:
    """The environment of `vf-eval`: ours, less our virtualenv, with `MERCHANTBENCH_PYTHON`
    (the interpreter the tool server starts episodes in) and the model's key."""
    env = training_envs.clean_environ()
    return {**env, "MERCHANTBENCH_PYTHON": sys.executable, api_key_var: api_key}
