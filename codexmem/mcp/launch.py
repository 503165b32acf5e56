"""``codexmem serve`` from spawn to serving: stdio claimed, the handshake answered, then the SDK.

Everything this module imports runs before the first answer, so it imports only
:mod:`codexmem.mcp.stdio_claim` and :mod:`codexmem.mcp.handshake` (standard library both); the
SDK, the server and logging load after ``tools/list`` is answered (see the handshake module for
why). Where stdio is not pipes, on Windows, and with ``CODEXMEM_STDIO=sdk``, the SDK's own streams
serve from the start, handshake included.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from codexmem.mcp.handshake import answer_handshake
from codexmem.mcp.stdio_claim import claimed_stdio, not_pipes

if TYPE_CHECKING:  # logging and pathlib load after the first answer
    import logging
    from pathlib import Path

STDIO_ENV = "CODEXMEM_STDIO"
"""``CODEXMEM_STDIO=sdk`` serves through the SDK's own (threaded) stdio streams instead of
:mod:`codexmem.mcp.pipes`: a comparison for ``bench/stdio_rtt.py``, and a way out should pipes misbehave."""


def serve(store_path: Callable[[], Path]) -> None:
    """Serve MCP on stdio until the client closes it; ``store_path`` is asked after the handshake."""
    if os.environ.get(STDIO_ENV) == "sdk":
        reason: str | None = f"{STDIO_ENV}=sdk"
    else:
        reason = "Windows" if sys.platform == "win32" else not_pipes()
    if reason is not None:
        _log_to_stderr().info("serving stdio through the SDK's streams: %s", reason)
        if os.isatty(0):
            _at_a_terminal()
        from codexmem.mcp.server import serve_sdk_streams

        serve_sdk_streams(store_path())
        return
    with claimed_stdio() as wire:
        try:
            handover = answer_handshake(wire)
        except OSError:  # the client went away mid-handshake: nobody is left to answer
            return
        if handover.ended:
            return
        _log_to_stderr()
        from codexmem.mcp.server import serve_wire

        serve_wire(store_path(), wire, handover)


def _at_a_terminal() -> None:
    """A person ran ``codexmem serve`` in a terminal: say what it is, and let Ctrl-C end it.

    The SDK's streams read stdin in a thread that Ctrl-C cannot interrupt, so the server went on
    until a line was typed. Here Ctrl-C ends the process as the signal's default does: a write
    in flight is finished by the store's journal on the next start, as after any crash.
    """
    import signal

    print(
        "codexmem serve: the MCP server, speaking JSON-RPC on stdin and stdout; Codex starts it "
        '(README: "Registering the server with Codex"). Ctrl-C ends it.',
        file=sys.stderr,
        flush=True,
    )
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _log_to_stderr() -> logging.Logger:
    import logging

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="codexmem: %(message)s")
    return logging.getLogger("codexmem")
