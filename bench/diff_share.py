"""What a pull request's raw diff shows: the share of memory content among its visible lines.

    .venv/bin/python -m bench.diff_share [--seeds 1 2 3] [--notes 3] [--strict]

For each seed it builds a real repository with a store on ``main`` (two notes, an open handoff, a
bug tracker channel with a few bugs, written by an earlier session), then a ``feature`` branch on
which an agent works through the services, as the MCP tools do: it starts a session on the branch,
saves ``--notes`` notes naming files of the repository (so they are anchored), supersedes one note
of ``main`` with one of them, resolves the other, completes the open handoff, triages one bug
(an item edit) and writes its handoff with next steps; then the session ends. It classifies every
added or removed line of ``git diff main...feature``:

* **memory content**, the lines a reviewer judges: a record's title, type, status (and the reason
  for it), importance, tags, file paths, Markdown body, a handoff's task, kind and lists (next
  steps, completed, open questions, risks, files touched, and related notes: ids, each followed by
  its note's title; ``--strict`` counts those as bookkeeping), and an item's values;
* **bookkeeping**: ids (``session_id``, ``superseded_by``), scope, source,
  versions, timestamps, anchors, front-matter fences, an item's ``values:`` line, and whatever
  else the store writes (sessions, events, configuration);
* **hidden**: files that ``git check-attr linguist-generated`` marks generated (the store's
  ``.gitattributes`` marks sessions and events), which pull request views collapse.

A field's key line (``title:``) counts with its value. It prints, per seed, the content share of
the visible lines by lines and by bytes, and which bookkeeping fields weigh most.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.stale import commit, git
from codexmem.errors import Warnings
from codexmem.memory.handoffs import save_handoff
from codexmem.memory.lifecycle import end_session, set_status
from codexmem.memory.notes import save_note
from codexmem.memory.scope import resolve_scope
from codexmem.memory.sessions import open_session
from codexmem.models.records import ScopeRef
from codexmem.records import service
from codexmem.store.ids import IdMaker
from codexmem.store.init import init_store
from codexmem.store.store import Store
from scripts.bugs_channel import BUGS_SCHEMA, bug_values, triage_values

START = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)
STORE = ".codexmem"
SOURCES = ("src/payment.py", "src/ledger.py", "src/webhooks.py", "src/refunds.py", "tests/test_payment.py")
SUBJECTS = ("the retry queue", "the ledger export", "the webhook signature check", "refund rounding", "the cart cache")
FINDINGS = (
    "drops events when the worker restarts mid-batch",
    "rounds half-cents towards zero instead of to even",
    "reads the secret before the config reload finishes",
    "keeps stale prices for up to ten minutes after a change",
    "double counts partial refunds on the same invoice",
)
SENTENCES = (
    "The failing case only shows with more than one worker.",
    "A unit test in tests/test_payment.py reproduces it in under a second.",
    "The fix keeps the public signature and changes only the internal call.",
    "Production logs from last Tuesday show the same pattern 14 times.",
    "Nothing else calls this path, so the change is local.",
    "The old behaviour was documented nowhere and nobody relies on it.",
    "Reverting the commit that introduced the cache makes the symptom go away.",
)
STEPS = (
    "Run the migration on staging before Friday",
    "Ask the platform team whether the retry limit can change",
    "Add a regression test for the restart case",
    "Remove the temporary feature flag once the fix is live",
    "Update the runbook section on webhook failures",
)

CONTENT_FIELDS = {
    "note": frozenset({"title", "type", "status", "status_reason", "importance", "tags", "file_paths", "body"}),
    "handoff": frozenset(
        {
            "task",
            "kind",
            "status",
            "status_reason",
            "next_steps",
            "completed",
            "open_questions",
            "risks",
            "files_touched",
            "related_note_ids",
            "body",
        }
    ),
    "item": frozenset({"values"}),
}
"""The fields a reviewer judges, per kind of record file; every other line is bookkeeping."""
BOOK_FIELDS = {
    "note": frozenset({"fence", "scope", "session_id", "source", "related_project_ids", "created_at", "anchor"})
    | {"version", "superseded_by"},
    "handoff": frozenset({"fence", "scope", "session_id", "source", "created_at", "version"}),
    "item": frozenset({"values:", "created_at", "version"}),
}
"""The bookkeeping fields of each kind, named so that a new field of the file format is a decision."""
LABELLED_LISTS = frozenset({"related_note_ids"})
"""A handoff's list of note ids, each labelled with its note's title: content, or bookkeeping with ``strict``."""
FENCE = "---"
KEY_LINE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*):")
HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


@dataclass
class Share:
    """Lines and bytes of a diff's added and removed lines, by class; bookkeeping bytes by field."""

    lines: Counter[str] = field(default_factory=Counter)
    bytes: Counter[str] = field(default_factory=Counter)
    book_fields: Counter[str] = field(default_factory=Counter)
    rows: list[tuple[str, str, str]] = field(default_factory=list)
    """Each added or removed line: (class, ``kind:field``, text)."""

    def add(self, kind: str, line: str, label: str) -> None:
        self.rows.append((kind, label, line))
        self.lines[kind] += 1
        self.bytes[kind] += len(line.encode("utf-8")) + 1
        if kind == "bookkeeping":
            self.book_fields[label] += len(line.encode("utf-8")) + 1

    def content_share(self, unit: str = "lines") -> float:
        """Memory content over the visible (not generated) added and removed lines."""
        counts = self.lines if unit == "lines" else self.bytes
        visible = counts["content"] + counts["bookkeeping"]
        return counts["content"] / visible if visible else 1.0


def record_kind(rel: str) -> str | None:
    """The kind of record a path inside the store holds, or None for anything else."""
    parts = rel.split("/")
    if len(parts) == 2 and parts[0] == "notes" and parts[1].endswith(".md"):
        return "note"
    if len(parts) == 2 and parts[0] == "handoffs" and parts[1].endswith(".md"):
        return "handoff"
    if len(parts) == 4 and parts[0] == "channels" and parts[2] == "items" and parts[3].endswith(".yaml"):
        return "item"
    return None


def line_fields(text: str, markdown: bool) -> list[str]:
    """The field each line of a record file belongs to (``fence``, ``body``, or a top-level key)."""
    labels: list[str] = []
    current = "fence" if markdown else ""
    fences = 0
    for line in text.split("\n"):
        if markdown and fences < 2 and line == FENCE:
            fences += 1
            labels.append("fence")
            current = "body" if fences == 2 else "fence"
            continue
        if markdown and fences >= 2:
            labels.append("body")
            continue
        key = KEY_LINE.match(line)
        if key is not None:
            current = key.group(1)
            labels.append("values:" if line == "values:" else current)
            continue
        labels.append(current or "unknown")
    return labels


def classify(kind: str | None, label: str, *, strict: bool = False) -> str:
    """``content`` or ``bookkeeping`` for one line of a file of ``kind`` belonging to ``label``.

    ``strict`` counts the labelled id lists as bookkeeping: ids, even with their titles beside them.
    """
    if kind is None or label not in CONTENT_FIELDS[kind] or (strict and label in LABELLED_LISTS):
        return "bookkeeping"
    return "content"


def _show(repo: Path, rev: str, path: str) -> str:
    return git(repo, "show", f"{rev}:{path}")


def generated(repo: Path, paths: list[str]) -> set[str]:
    """The paths ``git check-attr`` marks ``linguist-generated`` (true) in the work tree's attributes."""
    if not paths:
        return set()
    out = git(repo, "check-attr", "-z", "linguist-generated", "--", *paths).split("\0")
    return {out[i] for i in range(0, len(out) - 2, 3) if out[i + 2] in ("true", "set")}


def measure(
    repo: Path, base: str = "main", head: str = "feature", store: str = STORE, *, strict: bool = False
) -> Share:
    """Classify every added and removed line of ``git diff base...head`` under the store."""
    merge_base = git(repo, "merge-base", base, head).strip()
    names = git(repo, "diff", "--no-renames", "-z", "--name-status", f"{base}...{head}", "--", store).split("\0")
    changed = {names[i + 1]: names[i] for i in range(0, len(names) - 1, 2)}
    hidden = generated(repo, sorted(changed))
    share = Share()
    for path, status in sorted(changed.items()):
        rel = path.removeprefix(f"{store}/")
        kind = record_kind(rel)
        diff = git(repo, "diff", "--no-renames", "--no-color", "-U0", f"{base}...{head}", "--", path)
        if path in hidden:
            for line in diff.split("\n"):
                if line[:1] in "+-" and not line.startswith(("+++ ", "--- ")):
                    share.add("hidden", line[1:], "generated")
            continue
        markdown = path.endswith(".md")
        old = line_fields(_show(repo, merge_base, path), markdown) if status != "A" else []
        new = line_fields(_show(repo, head, path), markdown) if status != "D" else []
        old_no = new_no = 0
        in_hunks = False
        for line in diff.split("\n"):
            hunk = HUNK.match(line)
            if hunk is not None:
                old_no, new_no, in_hunks = int(hunk.group(1)), int(hunk.group(2)), True
                continue
            if not in_hunks or not line or line[0] not in "+-":
                continue
            if line[0] == "-":
                label = old[old_no - 1] if kind is not None else rel
                old_no += 1
            else:
                label = new[new_no - 1] if kind is not None else rel
                new_no += 1
            share.add(classify(kind, label, strict=strict), line[1:], f"{kind or 'other'}:{label}")
    return share


def build(root: Path, seed: int, notes: int = 3) -> Path:
    """A repository whose ``feature`` branch holds one agent session's memory work (see the module doc)."""
    rng = random.Random(seed)
    repo = root / f"shop-{seed}"
    for rel in SOURCES:
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(f'"""{rel}"""\n\n\ndef handle() -> None:\n    pass\n')
    git(root, "init", "-q", "-b", "main", str(repo))
    init_store(repo / STORE, cwd=repo)
    commit(repo, "code and an empty store")
    store = Store(repo / STORE, ids=IdMaker(random.Random(seed).randbytes))  # the same ids for a seed, run after run
    warnings = Warnings()
    clock = iter(START + timedelta(minutes=m) for m in range(10_000))
    scope = resolve_scope(store, warnings, cwd=str(repo)).ref()
    earlier = open_session(store, next(clock), warnings, scope=scope, task="Payment retries", branch_name="main")
    old = [_note(store, rng, scope, earlier["session_id"], next(clock)) for _ in range(2)]
    handoff = save_handoff(
        store,
        next(clock),
        warnings,
        scope=scope,
        session_id=earlier["session_id"],
        kind="checkpoint",
        task="Payment retries",
        summary=" ".join(rng.sample(SENTENCES, 2)),
        next_steps=rng.sample(STEPS, 2),
        status="open",
        files_touched=[SOURCES[0]],
    )["handoff"]
    service.add_channel(store, "bugs", BUGS_SCHEMA, actor="cli:lead", now=next(clock))
    bugs = [service.create_item(store, "bugs", bug_values(rng, n), actor="cli:lead", now=next(clock)) for n in (1, 2)]
    end_session(store, next(clock), warnings, session_id=earlier["session_id"])
    commit(repo, "memory of the first session")

    git(repo, "switch", "-q", "-c", "feature")
    (repo / SOURCES[1]).write_text((repo / SOURCES[1]).read_text() + "\n# the fix\n")
    commit(repo, "the fix")
    session = open_session(store, next(clock), warnings, scope=scope, task="Fix refunds", branch_name="feature")
    sid = session["session_id"]
    new = [_note(store, rng, scope, sid, next(clock)) for _ in range(notes)]
    set_status(
        store,
        next(clock),
        warnings,
        record_id=old[0]["note_id"],
        kind="note",
        status="superseded",
        expected_version=old[0]["version"],
        superseded_by=new[0]["note_id"],
        session_id=sid,
    )
    set_status(
        store,
        next(clock),
        warnings,
        record_id=old[1]["note_id"],
        kind="note",
        status="resolved",
        expected_version=old[1]["version"],
        session_id=sid,
    )
    set_status(
        store,
        next(clock),
        warnings,
        record_id=handoff["handoff_id"],
        kind="handoff",
        status="completed",
        expected_version=handoff["version"],
        session_id=sid,
    )
    at = next(clock)
    service.edit_item(
        store,
        "bugs",
        bugs[0]["id"],
        triage_values(rng, at),
        expected_version=None,
        idempotency_key=None,
        actor=sid,
        now=at,
        session_id=sid,
    )
    save_handoff(
        store,
        next(clock),
        warnings,
        scope=scope,
        session_id=sid,
        kind="final",
        task="Fix refunds",
        summary=" ".join(rng.sample(SENTENCES, 3)),
        next_steps=rng.sample(STEPS, 2),
        completed=[f"Fixed {rng.choice(SUBJECTS)}"],
        risks=[rng.choice(SENTENCES)],
        files_touched=[SOURCES[1], SOURCES[4]],
        related_note_ids=[n["note_id"] for n in new],
        status="completed",
    )
    end_session(store, next(clock), warnings, session_id=sid)
    store.index.close()
    commit(repo, "memory of the feature session")
    return repo


def _note(store: Store, rng: random.Random, scope: ScopeRef, session_id: str, now: datetime) -> dict[str, object]:
    subject, finding = rng.choice(SUBJECTS), rng.choice(FINDINGS)
    body = " ".join(rng.sample(SENTENCES, rng.randint(2, 4)))
    saved = save_note(
        store,
        now,
        Warnings(),
        scope=scope,
        session_id=session_id,
        note_type=rng.choice(("discovery", "decision", "bugfix")),
        title=f"{subject.capitalize()} {finding}",
        content=f"{subject.capitalize()} {finding}. {body}",
        importance=rng.randint(2, 5),
        tags=rng.sample(("payments", "refunds", "webhooks", "ledger", "cache"), 2),
        file_paths=rng.sample(SOURCES[:4], rng.randint(1, 2)),
    )
    return dict(saved["note"])


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--notes", type=int, default=3, help="notes the agent saves on the feature branch")
    parser.add_argument("--strict", action="store_true", help="count a handoff's related_note_ids as bookkeeping")
    args = parser.parse_args()
    print(f"load average: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    print(
        "seed  content/visible lines  share   content/visible bytes  share   hidden lines  "
        "top bookkeeping (lines/bytes)"
    )
    with tempfile.TemporaryDirectory(prefix="codexmem-diff-share-") as tmp:
        for seed in args.seeds:
            share = measure(build(Path(tmp), seed, args.notes), strict=args.strict)
            visible_lines = share.lines["content"] + share.lines["bookkeeping"]
            visible_bytes = share.bytes["content"] + share.bytes["bookkeeping"]
            book_lines = Counter(label for kind, label, _ in share.rows if kind == "bookkeeping")
            top = ", ".join(f"{name} {book_lines[name]}/{size}" for name, size in share.book_fields.most_common(5))
            print(
                f"{seed:>4}  {share.lines['content']:>9}/{visible_lines:<11}  {share.content_share('lines'):>5.0%}"
                f"   {share.bytes['content']:>9}/{visible_bytes:<11}  {share.content_share('bytes'):>5.0%}"
                f"   {share.lines['hidden']:>12}  {top}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
