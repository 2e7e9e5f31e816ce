"""What one execution is given: its staged files, its packages and its environment.

Every execution gets a private staging directory: `lib/` holds the launcher, the snippet, any
extra modules and the config (mounted read-only at `LIB_DIR` in the sandbox), `scratch/` is the
unsafe runner's working directory (the sandbox mounts a fresh tmpfs at `SCRATCH_DIR` instead).
The allowed packages, copied into the sandbox's Python tree (`sandbox_runtime`), are mounted
read-only under `SITE_DIR`; `package_dirs` finds their host directories.
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import os
from pathlib import Path

from merchantbench.agents.llm import sandbox_launcher

LIB_DIR = "/sandbox/lib"
SITE_DIR = "/sandbox/site"
SCRATCH_DIR = "/scratch"


@functools.cache
def launcher_source() -> str:
    """Source of the launcher script staged into every execution (`sandbox_launcher.py`)."""
    return inspect.getsource(sandbox_launcher)


def stage_files(staging: Path, code: str, modules: dict[str, str]) -> Path:
    """Write the launcher, the snippet and the extra modules; return the `lib` directory."""
    lib = staging / "lib"
    lib.mkdir()
    (staging / "scratch").mkdir()
    files = {"launcher.py": launcher_source(), "snippet.py": code}
    files.update({f"{name}.py": source for name, source in modules.items()})
    for name, text in files.items():
        write_readable(lib / name, text)
    for directory in (staging, lib, staging / "scratch"):
        directory.chmod(0o755)
    return lib


def write_readable(path: Path, text: str) -> None:
    """Write a staged file that the snippet's own uid can read."""
    path.write_text(text, encoding="utf-8")
    path.chmod(0o644)


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
