"""The MCP handshake, answered before the SDK is imported.

Codex waits about a second for an optional server's tools before its first model request, and
importing the MCP SDK is nearly all of a cold start (~400 ms on an idle core, far more on a busy
machine). So ``codexmem serve`` answers ``initialize`` and ``tools/list`` itself, with the bytes
the SDK would send (``tests/test_mcp_handshake.py`` compares the two paths for every protocol
version), and then hands over: the SDK reads the client's ``initialize`` again under a private id
(its duplicate answer is dropped, see :mod:`codexmem.mcp.transport`), the
``notifications/initialized`` that followed, and then every line not yet answered, in order.

Only what is certain is answered here. Anything else, or any doubt (an unknown field type,
duplicate keys, an unpaired surrogate, an id that is not a string or an integer), ends the
handshake unanswered and the SDK answers it exactly as it would have. Standard library only:
everything imported here is paid before the first answer.
"""

from __future__ import annotations

import json
import os
import re
import select
from typing import Any

from codexmem import __version__
from codexmem.mcp.stdio_claim import Wire

SERVER_NAME = "codexmem"
INSTRUCTIONS = (
    "codexmem keeps this project's memory in its git repository. Call memory_bootstrap_session at the start, "
    "memory_save_note for lasting decisions, bugfixes, discoveries and constraints, and memory_save_handoff "
    "before you stop. Record channels: read the schema from list_record_items and send option values, not labels."
)
CAPABILITIES: dict[str, Any] = {"tools": {"listChanged": False}}
"""What the SDK's server derives from its handlers (tools only, no change notifications)."""
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""The SDK's ``HANDSHAKE_PROTOCOL_VERSIONS``: a requested one is accepted, otherwise the newest is offered."""
TOOLS_LIST_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tools_list.json")
"""The ``tools/list`` entries, built from the tool specs ahead of time (``tests/test_tools_list.py``)."""
SCHEMA_FIELDS = ("$schema", "properties", "required", "type")
"""The fields the SDK's wire model of a tool schema declares: it writes them first, in this order,
then the schema's other keys as given. Tools and annotations it writes in field-name order."""

REPLAY_ID = "codexmem/handshake-replay"
"""The id under which the SDK reads the client's ``initialize`` again."""
MAX_HANDSHAKE_LINE = 1 << 20
"""A handshake line is small; a longer one is left to the SDK (and its cap) unread."""
IDLE_HANDOVER_S = 1.0
"""With ``initialize`` answered and no further line for this long, the SDK is loaded while idle."""

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
"""What JSON's escapes can put in a string and the SDK's parser refuses (a pair decodes to one character)."""


class Handover:
    """Where the SDK takes over: ``unread`` is read before the wire (the replayed handshake first)."""

    __slots__ = ("ended", "replay_id", "unread")

    def __init__(self, unread: bytes, replay_id: str | None, ended: bool) -> None:
        self.unread = unread
        self.replay_id = replay_id
        """The id of the replayed ``initialize``, whose answer is not sent; None if nothing was answered."""
        self.ended = ended
        """The client closed its end with nothing left to answer: there is nothing to serve."""


def answer_handshake(wire: Wire) -> Handover:
    """Answer ``initialize`` and then ``tools/list`` on the wire, as long as each is certain."""
    buffer = bytearray()
    replay: list[bytes] = []
    answered = False
    while True:
        end = buffer.find(b"\n")
        if end < 0:
            if len(buffer) > MAX_HANDSHAKE_LINE or (answered and not _readable(wire.fd_in, IDLE_HANDOVER_S)):
                break
            chunk = os.read(wire.fd_in, 65536)
            if not chunk:
                return Handover(b"".join(replay) + bytes(buffer), REPLAY_ID if answered else None, ended=not buffer)
            buffer += chunk
            continue
        line = bytes(buffer[: end + 1])
        if line.strip():
            message = _parse(line)
            if message is None:
                break
            if not answered:
                version = _initialize_version(message)
                if version is None:
                    break
                _write_all(wire.fd_out, _answer(message["id"], _initialize_result(version)))
                replay.append(json.dumps({**message, "id": REPLAY_ID}).encode() + b"\n")
                answered = True
            elif _is_initialized_notification(message):
                replay.append(line)
            elif _is_plain_tools_list(message):
                _write_all(wire.fd_out, _answer(message["id"], _tools_list_result()))
                del buffer[: end + 1]
                break
            else:
                break
        del buffer[: end + 1]
    return Handover(b"".join(replay) + bytes(buffer), REPLAY_ID if answered else None, ended=False)


# ------------------------------------------------------------------ what is certain


def _parse(line: bytes) -> dict[str, Any] | None:
    """The line as a JSON object, or None for anything the SDK's parser might read differently."""
    try:
        value = json.loads(line.decode("utf-8"), object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) and not has_lone_surrogate(value) else None


def has_lone_surrogate(value: Any) -> bool:
    """Whether a string anywhere in ``value`` (keys too) holds an unpaired UTF-16 surrogate: JSON can
    carry one, but no UTF-8 file, answer or log line can."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str) and _LONE_SURROGATE.search(item):
            return True
    return False


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise ValueError("duplicate key")
    return result


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _request_id_ok(message: dict[str, Any], method: str) -> bool:
    rid = message.get("id")
    return (
        message.keys() <= {"jsonrpc", "id", "method", "params"}
        and message.get("jsonrpc") == "2.0"
        and message.get("method") == method
        and (isinstance(rid, str) or (type(rid) is int and -(2**63) <= rid < 2**63))
    )


def _initialize_version(message: dict[str, Any]) -> str | None:
    """The protocol version to answer a plain ``initialize`` with, else None."""
    params = message.get("params")
    if not _request_id_ok(message, "initialize") or not isinstance(params, dict) or "_meta" in params:
        return None
    version = params.get("protocolVersion")
    if not (isinstance(version, str) and _plain_capabilities(params.get("capabilities"))):
        return None
    if not _plain_implementation(params.get("clientInfo")):
        return None
    return version if version in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1]


def _plain_capabilities(value: Any) -> bool:
    """Known client capabilities are objects all the way down (``roots.listChanged`` a boolean)."""
    if not isinstance(value, dict):
        return False
    roots = value.get("roots", {})
    if not isinstance(roots, dict) or roots.keys() - {"listChanged"}:
        return False
    if not isinstance(roots.get("listChanged", False), bool):
        return False
    experimental = value.get("experimental", {})
    if not isinstance(experimental, dict) or not all(isinstance(v, dict) for v in experimental.values()):
        return False
    return all(_objects_only(value.get(key, {})) for key in ("elicitation", "sampling", "tasks"))


def _objects_only(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if not isinstance(item, dict):
            return False
        stack.extend(item.values())
    return True


def _plain_implementation(value: Any) -> bool:
    if not isinstance(value, dict) or "icons" in value:
        return False
    required = all(isinstance(value.get(key), str) for key in ("name", "version"))
    return required and all(isinstance(value.get(key, ""), str) for key in ("title", "description", "websiteUrl"))


def _is_initialized_notification(message: dict[str, Any]) -> bool:
    return message.get("method") == "notifications/initialized" and "id" not in message


def _is_plain_tools_list(message: dict[str, Any]) -> bool:
    params = message.get("params")
    if not _request_id_ok(message, "tools/list"):
        return False
    if params is None:
        return True
    if not isinstance(params, dict) or params.keys() - {"cursor", "_meta"}:
        return False
    if not isinstance(params.get("cursor", ""), str):
        return False
    meta = params.get("_meta", {})
    if not isinstance(meta, dict) or meta.keys() - {"progressToken"}:
        return False
    token = meta.get("progressToken", "")
    return isinstance(token, str) or (type(token) is int and -(2**63) <= token < 2**63)


# ------------------------------------------------------------------ the answers, as the SDK writes them


def _answer(request_id: int | str, result: str) -> bytes:
    rid = json.dumps(request_id, ensure_ascii=False)
    return f'{{"jsonrpc":"2.0","id":{rid},"result":{result}}}\n'.encode()


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _initialize_result(version: str) -> str:
    result = {
        "capabilities": CAPABILITIES,
        "instructions": INSTRUCTIONS,
        "protocolVersion": version,
        "serverInfo": {"name": SERVER_NAME, "version": __version__},
    }
    return _dumps(result)


_tools_list: str | None = None


def _tools_list_result() -> str:
    global _tools_list
    if _tools_list is None:
        with open(TOOLS_LIST_FILE, "rb") as file:
            tools = json.loads(file.read())
        _tools_list = _dumps({"tools": [_wire_tool(tool) for tool in tools]})
    return _tools_list


def _wire_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """A ``tools_list.json`` entry with its keys in the order the SDK writes them."""
    wire = {key: tool[key] for key in sorted(tool)}
    if isinstance(wire.get("annotations"), dict):
        wire["annotations"] = {key: wire["annotations"][key] for key in sorted(wire["annotations"])}
    for name in ("inputSchema", "outputSchema"):
        schema = wire.get(name)
        if isinstance(schema, dict):
            declared = {key: schema[key] for key in SCHEMA_FIELDS if key in schema}
            wire[name] = {**declared, **{key: value for key, value in schema.items() if key not in declared}}
    return wire


# ------------------------------------------------------------------ blocking I/O on the wire


def _readable(fd: int, timeout: float) -> bool:
    return bool(select.select([fd], [], [], timeout)[0])


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
