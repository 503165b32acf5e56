"""Re-run the record-channel write-up's four experiments against codexmem, through its MCP tools.

A scripted agent triages bugs with the real tools over an in-process MCP client (the legacy
handshake Codex uses); people's changes go through the record service, as the CLI makes them.
Prints the write-up's tables, then the median cost of one accepted edit:

1. fields saved and edit calls per item, for each (schema read, rejection detail) pair: codexmem
   always sends the full rejection, and the agent strips it down itself to each lower level;
2. offset paging (simulated over the same data) against before_id paging, with bugs filed or
   deleted between pages;
3. re-listing against polling, after people edited 30 items, filed 12 and deleted 3;
4. the version check over 1,000 edits, one item in eight moved by a person meanwhile.

    python bench/record_channels.py          # the full run (a few minutes)
    python bench/record_channels.py --quick  # a small version (tests/test_records_bench.py)

Every run checks its invariants and fails loudly when one breaks: the ceiling is set only by
requests that should be refused, cursor paging reads nothing twice and misses nothing, one poll
finds exactly the changes, no person's change is overwritten.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import re
import shutil
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from codexmem.mcp.server import build_server
from codexmem.mcp.state import ServerState
from codexmem.records import service
from codexmem.store.init import init_store
from codexmem.store.layout import ITEM
from codexmem.store.store import Store
from scripts import bugs_channel

REPO = Path(__file__).resolve().parent.parent
NOW = datetime(2026, 3, 13, 10, 52, tzinfo=UTC)  # a Friday
PERSON = "cli:person"
KEYS = ("status", "owner", "severity", "points", "due", "area")


@dataclass(frozen=True)
class Sizes:
    seeds: int
    triage_items: int
    paging_items: int
    poll_items: int
    poll_changes: tuple[int, int, int]
    version_edits: int
    cost_edits: int


FULL = Sizes(
    seeds=5,
    triage_items=200,
    paging_items=600,
    poll_items=400,
    poll_changes=(30, 12, 3),
    version_edits=1000,
    cost_edits=1000,
)
QUICK = Sizes(
    seeds=1, triage_items=40, paging_items=120, poll_items=80, poll_changes=(6, 3, 1), version_edits=80, cost_edits=60
)


# ------------------------------------------------------------------------------ stores, tools


class Lab:
    """Stores of New bugs, built once per (size, seed) through the service and copied for each run."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._bases: dict[tuple[int, int], Path] = {}
        self._copies = 0

    def store(self, count: int, seed: int) -> Path:
        base = self._bases.get((count, seed))
        if base is None:
            base = self.root / f"base-{count}-{seed}"
            init_store(base, cwd=self.root, shared=True)
            store = Store(base)
            service.add_channel(store, "bugs", bugs_channel.BUGS_SCHEMA, actor=PERSON, now=NOW)
            rng = random.Random(seed)
            for n in range(1, count + 1):
                service.create_item(store, "bugs", bugs_channel.bug_values(rng, n), actor=PERSON, now=NOW)
            store.index.close()
            self._bases[(count, seed)] = base
        self._copies += 1
        copy = self.root / f"run-{self._copies}"
        shutil.copytree(base, copy)
        return copy


class Tool:
    """The agent's side of the MCP connection: counts calls and the bytes the model would read."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.calls = 0
        self.bytes = 0
        self._keys = 0

    async def __call__(self, name: str, **arguments: Any) -> dict[str, Any]:
        if name == "edit_record_item":
            self._keys += 1
            arguments.setdefault("idempotency_key", f"bench-{self._keys}")
        result = await self.client.call_tool(name, arguments)
        text = result.content[0].text  # type: ignore[union-attr]
        self.calls += 1
        self.bytes += len(text.encode("utf-8"))
        envelope: dict[str, Any] = json.loads(text)
        return envelope

    def reset(self) -> None:
        self.calls = self.bytes = 0

    async def pages(self, limit: int = 50) -> AsyncIterator[dict[str, Any]]:
        """Every page of the bugs channel, following next_before_id."""
        before: str | None = None
        while True:
            args: dict[str, Any] = {"record_channel_id": "bugs", "limit": limit}
            if before:
                args["before_id"] = before
            page = (await self("list_record_items", **args))["data"]
            yield page
            if not page["has_more"]:
                return
            before = page["next_before_id"]

    async def poll_all(self, since: int) -> tuple[list[dict[str, Any]], int]:
        events: list[dict[str, Any]] = []
        while True:
            data = (await self("poll_resource_events", since=since, record_channel_id="bugs", limit=500))["data"]
            events += data["events"]
            since = data["next_since"]
            if not data["has_more"]:
                return events, since


@contextlib.asynccontextmanager
async def connect(path: Path) -> AsyncIterator[Tool]:
    async with Client(build_server(ServerState(path, clock=lambda: NOW)), mode="legacy") as client:
        yield Tool(client)


def person(path: Path) -> Store:
    return Store(path)


def item_ids(store: Store) -> list[str]:
    """Current ids, newest first: what an offset page would slice."""
    return [d["item_id"] for d in store.fresh_index().select(ITEM, where={"channel": "bugs"}, order=[("id", True)])]


# ---------------------------------------------------------------------- 1. schema and rejection

STATUS_WORDS = ("Triaged", "In progress", "Fixed", "Won't fix")
SEVERITY_WORDS = (("S1 Critical", "critical"), ("S2 Major", "major"), ("S3 Minor", "minor"), ("S4 Trivial", "trivial"))


@dataclass(frozen=True)
class Intent:
    """What a person asked for, in their words, and what it means in the schema (None: must be refused)."""

    words: dict[str, Any]
    truth: dict[str, Any]


def next_friday(today: datetime) -> str:
    return (today + timedelta(days=(4 - today.weekday()) % 7 or 7)).date().isoformat()


def make_intents(rng: random.Random, count: int) -> list[Intent]:
    out = []
    for _ in range(count):
        status = rng.choice(STATUS_WORDS)
        owner = rng.choice(("Aiko", "Mika", "Ren"))
        sev = rng.randrange(4)
        points = rng.choice((1, 2, 3, 5, 8, 13, 20))
        due = "Friday" if rng.random() < 0.5 else f"2026-04-{rng.randint(1, 30):02d}"
        area = rng.choice(bugs_channel.AREA_OPTIONS)
        words = {
            "status": status,
            "owner": owner,
            "severity": SEVERITY_WORDS[sev][rng.randrange(2)],
            "points": points,
            "due": due,
            "area": area["label"],
        }
        truth = {
            "status": next(o["value"] for o in bugs_channel.STATUS_OPTIONS if o["label"] == status),
            "owner": owner.lower(),
            "severity": f"s{sev + 1}",
            "points": points if points <= 13 else None,
            "due": next_friday(NOW) if due == "Friday" else due,
            "area": area["value"],
        }
        out.append(Intent(words, truth))
    return out


def strip(error: dict[str, Any], level: str) -> list[dict[str, Any]]:
    """codexmem's full rejection cut down to what a lesser server would have said."""
    if level == "terse":
        return []
    if level == "field":
        return [{"key": f["key"]} for f in error["fields"]]
    if level == "values":
        return [{k: v for k, v in f.items() if k != "options"} for f in error["fields"]]
    return list(error["fields"])


def by_label(word: str, options: list[dict[str, Any]]) -> str | None:
    """A label or one word of a label ("major" in "S2 Major"), as a careful agent matches it."""
    w = word.casefold()
    for o in options:
        if o["label"].casefold() == w:
            return str(o["value"])
    hits = [o["value"] for o in options if w in o["label"].casefold().split()]
    return str(hits[0]) if len(hits) == 1 else None


def by_value(word: str, allowed: list[str]) -> str | None:
    """Only the option values known: "In progress" -> in_progress, "S2 Major" -> s2; never "Won't fix"."""
    slug = re.sub(r"[^a-z0-9]+", "_", word.casefold()).strip("_")
    if slug in allowed:
        return slug
    first = word.split()[0].casefold()
    return first if first in allowed else None


class Agent:
    """Triage as the write-up's scripted Codex: map through the schema if it read it, fix what a rejection allows."""

    def __init__(self, schema: dict[str, Any], read_schema: bool, level: str) -> None:
        self.fields = {f["key"]: f for f in schema["fields"]}
        self.read_schema = read_schema
        self.level = level

    def first(self, words: dict[str, Any]) -> dict[str, Any]:
        if not self.read_schema:
            return dict(words)
        out = {}
        for key, word in words.items():
            f = self.fields[key]
            if f["type"] == "select":
                out[key] = by_label(word, f["config"]["options"]) or word
            elif f["type"] == "date" and word == "Friday":
                out[key] = next_friday(NOW)
            else:
                out[key] = word  # never clamps a number
        return out

    def fix(self, words: dict[str, Any], sent: dict[str, Any], rejection: list[dict[str, Any]]) -> dict[str, Any]:
        """The next attempt: rejected fields fixed from what the rejection says, or dropped for a person."""
        out = dict(sent)
        for entry in rejection:
            key = entry["key"]
            value: Any = None
            if "options" in entry:
                value = by_label(words[key], entry["options"])
            if value is None and "allowed" in entry:
                value = by_value(str(words[key]), entry["allowed"])
            if value is None and entry.get("format") == "YYYY-MM-DD" and words[key] == "Friday":
                value = next_friday(NOW)
            if value is None or value == sent[key]:
                out.pop(key)
            else:
                out[key] = value
        return out


async def triage(tool: Tool, agent: Agent, item: dict[str, Any], intent: Intent) -> tuple[dict[str, Any], int]:
    """Edit one item as the agent would; returns (what was saved, edit calls)."""
    version = item["version"]
    sent = agent.first(intent.words)
    calls = 0
    while sent:
        calls += 1
        answer = await tool(
            "edit_record_item", record_channel_id="bugs", item_id=item["id"], values=sent, expected_version=version
        )
        if answer["ok"]:
            return sent, calls
        rejection = strip(answer["error"], agent.level)
        if agent.level == "terse":  # nothing to go on: one field at a time
            saved = {}
            for key, value in sent.items():
                calls += 1
                one = await tool(
                    "edit_record_item",
                    record_channel_id="bugs",
                    item_id=item["id"],
                    values={key: value},
                    expected_version=version,
                )
                if one["ok"]:
                    saved[key] = value
                    version = one["data"]["item"]["version"]
            return saved, calls
        sent = agent.fix(intent.words, sent, rejection)
    return {}, calls


@dataclass
class TriageRow:
    read_schema: bool
    level: str
    intended: int = 0
    saved: int = 0
    calls: int = 0
    items: int = 0
    lost: dict[str, int] = field(default_factory=dict)
    refusable_lost: int = 0
    refusable: int = 0
    wrong: int = 0


async def experiment_triage(lab: Lab, sizes: Sizes, read_schema: bool, level: str) -> TriageRow:
    row = TriageRow(read_schema, level)
    for seed in range(1, sizes.seeds + 1):
        path = lab.store(sizes.triage_items, seed)
        intents = make_intents(random.Random(1000 + seed), sizes.triage_items)
        async with connect(path) as tool:
            items = []
            schema: dict[str, Any] = {}
            async for page in tool.pages():
                schema = page["schema"]
                items += page["items"]
            agent = Agent(schema, read_schema, level)
            for item, intent in zip(sorted(items, key=lambda i: i["id"]), intents, strict=True):
                saved, calls = await triage(tool, agent, item, intent)
                row.items += 1
                row.calls += calls
                row.intended += len(KEYS)
                row.refusable += intent.truth["points"] is None
                for key in KEYS:
                    if key in saved:
                        row.saved += 1
                        row.wrong += saved[key] != intent.truth[key]
                    else:
                        row.lost[key] = row.lost.get(key, 0) + 1
                        row.refusable_lost += key == "points" and intent.truth["points"] is None
        stored = {d["item_id"]: d["values"] for d in person(path).fresh_index().select(ITEM, where={"channel": "bugs"})}
        assert all("age_days" not in v for v in stored.values())
    return row


# ------------------------------------------------------------------------------------- 2. paging


@dataclass
class PagingRow:
    change: str
    paging: str
    pages: int = 0
    reads: int = 0
    twice: int = 0
    never_seen: int = 0


def _change(people: Store, change: str, read: list[str], rng: random.Random, counter: list[int]) -> None:
    if change == "insert":
        for _ in range(2):
            counter[0] += 1
            values = bugs_channel.bug_values(rng, 5000 + counter[0])
            service.create_item(people, "bugs", values, actor=PERSON, now=NOW)
    else:
        alive = set(item_ids(people))
        for gone in rng.sample(sorted(alive & set(read)), 2):
            service.delete_item(people, "bugs", gone, actor=PERSON, now=NOW)


def _score(row: PagingRow, read: list[str], start: set[str], end: set[str]) -> PagingRow:
    row.reads = len(read)
    row.twice = len(read) - len(set(read))
    row.never_seen = len((start & end) - set(read))
    return row


def offset_pass(path: Path, change: str, page_sizes: list[int]) -> PagingRow:
    """Offset paging, simulated by the script over the same data and changes, with the cursor pass's page sizes.

    codexmem's pages stop at the answer budget, so an offset page would hold as many previews as
    a cursor page does; using the same sizes keeps the two passes comparable page for page.
    """
    people = person(path)
    rng, counter = random.Random(7), [0]
    start = set(item_ids(people))
    row, read, offset = PagingRow(change, "offset"), list[str](), 0
    while True:
        size = page_sizes[min(row.pages, len(page_sizes) - 1)]
        ids = item_ids(people)[offset : offset + size]
        row.pages += 1
        read += ids
        if offset + size >= len(item_ids(people)):
            break
        offset += size
        _change(people, change, read, rng, counter)
    return _score(row, read, start, set(item_ids(people)))


async def cursor_pass(path: Path, change: str) -> tuple[PagingRow, list[int]]:
    """list_record_items with before_id = next_before_id, the channel changing after every page."""
    people = person(path)
    rng, counter = random.Random(7), [0]
    start = set(item_ids(people))
    row, read, sizes = PagingRow(change, "before_id"), list[str](), list[int]()
    async with connect(path) as tool:
        async for page in tool.pages():
            row.pages += 1
            sizes.append(len(page["items"]))
            read += [i["id"] for i in page["items"]]
            if page["has_more"]:
                _change(people, change, read, rng, counter)
    return _score(row, read, start, set(item_ids(people))), sizes


async def experiment_paging(lab: Lab, sizes: Sizes, change: str) -> tuple[PagingRow, PagingRow]:
    cursor, page_sizes = await cursor_pass(lab.store(sizes.paging_items, 7), change)
    return offset_pass(lab.store(sizes.paging_items, 7), change, page_sizes), cursor


# ------------------------------------------------------------------------------------ 3. polling


@dataclass
class PollRow:
    strategy: str
    calls: int
    bytes: int
    found: int
    expected: int


async def experiment_polling(lab: Lab, sizes: Sizes) -> tuple[PollRow, PollRow]:
    path = lab.store(sizes.poll_items, 11)
    people = person(path)
    rng = random.Random(11)
    edits, new, deletes = sizes.poll_changes
    async with connect(path) as tool:
        _, cursor = await tool.poll_all(0)  # the sequence kept from the last run
        versions = {i["id"]: i["version"] async for page in tool.pages() for i in page["items"]}
        ids = sorted(versions)
        touched = rng.sample(ids, edits + deletes)
        for item in touched[:edits]:
            service.edit_item(
                people,
                "bugs",
                item,
                {"status": "triaged"},
                expected_version=None,
                idempotency_key=None,
                actor=PERSON,
                now=NOW,
            )
        for item in touched[edits:]:
            service.delete_item(people, "bugs", item, actor=PERSON, now=NOW)
        filed = [
            service.create_item(people, "bugs", bugs_channel.bug_values(rng, 9000 + n), actor=PERSON, now=NOW)["id"]
            for n in range(new)
        ]
        expected = set(touched) | set(filed)

        tool.reset()
        now_versions = {i["id"]: i["version"] async for page in tool.pages() for i in page["items"]}
        relisted = {i for i, v in now_versions.items() if versions.get(i) != v} | (set(versions) - set(now_versions))
        relist = PollRow(
            "list every page again, compare versions", tool.calls, tool.bytes, len(relisted), len(expected)
        )

        tool.reset()
        events, _ = await tool.poll_all(cursor)
        polled = {e["id"] for e in events if e.get("kind", "item") == "item"}  # an item's id says its kind
        poll = PollRow(
            "poll_resource_events from the stored sequence", tool.calls, tool.bytes, len(polled), len(expected)
        )
    assert relisted == expected, "re-listing must find exactly the changes"
    assert polled == expected and len(events) == len(expected), "one poll finds exactly the changes, each once"
    return relist, poll


# ---------------------------------------------------------------------------- 4. version check


@dataclass
class VersionRow:
    strategy: str
    edits: int
    moved: int = 0
    conflicts: int = 0
    overwritten: int = 0


async def experiment_versions(lab: Lab, sizes: Sizes, strategy: str) -> VersionRow:
    path = lab.store(sizes.version_edits, 13)
    people = person(path)
    rng = random.Random(13)
    row = VersionRow(strategy, sizes.version_edits)
    moved: set[str] = set()
    async with connect(path) as tool:
        ids = sorted([i["id"] async for page in tool.pages() for i in page["items"]])
        for item in ids:
            seen = (await tool("read_record_item", record_channel_id="bugs", item_id=item))["data"]["item"]
            if rng.random() < 1 / 8:  # a person moves it between the agent's read and its write
                service.edit_item(
                    people,
                    "bugs",
                    item,
                    {"status": "in_progress"},
                    expected_version=None,
                    idempotency_key=None,
                    actor=PERSON,
                    now=NOW,
                )
                moved.add(item)
            version = seen["version"]
            if strategy == "reread":
                again = await tool("read_record_item", record_channel_id="bugs", item_id=item)
                version = again["data"]["item"]["version"]
            values = {"status": "triaged", "severity": rng.choice(("s1", "s2", "s3", "s4"))}
            answer = await tool(
                "edit_record_item", record_channel_id="bugs", item_id=item, values=values, expected_version=version
            )
            if not answer["ok"]:
                assert answer["error"]["code"] == "ERR_VERSION_CONFLICT"
                row.conflicts += 1
                current = answer["error"]["item"]
                if current["values"]["status"] != "new":  # already moved on: only add the severity
                    values = {"severity": values["severity"]}
                retry = await tool(
                    "edit_record_item",
                    record_channel_id="bugs",
                    item_id=item,
                    values=values,
                    expected_version=answer["error"]["current_version"],
                )
                assert retry["ok"], retry
    final = {d["item_id"]: d["values"] for d in people.fresh_index().select(ITEM, where={"channel": "bugs"})}
    row.moved = len(moved)
    row.overwritten = sum(final[i]["status"] != "in_progress" for i in moved)
    return row


# ------------------------------------------------------------------------------------- 5. cost


@dataclass
class Cost:
    tool_ms: float
    service_ms: float
    edits: int


async def experiment_cost(lab: Lab, sizes: Sizes) -> Cost:
    """Median wall time of one accepted six-field edit: through the tool, and in the service alone."""
    rng = random.Random(17)
    path = lab.store(sizes.cost_edits, 17)
    tool_times: list[float] = []
    async with connect(path) as tool:
        items = sorted([i for page in [p async for p in tool.pages()] for i in page["items"]], key=lambda i: i["id"])
        for item, intent in zip(items, make_intents(rng, len(items)), strict=True):
            values = {k: v for k, v in intent.truth.items() if v is not None}
            started = time.perf_counter()
            answer = await tool(
                "edit_record_item",
                record_channel_id="bugs",
                item_id=item["id"],
                values=values,
                expected_version=item["version"],
            )
            tool_times.append(time.perf_counter() - started)
            assert answer["ok"], answer
    path = lab.store(sizes.cost_edits, 17)
    store = person(path)
    service_times: list[float] = []
    for item_id, intent in zip(sorted(item_ids(store)), make_intents(rng, sizes.cost_edits), strict=True):
        values = {k: v for k, v in intent.truth.items() if v is not None}
        started = time.perf_counter()
        service.edit_item(
            store, "bugs", item_id, values, expected_version=1, idempotency_key=f"s-{item_id}", actor="mcp", now=NOW
        )
        service_times.append(time.perf_counter() - started)
    return Cost(statistics.median(tool_times) * 1000, statistics.median(service_times) * 1000, len(tool_times))


# ------------------------------------------------------------------------------------- running

LEVEL_TEXT = {
    "terse": "nothing",
    "field": "which field",
    "values": "field, reason, allowed values",
    "labels": "field, reason, values and labels",
}


@dataclass
class Results:
    sizes: Sizes
    triage: list[TriageRow]
    paging: list[PagingRow]
    polling: list[PollRow]
    versions: list[VersionRow]
    cost: Cost


async def run(sizes: Sizes, workdir: Path) -> Results:
    lab = Lab(workdir)
    combos = [
        (False, "terse"),
        (False, "field"),
        (False, "values"),
        (False, "labels"),
        (True, "terse"),
        (True, "field"),
        (True, "values"),
        (True, "labels"),
    ]
    triage_rows = [await experiment_triage(lab, sizes, s, lvl) for s, lvl in combos]
    paging: list[PagingRow] = []
    for change in ("insert", "delete"):
        paging += await experiment_paging(lab, sizes, change)
    polling = list(await experiment_polling(lab, sizes))
    versions = [await experiment_versions(lab, sizes, s) for s in ("read", "reread")]
    results = Results(sizes, triage_rows, paging, polling, versions, await experiment_cost(lab, sizes))
    check(results)
    return results


def check(results: Results) -> None:
    """The invariants the write-up asserts; a broken one is a bug in codexmem, not a result."""
    for row in results.triage:
        assert row.wrong == 0, f"{row}: a saved value differs from what the person meant"
        if row.read_schema or row.level == "labels":  # the ceiling: only refusable requests are lost
            assert row.lost == {"points": row.refusable} and row.refusable_lost == row.refusable, row
    for paged in results.paging:
        if paged.paging == "before_id":
            assert paged.twice == 0 and paged.never_seen == 0, paged
    for poll in results.polling:
        assert poll.found == poll.expected, poll
    read = next(v for v in results.versions if v.strategy == "read")
    assert read.overwritten == 0 and read.conflicts == read.moved, read


def _pct(n: int, of: int) -> str:
    return f"{n:,} ({100 * n / of:.1f}%)"


def report(results: Results) -> str:
    t = results.triage
    intended = t[0].intended
    lines = [
        f"1. Does the schema in the page matter? ({t[0].items:,} items, {len(KEYS)} intended fields each)",
        "",
        f"| Agent read the schema | Rejection says | Fields saved (of {intended:,}) | Left for a person "
        "| Edit calls per item |",
        "|---|---|---|---|---|",
    ]
    rows = [*t[:6], t[6]]
    for row in rows:
        says = "values, or values and labels" if row is t[6] else LEVEL_TEXT[row.level]
        lines.append(
            f"| {'yes' if row.read_schema else 'no'} | {says} | {_pct(row.saved, row.intended)} "
            f"| {row.intended - row.saved:,} | {row.calls / row.items:.2f} |"
        )
    assert (t[6].saved, t[6].calls) == (t[7].saved, t[7].calls), "values and labels rows differ with the schema read"
    best = max(t, key=lambda r: r.saved)
    lines += [
        "",
        f"Ceiling: {_pct(best.saved, best.intended)}; every lost field is one of the "
        f"{best.refusable:,} out-of-range points values (20 > max 13), refused in every row.",
        "",
    ]
    lines += [
        f"2. Why before_id instead of an offset? ({results.sizes.paging_items} items, limit 50; codexmem's pages "
        "stop at the 9,000-byte answer budget, and the simulated offset pages take the same sizes)",
        "",
        "| Change after each page | Paging | Pages | Item reads | Read twice | Never seen |",
        "|---|---|---|---|---|---|",
    ]
    for p in results.paging:
        what = "2 new bugs filed" if p.change == "insert" else "2 already-read items deleted"
        lines.append(f"| {what} | {p.paging} | {p.pages} | {p.reads:,} | {p.twice} | {p.never_seen} |")
    edits, new, deletes = results.sizes.poll_changes
    lines += [
        "",
        f"3. How does the agent find what changed since the last pass? (after a pass over "
        f"{results.sizes.poll_items} items, people edited {edits}, filed {new} and deleted {deletes})",
        "",
        "| Strategy | Calls | Data returned | Found |",
        "|---|---|---|---|",
    ]
    for r in results.polling:
        lines.append(f"| {r.strategy} | {r.calls} | {r.bytes / 1024:.1f} KiB | {r.found} of {r.expected} |")
    lines += [
        "",
        "4. The version check",
        "",
        "| Version sent | Edits | Moved by a person | Conflicts | Overwritten |",
        "|---|---|---|---|---|",
    ]
    for v in results.versions:
        what = "from the read" if v.strategy == "read" else "re-read just before writing"
        lines.append(f"| {what} | {v.edits:,} | {v.moved} | {v.conflicts} | {v.overwritten} |")
    c = results.cost
    lines += [
        "",
        f"Median accepted six-field edit over {c.edits:,} edits: {c.tool_ms:.2f} ms through "
        f"edit_record_item (in-process MCP client), {c.service_ms:.2f} ms in the service alone "
        "(lock, validate, atomic write with fsync, event, index).",
    ]
    return "\n".join(lines)


@contextlib.contextmanager
def workdir(path: Path | None) -> Iterator[Path]:
    if path is not None:
        path.mkdir(parents=True, exist_ok=True)
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="codexmem-bench-") as tmp:
        yield Path(tmp)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Re-run the record-channel experiments against codexmem.")
    parser.add_argument("--quick", action="store_true", help="a small version (seconds, not minutes)")
    parser.add_argument("--dir", type=Path, help="keep the stores here instead of a temporary folder")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    with workdir(args.dir) as where:
        results = anyio.run(run, QUICK if args.quick else FULL, where)
    print(report(results))
    print(f"\n({'quick' if args.quick else 'full'} run, {time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
