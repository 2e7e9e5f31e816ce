"""The model client over real HTTP (scripted server), models files, keys and token estimates."""

from __future__ import annotations

import asyncio
import time

import pytest

from merchantbench.agents.llm.client import ClientOptions, ModelCallFailed, ModelClient
from merchantbench.agents.llm.conversation import (
    Conversation,
    estimate_tokens,
    message_tokens,
    parse_tool_calls,
)
from merchantbench.agents.llm.models import DUMMY_KEY, ModelConfigError, resolve_model
from merchantbench.agents.llm.scripted_server import FaultPlan, ScriptedServer, script_responder
from merchantbench.refusals import Refusal

HELLO = [{"role": "user", "content": "hello"}]
END = {"tool_calls": [{"name": "end_of_step", "arguments": {}}]}


def _complete(server: ScriptedServer, max_retries: int = 3, calls: int = 1, **params):
    """One answer (or a list of `calls` answers) from one client."""
    config = resolve_model("m", server.base_url, None, params=params)

    async def go():
        client = ModelClient(config, ClientOptions(max_retries, retry_base_seconds=0.001))
        try:
            return [await client.complete(HELLO, []) for _ in range(calls)]
        finally:
            await client.close()

    answers = asyncio.run(go())
    return answers if calls > 1 else answers[0]


def test_answer_carries_tool_calls_usage_and_finish_reason():
    with ScriptedServer(script_responder([END])) as server:
        answer = _complete(server)
    call = answer.message["tool_calls"][0]
    assert call["function"] == {"name": "end_of_step", "arguments": "{}"}
    assert answer.finish_reason == "tool_calls"
    assert answer.input_tokens > 0 and answer.output_tokens > 0
    assert answer.retries == 0


def test_extra_params_reach_the_http_request():
    with ScriptedServer(script_responder([END])) as server:
        _complete(server, reasoning_effort="high", temperature=0.3)
    assert server.requests[0]["reasoning_effort"] == "high"
    assert server.requests[0]["temperature"] == 0.3


@pytest.mark.parametrize("kind", ["server_error", "rate_limit", "truncated", "dropped"])
def test_each_transient_fault_is_retried_then_gives_up(kind):
    plan = FaultPlan(1.0, (kind,))
    with (
        ScriptedServer(script_responder([]), plan) as server,
        pytest.raises(ModelCallFailed) as err,
    ):
        _complete(server, max_retries=2)
    assert err.value.retries == 2
    assert len(server.requests) == 3


def test_retries_are_counted_when_a_call_finally_succeeds():
    with ScriptedServer(script_responder([]), FaultPlan(0.5, ("server_error",), seed=3)) as server:
        answers = _complete(server, max_retries=10, calls=10)
    retries = sum(a.retries for a in answers)
    assert retries == len(server.requests) - 10 == server.faults_injected["server_error"]
    assert retries > 0


def test_retry_after_is_honoured():
    plan = FaultPlan(1.0, ("rate_limit",), retry_after=0.3)
    with ScriptedServer(script_responder([]), plan) as server:
        began = time.monotonic()
        with pytest.raises(ModelCallFailed):
            _complete(server, max_retries=1)
    assert time.monotonic() - began >= 0.3


def test_auth_failure_is_a_configuration_error_not_retried():
    refusal = script_responder([{"status": 401}])
    with ScriptedServer(refusal) as server, pytest.raises(ModelConfigError, match="401"):
        _complete(server)
    assert len(server.requests) == 1


def test_bad_request_fails_the_call_without_retrying():
    refusal = script_responder([{"status": 400}])
    with ScriptedServer(refusal) as server, pytest.raises(ModelCallFailed, match="400"):
        _complete(server)
    assert len(server.requests) == 1


def test_models_file_toml_and_yaml(tmp_path):
    toml = tmp_path / "models.toml"
    toml.write_text(
        '[fast]\nbase_url = "https://api.example.com/v1"\nmodel = "m-1"\n'
        'api_key_env = "EXAMPLE_KEY"\nprice_input = 2.0\nprice_cached_input = 0.5\n'
        'price_output = 8.0\nparams = { reasoning_effort = "low" }\n'
    )
    config = resolve_model(None, None, None, str(toml), "fast", {"temperature": 0})
    assert config.params == {"reasoning_effort": "low", "temperature": 0}
    # 1M input of which 0.5M cached, 0.1M output: 0.5*2 + 0.5*0.5 + 0.1*8
    assert config.cost(1_000_000, 500_000, 100_000) == pytest.approx(2.05)
    yaml_file = tmp_path / "models.yaml"
    yaml_file.write_text("fast:\n  base_url: http://localhost:8000/v1\n  model: qwen\n")
    assert resolve_model("other", None, None, str(yaml_file), "fast").model == "other"
    with pytest.raises(ModelConfigError, match="entries: fast"):
        resolve_model(None, None, None, str(toml), "slow")


def test_keys_come_from_the_environment_only(monkeypatch):
    remote = resolve_model("m", "https://api.example.com/v1", "MB_TEST_KEY")
    monkeypatch.delenv("MB_TEST_KEY", raising=False)
    with pytest.raises(ModelConfigError, match="MB_TEST_KEY is not set"):
        remote.api_key()
    monkeypatch.setenv("MB_TEST_KEY", "sk-secret")
    assert remote.api_key() == "sk-secret"
    assert "sk-secret" not in repr(remote.public_settings())
    assert resolve_model("m", "http://127.0.0.1:8000/v1", None).api_key() == DUMMY_KEY
    with pytest.raises(ModelConfigError, match="--api-key-env"):
        resolve_model("m", "https://api.example.com/v1", None).api_key()


def test_token_estimate_counts_cjk_characters_one_each():
    assert estimate_tokens("abcdefgh") == 2
    assert estimate_tokens("收纳盒") == 3
    assert estimate_tokens("ab收纳") == 3


def test_malformed_and_unknown_tool_calls_become_parsing_errors():
    message = {
        "tool_calls": [
            {"id": "a", "function": {"name": "end_of_step", "arguments": '{"x": '}},
            {"id": "b", "function": {"name": "teleport", "arguments": "{}"}},
            {"id": "c", "function": {"name": "end_of_step", "arguments": "[1]"}},
            {"id": "d", "function": {"name": "end_of_step", "arguments": ""}},
        ]
    }
    a, b, c, d = parse_tool_calls(message, {"end_of_step"})
    assert a.error["error"]["code"] == Refusal.INVALID_JSON
    assert b.error["error"]["code"] == Refusal.UNKNOWN_TOOL
    assert c.error["error"]["code"] == Refusal.INVALID_JSON
    assert d.error is None and d.args == {}


def test_trim_keeps_system_message_and_whole_turns():
    conversation = Conversation(compact_at_tokens=10_000, keep_tokens=300)
    conversation.start("system " * 100, [])
    for turn in range(20):
        conversation.add_user(f"observation {turn} " + "x" * 400)
        call = {"id": f"c{turn}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        conversation.append({"role": "assistant", "content": None, "tool_calls": [call]})
        conversation.add_tool_result(f"c{turn}", {"ok": True})
    assert conversation.trim("[trimmed]")
    roles = [m["role"] for m in conversation.messages]
    assert roles[:3] == ["system", "user", "user"]
    assert conversation.messages[1]["content"] == "[trimmed]"
    assert conversation.messages[-3]["content"].startswith("observation 19")
    kept = sum(message_tokens(m) for m in conversation.messages[2:])
    assert 0 < kept <= 300
    assert conversation.tokens == sum(message_tokens(m) for m in conversation.messages)
