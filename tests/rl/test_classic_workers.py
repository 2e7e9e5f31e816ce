"""`WorkerStoreVectorEnv`: the classic env's stores stepped in worker processes give the arrays
`StoreVectorEnv` gives in one process (same seeds, same actions); bad input and a dead worker
give a clear error."""

from __future__ import annotations

import os
import signal
from typing import Any

import numpy as np
import pytest

from merchantbench.rl.classic import StoreVectorEnv
from merchantbench.rl.classic_workers import WorkerError, WorkerStoreVectorEnv

ARGS: dict[str, Any] = {"scenario": "smoke", "length": 2, "slots": 8, "pool": 2}


def _same_infos(a: dict[str, Any], b: dict[str, Any]) -> None:
    """The same keys, and under each mask the same values."""
    assert set(a) == set(b)
    for key, value in a.items():
        if isinstance(value, dict):
            _same_infos(value, b[key])
        elif not key.startswith("_"):
            mask = a[f"_{key}"]
            assert np.array_equal(mask, b[f"_{key}"]), key
            for i in np.flatnonzero(mask).tolist():
                assert np.array_equal(value[i], b[key][i]), (key, i)


def test_workers_give_the_one_process_vectors_arrays() -> None:
    one = StoreVectorEnv(5, **ARGS)
    split = WorkerStoreVectorEnv(5, workers=2, **ARGS)
    try:
        assert split.sizes == [3, 2]
        obs_one, info_one = one.reset(seed=7)
        obs_split, info_split = split.reset(seed=7)
        assert np.array_equal(obs_one, obs_split)
        _same_infos(info_one, info_split)
        rng = np.random.default_rng(1)
        ended = 0
        for _ in range(12):  # 4 windows an episode: every store resets in a step twice or more
            actions = rng.integers(0, 8, size=(5, 8))
            a, b = one.step(actions), split.step(actions)
            for x, y in zip(a[:4], b[:4], strict=True):
                assert np.array_equal(x, y)
            _same_infos(a[4], b[4])
            ended += int(a[2].sum())
        assert ended >= 10
    finally:
        split.close()


def test_bad_input_and_a_dead_worker() -> None:
    with pytest.raises(ValueError, match="workers"):
        WorkerStoreVectorEnv(2, workers=3, **ARGS)
    with pytest.raises(Exception, match="scenario|unknown"):
        WorkerStoreVectorEnv(2, workers=2, **{**ARGS, "scenario": "no-such-scenario"})
    split = WorkerStoreVectorEnv(4, workers=2, **ARGS)
    split.reset(seed=0)
    with pytest.raises(ValueError, match="levels"):
        split.step(np.zeros((4, 3), dtype=np.int64))
    pid = split._processes[0].pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    split._processes[0].join(timeout=30)
    with pytest.raises(WorkerError, match="worker 0"):
        split.step(np.zeros((4, 8), dtype=np.int64))
    assert split.closed
    with pytest.raises(WorkerError, match="closed"):
        split.step(np.zeros((4, 8), dtype=np.int64))


def test_a_failure_in_the_callers_group_closes_the_env() -> None:
    """The caller's own group failing mid-step: the workers' answers are still read (none is
    left in a pipe), the env is closed and the error names the caller's group."""
    split = WorkerStoreVectorEnv(4, workers=2, **ARGS)
    split.reset(seed=0)

    def broken(actions: Any) -> Any:
        raise RuntimeError("a damaged store")

    split._own.step = broken  # type: ignore[method-assign]
    with pytest.raises(WorkerError, match=r"worker 1: \(this process\) RuntimeError: a damaged"):
        split.step(np.zeros((4, 8), dtype=np.int64))
    assert split.closed
    assert not any(process.is_alive() for process in split._processes)
