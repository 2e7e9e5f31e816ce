"""The app factory's extension point: another front end mounts a per-run sub-app that reaches the
run's agent surface and the token check."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, Depends, FastAPI
from fastapi.testclient import TestClient
from serve_support import ADMIN

from merchantbench.serve import ServeConfig, create_app
from merchantbench.serve.auth import require_run
from merchantbench.serve.host import Host
from merchantbench.serve.registry import RunRegistry


def clock_extension(app: FastAPI, registry: RunRegistry) -> None:
    router = APIRouter()

    @router.get("/runs/{run_id}/clock")
    async def clock(host=Depends(require_run)) -> dict[str, int]:
        assert isinstance(host, Host) and registry.hosts[host.run_id] is host
        return {"window": host.surface.window, "hour": host.surface.hour}

    app.include_router(router)


def test_an_extension_mounts_per_run_routes_behind_the_tokens(tmp_path: Path) -> None:
    app = create_app(ServeConfig(tmp_path / "runs", ADMIN), extensions=[clock_extension])
    with TestClient(app) as client:
        admin = {"Authorization": f"Bearer {ADMIN}"}
        run = client.post("/api/runs", headers=admin, json={"scenario": "smoke"}).json()
        agent = {"Authorization": f"Bearer {run['agent_token']}"}
        client.post(f"/api/runs/{run['run_id']}/end-window", headers=agent)
        assert client.get(f"/runs/{run['run_id']}/clock", headers=agent).json() == {
            "window": 1,
            "hour": 12,
        }
        assert client.get(f"/runs/{run['run_id']}/clock").status_code == 401
        assert (
            client.get(
                f"/runs/{run['run_id']}/clock", headers={"Authorization": "Bearer x"}
            ).status_code
            == 403
        )


def test_openapi_is_served_at_docs(tmp_path: Path) -> None:
    with TestClient(create_app(ServeConfig(tmp_path / "runs", ADMIN))) as client:
        assert client.get("/docs").status_code == 200
        paths = client.get("/openapi.json").json()["paths"]
        assert {"/runs/{run_id}/agents/{agent_id}/act", "/api/runs/{run_id}/tools/{tool}"} <= set(
            paths
        )
