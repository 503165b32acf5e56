"""Lines on the wire to the SDK's messages and back, after the handshake.

What the SDK's ``stdio_server`` does between its streams and the server (parse each line, write
each message as one line of ``model_dump_json``), over :mod:`codexmem.mcp.pipes`, with what it
cannot do: the handshake's unread lines come first, the SDK's answer to the replayed
``initialize`` is dropped (the client already has it), and every line it would drop reaches
:class:`~codexmem.mcp.inbound.AnswerEveryLine` to be answered: as :class:`RefusedLine` when it
is not a message (or is a request whose id the SDK would ignore, reading it as a notification),
as :class:`RequestTooLarge` when it is over the cap.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

from codexmem.mcp.handshake import Handover
from codexmem.mcp.inbound import AnswerEveryLine, RefusedLine, RequestTooLarge
from codexmem.mcp.pipes import MAX_LINE_BYTES, LineReader, LineWriter, TooLong, open_pipes
from codexmem.mcp.stdio_claim import Wire

log = logging.getLogger("codexmem")


async def serve_wire(server: Any, wire: Wire, handover: Handover) -> None:
    """Run ``server`` (the SDK's low-level Server) over the wire until the client closes it."""
    read_in, read_out = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_in, write_out = anyio.create_memory_object_stream[SessionMessage](0)
    reading = anyio.CancelScope()

    async def read_lines(reader: LineReader) -> None:
        with reading:
            await _read_lines(reader, read_in)

    async with open_pipes(wire, handover.unread) as (reader, writer), anyio.create_task_group() as tasks:
        tasks.start_soon(read_lines, reader)
        tasks.start_soon(_write_lines, writer, write_out, handover.replay_id)  # ends when the server closes write_in
        await server.run(AnswerEveryLine(read_out, write_in), write_in, server.create_initialization_options())
        reading.cancel()


async def _read_lines(reader: LineReader, messages: Any) -> None:
    async with messages:
        async for line in reader:
            if isinstance(line, TooLong):
                await messages.send(RequestTooLarge(line.head, MAX_LINE_BYTES))
                continue
            try:
                message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
            except Exception:  # AnswerEveryLine reads the line again and answers it
                await messages.send(RefusedLine(line))
                continue
            if isinstance(message, types.JSONRPCNotification) and _has_id(line):
                await messages.send(RefusedLine(line))  # an id the SDK ignores (1.5, true, null): not a notification
                continue
            await messages.send(SessionMessage(message))


def _has_id(line: str) -> bool:
    """Whether a line the SDK read as a notification has a top-level ``id`` after all."""
    if '"id"' not in line:
        return False
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        return False
    return isinstance(data, dict) and "id" in data


async def _write_lines(writer: LineWriter, messages: Any, replay_id: str | None) -> None:
    async with messages:
        async for item in messages:
            message = item.message
            answer = isinstance(message, types.JSONRPCResponse | types.JSONRPCError)
            if replay_id is not None and answer and getattr(message, "id", None) == replay_id:
                replay_id = None  # the client has this answer already, from the handshake
                if isinstance(message, types.JSONRPCError):
                    log.error("the SDK refused the replayed initialize: %s", message.error.message)
                continue
            await writer.write(message.model_dump_json(by_alias=True, exclude_unset=True) + "\n")
