"""Browser tests: a real uvicorn server on 127.0.0.1 (in a thread) and Debian's Chromium
driven by Playwright. No browser is downloaded: without Chromium these tests skip with the
reason (`merchantbench doctor`); CI installs it and fails them without it (see .ci/run)."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from fastapi import FastAPI

from merchantbench.optional_parts import chromium_path
from requires import need

# Set to a directory (e.g. docs/img) to keep the screenshots the tests take.
SHOTS_ENV = "MERCHANTBENCH_SCREENSHOTS"


class LiveServer:
    """A uvicorn server in a background thread, on a free loopback port."""

    def __init__(self, app: FastAPI) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.app = app

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the test server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """Chromium, for one test module at a time: Playwright's sync API runs an event loop in the
    worker's thread while it is open, so a later test's `asyncio.run` in the same worker would
    fail ("cannot be called from a running event loop"); pytest closes a module's fixtures
    before a test of another module runs."""
    from playwright.sync_api import sync_playwright

    need("chromium")
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=str(chromium_path()), args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    """Where screenshots go: docs/img when asked, else the test's temporary directory."""
    target = os.environ.get(SHOTS_ENV)
    path = Path(target) if target else tmp_path / "shots"
    path.mkdir(parents=True, exist_ok=True)
    return path


def collect_answers(page: Any) -> list[tuple[str, str]]:
    """Every response the page receives from our server, as (url, body text)."""
    answers: list[tuple[str, str]] = []

    def keep(response: Any) -> None:
        if response.url.startswith("http://127.0.0.1"):
            try:
                answers.append((response.url, response.text()))
            except Exception:  # a redirect or an aborted load has no body
                answers.append((response.url, ""))

    page.on("response", keep)
    return answers


def assert_clean(answers: list[tuple[str, str]], secret: int | None) -> None:
    """No answer names hidden state (keys of JSON answers included) or carries the seed."""
    from merchantbench.catalog.hidden import hidden_names_in

    assert answers
    for url, body in answers:
        try:
            value: Any = json.loads(body)
        except ValueError:
            value = body
        problems = hidden_names_in(value)
        assert not problems, (url, problems)
        if secret is not None:
            assert str(secret) not in body, url
