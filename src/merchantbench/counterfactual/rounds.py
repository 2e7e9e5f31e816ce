"""Takeovers played in rounds (the fork grid, the policy's own runs, each bisection step), each
distinct takeover once.

A takeover's result depends on nothing but its policy (agent and settings), the store it is
handed at its window (on its scenario, seed and catalog) and the windows it keeps: two tasks
that agree on all of them play the same year (a fresh copy of the same policy, the same store,
the same random numbers) and come to the same final net assets, so the second is not played
but given the first's result. Two stores are the same when their snapshots are the same bytes
(`content_key`), or, for a task of a later round whose store's session memory (call and trace
counters, keyed answers) equals a played one's at the same window, when the two stores are equal
as values (`as_value`: the snapshot unpickled and pickled again without the pickler's memo, so
that an object the store shares, such as a string constant of the code, against the copy a
restored store holds, counts by its value only). That is what a validation agent built on the
policy shares with the policy's own run: until its failure it is that run, so its takeovers
at the fork days before the failure are the policy's takeovers of its own run (the paper year
of `fail-abandon-rb --agent-opt onset_day=97` under the rule-based policy: days 30, 60 and 90
of the grid, same bytes, and day 97 of the bisection, where the own run was played on from a
restored day 90: equal as values).

What it does not cover: two stores equal as values whose *mutable* objects are shared
differently (a list two fields hold, against two equal lists) are taken for the same store;
the engine's mutable objects are made by its code and kept by pickling, which keeps their
sharing, so a store played on from a restored snapshot shares them as the store played
through does. A store equal to another but for its memory (a counter of calls, say) is
played again.
"""

from __future__ import annotations

import hashlib
import io
import pickle
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from merchantbench.counterfactual.execute import TakeoverExecutor
from merchantbench.counterfactual.takeover import Takeover, TakeoverTask

Progress = Callable[[int, int, TakeoverTask], None]  # done, total, the task just done
Found = dict[tuple[Any, ...], tuple[TakeoverTask, Takeover]]


def content_key(task: TakeoverTask) -> tuple[Any, ...]:
    """Everything a takeover's result depends on but its store (module docstring)."""
    return (
        task.policy.agent,
        repr(sorted(task.policy.settings.items())),
        task.scenario.content_hash,
        task.seed,
        str(task.catalog),
        task.window,
        task.keep,
    )


def _memory(blob: bytes) -> bytes:
    """A session snapshot's parts but the store's engine (its session memory), pickled."""
    saved = pickle.loads(blob)  # noqa: S301 — a snapshot made by this analysis
    if isinstance(saved, dict) and isinstance(saved.get("engine"), bytes):
        saved = {k: v for k, v in saved.items() if k != "engine"}
    return pickle.dumps(saved, protocol=pickle.HIGHEST_PROTOCOL)


def as_value(blob: bytes) -> bytes | None:
    """A session snapshot as a value (module docstring): unpickled (a store alone nests its
    engine's pickle, unpickled too) and pickled again without the pickler's memo; None when
    that cannot be done (an object that holds itself: then the store is its own)."""
    saved = pickle.loads(blob)  # noqa: S301 — a snapshot made by this analysis
    if isinstance(saved, dict) and isinstance(saved.get("engine"), bytes):
        saved = {**saved, "engine": pickle.loads(saved["engine"])}  # noqa: S301
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.fast = True  # no memo: every object written out by its value
    try:
        pickler.dump(saved)
    except (ValueError, RecursionError):  # a cycle, which only the memo can write
        return None
    return buffer.getvalue()


Content = tuple[tuple[Any, ...], bytes]  # content_key, the snapshot's SHA-256


@dataclass
class Rounds:
    """Takeovers played in rounds, their results by the analysis' keys, and the progress
    counted over every round (a takeover given an earlier one's result counts as done)."""

    executor: TakeoverExecutor
    progress: Progress | None
    found: Found = field(default_factory=dict)
    done: int = 0
    total: int = 0
    played: dict[Content, Takeover] = field(default_factory=dict)
    # every store played or to play, by content_key and session memory (for `as_value`)
    stores: dict[tuple[Any, ...], list[tuple[bytes, Content]]] = field(default_factory=dict)
    values: dict[Content, bytes | None] = field(default_factory=dict)  # `as_value`, made once

    def run(self, tasks: Iterable[tuple[tuple[Any, ...], TakeoverTask]]) -> None:
        """Play the tasks, each distinct takeover once (module docstring), and file every
        task's result under its key in `found`."""
        keyed = list(tasks)
        self.total += len(keyed)
        waiting: dict[Content, list[tuple[tuple[Any, ...], TakeoverTask]]] = {}
        for key, task in keyed:
            content = self._content(task, waiting)
            if content in self.played:
                self._file(key, task, self.played[content])
            else:
                waiting.setdefault(content, []).append((key, task))
        by_task = {id(group[0][1]): content for content, group in waiting.items()}
        for task, result in self.executor.run(group[0][1] for group in waiting.values()):
            content = by_task[id(task)]
            self.played[content] = replace(result, kept={})  # the kept states go with `found`
            for key, same in waiting[content]:
                self._file(key, same, result)

    def _content(self, task: TakeoverTask, waiting: dict[Content, Any]) -> Content:
        """The task's store as an earlier task's (played or waiting) when it is the same store
        (module docstring), else as its own."""
        content = (content_key(task), hashlib.sha256(task.session).digest())
        if content in self.played or content in waiting:
            return content
        same_memory = self.stores.setdefault((content[0], _memory(task.session)), [])
        mine = self._value(task.session, content) if same_memory else None
        if mine is not None:
            for blob, other in same_memory:
                if self._value(blob, other) == mine:
                    return other
        same_memory.append((task.session, content))
        return content

    def _value(self, blob: bytes, content: Content) -> bytes | None:
        if content not in self.values:
            self.values[content] = as_value(blob)
        return self.values[content]

    def _file(self, key: tuple[Any, ...], task: TakeoverTask, result: Takeover) -> None:
        self.found[key] = (task, result)
        self.done += 1
        if self.progress is not None:
            self.progress(self.done, self.total, task)
