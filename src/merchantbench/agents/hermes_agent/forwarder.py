"""The entry command of Hermes' sandbox: a loopback port piped to the driver's Unix socket.

Hermes runs in a network namespace of its own, which has only a loopback interface: nothing on
the host network exists for it. Its one way out is the driver's server (MCP endpoint and model
recorder) on a Unix socket in a directory bound into the sandbox. Hermes' MCP client and its
OpenAI client speak TCP, so this process, started first inside the sandbox, listens on
127.0.0.1:PORT (the sandbox's loopback) and pipes each connection to that socket; then it runs
the worker as its child and exits with the worker's code:

    python -I forwarder.py SOCKET PORT -- WORKER-COMMAND...

Like `worker.py` it is executed by the interpreter of Hermes' environment and imports only the
standard library. The worker inherits stdin and stdout, which carry the driver's protocol.
"""

import asyncio
import ctypes
import sys

_CHUNK = 1 << 16


async def _pipe(reader, writer):
    try:
        while True:
            data = await reader.read(_CHUNK)
            if not data:
                break
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()  # half-close: the other direction may still be talking
    except (ConnectionError, OSError):
        writer.close()


def _handler(socket_path):
    async def connect(client_reader, client_writer):
        try:
            server_reader, server_writer = await asyncio.open_unix_connection(socket_path)
        except OSError:
            client_writer.close()
            return
        try:
            await asyncio.gather(
                _pipe(client_reader, server_writer), _pipe(server_reader, client_writer)
            )
        except asyncio.CancelledError:
            # The worker exited with connections still open (Hermes' pooled keep-alive
            # ones): the loop is shutting down. Ending quietly keeps asyncio from printing
            # a traceback per connection into Hermes' log.
            pass
        finally:
            client_writer.close()
            server_writer.close()

    return connect


async def _main(socket_path, port, command):
    server = await asyncio.start_server(_handler(socket_path), "127.0.0.1", port)
    async with server:
        # Listening before the worker starts: Hermes' first connection finds the port open.
        worker = await asyncio.create_subprocess_exec(*command)
        return await worker.wait()


def main():
    # Not dumpable: no other process of the sandbox may read or write this one's memory (the
    # connections it pipes carry the token); as worker._untraceable.
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    args = sys.argv[1:]
    if len(args) < 4 or args[2] != "--":
        sys.exit("usage: forwarder.py SOCKET PORT -- COMMAND...")
    sys.exit(asyncio.run(_main(args[0], int(args[1]), args[3:])))


if __name__ == "__main__":
    main()
