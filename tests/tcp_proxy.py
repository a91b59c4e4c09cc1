"""A TCP forwarder for tests: what sits between a client and a server it can cut or bridge."""

from __future__ import annotations

import asyncio
import socket


class TcpProxy:
    """127.0.0.1:<port> forwarding to a target port on the host's loopback; `stop()` refuses and cuts
    every connection. ``start(sock)`` listens on a socket made elsewhere (in another network
    namespace) instead."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    async def start(self, sock: socket.socket | None = None) -> None:
        if sock is None:
            self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        else:
            self._server = await asyncio.start_server(self._serve, sock=sock)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.transport.abort()
            return
        self._writers.update((writer, up_writer))

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            try:
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                sink.transport.abort()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        self._writers.difference_update((writer, up_writer))
