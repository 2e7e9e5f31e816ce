"""A record whose trace holds a value nested too deeply for the JSON parser (hardening round 3):
`verify` says it cannot verify it (exit 2, and its JSON line under --json), never "differs" or
a traceback; `site` leaves it out and names it; the dashboard shows the run with an error, never
a 500."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from merchantbench.runs.runner import RunSpec, run_agent
from merchantbench.scenario import load_scenario
from merchantbench.site.build import build_site
from merchantbench.web.app import create_web_app

DEPTH = 100_000


def _nest(line: str, compact: bool) -> str:
    """The trace line with its arguments replaced by a list nested DEPTH deep, written as the
    record's writers write (compact) or with spaces."""
    entry = json.loads(line)
    entry["args"] = {"x": "@"}
    text = json.dumps(entry, separators=(",", ":") if compact else (", ", ": "))
    return text.replace('"@"', "[" * DEPTH + "]" * DEPTH)


@pytest.fixture(scope="module")
def records(tmp_path_factory) -> Path:
    """A whole smoke record and two copies with one deep line each (compact, spaced)."""
    root = tmp_path_factory.mktemp("deep")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MERCHANTBENCH_CACHE", str(root / "cache"))
        run_agent(
            RunSpec("random", load_scenario("smoke", ["clock.days=3"]), 1), root / "runs" / "ok"
        )
    for name, compact in (("deep", True), ("spaced", False)):
        shutil.copytree(root / "runs" / "ok", root / "runs" / name)
        trace = root / "runs" / name / "trace.jsonl"
        lines = trace.read_text().splitlines()
        lines[4] = _nest(lines[4], compact)
        trace.write_text("\n".join(lines) + "\n")
    return root


@pytest.mark.parametrize("name", ["deep", "spaced"])
def test_verify_cannot_verify_it(records: Path, name: str) -> None:
    env_cache = {"MERCHANTBENCH_CACHE": str(records / "cache")}
    command = [sys.executable, "-m", "merchantbench.cli", "verify", "--json",
               str(records / "runs" / name)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env_cache})  # fmt: skip
    assert done.returncode == 2, (done.stdout, done.stderr[-500:])
    assert "Traceback" not in done.stderr
    answer = json.loads(done.stdout)
    assert answer["ok"] is False and "line 5" in answer["error"]
    assert "nested too deeply" in answer["error"]


def test_the_site_leaves_it_out_and_names_it(records: Path, tmp_path: Path) -> None:
    summary = build_site([records / "runs"], tmp_path / "site", verify=False)
    assert summary.runs == 1
    index = (tmp_path / "site" / "index.html").read_text()
    assert "Records left out" in index
    for name in ("runs/deep", "runs/spaced"):
        assert name in index
    assert "trace.jsonl line 5 cannot be read" in index


@pytest.mark.parametrize("name", ["deep", "spaced"])
def test_the_dashboard_shows_an_error_for_that_run(records: Path, name: str) -> None:
    client = TestClient(create_web_app(runs_root=records / "runs"))
    assert client.get("/").status_code == 200
    page = client.get("/runs/view", params={"path": name})
    assert page.status_code == 200, page.text[:300]
    assert 'id="damaged"' in page.text and "trace.jsonl line 5 cannot be read" in page.text
    for window in range(3):
        assert client.get("/runs/trace", params={"path": name, "window": window}).status_code == 200
    ok = client.get("/runs/view", params={"path": "ok"})
    assert ok.status_code == 200 and 'id="damaged"' not in ok.text
