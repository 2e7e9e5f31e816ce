"""A client of the public agent protocol, written from the protocol alone (httpx, no import of
the server): what an agent built for the public artifact does over the wire."""

from __future__ import annotations

import itertools
import json
from typing import Any

import httpx

from timeouts import REQUEST_SECONDS


def tool_call(call_id: str, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments or {})},
    }


def assistant(*calls: dict[str, Any], content: str | None = None) -> dict[str, Any]:
    return {"role": "assistant", "content": content, "tool_calls": list(calls)}


class ProtocolClient:
    """One agent of one run, as the artifact's SDK drives it."""

    def __init__(self, base_url: str, run_id: str, agent_id: str, token: str | None) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(base_url=base_url, headers=headers, timeout=REQUEST_SECONDS)
        self.run = f"/runs/{run_id}"
        self.agent = f"{self.run}/agents/{agent_id}"
        self.agent_id = agent_id
        self.step: int | None = None
        self.responses: list[httpx.Response] = []  # every answer, for the leak scan
        self._ids = itertools.count(1)
        self.last_id = ""  # the id of the last `call`

    def _keep(self, response: httpx.Response) -> httpx.Response:
        self.responses.append(response)
        return response

    def schema(self) -> httpx.Response:
        return self._keep(self.http.get(f"{self.run}/tools/schema"))

    def register(self, **fields: Any) -> httpx.Response:
        body = {"agent_id": self.agent_id, "framework": "tests", **fields}
        return self._keep(self.http.post(f"{self.run}/agent/register", json=body))

    def observation(self, timeout: float = 5.0) -> httpx.Response:
        response = self._keep(
            self.http.get(f"{self.agent}/observation", params={"timeout": timeout})
        )
        if response.status_code == 200:
            tick = response.json()["tick"]
            self.step = tick["step"] if tick.get("step") is not None else None
        return response

    def act(
        self, *messages: dict[str, Any], step: int | None = None, **body: Any
    ) -> httpx.Response:
        headers = {}
        declared = self.step if step is None else step
        if declared is not None:
            headers["X-Agent-Step"] = str(declared)
        payload = {"messages": list(messages), **body}
        return self._keep(self.http.post(f"{self.agent}/act", json=payload, headers=headers))

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """One env tool call in its own turn; the tool's answer."""
        self.last_id = f"c{next(self._ids)}"
        response = self.act(assistant(tool_call(self.last_id, name, arguments)))
        assert response.status_code == 200, response.text
        return json.loads(response.json()["tool_results"][0]["content"])

    def usage(self, **body: Any) -> httpx.Response:
        return self._keep(self.http.post(f"{self.agent}/usage", json=body))

    def close(self) -> None:
        self.http.close()
