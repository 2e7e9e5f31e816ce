"""The dashboard on `merchantbench serve`, in Chromium: the operator opens the printed link, sees
a served run's live progress move as its agent plays (the page's polling, with the cookie the
link set), and no answer carries hidden state, a token or the seed; a browser without the link
is refused."""

from __future__ import annotations

from pathlib import Path

import httpx
from web_support import LiveServer, assert_clean, collect_answers

from merchantbench.serve import ServeConfig, create_app
from merchantbench.serve.dashboard_mount import dashboard_extension, dashboard_link
from merchantbench.serve.mcp_mount import mcp_extension
from merchantbench.web.app import web_extension
from timeouts import REQUEST_SECONDS

ADMIN = "operator-token-for-the-browser"
SEED = 2_718_281_828


def test_the_operator_watches_a_served_run_in_the_browser(tmp_path: Path, browser) -> None:
    config = ServeConfig(tmp_path / "runs", ADMIN)
    app = create_app(config, extensions=[mcp_extension(), dashboard_extension(web_extension)])
    with (
        LiveServer(app) as server,
        httpx.Client(base_url=server.url, timeout=REQUEST_SECONDS) as http,
    ):
        admin = {"Authorization": f"Bearer {ADMIN}"}
        body = {"scenario": "smoke", "seed": SEED, "days": 3, "label": "watched"}
        run = http.post("/api/runs", headers=admin, json=body).json()
        agent = {"Authorization": f"Bearer {run['agent_token']}"}
        http.post(f"/api/runs/{run['run_id']}/end-window", headers=agent)

        page = browser.new_page()
        answers = collect_answers(page)
        page.goto(dashboard_link(server.url, ADMIN))
        assert page.url == server.url + "/"  # the token left the address bar
        row = page.locator(f"tr[data-path='{run['run_id']}']")
        assert row.locator("[data-progress]").inner_text() == "1 / 6"
        for _ in range(2):
            http.post(f"/api/runs/{run['run_id']}/end-window", headers=agent)
        page.wait_for_function(  # the page polls /runs/progress every 3 s while runs go on
            f"document.querySelector(\"tr[data-path='{run['run_id']}'] [data-progress]\")"
            ".textContent === '3 / 6'",
            timeout=15_000,
        )
        page.click(f"a:text('{run['run_id']}')")
        page.locator("#metrics").wait_for()
        page.close()

        stranger = browser.new_page()  # another browser context: no cookie
        refused = stranger.goto(server.url + "/")
        assert refused is not None and refused.status == 401
        stranger.close()
    assert any(url.endswith("/runs/progress") for url, _ in answers)
    assert_clean(answers, secret=SEED)
    texts = " ".join(text for _, text in answers)
    assert ADMIN not in texts and run["agent_token"] not in texts
