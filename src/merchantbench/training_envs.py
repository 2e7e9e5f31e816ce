"""The isolated environments of the training frameworks: version-pinned, apart from ours, made
once and reused.

- **verifiers** (Prime Intellect's) pins `mcp==2.0.0` and `openai<3`, which our environment
  cannot hold: a virtual environment made with uv, holding `verifiers` and our taskset package
  (`rl/verifiers_taskset/`, which never imports MerchantBench).
- **stable-baselines3** (the classic-RL route, `merchantbench.rl.classic`) needs PyTorch too:
  made like TRL's, with pip, torch 2.13.0 from the disk, then stable-baselines3.
- **TRL** pulls in PyTorch, which our environment does not carry: a virtual environment made
  with pip (pip takes the CPU build of torch 2.13.0 this machine keeps on disk; other
  installers download a CUDA build of several GB), then TRL and our own dependencies at the
  versions our environment has. MerchantBench itself is not installed there: the GRPO run
  imports this checkout's package (`merchantbench.rl.trl_tiny`).

Each lives under `$MERCHANTBENCH_<NAME>_DIR` (default: the user data directory of merchantbench,
`<name>/`), in a folder named by a hash of its recipe, so a change of pins remakes it. A file
lock makes concurrent first uses build it once; a marker written last says the build finished.

    python -m merchantbench.training_envs verifiers trl sb3   # make them (CI does, ahead)
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import platformdirs

__all__ = ["RECIPES", "IsolatedEnv", "IsolatedEnvError", "Recipe", "ensure_env", "find_env"]

_MARKER = "merchantbench-env.json"
_PACKAGE = Path(__file__).parent


class IsolatedEnvError(RuntimeError):
    """An environment could not be made (no uv, the package index unreachable, ...)."""


@dataclass(frozen=True)
class Recipe:
    """How one environment is made.

    Attributes:
        name: `verifiers` or `trl`; also the default folder's name.
        installer: `uv` (uv venv and uv pip) or `pip` (venv and the environment's own pip).
        steps: The package lists installed one after another (a function: pins may be read
            from our own environment when the recipe is used).
        hashed: Folders of ours installed into the environment: their files join the hash.
        about: What making it costs, for `merchantbench doctor`.
    """

    name: str
    installer: Literal["uv", "pip"]
    steps: Callable[[], tuple[tuple[str, ...], ...]]
    hashed: tuple[Path, ...] = field(default=())
    about: str = ""

    @property
    def dir_var(self) -> str:
        return f"MERCHANTBENCH_{self.name.upper()}_DIR"

    def home(self) -> Path:
        configured = os.environ.get(self.dir_var)
        return Path(configured or Path(platformdirs.user_data_dir("merchantbench")) / self.name)

    def key(self) -> str:
        """A hash of the installed packages and of our folders' files: a change remakes it."""
        # Our folders by their place in the package, so every checkout shares one environment.
        steps = json.dumps([self.installer, self.steps()]).replace(str(_PACKAGE), "<package>")
        digest = hashlib.sha256(steps.encode())
        for folder in self.hashed:
            for path in sorted(folder.rglob("*")):
                if path.is_file() and path.suffix in (".py", ".toml"):
                    digest.update(path.relative_to(folder).as_posix().encode())
                    digest.update(path.read_bytes())
        return digest.hexdigest()[:16]

    def root(self) -> Path:
        return self.home() / f"env-{self.key()}"


@dataclass(frozen=True)
class IsolatedEnv:
    """A ready environment: its root, and how long it took to make."""

    root: Path
    setup_seconds: float

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    def bin(self, name: str) -> Path:
        return self.root / "bin" / name


# --- the recipes -----------------------------------------------------------------------------
VERIFIERS_VERSION = "0.4.0"
TASKSET_DIR = _PACKAGE / "rl" / "verifiers_taskset"

TORCH_VERSION = "2.13.0"  # the CPU build this machine keeps on disk for Python 3.11
TRL_PINS = (
    "trl==1.16.0",
    "transformers==5.24.0",
    "accelerate==1.15.0",
    "datasets==5.2.0",
    "tokenizers==0.23.3",
)


def _verifiers_steps() -> tuple[tuple[str, ...], ...]:
    return ((f"verifiers=={VERIFIERS_VERSION}", str(TASKSET_DIR)),)


def our_pins() -> tuple[str, ...]:
    """Our package's own dependencies at the versions installed here (the TRL environment
    runs our code, so it holds the same numpy, pydantic, ...)."""
    pins = []
    for requirement in importlib.metadata.requires("merchantbench") or []:
        if "extra ==" in requirement:
            continue
        name = re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0]
        if "sys_platform != 'win32'" in requirement and sys.platform == "win32":
            continue
        pins.append(f"{name}=={importlib.metadata.version(name)}")
    return tuple(sorted(pins))


SB3_PINS = ("stable-baselines3==2.9.2",)


def _sb3_steps() -> tuple[tuple[str, ...], ...]:
    # torch from the disk first, as for TRL; stable-baselines3 then installs no other torch.
    return ((f"torch=={TORCH_VERSION}",), (*SB3_PINS, *our_pins()))


def _trl_steps() -> tuple[tuple[str, ...], ...]:
    # torch alone first: pip takes the file on disk; with torch in place, TRL's dependencies
    # (accelerate asks for torch>=2) install nothing more of it.
    return ((f"torch=={TORCH_VERSION}",), (*TRL_PINS, *our_pins()))


RECIPES: dict[str, Recipe] = {
    recipe.name: recipe
    for recipe in (
        Recipe(
            "verifiers",
            "uv",
            _verifiers_steps,
            hashed=(TASKSET_DIR,),
            about="uv and the package index; about 2 minutes, 0.4 GB",
        ),
        Recipe(
            "trl",
            "pip",
            _trl_steps,
            about=f"pip (torch {TORCH_VERSION}, CPU build) and the package index; "
            "5 to 25 minutes, 1.8 GB",
        ),
        Recipe(
            "sb3",
            "pip",
            _sb3_steps,
            about=f"pip (torch {TORCH_VERSION}, CPU build) and the package index; "
            "5 to 20 minutes, 1.5 GB",
        ),
    )
}


# --- finding and making ----------------------------------------------------------------------
def find_env(recipe: Recipe) -> IsolatedEnv | None:
    """The environment if it has been made for this recipe, else None; never makes one."""
    root = recipe.root()
    try:
        seconds = float(json.loads((root / _MARKER).read_text())["setup_seconds"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return IsolatedEnv(root, seconds)


def ensure_env(recipe: Recipe) -> IsolatedEnv:
    """The environment, made now if it does not exist yet (blocking; minutes).

    Raises:
        IsolatedEnvError: The installer is missing or an install failed; the message is one
            line.
    """
    root = recipe.root()
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f".{root.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = find_env(recipe)
        if found is not None:
            return found
        started = time.perf_counter()
        if root.exists():
            shutil.rmtree(root)  # a build that died half-way
        try:
            _build(recipe, root)
        except IsolatedEnvError:
            shutil.rmtree(root, ignore_errors=True)
            raise
        seconds = round(time.perf_counter() - started, 2)
        marker = {"recipe": recipe.key(), "steps": recipe.steps(), "setup_seconds": seconds}
        (root / _MARKER).write_text(json.dumps(marker))
        return IsolatedEnv(root, seconds)


def _build(recipe: Recipe, root: Path) -> None:
    python = str(root / "bin" / "python")
    if recipe.installer == "uv":
        uv = shutil.which("uv")
        if uv is None:
            raise IsolatedEnvError(f"uv is not on PATH: it makes {recipe.name}'s environment")
        _run(recipe, [uv, "venv", "--quiet", "--python", sys.executable, str(root)])
        for packages in recipe.steps():
            _run(recipe, [uv, "pip", "install", "--quiet", "--python", python, *packages])
    else:
        _run(recipe, [_base_python(), "-m", "venv", str(root)])
        for packages in recipe.steps():
            _run(recipe, [python, "-m", "pip", "install", "--quiet", *packages])


def _base_python() -> str:
    """The interpreter our virtual environment was made from (a venv's `venv` module makes a
    new one from it either way; this keeps the path plain)."""
    base = Path(sys.base_prefix) / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    return str(base) if base.exists() else sys.executable


def clean_environ() -> dict[str, str]:
    """Our environment's variables less those that point tools at our virtual environment."""
    return {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "UV_PROJECT")}


def _run(recipe: Recipe, command: list[str]) -> None:
    environ = {**clean_environ(), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    done = subprocess.run(command, capture_output=True, text=True, env=environ, check=False)
    if done.returncode != 0:
        lines = [line for line in done.stderr.strip().splitlines() if "is ignored" not in line]
        last = (lines or ["no output"])[-1]
        raise IsolatedEnvError(f"making {recipe.name}'s environment failed: {last}")


def main(argv: list[str] | None = None) -> int:
    names = sys.argv[1:] if argv is None else argv
    if not names or any(name not in RECIPES for name in names):
        print(f"usage: python -m merchantbench.training_envs {{{','.join(RECIPES)}}} ...",
              file=sys.stderr)  # fmt: skip
        return 2
    status = 0
    for name in names:
        try:
            env = ensure_env(RECIPES[name])
        except IsolatedEnvError as exc:
            print(f"{name}: {exc}", file=sys.stderr)
            status = 1
            continue
        print(f"{name}: {env.root} (made in {env.setup_seconds:.0f} s)")
    return status


if __name__ == "__main__":
    sys.exit(main())
