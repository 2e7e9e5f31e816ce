"""Watching one execution to its end: limits, capped output, the result and what went wrong.

The parent side of an execution once the process has started. The supervisor drains stdout,
stderr and the result pipe (each up to a cap, so a chatty snippet never blocks on a full pipe),
serves the tools bridge, enforces the wall clock by killing the whole process group, and turns
how the process ended into an `Execution` with an error code and a message the model can act on.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
from dataclasses import dataclass
from typing import IO, Any, Protocol

RESULT_BYTES = 65_536
_DRAIN_SECONDS = 2.0


@dataclass(frozen=True)
class SandboxLimits:
    """Limits of one execution.

    Attributes:
        cpu_seconds: CPU time of each process (RLIMIT_CPU; SIGXCPU ends it).
        memory_bytes: Address space of each process (RLIMIT_AS; allocations past it fail) and,
            where a cgroup can be made (`sandbox_cgroup`), memory of the whole sandbox, shared
            memory and tmpfs included (past it the kernel kills one of its processes).
        processes: Processes and threads (RLIMIT_NPROC; a fork past it fails); the whole
            sandbox's cgroup allows bubblewrap's own two on top (`pids.max`).
        wall_seconds: Wall-clock time of the whole execution; then every process is killed.
        output_bytes: Bytes kept of stdout and of stderr each; the rest is read and dropped.
        file_bytes: Largest file a snippet may write (RLIMIT_FSIZE).
        scratch_bytes: Size of the scratch tmpfs, the only file system a snippet can write.
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


class Supervisor:
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
        """Supervise the process to its end; a bug in the bridge is raised, not reported."""
        assert self.proc.stdout is not None and self.proc.stderr is not None
        readers = [
            asyncio.create_task(self.stdout.drain(self.proc.stdout)),
            asyncio.create_task(self.stderr.drain(self.proc.stderr)),
            asyncio.create_task(self.result.drain_file(self.result_file)),
        ]
        serving = asyncio.create_task(bridge.serve()) if bridge is not None else None
        try:
            timed_out = await self._wait(readers)
        finally:
            _kill_group(self.proc)  # also when the caller is cancelled
            tasks = [*readers, *([serving] if serving else [])]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        if serving is not None and not serving.cancelled() and serving.exception():
            raise serving.exception()  # type: ignore[misc]  # a bridge bug must crash loudly
        return self._execution(timed_out)

    async def _wait(self, readers: list[asyncio.Task[None]]) -> bool:
        """Wait for the process up to the wall-clock limit, then for its output; True if the
        limit was reached."""
        try:
            await asyncio.wait_for(self.proc.wait(), self.limits.wall_seconds)
            timed_out = False
        except TimeoutError:
            timed_out = True
        _kill_group(self.proc)  # leftovers of an unsafe run; a sandbox is already gone
        await self.proc.wait()
        await asyncio.wait(readers, timeout=_DRAIN_SECONDS)
        return timed_out

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


_PROCESS_LIMIT_MARK = re.compile(r"Resource temporarily unavailable|can't start new thread")


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
    # A fork bomb's processes all fail at once, and their tracebacks interleave: the line that
    # names the process limit need not be the last one.
    out_of_processes = [line for line in stderr.splitlines() if _PROCESS_LIMIT_MARK.search(line)]
    if out_of_processes:
        said = out_of_processes[-1].strip()
        return "process_limit", (
            f"could not start a process or thread: at most {limits.processes} ({said})"
        )
    if signo in {s.value for s in signal.Signals}:
        return "killed", f"killed by signal {signal.Signals(signo).name}"
    return "exception", last.strip() or f"exit code {code}"
