"""Stores of the classic env stepped on several cores: `WorkerStoreVectorEnv`.

`StoreVectorEnv` steps its stores in one process, so it uses one core. `WorkerStoreVectorEnv(n,
workers=k)` splits the n stores into k contiguous groups, each a `StoreVectorEnv`: the last
group in the caller's own process, the others each in a forked worker process (the same engine
and the same code: a store's episode depends on its seed and actions only, not on which stores
it is stepped with). A step sends each worker its rows of the actions, steps the caller's group
while the workers step theirs, and joins the groups' observations, rewards and infos in store
order. `reset(seed=s)` seeds store i with s + i, as `StoreVectorEnv` does, so both give the
same arrays for the same seeds and actions (tests/rl/test_classic_workers.py).

What it does not give: more windows per CPU second (each group is a `StoreVectorEnv` of n / k
stores, and the pipes add a little); more windows per wall second than one process when the
machine's other cores are busy. A group that fails (a worker that dies, or an error in a
group's step) raises `WorkerError` in the caller with its one-line reason; the env is then
closed.
"""

from __future__ import annotations

import multiprocessing as mp
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector.utils import batch_space
from gymnasium.vector.vector_env import AutoresetMode

from merchantbench.rl.classic import StoreVectorEnv, store_seeds

__all__ = ["WorkerError", "WorkerStoreVectorEnv"]


class WorkerError(RuntimeError):
    """A worker process of a `WorkerStoreVectorEnv` failed (its reason is the message)."""


def _serve(conn: Connection, num_envs: int, kwargs: dict[str, Any]) -> None:
    """A worker: one `StoreVectorEnv`, answering ("reset", (seeds, options)), ("step",
    actions) and ("close", None) with ("ok", result) or ("error", reason)."""
    try:
        envs = StoreVectorEnv(num_envs, **kwargs)
    except Exception as error:  # refused arguments: the caller names them
        conn.send(("error", f"{type(error).__name__}: {error}"))
        return
    conn.send(("ok", None))
    while True:
        try:
            command, payload = conn.recv()
        except EOFError:  # the caller is gone
            return
        if command == "close":
            envs.close()
            conn.send(("ok", None))
            return
        try:
            if command == "reset":
                seeds, options = payload
                result: Any = envs.reset(seed=seeds, options=options)
            else:
                result = envs.step(payload)
        except Exception as error:
            last = traceback.extract_tb(error.__traceback__)[-1]
            where = f" ({last.filename.rsplit('/', 1)[-1]}:{last.lineno})"
            conn.send(("error", f"{type(error).__name__}: {error}{where}"))
            continue
        conn.send(("ok", result))


def _join(parts: list[dict[str, Any]], sizes: list[int]) -> dict[str, Any]:
    """The infos of the groups as one vector's: each array joined along its first axis in
    store order; a key a group lacks is zeros (masks False, objects None) for its stores."""
    keys = list(dict.fromkeys(key for part in parts for key in part))
    joined: dict[str, Any] = {}
    for key in keys:
        present = [part[key] for part in parts if key in part]
        if isinstance(present[0], dict):
            joined[key] = _join([part.get(key, {}) for part in parts], sizes)
            continue
        model = present[0]
        pieces = [
            part[key]
            if key in part
            else np.zeros((size, *model.shape[1:]), dtype=model.dtype)
            if model.dtype != object
            else np.full((size, *model.shape[1:]), None, dtype=object)
            for part, size in zip(parts, sizes, strict=True)
        ]
        joined[key] = np.concatenate(pieces)
    return joined


class WorkerStoreVectorEnv(gym.vector.VectorEnv[np.ndarray, np.ndarray, np.ndarray]):
    """`num_envs` classic-env stores stepped in `workers` processes, the caller's included
    (module docstring); the other arguments are `StoreEnv`'s. `context`: the multiprocessing
    start method of the workers (the platform's default when None)."""

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(
        self, num_envs: int, workers: int = 2, context: str | None = None, **kwargs: Any
    ) -> None:
        if num_envs < 1 or not 1 <= workers <= num_envs:
            raise ValueError("1 ≤ workers ≤ num_envs")
        base, extra = divmod(num_envs, workers)
        self.sizes = [base + (1 if k < extra else 0) for k in range(workers)]
        self.offsets = np.cumsum([0, *self.sizes]).tolist()
        self._own = StoreVectorEnv(self.sizes[-1], **kwargs)  # the arguments checked here
        self.num_envs = num_envs
        self.single_observation_space = self._own.single_observation_space
        self.single_action_space = self._own.single_action_space
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.slots = self._own.envs[0].slots
        ctx: Any = mp.get_context(context)  # (typeshed: a BaseContext, which has no Process)
        self._conns: list[Connection] = []
        self._processes: list[Any] = []  # worker k steps group k; the caller the last
        for size in self.sizes[:-1]:
            mine, theirs = ctx.Pipe()
            process = ctx.Process(target=_serve, args=(theirs, size, kwargs), daemon=True)
            process.start()
            theirs.close()
            self._conns.append(mine)
            self._processes.append(process)
        self._gather()

    def _run(self, messages: list[tuple[str, Any]], own: Callable[[], Any]) -> list[Any]:
        """Each worker's message sent, the caller's group run (`own`) meanwhile, then every
        group's answer in store order; a failure closes the env and raises `WorkerError` with
        each failed group's reason."""
        if self.closed:
            raise WorkerError("the env is closed")
        reasons: dict[int, str] = {}
        for k, (conn, message) in enumerate(zip(self._conns, messages, strict=True)):
            try:
                conn.send(message)
            except OSError:
                reasons[k] = "the worker process ended"
        mine: Any = None
        try:
            mine = own()
        except Exception as error:  # the workers' answers still read, so none is left over
            reasons[len(self._conns)] = f"(this process) {type(error).__name__}: {error}"
        return [*self._gather(reasons), mine]

    def _gather(self, reasons: dict[int, str] | None = None) -> list[Any]:
        reasons = dict(reasons or {})
        answers = []
        for k, conn in enumerate(self._conns):
            status, result = "error", reasons.get(k)
            if k not in reasons:
                try:
                    status, result = conn.recv()
                except (EOFError, OSError):
                    status, result = "error", "the worker process ended"
            if status != "ok":
                reasons[k] = str(result)
            answers.append(result)
        if reasons:
            self.close()
            raise WorkerError("; ".join(f"worker {k}: {why}" for k, why in sorted(reasons.items())))
        return answers

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        seeds = store_seeds(seed, self.num_envs)
        groups = [seeds[a:b] for a, b in zip(self.offsets, self.offsets[1:], strict=False)]
        answers = self._run(
            [("reset", (group, options)) for group in groups[:-1]],
            lambda: self._own.reset(seed=groups[-1], options=options),
        )
        return (
            np.concatenate([obs for obs, _ in answers]),
            _join([info for _, info in answers], self.sizes),
        )

    def step(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        actions = np.asarray(actions, dtype=np.int64).reshape(self.num_envs, -1)
        if actions.shape[1] != self.slots:
            raise ValueError(f"an action is {self.slots} levels, not {actions.shape[1]}")
        rows = [actions[a:b] for a, b in zip(self.offsets, self.offsets[1:], strict=False)]
        answers = self._run(
            [("step", group) for group in rows[:-1]], lambda: self._own.step(rows[-1])
        )
        obs, rewards, done, truncated, infos = zip(*answers, strict=True)
        return (
            np.concatenate(obs),
            np.concatenate(rewards),
            np.concatenate(done),
            np.concatenate(truncated),
            _join(list(infos), self.sizes),
        )

    def close_extras(self, **kwargs: Any) -> None:
        for conn in self._conns:
            try:
                conn.send(("close", None))
            except (BrokenPipeError, OSError):
                pass
        for process in self._processes:
            process.join(timeout=5)
            if process.is_alive():
                process.terminate()
                process.join()
        for conn in self._conns:
            conn.close()
        self._own.close()
