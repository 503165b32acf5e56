"""Reading memory back: bootstrap, search, recent and get.

Every answer must survive Codex's output cap, so list answers are filled item by item within
:data:`~codexmem.envelope.MAX_ANSWER_BYTES` (``envelope.fit``) and say when they stopped
early (``has_more``, ``truncated``); list items show ~300 characters of content, get_note the rest.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Literal, NamedTuple

from codexmem.envelope import MAX_ANSWER_BYTES, fit, fits, shorten
from codexmem.errors import CodexmemError, Warnings, invalid_input
from codexmem.memory.anchors import Staleness
from codexmem.memory.handoffs import handoff_view
from codexmem.memory.lifecycle import recover_idle_sessions
from codexmem.memory.notes import PREVIEW_CHARS, note_view
from codexmem.memory.related import RelatedSource, related_sources
from codexmem.memory.scope import resolve_scope
from codexmem.memory.sessions import open_session, session_view
from codexmem.memory.text import required_text, unique
from codexmem.models.records import (
    HANDOFF_STATUSES,
    NOTE_STATUSES,
    SERVED_HANDOFF_STATES,
    SERVED_NOTE_STATES,
    Intent,
    ScopeRef,
)
from codexmem.store.gitsetup import driver_problem_in_clone
from codexmem.store.ids import check_record_id
from codexmem.store.index import Hit, Index, TextQuery
from codexmem.store.index.stems import spaced
from codexmem.store.init import ignored_in_clone
from codexmem.store.layout import HANDOFF, NOTE, Kind
from codexmem.store.store import Store
from codexmem.timeutil import parse_ts

Groups = dict[str, list[dict[str, Any]]]

HIGH_VALUE = 3
"""Bootstrap, recent and related notes show importance 3 and up."""
NEWEST_KEPT = 2
"""High-value notes shown for being the newest, whatever notes of higher importance there are."""
LIVE_NOTE_STATES = ["active", "resolved"]
BY_VALUE = (("importance", True), ("created_at", True), ("id", True))
BY_TIME = (("created_at", True), ("id", True))
MAX_QUERY_WORDS = 32
CURSOR_ID_CHARS = 8
"""A search's ``next_cursor`` is ``<window>.<position>.<row>.<id>``: the id a digest of the search's
arguments, the row the newest record its first page saw."""
MAX_CURSOR_DIGITS = 6
"""Of a cursor's window and position each (a window holds at most a few hundred results per source)."""
MAX_ROW_DIGITS = 12
WINDOW_PER_RESULT = 5
MIN_WINDOW = 50
"""A search ranks its matches in windows of each source's newest ``max(5 x limit, 50)``: the first
page costs as much however many records match, and each window is ranked like the first."""

# Ranking: workspace > project > related, live states first, then importance, recency, relevance.
SCOPE_POINTS = {"workspace": 100, "project": 70, "related": 20}
STATE_POINTS = {"active": 12, "resolved": 6, "superseded": 0, "open": 12, "completed": 6, "abandoned": 0}
HANDOFF_IMPORTANCE = {"open": 4, "completed": 3, "abandoned": 2}
RECENCY_POINTS = ((timedelta(days=1), 10), (timedelta(days=7), 6), (timedelta(days=30), 3))
RELEVANCE_POINTS = 20.0
INTENT_POINTS = 20
"""The intent's fixed bonus (handoffs for continuation, that note type otherwise): as much as relevance can
give, so an intent is never outweighed by wording alone."""


class Detail(NamedTuple):
    """How much of each handoff and brief list a bootstrap answer shows."""

    items: int
    chars: int
    summary: int


# The richest level whose fixed part leaves room for notes is used.
DETAIL_LEVELS = (Detail(8, 200, 300), Detail(5, 120, 200), Detail(3, 60, 100))
FIXED_PART_BUDGET = MAX_ANSWER_BYTES - 2500
FIRST_NOTES_ROOM = 5
"""A bootstrap's brief is cut to the level that leaves room for this many notes (its default max_notes)."""
MAX_LISTED_RECOVERIES = 10
UNREADABLE_SHOWN = 3


@dataclass(frozen=True)
class Candidate:
    """A record found for an answer, with what ranking needs to know about how it was found.

    ``found`` is the record, or a search hit whose record is parsed only if the candidate is
    shown: ranking reads the fields below, which a hit has from the index's columns.
    """

    kind: str  # "note" | "handoff"
    found: dict[str, Any] | Hit
    relevance: float = 0.0  # where the words were found (2: title or tags, 1: elsewhere); 0: not by text
    relation_type: str | None = None
    all_words: bool = True
    project_name: str | None = None  # the related project's, for labels

    @property
    def record(self) -> dict[str, Any]:
        return self.found.record if isinstance(self.found, Hit) else self.found

    @property
    def record_id(self) -> str:
        if isinstance(self.found, Hit):
            return self.found.id
        return str(self.found["note_id" if self.kind == "note" else "handoff_id"])

    def field(self, name: str) -> Any:
        """One of ``Hit``'s fields (project_id, workspace_id, status, importance, created_at, type) of the record."""
        if isinstance(self.found, Hit):
            return getattr(self.found, name)
        if name in ("project_id", "workspace_id"):
            return self.found["scope"][name]
        return self.found[name]


# ------------------------------------------------------------------ bootstrap


def bootstrap_session(
    store: Store,
    now: datetime,
    warnings: Warnings,
    *,
    cwd: str,
    task: str = "",
    branch_name: str = "",
    repo_remote: str = "",
    include_related_projects: bool = False,
    max_notes: int = 5,
    max_handoffs: int = 1,
) -> dict[str, Any]:
    """``memory_bootstrap_session``: resolve, start a session, recover idle ones, brief the new session."""
    scope = resolve_scope(store, warnings, cwd=cwd, branch_name=branch_name, repo_remote=repo_remote)
    ignored = ignored_in_clone(store.root)
    if ignored is not None:
        warnings.add(
            "WARN_STORE_IGNORED",
            f"git in this clone ignores new files of the memory store by the rule {ignored}, so what this "
            "session saves would never be committed: tell the user to run `codexmem setup`, which un-ignores it",
        )
    broken = driver_problem_in_clone(store.root)
    if broken is not None:
        warnings.add("WARN_MERGE_DRIVER_BROKEN", f"{broken} (tell the user)")
    ref = scope.ref()
    session = open_session(store, now, warnings, scope=ref, task=task, branch_name=scope.branch_name)
    recovered = recover_idle_sessions(store, now, warnings, workspace_id=ref.workspace_id, actor=session["session_id"])
    index = store.fresh_index()
    handoffs = workspace_first(index, HANDOFF, ref, limit=max_handoffs, order=BY_TIME, where={"status": "open"})
    latest = handoffs[0] if handoffs else None
    if latest is None:
        warnings.add("WARN_NO_PRIOR_HANDOFF", "no open handoff was found for this workspace or project")
    elif latest["kind"] == "recovery":
        warnings.add("WARN_RECOVERY_HANDOFF_USED", "the latest open handoff was generated from an interrupted session")
    notes, has_more = high_value_notes(index, ref, limit=max_notes)
    if not notes:
        warnings.add("WARN_NO_PRIOR_NOTES", "no recent high-value notes were found for this workspace or project")
    related = related_notes(store, ref, warnings, limit=max_notes) if include_related_projects else []
    warn_unreadable(index, warnings)

    def compact_handoff(record: dict[str, Any], level: Detail) -> dict[str, Any]:
        return handoff_view(record, compact=True, items=level.items, chars=level.chars, summary_chars=level.summary)

    def build(level: Detail, kept: Groups) -> dict[str, Any]:
        return {
            "scope": scope.as_dict(),
            "session": session_view(session),
            "latest_handoff": None if latest is None else compact_handoff(latest, level),
            "other_open_handoffs": kept["handoffs"],
            "recent_notes": kept["notes"],
            "related_notes": kept["related"],
            "startup_brief": startup_brief(task, latest, notes, level, related),
            "recovered_sessions": recovered[:MAX_LISTED_RECOVERIES],
            "has_more": False,
            "truncated": False,
        }

    stale = Staleness(store.config, store.root)
    items = [("notes", note_view(n, compact=True, stale=stale)) for n in notes]
    # The brief grows with the notes it sums up: the richest level that also leaves room for the
    # first notes themselves (asked for 20 large notes, a full brief left room for 2, 5 gave 3).
    first: Groups = defaultdict(list, notes=[view for _, view in items[:FIRST_NOTES_ROOM]])
    level = next(
        (
            lv
            for lv in DETAIL_LEVELS
            if fits(build(lv, defaultdict(list)), warnings, budget=FIXED_PART_BUDGET)
            and fits(build(lv, first), warnings)
        ),
        DETAIL_LEVELS[-1],
    )
    items += [("handoffs", compact_handoff(h, level)) for h in handoffs[1:]]
    items += [("related", _related_view(c, stale)) for c in related]
    data, kept = fit_lists(warnings, items, lambda groups: build(level, groups))
    data["has_more"] = has_more or kept < len(items)
    data["truncated"] = kept < len(items)
    return data


def warn_unreadable(index: Index, warnings: Warnings, *, under: str = "") -> None:
    """What ``codexmem check`` would report as unreadable is left out of every answer: say so
    (``under``: only the files below that folder of the store, such as one channel's)."""
    bad = index.bad_files(under, limit=UNREADABLE_SHOWN)
    if bad:
        total = index.bad_file_count(under) if len(bad) == UNREADABLE_SHOWN else len(bad)
        shown = ", ".join(b.path for b in bad)
        more = f" and {total - UNREADABLE_SHOWN} more" if total > UNREADABLE_SHOWN else ""
        count = "1 file" if total == 1 else f"{total} files"
        warnings.add(
            "WARN_UNREADABLE_FILES",
            f"{count} in the store cannot be read and {'is' if total == 1 else 'are'} left out of every "
            f"answer ({shown}{more}); ask the user to run `codexmem check`, which says what is wrong",
        )


def startup_brief(
    task: str,
    handoff: dict[str, Any] | None,
    notes: Sequence[dict[str, Any]],
    level: Detail,
    related: Sequence[Candidate] = (),
) -> dict[str, Any]:
    """What a new session needs first, from the latest open handoff, the high-value notes and related projects."""

    def short(texts: Sequence[str]) -> list[str]:
        return [shorten(t, level.chars)[0] for t in unique(t.strip() for t in texts)[: level.items]]

    state = handoff["summary"] if handoff else (notes[0]["content"] if notes else "")
    return {
        "current_task": task.strip() or (handoff["task"] if handoff else None),
        "last_known_state": shorten(state, level.summary)[0] if state else None,
        "important_decisions": short([n["content"] for n in notes if n["type"] == "decision"]),
        "open_todos": short(
            [
                *(handoff["next_steps"] if handoff else []),
                *(n["title"] for n in notes if n["type"] == "todo" and n["status"] == "active"),
            ]
        ),
        "risks": short(handoff["risks"] if handoff else []),
        "touched_files": short(
            [*(handoff["files_touched"] if handoff else []), *(p for n in notes for p in n["file_paths"])]
        ),
        "related_context": short([f"{c.project_name}: {c.record['title']}" for c in related]),
    }


# ------------------------------------------------------------------ search


def search(
    store: Store,
    now: datetime,
    warnings: Warnings,
    *,
    scope: ScopeRef,
    query: str,
    types: Sequence[str] = (),
    states: Sequence[str] = (),
    min_importance: int = 1,
    limit: int = 10,
    include_handoffs: bool = False,
    include_related_projects: bool = False,
    intent: Intent = "general",
    cursor: str = "",
) -> dict[str, Any]:
    """``memory_search``: full-text search over this project's notes (and handoffs), ranked.

    The matches are ranked a window at a time: window 0 holds the newest ``max(5 x limit, 50)``
    matches of each source (this project's notes, its handoffs, each related store), window 1 the
    next older ones, and so on; the results are window 0's ranking, then window 1's, and so on. A
    page that stops early (``has_more``) gives ``next_cursor``, the window and position of its
    first result not shown: the same search with it returns the next results of that order, so
    the pages together hold every match once (the first page never looks past window 0). Every
    argument but the cursor must be the same.
    """
    words = query_terms(required_text(query, "query"))
    asked = [words, sorted(types), sorted(states), min_importance, limit, include_handoffs]
    asked += [include_related_projects, intent, scope.project_id, scope.workspace_id]
    search_id = hashlib.sha256(json.dumps(asked).encode("utf-8")).hexdigest()[:CURSOR_ID_CHARS]
    window, position, ceiling = _cursor_position(cursor, search_id)
    note_filter: dict[str, Sequence[str]] = {"project_id": [scope.project_id]}
    handoff_filter: dict[str, Sequence[str]] = {"project_id": [scope.project_id]}
    if types:
        note_filter["type"] = list(types)
    # A state family the caller did not mention is every state but retracted (never served).
    note_filter["status"] = [s for s in states if s in SERVED_NOTE_STATES] or (
        [] if any(s in NOTE_STATUSES for s in states) else SERVED_NOTE_STATES
    )
    handoff_filter["status"] = [s for s in states if s in SERVED_HANDOFF_STATES] or (
        [] if any(s in HANDOFF_STATUSES for s in states) else SERVED_HANDOFF_STATES
    )
    index = store.fresh_index()
    ceiling = ceiling or index.max_rowid()  # notes saved while an agent pages come after its last page
    want = max(limit * WINDOW_PER_RESULT, MIN_WINDOW)

    def find(match: TextQuery, all_words: bool, size: int, offset: int) -> tuple[list[Candidate], bool]:
        """The ``size`` newest matches of each table after its newest ``offset``; whether one holds more."""
        note_hits, more = index.hits(
            [NOTE],
            match,
            where_in=note_filter,
            min_importance=min_importance,
            limit=size,
            offset=offset,
            max_rowid=ceiling,
        )
        hits = [Candidate("note", hit, hit.relevance, all_words=all_words) for hit in note_hits]
        if include_handoffs:
            handoff_hits, handoffs_more = index.hits(
                [HANDOFF], match, where_in=handoff_filter, limit=size, offset=offset, max_rowid=ceiling
            )
            more = more or handoffs_more
            hits += [Candidate("handoff", hit, hit.relevance, all_words=all_words) for hit in handoff_hits]
        return hits, more

    terms = tuple(spaced(w).strip() for w in words)  # a run of kana or Han: a phrase of its characters
    match = TextQuery(terms)
    strong: list[Candidate] = []  # window 0 of the every-word matches
    strong_more = False
    if words:
        # Past window 0 only the count matters (fewer than limit?), so fewer rows are read.
        strong, strong_more = find(match, True, want if window == 0 else limit, 0)
    weak = bool(words) and len(strong) < limit and len(words) > 1
    if weak:  # too few with every word (all of them are in ``strong``): accept any word, ranked lower
        match = TextQuery(terms, any_word=True)
    sources = related_sources(store, scope.project_id, warnings) if include_related_projects else []

    def load(k: int) -> tuple[list[Candidate], bool]:
        """Window ``k`` ranked, and whether a source holds matches past it."""
        found: list[Candidate] = []
        more = False
        if weak:
            seen = {c.record_id for c in strong}
            found, more = find(match, False, want, k * want)
            found = [*(strong if k == 0 else []), *(c for c in found if c.record_id not in seen)]
        elif words:
            found, more = (strong, strong_more) if k == 0 else find(match, True, want, k * want)
        if sources:
            related, related_more = related_window(
                sources,
                warnings,
                limit=want,
                offset=k * want,
                match=match if words else None,
                note_filter=note_filter,
                min_importance=min_importance,
            )
            found += related
            more = more or related_more
            if k == 0 and not related:
                _warn_related_empty(warnings)
        return rank(found, scope, now, intent), more

    # This page's results from the cursor's window on, and where a next page starts, if one has results.
    listed: list[tuple[int, int, Candidate]] = []
    beyond: list[tuple[int, int]] = []  # the next window, when only whether it has results is asked
    k, more = window, True
    while len(listed) <= limit and more:
        if len(listed) == limit and not weak:  # ``more`` is exact and no match is left out: not loaded
            beyond.append((k, 0))
            break
        ranked, more = load(k)
        start = position if k == window else 0
        listed += [(k, i, c) for i, c in enumerate(ranked[start : start + limit + 1 - len(listed)], start)]
        k += 1
    shown = listed[:limit]
    positions = [(w, i) for w, i, _ in listed] + beyond
    cursors = [f"{w}.{i}.{ceiling}.{search_id}" for w, i in positions]
    # Set after fitting: never longer than what was fitted (nor null, when there is no next page).
    longest = max(cursors, key=len, default=f"0.0.{ceiling}.{search_id}")
    stale = Staleness(store.config, store.root)
    data, kept = fit_lists(
        warnings,
        [("results", result_view(c, stale)) for _, _, c in shown],
        lambda groups: {"results": groups["results"], "has_more": False, "truncated": False, "next_cursor": longest},
    )
    data["has_more"] = kept < len(cursors)
    data["truncated"] = kept < len(shown)
    data["next_cursor"] = cursors[kept] if data["has_more"] else None
    return data


_PHRASE = re.compile(r'"([^"]*)"')


def query_terms(query: str) -> list[str]:
    """A query's terms, lower case, each once: its words, and each "quoted phrase" as one term of
    its words (matched side by side and in order: "retry delay" no longer ranks "Delay before
    retry grows" with the exact title), at most ``MAX_QUERY_WORDS``."""
    phrases = [" ".join(re.findall(r"\w+", p)) for p in _PHRASE.findall(query)]
    rest = _PHRASE.sub(" ", query)
    return unique(t.lower() for t in [*phrases, *re.findall(r"\w+", rest)] if t)[:MAX_QUERY_WORDS]


def _cursor_position(cursor: str, search_id: str) -> tuple[int, int, int]:
    """Where a page of this search starts (window, position in its ranking) and the newest record
    row its pages see: (0, 0, 0: the newest now), or what the ``next_cursor`` a page of the same
    search gave says."""
    if not cursor:
        return 0, 0, 0
    where, _, made_for = cursor.rpartition(".")
    numbers = where.split(".")
    digits = (MAX_CURSOR_DIGITS, MAX_CURSOR_DIGITS, MAX_ROW_DIGITS)
    if (
        len(numbers) != 3
        or not made_for
        or not all(n.isascii() and n.isdigit() and len(n) <= d for n, d in zip(numbers, digits, strict=True))
    ):
        example = f"0.10.5000.{search_id}"
        raise invalid_input("cursor", f"must be a next_cursor of memory_search, such as {example}; got {cursor[:40]!r}")
    if made_for != search_id:
        raise invalid_input(
            "cursor",
            "was given by a search with other arguments: send it with the same query, scope, filters and limit, "
            "or leave it out for the first page",
        )
    return int(numbers[0]), int(numbers[1]), int(numbers[2])


def rank(found: Sequence[Candidate], scope: ScopeRef, now: datetime, intent: str) -> list[Candidate]:
    """Best first. A related project's result never outranks a strong (every word) result of this project."""
    best = max((c.relevance for c in found), default=0.0)
    scores = [score(c, scope, now, intent, best) for c in found]
    strong = [s for c, s in zip(found, scores, strict=True) if not c.relation_type and c.all_words]
    ceiling = min(strong) - 1 if strong else None
    keyed = [
        ((min(s, ceiling) if c.relation_type and ceiling is not None else s), c.field("created_at"), c.record_id, c)
        for c, s in zip(found, scores, strict=True)
    ]
    keyed.sort(key=lambda k: k[:3], reverse=True)
    return [k[3] for k in keyed]


def score(c: Candidate, scope: ScopeRef, now: datetime, intent: str, best_relevance: float) -> float:
    """Higher first: scope, state, importance, recency, relevance (relative to the best hit's), intent."""
    if c.relation_type:
        place = SCOPE_POINTS["related"]
    else:
        place = SCOPE_POINTS["workspace" if c.field("workspace_id") == scope.workspace_id else "project"]
    status = c.field("status")
    importance = c.field("importance") if c.kind == "note" else HANDOFF_IMPORTANCE[status]
    relevance = RELEVANCE_POINTS * c.relevance / best_relevance if best_relevance > 0 else 0.0
    if not c.all_words:
        relevance /= 2
    age = now - parse_ts(c.field("created_at"))
    recency = next((points for span, points in RECENCY_POINTS if age < span), 1)
    wanted = c.kind == "handoff" if intent == "continuation" else (c.kind == "note" and c.field("type") == intent)
    bonus = INTENT_POINTS if wanted else 0
    return place + STATE_POINTS[status] + 10 * importance + recency + relevance + bonus


def result_view(c: Candidate, stale: Staleness) -> dict[str, Any]:
    """One search result: enough to judge it, with the full record one memory_get_note away."""
    rec = c.record
    note = c.kind == "note"
    summary, cut = shorten(rec["content"] if note else rec["summary"], PREVIEW_CHARS)
    view: dict[str, Any] = {
        "kind": c.kind,
        "id": c.record_id,
        "version": rec["version"],
        "scope": rec["scope"],
        "state": rec["status"],
        "title": rec["title"] if note else rec["task"],
        "summary": summary,
        "importance": rec["importance"] if note else HANDOFF_IMPORTANCE[rec["status"]],
        "created_at": rec["created_at"],
    }
    if note:
        view["source"] = rec["source"]
    if cut:
        view["content_truncated"] = True
    if c.relation_type:
        view.update(related_labels(c))
    return stale.mark(view, rec) if note else view


# ------------------------------------------------------------------ recent and get


def get_recent(
    store: Store,
    warnings: Warnings,
    *,
    scope: ScopeRef,
    limit: int = 5,
    include_notes: bool = True,
    include_handoffs: bool = True,
    include_related_projects: bool = False,
) -> dict[str, Any]:
    """``memory_get_recent``: latest handoffs (any status) and high-value notes, workspace first."""
    index = store.fresh_index()
    handoffs = (
        workspace_first(
            index, HANDOFF, scope, limit=limit + 1, order=BY_TIME, where_in={"status": SERVED_HANDOFF_STATES}
        )
        if include_handoffs
        else []
    )
    notes, more_notes = high_value_notes(index, scope, limit=limit) if include_notes else ([], False)
    related = related_notes(store, scope, warnings, limit=limit) if include_related_projects else []
    more = len(handoffs) > limit or more_notes
    stale = Staleness(store.config, store.root)
    pairs = itertools.zip_longest(
        [("handoffs", handoff_view(h, compact=True)) for h in handoffs[:limit]],
        [("notes", note_view(n, compact=True, stale=stale)) for n in notes],
    )
    items = [item for pair in pairs for item in pair if item is not None]
    items += [("related", _related_view(c, stale)) for c in related]

    def build(groups: Groups) -> dict[str, Any]:
        data = {"handoffs": groups["handoffs"], "notes": groups["notes"]}
        if include_related_projects:
            data["related_notes"] = groups["related"]
        return {**data, "has_more": False, "truncated": False}

    data, kept = fit_lists(warnings, items, build)
    data["has_more"] = more or kept < len(items)
    data["truncated"] = kept < len(items)
    return data


def get_record(store: Store, warnings: Warnings, *, record_id: str, kind: Literal["note", "handoff"]) -> dict[str, Any]:
    """``memory_get_note``: a note or handoff by id, whole (cut only if a hand edit made it too big);
    a retracted one is refused, as it is never served again."""
    target = NOTE if kind == "note" else HANDOFF
    check_record_id(record_id, str(target.prefix), "id")
    record = store.fresh_index().get(target, record_id)
    if record is None:
        store.raise_if_unreadable(target, record_id)
        raise CodexmemError("ERR_RECORD_NOT_FOUND", f"{kind} {record_id} does not exist")
    if record["status"] == "retracted":
        raise CodexmemError(
            "ERR_RECORD_NOT_FOUND",
            f"{kind} {record_id} was retracted at version {record['version']}, so its text is never served "
            "again: do not rely on it; memory_search finds what the project holds now",
        )
    if kind == "handoff":
        data = {"record": handoff_view(record)}
        return data if fits(data, warnings) else {"record": handoff_view(record, compact=True)}
    stale = Staleness(store.config, store.root)
    data = {"record": note_view(record, stale=stale)}
    return data if fits(data, warnings) else {"record": note_view(record, compact=True, stale=stale)}


# ------------------------------------------------------------------ related projects


def related_notes(
    store: Store,
    scope: ScopeRef,
    warnings: Warnings,
    *,
    limit: int,
    match: TextQuery | None = None,
    note_filter: dict[str, Sequence[str]] | None = None,
    min_importance: int = HIGH_VALUE,
) -> list[Candidate]:
    """Notes of the projects this project's config entry declares relations to, labelled with their
    project and relation_type: by full-text ``match`` for search, else the recent high-value ones.

    Related projects may live in this store or in other stores (read-only, see
    :mod:`codexmem.memory.related`). Warns WARN_RELATED_PROJECTS_SKIPPED when none is declared or
    a store cannot be used, WARN_RELATED_PROJECTS_EMPTY when the usable ones yield nothing.
    """
    sources = related_sources(store, scope.project_id, warnings)
    found, _ = related_window(
        sources, warnings, limit=limit, match=match, note_filter=note_filter, min_importance=min_importance
    )
    if match is None:
        found.sort(key=lambda c: (c.field("importance"), c.field("created_at"), c.record_id), reverse=True)
    else:
        found.sort(key=lambda c: c.relevance, reverse=True)  # stable: newest first within a tier
    if sources and not found:
        _warn_related_empty(warnings)
    return found[:limit]


def _warn_related_empty(warnings: Warnings) -> None:
    warnings.add("WARN_RELATED_PROJECTS_EMPTY", "related projects are declared but none of their notes matched")


def related_window(
    sources: Sequence[RelatedSource],
    warnings: Warnings,
    *,
    limit: int,
    offset: int = 0,
    match: TextQuery | None = None,
    note_filter: dict[str, Sequence[str]] | None = None,
    min_importance: int = HIGH_VALUE,
) -> tuple[list[Candidate], bool]:
    """Each related store's ``limit`` matches after its first ``offset`` (newest first by text,
    else most important first), labelled; and whether a store holds more past them."""
    found: list[Candidate] = []
    more = False
    for source in sources:
        try:
            hits, beyond = _related_hits(
                source.store, list(source.relation_types), limit, offset, match, note_filter, min_importance
            )
        except (CodexmemError, OSError) as exc:
            reason = exc.message if isinstance(exc, CodexmemError) else (exc.strerror or str(exc))
            warnings.add("WARN_RELATED_PROJECTS_SKIPPED", f"a related store could not be read: {reason[:160]}")
            continue
        more = more or beyond
        for hit in hits:
            candidate = Candidate("note", hit, hit.relevance if isinstance(hit, Hit) else 0.0)
            project = candidate.field("project_id")
            found.append(
                replace(
                    candidate,
                    relation_type=source.relation_types[project],
                    all_words=match is None or not match.any_word,
                    project_name=source.names[project],
                )
            )
    return found, more


def _related_hits(
    store: Store,
    projects: list[str],
    limit: int,
    offset: int,
    match: TextQuery | None,
    note_filter: dict[str, Sequence[str]] | None,
    min_importance: int,
) -> tuple[list[dict[str, Any]] | list[Hit], bool]:
    """Search hits (records parsed only if shown), or the recent high-value records when there is no
    text; and whether more follow them."""
    index = store.fresh_index()
    if match is not None:
        where_in = {**(note_filter or {}), "project_id": projects}
        return index.hits([NOTE], match, where_in=where_in, min_importance=min_importance, limit=limit, offset=offset)
    rows = index.select(
        NOTE,
        where_in={"project_id": projects, "status": LIVE_NOTE_STATES},
        min_importance=min_importance,
        order=BY_VALUE,
        limit=limit + 1,
        offset=offset,
    )
    return rows[:limit], len(rows) > limit


def related_labels(c: Candidate) -> dict[str, Any]:
    """Where a related result comes from: its project and how this project relates to it."""
    return {
        "project_id": c.record["scope"]["project_id"],
        "project_name": c.project_name,
        "relation_type": c.relation_type,
    }


def _related_view(c: Candidate, stale: Staleness) -> dict[str, Any]:
    return {**note_view(c.record, compact=True, stale=stale), **related_labels(c)}


# ------------------------------------------------------------------ shared queries and fitting


def workspace_first(
    index: Index,
    kind: Kind,
    scope: ScopeRef,
    *,
    limit: int,
    order: Sequence[tuple[str, bool]],
    where: dict[str, Any] | None = None,
    where_in: dict[str, Sequence[Any]] | None = None,
    min_importance: int | None = None,
) -> list[dict[str, Any]]:
    """Records of this workspace, then, to fill ``limit``, of the project's other workspaces."""
    project = {**(where or {}), "project_id": scope.project_id}
    mine = index.select(
        kind,
        where={**project, "workspace_id": scope.workspace_id},
        where_in=where_in,
        min_importance=min_importance,
        order=order,
        limit=limit,
    )
    if len(mine) >= limit:
        return mine
    others = index.select(
        kind,
        where=project,
        where_not={"workspace_id": scope.workspace_id},
        where_in=where_in,
        min_importance=min_importance,
        order=order,
        limit=limit - len(mine),
    )
    return mine + others


def high_value_notes(index: Index, scope: ScopeRef, *, limit: int) -> tuple[list[dict[str, Any]], bool]:
    """Up to ``limit`` notes of importance 3 and up, not superseded, workspace first, most important
    and newest first, and whether there are more. This workspace's newest ``NEWEST_KEPT`` are always
    among them when there is room for twice as many, so last session's decision is not crowded out
    by older notes of higher importance (six importance-5 constraints of day 1 hid day 2's decision)."""

    # This workspace's newest of each importance, each read in order from the value index, then
    # the newest of them (another workspace's note never takes the place of this one's).
    count = min(NEWEST_KEPT, limit // 2)
    here = {"project_id": scope.project_id, "workspace_id": scope.workspace_id}
    live: dict[str, Sequence[str]] = {"status": LIVE_NOTE_STATES}
    newest = [
        n
        for level in range(HIGH_VALUE, 6)
        for n in index.select(NOTE, where={**here, "importance": level}, where_in=live, order=BY_TIME, limit=count)
    ]
    newest = sorted(newest, key=lambda n: (n["created_at"], n["note_id"]), reverse=True)[:count]
    kept = {n["note_id"] for n in newest}
    valued = workspace_first(
        index, NOTE, scope, limit=limit + 1, order=BY_VALUE, where_in=live, min_importance=HIGH_VALUE
    )
    valued = [n for n in valued if n["note_id"] not in kept]
    room = limit - len(newest)
    shown = newest + valued[:room]

    def rank(n: dict[str, Any]) -> tuple[bool, int, str, str]:
        return n["scope"]["workspace_id"] == scope.workspace_id, n["importance"], n["created_at"], n["note_id"]

    return sorted(shown, key=rank, reverse=True), len(valued) > room


def fit_lists(
    warnings: Warnings, items: Sequence[tuple[str, dict[str, Any]]], build: Callable[[Groups], dict[str, Any]]
) -> tuple[dict[str, Any], int]:
    """The data whose envelope keeps the longest prefix of ``(list name, item)`` pairs within budget.

    ``build`` renders the data from the kept items grouped by list name; it must render its
    boolean flags as ``False`` (the longer spelling) so setting them afterwards never grows the answer.
    """

    def render(kept: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
        groups: Groups = defaultdict(list)
        for name, item in kept:
            groups[name].append(item)
        return build(groups)

    return fit(items, render, warnings)
