"""A checkpoint's bytes do not depend on the process that wrote it: the expert keeps sets of
strings (banned products, keywords), whose order follows the per-process string hash, and a
checkpoint writes them sorted; the same run in processes with different hash seeds writes the
same checkpoint, and it loads back to equal sets (shared ones still shared)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from merchantbench.record.checkpoint import (
    CHECKPOINT,
    KEY_ENV,
    _stable_pickle,
    _StableUnpickler,
)

VALUE = (
    "shared = {f'keyword {i}' for i in range(40)}\n"
    "value = {'a': shared, 'b': shared, 'frozen': frozenset(f'shop {i}' for i in range(30)),\n"
    "         'numbers': {3, 1, 2}, 'empty': set(), 'nested': [{'x', 'y', 'z'}]}\n"
)


def _payload_in_a_process(hash_seed: str) -> bytes:
    code = (
        "import sys\n"
        "from merchantbench.record.checkpoint import _stable_pickle\n"
        + VALUE
        + "sys.stdout.buffer.write(_stable_pickle(value))\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, check=True, timeout=120
    ).stdout


def test_sets_of_strings_pickle_the_same_in_every_process_and_load_back_equal() -> None:
    payloads = {_payload_in_a_process(seed) for seed in ("1", "2", "3", "4")}
    assert len(payloads) == 1
    scope: dict[str, object] = {}
    exec(VALUE, scope)
    value = scope["value"]
    loaded = _StableUnpickler(payloads.pop()).load()
    assert loaded == value
    assert loaded["a"] is loaded["b"]  # a set referenced twice is still one set
    assert type(loaded["frozen"]) is frozenset and type(loaded["empty"]) is set
    assert _StableUnpickler(_stable_pickle(value)).load() == value


def test_the_same_run_writes_the_same_checkpoint_under_different_hash_seeds(
    tmp_path: Path,
) -> None:
    env = {
        **os.environ,
        KEY_ENV: str(tmp_path / "checkpoint.key"),
        "MERCHANTBENCH_CACHE": os.environ.get("MERCHANTBENCH_CACHE", str(tmp_path / "cache")),
    }
    written = []
    for seed in ("1", "2"):
        out = tmp_path / f"run-{seed}"
        args = ["run", "--agent", "expert", "--scenario", "smoke", "--out", str(out)]
        subprocess.run(
            [sys.executable, "-m", "merchantbench.cli", *args, "--no-progress"],
            env={**env, "PYTHONHASHSEED": seed},
            capture_output=True,
            check=True,
            timeout=600,
        )
        written.append((out / CHECKPOINT).read_bytes())
    assert written[0] == written[1]


def test_an_unknown_persistent_id_is_refused() -> None:
    import pickle

    class Planting(pickle.Pickler):
        def persistent_id(self, obj: object) -> object:
            return ("other", 1) if obj == "x" else None

    import io

    buffer = io.BytesIO()
    Planting(buffer).dump(["x"])
    with pytest.raises(pickle.UnpicklingError, match="unknown persistent id"):
        _StableUnpickler(buffer.getvalue()).load()
