"""The optional parts of an installation: what each one is for, whether it is here, how to add it.

The package runs without them; some agents, executors and tests need them. This is the one
list: `merchantbench doctor` prints it, and the test suite skips a test that needs a missing part
with the part's install line (`tests/requires.py`), or fails it when `REQUIRE_ALL_ENV` is set,
as CI does (`.ci/run`).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REQUIRE_ALL_ENV = "MERCHANTBENCH_REQUIRE_ALL"
CHROMIUM_ENV = "MERCHANTBENCH_CHROMIUM"


@dataclass(frozen=True)
class Part:
    """One optional part.

    Attributes:
        key: Short name (`bwrap`, `chromium`, ...), used by tests' `requires` marker.
        name: What a person calls it.
        needed_for: What it adds.
        install: How to add it, one line.
        locate: Where it is (a path or a version), or None when it is missing.
        probe: Whether a present part also works here, and a one-line reason (slower than
            `locate`: `merchantbench doctor` asks, the tests do not).
    """

    key: str
    name: str
    needed_for: str
    install: str
    locate: Callable[[], str | None]
    probe: Callable[[], tuple[bool, str]] | None = None

    def missing_reason(self, detail: str | None = None) -> str:
        """`needs NAME: INSTALL` (and what went wrong, if known): a skip's one-line reason."""
        extra = f" ({detail})" if detail else ""
        return f"needs {self.name}: {self.install}{extra}"


def require_all() -> bool:
    """Whether a missing part is an error rather than a reason to skip (CI)."""
    return os.environ.get(REQUIRE_ALL_ENV, "") not in ("", "0")


def _bwrap() -> str | None:
    from merchantbench.agents.llm.sandbox import find_bwrap

    return find_bwrap()


def _sandbox_works() -> tuple[bool, str]:
    from merchantbench.agents.llm.sandbox import probe_sandbox

    return probe_sandbox()


def chromium_path() -> Path:
    """The Chromium the browser tests drive: `MERCHANTBENCH_CHROMIUM`, else Debian's."""
    configured = os.environ.get(CHROMIUM_ENV)
    return Path(configured or shutil.which("chromium") or "/usr/bin/chromium")


def _chromium() -> str | None:
    path = chromium_path()
    return str(path) if path.is_file() and os.access(path, os.X_OK) else None


def _hermes_env() -> str | None:
    from merchantbench.agents.hermes_agent.env import find_env

    found = find_env()
    return None if found is None else f"{found.root} (hermes-agent {found.version})"


def _training_env(name: str) -> Callable[[], str | None]:
    def locate() -> str | None:
        from merchantbench.training_envs import RECIPES, find_env

        found = find_env(RECIPES[name])
        return None if found is None else str(found.root)

    return locate


def _making(name: str) -> str:
    from merchantbench.training_envs import RECIPES

    return f"making it takes {RECIPES[name].about}"


def _distribution(module: str, distribution: str) -> Callable[[], str | None]:
    def locate() -> str | None:
        if importlib.util.find_spec(module) is None:
            return None
        try:
            return f"{distribution} {importlib.metadata.version(distribution)}"
        except importlib.metadata.PackageNotFoundError:
            return distribution

    return locate


PARTS: dict[str, Part] = {
    part.key: part
    for part in (
        Part(
            "bwrap",
            "bubblewrap (bwrap)",
            "the code sandbox of execute_code in --agent hermes and hermes-agent; Linux only",
            "apt-get install bubblewrap",
            _bwrap,
            _sandbox_works,
        ),
        Part(
            "chromium",
            "Chromium",
            "the browser tests of the playground and the dashboard, tests/web",
            f"apt-get install chromium, or set {CHROMIUM_ENV} to a Chromium binary",
            _chromium,
        ),
        Part(
            "hermes-agent",
            "the Hermes Agent environment",
            "--agent hermes-agent, in its own pinned environment made once",
            "made by the first `merchantbench run --agent hermes-agent`, which needs uv, "
            "bubblewrap and the package index",
            _hermes_env,
        ),
        Part(
            "ray",
            "Ray",
            "sweeps on a Ray cluster: merchantbench sweep --executor ray",
            "uv sync --extra ray",
            _distribution("ray", "ray"),
        ),
        Part(
            "inspect",
            "Inspect AI",
            "the Inspect task: inspect eval merchantbench/merchantbench",
            "uv sync --extra inspect",
            _distribution("inspect_ai", "inspect-ai"),
        ),
        Part(
            "openenv",
            "OpenEnv",
            "the OpenEnv training environment: merchantbench.rl.openenv_env (docs/rl.md)",
            "uv sync --extra openenv",
            _distribution("openenv", "openenv-core"),
        ),
        Part(
            "pettingzoo",
            "PettingZoo",
            "a market of several merchants as a PettingZoo ParallelEnv: merchantbench.pettingzoo "
            "(docs/arena.md)",
            "uv sync --extra pettingzoo",
            _distribution("pettingzoo", "pettingzoo"),
        ),
        Part(
            "verifiers",
            "the verifiers environment",
            "vf-eval on the taskset merchantbench-rl, in its own pinned environment (docs/rl.md; "
            f"{_making('verifiers')})",
            "uv run python -m merchantbench.training_envs verifiers",
            _training_env("verifiers"),
        ),
        Part(
            "trl",
            "the TRL environment",
            "GRPO training with TRL and PyTorch (CPU), in its own pinned environment (docs/rl.md; "
            f"{_making('trl')})",
            "uv run python -m merchantbench.training_envs trl",
            _training_env("trl"),
        ),
        Part(
            "sb3",
            "the stable-baselines3 environment",
            "PPO on the classic store env (merchantbench.rl.classic), with stable-baselines3 and "
            f"PyTorch (CPU) in its own pinned environment (docs/rl.md; {_making('sb3')})",
            "uv run python -m merchantbench.training_envs sb3",
            _training_env("sb3"),
        ),
    )
}
