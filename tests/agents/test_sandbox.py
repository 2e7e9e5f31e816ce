"""The code sandbox and the tools bridge: what snippets can and cannot do, and that the parent
stays healthy whatever they do."""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import os
import site
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from merchantbench.agents.llm import sandbox, sandbox_cgroup
from merchantbench.agents.llm.bridge import MODULE_NAME, ToolBridge
from merchantbench.agents.llm.sandbox import CodeRunner, Execution, SandboxLimits, probe_sandbox
from merchantbench.agents.llm.sandbox_runtime import runtime
from merchantbench.catalog.cache import cache_root, get_market
from merchantbench.optional_parts import require_all
from merchantbench.scenario import load_scenario
from merchantbench.session import Session

needs_bwrap = pytest.mark.requires("bwrap")
# Where no cgroup can be made the sandbox runs without one (docs/llm.md); CI has them, and
# MERCHANTBENCH_REQUIRE_ALL makes these tests run (and fail) rather than skip.
needs_cgroup = pytest.mark.skipif(
    sandbox.cgroup_support()[0] is None and not require_all(), reason="no cgroup can be made here"
)
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
        "for path in ('/sandbox/python/x', '/sandbox/lib/x', '/x', '/dev/x', '/dev/shm/x'):\n"
        "    try:\n        open(path, 'w')\n    except OSError as exc:\n"
        "        blocked.append(exc.errno)\n"
        "blocked, open('/tmp/notes.txt').read(), os.getcwd()"
    )
    blocked, kept, cwd = run(code).result
    # Read-only, not merely someone else's: bwrap's root and /dev are tmpfs without a size,
    # which an unprivileged parent's sandbox uid owns (and could fill, before).
    assert blocked == [errno.EROFS] * 5
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


def shared_memory_kib() -> int:
    """The host's shared memory (tmpfs, memfds, System V segments), from /proc/meminfo."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("Shmem:"):
            return int(line.split()[1])
    raise AssertionError("no Shmem line in /proc/meminfo")


def run_watching_shared_memory(code: str, runner: CodeRunner) -> tuple[Execution, int]:
    """Run `code`, sampling the host's shared memory meanwhile; the execution and the largest
    growth seen, in MiB."""
    before = shared_memory_kib()

    async def watched() -> tuple[Execution, int]:
        task = asyncio.create_task(runner.run(code))
        peak = before
        while not task.done():
            peak = max(peak, shared_memory_kib())
            await asyncio.sleep(0.02)
        return task.result(), peak

    execution, peak = asyncio.run(watched())
    return execution, (peak - before) >> 10


MEMFD_BOMB = """
import os
held = []
try:
    for _ in range(80):
        fd = os.memfd_create("x")
        os.ftruncate(fd, 15 << 20)
        os.write(fd, b"\\1" * (15 << 20))
        held.append(fd)
        print(len(held), flush=True)
except OSError as exc:
    refused = exc.errno
else:
    refused = None
import time
time.sleep(0.5)  # (old code: held long enough for the parent to see it)
[len(held), refused]
"""


@needs_bwrap
def test_a_memfd_bomb_is_refused_and_host_shared_memory_stays_bounded():
    # Before: 80 memfds of 15 MiB (1,200 MiB) succeeded under a 1 GiB limit, which counts only
    # address space, and host shared memory grew by as much, owned by no process.
    runner = CodeRunner(limits=SandboxLimits(wall_seconds=60))
    execution, grown_mib = run_watching_shared_memory(MEMFD_BOMB, runner)
    assert execution.error_code is None, execution.stderr
    assert (execution.result, grown_mib < 100) == ([0, errno.EPERM], True), grown_mib


@needs_bwrap
def test_system_v_shared_memory_and_message_queues_are_refused():
    code = (
        "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "ids = [libc.shmget(0, 64 << 20, 0o1600) for _ in range(20)]\n"  # IPC_PRIVATE|IPC_CREAT
        "errors = [ctypes.get_errno()]\nids += [libc.msgget(0, 0o1600) for _ in range(20)]\n"
        "[ids, errors + [ctypes.get_errno()]]"
    )
    execution = run(code)
    assert execution.error_code is None, execution.stderr
    assert execution.result == [[-1] * 40, [errno.EPERM, errno.EPERM]]


NEW_USER_NAMESPACE = """
import ctypes, os, signal
libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWUSER = 0x10000000
answers = {}
def tried(name, value):
    answers[name] = [value, ctypes.get_errno() if value == -1 else 0]
# clone(2) straight, as a fork into a new user namespace (x86-64 56, AArch64 220)
SYS_clone = {"x86_64": 56, "aarch64": 220}[os.uname().machine]
child = libc.syscall(SYS_clone, CLONE_NEWUSER | signal.SIGCHLD, 0, 0, 0, 0)
if child == 0:
    os._exit(0)
tried("clone", child)
if child > 0:
    os.waitpid(child, 0)
tried("unshare", libc.unshare(CLONE_NEWUSER))  # (last: once inside one, no uid is mapped)
pid = os.fork()  # plain processes and threads still work
if pid == 0:
    os._exit(7)
import threading
thread = threading.Thread(target=lambda: None)
thread.start()
thread.join()
[answers, os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])]
"""


@needs_bwrap
def test_a_snippet_cannot_make_a_user_namespace():
    # Before: as root, unshare(CLONE_NEWUSER) succeeded (bubblewrap's --disable-userns needs a
    # user namespace of its own, which the root path does not make).
    execution = run(NEW_USER_NAMESPACE)
    assert execution.error_code is None, execution.stderr
    answers, forked = execution.result
    assert answers == {"unshare": [-1, errno.EPERM], "clone": [-1, errno.EPERM]}
    assert forked == 7


MEMORY_IN_CHILDREN = """
import os
go_read, go_write = os.pipe()
children = []
for _ in range(4):
    pid = os.fork()
    if pid == 0:
        held = bytearray(150 << 20)
        for i in range(0, len(held), 4096):
            held[i] = 1
        os.read(go_read, 1)  # hold it until the parent lets go (never)
        os._exit(0)
    children.append(pid)
pid, status = os.wait()  # returns only when a child died
raise SystemExit(f"child died: {os.waitstatus_to_exitcode(status)}")
"""


@needs_bwrap
@needs_cgroup
def test_memory_of_all_processes_together_is_bounded_by_the_cgroup():
    # Before: each process had its own 256 MiB of address space, so 4 children held 600 MiB
    # between them (and, with the default limits, 32 processes could hold 32 GiB).
    limits = SandboxLimits(memory_bytes=256 << 20, wall_seconds=30, processes=16)
    execution = run(MEMORY_IN_CHILDREN, CodeRunner(limits=limits))
    assert execution.error_code == "memory_limit", (execution.error_code, execution.stderr)
    assert "the whole sandbox" in execution.error_message
    assert "0.25 GiB" in execution.error_message
    assert run("'still fine'").result == "still fine"


@needs_bwrap
@needs_cgroup
def test_each_execution_gets_its_own_bounded_cgroup_and_leaves_none_behind(monkeypatch):
    seen = []
    close = sandbox.ExecutionCgroup.close

    async def noting(self):
        limit = "memory.max" if self.version == 2 else "memory.limit_in_bytes"
        memory = int((self.memory_dir / limit).read_text())
        seen.append((memory, int((self.pids_dir / "pids.max").read_text()), self.dirs))
        await close(self)

    monkeypatch.setattr(sandbox.ExecutionCgroup, "close", noting)
    execution = run("import os\nwhile True:\n    os.fork()")  # a fork bomb
    assert execution.error_code == "process_limit"
    assert run("1 + 1").result == 2
    assert [(m, p) for m, p, _ in seen] == [(FAST.memory_bytes, FAST.processes + 2)] * 2
    assert seen[0][2] != seen[1][2]
    assert not any(d.exists() for _, _, dirs in seen for d in dirs)


@needs_bwrap
def test_files_a_snippet_writes_are_bounded_in_size_and_in_total():
    code = (
        "import errno\nsizes = []\n"
        "for path in ('/scratch/big', '/tmp/big2'):\n"
        "    try:\n        with open(path, 'wb') as f:\n"
        "            for _ in range(100):\n                f.write(b'x' * (1 << 20))\n"
        "    except OSError as exc:\n        sizes.append(errno.errorcode[exc.errno])\n"
        "n = 0\ntry:\n    while True:\n        with open(f'/scratch/f{n}', 'wb') as f:\n"
        "            f.write(b'x' * (8 << 20))\n        n += 1\n"
        "except OSError as exc:\n    sizes.append(errno.errorcode[exc.errno])\n"
        "import shutil\n[sizes, n, shutil.disk_usage('/scratch').total]"
    )
    execution = run(code)
    assert execution.error_code is None, execution.stderr
    sizes, files, total = execution.result
    assert sizes == ["EFBIG", "EFBIG", "ENOSPC"]  # 16 MiB a file, 64 MiB in all
    assert total == FAST.scratch_bytes and files < FAST.scratch_bytes // (8 << 20)


@needs_bwrap
@needs_cgroup
def test_a_sandbox_that_cannot_join_its_cgroup_does_not_run(monkeypatch, tmp_path):
    join = sandbox.ExecutionCgroup.join_command
    made = []

    def into_a_missing_cgroup(self, argv):
        made.append(list(self.dirs))
        self.dirs.append(tmp_path / "missing")
        try:
            return join(self, argv)
        finally:
            self.dirs.pop()

    monkeypatch.setattr(sandbox.ExecutionCgroup, "join_command", into_a_missing_cgroup)
    execution = run("print('ran')")
    assert execution.error_code == "sandbox_failed", execution.stderr
    assert execution.stdout == "" and "could not join its cgroup" in execution.error_message
    assert made and not any(d.exists() for d in made[0])


def cgroup_mountinfo(*mounts: tuple[str, str, str, str]) -> str:
    """mountinfo lines for (root, mount point, type, super options)."""
    return "\n".join(
        f"{30 + i} 25 0:{20 + i} {root} {point} rw,nosuid - {kind} cgroup rw,{options}"
        for i, (root, point, kind, options) in enumerate(mounts)
    )


def test_cgroup_discovery_on_v1_v2_and_where_there_is_none(tmp_path):
    find = sandbox_cgroup.find_cgroup_parents
    memory, pids = tmp_path / "memory", tmp_path / "pids"
    (memory / "jobs" / "7").mkdir(parents=True)
    pids.mkdir()
    hybrid = cgroup_mountinfo(
        ("/", str(memory), "cgroup", "memory"), ("/", str(pids), "cgroup", "pids"),
        ("/", str(tmp_path / "unified"), "cgroup2", "nsdelegate"),
    )  # fmt: skip
    parents, reason = find("8:pids:/\n4:memory:/jobs/7\n0::/\n", hybrid)
    assert parents == sandbox_cgroup.CgroupParents(1, memory / "jobs" / "7", pids), reason
    # cgroup v2: our own cgroup holds processes, so the sandbox's is made beside it.
    v2 = tmp_path / "v2"
    (v2 / "user.slice" / "session.scope").mkdir(parents=True)
    (v2 / "user.slice" / "cgroup.subtree_control").write_text("cpu memory pids\n")
    (v2 / "user.slice" / "session.scope" / "cgroup.subtree_control").write_text("\n")
    unified = cgroup_mountinfo(("/", str(v2), "cgroup2", "nsdelegate"))
    parents, reason = find("0::/user.slice/session.scope\n", unified)
    assert parents == sandbox_cgroup.CgroupParents(2, v2 / "user.slice", v2 / "user.slice")
    (v2 / "user.slice" / "cgroup.subtree_control").write_text("cpu\n")
    parents, reason = find("0::/user.slice/session.scope\n", unified)
    assert parents is None and "enabling memory and pids" in reason
    parents, reason = find("0::/\n", cgroup_mountinfo(("/", str(v2), "cgroup2", "")))
    assert parents is None  # the mount's root has no subtree_control file here
    assert find("0::/\n", "")[0] is None and find("", "")[0] is None


def test_the_system_call_filter_is_built_for_known_architectures_only():
    from merchantbench.agents.llm.sandbox_seccomp import seccomp_program

    for machine in ("x86_64", "amd64", "aarch64", "arm64"):
        program = seccomp_program(machine)
        assert len(program) % 8 == 0 and 8 < len(program) < 8 * 64
    assert seccomp_program("amd64") == seccomp_program("x86_64") != seccomp_program("aarch64")
    with pytest.raises(sandbox.SandboxError, match="no system-call filter for the riscv64"):
        seccomp_program("riscv64")


@needs_bwrap
def test_unprivileged_parents_forbid_nested_user_namespaces_where_bubblewrap_can(monkeypatch):
    runner = CodeRunner(limits=FAST)
    lib = Path("/nonexistent/lib")
    monkeypatch.setattr(CodeRunner, "_runtime_mounts", lambda self, lib: [])
    monkeypatch.setattr(sandbox.os, "geteuid", lambda: 1000)
    assert sandbox.bwrap_version(sandbox.find_bwrap()) >= (0, 8)  # (the version installed here)
    argv = runner.bwrap_argv(lib, 9)
    assert argv[argv.index("--seccomp") + 1] == "9"
    assert "--unshare-user" in argv and "--disable-userns" in argv
    monkeypatch.setattr(sandbox, "bwrap_version", lambda bwrap: (0, 7, 0))
    argv = runner.bwrap_argv(lib, 9)
    assert "--unshare-user" in argv and "--disable-userns" not in argv  # the filter still is
    monkeypatch.setattr(sandbox.os, "geteuid", lambda: 0)
    assert "--unshare-user" not in runner.bwrap_argv(lib, 9)


@needs_bwrap
def test_the_hermes_agents_confinement_forbids_new_user_namespaces(tmp_path):
    # The real Hermes Agent runs under bubblewrap too (agents/hermes_agent/process.py): before,
    # as root, its processes could make user namespaces (and held every capability).
    from merchantbench.agents.hermes_agent.env import HermesEnv
    from merchantbench.agents.hermes_agent.process import DriverFiles, command

    python = Path(os.path.realpath(sys.executable))
    env = HermesEnv(Path(sys.base_prefix).resolve(), python, "test", 0.0)
    home, sockets = tmp_path / "home", tmp_path / "sockets"
    home.mkdir()
    sockets.mkdir()
    files = DriverFiles(tmp_path / "driver-files", home)
    files.write("")  # the confinement binds Hermes' settings read-only from the driver's copies
    argv = command(files, env, {}, sockets)
    # bubblewrap's options end where the forwarder (its command, socket, port) starts; the
    # interpreter's path also appears earlier, among the read-only binds.
    tail = len(files.forwarder(env)) + 2 + 1 + len(files.worker(env))  # forwarder, "--", worker
    confinement = argv[: len(argv) - tail]
    assert confinement[0].endswith("bwrap") and confinement[-1] != str(python)
    probe = (
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "print(libc.unshare(0x10000000), ctypes.get_errno())"
    )
    done = subprocess.run(
        [*confinement, str(python), "-I", "-c", probe], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["-1", str(errno.ENOSPC)]  # bubblewrap's --disable-userns


@needs_bwrap
@needs_cgroup
def test_a_cancelled_execution_leaves_no_process_and_no_cgroup():
    parents = sandbox.cgroup_support()[0]
    mine = f"{sandbox_cgroup.PREFIX}{os.getpid()}-"

    def cgroups() -> list[Path]:
        return [p for p in parents.pids.iterdir() if p.name.startswith(mine)]

    async def cancelled() -> None:
        task = asyncio.create_task(CodeRunner(limits=FAST).run("import time\ntime.sleep(60)"))
        for _ in range(2000):  # bounded: until the snippet's cgroup exists
            if cgroups() or task.done():
                break
            await asyncio.sleep(0.01)
        assert cgroups() and not task.done()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancelled())
    assert cgroups() == [] and leftover_processes() == []


@needs_bwrap
@needs_cgroup
def test_without_the_filter_the_cgroup_alone_contains_the_memfd_bomb(monkeypatch):
    allow_all = struct.pack("=HBBI", 0x06, 0, 0, 0x7FFF0000)  # BPF: return ALLOW
    monkeypatch.setattr(sandbox, "seccomp_program", lambda: allow_all)
    limits = SandboxLimits(memory_bytes=256 << 20, wall_seconds=60)
    execution, grown_mib = run_watching_shared_memory(MEMFD_BOMB, CodeRunner(limits=limits))
    assert execution.error_code == "memory_limit", (execution.error_code, execution.stderr)
    held = [int(line) for line in execution.stdout.split()]
    assert held and held[-1] * 15 < 256  # memfds made before the kernel stopped it
    assert grown_mib < 300, f"host shared memory grew by {grown_mib} MiB"
