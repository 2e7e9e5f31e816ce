"""Which model to call and where: command-line settings or a named entry of a models file.

A models file is TOML (`.toml`) or YAML (`.yaml`/`.yml`) with one table per entry:

    [gpt-mini]
    base_url = "https://api.openai.com/v1"
    model = "gpt-5-mini"
    api_key_env = "OPENAI_API_KEY"
    price_input = 0.25          # per million input tokens
    price_cached_input = 0.025  # per million cached input tokens (default: price_input)
    price_output = 2.0          # per million output tokens
    params = { reasoning_effort = "medium" }
    max_concurrency = 8         # sweeps: at most 8 runs of this entry call it at once

Costs are never silently missing: a call's cost is `None` ("unknown") unless both
`price_input` and `price_output` are stated (0 is a price: say it for a free local server), and
cached input tokens cost `price_input` unless `price_cached_input` says otherwise. A cost budget
(`max_cost`) is refused at start when the cost would be unknown (`require_prices`).

Keys are read from the environment when the client is built and are never stored in a
`ModelConfig`, so nothing written from one (run.json, checkpoints, logs) can leak them.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import yaml

LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0"})
DUMMY_KEY = "no-key-needed"  # local servers (vLLM, SGLang, Ollama) accept any key
_ENTRY_FIELDS = frozenset(
    {"base_url", "model", "api_key_env", "price_input", "price_cached_input", "price_output"}
)
_SCHEDULING_FIELDS = frozenset({"max_concurrency"})  # read by sweeps, not sent to the model


class ModelConfigError(ValueError):
    """A model setting that cannot be used; the message says why in one line."""


@dataclass(frozen=True)
class ModelConfig:
    """Where and how to call one model.

    Attributes:
        model: Model id sent in each request.
        base_url: OpenAI-compatible endpoint, ending in `/v1` for most servers.
        api_key_env: Name of the environment variable holding the key, if any.
        price_input: Price per million uncached input tokens (None: not stated).
        price_cached_input: Price per million cached input tokens (None: `price_input`).
        price_output: Price per million output tokens (None: not stated).
        params: Extra request parameters sent in the JSON body of every request.
        entry: Name of the models-file entry this came from, if any.
    """

    model: str
    base_url: str
    api_key_env: str | None = None
    price_input: float | None = None
    price_cached_input: float | None = None
    price_output: float | None = None
    params: dict[str, Any] = field(default_factory=dict)
    entry: str | None = None

    @property
    def is_local(self) -> bool:
        return (urlparse(self.base_url).hostname or "") in LOCAL_HOSTS

    @property
    def cached_input_price(self) -> float | None:
        """What a cached input token is billed: its own price if stated, else the input price."""
        return self.price_input if self.price_cached_input is None else self.price_cached_input

    @property
    def unpriced(self) -> list[str]:
        """The billed prices not stated (the cost is unknown while any is missing)."""
        prices = {"price_input": self.price_input, "price_output": self.price_output}
        return [name for name, price in prices.items() if price is None]

    def cost(self, input_tokens: int, cached_tokens: int, output_tokens: int) -> float | None:
        """Cost of one call (`input_tokens` includes the cached ones, as the API reports), or
        None when a billed price is not stated: unknown, never 0."""
        cached_price = self.cached_input_price
        if self.price_input is None or self.price_output is None or cached_price is None:
            return None
        uncached = max(input_tokens - cached_tokens, 0)
        return (
            uncached * self.price_input + cached_tokens * cached_price
            + output_tokens * self.price_output
        ) / 1_000_000  # fmt: skip

    def require_prices(self, why: str) -> None:
        """Refuse a use that needs the cost (a cost budget) when a billed price is missing."""
        if self.unpriced:
            where = f"entry {self.entry!r}" if self.entry else f"model {self.model!r}"
            raise ModelConfigError(
                f"{why} needs the model's prices, but {where} states no "
                f"{' or '.join(self.unpriced)}: the cost would be unknown"
            )

    def api_key(self) -> str:
        """The key from the environment; a dummy for local servers; an error otherwise."""
        if self.api_key_env:
            key = os.environ.get(self.api_key_env)
            if key:
                return key
        if self.is_local:
            return DUMMY_KEY
        if self.api_key_env:
            raise ModelConfigError(f"environment variable {self.api_key_env} is not set")
        raise ModelConfigError(
            f"{self.base_url} is not a local server: name the key's variable with --api-key-env"
        )

    def public_settings(self) -> dict[str, Any]:
        """What the run record says about the model (the variable's name, never the key)."""
        return {
            "model": self.model,
            "base_url": self.base_url,
            "api_key_env": self.api_key_env,
            "model_entry": self.entry,
            "params": dict(self.params),
            "prices_per_million": {
                "input": self.price_input,
                "cached_input": self.cached_input_price,
                "output": self.price_output,
            },
        }


def load_models_file(path: str | Path) -> dict[str, dict[str, Any]]:
    """All entries of a TOML or YAML models file, by name."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ModelConfigError(f"cannot read models file {path}: {exc.strerror}") from None
    try:
        if path.suffix == ".toml":
            entries = tomllib.loads(text)
        elif path.suffix in (".yaml", ".yml"):
            entries = yaml.safe_load(text) or {}
        else:
            raise ModelConfigError(f"models file {path} must end in .toml, .yaml or .yml")
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        raise ModelConfigError(f"models file {path} is not valid: {exc}") from None
    if not isinstance(entries, dict) or not all(isinstance(v, dict) for v in entries.values()):
        raise ModelConfigError(f"models file {path} must hold one table per model entry")
    return entries


def _entry_config(path: str | Path, name: str) -> dict[str, Any]:
    entries = load_models_file(path)
    if name not in entries:
        known = ", ".join(sorted(entries)) or "none"
        raise ModelConfigError(f"no entry {name!r} in {path}; entries: {known}")
    entry = dict(entries[name])
    for key in _SCHEDULING_FIELDS:
        entry.pop(key, None)
    unknown = set(entry) - _ENTRY_FIELDS - {"params"}
    if unknown:
        raise ModelConfigError(f"entry {name!r} in {path}: unknown keys {sorted(unknown)}")
    params = entry.get("params", {})
    if not isinstance(params, dict):
        raise ModelConfigError(f"entry {name!r} in {path}: params must be a table")
    return entry


def entry_max_concurrency(path: str | Path, name: str) -> int | None:
    """The `max_concurrency` of a models-file entry (a positive integer), if it sets one."""
    entries = load_models_file(path)
    if name not in entries:
        known = ", ".join(sorted(entries)) or "none"
        raise ModelConfigError(f"no entry {name!r} in {path}; entries: {known}")
    value = entries[name].get("max_concurrency")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ModelConfigError(f"entry {name!r} in {path}: max_concurrency must be an integer ≥ 1")
    return value


def resolve_model(
    model: str | None,
    base_url: str | None,
    api_key_env: str | None,
    models_file: str | None = None,
    model_entry: str | None = None,
    params: dict[str, Any] | None = None,
) -> ModelConfig:
    """A `ModelConfig` from a models-file entry, overridden by any explicit setting."""
    settings: dict[str, Any] = {}
    if models_file or model_entry:
        if not (models_file and model_entry):
            raise ModelConfigError("--models-file and --model-entry go together")
        settings = _entry_config(models_file, model_entry)
        settings["entry"] = model_entry
    explicit = {"model": model, "base_url": base_url, "api_key_env": api_key_env}
    settings.update({k: v for k, v in explicit.items() if v is not None})
    settings["params"] = {**settings.get("params", {}), **(params or {})}
    for required in ("model", "base_url"):
        if not settings.get(required):
            raise ModelConfigError(
                f"no {required}: give --{required.replace('_', '-')} or an entry"
            )
    check_base_url(str(settings["base_url"]))
    for price in ("price_input", "price_cached_input", "price_output"):
        value = settings.get(price)
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ModelConfigError(f"{price} must be a number ≥ 0, not {value!r}")
            settings[price] = float(value)
    return ModelConfig(**settings)


def check_base_url(url: str) -> None:
    """Refuse an endpoint that cannot be an HTTP(S) URL, before anything is created."""
    try:
        parts = urlparse(url)
        parts.port  # noqa: B018  (raises for a port that is not a number in range)
    except ValueError as exc:
        raise ModelConfigError(f"base_url {url!r} is not a valid URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ModelConfigError(f"base_url {url!r} must be an http:// or https:// URL with a host")
