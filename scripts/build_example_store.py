"""Build ``store-example/``: the memory of the order-platform system, reproducibly.

The seed document's sessions, notes, handoffs and imports (its ``note_402``-style counters become
ULIDs; titles, contents and fields are kept) plus a month of plausible history around them, all
written through ``Store.transaction`` exactly as codexmem itself writes. Ids come from a seeded
random generator and fixed timestamps, so running the script twice gives byte-identical files.

``store-example/channels/`` and ``store-example/events/example1/`` belong to the record-channel
example and are left alone; everything else is deleted and rebuilt.

    .venv/bin/python scripts/build_example_store.py [--out PATH]
"""

from __future__ import annotations

import argparse
import random
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from ulid import ULID

from codexmem.models.config import StoreConfig
from codexmem.models.records import Handoff, ImportAudit, Note, ScopeRef, Session
from codexmem.store.atomic import atomic_write
from codexmem.store.identity import Writer
from codexmem.store.ids import IdMaker
from codexmem.store.init import STORE_GITATTRIBUTES, STORE_GITIGNORE
from codexmem.store.layout import CONFIG_FILE, HANDOFF, IMPORT, NOTE, SESSION, Kind
from codexmem.store.store import Store
from codexmem.store.yamlio import dump_yaml

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "store-example"
SEED = 20260313
WRITER_ID = "example0"
SYSTEM_ID = "sys_order_platform"
# Owned by the record-channel example (writer ``example1``): never deleted here.
KEEP = {"channels": None, "events": {"bug-triage-example1"}}

CONFIG: dict[str, Any] = {
    "format": 2,
    "system": {"id": SYSTEM_ID, "name": "order-platform"},
    "projects": [
        {
            "id": "proj_order_web",
            "name": "order-web",
            "system": SYSTEM_ID,
            "remotes": ["git@github.com:example/order-web.git"],
            "relations": [{"project": "proj_order_api", "relation_type": "calls_api_of"}],
            "preferred_tags": ["spec", "api", "go"],
        },
        {
            "id": "proj_order_api",
            "name": "order-api",
            "system": SYSTEM_ID,
            "remotes": ["git@github.com:example/order-api.git"],
        },
        {
            "id": "proj_order_worker",
            "name": "order-worker",
            "system": SYSTEM_ID,
            "remotes": ["git@github.com:example/order-worker.git"],
            "relations": [{"project": "proj_order_api", "relation_type": "depends_on"}],
        },
    ],
    "privacy": {"secrets": "refuse"},
    "sessions": {"idle_recovery_minutes": 120},
    "site": {"title": "order-platform memory"},
}

SCOPES = {
    name: ScopeRef(system_id=SYSTEM_ID, project_id=f"proj_order_{name}", workspace_id=f"ws_order_{name}_main")
    for name in ("web", "api", "worker")
}
ROOTS = {name: f"D:/Code/go/order-{name}" for name in SCOPES}

README = """\
# store-example: the order-platform system's memory

This folder is a complete codexmem store, built by `scripts/build_example_store.py` from the seed
document's order-platform example: three projects (order-web calls the API of order-api,
order-worker depends on order-api) and a month of their Codex sessions, with the notes, handoffs
and import audits those sessions wrote, and every later status change kept as a new version with its
event in `events/`. `channels/bugs/` is a bug tracker of 200 items with the second seed document's
eleven fields, built by `scripts/build_example_channel.py`. It is the sample that the tests, the
documentation and the static site use.
Browse it as plain files (`codexmem.yaml` declares the system; `notes/` and `handoffs/` are Markdown
with YAML front matter; `sessions/`, `imports/` and `channels/` are YAML; `events/*/*.jsonl` is the history, one
JSON line per change), check it with `codexmem check --store store-example`, or render it as a static
site with `codexmem site --store store-example` (written to `_site/` beside it; add `--serve` to browse
it locally). The format of every file is described in `docs/store-format.md`.
"""


def ts(text: str) -> str:
    """``"2026-03-13 10:52"`` -> ``"2026-03-13T10:52:00.000Z"``."""
    return datetime.strptime(text, "%Y-%m-%d %H:%M").replace(tzinfo=UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def ms_of(stamp: str) -> int:
    return int(datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp() * 1000)


class Builder:
    """Writes the example through the store, with ids drawn from one seeded generator."""

    def __init__(self, store: Store, rng: random.Random) -> None:
        self.store = store
        self.rng = rng
        self.ids: dict[str, str] = {}
        self.sessions: dict[str, str] = {}  # session key -> project key

    def make_id(self, prefix: str, at: str) -> str:
        return f"{prefix}_{ULID.from_int((ms_of(at) << 80) | self.rng.getrandbits(80))}"

    def write(self, actor: str, at: str, *puts: tuple[Kind, BaseModel | dict[str, Any], str, list[str]]) -> None:
        with self.store.transaction(actor, at=at) as txn:
            for kind, record, event_type, changed in puts:
                txn.put(kind, record, event_type=event_type, changed=changed)

    def change(self, kind: Kind, key: str, actor_key: str, when: str, event_type: str, **changes: Any) -> None:
        """A second (or later) version of a record: read it, apply ``changes``, write it back."""
        at = ts(when)
        current = self.store.read_file(kind, self.ids[key])
        assert current is not None, key
        data = {**current, **changes, "version": int(current["version"]) + 1, "updated_at": at}
        self.write(self.ids[actor_key], at, (kind, data, event_type, sorted(changes)))

    # ---------------------------------------------------------------- record kinds

    def session(self, key: str, project: str, when: str, task: str, branch: str) -> None:
        at = ts(when)
        self.ids[key] = sid = self.make_id("sess", at)
        self.sessions[key] = project
        model = Session(
            session_id=sid,
            version=1,
            scope=SCOPES[project],
            status="active",
            task=task,
            branch_name=branch,
            started_at=at,
            updated_at=at,
        )
        self.write(sid, at, (SESSION, model, "created", []))

    def end(self, key: str, when: str, status: str = "ended", by: str | None = None) -> None:
        if status == "ended":
            self.change(SESSION, key, by or key, when, "ended", status="ended", ended_at=ts(when))
        else:
            self.change(SESSION, key, by or key, when, "status_changed", status=status)

    def note_model(
        self,
        key: str,
        session: str,
        when: str,
        type_: str,
        title: str,
        content: str,
        importance: int,
        tags: list[str],
        files: list[str] | None = None,
        **extra: Any,
    ) -> Note:
        at = ts(when)
        self.ids[key] = note_id = self.make_id("note", at)
        return Note(
            note_id=note_id,
            version=1,
            scope=SCOPES[self.sessions[session]],
            session_id=self.ids[session],
            type=type_,
            title=title,
            importance=importance,
            tags=tags,
            file_paths=files or [],
            created_at=at,
            updated_at=at,
            content=content,
            **extra,
        )

    def note(
        self,
        key: str,
        session: str,
        when: str,
        type_: str,
        title: str,
        content: str,
        importance: int,
        tags: list[str],
        files: list[str] | None = None,
        **extra: Any,
    ) -> None:
        model = self.note_model(key, session, when, type_, title, content, importance, tags, files, **extra)
        self.write(self.ids[session], ts(when), (NOTE, model, "created", []))

    def handoff(
        self,
        key: str,
        session: str,
        when: str,
        kind: str,
        task: str,
        summary: str,
        next_steps: list[str],
        *,
        actor: str | None = None,
        related: tuple[str, ...] = (),
        **extra: Any,
    ) -> None:
        at = ts(when)
        self.ids[key] = handoff_id = self.make_id("handoff", at)
        model = Handoff(
            handoff_id=handoff_id,
            version=1,
            scope=SCOPES[self.sessions[session]],
            session_id=self.ids[session],
            kind=kind,
            task=task,
            status="open",
            next_steps=next_steps,
            related_note_ids=[self.ids[k] for k in related],
            created_at=at,
            updated_at=at,
            summary=summary,
            **extra,
        )
        self.write(self.ids[actor or session], at, (HANDOFF, model, "created", []))

    def import_model(self, key: str, session: str, when: str, source: str, **fields: Any) -> ImportAudit:
        at = ts(when)
        self.ids[key] = import_id = self.make_id("import", at)
        return ImportAudit(
            import_id=import_id,
            version=1,
            scope=SCOPES[self.sessions[session]],
            session_id=self.ids[session],
            source=source,
            imported_at=at,
            updated_at=at,
            **fields,
        )


def build(out: Path) -> None:
    prepare(out)
    atomic_write(out / ".gitignore", STORE_GITIGNORE.encode())
    atomic_write(out / ".gitattributes", STORE_GITATTRIBUTES.encode())
    StoreConfig.model_validate(CONFIG)
    atomic_write(out / CONFIG_FILE, dump_yaml(CONFIG).encode("utf-8"))
    atomic_write(out / "README.md", README.encode("utf-8"))
    rng = random.Random(SEED)
    # A fixed shard name (not a random one kept in the ignored cache) and seeded event ids.
    store = Store(
        out, ids=IdMaker(randbytes=rng.randbytes), writer=Writer("order-platform agents", WRITER_ID), branch=None
    )
    builder = Builder(store, rng)
    try:
        write_history(builder)
    finally:
        store.index.close()
    # Local state only (all git-ignored): leave the tree as it would be committed.
    shutil.rmtree(out / ".cache", ignore_errors=True)
    (out / ".lock").unlink(missing_ok=True)
    if (out / ".journal").is_dir() and not any((out / ".journal").iterdir()):
        (out / ".journal").rmdir()


def prepare(out: Path) -> None:
    """Delete everything under ``out`` except what the record-channel example owns."""
    out.mkdir(parents=True, exist_ok=True)
    for entry in sorted(out.iterdir()):
        keep = KEEP.get(entry.name, False)
        if keep is None:
            continue
        if isinstance(keep, set) and entry.is_dir() and not entry.is_symlink():
            for sub in sorted(entry.iterdir()):
                if sub.name not in keep:
                    _remove(sub)
            continue
        _remove(entry)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


# ------------------------------------------------------------------------ the history


def write_history(b: Builder) -> None:
    # ---- 2026-03-02, order-api: the canonical payment method enum
    b.session(
        "A1",
        "api",
        "2026-03-02 09:05",
        "Define the canonical payment method enum for order submission",
        "feat/payment-method-enum",
    )
    b.note(
        "enum_owned",
        "A1",
        "2026-03-02 09:40",
        "decision",
        "Payment method is a closed enum owned by order-api",
        "Payment method values are defined once, in `internal/order/payment_method.go`, and every other "
        "service consumes them.\n\nCanonical values:\n\n- `card`\n- `bank_transfer`\n- `wallet`\n- `invoice`\n\n"
        "Anything else is a client bug, not a new payment method.",
        5,
        ["api", "payments", "validation"],
        ["internal/order/payment_method.go"],
    )
    b.note(
        "wire_case",
        "A1",
        "2026-03-02 10:15",
        "constraint",
        "Enum values are lower snake_case on the wire",
        "JSON bodies carry `bank_transfer`, never `BankTransfer` or `BANK_TRANSFER`. The OpenAPI spec is the "
        "contract; the Go constants are generated from it.",
        3,
        ["api", "json", "spec"],
        ["api/openapi.yaml"],
    )
    b.note(
        "alias_table",
        "A1",
        "2026-03-02 11:00",
        "discovery",
        "Legacy clients still send payment aliases",
        "Request logs from the last 30 days show three aliases still in use:\n\n"
        "| alias | canonical |\n|---|---|\n| `cc` | `card` |\n| `sepa` | `bank_transfer` |\n"
        "| `paypal` | `wallet` |\n\n"
        "About 4% of submissions use one of them.",
        4,
        ["api", "payments", "legacy"],
        ["internal/order/legacy_alias.go"],
    )
    b.note(
        "table_tests",
        "A1",
        "2026-03-02 11:45",
        "preference",
        "Table-driven tests for every enum parser",
        "Keep parser tests table-driven (`[]struct{ in string; want PaymentMethod; err bool }`) so that adding "
        "or removing an alias is a one-line diff.",
        2,
        ["go", "testing"],
        ["internal/order/payment_method_test.go"],
    )
    b.note(
        "todo_alias_removal",
        "A1",
        "2026-03-02 12:20",
        "todo",
        "Remove the legacy alias mapping in the March cleanup",
        "Once order-web ships the generated enum list, delete `legacyAliases` and answer unknown values with a "
        "validation error instead of mapping them.",
        3,
        ["api", "legacy", "cleanup"],
        ["internal/order/legacy_alias.go"],
    )
    b.handoff(
        "h_A1",
        "A1",
        "2026-03-02 12:35",
        "final",
        "Define the canonical payment method enum",
        "The enum exists in the API and the spec; legacy aliases are still mapped on input so that old "
        "clients keep working.",
        ["Expose the enum to clients as metadata", "Plan the removal of the alias mapping"],
        completed=["Added PaymentMethod with four canonical values", "Documented the enum in openapi.yaml"],
        files_touched=["internal/order/payment_method.go", "internal/order/legacy_alias.go", "api/openapi.yaml"],
        related=("enum_owned", "alias_table"),
    )
    b.end("A1", "2026-03-02 12:40")

    # ---- 2026-03-04, order-worker: settlement retries
    b.session("W1", "worker", "2026-03-04 14:00", "Add a retry policy for settlement jobs", "feat/settlement-retry")
    b.note(
        "retry_backoff",
        "W1",
        "2026-03-04 14:40",
        "decision",
        "Settlement jobs retry with capped exponential backoff",
        "Retries use exponential backoff with full jitter, capped at 10 minutes and 8 attempts:\n\n"
        "```go\ndelay := min(base*time.Duration(1<<attempt), 10*time.Minute)\n"
        "delay = time.Duration(rng.Int63n(int64(delay)))\n```\n\n"
        "After the last attempt the job moves to the `settlement_dead` queue for a person to look at.",
        4,
        ["worker", "retry", "settlement"],
        ["internal/settlement/retry.go"],
    )
    b.note(
        "handler_idempotent",
        "W1",
        "2026-03-04 15:10",
        "constraint",
        "The settlement handler must be idempotent",
        "A retried job can run after a slow first attempt finally committed. The handler looks up "
        "`settlement_id` in the ledger before writing and treats an existing row as success.",
        5,
        ["worker", "settlement", "idempotency"],
        ["internal/settlement/handler.go"],
    )
    b.note(
        "dlq_name",
        "W1",
        "2026-03-04 16:05",
        "bugfix",
        "Dead-letter queue name was read from a misspelled setting",
        "The worker looked up `settlement_dql` instead of `settlement_dlq`, so failed jobs were dropped in "
        "staging. Fixed the name and added a start-up check that the queue exists.",
        3,
        ["worker", "config"],
        ["internal/config/config.go"],
    )
    b.note(
        "client_timeout",
        "W1",
        "2026-03-04 16:50",
        "discovery",
        "order-worker calls order-api with a 2 s timeout",
        "The generated API client has a hard-coded 2 s timeout, short for `POST /v1/orders/{id}/settle` under "
        "load (p99 about 1.6 s).",
        2,
        ["worker", "api"],
        ["internal/apiclient/client.go"],
    )
    b.note(
        "todo_timeout",
        "W1",
        "2026-03-04 17:20",
        "todo",
        "Make the order-api client timeout configurable",
        "Read it from the worker config with 2 s as the default; settle calls should get 5 s.",
        2,
        ["worker", "api", "config"],
        ["internal/apiclient/client.go", "internal/config/config.go"],
    )
    b.note(
        "make_lint",
        "W1",
        "2026-03-04 17:25",
        "preference",
        "Run make lint before pushing",
        "`make lint` runs `golangci-lint` with the repository's config; CI runs the same target.",
        1,
        ["go", "tooling"],
        ["Makefile"],
    )
    b.handoff(
        "h_W1",
        "W1",
        "2026-03-04 17:30",
        "final",
        "Add a retry policy for settlement jobs",
        "Backoff and dead-lettering are in place; retries of non-idempotent enqueue paths still need a look.",
        ["Audit enqueue paths for duplicate jobs", "Load-test the settle endpoint with retries on"],
        risks=["Retries can double-enqueue if the consumer acknowledges late."],
        files_touched=["internal/settlement/retry.go", "internal/settlement/handler.go"],
        related=("retry_backoff", "handler_idempotent"),
    )
    b.end("W1", "2026-03-04 17:35")

    # ---- 2026-03-06, order-web: checkout form accessibility
    b.session("F1", "web", "2026-03-06 09:50", "Checkout form accessibility and error states", "chore/checkout-a11y")
    b.note(
        "aria_live",
        "F1",
        "2026-03-06 10:30",
        "decision",
        "Form errors are announced with aria-live",
        'Field errors render in one `aria-live="polite"` region under the submit button, besides the inline '
        "message, so screen readers hear why submit did nothing.",
        3,
        ["frontend", "a11y", "checkout"],
        ["src/order/CheckoutForm.tsx"],
    )
    b.note(
        "focus_invalid",
        "F1",
        "2026-03-06 11:40",
        "bugfix",
        "Focus moves to the first invalid field on submit",
        "Submit used to leave focus on the button. `focusFirstInvalid()` now runs after validation and scrolls "
        "the field into view.",
        3,
        ["frontend", "a11y"],
        ["src/order/CheckoutForm.tsx", "src/order/focus.ts"],
    )
    b.note(
        "by_role",
        "F1",
        "2026-03-06 12:30",
        "preference",
        "Prefer Testing Library queries by role",
        "Use `getByRole('button', { name: /place order/i })` rather than test ids; it keeps the tests honest "
        "about accessibility.",
        2,
        ["frontend", "testing"],
        ["src/order/__tests__/CheckoutForm.test.tsx"],
    )
    b.note(
        "enum_copy",
        "F1",
        "2026-03-06 13:20",
        "decision",
        "Keep a local copy of the payment method list in order-web",
        "Until order-api publishes its enums, `src/order/paymentMethods.ts` holds a hand-maintained list. "
        "Whoever changes the API enum updates this file in the same week.",
        3,
        ["frontend", "validation"],
        ["src/order/paymentMethods.ts"],
    )
    b.note(
        "draft_restore",
        "F1",
        "2026-03-06 14:10",
        "discovery",
        "Saved drafts are restored from localStorage without validation",
        "`restoreDraft()` spreads the stored JSON straight into form state, so old drafts can carry values the "
        "current form no longer accepts.",
        4,
        ["frontend", "checkout", "drafts"],
        ["src/order/draft.ts"],
    )
    b.note(
        "safari15",
        "F1",
        "2026-03-06 14:50",
        "constraint",
        "Checkout must work on Safari 15",
        "Enterprise customers pin Safari 15 on managed devices:\n\n- no `structuredClone`\n"
        "- no `Array.prototype.at` without the polyfill\n- test the checkout in the Safari 15 CI job",
        3,
        ["frontend", "browsers"],
        ["package.json", ".browserslistrc"],
    )
    b.note(
        "handler_names",
        "F1",
        "2026-03-06 15:00",
        "preference",
        "Name event props onX and handlers handleX",
        "`onSubmit` is the prop, `handleSubmit` the function that implements it.",
        1,
        ["frontend", "style"],
    )
    b.handoff(
        "h_F1",
        "F1",
        "2026-03-06 15:05",
        "checkpoint",
        "Checkout form accessibility and error states",
        "Errors are announced and focus lands on the first invalid field; the draft restore path still "
        "bypasses validation.",
        ["Validate restored drafts", "Run the axe audit on the confirmation page"],
        completed=["aria-live error region", "focus on first invalid field"],
        files_touched=["src/order/CheckoutForm.tsx", "src/order/focus.ts"],
        related=("aria_live", "draft_restore"),
    )
    b.end("F1", "2026-03-06 15:10")

    # ---- 2026-03-09, order-api: enum metadata for clients
    b.session("A2", "api", "2026-03-09 13:20", "Generate enum metadata for API clients", "feat/enum-metadata")
    b.change(HANDOFF, "h_A1", "A2", "2026-03-09 13:25", "status_changed", status="completed")
    b.note(
        "meta_endpoint",
        "A2",
        "2026-03-09 14:00",
        "decision",
        "Publish enum metadata at /v1/meta/enums",
        "Clients fetch allowed values at build time from `GET /v1/meta/enums` instead of copying lists.\n\n"
        "Response shape:\n\n```json\n"
        '{"payment_method": {"values": ["card", "bank_transfer", "wallet", "invoice"], "version": 3}}\n'
        "```",
        4,
        ["api", "codegen", "validation"],
        ["internal/http/meta.go", "api/openapi.yaml"],
    )
    b.note(
        "openapi_ts",
        "A2",
        "2026-03-09 15:10",
        "discovery",
        "openapi-typescript generates the enum union types",
        "Running `openapi-typescript api/openapi.yaml` gives order-web a `PaymentMethod` union type, which "
        "covers compile-time checks; run-time validation still needs the metadata endpoint.",
        3,
        ["codegen", "frontend", "api"],
        ["scripts/gen-client.sh"],
        related_project_ids=["proj_order_web"],
    )
    b.note(
        "all_errors",
        "A2",
        "2026-03-09 15:50",
        "preference",
        "Validation errors list every offending field",
        'Return every field error in one `422` body (`{"errors": [{"field": ..., "code": ...}]}`) rather '
        "than stopping at the first; clients show them all at once.",
        3,
        ["api", "errors"],
        ["internal/http/errors.go"],
    )
    b.note(
        "meta_cache",
        "A2",
        "2026-03-09 16:30",
        "bugfix",
        "Enum metadata endpoint sent no cache headers",
        "Added `Cache-Control: public, max-age=300` and an `ETag` built from the enum version.",
        2,
        ["api", "http", "caching"],
        ["internal/http/meta.go"],
    )
    b.end("A2", "2026-03-09 17:05")

    # ---- 2026-03-11, order-api: the March validation cleanup (seed: sess_20260311_007)
    b.session(
        "A3",
        "api",
        "2026-03-11 08:40",
        "March validation cleanup: reject legacy payment aliases",
        "fix/legacy-payment-aliases",
    )
    b.change(
        NOTE,
        "alias_table",
        "A3",
        "2026-03-11 08:55",
        "updated",
        content="Request logs from the last 30 days show three aliases still in use:\n\n"
        "| alias | canonical | share |\n|---|---|---|\n| `cc` | `card` | 2.9% |\n"
        "| `sepa` | `bank_transfer` | 0.8% |\n| `paypal` | `wallet` | 0.4% |\n\n"
        "Almost all of them come from the saved-draft restore path of order-web.",
    )
    b.note(
        "reject_aliases",
        "A3",
        "2026-03-11 09:15",
        "bugfix",
        "Backend now rejects legacy payment aliases",
        "The API accepts only canonical enum values after the March validation cleanup.",
        4,
        ["api", "validation", "payments"],
        ["internal/order/payment_method.go", "internal/order/legacy_alias.go"],
    )
    b.change(NOTE, "todo_alias_removal", "A3", "2026-03-11 09:20", "status_changed", status="resolved")
    b.note(
        "invalid_code",
        "A3",
        "2026-03-11 09:50",
        "decision",
        "Unknown payment method answers 422 with code payment_method_invalid",
        "The error names the field and lists the accepted values, so a client can show a useful message "
        "without a second request.",
        3,
        ["api", "errors", "validation"],
        ["internal/http/errors.go"],
    )
    b.note(
        "silent_422",
        "A3",
        "2026-03-11 10:40",
        "discovery",
        "Old clients swallow the 422 and show a generic error",
        'Clients older than web 2.14 treat any 4xx on submit as "try again later". The rejection is right, '
        "but users see no reason for it.",
        4,
        ["api", "legacy", "frontend"],
        related_project_ids=["proj_order_web"],
    )
    b.note(
        "todo_alias_metrics",
        "A3",
        "2026-03-11 11:10",
        "todo",
        "Count rejected legacy aliases per client version",
        "A counter `orders_payment_alias_rejected_total{client_version}` tells us when the last old client is gone.",
        2,
        ["api", "observability"],
        ["internal/http/metrics.go"],
    )
    b.handoff(
        "h_A3",
        "A3",
        "2026-03-11 11:25",
        "final",
        "Reject legacy payment aliases",
        "The alias mapping is gone and unknown values answer 422 payment_method_invalid. order-web still "
        "sends aliases from restored drafts.",
        ["Tell the order-web team about the 422", "Add the rejected-alias counter"],
        completed=["Removed legacyAliases", "Added payment_method_invalid"],
        risks=["Backend rejects legacy aliases silently in older client flows."],
        files_touched=["internal/order/legacy_alias.go", "internal/http/errors.go"],
        related=("reject_aliases", "silent_422"),
    )
    b.end("A3", "2026-03-11 11:30")

    # ---- 2026-03-11, order-worker: order.submitted v2 (the session is interrupted)
    b.session("W2", "worker", "2026-03-11 15:00", "Consume order.submitted v2 events", "feat/order-events-v2")
    b.note(
        "v2_schema",
        "W2",
        "2026-03-11 15:40",
        "discovery",
        "order.submitted v2 carries payment_method as the canonical enum",
        "v1 events carried whatever the client sent, aliases included; v2 is produced after API validation.",
        3,
        ["worker", "events", "payments"],
        ["internal/events/order_submitted.go"],
    )
    b.note(
        "dual_consume",
        "W2",
        "2026-03-11 16:30",
        "decision",
        "Consume v1 and v2 side by side until v1 stops",
        "1. Subscribe to both topics.\n2. Map v1 aliases with the table order-api used before the cleanup.\n"
        "3. Drop the v1 subscription once its lag metric stays at zero for 7 days.",
        4,
        ["worker", "events", "migration"],
        ["internal/events/consumer.go"],
    )
    b.note(
        "dup_delivery",
        "W2",
        "2026-03-11 17:05",
        "bugfix",
        "Duplicate deliveries created two settlement jobs",
        "The consumer acknowledged after enqueueing, so a redelivery after a crash enqueued again. Jobs are "
        "now keyed by `order_id` + `event_id` and enqueueing is an upsert.",
        4,
        ["worker", "events", "idempotency"],
        ["internal/events/consumer.go", "internal/settlement/enqueue.go"],
    )
    b.change(HANDOFF, "h_W1", "W2", "2026-03-11 17:10", "status_changed", status="abandoned")

    # ---- 2026-03-12, order-web: the validation mismatch (seed: sess_20260312_021)
    b.session("F2", "web", "2026-03-12 16:30", "Fix order validation mismatch", "fix/order-validation")
    b.note(
        "mismatch",
        "F2",
        "2026-03-12 17:00",
        "discovery",
        "Frontend and backend disagree on accepted payment methods",
        "The local list still accepts `cc` and `paypal`; the API rejects both since 2026-03-11, and submissions "
        "from restored drafts fail with a 422 that the form does not show.",
        4,
        ["frontend", "validation", "api"],
        ["src/order/validation.ts", "src/order/paymentMethods.ts"],
        related_project_ids=["proj_order_api"],
    )
    b.note(
        "enum_source",
        "F2",
        "2026-03-12 18:20",
        "decision",
        "Keep validation rules aligned with backend enum source",
        "Frontend should consume generated enum metadata instead of maintaining a separate hard-coded list.",
        4,
        ["frontend", "validation", "api"],
        ["src/order/validation.ts"],
    )
    b.change(
        NOTE,
        "enum_copy",
        "F2",
        "2026-03-12 18:21",
        "status_changed",
        status="superseded",
        superseded_by=b.ids["enum_source"],
    )
    b.note(
        "todo_fetch_enums",
        "F2",
        "2026-03-12 18:35",
        "todo",
        "Fetch enum metadata during the build",
        "`scripts/fetch-enums.mjs` writes `src/generated/enums.json` from `GET /v1/meta/enums`; "
        "`npm run build` runs it first.",
        3,
        ["frontend", "codegen", "build"],
        ["scripts/fetch-enums.mjs", "package.json"],
    )
    b.handoff(
        "h_104",
        "F2",
        "2026-03-12 18:45",
        "final",
        "Fix order validation mismatch",
        "Frontend validation still diverges from backend enum handling for payment method.",
        ["Confirm backend accepted values", "Update client-side enum validation", "Retest submit flow"],
        risks=["Backend rejects legacy aliases silently in older client flows."],
        files_touched=["src/order/validation.ts", "src/order/submit.ts"],
        related=("mismatch", "enum_source"),
    )
    b.end("F2", "2026-03-12 18:50")

    # ---- 2026-03-13, order-web: the seed's session (sess_20260313_001), still active
    b.session("F3", "web", "2026-03-13 10:30", "Continue fixing order submission validation", "fix/order-validation")
    b.note(
        "generated_list",
        "F3",
        "2026-03-13 10:52",
        "bugfix",
        "Order validation now uses generated backend enum list",
        "Client-side validation now reads generated enum metadata instead of maintaining a stale manual list.",
        4,
        ["validation", "frontend", "api"],
        ["src/order/validation.ts"],
    )
    b.change(NOTE, "todo_fetch_enums", "F3", "2026-03-13 11:00", "status_changed", status="resolved")
    b.handoff(
        "h_115",
        "F3",
        "2026-03-13 11:10",
        "final",
        "Fix order validation mismatch",
        "Frontend validation was updated to use generated enum metadata and submit flow now matches backend "
        "expectations.",
        ["Run regression test on saved draft checkout flow", "Confirm no legacy alias references remain"],
        completed=["Removed stale hard-coded payment enum list", "Rewired validation to generated metadata"],
        open_questions=["Do older cached clients still submit legacy aliases?"],
        risks=["Draft restore flow may still inject old values."],
        files_touched=["src/order/validation.ts", "src/order/submit.ts"],
        related=("generated_list",),
    )
    b.change(HANDOFF, "h_104", "F3", "2026-03-13 11:10", "status_changed", status="completed")
    b.write(
        b.ids["F3"],
        ts("2026-03-13 11:18"),
        (
            IMPORT,
            b.import_model(
                "import_701",
                "F3",
                "2026-03-13 11:18",
                "watcher_import",
                external_id="watcher:event:392",
                payload_hash="sha256:4db5b7c6f2a9",
            ),
            "created",
            [],
        ),
    )
    # An imported note and its audit: one transaction, two files (journaled by the store).
    watcher_note = b.note_model(
        "watcher_regression",
        "F3",
        "2026-03-13 11:24",
        "discovery",
        "Watcher captured checkout retry regression",
        "A local watcher run showed the checkout retry button still posts a legacy payment alias after draft restore.",
        4,
        ["watcher", "checkout", "validation"],
        ["src/order/checkout.ts"],
        source="watcher_import",
    )
    audit = b.import_model(
        "import_702",
        "F3",
        "2026-03-13 11:24",
        "watcher_import",
        external_id="watcher:event:393",
        payload_hash="sha256:b7f650bfe12c",
        durable_memory_id=watcher_note.note_id,
    )
    b.write(b.ids["F3"], ts("2026-03-13 11:24"), (NOTE, watcher_note, "created", []), (IMPORT, audit, "created", []))
    b.note(
        "draft_normalize",
        "F3",
        "2026-03-13 11:40",
        "todo",
        "Run restored drafts through the same validator",
        "`restoreDraft()` should call `validateOrder()` and drop values that fail, instead of trusting "
        "localStorage. Covers the watcher's retry regression too.",
        4,
        ["frontend", "drafts", "validation"],
        ["src/order/draft.ts", "src/order/checkout.ts"],
    )
    b.note(
        "submit_disabled",
        "F3",
        "2026-03-13 11:55",
        "constraint",
        "Submit stays disabled until enum metadata has loaded",
        "Validation without the metadata would accept anything; the button shows a spinner for the few "
        "milliseconds it takes from the bundled JSON.",
        2,
        ["frontend", "validation", "checkout"],
        ["src/order/submit.ts"],
    )

    # ---- 2026-03-16, order-worker: resuming the interrupted v2 work
    b.session("W3", "worker", "2026-03-16 09:10", "Resume the order.submitted v2 consumer", "feat/order-events-v2")
    b.end("W2", "2026-03-16 09:10", status="recovered", by="W3")
    b.handoff(
        "h_recovery",
        "W2",
        "2026-03-16 09:10",
        "recovery",
        "Consume order.submitted v2 events",
        "Session stopped without a handoff and was idle for more than 120 minutes. Reconstructed from its "
        "notes: the consumer reads v1 and v2 side by side and enqueues settlement jobs with an upsert.",
        ["Check the v1 topic lag before removing the v1 subscription", "Review the enqueue upsert under load"],
        actor="W3",
        source="recovery_generated",
        files_touched=["internal/events/consumer.go", "internal/settlement/enqueue.go"],
        related=("dual_consume", "dup_delivery"),
    )
    b.note(
        "v1_lag",
        "W3",
        "2026-03-16 10:20",
        "discovery",
        "The v1 topic still receives about 200 events a day",
        "All of them come from order-web builds older than 2.14; the v1 subscription stays for now.",
        3,
        ["worker", "events", "observability"],
        ["internal/events/metrics.go"],
    )
    b.write(
        b.ids["W3"],
        ts("2026-03-16 10:25"),
        (
            IMPORT,
            b.import_model(
                "import_explicit",
                "W3",
                "2026-03-16 10:25",
                "watcher_import",
                external_id="watcher:event:451",
                payload_hash="sha256:0c1d2e3f4a5b",
                suppressed=True,
                suppression_reason="explicit_memory_exists",
            ),
            "created",
            [],
        ),
    )
    b.note(
        "auth_before_settle",
        "W3",
        "2026-03-16 11:30",
        "constraint",
        "Settlement never starts before the payment authorization event",
        "Events can arrive out of order. A settlement job for an order without `payment.authorized` waits in "
        "`pending_auth` and is retried by the backoff policy; it is never settled optimistically.",
        5,
        ["worker", "settlement", "events"],
        ["internal/settlement/state.go"],
    )
    b.note(
        "slog",
        "W3",
        "2026-03-16 13:00",
        "preference",
        "Structured logs with order_id on every line",
        "Use `slog` with `order_id` and `event_id` attributes; no `fmt.Printf` in handlers.",
        2,
        ["worker", "logging", "go"],
        ["internal/log/log.go"],
    )
    b.note(
        "jitter_source",
        "W3",
        "2026-03-16 14:45",
        "bugfix",
        "Backoff jitter shared one unsynchronized source",
        "All workers drew jitter from one `rand.Rand` without a lock, which raced under load. Each worker now "
        "owns its source.",
        2,
        ["worker", "retry", "go"],
        ["internal/settlement/retry.go"],
    )
    b.change(HANDOFF, "h_recovery", "W3", "2026-03-16 15:20", "status_changed", status="completed")
    b.handoff(
        "h_W3",
        "W3",
        "2026-03-16 15:30",
        "checkpoint",
        "Consume order.submitted v2 events",
        "v2 consumption is live behind a flag; v1 stays subscribed until old web builds are gone.",
        ["Turn the v2 flag on in staging", "Watch v1 lag for 7 days"],
        completed=["Out-of-order authorization handled", "Per-worker jitter source"],
        open_questions=["Who owns the v1 topic after it is drained?"],
        files_touched=["internal/events/consumer.go", "internal/settlement/state.go"],
        related=("v1_lag", "auth_before_settle"),
    )
    b.end("W3", "2026-03-16 16:20", status="paused")

    # ---- 2026-03-17, order-api: idempotent order submission
    b.session("A4", "api", "2026-03-17 10:00", "Idempotency keys for order submission", "feat/submit-idempotency")
    b.change(HANDOFF, "h_A3", "A4", "2026-03-17 10:05", "status_changed", status="completed")
    b.note(
        "idem_header",
        "A4",
        "2026-03-17 10:40",
        "decision",
        "POST /v1/orders takes an Idempotency-Key header",
        "The same key with the same body within 24 h returns the first response with "
        "`Idempotent-Replay: true`; the same key with a different body answers `409`.",
        5,
        ["api", "idempotency", "spec"],
        ["internal/http/orders.go", "api/openapi.yaml"],
    )
    b.note(
        "idem_postgres",
        "A4",
        "2026-03-17 11:30",
        "decision",
        "Idempotency keys live in Postgres, not Redis",
        "One transaction writes the order and its key, so a crash can never keep one without the other.",
        3,
        ["api", "idempotency", "postgres"],
        ["migrations/0042_idempotency_keys.sql"],
    )
    b.note(
        "idem_key_order",
        "A4",
        "2026-03-17 14:00",
        "bugfix",
        "Request fingerprint ignored JSON key order",
        'The fingerprint hashed the raw body, so `{"a":1,"b":2}` and `{"b":2,"a":1}` counted as different '
        "requests. It now hashes canonical JSON (sorted keys, no whitespace).",
        3,
        ["api", "idempotency"],
        ["internal/http/orders.go"],
    )
    b.note(
        "web_send_key",
        "A4",
        "2026-03-17 15:20",
        "todo",
        "order-web should send Idempotency-Key on submit",
        "Generate the key when the checkout page loads and keep it across retries of the same submission.",
        4,
        ["api", "frontend", "idempotency"],
        related_project_ids=["proj_order_web"],
    )
    b.note(
        "go_version",
        "A4",
        "2026-03-17 15:50",
        "constraint",
        "order-api stays on Go 1.22 until the base image moves",
        "The distroless base image the platform team maintains ships Go 1.22; `go.mod` must not require more.",
        2,
        ["go", "build"],
        ["go.mod", "Dockerfile"],
    )
    b.write(
        b.ids["A4"],
        ts("2026-03-17 16:10"),
        (
            IMPORT,
            b.import_model(
                "import_private",
                "A4",
                "2026-03-17 16:10",
                "relay_import",
                external_id="relay:thread:8812",
                payload_hash="sha256:9e8d7c6b5a49",
                suppressed=True,
                suppression_reason="privacy_intent",
            ),
            "created",
            [],
        ),
    )
    b.change(NOTE, "todo_alias_metrics", "A4", "2026-03-17 16:30", "status_changed", status="resolved")
    b.handoff(
        "h_A4",
        "A4",
        "2026-03-17 16:40",
        "final",
        "Idempotent order submission",
        "The API stores idempotency keys with the order and replays the first answer; order-web does not "
        "send keys yet.",
        ["Ask order-web to send Idempotency-Key", "Expire keys after 24 h with a nightly job"],
        completed=["Idempotency-Key header", "Canonical request fingerprint"],
        files_touched=["internal/http/orders.go", "migrations/0042_idempotency_keys.sql"],
        related=("idem_header", "web_send_key"),
    )
    b.end("A4", "2026-03-17 16:45")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where to build (default: store-example/)")
    args = parser.parse_args(argv)
    build(args.out.resolve())
    print(f"built {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
