"""The code sandbox and the tools bridge: what snippets can and cannot do, and that the parent
stays healthy whatever they do."""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import os
import site
import socket
import sys
import time
from pathlib import Path

import pytest

from merchantbench.agents.llm import sandbox
from merchantbench.agents.llm.bridge import MODULE_NAME, ToolBridge
from merchantbench.agents.llm.sandbox import CodeRunner, Execution, SandboxLimits, probe_sandbox
from merchantbench.agents.llm.sandbox_runtime import runtime
from merchantbench.catalog.cache import cache_root, get_market
from merchantbench.scenario import load_scenario
from merchantbench.session import Session

needs_bwrap = pytest.mark.requires("bwrap")
FAST = SandboxLimits(cpu_seconds=2, wall_seconds=20, processes=16)


def run(code: str, runner: CodeRunner | None = None, **kwargs) -> Execution:
    return asyncio.run((runner or CodeRunner(limits=FAST)).run(code, **kwargs))


def leftover_processes() -> list[int]:
    """Live processes running as one of the uids this test process's snippets got (root
    parents only: others run snippets in user namespaces), after a moment to finish dying."""
    first = sandbox._UID_BASE + (os.getpid() % 100_000) * 1000
    deadline = time.monotonic() + 5
    while True:
        found = []
        for entry in Path("/proc").glob("[0-9]*"):
            try:
                if first <= entry.stat().st_uid < first + 1000:
                    found.append(int(entry.name))
            except FileNotFoundError:
                continue
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


@pytest.fixture(scope="module")
def session_factory():
    scenario = load_scenario("smoke")
    market = get_market(scenario, 1)
    return lambda: Session(scenario, market, 1)


@needs_bwrap
def test_probe_finds_a_working_sandbox():
    available, reason = probe_sandbox()
    assert available, reason
    assert "bubblewrap" in reason


def test_without_bwrap_code_execution_is_off_and_says_why(monkeypatch):
    monkeypatch.setattr(sandbox, "find_bwrap", lambda: None)
    probe_sandbox.cache_clear()
    try:
        available, reason = probe_sandbox()
    finally:
        probe_sandbox.cache_clear()
    assert not available
    assert "bubblewrap" in reason and "apt-get install" in reason


@needs_bwrap
def test_a_snippet_prints_and_returns_its_last_expression():
    execution = run("total = sum(range(10))\nprint('hello', total)\n{'total': total, 'half': 0.5}")
    assert execution.error_code is None, execution.stderr
    assert execution.stdout == "hello 45\n"
    assert execution.result == {"total": 45, "half": 0.5}
    assert execution.to_tool_result()["ok"] is True


@needs_bwrap
def test_an_exception_comes_back_with_the_snippets_own_traceback():
    execution = run("x = 1\n1 / 0")
    assert execution.error_code == "exception"
    assert execution.error_message == "ZeroDivisionError: division by zero"
    assert "launcher" not in execution.stderr and 'snippet.py", line 2' in execution.stderr


@needs_bwrap
def test_the_run_directory_cache_home_and_host_tmp_are_invisible(tmp_path, monkeypatch):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "run.json").write_text("{}")
    monkeypatch.setenv("MERCHANTBENCH_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "market.npy").write_text("secret")
    paths = [run_dir / "run.json", cache_root() / "market.npy", Path.cwd(), tmp_path]
    code = f"import os\n[os.path.exists(p) for p in {[str(p) for p in paths]!r}]"
    assert run(code).result == [False, False, False, False]
    # Home shows at most the way to the Python installation (here under /root/.pyenv).
    prefix = Path(os.path.realpath(sys.base_prefix))
    way = (
        {prefix.relative_to(Path.home()).parts[0]} if prefix.is_relative_to(Path.home()) else set()
    )
    home = str(Path.home())
    seen = run(f"import os\nos.listdir({home!r}) if os.path.isdir({home!r}) else []").result
    assert set(seen) <= way
    execution = run(f"open({str(run_dir / 'run.json')!r}).read()")
    assert execution.error_code == "exception"
    assert "FileNotFoundError" in execution.error_message


@needs_bwrap
def test_only_the_scratch_directory_is_writable():
    code = (
        "import os\nopen('/scratch/notes.txt', 'w').write('kept')\nblocked = []\n"
        "for path in ('/sandbox/python/x', '/sandbox/lib/x', '/x'):\n"
        "    try:\n        open(path, 'w')\n    except OSError as exc:\n"
        "        blocked.append(exc.errno)\n"
        "blocked, open('/tmp/notes.txt').read(), os.getcwd()"
    )
    blocked, kept, cwd = run(code).result
    assert set(blocked) <= {errno.EROFS, errno.EACCES} and len(blocked) == 3
    assert (kept, cwd) == ("kept", "/scratch")


@needs_bwrap
def test_a_key_in_the_parents_environment_is_invisible(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-123")
    code = (
        "import glob, os\nseen = [dict(os.environ)]\n"
        "for path in glob.glob('/proc/*/environ') + glob.glob('/proc/*/cmdline'):\n"
        "    try:\n        seen.append(open(path, 'rb').read().decode('latin-1'))\n"
        "    except OSError:\n        pass\n"
        "print(seen)\nsorted(os.environ)"
    )
    execution = run(code)
    assert execution.error_code is None, execution.stderr
    assert "sk-fake-123" not in execution.stdout and "OPENAI_API_KEY" not in execution.stdout
    assert "OPENAI_API_KEY" not in execution.result


@needs_bwrap
def test_a_socket_to_the_hosts_loopback_cannot_connect():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.setblocking(False)
        port = server.getsockname()[1]
        execution = run(f"import socket\nsocket.create_connection(('127.0.0.1', {port}), 2)")
        with pytest.raises(BlockingIOError):
            server.accept()  # nobody came
    assert execution.error_code == "exception"
    assert "ConnectionRefusedError" in execution.error_message


@needs_bwrap
def test_a_fork_bomb_is_bounded_and_cleaned_up():
    execution = run("import os\nwhile True:\n    os.fork()")
    assert execution.error_code == "process_limit", execution.error_message
    assert "at most 16" in execution.error_message
    counting = "import os, time\nn = 0\nwhile True:\n    try:\n        pid = os.fork()\n"
    counting += "    except OSError:\n        break\n    if pid == 0:\n        time.sleep(60)\n"
    counting += "        os._exit(0)\n    n += 1\nn"
    forks = run(counting).result
    assert 0 < forks < FAST.processes
    assert leftover_processes() == []  # the sleepers died with the sandbox
    assert run("'still fine'").result == "still fine"


@needs_bwrap
def test_an_endless_loop_meets_the_cpu_limit():
    execution = run("while True:\n    pass", CodeRunner(limits=SandboxLimits(cpu_seconds=1)))
    assert execution.error_code == "cpu_limit"
    assert "1 s of CPU time" in execution.error_message


@needs_bwrap
def test_a_sleeping_snippet_meets_the_wall_clock_limit():
    runner = CodeRunner(limits=SandboxLimits(wall_seconds=1.0))
    execution = run("import os, time\nos.fork()\nprint('started')\ntime.sleep(60)", runner)
    assert execution.error_code == "timeout"
    assert execution.stdout.count("started") == 2
    assert 1.0 <= execution.seconds < 5.0
    assert leftover_processes() == []


@needs_bwrap
def test_allocating_8_gib_fails_with_a_memory_error():
    execution = run("data = bytearray(8 << 30)")
    assert execution.error_code == "memory_limit"
    assert "1 GiB" in execution.error_message
    execution = run("import numpy as np\nnp.ones(8 << 30, dtype=np.uint8)")
    assert execution.error_code == "memory_limit"
    assert run("import numpy as np\nint(np.arange(10).sum())").result == 45


@needs_bwrap
def test_output_is_capped_and_marked_truncated():
    execution = run("print('x' * 1_000_000)\nprint('done', flush=True)\n'result'")
    assert execution.truncated and execution.result == "result"
    assert len(execution.stdout) < FAST.output_bytes + 100
    assert execution.stdout.endswith(f"only the first {FAST.output_bytes} bytes are kept]")


def run_with_bridge(session: Session, code: str, max_calls: int = 200, variables=None):
    bridge = ToolBridge(session, max_calls)
    modules = {MODULE_NAME: bridge.module_source()}
    return asyncio.run(CodeRunner(limits=FAST).run(code, modules, bridge, variables)), bridge


@needs_bwrap
def test_tools_called_through_the_bridge_are_traced_env_calls(session_factory):
    session = session_factory()
    code = (
        "import merchantbench_tools as mt\nfound = mt.search_products(query='box')\n"
        "print(found['total'])\n[mt.query_balance(), mt.call('get_product_detail', product_id=1)]"
    )
    execution, bridge = run_with_bridge(session, code)
    balance, refusal = execution.result
    assert execution.error_code is None, execution.stderr
    assert balance == session_factory().call("query_balance", {})
    assert refusal["ok"] is False and refusal["error"]["path"] == "$.product_id"
    assert [(e["tool"], e["origin"]) for e in session.trace] == [
        ("search_products", "env"),
        ("query_balance", "env"),
        ("get_product_detail", "env"),
    ]
    assert session.trace[0]["args"] == {"query": "box"} and bridge.calls == 3
    assert session.window_calls == 3  # they count towards the window's cap


@needs_bwrap
def test_the_bridge_refuses_end_of_step_and_calls_past_its_limit(session_factory):
    session = session_factory()
    code = "import merchantbench_tools as mt\n"
    code += "[mt.call('end_of_step')] + [mt.query_balance() for _ in range(4)]"
    execution, bridge = run_with_bridge(session, code, max_calls=2)
    codes = [r.get("error", {}).get("code") for r in execution.result]
    assert codes == ["not_allowed_in_code", None, None, "bridge_limit", "bridge_limit"]
    assert session.window == 0 and len(session.trace) == 2 and bridge.calls == 2


@needs_bwrap
def test_garbage_on_the_bridge_gets_structured_errors(session_factory):
    session = session_factory()
    lines = ["not json", "\xff\xfe", "[1, 2]", '{"tool": 3}', '{"tool": "x", "args": 5}']
    lines += ["y" * (2 << 20), '{"id": 9, "tool": "query_balance"}']
    code = (
        "import json, os\nw, r = map(int, os.environ['MERCHANTBENCH_BRIDGE'].split(','))\n"
        "os.write(w, '\\n'.join(lines).encode('latin-1') + b'\\n')\n"
        "answers = os.fdopen(r, 'rb')\n[json.loads(answers.readline()) for _ in lines]"
    )
    execution, bridge = run_with_bridge(session, code, variables={"lines": lines})
    assert execution.error_code is None, execution.stderr
    *garbage, good = execution.result
    assert [a["id"] for a in garbage] == [None] * 6
    assert {a["result"]["error"]["code"] for a in garbage} == {"bad_request"}
    assert "longer than" in garbage[5]["result"]["error"]["message"]
    assert good["id"] == 9 and good["result"]["ok"] is True
    assert bridge.bad_requests == 6 and [e["tool"] for e in session.trace] == ["query_balance"]


@needs_bwrap
def test_a_snippet_that_never_reads_answers_is_cut_off(session_factory):
    session = session_factory()
    code = (
        "import json, os\nw = int(os.environ['MERCHANTBENCH_BRIDGE'].split(',')[0])\n"
        "line = json.dumps({'id': 1, 'tool': 'query_balance'}).encode() + b'\\n'\n"
        "while True:\n    os.write(w, line * 100)"
    )
    execution, bridge = run_with_bridge(session, code, max_calls=20)
    assert bridge.stalled and bridge.calls == 20 and len(session.trace) == 20
    assert execution.error_code == "exception" and "BrokenPipeError" in execution.error_message
    assert session.call("query_balance", {})["ok"] is True  # the parent carries on


@needs_bwrap
def test_after_the_bridge_closes_tool_functions_raise_a_clear_error(session_factory):
    session = session_factory()
    code = (
        "import json, os\nimport merchantbench_tools as mt\n"
        "w = int(os.environ['MERCHANTBENCH_BRIDGE'].split(',')[0])\n"
        "line = json.dumps({'id': 1, 'tool': 'query_balance'}).encode() + b'\\n'\n"
        "try:\n    while True:\n        os.write(w, line * 100)\nexcept BrokenPipeError:\n"
        "    pass\nmt.query_balance()"
    )
    execution, bridge = run_with_bridge(session, code, max_calls=5)
    assert bridge.stalled and execution.error_code == "exception"
    assert execution.error_message.startswith("merchantbench_tools.ToolBridgeError: the tool")


def test_the_unsafe_runner_keeps_the_limits_and_a_clean_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-123")
    runner = CodeRunner("unsafe", FAST)
    assert runner.settings()["mode"] == "unsafe"
    names = run("import os\nsorted(os.environ)", runner).result
    assert names == sorted(sandbox.sandbox_env("/scratch"))
    assert run("data = bytearray(8 << 30)", runner).error_code == "memory_limit"
    assert (
        run(
            "import time\ntime.sleep(60)", CodeRunner("unsafe", SandboxLimits(wall_seconds=1))
        ).error_code
        == "timeout"
    )


@needs_bwrap
def test_a_protected_path_inside_an_exposed_directory_is_covered(monkeypatch):
    numpy_dir = runtime(("numpy",)).root / "site" / "numpy"
    hidden = numpy_dir / "linalg"
    monkeypatch.setattr(sandbox, "protected_paths", lambda: [hidden])
    code = "import os\nsite = '/sandbox/site/numpy'\n"
    code += "[os.listdir(site + '/linalg'), 'fft' in os.listdir(site)]"
    assert run(code).result == [[], True]
    monkeypatch.setattr(sandbox, "protected_paths", lambda: [numpy_dir.parent])
    refused = run("1")
    assert refused.error_code == "sandbox_failed" and "refusing to expose" in refused.error_message


def test_a_sandbox_that_cannot_start_fails_the_snippet_not_the_caller(monkeypatch):
    monkeypatch.setattr(sandbox, "find_bwrap", lambda: None)
    execution = run("1 + 1")
    assert execution.error_code == "sandbox_failed"
    assert "bubblewrap is not installed" in execution.error_message


@needs_bwrap
def test_a_snippet_writing_to_the_result_pipe_cannot_fool_the_parent():
    code = (
        "import json, os\nconfig = json.load(open('/sandbox/lib/config.json'))\n"
        "os.write(config['result_fd'], b'[' * 50_000)\nprint('wrote')"
    )
    execution = run(code)
    assert execution.error_code is None and execution.stdout == "wrote\n"
    assert execution.result == "[the result pipe held something other than the launcher's result]"


@needs_bwrap
def test_deeply_nested_requests_get_a_structured_error(session_factory):
    session = session_factory()
    code = (
        "import json, os\nw, r = map(int, os.environ['MERCHANTBENCH_BRIDGE'].split(','))\n"
        "os.write(w, b'[' * 100_000 + b'\\n')\njson.loads(os.fdopen(r, 'rb').readline())"
    )
    execution, bridge = run_with_bridge(session, code)
    assert execution.result["result"]["error"]["code"] == "bad_request"
    assert bridge.bad_requests == 1 and session.trace == []


HOST_PACKAGES = ("scipy", "pydantic", "hypothesis", "boto3", "merchantbench", "pytest", "yaml")


def host_import_dirs() -> list[str]:
    """Every directory the host imports from, and the usual system ones."""
    dirs = {p for p in sys.path if p} | set(site.getsitepackages())
    dirs |= {site.getusersitepackages(), str(Path.cwd() / "src"), str(Path.cwd())}
    base = Path(sys.base_prefix) / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    dirs |= {str(base / "site-packages"), "/usr/lib/python3/dist-packages"}
    dirs |= {f"/usr/local/lib/python3.{m}/dist-packages" for m in range(8, 15)}
    return sorted(dirs)


@needs_bwrap
def test_host_packages_cannot_be_imported_even_after_path_tricks():
    code = (
        "import importlib, os, sys\nfound = []\n"
        "for top, subdirs, _ in os.walk('/'):\n"
        "    found += [os.path.join(top, d) for d in subdirs if d.endswith('-packages')]\n"
        "sys.path += dirs + found + ['/proc/1/cwd', '/proc/self/root/usr/lib/python3']\n"
        "imported = []\nfor name in names:\n    try:\n        importlib.import_module(name)\n"
        "        imported.append(name)\n    except ImportError:\n        pass\n"
        "import numpy\n[imported, found, numpy.__file__]"
    )
    variables = {"dirs": host_import_dirs(), "names": list(HOST_PACKAGES)}
    execution = run(code, CodeRunner(limits=SandboxLimits(cpu_seconds=20, wall_seconds=60)),
                    variables=variables)  # fmt: skip
    assert execution.error_code is None, execution.stderr
    imported, found, numpy_file = execution.result
    assert imported == [] and found == []
    assert numpy_file == "/sandbox/site/numpy/__init__.py"


SCAN = r"""
import os, sys
needles = [n[::-1] for n in hidden]  # (given reversed: the staged config holds them too)
del hidden
hits = {}
def check(where, data):
    for needle in needles:
        if needle.encode() in data:
            hits.setdefault(needle, []).append(where)
PROC_FILES = {"cmdline", "environ", "mountinfo", "mounts", "maps", "status", "cwd", "exe"}
seen = 0
for top, subdirs, files in os.walk("/", followlinks=False):
    if top.startswith("/proc"):  # (an old sandbox had one) only what names paths, no task dirs
        subdirs[:] = [d for d in subdirs if d.isdigit() or d in ("self", "thread-self")]
        files = [f for f in files + subdirs if f in PROC_FILES]
    for name in subdirs + files:
        path = os.path.join(top, name)
        check("name:" + path, path.encode())
        try:
            if os.path.islink(path):
                check("link:" + path, os.readlink(path).encode())
            elif os.path.isfile(path):
                with open(path, "rb") as file:
                    while chunk := file.read(1 << 22):
                        check(path, chunk)
                        seen += len(chunk)
        except OSError:
            pass
state = [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.executable, sys._base_executable,
         os.getcwd(), repr(sys.path), repr(dict(os.environ)), repr(sys.argv), repr(sys.flags)]
check("sys", "\n".join(state).encode())
import merchantbench_tools as mt
answers = [mt.search_products(query="box"), mt.get_product_detail(product_id="nope"),
           mt.call("no_such_tool"), mt.call("write_memory_doc", text=7)]
check("bridge", repr(answers).encode())
w, r = map(int, os.environ["MERCHANTBENCH_BRIDGE"].split(","))
os.write(w, b"{garbage\n")
check("bridge", mt._channel["inp"].readline())
try:
    1 / 0
except ZeroDivisionError:
    import traceback
    check("traceback", traceback.format_exc().encode())
[{k: [len(v)] + v[:4] for k, v in hits.items()}, seen, os.path.exists("/proc/self")]
"""


@needs_bwrap
def test_no_host_path_can_be_found_anywhere_in_the_sandbox(session_factory, tmp_path):
    home = str(Path.home())
    needles = {str(Path.cwd()), str(cache_root()), home + "/", sys.prefix, sys.base_prefix}
    needles |= {str(tmp_path), "merchantbench-code-", "/work/"}
    needles |= {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, cache_root())}
    bridge = ToolBridge(session_factory(), 200)
    execution = asyncio.run(
        CodeRunner(limits=SandboxLimits(cpu_seconds=60, wall_seconds=120)).run(
            SCAN,
            {MODULE_NAME: bridge.module_source()},
            bridge,
            {"hidden": [n[::-1] for n in needles]},
        )
    )
    assert execution.error_code is None, execution.stderr
    hits, seen, has_proc = execution.result
    assert hits == {}
    assert seen > 10_000_000  # the interpreter, the standard library and numpy were read
    assert has_proc is False  # no process's command line, environment or mounts to read


def test_only_allow_listed_packages_can_be_given():
    with pytest.raises(ValueError, match="only be given numpy, not scipy"):
        CodeRunner(packages=("numpy", "scipy"))
    assert CodeRunner(packages=()).packages == ()


@needs_bwrap
def test_the_standard_library_works_and_names_only_sandbox_paths():
    code = (
        "import json, sqlite3, decimal, ssl, zlib, hashlib, sysconfig, inspect, os\n"
        "con = sqlite3.connect(':memory:')\n"
        "[con.execute('select 6 * 7').fetchone()[0], inspect.getsourcefile(json),\n"
        " sysconfig.get_config_var('prefix'), sysconfig.get_paths()['stdlib'],\n"
        " sorted(os.listdir('/')), sorted(os.listdir('/sandbox'))]"
    )
    execution = run(code)
    assert execution.error_code is None, execution.stderr
    answer, source, prefix, stdlib, top, sandboxed = execution.result
    assert answer == 42 and source == "/sandbox/python/lib/python3.11/json/__init__.py"
    assert prefix == "/sandbox/python" and stdlib == "/sandbox/python/lib/python3.11"
    assert top == ["dev", "lib64", "sandbox", "scratch", "tmp"]
    assert sandboxed == ["lib", "python", "site"]


@needs_bwrap
def test_a_failing_mount_does_not_tell_the_model_host_paths(monkeypatch, tmp_path):
    built = runtime(("numpy",))
    gone = dataclasses.replace(built, root=tmp_path / "deleted-runtime")
    monkeypatch.setattr(sandbox, "runtime", lambda packages: gone)
    execution = run("1")
    assert execution.error_code == "exception" and "<host path>" in execution.stderr
    told = execution.stderr + str(execution.error_message)
    assert str(tmp_path) not in told and str(Path.home()) not in told


@needs_bwrap
@pytest.mark.parametrize("depth", [990, 1_000, 100_000])
def test_a_deeply_nested_tool_call_from_code_is_refused_and_the_parent_carries_on(
    session_factory, depth
):
    # 990 deep used to parse, then raise RecursionError in the parent, ending the whole run.
    session = session_factory()
    code = (
        "import json, os\nimport merchantbench_tools as mt\n"
        "w, r = map(int, os.environ['MERCHANTBENCH_BRIDGE'].split(','))\n"
        "args = b'{\"query\": ' + b'[' * depth + b']' * depth + b'}'\n"
        'os.write(w, b\'{"id": 1, "tool": "search_products", "args": \' + args + b\'}\\n\')\n'
        "reply = json.loads(mt._pipes()['inp'].readline())\n"
        "[reply, mt.query_balance()['ok']]"
    )
    execution, bridge = run_with_bridge(session, code, variables={"depth": depth})
    assert execution.error_code is None, execution.stderr
    reply, still_served = execution.result
    assert reply["id"] is None and reply["result"]["error"]["code"] == "bad_request"
    assert still_served is True and bridge.bad_requests == 1
    assert [e["tool"] for e in session.trace] == ["query_balance"]
