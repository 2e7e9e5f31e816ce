"""Hermes Agent's own environment: version-pinned, isolated from ours, made once and reused.

Hermes pins its dependencies (`openai==2.24.0`, ...), so it cannot live in our environment. The
first run that needs it creates a virtual environment with uv under our data directory (never
the market cache, never the checkout) and installs the pinned `hermes-agent` and the MCP SDK
its MCP client needs (an extra it does not install by default); later runs reuse it. A file lock
makes concurrent first uses build it once; a marker written last says the build finished.

    MERCHANTBENCH_HERMES_DIR   where environments and private homes live (default: the user
                               data directory of merchantbench, `hermes-agent/`)
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import platformdirs

HERMES_VERSION = "0.19.0"
# The MCP SDK version hermes-agent itself pins for its MCP client (its `dev` extra, and the
# one its lazy installer uses): without it Hermes silently registers no MCP tools.
MCP_SDK_VERSION = "1.26.0"
# Written last; its name changes with the recipe, so an environment of an older recipe is rebuilt.
_MARKER = "merchantbench-env-2.json"


class HermesEnvError(RuntimeError):
    """The environment could not be made (no uv, the package index unreachable, ...)."""


@dataclass(frozen=True)
class HermesEnv:
    """A ready environment: its root and interpreter, and how long it took to make."""

    root: Path
    python: Path
    version: str
    setup_seconds: float


def hermes_dir() -> Path:
    configured = os.environ.get("MERCHANTBENCH_HERMES_DIR")
    base = configured or platformdirs.user_data_dir("merchantbench")
    return Path(base) / ("" if configured else "hermes-agent")


def find_env(version: str = HERMES_VERSION) -> HermesEnv | None:
    """The environment of `version` if it has been made (its marker written last), else None;
    never makes one (`merchantbench doctor` asks this)."""
    root = hermes_dir() / f"env-{version}"
    try:
        seconds = float(json.loads((root / _MARKER).read_text())["setup_seconds"])
    except (OSError, ValueError, KeyError, TypeError):  # not made, or a damaged marker: remade
        return None
    return HermesEnv(root, root / "bin" / "python", version, seconds)


def ensure_env(version: str = HERMES_VERSION) -> HermesEnv:
    """The environment of `version`, made now if it does not exist yet (blocking).

    Raises:
        HermesEnvError: uv is missing or the install failed; the message is one line.
    """
    root = hermes_dir() / f"env-{version}"
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f".env-{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = find_env(version)
        if found is not None:
            return found
        marker = root / _MARKER
        started = time.perf_counter()
        _build(root, version)
        seconds = time.perf_counter() - started
        marker.write_text(json.dumps({"version": version, "setup_seconds": round(seconds, 2)}))
        return HermesEnv(root, root / "bin" / "python", version, seconds)


def _build(root: Path, version: str) -> None:
    uv = shutil.which("uv")
    if uv is None:
        raise HermesEnvError("uv is not on PATH: it makes Hermes Agent's environment")
    if root.exists():
        shutil.rmtree(root)  # a build that died half-way
    # Our own interpreter (Python >= 3.11, as Hermes needs): uv downloads nothing else.
    _uv(uv, "venv", "--quiet", "--python", sys.executable, str(root))
    packages = [f"hermes-agent=={version}", f"mcp=={MCP_SDK_VERSION}"]
    # Bytecode now: the confined process sees the environment read-only and could never cache
    # it, and compiling Hermes' imports on every start costs seconds.
    python = str(root / "bin" / "python")
    _uv(uv, "pip", "install", "--quiet", "--compile-bytecode", "--python", python, *packages)


def _uv(uv: str, *args: str) -> None:
    # Not our project's environment: uv must not pick it up from the working directory.
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "UV_PROJECT")}
    done = subprocess.run([uv, *args], capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise HermesEnvError(f"making Hermes Agent's environment failed: {last}")
