"""The Inspect task with `compaction=trim`, end to end and offline: Inspect's compaction trims the
store's conversation when it passes the threshold (the Inspect log has its compaction events,
the model saw fewer messages than the conversation held), and the run completes all its windows;
a threshold that compaction cannot get under stops the model, and the store idles to the end.

Inspect counts tokens for compaction with the model API's `count_text_tokens`, by default
tiktoken's `o200k_base`, which tiktoken downloads on first use (no network here, and nothing on
the package index ships that file). So the model is Inspect's own OpenAI-compatible provider,
pointed at our scripted server as in tests/test_inspect_task.py, registered under another name
with one override, Inspect's documented extension point for model-specific tokenizers: it
counts a token per three characters (more than tiktoken would, as Inspect itself errs). Every
other part is the production path: our task and solver, `CompactionTrim`, Inspect's compaction
handler, its log.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from requires import need

need("inspect", module=True)

from inspect_ai import eval as inspect_eval  # noqa: E402
from inspect_ai.log import EvalLog, read_eval_log  # noqa: E402
from inspect_ai.model import modelapi  # noqa: E402
from inspect_ai.model._providers.openai_compatible import OpenAICompatibleAPI  # noqa: E402

from merchantbench.agents.llm.scripted_policy import POLICIES  # noqa: E402
from merchantbench.agents.llm.scripted_server import ScriptedServer  # noqa: E402
from merchantbench.inspect_eval.task import merchantbench  # noqa: E402

PROVIDER = "offline-counting"
MODEL = f"{PROVIDER}/scripted/policy"  # service "scripted": SCRIPTED_BASE_URL, SCRIPTED_API_KEY
CHARS_PER_TOKEN = 4  # as the scripted server counts the usage it reports (the baseline)
THRESHOLD = 10_000  # tokens: the tools are ~5.4k of them, a window adds ~0.2-1.5k
DAYS = 4  # eight windows


@modelapi(name=PROVIDER)
def offline_counting() -> type[OpenAICompatibleAPI]:
    class OfflineCounting(OpenAICompatibleAPI):
        """Inspect's OpenAI-compatible provider, counting tokens without tiktoken's download."""

        async def count_text_tokens(self, text: str) -> int:
            return max(1, len(text) // CHARS_PER_TOKEN)

    return OfflineCounting


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedServer]:
    with ScriptedServer(POLICIES["store"]) as server:
        monkeypatch.setenv("SCRIPTED_BASE_URL", server.base_url)
        monkeypatch.setenv("SCRIPTED_API_KEY", "sk-compaction-test")
        yield server


def evaluate(tmp_path: Path, server: ScriptedServer, **params: Any) -> EvalLog:
    logs = inspect_eval(
        merchantbench(scenario="smoke", seed=1, overrides=[f"clock.days={DAYS}"], **params),
        model=MODEL,
        model_base_url=server.base_url,
        model_args={"strict_tools": False},  # as in tests/test_inspect_task.py
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert len(logs) == 1 and logs[0].status == "success", logs[0].error
    return read_eval_log(logs[0].location)


def compactions(log: EvalLog) -> list[Any]:
    assert log.samples is not None and len(log.samples) == 1
    return [e for e in log.samples[0].events if e.event == "compaction"]


def run_record(log: EvalLog) -> dict[str, Any]:
    run_dir = Path(log.samples[0].scores["net_assets"].metadata["run_dir"])  # type: ignore[index]
    return json.loads((run_dir / "run.json").read_text())


def test_trim_compaction_happens_and_the_run_completes(tmp_path: Path, endpoint) -> None:
    log = evaluate(tmp_path, endpoint, compaction="trim", compaction_threshold=THRESHOLD)
    events = compactions(log)
    assert events, "no compaction in the Inspect log"
    for event in events:
        assert event.type == "trim" and event.source == "inspect"
        assert event.metadata["strategy"] == "CompactionTrim"
        assert event.tokens_before > THRESHOLD >= event.tokens_after
        assert event.metadata["messages_after"] < event.metadata["messages_before"]
    run = run_record(log)
    assert run["ended"] == "completed" and run["windows"] == 2 * DAYS
    assert run["agent"]["settings"]["compaction"] == "trim"
    assert run["llm_usage"]["compactions"] == len(events)  # compactions, not compacted calls
    assert run["llm_usage"]["forced_windows"] == 0  # the model closed every window itself
    # What the model was sent: after the first compaction, fewer messages than the
    # conversation holds, yet always the system brief first and the open window's observation.
    sizes = [len(request["messages"]) for request in endpoint.requests]
    assert max(sizes) < len(log.samples[0].messages)  # type: ignore[index]
    assert all(request["messages"][0]["role"] == "system" for request in endpoint.requests)


def test_without_compaction_every_request_carries_the_whole_conversation(
    tmp_path: Path, endpoint
) -> None:
    log = evaluate(tmp_path, endpoint)
    assert compactions(log) == []
    run = run_record(log)
    assert run["ended"] == "completed" and run["llm_usage"]["compactions"] == 0
    sizes = [len(request["messages"]) for request in endpoint.requests]
    assert sizes == sorted(sizes) and sizes[-1] > sizes[0]  # it only grows


def test_a_threshold_compaction_cannot_reach_stops_the_model_not_the_run(
    tmp_path: Path, endpoint
) -> None:
    # Below the tools' own ~5.4k tokens: no trimming of messages can get under it.
    log = evaluate(tmp_path, endpoint, compaction="trim", compaction_threshold=6_000)
    run = run_record(log)
    assert run["ended"] == "stopped" and run["windows"] == 2 * DAYS
    assert run["stop_reason"].startswith(
        "compaction could not shrink the conversation: Compaction insufficient"
    )
    assert run["stop_reason"].endswith("(see the compaction task parameter)")
    assert log.samples[0].scores["net_assets"].value == run["final_accounts"]["net_assets"]  # type: ignore[index]
