"""The server's stdin and stdout as asyncio pipes: lines read and written without worker threads.

The SDK's ``stdio_server`` reads and writes through ``anyio.wrap_file``, which hands every line
read, every write and every flush to a worker thread: about 0.25 ms of each tool call on this
machine (``bench/stdio_rtt.py``). ``stdio_server`` takes its two streams as arguments, so codexmem
gives it these instead: the same text lines, moved by the event loop itself.

As the SDK does for its own streams, fd 0 and fd 1 point at the null device and at stderr while
serving, so a library's stray print or a child process cannot write into the protocol, and both
are put back on exit. Where the standard streams are not pipes (a file, a terminal on some
systems) :func:`claimed_stdio` raises :class:`PipesUnavailable` before changing anything, and the
caller falls back to the SDK's streams.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import stat
from collections.abc import AsyncIterator

log = logging.getLogger("codexmem")

MAX_LINE_BYTES = 64 << 20
"""A request line longer than this is dropped (and logged) rather than buffered."""


class PipesUnavailable(Exception):
    """The standard streams cannot be served as asyncio pipes; use the SDK's streams."""


class LineReader:
    """``async for line in reader``: UTF-8 text lines (newline kept, bad bytes replaced), as the SDK reads them."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> LineReader:
        return self

    async def __anext__(self) -> str:
        while True:
            try:
                line = await self._reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:  # end of input
                if not exc.partial:
                    raise StopAsyncIteration from None
                line = exc.partial
            except asyncio.LimitOverrunError as exc:
                await self._skip_line(exc.consumed)
                continue
            return line.decode("utf-8", errors="replace")

    async def _skip_line(self, consumed: int) -> None:
        log.warning("a request line longer than %d bytes was dropped", MAX_LINE_BYTES)
        while True:
            await self._reader.readexactly(consumed)
            try:
                await self._reader.readuntil(b"\n")
                return
            except asyncio.IncompleteReadError:
                return
            except asyncio.LimitOverrunError as exc:
                consumed = exc.consumed


class _WriteProtocol(asyncio.Protocol):
    """Flow control for the write pipe: ``drain`` waits while the reader of our stdout lags."""

    def __init__(self) -> None:
        self._waiter: asyncio.Future[None] | None = None
        self._lost: Exception | None = None
        self._paused = False

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = exc or BrokenPipeError("stdout closed")
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)
        self._waiter = None

    async def drain(self) -> None:
        while self._paused and self._lost is None:
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter
        if self._lost is not None:
            raise self._lost


class LineWriter:
    """``await writer.write(text)`` then ``await writer.flush()``, as the SDK writes each message."""

    def __init__(self, transport: asyncio.WriteTransport, protocol: _WriteProtocol) -> None:
        self._transport = transport
        self._protocol = protocol

    async def write(self, text: str) -> None:
        self._transport.write(text.encode("utf-8"))
        await self._protocol.drain()

    async def flush(self) -> None:
        """Nothing is buffered here: the transport writes at once (drain waits if the pipe is full)."""
        await self._protocol.drain()


@contextlib.asynccontextmanager
async def claimed_stdio() -> AsyncIterator[tuple[LineReader, LineWriter]]:
    """fd 0 and fd 1 as a line reader and writer on the running loop; restored on exit."""
    loop = asyncio.get_running_loop()
    for fd in (0, 1):
        try:
            if not _is_pipe(fd):
                raise PipesUnavailable(f"fd {fd} is not a pipe or socket")
        except OSError as exc:
            raise PipesUnavailable(f"fd {fd}: {exc}") from None
    saved = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3) for fd in (0, 1)]
    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    read_transport: asyncio.BaseTransport | None = None
    write_transport: asyncio.WriteTransport | None = None
    try:
        reader = asyncio.StreamReader(limit=MAX_LINE_BYTES)
        read_transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(wire_in, "rb", buffering=0)
        )
        write_transport, protocol = await loop.connect_write_pipe(
            _WriteProtocol, os.fdopen(wire_out, "wb", buffering=0)
        )
        yield LineReader(reader), LineWriter(write_transport, protocol)
    finally:
        for transport in (read_transport, write_transport):
            if transport is not None:
                transport.close()
        for fd, original in zip((0, 1), saved, strict=True):
            with contextlib.suppress(OSError):
                os.dup2(original, fd)
            os.close(original)


def _is_pipe(fd: int) -> bool:
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)
