"""Every HTTP request a test makes with httpx states its time limit (tests/timeouts.py): httpx's
default of 5 s failed tests/serve/test_restart.py on a loaded 2-core machine although the server
was well. An AST scan of the test suite, so a new test cannot bring the default back."""

from __future__ import annotations

import ast
from pathlib import Path

from timeouts import REQUEST_SECONDS

TESTS = Path(__file__).parent
CALLS = {"get", "post", "put", "patch", "delete", "request", "stream", "Client", "AsyncClient"}


def _httpx_calls(tree: ast.AST) -> list[ast.Call]:
    return [node for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "httpx"
            and node.func.attr in CALLS]  # fmt: skip


def test_every_httpx_request_of_the_tests_has_a_generous_timeout() -> None:
    short: list[str] = []
    for path in sorted(TESTS.rglob("*.py")):
        for call in _httpx_calls(ast.parse(path.read_text(), str(path))):
            given = {k.arg: k.value for k in call.keywords}
            where = f"{path.relative_to(TESTS)}:{call.lineno}"
            if "timeout" not in given and None not in given:  # None: **options passed on
                short.append(f"{where}: no timeout (httpx's default is 5 s)")
                continue
            value = given.get("timeout")
            seconds = value.value if isinstance(value, ast.Constant) else None
            if isinstance(seconds, int | float) and seconds < REQUEST_SECONDS / 2:
                short.append(f"{where}: timeout={seconds}, use timeouts.REQUEST_SECONDS")
    assert short == []
