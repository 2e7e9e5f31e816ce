"""`merchantbench mcp` over stdio answers every line (issue 19, item 8): a line the SDK cannot
read as a JSON-RPC message (a lone surrogate, nesting past 200 levels, a 5,000-digit integer,
text that is not JSON) gets a JSON-RPC error, with the request's id when it can be read; before,
such lines were dropped and the client waited forever. The server goes on serving after them."""

from __future__ import annotations

import json
import select
import subprocess
import sys
from pathlib import Path

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "malformed-lines", "version": "1"},
    },
}
CALL = (
    '{"jsonrpc":"2.0","id":%s,"method":"tools/call",'
    '"params":{"name":"query_balance","arguments":%s}}'
)
# line, the id the answer carries, the JSON-RPC error code
MALFORMED = [
    (CALL % (2, '{"note":"\\ud800"}'), 2, -32600),  # a lone surrogate
    ('{"jsonrpc":"2.0","id":3,"method":"\\udfff"}', 3, -32600),
    (CALL % (4, '{"x":' + "[" * 250 + "]" * 250 + "}"), 4, -32600),  # nesting ≥ 200
    (CALL % (5, '{"x":' + "9" * 5000 + "}"), 5, -32600),  # a 5,000-digit integer
    ('{"jsonrpc":"2.0","id":' + "7" * 5000 + ',"method":"ping"}', None, -32600),
    ('{"jsonrpc":"2.0","id":6,"method":' + "[" * 100_000, None, -32700),
    ('{"jsonrpc": "2.0", "id": 8, "method"', None, -32700),  # not JSON
    ("[1, 2, 3]", None, -32600),
]


def test_every_malformed_line_gets_an_error_answer(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "merchantbench.cli", "mcp", "--scenario", "smoke",
               "--days", "1", "--seed", "1", "--out", str(tmp_path / "run")]  # fmt: skip
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)  # fmt: skip
    assert process.stdin is not None and process.stdout is not None

    def send(line: str) -> None:
        process.stdin.write(line.encode() + b"\n")  # type: ignore[union-attr]
        process.stdin.flush()  # type: ignore[union-attr]

    def answer(timeout: float) -> dict:
        ready, _, _ = select.select([process.stdout], [], [], timeout)
        assert ready, "no answer"
        return json.loads(process.stdout.readline())  # type: ignore[union-attr]

    try:
        send(json.dumps(INITIALIZE))
        assert answer(180)["id"] == 1
        send('{"jsonrpc":"2.0","method":"notifications/initialized"}')
        for line, request_id, code in MALFORMED:
            send(line)
            got = answer(30)
            assert got["id"] == request_id and got["error"]["code"] == code, (line[:60], got)
        send("")  # a blank line is no message: nothing to answer
        send('{"jsonrpc":"2.0","id":9,"method":"ping"}')
        assert answer(30) == {"jsonrpc": "2.0", "id": 9, "result": {}}
        balance = CALL % (10, "{}")
        send(balance)
        result = answer(60)
        assert result["id"] == 10 and result["result"]["isError"] is False
    finally:
        process.stdin.close()
        process.wait(60)
    assert process.returncode == 0
