"""What changed in a channel's schema, in the words a reviewer reads.

A schema is changed by ``codexmem channels update`` or by hand (docs/channels.md, "Changing a
schema"). A pull request that removes an option or renames a field must say so in its review;
the raw YAML diff shows lines, not that ``severity`` became ``sev``. The same words serve the
command, the site's history and ``codexmem diff``. Each change is ``{"field": key or None,
"change": text}``, in the schema's field order; plain text, escaped by whoever renders it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

Rec = dict[str, Any]
ATTRIBUTES = ("label", "type", "is_required", "is_unique")
"""A field's own settings, compared in this order before its ``config``."""


def schema_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Rec]:
    """The changes from schema ``old`` to ``new`` (both as their files hold them)."""
    changes: list[Rec] = []
    for key in ("name", "description"):
        if (old.get(key) or "") != (new.get(key) or ""):
            changes.append({"field": None, "change": f"{key} {_shown(old.get(key))} → {_shown(new.get(key))}"})
    before, after = _by(old.get("fields"), "key"), _by(new.get("fields"), "key")
    renamed_from = field_renames(before, after)
    for key, f in after.items():
        if key in renamed_from:
            changes.append({"field": key, "change": f"renamed from {renamed_from[key]}"})
            changes += _field_changes(key, before[renamed_from[key]], f)
        elif key not in before:
            required = ", required" if f.get("is_required") else ""
            changes.append({"field": key, "change": f"added ({f.get('type')}{required})"})
        else:
            changes += _field_changes(key, before[key], f)
    gone = set(renamed_from.values())
    changes += [{"field": key, "change": "removed"} for key in before if key not in after and key not in gone]
    kept = [k for k in after if k in before]
    if not changes and kept != [k for k in before if k in after]:
        changes.append({"field": None, "change": "fields reordered"})
    return changes


def change_line(change: Rec) -> str:
    """One change as plain text: ``owner: option ren (Ren) removed``."""
    return f"{change['field']}: {change['change']}" if change["field"] else str(change["change"])


def field_renames(before: Mapping[str, Rec], after: Mapping[str, Rec]) -> dict[str, str]:
    """New key -> old key, for a removed and an added field of the same label and type (one of each)."""
    gone = [k for k in before if k not in after]
    came = [k for k in after if k not in before]
    pairs: dict[str, str] = {}
    for old_key in gone:
        same = [k for k in came if _identity(after[k]) == _identity(before[old_key]) and k not in pairs]
        if len(same) == 1:
            pairs[same[0]] = old_key
    return pairs


def _identity(f: Rec) -> tuple[Any, Any]:
    return (f.get("label"), f.get("type"))


def _field_changes(key: str, old: Rec, new: Rec) -> list[Rec]:
    out = [
        {"field": key, "change": f"{name.replace('_', ' ')} {_shown(old.get(name))} → {_shown(new.get(name))}"}
        for name in ATTRIBUTES
        if old.get(name) != new.get(name)
    ]
    config_old, config_new = old.get("config") or {}, new.get("config") or {}
    out += _option_changes(key, config_old.get("options") or [], config_new.get("options") or [])
    for name in sorted({*config_old, *config_new} - {"options"}):
        if config_old.get(name) != config_new.get(name):
            shown = f"{name.replace('_', ' ')} {_shown(config_old.get(name))} → {_shown(config_new.get(name))}"
            out.append({"field": key, "change": shown})
    return out


def _option_changes(key: str, old: Any, new: Any) -> list[Rec]:
    before, after = _by(old, "value"), _by(new, "value")
    out: list[Rec] = []
    for value, option in after.items():
        if value not in before:
            out.append({"field": key, "change": f"option {value} ({option.get('label', value)}) added"})
        elif before[value].get("label") != option.get("label"):
            labels = f"{_shown(before[value].get('label'))} → {_shown(option.get('label'))}"
            out.append({"field": key, "change": f"option {value} relabelled {labels}"})
        elif before[value].get("color") != option.get("color"):
            out.append({"field": key, "change": f"option {value} recoloured"})
    out += [
        {"field": key, "change": f"option {value} ({option.get('label', value)}) removed"}
        for value, option in before.items()
        if value not in after
    ]
    if not out and list(before) != list(after):
        out.append({"field": key, "change": "options reordered"})
    return out


def _by(entries: Any, name: str) -> dict[str, Rec]:
    """A list's entries by their ``name`` (a field's key, an option's value)."""
    listed = entries if isinstance(entries, list) else []
    return {e[name]: e for e in listed if isinstance(e, dict) and isinstance(e.get(name), str)}


def _shown(value: Any) -> str:
    if value is None or value == "":
        return "(none)"
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 80 else text[:79] + "…"
