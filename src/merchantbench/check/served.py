"""The adapters of the served front ends, one family: a transport (how the checked merchant's
agent talks: `HttpRun`, the JSON API and the artifact protocol's routes; `McpRun`, the official
`mcp` client over streamable HTTP) over a stage (`ServedStage`, what is served: a store of
`merchantbench serve`, the one merchant of its market; or the merchant `check` of a served
market of two beside a rule-based rival). The four adapters are the four pairs: `http`, `mcp`
(the store) and `http-market`, `mcp-market` (the market).

Each adapter starts a real `merchantbench serve` app (`create_app` with the MCP extension) with
uvicorn on a free 127.0.0.1 port, in a thread of this process, with an admin token. A run or
market is created by the operator (`RunRegistry.create_now`, so any scenario, overrides
included, can be checked), and the checked merchant plays through the
network with its own agent bearer token only: in a market, the `hidden` check's leak scan then
covers everything the merchant is sent over the wire (the rival's private note, like any hidden
field, must show nowhere).

The rival plays host side, in process (`Host.host_turn`, under the market's lock), once
per window as the window opens, before the checked merchant's first call: so the checked
merchant's `end_of_step` is the window's last close, and over MCP (where `end_of_step` answers
with the next window) it never waits. A store has no rival: its turn is empty.

The host side reads the stage's host in process: `state_hash`, `snapshot` and `ledger` from its
market (a store's: the store's own), `restore` through `Host.rewind` (under the lock, reopening
a finished record). None of this is a route: a snapshot is a pickle, and a server
that unpickled what a client sent would run the client's code (docs/check.md).
"""

from __future__ import annotations

import asyncio
import atexit
import socket
import tempfile
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import httpx

from merchantbench.check.adapter import LedgerReport
from merchantbench.check.market_adapter import CHECKED, RIVAL, Rival, competing, merchant_ledger
from merchantbench.scenario import Scenario
from merchantbench.tools.toolset import END_OF_STEP

__all__ = [
    "HttpAdapter",
    "HttpMarketAdapter",
    "HttpRun",
    "LiveServe",
    "McpAdapter",
    "McpMarketAdapter",
    "McpRun",
    "ServedAdapter",
    "ServedStage",
]

T = TypeVar("T")
TIMEOUT = 120.0  # seconds for one request (closing a window simulates 12 hours)


class LiveServe:
    """A serve app with the MCP extension on 127.0.0.1 in a thread (stopped at exit)."""

    def __init__(self) -> None:
        import uvicorn

        from merchantbench.serve import ServeConfig, create_app
        from merchantbench.serve.auth import new_token
        from merchantbench.serve.mcp_mount import mcp_extension

        self._dir = tempfile.TemporaryDirectory(prefix="merchantbench-check-")
        self.admin_token = new_token()
        ready = threading.Event()
        self.loop: asyncio.AbstractEventLoop | None = None

        def on_ready(registry: Any) -> None:
            self.loop = asyncio.get_running_loop()
            ready.set()

        config = ServeConfig(Path(self._dir.name), self.admin_token, on_ready=on_ready)
        self.app = create_app(config, extensions=[mcp_extension()])
        self.registry = self.app.state.registry
        self._sock = socket.socket()
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock.bind(("127.0.0.1", 0))
        self.base_url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._server = uvicorn.Server(uvicorn.Config(self.app, log_level="warning"))
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )
        self._thread.start()
        if not ready.wait(60):
            raise RuntimeError("the check's server did not start in 60 s")
        atexit.register(self.stop)

    def create(
        self, scenario: Scenario, seed: int, agents: list[str] | None = None
    ) -> tuple[Any, dict[str, str]]:
        """A new run (operator side): a store alone, or a market of `agents`; returns its host
        and each agent's token."""
        from merchantbench.serve.registry import new_run_id
        from merchantbench.serve.settings import HostSettings

        settings = HostSettings(
            run_id=new_run_id("check" if agents is None else "check-market"),
            turns_per_window=scenario.clock.calls_per_window,
            agents=agents,
        )
        return self.registry.create_now(scenario, seed, settings)  # type: ignore[no-any-return]

    def on_loop(self, coro: Awaitable[T]) -> T:
        """Run a coroutine on the server's event loop and wait for it."""
        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(TIMEOUT)  # type: ignore[arg-type]

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=30)
        self._sock.close()
        self._dir.cleanup()


class ServedStage:
    """What is served, seen by the check: a store alone (`market` False: the one merchant of
    its market, no rival, its run-level routes), or the merchant `check` of a market of two
    beside the rival, which plays host side. The stage holds the checked agent's token and
    routes, its surface (the clock MCP lacks), the host side, and the turn the host plays
    around each of the agent's calls (a store: none)."""

    def __init__(self, serve: LiveServe, scenario: Scenario, seed: int, market: bool) -> None:
        self.serve = serve
        self.rival = Rival() if market else None
        if market:
            self.host, tokens = serve.create(competing(scenario), seed, [CHECKED, RIVAL])
        else:
            self.host, tokens = serve.create(scenario, seed)
        self.agent_id = str(CHECKED if market else self.host.settings.agent_id)
        self.token, self.run_id = tokens[self.agent_id], str(self.host.run_id)
        run = f"/runs/{self.run_id}"
        routes = f"{run}/agents/{self.agent_id}" if market else run
        self.agent_api = f"/api{routes}"  # the JSON API of the agent: observation, tools, end
        self.mcp_path = f"{routes}/mcp"
        self.session = self.host.agent(self.agent_id).session
        self.turn()

    @property
    def surface(self) -> Any:
        return self.session.surface

    def over_in(self, summary: dict[str, Any]) -> bool:
        """Whether the agent's run is over, from the run's summary as its agent reads it (a
        market's merchant: also when its store closed)."""
        if self.rival is None:
            return bool(summary["over"])
        return bool(summary["over"] or summary["agents"][self.agent_id]["closed"])

    def turn(self) -> None:
        """The rival plays its window if it has not yet (host side, under the market's lock);
        nobody else plays in a store."""
        if self.rival is not None:
            self.serve.on_loop(self.host.host_turn(RIVAL, self.rival.turn))

    def state_hash(self) -> str:
        return str(self.host.life.market.state_hash())

    def snapshot(self) -> bytes:
        blob: bytes = self.host.life.market.snapshot()
        return blob if self.rival is None else self.rival.pack(blob)

    def restore(self, blob: bytes) -> None:
        market = blob if self.rival is None else self.rival.unpack(blob)
        self.serve.on_loop(self.host.rewind(market))

    def ledger(self) -> LedgerReport:
        return merchant_ledger(self.session, self.host.life.market.over)


class _Transport:
    """A checked merchant's agent side over a stage: each call goes between the host's turns;
    the host side is the stage's."""

    def __init__(self, stage: ServedStage) -> None:
        self.stage = stage

    def send(self, tool: str, args: dict[str, Any] | None, key: str | None) -> dict[str, Any]:
        raise NotImplementedError

    def call(
        self, tool: str, args: dict[str, Any] | None, idempotency_key: str | None
    ) -> dict[str, Any]:
        self.stage.turn()
        result = self.send(tool, args, idempotency_key)
        self.stage.turn()
        return result

    def state_hash(self) -> str:
        return self.stage.state_hash()

    def snapshot(self) -> bytes:
        return self.stage.snapshot()

    def restore(self, blob: bytes) -> None:
        self.stage.restore(blob)

    def ledger(self) -> LedgerReport:
        return self.stage.ledger()


class HttpRun(_Transport):
    """Agent side over HTTP: the artifact protocol's tool schema and first observation packet
    (the brief), and the JSON API's observation, tool calls and run summary (the clock)."""

    def __init__(self, stage: ServedStage, serve: LiveServe) -> None:
        super().__init__(stage)
        self.http = httpx.Client(
            base_url=serve.base_url,
            headers={"Authorization": f"Bearer {stage.token}"},
            timeout=TIMEOUT,
        )
        run = stage.run_id
        self._summary_path = f"/api/runs/{run}"
        packet = self._get(f"/runs/{run}/agents/{stage.agent_id}/observation", {"timeout": 10})
        self._brief: str = packet["brief"]["system_prompt"]
        self._schemas = [t["openai"] for t in self._get(f"/runs/{run}/tools/schema")["tools"]]
        self._clock: dict[str, Any] | None = None  # the run's summary, until a window closes

    def _get(self, path: str, params: dict[str, Any] | None = None) -> Any:
        response = self.http.get(path, params=params)
        response.raise_for_status()
        return response.json()

    def brief(self) -> str:
        return self._brief

    def tool_schemas(self) -> list[dict[str, Any]]:
        return self._schemas

    def observation(self) -> str:
        return str(self._get(f"{self.stage.agent_api}/observation")["text"])

    def send(self, tool: str, args: dict[str, Any] | None, key: str | None) -> dict[str, Any]:
        headers = {"Idempotency-Key": key} if key is not None else {}
        response = self.http.post(
            f"{self.stage.agent_api}/tools/{tool}", json=args, headers=headers
        )
        response.raise_for_status()
        result: dict[str, Any] = response.json()
        if tool == END_OF_STEP:
            self._clock = None  # only closing a window moves the clock
        return result

    def restore(self, blob: bytes) -> None:
        super().restore(blob)
        self._clock = None

    def _summary(self) -> dict[str, Any]:
        if self._clock is None:
            self._clock = self._get(self._summary_path)
        return self._clock

    @property
    def window(self) -> int:
        return int(self._summary()["tick"]["window"])

    @property
    def hour(self) -> int:
        return int(self._summary()["tick"]["step"])

    @property
    def over(self) -> bool:
        return self.stage.over_in(self._summary())

    def close(self) -> None:
        self.http.close()


class _ClientThread:
    """An `mcp` client session on its own event loop thread, called from synchronous code."""

    def __init__(self, url: str, token: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()
        self._stop: asyncio.Event | None = None
        ready: asyncio.Future[Any] = self.loop.create_future()
        self._main = asyncio.run_coroutine_threadsafe(self._hold(url, token, ready), self.loop)
        self.client = asyncio.run_coroutine_threadsafe(_wait(ready), self.loop).result(TIMEOUT)

    async def _hold(self, url: str, token: str, ready: asyncio.Future[Any]) -> None:
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        self._stop = asyncio.Event()
        headers = {"Authorization": f"Bearer {token}"}
        try:
            async with (
                httpx2.AsyncClient(headers=headers, timeout=TIMEOUT) as http,
                Client(streamable_http_client(url, http_client=http)) as client,
            ):
                ready.set_result(client)
                await self._stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            raise

    def run(self, call: Callable[[Any], Awaitable[T]]) -> T:
        return asyncio.run_coroutine_threadsafe(_apply(call, self.client), self.loop).result(
            TIMEOUT
        )

    def close(self) -> None:
        if self._stop is not None:
            self.loop.call_soon_threadsafe(self._stop.set)
        try:
            self._main.result(30)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=30)
            self.loop.close()


async def _wait(future: asyncio.Future[Any]) -> Any:
    return await future


async def _apply(call: Callable[[Any], Awaitable[T]], client: Any) -> T:
    return await call(client)


class McpRun(_Transport):
    """Agent side over MCP: the rules and observation resources (the brief is the rules
    resource), the tools as listed (turned back into OpenAI function schemas), and tool
    calls with the idempotency key in `_meta`. What `end_of_step` adds over MCP (`run_over`,
    the next observation or the summary) is set aside, so results compare with the surface's.
    The clock (`window`, `hour`, `over`) is read on the host side: MCP has none of its own."""

    def __init__(self, stage: ServedStage, serve: LiveServe) -> None:
        super().__init__(stage)
        self.session = _ClientThread(f"{serve.base_url}{stage.mcp_path}", stage.token)

    def _resource(self, uri: str) -> str:
        result = self.session.run(lambda c: c.read_resource(uri))
        return str(result.contents[0].text)

    def brief(self) -> str:
        from merchantbench.mcp_surface import RULES_URI

        return self._resource(RULES_URI)

    def observation(self) -> str:
        from merchantbench.mcp_surface import OBSERVATION_URI

        return self._resource(OBSERVATION_URI)

    def tool_schemas(self) -> list[dict[str, Any]]:
        listed = self.session.run(lambda c: c.list_tools())
        return [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.input_schema,
                },
            }
            for t in listed.tools
        ]

    def send(self, tool: str, args: dict[str, Any] | None, key: str | None) -> dict[str, Any]:
        from merchantbench.mcp_surface import IDEMPOTENCY_META_KEY

        meta = {IDEMPOTENCY_META_KEY: key} if key is not None else None
        result = self.session.run(lambda c: c.call_tool(tool, args, meta=meta))
        content: dict[str, Any] = dict(result.structured_content or {})
        if tool == END_OF_STEP:
            for added in ("run_over", "observation", "summary", "store_closed"):
                content.pop(added, None)
        return content

    @property
    def window(self) -> int:
        return int(self.stage.surface.window)

    @property
    def hour(self) -> int:
        return int(self.stage.surface.hour)

    @property
    def over(self) -> bool:
        return bool(self.stage.surface.over)

    def close(self) -> None:
        self.session.close()


class ServedAdapter:
    """A transport over a stage; starts one server for all the runs it opens."""

    name: ClassVar[str] = ""
    transport: ClassVar[type[HttpRun] | type[McpRun]]
    market: ClassVar[bool]  # the checked merchant is a served market's, else a store
    _serve: LiveServe | None = None

    def server(self) -> LiveServe:
        if self._serve is None:
            self._serve = LiveServe()
        return self._serve

    def open(self, scenario: Scenario, seed: int) -> HttpRun | McpRun:
        serve = self.server()
        return self.transport(ServedStage(serve, scenario, seed, self.market), serve)


class HttpAdapter(ServedAdapter):
    """`merchantbench check --adapter http`."""

    name, transport, market = "http", HttpRun, False


class McpAdapter(ServedAdapter):
    """`merchantbench check --adapter mcp`."""

    name, transport, market = "mcp", McpRun, False


class HttpMarketAdapter(ServedAdapter):
    """`merchantbench check --adapter http-market`."""

    name, transport, market = "http-market", HttpRun, True


class McpMarketAdapter(ServedAdapter):
    """`merchantbench check --adapter mcp-market`."""

    name, transport, market = "mcp-market", McpRun, True
