"""Edges of the web app a red team found (hardening round 3): a relative runs folder, a
non-ASCII study link, NaN in a report, a burst of activity reports."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from merchantbench.scenario import load_scenario
from merchantbench.web.app import create_web_app
from merchantbench.web.room import PlayRoom

SCENARIO = load_scenario("smoke", overrides=["clock.days=1"])


@pytest.fixture
def study(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[TestClient, str, str]:
    """A one-seat study in `./study`, served with relative folders (as `serve` and the README's
    `dashboard --runs runs` give them)."""
    monkeypatch.chdir(tmp_path)
    [seat] = PlayRoom(Path("study")).create(SCENARIO, [3])
    PlayRoom(Path("study")).operator_token()  # as `study create` makes it
    client = TestClient(create_web_app(play_dir=Path("study"), runs_root=Path("study")))
    return client, seat.token, seat.run


def test_a_run_page_under_a_relative_runs_folder(study: tuple[TestClient, str, str]) -> None:
    client, _, run = study
    listed = client.get("/runs/progress").json()
    assert [row["path"] for row in listed] == [run]
    page = client.get("/runs/view", params={"path": run})
    assert page.status_code == 200, page.text[:300]
    assert client.get("/runs/view", params={"path": f"./{run}"}).status_code == 200


def test_a_non_ascii_study_link_is_not_found(study: tuple[TestClient, str, str]) -> None:
    client, _, _ = study
    for token in ("é", "日本語", "x" * 10 + "ü"):
        assert client.get(f"/study/{token}").status_code == 404
        assert client.get(f"/study/{token}/data").status_code == 404


def test_a_non_finite_activity_report_is_refused(study: tuple[TestClient, str, str]) -> None:
    client, token, _ = study
    for value in ("NaN", "Infinity", "-1"):  # what Python's json writes and reads
        body = f'{{"seconds": {value}}}'
        headers = {"Content-Type": "application/json"}
        answer = client.post(f"/play/{token}/activity", content=body, headers=headers)
        assert answer.status_code == 422, answer.text[:300]
        assert answer.json()["detail"][0]["loc"][-1] == "seconds"
    assert client.get(f"/play/{token}/state").status_code == 200


def test_activity_reports_add_no_more_than_the_wall_time(
    study: tuple[TestClient, str, str],
) -> None:
    client, token, _ = study
    started = time.time()
    for _ in range(100):
        active = client.post(f"/play/{token}/activity", json={"seconds": 1}).json()
    elapsed = time.time() - started
    # the first report's second, then at most the wall time that passed (rounded to 0.1 s)
    assert active["active_seconds"] <= 1.0 + elapsed + 0.1, (active, elapsed)
    time.sleep(0.5)
    later = client.post(f"/play/{token}/activity", json={"seconds": 30}).json()
    gained = later["active_seconds"] - active["active_seconds"]
    assert 0.3 <= gained <= time.time() - started + 0.1  # real time counts, bounded by the wall
