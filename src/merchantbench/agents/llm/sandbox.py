"""Run untrusted Python snippets in an OS-level sandbox built with bubblewrap (`bwrap`).

What a snippet sees, all read-only except `/scratch`: a minimal Python at `/sandbox/python`
(the interpreter, the standard library without site-packages, the shared libraries they load;
built by `sandbox_runtime`), the allowed packages (`ALLOWED_PACKAGES`: numpy) at `/sandbox/site`,
the launcher, the snippet and extra modules at `/sandbox/lib`, a fresh size-capped tmpfs at
`/scratch` (also `/tmp`; gone when the snippet ends) and a minimal `/dev`. Nothing else of the
host: no `/usr`, no system or host site-packages, no `/proc` (its mount table would name the
host paths the tree is bound from), nothing of the run directory, checkpoint, catalog cache,
home directory or host `/tmp`. It runs with no network (a new, empty network namespace), its own
pid, IPC, UTS and cgroup namespaces, a scrubbed environment and a new session, and dies with
the parent. Limits: `SandboxLimits`, per process (set by the launcher) and for the whole
sandbox: a cgroup of its own bounds memory (shared memory and tmpfs included) and processes
where one can be made (`sandbox_cgroup`), and a system-call filter (`sandbox_seccomp`) refuses
memfds, System V shared memory and new user namespaces everywhere.

The per-process limit on processes is `RLIMIT_NPROC`, which the kernel counts per user and does
not enforce on root. So when the parent is root, the launcher (the trusted code that runs first
inside the sandbox) sets the limits and then drops to a fresh unprivileged uid before running the
snippet; otherwise bubblewrap makes a user namespace, in which the kernel counts the sandbox's
processes on their own, and (bubblewrap 0.8 or later) forbids nested ones (`--disable-userns`).

Where bubblewrap is missing or cannot build namespaces, `probe_sandbox()` says why and code
execution stays off, unless a harness explicitly asks for `CodeRunner(mode="unsafe")`: a plain
subprocess of the host interpreter with the same limits (the process limit then only binds
non-root) and no isolation.

This module builds the command line and runs it; the rest lives next to it: the sandbox's Python
(`sandbox_runtime`), what an execution is given (`sandbox_staging`), the trusted code that runs
first inside (`sandbox_launcher`), and the parent's watch over the running process, its output
and how it ended (`sandbox_supervisor`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any, Literal

from merchantbench.agents.llm.sandbox_cgroup import (
    JOIN_FAILED,
    JOIN_FAILED_EXIT,
    CgroupError,
    ExecutionCgroup,
    cgroup_support,
)
from merchantbench.agents.llm.sandbox_launcher import BRIDGE_ENV as BRIDGE_ENV
from merchantbench.agents.llm.sandbox_runtime import (
    SANDBOX_PREFIX,
    SANDBOX_SYSLIB,
    check_packages,
    runtime,
)
from merchantbench.agents.llm.sandbox_runtime import SandboxError as SandboxError
from merchantbench.agents.llm.sandbox_seccomp import seccomp_program
from merchantbench.agents.llm.sandbox_staging import (
    LIB_DIR,
    SCRATCH_DIR,
    SITE_DIR,
    package_dirs,
    sandbox_env,
    stage_files,
    write_readable,
)
from merchantbench.agents.llm.sandbox_supervisor import RESULT_BYTES as RESULT_BYTES
from merchantbench.agents.llm.sandbox_supervisor import (
    BridgeEndpoint,
    Execution,
    SandboxLimits,
    Supervisor,
)
from merchantbench.catalog.cache import cache_root

RunnerMode = Literal["sandbox", "unsafe"]

# Sandboxed code runs as uid _UID_BASE + n: no account uses it, and it differs per execution
# (and per parent process), so one snippet's processes never count against another's limit.
_UID_BASE = 1_600_000_000
_uid_counter = itertools.count()
_HOST_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}  # bwrap's own; nothing secret


def find_bwrap() -> str | None:
    """Path of the bubblewrap executable, or None."""
    found = shutil.which("bwrap")
    if found:
        return found
    return "/usr/bin/bwrap" if os.access("/usr/bin/bwrap", os.X_OK) else None


@functools.cache
def bwrap_version(bwrap: str) -> tuple[int, ...]:
    """The version `bwrap --version` reports, e.g. (0, 8, 0); () if it says none."""
    try:
        said = subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ()
    found = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", said.stdout)
    return tuple(int(part) for part in found.groups() if part is not None) if found else ()


def user_namespace_flags(bwrap: str) -> list[str]:
    """A user namespace of the sandbox's own, in which no further one can be made: bubblewrap's
    `--disable-userns` came with version 0.8; an older one gets the namespace alone."""
    if bwrap_version(bwrap) >= (0, 8):
        return ["--unshare-user", "--disable-userns"]
    return ["--unshare-user"]


def protected_paths() -> list[Path]:
    """Host paths a snippet must never see, even inside a directory it is given."""
    paths = [cache_root(), Path.cwd(), Path(tempfile.gettempdir())]
    home = os.path.expanduser("~")
    if os.path.isabs(home):  # "~" stays as it is where no home directory is known
        paths.append(Path(home))
    return [Path(os.path.realpath(p)) for p in paths]


class CodeRunner:
    """Runs Python snippets in bubblewrap (`mode="sandbox"`) or, only when explicitly asked
    for, in a plain subprocess (`mode="unsafe"`).

    A runner is plain data, so it pickles into checkpoints. `run` stages the launcher, the
    snippet and any extra modules in a private temporary directory, starts the process and
    supervises it (limits, output caps, the bridge) until it ends.

    Args:
        mode: "sandbox" or "unsafe".
        limits: Resource limits of one execution.
        packages: Importable packages exposed read-only to snippets, from
            `sandbox_runtime.ALLOWED_PACKAGES` (ValueError otherwise).
    """

    def __init__(
        self,
        mode: RunnerMode = "sandbox",
        limits: SandboxLimits | None = None,
        packages: tuple[str, ...] = ("numpy",),
    ) -> None:
        check_packages(tuple(packages))
        self.mode: RunnerMode = mode
        self.limits = limits or SandboxLimits()
        self.packages = tuple(packages)

    def settings(self) -> dict[str, Any]:
        """What a run record says about code execution."""
        return {"mode": self.mode, "limits": asdict(self.limits), "packages": list(self.packages)}

    async def run(
        self,
        code: str,
        modules: dict[str, str] | None = None,
        bridge: BridgeEndpoint | None = None,
        variables: dict[str, Any] | None = None,
    ) -> Execution:
        """Run `code`; if its last statement is an expression, its value is the result.

        Args:
            code: Python source of the snippet.
            modules: Extra importable modules, name to source (e.g. the tools module).
            bridge: The channel for the snippet's tool calls, if any.
            variables: JSON values defined as globals before the snippet starts.
        """
        with tempfile.TemporaryDirectory(prefix="merchantbench-code-") as staging:
            lib = stage_files(Path(staging), code, modules or {})
            read_fd, write_fd = os.pipe()
            result_pipe = (os.fdopen(read_fd, "rb", 0), os.fdopen(write_fd, "wb", 0))
            try:
                return await self._execute(lib, result_pipe, bridge, variables or {})
            finally:
                for file in result_pipe:
                    file.close()  # idempotent: the supervisor's transport may have closed it
                if bridge is not None:
                    bridge.close()

    async def _execute(
        self,
        lib: Path,
        result_pipe: tuple[IO[bytes], IO[bytes]],
        bridge: BridgeEndpoint | None,
        variables: dict[str, Any],
    ) -> Execution:
        """Start the process and supervise it to its end."""
        result_read, result_write = result_pipe
        bridge_fds = bridge.open() if bridge is not None else ()
        config = {"limits": asdict(self.limits), "result_fd": result_write.fileno()}
        config.update(variables=variables, bridge=",".join(map(str, bridge_fds)) or None)
        started = time.monotonic()
        cgroup: ExecutionCgroup | None = None
        seccomp_fd = -1
        try:
            config.update(self._placement(lib))
            if self.mode == "sandbox":
                seccomp_fd = _open_filter(lib.parent / "seccomp.bpf")
            argv, cwd, env = self._command(lib, seccomp_fd)
            write_readable(lib / "config.json", json.dumps(config))
            if (parents := cgroup_support()[0]) is not None:
                cgroup = ExecutionCgroup(parents, self.limits.memory_bytes, self.limits.processes)
                argv = cgroup.join_command(argv)
            passed = (
                result_write.fileno(),
                *bridge_fds,
                *([seccomp_fd] if seccomp_fd >= 0 else []),
            )
            proc = await asyncio.create_subprocess_exec(
                *argv, cwd=cwd, env=env, pass_fds=passed,
                start_new_session=True, stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )  # fmt: skip
        except (SandboxError, CgroupError, OSError) as exc:
            if cgroup is not None:
                await cgroup.close()
            return Execution(error_code="sandbox_failed", error_message=f"cannot start: {exc}")
        except BaseException:  # cancelled while starting: no cgroup outlives its snippet
            if cgroup is not None:
                await asyncio.shield(cgroup.close())
            raise
        finally:
            if seccomp_fd >= 0:
                os.close(seccomp_fd)
        result_write.close()  # only the snippet holds it now: its exit reads as end of file
        if bridge is not None:
            bridge.child_started()
        try:
            execution = await Supervisor(proc, self.limits, result_read).watch(bridge)
        finally:
            if cgroup is not None:
                await asyncio.shield(cgroup.close())  # every process of the snippet ends here
        execution.seconds = time.monotonic() - started
        if cgroup is not None:
            _diagnose_cgroup(execution, cgroup, self.limits)
        if self.mode == "sandbox":
            _scrub_host_paths(execution, [lib.parent, runtime(self.packages).root])
        return execution

    def _placement(self, lib: Path) -> dict[str, Any]:
        """The launcher's part of the config: the uid to run as, the snippet, import paths."""
        if self.mode == "unsafe":
            sites = sorted({str(d.parent) for d in package_dirs(self.packages)})
            return {"uid": None, "snippet": str(lib / "snippet.py"), "paths": [str(lib), *sites]}
        uid = _UID_BASE + (os.getpid() % 100_000) * 1000 + next(_uid_counter) % 1000
        return {
            "uid": uid if os.geteuid() == 0 else None,  # only root drops to it (see the top)
            "snippet": f"{LIB_DIR}/snippet.py",
            "paths": [LIB_DIR, SITE_DIR],
        }

    def _command(self, lib: Path, seccomp_fd: int) -> tuple[list[str], str, dict[str, str]]:
        """Command line, working directory and environment of one execution."""
        flags = ["-I", "-S", "-B", "-u"]
        if self.mode == "unsafe":
            scratch = str(lib.parent / "scratch")
            argv = [os.path.realpath(sys.executable), *flags, str(lib / "launcher.py")]
            return [*argv, str(lib / "config.json")], scratch, sandbox_env(scratch)
        argv = [*self.bwrap_argv(lib, seccomp_fd), runtime(self.packages).interpreter, *flags]
        return [*argv, f"{LIB_DIR}/launcher.py", f"{LIB_DIR}/config.json"], "/", dict(_HOST_ENV)

    def bwrap_argv(self, lib: Path, seccomp_fd: int) -> list[str]:
        """The bubblewrap part of the command line: namespaces, mounts, environment, and the
        system-call filter read from `seccomp_fd` (`sandbox_seccomp`).

        No `/proc` is mounted: it would show the mount table, whose bind sources are host
        paths, and it offers a snippet nothing it needs.
        """
        bwrap = find_bwrap()
        if bwrap is None:
            raise SandboxError("bubblewrap is not installed (Debian package `bubblewrap`)")
        argv = [bwrap, "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
        argv += ["--unshare-cgroup-try", "--hostname", "sandbox", "--die-with-parent"]
        argv += ["--new-session", "--seccomp", str(seccomp_fd)]
        if os.geteuid() != 0:
            argv += user_namespace_flags(bwrap)  # (where too old, the filter alone refuses)
        argv += self._runtime_mounts(lib) + ["--dev", "/dev"]
        argv += ["--perms", "1777", "--size", str(self.limits.scratch_bytes)]
        argv += ["--tmpfs", SCRATCH_DIR, "--symlink", SCRATCH_DIR, "/tmp", "--chdir", SCRATCH_DIR]
        # bwrap's root and /dev are tmpfs without a size, which the sandbox's uid owns when
        # it is not root: read-only, so that /scratch is the one place a snippet can write.
        argv += ["--remount-ro", "/dev", "--remount-ro", "/"]
        env = {**sandbox_env(SCRATCH_DIR), "PATH": f"{SANDBOX_PREFIX}/bin"}
        env["LD_LIBRARY_PATH"] = SANDBOX_SYSLIB
        return [*argv, "--clearenv", *(a for k, v in env.items() for a in ("--setenv", k, v))]

    def _runtime_mounts(self, lib: Path) -> list[str]:
        """The sandbox's Python, its packages and the staged files, read-only at /sandbox."""
        tree = runtime(self.packages)
        binds = [(tree.root / "python", SANDBOX_PREFIX), (lib, LIB_DIR)]
        if (tree.root / "site").is_dir():
            binds.append((tree.root / "site", SITE_DIR))
        # bwrap would create missing parents root-only (0700): make them readable first.
        argv = ["--perms", "0755", "--dir", "/sandbox"]
        for source, dest in binds:
            argv += ["--ro-bind", str(source), dest, *_hide_protected(source, Path(dest))]
        loader_dir = str(Path(tree.loader).parent)
        argv += ["--perms", "0755", "--dir", loader_dir]
        return [*argv, "--symlink", f"{SANDBOX_SYSLIB}/{tree.loader_name}", tree.loader]


def _open_filter(path: Path) -> int:
    """Write the system-call filter where bubblewrap will read it; its open descriptor."""
    path.write_bytes(seccomp_program())
    return os.open(path, os.O_RDONLY | os.O_CLOEXEC)


def _diagnose_cgroup(execution: Execution, cgroup: ExecutionCgroup, limits: SandboxLimits) -> None:
    """What the cgroup saw: a failure to join it, or a process killed at the memory bound."""
    if execution.exit_code == JOIN_FAILED_EXIT and JOIN_FAILED in execution.stderr:
        execution.error_code, execution.error_message = "sandbox_failed", JOIN_FAILED
    elif execution.error_code not in (None, "timeout") and cgroup.memory_kills:
        execution.error_code = "memory_limit"
        execution.error_message = (
            f"out of memory: the whole sandbox (its processes, files in /scratch and shared "
            f"memory together) may use at most {limits.memory_bytes / 2**30:g} GiB; the kernel "
            "stopped a process at that bound"
        )


def _scrub_host_paths(execution: Execution, extra: list[Path]) -> None:
    """Replace host paths in what the model will read. A snippet cannot see any, but bwrap
    names the host side of a mount it cannot make (e.g. a runtime tree deleted under a run)."""
    paths = sorted({str(p) for p in [*extra, *protected_paths()]}, key=len, reverse=True)
    for field in ("stdout", "stderr", "error_message"):
        text = getattr(execution, field)
        if text:
            for path in paths:
                text = text.replace(path, "<host path>")
            setattr(execution, field, text)


def _hide_protected(source: Path, dest: Path) -> list[str]:
    """Cover any protected path inside a bound directory with an empty tmpfs."""
    argv: list[str] = []
    source = Path(os.path.realpath(source))
    for path in protected_paths():
        if path.is_relative_to(source) and path.is_dir():
            if path == source:
                raise SandboxError(f"refusing to expose {path} to sandboxed code")
            argv += ["--tmpfs", str(dest / path.relative_to(source))]
    return argv


@functools.cache
def probe_sandbox() -> tuple[bool, str]:
    """Whether sandboxed code execution works here, and a one-line reason.

    Builds a real sandbox and runs a snippet in it, once per process (about 0.2 s). Safe to
    call from inside a running event loop.
    """
    if find_bwrap() is None:
        return False, "bubblewrap (bwrap) is not installed: apt-get install bubblewrap"
    snippet = "import sys\nlist(sys.version_info[:2])"
    try:
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            execution = pool.submit(asyncio.run, CodeRunner().run(snippet)).result()
    except (SandboxError, OSError) as exc:
        return False, f"cannot build a sandbox: {exc}"
    if execution.result != list(sys.version_info[:2]):
        lines = execution.stderr.strip().splitlines() or [str(execution.error_message)]
        return False, f"bubblewrap cannot build a sandbox here: {lines[-1]}"
    return True, f"bubblewrap sandbox ({find_bwrap()})"
