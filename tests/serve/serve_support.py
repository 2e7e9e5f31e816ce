"""A real server on a loopback socket (uvicorn on an ephemeral port, in a thread), and an HTTP
client that knows only the protocol."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from merchantbench.limits import ServerLimits
from merchantbench.serve import ServeConfig, create_app
from merchantbench.serve.app import AppExtension
from merchantbench.serve.registry import RunRegistry
from timeouts import REQUEST_SECONDS, START_SECONDS

ADMIN = "admin-token-for-tests"


@pytest.fixture(autouse=True, scope="session")
def private_cache(tmp_path_factory) -> Iterator[Path]:
    cache = tmp_path_factory.getbasetemp() / "market-cache"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MERCHANTBENCH_CACHE", str(cache))
        yield cache


@dataclass
class LiveServer:
    base_url: str
    registry: RunRegistry
    server: uvicorn.Server
    thread: threading.Thread

    def client(self, token: str | None = ADMIN, timeout: float = REQUEST_SECONDS) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout)

    def create_run(self, **body: Any) -> dict[str, Any]:
        with self.client() as admin:
            response = admin.post("/api/runs", json={"scenario": "smoke", **body})
        assert response.status_code == 201, response.text
        return response.json()

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
        assert not self.thread.is_alive()


def start_server(
    runs_dir: Path,
    admin_token: str | None = ADMIN,
    limits: ServerLimits | None = None,
    extensions: Sequence[AppExtension] = (),
) -> LiveServer:
    """Serve `runs_dir` on 127.0.0.1 at an ephemeral port; returns once it accepts requests."""
    serve = ServeConfig(runs_dir=runs_dir, admin_token=admin_token, limits=limits or ServerLimits())
    app = create_app(serve, extensions)
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=0,
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=5,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + START_SECONDS
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "server did not start"
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    return LiveServer(f"http://127.0.0.1:{port}", app.state.registry, server, thread)


@pytest.fixture
def live(tmp_path) -> Iterator[LiveServer]:
    server = start_server(tmp_path / "runs")
    yield server
    server.stop()
