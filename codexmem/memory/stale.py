"""``codexmem stale``: the notes whose anchored files changed or went away since they were saved.

Which notes are stale comes from one tree listing at HEAD (``anchors.head_tree``); what happened
to each file comes from one ``git log --name-status -M`` per anchor commit, shared by every note
saved at that commit. A commit that is no longer in the clone (a squash-merged branch) falls back
to the commits since the note was saved, by date.
"""

from __future__ import annotations

import subprocess
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from codexmem.memory.anchors import GIT_TIMEOUT_S, HeadTree, anchor_root, changed_paths, head_tree
from codexmem.store.layout import NOTE
from codexmem.store.store import Store

SHOWN_COMMITS = 3
"""Commits listed per file: the first ones after the anchor; the rest are counted."""
_LOG_FORMAT = "--format=%x01%h%x02%s"

Change = Literal["changed", "deleted", "renamed"]


@dataclass(frozen=True)
class Touch:
    """One commit's change to one path: ``M``, ``D``, ``A`` or ``R`` (renamed to ``new_path``)."""

    commit: str
    subject: str
    status: str
    new_path: str | None = None


@dataclass(frozen=True)
class FileChange:
    path: str
    change: Change
    renamed_to: str | None
    commits: list[str]
    """``"<short id> <subject>"``, oldest first, at most SHOWN_COMMITS."""
    more: int
    """Commits past those shown."""


@dataclass(frozen=True)
class StaleNote:
    note_id: str
    title: str
    type: str
    status: str
    anchor_commit: str
    anchor_in_clone: bool
    files: list[FileChange]


@dataclass
class StaleReport:
    projects: dict[str, list[StaleNote]] = field(default_factory=dict)
    anchored: int = 0
    """Notes with an anchor in a repository this store can see."""
    unanchored_projects: list[str] = field(default_factory=list)
    """Projects with anchored notes whose repository this store cannot see (another clone's)."""

    @property
    def stale(self) -> int:
        return sum(len(notes) for notes in self.projects.values())


def find_stale(store: Store) -> StaleReport:
    """Every stale note of the store, grouped by project, newest note first within a project."""
    report = StaleReport()
    rows = store.fresh_index().select(NOTE, where_not={"status": "retracted"}, order=(("created_at", True),))
    by_project: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        if row.get("anchor"):
            by_project[row["scope"]["project_id"]].append(row)
    for project in sorted(by_project):
        root = anchor_root(store.config, store.root, project)
        tree = head_tree(root) if root is not None else None
        if root is None or tree is None:
            report.unanchored_projects.append(project)
            continue
        report.anchored += len(by_project[project])
        history = History(root, tree)
        stale = [note for row in by_project[project] if (note := history.stale_note(row)) is not None]
        if stale:
            report.projects[project] = stale
    return report


class History:
    """What happened to files since an anchor, one ``git log`` per anchor commit (kept)."""

    def __init__(self, root: Path, tree: HeadTree) -> None:
        self.root = root
        self.tree = tree
        self._ranges: dict[str, dict[str, list[Touch]] | None] = {}
        self._by_blob: dict[str, str] | None = None

    def stale_note(self, row: Mapping[str, Any]) -> StaleNote | None:
        anchor = row["anchor"]
        paths = changed_paths(anchor, self.tree)
        if not paths:
            return None
        touches = self.touches_since(anchor["commit"])
        in_clone = touches is not None
        if touches is None:
            touches = self._touches_by_date(row["created_at"], paths)
        files = [self._file_change(path, anchor["files"][path], touches.get(path, [])) for path in paths]
        return StaleNote(
            note_id=row["note_id"],
            title=row["title"],
            type=row["type"],
            status=row["status"],
            anchor_commit=anchor["commit"],
            anchor_in_clone=in_clone,
            files=files,
        )

    def _file_change(self, path: str, blob: str, touches: Sequence[Touch]) -> FileChange:
        renamed_to = None
        if path in self.tree.blobs:
            change: Change = "changed"
        else:
            renamed_to = next((t.new_path for t in reversed(touches) if t.status == "R"), None)
            renamed_to = renamed_to or self._path_of_blob(blob)
            change = "renamed" if renamed_to else "deleted"
        lines = [f"{t.commit} {t.subject}" for t in touches]
        return FileChange(path, change, renamed_to, lines[:SHOWN_COMMITS], max(0, len(lines) - SHOWN_COMMITS))

    def _path_of_blob(self, blob: str) -> str | None:
        """A file at HEAD with exactly the anchored content (a move git's log did not show)."""
        if self._by_blob is None:
            self._by_blob = {}
            for path, b in sorted(self.tree.blobs.items(), reverse=True):
                self._by_blob[b] = path
        return self._by_blob.get(blob)

    def touches_since(self, commit: str) -> dict[str, list[Touch]] | None:
        """Per path, the commits after ``commit`` up to HEAD that touched it, oldest first; None when
        the commit is not in this clone."""
        if commit not in self._ranges:
            out = self._git("log", "-M", "--name-status", "-z", "--reverse", _LOG_FORMAT, f"{commit}..HEAD")
            self._ranges[commit] = None if out is None else parse_log(out)
        return self._ranges[commit]

    def _touches_by_date(self, since: str, paths: Sequence[str]) -> dict[str, list[Touch]]:
        out = self._git(
            "log", "-M", "--name-status", "-z", "--reverse", _LOG_FORMAT, f"--since={since}", "HEAD", "--", *paths
        )
        return parse_log(out or b"")

    def _git(self, *args: str) -> bytes | None:
        done = subprocess.run(
            ["git", "-c", "core.quotepath=off", *args],
            cwd=self.root,
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
        return done.stdout if done.returncode == 0 else None


def parse_log(out: bytes) -> dict[str, list[Touch]]:
    """``git log --name-status -z`` with ``%x01%h%x02%s`` headers, per path (the old path of a rename)."""
    touches: dict[str, list[Touch]] = defaultdict(list)
    for chunk in out.split(b"\x01")[1:]:
        header, _, rest = chunk.partition(b"\0")
        short, _, subject = header.decode("utf-8", "replace").partition("\x02")
        tokens = [t.decode("utf-8", "surrogateescape") for t in rest.lstrip(b"\n").split(b"\0")]
        i = 0
        while i < len(tokens) and tokens[i]:
            status = tokens[i][:1]
            if status in ("R", "C") and i + 2 < len(tokens):
                touches[tokens[i + 1]].append(Touch(short, subject, status, tokens[i + 2]))
                i += 3
            elif i + 1 < len(tokens):
                touches[tokens[i + 1]].append(Touch(short, subject, status))
                i += 2
            else:
                break
    return dict(touches)


def report_data(report: StaleReport) -> dict[str, Any]:
    """The report as JSON for scripts (``codexmem stale --format json``)."""
    return {
        "stale": report.stale,
        "anchored": report.anchored,
        "projects": {project: [asdict(n) for n in notes] for project, notes in report.projects.items()},
        "projects_not_in_this_clone": report.unanchored_projects,
    }
