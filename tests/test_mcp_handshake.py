"""The handshake ``codexmem serve`` answers before importing the SDK, against the SDK's own answers.

Every comparison runs the real server twice over real stdio: by default (the handshake answered
by :mod:`codexmem.mcp.handshake`, then handed over to the SDK) and with ``CODEXMEM_STDIO=sdk``
(the SDK's own streams answer everything), and compares the bytes each writes. Requests the
handshake must leave alone are compared the same way: handing them over unanswered has to give
exactly the SDK's answer.
"""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from mcp.server.lowlevel import Server
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from codexmem.mcp import handshake
from codexmem.mcp.server import build_server
from codexmem.mcp.state import ServerState
from codexmem.store.init import init_store

PYTHON = sys.executable
CODEX_CAPABILITIES = {"experimental": {"codex/auth-change": {}}, "elicitation": {"form": {}, "url": {}}}
CODEX_CLIENT = {"name": "codex-mcp-client", "title": "Codex", "version": "0.169.0"}
INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
SDK_IMPORT = re.compile(r"^import time:.*\| *(mcp|mcp_types|pydantic)(\.\S*)?$")
"""An ``-X importtime`` line for a module of the SDK (or of pydantic, which only the SDK brings in)."""


def _initialize(rid: Any = 0, version: str = "2025-06-18", **params: Any) -> bytes:
    body = {"protocolVersion": version, "capabilities": CODEX_CAPABILITIES, "clientInfo": CODEX_CLIENT, **params}
    return _line({"jsonrpc": "2.0", "id": rid, "method": "initialize", "params": body})


def _initialize_params() -> bytes:
    return json.dumps(json.loads(_initialize())["params"]).encode()


def _tools_list(rid: Any = 1, params: Any = None) -> bytes:
    message = {"jsonrpc": "2.0", "id": rid, "method": "tools/list"}
    return _line(message if params is None else {**message, "params": params})


def _call(rid: Any, name: str = "list_record_channels", arguments: Any = None) -> bytes:
    params = {"name": name, "arguments": {} if arguments is None else arguments}
    return _line({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})


def _line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


class Wire:
    """``codexmem serve`` (or ``command``) over real stdio: lines in, answer lines (raw bytes) out."""

    def __init__(
        self,
        store: Path | None,
        mode: str,
        python_flags: tuple[str, ...] = (),
        merge_stderr: bool = False,
        command: list[str] | None = None,
    ) -> None:
        self.proc = subprocess.Popen(
            command or [PYTHON, *python_flags, "-m", "codexmem", "serve", "--store", str(store)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
            env={**os.environ, "CODEXMEM_STDIO": mode},
        )
        self.buffer = b""
        self.rest = b""
        self.sdk_loading = False
        """With ``-X importtime`` and stderr merged: an SDK module was imported before the last answer read."""

    def send(self, *lines: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"".join(lines))
        self.proc.stdin.flush()

    def line(self, timeout: float = 60) -> bytes:
        """The next line the server writes (an answer, or with merged stderr anything)."""
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            assert left > 0 and select.select([self.proc.stdout], [], [], left)[0], f"no answer; got {self.buffer!r}"
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            assert chunk, f"the server closed its stdout; got {self.buffer[-2000:]!r}"
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line + b"\n"

    def answer(self, timeout: float = 60) -> bytes:
        """The next JSON-RPC message, skipping anything else (stderr lines when merged)."""
        while True:
            line = self.line(timeout)
            if line.startswith(b'{"jsonrpc"'):
                return line
            if SDK_IMPORT.search(line.decode("utf-8", "replace")):
                self.sdk_loading = True

    def close(self) -> int:
        """Close stdin and wait; whatever the server wrote after the lines read is left in ``rest``."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        self.rest = self.buffer + self.proc.stdout.read()
        code = self.proc.wait(timeout=60)
        if self.proc.stderr is not None:
            self.proc.stderr.close()
        self.proc.stdout.close()
        return code


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "store"
    init_store(path, cwd=tmp_path, system_name="handshake")
    return path


Step = tuple[bytes, int]
"""Lines to send, then how many answers to wait for before the next step."""


def _exchange(store: Path, mode: str, steps: list[Step], seen: list[bool] | None = None) -> list[bytes]:
    """The answers to ``steps``; ``seen`` gets, for each, whether the SDK was loading before it was written."""
    traced = seen is not None
    wire = Wire(store, mode, python_flags=("-X", "importtime") if traced else (), merge_stderr=traced)
    answers: list[bytes] = []
    try:
        for lines, count in steps:
            wire.send(lines)
            for _ in range(count):
                answers.append(wire.answer())
                if seen is not None:
                    seen.append(wire.sdk_loading)
    finally:
        code = wire.close()
    assert code == 0
    return answers


def _both(store: Path, steps: list[Step], seen: list[bool] | None = None) -> tuple[list[bytes], list[bytes]]:
    """The answers of the handshake path and of the SDK's own streams, run side by side."""
    with ThreadPoolExecutor(2) as pool:
        fast = pool.submit(_exchange, store, "pipes", steps, seen)
        sdk = pool.submit(_exchange, store, "sdk", steps)
        return fast.result(), sdk.result()


# ------------------------------------------------------------------ the same bytes as the SDK


@pytest.mark.parametrize("version", [*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS, "1999-01-01"])
def test_every_protocol_version_gets_the_sdks_exact_answers(store: Path, version: str) -> None:
    steps = [(_initialize(0, version), 1), (INITIALIZED + _tools_list(1, {"_meta": {"progressToken": 0}}), 1)]
    steps.append((_call(2), 1))
    seen: list[bool] = []
    fast, sdk = _both(store, steps, seen)
    assert fast == sdk
    assert seen == [False, False, True]  # the handshake answered before the SDK loaded; the call, after
    negotiated = version if version in HANDSHAKE_PROTOCOL_VERSIONS else HANDSHAKE_PROTOCOL_VERSIONS[-1]
    assert json.loads(fast[0])["result"]["protocolVersion"] == negotiated
    assert len(json.loads(fast[1])["result"]["tools"]) == len(json.loads(handshake_listing()))
    assert json.loads(fast[2])["result"]["structuredContent"] == {"ok": True, "data": {"channels": []}, "warnings": []}


def handshake_listing() -> bytes:
    return Path(handshake.TOOLS_LIST_FILE).read_bytes()


ANSWERED_SHAPES: dict[str, list[Step]] = {
    "no capabilities, a plain tools/list": [
        (
            _line(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-03-26",
                        "capabilities": {},
                        "clientInfo": {"name": "c", "version": "1"},
                    },
                }
            ),
            1,
        ),
        (INITIALIZED + _tools_list(2), 1),
    ],
    "every client capability and implementation field": [
        (
            _initialize(
                7,
                "2025-11-25",
                capabilities={
                    "roots": {"listChanged": True},
                    "sampling": {"context": {}, "tools": {}},
                    "elicitation": {"form": {}, "url": {}},
                    "experimental": {"x": {"y": [1, "z", None]}},
                    "tasks": {"list": {}, "cancel": {}, "requests": {"sampling": {"createMessage": {}}}},
                    "somethingNew": [1, 2],
                },
                clientInfo={
                    "name": "n",
                    "version": "v",
                    "title": "T",
                    "description": "d",
                    "websiteUrl": "https://example.org",
                },
            ),
            1,
        ),
        (_tools_list(8, {"cursor": "ignored"}), 1),
        (_call(9), 1),
    ],
    "string ids with escapes and non-ASCII": [
        (_initialize('ä"\\\n\u2028😀\x01'), 1),
        (_tools_list("tools \t/list \u00e9"), 1),
    ],
    "the largest 64-bit ids": [(_initialize(2**63 - 1), 1), (_tools_list(-(2**63)), 1)],
    "tools/list before notifications/initialized": [(_initialize(1), 1), (_tools_list(2) + INITIALIZED, 1)],
}


@pytest.mark.parametrize("steps", ANSWERED_SHAPES.values(), ids=ANSWERED_SHAPES.keys())
def test_each_shape_the_handshake_answers_matches_the_sdk(store: Path, steps: list[Step]) -> None:
    seen: list[bool] = []
    fast, sdk = _both(store, steps, seen)
    assert fast == sdk
    assert all(b'"result"' in answer for answer in fast)
    assert seen[:2] == [False, False]  # initialize and tools/list: answered before the SDK loaded


HANDED_OVER: dict[str, list[Step]] = {
    "initialize whose roots.listChanged is not a boolean": [
        (_initialize(1, capabilities={"roots": {"listChanged": "yes"}}), 1),
        (_tools_list(2), 1),
    ],
    "initialize with _meta": [(_initialize(1, _meta={"progressToken": 5}), 1), (_tools_list(2), 1)],
    "initialize with client icons": [
        (_initialize(1, clientInfo={**CODEX_CLIENT, "icons": [{"src": "https://example.org/i.png"}]}), 1),
        (_tools_list(2), 1),
    ],
    "an id past 64 bits": [(_initialize(2**64), 1), (_tools_list(2**70), 1)],
    "a duplicated key": [
        (b'{"jsonrpc":"2.0","id":1,"id":2,"method":"initialize","params":' + _initialize_params() + b"}\n", 1),
        (_tools_list(3), 1),
    ],
    "an escaped surrogate in clientInfo": [
        (_initialize(1, clientInfo={"name": "\ud800", "version": "1"}), 1),
        (_initialize(2), 1),
        (_tools_list(3), 1),
    ],
    "tools/list before initialize": [(_tools_list(1), 1), (_initialize(2), 1), (_tools_list(3), 1)],
    "a ping during the handshake": [(_initialize(1), 1), (_line({"jsonrpc": "2.0", "id": 2, "method": "ping"}), 1)],
    "initialize twice": [(_initialize(1), 1), (_initialize(2, "2024-11-05"), 1), (_tools_list(3), 1)],
    "tools/list with a non-string cursor": [(_initialize(1), 1), (_tools_list(2, {"cursor": 5}), 1)],
    "a 2026-07-28 request with no handshake": [
        (
            _tools_list(
                1,
                {
                    "_meta": {
                        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                        "io.modelcontextprotocol/clientInfo": CODEX_CLIENT,
                        "io.modelcontextprotocol/clientCapabilities": {},
                    }
                },
            ),
            1,
        ),
        (_initialize(2), 1),
    ],
}


@pytest.mark.parametrize("steps", HANDED_OVER.values(), ids=HANDED_OVER.keys())
def test_what_the_handshake_leaves_to_the_sdk_is_answered_as_the_sdk_answers_it(store: Path, steps: list[Step]) -> None:
    fast, sdk = _both(store, steps)
    assert fast == sdk
    assert len(fast) == sum(count for _, count in steps)


# ------------------------------------------------------------------ before the SDK, and after it

BEFORE_THE_ANSWER_FORBIDDEN = re.compile(
    r"\| *(mcp|mcp_types|pydantic|pydantic_core|anyio|asyncio|logging|sqlite3|yaml|codexmem\.mcp\.server"
    r"|codexmem\.mcp\.(memory|record)_tools|codexmem\.store\.store|codexmem\.records|codexmem\.memory)(\.|$)"
)


def _imports(text: str) -> list[str]:
    return [line.rsplit("|", 1)[-1].strip() for line in text.splitlines() if line.startswith("import time:")]


def test_the_handshake_is_answered_before_the_sdk_or_the_store_is_imported(store: Path) -> None:
    """stderr shares stdout's pipe, so every import finished before an answer is written ahead of it."""
    wire = Wire(store, "pipes", python_flags=("-X", "importtime"), merge_stderr=True)
    try:
        wire.send(_initialize(0), INITIALIZED, _tools_list(1), _call(2))
        before: list[bytes] = []
        while not (line := wire.line()).startswith(b'{"jsonrpc":"2.0","id":1,'):
            before.append(line)
        after = []
        while not (line := wire.line()).startswith(b'{"jsonrpc":"2.0","id":2,'):
            after.append(line)
        assert b'"structuredContent":{"ok":true' in line
    finally:
        assert wire.close() == 0
    imported_before = _imports(b"".join(before).decode())
    assert "codexmem.mcp.handshake" in imported_before
    assert [name for name in imported_before if BEFORE_THE_ANSWER_FORBIDDEN.search(f"| {name}")] == []
    imported_after = _imports(b"".join(after).decode())
    assert {"mcp", "pydantic", "codexmem.mcp.server", "codexmem.mcp.transport"} <= set(imported_after)


def test_requests_sent_while_the_sdk_loads_are_all_answered(store: Path) -> None:
    """Everything at once: the handshake answers two, the SDK the rest, and no answer is doubled."""
    wire = Wire(store, "pipes")
    lines = [_initialize(0), INITIALIZED, _tools_list(1), _call(2), _call(3, "no_such_tool")]
    lines += [_line({"jsonrpc": "2.0", "id": 4, "method": "ping"}), _tools_list(5), _call(6)]
    try:
        wire.send(*lines)
        answers = [json.loads(wire.answer()) for _ in range(7)]
    finally:
        assert wire.close() == 0
    assert wire.rest == b""  # the SDK's answer to the replayed initialize never reaches the client
    by_id = {a["id"]: a for a in answers}
    assert sorted(by_id) == [0, 1, 2, 3, 4, 5, 6]
    assert by_id[1]["result"] == by_id[5]["result"]
    assert by_id[2]["result"]["structuredContent"]["ok"] is True
    assert by_id[3]["result"]["structuredContent"]["error"]["code"] == "ERR_INVALID_INPUT"
    assert by_id[4]["result"] == {}


def test_a_client_idle_after_initialize_gets_the_sdk_loaded_meanwhile(store: Path) -> None:
    wire = Wire(store, "pipes", python_flags=("-X", "importtime"), merge_stderr=True)
    try:
        wire.send(_initialize(0))
        assert wire.answer().startswith(b'{"jsonrpc":"2.0","id":0,"result"')
        time.sleep(handshake.IDLE_HANDOVER_S + 1.5)
        wire.send(INITIALIZED, _tools_list(1))
        before: list[bytes] = []
        while not (line := wire.line()).startswith(b'{"jsonrpc":"2.0","id":1,'):
            before.append(line)
    finally:
        assert wire.close() == 0
    assert "mcp" in _imports(b"".join(before).decode())  # loaded while the client said nothing
    assert line == _exchange(store, "sdk", [(_initialize(0), 1), (INITIALIZED + _tools_list(1), 1)])[1]


def test_a_client_that_leaves_during_the_handshake_ends_the_server_without_the_sdk(store: Path) -> None:
    done = subprocess.run(
        [PYTHON, "-X", "importtime", "-m", "codexmem", "serve", "--store", str(store)],
        input=_initialize(0) + INITIALIZED,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0
    assert done.stdout.startswith(b'{"jsonrpc":"2.0","id":0,"result":{"capabilities"')
    assert "mcp" not in _imports(done.stderr.decode())


# ------------------------------------------------------------------ the SDK's session, as if it saw the handshake

PROBE = textwrap.dedent(
    """
    import json, os, sys
    from codexmem.mcp.handshake import answer_handshake
    from codexmem.mcp.stdio_claim import claimed_stdio

    def probe_server():
        import mcp_types as types
        from mcp.server.lowlevel import Server

        async def on_call_tool(ctx, params):
            session = ctx.session
            seen = {
                "version": session.protocol_version,
                "client": session.client_params.model_dump(mode="json", by_alias=True, exclude_none=True),
            }
            return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(seen))])

        async def on_list_tools(ctx, params):
            return types.ListToolsResult(tools=[])

        return Server("probe", on_call_tool=on_call_tool, on_list_tools=on_list_tools)

    if sys.argv[1] == "handshake":
        with claimed_stdio() as wire:
            handover = answer_handshake(wire)
            import anyio
            from codexmem.mcp.transport import serve_wire
            anyio.run(serve_wire, probe_server(), wire, handover)
    else:
        import anyio
        from mcp.server.stdio import stdio_server

        async def main():
            server = probe_server()
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())

        anyio.run(main)
    """
)


@pytest.mark.parametrize("version", ["2024-11-05", "2025-11-25", "2030-01-01"])
def test_the_sdk_session_holds_the_clients_initialize_as_if_it_had_answered_it(version: str) -> None:
    seen = {}
    for mode in ("handshake", "sdk"):
        wire = Wire(None, "pipes", command=[PYTHON, "-c", PROBE, mode])
        try:
            wire.send(_initialize(0, version), INITIALIZED, _tools_list(1), _call(2, "probe"))
            answers = {m["id"]: m for m in (json.loads(wire.answer()) for _ in range(3))}
        finally:
            assert wire.close() == 0
        assert sorted(answers) == [0, 1, 2]
        seen[mode] = json.loads(answers[2]["result"]["content"][0]["text"])
    assert seen["handshake"] == seen["sdk"]
    negotiated = version if version in HANDSHAKE_PROTOCOL_VERSIONS else HANDSHAKE_PROTOCOL_VERSIONS[-1]
    assert seen["handshake"]["version"] == negotiated
    assert seen["handshake"]["client"] == {
        "protocolVersion": version,
        "capabilities": CODEX_CAPABILITIES,
        "clientInfo": CODEX_CLIENT,
    }


# ------------------------------------------------------------------ what the handshake takes from the SDK


def test_the_handshake_constants_are_the_sdks() -> None:
    """Names an SDK upgrade that changes what the handshake must say (the byte tests show the effect)."""
    from mcp_types._v2025_11_25 import InputSchema

    assert handshake.HANDSHAKE_VERSIONS == HANDSHAKE_PROTOCOL_VERSIONS
    declared = tuple(field.alias or name for name, field in InputSchema.model_fields.items())
    assert declared == handshake.SCHEMA_FIELDS
    server: Server[Any] = build_server(ServerState(Path("no-store")))
    capabilities = server.get_capabilities().model_dump(mode="json", by_alias=True, exclude_none=True)
    assert capabilities == handshake.CAPABILITIES
    options = server.create_initialization_options()
    assert (options.server_name, options.instructions) == (handshake.SERVER_NAME, handshake.INSTRUCTIONS)
