"""``codexmem diff`` on a pull request that changes 200 records of a generated store.

    .venv/bin/python -m bench.diff [--notes 1000] [--runs 5]

Takes a copy of the generated store (``bench/generate.py``), commits it on ``main``, then on a
branch writes through the services what a busy pull request holds: one session, 100 new notes,
40 existing notes superseded by new ones, 19 handoffs and 40 bug items triaged again (200
changed record files, and the events they add), and commits. It prints the wall time of the
console script ``codexmem diff main...feature`` (a fresh process each run, as CI runs it:
interpreter start, imports, git, parsing, rendering) for the Markdown, ``--format json`` and
``--stat`` outputs, median and spread of ``--runs`` runs, alternating, with the load average.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.generate import ensure, manifest_of, working_copy
from codexmem.errors import Warnings
from codexmem.memory import handoffs, lifecycle, notes, sessions
from codexmem.models.records import ScopeRef
from codexmem.records import service
from codexmem.store.layout import ITEM, NOTE
from codexmem.store.store import Store

CLI = Path(sys.executable).with_name("codexmem")
NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
ENV = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, env=ENV, check=True, capture_output=True, text=True).stdout


def pull_request(store: Store, scope: ScopeRef, rng: random.Random) -> int:
    """Write the branch's changes through the services; returns how many record files changed."""
    clock = iter(NOW + timedelta(seconds=n) for n in range(10_000))
    warnings = Warnings()
    session = sessions.open_session(store, next(clock), warnings, scope=scope, task="Bench pull request")
    sid = str(session["session_id"])
    changed = 1
    index = store.fresh_index()
    active = [n for n in index.select(NOTE, where={"status": "active"}) if n["scope"]["project_id"] == scope.project_id]
    for n in range(100):
        saved = notes.save_note(
            store,
            next(clock),
            warnings,
            scope=scope,
            session_id=sid,
            note_type=rng.choice(("decision", "bugfix", "discovery", "constraint")),
            title=f"Bench finding {n}: retries of the ledger job need a cap",
            content=f"Finding {n}. The ledger job retried forever when the queue was down.\n\nCap it at five.",
            importance=rng.randint(2, 5),
            tags=["bench", "ledger"],
        )
        changed += 1
        if n < 40:
            old = active[n]
            lifecycle.set_status(
                store,
                next(clock),
                warnings,
                record_id=old["note_id"],
                kind="note",
                status="superseded",
                expected_version=old["version"],
                superseded_by=saved["note"]["note_id"],
                session_id=sid,
            )
            changed += 1
    for n in range(19):
        handoffs.save_handoff(
            store,
            next(clock),
            warnings,
            scope=scope,
            session_id=sid,
            kind="checkpoint",
            task=f"Ledger retries, part {n}",
            summary="Capped the retries.",
            next_steps=["Watch the queue alarms", "Remove the old flag"],
            status="open",
        )
        changed += 1
    items = store.fresh_index().select(ITEM, where={"channel": "bugs"}, limit=40)
    for item in items:
        status = "fixed" if item["values"].get("status") != "fixed" else "wont_fix"
        service.edit_item(
            store,
            "bugs",
            item["item_id"],
            {"status": status, "points": 5},
            expected_version=None,
            idempotency_key=None,
            actor="cli",
            now=next(clock),
        )
        changed += 1
    store.index.close()
    return changed


def timed(args: list[str]) -> tuple[float, int]:
    started = time.perf_counter()
    done = subprocess.run([str(CLI), *args], env=ENV, check=True, capture_output=True)
    return time.perf_counter() - started, len(done.stdout.decode("utf-8"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=1000, help="size of the generated store")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    base = ensure(args.notes)
    workspace = manifest_of(base)["workspaces"][0]
    scope = ScopeRef(**{k: workspace[k] for k in ("system_id", "project_id", "workspace_id")})
    with tempfile.TemporaryDirectory(prefix="codexmem-bench-diff-") as tmp:
        store_root = working_copy(base, Path(tmp))
        repo = store_root.parent
        git(repo, "add", "-A")
        git(repo, "-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit", "-q", "-m", "memory")
        git(repo, "checkout", "-q", "-b", "feature")
        changed = pull_request(Store(store_root), scope, random.Random(7))
        git(repo, "add", "-A")
        git(repo, "-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit", "-q", "-m", "pr")
        files = len(git(repo, "diff", "--name-only", "main...feature", "--", ".codexmem").split())
        forms = {"markdown": [], "json": ["--format", "json"], "stat": ["--stat"]}
        times: dict[str, list[float]] = {name: [] for name in forms}
        sizes: dict[str, int] = {}
        load_before = Path("/proc/loadavg").read_text().split()[:3]
        for _ in range(args.runs):
            for name, extra in forms.items():  # alternating, so the machine's load hits each alike
                seconds, size = timed(["diff", "main...feature", "--store", str(store_root), *extra])
                times[name].append(seconds)
                sizes[name] = size
        load_after = Path("/proc/loadavg").read_text().split()[:3]
    print(f"store: {args.notes} notes; branch: {changed} records changed ({files} store files with the event shards)")
    print(f"load average before {' '.join(load_before)}, after {' '.join(load_after)}; {args.runs} runs each")
    for name, values in times.items():
        print(
            f"codexmem diff main...feature ({name}): median {statistics.median(values) * 1000:.0f} ms, "
            f"min {min(values) * 1000:.0f} ms, max {max(values) * 1000:.0f} ms, {sizes[name]:,} characters"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
