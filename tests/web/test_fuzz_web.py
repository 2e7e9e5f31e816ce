"""API fuzzing of the web app (playground and dashboard, as `merchantbench play` and
`merchantbench dashboard` serve it) from the OpenAPI document it builds (schemathesis, bounded
examples): no route answers 5xx, and every answer conforms to the document. The folders are
given relative to the working directory, as the commands' defaults are."""

from __future__ import annotations

import os
from collections.abc import Iterator
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
from web_support import LiveServer

from merchantbench.cli.serve import body_limited
from merchantbench.scenario import load_scenario
from merchantbench.web.app import create_web_app
from merchantbench.web.room import PlayRoom

SEED = 7
schema = schemathesis.openapi.from_dict(create_web_app(Path("unused"), Path("unused")).openapi())
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


@pytest.fixture(scope="module")
def target(tmp_path_factory) -> Iterator[tuple[LiveServer, str, str]]:
    home = Path.cwd()
    os.chdir(tmp_path_factory.mktemp("web-fuzz"))
    try:
        room_dir = Path("study")  # relative, as `play --dir` and `dashboard --runs` take it
        [seat] = PlayRoom(room_dir).create(load_scenario("smoke"), [SEED])
        PlayRoom(room_dir).operator_token()  # the study view exists, as `study create` makes it
        app = body_limited(create_web_app(play_dir=room_dir, runs_root=room_dir))
        with LiveServer(app) as server:
            yield server, seat.token, seat.run
    finally:
        os.chdir(home)


def aim(case: Any, token: str, run: str) -> None:
    """Point about half the cases at the real store and record (the rest stay random)."""
    if case.path_parameters and "token" in case.path_parameters and coin(case.body):
        case.path_parameters = {**case.path_parameters, "token": token}
    if isinstance(case.query, dict) and "path" in case.query and coin(case.query):
        case.query["path"] = run


def coin(value: Any) -> bool:
    """A fair, reproducible coin from a generated value."""
    return crc32(repr(value).encode()) % 2 == 1


@schema.parametrize()
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_server_error_and_answers_as_documented(case: Any, target: Any) -> None:
    server, token, run = target
    aim(case, token, run)
    response = case.call(base_url=server.url, timeout=60)
    assert response.status_code < 500, (case.method, case.path, response.text[:300])
    case.validate_response(response, checks=CHECKS)
