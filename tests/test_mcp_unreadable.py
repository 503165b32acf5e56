"""The agent sees what ``codexmem check`` sees (issue 18): a note broken by hand is warned about at
bootstrap, and reading or moving it says what is wrong, naming the file once.

The real server over real stdio (``python -m codexmem serve``), on a real store and repository.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from codexmem.errors import WARNING_CODES

pytestmark = pytest.mark.anyio


async def call(client: Client, name: str, **args: Any) -> dict[str, Any]:
    result = await client.call_tool(name, args)
    answer: dict[str, Any] = json.loads(result.content[0].text)  # type: ignore[union-attr]
    return answer


def server(store: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "codexmem", "serve", "--store", str(store)], env=dict(os.environ)
    )


async def test_bootstrap_warns_of_unreadable_files_and_reads_name_the_file_once(store_path: Path, web: Path) -> None:
    async with Client(server(store_path), mode="legacy") as client:
        boot = await call(client, "memory_bootstrap_session", cwd=str(web))
        assert "WARN_UNREADABLE_FILES" not in [w["code"] for w in boot["warnings"]]
        ids = []
        for n in range(5):
            saved = await call(
                client,
                "memory_save_note",
                session_id=boot["data"]["session"]["session_id"],
                scope=boot["data"]["scope"],
                type="decision",
                title=f"decision {n}",
                content="we chose Postgres",
                importance=4,
            )
            ids.append(saved["data"]["note"]["note_id"])
    for note_id in ids[:4]:  # four notes broken by hand
        path = store_path / "notes" / f"{note_id}.md"
        path.write_text(path.read_text().replace("title:\n  ", "title:\n  [unclosed ", 1))

    async with Client(server(store_path), mode="legacy") as client:
        boot = await call(client, "memory_bootstrap_session", cwd=str(web))
        got = await call(client, "memory_get_note", id=ids[0], kind="note")
        moved = await call(client, "memory_set_status", id=ids[1], kind="note", status="resolved", expected_version=1)
    assert boot["ok"]
    [warning] = [w for w in boot["warnings"] if w["code"] == "WARN_UNREADABLE_FILES"]
    shown = sorted(f"notes/{i}.md" for i in ids[:4])[:3]
    assert warning["message"] == (
        f"4 files in the store cannot be read and are left out of every answer ({', '.join(shown)} and 1 more); "
        "ask the user to run `codexmem check`, which says what is wrong"
    )
    assert [n["note_id"] for n in boot["data"]["recent_notes"]] == [ids[4]]
    for answer, note_id in ((got, ids[0]), (moved, ids[1])):
        error = answer["error"]
        rel = f"notes/{note_id}.md"
        assert error["code"] == "ERR_READ_FAILED"
        assert error["message"].startswith(f"{rel} cannot be used: line ")
        assert error["message"].count(note_id) == 1, error["message"]  # the path once, not twice
        assert error["message"].endswith("fix or remove the file (codexmem check lists every problem)")


def test_the_new_warning_is_a_known_code_and_in_the_readme() -> None:
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text("utf-8")
    assert "WARN_UNREADABLE_FILES" in WARNING_CODES
    for code in WARNING_CODES:
        assert f"`{code}`" in readme, code
