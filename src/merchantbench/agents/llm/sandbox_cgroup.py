"""A control group per execution: one bound on the memory and the processes of the whole sandbox.

Per-process limits (`RLIMIT_AS`, `RLIMIT_NPROC`) do not bound a sandbox: 32 processes of 1 GiB
each are 32 GiB, and shared memory (memfds, tmpfs) belongs to no process's address space. A
cgroup counts all of it, tmpfs and shared pages included: each execution gets its own, with

- memory (`memory.max`, or `memory.limit_in_bytes` on cgroup v1) = `SandboxLimits.memory_bytes`
  and no swap on top (`memory.swap.max` 0, or `memory.memsw.limit_in_bytes` = the same bound
  where the kernel accounts swap); past it the kernel reclaims, then kills a process *of the
  sandbox* (`memory_limit`), never another job;
- processes and threads (`pids.max`) = `SandboxLimits.processes` plus bubblewrap's own two.

Where the cgroup is made (`find_cgroup_parents`):

- cgroup v2: a child of our own cgroup if its `cgroup.subtree_control` already enables `memory`
  and `pids` (the root cgroup), else a sibling of our cgroup, if its parent enables them and is
  writable (a cgroup with processes of its own cannot have children with controllers);
- cgroup v1 (a hybrid host): a child of our own cgroup in the `memory` and `pids` hierarchies.

Nothing is enabled, moved or changed outside the cgroups made here. Where none can be made
(e.g. a container whose `/sys/fs/cgroup` is read-only), `cgroup_support()` says why and the
sandbox relies on per-process limits and its system-call filter (see `sandbox_seccomp`).

The process joins before bubblewrap starts: the command is wrapped in `/bin/sh`, which writes
its own pid into each `cgroup.procs` and then `exec`s bubblewrap (`join_command`), so every
process of the sandbox is born inside. Afterwards `close` kills whatever is left and removes
the cgroup; cgroups of a parent that died are removed when the next one is made.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import os
import signal
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

PREFIX = "merchantbench-sandbox-"
JOIN_FAILED = "merchantbench: the sandbox could not join its cgroup"
JOIN_FAILED_EXIT = 125
BWRAP_PROCESSES = 2  # bubblewrap outside the pid namespace and its init inside
_counter = itertools.count()
_CLOSE_SECONDS = 5.0


@dataclass(frozen=True)
class CgroupParents:
    """Where execution cgroups are made: one directory (v2) or one per controller (v1)."""

    version: int
    memory: Path
    pids: Path


def _unescape(field: str) -> str:
    """mountinfo escapes space, tab, newline and backslash as octal."""
    for code in ("\\040", "\\011", "\\012", "\\134"):
        field = field.replace(code, chr(int(code[1:], 8)))
    return field


def _mounts(mountinfo: str) -> list[tuple[str, str, str, set[str]]]:
    """(root, mount point, file system type, super options) of each cgroup mount."""
    found = []
    for line in mountinfo.splitlines():
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 5 or len(tail) < 3 or not tail[0].startswith("cgroup"):
            continue
        found.append((_unescape(fields[3]), _unescape(fields[4]), tail[0], set(tail[2].split(","))))
    return found


def _below(mount_root: str, mount_point: str, path: str) -> Path | None:
    """The directory of cgroup `path` under a mount of `mount_root`, if the mount shows it."""
    relative = os.path.relpath(path, mount_root)
    if relative.startswith(".."):
        return None
    return Path(mount_point) / ("" if relative == "." else relative)


def find_cgroup_parents(proc_cgroup: str, mountinfo: str) -> tuple[CgroupParents | None, str]:
    """Where to make execution cgroups, from `/proc/self/cgroup` and `/proc/self/mountinfo`,
    and a one-line reason."""
    own = {}  # controller (or "" for v2) to our cgroup's path
    for line in proc_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            for controller in parts[1].split(",") if parts[1] else [""]:
                own[controller] = parts[2]
    mounts = _mounts(mountinfo)
    v1 = {}
    for controller in ("memory", "pids"):
        for root, point, fstype, options in mounts:
            if fstype == "cgroup" and controller in options and controller in own:
                directory = _below(root, point, own[controller])
                if directory is not None:
                    v1[controller] = directory
                    break
    if len(v1) == 2:
        if all(os.access(d, os.W_OK) for d in v1.values()):
            return CgroupParents(1, v1["memory"], v1["pids"]), "cgroup v1 (memory, pids)"
        return None, "the cgroup v1 memory and pids directories are not writable"
    v2 = [(root, point) for root, point, fstype, _ in mounts if fstype == "cgroup2"]
    if "" not in own or not v2:
        return None, "no cgroup v2 hierarchy and no cgroup v1 memory and pids hierarchies"
    for root, point in v2:
        directory = _below(root, point, own[""])
        if directory is None or not directory.is_dir():
            continue
        for parent in (directory, directory.parent):
            if not parent.is_relative_to(point):
                continue
            try:
                enabled = (parent / "cgroup.subtree_control").read_text().split()
            except OSError:
                continue
            if {"memory", "pids"} <= set(enabled) and os.access(parent, os.W_OK):
                return CgroupParents(2, parent, parent), "cgroup v2 (memory, pids)"
        return None, (
            "cgroup v2 without a writable cgroup enabling memory and pids for its children "
            "(ours or its parent)"
        )
    return None, "our cgroup v2 is not visible under any cgroup2 mount"


@functools.cache
def cgroup_support() -> tuple[CgroupParents | None, str]:
    """Where this process makes execution cgroups (None: nowhere), and why, once."""
    try:
        proc_cgroup = Path("/proc/self/cgroup").read_text()
        mountinfo = Path("/proc/self/mountinfo").read_text()
    except OSError as exc:
        return None, f"cannot read our cgroup: {exc}"
    return find_cgroup_parents(proc_cgroup, mountinfo)


class CgroupError(OSError):
    """An execution cgroup could not be made."""


class ExecutionCgroup:
    """The cgroup(s) of one execution: v2 one directory, v1 one per controller."""

    def __init__(self, parents: CgroupParents, memory_bytes: int, processes: int) -> None:
        self.version = parents.version
        name = f"{PREFIX}{os.getpid()}-{next(_counter)}"
        self.dirs = list(dict.fromkeys([parents.memory / name, parents.pids / name]))
        self.memory_dir, self.pids_dir = parents.memory / name, parents.pids / name
        self.memory_kills = 0  # processes the kernel killed at the memory bound (see `close`)
        for parent in {parents.memory, parents.pids}:
            _remove_orphans(parent)
        made: list[Path] = []
        try:
            for directory in self.dirs:
                directory.mkdir()
                made.append(directory)
            self._set_limits(memory_bytes, processes + BWRAP_PROCESSES)
        except OSError as exc:
            for directory in made:
                _rmdir(directory)
            raise CgroupError(f"cannot make the sandbox's cgroup: {exc.strerror or exc}") from exc

    def _set_limits(self, memory_bytes: int, pids: int) -> None:
        if self.version == 2:
            _write(self.memory_dir / "memory.max", memory_bytes)
            _write(self.memory_dir / "memory.swap.max", 0)
        else:
            _write(self.memory_dir / "memory.limit_in_bytes", memory_bytes)
            swap = self.memory_dir / "memory.memsw.limit_in_bytes"
            if swap.exists():  # only where the kernel accounts swap (else there is none to use)
                _write(swap, memory_bytes)
        _write(self.pids_dir / "pids.max", pids)

    def join_command(self, argv: list[str]) -> list[str]:
        """`argv` run by a shell that first moves itself into this cgroup, or exits
        `JOIN_FAILED_EXIT` saying `JOIN_FAILED`. The shell adds nothing to the environment
        (`PWD` would be its one addition)."""
        script = (
            'unset PWD; while [ "$1" != -- ]; do { echo 0 > "$1"; } 2>/dev/null || '
            f'{{ echo "{JOIN_FAILED}" >&2; exit {JOIN_FAILED_EXIT}; }}; shift; done; shift; '
            'exec "$@"'
        )
        procs = [str(d / "cgroup.procs") for d in self.dirs]
        return ["/bin/sh", "-c", script, "merchantbench-sandbox", *procs, "--", *argv]

    def _count_memory_kills(self) -> int:
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        return _counter_in(self.memory_dir / name, "oom_kill")

    async def close(self) -> None:
        """Kill every process left in the cgroup, note `memory_kills` and remove it (bounded:
        a cgroup still busy after a few seconds is left for the next execution to remove)."""
        deadline = asyncio.get_running_loop().time() + _CLOSE_SECONDS
        delay = 0.005
        while True:
            pids = self._kill_all()
            if not pids:
                self.memory_kills = max(self.memory_kills, self._count_memory_kills())
                if all(_rmdir(d) for d in self.dirs):
                    return
            if asyncio.get_running_loop().time() > deadline:
                return
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.1)

    def _kill_all(self) -> list[int]:
        killer = self.dirs[0] / "cgroup.kill"
        pids: list[int] = []
        for directory in self.dirs:
            try:
                text = (directory / "cgroup.procs").read_text()
            except FileNotFoundError:
                continue
            pids += [int(p) for p in text.split()]
        if pids and self.version == 2 and killer.exists():
            _write(killer, 1)
            return pids
        for pid in pids:
            try:
                # (still ours: a pid read from cgroup.procs may have ended and been reused)
                if self.memory_dir.name in Path(f"/proc/{pid}/cgroup").read_text():
                    os.kill(pid, signal.SIGKILL)
            except (FileNotFoundError, ProcessLookupError):
                pass
        return pids


def _write(path: Path, value: int) -> None:
    path.write_text(f"{value}\n")


def _counter_in(path: Path, key: str) -> int:
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return 0
    for line in lines:
        name, _, value = line.partition(" ")
        if name == key and value.strip().isdigit():
            return int(value)
    return 0


def _rmdir(directory: Path) -> bool:
    """Remove an execution cgroup; True if it is gone."""
    try:
        directory.rmdir()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


def _remove_orphans(parent: Path) -> None:
    """Remove the empty execution cgroups of processes that no longer exist."""
    try:
        names: Iterable[str] = os.listdir(parent)
    except OSError:
        return
    for name in names:
        owner = name[len(PREFIX) :].partition("-")[0]
        if not name.startswith(PREFIX) or not owner.isdigit():
            continue
        try:
            os.kill(int(owner), 0)
        except ProcessLookupError:
            _rmdir(parent / name)
        except PermissionError:
            pass  # alive, someone else's
