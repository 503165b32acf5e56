"""The server's stdio: codexmem's asyncio pipes, and the SDK's streams where pipes cannot serve.

Pipes carry every other stdio test too (the fuzz test sends raw bytes through them); these check
what is particular to them: stray output kept off the wire, the handshake's unread bytes read
first, an oversized line cut to its head without losing the next one, the fallback when stdout
is a file, and the ``CODEXMEM_STDIO=sdk`` escape. What the server answers to such lines is in
``test_mcp_every_line.py``; that the handshake comes before the SDK, in ``test_mcp_handshake.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

from hardening_fixtures import RawServer

from codexmem.store.init import init_store

PYTHON = sys.executable
INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "pipes", "version": "1"}}


def _line(rid: int | None, method: str, params: dict[str, Any]) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if rid is not None:
        message["id"] = rid
    return json.dumps(message).encode() + b"\n"


def _session(tool_calls: list[tuple[str, dict[str, Any]]]) -> bytes:
    lines = [_line(1, "initialize", INIT), _line(None, "notifications/initialized", {}), _line(2, "tools/list", {})]
    lines += [_line(10 + i, "tools/call", {"name": n, "arguments": a}) for i, (n, a) in enumerate(tool_calls)]
    return b"".join(lines)


def _answers(stdout: bytes) -> dict[int, dict[str, Any]]:
    messages = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    return {m["id"]: m for m in messages if "id" in m}


def _serve(tmp_path: Path, *, stdout: Any, stderr: Any, python_flags: tuple[str, ...] = ()) -> subprocess.Popen[bytes]:
    """``codexmem serve`` on a new store, its stdin a pipe (write requests to ``proc.stdin``)."""
    store = tmp_path / "store"
    init_store(store, cwd=tmp_path, system_name="pipes")
    return subprocess.Popen(
        [PYTHON, *python_flags, "-m", "codexmem", "serve", "--store", str(store)],
        stdin=subprocess.PIPE,
        stdout=stdout,
        stderr=stderr,
        env=dict(os.environ),
    )


def test_stdout_to_a_file_is_served_through_the_sdk_streams(tmp_path: Path) -> None:
    out = tmp_path / "answers.jsonl"
    with out.open("wb") as stdout:
        proc = _serve(tmp_path, stdout=stdout, stderr=subprocess.PIPE)
        assert proc.stdin is not None and proc.stderr is not None
        proc.stdin.write(_session([("list_record_channels", {}), ("no_such_tool", {})]))
        proc.stdin.flush()
        deadline = time.monotonic() + 60
        while len(_answers(out.read_bytes())) < 4 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0, proc.stderr.read().decode()
    answers = _answers(out.read_bytes())
    assert sorted(answers) == [1, 2, 10, 11], out.read_bytes()[:2000]
    assert {t["name"] for t in answers[2]["result"]["tools"]} >= {"list_record_channels", "edit_record_item"}
    assert answers[10]["result"]["structuredContent"] == {"ok": True, "data": {"channels": []}, "warnings": []}
    assert answers[11]["result"]["structuredContent"]["error"]["code"] == "ERR_INVALID_INPUT"


def test_the_sdk_streams_and_the_pipes_answer_alike(tmp_path: Path) -> None:
    store = tmp_path / "store"
    init_store(store, cwd=tmp_path, system_name="pipes")
    envelopes = []
    for mode in ("pipes", "sdk"):
        env = {**os.environ, "CODEXMEM_STDIO": mode}
        server = RawServer(store, env=env, cwd=tmp_path)
        try:
            server.initialize()
            envelopes.append([server.call("list_record_channels", {}), server.call("memory_get_note", {"id": "x"})])
        finally:
            assert server.close() == 0, server.stderr()
    assert envelopes[0] == envelopes[1]
    assert envelopes[0][0] == {"ok": True, "data": {"channels": []}, "warnings": []}
    assert envelopes[0][1] is not None and envelopes[0][1]["error"]["code"] == "ERR_INVALID_INPUT"


ECHO = textwrap.dedent(
    """
    import asyncio, os, sys
    from codexmem.mcp import pipes
    from codexmem.mcp.stdio_claim import claimed_stdio
    pipes.MAX_LINE_BYTES = int(sys.argv[1])
    pipes.HEAD_BYTES = 10

    async def main(wire):
        async with pipes.open_pipes(wire, sys.argv[2].encode()) as (reader, writer):
            async for line in reader:
                print("stray print while serving", flush=True)  # fd 1 is stderr now
                os.write(1, b"stray write to fd 1\\n")
                if isinstance(line, pipes.TooLong):
                    line = "too long, starting " + repr(line.head) + "\\n"
                await writer.write("echo:" + line)
                await writer.flush()

    with claimed_stdio() as wire:
        asyncio.run(main(wire))
    print("after serving", flush=True)  # fd 1 is the wire again
    """
)


def _echo(stdin: bytes, max_line: int = 1 << 20, unread: str = "") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [PYTHON, "-c", ECHO, str(max_line), unread], input=stdin, capture_output=True, timeout=60, check=False
    )


def test_stray_output_while_serving_goes_to_stderr_never_onto_the_wire() -> None:
    done = _echo(b"one\ntwo \xff\nthree")
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == "echo:one\necho:two \ufffd\necho:three".encode() + b"after serving\n"
    assert done.stderr.count(b"stray print while serving") == 3
    assert done.stderr.count(b"stray write to fd 1") == 3


def test_what_the_handshake_left_unread_is_read_before_the_pipe() -> None:
    done = _echo(b"rest of a line\nnext\n", unread="replayed\nthe start, ")
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == b"echo:replayed\necho:the start, rest of a line\necho:next\nafter serving\n"


def test_a_line_over_the_limit_comes_out_as_its_head_and_the_next_one_is_read() -> None:
    done = _echo(b"short\n" + b"0123456789abcdef" * 500 + b"\nafter\n" + b"x" * 3000, max_line=1000)
    assert done.returncode == 0, done.stderr.decode()
    expected = b"echo:short\necho:too long, starting b'0123456789'\necho:after\necho:too long, starting b'xxxxxxxxxx'\n"
    assert done.stdout == expected + b"after serving\n"
