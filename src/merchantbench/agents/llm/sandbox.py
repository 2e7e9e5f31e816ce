"""Run untrusted Python snippets in an OS-level sandbox built with bubblewrap (`bwrap`).

What a snippet sees: read-only `/usr` (and the `/lib*`, `/bin` links), the Python installation
it runs on, the allowed packages (numpy by default) under `/sandbox/site`, the launcher, the
snippet and extra modules under `/sandbox/lib`, a fresh size-capped tmpfs at `/scratch` (also
`/tmp`; the only writable place, gone when the snippet ends), a private `/proc` and a minimal
`/dev`. It runs with no network (a new, empty network namespace), its own pid, IPC and UTS
namespaces, a scrubbed environment, and nothing of the run directory, the checkpoint, the catalog
cache, the home directory, the host's `/tmp` or the parent process. Limits: `SandboxLimits`.

The process limit is `RLIMIT_NPROC`, which the kernel counts per user and does not enforce on
root. So when the parent is root, the launcher (the trusted code that runs first inside the
sandbox) sets the limits and then drops to a fresh unprivileged uid before running the snippet;
otherwise bubblewrap makes a user namespace, in which the kernel counts the sandbox's processes
on their own.

Where bubblewrap is missing or cannot build namespaces, `probe_sandbox()` says why and code
execution stays off, unless a harness explicitly asks for `CodeRunner(mode="unsafe")`: a plain
subprocess with the same limits (the process limit then only binds non-root) and no isolation.
"""

from __future__ import annotations

import ast
import asyncio
import concurrent.futures
import functools
import importlib.util
import inspect
import itertools
import json
import os
import resource
import shutil
import signal
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any, Literal, Protocol

from merchantbench.catalog.cache import cache_root

LIB_DIR = "/sandbox/lib"
SITE_DIR = "/sandbox/site"
SCRATCH_DIR = "/scratch"
BRIDGE_ENV = "MERCHANTBENCH_BRIDGE"
RESULT_BYTES = 65_536
RunnerMode = Literal["sandbox", "unsafe"]

# Sandboxed code runs as uid _UID_BASE + n: no account uses it, and it differs per execution
# (and per parent process), so one snippet's processes never count against another's limit.
_UID_BASE = 1_600_000_000
_uid_counter = itertools.count()
_SYSTEM_DIRS = ("/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin")
_HOST_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}  # bwrap's own; nothing secret
_DRAIN_SECONDS = 2.0


class SandboxError(Exception):
    """No sandbox can be built here; the message says why in one line."""


@dataclass(frozen=True)
class SandboxLimits:
    """Limits of one execution.

    Attributes:
        cpu_seconds: CPU time of each process (RLIMIT_CPU; SIGXCPU ends it).
        memory_bytes: Address space of each process (RLIMIT_AS); allocations past it fail.
        processes: Processes and threads (RLIMIT_NPROC); a fork past it fails.
        wall_seconds: Wall-clock time of the whole execution; then every process is killed.
        output_bytes: Bytes kept of stdout and of stderr each; the rest is read and dropped.
        file_bytes: Largest file a snippet may write (RLIMIT_FSIZE).
        scratch_bytes: Size of the scratch tmpfs.
        open_files: Open file descriptors (RLIMIT_NOFILE).
    """

    cpu_seconds: int = 10
    memory_bytes: int = 1 << 30
    processes: int = 32
    wall_seconds: float = 30.0
    output_bytes: int = 32_768
    file_bytes: int = 16 << 20
    scratch_bytes: int = 64 << 20
    open_files: int = 256


@dataclass
class Execution:
    """How one execution went. `error_code` is None on success, else one of `timeout`,
    `cpu_limit`, `memory_limit`, `process_limit`, `exception`, `killed`, `sandbox_failed`."""

    stdout: str = ""
    stderr: str = ""
    result: Any = None
    truncated: bool = False
    exit_code: int | None = None
    error_code: str | None = None
    error_message: str | None = None
    seconds: float = 0.0

    def to_tool_result(self) -> dict[str, Any]:
        """The answer `execute_code` gives the model."""
        answer: dict[str, Any] = {"ok": self.error_code is None}
        answer.update(stdout=self.stdout, stderr=self.stderr, result=self.result)
        answer["truncated"] = self.truncated  # (not the seconds: answers stay reproducible)
        if self.error_code is not None:
            answer["error"] = {"code": self.error_code, "message": self.error_message}
        return answer


class BridgeEndpoint(Protocol):
    """The parent's end of a channel through which a snippet calls tools (see `bridge.py`)."""

    def open(self) -> tuple[int, int]:
        """Make the pipes; return the snippet's ends (requests to write, answers to read)."""
        ...

    def child_started(self) -> None:
        """Close the snippet's ends in the parent, so that its exit reads as end of file."""
        ...

    async def serve(self) -> None:
        """Answer requests until the snippet closes its end."""
        ...

    def close(self) -> None:
        """Release the pipes (idempotent)."""
        ...


def find_bwrap() -> str | None:
    """Path of the bubblewrap executable, or None."""
    found = shutil.which("bwrap")
    if found:
        return found
    return "/usr/bin/bwrap" if os.access("/usr/bin/bwrap", os.X_OK) else None


def protected_paths() -> list[Path]:
    """Host paths a snippet must never see, even inside a directory it is given."""
    paths = [cache_root(), Path.cwd(), Path(tempfile.gettempdir())]
    home = os.path.expanduser("~")
    if os.path.isabs(home):  # "~" stays as it is where no home directory is known
        paths.append(Path(home))
    return [Path(os.path.realpath(p)) for p in paths]


def package_dirs(packages: tuple[str, ...]) -> list[Path]:
    """Directories of the allowed packages (plus wheels' vendored `.libs`), if installed."""
    dirs: list[Path] = []
    for name in packages:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            continue
        pkg = Path(os.path.realpath(next(iter(spec.submodule_search_locations))))
        dirs.append(pkg)
        libs = pkg.with_name(pkg.name + ".libs")
        if libs.is_dir():
            dirs.append(libs)
    return dirs


class CodeRunner:
    """Runs Python snippets in bubblewrap (`mode="sandbox"`) or, only when explicitly asked
    for, in a plain subprocess (`mode="unsafe"`).

    A runner is plain data, so it pickles into checkpoints. `run` stages the launcher, the
    snippet and any extra modules in a private temporary directory, starts the process and
    supervises it (limits, output caps, the bridge) until it ends.

    Args:
        mode: "sandbox" or "unsafe".
        limits: Resource limits of one execution.
        packages: Importable packages exposed read-only to snippets.
    """

    def __init__(
        self,
        mode: RunnerMode = "sandbox",
        limits: SandboxLimits | None = None,
        packages: tuple[str, ...] = ("numpy",),
    ) -> None:
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
            lib = self._stage(Path(staging), code, modules or {})
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
        try:
            argv, cwd, env = self._command(lib, config)
            _write_readable(lib / "config.json", json.dumps(config))
            proc = await asyncio.create_subprocess_exec(
                *argv, cwd=cwd, env=env, pass_fds=(result_write.fileno(), *bridge_fds),
                start_new_session=True, stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )  # fmt: skip
        except (SandboxError, OSError) as exc:
            return Execution(error_code="sandbox_failed", error_message=f"cannot start: {exc}")
        result_write.close()  # only the snippet holds it now: its exit reads as end of file
        if bridge is not None:
            bridge.child_started()
        execution = await _Supervisor(proc, self.limits, result_read).watch(bridge)
        execution.seconds = time.monotonic() - started
        return execution

    def _stage(self, staging: Path, code: str, modules: dict[str, str]) -> Path:
        lib = staging / "lib"
        lib.mkdir()
        (staging / "scratch").mkdir()
        files = {"launcher.py": launcher_source(), "snippet.py": code}
        files.update({f"{name}.py": source for name, source in modules.items()})
        for name, text in files.items():
            _write_readable(lib / name, text)
        for directory in (staging, lib, staging / "scratch"):
            directory.chmod(0o755)
        return lib

    def _command(self, lib: Path, config: dict[str, Any]) -> tuple[list[str], str, dict[str, str]]:
        """Command line, working directory and environment of one execution."""
        python = [os.path.realpath(sys.executable), "-I", "-S", "-B", "-u"]
        if self.mode == "unsafe":
            scratch = str(lib.parent / "scratch")
            config.update(uid=None, snippet=str(lib / "snippet.py"))
            config["paths"] = [str(lib), *sorted({str(d.parent) for d in self._packages()})]
            argv = [*python, str(lib / "launcher.py"), str(lib / "config.json")]
            return argv, scratch, sandbox_env(scratch)
        uid = _UID_BASE + (os.getpid() % 100_000) * 1000 + next(_uid_counter) % 1000
        config.update(uid=uid if os.geteuid() == 0 else None, snippet=f"{LIB_DIR}/snippet.py")
        config["paths"] = [LIB_DIR, SITE_DIR]
        argv = [*self.bwrap_argv(lib), *python, f"{LIB_DIR}/launcher.py", f"{LIB_DIR}/config.json"]
        return argv, "/", dict(_HOST_ENV)

    def _packages(self) -> list[Path]:
        return package_dirs(self.packages)

    def bwrap_argv(self, lib: Path) -> list[str]:
        """The bubblewrap part of the command line: namespaces, mounts, environment."""
        bwrap = find_bwrap()
        if bwrap is None:
            raise SandboxError("bubblewrap is not installed (Debian package `bubblewrap`)")
        argv = [bwrap, "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
        argv += ["--hostname", "sandbox", "--die-with-parent", "--new-session"]
        if os.geteuid() != 0:
            argv += ["--unshare-user", "--disable-userns"]
        argv += _system_mounts() + self._python_mounts(lib)
        argv += ["--proc", "/proc", "--dev", "/dev"]
        argv += ["--perms", "1777", "--size", str(self.limits.scratch_bytes)]
        argv += ["--tmpfs", SCRATCH_DIR, "--symlink", SCRATCH_DIR, "/tmp", "--chdir", SCRATCH_DIR]
        env = sandbox_env(SCRATCH_DIR)
        return [*argv, "--clearenv", *(a for k, v in env.items() for a in ("--setenv", k, v))]

    def _python_mounts(self, lib: Path) -> list[str]:
        prefix = Path(os.path.realpath(sys.base_prefix))
        binds = [] if prefix.is_relative_to("/usr") else [(prefix, prefix)]
        binds += [(d, Path(SITE_DIR) / d.name) for d in self._packages()]
        binds.append((lib, Path(LIB_DIR)))
        argv: list[str] = []
        made = {Path("/")}
        for source, dest in binds:
            for parent in reversed(dest.parents):
                if parent not in made:  # bwrap would create missing parents root-only (0700)
                    argv += ["--perms", "0755", "--dir", str(parent)]
                    made.add(parent)
            argv += ["--ro-bind", str(source), str(dest), *_hide_protected(source, dest)]
        return argv


def _write_readable(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    path.chmod(0o644)  # the snippet's own uid must read it


def sandbox_env(scratch: str) -> dict[str, str]:
    """The whole environment of a snippet: no inherited variable reaches it."""
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": scratch,
        "TMPDIR": scratch,
        "LANG": "C.UTF-8",
        # BLAS thread pools reserve address space per thread and would trip the memory limit.
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }


def _system_mounts() -> list[str]:
    argv: list[str] = []
    for path in _SYSTEM_DIRS:
        if os.path.islink(path):  # merged-/usr systems: /lib -> usr/lib
            argv += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            argv += ["--ro-bind", path, path, *_hide_protected(Path(path), Path(path))]
    return argv


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


class _Capture:
    """Bytes read from one pipe, up to a cap; the rest is read and dropped, so a chatty
    snippet never blocks on a full pipe."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.data = bytearray()
        self.truncated = False

    async def drain(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(65_536):
            room = max(self.cap - len(self.data), 0)
            self.truncated |= len(chunk) > room
            self.data += chunk[:room]

    async def drain_file(self, file: IO[bytes]) -> None:
        loop = asyncio.get_running_loop()
        stream = asyncio.StreamReader()
        protocol = asyncio.StreamReaderProtocol(stream)
        transport, _ = await loop.connect_read_pipe(lambda: protocol, file)
        try:
            await self.drain(stream)
        finally:
            transport.close()

    def text(self) -> str:
        text = self.data.decode("utf-8", errors="replace")
        if self.truncated:
            text += f"\n[truncated: only the first {self.cap} bytes are kept]"
        return text


class _Supervisor:
    """Watches one process: wall clock, output caps, the result pipe and the bridge."""

    def __init__(
        self, proc: asyncio.subprocess.Process, limits: SandboxLimits, result: IO[bytes]
    ) -> None:
        self.proc = proc
        self.limits = limits
        self.result_file = result
        self.stdout = _Capture(limits.output_bytes)
        self.stderr = _Capture(limits.output_bytes)
        self.result = _Capture(RESULT_BYTES)

    async def watch(self, bridge: BridgeEndpoint | None) -> Execution:
        assert self.proc.stdout is not None and self.proc.stderr is not None
        readers = [
            asyncio.create_task(self.stdout.drain(self.proc.stdout)),
            asyncio.create_task(self.stderr.drain(self.proc.stderr)),
            asyncio.create_task(self.result.drain_file(self.result_file)),
        ]
        serving = asyncio.create_task(bridge.serve()) if bridge is not None else None
        try:
            try:
                await asyncio.wait_for(self.proc.wait(), self.limits.wall_seconds)
                timed_out = False
            except TimeoutError:
                timed_out = True
            _kill_group(self.proc)  # leftovers of an unsafe run; a sandbox is already gone
            await self.proc.wait()
            await asyncio.wait(readers, timeout=_DRAIN_SECONDS)
        finally:
            _kill_group(self.proc)  # also when the caller is cancelled
            tasks = [*readers, *([serving] if serving else [])]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        if serving is not None and not serving.cancelled() and serving.exception():
            raise serving.exception()  # type: ignore[misc]  # a bridge bug must crash loudly
        return self._execution(timed_out)

    def _execution(self, timed_out: bool) -> Execution:
        code = self.proc.returncode
        execution = Execution(self.stdout.text(), self.stderr.text(), exit_code=code)
        execution.truncated = self.stdout.truncated or self.stderr.truncated
        if self.result.truncated:
            execution.truncated = True
            execution.result = f"[result larger than {RESULT_BYTES} bytes: print parts of it]"
        elif self.result.data:
            execution.result = _decode_result(bytes(self.result.data))
        error = _diagnose(code, timed_out, execution.stderr, self.limits)
        execution.error_code, execution.error_message = error
        return execution


def _decode_result(data: bytes) -> Any:
    """The launcher's `{"value": ...}`; the snippet can reach the result pipe too, so anything
    else is reported, never trusted."""
    try:
        message = json.loads(data)
    except (ValueError, RecursionError):
        message = None
    if not isinstance(message, dict) or "value" not in message:
        return "[the result pipe held something other than the launcher's result]"
    return message["value"]


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is already gone


def _diagnose(
    code: int | None, timed_out: bool, stderr: str, limits: SandboxLimits
) -> tuple[str | None, str | None]:
    """Error code and a message the model can act on, from how the process ended."""
    if timed_out:
        return "timeout", (
            f"stopped after {limits.wall_seconds:g} s of wall-clock time (the limit); every "
            "process of the snippet was killed"
        )
    if code == 0:
        return None, None
    code = code or 0
    # A direct child killed by a signal reads -signal; bwrap reports it as 128 + signal.
    signo = -code if code < 0 else code - 128 if code > 128 else 0
    last = next((line for line in reversed(stderr.splitlines()) if line.strip()), "")
    if signo == signal.SIGXCPU:
        return "cpu_limit", f"stopped after {limits.cpu_seconds} s of CPU time (the limit)"
    if "MemoryError" in last:
        gib = limits.memory_bytes / 2**30
        return "memory_limit", f"out of memory: the limit is {gib:g} GiB ({last.strip()})"
    if "Resource temporarily unavailable" in last or "can't start new thread" in last:
        return "process_limit", (
            f"could not start a process or thread: at most {limits.processes} ({last.strip()})"
        )
    if signo in {s.value for s in signal.Signals}:
        return "killed", f"killed by signal {signal.Signals(signo).name}"
    return "exception", last.strip() or f"exit code {code}"


# --- the launcher: trusted code that runs first inside the sandbox ----------------------------
# These functions are copied into the sandbox as source text (`launcher_source`), so they use
# only the standard library and each other.


def _child_apply_limits(limits: dict[str, int]) -> None:
    """Set the resource limits before any snippet code runs."""
    cpu = limits["cpu_seconds"]
    # The soft limit sends SIGXCPU, which ends the process; the hard one is a backstop.
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    for name, key in (
        ("RLIMIT_AS", "memory_bytes"),
        ("RLIMIT_NPROC", "processes"),
        ("RLIMIT_FSIZE", "file_bytes"),
        ("RLIMIT_NOFILE", "open_files"),
    ):
        resource.setrlimit(getattr(resource, name), (limits[key], limits[key]))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _child_drop_privileges(uid: int | None) -> None:
    """As root, become an unprivileged user of our own: root ignores RLIMIT_NPROC and could
    raise the other limits again. bwrap already set no-new-privileges, so no way back."""
    if uid is None or os.getuid() != 0:
        return
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)


def _child_run(path: str, variables: dict[str, object]) -> tuple[bool, object]:
    """Run the snippet like a notebook cell: a final expression's value is returned."""
    with open(path, encoding="utf-8") as file:
        tree = ast.parse(file.read(), path)
    last = tree.body[-1] if tree.body else None
    if isinstance(last, ast.Expr):
        tree.body.pop()
    namespace: dict[str, object] = {**variables, "__name__": "__main__"}
    exec(compile(tree, path, "exec"), namespace)
    if not isinstance(last, ast.Expr):
        return False, None
    return True, eval(compile(ast.Expression(last.value), path, "eval"), namespace)


def _child_report(fd: int, value: object) -> None:
    """Send the result to the parent as JSON (`repr` for what JSON cannot hold)."""
    try:
        text = json.dumps({"value": value}, default=repr)
    except ValueError:  # e.g. a list that contains itself
        text = json.dumps({"value": repr(value)})
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)


def _child_main() -> None:
    with open(sys.argv[1], encoding="utf-8") as file:
        config = json.load(file)
    _child_apply_limits(config["limits"])
    _child_drop_privileges(config["uid"])
    sys.path[:0] = config["paths"]
    if config["bridge"]:
        os.environ[BRIDGE_ENV] = config["bridge"]
    try:
        has_value, value = _child_run(config["snippet"], config["variables"])
    except SyntaxError as exc:
        traceback.print_exception(type(exc), exc, None)
        sys.exit(1)
    except Exception as exc:
        tb = exc.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
            tb = tb.tb_next  # the model needs its own frames, not the launcher's
        traceback.print_exception(type(exc), exc, tb)
        sys.exit(1)
    if has_value:
        _child_report(config["result_fd"], value)


_LAUNCHER = (_child_apply_limits, _child_drop_privileges, _child_run, _child_report, _child_main)


@functools.cache
def launcher_source() -> str:
    """Source of the launcher script staged into every execution."""
    header = "import ast\nimport json\nimport os\nimport resource\nimport sys\nimport traceback\n"
    parts = [header, f"BRIDGE_ENV = {BRIDGE_ENV!r}\n"]
    parts += [inspect.getsource(function) for function in _LAUNCHER]
    return "\n\n".join([*parts, "_child_main()\n"])


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
