"""The process that runs the real Hermes Agent, inside Hermes' own isolated environment.

This file is executed by the interpreter of Hermes' environment (never ours), so it imports only
the standard library and the `hermes-agent` package. It keeps one `run_agent.AIAgent` and one
conversation for the whole run and speaks JSON lines with the driver:

    driver -> {"token": "<the driver's per-process token>"}   first, once
    driver -> {"turn": "<observation text>"}          one window
    worker -> {"framework_call": {"tool", "args", "ok", "error"}}   as Hermes' own tools finish
    worker -> {"done": true, "final": "...", "error": null}
    driver -> {"quit": true}                           (or EOF) to end

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


def _protocol_stream():
    # Keep the real stdout for replies; everything Hermes prints goes to stderr.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1, encoding="utf-8")
    sys.stdout = sys.stderr
    return out


def _build_agent(out, token):
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
        tool_complete_callback=_reporter(out),
    )
    return agent


def _reporter(out):
    """Hermes' tool-complete callback: each of its own (non-MCP) tool calls, at once, so the
    driver records it in the window, in order with the environment calls."""

    def report(call_id, name, args, result):
        if str(name).startswith(MCP_PREFIX):
            return
        error = _error_of(str(result or ""))
        event = {"tool": name, "args": args, "ok": error is None, "error": error}
        out.write(json.dumps({"framework_call": event}, default=str) + "\n")

    return report


def _error_of(answer):
    try:
        parsed = json.loads(answer)
    except ValueError:
        return answer[:200] if answer.lower().startswith("error") else None
    if isinstance(parsed, dict) and (parsed.get("error") or parsed.get("success") is False):
        return str(parsed.get("error") or "failed")[:200]
    return None


def main():
    out = _protocol_stream()
    token = json.loads(sys.stdin.readline())["token"]
    agent = _build_agent(out, token)
    history = []
    out.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        request = json.loads(line)
        if "turn" not in request:
            break
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
