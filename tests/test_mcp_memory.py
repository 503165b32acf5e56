"""The memory tools through the real MCP server and client, on real stores and real repositories."""

from __future__ import annotations

import json
import os
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from memory_fixtures import NOW, answer_bytes, call, make_repo, mcp_client, session_in
from store_fixtures import git

from codexmem.check import check_store
from codexmem.cli.main import main
from codexmem.envelope import MAX_ANSWER_BYTES
from codexmem.errors import Warnings
from codexmem.memory import handoffs, notes
from codexmem.models.records import ScopeRef
from codexmem.store.gitsetup import driver_problem_in_clone
from codexmem.store.init import ignored_in_clone, init_store
from codexmem.store.layout import SESSION
from codexmem.store.store import Store

REMOTE = "git@github.com:example/order-web.git"
MEMORY_TOOLS = {
    "memory_bootstrap_session",
    "memory_resolve_scope",
    "memory_start_session",
    "memory_save_note",
    "memory_save_handoff",
    "memory_search",
    "memory_get_recent",
    "memory_get_note",
    "memory_set_status",
    "memory_end_session",
    "memory_save_import",
    "memory_save_imported_note",
    "memory_install_agents",
}
# Tools that may overwrite something: a status move rewrites a record, install_agents may overwrite a file.
DESTRUCTIVE = {"memory_set_status", "memory_install_agents"}
READ_ONLY = {"memory_resolve_scope", "memory_search", "memory_get_recent", "memory_get_note"}

pytestmark = pytest.mark.anyio


async def bootstrap(client: Client, cwd: Path, **args: Any) -> dict[str, Any]:
    envelope = await call(client, "memory_bootstrap_session", cwd=str(cwd), **args)
    assert envelope["ok"], envelope
    data: dict[str, Any] = envelope["data"]
    data["warning_codes"] = [w["code"] for w in envelope["warnings"]]
    return data


async def note(client: Client, boot: dict[str, Any], **fields: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "type": "decision",
        "title": "Use generated enums",
        "content": "Read them.",
        "importance": 4,
    }
    values.update(fields)
    return await call(
        client, "memory_save_note", scope=boot["scope"], session_id=boot["session"]["session_id"], **values
    )


async def handoff(client: Client, boot: dict[str, Any], **fields: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "kind": "final",
        "task": "Fix order validation",
        "summary": "Enums still diverge.",
        "next_steps": ["Confirm backend values"],
        "status": "open",
        "files_touched": ["src/order/validation.ts"],
    }
    values.update(fields)
    return await call(
        client, "memory_save_handoff", scope=boot["scope"], session_id=boot["session"]["session_id"], **values
    )


# ------------------------------------------------------------------ listing and start-up


async def test_tools_publish_precise_flat_schemas_and_honest_annotations(store_path: Path) -> None:
    async with mcp_client(store_path) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools if t.name.startswith("memory_")}
    assert set(listed) == MEMORY_TOOLS
    for name, tool in listed.items():
        text = json.dumps(tool.input_schema)
        assert "$ref" not in text and "anyOf" not in text, f"{name}: Codex shows $ref and anyOf as plain strings"
        assert tool.input_schema["additionalProperties"] is False
        assert tool.annotations is not None and tool.annotations.read_only_hint is (name in READ_ONLY)
        assert tool.annotations.destructive_hint is (None if name in READ_ONLY else name in DESTRUCTIVE)
    search = listed["memory_search"].input_schema
    assert search["required"] == ["query", "scope"]
    assert search["properties"]["limit"]["maximum"] == 20 and search["properties"]["limit"]["default"] == 10
    assert search["properties"]["intent"]["enum"] == [
        "continuation",
        "decision",
        "bugfix",
        "discovery",
        "recent_activity",
        "general",
    ]
    assert search["properties"]["scope"]["required"] == ["system_id", "project_id", "workspace_id"]
    save = listed["memory_save_note"].input_schema["properties"]
    assert (save["importance"]["minimum"], save["importance"]["maximum"]) == (1, 5)
    assert save["title"]["maxLength"] == 200 and save["content"]["maxLength"] == 6000
    assert save["tags"]["maxItems"] == 20 and save["file_paths"]["maxItems"] == 50
    assert listed["memory_bootstrap_session"].input_schema["required"] == ["cwd"]
    assert listed["memory_end_session"].input_schema["properties"]["status"]["enum"] == ["ended", "paused"]


async def test_without_a_store_every_tool_names_codexmem_init_then_an_empty_store_bootstraps(
    tmp_path: Path, web: Path
) -> None:
    path = tmp_path / "not-yet"
    async with mcp_client(path) as client:
        missing = await call(client, "memory_bootstrap_session", cwd=str(web))
        searched = await call(client, "memory_get_note", id="note_01J0000000000000000000000Z", kind="note")
        for envelope in (missing, searched):
            assert envelope["error"]["code"] == "ERR_STORAGE_UNAVAILABLE"
            assert "codexmem init" in envelope["error"]["message"] and envelope["warnings"] == []
        init_store(path, cwd=tmp_path, shared=True)
        boot = await bootstrap(client, web, task="Fix order validation")
    assert boot["latest_handoff"] is None and boot["session"]["status"] == "active"
    assert boot["recent_notes"] == [] and boot["related_notes"] == [] and boot["other_open_handoffs"] == []
    assert boot["warning_codes"] == ["WARN_NO_PRIOR_HANDOFF", "WARN_NO_PRIOR_NOTES"]
    assert boot["startup_brief"] == {
        "current_task": "Fix order validation",
        "last_known_state": None,
        "important_decisions": [],
        "open_todos": [],
        "risks": [],
        "touched_files": [],
        "related_context": [],
    }


async def test_a_store_path_given_to_the_server_that_holds_none_is_explained_as_the_cli_does(
    store_path: Path, web: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Codex's config naming the repository, or a typo: the server answered "run `codexmem init
    --store <that path>`", which would make a second store, and never said where the path came from."""
    typo = store_path.parent / ".codexmen"
    cases = {
        "repository": (web, "", "(given by --store) is a git repository, not a store"),
        "typo": (typo, "", "(given by --store): the folder does not exist"),
        "environment": (typo, str(typo), "(from $CODEXMEM_STORE): the folder does not exist; set CODEXMEM_STORE"),
    }
    for name, (path, env, says) in cases.items():
        if env:
            monkeypatch.setenv("CODEXMEM_STORE", env)
        else:
            monkeypatch.delenv("CODEXMEM_STORE", raising=False)
        async with mcp_client(path) as client:
            answer = await call(client, "memory_bootstrap_session", cwd=str(web))
        assert answer["error"]["code"] == "ERR_STORAGE_UNAVAILABLE", answer
        assert says in answer["error"]["message"], (name, answer["error"]["message"])


# ------------------------------------------------------------------ continuity


async def test_the_next_session_in_a_workspace_gets_the_previous_handoff(store_path: Path, web: Path) -> None:
    async with mcp_client(store_path) as client:
        first = await bootstrap(client, web, task="Fix order validation")
        await note(client, first, title="Keep enums aligned", content="Generated metadata is the source.")
        await note(client, first, type="todo", title="Retest submit flow", importance=3)
        saved = await handoff(client, first, risks=["Drafts may keep old values"])
        second = await bootstrap(client, web)
    assert second["session"]["session_id"] != first["session"]["session_id"]
    assert second["latest_handoff"]["handoff_id"] == saved["data"]["handoff"]["handoff_id"]
    assert second["warning_codes"] == []
    assert [n["title"] for n in second["recent_notes"]] == ["Keep enums aligned", "Retest submit flow"]
    brief = second["startup_brief"]
    assert brief["current_task"] == "Fix order validation" and brief["last_known_state"] == "Enums still diverge."
    assert brief["important_decisions"] == ["Generated metadata is the source."]
    assert brief["open_todos"] == ["Confirm backend values", "Retest submit flow"]
    assert brief["risks"] == ["Drafts may keep old values"] and brief["touched_files"] == ["src/order/validation.ts"]


async def test_a_second_clone_falls_back_to_the_projects_open_handoff(
    store_path: Path, web: Path, tmp_path: Path
) -> None:
    clone = make_repo(tmp_path / "elsewhere" / "order-web", remote="https://github.com/Example/order-web.git")
    async with mcp_client(store_path) as client:
        first = await bootstrap(client, web)
        await note(client, first, title="Backend enum is canonical")
        saved = await handoff(client, first)
        other = await bootstrap(client, clone)
    assert other["scope"]["project_id"] == first["scope"]["project_id"]
    assert other["scope"]["workspace_id"] != first["scope"]["workspace_id"]
    assert other["latest_handoff"]["handoff_id"] == saved["data"]["handoff"]["handoff_id"]
    assert [n["title"] for n in other["recent_notes"]] == ["Backend enum is canonical"]


async def test_an_unpaired_surrogate_in_any_argument_is_refused_naming_it(store_path: Path, web: Path) -> None:
    """The wire refuses such a line (mcp.inbound); an in-process call reached the YAML writer and
    answered an internal error (found by the escape fuzz: a scope's branch_name of "\\ud800")."""
    async with mcp_client(store_path) as client:
        boot = (await call(client, "memory_bootstrap_session", cwd=str(web)))["data"]
        answer = await call(client, "memory_start_session", scope={**boot["scope"], "branch_name": "\ud800"}, task="")
    assert answer["error"]["code"] == "ERR_INVALID_INPUT", answer
    assert [f["field"] for f in answer["error"]["fields"]] == ["(arguments)"]
    assert "unpaired UTF-16 surrogate" in answer["error"]["message"]


@pytest.mark.parametrize("problem", ["store ignored", "merge driver gone"])
async def test_a_clone_problem_is_told_at_bootstrap_until_setup(tmp_path: Path, problem: str) -> None:
    """A teammate's clone that ignores the store (``.*`` in its own excludes: every new note would
    be ignored), or whose merge driver points at a program that is gone (a moved checkout: an agent's
    ``git merge`` would drop edits). The first bootstrap says so and names the fix; after ``codexmem
    setup``, a new server's bootstrap says nothing."""
    repo = make_repo(tmp_path / "order-web", remote=REMOTE)
    init_store(repo / ".codexmem", cwd=repo)
    if problem == "store ignored":
        (repo / ".git" / "info").mkdir(exist_ok=True)
        (repo / ".git" / "info" / "exclude").write_text(".*\n")  # this clone's rule, not the repository's
        code, start = "WARN_STORE_IGNORED", "git in this clone ignores new files of the memory store by the rule `.*`"
    else:
        gone = f"{tmp_path}/moved/.venv/bin/python"
        git(repo, "config", "merge.codexmem.driver", f"{gone} -m codexmem merge-file %O %A %B %P")
        code, start = "WARN_MERGE_DRIVER_BROKEN", f"the merge driver registered in this clone runs {gone}, which is not"
    for asked_once in (ignored_in_clone, driver_problem_in_clone):
        asked_once.cache_clear()  # a new server process
    async with mcp_client(repo / ".codexmem") as client:
        boot = await call(client, "memory_bootstrap_session", cwd=str(repo), task="t")
    [said] = [w["message"] for w in boot["warnings"] if w["code"] == code]
    assert said.startswith(start) and "`codexmem setup`" in said, said
    assert main(["--store", str(repo / ".codexmem"), "setup"]) == 0
    for asked_once in (ignored_in_clone, driver_problem_in_clone):
        asked_once.cache_clear()  # the next server process
    async with mcp_client(repo / ".codexmem") as client:
        again = await call(client, "memory_bootstrap_session", cwd=str(repo), task="t")
    assert code not in [w["code"] for w in again["warnings"]]


async def test_an_absolute_path_inside_the_work_tree_is_stored_relative_and_anchored(tmp_path: Path) -> None:
    """Agents name files by absolute path (their working folder is absolute): inside the project's
    work tree such a path is stored as every checkout reads it, and anchored; outside it is refused."""
    repo = make_repo(tmp_path / "order-web", remote=REMOTE)
    init_store(repo / ".codexmem", cwd=repo)
    (repo / "src").mkdir()
    (repo / "src" / "pay.ts").write_text("export {}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "code")
    async with mcp_client(repo / ".codexmem") as client:
        boot = (await call(client, "memory_bootstrap_session", cwd=str(repo / "src"), task="t"))["data"]
        where = {"scope": boot["scope"], "session_id": boot["session"]["session_id"]}
        saved = await call(
            client,
            "memory_save_note",
            **where,
            type="bugfix",
            title="Pay retries",
            content="c",
            importance=3,
            file_paths=[f"{repo}/src/pay.ts", f"{repo}/src/../README.md", "src/pay.ts"],
        )
        handoff = await call(
            client,
            "memory_save_handoff",
            **where,
            kind="final",
            status="open",
            task="t",
            summary="s",
            next_steps=["n"],
            files_touched=[f"{repo}/src/pay.ts"],
        )
        outside = await call(
            client,
            "memory_save_note",
            **where,
            type="bugfix",
            title="x",
            content="c",
            importance=3,
            file_paths=[f"{tmp_path}/elsewhere.ts"],
        )
    assert saved["ok"], saved
    assert saved["data"]["note"]["file_paths"] == ["src/pay.ts", "README.md"]
    note = (repo / ".codexmem" / "notes" / f"{saved['data']['note']['note_id']}.md").read_text()
    assert str(repo) not in note and "src/pay.ts" in note  # the anchor holds the relative path too
    assert handoff["data"]["handoff"]["files_touched"] == ["src/pay.ts"]
    assert outside["error"]["fields"][0]["field"] == "file_paths[0]"
    assert "must be relative to the repository root" in outside["error"]["message"]


async def test_an_abandoned_session_is_recovered_by_the_next_bootstrap(store_path: Path, web: Path) -> None:
    async with mcp_client(store_path) as client:
        crashed = await bootstrap(client, web, task="Migrate checkout")
        await note(client, crashed, type="todo", title="Finish the checkout migration", importance=4)
    async with mcp_client(store_path, now=NOW + timedelta(hours=3)) as client:
        later = await bootstrap(client, web)
        write = await note(client, crashed, title="Late write")
    assert later["recovered_sessions"] == [crashed["session"]["session_id"]]
    assert later["warning_codes"] == ["WARN_RECOVERY_HANDOFF_USED"]
    rescue = later["latest_handoff"]
    assert (rescue["kind"], rescue["source"], rescue["task"]) == ("recovery", "recovery_generated", "Migrate checkout")
    assert rescue["next_steps"] == ["Finish the checkout migration"]
    assert write["ok"], "a recovered session is closed, not ended: a late write is still kept"
    session = Store(store_path).read_file(SESSION, crashed["session"]["session_id"])
    assert session is not None and session["status"] == "recovered"


# ------------------------------------------------------------------ writes refused


async def test_writes_are_checked_against_their_session(store_path: Path, web: Path, tmp_path: Path) -> None:
    api = make_repo(tmp_path / "work" / "order-api", remote="git@github.com:example/order-api.git")
    async with mcp_client(store_path) as client:
        boot = await bootstrap(client, web)
        other = await bootstrap(client, api)
        foreign = await call(
            client,
            "memory_save_note",
            scope=boot["scope"],
            session_id=other["session"]["session_id"],
            type="bugfix",
            title="t",
            content="c",
            importance=3,
        )
        no_steps = await handoff(client, boot, next_steps=[" "])
        empty_steps = await handoff(client, boot, next_steps=[])
        ended = await call(client, "memory_end_session", session_id=boot["session"]["session_id"])
        after_end = await note(client, boot)
    assert foreign["error"]["code"] == "ERR_INVALID_SCOPE"
    assert no_steps["error"]["code"] == "ERR_INVALID_INPUT" and no_steps["error"]["fields"][0]["field"] == "next_steps"
    assert empty_steps["error"]["fields"][0]["field"] == "next_steps"
    assert ended["data"]["session"]["status"] == "ended"
    assert after_end["error"]["code"] == "ERR_INVALID_STATE"


async def test_a_session_is_started_only_in_a_scope_the_store_knows(
    store_path: Path, web: Path, tmp_path: Path
) -> None:
    """A mistyped id made a session whose notes no bootstrap or search of the real project read."""
    fresh = make_repo(tmp_path / "work" / "order-admin", remote="git@github.com:example/order-admin.git")
    async with mcp_client(store_path) as client:
        boot = await bootstrap(client, web)
        short = {k: boot["scope"][k] for k in ("system_id", "project_id", "workspace_id")}
        typo_project = {**short, "project_id": short["project_id"] + "x"}
        typo_workspace = {**short, "workspace_id": short["workspace_id"] + "x"}
        answers = {
            "project": await call(client, "memory_start_session", scope=typo_project),
            "workspace": await call(client, "memory_start_session", scope=typo_workspace),
            "root elsewhere": await call(
                client, "memory_start_session", scope={**typo_project, "workspace_root": str(fresh)}
            ),
        }
        known = await call(client, "memory_start_session", scope=short)  # the ids of a workspace with sessions
        resolved = (await call(client, "memory_resolve_scope", cwd=str(fresh)))["data"]["scope"]
        first = await call(client, "memory_start_session", scope=resolved)  # a new folder: resolved from its root
        # Whatever resolved it: hints change the system, an explicit remote the project of a repository without one.
        bare = make_repo(tmp_path / "work" / "no-remote")
        hinted = [
            (await call(client, "memory_resolve_scope", cwd=str(where), **hint))["data"]["scope"]
            for where, hint in (
                (fresh, {"system_name_hint": "Zed"}),
                (fresh, {"project_name_hint": "Bee"}),
                (bare, {"repo_remote": "git@github.com:example/no-remote.git"}),
            )
        ]
        started = [await call(client, "memory_start_session", scope=scope) for scope in hinted]
    for name, field in (("project", "scope.project_id"), ("workspace", "scope.workspace_id")):
        error = answers[name]["error"]
        assert error["code"] == "ERR_INVALID_SCOPE" and [f["field"] for f in error["fields"]] == [field], name
        assert "pass the scope memory_bootstrap_session or memory_resolve_scope returned" in error["message"]
        assert error["message"].startswith(
            f"{field} {typo_project['project_id'] if name == 'project' else typo_workspace['workspace_id']}"
        )
    assert answers["root elsewhere"]["error"]["code"] == "ERR_INVALID_SCOPE"
    assert known["ok"] and first["ok"], (known, first)
    assert all(answer["ok"] for answer in started), started
    assert first["data"]["session"]["scope"]["project_id"] == resolved["project_id"]
    sessions = sorted((store_path / "sessions").glob("*.yaml"))
    assert len(sessions) == 6, "the refused ones wrote nothing"


async def test_status_moves_legal_illegal_and_stale(store_path: Path, web: Path) -> None:
    async with mcp_client(store_path) as client:
        boot = await bootstrap(client, web)
        note_id = (await note(client, boot))["data"]["note"]["note_id"]
        handoff_id = (await handoff(client, boot))["data"]["handoff"]["handoff_id"]

        async def move(rid: str, kind: str, status: str, version: int) -> dict[str, Any]:
            return await call(client, "memory_set_status", id=rid, kind=kind, status=status, expected_version=version)

        resolved = await move(note_id, "note", "resolved", 1)
        stale = await move(note_id, "note", "superseded", 1)
        back = await move(note_id, "note", "active", 2)
        superseded = await move(note_id, "note", "superseded", 2)
        completed = await move(handoff_id, "handoff", "completed", 1)
        reopened = await move(handoff_id, "handoff", "open", 2)
        record = await call(client, "memory_get_note", id=note_id, kind="note")
        after = await bootstrap(client, web)
    assert resolved["data"]["record"]["status"] == "resolved" and resolved["data"]["record"]["version"] == 2
    assert stale["error"]["code"] == "ERR_VERSION_CONFLICT" and stale["error"]["current_version"] == 2
    assert back["error"]["code"] == "ERR_INVALID_STATE" and back["error"]["current_status"] == "resolved"
    assert superseded["data"]["record"]["version"] == 3 and completed["data"]["previous_status"] == "open"
    assert reopened["error"]["code"] == "ERR_INVALID_STATE"
    assert record["data"]["record"]["status"] == "superseded" and record["data"]["record"]["version"] == 3
    assert after["latest_handoff"] is None and after["recent_notes"] == [], "closed and superseded memory steps back"


async def test_bad_arguments_are_answered_with_an_envelope_naming_each_field(store_path: Path, web: Path) -> None:
    async with mcp_client(store_path) as client:
        boot = await bootstrap(client, web)
        base = {
            "scope": boot["scope"],
            "session_id": boot["session"]["session_id"],
            "type": "bugfix",
            "title": "t",
            "content": "c",
        }
        answers = {
            "unknown": await call(client, "memory_save_note", **base, importance=3, colour="red"),
            "string": await call(client, "memory_save_note", **base, importance="4"),
            "range": await call(client, "memory_save_note", **base, importance=9),
            "enum": await call(client, "memory_save_note", **{**base, "type": "idea"}, importance=3),
            "missing": await call(client, "memory_search", scope=boot["scope"]),
            "limit": await call(client, "memory_get_recent", scope=boot["scope"], limit=50),
            "nested": await call(client, "memory_search", query="x", scope={"system_id": boot["scope"]["system_id"]}),
            "path": await call(client, "memory_save_note", **base, importance=3, file_paths=["ok", "/etc/passwd"]),
            "id": await call(client, "memory_get_note", id="note_../../etc", kind="note"),
            # No file's path holds a NUL: before, an absolute one answered an internal error, and a
            # handoff stored ``a\0`` as its file.
            "nul": await call(client, "memory_save_note", **base, importance=3, file_paths=["src/a.py\0"]),
            "nul_absolute": await call(
                client, "memory_save_note", **base, importance=3, file_paths=["ok", f"{web}/src/a.py\0"]
            ),
            "nul_handoff": await handoff(client, boot, files_touched=["a\0"]),
            # States only codexmem or a reviewer gives: before, a note was created retracted.
            "created_retracted": await call(client, "memory_save_note", **base, importance=3, status="retracted"),
            "created_recovered": await call(
                client, "memory_save_note", **base, importance=3, source="recovery_generated"
            ),
            "recovery_handoff": await handoff(client, boot, kind="recovery"),
            "retracted_handoff": await handoff(client, boot, status="retracted"),
        }
    fields = {k: [f["field"] for f in v["error"]["fields"]] for k, v in answers.items()}
    assert all(v["ok"] is False and v["error"]["code"] == "ERR_INVALID_INPUT" for v in answers.values())
    assert fields == {
        "unknown": ["colour"],
        "string": ["importance"],
        "range": ["importance"],
        "enum": ["type"],
        "missing": ["query"],
        "limit": ["limit"],
        "nested": ["scope.project_id", "scope.workspace_id"],
        "path": ["file_paths[1]"],
        "id": ["id"],
        "nul": ["file_paths[0]"],
        "nul_absolute": ["file_paths[1]"],
        "nul_handoff": ["files_touched[0]"],
        "created_retracted": ["status"],
        "created_recovered": ["source"],
        "recovery_handoff": ["kind"],
        "retracted_handoff": ["status"],
    }
    assert "NUL" in answers["nul_absolute"]["error"]["message"]
    assert "'active' or 'resolved'" in answers["created_retracted"]["error"]["fields"][0]["message"]
    assert "'final' or 'checkpoint'" in answers["recovery_handoff"]["error"]["fields"][0]["message"]
    assert answers["unknown"]["error"]["fields"][0]["message"] == "unknown argument"


async def test_control_characters_are_refused_naming_the_field_and_nothing_is_written(
    store_path: Path, web: Path
) -> None:
    """An escape sequence in a title or a body was written raw into the record file, where the
    terminal of whoever ran ``cat`` or ``git diff`` on it would run it; a branch name took a NUL."""
    async with mcp_client(store_path) as client:
        boot = await bootstrap(client, web)
        before = sorted(p.relative_to(store_path) for p in store_path.rglob("*") if ".cache" not in p.parts)
        events = [p.read_bytes() for p in sorted((store_path / "events").rglob("*.jsonl"))]
        answers = {
            "title": await note(client, boot, title="Red \x1b[31malert"),
            "content": await note(client, boot, content="fine\n\tindented\nthen \x9b2J"),
            "next_steps[1]": await handoff(client, boot, next_steps=["ok", "bell \x07"]),
            "scope.branch_name": await call(
                client, "memory_start_session", scope={**boot["scope"], "branch_name": "a\x00b"}, task="t"
            ),
        }
        after = sorted(p.relative_to(store_path) for p in store_path.rglob("*") if ".cache" not in p.parts)
        events_after = [p.read_bytes() for p in sorted((store_path / "events").rglob("*.jsonl"))]
        kept = await note(client, boot, title="Tabs\tand lines", content="line one\r\nline two\n\tcode")
    for field, answer in answers.items():
        assert answer["ok"] is False and answer["error"]["code"] == "ERR_INVALID_INPUT", answer
        assert [f["field"] for f in answer["error"]["fields"]] == [field]
    assert answers["title"]["error"]["message"] == (
        "title: must not hold control characters (U+001B at character 5); tabs and line breaks are fine"
    )
    assert answers["scope.branch_name"]["error"]["fields"][0]["message"] == "must not hold a NUL character"
    assert after == before and events_after == events
    assert kept["ok"], kept


@pytest.mark.parametrize(
    ("cwd", "says"),
    [
        ("relative/path", "must be an absolute path"),
        ("/nonexistent/zzz", "is not a folder on this machine"),
        ("WEB\0junk", "must not hold a NUL character"),
    ],
)
async def test_a_cwd_that_names_no_folder_is_refused_and_writes_no_session(
    store_path: Path, web: Path, cwd: str, says: str
) -> None:
    """Before, each was taken: a relative path against the server's own folder, and a folder that
    is not there as a project of its own (``proj_zzz_…``), each bootstrap writing a session to it."""
    cwd = cwd.replace("WEB", str(web))
    async with mcp_client(store_path) as client:
        boot = await call(client, "memory_bootstrap_session", cwd=cwd, task="t")
        resolved = await call(client, "memory_resolve_scope", cwd=cwd)
        inside = await call(client, "memory_bootstrap_session", cwd=str(web / "src" / "not-yet-made"), task="t")
    for envelope in (boot, resolved):
        assert envelope["error"]["code"] == "ERR_INVALID_INPUT", envelope
        assert envelope["error"]["fields"][0]["field"] == "cwd" and says in envelope["error"]["message"]
    assert inside["ok"], "a folder not made yet inside the work tree is the work tree's"
    assert len(Store(store_path).fresh_index().select(SESSION)) == 1


async def test_a_body_quoting_git_conflict_markers_is_refused_unless_indented(store_path: Path, web: Path) -> None:
    """Before, the note was saved and ``codexmem check`` then failed the store: the file read as an
    unsettled merge. Refused, naming the line; indented, the same text is a code block and saves."""
    quoted = "Git showed:\n<<<<<<< HEAD\nv1\n=======\nv2\n>>>>>>> main\nKeep v2."
    indented = "Git showed:\n\n    <<<<<<< HEAD\n    v1\n    =======\n    v2\n    >>>>>>> main\n\nKeep v2."
    async with mcp_client(store_path) as client:
        boot = await bootstrap(client, web)
        refused = await note(client, boot, content=quoted)
        refused_handoff = await handoff(client, boot, summary=quoted)
        saved = await note(client, boot, content=indented)
    assert refused["error"]["fields"][0]["field"] == "content"
    assert "line 2 starts with '<<<<<<<'" in refused["error"]["message"]
    assert refused_handoff["error"]["fields"][0]["field"] == "summary"
    assert saved["ok"], saved
    assert [f for f in check_store(store_path).findings if f.level == "error"] == []


async def test_asking_for_more_notes_never_shows_fewer(store_path: Path, web: Path) -> None:
    """The brief sums up the notes asked for, and grew into their room: with 20 large notes saved,
    ``max_notes`` 5 showed 3 and 20 showed 2."""
    async with mcp_client(store_path) as client:
        boot = await bootstrap(client, web)
        for i in range(20):
            saved = await note(
                client,
                boot,
                type=("decision", "bugfix", "discovery", "constraint", "todo")[i % 5],
                title=f"Payment retry decision number {i} " + "x" * 150,
                content=(f"payment retry note {i} " + "lorem ipsum dolor sit amet " * 300)[: 2500 + (i % 5) * 700],
                importance=5,
                tags=[f"tag{j}-" + "t" * 40 for j in range(20)],
                file_paths=[f"src/mod{j}/file_{i}.py" for j in range(10)],
            )
            assert saved["ok"], saved
        shown = {n: len((await bootstrap(client, web, max_notes=n))["recent_notes"]) for n in (1, 3, 5, 10, 20)}
    assert shown[1] == 1 and shown[3] == 3
    assert shown[3] <= shown[5] <= shown[10] <= shown[20], shown


# ------------------------------------------------------------------ search


async def test_search_finds_prefixes_keeps_same_titles_and_stays_in_its_project(
    store_path: Path, web: Path, tmp_path: Path
) -> None:
    api = make_repo(tmp_path / "work" / "order-api", remote="git@github.com:example/order-api.git")
    async with mcp_client(store_path) as client:
        boot = await bootstrap(client, web)
        elsewhere = await bootstrap(client, api)
        first = await note(client, boot, title="Payment validation", content="Client side enum check.")
        second = await note(client, boot, title="Payment validation", content="Server side alias rejection.")
        await note(client, elsewhere, title="Payment validation", content="The other project's note.")
        prefix = await call(client, "memory_search", query="pay", scope=boot["scope"])
        none = await call(client, "memory_search", query="kubernetes", scope=boot["scope"], include_handoffs=True)
        recent = await call(client, "memory_get_recent", scope=boot["scope"])
    ids = [r["id"] for r in prefix["data"]["results"]]
    assert sorted(ids) == sorted([first["data"]["note"]["note_id"], second["data"]["note"]["note_id"]])
    assert prefix["warnings"] == [] and all(r["scope"] == boot["session"]["scope"] for r in prefix["data"]["results"])
    assert none == {
        "ok": True,
        "data": {"results": [], "has_more": False, "truncated": False, "next_cursor": None},
        "warnings": [],
    }
    assert {n["scope"]["project_id"] for n in recent["data"]["notes"]} == {boot["scope"]["project_id"]}


# ------------------------------------------------------------------ budget


def _long_store(store_path: Path, web: Path, clone: Path) -> tuple[dict[str, Any], str, str]:
    """100 notes of 5,900+ characters with long titles and tags, in two workspaces of one project."""
    store = Store(store_path)
    tags = [f"tag-{i:02d}-" + "k" * 24 for i in range(20)]
    paths = [f"src/module_{i}/component_{i}.ts" for i in range(5)]
    biggest = ""
    for cwd in (web, clone):
        scope, sid = session_in(store, cwd)
        ref = ScopeRef(**{k: scope[k] for k in ("system_id", "project_id", "workspace_id")})
        for i in range(50):
            content = f"Payment note {i}. " + ("Long content about payment enum validation. " * 140)[:5_930]
            title = f"Payment decision {i:02d} " + "t" * 180
            saved = notes.save_note(
                store,
                NOW + timedelta(seconds=i),
                Warnings(),
                scope=ref,
                session_id=sid,
                note_type="decision",
                title=title,
                content=content,
                importance=3 + i % 3,
                tags=tags,
                file_paths=paths,
            )
            biggest = saved["note"]["note_id"]
    return scope, sid, biggest


async def test_the_largest_answer_of_every_tool_fits_the_budget(store_path: Path, web: Path, tmp_path: Path) -> None:
    clone = make_repo(tmp_path / "clone" / "order-web", remote=REMOTE)
    scope, sid, note_id = _long_store(store_path, web, clone)
    steps = [f"Step {i}: " + "s" * 180 for i in range(20)]
    long_handoff = {
        "scope": scope,
        "session_id": sid,
        "kind": "checkpoint",
        "task": "Payment " + "t" * 480,
        "summary": "Payment summary. " + "u" * 2_500,
        "next_steps": steps,
        "status": "open",
        "risks": ["r" * 300] * 1,
        "files_touched": [f"src/f{i}.ts" for i in range(20)],
    }
    async with mcp_client(store_path) as client:
        answers = {"save_handoff": await call(client, "memory_save_handoff", **long_handoff)}
        for i in range(4):
            await call(client, "memory_save_handoff", **{**long_handoff, "task": f"Task {i} " + "t" * 400})
        answers["bootstrap"] = await call(
            client,
            "memory_bootstrap_session",
            cwd=str(web),
            task="t" * 500,
            max_notes=20,
            max_handoffs=5,
            include_related_projects=True,
            related_reason="r" * 300,
        )
        boot = answers["bootstrap"]["data"]
        answers["resolve"] = await call(client, "memory_resolve_scope", cwd=str(web), project_name_hint="p" * 300)
        answers["start"] = await call(
            client, "memory_start_session", scope=scope, task="t" * 500, branch_name="b" * 300
        )
        answers["search"] = await call(
            client, "memory_search", query="payment", scope=scope, limit=20, include_handoffs=True
        )
        answers["recent"] = await call(client, "memory_get_recent", scope=scope, limit=20)
        answers["get_note"] = await call(client, "memory_get_note", id=note_id, kind="note")
        answers["save_note"] = await call(
            client,
            "memory_save_note",
            scope=scope,
            session_id=sid,
            type="discovery",
            title="n" * 200,
            content="c" * 5_990,
            importance=5,
            tags=[f"t{i}" + "x" * 40 for i in range(20)],
        )
        answers["set_status"] = await call(
            client, "memory_set_status", id=note_id, kind="note", status="resolved", expected_version=1
        )
        answers["end"] = await call(client, "memory_end_session", session_id=boot["session"]["session_id"])
    for name, envelope in answers.items():
        assert envelope["ok"], (name, envelope)
        assert answer_bytes(envelope) <= MAX_ANSWER_BYTES, name
    assert answers["get_note"]["data"]["record"]["content"].startswith("Payment note 49.")
    assert len(answers["get_note"]["data"]["record"]["content"]) >= 5_900
    for name, key in (("search", "results"), ("recent", "notes"), ("bootstrap", "recent_notes")):
        data = answers[name]["data"]
        assert data["truncated"] is True and data["has_more"] is True, name
        assert 0 < len(data[key]) < 20, name
    assert all(n["content_truncated"] for n in boot["recent_notes"])
    assert boot["latest_handoff"]["next_steps_truncated"] is True


async def test_a_search_cut_by_the_budget_pages_on_with_its_cursor(store_path: Path, web: Path, tmp_path: Path) -> None:
    """``has_more`` used to be a dead end: the results past the budget could not be reached. The
    cursor of each page leads to the next, and the pages together hold every match once."""
    clone = make_repo(tmp_path / "clone" / "order-web", remote=REMOTE)
    scope, sid, _ = _long_store(store_path, web, clone)
    store = Store(store_path)
    ref = ScopeRef(**{k: scope[k] for k in ("system_id", "project_id", "workspace_id")})
    for i in range(5):
        handoffs.save_handoff(
            store,
            NOW + timedelta(minutes=i),
            Warnings(),
            scope=ref,
            session_id=sid,
            kind="checkpoint",
            task=f"Payment handoff {i}",
            summary="Payment work in progress.",
            next_steps=["go on"],
            status="open",
        )
    everything = {p.stem for p in (store_path / "notes").rglob("*.md")}
    everything |= {p.stem for p in (store_path / "handoffs").rglob("*.md")}
    assert len(everything) == 105
    asked = {"query": "payment", "scope": scope, "limit": 20, "include_handoffs": True}
    seen: list[str] = []
    pages: list[dict[str, Any]] = []
    async with mcp_client(store_path) as client:
        cursor = ""
        while True:
            page = await call(client, "memory_search", **asked, **({"cursor": cursor} if cursor else {}))
            assert page["ok"], page
            assert answer_bytes(page) <= MAX_ANSWER_BYTES
            pages.append(page["data"])
            seen += [r["id"] for r in page["data"]["results"]]
            if not page["data"]["has_more"]:
                assert page["data"]["next_cursor"] is None
                break
            cursor = page["data"]["next_cursor"]
            assert len(pages) < 50, "the cursor moves on"
        other = await call(client, "memory_search", **{**asked, "query": "enum"}, cursor=pages[0]["next_cursor"])
        bent = await call(client, "memory_search", **asked, cursor="x" + pages[0]["next_cursor"])
        past = await call(client, "memory_search", **asked, cursor="9000.0." + pages[0]["next_cursor"].split(".", 2)[2])
    assert len(pages) > 5 and all(p["results"] for p in pages)  # about 10 results fit a page
    assert pages[0]["truncated"] is True
    assert len(seen) == len(set(seen)) and set(seen) == everything  # each match once, none missed
    assert [f["field"] for f in other["error"]["fields"]] == ["cursor"]
    assert "was given by a search with other arguments" in other["error"]["message"]
    assert [f["field"] for f in bent["error"]["fields"]] == ["cursor"]
    assert "must be a next_cursor of memory_search" in bent["error"]["message"]
    assert past["data"] == {"results": [], "has_more": False, "truncated": False, "next_cursor": None}


# ------------------------------------------------------------------ the seed's example flow


async def test_the_seed_example_flow_has_the_seed_shapes(store_path: Path, web: Path) -> None:
    async with mcp_client(store_path) as client:
        boot_env = await call(
            client,
            "memory_bootstrap_session",
            cwd=str(web),
            task="Continue fixing order submission validation",
            branch_name="fix/order-validation",
            repo_remote=REMOTE,
            include_related_projects=True,
            related_reason="Frontend validation depends on backend API contract",
            max_notes=5,
            max_handoffs=2,
        )
        resolved = await call(
            client,
            "memory_resolve_scope",
            cwd=str(web),
            branch_name="fix/order-validation",
            repo_remote=REMOTE,
            project_name_hint="order-web",
            system_name_hint="order-platform",
        )
        scope = resolved["data"]["scope"]
        started = await call(
            client,
            "memory_start_session",
            scope=scope,
            task="Continue fixing order submission validation",
            branch_name="fix/order-validation",
        )
        session = started["data"]["session"]
        short = {k: scope[k] for k in ("system_id", "project_id", "workspace_id")}
        saved = await call(
            client,
            "memory_save_note",
            scope=short,
            session_id=session["session_id"],
            type="bugfix",
            title="Order validation now uses generated backend enum list",
            content="Client-side validation now reads generated enum metadata instead of a stale manual list.",
            importance=4,
            tags=["validation", "frontend", "api"],
            file_paths=["src/order/validation.ts"],
        )
        note_id = saved["data"]["note"]["note_id"]
        handed = await call(
            client,
            "memory_save_handoff",
            scope=short,
            session_id=session["session_id"],
            kind="final",
            task="Fix order validation mismatch",
            summary="Frontend validation was updated to use generated enums.",
            completed=["Removed stale hard-coded payment enum list"],
            next_steps=["Run regression test"],
            open_questions=["Do older cached clients still submit legacy aliases?"],
            risks=["Draft restore flow may still inject old values."],
            files_touched=["src/order/validation.ts"],
            related_note_ids=[note_id],
            status="open",
        )
        found = await call(
            client,
            "memory_search",
            query="payment enum validation",
            scope=short,
            types=["decision", "bugfix"],
            min_importance=3,
            limit=5,
            include_handoffs=True,
            include_related_projects=False,
            intent="bugfix",
        )
        recent = await call(
            client,
            "memory_get_recent",
            scope=short,
            limit=3,
            include_handoffs=True,
            include_notes=True,
            include_related_projects=False,
        )
        got = await call(client, "memory_get_note", id=note_id, kind="note")
    boot = boot_env["data"]
    assert {"scope", "session", "latest_handoff", "recent_notes", "related_notes", "startup_brief"} <= set(boot)
    assert boot_env["warnings"][-1]["code"] == "WARN_RELATED_PROJECTS_SKIPPED"
    assert set(boot["startup_brief"]) == {
        "current_task",
        "last_known_state",
        "important_decisions",
        "open_todos",
        "risks",
        "touched_files",
        "related_context",
    }
    assert resolved["data"]["resolved_by"] == scope["resolved_by"] == "repo_remote"
    assert scope["project_name"] == "order-web" and scope["branch_name"] == "fix/order-validation"
    seed_session = {"session_id", "scope", "status", "task", "branch_name", "started_at", "version"}
    assert seed_session <= set(session) and session["scope"] == short
    seed_note = {
        "note_id",
        "scope",
        "session_id",
        "type",
        "title",
        "content",
        "importance",
        "status",
        "source",
        "created_at",
        "version",
        "tags",
        "file_paths",
        "updated_at",
    }
    assert seed_note <= set(saved["data"]["note"]) and saved["data"]["deduplicated"] is False
    assert saved["data"]["stored_at"] == saved["data"]["note"]["created_at"]
    assert saved["data"]["note"]["source"] == "codex_explicit" and saved["data"]["note"]["status"] == "active"
    seed_handoff = {
        "handoff_id",
        "scope",
        "session_id",
        "kind",
        "task",
        "summary",
        "next_steps",
        "status",
        "created_at",
    }
    assert seed_handoff <= set(handed["data"]["handoff"]) and handed["data"]["eligible_for_bootstrap"] is True
    assert handed["data"]["handoff"]["related_note_ids"] == [note_id] and handed["warnings"] == []
    results = found["data"]["results"]
    assert [r["kind"] for r in results] == ["note", "handoff"] and results[0]["id"] == note_id
    seed_result = {"kind", "id", "scope", "state", "title", "summary", "importance", "created_at", "version"}
    assert all(seed_result <= set(r) for r in results)
    assert set(recent["data"]) >= {"handoffs", "notes"} and recent["data"]["notes"][0]["note_id"] == note_id
    assert seed_handoff <= set(recent["data"]["handoffs"][0])
    assert got["data"]["record"] == saved["data"]["note"]


# ------------------------------------------------------------------ over stdio


async def test_the_server_over_stdio(store_path: Path, web: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "codexmem", "serve", "--store", str(store_path)], env=dict(os.environ)
    )
    async with Client(params, mode="legacy") as client:
        names = {t.name for t in (await client.list_tools()).tools}
        boot = await call(client, "memory_bootstrap_session", cwd=str(web))
        bad = await call(client, "memory_get_note", id="x", kind="note")
    assert names >= MEMORY_TOOLS
    assert boot["ok"] and boot["data"]["scope"]["resolved_by"] == "repo_remote"
    assert bad["error"]["code"] == "ERR_INVALID_INPUT"
