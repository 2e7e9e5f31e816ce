"""Held-out comparison of policies on the classic store env (`rl.classic`): random, constant
actions (the best one chosen on training episodes), the project's rule-based agent (through the
tools, on the same episode: same market, seed, first day and length), and any policy given as
a function of the observation.

Every policy plays the same list of episodes (`EpisodeSpec`: split, index, start day), so
results pair up episode by episode; `paired` gives the mean difference, its standard error and
the wins. Scores are the change in net assets (RMB) after the final drain.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from merchantbench.agents.registry import make_agent
from merchantbench.money import rmb
from merchantbench.rl.classic import StoreEnv
from merchantbench.rl.episode import Episode, EpisodeConfig
from merchantbench.rl.splits import episode_seed

__all__ = [
    "Curve",
    "EpisodeSpec",
    "comparison",
    "Policy",
    "best_constant",
    "constant_action",
    "constant_policy",
    "episodes",
    "paired",
    "play",
    "play_rule_based",
    "random_policy",
    "tuned_constant",
]

Policy = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class EpisodeSpec:
    split: str
    index: int
    start_day: int


def episodes(split: str, count: int, last_start: int, first: int = 0) -> list[EpisodeSpec]:
    """`count` episodes of a split, their first days spread over the year (37 days apart)."""
    return [EpisodeSpec(split, i, (37 * i) % (last_start + 1)) for i in range(first, first + count)]


def play(env: StoreEnv, policy: Policy, spec: EpisodeSpec) -> float:
    """One episode's change in net assets (RMB); the rewards' sum is checked against it."""
    options = {"split": spec.split, "index": spec.index, "start_day": spec.start_day}
    obs, _ = env.reset(options=options)
    total, done, info = 0, False, dict[str, Any]()
    while not done:
        obs, _, done, _, info = env.step(policy(obs))
        total += info["reward_fen"]
    if total != info["net_assets_change_fen"]:
        raise AssertionError("window rewards do not sum to the change in net assets")
    return rmb(total)


def constant_action(env: StoreEnv, count: int, level: int) -> np.ndarray:
    """List the first `count` candidates at markup level `level` (1-based), the rest not."""
    action = np.zeros(env.slots, dtype=np.int64)
    action[:count] = level
    return action


def constant_policy(action: np.ndarray) -> Policy:
    return lambda _obs: action


def random_policy(env: StoreEnv, seed: int = 0) -> Policy:
    space = env.action_space
    space.seed(seed)
    return lambda _obs: space.sample()


def best_constant(
    env: StoreEnv, specs: Sequence[EpisodeSpec], counts: Sequence[int] = (4, 8, 16, 32)
) -> tuple[tuple[int, int], dict[tuple[int, int], float]]:
    """The constant action (count, level) with the best mean on `specs` (training episodes),
    and every candidate's mean."""
    means: dict[tuple[int, int], float] = {}
    for count in counts:
        for level in range(1, len(env.markups) + 1):
            policy = constant_policy(constant_action(env, min(count, env.slots), level))
            scores = [play(env, policy, spec) for spec in specs]
            means[(count, level)] = float(np.mean(scores))
    return max(means, key=lambda key: means[key]), means


def tuned_constant(
    probe: StoreEnv, tune: Sequence[EpisodeSpec]
) -> tuple[tuple[int, int], dict[tuple[int, int], float], float]:
    """`best_constant` on the training episodes `tune`, announced on stdout as a training script
    prints it, with the seconds it took."""
    tuning = time.perf_counter()
    (count, level), means = best_constant(probe, tune)
    tune_seconds = time.perf_counter() - tuning
    print(json.dumps({"best_constant": [count, level], "tune_seconds": round(tune_seconds)}))
    return (count, level), means, tune_seconds


class Curve:
    """A training script's curve: each point printed as a JSON line and the whole curve kept in
    `out/curve.json`, rewritten at every point (a stopped run keeps what it had)."""

    def __init__(self, out: Path) -> None:
        self.path = out / "curve.json"
        self.points: list[dict[str, Any]] = []

    def add(self, point: dict[str, Any]) -> None:
        self.points.append(point)
        print(json.dumps(point), flush=True)
        self.path.write_text(json.dumps(self.points, indent=1))


def play_rule_based(env: StoreEnv, spec: EpisodeSpec, agent: str = "rule-based") -> float:
    """The project's agent on the same episode through the tools (RMB change in net assets)."""
    config = EpisodeConfig(env.scenario_name, length=env.days, start_day=spec.start_day)
    episode = Episode(config, episode_seed(spec.split, spec.index))
    player = make_agent(agent)
    while not episode.over:
        window = episode.surface.window
        player.act(episode.surface)
        if not episode.over and episode.surface.window == window:
            episode.call("end_of_step")
    return rmb(episode.change_fen)


def paired(ours: Sequence[float], theirs: Sequence[float]) -> dict[str, Any]:
    """Mean difference (ours − theirs), its standard error, and wins/ties/losses."""
    diff = np.asarray(ours, dtype=np.float64) - np.asarray(theirs, dtype=np.float64)
    n = len(diff)
    se = float(diff.std(ddof=1) / math.sqrt(n)) if n > 1 else float("nan")
    return {
        "mean_diff": float(diff.mean()),
        "se": se,
        "wins": int((diff > 0).sum()),
        "ties": int((diff == 0).sum()),
        "losses": int((diff < 0).sum()),
        "n": n,
    }


def comparison(
    env: StoreEnv,
    test: Sequence[EpisodeSpec],
    name: str,
    learnt: Sequence[float],
    constant: tuple[int, int],
    means: dict[tuple[int, int], float],
) -> dict[str, Any]:
    """The held-out table of a learnt policy: its scores on `test` beside random actions, the
    best constant action `(count, level)` (chosen on training episodes, whose means are
    `means`) and the rule-based agent, each paired with it episode by episode."""
    count, level = constant
    action = constant_action(env, count, level)
    rows = {
        name: list(learnt),
        "random": [play(env, random_policy(env, i), spec) for i, spec in enumerate(test)],
        "best_constant": [play(env, constant_policy(action), spec) for spec in test],
        "rule_based": [play_rule_based(env, spec) for spec in test],
    }
    return {
        "test": [vars(spec) for spec in test],
        "best_constant": {"count": count, "level": level, "markup": env.markups[level - 1]},
        "constant_means_on_train": {f"{c}x{lv}": m for (c, lv), m in means.items()},
        "scores": rows,
        "means": {key: float(np.mean(v)) for key, v in rows.items()},
        f"{name}_vs": {key: paired(learnt, v) for key, v in rows.items() if key != name},
    }
