"""The README's ``codexmem diff`` example: a pull request on a copy of store-example, then its diff.

    .venv/bin/python -m scripts.readme_diff

Copies ``store-example/`` into a new git repository (as ``.codexmem/``, committed on ``main``),
then on the branch ``feat/retry-cap`` writes through the services what an agent's session
does: three notes, one of which supersedes a note of the example, a handoff with one next step,
and a bug triaged as fixed. Prints ``codexmem diff`` (no argument: the merge base of HEAD and
``main`` against the working tree), exactly as the command prints it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from codexmem.errors import Warnings
from codexmem.memory import handoffs, lifecycle, notes, sessions
from codexmem.models.records import ScopeRef
from codexmem.records import service
from codexmem.store.layout import NOTE
from codexmem.store.store import Store

EXAMPLE = Path(__file__).resolve().parent.parent / "store-example"
SCOPE = ScopeRef(system_id="sys_order_platform", project_id="proj_order_api", workspace_id="ws_order_api_main")
SUPERSEDED = "note_01KGF3VTF0ZGBMJX04BW295PXH"  # "Map Postgres errors in one place"
BUG = "item_01KJA64Q00KRK3MABSF39W3YT6"  # BUG-0114, in progress
ENV = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, env=ENV, check=True, capture_output=True)


def pull_request(store: Store) -> None:
    clock = iter(datetime(2026, 3, 20, 9, 0, tzinfo=UTC) + timedelta(minutes=n) for n in range(100))
    w = Warnings()
    session = sessions.open_session(
        store, next(clock), w, scope=SCOPE, task="Cap the ledger job's retries", branch_name="feat/retry-cap"
    )
    sid = str(session["session_id"])

    def note(title: str, content: str, note_type: str = "decision") -> str:
        saved = notes.save_note(
            store, next(clock), w, scope=SCOPE, session_id=sid, note_type=note_type,  # type: ignore[arg-type]
            title=title, content=content, importance=4,
        )  # fmt: skip
        return str(saved["note"]["note_id"])

    errors = note(
        "Map Postgres errors in internal/store/pgerr.go",
        "One table maps SQLSTATE codes to API errors; handlers never look at a driver error.",
    )
    note("Ledger retries stop after five attempts", "Then the job parks the order and pages the on-call.")
    note("The queue redelivers after 30 s", "A job that runs longer is delivered twice.", "discovery")
    old = store.fresh_index().get(NOTE, SUPERSEDED)
    assert old is not None
    lifecycle.set_status(
        store, next(clock), w, record_id=SUPERSEDED, kind="note", status="superseded",
        expected_version=old["version"], superseded_by=errors, session_id=sid,
    )  # fmt: skip
    handoffs.save_handoff(
        store, next(clock), w, scope=SCOPE, session_id=sid, kind="final", task="Cap the ledger job's retries",
        summary="Retries capped at five; parked orders page the on-call.", next_steps=["Alert on parked orders"],
        status="open",
    )  # fmt: skip
    service.edit_item(
        store, "bugs", BUG, {"status": "fixed"}, expected_version=None, idempotency_key=None, actor="cli",
        now=next(clock),
    )  # fmt: skip
    lifecycle.end_session(store, next(clock), w, session_id=sid)


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="codexmem-readme-diff-") as tmp:
        repo = Path(tmp) / "order-api"
        repo.mkdir()
        git(repo, "init", "-q", "-b", "main")
        git(repo, "config", "user.name", "aiko")
        git(repo, "config", "user.email", "aiko@example.com")
        shutil.copytree(EXAMPLE, repo / ".codexmem")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "memory")
        git(repo, "checkout", "-q", "-b", "feat/retry-cap")
        store = Store(repo / ".codexmem")
        pull_request(store)
        store.index.close()
        cli = Path(sys.executable).with_name("codexmem")
        done = subprocess.run([str(cli), "diff"], cwd=repo, env=ENV, capture_output=True, text=True, check=True)
        print(done.stdout, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
