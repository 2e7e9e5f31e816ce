"""The process that runs the real Hermes Agent, inside Hermes' own isolated environment.

This file is executed by the interpreter of Hermes' environment (never ours), so it imports only
the standard library and the `hermes-agent` package. It keeps one `run_agent.AIAgent` and one
conversation for the whole run and speaks JSON lines with the driver:

    driver -> {"token": "<the driver's per-process token>"}   first, once
    driver -> {"turn": "<observation text>"}          one window
    worker -> {"framework_call": {"tool", "args", "ok", "error"}}   as Hermes' own tools finish
    worker -> {"done": true, "final": "...", "error": null}
    driver -> {"quit": true}                           (or EOF) to end

A window's turn ends when the window does (`WindowGuard`): as soon as an answer of our MCP
server says the window is closed (its `end_of_step` succeeded), the guard stops Hermes' loop
with `AIAgent.interrupt` (Hermes' own stop). The loop checks it before every model call and
every further tool of the batch, so no model call and no tool starts after the close, whatever
the model would have done next (tools Hermes ran at once with `end_of_step`, in one parallel
batch, found the window closed: nothing of theirs ran). Our server answering a call (even with
a refusal) is proof it is reachable, so the guard also clears Hermes' MCP circuit breaker,
which would otherwise count three refusals in a row (a model's mistakes) as a dead server and
fail every call for a minute.

The protocol runs over the worker's original stdout; Hermes' own prints go to stderr, so they
can never corrupt a reply. Configuration comes from the environment the driver builds:
`HERMES_HOME` (the private home with config.yaml), `MB_MODEL`, `MB_BASE_URL`, `MB_TOOLSETS`
(comma-separated) and `MB_MAX_ITERATIONS`. The token (of the driver's MCP endpoint and model
recorder, never a provider key) comes over stdin, so it is in no process's initial
environment (`/proc/PID/environ`, readable by Hermes' terminal) and in no child's.
"""

import json
import os
import sys

MCP_PREFIX = "mcp__"
SERVER_NAME = "merchantbench"  # process.SERVER_NAME: the MCP server of config.yaml


def _untraceable():
    """No other process of the sandbox (the model's commands and code run as the same user)
    may read or write this one's memory (`/proc/PID/mem`, ptrace), which holds the token and
    the limits the driver set: Linux allows that only for a dumpable process."""
    import ctypes

    pr_set_dumpable = 4
    try:
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_dumpable, 0, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the driver confines only on Linux
        pass


def _protocol_stream():
    # Keep the real stdout for replies; everything Hermes prints goes to stderr.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1, encoding="utf-8")
    sys.stdout = sys.stderr
    return out


def _build_agent(out, token, guard):
    from tools.mcp_tool import discover_mcp_tools

    # config.yaml's MCP headers name the token as ${MB_MCP_TOKEN}; discovery reads it once.
    os.environ["MB_MCP_TOKEN"] = token
    discover_mcp_tools()  # connects the servers of config.yaml and registers their tools
    os.environ.pop("MB_MCP_TOKEN")  # Hermes' child processes (terminal, code) never see it
    from run_agent import AIAgent

    # Whole responses, not token streams, for every agent of this process: the main one and
    # the forks Hermes makes itself (its background memory/skill review builds a fresh
    # AIAgent after each turn, which would otherwise stream). Nothing watches tokens live,
    # and the driver's recorder reads usage from complete answers. `_disable_streaming` is
    # Hermes' own switch for providers that cannot stream (read with getattr, never reset;
    # there is no public option for it in this version), set here on the class.
    AIAgent._disable_streaming = True
    agent = AIAgent(
        base_url=os.environ["MB_BASE_URL"],
        api_key=token,
        model=os.environ["MB_MODEL"],
        enabled_toolsets=[t for t in os.environ["MB_TOOLSETS"].split(",") if t],
        max_iterations=int(os.environ["MB_MAX_ITERATIONS"]),
        quiet_mode=True,
        skip_context_files=True,
        tool_delay=0.0,
        tool_complete_callback=guard.tool_completed,
    )
    guard.agent = agent
    return agent


class WindowGuard:
    """Hermes' tool callback: it reports Hermes' own tool calls to the driver, and ends the
    turn once the window is closed (see the module docstring)."""

    def __init__(self, out):
        self.out = out
        self.agent = None
        self.closed = False

    def begin(self):
        self.closed = False

    def tool_completed(self, call_id, name, args, result):
        if not str(name).startswith(MCP_PREFIX):
            self._report(name, args, result)
            return
        answer = _server_answer(result)
        if answer is None:
            return  # not our server's answer (a transport failure, an interrupted call)
        _close_breaker()
        if answer.get("window_closed") and not self.closed:
            self.closed = True
            self.agent.interrupt()  # no model call and no further tool of this turn

    def _report(self, name, args, result):
        """Each of Hermes' own (non-MCP) tool calls, at once, so the driver records it in the
        window, in order with the environment calls."""
        error = _error_of(str(result or ""))
        event = {"tool": name, "args": args, "ok": error is None, "error": error}
        self.out.write(json.dumps({"framework_call": event}, default=str) + "\n")


def _server_answer(result):
    """Our MCP server's JSON answer inside Hermes' tool result, or None. Hermes wraps it as
    `{"result": text, "structuredContent": {...}}`, or `{"error": text}` for a refusal."""
    try:
        wrapped = json.loads(str(result or ""))
    except ValueError:
        return None
    if not isinstance(wrapped, dict):
        return None
    answer = wrapped.get("structuredContent")
    if not isinstance(answer, dict):
        try:
            answer = json.loads(str(wrapped.get("result", wrapped.get("error"))))
        except ValueError:
            return None
    return answer if isinstance(answer, dict) and "ok" in answer else None


def _close_breaker():
    """Reset Hermes' consecutive-failure count of our server (its MCP circuit breaker)."""
    from tools import mcp_tool

    reset = getattr(mcp_tool, "_reset_server_error", None)
    if reset is not None:
        reset(SERVER_NAME)


def _error_of(answer):
    try:
        parsed = json.loads(answer)
    except ValueError:
        return answer[:200] if answer.lower().startswith("error") else None
    if isinstance(parsed, dict) and (parsed.get("error") or parsed.get("success") is False):
        return str(parsed.get("error") or "failed")[:200]
    return None


def main():
    _untraceable()
    out = _protocol_stream()
    token = json.loads(sys.stdin.readline())["token"]
    guard = WindowGuard(out)
    agent = _build_agent(out, token, guard)
    history = []
    out.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        request = json.loads(line)
        if "turn" not in request:
            break
        guard.begin()
        try:
            result = agent.run_conversation(request["turn"], conversation_history=history)
        except Exception as exc:  # the driver closes the window and records why
            error = f"{type(exc).__name__}: {exc}"[:300]
            out.write(json.dumps({"done": True, "final": None, "error": error}) + "\n")
            continue
        history = list(result.get("messages") or history)
        reply = {
            "done": True,
            "final": result.get("final_response"),
            "error": result.get("error"),
        }
        out.write(json.dumps(reply, default=str) + "\n")


if __name__ == "__main__":
    main()
