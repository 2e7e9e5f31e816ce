"""A person's playground run (the `human` driver, through the playground's HTTP routes) is a
record that verifies: its calls, refusals, keyed retries and window closes replay."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi.testclient import TestClient

from merchantbench.replay import verify_record
from merchantbench.scenario import load_scenario
from merchantbench.web.app import create_web_app
from merchantbench.web.room import PlayRoom

SCENARIO = load_scenario("smoke", overrides=["clock.days=2"])


def test_a_human_playground_run_verifies(tmp_path: Path) -> None:
    [seat] = PlayRoom(tmp_path).create(SCENARIO, [7])
    client = TestClient(create_web_app(play_dir=tmp_path))

    def call(tool: str, args: dict, key: str | None = None) -> dict:
        headers = {"Idempotency-Key": key} if key else {}
        answer = client.post(f"/play/{seat.token}/call/{tool}", json=args, headers=headers)
        assert answer.status_code == 200, answer.text
        return answer.json()["result"]

    rows = call("search_products", {"page_size": 2, "sort": "sales_30d"})["rows"]
    items = [{"product_id": r[0], "sale_price": round(r[3] * 1.4, 2)} for r in rows]
    listed = call("list_product", {"items": items}, key="click-1")
    assert listed["ok"] and call("list_product", {"items": items}, key="click-1") == listed
    assert call("adjust_price", {"product_id": 5})["ok"] is False  # refused
    assert call("no_such_tool", {})["ok"] is False
    for _ in range(4):
        call("end_of_step", {})
    run_dir = tmp_path / "p1"
    trace = [json.loads(line) for line in (run_dir / "trace.jsonl").read_text().splitlines()]
    assert {e["origin"] for e in trace} == {"human"}
    # the retried click is answered from the answer log: recorded once (docs/run-record.md)
    assert sum(str(e.get("idempotency_key", "")).endswith("click-1") for e in trace) == 1
    report = verify_record(run_dir)
    assert report.ok and report.windows == 4, report.summary()
