"""One damaged run never takes the others offline (issue 19, item 4): a run whose checkpoint,
trace, sealed seed or run.json is damaged, or a finished run without its metrics, is reported
(one line on stderr, `status: "damaged"` with its reason in `GET /api/runs`) and skipped; the
other runs serve; a damaged tokens file is kept aside and the runs get new tokens; and
`run --agent external --serve --resume` of a damaged run says why in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from serve_support import ADMIN, LiveServer, start_server

from merchantbench.record.checkpoint import CHECKPOINT
from merchantbench.record.schema import RUN_FILE, TRACE_FILE
from merchantbench.record.sealed import SEED_FILE
from merchantbench.serve.dashboard_mount import dashboard_extension
from merchantbench.serve.registry import TOKENS_FILE
from merchantbench.web.app import web_extension
from timeouts import REQUEST_SECONDS, START_SECONDS, STOP_SECONDS

DAMAGES = ("checkpoint", "trace", "sealed_seed", "run_json", "metrics")


def play(server: LiveServer, run: dict[str, Any], windows: int) -> None:
    headers = {"Authorization": f"Bearer {run['agent_token']}"}
    with httpx.Client(base_url=server.base_url, headers=headers, timeout=REQUEST_SECONDS) as agent:
        for _ in range(windows):
            path = f"/api/runs/{run['run_id']}"
            assert agent.post(f"{path}/tools/query_balance", json={}).status_code == 200
            assert agent.post(f"{path}/end-window").status_code == 200


def damage(run_dir: Path, how: str) -> None:
    if how == "checkpoint":
        blob = (run_dir / CHECKPOINT).read_bytes()
        (run_dir / CHECKPOINT).write_bytes(blob[: len(blob) // 2])
    elif how == "trace":
        lines = (run_dir / TRACE_FILE).read_text().splitlines(keepends=True)
        lines[0] = '{"seq": 0, "garbage\n'
        (run_dir / TRACE_FILE).write_text("".join(lines))
    elif how == "sealed_seed":
        (run_dir / SEED_FILE).unlink()
    elif how == "run_json":
        text = (run_dir / RUN_FILE).read_text()
        (run_dir / RUN_FILE).write_text(text[: len(text) // 2])
    elif how == "metrics":
        (run_dir / "metrics.json").unlink()


@pytest.fixture(scope="module")
def records(tmp_path_factory) -> tuple[Path, dict[str, dict[str, Any]]]:
    """A runs directory: one healthy live run, one healthy finished run, and one run of each
    damage (the metrics one finished, the sealed one sealed)."""
    runs = tmp_path_factory.mktemp("damaged") / "runs"
    server = start_server(runs)
    made: dict[str, dict[str, Any]] = {}
    try:
        for name in ("healthy", "finished", *DAMAGES):
            days = 1 if name in ("finished", "metrics") else None
            made[name] = server.create_run(label=name, sealed=name == "sealed_seed", days=days)
            play(server, made[name], 2)
    finally:
        server.stop()
    for name in ("finished", "metrics"):
        assert (runs / made[name]["run_id"] / "metrics.json").is_file()
    for how in DAMAGES:
        damage(runs / made[how]["run_id"], how)
    return runs, made


def test_the_healthy_runs_serve_and_the_damaged_are_listed(records) -> None:
    runs, made = records
    before = {p: p.read_bytes() for p in runs.rglob("*") if p.is_file()}
    server = start_server(runs, extensions=[dashboard_extension(web_extension)])
    try:
        with server.client() as admin:
            listing = admin.get("/api/runs")
            assert listing.status_code == 200, listing.text[:300]
            by_id = {row["run_id"]: row for row in listing.json()}
            assert by_id[made["healthy"]["run_id"]]["status"] == "open"
            assert by_id[made["finished"]["run_id"]]["status"] == "finished"
            for how in DAMAGES:
                row = by_id[made[how]["run_id"]]
                assert row["status"] == "damaged" and row["reason"], (how, row)
                assert "\n" not in row["reason"] and str(runs) not in row["reason"]
            assert server.registry.damaged.keys() == {made[h]["run_id"] for h in DAMAGES}
            play(server, made["healthy"], 1)  # the healthy run goes on with its own token
            damaged_id = made["checkpoint"]["run_id"]
            assert admin.get(f"/api/runs/{damaged_id}").status_code == 404
            # The dashboard still lists and shows every record, damaged ones included.
            assert admin.get("/").status_code == 200
            assert admin.get("/runs/progress").status_code == 200
            for name, run in made.items():
                page = admin.get("/runs/view", params={"path": run["run_id"]})
                assert page.status_code in (200, 404), (name, page.status_code)
    finally:
        server.stop()
    for path, blob in before.items():  # nothing of a damaged run was changed
        if made["healthy"]["run_id"] not in str(path) and path.name != TOKENS_FILE:
            assert path.read_bytes() == blob, path


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serve_command(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "MERCHANTBENCH_ADMIN_TOKEN": ADMIN}
    command = [sys.executable, "-m", "merchantbench.cli", *args]
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)  # fmt: skip


def test_the_command_reports_each_damaged_run_in_one_line_and_serves(records, tmp_path) -> None:
    runs, made = records
    copy = tmp_path / "runs"
    subprocess.run(["cp", "-a", str(runs), str(copy)], check=True)
    (copy / TOKENS_FILE).write_text("{not json")
    port = free_port()
    process = serve_command("serve", "--runs-dir", str(copy), "--port", str(port),
                            "--max-body-bytes", "4096")  # fmt: skip
    try:
        deadline = time.monotonic() + START_SECONDS
        while True:
            assert process.poll() is None, process.communicate()
            try:
                headers = {"Authorization": f"Bearer {ADMIN}"}
                listing = httpx.get(f"http://127.0.0.1:{port}/api/runs", headers=headers,
                                    timeout=REQUEST_SECONDS)  # fmt: skip
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline
                time.sleep(0.2)
        assert listing.status_code == 200
        tokens = json.loads((copy / TOKENS_FILE).read_text())
        healthy = made["healthy"]["run_id"]
        assert tokens[healthy] != made["healthy"]["agent_token"]  # a new one
        agent = {"Authorization": f"Bearer {tokens[healthy]}"}
        url = f"http://127.0.0.1:{port}/api/runs/{healthy}/observation"
        assert httpx.get(url, headers=agent, timeout=REQUEST_SECONDS).status_code == 200
        call = f"http://127.0.0.1:{port}/api/runs/{healthy}/tools/write_memory_doc"
        big = httpx.post(call, json={"content": "m" * 5000}, headers=agent,
                         timeout=REQUEST_SECONDS)  # fmt: skip
        assert big.status_code == 413  # --max-body-bytes
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=STOP_SECONDS)
    assert process.returncode == 0, stderr
    assert "Traceback" not in stderr
    lines = stderr.splitlines()
    for how in DAMAGES:
        run_id = made[how]["run_id"]
        mine = [line for line in lines if line.startswith(f"run {run_id} is damaged")]
        assert len(mine) == 1, (how, stderr)
    assert any(TOKENS_FILE in line and "new agent tokens" in line for line in lines)
    assert [p.name for p in copy.glob(f"{TOKENS_FILE}.damaged-*")] != []  # kept aside


def test_serve_resume_of_a_damaged_run_says_why_in_one_line(records) -> None:
    runs, made = records
    run_dir = runs / made["checkpoint"]["run_id"]
    result = subprocess.run(
        [sys.executable, "-m", "merchantbench.cli", "run", "--agent", "external", "--serve",
         "--port", str(free_port()), "--scenario", "smoke", "--resume",
         "--out", str(run_dir)],
        env={**os.environ, "MERCHANTBENCH_ADMIN_TOKEN": ADMIN},
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode not in (0, 3), result.stderr
    assert "Traceback" not in result.stderr
    assert f"cannot resume {run_dir}" in result.stderr, result.stderr
