"""verifiers' own environment: version-pinned, isolated from ours, made once and reused.

Prime Intellect's `verifiers` pins `mcp==2.0.0` and `openai<3`, which our environment cannot
hold, so like the Hermes Agent's it gets a virtual environment of its own, made with uv under our
data directory, holding `verifiers` and our taskset package (`verifiers_taskset/`, the module
`merchantbench_rl`, which never imports MerchantBench). A file lock makes concurrent first uses
build it once; a marker written last says the build finished.

    MERCHANTBENCH_VERIFIERS_DIR   where the environment lives (default: the user data directory
                                  of merchantbench, `verifiers/`)

`eval_command(...)` is the `vf-eval` command line of an evaluation: the taskset's episodes, the
tool server started in our interpreter (`MERCHANTBENCH_PYTHON`, set by `eval_env`), the model of
an OpenAI-compatible endpoint. docs/rl.md.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import platformdirs

VERIFIERS_VERSION = "0.4.0"
TASKSET_DIR = Path(__file__).parent / "verifiers_taskset"
TASKSET_ID = "merchantbench-rl"
_MARKER = "merchantbench-env.json"


class VerifiersEnvError(RuntimeError):
    """The environment could not be made (no uv, the package index unreachable, ...)."""


@dataclass(frozen=True)
class VerifiersEnv:
    """A ready environment: its root, interpreter and `vf-eval`, and how long it took to make."""

    root: Path
    setup_seconds: float

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    @property
    def vf_eval(self) -> Path:
        return self.root / "bin" / "vf-eval"


def verifiers_dir() -> Path:
    configured = os.environ.get("MERCHANTBENCH_VERIFIERS_DIR")
    return Path(configured or Path(platformdirs.user_data_dir("merchantbench")) / "verifiers")


def _recipe() -> str:
    """The version and a hash of the taskset package's files: a change remakes the env."""
    digest = hashlib.sha256(VERIFIERS_VERSION.encode())
    for path in sorted(TASKSET_DIR.rglob("*")):
        if path.is_file() and path.suffix in (".py", ".toml"):
            digest.update(path.relative_to(TASKSET_DIR).as_posix().encode())
            digest.update(path.read_bytes())
    return f"{VERIFIERS_VERSION}-{digest.hexdigest()[:12]}"


def find_env() -> VerifiersEnv | None:
    """The environment if it has been made for this recipe, else None; never makes one."""
    root = verifiers_dir() / f"env-{_recipe()}"
    try:
        seconds = float(json.loads((root / _MARKER).read_text())["setup_seconds"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return VerifiersEnv(root, seconds)


def ensure_env() -> VerifiersEnv:
    """The environment, made now if it does not exist yet (blocking; a minute or two).

    Raises:
        VerifiersEnvError: uv is missing or the install failed; the message is one line.
    """
    recipe = _recipe()
    root = verifiers_dir() / f"env-{recipe}"
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f".env-{recipe}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = find_env()
        if found is not None:
            return found
        started = time.perf_counter()
        _build(root)
        seconds = round(time.perf_counter() - started, 2)
        (root / _MARKER).write_text(json.dumps({"recipe": recipe, "setup_seconds": seconds}))
        return VerifiersEnv(root, seconds)


def _build(root: Path) -> None:
    uv = shutil.which("uv")
    if uv is None:
        raise VerifiersEnvError("uv is not on PATH: it makes verifiers' environment")
    if root.exists():
        shutil.rmtree(root)  # a build that died half-way
    _uv(uv, "venv", "--quiet", "--python", sys.executable, str(root))
    python = str(root / "bin" / "python")
    packages = [f"verifiers=={VERIFIERS_VERSION}", str(TASKSET_DIR)]
    _uv(uv, "pip", "install", "--quiet", "--python", python, *packages)


def _uv(uv: str, *args: str) -> None:
    # Not our project's environment: uv must not pick it up from the working directory.
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "UV_PROJECT")}
    done = subprocess.run([uv, *args], capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise VerifiersEnvError(f"making verifiers' environment failed: {last}")


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
        str(env.vf_eval), TASKSET_ID,
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
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "UV_PROJECT")}
    return {**env, "MERCHANTBENCH_PYTHON": sys.executable, api_key_var: api_key}
