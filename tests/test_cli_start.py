"""The command starts fast because its modules import only what their options need: the work
(numpy, pydantic, the servers, the model clients, ...) is imported when a command runs. Checked
in a fresh interpreter, after importing the CLI and after every command's `--help`."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = (
    "numpy", "scipy", "pyarrow", "matplotlib", "pydantic", "yaml", "bm25s", "fastapi",
    "starlette", "uvicorn", "httpx", "anyio", "openai", "mcp", "gymnasium", "jinja2",
)  # fmt: skip

PROBE = """
import contextlib, io, json, sys
heavy = {heavy!r}
from merchantbench.cli import app
import typer
seen = {{"import": sorted(m for m in heavy if m in sys.modules), "help": {{}}}}
root = typer.main.get_command(app)
paths = []
def walk(group, path):
    ctx = group.context_class(group, info_name="merchantbench")  # nothing parsed
    for name in group.list_commands(ctx):
        paths.append(path + [name])
        sub = group.get_command(ctx, name)
        if hasattr(sub, "list_commands"):
            walk(sub, path + [name])
walk(root, [])
for path in [[]] + paths:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            root.main(path + ["--help"], prog_name="merchantbench", standalone_mode=False)
        except SystemExit:
            pass
    assert "Usage" in out.getvalue(), (path, out.getvalue())
    seen["help"][" ".join(path)] = sorted(m for m in heavy if m in sys.modules)
print(json.dumps(seen))
"""


def test_the_cli_and_every_help_import_nothing_heavy():
    probe = PROBE.format(heavy=HEAVY)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["import"] == [], f"importing merchantbench.cli loads {seen['import']}"
    assert len(seen["help"]) > 20  # the root and every command, groups' commands too
    loaded = {path or "(root)": mods for path, mods in seen["help"].items() if mods}
    assert loaded == {}, f"--help loads heavy modules: {loaded}"


def test_a_group_given_no_command_shows_its_help():
    done = subprocess.run(
        [sys.executable, "-m", "merchantbench.cli", "scenario"], capture_output=True, text=True
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("Usage: ") and "scenario [OPTIONS] COMMAND" in done.stderr
    assert "show" in done.stderr
    assert "error:" not in done.stderr
