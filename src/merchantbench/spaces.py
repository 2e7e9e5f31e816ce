"""The Gymnasium spaces of one store's tool calls and observations: every merchant's in the one
env core (`merchantbench.market_env`), whose market of one is the Gymnasium env
(`merchantbench.gym`) and of several the PettingZoo env (`merchantbench.pettingzoo`).

- **action** `Dict(tool=Discrete(number of tools), args=Text)`: `tool` indexes the tool names in
  the order of `surface.tool_schemas()`; `args` is a JSON object string (`""` for none).
- **observation** `Dict(text=Text, store=Dict)`: the open window's observation text, and the
  store status (`surface.status()`) field by field (`store_state_space`, `store_state`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils.shared_memory import read_from_shared_memory

from merchantbench.scenario import Scenario
from merchantbench.tools.status import ACCOUNTS, StoreStatus

__all__ = [
    "OBSERVATION_MAX_CHARS",
    "TEXT_CHARSET",
    "StoreText",
    "action_space",
    "observation_space",
    "store_state",
    "store_state_space",
    "tool_name",
]

OBSERVATION_MAX_CHARS = 65_536
# Every character of the Basic Multilingual Plane but surrogates and control characters other
# than tab and newline: observation text and JSON arguments (Chinese included) fit in it.
TEXT_CHARSET = "\t\n" + "".join(
    chr(c) for c in range(0x20, 0x10000) if not (0x7F <= c < 0xA0 or 0xD800 <= c < 0xE000)
)


class StoreText(spaces.Text):
    """Gymnasium's `Text` with a fast default `sample()` and text that `AsyncVectorEnv` with
    shared memory reads correctly.

    - `sample()` without a mask draws the same thing as `Text.sample()` (a length uniform in
      [min_length, max_length], then characters uniform over the charset), from a character
      array made once: `Text.sample()` turns the 63,000-character charset into an array on
      every call (1.8 samples a second at the default memory-document size).
    - Gymnasium reads a `Text` out of shared memory once, when the vector env is made, as fixed
      strings (all padding: `max_length` tab characters), while arrays are live views. Here the
      read gives `SharedTexts`, which decodes the buffer when read (a live view, as arrays
      are) and copies to a tuple of strings (`copy=True`, the default, deep-copies it).
    """

    def __init__(self, max_length: int, *, min_length: int = 0, charset: str = "") -> None:
        super().__init__(max_length, min_length=min_length, charset=charset)
        self.codepoints = np.array([ord(c) for c in self.character_list], dtype="<u4")

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        if mask is not None or probability is not None:
            return super().sample(mask=mask, probability=probability)
        length = int(self.np_random.integers(self.min_length, self.max_length + 1))
        picks = self.np_random.integers(len(self.codepoints), size=length)
        return self._text(picks)

    def decode(self, codes: np.ndarray) -> str:
        """The string of a flattened text (character indexes; padding is out of range)."""
        return self._text(codes[codes < len(self.codepoints)])

    def _text(self, indexes: np.ndarray) -> str:
        return self.codepoints[indexes].tobytes().decode("utf-32-le")


class SharedTexts(Sequence[str]):
    """The texts of a vector env's shared memory, decoded when read (see `StoreText`)."""

    def __init__(self, space: StoreText, codes: np.ndarray) -> None:
        self.space, self.codes = space, codes

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return tuple(self)[index]
        return self.space.decode(self.codes[index])

    def __iter__(self) -> Iterator[str]:
        return (self.space.decode(row) for row in self.codes)

    def __deepcopy__(self, memo: dict[int, Any]) -> tuple[str, ...]:
        return tuple(self)

    def __eq__(self, other: object) -> bool:
        return tuple(self) == (tuple(other) if isinstance(other, Sequence) else other)

    __hash__ = None  # type: ignore[assignment]


@read_from_shared_memory.register(StoreText)
def _read_store_text(space: StoreText, shared_memory: Any, n: int = 1) -> SharedTexts:
    codes = np.frombuffer(shared_memory.get_obj(), dtype=np.int32).reshape((n, space.max_length))
    return SharedTexts(space, codes)


COUNT_BOUND = 2**31 - 1
_RMB_BOUND = 1e12  # far beyond any store's money, so the bounds never bind


def _amount(low: float = -_RMB_BOUND) -> spaces.Box:
    return spaces.Box(low=low, high=_RMB_BOUND, shape=(1,), dtype=np.float64)


def _count() -> spaces.Box:
    return spaces.Box(low=0, high=COUNT_BOUND, shape=(1,), dtype=np.int64)


# obs["store"], field by field: the store status's fields (same names) as Gymnasium values.
_REALS = (*ACCOUNTS, "rating", "rating_multiplier")  # shape-(1,) float64 arrays
_COUNTS = ("open_orders", "orders_placed")  # shape-(1,) int64 arrays
_DISCRETE = ("stars", "active_listings", "calls_left_in_window", "window")  # int64 scalars


def store_state_space(scenario: Scenario, windows: int | None = None) -> spaces.Dict:
    """The public store state of a window (fields of `StoreStatus`): cash and net assets (RMB),
    rating, stars and their multiplier, listings, open orders, orders placed, calls left,
    whether the store is open (`store_open`, 1 or 0), the window."""
    return spaces.Dict(
        {
            **{name: _amount() for name in ACCOUNTS},
            "rating": spaces.Box(low=0.0, high=5.0, shape=(1,), dtype=np.float64),
            "stars": spaces.Discrete(6),
            "rating_multiplier": spaces.Box(low=0.0, high=10.0, shape=(1,), dtype=np.float64),
            "active_listings": spaces.Discrete(scenario.tools.max_active_listings + 1),
            **{name: _count() for name in _COUNTS},
            "calls_left_in_window": spaces.Discrete(scenario.clock.calls_per_window + 1),
            "store_open": spaces.Discrete(2),
            "window": spaces.Discrete((windows or scenario.clock.windows) + 1),
        }
    )


def store_state(status: StoreStatus) -> dict[str, Any]:
    """The value of `store_state_space` for a store status."""
    state: dict[str, Any] = {
        name: np.array([getattr(status, name)], dtype=np.float64) for name in _REALS
    }
    state |= {name: np.array([getattr(status, name)], dtype=np.int64) for name in _COUNTS}
    state |= {name: np.int64(getattr(status, name)) for name in _DISCRETE}
    state["store_open"] = np.int64(status.store == "open")
    return state


def action_space(scenario: Scenario, tool_names: Sequence[str]) -> spaces.Dict:
    """One tool call: a tool's index and its JSON arguments (room for a full memory document)."""
    args_chars = 4 * scenario.tools.memory_doc_bytes
    return spaces.Dict(
        {
            "tool": spaces.Discrete(len(tool_names)),
            "args": StoreText(args_chars, min_length=0, charset=TEXT_CHARSET),
        }
    )


def observation_space(scenario: Scenario, windows: int | None = None) -> spaces.Dict:
    """The open window's observation text and the store state (`windows`: the episode's
    windows, the scenario's by default)."""
    return spaces.Dict(
        {
            "text": StoreText(OBSERVATION_MAX_CHARS, min_length=0, charset=TEXT_CHARSET),
            "store": store_state_space(scenario, windows),
        }
    )


def tool_name(tool_names: Sequence[str], index: Any) -> str:
    """The tool an action's `tool` names; out of the action space, its text (the surface then
    answers `unknown_tool`)."""
    try:
        position = int(index)
    except (TypeError, ValueError):
        position = -1
    if 0 <= position < len(tool_names):
        return tool_names[position]
    return str(index)


def action_call(tool_names: Sequence[str], action: Any) -> tuple[str, Any]:
    """The tool and the arguments (JSON text, or what the surface refuses) an action names."""
    if not isinstance(action, dict):
        action = {"tool": None}
    tool = tool_name(tool_names, action.get("tool"))
    args = action.get("args") or "{}"
    if not isinstance(args, str):
        try:
            args = json.dumps(args)
        except (TypeError, ValueError):
            pass  # not JSON: the surface refuses it as hostile input
    return tool, args
