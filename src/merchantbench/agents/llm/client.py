"""One model call through the official `openai` client, with our own retries.

The client's built-in retries are off (`max_retries=0`) so that every retry is counted and
recorded. Retried: 429 (honouring `retry-after`), 5xx, timeouts, dropped connections and
bodies that are not a chat completion (truncated JSON, no choices). Not retried: 401, 403 and
404, which no amount of waiting fixes (`ModelConfigError`), and other 4xx, which fail the call.
"""

from __future__ import annotations

import asyncio
import functools
import random
import time
from dataclasses import dataclass, field
from typing import Any

from merchantbench.agents.llm.conversation import ToolCall
from merchantbench.agents.llm.models import ModelConfig, ModelConfigError
from merchantbench.agents.llm.usage import CallRecord
from merchantbench.record.words import words_of_message

_FATAL_STATUS = frozenset({401, 403, 404})
_MAX_RETRY_AFTER = 120.0  # a server asking for more is treated as down


class ModelCallFailed(Exception):
    """A call that failed for good (after its retries, or on a 4xx that retrying cannot fix).

    Attributes:
        retries: Attempts retried before giving up.
        latency_s: Seconds spent on all attempts.
    """

    def __init__(self, reason: str, retries: int = 0, latency_s: float = 0.0) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retries = retries
        self.latency_s = latency_s

    def record(self, seq: int, window: int, model: str) -> CallRecord:
        """The failed call as `model_calls.jsonl` records it."""
        return CallRecord(
            seq, window, model, retries=self.retries, latency_s=self.latency_s, error=self.reason
        )


@dataclass
class Completion:
    """A model's answer, reduced to what the harness needs.

    Attributes:
        message: The assistant message to append to the conversation (content, tool calls).
        finish_reason: As the server reported it.
        input_tokens: Prompt tokens, cached ones included (0 if the server reports none).
        cached_tokens: Prompt tokens served from cache.
        output_tokens: Completion tokens.
        retries: Attempts retried before this answer.
        latency_s: Seconds from the first attempt to this answer.
        reasoning: The reasoning text, where the provider returns it (never sent back).
    """

    message: dict[str, Any]
    finish_reason: str | None
    input_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    retries: int = 0
    latency_s: float = 0.0
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    reasoning: str | None = None

    def record(
        self, seq: int, window: int, config: ModelConfig, parsed: list[ToolCall]
    ) -> CallRecord:
        """This answer as `model_calls.jsonl` records it, priced at the model's rates."""
        return CallRecord(
            seq=seq,
            window=window,
            model=config.model,
            input_tokens=self.input_tokens,
            cached_tokens=self.cached_tokens,
            output_tokens=self.output_tokens,
            latency_s=self.latency_s,
            cost=config.cost(self.input_tokens, self.cached_tokens, self.output_tokens),
            finish_reason=self.finish_reason,
            retries=self.retries,
            tool_calls=len(parsed),
            parse_errors=sum(call.error is not None for call in parsed),
            words=words_of_message({**self.message, "reasoning": self.reasoning}),
        )


class _Retryable(Exception):
    def __init__(self, reason: str, wait: float | None = None) -> None:
        super().__init__(reason)
        self.wait = wait


@dataclass(frozen=True)
class ClientOptions:
    """How model calls are made.

    Attributes:
        max_retries: Retries of one call before it fails.
        retry_base_seconds: First backoff; each retry doubles it, up to `retry_cap_seconds`.
        retry_cap_seconds: Longest backoff between two attempts.
        request_timeout: Seconds before one HTTP attempt counts as timed out.
    """

    max_retries: int = 6
    retry_base_seconds: float = 1.0
    retry_cap_seconds: float = 60.0
    request_timeout: float = 600.0


@functools.cache
def _shared_http_options() -> dict[str, Any]:
    """What every run's HTTP client shares: the TLS context. Loading the certificate store
    costs ~70 ms of CPU, once per client otherwise (a sweep makes one client per run). The
    context is the one the client's HTTP library builds by default, made once per process."""
    try:
        import httpx2  # the openai client's HTTP library
    except ImportError:
        return {}
    return {"verify": httpx2.create_ssl_context()}


class ModelClient:
    """Chat completions against one endpoint, with exponential backoff and jitter.

    Args:
        config: The model and endpoint; its key is read from the environment here.
        options: Retries and timeout.
    """

    def __init__(self, config: ModelConfig, options: ClientOptions | None = None) -> None:
        self.config = config
        self.options = options or ClientOptions()
        # Imported here: `openai` takes seconds to import, and every CLI command (an idle run,
        # `--help`) loads the agent table, which imports this module.
        import openai

        self._openai = openai.AsyncOpenAI(
            api_key=config.api_key(),
            base_url=config.base_url,
            max_retries=0,
            timeout=self.options.request_timeout,
            http_client=openai.DefaultAsyncHttpxClient(**_shared_http_options()),
        )
        self._jitter = random.Random()  # timing only: never touches the simulation

    async def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> Completion:
        """Ask for the next assistant message; retries transient failures.

        Raises:
            ModelCallFailed: Retries exhausted, or a 4xx other than 401/403/404.
            ModelConfigError: 401, 403 or 404: the key, model or URL is wrong.
        """
        import openai

        started = time.monotonic()
        last = self.options.max_retries
        for attempt in range(last + 1):
            try:
                completion = await self._attempt(messages, tools)
            except _Retryable as exc:
                if attempt == last:
                    raise ModelCallFailed(str(exc), attempt, time.monotonic() - started) from None
                await asyncio.sleep(self._backoff(attempt, exc.wait))
                continue
            except openai.APIStatusError as exc:
                reason = f"HTTP {exc.status_code}: {_short(exc.message)}"
                if exc.status_code in _FATAL_STATUS:
                    raise ModelConfigError(f"{self.config.base_url}: {reason}") from None
                raise ModelCallFailed(reason, attempt, time.monotonic() - started) from None
            completion.retries = attempt
            completion.latency_s = time.monotonic() - started
            return completion
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def close(self) -> None:
        await self._openai.close()

    def _backoff(self, attempt: int, server_wait: float | None) -> float:
        options = self.options
        ceiling = min(options.retry_cap_seconds, options.retry_base_seconds * 2**attempt)
        # Equal jitter: at least half the backoff, so retries of many runs spread out.
        delay = ceiling / 2 + self._jitter.uniform(0, ceiling / 2)
        return max(delay, server_wait or 0.0)

    async def _attempt(self, messages, tools) -> Completion:
        import openai
        from openai.types.chat import ChatCompletion

        body: dict[str, Any] = {**self.config.params, "model": self.config.model}
        body["messages"] = messages
        if tools:
            body["tools"] = tools
        try:
            # The client's documented `post` for "undocumented params": `chat.completions.create`
            # would re-walk every message and tool schema against its typed parameters on each
            # call (tens of ms for a long conversation); ours are already plain JSON.
            response = await self._openai.post(
                "/chat/completions", cast_to=ChatCompletion, body=body
            )
        except openai.RateLimitError as exc:
            raise _Retryable("HTTP 429: rate limited", _retry_after(exc.response)) from None
        except openai.APIStatusError as exc:
            if exc.status_code >= 500 or exc.status_code in (408, 409):
                raise _Retryable(f"HTTP {exc.status_code}: {_short(exc.message)}") from None
            raise
        except openai.APITimeoutError:
            raise _Retryable("timeout") from None
        except openai.APIConnectionError as exc:
            raise _Retryable(f"connection: {_short(str(exc.__cause__ or exc))}") from None
        except (ValueError, openai.APIResponseValidationError) as exc:
            raise _Retryable(f"malformed response: {_short(str(exc))}") from None
        return _completion(response)


def _completion(response: Any) -> Completion:
    choices = getattr(response, "choices", None)
    if not choices:
        raise _Retryable("malformed response: no choices")
    choice = choices[0]
    message = choice.message
    tool_calls = [
        {
            "id": call.id,
            "type": "function",
            "function": {"name": call.function.name, "arguments": call.function.arguments},
        }
        for call in message.tool_calls or []
        if getattr(call, "function", None) is not None
    ]
    assistant: dict[str, Any] = {"role": "assistant", "content": message.content}
    if tool_calls:
        assistant["tool_calls"] = tool_calls
    usage = response.usage
    details = getattr(usage, "prompt_tokens_details", None) if usage else None
    return Completion(
        message=assistant,
        finish_reason=choice.finish_reason,
        input_tokens=(usage.prompt_tokens or 0) if usage else 0,
        cached_tokens=(getattr(details, "cached_tokens", None) or 0) if details else 0,
        output_tokens=(usage.completion_tokens or 0) if usage else 0,
        tool_calls=tool_calls,
        reasoning=_reasoning(message),
    )


def _reasoning(message: Any) -> str | None:
    """The reasoning text a provider put beside the answer (`reasoning_content` as DeepSeek,
    Qwen and vLLM name it, or `reasoning` as OpenRouter and Ollama do), if any."""
    for name in ("reasoning_content", "reasoning"):
        text = getattr(message, name, None)
        if isinstance(text, str) and text:
            return text
    return None


def _retry_after(response: Any) -> float | None:
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return min(float(value), _MAX_RETRY_AFTER) if value is not None else None
    except ValueError:
        return None  # an HTTP date: fall back to our own backoff


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
