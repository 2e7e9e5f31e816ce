"""The Python a snippet runs on: a minimal, sanitised copy of the host interpreter.

A snippet must see the standard library and the allowed packages and nothing else of the host:
no site-packages, no system Python, no path of the checkout, home, cache or run directory in any
file it can read. So instead of mounting the host's `/usr` and Python installation, the sandbox
mounts one tree built from them, once per interpreter and allow-list:

- `python/bin/python3`: the interpreter; `python/syslib/`: the shared libraries it and the
  allowed packages' extension modules load (found with `ldd`), the dynamic loader included;
- `python/lib/pythonX.Y/`: the standard library without `site-packages`, its tests, IDLE, Tk,
  `ensurepip` (it bundles pip and setuptools) and the build configuration; byte code compiled
  anew with the sandbox's paths (the host's `.pyc` files name the host's);
- `site/<package>`: each allowed package, without its byte code (compiled anew too).

The copy is sanitised: the host Python prefix, where the binaries embed it, is overwritten in
place by a neutral path of the same length, and `_sysconfigdata` is rewritten. In the sandbox the
tree lives under `/sandbox` (`SANDBOX_PREFIX`, `SANDBOX_SITE`).

The tree is kept in the catalog cache directory under a key of everything it is built from, and
built in a temporary directory that is renamed into place, so concurrent builds are harmless.
"""

from __future__ import annotations

import compileall
import functools
import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path

from merchantbench.agents.llm.sandbox_staging import SITE_DIR, package_dirs
from merchantbench.catalog.cache import cache_root

ALLOWED_PACKAGES = frozenset({"numpy"})
"""Packages a snippet may be given besides the standard library (numpy is the whole list)."""

SANDBOX_PREFIX = "/sandbox/python"
SANDBOX_SITE = SITE_DIR
SANDBOX_SYSLIB = f"{SANDBOX_PREFIX}/syslib"
_FORMAT = 1  # bump when the layout or the sanitising changes: old trees are then not used
_STDLIB_SKIPPED = {"site-packages", "test", "tests", "idle_test", "idlelib", "tkinter",
                   "turtledemo", "ensurepip", "__pycache__"}  # fmt: skip
_LDD_LINE = re.compile(r"^\s*(\S+)(?:\s+=>\s+(\S+))?\s+\(0x[0-9a-f]+\)\s*$")


class SandboxError(Exception):
    """No sandbox can be built here; the message says why in one line."""


@dataclass(frozen=True)
class Runtime:
    """A built tree and how the sandbox mounts it.

    Attributes:
        root: The tree on the host (`python/` and `site/` below it).
        interpreter: The interpreter's path in the sandbox.
        loader: The dynamic loader's path the interpreter names (e.g.
            `/lib64/ld-linux-x86-64.so.2`); the sandbox links it to its copy in `syslib`.
        loader_name: File name of that copy.
    """

    root: Path
    interpreter: str
    loader: str
    loader_name: str


def check_packages(packages: tuple[str, ...]) -> None:
    """Refuse a package outside the allow-list (ValueError)."""
    extra = sorted(set(packages) - ALLOWED_PACKAGES)
    if extra:
        allowed = ", ".join(sorted(ALLOWED_PACKAGES))
        raise ValueError(f"snippets may only be given {allowed}, not {', '.join(extra)}")


@functools.cache
def runtime(packages: tuple[str, ...]) -> Runtime:
    """The tree for this interpreter and these packages, built on first use (10-20 s).

    Cached per process by its inputs only, so a later change of the cache directory does not
    rebuild it. Raises `SandboxError` where it cannot be built (no `ldd`, no interpreter).
    """
    check_packages(packages)
    sources = package_dirs(packages)
    key = _key(sources)
    root = cache_root() / "sandbox-runtime" / key
    if not (root / "complete").exists():
        root.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=".build-", dir=root.parent) as building:
            _build(Path(building) / "tree", sources)
            try:
                os.rename(Path(building) / "tree", root)
            except OSError:
                if not (root / "complete").exists():  # not a concurrent build that won
                    raise
    loader, loader_name = (root / "loader").read_text(encoding="utf-8").split("\n")[:2]
    return Runtime(root, f"{SANDBOX_PREFIX}/bin/python3", loader, loader_name)


def _key(sources: list[Path]) -> str:
    parts = [str(_FORMAT), sys.version, os.path.realpath(sys.executable), _stdlib()]
    for path in [Path(os.path.realpath(sys.executable)), *sources]:
        stat = path.stat()
        parts += [str(path), str(stat.st_size), str(stat.st_mtime_ns)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:20]


def _stdlib() -> str:
    return os.path.realpath(sysconfig.get_paths()["stdlib"])


def _version() -> str:
    return f"python{sys.version_info[0]}.{sys.version_info[1]}"


def _build(tree: Path, sources: list[Path]) -> None:
    """Copy, sanitise and compile the whole tree into `tree` (which must not exist)."""
    prefix, stdlib = tree / "python", tree / "python" / "lib" / _version()
    _copy_tree(Path(_stdlib()), stdlib, _STDLIB_SKIPPED, skip_prefix="config-")
    _write_sysconfigdata(stdlib)
    for source in sources:
        _copy_tree(source, tree / "site" / source.name, {"__pycache__"})
    (prefix / "bin").mkdir(parents=True)
    (prefix / "syslib").mkdir()
    host_binary = Path(os.path.realpath(sys.executable))
    _copy_sanitised(host_binary, prefix / "bin" / "python3")
    # The host's own binary for ldd: the copy's library path no longer leads anywhere here.
    elves = [host_binary, *(p for p in tree.rglob("*.so*") if p.is_file())]
    loader = ""
    for name, host in _shared_libraries(elves, tree).items():
        if host is None:  # the loader line: "/lib64/ld-linux-x86-64.so.2 (0x...)"
            loader = name
            host = Path(name)
        _copy_sanitised(Path(os.path.realpath(host)), prefix / "syslib" / Path(name).name)
    if not loader:
        raise SandboxError("ldd named no dynamic loader for the interpreter")
    (tree / "loader").write_text(f"{loader}\n{Path(loader).name}\n", encoding="utf-8")
    _compile(stdlib, f"{SANDBOX_PREFIX}/lib/{_version()}")
    for source in sources:
        _compile(tree / "site" / source.name, f"{SANDBOX_SITE}/{source.name}")
    for path in [tree, *tree.rglob("*")]:
        if not path.is_symlink():
            path.chmod(0o755 if path.is_dir() or os.access(path, os.X_OK) else 0o644)
    (tree / "complete").write_text("", encoding="utf-8")


def _copy_tree(source: Path, dest: Path, skipped: set[str], skip_prefix: str = "") -> None:
    def ignore(_directory: str, names: list[str]) -> list[str]:
        return [n for n in names if n in skipped or (skip_prefix and n.startswith(skip_prefix))]

    shutil.copytree(source, dest, symlinks=False, ignore=ignore)
    for path in dest.rglob("*"):
        if path.is_file() and path.suffix != ".py" and _is_elf(path):
            _copy_sanitised(path, path)


def _is_elf(path: Path) -> bool:
    with path.open("rb") as file:
        return file.read(4) == b"\x7fELF"


def _host_prefixes() -> list[bytes]:
    """Host paths that binaries may embed (the configured prefix: RPATH, getpath's default)."""
    found = {sys.base_prefix, sys.base_exec_prefix, os.path.realpath(sys.base_prefix)}
    return sorted((p.encode() for p in found if not p.startswith("/usr")), key=len, reverse=True)


def _neutral(length: int) -> bytes:
    """A neutral path of exactly `length` bytes: repeated slashes mean one slash to the OS."""
    base = SANDBOX_PREFIX.encode()
    return base + b"/" * (length - len(base)) if length >= len(base) else b"/" * length


def _copy_sanitised(source: Path, dest: Path) -> None:
    """Copy a file, overwriting every embedded host prefix in place (same length)."""
    data = source.read_bytes()
    for prefix in _host_prefixes():
        data = data.replace(prefix, _neutral(len(prefix)))
    dest.write_bytes(data)
    shutil.copymode(source, dest)


def _shared_libraries(elves: list[Path], tree: Path) -> dict[str, Path | None]:
    """Libraries the ELF files load from outside the tree, by file name (loader: None)."""
    ldd = shutil.which("ldd")
    if ldd is None:
        raise SandboxError("ldd is not installed (Debian package libc-bin)")
    found: dict[str, Path | None] = {}
    for elf in elves:
        listing = subprocess.run([ldd, str(elf)], capture_output=True, text=True, check=False)
        for line in listing.stdout.splitlines():
            match = _LDD_LINE.match(line)
            if match is None:
                continue  # "statically linked", "not found": nothing to copy
            name, host = match.groups()
            if host is None and name.startswith("/"):
                found.setdefault(name, None)
            elif host and not Path(os.path.realpath(host)).is_relative_to(tree):
                found.setdefault(name, Path(host))
    return found


def _write_sysconfigdata(stdlib: Path) -> None:
    """Rewrite the build configuration with the sandbox's prefix; drop what names host paths."""
    module = sysconfig._get_sysconfigdata_name()  # type: ignore[attr-defined]
    variables = sysconfig.get_config_vars()
    prefixes = [p.decode() for p in _host_prefixes()]
    clean: dict[str, object] = {}
    for name, value in variables.items():
        if isinstance(value, str):
            for prefix in prefixes:
                value = value.replace(prefix, SANDBOX_PREFIX)
            if "/" in value and not _neutral_paths(value):
                value = ""
        clean[name] = value
    (stdlib / f"{module}.py").write_text(f"build_time_vars = {clean!r}\n", encoding="utf-8")


def _neutral_paths(value: str) -> bool:
    """Whether every absolute path in a configuration value is the sandbox's or a system one."""
    paths = re.findall(r"(?<![\w.])/[^\s'\"=:]*", value)
    return all(p.startswith(("/sandbox/", "/usr/", "/lib", "/bin", "/dev/")) for p in paths)


def _compile(directory: Path, shown_as: str) -> None:
    """Byte-compile a copied tree, recording the paths the sandbox will import it from."""
    compileall.compile_dir(directory, ddir=shown_as, quiet=2, workers=1)
