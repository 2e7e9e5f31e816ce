"""The real Hermes Agent (`hermes-agent` from the package index, installed by this test run into
its own environment) playing `smoke` through our MCP tools, against the scripted server."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from merchantbench.agents.hermes_agent.env import HermesEnvError, ensure_env, hermes_dir
from merchantbench.agents.hermes_agent.gateway import MCP_PATH
from merchantbench.agents.hermes_agent.process import SANDBOX_PORT, config_text
from merchantbench.agents.llm.scripted_policy import TOOL_LOOP_STEPS, tool_loop_policy
from merchantbench.agents.llm.scripted_server import ScriptedServer
from merchantbench.catalog.cache import cache_root, market_path
from merchantbench.record.schema import MODEL_WORDS_FILE
from merchantbench.record.words import read_words
from merchantbench.runs.runner import CheckpointPolicy, RunSpec, run_agent
from merchantbench.scenario import load_scenario
from requires import missing
from window_close import BREAKER_OPEN, calls_after_close, tool_answers

MCP = "mcp__merchantbench__"
KEY = "sk-test-hermes-4f1c9a7e"


# Hermes Agent runs confined by bubblewrap.
pytestmark = pytest.mark.requires("bwrap")


@pytest.fixture(scope="module")
def hermes_env():
    # Installed from the package index by the test run itself, once: without the index it cannot
    # be made, and the tests skip (or fail under MERCHANTBENCH_REQUIRE_ALL=1, as in CI).
    try:
        return ensure_env()
    except HermesEnvError as exc:
        missing("hermes-agent", str(exc))


def _reply(tool: str, **arguments) -> dict:
    return {"content": None, "tool_calls": [{"name": tool, "arguments": arguments}]}


def _window_tools(request: dict) -> list[dict]:
    """The tool results since the newest user message (this window, so far)."""
    messages = request["messages"]
    start = max(i for i, m in enumerate(messages) if m["role"] == "user")
    return [m for m in messages[start:] if m["role"] == "tool"]


def store_policy(request: dict) -> dict:
    """Search, note it in Hermes' memory, list the first window's finds, end the window."""
    done = len(_window_tools(request))
    steps = [
        _reply(MCP + "search_products", query="bag", sort="price_asc"),
        _reply("memory", action="add", target="memory", content="searched bags"),
        _reply(MCP + "end_of_step"),
    ]
    return steps[done] if done < len(steps) else {"content": "done", "tool_calls": []}


def _run(tmp_path: Path, policy, monkeypatch, days: int | None = None, **more_settings):
    monkeypatch.setenv("MB_TEST_HERMES_KEY", KEY)
    run_dir = tmp_path / "run"
    overrides = [f"clock.days={days}"] if days else None
    with ScriptedServer(policy) as server:
        settings = {"model": "scripted", "base_url": server.base_url, **more_settings}
        settings["api_key_env"] = "MB_TEST_HERMES_KEY"
        spec = RunSpec("hermes-agent", load_scenario("smoke", overrides=overrides), 1, settings)
        metrics = run_agent(spec, run_dir)
    meta = json.loads((run_dir / "run.json").read_text())
    trace = [json.loads(x) for x in (run_dir / "trace.jsonl").read_text().splitlines()]
    return metrics, run_dir, server, meta, trace


def _home(meta: dict) -> Path:
    home = Path(meta["agent"]["settings"]["hermes_home"])
    assert home.parent == hermes_dir() / "homes" and (home / "config.yaml").is_file()
    return home


def _files_containing(root: Path, text: str) -> list[Path]:
    needle = text.encode()
    return [p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


def _forced_report(trace: list[dict]) -> str:
    """The windows the driver closed, each with the failed calls that window recorded
    (Hermes' own tools and the driver's `hermes` entries: a timeout, an exit, a turn error)."""
    forced = [e["window"] for e in trace if e["tool"] == "end_of_step" and e["forced"]]
    lines = [f"windows closed by the driver (forced): {forced}"]
    for window in forced:
        failed = [e for e in trace if e["window"] == window and not e["ok"]]
        why = [f"{e['origin']}:{e['tool']}: {e['error']}" for e in failed if not e["forced"]]
        lines.append(f"window {window}: {'; '.join(why) or 'no failed call recorded'}")
    return "\n".join(lines)


def test_full_smoke_run_through_mcp(tmp_path, monkeypatch, hermes_env):
    metrics, run_dir, server, meta, trace = _run(tmp_path, store_policy, monkeypatch)
    windows = load_scenario("smoke").clock.windows
    assert meta["ended"] == "completed" and metrics["windows"] == windows
    closes = [e for e in trace if e["tool"] == "end_of_step"]
    assert [e["window"] for e in closes] == list(range(windows))
    # Hermes closed every window itself; if not, say which and why.
    assert not any(e["forced"] for e in closes), _forced_report(trace)
    searches = [e for e in trace if e["tool"] == "search_products"]
    assert len(searches) == windows and all(e["origin"] == "env" and e["ok"] for e in searches)
    memory = [e for e in trace if e["tool"] == "memory"]
    assert len(memory) == windows and all(e["origin"] == "framework" for e in memory)
    assert metrics["final_net_assets"] > 0
    records = [json.loads(x) for x in (run_dir / "model_calls.jsonl").read_text().splitlines()]
    # Every request is recorded: the 3 per window of the policy (Hermes' turn ends at its
    # end_of_step: the policy's "done" is never asked for), and any auxiliary call of
    # Hermes' own through the same endpoint.
    assert len(records) == len(server.requests) == meta["llm_usage"]["calls"] >= 3 * windows
    assert max(calls_after_close(server.requests).values()) == 0
    # Whole answers only (also for Hermes' forks, e.g. its background review): a streamed
    # request would find the scripted server's JSON an empty stream.
    assert [r for r in server.requests if r.get("stream")] == []
    assert meta["llm_usage"]["input_tokens"] == sum(r["input_tokens"] for r in records) > 0
    # What the model said, as the gateway forwarded it: each answer's tool calls, as written.
    words = list(read_words(run_dir / MODEL_WORDS_FILE))
    assert [w["seq"] for w in words] == [r["seq"] for r in records]
    said = [c["name"] for w in words if w["window"] == 0 for c in w["tool_calls"]]
    assert said[:3] == [MCP + "search_products", "memory", MCP + "end_of_step"]
    # The provider got the key; Hermes, its home and the run record never did.
    assert set(server.authorizations) == {f"Bearer {KEY}"}
    assert _files_containing(run_dir, KEY) == []
    assert _files_containing(_home(meta), KEY) == []


def test_a_model_that_never_answers_in_words_ends_each_window_at_its_end_of_step(
    tmp_path, monkeypatch, hermes_env
):
    # After every tool result the model calls another tool: three the store refuses, one
    # that works, end_of_step, then end_of_step again and again.
    metrics, run_dir, server, meta, trace = _run(tmp_path, tool_loop_policy, monkeypatch)
    windows = load_scenario("smoke").clock.windows
    assert meta["ended"] == "completed" and metrics["windows"] == windows
    closes = [e for e in trace if e["tool"] == "end_of_step"]
    assert [e["window"] for e in closes] == list(range(windows))
    assert not any(e["forced"] for e in closes), _forced_report(trace)
    # Hermes' turn ends at the first tool it starts after the close: one model call at most.
    after = calls_after_close(server.requests)
    assert set(after) == set(range(1, windows + 1)) and max(after.values()) <= 1, after
    loop = [r for r in server.requests if r.get("tools")]
    assert len(loop) <= windows * (len(TOOL_LOOP_STEPS) + 2)
    # Three refusals in a row every window, and the next call still reached the store:
    # Hermes' circuit breaker never opened.
    refused = [e for e in trace if e["tool"] == "get_product_detail"]
    assert len(refused) == 3 * windows and not any(e["ok"] for e in refused)
    balances = [e for e in trace if e["tool"] == "query_balance"]
    assert len(balances) == windows and all(e["ok"] for e in balances)
    assert [a for a in tool_answers(server.requests) if BREAKER_OPEN in a] == []
    records = [json.loads(x) for x in (run_dir / "model_calls.jsonl").read_text().splitlines()]
    assert len(records) == len(server.requests) == meta["llm_usage"]["calls"]


def test_a_model_that_never_ends_its_window_is_bounded_by_max_iterations(
    tmp_path, monkeypatch, hermes_env
):
    # It calls query_balance after every result and never end_of_step: each turn ends when
    # Hermes' iteration budget does (plus Hermes' one summary request, which offers no tools),
    # and the driver closes the window.
    def policy(request: dict) -> dict:
        if not request.get("tools"):
            return {"content": "summary"}
        return _reply(MCP + "query_balance")

    monkeypatch.setenv("MB_TEST_HERMES_KEY", KEY)
    with ScriptedServer(policy) as server:
        settings = {"model": "scripted", "base_url": server.base_url, "max_iterations": 4}
        settings["api_key_env"] = "MB_TEST_HERMES_KEY"
        scenario = load_scenario("smoke", overrides=["clock.days=1"])
        run_agent(RunSpec("hermes-agent", scenario, 1, settings), tmp_path / "run")
    trace = [json.loads(x) for x in (tmp_path / "run" / "trace.jsonl").read_text().splitlines()]
    closes = [e for e in trace if e["tool"] == "end_of_step"]
    assert [e["window"] for e in closes] == [0, 1] and all(e["forced"] for e in closes)
    assert [e["window"] for e in trace if e["tool"] == "query_balance"] == [0] * 4 + [1] * 4
    assert len(server.requests) == 2 * (4 + 1)
    assert sum(1 for r in server.requests if not r.get("tools")) == 2


def _snooping_policy(targets: dict[str, str]):
    """Asks Hermes' own tools for what lies outside its home (files of the run directory and
    the market cache, our environment, the host network), then ends each window."""
    host, outside = targets["listener"], targets["external"]
    files = " ".join(targets[k] for k in ("file", "run", "cache"))
    connect = "timeout 5 bash -c 'exec 3<>/dev/tcp/{0}' && echo {1}-CONNECTED || echo {1}-REFUSED"
    code = (
        "import socket\n"
        f"for p in {[targets[k] for k in ('file', 'run', 'cache')]!r}:\n"
        "    try:\n        print(open(p).read())\n"
        "    except OSError as e:\n        print('CODE-NOFILE', e.errno)\n"
        f"for a in [{host!r}, {outside!r}]:\n"
        "    h, _, port = a.rpartition(':')\n"
        "    try:\n        socket.create_connection((h, int(port)), 3)\n"
        "        print('CODE-CONNECTED')\n"
        "    except OSError as e:\n        print('CODE-REFUSED', e.errno)\n"
    )
    asks = [
        _reply("skill_view", name="../../../../../../" + targets["file"].lstrip("/")),
        _reply("skill_view", name=targets["file"]),
        _reply("memory", action="add", target="memory", content="$MB_HIDDEN_MARKER"),
        _reply("terminal", command=f"env; cat {files}; ls {targets['cache_root']}"),
        # Every process's initial environment (forwarder, worker, shells): no token in any.
        _reply("terminal", command="cat /proc/[0-9]*/environ | tr '\\0' '\\n' | sort -u"),
        _reply("terminal", command=connect.format(host.replace(":", "/"), "HOST")),
        _reply("terminal", command=connect.format(outside.replace(":", "/"), "EXTERNAL")),
        _reply("read_file", path=targets["run"]),
        _reply("execute_code", code=code),
        _reply(MCP + "end_of_step"),
    ]

    def policy(request: dict) -> dict:
        done = len(_window_tools(request))
        return asks[done] if done < len(asks) else {"content": "done", "tool_calls": []}

    return policy


class _Listener:
    """A TCP listener on the host's 127.0.0.1 that counts the connections it accepts."""

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.socket.settimeout(0.2)
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.socket.getsockname()[1]}"

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                self.socket.accept()[0].close()
                self.accepted += 1
            except TimeoutError:
                continue

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.socket.close()


def _tool_results(requests: list[dict]) -> str:
    """Every tool result Hermes sent to the model (what its tools let it see)."""
    seen = {m["content"] for r in requests for m in r["messages"] if m["role"] == "tool"}
    return "\n".join(str(text) for text in sorted(seen, key=str))


def test_hermes_tools_reach_nothing_hidden(tmp_path, monkeypatch, hermes_env):
    secret = "hidden-9d2e7b"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "hidden.txt").write_text(f"{secret}\n")
    monkeypatch.setenv("MB_HIDDEN_MARKER", secret)
    scenario = load_scenario("smoke", overrides=["clock.days=1"])
    market = market_path(scenario, 1)
    listener = _Listener()
    targets = {
        "file": str(outside / "hidden.txt"),
        "run": str(tmp_path / "run" / "run.json"),
        "cache": str(market / "meta.json"),
        "cache_root": str(cache_root()),
        "listener": listener.address,
        "external": "1.1.1.1:80",
    }
    try:
        metrics, run_dir, server, meta, trace = _run(
            tmp_path, _snooping_policy(targets), monkeypatch, days=1
        )
    finally:
        listener.close()
    assert meta["ended"] == "completed"
    # Every ask was made and answered, and the window closed by Hermes' own end_of_step.
    closes = [e for e in trace if e["tool"] == "end_of_step"]
    assert len(closes) == 2 and not any(e["forced"] for e in closes)
    views = [e for e in trace if e["tool"] == "skill_view"]
    assert len(views) == 4 and not any(e["ok"] for e in views)
    for tool, count in (("terminal", 8), ("read_file", 2), ("execute_code", 2)):
        assert len([e for e in trace if e["tool"] == tool and e["origin"] == "framework"]) == count
    seen = _tool_results(server.requests)
    # The tools ran (inside the sandbox), and found none of it.
    assert "HERMES_HOME=" in seen and "MB_MODEL=scripted" in seen
    assert "No such file or directory" in seen
    assert "HOST-REFUSED" in seen and "EXTERNAL-REFUSED" in seen and "CODE-REFUSED" in seen
    assert "-CONNECTED" not in seen
    assert listener.accepted == 0  # nothing of the sandbox reached the host's network
    hidden = [secret, KEY, "MB_MCP_TOKEN", "MB_API_TOKEN", (market / "meta.json").read_text()]
    hidden += [str(run_dir / "trace.jsonl"), "stock_capacity"]
    assert [text for text in hidden if text in seen] == []
    # Nothing hidden in what Hermes keeps either (the memory note stayed a literal).
    assert _files_containing(_home(meta), secret) == []


def test_hermes_code_tool_sees_no_host_python_package(tmp_path, monkeypatch, hermes_env):
    """Hermes' own code tool runs in its sandbox with what the interpreter needs of the host
    Python (executable, libpython, standard library) and none of its site-packages, programs
    or headers, as `execute_code`'s sandbox (hardening round 3)."""
    prefix = os.path.realpath(sys.base_prefix)
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    assert os.listdir(f"{prefix}/lib/{version}/site-packages")  # the host's has packages
    code = (
        "import os\n"
        f"prefix, version = {prefix!r}, {version!r}\n"
        "site = f'{prefix}/lib/{version}/site-packages'\n"
        "print('PREFIX-TOP', sorted(os.listdir(prefix)))\n"
        "print('PREFIX-BIN', sorted(os.listdir(prefix + '/bin')))\n"
        "print('HOST-SITE', sorted(os.listdir(site)) if os.path.isdir(site) else 'absent')\n"
        "print('STDLIB-OK', 'os.py' in os.listdir(f'{prefix}/lib/{version}'))\n"
    )
    asks = [_reply("execute_code", code=code), _reply(MCP + "end_of_step")]

    def policy(request: dict) -> dict:
        done = len(_window_tools(request))
        return asks[done] if done < len(asks) else {"content": "done", "tool_calls": []}

    _, _, server, meta, trace = _run(tmp_path, policy, monkeypatch, days=1)
    assert meta["ended"] == "completed"
    seen = _tool_results(server.requests)
    assert "PREFIX-TOP ['bin', 'lib']" in seen, seen[-2000:]
    assert f"PREFIX-BIN ['{version}']" in seen, seen[-2000:]
    assert "HOST-SITE []" in seen and "STDLIB-OK True" in seen, seen[-2000:]


def test_hermes_own_tools_keep_the_time_limit_the_driver_set(tmp_path, monkeypatch, hermes_env):
    # Hermes' defaults: 300 s for a snippet, 180 s for a command (600 s when asked).
    config = "$HERMES_HOME/config.yaml"
    asks = [
        _reply("execute_code", code="import time\ntime.sleep(30)\nprint('SLEPT')"),
        _reply("terminal", command="sleep 30; echo SLEPT"),
        _reply("terminal", command="sleep 30; echo SLEPT", timeout=60),
        _reply("terminal", command=f"echo 'code_execution: {{timeout: 999}}' >> {config}"),
        _reply(MCP + "end_of_step"),
    ]

    def policy(request: dict) -> dict:
        done = len(_window_tools(request))
        return asks[done] if done < len(asks) else {"content": "done", "tool_calls": []}

    monkeypatch.setenv("MB_TEST_HERMES_KEY", KEY)
    with ScriptedServer(policy) as server:
        settings = {"model": "scripted", "base_url": server.base_url, "code_timeout_seconds": 3}
        settings["api_key_env"] = "MB_TEST_HERMES_KEY"
        spec = RunSpec(
            "hermes-agent", load_scenario("smoke", overrides=["clock.days=1"]), 1, settings
        )
        run_agent(spec, tmp_path / "run")
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["ended"] == "completed" and meta["agent"]["settings"]["code_timeout_seconds"] == 3
    seen = _tool_results(server.requests)
    assert "SLEPT" not in seen
    assert "Script timed out after 3s" in seen and "Command timed out after 3s" in seen
    assert "Foreground timeout 60s exceeds the maximum of 3s" in seen
    # Nor can Hermes raise its limits: its config.yaml is read-only in the sandbox, and still
    # exactly what the driver wrote (its text holds the home's random name, so a search for
    # '999' alone failed about one run in 120).
    assert "config.yaml: Read-only file system" in seen
    home = _home(meta)
    url = f"http://127.0.0.1:{SANDBOX_PORT}{MCP_PATH}"
    assert (home / "config.yaml").read_text() == config_text(home, url, 900.0, 3)


def _each_hermes_process(action: str) -> str:
    """Python for Hermes' code tool: `action` (indented code that may use `pid` and `name`)
    for each of Hermes' own processes, the forwarder and the worker."""
    body = "".join(f"        {line}\n" for line in action.splitlines())
    return (
        "import os\n"
        "for pid in filter(str.isdigit, os.listdir('/proc')):\n"
        "    try:\n        argv = open(f'/proc/{pid}/cmdline', 'rb').read().split(b'\\0')\n"
        "    except OSError:\n        continue\n"
        "    if len(argv) > 2 and argv[2].endswith((b'/worker.py', b'/forwarder.py')):\n"
        "        name = argv[2].rsplit(b'/', 1)[1].decode()\n" + body
    )


def test_hermes_cannot_change_what_its_next_start_reads(tmp_path, monkeypatch, hermes_env):
    """Whatever Hermes' tools leave in its home, a restarted Hermes (after it died, a window's
    timeout, a resume) keeps the driver's settings and limits, and the driver writes nothing
    through a path Hermes made. Here the model writes Hermes' `.env` (which Hermes loads over
    its environment at start), leaves links where the driver once wrote, tries to read Hermes'
    memory, then kills its own Hermes; the next window runs in a new Hermes."""
    victims = {name: tmp_path / name for name in ("victim-script", "victim-log")}
    for victim in victims.values():
        victim.write_text("untouched\n")
    home = "$HERMES_HOME"
    # Can the model's code open the memory of Hermes' processes (they hold the token and the
    # limits)? Hermes' terminal refuses `kill -9 -1`, but its code tool can kill Hermes.
    peek = _each_hermes_process(
        "try:\n    open(f'/proc/{pid}/mem', 'rb').close()\n    print('MEM-OPENED', name)\n"
        "except OSError as e:\n    print('MEM-REFUSED', name, e.errno)\n"
    )
    kill = _each_hermes_process("if name == 'worker.py':\n    os.kill(int(pid), 9)\n")
    first = [
        _reply(
            "terminal",
            command=f"printf 'TERMINAL_TIMEOUT=999\\nTERMINAL_MAX_FOREGROUND_TIMEOUT=999\\n'"
            f" >> {home}/.env; cat {home}/.env; echo ENV-TRIED",
        ),
        _reply(
            "terminal",
            command=f"mkdir -p {home}/.driver; ln -sf {victims['victim-script']} "
            f"{home}/.driver/worker.py; ln -sf {victims['victim-log']} {home}/hermes-driver.log",
        ),
        _reply("execute_code", code=peek),
        _reply("execute_code", code=kill),
    ]
    second = [
        _reply("terminal", command="sleep 5; echo SLEPT", timeout=60),
        _reply(
            "terminal", command='echo "LIMITS=$TERMINAL_TIMEOUT/$TERMINAL_MAX_FOREGROUND_TIMEOUT"'
        ),
        _reply(MCP + "end_of_step"),
    ]
    killed = threading.Event()

    def policy(request: dict) -> dict:
        done = len(_window_tools(request))
        asks = second if killed.is_set() else first
        if asks is first and done == len(first) - 1:
            killed.set()
        return asks[done] if done < len(asks) else {"content": "done", "tool_calls": []}

    _, _, server, meta, trace = _run(tmp_path, policy, monkeypatch, 1, code_timeout_seconds=3)
    assert meta["ended"] == "completed", _forced_report(trace)
    closes = [(e["window"], e["forced"]) for e in trace if e["tool"] == "end_of_step"]
    assert closes == [(0, True), (1, False)], _forced_report(trace)
    # Window 0's Hermes died of the kill; window 1 ran in a new one.
    died = [(e["window"], e["error"]) for e in trace if e["tool"] == "hermes"]
    assert len(died) == 1 and died[0][0] == 0 and "Hermes exited" in died[0][1], died
    seen = _tool_results(server.requests)
    assert "ENV-TRIED" in seen and ".env: Read-only file system" in seen
    peeks = sorted(set(re.findall(r"MEM-[A-Z]+ \w+\.py", seen)))
    assert peeks == ["MEM-REFUSED forwarder.py", "MEM-REFUSED worker.py"]
    # The new Hermes kept the driver's limits: the 60 s ask is refused, nothing slept.
    assert "Foreground timeout 60s exceeds the maximum of 3s" in seen and "SLEPT" not in seen
    assert "LIMITS=3/3" in seen
    assert {name: v.read_text() for name, v in victims.items()} == dict.fromkeys(
        victims, "untouched\n"
    )


class _Killer:
    """The store policy, except that the `at`-th request kills the run's process."""

    def __init__(self, at: int) -> None:
        self.at, self.seen, self.pid = at, 0, None

    def __call__(self, request: dict) -> dict:
        self.seen += 1
        if self.seen == self.at and self.pid is not None:
            os.kill(self.pid, signal.SIGKILL)
            return {"status": 503}  # never read: the run is dead
        return store_policy(request)


_CHILD = """
import sys
from pathlib import Path
from merchantbench.runs.runner import CheckpointPolicy, RunSpec, run_agent
from merchantbench.scenario import load_scenario
settings = {"model": "scripted", "base_url": sys.argv[1], "api_key_env": "MB_TEST_HERMES_KEY"}
spec = RunSpec("hermes-agent", load_scenario("smoke", overrides=["clock.days=2"]), 1, settings)
run_agent(spec, Path(sys.argv[2]), checkpoints=CheckpointPolicy(windows=2))
"""


def test_killed_run_resumes_store_and_hermes_home(tmp_path, monkeypatch, hermes_env):
    monkeypatch.setenv("MB_TEST_HERMES_KEY", KEY)
    run_dir = tmp_path / "run"
    killer = _Killer(at=8)  # window 3 of 4 (3 requests a window): after a checkpoint
    with ScriptedServer(killer) as server:
        child = subprocess.Popen([sys.executable, "-c", _CHILD, server.base_url, str(run_dir)])
        killer.pid = child.pid
        assert child.wait(timeout=600) == -signal.SIGKILL
        killed_meta = json.loads((run_dir / "run.json").read_text())
        home = _home(killed_meta)
        memory_before = (home / "memories" / "MEMORY.md").read_text()
        settings = {"model": "scripted", "base_url": server.base_url}
        settings["api_key_env"] = "MB_TEST_HERMES_KEY"
        spec = RunSpec(
            "hermes-agent", load_scenario("smoke", overrides=["clock.days=2"]), 1, settings
        )
        metrics = run_agent(spec, run_dir, resume=True, checkpoints=CheckpointPolicy(windows=2))
    meta = json.loads((run_dir / "run.json").read_text())
    trace = [json.loads(x) for x in (run_dir / "trace.jsonl").read_text().splitlines()]
    assert meta["ended"] == "completed" and metrics["windows"] == 4
    closes = [e["window"] for e in trace if e["tool"] == "end_of_step"]
    assert closes == [0, 1, 2, 3]  # the trace was cut back to the checkpoint, then continued
    records = [json.loads(x) for x in (run_dir / "model_calls.jsonl").read_text().splitlines()]
    assert [r["seq"] for r in records] == list(range(1, len(records) + 1))
    assert _home(meta) == home  # the same private home: Hermes' memory carried over
    assert "searched bags" in memory_before
    assert memory_before.strip() in (home / "memories" / "MEMORY.md").read_text()
    assert _files_containing(run_dir, KEY) == [] and _files_containing(home, KEY) == []
