"""Checks of a record that need no key: what the model files and `run.json` say must agree
with each other and with the trace (docs/verify.md, "Consistency").

`consistency_difference(source)` returns the first `Divergence`, or None:

- `model_calls.jsonl`: whole lines, `seq` 1, 2, … in order, windows never going back and
  inside the run's windows; a model call in every window the agent made calls in (a window
  whose only calls were forced needs none).
- `run.json`'s `llm_usage` is the sum of `model_calls.jsonl` (calls, failed calls, input,
  cached and output tokens, tokens, retries, parse errors, cost); a run with model calls and
  no usage, or usage with calls and no model-call log, differs.
- Each call's cost is recomputed from its tokens and the prices `run.json` records
  (`prices_per_million`); a price not stated makes the cost unknown (None), never 0.
- `model_words.jsonl.gz`: one line per model call (same `seq` and `window`); every call of one
  of the run's tools in the model's words that could be run (arguments that decode) is the
  trace's call at that place (same window, tool and arguments), in order, until the window
  closed, and the trace holds no environment call of the agent the words do not.

What it does not cover: a window where the model called a harness's own tool (Hermes' memory
or code, whose code may call the store's tools itself) is held only to having a model call;
tokens and prices themselves (a consistent lie, every file edited to
agree, passes: only a host's signature, `record/attest.py`, says who stated them), and usage
the agent reported over HTTP (`reported_by: agent`), which no log of this host backs.
"""

from __future__ import annotations

import gzip
import math
import zlib
from collections.abc import Callable, Iterator
from typing import Any

from merchantbench.record.safe_read import STREAM_CAP, open_record_file
from merchantbench.record.schema import MODEL_CALLS_FILE, MODEL_WORDS_FILE, RUN_FILE
from merchantbench.replay.divergence import Divergence
from merchantbench.replay.source import (
    MAX_LINE,
    RecordSource,
    ReplayError,
    json_object,
    open_text,
)
from merchantbench.tools.agent_input import HostileInput, decode_arguments

SUMMED = ("calls", "failed_calls", "input_tokens", "cached_tokens", "output_tokens", "tokens",
          "retries", "parse_errors")  # fmt: skip
RAW = "_raw"


def _model_calls(source: RecordSource) -> list[dict[str, Any]] | None:
    path = source.run_dir / MODEL_CALLS_FILE
    if not path.exists() and not path.is_symlink():
        return None
    lines = []
    try:
        with open_text(source.run_dir, MODEL_CALLS_FILE) as text:
            for number, raw in enumerate(iter(lambda: text.readline(MAX_LINE), ""), start=1):
                if not raw.endswith("\n"):
                    raise ReplayError(f"{path} line {number} is torn or too long")
                lines.append(json_object(path, number, raw, "a model call"))
    except UnicodeDecodeError:
        raise ReplayError(f"{path} is not UTF-8 text: the record is damaged") from None
    except OSError as exc:
        raise ReplayError(f"{path}: cannot be read ({exc})") from None
    return lines


def _words(source: RecordSource) -> Iterator[dict[str, Any]]:
    """The words file's lines, decompressed one gzip member at a time (bounded memory)."""
    path = source.run_dir / MODEL_WORDS_FILE
    try:
        with (
            open_record_file(source.run_dir, MODEL_WORDS_FILE, STREAM_CAP) as raw,
            gzip.GzipFile(fileobj=raw) as lines,
        ):
            for number, line in enumerate(iter(lambda: lines.readline(MAX_LINE), b""), 1):
                if not line.endswith(b"\n"):
                    raise ReplayError(f"{path} line {number} is torn or too long")
                yield json_object(path, number, line, "the model's words")
    except (OSError, EOFError, zlib.error) as exc:
        raise ReplayError(f"{path}: cannot be read ({exc})") from None


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _differ(recorded: Any, computed: Any) -> bool:
    if recorded is None or computed is None:
        return recorded is not computed
    if not (_number(recorded) and _number(computed)):
        return True
    return not math.isclose(float(recorded), float(computed), rel_tol=1e-9, abs_tol=1e-6)


def _call_cost(call: dict[str, Any], prices: dict[str, Any]) -> float | None:
    price_in, price_cached, price_out = (prices.get(k) for k in ("input", "cached_input", "output"))
    if not (_number(price_in) and _number(price_cached) and _number(price_out)):
        return None
    assert price_in is not None and price_cached is not None and price_out is not None
    uncached = max(int(call.get("input_tokens") or 0) - int(call.get("cached_tokens") or 0), 0)
    cached, out = int(call.get("cached_tokens") or 0), int(call.get("output_tokens") or 0)
    return (uncached * price_in + cached * price_cached + out * price_out) / 1_000_000


def _calls_difference(source: RecordSource, calls: list[dict[str, Any]]) -> Divergence | None:
    windows = source.manifest.windows or 0
    prices = source.manifest.agent.settings.get("prices_per_million")
    prices = prices if isinstance(prices, dict) else {}
    last = 0
    for number, call in enumerate(calls, start=1):
        where = f"line {number}"
        for key in ("seq", "window", "input_tokens", "cached_tokens", "output_tokens"):
            if not isinstance(call.get(key), int) or isinstance(call.get(key), bool):
                return _bad(MODEL_CALLS_FILE, f"{where}.{key}", call.get(key), "an integer")
            if call[key] < 0:
                return _bad(MODEL_CALLS_FILE, f"{where}.{key}", call[key], ">= 0")
        if call["seq"] != number:
            return _bad(MODEL_CALLS_FILE, f"{where}.seq", call["seq"], number)
        if not last <= call["window"] < max(windows, 1):
            return _bad(MODEL_CALLS_FILE, f"{where}.window", call["window"],
                        f"a window from {last} to {windows - 1}")  # fmt: skip
        last = call["window"]
        if call.get("error") is None and _differ(call.get("cost"), _call_cost(call, prices)):
            return Divergence(MODEL_CALLS_FILE, f"{where}.cost", call.get("cost"),
                              _call_cost(call, prices), against="recomputed from its tokens "
                              "and the recorded prices:")  # fmt: skip
    return None


def _usage_difference(
    source: RecordSource, calls: list[dict[str, Any]] | None
) -> Divergence | None:
    usage = source.manifest.llm_usage
    if isinstance(usage, dict) and usage.get("reported_by") == "agent":
        return None  # reported over HTTP: nothing of this host to sum (module docstring)
    if calls is None:
        if isinstance(usage, dict) and usage.get("calls"):
            return Divergence(
                RUN_FILE,
                "llm_usage.calls",
                usage.get("calls"),
                f"0 (no {MODEL_CALLS_FILE})",
                against="the model calls:",
            )
        return None
    if not isinstance(usage, dict):
        return Divergence(
            RUN_FILE,
            "llm_usage",
            usage,
            f"the sums of {len(calls)} model calls",
            against="expected",
        )
    totals: dict[str, Any] = dict.fromkeys(SUMMED, 0)
    cost: float | None = 0.0
    for call in calls:
        totals["calls"] += 1
        totals["failed_calls"] += call.get("error") is not None
        for key in ("input_tokens", "cached_tokens", "output_tokens", "retries", "parse_errors"):
            value = call.get(key) or 0
            totals[key] += value if _number(value) else 0
        line_cost = call.get("cost")
        cost = None if cost is None or not _number(line_cost) else cost + float(line_cost or 0)
    totals["tokens"] = totals["input_tokens"] + totals["output_tokens"]
    totals["cost"] = None if cost is None else round(cost, 6)
    for key, value in totals.items():
        if _differ(usage.get(key), value):
            return Divergence(
                RUN_FILE,
                f"llm_usage.{key}",
                usage.get(key),
                value,
                against=f"the sum of {MODEL_CALLS_FILE}:",
            )
    return None


def _expected_calls(words: dict[str, Any]) -> list[tuple[str, Any]]:
    """The calls of one model answer that reach the trace: a known tool whose arguments
    decode (the others are answered a parsing error and never run)."""
    expected = []
    listed = words.get("tool_calls")
    for call in listed if isinstance(listed, list) else ():
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            continue
        try:
            args: Any = decode_arguments(call.get("arguments") or "")
        except HostileInput:
            continue
        expected.append((call["name"], args))
    return expected


def _words_difference(
    source: RecordSource, calls: list[dict[str, Any]], known: frozenset[str]
) -> Divergence | None:
    """The model's words against the trace (the module docstring's last rule)."""
    path = source.run_dir / MODEL_WORDS_FILE
    has_words = path.exists() or path.is_symlink()
    by_window: dict[int, list[tuple[str, Any]]] = {}
    spoken: set[int] = set()
    lenient: set[int] = set()
    if has_words:
        count = 0
        for number, words in enumerate(_words(source), start=1):
            count = number
            call = calls[number - 1] if number <= len(calls) else {}
            if (words.get("seq"), words.get("window")) != (call.get("seq"), call.get("window")):
                return _bad(MODEL_WORDS_FILE, f"line {number}",
                            {"seq": words.get("seq"), "window": words.get("window")},
                            {"seq": call.get("seq"), "window": call.get("window")})  # fmt: skip
            planned = _expected_calls(words)
            if any(name not in known for name, _ in planned):
                lenient.add(call["window"])  # a harness's own tool: code may call tools too
            by_window.setdefault(call["window"], []).extend(c for c in planned if c[0] in known)
        if count != len(calls):
            return _bad(MODEL_WORDS_FILE, "lines", count, len(calls))
    for call in calls:
        spoken.add(call["window"])
    return _trace_against_words(source, by_window if has_words else None, spoken, lenient)


def _trace_against_words(
    source: RecordSource,
    by_window: dict[int, list[tuple[str, Any]]] | None,
    spoken: set[int],
    lenient: set[int],
) -> Divergence | None:
    pending: list[tuple[str, Any]] = []
    window, closed = -1, False
    for line in source.trace():
        entry = line.entry
        if entry.window != window:
            window, closed = entry.window, False
            pending = list((by_window or {}).get(window, []))
        if entry.forced:
            continue
        where = f"line {line.number}"
        if window not in spoken:
            return _spoken(where, entry.tool, f"no model call in window {window}")
        if by_window is None or window in lenient or entry.origin == "framework":
            continue
        if closed or not pending:
            return _spoken(where, {"tool": entry.tool, "args": entry.args}, "no call here")
        tool, args = pending.pop(0)
        recorded_args = entry.args
        if tool != entry.tool or (RAW not in recorded_args and recorded_args != args):
            return _spoken(
                where, {"tool": entry.tool, "args": recorded_args}, {"tool": tool, "args": args}
            )
        closed = entry.tool == "end_of_step" and entry.ok
    return None


TRACE_FILE_NAME = "trace.jsonl"


def _bad(file: str, field: str, recorded: Any, expected: Any) -> Divergence:
    return Divergence(file, field, recorded, expected, against="expected")


def _spoken(where: str, recorded: Any, words: Any) -> Divergence:
    return Divergence(TRACE_FILE_NAME, where, recorded, words, against="the model's words say")


def consistency_difference(
    source: RecordSource, known_tools: Callable[[], frozenset[str]]
) -> Divergence | None:
    """The first disagreement between the model files, `run.json` and the trace (None: they
    agree, or the run called no model). `known_tools` is asked only when there are words to
    compare."""
    calls = _model_calls(source)
    found = _usage_difference(source, calls)
    if found is not None or calls is None:
        return found
    found = _calls_difference(source, calls)
    if found is not None:
        return found
    if source.manifest.driver is not None:
        return None  # a model outside this host: its words are not the trace's source
    return _words_difference(source, calls, known_tools())
