"""Agent classes by where they live: the built-in table's targets and your own agents.

    load_class("merchantbench.agents.baselines.idle:IdleAgent")
    resolve_agent_name("./my_agent.py:MyAgent")   # -> "/abs/path/my_agent.py:MyAgent"

An agent of your own is named by a target (record/agent_code.py): `package.module:Class`, an
importable module (the current directory is searched too, after `sys.path`, as `python -m`
does), or `path/to/file.py:Class`, a file loaded as a module of its own. Everything that takes a
built-in agent's name takes a target: `run`, `--resume`, sweeps, `calibrate`. Every failure is
an `AgentConfigError` of one line: malformed target, module or file not found, no such
attribute, not a `BaseAgent` subclass, an import that raised or called `sys.exit`.

The first time a process loads an agent module of your own, it is loaded in a child process
first (`probe_import`), bounded by `MERCHANTBENCH_AGENT_IMPORT_SECONDS` (60 s by default): a
module that loops or waits at import, or ends the process there (`os._exit`), is refused in one
line instead of hanging or exiting silently. Then it is loaded here as before, under the same
module name, so checkpoints unpickle and runs stay deterministic (the child touches no run).
What this does not cover: a module that behaves differently on its second import.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

from merchantbench.agents.base import AgentSettings, BaseAgent
from merchantbench.record.agent_code import (
    AgentTarget,
    TargetError,
    is_target,
    parse_target,
)

_FILE_MODULE_PREFIX = "_merchantbench_agent_"  # file agents' modules, in sys.modules
IMPORT_SECONDS_ENV = "MERCHANTBENCH_AGENT_IMPORT_SECONDS"
IMPORT_SECONDS = 60.0  # an agent module's import in the child, at most (the env var overrides)
_LOADED_MARK = "merchantbench-agent-module-loaded"
_CHILD = (
    "import json, os, sys; args = json.loads(sys.argv[1]); sys.path[:] = args['path'];"
    "from merchantbench.agents.load import probe_child; probe_child(args['target'], args['name'])"
)


class AgentConfigError(ValueError):
    """An unknown agent, or settings its model refuses; the message is one line."""


def _one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"


def _exited(exc: SystemExit) -> str:
    return f"it called sys.exit({exc.code!r}) at import"


def import_seconds() -> float:
    """How long an agent module's import may take in the child (`IMPORT_SECONDS_ENV`)."""
    try:
        seconds = float(os.environ.get(IMPORT_SECONDS_ENV, IMPORT_SECONDS))
    except ValueError:
        raise AgentConfigError(f"{IMPORT_SECONDS_ENV} must be a number of seconds") from None
    return seconds if seconds > 0 else IMPORT_SECONDS


def probe_import(target: AgentTarget, name: str) -> None:
    """Load the target's module in a child process, bounded in time (the module docstring).

    Raises:
        AgentConfigError: One line: the import did not finish in time, ended the process, or
            failed (the child's own one-line reason).
    """
    seconds = import_seconds()
    where = target.source if target.is_file else f"module {target.source}"
    argv = json.dumps({"target": str(target), "name": name, "path": sys.path})
    command = [sys.executable, "-c", _CHILD, argv]
    with subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, errors="replace",
                          start_new_session=True) as child:  # fmt: skip
        try:
            out, err = child.communicate(timeout=seconds)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.communicate()
            raise AgentConfigError(
                f"agent {name!r}: importing {where} did not finish in {seconds:g} s (a loop or "
                f"a wait at import?); {IMPORT_SECONDS_ENV} sets the limit"
            ) from None
    lines = out.splitlines()
    last = lines[-1] if lines else ""
    if last == _LOADED_MARK:
        return
    if last.startswith(_LOADED_MARK + " "):
        raise AgentConfigError(last[len(_LOADED_MARK) + 1 :])
    said = " ".join(err.strip().splitlines()[-1:])[:200]
    raise AgentConfigError(
        f"agent {name!r}: importing {where} ended the process (exit code {child.returncode}) "
        f"before it finished loading{f': {said}' if said else ''}"
    )


def probe_child(target: str, name: str) -> None:
    """The child of `probe_import`: load the module, say so on the last line, exit at once."""
    try:
        parsed = parse_target(target)
        if parsed.is_file:
            _file_module(parsed, name, probe=False)
        else:
            _imported_module(parsed, name, probe=False)
        said = _LOADED_MARK
    except (AgentConfigError, TargetError) as exc:
        said = f"{_LOADED_MARK} {exc}"
    print(f"\n{said}", flush=True)
    os._exit(0)  # no atexit hook of the module runs


def _file_module(target: AgentTarget, name: str, *, probe: bool = True) -> ModuleType:
    """The module of a file target, loaded once under a name fixed by its path (so a
    checkpointed agent unpickles in any process that loaded the file), again if it changed."""
    path = Path(target.source)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise AgentConfigError(f"agent {name!r}: file {path} not found") from None
    except OSError as exc:
        raise AgentConfigError(f"agent {name!r}: cannot read {path} ({exc.strerror})") from None
    module_name = _FILE_MODULE_PREFIX + hashlib.sha256(str(path).encode()).hexdigest()[:16]
    digest = hashlib.sha256(data).hexdigest()
    loaded = sys.modules.get(module_name)
    if loaded is not None and getattr(loaded, "__merchantbench_sha256__", None) == digest:
        return loaded
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise AgentConfigError(f"agent {name!r}: {path} cannot be loaded as Python")
    if probe:
        probe_import(target, name)
    module = importlib.util.module_from_spec(spec)
    module.__merchantbench_sha256__ = digest  # type: ignore[attr-defined]
    sys.modules[module_name] = module  # before running it: dataclasses and pickle look it up
    try:
        spec.loader.exec_module(module)
    except SystemExit as exc:
        del sys.modules[module_name]
        raise AgentConfigError(f"agent {name!r}: loading {path} failed: {_exited(exc)}") from None
    except Exception as exc:
        del sys.modules[module_name]
        raise AgentConfigError(f"agent {name!r}: loading {path} failed: {_one_line(exc)}") from None
    return module


def _missing(exc: ModuleNotFoundError, module: str) -> bool:
    """Whether the module asked for (or a package above it) is what was not found, rather than
    something it imports."""
    return exc.name is not None and (module == exc.name or module.startswith(exc.name + "."))


def _imported_module(target: AgentTarget, name: str, *, probe: bool = True) -> ModuleType:
    module = target.source
    if probe and module not in sys.modules and target.top_module != "merchantbench":
        probe_import(target, name)
    for attempt in range(2):
        try:
            return importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if not _missing(exc, module):
                raise AgentConfigError(
                    f"agent {name!r}: importing {module} failed: {_one_line(exc)}"
                ) from None
            here = os.getcwd()
            if attempt or here in sys.path:
                raise AgentConfigError(
                    f"agent {name!r}: no module named {exc.name!r} (not installed, not on "
                    "PYTHONPATH, not in the current directory)"
                ) from None
            sys.path.append(here)  # as `python -m` finds modules of the current directory
            importlib.invalidate_caches()
        except SystemExit as exc:
            raise AgentConfigError(
                f"agent {name!r}: importing {module} failed: {_exited(exc)}"
            ) from None
        except Exception as exc:
            raise AgentConfigError(
                f"agent {name!r}: importing {module} failed: {_one_line(exc)}"
            ) from None
    raise AssertionError("unreachable")


def load_class(name: str) -> type[BaseAgent]:
    """The `BaseAgent` subclass a target names.

    Raises:
        AgentConfigError: One line: malformed target, module or file not found, an import
            that raised, no such attribute, not a `BaseAgent` subclass, or a `Settings` that
            is not an `AgentSettings` model.
    """
    try:
        target = parse_target(name)
    except TargetError as exc:
        raise AgentConfigError(str(exc)) from None
    module = _file_module(target, name) if target.is_file else _imported_module(target, name)
    found: object = module
    for part in target.attr.split("."):
        if not hasattr(found, part):
            where = target.source if target.is_file else f"module {target.source}"
            raise AgentConfigError(f"agent {name!r}: {where} has no attribute {part!r}")
        found = getattr(found, part)
    if not (isinstance(found, type) and issubclass(found, BaseAgent)):
        kind = "a class but" if isinstance(found, type) else f"a {type(found).__name__},"
        raise AgentConfigError(f"agent {name!r}: {target.attr} is {kind} not a BaseAgent subclass")
    settings = getattr(found, "Settings", None)
    if not (isinstance(settings, type) and issubclass(settings, AgentSettings)):
        raise AgentConfigError(
            f"agent {name!r}: {target.attr}.Settings is not an AgentSettings model"
        )
    return found


def load_own_agent(name: str) -> type[BaseAgent]:
    """The class of an agent of your own (a target, not a built-in), which may not be
    privileged: only the table's oracle is handed the hidden market.

    Raises:
        AgentConfigError: As `load_class`, or the class is privileged.
    """
    cls = load_class(name)
    if cls.privileged:
        raise AgentConfigError(
            f"agent {name!r}: only built-in agents may be privileged (read the hidden market)"
        )
    return cls


def resolve_agent_name(name: str, base: Path | None = None) -> str:
    """The name a run records for `name`: a built-in name as it is, a module target as it is,
    a file target with its path made absolute (relative to `base`, by default the current
    directory). The target is loaded once, so a bad one fails here.

    Raises:
        AgentConfigError: A target that does not load (`load_own_agent`).
    """
    if not is_target(name):
        return name
    try:
        resolved = str(parse_target(name, base))
    except TargetError as exc:
        raise AgentConfigError(str(exc)) from None
    load_own_agent(resolved)
    return resolved


def agent_slug(name: str) -> str:
    """A short label of an agent for directory names and tables: a built-in's name, or the
    class name of a target."""
    return name.rpartition(":")[2].rpartition(".")[2] if is_target(name) else name


def import_root(name: str) -> str | None:
    """The `sys.path` entry a module target's top-level package was found on, for workers in
    other processes (Ray) that must import it too; None for a built-in, a file target (loaded
    by its path) or a module of merchantbench."""
    if not is_target(name):
        return None
    top = parse_target(name).top_module
    if top is None or top == "merchantbench":
        return None
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return str(Path(next(iter(spec.submodule_search_locations))).parent)
    return None if spec.origin is None else str(Path(spec.origin).parent)


def add_import_roots(roots: Iterable[str]) -> None:
    """Put the driver's import roots of module targets on this process's `sys.path` (after
    what is there), so a worker imports the same agent modules."""
    added = [root for root in roots if root not in sys.path]
    if added:
        sys.path.extend(added)
        importlib.invalidate_caches()
