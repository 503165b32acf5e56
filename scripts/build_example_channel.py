"""Build the example bug tracker: ``store-example/channels/bugs`` and its events under writer ``example1``.

Deterministic: a seeded ``random.Random``, fixed times and ids built from them, so running it twice
gives identical bytes. The channel is built through the record service (validated, versioned,
logged like any change) in a temporary copy of the store, and only ``channels/`` and
``events/example1/`` are copied back: nothing else in ``store-example/`` is touched. Event ids,
which the store draws fresh, are then re-derived from each event's time and the seed.

    python scripts/build_example_channel.py [--store store-example]

The bench and the tests import ``BUGS_SCHEMA`` and ``bug_values`` from here, so the example,
the measurements and the tests share one bug tracker.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ulid import ULID

SEED = 20260305
ITEM_COUNT = 200
WRITER_FOLDER = "bug-triage-example1"
"""The events folder of Writer("bug triage", "example1")."""
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
PEOPLE = ("aiko", "mika", "ren")
REPO = Path(__file__).resolve().parent.parent


def _options(*triples: tuple[str, str, str]) -> list[dict[str, str]]:
    return [{"value": v, "label": label, "color": c} for v, label, c in triples]


STATUS_OPTIONS = _options(
    ("new", "New", "#64748b"),
    ("triaged", "Triaged", "#0ea5e9"),
    ("in_progress", "In progress", "#f59e0b"),
    ("fixed", "Fixed", "#22c55e"),
    ("wont_fix", "Won't fix", "#94a3b8"),
)
OWNER_OPTIONS = _options(("aiko", "Aiko", "#a855f7"), ("mika", "Mika", "#ec4899"), ("ren", "Ren", "#14b8a6"))
SEVERITY_OPTIONS = _options(
    ("s1", "S1 Critical", "#ef4444"),
    ("s2", "S2 Major", "#f97316"),
    ("s3", "S3 Minor", "#eab308"),
    ("s4", "S4 Trivial", "#84cc16"),
)
AREA_OPTIONS = _options(
    ("ui", "UI", "#3b82f6"),
    ("api", "API", "#8b5cf6"),
    ("storage", "Storage", "#10b981"),
    ("sync", "Sync", "#06b6d4"),
    ("auth", "Sign-in", "#f43f5e"),
)

BUGS_SCHEMA: dict[str, Any] = {
    "record_channel_id": "bugs",
    "name": "Bugs",
    "description": "Bug tracker: triage sets status, owner, severity, points, area and due.",
    "fields": [
        {
            "key": "ticket",
            "label": "Ticket",
            "type": "text",
            "is_required": True,
            "is_unique": True,
            "config": {"max_length": 20},
        },
        {"key": "title", "label": "Title", "type": "text", "is_required": True, "config": {"max_length": 200}},
        {"key": "description", "label": "Description", "type": "text", "config": {"max_length": 4000}},
        {
            "key": "status",
            "label": "Status",
            "type": "select",
            "is_required": True,
            "config": {"options": STATUS_OPTIONS},
        },
        {"key": "owner", "label": "Owner", "type": "select", "config": {"options": OWNER_OPTIONS}},
        {"key": "severity", "label": "Severity", "type": "select", "config": {"options": SEVERITY_OPTIONS}},
        {"key": "points", "label": "Points", "type": "number", "config": {"min": 0, "max": 13}},
        {"key": "area", "label": "Area", "type": "select", "config": {"options": AREA_OPTIONS}},
        {"key": "due", "label": "Due", "type": "date"},
        {"key": "reporter", "label": "Reporter", "type": "email"},
        {
            "key": "age_days",
            "label": "Age (days)",
            "type": "formula",
            "config": {"expression": "days_since(created_at)", "result_type": "number"},
        },
    ],
}

POINTS = (0, 1, 2, 3, 5, 8, 13)
REPORTERS = ("jonas", "priya", "tomas", "lena", "omar", "sofia", "kenji", "ines")
SUBJECTS = (
    "sync",
    "the export",
    "search",
    "sign-in",
    "the settings page",
    "attachments",
    "the offline cache",
    "notifications",
    "the invoice list",
    "drag and drop",
    "the date picker",
    "pagination",
)
SYMPTOMS = (
    "fails after a network drop",
    "shows stale data",
    "double-counts rows",
    "hangs on large files",
    "loses the cursor position",
    "ignores the time zone",
    "crashes on empty input",
    "renders twice",
    "drops the last character",
    "times out under load",
    "reorders items at random",
    "leaks memory",
)
WORDS = (
    "the request retries once and then gives up while the spinner keeps turning",
    "steps to reproduce are in the attached log and happen on both browsers we support",
    "expected the list to keep its order but the newest entry jumped to the bottom",
    "this started after the last release and only affects accounts with more than one workspace",
    "a workaround is to reload the page, which clears the cached state but loses unsaved edits",
    "the server log shows a conflict on the second write and no error reaches the client",
    "users in the support queue describe it as random but it follows the sync interval closely",
    "we saw it on a slow connection with the developer tools throttling to regular 3G",
    "the same call succeeds from the command line, so the difference is in how the app builds it",
    "nothing in the database looks wrong afterwards, the values are right but shown in the wrong place",
)


def bug_values(rng: random.Random, number: int, *, status: str = "new") -> dict[str, Any]:
    """One bug as a person files it: ticket, title, a 300-4,000 character description, reporter."""
    title = f"{rng.choice(SUBJECTS).capitalize()} {rng.choice(SYMPTOMS)}"
    target = rng.randint(300, 4000)
    sentences: list[str] = []
    size = 0
    while size < target:
        sentence = rng.choice(WORDS).capitalize() + "."
        sentences.append(sentence)
        size += len(sentence) + 1
    description = " ".join(sentences)[:target].rstrip()
    return {
        "ticket": f"BUG-{number:04d}",
        "title": title,
        "description": description,
        "status": status,
        "reporter": f"{rng.choice(REPORTERS)}@example.com",
    }


def _triage(rng: random.Random, base: datetime) -> dict[str, Any]:
    return {
        "status": rng.choice(("triaged", "in_progress", "fixed", "wont_fix")),
        "owner": rng.choice(PEOPLE),
        "severity": rng.choice(("s1", "s2", "s3", "s4")),
        "points": rng.choice(POINTS),
        "area": rng.choice([o["value"] for o in AREA_OPTIONS]),
        "due": (base + timedelta(days=rng.randint(3, 40))).date().isoformat(),
    }


def _timeline(rng: random.Random, count: int) -> list[tuple[datetime, str, int, dict[str, Any]]]:
    """(time, action, item number, values), in time order: creates, then later second and third versions."""
    actions: list[tuple[datetime, str, int, dict[str, Any]]] = []
    at = START
    for n in range(1, count + 1):
        at += timedelta(minutes=rng.randint(20, 600), seconds=rng.randint(0, 59), milliseconds=rng.randint(0, 999))
        values = bug_values(rng, n)
        if rng.random() < 0.6:  # triaged when filed
            values.update(_triage(rng, at))
        actions.append((at, "create", n, values))
        if rng.random() < 0.3:
            edit_at = at + timedelta(hours=rng.randint(2, 200), milliseconds=rng.randint(0, 999))
            actions.append((edit_at, "edit", n, _triage(rng, edit_at)))
            if rng.random() < 0.4:
                later = edit_at + timedelta(hours=rng.randint(2, 200), milliseconds=rng.randint(0, 999))
                actions.append((later, "edit", n, {"status": rng.choice(("fixed", "wont_fix"))}))
    actions.sort(key=lambda a: (a[0], a[2]))
    return actions


def build(store_dir: Path, *, seed: int = SEED, count: int = ITEM_COUNT) -> None:
    """Write the ``bugs`` channel into the store at ``store_dir`` (which must have no such channel)."""
    from codexmem.records import service
    from codexmem.store.identity import Writer
    from codexmem.store.ids import IdMaker
    from codexmem.store.store import Store

    rng = random.Random(seed)
    ids_rng = random.Random(seed + 1)
    store = Store(
        store_dir, ids=IdMaker(randbytes=ids_rng.randbytes), writer=Writer("bug triage", "example1"), branch=None
    )
    service.add_channel(store, "bugs", BUGS_SCHEMA, actor="cli:mika", now=START)
    ids: dict[int, str] = {}
    for at, action, n, values in _timeline(rng, count):
        if action == "create":
            ms = int(at.timestamp() * 1000)
            ids[n] = f"item_{ULID.from_int((ms << 80) | rng.getrandbits(80))}"
            actor = f"cli:{rng.choice(PEOPLE)}"
            service.create_item(store, "bugs", values, actor=actor, now=at, item_id=ids[n])
        else:
            owner = values.get("owner") or rng.choice(PEOPLE)
            service.edit_item(
                store, "bugs", ids[n], values, expected_version=None, idempotency_key=None, actor=f"cli:{owner}", now=at
            )
    store.index.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, default=REPO / "store-example", help="the example store")
    args = parser.parse_args(argv)
    target: Path = args.store.resolve()
    config = target / "codexmem.yaml"
    if not config.exists():
        print(f"{config} does not exist: create the example store first", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "store"
        work.mkdir()
        shutil.copy2(config, work / "codexmem.yaml")
        build(work)
        for rel in ("channels/bugs", f"events/{WRITER_FOLDER}"):
            shutil.rmtree(target / rel, ignore_errors=True)
            shutil.copytree(work / rel, target / rel)
    print(f"wrote {target / 'channels'} and {target / 'events' / WRITER_FOLDER}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
