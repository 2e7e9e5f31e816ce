"""Issue 31's forgeries, each refused with its reason by `merchantbench verify`, and the
untouched records pass: the model's words, tokens, cost and model calls (key-free consistency,
replay/consistency.py), a relabelled agent and a consistent lie (only the signature catches
them: record/attest.py), a public seed passed off as sealed, and hostile files (links, FIFOs,
devices, folders in a file's place, a missing transcript, a name that is not UTF-8)."""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from merchantbench.agents.llm.scripted_policy import store_policy
from merchantbench.agents.llm.scripted_server import ScriptedServer
from merchantbench.cli import app
from merchantbench.record.attest import ATTESTATION_FILE, check_attestation, load_signer
from merchantbench.replay import verify_record
from merchantbench.replay.evidence import check_run
from merchantbench.runs.runner import RunSpec, run_agent
from merchantbench.scenario import load_scenario
from merchantbench.seeds import commitment

SHORT = load_scenario("smoke", overrides=["clock.days=2"])
MODELS = """
[priced]
base_url = "{url}"
model = "scripted"
price_input = 0.25
price_output = 2.0
"""


@pytest.fixture(scope="module")
def llm_record(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A scripted ReAct run at stated prices (model calls, words, usage, cost), signed."""
    root = tmp_path_factory.mktemp("llm")
    with ScriptedServer(store_policy) as server:
        (root / "models.toml").write_text(MODELS.format(url=server.base_url))
        settings = {"models_file": str(root / "models.toml"), "model_entry": "priced"}
        run_agent(RunSpec("react", SHORT, 1, settings), root / "run")
    return root / "run"


@pytest.fixture(scope="module")
def rule_record(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("rule") / "run"
    run_agent(RunSpec("rule-based", SHORT, 2), out)
    return out


def _copy(record: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(record, tmp_path / "copy", symlinks=True))


def _verify(*args: str) -> Any:
    return CliRunner().invoke(app, ["verify", *args])


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _write_lines(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def _edit_run(run_dir: Path, change: Any) -> None:
    meta = json.loads((run_dir / "run.json").read_text())
    change(meta)
    (run_dir / "run.json").write_text(json.dumps(meta, indent=2))


def _public_key_file(tmp_path: Path) -> Path:
    path = tmp_path / "mine.pub.json"
    result = CliRunner().invoke(app, ["keys", "show", "--json"])
    assert result.exit_code == 0, result.output
    path.write_text(result.stdout)
    return path


def test_the_untouched_records_verify_with_their_signature(llm_record, rule_record, tmp_path):
    mine = _public_key_file(tmp_path)
    for record in (llm_record, rule_record):
        result = _verify(str(record), "--trust", str(mine))
        assert result.exit_code == 0, result.output
        assert "verified" in result.stdout and "self-attested by trusted key" in result.stdout
    envelope = json.loads((llm_record / ATTESTATION_FILE).read_text())
    statement = json.loads(__import__("base64").b64decode(envelope["payload"]))
    assert envelope["payloadType"] == "application/vnd.in-toto+json"
    assert statement["_type"] == "https://in-toto.io/Statement/v1"
    names = {s["name"] for s in statement["subject"]}
    assert {"run.json", "model_calls.jsonl", "model_words.jsonl.gz", "trace.jsonl"} <= names
    assert statement["predicate"]["assurance"] == "self-attested"
    assert statement["predicate"]["run"]["model"] == "scripted"


def test_a_record_signed_by_one_key_fails_trust_with_another(rule_record, tmp_path, monkeypatch):
    monkeypatch.setenv("MERCHANTBENCH_KEYS", str(tmp_path / "other-keys"))
    other = tmp_path / "other.pub.json"
    other.write_text(CliRunner().invoke(app, ["keys", "show", "--json"]).stdout)
    monkeypatch.undo()
    result = _verify(str(rule_record), "--trust", str(other))
    assert result.exit_code == 2
    assert "NOT VERIFIED" in result.stdout and "not trusted here" in result.stdout
    verdict = check_attestation(rule_record, [load_signer().public_key])
    assert verdict.ok


def test_the_models_words_edited(llm_record, tmp_path):
    copy = _copy(llm_record, tmp_path)
    path = copy / "model_words.jsonl.gz"
    with gzip.open(path) as lines:
        words = [json.loads(line) for line in lines]
    said = next(w for w in words if w["tool_calls"] and w["tool_calls"][0]["arguments"] != "{}")
    said["tool_calls"][0]["arguments"] = json.dumps({"query": "something else"})
    path.write_bytes(b"".join(gzip.compress((json.dumps(w) + "\n").encode(), mtime=0)
                              for w in words))  # fmt: skip
    result = _verify(str(copy))
    assert result.exit_code == 1
    assert "trace.jsonl line" in result.stdout and "the model's words say" in result.stdout


def test_every_token_count_set_to_10_and_the_cost_to_0(llm_record, tmp_path):
    copy = _copy(llm_record, tmp_path)
    calls = _lines(copy / "model_calls.jsonl")
    for call in calls:
        call.update(input_tokens=10, cached_tokens=0, output_tokens=10, cost=0.0)
    _write_lines(copy / "model_calls.jsonl", calls)

    def usage(meta: dict[str, Any]) -> None:
        meta["llm_usage"].update(input_tokens=10 * len(calls), cached_tokens=0, cost=0.0,
                                 output_tokens=10 * len(calls), tokens=20 * len(calls))  # fmt: skip

    _edit_run(copy, usage)
    result = _verify(str(copy))
    assert result.exit_code == 1
    assert "model_calls.jsonl line 1.cost: recorded 0.0, recomputed" in result.stdout


def test_a_consistent_lie_passes_the_key_free_checks_but_not_the_signature(llm_record, tmp_path):
    """Tokens and cost all edited to agree: no key-free check can tell; the signature can."""
    copy = _copy(llm_record, tmp_path)
    calls = _lines(copy / "model_calls.jsonl")
    for call in calls:
        call.update(input_tokens=10, cached_tokens=0, output_tokens=10, cost=22.5e-6)
    _write_lines(copy / "model_calls.jsonl", calls)

    def usage(meta: dict[str, Any]) -> None:
        meta["llm_usage"].update(input_tokens=10 * len(calls), cached_tokens=0,
                                 output_tokens=10 * len(calls), tokens=20 * len(calls),
                                 cost=round(22.5e-6 * len(calls), 6))  # fmt: skip

    _edit_run(copy, usage)
    assert verify_record(copy).ok  # what the docs say self-attestation does not cover
    result = _verify(str(copy), "--trust", str(_public_key_file(tmp_path)))
    assert result.exit_code == 1 and "model_calls.jsonl changed since it was signed" in (
        result.stdout
    )


def test_a_model_call_deleted(llm_record, tmp_path):
    copy = _copy(llm_record, tmp_path)
    calls = _lines(copy / "model_calls.jsonl")
    _write_lines(copy / "model_calls.jsonl", calls[:2] + calls[3:])
    result = _verify(str(copy))
    assert result.exit_code == 1 and "llm_usage.calls: recorded" in result.stdout


def test_run_json_usage_set_to_cost_0_and_2_tokens(llm_record, tmp_path):
    copy = _copy(llm_record, tmp_path)
    _edit_run(copy, lambda meta: meta["llm_usage"].update(cost=0, tokens=2))
    result = _verify(str(copy))
    assert result.exit_code == 1
    assert "run.json llm_usage.tokens: recorded 2, the sum of model_calls.jsonl" in result.stdout


def test_a_rule_based_record_relabelled_as_react_gpt5(rule_record, tmp_path):
    """The agent is not replayed: the replay passes, the signature does not, and no table
    calls the label attested."""
    copy = _copy(rule_record, tmp_path)

    def relabel(meta: dict[str, Any]) -> None:
        meta["agent"] = {"name": "react", "privileged": False, "settings": {"model": "gpt-5"}}

    _edit_run(copy, relabel)
    metrics = json.loads((copy / "metrics.json").read_text())
    metrics["agent"] = "react / gpt-5"
    (copy / "metrics.json").write_text(json.dumps(metrics))
    assert verify_record(copy).ok  # the label is no fact of the replay
    result = _verify(str(copy), "--trust", str(_public_key_file(tmp_path)))
    assert result.exit_code == 1
    assert "changed since it was signed" in result.stdout
    board = CliRunner().invoke(app, ["leaderboard", str(copy)], terminal_width=250)
    assert "react-gpt-5" in board.stdout and "not attested" in board.stdout
    assert "self-attested" not in board.stdout


def test_a_fake_sealed_run_of_public_seed_2_is_refused(rule_record, tmp_path):
    from merchantbench.seeds import COMMITMENT_SCHEME

    copy = _copy(rule_record, tmp_path)
    salt = "ab" * 16

    def seal(meta: dict[str, Any]) -> None:
        meta["seed"] = None
        meta["seed_commitment"] = {"scheme": COMMITMENT_SCHEME, "sha256": commitment(2, salt)}

    _edit_run(copy, seal)
    alone = _verify(str(copy), "--seed", "2")
    assert alone.exit_code == 2 and "needs the commitment's salt" in alone.stderr
    revealed = _verify(str(copy), "--seed", "2", "--salt", salt)
    assert revealed.exit_code == 2 and "never passes as sealed" in revealed.stderr
    reveal = tmp_path / "reveal.json"
    reveal.write_text(json.dumps({"seed": "2", "salt": salt}))
    assert _verify(str(copy), "--reveal", str(reveal)).exit_code == 2
    _edit_run(copy, lambda meta: meta["seed_commitment"].update(sha256="0" * 64))
    changed = _verify(str(copy), "--seed", str(2**64 + 5), "--salt", salt)
    assert changed.exit_code == 2 and "do not open the commitment" in changed.stderr


def test_sealed_and_public_runs_are_separate_rows_of_the_cli_leaderboard(tmp_path):
    folder = tmp_path / "runs"
    run_agent(RunSpec("rule-based", SHORT, 1), folder / "public")
    run_agent(RunSpec.sealed_run("rule-based", SHORT), folder / "sealed")
    board = CliRunner().invoke(app, ["leaderboard", str(folder)], terminal_width=250)
    assert board.exit_code == 0, board.output
    rows = [line for line in board.stdout.splitlines() if line.startswith("│")]
    assert any("rule-based (sealed)" in row and "1 sealed" in row for row in rows)
    assert any("rule-based " in row and "seed 1" in row and "sealed" not in row for row in rows)


# --- hostile files ------------------------------------------------------------------------------
def _refused(copy: Path, *words: str) -> None:
    result = _verify(str(copy), "--json")
    assert result.exit_code == 2, result.output
    [line] = result.stdout.splitlines()
    data = json.loads(line)
    assert data["ok"] is False and data["status"] == "cannot verify"
    assert all(word in data["error"] for word in words), data["error"]
    assert "Traceback" not in result.output


def test_metrics_linked_to_dev_urandom_is_refused_at_once(rule_record, tmp_path):
    copy = _copy(rule_record, tmp_path)
    (copy / "metrics.json").unlink()
    (copy / "metrics.json").symlink_to("/dev/urandom")
    _refused(copy, "metrics.json", "link")


def test_a_fifo_does_not_hang(rule_record, tmp_path):
    copy = _copy(rule_record, tmp_path)
    (copy / "metrics.json").unlink()
    os.mkfifo(copy / "metrics.json")
    _refused(copy, "metrics.json", "FIFO")


@pytest.mark.parametrize("kind", ["dev-zero", "folder", "outside"])
def test_a_transcript_that_is_no_regular_file_is_refused(rule_record, tmp_path, kind):
    copy = _copy(rule_record, tmp_path)
    (copy / "transcript.jsonl").unlink()
    if kind == "dev-zero":
        (copy / "transcript.jsonl").symlink_to("/dev/zero")
    elif kind == "folder":
        (copy / "transcript.jsonl").mkdir()
    else:
        outside = tmp_path / "elsewhere.jsonl"
        shutil.copy(rule_record / "transcript.jsonl", outside)
        (copy / "transcript.jsonl").symlink_to(outside)
    _refused(copy, "transcript.jsonl")


def test_a_deleted_transcript_cannot_be_fully_verified(rule_record, tmp_path):
    copy = _copy(rule_record, tmp_path)
    (copy / "transcript.jsonl").unlink()
    result = _verify(str(copy))
    assert result.exit_code == 2 and "CANNOT FULLY VERIFY" in result.stdout
    assert "verified (" not in result.stdout


def test_a_trace_linked_outside_the_record_is_not_followed(rule_record, tmp_path):
    copy = _copy(rule_record, tmp_path)
    outside = tmp_path / "trace-elsewhere.jsonl"
    (copy / "trace.jsonl").rename(outside)
    (copy / "trace.jsonl").symlink_to(outside)
    _refused(copy, "trace.jsonl", "link")


def test_a_name_that_is_not_utf8_gets_one_line_and_exit_2(rule_record, tmp_path):
    strange = Path(os.fsdecode(bytes(tmp_path) + b"/run-\xff"))
    shutil.copytree(rule_record, strange)
    (strange / "transcript.jsonl").unlink()
    os.mkfifo(strange / "transcript.jsonl")
    result = _verify(str(strange), "--json")
    assert result.exit_code == 2 and "Traceback" not in result.output
    data = json.loads(result.stdout)
    assert "\\xff" in data["run_dir"]


def test_an_unexpected_error_exits_2_never_1(rule_record, tmp_path, monkeypatch):
    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("something unforeseen")

    monkeypatch.setattr("merchantbench.replay.verify_record", broken)
    result = _verify(str(rule_record), "--json")
    assert result.exit_code == 2
    assert json.loads(result.stdout)["error"] == "RuntimeError: something unforeseen"


def test_the_host_key_is_named_as_securesystemslib_names_it(tmp_path):
    from securesystemslib.signer import SSlibKey

    signer = load_signer(tmp_path / "keys", make=True)
    theirs = SSlibKey.from_crypto(signer.private.public_key(), scheme="ed25519")
    assert signer.keyid == theirs.keyid and signer.public_key == theirs


def test_the_site_leaves_out_and_names_a_hostile_record(rule_record, tmp_path):
    from merchantbench.site import build_site

    folder = tmp_path / "runs"
    shutil.copytree(rule_record, folder / "good")
    bad = Path(shutil.copytree(rule_record, folder / "bad"))
    (bad / "transcript.jsonl").unlink()
    (bad / "transcript.jsonl").symlink_to("/dev/zero")
    summary = build_site([folder], tmp_path / "site")
    assert (summary.runs, summary.verified) == (2, 1)
    index = (tmp_path / "site" / "index.html").read_text()
    assert "runs/bad" in index and "left out of the ranking" in index
    assert "transcript.jsonl is a link" in index


def test_a_market_verifies_with_every_merchants_signature_and_not_without(tmp_path, monkeypatch):
    """`verify --trust` of a market checks each merchant record's signature: the untouched
    market verifies; a merchant whose signature is gone cannot be verified (exit 2); a signed
    file changed after signing (the key-free checks cannot see a consistent change of run.json's
    timestamps) differs (exit 1)."""
    arena = tmp_path / "market"
    args = ["arena", "--no-progress", "--agent", "random", "--agent", "rule-based",
            "--scenario", "smoke", "--seed", "3", "--out", str(arena)]  # fmt: skip
    made = CliRunner().invoke(app, args)
    assert made.exit_code == 0, made.output
    mine = _public_key_file(tmp_path)
    result = _verify(str(arena), "--trust", str(mine))
    assert result.exit_code == 0, result.output
    assert result.stdout.count("self-attested by trusted key") == 2
    merchants = sorted(p for p in (arena / "merchants").iterdir() if p.is_dir())
    assert len(merchants) == 2
    # a table's check of one merchant replays its market, never the merchant alone (an empty
    # check cache: `verify` above cached the market's verdicts)
    with monkeypatch.context() as patched:
        patched.setenv("MERCHANTBENCH_CHECKS", str(tmp_path / "no-cache"))
        assert all(check_run(m).ok for m in merchants), [check_run(m) for m in merchants]
    (merchants[0] / ATTESTATION_FILE).unlink()
    unsigned = _verify(str(arena), "--trust", str(mine), "--json")
    assert unsigned.exit_code == 2, unsigned.output
    data = json.loads(unsigned.stdout)
    assert data["ok"] is False
    assert data["merchants"][merchants[0].name]["attestation"]["status"] == "unsigned"
    assert _verify(str(arena)).exit_code == 0  # without --trust the signature does not count
    _edit_run(merchants[1], lambda meta: meta.update(started=meta["started"][:-1] + "0"))
    edited = json.loads(_verify(str(arena), "--trust", str(mine), "--json").stdout)
    assert edited["merchants"][merchants[1].name]["attestation"]["status"] == "differs"


def test_a_cached_market_verdict_does_not_outlive_an_edit_of_arena_json(tmp_path):
    """Each merchant's cached verdict is keyed by every file of its market: `verify` caches a
    market; then arena.json's state hash edited is a new state for every merchant, replayed
    again, and differs."""
    arena = tmp_path / "market"
    args = ["arena", "--no-progress", "--agent", "random", "--agent", "idle",
            "--scenario", "smoke", "--seed", "4", "--out", str(arena)]  # fmt: skip
    assert CliRunner().invoke(app, args).exit_code == 0
    assert _verify(str(arena)).exit_code == 0
    merchant = sorted(p for p in (arena / "merchants").iterdir() if p.is_dir())[0]
    assert check_run(merchant, replay=False).ok  # found in the cache `verify` filled
    manifest = json.loads((arena / "arena.json").read_text())
    manifest["state_hash"] = "0" * len(manifest["state_hash"])
    (arena / "arena.json").write_text(json.dumps(manifest))
    assert not check_run(merchant, replay=False).ok  # not in the cache any more
    assert check_run(merchant).status == "differs"
