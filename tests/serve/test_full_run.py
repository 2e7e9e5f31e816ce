"""A whole smoke run through a real socket, played by the protocol client: its metrics and state
hash equal an in-process run of the same actions, and no answer of any route shows a hidden
field, the seed or a filesystem path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from protocol_client import ProtocolClient, assistant, tool_call
from script import play_window
from serve_support import LiveServer, start_server

from merchantbench.catalog.hidden import hidden_names_in
from merchantbench.record.sealed import read_sealed
from merchantbench.runs.lifecycle import RunLifecycle
from merchantbench.runs.runner import RunSpec
from merchantbench.scenario import Scenario
from merchantbench.serve.external import EXTERNAL, ExternalDriver


def decoded(body: Any) -> Any:
    """Tool results travel as JSON text inside the answer: open them up for the scan."""
    if isinstance(body, dict):
        out = {k: decoded(v) for k, v in body.items()}
        if isinstance(body.get("content"), str) and body.get("tool_call_id"):
            out["content"] = json.loads(body["content"])
        return out
    if isinstance(body, list):
        return [decoded(item) for item in body]
    return body


def leaks(body: Any, seed: int, paths: list[str]) -> list[str]:
    """What in one answer is hidden: keys, words, the seed, a path of the server."""
    found = hidden_names_in(body)
    text = json.dumps(body, ensure_ascii=False)
    found += [str(seed)] if str(seed) in text else []
    return found + [p for p in paths if p in text]


def json_api_call(client: ProtocolClient, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """The same call through our JSON API instead of the protocol."""
    run = client.run.removeprefix("/runs/")
    response = client._keep(client.http.post(f"/api/runs/{run}/tools/{name}", json=args))
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def refusals(client: ProtocolClient) -> None:
    """A few refused requests, so their answers are scanned too."""
    assert client.act(assistant(tool_call("s", "query_balance")), step=99999).status_code == 425
    assert client.act({"role": "robot"}).status_code == 400
    reused = tool_call(client.last_id, "query_balance", {"other": "/etc/passwd"})
    assert client.act(assistant(reused)).status_code == 409
    assert client._keep(client.http.post(f"{client.agent}/act", content=b"{")).status_code == 400


def play_over_http(client: ProtocolClient) -> None:
    """The script over the protocol; every third window through the JSON API instead."""
    assert client.register(model="scripted").status_code == 200
    assert client.schema().status_code == 200
    while True:
        response = client.observation()
        if response.status_code == 410:
            return
        assert response.status_code == 200, response.text
        window = response.json()["tick"]["window"]
        if window % 3 == 1:
            run = client.run.removeprefix("/runs/")
            client._keep(client.http.get(f"/api/runs/{run}/observation"))
            play_window(lambda name, args: json_api_call(client, name, args), window)
            client._keep(client.http.post(f"/api/runs/{run}/end-window"))
            continue
        play_window(lambda name, args: client.call(name, args), window)
        if window == 2:
            refusals(client)
        end = client.act(assistant(tool_call("end", "end_of_step")))
        assert end.status_code == 200 and end.json()["step_done"], end.text


def play_in_process(scenario: Scenario, seed: int, out: Path) -> dict[str, Any]:
    spec = RunSpec(EXTERNAL, scenario, seed, {"agent_id": "agent_0"})
    life = RunLifecycle.open(spec, out, driver=ExternalDriver.from_settings(spec.agent_settings))
    surface = life.surface
    while not surface.over:
        play_window(lambda name, args: surface.call(name, args), surface.window)
        surface.call("end_of_step")
    return life.store_metrics()


@pytest.fixture(scope="module")
def played(tmp_path_factory) -> tuple[LiveServer, dict[str, Any], ProtocolClient]:
    server = start_server(tmp_path_factory.mktemp("full") / "runs")
    run = server.create_run(sealed=True, label="full run")
    client = ProtocolClient(server.base_url, run["run_id"], run["agent_id"], run["agent_token"])
    play_over_http(client)
    with server.client() as admin:  # the operator's answers are scanned too
        client.responses += [admin.get("/api/runs"), admin.get(f"/api/runs/{run['run_id']}"),
                             admin.get(f"/api/runs/{run['run_id']}/env"),
                             admin.post("/api/runs", json={"scenario": "nope"})]  # fmt: skip
    client.responses.append(client.http.get(f"/api/runs/{run['run_id']}"))
    yield server, run, client
    client.close()
    server.stop()


def test_the_http_run_equals_an_in_process_run(played, tmp_path) -> None:
    server, run, client = played
    run_dir = server.registry.runs_dir / run["run_id"]
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["ended"] == "completed" and meta["agent"]["name"] == EXTERNAL
    assert meta["front_end"]["registration"]["model"] == "scripted"
    served = json.loads((run_dir / "metrics.json").read_text())
    scenario = Scenario.model_validate(meta["scenario_config"])
    assert meta["seed"] is None and meta["seed_commitment"]  # sealed: only the harness has it
    local = play_in_process(scenario, read_sealed(run_dir).seed, tmp_path / "local")
    assert served["windows"] == 28 and served["orders"] > 0
    assert served["state_hash"] == local["state_hash"] == meta["state_hash"]
    assert served["seed"] is None  # a sealed run's metrics do not show its seed
    assert {k: v for k, v in served.items() if k not in ("agent", "seed")} == {
        k: v for k, v in local.items() if k not in ("agent", "seed")
    }
    summary = client.responses[-1].json()
    assert summary["status"] == "finished" and "seed" not in summary["metrics"]
    assert summary["metrics"]["final_net_assets"] == local["final_net_assets"]


def test_no_answer_shows_a_hidden_field_the_seed_or_a_path(played) -> None:
    server, run, client = played
    run_dir = server.registry.runs_dir / run["run_id"]
    seed = json.loads((run_dir / "run.json").read_text())["seed"]
    paths = [str(run_dir), str(server.registry.runs_dir), str(Path.home())]
    assert len(client.responses) > 28 * 3
    assert any("brief" in r.json() for r in client.responses if r.status_code == 200)
    for response in client.responses:
        body = decoded(response.json())
        assert not leaks(body, seed, paths), (response.url, leaks(body, seed, paths))


def test_the_scan_catches_planted_leaks() -> None:
    for planted in [{"p_ref": 1}, {"x": "seed 5"}, {"x": "/srv/runs/a"}, {"x": 123456789}]:
        assert leaks(planted, 123456789, ["/srv/runs"])
    assert not leaks({"title": "Seed Starter Tray"}, 123456789, ["/srv/runs"])
