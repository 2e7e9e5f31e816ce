"""The dashboard on `merchantbench serve`: the operator's only (admin bearer or the cookie of the
printed link), beside the agent protocol and MCP without taking any of their paths, live over
the served runs, with the records' numbers and nothing hidden, no token and no sealed seed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from serve_support import ADMIN

from frontend_script import scan
from merchantbench.record.sealed import read_sealed
from merchantbench.serve import ServeConfig, create_app
from merchantbench.serve.dashboard_mount import DASHBOARD_COOKIE, dashboard_extension
from merchantbench.serve.mcp_mount import mcp_extension
from merchantbench.tools.toolset import DECLARED
from merchantbench.web.app import web_extension

SEED = 918273645  # digits that would stand out in any answer
ADMIN_HEADERS = {"Authorization": f"Bearer {ADMIN}"}


def served(runs_dir: Path, admin: str | None = ADMIN) -> TestClient:
    extensions = [mcp_extension(), dashboard_extension(web_extension)]
    return TestClient(create_app(ServeConfig(runs_dir, admin), extensions=extensions))


def new_run(client: TestClient, **body) -> tuple[str, dict[str, str]]:
    created = client.post("/api/runs", headers=ADMIN_HEADERS, json={"scenario": "smoke", **body})
    assert created.status_code == 201, created.text
    run = created.json()
    return run["run_id"], {"Authorization": f"Bearer {run['agent_token']}"}


def dashboard_paths(run_id: str) -> list[str]:
    return ["/", f"/runs/view?path={run_id}", f"/runs/trace?path={run_id}&window=0",
            "/runs/progress"]  # fmt: skip


def test_only_the_operator_reads_the_dashboard(tmp_path: Path) -> None:
    with served(tmp_path / "runs") as client:
        run_id, agent = new_run(client, seed=SEED)
        for path in dashboard_paths(run_id):
            assert client.get(path).status_code == 401, path
            assert client.get(path, headers=agent).status_code == 403, path
            assert client.get(path, headers={"Authorization": "Bearer x"}).status_code == 403
            assert client.get(path, headers=ADMIN_HEADERS).status_code == 200, path
        client.cookies.set(DASHBOARD_COOKIE, ADMIN)  # the token itself is not the cookie
        assert client.get("/").status_code == 403
        client.cookies.clear()
        assert client.get("/dashboard").status_code == 401
        wrong = client.get("/dashboard?token=nope", follow_redirects=False)
        assert wrong.status_code == 403 and "set-cookie" not in wrong.headers
        login = client.get(f"/dashboard?token={ADMIN}", follow_redirects=False)
        assert login.status_code == 303 and login.headers["location"] == "/"
        cookie = login.cookies[DASHBOARD_COOKIE]
        assert ADMIN not in cookie and "httponly" in login.headers["set-cookie"].lower()
        for path in dashboard_paths(run_id):  # the cookie opens the dashboard ...
            assert client.get(path).status_code == 200, path
        assert client.get("/dashboard", follow_redirects=False).status_code == 303
        assert client.get("/api/runs").status_code == 401  # ... and nothing else
        assert client.get(f"/runs/{run_id}/tools/schema").status_code == 401


def test_the_protocol_json_api_and_mcp_keep_their_paths(tmp_path: Path) -> None:
    with served(tmp_path / "runs") as client:
        for label in ("view", "progress", "trace"):  # runs named like dashboard routes
            run_id, agent = new_run(client, label=label)
            schema = client.get(f"/runs/{run_id}/tools/schema", headers=agent)
            assert schema.status_code == 200 and len(schema.json()["tools"]) == len(
                DECLARED.tools()
            )
            observation = client.get(f"/runs/{run_id}/agents/agent_0/observation?timeout=0",
                                     headers=agent)  # fmt: skip
            assert observation.status_code == 200 and observation.json()["tick"]["window"] == 0
            assert client.post(f"/api/runs/{run_id}/end-window", headers=agent).status_code == 200
            # The MCP mount still answers for the run (its own token check first).
            assert client.post(f"/runs/{run_id}/mcp", json={}).status_code == 401
            assert client.post(f"/runs/{run_id}/nothing", headers=agent).status_code == 404
        assert client.get("/openapi.json").status_code == 200
        assert client.get("/api/health").json()["ok"] is True
        assert client.get("/web-static/style.css").status_code == 200


def test_live_progress_and_the_finished_runs_numbers(tmp_path: Path) -> None:
    with served(tmp_path / "runs") as client:
        run_id, agent = new_run(client, seed=SEED, days=3)
        for _ in range(3):
            client.post(f"/api/runs/{run_id}/end-window", headers=agent)
        rows = {r["path"]: r for r in client.get("/runs/progress", headers=ADMIN_HEADERS).json()}
        assert (rows[run_id]["status"], rows[run_id]["windows_done"]) == ("running", 3)
        assert rows[run_id]["windows_total"] == 6
        while client.get(f"/api/runs/{run_id}", headers=agent).json()["status"] != "finished":
            assert client.post(f"/api/runs/{run_id}/end-window", headers=agent).status_code == 200
        metrics = json.loads((tmp_path / "runs" / run_id / "metrics.json").read_text())
        page = client.get(f"/runs/view?path={run_id}", headers=ADMIN_HEADERS).text
        assert f"{metrics['final_net_assets']:,.2f}" in page
        rows = {r["path"]: r for r in client.get("/runs/progress", headers=ADMIN_HEADERS).json()}
        assert (rows[run_id]["status"], rows[run_id]["windows_done"]) == ("completed", 6)
        trace = client.get(f"/runs/trace?path={run_id}&window=2", headers=ADMIN_HEADERS).json()
        assert [e["tool"] for e in trace["calls"]] == ["end_of_step"]
        assert trace["transcript"] and trace["observation"]  # what the agent saw, served too


def test_no_dashboard_answer_carries_a_token_a_sealed_seed_or_hidden_state(
    tmp_path: Path,
) -> None:
    runs = tmp_path / "runs"
    with served(runs) as client:
        public_id, public = new_run(client, seed=SEED, days=2)
        sealed_id, sealed = new_run(client, sealed=True, days=2)
        for run_id, agent in ((public_id, public), (sealed_id, sealed)):
            client.post(f"/api/runs/{run_id}/tools/search_products", headers=agent, json={})
            client.post(f"/api/runs/{run_id}/end-window", headers=agent)
        secret = read_sealed(runs / sealed_id)  # host side, as `merchantbench reveal` does
        tokens = [public["Authorization"][7:], sealed["Authorization"][7:], ADMIN]
        forbidden = [str(SEED), str(secret.seed), secret.salt, str(runs), *tokens]
        answers = [client.get(p, headers=ADMIN_HEADERS) for r in (public_id, sealed_id)
                   for p in dashboard_paths(r)]  # fmt: skip
        for answer in answers:
            assert answer.status_code == 200
            body = answer.text
            assert not [s for s in forbidden if s in body], answer.url
            if answer.headers["content-type"].startswith("application/json"):
                scan(answer.json(), [])
            else:
                scan(re.sub(r"<[^>]+>", " ", body), [])


@pytest.mark.parametrize("path", ["/", "/runs/progress"])
def test_a_server_without_tokens_shows_it_to_loopback_clients(tmp_path: Path, path: str) -> None:
    with served(tmp_path / "runs", admin=None) as client:
        assert client.get(path).status_code == 200
        login = client.get("/dashboard", follow_redirects=False)
        assert login.status_code == 303 and login.headers["location"] == "/"
