"""The Hermes process: its private home, its confinement, and the JSON-lines protocol.

The process runs `worker.py` with the interpreter of Hermes' own environment, in a private home
(`HERMES_HOME` and `HOME`, holding config.yaml, memory, skills and Hermes' session store) and
with an environment made from nothing: no variable of ours, no provider key (it talks to the
driver's server with a token, sent over stdin). Under bubblewrap its file system is only the
system's `/usr`, Hermes' environment and what its interpreter needs of the host Python (the
executable, libpython, the standard library: `interpreter_binds`; never the host Python's
site-packages, programs or headers) read-only, its home writable (but for the files
Hermes reads its settings from at start: the driver's config.yaml and the empty environment
files, all read-only) and a private `/tmp`, so neither Hermes nor any of its tools (terminal
and code execution included: they are its child processes) can see the run directory, the
market cache or our checkout, or change the driver's settings and limits. Its network
namespace is its own (loopback only): the one way out is the driver's Unix socket, which
`forwarder.py`, the sandbox's entry command, offers Hermes on `127.0.0.1:SANDBOX_PORT`.

What the driver writes for the process (the settings, the two scripts, Hermes' log) lives in a
directory of its own beside the home (`DriverFiles`), which Hermes can read in part and never
write: the driver never writes into the home through a path Hermes could have made (a link
Hermes left there is removed, never followed).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from merchantbench.agents.hermes_agent.env import HermesEnv
from merchantbench.agents.llm.sandbox import find_bwrap, user_namespace_flags

SERVER_NAME = "merchantbench"
WORKER = Path(__file__).with_name("worker.py")
FORWARDER = Path(__file__).with_name("forwarder.py")
# Inside the sandbox: where the driver's socket directory is bound, and the loopback port
# the forwarder listens on (the namespace is Hermes' own, so any port is free).
SANDBOX_SOCKET_DIR = "/run/merchantbench"
SANDBOX_PORT = 8765
SOCKET_NAME = "gateway.sock"
CONFIG_NAME = "config.yaml"  # Hermes' own settings file, in its home
# The environment files Hermes loads from its home when it starts (`.env` over every variable
# the driver set, `HERMES_HOME` and the terminal's limits included): the driver's are empty.
ENV_FILES = (".env", ".op.env")
SETTINGS_FILES = (CONFIG_NAME, *ENV_FILES)  # read-only in the sandbox
_TOKEN_VAR = "MB_MCP_TOKEN"


class HermesProcessError(RuntimeError):
    """The Hermes process could not start or answered nothing usable."""


def config_text(home: Path, mcp_url: str, tool_timeout: float, code_timeout: int) -> str:
    """Hermes' own config.yaml: our MCP server (the token is never on disk: the worker
    puts it in its environment for the MCP discovery, then removes it)
    with its tools only, and Hermes' own tools set for a sandbox nobody watches; one run of
    its code tool is killed after `code_timeout` seconds (Hermes' default: 300)."""
    lines = [
        "mcp_servers:",
        f"  {SERVER_NAME}:",
        f'    url: "{mcp_url}"',
        "    headers:",
        f'      Authorization: "Bearer ${{{_TOKEN_VAR}}}"',
        f"    timeout: {int(tool_timeout)}",
        "    connect_timeout: 30",
        # The driver hands Hermes the brief and each observation: no prompt/resource tools.
        "    tools:",
        "      resources: false",
        "      prompts: false",
        "terminal:",
        "  backend: local",  # Hermes' own child processes: inside the sandbox
        f'  cwd: "{home}"',
        "code_execution:",
        "  mode: strict",  # Hermes' interpreter, a temporary directory of the private /tmp
        f"  timeout: {int(code_timeout)}",
        # No one answers approval prompts (the sandbox is the safeguard), and tirith, Hermes'
        # command scanner, would try to download itself.
        "approvals:",
        '  mode: "off"',
        "security:",
        "  tirith_enabled: false",
    ]
    return "\n".join(lines) + "\n"


class DriverFiles:
    """What the driver writes for one run's Hermes process, in `root`, a directory beside
    Hermes' home that Hermes never writes (the sandbox sees `scripts` read-only, and the
    settings only as read-only files in its home): the settings, the two scripts, the log."""

    def __init__(self, root: Path, home: Path) -> None:
        self.root = root
        self.home = home
        self.scripts = root / "scripts"
        self.log = root / "hermes.log"  # Hermes' own prints, for debugging

    def write(self, config: str) -> None:
        """Write the settings and the scripts here, and the settings into the home."""
        self.scripts.mkdir(parents=True, exist_ok=True)
        for script in (WORKER, FORWARDER):
            shutil.copyfile(script, self.scripts / script.name)  # nothing of our checkout
        for name in SETTINGS_FILES:
            text = config if name == CONFIG_NAME else ""
            (self.root / name).write_text(text)
            # The same in the home (where Hermes reads them, and where they stay for a look).
            _plant(self.home / name, text)

    def worker(self, env: HermesEnv) -> list[str]:
        return [str(env.python), "-I", str(self.scripts / WORKER.name)]

    def forwarder(self, env: HermesEnv) -> list[str]:
        return [str(env.python), "-I", str(self.scripts / FORWARDER.name)]


def _plant(path: Path, text: str) -> None:
    """A new regular file at `path` holding `text`, in place of whatever was there (a file, a
    directory or a link Hermes made: removed, never followed)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w") as out:
        out.write(text)


def terminal_limits(seconds: int) -> dict[str, str]:
    """Hermes' terminal tool's limits (read from its environment, not config.yaml, when Hermes
    runs without its CLI): a command's default and largest foreground time, in seconds."""
    return {"TERMINAL_TIMEOUT": str(seconds), "TERMINAL_MAX_FOREGROUND_TIMEOUT": str(seconds)}


def process_env(home: Path, env: HermesEnv, settings: dict[str, str]) -> dict[str, str]:
    """The process's whole environment: its home, a plain PATH and the driver's `settings`."""
    return {
        "HOME": str(home),
        "HERMES_HOME": str(home),
        "PATH": f"{env.root / 'bin'}:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        **settings,
    }


def command(
    files: DriverFiles, env: HermesEnv, variables: dict[str, str], socket_dir: Path | None
) -> list[str]:
    """The command line: the worker, or, when `socket_dir` (the directory of the driver's
    Unix socket) is given, the forwarder and the worker under bubblewrap."""
    if socket_dir is None:
        return files.worker(env)
    bwrap = find_bwrap()
    if bwrap is None:
        raise HermesProcessError("bubblewrap (bwrap) is not installed: apt-get install bubblewrap")
    argv = [bwrap, "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net"]
    argv += user_namespace_flags(bwrap)  # its capabilities, if any, stay inside; no nested one
    # None at all, even inside: with CAP_SYS_PTRACE there, the model's commands (the same user
    # as Hermes) could read and change the memory of Hermes' processes, which are otherwise
    # closed to them (not dumpable, worker.py and forwarder.py).
    argv += ["--cap-drop", "ALL"]
    # /tmp first: trees under /tmp (tests) must stay visible over the tmpfs.
    argv += ["--die-with-parent", "--new-session", "--tmpfs", "/tmp", "--ro-bind", "/usr", "/usr"]
    for top in ("bin", "lib", "lib64", "sbin"):
        argv += _system_dir(Path("/") / top)
    for tree in (env.root, files.scripts):
        argv += ["--ro-bind", str(tree), str(tree)]
    argv += interpreter_binds(env)
    home = str(files.home)
    argv += ["--bind", home, home, "--ro-bind", str(socket_dir), SANDBOX_SOCKET_DIR]
    # The driver's settings (MCP server, tool time limits, approvals) stay as written: Hermes'
    # own tools can write anywhere in its home but here. Bound from the driver's copies, so
    # nothing Hermes did in its home before this start can choose what is bound.
    for name in SETTINGS_FILES:
        argv += ["--ro-bind", str(files.root / name), f"{home}/{name}"]
    argv += ["--proc", "/proc", "--dev", "/dev", "--chdir", home, "--clearenv"]
    argv += [a for k, v in variables.items() for a in ("--setenv", k, v)]
    socket_path = f"{SANDBOX_SOCKET_DIR}/{SOCKET_NAME}"
    forwarder = [*files.forwarder(env), socket_path, str(SANDBOX_PORT)]
    return [*argv, *forwarder, "--", *files.worker(env)]


def interpreter_binds(env: HermesEnv) -> list[str]:
    """bubblewrap arguments for what Hermes' interpreter needs of the host Python, read-only:
    the executable its environment links to, the shared libpython beside it and the standard
    library (`lib-dynload` included). Every site-packages of the host Python (under its prefix,
    or Debian's under `/usr`, which is bound whole) is covered by an empty tmpfs; the rest of
    the prefix (its other programs, headers, docs) is not bound at all. As `execute_code`'s
    sandbox (agents/llm/sandbox_runtime.py), the code the model runs sees no host package."""
    executable = Path(os.path.realpath(env.python))
    stdlib = Path(os.path.realpath(sysconfig.get_paths()["stdlib"]))
    libraries = sorted(Path(os.path.realpath(sys.base_prefix), "lib").glob("libpython*.so*"))
    argv: list[str] = []
    for path in (executable, *libraries, stdlib):
        argv += ["--ro-bind", str(path), str(path)]
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    packages = {stdlib / "site-packages", stdlib / "dist-packages",
                Path("/usr/lib/python3/dist-packages"),
                Path("/usr/local/lib", version, "dist-packages"),
                Path("/usr/local/lib", version, "site-packages")}  # fmt: skip
    for path in sorted(p for p in packages if p.is_dir()):
        argv += ["--tmpfs", str(path)]
    return argv


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
        cls, argv: list[str], env: dict[str, str], files: DriverFiles, token: str, timeout: float
    ) -> HermesProcess:
        """Start the process, hand it `token` (first line of its stdin) and wait until it
        is ready, at most `timeout` seconds."""
        # Hermes' own prints, for debugging; the child keeps its copy of the descriptor.
        with open(files.log, "ab") as log:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=log,
                env=env,
                cwd=str(files.home),
                limit=1 << 24,
            )
        process = cls(proc)
        assert proc.stdin is not None
        proc.stdin.write((json.dumps({"token": token}) + "\n").encode())
        await proc.stdin.drain()
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
