"""Tool specs: name, input model, handler, annotations; and argument validation to envelopes.

The SDK's own argument validation answers in plain text, which a model cannot act on, so tools
are registered with the low-level server and validated here: every problem becomes
ERR_INVALID_INPUT with ``error.fields`` naming each bad field, while the published input schema
(generated from the same pydantic model) stays precise.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError

from codexmem.errors import CodexmemError, Warnings, control_problem, validation_fields

if TYPE_CHECKING:
    from codexmem.mcp.state import ServerState

Handler = Callable[["ServerState", Any, Warnings], dict[str, Any]]


class ToolInput(BaseModel):
    """Base of every tool's input model: unknown keys and type coercion are refused."""

    model_config = ConfigDict(extra="forbid", strict=True)


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    input_model: type[ToolInput]
    handler: Handler
    read_only: bool
    destructive: bool = False
    idempotent: bool = False
    title: str | None = None
    checks_own_text: tuple[str, ...] = ()
    """Arguments whose control characters the handler reports itself, with their other failures
    (an item's ``values``: every field's problems in one answer, as ``error.fields[].key``)."""

    def input_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = _strip_titles(self.input_model.model_json_schema())
        for name, prop in schema.get("properties", {}).items():
            schema["properties"][name] = _omittable(prop)
        return schema


def parse_arguments(spec: ToolSpec, arguments: dict[str, Any] | None) -> ToolInput:
    """Validate raw arguments against the tool's model, as one ERR_INVALID_INPUT listing every field."""
    try:
        parsed = spec.input_model.model_validate(arguments or {})
    except ValidationError as exc:
        raise _refusal(validation_fields(exc, unknown="unknown argument", root="(arguments)")) from None
    except (RecursionError, ValueError) as exc:
        message = f"could not be read: {exc}"[:300]
        raise CodexmemError(
            "ERR_INVALID_INPUT", f"arguments {message}", fields=[{"field": "(arguments)", "message": message}]
        ) from None

    controls = _control_characters({k: v for k, v in (arguments or {}).items() if k not in spec.checks_own_text})
    if controls:
        raise _refusal(controls)
    return parsed


MAX_FIELD_CHARS = 100
MAX_FIELDS_BYTES = 6000


def _control_characters(arguments: dict[str, Any]) -> list[dict[str, str]]:
    """A refusal for each string in the arguments that holds a control character, named as pydantic
    names fields (``values.title``, ``file_paths[2]``); walked with a list, not recursion (a json
    value may nest deeply)."""
    found: list[dict[str, str]] = []
    todo: list[tuple[str, Any]] = [(str(k), v) for k, v in reversed(arguments.items())]
    while todo:
        field, value = todo.pop()
        if isinstance(value, dict):
            todo += [(f"{field}.{k}", v) for k, v in reversed(value.items())]
        elif isinstance(value, list):
            todo += [(f"{field}[{i}]", v) for i, v in reversed(list(enumerate(value)))]
        elif isinstance(value, str) and (problem := control_problem(value)) is not None:
            found.append({"field": field, "message": problem})
    return found


def _refusal(fields: list[dict[str, str]]) -> CodexmemError:
    """One ERR_INVALID_INPUT naming every bad field (the first in its message), within the budget."""
    for entry in fields:  # a field name is whatever key the caller sent: cut, so the answer stays in budget
        if len(entry["field"]) > MAX_FIELD_CHARS:
            entry["field"] = entry["field"][:MAX_FIELD_CHARS] + "…"
    first = fields[0]
    kept = _within(fields[:20], MAX_FIELDS_BYTES)
    more = f" (and {len(fields) - 1} more)" if len(fields) > 1 else ""
    return CodexmemError("ERR_INVALID_INPUT", f"{first['field']}: {first['message']}{more}", fields=kept)


def _within(fields: list[dict[str, str]], budget: int) -> list[dict[str, str]]:
    """The leading entries whose compact JSON stays within ``budget`` bytes (at least one)."""
    kept: list[dict[str, str]] = []
    used = 0
    for entry in fields:
        used += len(json.dumps(entry, ensure_ascii=False).encode("utf-8", "replace"))
        if kept and used > budget:
            break
        kept.append(entry)
    return kept


def _omittable(prop: dict[str, Any]) -> dict[str, Any]:
    """An optional argument (``X | None = None``) published as ``X``: a caller omits it, never sends null.

    Declared ``X | None``, pydantic checks it as one nullable ``X``, so a wrong value is named by
    its own field (``session_id``); declared ``X | SkipJsonSchema[None]`` it was a union, whose
    errors named its branches (``session_id.function-after[check(), str]`` and ``session_id.none``).
    """
    branches = prop.get("anyOf")
    if prop.get("default", ...) is not None or not isinstance(branches, list) or len(branches) != 2:
        return prop
    if {"type": "null"} not in branches:
        return prop
    other = next(b for b in branches if b != {"type": "null"})
    rest = {k: v for k, v in prop.items() if k != "anyOf"}
    return {**other, **rest}


def _strip_titles(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip_titles(v) for k, v in node.items() if k != "title" or isinstance(v, dict)}
    if isinstance(node, list):
        return [_strip_titles(v) for v in node]
    return node
