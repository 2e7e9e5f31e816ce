"""Stores of the classic env stepped on several cores: `WorkerStoreVectorEnv`.

`StoreVectorEnv` steps its stores in one process, so it uses one core. `WorkerStoreVectorEnv(n,
workers=k)` splits the n stores into k contiguous groups, each a `StoreVectorEnv` in its own
worker process (the same engine and the same code: a store's episode depends on its seed and
actions only, not on which stores it is stepped with), sends each group its rows of the
actions, and joins the groups' observations, rewards and infos in store order. `reset(seed=s)`
seeds store i with s + i, as `StoreVectorEnv` does, so both give the same arrays for the same
seeds and actions (tests/rl/test_classic_workers.py).

What it does not give: more windows per CPU second (each worker is a `StoreVectorEnv` of n / k
stores, and the pipes add a little); more windows per wall second than one process when the
machine's other cores are busy. A worker that fails raises `WorkerError` in the caller with its
one-line reason; the env is then closed.
"""

from __future__ import annotations

import multiprocessing as mp
import traceback
from multiprocessing.connection import Connection
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector.utils import batch_space
from gymnasium.vector.vector_env import AutoresetMode

from merchantbench.rl.classic import StoreEnv, StoreVectorEnv, store_seeds

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
    """`num_envs` classic-env stores stepped in `workers` processes (module docstring); the
    other arguments are `StoreEnv`'s. `context`: the multiprocessing start method (the
    platform's default when None)."""

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(
        self, num_envs: int, workers: int = 2, context: str | None = None, **kwargs: Any
    ) -> None:
        if num_envs < 1 or not 1 <= workers <= num_envs:
            raise ValueError("1 ≤ workers ≤ num_envs")
        probe = StoreEnv(**kwargs)  # the arguments checked here, the spaces read
        self.num_envs = num_envs
        self.single_observation_space = probe.observation_space
        self.single_action_space = probe.action_space
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.slots = probe.slots
        base, extra = divmod(num_envs, workers)
        self.sizes = [base + (1 if k < extra else 0) for k in range(workers)]
        self.offsets = np.cumsum([0, *self.sizes]).tolist()
        ctx: Any = mp.get_context(context)  # (typeshed: a BaseContext, which has no Process)
        self._conns: list[Connection] = []
        self._processes: list[Any] = []
        for size in self.sizes:
            mine, theirs = ctx.Pipe()
            process = ctx.Process(target=_serve, args=(theirs, size, kwargs), daemon=True)
            process.start()
            theirs.close()
            self._conns.append(mine)
            self._processes.append(process)
        self._gather()

    def _send(self, messages: list[tuple[str, Any]]) -> list[Any]:
        """Each worker's message sent, then every answer in order; a failure closes the env
        and raises `WorkerError` with each failed worker's reason."""
        if self.closed:
            raise WorkerError("the env is closed")
        reasons: dict[int, str] = {}
        for k, (conn, message) in enumerate(zip(self._conns, messages, strict=True)):
            try:
                conn.send(message)
            except OSError:
                reasons[k] = "the worker process ended"
        return self._gather(reasons)

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
        bounds = zip(self.offsets, self.offsets[1:], strict=False)
        answers = self._send([("reset", (seeds[a:b], options)) for a, b in bounds])
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
        bounds = zip(self.offsets, self.offsets[1:], strict=False)
        answers = self._send([("step", actions[a:b]) for a, b in bounds])
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
