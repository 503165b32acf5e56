"""``codexmem diff``: what a pull request changes in memory, as data for people and bots.

Two sides are compared: two commits (``A..B``; ``A...B`` starts from their merge base), or a commit
and the working tree (no argument: the merge base of HEAD and the default branch). The changed
store files come from one ``git diff --name-status`` limited to the store's folder (plus one
``git ls-files --others`` for new files not yet added, on the working-tree side); a commit's files
are read through one ``git cat-file --batch`` process, never by checking anything out, and parsed
by the same parser as every other reader (:func:`codexmem.store.recordfile.usable_record`).

Only what a reviewer judges is reported: a note's title, type, status, importance, tags, files
and text; a handoff's task, status and lists; a session's task and branch; an item's values. Ids,
scopes, versions, anchors and timestamps are bookkeeping and left out. Who made each change comes
from the events the change added (format 2 events carry the author; the actor is the session).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codexmem.envelope import shorten
from codexmem.errors import CodexmemError
from codexmem.gitrepo import SHALLOW_FIX, discover_repository, find_git_root, is_shallow
from codexmem.records.schema_diff import schema_changes
from codexmem.store import events as ev
from codexmem.store.atomic import read_bytes_nofollow
from codexmem.store.gitread import BlobReader, run_git
from codexmem.store.ids import is_record_id
from codexmem.store.layout import CHANNEL, EVENTS_DIR, HANDOFF, IMPORT, ITEM, NOTE, SESSION, Kind, identify_relpath
from codexmem.store.recordfile import usable_record
from codexmem.store.store import Store
from codexmem.store.yamlio import MAX_YAML_BYTES, YamlError

Rec = dict[str, Any]
DEFAULT_BRANCHES = ("refs/remotes/origin/HEAD", "refs/heads/main", "refs/heads/master")
WORKING_TREE = "working tree"
FIRST_LINE_CHARS = 160
REVISION_SHOWN = 80
MAX_SHARD_BYTES = 1 << 30
"""An events file read from the working tree (a record file is refused past MAX_YAML_BYTES)."""

REVIEWED: dict[str, tuple[str, ...]] = {
    "note": (
        "title",
        "type",
        "status",
        "superseded_by",
        "status_reason",
        "importance",
        "tags",
        "file_paths",
        "content",
    ),
    "handoff": (
        "task",
        "kind",
        "status",
        "status_reason",
        "next_steps",
        "completed",
        "open_questions",
        "risks",
        "files_touched",
        "summary",
    ),
    "session": ("task", "status", "branch_name"),
    "import": ("source", "external_id", "durable_memory_id", "suppressed", "suppression_reason", "content_changed"),
}
"""The fields a reviewer judges, per kind, in the order they are shown; an item's are its values."""
STATUS_SECTIONS = {"superseded": "notes_superseded", "resolved": "notes_resolved", "retracted": "notes_retracted"}
SECTIONS = (
    "notes_added",
    "notes_changed",
    "notes_superseded",
    "notes_resolved",
    "notes_retracted",
    "notes_deleted",
    "handoffs",
    "sessions",
    "imports",
    "channels_added",
    "channels_changed",
    "channels_deleted",
    "items_added",
    "items_changed",
    "items_deleted",
)
"""Every kind of entry, in the order the output shows them within a project or channel."""


@dataclass(frozen=True)
class Side:
    """One side of the comparison: a commit, or the working tree (``commit`` None)."""

    revision: str
    """What names it for a person: ``main``, ``feature``, ``HEAD~2``, ``working tree``."""
    commit: str | None
    caution: str = ""
    """What a reader must know of this comparison (two dots from a base that moved on), or ``""``."""


@dataclass
class MemoryDiff:
    base: Side
    head: Side
    entries: list[Rec] = field(default_factory=list)
    """One per change, in output order; each has ``section``, ``group`` (a project's or channel's
    name) and ``group_kind`` (``project``/``channel``), then what its section shows."""
    unreadable: list[Rec] = field(default_factory=list)
    """Changed files that do not parse on one side: ``{"path", "side", "problem"}``."""

    def stat(self) -> dict[str, dict[str, int]]:
        """How many changes of each kind (``notes``, ``handoffs``, ``sessions``, ``imports``, ``items``),
        by what happened (``added``, ``superseded``...), in output order; kinds without any are left out."""
        counts: dict[str, dict[str, int]] = {}
        for entry in sorted(self.entries, key=lambda e: SECTIONS.index(e["section"])):
            kind, _, what = entry["section"].partition("_")
            what = what or entry.get("change", "changed")
            counts.setdefault(kind, {}).setdefault(what, 0)
            counts[kind][what] += 1
        return counts


# ------------------------------------------------------------------ revisions


def store_repository(store: Store) -> tuple[Path, str]:
    """The work tree holding the store and the store's folder inside it (``.`` at its root)."""
    root = find_git_root(store.root)
    if root is None:
        raise CodexmemError(
            "ERR_INVALID_INPUT",
            f"the store {store.root} is not inside a git repository: diff compares git revisions of it",
        )
    try:
        rel = store.root.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        raise CodexmemError("ERR_INVALID_INPUT", f"the store {store.root} is not inside {root}") from None
    return root, rel


def resolve_sides(root: Path, revisions: str | None) -> tuple[Side, Side]:
    """The two sides ``revisions`` means, as git reads ``A..B``, ``A...B`` and ``A``."""
    if revisions is None:
        head = _commit(root, "HEAD", "HEAD has no commit yet", "commit first, or name the revisions (A..B)")
        found = (run_git(root, ["for-each-ref", "--format=%(refname)", *DEFAULT_BRANCHES]) or b"").decode().split()
        default = next((ref for ref in DEFAULT_BRANCHES if ref in found), None)
        if default is None:
            branch = (run_git(root, ["symbolic-ref", "--short", "-q", "HEAD"]) or b"").decode().strip()
            base = branch or "BRANCH"
            raise CodexmemError(
                "ERR_INVALID_INPUT",
                "no default branch (origin/HEAD, main or master) to compare with: name the revisions, "
                f"e.g. `codexmem diff {base}...HEAD` on a branch made from {base}, or `codexmem diff HEAD~1` "
                "for what changed since the commit before",
            )
        name = default.removeprefix("refs/remotes/").removeprefix("refs/heads/")
        tip = _commit(root, default, f"the default branch {name} names no commit", "name the revisions (A...B)")
        return Side(name, _merge_base(root, tip, head, name, "HEAD")), Side(WORKING_TREE, None)
    _check_revision_text(revisions)
    for sep in ("...", ".."):
        if sep in revisions:
            left, right = (part or "HEAD" for part in revisions.split(sep, 1))
            a, b = _known(root, left), _known(root, right)
            if sep == "...":
                return Side(left, _merge_base(root, a, b, left, right)), Side(right, b)
            return Side(left, a, _two_dots_caution(root, a, b, left, right)), Side(right, b)
    return Side(revisions, _known(root, revisions)), Side(WORKING_TREE, None)


def _two_dots_caution(root: Path, a: str, b: str, left: str, right: str) -> str:
    """What ``A..B`` shows besides B's changes when A moved on since B branched from it: A's own
    changes since, undone (as ``git diff A..B`` does), with the authors of B's events beside them."""
    base = _common_commit(root, a, b)
    if base is None or base == a:
        return ""
    return (
        f"Two dots compare the trees of {left} and {right}: what {left} gained since {right} branched from it "
        f"shows here undone. For what {right} changes, compare {left}...{right}."
    )


def _check_revision_text(text: str) -> None:
    if not text or text.startswith("-") or any(ch.isspace() or not ch.isprintable() for ch in text):
        raise CodexmemError(
            "ERR_INVALID_INPUT",
            f"revisions {_shown(text)} are not a revision range: give a revision (main), A..B or A...B",
        )


def _known(root: Path, revision: str) -> str:
    return _commit(
        root,
        revision,
        f"unknown revision {_shown(revision)}",
        "name a branch, tag or commit of this repository (`git log --oneline` lists commits)",
    )


def _commit(root: Path, revision: str, problem: str, advice: str) -> str:
    out = run_git(root, ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{revision}^{{commit}}"])
    if not out:
        raise CodexmemError("ERR_INVALID_INPUT", _said(root, problem, advice))
    return out.decode("ascii").strip()


def _merge_base(root: Path, a: str, b: str, left: str, right: str) -> str:
    base = _common_commit(root, a, b)
    if base is None:
        raise CodexmemError(
            "ERR_INVALID_INPUT",
            _said(root, f"{_shown(left)} and {_shown(right)} have no common commit", "compare them with A..B"),
        )
    return base


def _common_commit(root: Path, a: str, b: str) -> str | None:
    """Where ``a`` and ``b`` branched (``git merge-base``), or None when they share no commit."""
    out = (run_git(root, ["merge-base", a, b]) or b"").decode("ascii").split()
    return out[0] if out else None


def _said(root: Path, problem: str, advice: str) -> str:
    """``problem: advice``; in a shallow clone (a CI checkout's default) the likelier cause and its
    fix first: the commit, or the common one, is in the history this clone did not fetch."""
    if not is_shallow(discover_repository(root)):
        return f"{problem}: {advice}"
    return f"{problem} in this clone, which is shallow (cloned with --depth): {SHALLOW_FIX}, or {advice}"


def _shown(text: str) -> str:
    cut = text if len(text) <= REVISION_SHOWN else text[:REVISION_SHOWN] + "…"
    return repr(cut)


# ------------------------------------------------------------------ reading both sides


class Reader:
    """The store's files on both sides: through one ``git cat-file --batch``, or from the work tree."""

    def __init__(self, root: Path, store_rel: str, blobs: BlobReader) -> None:
        self.root = root
        self.prefix = "" if store_rel == "." else store_rel + "/"
        self.blobs = blobs
        self._read: dict[tuple[str, str], bytes | None] = {}

    def prefetch(self, side: Side, blobs: dict[str, str | None]) -> None:
        """Read these files of a commit in one exchange with git, rather than one question at a time.

        ``blobs`` maps each file to its blob id on this side when ``git diff --raw`` gave one (None:
        absent on this side): git then finds the object by id instead of by walking the commit's
        trees for the path, which in a folder of 10,000 files cost ~2 ms a file.
        """
        if side.commit is None:
            return
        names = {
            (blob if blob != "" else f"{side.commit}:{self.prefix}{rel}"): rel
            for rel, blob in blobs.items()
            if blob is not None
        }
        found = self.blobs.read_many(names)
        self._read.update({(side.commit, rel): None for rel, blob in blobs.items() if blob is None})
        self._read.update({(side.commit, rel): found.get(name) for name, rel in names.items()})

    def raw(self, side: Side, rel: str) -> bytes | None:
        """The bytes of the store file ``rel`` (already checked to be a store path) on ``side``; None
        when it is not there; ValueError when it is there but cannot be read."""
        if side.commit is not None:
            if (side.commit, rel) in self._read:
                return self._read[(side.commit, rel)]
            return self.blobs.read(f"{side.commit}:{self.prefix}{rel}")
        limit = MAX_SHARD_BYTES if rel.startswith(EVENTS_DIR + "/") else MAX_YAML_BYTES
        try:
            return read_bytes_nofollow(self.root / (self.prefix + rel), limit)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise ValueError(exc.strerror or str(exc)) from None

    def record(self, side: Side, rel: str) -> Rec | None:
        """The record at ``rel`` on ``side``; None when absent; ValueError/YamlError when unusable."""
        found = identify_relpath(rel)
        raw = self.raw(side, rel) if found is not None else None
        if found is None or raw is None:
            return None
        kind, rid, channel = found
        return usable_record(raw, rel, kind, rid, channel)


@dataclass(frozen=True)
class Changed:
    """A store file that differs: its path inside the store and its blob id on each side.

    A blob id is "" where git did not give one (the working tree's side) and None where the file
    is absent on that side.
    """

    status: str
    rel: str
    old: str | None
    new: str | None


NO_BLOB = "0" * 40


def changed_paths(root: Path, store_rel: str, base: Side, head: Side) -> list[Changed]:
    """Every store file that differs (by status, then path), with its blob ids from ``git diff --raw``."""
    pathspec = ["--", store_rel]
    args = ["diff", "--raw", "-z", "--no-renames", "--no-abbrev", base.commit or "HEAD"]
    if head.commit is not None:
        args.append(head.commit)
    out = run_git(root, [*args, *pathspec])
    if out is None:
        raise CodexmemError("ERR_INVALID_INPUT", "git could not compare the revisions (git diff failed)")
    tokens = out.decode("utf-8", "surrogateescape").split("\0")
    found: list[tuple[str, str, str | None, str | None]] = []
    for meta, path in zip(tokens[0:-1:2], tokens[1::2], strict=False):
        fields = meta.lstrip(":").split()
        if len(fields) < 5:
            continue
        old, new, status = fields[2], fields[3], fields[4][:1]
        found.append(
            (status, path, None if old == NO_BLOB else old, None if status == "D" else ("" if new == NO_BLOB else new))
        )
    if head.commit is None:  # new files nobody added yet are part of the working tree too
        others = run_git(root, ["ls-files", "-z", "--others", "--exclude-standard", *pathspec]) or b""
        found += [("A", p, None, "") for p in others.decode("utf-8", "surrogateescape").split("\0") if p]
    prefix = "" if store_rel == "." else store_rel + "/"
    return sorted(
        (Changed(status, path[len(prefix) :], old, new) for status, path, old, new in found if path.startswith(prefix)),
        key=lambda c: (c.status, c.rel),  # as before: by status, then path
    )


# ------------------------------------------------------------------ the comparison


def memory_diff(store: Store, revisions: str | None) -> MemoryDiff:
    """What changed in the store between the two sides ``revisions`` names."""
    root, store_rel = store_repository(store)
    base, head = resolve_sides(root, revisions)
    paths = changed_paths(root, store_rel, base, head)
    with BlobReader(root) as blobs:
        reader = Reader(root, store_rel, blobs)
        return _Comparison(store, reader, base, head).run(paths)


class _Comparison:
    def __init__(self, store: Store, reader: Reader, base: Side, head: Side) -> None:
        self.store = store
        self.reader = reader
        self.diff = MemoryDiff(base, head)
        self.names = {p.id: p.name for p in store.config.projects}
        self.events: dict[str, list[Rec]] = defaultdict(list)
        """record id -> the events the head side added for it."""
        self.changed: dict[tuple[str, str], tuple[Rec | None, Rec | None]] = {}
        self._titles: dict[str, str | None] = {}
        self._sessions: dict[str, str | None] = {}
        self._schemas: dict[str, Rec | None] = {}

    def run(self, paths: list[Changed]) -> MemoryDiff:
        self.reader.prefetch(self.diff.base, {c.rel: c.old for c in paths})
        self.reader.prefetch(self.diff.head, {c.rel: c.new for c in paths})
        records: list[tuple[Kind, str, str | None, str]] = []
        for rel in (c.rel for c in paths):
            if rel.startswith(EVENTS_DIR + "/") and ev.is_shard_relpath(rel[len(EVENTS_DIR) + 1 :]):
                self._read_events(rel)
            elif (found := identify_relpath(rel)) is not None:
                records.append((*found, rel))
        for kind, rid, channel, rel in records:
            unread = len(self.diff.unreadable)
            old, new = self._side(self.diff.base, rel), self._side(self.diff.head, rel)
            if len(self.diff.unreadable) > unread:
                continue  # listed as unreadable: never guessed to be added or deleted
            if old is not None or new is not None:
                self.changed[(kind.name, rid)] = (old, new)
                self._compare(kind, rid, channel, old, new)
        self.diff.entries.sort(key=_order)
        return self.diff

    def _side(self, side: Side, rel: str) -> Rec | None:
        try:
            return self.reader.record(side, rel)
        except (ValueError, YamlError) as exc:
            self.diff.unreadable.append({"path": rel, "side": side.revision, "problem": shorten(str(exc), 300)[0]})
            return None

    def _read_events(self, rel: str) -> None:
        """The lines the head side's shard holds and the base side's does not."""
        try:
            base, head = self.reader.raw(self.diff.base, rel), self.reader.raw(self.diff.head, rel)
        except ValueError as exc:
            self.diff.unreadable.append(
                {"path": rel, "side": self.diff.head.revision, "problem": shorten(str(exc), 300)[0]}
            )
            return
        before = {e["event_id"] for e in _events(base)}
        for event in _events(head):
            if event["event_id"] not in before:
                self.events[event["id"]].append(event)

    # ------------------------------------------------------------ one record

    def _compare(self, kind: Kind, rid: str, channel: str | None, old: Rec | None, new: Rec | None) -> None:
        if kind is ITEM:
            self._item(rid, str(channel), old, new)
            return
        if kind is CHANNEL:
            self._channel(rid, old, new)
            return
        if kind.name not in REVIEWED:
            return
        now = new if new is not None else old
        assert now is not None
        project = str(now.get("scope", {}).get("project_id", ""))
        base: Rec = {
            "group": self.names.get(project, project),
            "group_kind": "project",
            "project_id": project,
            "id": rid,
            "who": self._who(rid),
        }
        fields = REVIEWED[kind.name]
        changes = _changes(fields, old or {}, new or {}) if old is not None and new is not None else []
        if old is not None and new is not None and not changes:
            return  # only bookkeeping changed (a scope, an anchor, the file's layout)
        if kind is NOTE:
            self._note(base, old, new, changes)
        elif kind is HANDOFF:
            self._handoff(base, old, new, changes)
        elif kind is SESSION:
            self._add(
                base,
                "sessions",
                change=_change_word(old, new),
                task=now.get("task", ""),
                branch=now.get("branch_name", ""),
                status=now.get("status"),
                changes=changes,
            )
        elif kind is IMPORT:
            self._add(base, "imports", change=_change_word(old, new), source=now.get("source"), changes=changes)

    def _note(self, base: Rec, old: Rec | None, new: Rec | None, changes: list[Rec]) -> None:
        if new is None:
            assert old is not None
            self._add(base, "notes_deleted", title=old["title"], type=old["type"])
            return
        if old is None:
            self._add(
                base,
                "notes_added",
                title=new["title"],
                type=new["type"],
                importance=new["importance"],
                status=new["status"],
                first_line=first_line(new["content"]),
            )
            return
        status_section = STATUS_SECTIONS.get(new["status"]) if new["status"] != old["status"] else None
        if status_section is not None:
            moved: Rec = {"title": new["title"], "reason": new.get("status_reason")}
            if new["status"] == "superseded":
                by = new.get("superseded_by")
                moved.update(by_id=by, by_title=self.note_title(by) if by else None)
            self._add(base, status_section, **moved)
            changes = [c for c in changes if c["field"] not in ("status", "superseded_by", "status_reason")]
        if changes:
            self._add(base, "notes_changed", title=new["title"], changes=changes)

    def _handoff(self, base: Rec, old: Rec | None, new: Rec | None, changes: list[Rec]) -> None:
        now = new if new is not None else old
        assert now is not None
        change = _change_word(old, new)
        if old is not None and new is not None and new["status"] == "retracted" != old["status"]:
            change = "retracted"
            changes = [c for c in changes if c["field"] not in ("status", "status_reason")]
        self._add(
            base,
            "handoffs",
            change=change,
            task=now["task"],
            kind=now["kind"],
            status=now["status"],
            reason=now.get("status_reason") if change == "retracted" else None,
            next_steps=list(now.get("next_steps") or []) if change == "added" else [],
            changes=changes,
        )

    def _item(self, rid: str, channel: str, old: Rec | None, new: Rec | None) -> None:
        schema = self.schema(channel)
        fields = {f["key"]: f for f in (schema or {}).get("fields", [])}
        now = new if new is not None else old
        assert now is not None
        values_old, values_new = (old or {}).get("values") or {}, (new or {}).get("values") or {}
        keys = [*fields, *sorted(k for k in {*values_old, *values_new} if k not in fields)]
        entry: Rec = {
            "group": (schema or {}).get("name") or channel,
            "group_kind": "channel",
            "channel": channel,
            "id": rid,
            "title": item_title(schema, now.get("values") or {}),
            "who": self._who(rid),
        }
        if old is None or new is None:
            shown = [_item_value(fields.get(k), k, (values_new or values_old).get(k)) for k in keys]
            entry["values"] = [v for v in shown if v["value"] not in (None, "", [])]
            self._add(entry, "items_added" if old is None else "items_deleted")
            return
        changes = []
        for key in keys:
            if values_old.get(key) != values_new.get(key):
                was, now_value = (
                    _item_value(fields.get(key), key, v) for v in (values_old.get(key), values_new.get(key))
                )
                changes.append({"field": key, "label": was["label"], "old": was["value"], "new": now_value["value"]})
        if changes:
            self._add(entry, "items_changed", changes=changes)

    def _channel(self, rid: str, old: Rec | None, new: Rec | None) -> None:
        """A channel added or deleted, or its schema changed (``channels update``, or by hand)."""
        now = new if new is not None else old
        assert now is not None
        entry: Rec = {
            "group": now.get("name") or rid,
            "group_kind": "channel",
            "channel": rid,
            "id": rid,
            "who": self._who(rid),
        }
        if old is None or new is None:
            fields = [f.get("key") for f in now.get("fields") or [] if isinstance(f, dict)]
            self._add(entry, "channels_added" if old is None else "channels_deleted", fields=fields)
            return
        changes = schema_changes(old, new)
        if changes:
            self._add(entry, "channels_changed", changes=changes)

    def _add(self, base: Rec, section: str, **fields: Any) -> None:
        self.diff.entries.append({"section": section, **base, **fields})

    # ------------------------------------------------------------ names for ids

    def note_title(self, note_id: str) -> str | None:
        """A note's title from the head side, else the base side (a note deleted since)."""
        if note_id not in self._titles:
            self._titles[note_id] = self._field_of(NOTE, note_id, "title")
        return self._titles[note_id]

    def session_label(self, session_id: str) -> str | None:
        if session_id not in self._sessions:
            task = self._field_of(SESSION, session_id, "task")
            branch = self._field_of(SESSION, session_id, "branch_name")
            self._sessions[session_id] = task or (f"on {branch}" if branch else None)
        return self._sessions[session_id]

    def schema(self, channel: str) -> Rec | None:
        if channel not in self._schemas:
            rel = f"channels/{channel}/schema.yaml"
            self._schemas[channel] = next(
                (s for side in (self.diff.head, self.diff.base) if (s := self._quiet(side, rel)) is not None), None
            )
        return self._schemas[channel]

    def _field_of(self, kind: Kind, rid: str, key: str) -> Any:
        if not is_record_id(rid, str(kind.prefix)):
            return None
        pair = self.changed.get((kind.name, rid))
        for data in (pair[1], pair[0]) if pair else ():
            if data is not None:
                return data.get(key)
        rel = f"{kind.folder}/{rid}{kind.suffix}"
        for side in (self.diff.head, self.diff.base):
            data = self._quiet(side, rel)
            if data is not None:
                return data.get(key)
        return None

    def _quiet(self, side: Side, rel: str) -> Rec | None:
        try:
            return self.reader.record(side, rel)
        except (ValueError, YamlError):
            return None

    def _who(self, rid: str) -> Rec:
        """The authors and sessions of the events the head side added for one record."""
        authors: list[str] = []
        emails: list[str] = []
        sessions: list[str] = []
        via: list[str] = []
        for event in self.events.get(rid, []):
            actor = str(event.get("actor", ""))
            author = event.get("author") or (actor.removeprefix("cli:") if actor.startswith("cli:") else None)
            if author and author not in authors:
                authors.append(author)
            if event.get("email") and event["email"] not in emails:
                emails.append(event["email"])
            if is_record_id(actor, "sess"):
                label = self.session_label(actor)
                if label and label not in sessions:
                    sessions.append(label)
            elif actor and not actor.startswith("cli:") and actor not in via:
                via.append(actor)
        return {"authors": authors, "emails": emails, "sessions": sessions, "via": via}


def _events(raw: bytes | None) -> Iterable[Rec]:
    for line in (raw or b"").splitlines():
        if line.strip():
            event, _problem = ev.decode(line.strip())
            if event is not None:
                yield event


def _changes(fields: Iterable[str], old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Rec]:
    was, now = record_fields_of(old), record_fields_of(new)
    return [{"field": k, "old": was.get(k), "new": now.get(k)} for k in fields if was.get(k) != now.get(k)]


def record_fields_of(data: Mapping[str, Any]) -> Rec:
    """A record's fields with empty values as absent, so ``[]`` and a missing list compare equal."""
    return {k: v for k, v in data.items() if v not in (None, [], "")}


def _change_word(old: Rec | None, new: Rec | None) -> str:
    return "added" if old is None else "deleted" if new is None else "changed"


def _order(entry: Rec) -> tuple[Any, ...]:
    return (
        entry["group_kind"] == "channel",
        entry["group"],
        SECTIONS.index(entry["section"]),
        str(entry.get("title") or entry.get("task") or ""),
        entry["id"],
    )


def first_line(text: str) -> str:
    """The first line that says something, cut to FIRST_LINE_CHARS."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= FIRST_LINE_CHARS else line[: FIRST_LINE_CHARS - 1].rstrip() + "…"


def item_title(schema: Rec | None, values: Mapping[str, Any]) -> str:
    """An item as people name it: its ticket (a unique text field) and its title (the ``title`` or first text)."""
    texts = [f for f in (schema or {}).get("fields", []) if f.get("type") == "text"]
    ticket = next((values.get(f["key"]) for f in texts if f.get("is_unique")), None)
    titles = [f["key"] for f in texts if not f.get("is_unique")]
    key = "title" if "title" in titles else (titles[0] if titles else None)
    title = values.get(key) if key else None
    parts = [str(p) for p in (ticket, title) if isinstance(p, str) and p]
    return first_line(" ".join(parts)) if parts else "an item"


def _item_value(f: Rec | None, key: str, value: Any) -> Rec:
    """``{"key", "label", "value"}``: a select's value shown by its option label, as people see it."""
    label = f.get("label", key) if f else key
    options = {o["value"]: o["label"] for o in ((f or {}).get("config") or {}).get("options") or []}
    shown: Callable[[Any], Any] = lambda v: options.get(v, v) if isinstance(v, str) else v  # noqa: E731
    if options and isinstance(value, list):
        value = [shown(v) for v in value]
    elif options:
        value = shown(value)
    return {"key": key, "label": label, "value": value}
