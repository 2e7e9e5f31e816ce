"""The launcher: trusted code that runs first inside the sandbox, then runs the snippet.

This file is staged verbatim as `launcher.py` in every execution (`sandbox.launcher_source`)
and run by the sandbox's own interpreter (`python -I -S launcher.py config.json`), so it uses
only the standard library and imports nothing from merchantbench.

In order: set the resource limits, drop root for a fresh unprivileged uid (root ignores the
process limit), put the snippet's import paths first, then run the snippet like a notebook cell
and send a final expression's value to the parent through the result pipe.
"""

import ast
import json
import os
import resource
import sys
import traceback

BRIDGE_ENV = "MERCHANTBENCH_BRIDGE"
"""Environment variable naming the snippet's ends of the tools bridge (see `bridge.py`)."""


def apply_limits(limits: dict[str, int]) -> None:
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


def drop_privileges(uid: int | None) -> None:
    """As root, become an unprivileged user of our own: root ignores RLIMIT_NPROC and could
    raise the other limits again. bwrap already set no-new-privileges, so no way back."""
    if uid is None or os.getuid() != 0:
        return
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)


def run_snippet(path: str, variables: dict[str, object]) -> tuple[bool, object]:
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


def report_result(fd: int, value: object) -> None:
    """Send the result to the parent as JSON (`repr` for what JSON cannot hold)."""
    try:
        text = json.dumps({"value": value}, default=repr)
    except ValueError:  # e.g. a list that contains itself
        text = json.dumps({"value": repr(value)})
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as file:
        config = json.load(file)
    apply_limits(config["limits"])
    drop_privileges(config["uid"])
    sys.path[:0] = config["paths"]
    if config["bridge"]:
        os.environ[BRIDGE_ENV] = config["bridge"]
    try:
        has_value, value = run_snippet(config["snippet"], config["variables"])
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
        report_result(config["result_fd"], value)


if __name__ == "__main__":
    main()
