"""API fuzzing from the OpenAPI schema (schemathesis, bounded examples) of the app `merchantbench
serve` runs (MCP and dashboard mounted): no route answers 5xx, every answer conforms to the
document (its status code is documented, its body matches the documented schema), and a
refused request (4xx) changes no run. The server serves `--runs-dir runs`, relative, as the
command's default does, and about half the dashboard's cases name the live run's record."""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any
from zlib import crc32

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from serve_support import ADMIN, LiveServer, start_server

from merchantbench.serve import ServeConfig, create_app
from merchantbench.serve.dashboard_mount import dashboard_extension
from merchantbench.serve.host import Host
from merchantbench.serve.mcp_mount import mcp_extension
from merchantbench.web.app import web_extension

EXTENSIONS = (mcp_extension(), dashboard_extension(web_extension))  # as `serve` composes it
schema = schemathesis.openapi.from_dict(
    create_app(ServeConfig(Path("unused"), ADMIN), EXTENSIONS).openapi()
)
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
MAX_POLL = 0.05  # long-polls of a paused run must not hold the fuzzer


@pytest.fixture(scope="module")
def target(tmp_path_factory) -> Any:
    home = Path.cwd()
    os.chdir(tmp_path_factory.mktemp("fuzz"))
    try:
        server = start_server(Path("runs"), extensions=EXTENSIONS)  # relative, as `serve`'s default
        run = server.create_run(label="fuzzed")
        yield server, run
        server.stop()
    finally:
        os.chdir(home)


def world(server: LiveServer) -> tuple[Any, ...]:
    """Every run's state, protocol state and settings, comparable before and after."""
    state = []
    for run_id, host in sorted(server.registry.hosts.items()):
        if isinstance(host, Host):
            memory = host.session.memory
            state.append((run_id, host.session.state_hash(), memory.seq, memory.memory_doc,
                          pickle.dumps(host.only.protocol), host.settings.paused))  # fmt: skip
    return tuple(state)


def aim(case: Any, run_id: str) -> None:
    """Point the case at the live run and keep it quick (short polls, no wall-clock runs)."""
    if case.path_parameters is not None:
        case.path_parameters = {
            **case.path_parameters,
            **({"run_id": run_id} if "run_id" in case.path_parameters else {}),
            **({"agent_id": "agent_0"} if "agent_id" in case.path_parameters else {}),
        }
    if isinstance(case.query, dict) and "timeout" in case.query:
        try:
            case.query["timeout"] = min(float(case.query["timeout"]), MAX_POLL)
        except (TypeError, ValueError):
            pass
    if (
        isinstance(case.query, dict)
        and "path" in case.query
        and crc32(repr(case.query).encode()) % 2
    ):
        case.query["path"] = run_id  # the dashboard's pages of the live run's record
    if isinstance(case.body, dict) and "window_seconds" in case.body:
        case.body["window_seconds"] = None
    case.headers = {**(case.headers or {}), "Authorization": f"Bearer {ADMIN}"}


@schema.parametrize()
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_500_and_no_change_on_refusal(case: Any, target: Any) -> None:
    server, run = target
    aim(case, run["run_id"])
    before = world(server)
    response = case.call(base_url=server.base_url, timeout=30)
    print("FUZZ", case.method, case.path, response.status_code)
    assert response.status_code < 500, (case.method, case.path, response.text[:300])
    case.validate_response(response, checks=CHECKS)
    if response.status_code >= 400:
        after = world(server)
        assert after == before, (case.method, case.formatted_path, response.status_code)
