"""Floor servers for the transport benchmark, run as `python -m benchmarks.floors uds PATH` or
`python -m benchmarks.floors http PORT`: a raw newline echo on a Unix socket, and a minimal
HTTP/1.1 keep-alive server answering every request with the same small JSON body."""

from __future__ import annotations

import asyncio
import sys

BODY = b'{"jsonrpc":"2.0","id":1,"result":{"ok":true}}'


async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while line := await reader.readline():
        writer.write(line)
        await writer.drain()
    writer.close()


async def http(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while await reader.readline():
        length = 0
        while (line := await reader.readline()) not in (b"\r\n", b""):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        await reader.readexactly(length)
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
            + str(len(BODY)).encode()
            + b"\r\n\r\n"
            + BODY
        )
        await writer.drain()
    writer.close()


async def main(kind: str, where: str) -> None:
    if kind == "uds":
        server = await asyncio.start_unix_server(echo, where)
    else:
        server = await asyncio.start_server(http, "127.0.0.1", int(where))
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
