"""Markets over HTTP (docs/design.md §11, issue 23): several merchants in one served run, each with
its own agent id and token on the artifact's per-agent paths. Simultaneous windows (a merchant's
`end_of_step` closes the window for it; the hours run when every merchant has closed it), the
same arena record as `merchantbench arena` (resumed after a server restart, to the same state),
and isolation: one merchant's token never reads or acts for another, and nothing private of
one merchant shows in any answer another gets."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from protocol_client import ProtocolClient, assistant, tool_call
from script import play_window
from serve_support import ADMIN, LiveServer, start_server

from merchantbench.record.arena import read_arena
from merchantbench.record.sealed import read_sealed
from merchantbench.replay.market import verify_market
from merchantbench.scenario import load_scenario
from merchantbench.serve.registry import TOKENS_FILE
from merchantbench.session import MarketSession
from timeouts import REQUEST_SECONDS

DAYS = 3
AGENTS = ["alpha", "beta"]
SECRET = "ALPHA-PRIVATE-NOTE"


def _market(live: LiveServer, **body: Any) -> dict[str, Any]:
    return live.create_run(days=DAYS, agents=AGENTS, label="market", **body)


def _clients(live: LiveServer, created: dict[str, Any]) -> dict[str, ProtocolClient]:
    run = created["run_id"]
    return {a: ProtocolClient(live.base_url, run, a, created["agent_tokens"][a]) for a in AGENTS}


def _alpha_window(call: Any, window: int) -> None:
    play_window(call, window)
    call("write_memory_doc", {"content": f"{SECRET} {window}", "mode": "replace"})


def _beta_window(call: Any, window: int) -> None:
    call("query_balance", {})
    if window == 0:
        found = call("search_products", {"sort": "sales_30d", "page_size": 3})
        index = found["columns"].index("product_id")
        items = [{"product_id": row[index], "sale_price": 49.9} for row in found["rows"]]
        call("list_product", {"items": items})
    call("read_memory_doc", {})


PLAYS = {"alpha": _alpha_window, "beta": _beta_window}


def _play_window(clients: dict[str, ProtocolClient], order: list[str]) -> bool:
    """Both merchants play one window (in `order`); True once the market is over."""
    for agent in order:
        client = clients[agent]
        packet = client.observation()
        if packet.status_code == 410:
            return True
        assert packet.status_code == 200, packet.text
        window = packet.json()["tick"]["window"]
        PLAYS[agent](client.call, window)
    for position, agent in enumerate(order):
        client = clients[agent]
        done = client.act(assistant(tool_call(f"end-{client.step}", "end_of_step")))
        assert done.status_code == 200, done.text
        answer = done.json()
        last = position == len(order) - 1
        assert answer["step_done"] is True and answer["hook_released"] is last
        if not last:  # the window is closed for it alone: it waits for the others
            again = client.act(assistant(tool_call("late", "query_balance")))
            assert again.status_code == 425 and again.json()["error"] == "window_closed"
            assert client.observation(timeout=0.2).status_code == 408
    return False


def _in_process_hash(scenario_days: int) -> str:
    """The same actions on a market played in process: the served market's state hash."""
    scenario = load_scenario("smoke", overrides=[f"clock.days={scenario_days}"])
    market = MarketSession.open(scenario, 1, AGENTS)
    while not market.over:
        window = market.window
        for agent in AGENTS:
            surface = market.session(agent).surface
            PLAYS[agent](lambda tool, args, s=surface: s.call(tool, args), window)  # type: ignore[misc]
        for agent in AGENTS:
            market.session(agent).surface.call("end_of_step", {})
    return market.state_hash()


def _leaks(responses: list[httpx.Response], *secrets: str) -> list[str]:
    found = []
    for response in responses:
        text = response.text
        found += [f"{response.request.url.path}: {s}" for s in secrets if s in text]
    return found


def test_two_merchants_play_a_market_over_the_artifact_protocol(tmp_path):
    live = start_server(tmp_path / "runs")
    try:
        created = _market(live)
        assert "agent_token" not in created and set(created["agent_tokens"]) == set(AGENTS)
        assert created["envs"]["beta"]["MERCHANTBENCH_AGENT_ID"] == "beta"
        clients = _clients(live, created)
        for agent, client in clients.items():
            schema = client.schema().json()
            assert schema["base_path"].endswith(f"/agents/{agent}/act")
            assert schema["protocol"]["merchants"] == 2
            assert client.register(model="m").status_code == 200
        order = AGENTS
        while not _play_window(clients, order):
            order = order[::-1]  # who acts or closes first changes nothing
        for client in clients.values():
            assert client.observation().json()["error"] == "run_finished"
        run_dir = tmp_path / "runs" / created["run_id"]
        arena = read_arena(run_dir)
        assert arena.ended == "completed"
        assert arena.state_hash == _in_process_hash(DAYS)
        verified = verify_market(run_dir)  # every merchant's record, replayed in one market
        assert verified.ok, verified.summary()
        assert verified.final_state_hash == arena.state_hash
        for agent in AGENTS:
            run = json.loads((run_dir / "merchants" / agent / "run.json").read_text())
            assert run["driver"] == "external" and run["agent"]["name"] == "external"
            assert run["front_end"]["name"] == "arena"
            assert run["front_end"]["registration"]["model"] == "m"
            assert (run_dir / "merchants" / agent / "metrics.json").is_file()
        # Nothing private of alpha (its memory note, its token, its id) in any answer to beta.
        alpha_token = created["agent_tokens"]["alpha"]
        assert not _leaks(clients["beta"].responses, SECRET, alpha_token, "alpha")
        with httpx.Client(base_url=live.base_url, timeout=REQUEST_SECONDS) as http:
            auth = {"Authorization": f"Bearer {created['agent_tokens']['beta']}"}
            summary = http.get(f"/api/runs/{created['run_id']}", headers=auth).json()
        assert list(summary["agents"]) == ["beta"] and "alpha" not in json.dumps(summary)
        assert summary["agents"]["beta"]["metrics"]["final_net_assets"] > 0
    finally:
        live.stop()


def test_a_merchant_token_reaches_its_own_agent_paths_only(tmp_path):
    live = start_server(tmp_path / "runs")
    try:
        created = _market(live)
        run, tokens = created["run_id"], created["agent_tokens"]
        beta = {"Authorization": f"Bearer {tokens['beta']}"}
        body = {"messages": [assistant(tool_call("x", "query_balance"))]}
        with httpx.Client(base_url=live.base_url, timeout=REQUEST_SECONDS) as http:
            for path in ("observation", "act", "usage"):
                url = f"/runs/{run}/agents/alpha/{path}"

                def send(headers: dict[str, str], url: str = url) -> httpx.Response:
                    if url.endswith("observation"):
                        return http.get(url, headers=headers, params={"nowait": 1})
                    usage = {"usage_id": "u1", "token_usage": {"input_tokens": 1}}
                    return http.post(url, headers=headers, json=usage if "usage" in url else body)

                assert send(beta).status_code == 403, path
                assert send({}).status_code == 401, path
                assert send({"Authorization": "Bearer not-a-token"}).status_code == 403, path
            # an agent id that does not exist answers as another's: the token learns nothing
            ghost = http.get(f"/runs/{run}/agents/ghost/observation", headers=beta)
            assert ghost.status_code == 403
            # the JSON API per agent, the registration and the run-level routes
            for method, url, payload in (
                ("GET", f"/api/runs/{run}/agents/alpha/observation", None),
                ("GET", f"/api/runs/{run}/agents/alpha/store", None),
                ("POST", f"/api/runs/{run}/agents/alpha/tools/read_memory_doc", {}),
                ("POST", f"/api/runs/{run}/agents/alpha/end-window", None),
                ("POST", f"/runs/{run}/agent/register", {"agent_id": "alpha"}),
                ("GET", f"/api/runs/{run}/env", None),
                ("POST", f"/api/runs/{run}/pause", None),
            ):
                answer = http.request(method, url, headers=beta, json=payload)
                assert answer.status_code == 403, (url, answer.text)
            single = http.get(f"/api/runs/{run}/observation", headers=beta)
            assert single.status_code == 404 and single.json()["error"] == "unknown_agent"
            # its own JSON API works, and shows its own store
            own = http.get(f"/api/runs/{run}/agents/beta/observation", headers=beta)
            assert own.status_code == 200 and own.json()["store"]["window"] == 0
            note = http.post(
                f"/api/runs/{run}/agents/beta/tools/write_memory_doc",
                headers=beta,
                json={"content": "beta's note", "mode": "replace"},
            )
            assert note.json()["ok"] is True
            alpha = {"Authorization": f"Bearer {tokens['alpha']}"}
            read = http.post(
                f"/api/runs/{run}/agents/alpha/tools/read_memory_doc", headers=alpha, json={}
            )
            assert "beta's note" not in read.text
            # the operator sees every merchant, and may act for any
            admin = {"Authorization": f"Bearer {ADMIN}"}
            summary = http.get(f"/api/runs/{run}", headers=admin).json()
            assert sorted(summary["agents"]) == AGENTS
            env = http.get(f"/api/runs/{run}/env", headers=admin).json()
            assert env["agents"]["alpha"]["MERCHANTBENCH_AGENT_TOKEN"] == tokens["alpha"]
            unknown = http.get(f"/runs/{run}/agents/ghost/observation", headers=admin)
            assert unknown.status_code == 404
        # tokens are kept for a restart, one per merchant
        kept = json.loads((tmp_path / "runs" / TOKENS_FILE).read_text())
        assert kept[f"{run}/alpha"] == tokens["alpha"] and kept[f"{run}/beta"] == tokens["beta"]
    finally:
        live.stop()


def test_a_restarted_server_resumes_the_market_to_the_same_state(tmp_path):
    runs = tmp_path / "runs"
    live = start_server(runs)
    created = _market(live)
    clients = _clients(live, created)
    _play_window(clients, AGENTS)
    # mid-window: alpha has acted and closed its window, beta has not
    packet = clients["alpha"].observation()
    PLAYS["alpha"](clients["alpha"].call, packet.json()["tick"]["window"])
    clients["alpha"].act(assistant(tool_call("end-1", "end_of_step")))
    live.stop()
    assert read_arena(runs / created["run_id"]).ended == "interrupted"
    live = start_server(runs)
    try:
        clients = _clients(live, created)  # the same tokens
        late = clients["alpha"].act(assistant(tool_call("late", "query_balance")))
        assert late.status_code == 425  # still waiting for beta
        beta = clients["beta"]
        beta_window = beta.observation().json()["tick"]["window"]
        assert beta_window == 1
        PLAYS["beta"](beta.call, beta_window)
        assert beta.act(assistant(tool_call("end-b", "end_of_step"))).json()["hook_released"]
        order = AGENTS
        while not _play_window(clients, order):
            pass
        arena = read_arena(runs / created["run_id"])
        assert arena.ended == "completed" and arena.state_hash == _in_process_hash(DAYS)
    finally:
        live.stop()


def test_a_market_refuses_bad_agent_ids(tmp_path):
    live = start_server(tmp_path / "runs")
    try:
        with live.client() as admin:
            for agents in (["Alpha"], ["a", "a"], [], ["x" * 40], ["a/b"]):
                answer = admin.post("/api/runs", json={"scenario": "smoke", "agents": agents})
                assert answer.status_code == 400, agents
            both = admin.post("/api/runs", json={"agents": ["a", "b"], "sealed": True, "seed": 3})
            assert both.status_code == 400
        assert not any(Path(tmp_path / "runs").glob("*/arena.json"))
    finally:
        live.stop()


@pytest.mark.parametrize("order", [AGENTS, AGENTS[::-1]])
def test_a_merchant_can_die_alone(tmp_path, order):
    """A merchant whose store closes answers 410 `agent_dead`; the market goes on for the
    other, whose windows no longer wait for it."""
    live = start_server(tmp_path / "runs")
    try:
        created = _market(live)
        clients = _clients(live, created)
        host = live.registry.hosts[created["run_id"]]
        doomed = order[0]
        engine = host.life.market.session(doomed).engine
        engine._close(engine.t)  # what the engine does when the deposit runs out
        packet = clients[doomed].observation()
        assert packet.status_code == 410 and packet.json()["error"] == "agent_dead"
        acted = clients[doomed].act(assistant(tool_call("x", "query_balance")))
        assert acted.status_code == 410 and acted.json()["error"] == "agent_dead"
        survivor = clients[order[1]]
        assert survivor.observation().status_code == 200
        done = survivor.act(assistant(tool_call("e", "end_of_step"))).json()
        assert done["step_done"] and done["hook_released"]  # nobody else to wait for
    finally:
        live.stop()


def _mcp_merchant(url: str, token: str, play: Any, seen: list[str]) -> Any:
    """One merchant's whole market over MCP with the official client: its tools each window,
    then `end_of_step`, which answers when the next window opens for it."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def main() -> dict[str, Any]:
        import httpx2

        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            window = 0
            while True:
                for tool, args in _calls_of(play, window):
                    answer = (await client.call_tool(tool, args)).structured_content
                    seen.append(json.dumps(answer))
                ended = (await client.call_tool("end_of_step", {})).structured_content
                seen.append(json.dumps(ended))
                assert ended["ok"] is True
                if ended["run_over"]:
                    return ended
                window += 1

    return main


def _calls_of(play: Any, window: int) -> list[tuple[str, dict[str, Any]]]:
    """The calls a script that reads no answer makes in a window."""
    calls: list[tuple[str, dict[str, Any]]] = []
    play(lambda tool, args: calls.append((tool, args)), window)
    return calls


def _quiet_alpha(call: Any, window: int) -> None:
    call("query_balance", {})
    call("write_memory_doc", {"content": f"{SECRET} {window}", "mode": "replace"})
    call("read_memory_doc", {})


def _quiet_beta(call: Any, window: int) -> None:
    call("query_balance", {})
    call("read_memory_doc", {})


def test_two_merchants_play_a_market_over_mcp(tmp_path):
    import anyio
    import httpx2  # noqa: F401  (the MCP client's transport)

    from merchantbench.serve.mcp_mount import mcp_extension

    live = start_server(tmp_path / "runs", extensions=[mcp_extension()])
    try:
        created = live.create_run(days=2, agents=AGENTS, label="mcp-market")
        run, tokens = created["run_id"], created["agent_tokens"]
        url = {a: f"{live.base_url}/runs/{run}/agents/{a}/mcp" for a in AGENTS}
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        crossed = httpx.post(
            url["alpha"],
            json=body,
            headers={"Authorization": f"Bearer {tokens['beta']}"},
            timeout=REQUEST_SECONDS,
        )
        run_level = httpx.post(
            f"{live.base_url}/runs/{run}/mcp",
            json=body,
            headers={"Authorization": f"Bearer {tokens['beta']}"},
            timeout=REQUEST_SECONDS,
        )
        assert (crossed.status_code, run_level.status_code) == (403, 404)
        seen: dict[str, list[str]] = {a: [] for a in AGENTS}
        plays = {"alpha": _quiet_alpha, "beta": _quiet_beta}
        ends: dict[str, Any] = {}

        async def both() -> None:
            async def one(agent: str) -> None:
                main = _mcp_merchant(url[agent], tokens[agent], plays[agent], seen[agent])
                ends[agent] = await main()

            with anyio.fail_after(300):
                async with anyio.create_task_group() as group:
                    for agent in AGENTS:
                        group.start_soon(one, agent)

        anyio.run(both)
        for agent in AGENTS:
            summary = ends[agent]["summary"]
            assert summary["windows_played"] == 4 and summary["ended"] == "completed"
        assert not [s for s in seen["beta"] if SECRET in s or "alpha" in s]
        assert any(SECRET in s for s in seen["alpha"])  # alpha does see its own note
        arena = read_arena(tmp_path / "runs" / run)
        assert arena.ended == "completed"
    finally:
        live.stop()


def test_a_served_sealed_market_hides_its_seed(tmp_path):
    live = start_server(tmp_path / "runs")
    try:
        created = live.create_run(days=2, agents=["alice", "bob"], sealed=True, label="sealed")
        assert created["sealed"] is True
        run = created["run_id"]
        clients = {
            a: ProtocolClient(live.base_url, run, a, created["agent_tokens"][a])
            for a in ("alice", "bob")
        }
        deadline = time.monotonic() + 300
        over = False
        while not over and time.monotonic() < deadline:
            for agent, client in clients.items():
                packet = client.observation()
                if packet.status_code == 410:
                    over = True
                    break
                client.call("query_balance")
                client.act(assistant(tool_call(f"end-{agent}-{client.step}", "end_of_step")))
        assert over
        with httpx.Client(base_url=live.base_url, timeout=REQUEST_SECONDS) as http:
            admin = {"Authorization": "Bearer admin-token-for-tests"}
            everything = http.get("/api/runs", headers=admin).text
    finally:
        live.stop()
    arena = tmp_path / "runs" / run
    manifest = read_arena(arena)
    assert manifest.seed is None and manifest.seed_commitment is not None
    seed = read_sealed(arena / "merchants" / "alice").seed
    printed = everything + "".join(r.text for c in clients.values() for r in c.responses)
    forms = [str(seed), f"{seed:x}", str(seed & ((1 << 64) - 1)), str(seed >> 64)]
    assert not any(f in printed for f in forms)
    for path in arena.rglob("*"):
        if path.is_file() and path.parent.name != "sealed":
            text = path.read_bytes().decode("latin-1").lower()
            assert not any(f in text for f in forms), path
    from typer.testing import CliRunner

    from merchantbench.cli import app

    revealed = CliRunner().invoke(app, ["reveal", str(arena / "merchants" / "alice"), "--json"])
    assert revealed.exit_code == 0 and json.loads(revealed.output)["seed"] == str(seed)


def test_a_window_held_too_long_is_closed_for_the_merchants_still_in_it(tmp_path):
    live = start_server(tmp_path / "runs")
    try:
        created = _market(live, window_seconds=3.0)
        alpha = _clients(live, created)["alpha"]
        packet = alpha.observation()
        window = packet.json()["tick"]["window"]
        closed = alpha.act(assistant(tool_call("e0", "end_of_step")))
        assert closed.status_code == 200 and closed.json()["step_done"]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # beta never closes the window: the server does
            packet = alpha.observation(timeout=5)
            if packet.status_code != 200 or packet.json()["tick"]["window"] > window:
                break
        assert packet.status_code == 200 and packet.json()["tick"]["window"] > window
        with live.client() as admin:
            agents = admin.get(f"/api/runs/{created['run_id']}").json()["agents"]
        assert window in agents["beta"]["forced_windows"]
        assert window not in agents["alpha"]["forced_windows"]
        trace = tmp_path / "runs" / created["run_id"] / "merchants" / "beta" / "trace.jsonl"
        entries = [json.loads(line) for line in trace.read_text().splitlines()]
        assert any(
            e["window"] == window and e["tool"] == "end_of_step" and e["forced"] for e in entries
        )
    finally:
        live.stop()
