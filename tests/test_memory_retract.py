"""Review actions (issue 15, item 3), with a real store in a real repository: a reviewer
retracts an agent's note from the command line; agents are never served it again; ``check``
warns (never fails) about what still refers to it, naming the fix; and ``check`` warns about a
note naming a file its repository never held."""

from __future__ import annotations

import contextlib
import html
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from memory_fixtures import call, mcp_client, project_with_store, saved_note
from store_fixtures import git

from codexmem.cli.main import EXIT_USAGE, main
from codexmem.render.site import build_site
from codexmem.store.store import Store

pytestmark = pytest.mark.anyio
REASON = "wrong: the gateway already retries"


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return project_with_store(tmp_path / "shop", {"src/pay.py": "def pay():\n    return 1\n"})


async def save(client: Any, boot: dict[str, Any], title: str, **extra: Any) -> dict[str, Any]:
    return await saved_note(client, boot, title, type="decision", content=f"{title}: payment retries.", **extra)


async def test_a_retracted_note_is_kept_never_served_and_check_still_passes(repo: Path) -> None:
    store = repo / ".codexmem"
    async with mcp_client(store) as client:
        boot = (await call(client, "memory_bootstrap_session", cwd=str(repo)))["data"]
        old = await save(client, boot, "Retry payments three times")
        new = await save(client, boot, "Retry payments with backoff")
        moved = await call(
            client,
            "memory_set_status",
            id=old["note_id"],
            kind="note",
            status="superseded",
            expected_version=old["version"],
            superseded_by=new["note_id"],
        )
        assert moved["ok"], moved
        handoff = await call(
            client,
            "memory_save_handoff",
            scope=boot["scope"],
            session_id=boot["session"]["session_id"],
            kind="final",
            task="Payment retries",
            summary="Backoff chosen.",
            next_steps=["Ship it"],
            status="open",
            related_note_ids=[new["note_id"]],
        )
        assert handoff["ok"], handoff

    code, out, err = cli("retract", new["note_id"], "--reason", REASON, "--store", str(store))
    assert (code, err) == (0, ""), err
    assert f"retracted note {new['note_id']} (Retry payments with backoff), was active" in out
    text = next(store.rglob(f"{new['note_id']}.md")).read_text()
    assert "status:\n  retracted" in text and REASON in text

    code, out, _ = cli("check", "--store", str(store))
    assert code == 0, out  # warnings only: CI passes right after a retraction
    hid = handoff["data"]["handoff"]["handoff_id"]
    assert f"superseded_by: note {new['note_id']} was retracted ({REASON})" in out
    assert f"`codexmem retract {old['note_id']} --reason TEXT`" in out
    assert f"related_note_ids: note {new['note_id']} was retracted ({REASON})" in out
    assert f"`codexmem retract {hid} --reason TEXT`" in out

    async with mcp_client(store) as client:
        boot = (await call(client, "memory_bootstrap_session", cwd=str(repo)))["data"]
        served = [n["note_id"] for n in boot["recent_notes"]]
        assert new["note_id"] not in served
        found = (await call(client, "memory_search", scope=boot["scope"], query="payment retries"))["data"]
        assert [r["id"] for r in found["results"]] == [old["note_id"]]  # superseded is still found; retracted not
        recent = (await call(client, "memory_get_recent", scope=boot["scope"]))["data"]
        assert new["note_id"] not in [n["note_id"] for n in recent["notes"]]
        # Asked for by id, it is refused, saying why, and none of its words come with the refusal.
        got = await call(client, "memory_get_note", id=new["note_id"], kind="note")
        assert got["error"]["code"] == "ERR_RECORD_NOT_FOUND" and "was retracted" in got["error"]["message"]
        assert "backoff" not in json.dumps(got).lower()

        # The tool retracts too, with a reason; the seed's shape (no reason) stays valid.
        current = (await call(client, "memory_get_note", id=hid, kind="handoff"))["data"]["record"]
        done = await call(
            client,
            "memory_set_status",
            id=hid,
            kind="handoff",
            status="retracted",
            expected_version=current["version"],
            reason="rests on a retracted note",
        )
        assert done["ok"] and done["data"]["record"]["status"] == "retracted", done
        boot = (await call(client, "memory_bootstrap_session", cwd=str(repo)))["data"]
        assert boot["latest_handoff"] is None
    # Done as advised, the advice goes (it told to retract the retracted handoff again, which fails).
    code, out, _ = cli("check", "--store", str(store))
    assert code == 0 and f"retract {hid}" not in out, out

    # The site keeps it for people, struck through with the reason.
    site = repo / "_site"
    build_site(Store(store), site, search=False)
    page = (site / "notes" / new["note_id"] / "index.html").read_text()
    assert '<h1 data-pagefind-meta="title" class="retracted">Retry payments with backoff</h1>' in page
    assert f"<strong>Retracted</strong>: {html.escape(REASON)}" in page
    listed = (site / "projects" / boot["scope"]["project_id"] / "notes" / "index.html").read_text()
    assert re.search(rf'href="[^"]*{new["note_id"]}/" class="retracted">', listed)
    assert not re.search(rf'href="[^"]*{old["note_id"]}/" class="retracted">', listed)


async def test_retract_refuses_what_it_cannot_do_in_one_line(repo: Path) -> None:
    store = repo / ".codexmem"
    async with mcp_client(store) as client:
        boot = (await call(client, "memory_bootstrap_session", cwd=str(repo)))["data"]
        note = await save(client, boot, "Retry payments")
    cases = [
        (["retract", "sess_01J0000000000000000000000", "--reason", "x"], "must be a note_... or handoff_... id"),
        (["retract", "note_01J00000000000000000000000", "--reason", "x"], "does not exist"),
        (["retract", note["note_id"], "--reason", "  "], "--reason: must say why"),
        (["retract", note["note_id"]], "the following arguments are required: --reason"),
        # Before: 301 characters ended in an internal error; an ESC or a line break was stored,
        # then printed raw by check.
        (["retract", note["note_id"], "--reason", "r" * 301], "--reason: must be at most 300 characters"),
        (["retract", note["note_id"], "--reason", "a\nb"], "--reason: must be one line of text"),
        (["retract", note["note_id"], "--reason", "red \x1b[31m"], "--reason: must be one line of text"),
    ]
    for argv, expected in cases:
        code, _, err = cli(*argv, "--store", str(store))
        assert code == EXIT_USAGE and expected in err, (argv, err)
        assert "Traceback" not in err
    assert cli("retract", note["note_id"], "--reason", "wrong", "--store", str(store))[0] == 0
    code, _, err = cli("retract", note["note_id"], "--reason", "again", "--store", str(store))
    assert code == EXIT_USAGE and f"note {note['note_id']} is already retracted: nothing to do" in err, err


async def test_check_warns_about_a_file_the_repository_never_held(repo: Path) -> None:
    store = repo / ".codexmem"
    async with mcp_client(store) as client:
        boot = (await call(client, "memory_bootstrap_session", cwd=str(repo)))["data"]
        await save(client, boot, "Payment module", file_paths=["src/pay.py", "src/payment.py"])
    git(repo, "rm", "-q", "src/pay.py")  # gone since: stale's news, not check's
    git(repo, "commit", "-q", "-m", "drop pay")
    code, out, _ = cli("check", "--store", str(store))
    assert code == 0, out
    assert "file_paths[1]: src/payment.py is not in the repository at HEAD" in out
    assert "src/pay.py is not" not in out


async def test_notes_of_a_deleted_session_name_the_fix_and_the_fix_works(repo: Path) -> None:
    """A session's file deleted and the deletion recorded: its notes were errors ("session_id …
    does not exist") that said nothing of what to do."""
    store = repo / ".codexmem"
    async with mcp_client(store) as client:
        boot = (await call(client, "memory_bootstrap_session", cwd=str(repo)))["data"]
        await save(client, boot, "Payment module")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "memory")
    session = next(store.rglob(f"{boot['session']['session_id']}.yaml"))
    session.unlink()
    assert cli("resolve", "--store", str(store))[0] == 0
    code, out, _ = cli("check", "--store", str(store))
    assert code == 1 and f"session_id {boot['session']['session_id']} does not exist: restore" in out, out
    assert "`git checkout REV -- PATH`" in out and "then run `codexmem resolve`" in out
    git(repo, "checkout", "HEAD", "--", str(session.relative_to(repo)))
    assert cli("resolve", "--store", str(store))[0] == 0
    code, out, _ = cli("check", "--store", str(store))
    assert code == 0 and "0 errors, 0 warnings" in out, out
