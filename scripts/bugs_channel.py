"""The bug tracker the example, the bench and the tests share: its schema and a generator of synthetic bugs.

The schema is the story's own file (``example_story/bugs_schema.yaml``, the one the example's
``bugs`` channel is added from), so there is one definition. The generator makes as many bugs as
a benchmark wants, from a seeded ``random.Random``: it is for volume, not for reading (the
example's 200 bugs are written out in the story).
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from codexmem.store.yamlio import load_yaml

SCHEMA_FILE = Path(__file__).resolve().parent / "example_story" / "bugs_schema.yaml"
BUGS_SCHEMA: dict[str, Any] = load_yaml(SCHEMA_FILE.read_bytes(), source=SCHEMA_FILE.name)


def _options(key: str) -> list[dict[str, str]]:
    field = next(f for f in BUGS_SCHEMA["fields"] if f["key"] == key)
    options: list[dict[str, str]] = field["config"]["options"]
    return options


STATUS_OPTIONS = _options("status")
OWNER_OPTIONS = _options("owner")
SEVERITY_OPTIONS = _options("severity")
AREA_OPTIONS = _options("area")
PEOPLE = tuple(o["value"] for o in OWNER_OPTIONS)
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
    """One synthetic bug as a person files it: ticket, title, a 300-4,000 character description, reporter."""
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


def triage_values(rng: random.Random, base: datetime) -> dict[str, Any]:
    """What a synthetic triage sets: status, owner, severity, points, area and a due date after ``base``."""
    return {
        "status": rng.choice(("triaged", "in_progress", "fixed", "wont_fix")),
        "owner": rng.choice(PEOPLE),
        "severity": rng.choice(("s1", "s2", "s3", "s4")),
        "points": rng.choice(POINTS),
        "area": rng.choice([o["value"] for o in AREA_OPTIONS]),
        "due": (base + timedelta(days=rng.randint(3, 40))).date().isoformat(),
    }
