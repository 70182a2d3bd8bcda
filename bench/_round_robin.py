"""A TCP front that hands each new connection to the next replica in turn (bench only).

A fleet's replicas sit behind a load balancer (docs/deploy.md): with ``--spread``,
``bench/many_practices.py`` subscribes the webhooks to this front instead of to replica
0 alone, so that every replica receives a share of the deliveries.
"""

from __future__ import annotations

import asyncio
import itertools
import threading


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


def start_front(port: int, backends: list[int]) -> None:
    """Serve 127.0.0.1:``port`` in a daemon thread, each connection to the next backend
    that accepts it."""
    turn = itertools.cycle(backends)
    ready = threading.Event()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # A replica that refuses (killed: --kill) is passed over, as a load balancer's
        # health check would; the connection is dropped only when every one refuses.
        for _ in backends:
            try:
                back_reader, back_writer = await asyncio.open_connection("127.0.0.1", next(turn))
                break
            except OSError:
                continue
        else:
            writer.close()
            return
        await asyncio.gather(_pipe(reader, back_writer), _pipe(back_reader, writer))

    async def serve() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", port)
        ready.set()
        async with server:
            await server.serve_forever()

    threading.Thread(target=asyncio.run, args=(serve(),), daemon=True).start()
    ready.wait(10)
