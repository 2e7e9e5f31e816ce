"""How long tests wait for a server they talk to (a `merchantbench serve`, `play` or `mcp`
process, or uvicorn in a thread): one place, sized for a loaded 2-core CI machine. httpx's
default of 5 s per request failed `tests/serve/test_restart.py` at load average 12 although
nothing was wrong; these bounds only cap a hang, they never slow a passing test."""

from __future__ import annotations

REQUEST_SECONDS = 120.0  # one request (connect, write, read) to a server under test
START_SECONDS = 180.0  # a server process to answer its first request (it may build a market)
STOP_SECONDS = 90.0  # a server process to exit after a signal (it checkpoints its runs)
PROBE_SECONDS = 2.0  # one readiness poll, retried until START_SECONDS have passed
