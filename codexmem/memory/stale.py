"""``codexmem stale``: the notes whose anchored files changed or went away since they were saved.

Which notes are stale comes from one tree listing at HEAD (``anchors.head_tree``); what happened
to their files comes from one ``git log --name-status -M`` over the commits since the oldest of
them was saved, whatever the number of anchor commits. A commit that is no longer in the clone
(a squash-merged branch) falls back to the commits since the note was saved, by date.
"""

from __future__ import annotations

import subprocess
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

from codexmem.memory.anchors import GIT_TIMEOUT_S, HeadTree, anchor_root, changed_paths, head_tree
from codexmem.store.layout import NOTE
from codexmem.store.store import Store
from codexmem.timeutil import parse_ts

SHOWN_COMMITS = 3
"""Commits listed per file: the first ones after the anchor; the rest are counted."""
LOG_FORMAT = "--format=%x01%H%x02%h%x02%P%x02%ct%x02%s"
CLOCK_MARGIN = timedelta(days=1)
"""Commits a little older than the oldest stale note are read too: clocks differ between machines."""

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
        changed = [(row, paths) for row in by_project[project] if (paths := changed_paths(row["anchor"], tree))]
        if not changed:
            continue
        history = History.read(root, tree, [row for row, _ in changed])
        report.projects[project] = [history.stale_note(row, paths) for row, paths in changed]
    return report


@dataclass
class Commit:
    short: str
    subject: str
    time: int
    """Committer date (Unix seconds): compared with a note's ``created_at`` when its anchor is gone."""


class History:
    """The commits that touched the stale notes' files since their anchors, from one ``git log``.

    The log covers every commit made since the oldest stale note was saved (a day's margin for
    clocks), oldest first; each commit's ancestors among the commits that touched an anchored
    file are a bit set, so "after the anchor" is "not the anchor nor one of its ancestors" for any
    history shape (branches, merges), with no git call per anchor; in a history of one line, later
    is after. Bits for those commits only, and none for one line: one per listed commit made the
    sets quadratic (787 MB at 100,000 commits). An anchor outside
    that log (a squash-merged branch's commit, gone) falls back to the commits made after the note
    was saved.
    """

    def __init__(self, root: Path, tree: HeadTree, wanted: set[str]) -> None:
        self.root = root
        self.tree = tree
        self.wanted = wanted
        """The anchored files whose touches are kept."""
        self.commits: list[Commit] = []
        self.index: dict[str, int] = {}
        self.parents: list[list[int]] = []
        """Per commit, its parents' indexes among the listed commits."""
        self.linear = True
        """Every commit follows the one listed before it (no merge): nothing else is needed."""
        self.ancestors: list[int] = []
        """Per commit, a bit set of the commits touching an anchored file it descends from (made
        only for a history with merges)."""
        self.bit: dict[int, int] = {}
        """Commit index -> its bit, for the commits touching an anchored file."""
        self.by_path: dict[str, list[tuple[int, Touch]]] = defaultdict(list)
        self.present: set[str] = set()
        """Anchor commits this clone holds."""
        self._by_blob: dict[str, str] | None = None

    @classmethod
    def read(cls, root: Path, tree: HeadTree, rows: Sequence[Mapping[str, Any]]) -> History:
        history = cls(root, tree, {str(path) for row in rows for path in row["anchor"]["files"]})
        oldest = min(str(row["created_at"]) for row in rows)
        since = (parse_ts(oldest) - CLOCK_MARGIN).strftime("%Y-%m-%dT%H:%M:%SZ")
        out = history._git(
            "log", "--topo-order", "--reverse", "-M", "--name-status", "-z", LOG_FORMAT, f"--since={since}", "HEAD"
        )
        history._parse(out or b"")
        anchors = sorted({str(row["anchor"]["commit"]) for row in rows} - set(history.index))
        if anchors:
            checked = history._git("cat-file", "--batch-check", stdin="".join(f"{a}\n" for a in anchors))
            history.present = {line.split()[0] for line in (checked or b"").decode().splitlines() if " commit " in line}
        history.present |= set(history.index)
        return history

    def _parse(self, out: bytes) -> None:
        for chunk in out.split(b"\x01")[1:]:
            header, _, rest = chunk.partition(b"\0")
            full, short, parents, when, subject = header.decode("utf-8", "replace").split("\x02", 4)
            i = len(self.commits)
            self.commits.append(Commit(short, subject, int(when or 0)))
            self.index[full] = i
            known = [j for j in (self.index.get(p) for p in parents.split()) if j is not None]
            self.parents.append(known)
            self.linear = self.linear and len(parents.split()) <= 1 and known in ([], [i - 1])
            tokens = [t.decode("utf-8", "surrogateescape") for t in rest.lstrip(b"\n").split(b"\0")]
            k = 0
            while k < len(tokens) and tokens[k]:
                status = tokens[k][:1]
                two = status in ("R", "C")
                if k + (2 if two else 1) >= len(tokens):
                    break
                if tokens[k + 1] in self.wanted:
                    self.bit.setdefault(i, len(self.bit))
                    touch = Touch(short, subject, status, tokens[k + 2] if two else None)
                    self.by_path[tokens[k + 1]].append((i, touch))
                k += 3 if two else 2
        if not self.linear:  # oldest first: a commit's parents have their sets already
            for known in self.parents:
                bits = 0
                for j in known:
                    bits |= self.ancestors[j] | (1 << self.bit[j] if j in self.bit else 0)
                self.ancestors.append(bits)

    def stale_note(self, row: Mapping[str, Any], paths: Sequence[str]) -> StaleNote:
        anchor = row["anchor"]
        commit = str(anchor["commit"])
        files = [self._file_change(path, anchor["files"][path], self.touches(commit, path, row)) for path in paths]
        return StaleNote(
            note_id=row["note_id"],
            title=row["title"],
            type=row["type"],
            status=row["status"],
            anchor_commit=commit,
            anchor_in_clone=commit in self.present,
            files=files,
        )

    def touches(self, commit: str, path: str, row: Mapping[str, Any]) -> list[Touch]:
        """The commits after ``commit`` that touched ``path``, oldest first."""
        i = self.index.get(commit)
        if i is None:
            saved = parse_ts(str(row["created_at"])).timestamp()
            return [t for j, t in self.by_path.get(path, []) if self.commits[j].time >= saved]
        if self.linear:  # one line of commits: after the anchor is later in it
            return [t for j, t in self.by_path.get(path, []) if j > i]
        before = self.ancestors[i] | (1 << self.bit[i] if i in self.bit else 0)
        return [t for j, t in self.by_path.get(path, []) if not (before >> self.bit[j]) & 1]

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

    def _git(self, *args: str, stdin: str | None = None) -> bytes | None:
        done = subprocess.run(
            ["git", "-c", "core.quotepath=off", *args],
            cwd=self.root,
            input=stdin.encode("ascii") if stdin is not None else None,
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
        return done.stdout if done.returncode == 0 else None


def report_data(report: StaleReport) -> dict[str, Any]:
    """The report as JSON for scripts (``codexmem stale --format json``)."""
    return {
        "stale": report.stale,
        "anchored": report.anchored,
        "projects": {project: [asdict(n) for n in notes] for project, notes in report.projects.items()},
        "projects_not_in_this_clone": report.unanchored_projects,
    }
