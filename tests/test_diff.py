"""``codexmem diff`` (issue 15, item 1) on real stores in real git repositories, written through the
services as an agent's tools write them: every record kind, each revision form, ``--stat``,
``--format json``, the comment-size cap, and the 15-line pull request of the issue."""

from __future__ import annotations

import contextlib
import io
import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from memory_fixtures import project_with_store, session_in
from records_fixtures import BUGS_SCHEMA
from store_fixtures import git, new_store

from codexmem.cli.main import EXIT_USAGE, main
from codexmem.errors import Warnings
from codexmem.memory import handoffs, lifecycle, notes
from codexmem.models.records import ScopeRef
from codexmem.records import service
from codexmem.render.diff import MAX_CHARS
from codexmem.store.layout import HANDOFF, NOTE
from codexmem.store.store import Store
from codexmem.store.yamlio import dump_yaml, load_yaml

ID_OR_TIME = re.compile(r"(?:note|sess|handoff|item|evt|import)_[0-9A-Z]{26}|\d{4}-\d{2}-\d{2}T\d{2}|[0-9a-f]{40}")


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


class Agent:
    """Writes memory through the services, each call a second after the last, in one session at a time."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.store = Store(repo / ".codexmem")
        self.now = datetime(2026, 3, 13, 10, 0, tzinfo=UTC)
        self.warnings = Warnings()
        self.session = ""
        self.scope: ScopeRef | None = None

    def tick(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now

    def start(self, task: str) -> str:
        scope, self.session = session_in(self.store, self.repo, now=self.tick(), task=task)
        self.scope = ScopeRef(**{k: scope[k] for k in ("system_id", "project_id", "workspace_id")})
        return self.session

    def note(self, title: str, content: str | None = None, **extra: Any) -> dict[str, Any]:
        assert self.scope is not None
        values: dict[str, Any] = {"note_type": "decision", "importance": 4, **extra}
        saved = notes.save_note(
            self.store,
            self.tick(),
            self.warnings,
            scope=self.scope,
            session_id=self.session,
            title=title,
            content=content or f"{title}: why.\nThe long story.",
            **values,
        )
        return dict(saved["note"])

    def status(self, record: dict[str, Any], kind: str, status: str, **extra: Any) -> None:
        rid = record["note_id"] if kind == "note" else record["handoff_id"]
        current = self.store.fresh_index().get(self.store_kind(kind), rid)
        assert current is not None
        lifecycle.set_status(
            self.store,
            self.tick(),
            self.warnings,
            record_id=rid,
            kind=kind,  # type: ignore[arg-type]
            status=status,
            expected_version=current["version"],
            session_id=self.session,
            **extra,
        )

    @staticmethod
    def store_kind(kind: str) -> Any:
        return NOTE if kind == "note" else HANDOFF

    def handoff(self, task: str, next_steps: list[str], **extra: Any) -> dict[str, Any]:
        assert self.scope is not None
        saved = handoffs.save_handoff(
            self.store,
            self.tick(),
            self.warnings,
            scope=self.scope,
            session_id=self.session,
            kind="final",
            task=task,
            summary=f"{task}: done.",
            next_steps=next_steps,
            status="open",
            **extra,
        )
        return dict(saved["handoff"])

    def end(self) -> None:
        lifecycle.end_session(self.store, self.tick(), self.warnings, session_id=self.session)

    def commit(self, message: str) -> None:
        git(self.repo, "add", "-A")
        git(self.repo, "commit", "-q", "-m", message)


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[Agent]:
    repo = project_with_store(tmp_path / "shop", {"src/pay.py": "def pay():\n    return 1\n"})
    made = Agent(repo)
    yield made
    made.store.index.close()


def diff(agent: Agent, *args: str) -> str:
    code, out, err = cli("diff", *args, "--store", str(agent.store.root))
    assert (code, err) == (0, ""), err
    assert len(out) < MAX_CHARS
    return out


def the_issue_branch(agent: Agent) -> dict[str, Any]:
    """main with one note; a feature branch that saves 3 notes, supersedes main's note with one of
    them and writes a handoff with one next step (the pull request of issue 15)."""
    agent.start("Set up payments")
    old = agent.note("Retry payments three times")
    agent.end()
    agent.commit("memory on main")
    git(agent.repo, "checkout", "-q", "-b", "feature/backoff")
    agent.start("Payment retries")
    new = [agent.note(t) for t in ("Use exponential backoff", "The gateway times out after 30 s", "POST needs keys")]
    agent.status(old, "note", "superseded", superseded_by=new[0]["note_id"])
    agent.handoff("Payment retries", ["Ship the backoff behind a flag"])
    agent.end()
    agent.commit("feature memory")
    return {"old": old, "new": new}


# ------------------------------------------------------------------ the issue's example


def test_the_issue_branch_reads_in_at_most_15_lines(agent: Agent) -> None:
    the_issue_branch(agent)
    out = diff(agent)  # no argument: merge base of HEAD and main, against the working tree
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) <= 15, out
    assert not ID_OR_TIME.search(out), out  # no id, event or timestamp line
    assert "`main` → the working tree" in lines[0]
    for title in ("Use exponential backoff", "The gateway times out after 30 s", "POST needs keys"):
        assert any(title in line and "decision" in line and "importance 4" in line for line in lines), title
    assert "- *Retry payments three times* → superseded by *Use exponential backoff*" in out
    assert "  - next: Ship the backoff behind a flag" in out
    assert "**Payment retries** (final, open)" in out
    session_line = next(line for line in lines if line.startswith("- *Payment retries*"))
    assert "ended" in session_line and "Test User" in session_line
    # who made each change: the author (git identity) and the session, from the events the branch added
    assert (
        "Use exponential backoff** (importance 4): Use exponential backoff: why. — Test User, session *Payment retries*"
        in out
    )
    assert "Set up payments" not in out  # main's session is not part of the change


# ------------------------------------------------------------------ revision forms


def test_two_dots_three_dots_one_revision_and_the_working_tree(agent: Agent) -> None:
    the_issue_branch(agent)
    git(agent.repo, "checkout", "-q", "main")
    agent.start("Hotfix on main")
    agent.note("Main moved on after the branch")
    agent.commit("main moves on")
    git(agent.repo, "checkout", "-q", "feature/backoff")

    three = diff(agent, "main...feature/backoff")
    assert "Use exponential backoff" in three and "Main moved on" not in three
    two = diff(agent, "main..feature/backoff")  # as git: main's later note is not on the branch
    assert "**Notes deleted**\n- *Main moved on after the branch* (decision)" in two
    assert "Use exponential backoff" in two
    # Said, so a reviewer does not take main's undone note for the branch's doing.
    caution = (
        "> Two dots compare the trees of main and feature/backoff: what main gained since feature/backoff "
        "branched from it shows here undone. For what feature/backoff changes, compare main...feature/backoff."
    )
    assert two.splitlines()[2] == caution
    assert "Two dots" not in three and "Two dots" not in diff(agent, "main~1..main")  # an ancestor: no undoing
    assert json.loads(diff(agent, "main..feature/backoff", "--format", "json"))["base"]["caution"] == caution[2:]
    assert diff(agent, "feature/backoff..feature/backoff").endswith("No memory changes.\n")
    assert diff(agent, "..feature/backoff") == diff(agent, "HEAD..feature/backoff")

    agent.start("Uncommitted work")
    agent.note("Not committed yet")  # a new file nobody added: part of the working tree
    one = diff(agent, "HEAD")
    assert "`HEAD` → the working tree" in one and "Not committed yet" in one and "Use exponential" not in one
    default = diff(agent)
    assert "Not committed yet" in default and "Use exponential backoff" in default
    assert "Main moved on" not in default  # compared with the merge base, not main's tip


# ------------------------------------------------------------------ every record kind


def test_notes_changed_resolved_retracted_and_deleted(agent: Agent) -> None:
    agent.start("Payments")
    edited = agent.note("Cache the rates", content="Cache the exchange rates for one hour.\n\nThey move slowly.")
    resolved = agent.note("Flaky checkout test", note_type="bugfix")
    retracted = agent.note("Payments need a queue")
    doomed = agent.note("An obsolete constraint", note_type="constraint")
    agent.commit("main memory")
    git(agent.repo, "checkout", "-q", "-b", "review")
    agent.start("Review")
    with agent.store.transaction(agent.session) as txn:
        current = txn.get(NOTE, edited["note_id"])
        assert current is not None
        txn.put(
            NOTE,
            {
                **current,
                "version": current["version"] + 1,
                "importance": 2,
                "tags": ["rates"],
                "content": "Cache the exchange rates for ten minutes.\n\nThey move slowly.",
            },
            event_type="updated",
            changed=["importance", "tags", "content"],
        )
    agent.status(resolved, "note", "resolved")
    code, _out, err = cli(
        "retract", retracted["note_id"], "--reason", "the gateway queues already", "--store", str(agent.store.root)
    )
    assert code == 0, err
    agent.store.layout.path(NOTE, doomed["note_id"]).unlink()
    agent.commit("review")

    out = diff(agent, "main..review")
    assert "- **Cache the rates**: importance 4 → 2; tags — → rates — Test User, session *Review*" in out
    assert "  - content: Cache the exchange rates for ~~one hour.~~ **ten minutes.** They move slowly." in out, out
    assert "**Resolved**\n- *Flaky checkout test* — Test User, session *Review*" in out
    assert "**Retracted**\n- *Payments need a queue*: the gateway queues already — Test User" in out
    assert "**Notes deleted**\n- *An obsolete constraint* (constraint)" in out
    assert not ID_OR_TIME.search(out), out


def test_handoffs_added_retracted_and_sessions(agent: Agent) -> None:
    agent.start("Checkout")
    done = agent.handoff("Finish checkout", ["Write the migration"])
    gone = agent.handoff("Old plan", ["Never mind"])
    agent.commit("main")
    git(agent.repo, "checkout", "-q", "-b", "wrap-up")
    agent.start("Wrap up")
    agent.status(gone, "handoff", "retracted", reason="superseded by the new plan")
    with agent.store.transaction(agent.session) as txn:
        current = txn.get(HANDOFF, done["handoff_id"])
        assert current is not None
        txn.put(
            HANDOFF,
            {**current, "version": current["version"] + 1, "status": "completed"},
            event_type="status_changed",
            changed=["status"],
        )
    steps = [f"Step {n}" for n in range(1, 8)]
    agent.handoff("Next release", steps)
    agent.end()
    agent.commit("wrap up")

    out = diff(agent, "main...wrap-up")
    assert "- retracted: **Old plan** (final, retracted): superseded by the new plan — Test User" in out
    assert "- changed: **Finish checkout** (final, completed): status open → completed" in out
    assert "- added: **Next release** (final, open)" in out
    assert "  - next: Step 5\n  - and 2 more next steps" in out and "Step 6" not in out
    assert "**Sessions**\n- *Wrap up* · ended — Test User" in out
    assert "- *Checkout*" not in out  # main's session did not change


def test_items_created_changed_and_deleted_with_option_labels(agent: Agent) -> None:
    at = agent.tick()
    service.add_channel(agent.store, "bugs", BUGS_SCHEMA, actor="cli", now=at)
    first = service.create_item(
        agent.store,
        "bugs",
        {"ticket": "BUG-0001", "title": "Totals round down", "status": "new", "reporter": "a@example.com"},
        actor="cli",
        now=at,
    )
    second = service.create_item(
        agent.store, "bugs", {"ticket": "BUG-0002", "title": "Duplicate", "status": "new"}, actor="cli", now=at
    )
    agent.commit("bugs")
    git(agent.repo, "checkout", "-q", "-b", "triage")
    service.edit_item(
        agent.store,
        "bugs",
        first["id"],
        {"status": "in_progress", "points": 3},
        expected_version=None,
        idempotency_key=None,
        actor="cli",
        now=agent.tick(),
    )
    service.delete_item(agent.store, "bugs", second["id"], actor="cli", now=agent.tick())
    service.create_item(
        agent.store, "bugs", {"ticket": "BUG-0003", "title": "Refunds fail", "status": "wont_fix"}, actor="cli", now=at
    )
    agent.commit("triage")

    out = diff(agent, "main..triage")
    assert "#### channel Bugs" in out
    assert (
        "**Items added**\n- **BUG-0003 Refunds fail**: Ticket: BUG-0003; Title: Refunds fail; Status: Won't fix" in out
    )
    assert (
        "**Items changed**\n- **BUG-0001 Totals round down**: Status New → In progress; Points — → 3 — Test User" in out
    )
    assert "**Items deleted**\n- **BUG-0002 Duplicate**: Ticket: BUG-0002; Title: Duplicate; Status: New" in out
    assert diff(agent, "main..triage", "--stat") == "items: 1 added, 1 changed, 1 deleted\n"


# ------------------------------------------------------------------ --stat, --format json


def test_stat_and_json(agent: Agent) -> None:
    made = the_issue_branch(agent)
    assert diff(agent, "main...HEAD", "--stat") == (
        "notes: 3 added, 1 superseded\nhandoffs: 1 added\nsessions: 1 added\n"
    )
    data = json.loads(diff(agent, "main...HEAD", "--format", "json"))
    assert list(data) == ["base", "changes", "head", "more", "stat", "unreadable"]
    assert data["base"]["revision"] == "main" and data["head"]["revision"] == "HEAD"
    assert data["more"] == 0 and data["unreadable"] == []
    assert data["stat"] == {"notes": {"added": 3, "superseded": 1}, "handoffs": {"added": 1}, "sessions": {"added": 1}}
    superseded = next(c for c in data["changes"] if c["section"] == "notes_superseded")
    assert superseded["id"] == made["old"]["note_id"] and superseded["by_id"] == made["new"][0]["note_id"]
    assert superseded["by_title"] == "Use exponential backoff"
    assert superseded["who"]["authors"] == ["Test User"] and superseded["who"]["sessions"] == ["Payment retries"]
    assert diff(agent, "main...HEAD", "--format", "json") == diff(agent, "main...HEAD", "--format", "json")


# ------------------------------------------------------------------ the comment limit


def test_a_huge_change_stays_under_the_comment_limit_and_says_how_much_more(agent: Agent) -> None:
    agent.start("Bulk")
    agent.commit("start")
    git(agent.repo, "checkout", "-q", "-b", "bulk")
    total = 220
    for n in range(total):
        agent.note(f"Note {n:03d} " + "t" * 180, content=f"First line {n} " + "c" * 300)
    agent.commit("bulk")
    out = diff(agent, "main..bulk")
    assert len(out) < MAX_CHARS
    shown = out.count("\n- decision")
    more = re.search(r"…and (\d+) more\n$", out)
    assert more is not None and 0 < shown < total and shown + int(more.group(1)) == total
    data = json.loads(diff(agent, "main..bulk", "--format", "json"))
    assert 0 < len(data["changes"]) < total and len(data["changes"]) + data["more"] == total


# ------------------------------------------------------------------ errors


def test_errors_are_one_line(agent: Agent, tmp_path: Path) -> None:
    the_issue_branch(agent)
    store = str(agent.store.root)
    for args, wanted in [
        (("nope..HEAD",), "unknown revision 'nope'"),
        (("main...nope",), "unknown revision 'nope'"),
        (("--", "-x"), "not a revision range"),
        (("a b",), "not a revision range"),
        (("x" * 5000,), "unknown revision 'xxxx"),
    ]:
        code, out, err = cli("diff", "--store", store, *args)
        assert code == EXIT_USAGE and out == "", (args, err)
        assert err.startswith("codexmem: error: ") and wanted in err and err.count("\n") == 1, err
        assert len(err) < 400
    outside = new_store(tmp_path / "shared")
    code, _out, err = cli("diff", "--store", str(outside.root))
    assert code == EXIT_USAGE and "is not inside a git repository" in err and err.count("\n") == 1, err
    outside.index.close()
    code, _out, err = cli("diff", "--store", str(tmp_path / "nowhere"))
    assert code == EXIT_USAGE and err.startswith("codexmem: error: ") and err.count("\n") == 1, err


def test_a_shallow_clone_is_told_to_fetch_its_history(agent: Agent, tmp_path: Path) -> None:
    """A CI checkout fetches one commit by default (``--depth 1``): the merge base is in the
    history it did not fetch, which the error says, with the fix, rather than "no common commit"."""
    the_issue_branch(agent)
    git(agent.repo, "commit", "-q", "--allow-empty", "-m", "feature goes on")
    git(agent.repo, "checkout", "-q", "main")
    git(agent.repo, "commit", "-q", "--allow-empty", "-m", "main goes on")  # the merge base is no tip
    clone = tmp_path / "ci"
    git(
        tmp_path,
        "clone",
        "-q",
        "--depth",
        "1",
        "--no-single-branch",
        "-b",
        "feature/backoff",
        f"file://{agent.repo}",
        str(clone),
    )
    store = str(clone / ".codexmem")
    for args, problem in [
        ((), "'origin/HEAD' and 'HEAD' have no common commit in this clone"),
        (("origin/main...HEAD",), "'origin/main' and 'HEAD' have no common commit in this clone"),
        (("HEAD~1",), "unknown revision 'HEAD~1' in this clone"),
    ]:
        code, out, err = cli("diff", "--store", store, *args)
        assert code == EXIT_USAGE and out == "" and err.count("\n") == 1, err
        assert problem in err and "shallow" in err and "git fetch --unshallow" in err and "fetch-depth: 0" in err, err
    git(clone, "fetch", "-q", "--unshallow")
    code, out, err = cli("diff", "--store", store, "origin/main...HEAD")
    assert (code, err) == (0, "") and "Use exponential backoff" in out, err
    code, _out, err = cli("diff", "--store", str(agent.store.root), "HEAD~9")
    assert code == EXIT_USAGE and "shallow" not in err and "unknown revision 'HEAD~9': name a branch" in err, err


def test_no_default_branch_and_no_commit(tmp_path: Path) -> None:
    repo = project_with_store(tmp_path / "app", {"a.txt": "a\n"})
    git(repo, "branch", "-m", "main", "trunk")
    code, _out, err = cli("diff", "--store", str(repo / ".codexmem"))
    assert code == EXIT_USAGE and "no default branch" in err and "`codexmem diff trunk...HEAD` on a branch" in err, err
    assert cli("diff", "trunk", "--store", str(repo / ".codexmem"))[1].endswith("No memory changes.\n")


# ------------------------------------------------------------------ what an agent wrote stays text


def test_written_text_is_escaped_and_a_broken_file_is_named(agent: Agent) -> None:
    agent.start("Escapes")
    kept = agent.note("A note broken on the branch")
    agent.commit("start")
    git(agent.repo, "checkout", "-q", "-b", "odd")
    agent.store.layout.path(NOTE, kept["note_id"]).write_text("---\ntitle: [unclosed\n---\nbody\n")
    agent.note("<img src=x onerror=alert(1)> **loud** @octocat [x](javascript:alert(1)) a|b `code`")
    broken = agent.store.root / "notes" / "note_01KKKD66400R8RFZGY692YZ29A.md"
    broken.write_text("---\ntitle: [unclosed\n---\nbody\n")
    agent.commit("odd")
    out = diff(agent, "main..odd")
    line = next(line for line in out.splitlines() if "octocat" in line)
    assert not set("<>|`@[]") & set(re.sub(r"\\.", "", line)), line  # every markup character escaped
    assert r"\<img src=x onerror=alert(1)\> \*\*loud\*\* \@octocat \[x\](javascript:alert(1)) a\|b \`code\`" in line
    assert "**Could not read**" in out and "`notes/note_01KKKD66400R8RFZGY692YZ29A.md` (odd):" in out
    assert "Notes deleted" not in out and "A note broken" not in out  # unreadable is never read as deleted
    data = json.loads(diff(agent, "main..odd", "--format", "json"))
    bad = sorted(["notes/note_01KKKD66400R8RFZGY692YZ29A.md", f"notes/{kept['note_id']}.md"])
    assert sorted(b["path"] for b in data["unreadable"]) == bad


def test_a_file_left_mid_merge_is_named_with_its_whole_fix(agent: Agent) -> None:
    """Before, the line was cut at 200 characters, mid-sentence ("…delete the markers, then run")."""
    agent.start("A merge in progress")
    kept = agent.note("Kept on both sides")
    agent.commit("start")
    path = agent.store.layout.path(NOTE, kept["note_id"])
    text = path.read_text()
    path.write_text(text.replace("title:", "<<<<<<< HEAD\ntitle:", 1).replace("\n---", "\n=======\n>>>>>>> b\n---", 1))
    out = diff(agent, "HEAD")
    [line] = [line for line in out.splitlines() if line.startswith(f"- `notes/{kept['note_id']}.md`")]
    assert line.endswith("then run \\`codexmem resolve\\` to record the resolution"), line


def test_a_schema_changed_by_hand_says_what_changed(agent: Agent) -> None:
    at = agent.tick()
    service.add_channel(agent.store, "bugs", BUGS_SCHEMA, actor="cli", now=at)
    agent.commit("bugs")
    git(agent.repo, "checkout", "-q", "-b", "schema")
    path = agent.store.root / "channels/bugs/schema.yaml"
    schema = load_yaml(path.read_text("utf-8"))
    fields = {f["key"]: f for f in schema["fields"]}
    fields["owner"]["config"]["options"] = [o for o in fields["owner"]["config"]["options"] if o["value"] != "ren"]
    fields["severity"]["key"] = "sev"
    fields["area"]["is_required"] = True
    fields["title"]["config"]["max_length"] = 120
    fields["status"]["config"]["options"][0]["label"] = "Untriaged"
    schema["fields"].append({"key": "sprint", "label": "Sprint", "type": "text", "is_required": False})
    path.write_text(dump_yaml(schema), "utf-8")
    assert cli("resolve", "--store", str(agent.store.root))[0] == 0
    agent.commit("schema")

    out = diff(agent, "main..schema")
    assert out.split("#### channel Bugs\n", 1)[1] == (
        "**Schema changed**\n"
        "- `channels/bugs/schema.yaml` — Test User\n"
        "  - `title`: max length 200 → 120\n"
        "  - `status`: option new relabelled New → Untriaged\n"
        "  - `owner`: option ren (Ren) removed\n"
        "  - `sev`: renamed from severity\n"
        "  - `area`: is required false → true\n"
        "  - `sprint`: added (text)\n"
    )
    assert diff(agent, "main..schema", "--stat") == "channels: 1 changed\n"
    [entry] = json.loads(diff(agent, "main..schema", "--format", "json"))["changes"]
    assert entry["section"] == "channels_changed" and entry["changes"][3] == {
        "field": "sev",
        "change": "renamed from severity",
    }

    git(agent.repo, "checkout", "-q", "main")
    git(agent.repo, "checkout", "-q", "-b", "new-channel")
    service.add_channel(
        agent.store,
        "tasks",
        {"name": "Tasks", "fields": [{"key": "title", "label": "Title", "type": "text"}]},
        actor="cli",
        now=agent.tick(),
    )
    agent.commit("tasks")
    out = diff(agent, "main..new-channel")
    assert "#### channel Tasks\n**Channel added**\n- `tasks`, fields `title` — Test User\n" in out
