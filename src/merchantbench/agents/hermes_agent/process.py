"""The Hermes process: its private home, its confinement, and the JSON-lines protocol.

The process runs `worker.py` with the interpreter of Hermes' own environment, in a private
home (`HERMES_HOME` and `HOME`, holding config.yaml, memory, skills and Hermes' session store)
and with an environment made from nothing: no variable of ours, no provider key (it talks to
the driver's recorder with a token). Under bubblewrap its file system is only the system's
`/usr`, the two interpreter trees read-only and its home writable, so neither Hermes nor any
of its tools can see the run directory, the market cache or our checkout. The network is
shared (the model recorder and the MCP endpoint are on loopback); Hermes' network tools are off.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from merchantbench.agents.hermes_agent.env import HermesEnv
from merchantbench.agents.llm.sandbox import find_bwrap

SERVER_NAME = "merchantbench"
WORKER = Path(__file__).with_name("worker.py")
_TOKEN_VAR = "MB_MCP_TOKEN"


class HermesProcessError(RuntimeError):
    """The Hermes process could not start or answered nothing usable."""


def write_config(home: Path, mcp_url: str, tool_timeout: float) -> None:
    """Hermes' own config.yaml: our MCP server (token from the environment, never on disk)."""
    lines = [
        "mcp_servers:",
        f"  {SERVER_NAME}:",
        f'    url: "{mcp_url}"',
        "    headers:",
        f'      Authorization: "Bearer ${{{_TOKEN_VAR}}}"',
        f"    timeout: {int(tool_timeout)}",
        "    connect_timeout: 30",
    ]
    (home / "config.yaml").write_text("\n".join(lines) + "\n")


def process_env(home: Path, env: HermesEnv, settings: dict[str, str], token: str) -> dict[str, str]:
    return {
        "HOME": str(home),
        "HERMES_HOME": str(home),
        "PATH": f"{env.root / 'bin'}:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        _TOKEN_VAR: token,
        **settings,
    }


def command(home: Path, env: HermesEnv, variables: dict[str, str], confine: bool) -> list[str]:
    """The command line: the worker, under bubblewrap when `confine`."""
    worker = home / ".driver" / "worker.py"
    worker.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(WORKER, worker)  # the process needs nothing of our checkout
    python = [str(env.python), "-I", str(worker)]
    if not confine:
        return python
    bwrap = find_bwrap()
    if bwrap is None:
        raise HermesProcessError("bubblewrap (bwrap) is not installed: apt-get install bubblewrap")
    argv = [bwrap, "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent"]
    # /tmp first: trees under /tmp (tests) must stay visible over the tmpfs.
    argv += ["--new-session", "--tmpfs", "/tmp", "--ro-bind", "/usr", "/usr"]
    for top in ("bin", "lib", "lib64", "sbin"):
        argv += _system_dir(Path("/") / top)
    for tree in {Path(sys.base_prefix).resolve(), env.root}:
        argv += ["--ro-bind", str(tree), str(tree)]
    argv += ["--bind", str(home), str(home), "--proc", "/proc"]
    argv += ["--dev", "/dev", "--chdir", str(home), "--clearenv"]
    argv += [a for k, v in variables.items() for a in ("--setenv", k, v)]
    return [*argv, *python]


def _system_dir(path: Path) -> list[str]:
    if path.is_symlink():
        return ["--symlink", os.readlink(path), str(path)]
    return ["--ro-bind", str(path), str(path)] if path.is_dir() else []


class HermesProcess:
    """One running worker: send a window's text, read its reply."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    @classmethod
    async def start(
        cls, argv: list[str], env: dict[str, str], home: Path, timeout: float
    ) -> HermesProcess:
        # Hermes' own prints, for debugging; the child keeps its copy of the descriptor.
        with open(home / "hermes-driver.log", "ab") as log:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=log,
                env=env,
                cwd=str(home),
                limit=1 << 24,
            )
        process = cls(proc)
        ready = await process._read(timeout)
        if not ready.get("ready"):
            raise HermesProcessError(f"Hermes did not start: {ready}")
        return process

    async def turn(
        self, text: str, timeout: float, on_framework_call: Callable[[dict[str, Any]], None]
    ) -> dict[str, Any]:
        """One window: send `text`, report Hermes' own tool calls as they come, and return
        the final reply; `timeout` bounds the whole window."""
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps({"turn": text}) + "\n").encode())
        await self.proc.stdin.drain()
        deadline = time.monotonic() + timeout
        while True:
            reply = await self._read(max(deadline - time.monotonic(), 0.001))
            if "framework_call" not in reply:
                return reply
            on_framework_call(reply["framework_call"])

    async def _read(self, timeout: float) -> dict[str, Any]:
        assert self.proc.stdout is not None
        try:
            line = await asyncio.wait_for(self.proc.stdout.readline(), timeout)
        except TimeoutError:
            raise HermesProcessError(f"Hermes gave no answer within {timeout:g} s") from None
        if not line:
            raise HermesProcessError(f"Hermes exited (code {await self.proc.wait()})")
        reply: dict[str, Any] = json.loads(line)
        return reply

    async def close(self) -> None:
        if self.proc.returncode is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write(b'{"quit": true}\n')
                await self.proc.stdin.drain()
                await asyncio.wait_for(self.proc.wait(), 10)
            except (TimeoutError, OSError, ConnectionError):
                self.proc.kill()
                await self.proc.wait()
