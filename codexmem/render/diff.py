"""``codexmem diff`` written out: Markdown for a pull request comment, JSON for bots, a stat line per kind.

Every output stays under GitHub's comment limit (:data:`MAX_CHARS`): entries are written whole,
in order, until the next would not fit, and the output then ends with "and N more". What an
agent wrote is escaped, so a note's text can neither format the comment nor hide in it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from codexmem.memory.diff import WORKING_TREE, MemoryDiff
from codexmem.render.textdiff import plain_value, word_diff

Rec = dict[str, Any]
MAX_CHARS = 65_536
"""GitHub's limit for a comment; every output of ``codexmem diff`` stays below it."""
MORE_RESERVE = 120
DIFF_CHARS = 300
"""A word diff longer than this is cut (the JSON has the whole texts)."""
LONG_TEXT = 80
SHOWN_STEPS = 5
SHOWN_FIELDS = 12
SHOWN_BAD = 20
HEADINGS = {
    "notes_added": "Notes added",
    "notes_changed": "Notes changed",
    "notes_superseded": "Superseded",
    "notes_resolved": "Resolved",
    "notes_retracted": "Retracted",
    "notes_deleted": "Notes deleted",
    "handoffs": "Handoffs",
    "sessions": "Sessions",
    "imports": "Import audits",
    "channels_added": "Channel added",
    "channels_changed": "Schema changed",
    "channels_deleted": "Channel deleted",
    "items_added": "Items added",
    "items_changed": "Items changed",
    "items_deleted": "Items deleted",
}
_SPECIAL = re.compile(r"([\\`*_\[\]|~<>&@])")
"""What Markdown or HTML would read as markup inside a line (a line never starts with a writer's text)."""
_SPACES = re.compile(r"\s+")


def md(text: Any) -> str:
    """Plain text on one line, every Markdown and HTML character escaped."""
    return _SPECIAL.sub(r"\\\1", _SPACES.sub(" ", str(text)).strip())


def _code(text: str) -> str:
    return "`" + text.replace("`", "'") + "`"


# ------------------------------------------------------------------ Markdown


def markdown(diff: MemoryDiff) -> str:
    """The comment: a heading, then per project (then per channel) each section's entries."""
    head = f"### Memory changes: {_code(diff.base.revision)} → {_side_name(diff.head.revision)}"
    if diff.base.caution:
        head += f"\n\n> {md(diff.base.caution)}"
    if not diff.entries and not diff.unreadable:
        return f"{head}\n\nNo memory changes.\n"
    lines = [head, *_unreadable(diff)]  # first, so the cap never hides them (at most 21 short lines)
    used = sum(len(line) + 1 for line in lines)
    group = section = None
    for n, entry in enumerate(diff.entries):
        block: list[str] = []
        if (entry["group_kind"], entry["group"]) != group:
            group, section = (entry["group_kind"], entry["group"]), None
            what = "" if entry["group_kind"] == "project" else "channel "
            block += ["", f"#### {what}{md(entry['group'])}"]
        if entry["section"] != section:
            section = entry["section"]
            block.append(f"**{HEADINGS[section]}**")
        block += ENTRY_LINES[entry["section"]](entry)
        size = sum(len(line) + 1 for line in block)
        if used + size > MAX_CHARS - MORE_RESERVE:
            lines += ["", f"…and {len(diff.entries) - n} more"]
            return "\n".join(lines) + "\n"
        lines += block
        used += size
    return "\n".join(lines) + "\n"


def _unreadable(diff: MemoryDiff) -> list[str]:
    if not diff.unreadable:
        return []
    bad = [f"- {_code(b['path'])} ({md(b['side'])}): {md(b['problem'])}" for b in diff.unreadable[:SHOWN_BAD]]
    more = [f"- and {len(diff.unreadable) - SHOWN_BAD} more"] if len(diff.unreadable) > SHOWN_BAD else []
    return ["", "**Could not read** (`codexmem check` says why)", *bad, *more]


def _side_name(revision: str) -> str:
    return "the working tree" if revision == WORKING_TREE else _code(revision)


def _who(entry: Rec) -> str:
    who = entry["who"]
    if entry["section"] == "sessions":
        who = {**who, "sessions": []}  # the line names the session already
    people = ", ".join(md(a) for a in who["authors"]) or ", ".join(f"via {md(v)}" for v in who["via"])
    sessions = "; ".join(f"*{md(s)}*" for s in who["sessions"])
    if sessions:
        people = f"{people}, session {sessions}" if people else f"session {sessions}"
    return f" — {people}" if people else ""


def _note_added(e: Rec) -> list[str]:
    line = f"- {e['type']} · **{md(e['title'])}** (importance {e['importance']})"
    if e["status"] != "active":
        line += f", {e['status']}"
    return [f"{line}: {md(e['first_line'])}{_who(e)}"]


def _note_changed(e: Rec) -> list[str]:
    short, long = _split_changes(e["changes"])
    return [f"- **{md(e['title'])}**{': ' + short if short else ''}{_who(e)}", *long]


def _superseded(e: Rec) -> list[str]:
    by = f"*{md(e['by_title'])}*" if e.get("by_title") else "a note not in either revision"
    return [f"- *{md(e['title'])}* → superseded by {by}{_who(e)}"]


def _with_reason(e: Rec) -> list[str]:
    reason = f": {md(e['reason'])}" if e.get("reason") else ""
    return [f"- *{md(e['title'])}*{reason}{_who(e)}"]


def _note_deleted(e: Rec) -> list[str]:
    return [f"- *{md(e['title'])}* ({e['type']}){_who(e)}"]


def _handoff(e: Rec) -> list[str]:
    line = f"- {e['change']}: **{md(e['task'])}** ({e['kind']}, {e['status']})"
    if e.get("reason"):
        line += f": {md(e['reason'])}"
    short, long = _split_changes(e["changes"])
    if short:
        line += f": {short}"
    steps = [f"  - next: {md(step)}" for step in e["next_steps"][:SHOWN_STEPS]]
    if len(e["next_steps"]) > SHOWN_STEPS:
        steps.append(f"  - and {len(e['next_steps']) - SHOWN_STEPS} more next steps")
    return [line + _who(e), *steps, *long]


def _session(e: Rec) -> list[str]:
    parts = [f"*{md(e['task'])}*" if e["task"] else "a session without a task"]
    if e["branch"]:
        parts.append(f"branch {_code(e['branch'])}")
    parts.append(str(e["status"]) if e["change"] != "deleted" else "deleted")
    return ["- " + " · ".join(parts) + _who(e)]


def _import(e: Rec) -> list[str]:
    return [f"- {e['change']}: {e['source']}{_who(e)}"]


def _item_whole(e: Rec) -> list[str]:
    values = "; ".join(f"{md(v['label'])}: {_value(v['value'])}" for v in e["values"][:8])
    return [f"- **{md(e['title'])}**{': ' + values if values else ''}{_who(e)}"]


def _item_changed(e: Rec) -> list[str]:
    short, long = _split_changes(e["changes"])
    return [f"- **{md(e['title'])}**{': ' + short if short else ''}{_who(e)}", *long]


def _channel_whole(e: Rec) -> list[str]:
    fields = ", ".join(_code(str(k)) for k in e["fields"][:SHOWN_FIELDS])
    more = f" and {len(e['fields']) - SHOWN_FIELDS} more" if len(e["fields"]) > SHOWN_FIELDS else ""
    return [f"- {_code(e['channel'])}, fields {fields}{more}{_who(e)}"]


def _schema_changed(e: Rec) -> list[str]:
    """The schema's changes one per line, under a line that says who: a removed option or a renamed
    field is what a reviewer must see (``codexmem check`` then lists the items it leaves behind)."""
    lines = [f"- {_code('channels/' + e['channel'] + '/schema.yaml')}{_who(e)}"]
    for c in e["changes"]:
        lines.append(f"  - {_code(c['field']) + ': ' if c['field'] else ''}{md(c['change'])}")
    return lines


ENTRY_LINES: dict[str, Callable[[Rec], list[str]]] = {
    "notes_added": _note_added,
    "notes_changed": _note_changed,
    "notes_superseded": _superseded,
    "notes_resolved": _with_reason,
    "notes_retracted": _with_reason,
    "notes_deleted": _note_deleted,
    "handoffs": _handoff,
    "sessions": _session,
    "imports": _import,
    "channels_added": _channel_whole,
    "channels_changed": _schema_changed,
    "channels_deleted": _channel_whole,
    "items_added": _item_whole,
    "items_changed": _item_changed,
    "items_deleted": _item_whole,
}


def _split_changes(changes: list[Rec]) -> tuple[str, list[str]]:
    """Short changes on the entry's line (``importance 3 → 4``); long texts as word diffs below it."""
    short: list[str] = []
    long: list[str] = []
    for c in changes:
        name = md(c.get("label") or c["field"].replace("_", " "))
        old, new = c["old"], c["new"]
        if isinstance(old, str) and isinstance(new, str) and (len(old + new) > 2 * LONG_TEXT or "\n" in old + new):
            long.append(f"  - {name}: {_word_diff(old, new)}")
        else:
            short.append(f"{name} {_value(old)} → {_value(new)}")
    return "; ".join(short), long


def _value(value: Any) -> str:
    text = plain_value(value)
    return md(text if len(text) <= LONG_TEXT else text[: LONG_TEXT - 1] + "…")


def _word_diff(old: str, new: str) -> str:
    """``kept ~~removed~~ **added** kept``, on one line; changes a space apart read as one change."""
    out = ""
    gone = added = ""
    ops = word_diff(old, new)
    for i, op in enumerate(ops):
        between = op["op"] == "eq" and not op["text"].strip() and (gone or added) and i + 1 < len(ops)
        if op["op"] == "eq" and not between:
            out += _change(gone, added) + _marked(op["text"], "")
            gone = added = ""
        else:
            gone += op["text"] if op["op"] != "ins" else ""
            added += op["text"] if op["op"] != "del" else ""
        if len(out) > DIFF_CHARS:
            return out.strip() + " …"
    return (out + _change(gone, added)).strip()


def _change(gone: str, added: str) -> str:
    return " ".join(m for m in (_marked(gone.strip(), "~~"), _marked(added.strip(), "**")) if m)


def _marked(text: str, mark: str) -> str:
    """``text`` escaped on one line, between ``mark``s (outside its leading and trailing space)."""
    text = _SPACES.sub(" ", text)
    core = text.strip()
    if not core:
        return " " if text else ""
    lead, trail = (" " if text[:1] == " " else ""), (" " if text[-1:] == " " else "")
    return f"{lead}{mark}{md(core)}{mark}{trail}"


# ------------------------------------------------------------------ JSON and --stat


def as_json(diff: MemoryDiff) -> str:
    """One JSON object with sorted keys: the sides, the counts, and as many changes as fit."""

    def dump(shown: int) -> str:
        data = {
            "base": {"revision": diff.base.revision, "commit": diff.base.commit, "caution": diff.base.caution},
            "head": {"revision": diff.head.revision, "commit": diff.head.commit},
            "stat": diff.stat(),
            "changes": diff.entries[:shown],
            "more": len(diff.entries) - shown,
            "unreadable": diff.unreadable[:SHOWN_BAD],
        }
        return json.dumps(data, ensure_ascii=False, sort_keys=True, indent=1) + "\n"

    low, high = 0, len(diff.entries)
    if len(dump(high)) < MAX_CHARS:
        return dump(high)
    while low < high:  # the most changes that fit
        mid = (low + high + 1) // 2
        if len(dump(mid)) < MAX_CHARS:
            low = mid
        else:
            high = mid - 1
    return dump(low)


def stat(diff: MemoryDiff) -> str:
    """One line per kind: ``notes: 3 added, 1 superseded``."""
    counts = diff.stat()
    if not counts:
        return "no memory changes\n"
    return "".join(f"{kind}: {', '.join(f'{n} {what}' for what, n in by.items())}\n" for kind, by in counts.items())
