"""Scenarios can grow: a parameter added with `Grown` leaves every preset's content hash and
every earlier record's verification as they were (a record made at 177dc89 is the fixture)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from merchantbench.scenario import PRESETS, Scenario, _editable_tree
from scratch_package import edit, run_python, scratch_package

OLD_RECORD = Path(__file__).parent / "fixtures" / "records" / "random-smoke-177dc89"
ANCHOR = "    page_size_max: int = Field(50, ge=1)\n"
HASHES = "from merchantbench.scenario import PRESETS; import json; " \
         "print(json.dumps({n: s.content_hash for n, s in PRESETS.items()}))"  # fmt: skip


def _with_field(tmp_path: Path, declaration: str) -> Path:
    root = scratch_package(tmp_path)
    edit(root, "scenario.py", ANCHOR, ANCHOR + declaration)
    return root


def test_a_grown_parameter_keeps_every_hash_and_an_old_record_verifies(tmp_path: Path) -> None:
    root = _with_field(tmp_path, "    coupons_per_day: Annotated[int, Grown()] = Field(0, ge=0)\n")
    hashes = run_python(root, "-c", HASHES)
    assert hashes.returncode == 0, hashes.stderr
    assert json.loads(hashes.stdout) == {n: s.content_hash for n, s in PRESETS.items()}
    record = shutil.copytree(OLD_RECORD, tmp_path / "old")
    verified = run_python(root, "-m", "merchantbench.cli", "verify", str(record))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "verified (77 calls, 28 windows" in verified.stdout
    # Set to another value, the new parameter is part of the scenario like any other.
    code = "from merchantbench.scenario import Scenario, ToolConfig as T; " \
           "print(Scenario(tools=T(coupons_per_day=2)).content_hash)"  # fmt: skip
    other = run_python(root, "-c", code)
    assert other.stdout.strip() != PRESETS["paper"].content_hash


def test_a_new_parameter_without_the_mark_would_change_every_hash(tmp_path: Path) -> None:
    """What `Grown` prevents: the same field unmarked changes the presets' hashes, and `verify`
    then refuses the old record."""
    root = _with_field(tmp_path, "    coupons_per_day: int = Field(0, ge=0)\n")
    hashes = json.loads(run_python(root, "-c", HASHES).stdout)
    assert all(hashes[n] != s.content_hash for n, s in PRESETS.items())
    record = shutil.copytree(OLD_RECORD, tmp_path / "old")
    refused = run_python(root, "-m", "merchantbench.cli", "verify", str(record))
    assert refused.returncode != 0


def test_beta_is_a_grown_parameter_editable_by_name() -> None:
    assert "seller_substitution" not in Scenario().model_dump()["market"]
    assert PRESETS["arena"].model_dump()["market"]["seller_substitution"] == 4.0
    assert _editable_tree(Scenario())["market"]["seller_substitution"] == 1.0
