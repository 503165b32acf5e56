"""Realistic codexmem stores for the benchmarks, deterministic from a seed and cached.

A store here is a year of one team's memory: one system (order-platform) with four projects,
each checked out in two or three workspaces (tiny git repositories whose ``origin`` remote
names the project, so ``memory_bootstrap_session`` resolves them exactly as it would a real
clone), several people each writing their own event shards month by month, and

* ``notes`` notes (decisions, bugfixes, discoveries, constraints, preferences, todos) with
  realistic titles, 1-6 paragraphs of content, tags, file paths, an importance mix and a status
  mix (resolved and superseded notes got there through a second version, as in real use);
* one session per ~8 notes (almost all ended, a few recovered or paused) and one handoff for
  ~80 % of the sessions (recent ones mostly open, older ones completed or abandoned);
* a ``bugs`` channel with the 11-field schema of ``scripts/bugs_channel.py`` (the example's)
  and ``min(notes, 10,000)`` items, ~30 % of them triaged again later (versions 2 and 3).

Everything is written through ``Store.transaction`` exactly as codexmem writes (validation,
credential screening, YAML, journal, events, index), ~500 puts per transaction. Durability is
not what is measured while generating, so ``os.fsync`` is a no-op in this process (one
``os.sync()`` at the end); ``--durable`` keeps the fsyncs.

    .venv/bin/python bench/generate.py [--sizes 1000,10000,50000] [--seed 1] [--force]

Stores are cached under ``bench/.stores/`` (git-ignored) and reused while the generator version,
the seed and the size match. :func:`working_copy` gives a benchmark a copy it may write to: the
record files are hard links (codexmem always replaces a record file by rename, never in place,
so the cached file is never touched), the event shards, the index and ``.git`` are real copies.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ulid import ULID

from bench.args import note_sizes
from scripts import bugs_channel

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
STORES = HERE / ".stores"
GENERATOR_VERSION = 5
BATCH = 500
END = datetime(2026, 11, 20, 17, 0, tzinfo=UTC)
"""The generated year ends here; the first generated record is a year earlier."""
SYSTEM_ID = "sys_order_platform"
PROJECTS = {  # name -> workspaces (clone folder names)
    "order-web": ["order-web", "order-web-review"],
    "order-api": ["order-api", "order-api-hotfix", "order-api-spike"],
    "order-worker": ["order-worker", "order-worker-2"],
    "billing": ["billing", "billing-migration"],
}
PEOPLE = ("aiko", "mika", "ren", "jonas", "priya", "tomas")
CLONES = {p: f"{n:04x}c0de" for n, p in enumerate(PEOPLE)}
"""Each person writes from a clone of their own (its clone id names their events folder)."""
GIT_ENV = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0"}

# ------------------------------------------------------------------------------ vocabulary

AREAS = (
    "payment method validation",
    "order submission",
    "idempotency keys",
    "the retry policy",
    "webhook signatures",
    "the pagination cursor",
    "cache invalidation",
    "the feature flag service",
    "the orders migration",
    "the rate limiter",
    "refund processing",
    "invoice numbering",
    "the outbox table",
    "currency rounding",
    "the address normalizer",
    "tax calculation",
    "the session store",
    "JWT verification",
    "the search index",
    "the export job",
    "time zone handling",
    "the notification worker",
    "bulk order import",
    "inventory holds",
    "the checkout form",
    "the API gateway",
    "the OpenAPI spec",
    "database connection pooling",
    "the audit log",
    "the discount engine",
    "shipment tracking",
    "the customer merge tool",
    "the health checks",
    "log sampling",
)
DECISIONS = (
    "{area} is owned by one module and every caller goes through it",
    "Use {tech} for {area}",
    "{area} keeps a closed set of values defined in the API",
    "Move {area} behind a feature flag until the rollout is done",
    "Reject unknown fields in {area} instead of ignoring them",
    "{area} writes are idempotent per request key",
)
BUGFIXES = (
    "{area} double-counted rows after a retry",
    "{area} ignored the time zone of the order",
    "{area} dropped the last page when the cursor was exact",
    "{area} raced with the outbox publisher",
    "Fix {area} timing out under load",
    "{area} accepted legacy aliases after the cutover",
)
DISCOVERIES = (
    "{area} already retries in the client library",
    "{area} is called twice by the mobile app",
    "{area} depends on the replica lag being under a second",
    "The staging data for {area} is six months old",
    "{area} has no index on the customer column",
)
CONSTRAINTS = (
    "{area} must stay backward compatible until v3",
    "{area} cannot call the ledger synchronously",
    "{area} must finish within 200 ms at p95",
    "Never log full card numbers in {area}",
)
PREFERENCES = (
    "Prefer table-driven tests for {area}",
    "Keep {area} errors as typed results, not exceptions",
    "Name {area} metrics with the service prefix",
)
TODOS = (
    "Remove the alias mapping from {area}",
    "Add a load test for {area}",
    "Document {area} in the runbook",
    "Backfill {area} for old orders",
    "Split {area} into its own package",
)
TITLES = {
    "decision": DECISIONS,
    "bugfix": BUGFIXES,
    "discovery": DISCOVERIES,
    "constraint": CONSTRAINTS,
    "preference": PREFERENCES,
    "todo": TODOS,
}
TECH = (
    "a generated enum",
    "the outbox pattern",
    "an advisory lock",
    "a ULID key",
    "a token bucket",
    "optimistic locking",
    "a read-through cache",
    "server-sent events",
    "a saga",
    "a partial index",
)
SENTENCES = (
    "The change keeps {area} compatible with the clients released this quarter.",
    "We measured the old behaviour on staging before touching {area}.",
    "Callers that relied on the previous ordering were updated in the same pull request.",
    "The alternative was {tech}, rejected because it needs a schema change on every deploy.",
    "A regression test reproduces the original report with a fixed clock.",
    "The {metric} dashboard shows the error rate dropping to zero after the deploy.",
    "Support confirmed the affected customers and the refunds were issued manually.",
    "This only shows up when two requests for the same order arrive within a few milliseconds.",
    "Do not reintroduce the fallback: it hid the real failure for weeks.",
    "The migration is reversible and was rehearsed on a copy of production.",
    "See the linked handoff for the remaining cleanup and the open questions.",
    "{tech} turned out simpler than expected and removes a background job.",
    "Rollout happens behind the flag, ten percent of traffic first, then everyone.",
    "The root cause was a default value that differed between {service} and {service2}.",
)
"""Generic sentences any note may hold (a few per note); most of a note is specific (below)."""
SPECIFIC = (
    "{service} calls {area} with a {number} ms timeout and no jitter.",
    "{person} traced the {metric} spike to {component} holding a connection per request.",
    "The {component} now rejects payloads over {number} KB with a typed error.",
    "{area} reads from the {store} replica; writes still go through {service}.",
    "Incident {ticket} showed {component} retrying without a budget.",
    "Benchmarks on {env}: p95 went from {number} ms to {number2} ms.",
    "{component} logs a warning when {area} sees an unknown {field}.",
    "The contract test for {service} pins the {field} format to ISO 8601.",
    "{person} prefers keeping {component} stateless so it can scale horizontally.",
    "Feature flag {flag} gates the new path in {component}.",
    "The {store} query for {area} needed a composite index on ({field}, created_at).",
    "{service} owns {field}; {service2} only caches it for {number} seconds.",
    "On {env} the {metric} alert fired {number} times before the fix.",
    "We removed the {lib} dependency from {component}; it pulled {number} transitive packages.",
    "{area} emits {event} to {queue} after the transaction commits.",
    "The {queue} consumer in {service2} is idempotent on {field}.",
    "{person} asked to document why {component} cannot batch {event} messages.",
    "Load test: {number} requests per second against {service} with {number2} concurrent clients.",
    "Customer {customer} reported {area} failing for orders in {currency}.",
    "{component} converts {currency} amounts with banker's rounding, per finance.",
    "The cron job {job} in {service2} now runs every {number} minutes.",
    "Secrets for {service} moved to the vault path {path}.",
    "{lib} upgrade to v{number} changed how {component} parses {field}.",
    "Kept the old endpoint {endpoint} until mobile {version} is below one percent of traffic.",
    "The {env} database is {number} GB; a full reindex takes about {number2} minutes.",
    "{person} and {person2} agreed that {area} belongs to the {team} team.",
    "Tracing shows {component} spending most of its time in {lib} serialization.",
    "{endpoint} returns 409 when {field} conflicts, never 500.",
    "The {queue} dead-letter queue had {number} messages from {service2}.",
    "Partitioning {store} by {field} cut {metric} by half.",
)
SERVICES = (
    "order-api",
    "order-web",
    "order-worker",
    "billing",
    "ledger",
    "catalog",
    "identity",
    "notifier",
    "gateway",
    "search-indexer",
    "fulfillment",
    "pricing",
)
COMPONENTS = (
    "the checkout controller",
    "the payment client",
    "the retry middleware",
    "the outbox relay",
    "the cursor encoder",
    "the webhook verifier",
    "the invoice renderer",
    "the tax adapter",
    "the session cache",
    "the importer",
    "the scheduler",
    "the address parser",
    "the price calculator",
    "the event bus adapter",
    "the CSV exporter",
    "the token validator",
    "the rate limiter",
    "the feature flag client",
    "the read model projector",
    "the refund worker",
)
METRICS = (
    "latency",
    "error-rate",
    "saturation",
    "queue-depth",
    "cache-hit",
    "cpu",
    "memory",
    "throughput",
    "connection-pool",
    "gc-pause",
)
FIELDS = (
    "order_id",
    "customer_id",
    "payment_method",
    "currency",
    "idempotency_key",
    "shipping_address",
    "tax_code",
    "invoice_number",
    "sku",
    "discount_code",
    "tenant_id",
    "created_at",
    "status",
    "total_cents",
)
DATASTORES = ("Postgres", "Redis", "Elasticsearch", "DynamoDB", "SQLite", "ClickHouse")
QUEUES = ("orders.events", "payments.events", "billing.jobs", "notifications", "audit.log", "inventory.updates")
EVENTS = ("OrderPlaced", "PaymentCaptured", "RefundIssued", "InvoiceSent", "StockReserved", "CustomerMerged")
LIBS = ("pydantic", "zod", "gorm", "sqlx", "axios", "protobuf", "jackson", "lodash", "moment", "retrying")
ENVS = ("staging", "production", "the load-test cluster", "a developer laptop", "the canary pool")
PERSONS = ("Aiko", "Mika", "Ren", "Jonas", "Priya", "Tomas", "Lena", "Omar", "Sofia", "Kenji", "Ines")
TEAMS = ("payments", "checkout", "platform", "billing", "growth", "infra")
CURRENCIES = ("EUR", "USD", "JPY", "GBP", "CHF", "SEK", "BRL")


def _slots(rng: random.Random, area: str) -> dict[str, str]:
    return {
        "area": area,
        "tech": rng.choice(TECH),
        "service": rng.choice(SERVICES),
        "service2": rng.choice(SERVICES),
        "component": rng.choice(COMPONENTS),
        "metric": rng.choice(METRICS),
        "field": rng.choice(FIELDS),
        "store": rng.choice(DATASTORES),
        "queue": rng.choice(QUEUES),
        "event": rng.choice(EVENTS),
        "lib": rng.choice(LIBS),
        "env": rng.choice(ENVS),
        "person": rng.choice(PERSONS),
        "person2": rng.choice(PERSONS),
        "team": rng.choice(TEAMS),
        "currency": rng.choice(CURRENCIES),
        "number": str(rng.choice((2, 3, 5, 8, 10, 15, 30, 45, 60, 120, 250, 500, 800, 1200))),
        "number2": str(rng.randint(1, 999)),
        "ticket": f"INC-{rng.randint(100, 9999)}",
        "flag": f"{area.split()[-1].lower()}_{rng.choice(('v2', 'rewrite', 'strict', 'async'))}",
        "job": f"{rng.choice(('sync', 'cleanup', 'reconcile', 'export'))}-{rng.choice(FIELDS).split('_')[0]}",
        "path": f"secret/{rng.choice(SERVICES)}/{rng.choice(('db', 'api', 'smtp'))}",
        "endpoint": f"/v{rng.randint(1, 3)}/{rng.choice(('orders', 'payments', 'invoices', 'refunds'))}",
        "version": f"{rng.randint(3, 9)}.{rng.randint(0, 30)}",
        "customer": f"C-{rng.randint(1000, 99999)}",
    }


FILE_DIRS = ("internal/order", "internal/payment", "api", "cmd/worker", "web/src/checkout", "pkg/billing", "migrations")
FILE_NAMES = ("validation", "handler", "service", "repository", "client", "retry", "cursor", "limits", "schema", "jobs")
FILE_EXTS = (".go", ".go", ".ts", ".sql", ".yaml")
TAGS = (
    "api",
    "payments",
    "validation",
    "frontend",
    "backend",
    "worker",
    "database",
    "migration",
    "performance",
    "security",
    "testing",
    "observability",
    "retry",
    "idempotency",
    "cache",
    "search",
    "billing",
    "spec",
    "go",
    "typescript",
    "postgres",
    "kafka",
    "flags",
    "incident",
    "tech-debt",
    "ux",
    "mobile",
    "docs",
)
TASKS = (
    "Harden {area}",
    "Investigate flaky tests around {area}",
    "Ship {area} to all tenants",
    "Refactor {area}",
    "Fix the incident in {area}",
    "Speed up {area}",
    "Clean up {area} after the migration",
)
STEPS = (
    "Run the full regression suite against staging",
    "Open the follow-up pull request for {area}",
    "Ask the API team to confirm the contract for {area}",
    "Remove the temporary logging from {area}",
    "Flip the flag for the remaining tenants",
    "Write the runbook entry for {area}",
    "Check the dashboards after the nightly batch",
    "Backport the fix to the release branch",
)


@dataclass(frozen=True)
class Workspace:
    project: str
    name: str
    root: Path
    system_id: str
    project_id: str
    workspace_id: str

    def scope(self) -> dict[str, str]:
        return {"system_id": self.system_id, "project_id": self.project_id, "workspace_id": self.workspace_id}


# ------------------------------------------------------------------------------ helpers


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, check=True, capture_output=True)


def _ulid_at(prefix: str, at: datetime, rng: random.Random) -> str:
    ms = int(at.timestamp() * 1000)
    return f"{prefix}_{ULID.from_int((ms << 80) | rng.getrandbits(80))}"


def _ts(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"


def _fill(template: str, rng: random.Random, area: str) -> str:
    return template.format(**_slots(rng, area))


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _content(rng: random.Random, area: str) -> str:
    paragraphs = []
    for _ in range(rng.choices((1, 2, 3, 4, 6), weights=(25, 35, 20, 15, 5))[0]):
        count = rng.randint(2, 5)
        picks = [rng.choice(SENTENCES) if rng.random() < 0.25 else rng.choice(SPECIFIC) for _ in range(count)]
        paragraphs.append(" ".join(_capital(_fill(t, rng, area)) for t in picks))
    if rng.random() < 0.25:
        paragraphs.append("\n".join(f"- `{rng.choice(FILE_NAMES)}_{rng.randint(1, 9)}`" for _ in range(3)))
    return "\n\n".join(paragraphs)


def _paths(rng: random.Random, count: int) -> list[str]:
    return sorted({f"{rng.choice(FILE_DIRS)}/{rng.choice(FILE_NAMES)}{rng.choice(FILE_EXTS)}" for _ in range(count)})


@contextlib.contextmanager
def no_fsync(enabled: bool) -> Iterator[None]:
    """Generation is not what is measured: skip the per-file fsyncs, sync once at the end."""
    if not enabled:
        yield
        return
    real = os.fsync
    os.fsync = lambda fd: None
    try:
        yield
    finally:
        os.fsync = real
        os.sync()


# ------------------------------------------------------------------------------ layout


def base_dir(notes: int, seed: int) -> Path:
    return STORES / f"notes{notes}-seed{seed}-v{GENERATOR_VERSION}"


def store_dir(base: Path) -> Path:
    """The store inside a generated (or copied) folder: ``repo/.codexmem``, a team memory repository."""
    return base / "repo" / ".codexmem"


def manifest_of(base: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((base / "manifest.json").read_text("utf-8"))
    return data


def _make_workspaces(base: Path) -> list[Workspace]:
    from codexmem.errors import Warnings
    from codexmem.memory.scope import resolve_scope
    from codexmem.store.store import Store

    memory = Store(store_dir(base))
    out: list[Workspace] = []
    for project, names in PROJECTS.items():
        for name in names:
            root = base / "ws" / name
            root.mkdir(parents=True, exist_ok=True)
            if not (root / ".git").exists():
                _git(root, "init", "-q", "-b", "main")
                _git(root, "remote", "add", "origin", f"git@github.com:example/{project}.git")
            scope = resolve_scope(memory, Warnings(), cwd=str(root))
            out.append(Workspace(project, name, root, scope.system_id, scope.project_id, scope.workspace_id))
    return out


def _config() -> dict[str, Any]:
    projects = []
    for name in PROJECTS:
        pid = "proj_" + name.replace("-", "_")
        decl: dict[str, Any] = {
            "id": pid,
            "name": name,
            "system": SYSTEM_ID,
            "remotes": [f"git@github.com:example/{name}.git"],
        }
        if name == "order-web":
            decl["relations"] = [{"project": "proj_order_api", "relation_type": "calls_api_of"}]
        if name == "order-worker":
            decl["relations"] = [{"project": "proj_order_api", "relation_type": "depends_on"}]
        projects.append(decl)
    return {
        "format": 2,
        "system": {"id": SYSTEM_ID, "name": "order-platform"},
        "projects": projects,
        "privacy": {"secrets": "refuse"},
        "sessions": {"idle_recovery_minutes": 120},
        "site": {"title": "order-platform memory"},
    }


# ------------------------------------------------------------------------------ the records


@dataclass
class Put:
    at: datetime
    writer: str
    kind: str  # session | note | handoff | item
    data: dict[str, Any]
    event_type: str = "created"
    changed: tuple[str, ...] = ()


def _memory_plan(rng: random.Random, notes: int, workspaces: list[Workspace]) -> tuple[list[Put], list[Put]]:
    """(first versions, later versions) of sessions, notes and handoffs, each list in time order."""
    first: list[Put] = []
    later: list[Put] = []
    sessions = max(1, notes // 8)
    start = END - timedelta(days=365)
    span = (END - start).total_seconds()
    weights = [3 if w.name == w.project else 1 for w in workspaces]  # main clones are busier
    starts = sorted(start + timedelta(seconds=rng.random() * span) for _ in range(sessions))
    counts = [0] * sessions
    for n in rng.choices(range(sessions), k=notes):  # ~8 notes per session, some with none
        counts[n] += 1
    for n, began in enumerate(starts):
        ws = rng.choices(workspaces, weights=weights)[0]
        person = rng.choice(PEOPLE)
        area = rng.choice(AREAS)
        sid = _ulid_at("sess", began, rng)
        count = counts[n]
        at = began
        note_ids: list[str] = []
        for _ in range(count):
            at += timedelta(minutes=rng.randint(2, 25), milliseconds=rng.randint(0, 999))
            ntype = rng.choices(list(TITLES), weights=(25, 25, 20, 10, 5, 15))[0]
            topic = area if rng.random() < 0.7 else rng.choice(AREAS)
            title = _capital(_fill(rng.choice(TITLES[ntype]), rng, topic))[:200]
            nid = _ulid_at("note", at, rng)
            note_ids.append(nid)
            status = rng.choices(("active", "resolved", "superseded"), weights=(70, 20, 10))[0]
            data = {
                "note_id": nid,
                "version": 1,
                "scope": ws.scope(),
                "session_id": sid,
                "type": ntype,
                "title": title,
                "importance": rng.choices((1, 2, 3, 4, 5), weights=(10, 20, 35, 25, 10))[0],
                "status": "active",
                "source": "codex_explicit" if rng.random() < 0.9 else "watcher_import",
                "tags": sorted(set(rng.sample(TAGS, rng.randint(1, 4)))),
                "file_paths": _paths(rng, rng.randint(0, 4)),
                "created_at": _ts(at),
                "updated_at": _ts(at),
                "content": _content(rng, topic),
            }
            first.append(Put(at, person, "note", data))
            if status != "active":
                moved = at + timedelta(days=rng.randint(1, 60), milliseconds=rng.randint(0, 999))
                if moved < END:
                    later.append(
                        Put(
                            moved,
                            rng.choice(PEOPLE),
                            "note",
                            {**data, "version": 2, "status": status, "updated_at": _ts(moved)},
                            "status_changed",
                            ("status",),
                        )
                    )
        ended = at + timedelta(minutes=rng.randint(5, 40))
        age_days = (END - began).days
        state = rng.choices(("ended", "recovered", "paused"), weights=(90, 6, 4))[0]
        session = {
            "session_id": sid,
            "version": 1,
            "scope": ws.scope(),
            "status": "active",
            "task": _fill(rng.choice(TASKS), rng, area),
            "branch_name": f"feat/{area.split()[-1].lower()}-{n % 97}",
            "started_at": _ts(began),
            "updated_at": _ts(began),
        }
        first.append(Put(began, person, "session", session))
        final = {**session, "version": 2, "status": state, "updated_at": _ts(ended)}
        if state != "paused":
            final["ended_at"] = _ts(ended)
        later.append(
            Put(
                ended,
                person,
                "session",
                final,
                "ended" if state == "ended" else "status_changed",
                ("ended_at", "status") if state != "paused" else ("status",),
            )
        )
        if rng.random() < 0.8:
            hat = ended - timedelta(minutes=1)
            hid = _ulid_at("handoff", hat, rng)
            recent = age_days < 30
            status = rng.choices(("open", "completed", "abandoned"), weights=(60, 35, 5) if recent else (8, 80, 12))[0]
            handoff = {
                "handoff_id": hid,
                "version": 1,
                "scope": ws.scope(),
                "session_id": sid,
                "kind": rng.choice(("final", "final", "checkpoint")),
                "task": session["task"],
                "status": "open",
                "source": "codex_explicit",
                "next_steps": [_fill(rng.choice(STEPS), rng, area) for _ in range(rng.randint(1, 4))],
                "completed": [f"Landed the change to {area}"] if rng.random() < 0.7 else [],
                "open_questions": [f"Does {rng.choice(AREAS)} need the same fix?"] if rng.random() < 0.4 else [],
                "risks": [f"{_capital(area)} may slow down under peak load"] if rng.random() < 0.3 else [],
                "files_touched": _paths(rng, rng.randint(1, 5)),
                "related_note_ids": note_ids[:3],
                "created_at": _ts(hat),
                "updated_at": _ts(hat),
                "summary": _content(rng, area)[:1500],
            }
            first.append(Put(hat, person, "handoff", handoff))
            if status != "open":
                closed = hat + timedelta(days=rng.randint(1, 20), milliseconds=rng.randint(0, 999))
                if closed < END:
                    closed_data = {**handoff, "version": 2, "status": status, "updated_at": _ts(closed)}
                    later.append(Put(closed, rng.choice(PEOPLE), "handoff", closed_data, "status_changed", ("status",)))
    first.sort(key=lambda p: p.at)
    later.sort(key=lambda p: p.at)
    return first, later


def _item_plan(rng: random.Random, count: int) -> list[list[Put]]:
    """Bug items: [creates, second versions, third versions], each in time order."""
    creates: list[Put] = []
    seconds: list[Put] = []
    thirds: list[Put] = []
    start = END - timedelta(days=365)
    step = 365 * 86400 / max(count, 1)
    for n in range(1, count + 1):
        at = start + timedelta(seconds=step * (n - 1) + rng.random() * step * 0.9)
        values = bugs_channel.bug_values(rng, n)
        values["ticket"] = f"BUG-{n:05d}"
        if rng.random() < 0.6:
            values.update(bugs_channel.triage_values(rng, at))
        iid = _ulid_at("item", at, rng)
        person = rng.choice(PEOPLE)
        item = {
            "item_id": iid,
            "record_channel_id": "bugs",
            "version": 1,
            "created_at": _ts(at),
            "updated_at": _ts(at),
            "values": values,
        }
        creates.append(Put(at, person, "item", item))
        if rng.random() < 0.3:
            edit_at = at + timedelta(hours=rng.randint(2, 200), milliseconds=rng.randint(0, 999))
            v2 = {
                **item,
                "version": 2,
                "updated_at": _ts(edit_at),
                "values": {**values, **bugs_channel.triage_values(rng, edit_at)},
            }
            changed = tuple(sorted(k for k in v2["values"] if v2["values"][k] != values.get(k)))
            if edit_at < END and changed:  # an edit that changes nothing writes no version
                seconds.append(Put(edit_at, rng.choice(PEOPLE), "item", v2, "updated", changed))
                if rng.random() < 0.4:
                    later = edit_at + timedelta(hours=rng.randint(2, 200), milliseconds=rng.randint(0, 999))
                    status = rng.choice(("fixed", "wont_fix"))
                    if later < END and status != v2["values"].get("status"):
                        v3 = {
                            **v2,
                            "version": 3,
                            "updated_at": _ts(later),
                            "values": {**v2["values"], "status": status},
                        }
                        thirds.append(Put(later, rng.choice(PEOPLE), "item", v3, "updated", ("status",)))
    return [sorted(p, key=lambda x: x.at) for p in (creates, seconds, thirds)]


def _write(stores: dict[str, Any], puts: list[Put], *, schema: Any = None) -> None:
    """Batches of ~BATCH puts, one transaction each, grouped by (month, writer) as clones write them."""
    from codexmem.records.fields import validate_values
    from codexmem.records.values import in_schema_order
    from codexmem.store.layout import KINDS

    groups: dict[tuple[str, str], list[Put]] = {}
    for put in puts:
        groups.setdefault((put.at.strftime("%Y-%m"), put.writer), []).append(put)
    for (_month, writer), group in sorted(groups.items()):
        for i in range(0, len(group), BATCH):
            chunk = group[i : i + BATCH]
            store = stores[writer]
            with store.transaction(f"cli:{writer}", at=_ts(chunk[-1].at)) as txn:
                for put in chunk:
                    data = put.data
                    if put.kind == "item":
                        stored = validate_values(
                            schema, data["values"], existing=None, relation_exists=lambda c, r: True, partial=False
                        )
                        data = {**data, "values": in_schema_order(schema, stored)}
                    txn.put(KINDS[put.kind], data, event_type=put.event_type, changed=list(put.changed))


# ------------------------------------------------------------------------------ building


def build(notes: int, seed: int = 1, *, durable: bool = False, quiet: bool = False) -> Path:
    """Generate the store of ``notes`` notes into its cache folder (replacing a partial one)."""
    from codexmem.records import service
    from codexmem.store.atomic import atomic_write
    from codexmem.store.identity import Writer
    from codexmem.store.init import STORE_GITATTRIBUTES, STORE_GITIGNORE
    from codexmem.store.store import Store
    from codexmem.store.yamlio import dump_yaml

    base = base_dir(notes, seed)
    if base.exists():
        shutil.rmtree(base)
    started = time.perf_counter()
    memory = store_dir(base)
    memory.mkdir(parents=True)
    _git(memory.parent, "init", "-q", "-b", "main")
    atomic_write(memory / ".gitignore", STORE_GITIGNORE.encode())
    atomic_write(memory / ".gitattributes", STORE_GITATTRIBUTES.encode())
    atomic_write(memory / "codexmem.yaml", dump_yaml(_config()).encode("utf-8"))
    _git(memory.parent, "add", "-A")
    _git(memory.parent, "-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit", "-q", "-m", "store")
    workspaces = _make_workspaces(base)
    rng = random.Random(seed * 1_000_003 + notes)
    first, later = _memory_plan(rng, notes, workspaces)
    items = _item_plan(rng, min(notes, 10_000))
    with no_fsync(not durable):
        stores = {p: Store(memory, writer=Writer(name=p, clone=CLONES[p])) for p in PEOPLE}
        store = stores[PEOPLE[0]]
        service.add_channel(store, "bugs", bugs_channel.BUGS_SCHEMA, actor="cli:aiko", now=END - timedelta(days=366))
        schema = service.get_schema(store, "bugs")
        for phase in (first, later):
            _write(stores, phase)
        for phase in items:
            _write(stores, phase, schema=schema)
        store.fresh_index(full=True)
        store.index.close()
    # A sample of what the bench needs to build varied, valid calls.
    manifest = {
        "generator_version": GENERATOR_VERSION,
        "seed": seed,
        "notes": notes,
        "items": min(notes, 10_000),
        "sessions": sum(1 for p in first if p.kind == "session"),
        "handoffs": sum(1 for p in first if p.kind == "handoff"),
        "workspaces": [{"project": w.project, "name": w.name, "root": str(w.root), **w.scope()} for w in workspaces],
        "areas": list(AREAS),
        "tags": list(TAGS),
        "seconds": round(time.perf_counter() - started, 1),
    }
    (base / "manifest.json").write_text(json.dumps(manifest, indent=1), "utf-8")
    if not quiet:
        print(f"generated {notes} notes, {manifest['items']} items in {manifest['seconds']} s: {base}", file=sys.stderr)
    return base


def ensure(notes: int, seed: int = 1, *, quiet: bool = False) -> Path:
    """The cached store of this size, generated if missing or from another generator version."""
    base = base_dir(notes, seed)
    try:
        manifest = manifest_of(base)
        if manifest["generator_version"] == GENERATOR_VERSION and Path(manifest["workspaces"][0]["root"]).is_dir():
            _refresh_index(base)
            return base
    except (OSError, ValueError, KeyError, IndexError):
        pass
    return build(notes, seed, quiet=quiet)


def _refresh_index(base: Path) -> None:
    """Bring the cached index up to date (a newer codexmem may have changed its schema: rebuilt)."""
    from codexmem.store.store import Store

    store = Store(store_dir(base))
    store.fresh_index(full=True)
    store.index.close()


def working_copy(base: Path, dest: Path) -> Path:
    """A writable copy of the cached store at ``dest``; returns the store folder.

    Record files are hard-linked (same inodes, so the cached index is valid and nothing is
    parsed again); everything written in place (shards, index, git) is really copied.
    """
    if (dest / "repo").exists():
        shutil.rmtree(dest / "repo")
    shutil.copytree(base / "repo", dest / "repo", ignore=shutil.ignore_patterns(".codexmem"))
    src = store_dir(base)
    out = store_dir(dest)
    in_place = (".cache", "events")
    shutil.copytree(src, out, copy_function=os.link, ignore=lambda d, names: [n for n in names if n in in_place])
    for name in in_place:
        if (src / name).exists():
            shutil.copytree(src / name, out / name)
    # Write the copy (hundreds of MB of index at 50,000 notes) out now: left to the kernel's
    # background writeback, it would compete with the fsyncs of the calls measured next.
    os.sync()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=note_sizes, default="1000,10000,50000", help="note counts, comma-separated")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--force", action="store_true", help="generate again even if cached")
    parser.add_argument("--durable", action="store_true", help="keep the per-file fsyncs (slower)")
    args = parser.parse_args(argv)
    for size in args.sizes:
        if args.force:
            build(size, args.seed, durable=args.durable)
        else:
            print(ensure(size, args.seed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
