"""A resume loads only a checkpoint this machine's user wrote (hardening round 3): the header's
HMAC-SHA256 is keyed by a per-user key file (0600, made on first use); a checkpoint written under
another key, or an older one with a plain hash, is refused in one line before anything is
unpickled, by `run --resume` and an arena's resume alike; a record copied on this machine
resumes as before."""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from merchantbench.cli import app
from merchantbench.record.checkpoint import (
    CHECKPOINT,
    KEY_ENV,
    CheckpointError,
    key_path,
    load_checkpoint,
    read_checkpoint_pins,
    save_checkpoint,
)
from merchantbench.runs.arena import ArenaSpec, Entrant, run_arena
from merchantbench.runs.runner import CheckpointPolicy, RunError, RunSpec, run_agent
from merchantbench.scenario import load_scenario

BASE = ("--agent", "rule-based", "--scenario", "smoke", "--seed", "1")
EVERY_5 = CheckpointPolicy(windows=5)


class Planted:
    """What a checkpoint from elsewhere could hold: unpickling it creates a file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return open, (str(self.marker), "w")


def _stop_at(window: int):
    def hook(session: object) -> None:
        if getattr(session, "window", None) == window:
            raise KeyboardInterrupt

    return hook


@pytest.fixture
def keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """This machine's key (in force) and another machine's."""
    monkeypatch.setenv("MERCHANTBENCH_CACHE", str(tmp_path / "cache"))
    here, there = tmp_path / "keys" / "here.key", tmp_path / "keys" / "there.key"
    monkeypatch.setenv(KEY_ENV, str(here))
    return here, there


@pytest.fixture
def stopped(tmp_path: Path, keys: tuple[Path, Path]) -> Path:
    run_dir = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        spec = RunSpec("rule-based", load_scenario("smoke"), 1)
        run_agent(spec, run_dir, checkpoints=EVERY_5, on_window=_stop_at(12))
    return run_dir


def _plant(run_dir: Path, marker: Path, key: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rewrite the run's checkpoint as someone else would: the same pins, a planted agent,
    saved under their key file."""
    _, pins = read_checkpoint_pins(run_dir)
    session = load_checkpoint(run_dir)["session"]  # type: ignore[index]
    with monkeypatch.context() as elsewhere:
        elsewhere.setenv(KEY_ENV, str(key))
        save_checkpoint(run_dir, session, Planted(marker), pins)


def _files(run_dir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run_dir)): p.read_bytes() for p in sorted(run_dir.rglob("*"))
            if p.is_file()}  # fmt: skip


def test_the_key_is_made_once_private_in_the_users_config_dir(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    path = key_path()
    assert path == tmp_path / "config" / "merchantbench" / "checkpoint.key"
    save_checkpoint(tmp_path, b"session", None, {})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    first = path.read_bytes()
    save_checkpoint(tmp_path, b"session", None, {})
    assert path.read_bytes() == first and len(bytes.fromhex(first.decode().strip())) == 32
    assert load_checkpoint(tmp_path)["session"] == b"session"  # type: ignore[index]


def test_a_checkpoint_from_elsewhere_is_refused_before_unpickling(
    stopped: Path, keys: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, there = keys
    marker = tmp_path / "planted-code-ran"
    _plant(stopped, marker, there, monkeypatch)  # written on "another machine"
    before = _files(stopped)
    result = CliRunner().invoke(app, ["run", "--no-progress", *BASE, "--out", str(stopped),
                                      "--resume"])  # fmt: skip
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "was not written by this user on this machine" in lines[0], lines
    assert "never resumed" in lines[0]
    assert not marker.exists(), "the checkpoint was unpickled"
    assert _files(stopped) == before


def test_a_checkpoint_of_the_older_unkeyed_format_is_refused(stopped: Path) -> None:
    path = stopped / CHECKPOINT
    header, _, body = path.read_bytes().partition(b"\n")
    magic, _, digest, _ = header.split(b" ")
    path.write_bytes(b"%s 3 %s\n%s" % (magic, digest, body))
    with pytest.raises(CheckpointError, match="format 3, without the key"):
        load_checkpoint(stopped)


def test_a_record_copied_on_this_machine_resumes(stopped: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(stopped, copy)
    result = CliRunner().invoke(app, ["run", "--no-progress", *BASE, "--out", str(copy),
                                      "--resume"])  # fmt: skip
    assert result.exit_code == 0, result.output


def test_an_arena_from_elsewhere_is_refused(
    keys: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    here, there = keys
    spec = ArenaSpec(load_scenario("smoke"), 1, (Entrant("a", "rule-based"), Entrant("b", "idle")))
    arena = tmp_path / "arena"
    monkeypatch.setenv(KEY_ENV, str(there))
    with pytest.raises(KeyboardInterrupt):
        run_arena(spec, arena, checkpoints=EVERY_5, on_window=_stop_at(12))
    monkeypatch.setenv(KEY_ENV, str(here))
    with pytest.raises(RunError, match="not written by this user on this machine"):
        run_arena(spec, arena, resume=True)
