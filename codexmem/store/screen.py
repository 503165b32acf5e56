"""Secret screening on the write path: every text a record would put on disk passes here.

Done in the store's one write path, not in each service, so no tool, CLI command or import can
forget it. Record ids, timestamps and enum-like keys are skipped: the models validate their shape, and they
are exactly the look-alikes (hashes, ULIDs) that must never be refused. Free text that arrives
from outside under an id-like name (an import's ``external_id``) is scanned like any text.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from codexmem.errors import CodexmemError

SKIP_KEYS = frozenset(
    {
        "version",
        "scope",
        "status",
        "type",
        "kind",
        "source",
        "importance",
        "created_at",
        "updated_at",
        "started_at",
        "ended_at",
        "imported_at",
        "payload_hash",
        "suppressed",
        "suppression_reason",
        "content_changed",
        "record_channel_id",
        "superseded_by",
        "related_note_ids",
        "related_project_ids",
        "durable_memory_id",
        "note_id",
        "handoff_id",
        "import_id",
        "item_id",
        "session_id",
    }
)


def _strings(data: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(data, str):
        yield path, data
    elif isinstance(data, dict):
        for key, value in data.items():
            if path == "" and key in SKIP_KEYS:
                continue
            yield from _strings(value, f"{path}.{key}" if path else str(key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _strings(value, f"{path}[{i}]")


def screen(data: dict[str, Any], mode: str) -> tuple[dict[str, Any], list[str]]:
    """Refuse (``mode="refuse"``) or redact credentials in a record's texts.

    Returns the data to write and the field paths that were redacted. A refusal names every
    field where something was found and never echoes the secret itself.
    """
    from codexmem.credentials import redact

    found = credential_findings(data)
    if not found:
        return data, []
    if mode != "redact":
        fields = [
            {"field": path, "message": f"looks like a credential ({', '.join(kinds)}); remove it or store a reference"}
            for path, kinds in found
        ]
        raise CodexmemError(
            "ERR_SECRET_DETECTED",
            f"refused: {len(found)} field(s) look like they hold credentials ({', '.join(p for p, _ in found)});"
            " nothing was written",
            fields=fields,
        )
    return _redact_tree(data, "", {p for p, _ in found}, redact), [p for p, _ in found]


def credential_findings(data: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """(field path, kinds of credential) for each of a record's texts that holds one (none: ``[]``).

    The one scan of a record's texts, for writes (:func:`screen`) and for reads: a file that a
    hand or a pull request filled with a credential is refused when loaded, so no answer, page or
    site ever shows it, and ``codexmem check`` reports exactly what a write would have refused.
    """
    from codexmem.credentials import find_secrets

    found: list[tuple[str, list[str]]] = []
    for path, text in _strings(data, ""):
        kinds = sorted({f.kind for f in find_secrets(text)})
        if kinds:
            found.append((path, kinds))
    return found


def _redact_tree(data: Any, path: str, targets: set[str], redact: Any) -> Any:
    if isinstance(data, str):
        return redact(data)[0] if path in targets else data
    if isinstance(data, dict):
        return {k: _redact_tree(v, f"{path}.{k}" if path else str(k), targets, redact) for k, v in data.items()}
    if isinstance(data, list):
        return [_redact_tree(v, f"{path}[{i}]", targets, redact) for i, v in enumerate(data)]
    return data
