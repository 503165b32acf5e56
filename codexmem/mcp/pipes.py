"""The server's wire as asyncio pipes: lines read and written by the event loop, without worker threads.

The SDK's ``stdio_server`` reads and writes through ``anyio.wrap_file``, which hands every line
read, every write and every flush to a worker thread: about 0.25 ms of each tool call on this
machine (``bench/stdio_rtt.py``). codexmem moves the same text lines on the event loop itself,
over the descriptors :mod:`codexmem.mcp.stdio_claim` took from fd 0 and fd 1 before the handshake.

A line longer than :data:`MAX_LINE_BYTES` is never buffered whole: the reader keeps its first
:data:`HEAD_BYTES` (where the request's id usually is) and skips the rest, so the caller can
still answer it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator

from codexmem.mcp.stdio_claim import Wire

MAX_LINE_BYTES = 64 << 20
"""A request line longer than this is answered "request too large" rather than buffered."""
HEAD_BYTES = 64 << 10
"""How much of an over-long line is kept, to find the request's id in."""
WRITE_OUT_S = 10.0
"""On closing, how long answers still buffered may wait for the client to read them."""


class TooLong:
    """An over-long line: its first :data:`HEAD_BYTES` bytes (the rest was skipped)."""

    __slots__ = ("head",)

    def __init__(self, head: bytes) -> None:
        self.head = head


class LineReader:
    """``async for line in reader``: UTF-8 text lines (newline kept, bad bytes replaced), or :class:`TooLong`."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> LineReader:
        return self

    async def __anext__(self) -> str | TooLong:
        try:
            line = await self._reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:  # end of input
            if not exc.partial:
                raise StopAsyncIteration from None
            line = exc.partial
        except asyncio.LimitOverrunError as exc:
            return await self._skip_line(exc.consumed)
        return line.decode("utf-8", errors="replace")

    async def _skip_line(self, consumed: int) -> TooLong:
        """Keep the head of the line, drop the rest up to and including its newline (or the end of input)."""
        head = await self._reader.readexactly(min(consumed, HEAD_BYTES))
        consumed -= len(head)
        while True:
            while consumed:  # bytes known to hold no newline: discard them a chunk at a time
                consumed -= len(await self._reader.readexactly(min(consumed, 1 << 20)))
            try:
                await self._reader.readuntil(b"\n")
                return TooLong(head)
            except asyncio.IncompleteReadError:
                return TooLong(head)
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

    async def written_out(self) -> None:
        """Wait until the transport has handed every byte to the pipe (the reader may still lag)."""
        self._transport.set_write_buffer_limits(high=0)  # pauses the protocol while anything is buffered
        await self._protocol.drain()


@contextlib.asynccontextmanager
async def open_pipes(wire: Wire, unread: bytes = b"") -> AsyncIterator[tuple[LineReader, LineWriter]]:
    """The wire as a line reader and writer on the running loop; ``unread`` is read before the pipe.

    The transports take over (and close) the wire's descriptors.
    """
    loop = asyncio.get_running_loop()
    fd_in, fd_out = wire.take()
    read_file, write_file = os.fdopen(fd_in, "rb", buffering=0), os.fdopen(fd_out, "wb", buffering=0)
    read_transport: asyncio.BaseTransport | None = None
    write_transport: asyncio.WriteTransport | None = None
    try:
        reader = asyncio.StreamReader(limit=MAX_LINE_BYTES)
        if unread:
            reader.feed_data(unread)
        read_transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), read_file)
        write_transport, protocol = await loop.connect_write_pipe(_WriteProtocol, write_file)
        writer = LineWriter(write_transport, protocol)
        yield LineReader(reader), writer
        with contextlib.suppress(OSError, TimeoutError):  # a client gone or not reading: nothing more to do
            async with asyncio.timeout(WRITE_OUT_S):  # answers still buffered are written before the pipe closes
                await writer.written_out()
    finally:  # a transport closes its pipe once written out; a pipe never connected is closed here
        for transport, file in ((read_transport, read_file), (write_transport, write_file)):
            if transport is not None:
                transport.close()
            else:
                file.close()
