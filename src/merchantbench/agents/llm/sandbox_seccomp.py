"""The sandbox's system-call filter: a seccomp BPF program that bubblewrap installs (`--seccomp`).

It refuses what would let a snippet escape its limits, and allows everything else:

- `memfd_create` and `memfd_secret` (EPERM): a memfd's pages are shared memory that no
  process's address space limit counts (80 memfds of 15 MiB held 1.2 GB of host memory that no
  process owned); `shmget` and `msgget` (EPERM) for the same reason with System V shared
  memory and message queues (16 KiB a queue, 32,000 queues);
- a new user namespace (EPERM): `unshare` or `clone` with `CLONE_NEWUSER`, and any `setns`.
  `clone3` passes its flags in memory a filter cannot read, so it answers ENOSYS, on which the C
  library falls back to `clone` (threads, `fork` and `posix_spawn` keep working);
- every call of another ABI (ENOSYS): the i386 and x32 tables number calls differently, so a
  snippet could otherwise reach `memfd_create` under another number.

Hand-assembled classic BPF for x86-64 and AArch64 (the only tables known here); on another
architecture `seccomp_program` raises `SandboxError` and no sandbox is built.
"""

from __future__ import annotations

import errno
import platform
import struct
from collections.abc import Sequence

from merchantbench.agents.llm.sandbox_runtime import SandboxError

CLONE_NEWUSER = 0x10000000

# seccomp's return values and the BPF instructions used (linux/seccomp.h, linux/filter.h).
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_JSET = 0x45  # BPF_JMP | BPF_JSET | BPF_K
_RET = 0x06  # BPF_RET | BPF_K
# Offsets in struct seccomp_data: nr, arch, then the arguments (low word first on these
# little-endian machines; the low word holds every namespace flag).
_NR, _ARCH, _ARG0_LOW = 0, 4, 16

_X32_BIT = 0x40000000


class _Table:
    def __init__(self, audit_arch: int, numbers: dict[str, int], x32: bool) -> None:
        self.audit_arch = audit_arch
        self.numbers = numbers
        self.x32 = x32  # whether calls numbered from _X32_BIT are another ABI to refuse


_TABLES = {
    "x86_64": _Table(
        0xC000003E,
        {
            "clone": 56,
            "shmget": 29,
            "msgget": 68,
            "unshare": 272,
            "setns": 308,
            "memfd_create": 319,
            "clone3": 435,
            "memfd_secret": 447,
        },
        x32=True,
    ),
    "aarch64": _Table(
        0xC00000B7,
        {
            "clone": 220,
            "shmget": 194,
            "msgget": 186,
            "unshare": 97,
            "setns": 268,
            "memfd_create": 279,
            "clone3": 435,
            "memfd_secret": 447,
        },
        x32=False,
    ),
}
_MACHINE_ALIASES = {"amd64": "x86_64", "arm64": "aarch64"}

REFUSED = {"memfd_create": errno.EPERM, "memfd_secret": errno.EPERM, "shmget": errno.EPERM}
REFUSED |= {"msgget": errno.EPERM}
REFUSED |= {"setns": errno.EPERM, "clone3": errno.ENOSYS}
"""Calls refused outright, with the errno they answer."""
NO_NEW_USER_NAMESPACE = ("clone", "unshare")
"""Calls refused (EPERM) when their first argument asks for `CLONE_NEWUSER`."""

# One instruction: (code, jump-if-true, jump-if-false, constant); jumps name labels.
_Insn = tuple[int, str | int, str | int, int]


def seccomp_program(machine: str | None = None) -> bytes:
    """The filter as bubblewrap reads it: `struct sock_filter` records, native byte order.

    Raises:
        SandboxError: no system-call table is known for `machine` (default: this one).
    """
    name = (machine or platform.machine()).lower()
    table = _TABLES.get(_MACHINE_ALIASES.get(name, name))
    if table is None:
        known = ", ".join(sorted(_TABLES))
        raise SandboxError(
            f"no system-call filter for the {name} architecture (only {known}): the sandbox "
            "would not be sealed"
        )
    nr = table.numbers
    code: list[_Insn | str] = [
        (_LD_W_ABS, 0, 0, _ARCH),
        (_JEQ, 0, "nosys", table.audit_arch),
        (_LD_W_ABS, 0, 0, _NR),
    ]
    if table.x32:
        code.append((_JGE, "nosys", 0, _X32_BIT))
    for call, error in sorted(REFUSED.items()):
        code.append((_JEQ, f"errno{error}", 0, nr[call]))
    code += [(_JEQ, "flags", 0, nr[call]) for call in NO_NEW_USER_NAMESPACE]
    code += [(_RET, 0, 0, _RET_ALLOW), "flags", (_LD_W_ABS, 0, 0, _ARG0_LOW)]
    code += [(_JSET, f"errno{errno.EPERM}", 0, CLONE_NEWUSER), (_RET, 0, 0, _RET_ALLOW)]
    for error in sorted(set(REFUSED.values())):
        code += [f"errno{error}", (_RET, 0, 0, _RET_ERRNO | error)]
    code += ["nosys", (_RET, 0, 0, _RET_ERRNO | errno.ENOSYS)]
    return _assemble(code)


def _assemble(code: Sequence[_Insn | str]) -> bytes:
    """Resolve the labels (strings in the listing, names in jumps) to relative offsets."""
    labels: dict[str, int] = {}
    insns: list[_Insn] = []
    for item in code:
        if isinstance(item, str):
            labels[item] = len(insns)
        else:
            insns.append(item)
    out = bytearray()
    for index, (op, jt, jf, k) in enumerate(insns):
        offsets = [labels[j] - index - 1 if isinstance(j, str) else j for j in (jt, jf)]
        if not all(0 <= o <= 255 for o in offsets):
            raise AssertionError(f"jump out of range at instruction {index}")
        out += struct.pack("=HBBI", op, offsets[0], offsets[1], k)
    return bytes(out)
