"""Tokens: an agent token reaches only its own run's agent routes; no token or a wrong one is
refused; a refused request changes nothing; no public bind without tokens."""

from __future__ import annotations

import httpx
import pytest
from protocol_client import assistant, tool_call
from serve_support import LiveServer
from test_protocol import fingerprint
from typer.testing import CliRunner

from merchantbench.cli import app
from merchantbench.serve.host import Host
from timeouts import REQUEST_SECONDS

ACT = {"messages": [assistant(tool_call("c", "write_memory_doc", {"content": "x"}))]}


def agent_routes(run_id: str) -> list[tuple[str, str, dict | None]]:
    agent = f"/runs/{run_id}/agents/agent_0"
    return [
        ("GET", f"/runs/{run_id}/tools/schema", None),
        ("POST", f"/runs/{run_id}/agent/register", {"agent_id": "agent_0"}),
        ("GET", f"{agent}/observation?timeout=0", None),
        ("POST", f"{agent}/act", ACT),
        ("POST", f"{agent}/usage", {"usage_id": "u", "token_usage": {"input": 1}}),
        ("GET", f"/api/runs/{run_id}", None),
        ("GET", f"/api/runs/{run_id}/observation", None),
        ("POST", f"/api/runs/{run_id}/tools/write_memory_doc", {"content": "x"}),
        ("POST", f"/api/runs/{run_id}/end-window", None),
    ]


def admin_routes(run_id: str) -> list[tuple[str, str, dict | None]]:
    return [
        ("POST", "/api/runs", {"scenario": "smoke"}),
        ("GET", "/api/runs", None),
        ("GET", f"/api/runs/{run_id}/env", None),
        ("POST", f"/api/runs/{run_id}/pause", None),
        ("POST", f"/api/runs/{run_id}/resume", None),
    ]


@pytest.fixture
def two_runs(live: LiveServer):
    a, b = live.create_run(label="a"), live.create_run(label="b")
    hosts = [live.registry.hosts[r["run_id"]] for r in (a, b)]
    assert all(isinstance(h, Host) for h in hosts)
    return a, b, hosts


def test_an_agent_token_cannot_read_or_act_on_another_run(live: LiveServer, two_runs) -> None:
    a, b, (_, host_b) = two_runs
    before = fingerprint(host_b)
    with live.client(a["agent_token"]) as agent_a:
        for method, path, body in agent_routes(b["run_id"]):
            response = agent_a.request(method, path, json=body)
            assert response.status_code == 403, (method, path, response.text)
        # An unknown run looks the same as a foreign one.
        assert agent_a.get("/api/runs/nope-0000").status_code == 403
    assert fingerprint(host_b) == before and not host_b.only.protocol.auxiliary


def test_an_agent_token_cannot_reach_admin_routes(live: LiveServer, two_runs) -> None:
    a, _, (host_a, _) = two_runs
    runs = len(live.registry.hosts)
    with live.client(a["agent_token"]) as agent_a:
        for method, path, body in admin_routes(a["run_id"]):
            response = agent_a.request(method, path, json=body)
            assert response.status_code == 403, (method, path, response.text)
    assert len(live.registry.hosts) == runs and not host_a.settings.paused


def test_the_own_token_works_and_no_or_wrong_tokens_are_refused(live: LiveServer, two_runs) -> None:
    a, _, (host_a, _) = two_runs
    with live.client(a["agent_token"]) as agent_a:
        for method, path, body in agent_routes(a["run_id"])[:-1]:  # all but closing the window
            assert agent_a.request(method, path, json=body).status_code == 200, path
    before = fingerprint(host_a)
    for token, status in ((None, 401), ("wrong", 403)):
        with live.client(token) as other:
            for method, path, body in agent_routes(a["run_id"]) + admin_routes(a["run_id"]):
                assert other.request(method, path, json=body).status_code == status, path
    assert fingerprint(host_a) == before
    with live.client(None) as anyone:
        assert anyone.get("/api/health").status_code == 200


def test_a_token_of_non_ascii_bytes_is_refused_not_a_crash(live: LiveServer, two_runs) -> None:
    """A header may carry any Latin-1 byte; comparing such a token is a refusal, not a 500."""
    a, _, (host_a, _) = two_runs
    before = fingerprint(host_a)
    for token in ("é", f"{a['agent_token']}\xff", "\x80" * 40):
        headers = {"Authorization": f"Bearer {token}".encode("latin-1")}
        with httpx.Client(base_url=live.base_url, headers=headers, timeout=REQUEST_SECONDS) as odd:
            for method, path, body in agent_routes(a["run_id"]) + admin_routes(a["run_id"]):
                assert odd.request(method, path, json=body).status_code == 403, (token, path)
    assert fingerprint(host_a) == before


def test_a_public_bind_without_tokens_is_refused() -> None:
    for host in ("0.0.0.0", "192.168.1.5", "example.org"):
        result = CliRunner().invoke(app, ["serve", "--no-auth", "--host", host])
        assert result.exit_code == 2 and "without tokens" in result.output


def test_external_agents_need_serve_and_serve_needs_external() -> None:
    for args in (["--agent", "external"], ["--agent", "idle", "--serve"]):
        result = CliRunner().invoke(app, ["run", "--no-progress", "--scenario", "smoke", *args])
        assert result.exit_code == 2 and "--serve" in result.output
