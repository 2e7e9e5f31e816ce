"""A run played by Inspect AI's model (the `inspect` driver; Inspect's OpenAI-compatible
provider against the scripted server over HTTP) writes a record that verifies."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from requires import need

need("inspect", module=True)

from inspect_ai import eval as inspect_eval  # noqa: E402

from merchantbench.agents.llm.scripted_policy import POLICIES  # noqa: E402
from merchantbench.agents.llm.scripted_server import ScriptedServer  # noqa: E402
from merchantbench.inspect_eval.task import merchantbench  # noqa: E402
from merchantbench.replay import verify_record  # noqa: E402

MODEL = "openai-api/scripted/policy"


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedServer]:
    with ScriptedServer(POLICIES["store"]) as server:
        monkeypatch.setenv("SCRIPTED_BASE_URL", server.base_url)
        monkeypatch.setenv("SCRIPTED_API_KEY", "sk-inspect-verify-test")
        yield server


def test_an_inspect_run_verifies(tmp_path: Path, endpoint: ScriptedServer) -> None:
    logs = inspect_eval(
        merchantbench(scenario="smoke", seed=2, overrides=["clock.days=3"]),
        model=MODEL,
        model_base_url=endpoint.base_url,
        model_args={"strict_tools": False},
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert len(logs) == 1 and logs[0].status == "success", logs[0].error
    [sample] = logs[0].samples or []
    run_dir = Path(sample.scores["net_assets"].metadata["run_dir"])  # type: ignore[index]
    report = verify_record(run_dir)
    assert report.ok and report.windows == 6, report.summary()
