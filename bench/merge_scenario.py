"""A seeded random merge scenario: six branches of agent sessions and person edits, merged into main.

Each trial makes a repository with a store holding 20 records (10 notes, 10 bugs), then six
branches from it. On each branch, agent sessions save notes, move notes' status (resolved,
retracted), supersede notes and write handoffs, and people (each with their own git identity)
edit bugs through the records service, often the same fields, sometimes back to the value they
started from. The branches are merged into main in a random order, as a hosting service's merge
button does (``* merge`` in ``.git/info/attributes``: git's plain text merge), or with the merge
driver installed; ``--land squash`` lands each branch as its squash button does instead (``git
merge --squash`` and one commit, no merge commit).

Every conflict hunk is classified by what taking its other side changes: only the version line
(``version``), or only fields both branches changed to different values (``field``: a field,
or a note's status with the fields that go with it); anything else is a failure (``other``).
Conflicts are settled the careful way: one side per disputed field, either version line, then
``codexmem resolve``. In careless trials, some merges then put one side's older file back for a
record or two (an edit dropped, as ``git checkout --ours`` or a reset does), commit, and
``codexmem check`` must name every dropped field; the file is then put right again.

An oracle independent of codexmem (a three-way merge of each record's fields, from the files at
the merge base and at both tips, with the sides a person picked) says what every file must hold
after every merge: a field that differs is a lost edit, and one that ``check`` does not report is
a lost edit unreported. An error of ``check`` that names no dropped field is a false error.

    .venv/bin/python -m bench.merge_scenario --trials 20 [--land squash]
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from codexmem.check import check_store
from codexmem.errors import Warnings
from codexmem.memory.handoffs import save_handoff
from codexmem.memory.lifecycle import MOVES, set_status
from codexmem.memory.notes import save_note
from codexmem.memory.sessions import start_session
from codexmem.models.records import ScopeRef
from codexmem.records import service
from codexmem.store.history import record_fields
from codexmem.store.init import init_store
from codexmem.store.layout import NOTE, identify_relpath
from codexmem.store.recordfile import FORMS, parse, validate_record
from codexmem.store.resolve import resolve
from codexmem.store.store import Store

GIT_ENV = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0"}
STORE = ".codexmem"
BRANCHES = 6
NOTES = 10
BUGS = 10
PEOPLE = ("Aiko Tanaka", "Mika Ito", "Ren Sato", "Sam Okafor")
CHOICES: dict[str, tuple[Any, ...]] = {
    "status": ("new", "triaged", "fixed", "wont_fix"),
    "owner": ("aiko", "mika", "ren"),
    "severity": ("s1", "s2", "s3"),
    "points": (1, 2, 3, 5, 8),
    "due": ("2026-04-01", "2026-04-15", "2026-05-01"),
    "notes": ("Seen on Express only.", "Needs a repro.\nOn staging, twice.", "Blocked by the tax service."),
}
BUG_SCHEMA: dict[str, Any] = {
    "name": "Bugs",
    "fields": [
        {"key": "title", "label": "Title", "type": "text", "is_required": True},
        {
            "key": "status",
            "label": "Status",
            "type": "select",
            "is_required": True,
            "config": {"options": [{"value": v, "label": v} for v in CHOICES["status"]]},
        },
        {
            "key": "owner",
            "label": "Owner",
            "type": "select",
            "config": {"options": [{"value": v} for v in CHOICES["owner"]]},
        },
        {
            "key": "severity",
            "label": "Severity",
            "type": "select",
            "config": {"options": [{"value": v} for v in CHOICES["severity"]]},
        },
        {"key": "points", "label": "Points", "type": "number", "config": {"min": 0, "max": 13}},
        {"key": "due", "label": "Due", "type": "date"},
        {"key": "notes", "label": "Notes", "type": "text"},
    ],
}
Key = tuple[str, str]
"""(kind name, record id)."""
Fields = dict[str, Any]


@dataclass
class Tally:
    """What the trials saw; ``failures`` says what went wrong, one line each."""

    trials: int = 0
    merges: int = 0
    conflicted_merges: Counter[str] = field(default_factory=Counter)
    conflicts: Counter[tuple[str, str]] = field(default_factory=Counter)
    """(mode, kind of hunk: version, field, other) -> hunks."""
    lost_by_merge: int = 0
    injected: int = 0
    detected: int = 0
    lost_unreported: int = 0
    false_errors: int = 0
    failures: list[str] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        self.trials += other.trials
        self.merges += other.merges
        self.conflicted_merges.update(other.conflicted_merges)
        self.conflicts.update(other.conflicts)
        self.lost_by_merge += other.lost_by_merge
        self.injected += other.injected
        self.detected += other.detected
        self.lost_unreported += other.lost_unreported
        self.false_errors += other.false_errors
        self.failures += other.failures


# ------------------------------------------------------------------ the repository


@dataclass
class World:
    """One trial's repository, its clock and its random choices."""

    path: Path
    rng: random.Random
    clock: datetime = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)

    @property
    def store_root(self) -> Path:
        return self.path / STORE

    def store(self) -> Store:
        """The store as a new process (a CLI command, a server) opens it."""
        return Store(self.store_root)

    def now(self) -> datetime:
        self.clock += timedelta(minutes=1)
        return self.clock

    def git(self, *args: str, check: bool = True, stdin: bytes | None = None) -> bytes:
        done = subprocess.run(["git", *args], cwd=self.path, env=GIT_ENV, input=stdin, capture_output=True, check=False)
        if check and done.returncode != 0:
            raise RuntimeError(f"git {' '.join(args)}: {done.stderr.decode(errors='replace').strip()}")
        return done.stdout

    def commit(self, message: str) -> None:
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)

    def person(self, name: str) -> None:
        self.git("config", "user.name", name)

    def tree(self, rev: str) -> dict[Key, tuple[str, Fields]]:
        """Every record of the store at ``rev``: (path, fields as events record them), by two git calls."""
        listing = self.git("ls-tree", "-r", "-z", rev, "--", f"{STORE}/").split(b"\0")
        wanted: list[tuple[str, str]] = []
        for entry in filter(None, listing):
            meta, _, name = entry.decode().partition("\t")
            rel = name.removeprefix(f"{STORE}/")
            if identify_relpath(rel) is not None:
                wanted.append((rel, meta.split()[2]))
        out = self.git("cat-file", "--batch", stdin="".join(f"{blob}\n" for _, blob in wanted).encode())
        found: dict[Key, tuple[str, Fields]] = {}
        at = 0
        for rel, _ in wanted:
            header_end = out.index(b"\n", at)
            size = int(out[at:header_end].split()[2])
            raw = out[header_end + 1 : header_end + 1 + size]
            at = header_end + 2 + size
            parsed = read_fields(rel, raw)
            if parsed is not None:
                found[parsed[0]] = (rel, parsed[1])
        return found


def read_fields(rel: str, raw: bytes) -> tuple[Key, Fields] | None:
    """A record file's fields (as events record them; the version as ``version``), None when unreadable."""
    ident = identify_relpath(rel)
    if ident is None or ident[0].name == "channel":
        return None
    kind, rid, channel = ident
    try:
        data = validate_record(kind, parse(kind, raw, source=rel), rid, channel)
    except ValueError:
        return None
    return (kind.name, rid), {**record_fields(kind, data), "version": data["version"]}


def groups_of(kind_name: str) -> dict[str, str]:
    """Field -> the field it changes with (a note's status with ``superseded_by`` and ``status_reason``)."""
    if kind_name == "item":
        return {}
    return {name: group[0] for group in FORMS[kind_name].content for name in group}


def grouped(kind_name: str, fields: Fields) -> dict[str, tuple[Any, ...]]:
    """Fields gathered by group: what a person picks one side of as a whole."""
    groups = groups_of(kind_name)
    out: dict[str, list[tuple[str, Any]]] = {}
    for name, value in fields.items():
        if name != "version":
            out.setdefault(groups.get(name, name), []).append((name, value))
    return {g: tuple(sorted(pairs, key=lambda p: p[0])) for g, pairs in out.items()}


def group_of(kind_name: str, name: str) -> str:
    return groups_of(kind_name).get(name, name)


# ------------------------------------------------------------------ the story


def setup(world: World, driver: bool) -> tuple[list[str], list[str], ScopeRef]:
    """The store on main with 10 notes and 10 bugs; the merge button simulated unless ``driver``."""
    world.path.mkdir(parents=True)
    world.git("init", "-q", "-b", "main")
    world.person("Alice Smith")
    world.git("config", "user.email", "alice@example.com")
    world.git("config", "commit.gpgsign", "false")
    (world.path / "README.md").write_text("a shop\n")
    init_store(world.store_root, cwd=world.path, system_name="shop", project_name="shop")
    if not driver:
        (world.path / ".git" / "info").mkdir(exist_ok=True)
        (world.path / ".git" / "info" / "attributes").write_text("* merge\n")
    store = world.store()
    service.add_channel(store, "bugs", BUG_SCHEMA, actor="cli", now=world.now())
    config = store.config
    system_id = str(config.system.id) if config.system else "sys_shop"
    scope = ScopeRef(system_id=system_id, project_id=config.projects[0].id, workspace_id="ws_shop_main")
    session = start_session(world.store(), world.now(), Warnings(), scope=scope, task="Know the shop")
    sid = str(session["session"]["session_id"])
    notes = [
        _save_note(world, scope, sid, f"Decision {n}: {world.rng.choice(['prices', 'taxes', 'carts'])}")
        for n in range(NOTES)
    ]
    bugs = []
    for n in range(BUGS):
        values = {"title": f"Bug {n}", "status": "new", **_random_values(world.rng, 2)}
        bugs.append(str(service.create_item(world.store(), "bugs", values, actor="cli", now=world.now())["id"]))
    world.commit("memory")
    return notes, bugs, scope


def _random_values(rng: random.Random, count: int) -> dict[str, Any]:
    return {key: rng.choice(CHOICES[key]) for key in rng.sample(sorted(CHOICES), count)}


def _save_note(world: World, scope: ScopeRef, sid: str, title: str) -> str:
    answer = save_note(
        world.store(),
        world.now(),
        Warnings(),
        scope=scope,
        session_id=sid,
        note_type="decision",
        title=title,
        content=f"{title}.\n\nWhy: {world.rng.choice(['the invoice', 'the audit', 'a customer'])} needs it.",
        importance=world.rng.randint(1, 5),
    )
    return str(answer["note"]["note_id"])


def work_on_branch(world: World, name: str, notes: list[str], bugs: list[str], scope: ScopeRef) -> None:
    """Agent sessions and person edits on one branch, committed as they go."""
    rng = world.rng
    world.git("checkout", "-q", "-b", name, "main")
    for _ in range(rng.randint(2, 3)):
        if rng.random() < 0.5:
            _agent_session(world, notes, scope)
        else:
            _person_edits(world, bugs)
        world.commit(f"{name}: work")


def _agent_session(world: World, notes: list[str], scope: ScopeRef) -> None:
    rng = world.rng
    world.person("Codex Agent")
    session = start_session(world.store(), world.now(), Warnings(), scope=scope, task="Work on the shop")
    sid = str(session["session"]["session_id"])
    saved: list[str] = []
    for _ in range(rng.randint(2, 4)):
        move = rng.choice(("save_note", "status", "supersede", "handoff"))
        if move == "save_note":
            saved.append(_save_note(world, scope, sid, f"Found: {rng.choice(['rounding', 'caching', 'retries'])}"))
        elif move == "handoff":
            save_handoff(
                world.store(),
                world.now(),
                Warnings(),
                scope=scope,
                session_id=sid,
                kind="checkpoint",
                task="Work on the shop",
                summary="Half done.",
                next_steps=["Finish it"],
                status="open",
                completed=["Looked at the notes"],
                related_note_ids=rng.sample(notes, 2),
            )
        else:
            _move_note(world, sid, rng.choice(notes), move, scope, saved)


def _move_note(world: World, sid: str, target: str, move: str, scope: ScopeRef, saved: list[str]) -> None:
    """resolved, retracted or superseded, when that move is legal from the note's status here."""
    note = world.store().read_file(NOTE, target)
    assert note is not None
    allowed = MOVES["note"].get(note["status"], ())
    rng = world.rng
    extra: dict[str, Any] = {}
    if move == "supersede" and "superseded" in allowed:
        newer = _save_note(world, scope, sid, f"Replaces {target[-6:]}: {rng.choice(['per line', 'per cart'])}")
        saved.append(newer)
        status, extra = "superseded", {"superseded_by": newer}
    elif "resolved" in allowed and rng.random() < 0.7:
        status = "resolved"
    elif "retracted" in allowed:
        status, extra = "retracted", {"reason": rng.choice(["Wrong: it was the cache", "Wrong: not reproducible"])}
    else:
        return
    set_status(
        world.store(),
        world.now(),
        Warnings(),
        record_id=target,
        kind="note",
        status=status,
        expected_version=int(note["version"]),
        session_id=sid,
        **extra,
    )


def _person_edits(world: World, bugs: list[str]) -> None:
    """A person edits a few bugs, a field or two each; a value often goes back to where it was."""
    rng = world.rng
    world.person(rng.choice(PEOPLE))
    for bug in rng.sample(bugs, rng.randint(2, 4)):
        before = service.read_item(world.store(), "bugs", bug, now=world.now())["values"]
        for _ in range(rng.randint(1, 3)):
            values = _random_values(rng, rng.randint(1, 2))
            if rng.random() < 0.25:  # back to the value it had: A -> B -> A
                key = rng.choice(sorted(CHOICES))
                values = {key: before.get(key)} if before.get(key) is not None else values
            service.edit_item(
                world.store(),
                "bugs",
                bug,
                values,
                expected_version=None,
                idempotency_key=None,
                actor="cli",
                now=world.now(),
            )


# ------------------------------------------------------------------ conflicts


HUNK = re.compile(
    r"^<{7}(?: .*)?\n(?P<ours>(?:(?!={7}\n).*\n)*?)={7}\n(?P<theirs>(?:(?!>{7}).*\n)*?)>{7}(?: .*)?\n", re.M
)


def disputed(kind_name: str, base: Fields, ours: Fields, theirs: Fields) -> set[str]:
    """The groups both sides changed, to different values."""
    b, o, t = grouped(kind_name, base), grouped(kind_name, ours), grouped(kind_name, theirs)
    return {
        g for g in set(b) | set(o) | set(t) if o.get(g) != b.get(g) and t.get(g) != b.get(g) and o.get(g) != t.get(g)
    }


def settle(text: str, sides: list[str]) -> str:
    """The text with hunk ``i`` replaced by its side ``sides[i]`` (``ours`` or ``theirs``)."""
    picks = iter(sides)
    return HUNK.sub(lambda m: m[next(picks)], text)


def differing(rel: str, one: str, other: str) -> set[str] | None:
    """Field names whose values differ between two texts of a record; None when either is unreadable."""
    a, b = read_fields(rel, one.encode()), read_fields(rel, other.encode())
    if a is None or b is None:
        return None
    return {k for k in set(a[1]) | set(b[1]) if a[1].get(k) != b[1].get(k)}


def classify_and_settle(world: World, rel: str, kind_name: str, mode: str, tally: Tally) -> dict[str, str]:
    """Classify each conflict hunk of a file and settle it carefully: one side per disputed group
    (chosen at random), either version line. Returns group -> the side picked."""
    path = world.store_root / rel
    text = path.read_text("utf-8")
    stages = {}
    for n, side in ((1, "base"), (2, "ours"), (3, "theirs")):
        raw = world.git("show", f":{n}:{STORE}/{rel}", check=False)
        parsed = read_fields(rel, raw) if raw else None
        stages[side] = parsed[1] if parsed else {}
    disputes = disputed(kind_name, stages["base"], stages["ours"], stages["theirs"])
    picked: dict[str, str] = {}
    count = len(HUNK.findall(text))
    sides: list[str] = []
    all_ours = settle(text, ["ours"] * count)
    for i in range(count):
        one = settle(text, ["ours"] * i + ["theirs"] + ["ours"] * (count - i - 1))
        names = differing(rel, all_ours, one)
        groups = {group_of(kind_name, n) for n in names or ()} - {"version"}
        if names == {"version"}:
            kind = "version"
            sides.append(world.rng.choice(("ours", "theirs")))
        elif names and groups <= disputes:
            kind = "field"  # one side for the hunk, and for every group it holds, wherever it shows
            side = next((picked[g] for g in sorted(groups) if g in picked), world.rng.choice(("ours", "theirs")))
            picked.update(dict.fromkeys(groups, side))
            sides.append(side)
        else:
            kind = "other"
            sides.append("ours")
            tally.failures.append(f"{mode}: {rel}: a conflict hunk that is no same-field disagreement: {names}")
        tally.conflicts[(mode, kind)] += 1
    path.write_text(settle(text, sides), "utf-8")
    return picked


# ------------------------------------------------------------------ the oracle


def expected_tree(
    base: dict[Key, tuple[str, Fields]],
    ours: dict[Key, tuple[str, Fields]],
    theirs: dict[Key, tuple[str, Fields]],
    picks: dict[Key, dict[str, str]],
) -> dict[Key, tuple[str, Fields]]:
    """What every record must hold after the merge: each group from the side that changed it, the
    side a person picked where both did (versions are left out: they are bookkeeping)."""
    out: dict[Key, tuple[str, Fields]] = {}
    for key in set(ours) | set(theirs):
        rel = (ours.get(key) or theirs[key])[0]
        b = grouped(key[0], base.get(key, ("", {}))[1])
        o = grouped(key[0], ours.get(key, ("", {}))[1])
        t = grouped(key[0], theirs.get(key, ("", {}))[1])
        merged: Fields = {}
        for g in set(b) | set(o) | set(t):
            if o.get(g) == t.get(g) or t.get(g) == b.get(g):
                value = o.get(g)
            elif o.get(g) == b.get(g):
                value = t.get(g)
            else:
                value = o.get(g) if picks.get(key, {}).get(g, "ours") == "ours" else t.get(g)
            merged.update(dict(value or ()))
        out[key] = (rel, merged)
    return out


def lost_fields(expected: dict[Key, tuple[str, Fields]], held: dict[Key, tuple[str, Fields]]) -> set[tuple[str, str]]:
    """(path, field) wherever the files do not hold what the oracle says (a missing file: every field)."""
    lost: set[tuple[str, str]] = set()
    for key, (rel, fields) in expected.items():
        have = held.get(key, (rel, {}))[1]
        for name in set(fields) | {k for k in have if k != "version"}:
            if fields.get(name) != have.get(name):
                lost.add((rel, name))
    return lost


def reported(world: World) -> tuple[set[tuple[str, str]], list[str]]:
    """(path, field) that ``check``'s errors name, and every error line."""
    result = check_store(world.store_root)
    named: set[tuple[str, str]] = set()
    lines = []
    for finding in result.errors:
        lines.append(str(finding))
        message = finding.message
        if m := re.match(r"lost edit: (\S+) was set|(\S+) was changed on two branches", message):
            named.add((finding.path, m[1] or m[2]))
        elif m := re.search(r"holds older values of (.+?): a reset", message):
            named.update((finding.path, n) for n in m[1].split(", "))
    return named, lines


# ------------------------------------------------------------------ a trial


LANDINGS = ("merge", "squash")


def run_trial(root: Path, seed: int, *, driver: bool, careless: bool, land: str = "merge") -> Tally:
    """One scenario; ``root`` must not exist. ``careless``: some merges drop an edit on purpose.
    ``land``: a merge commit, or a squash (the branch's changes as one commit, no merge recorded)."""
    if land not in LANDINGS:
        raise ValueError(f"land: {land!r} is not one of {', '.join(LANDINGS)}")
    mode = "driver" if driver else "button"
    tally = Tally(trials=1)
    world = World(root, random.Random(seed))
    notes, bugs, scope = setup(world, driver)
    start = world.git("rev-parse", "HEAD").decode().strip()
    names = [f"b{n}" for n in range(BRANCHES)]
    for name in names:
        work_on_branch(world, name, notes, bugs, scope)
    world.git("checkout", "-q", "main")
    base = world.tree(start)
    world.rng.shuffle(names)
    for name in names:
        tally.merges += 1
        before = world.git("rev-parse", "HEAD").decode().strip()
        ours = world.tree(before)
        theirs = world.tree(name)
        how = ["--no-ff", "--no-edit"] if land == "merge" else ["--squash"]
        done = subprocess.run(["git", "merge", *how, "-q", name], cwd=world.path, env=GIT_ENV, capture_output=True)
        if done.returncode == 0 and land == "squash":  # a squash stages the changes and stops
            world.commit(f"squash {name}")
        picks: dict[Key, dict[str, str]] = {}
        if done.returncode != 0:
            tally.conflicted_merges[mode] += 1
            paths = world.git("diff", "--name-only", "--diff-filter=U").decode().split()
            for path in paths:
                rel = path.removeprefix(f"{STORE}/")
                ident = identify_relpath(rel)
                if ident is None or ident[0].name == "channel":
                    tally.failures.append(f"{mode}: {path} conflicted: not a record file")
                    continue
                picks[(ident[0].name, ident[1])] = classify_and_settle(world, rel, ident[0].name, mode, tally)
            resolve(world.store())
            world.commit(f"merge {name}")
        expected = expected_tree(base, ours, theirs, picks)
        named, lines = reported(world)
        lost = lost_fields(expected, world.tree("HEAD"))
        tally.lost_by_merge += len(lost)
        tally.lost_unreported += len(lost - named)
        tally.failures += [
            f"{mode}: merging {name} lost {n} of {p} (reported: {(p, n) in named})" for p, n in sorted(lost)
        ]
        tally.false_errors += _false(lines, named, lost, tally, mode)
        if careless and not lost and world.rng.random() < 0.6:
            _careless(world, expected, {before: ours, name: theirs}, tally, mode)
    return tally


def _false(lines: list[str], named: set[tuple[str, str]], lost: set[tuple[str, str]], tally: Tally, mode: str) -> int:
    """Errors that name no lost field (or name nothing a lost field explains)."""
    lost_paths = {p for p, _ in lost}
    false = [line for line in lines if line.split(": ", 1)[0] not in lost_paths]
    false += [f"{p}: names {n}, which is not lost" for p, n in named - lost]
    tally.failures += [f"{mode}: false error: {line}" for line in false]
    return len(false)


def _careless(
    world: World,
    expected: dict[Key, tuple[str, Fields]],
    sides: dict[str, dict[Key, tuple[str, Fields]]],
    tally: Tally,
    mode: str,
) -> None:
    """Put one side's older file back for a record or two that the merge changed, commit, check;
    then put the merged files back."""
    candidates = []
    for key, (rel, fields) in sorted(expected.items()):
        for side, tree in sides.items():
            had = tree.get(key)
            if had is not None and any(had[1].get(n) != v for n, v in fields.items()):
                candidates.append((rel, side))
    if not candidates:
        return
    merged = world.git("rev-parse", "HEAD").decode().strip()
    chosen = world.rng.sample(candidates, min(len(candidates), world.rng.randint(1, 2)))
    chosen = list({rel: side for rel, side in chosen}.items())
    for rel, side in chosen:
        world.git("checkout", side, "--", f"{STORE}/{rel}")
    world.commit("merged carelessly")
    dropped = lost_fields(expected, world.tree("HEAD"))
    named, lines = reported(world)
    tally.injected += len(dropped)
    tally.detected += len(dropped & named)
    tally.lost_unreported += len(dropped - named)
    tally.failures += [f"{mode}: dropped, unreported: {p} {n}" for p, n in sorted(dropped - named)]
    tally.false_errors += _false(lines, named, dropped, tally, mode)
    for rel, _ in chosen:
        world.git("checkout", merged, "--", f"{STORE}/{rel}")
    world.commit("put the dropped edits back")


# ------------------------------------------------------------------ the table


def table(by_mode: dict[str, Tally]) -> str:
    rows = [
        "| | merge button (`* merge`) | merge driver |",
        "|---|---|---|",
    ]
    b, d = by_mode["button"], by_mode["driver"]

    def row(label: str, one: Any, two: Any) -> None:
        rows.append(f"| {label} | {one:,} | {two:,} |" if isinstance(one, int) else f"| {label} | {one} | {two} |")

    row("trials", b.trials, d.trials)
    row("merges", b.merges, d.merges)
    row("merges that stopped on a conflict", b.conflicted_merges["button"], d.conflicted_merges["driver"])
    for kind, label in (
        ("version", "version lines"),
        ("field", "same-field disagreements"),
        ("other", "anything else"),
    ):
        row(f"conflict hunks: {label}", b.conflicts[("button", kind)], d.conflicts[("driver", kind)])
    row("edits lost by a merge and its careful resolution", b.lost_by_merge, d.lost_by_merge)
    row("lost edits injected (careless trials)", b.injected, d.injected)
    row("lost edits detected by `check`", b.detected, d.detected)
    row("edits lost unreported", b.lost_unreported, d.lost_unreported)
    row("false errors of `check`", b.false_errors, d.false_errors)
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=20, help="trials per mode (default 20)")
    parser.add_argument("--seed", type=int, default=1, help="first seed (default 1)")
    parser.add_argument("--land", choices=LANDINGS, default="merge", help="how a branch lands (default merge)")
    args = parser.parse_args()
    by_mode = {"button": Tally(), "driver": Tally()}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="codexmem-scenario-") as tmp:
        for n in range(args.trials):
            seed = args.seed + n
            for mode in ("button", "driver"):
                root = Path(tmp) / f"{mode}-{seed}"
                by_mode[mode].add(
                    run_trial(root, seed, driver=mode == "driver", careless=seed % 2 == 0, land=args.land)
                )
                shutil.rmtree(root)
    print(table(by_mode))
    took = time.perf_counter() - started
    print(
        f"\n{args.trials} seeds from {args.seed} in each mode (careless: even seeds; landed by {args.land}), {took:.0f} s"
    )
    with open("/proc/loadavg") as fh:
        print(f"load average: {fh.read().split()[:3]}")
    failures = by_mode["button"].failures + by_mode["driver"].failures
    for line in failures[:40]:
        print("FAILURE", line)


if __name__ == "__main__":
    main()
