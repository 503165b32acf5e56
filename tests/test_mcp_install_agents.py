"""memory_install_agents through the real MCP server and client, on real repositories and a temporary HOME."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from memory_fixtures import call, mcp_client

from codexmem.render.agents import BEGIN_MARKER, END_MARKER
from codexmem.store.init import init_store

pytestmark = pytest.mark.anyio

REMOTE = "git@github.com:example/order-web.git"
HAND_WRITTEN = "# Team rules\n\nAlways run `make lint` before pushing.\n"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("HOME", str(path))
    return path


async def install(client: Client, **args: Any) -> dict[str, Any]:
    return await call(client, "memory_install_agents", **args)


def codes(envelope: dict[str, Any]) -> list[str]:
    return [w["code"] for w in envelope["warnings"]]


async def test_safe_mode_writes_new_files_and_never_touches_existing_ones(
    store_path: Path, web: Path, home: Path
) -> None:
    (web / "AGENTS.md").write_text(HAND_WRITTEN)
    async with mcp_client(store_path) as client:
        first = await install(client, target="both", mode="safe", cwd=str(web / "src" / ".."))
        second = await install(client, target="global", mode="safe")
    global_path = home / ".codex" / "AGENTS.md"
    assert first["data"]["written_files"] == [{"path": str(global_path), "target": "global", "mode": "safe"}]
    assert first["data"]["skipped_files"] == [
        {
            "path": str(web / "AGENTS.md"),
            "target": "project",
            "mode": "safe",
            "reason": "existing AGENTS.md was preserved in safe mode",
        },
    ]
    assert codes(first) == ["WARN_EXISTING_AGENTS_SKIPPED"]
    assert (web / "AGENTS.md").read_text() == HAND_WRITTEN
    assert global_path.read_text().startswith(BEGIN_MARKER + "\n#") and second["data"]["written_files"] == []
    assert [f["target"] for f in second["data"]["skipped_files"]] == ["global"]


async def test_append_three_times_leaves_one_block_and_the_rest_byte_for_byte(
    store_path: Path, web: Path, home: Path
) -> None:
    (web / "AGENTS.md").write_text(HAND_WRITTEN)
    sub = web / "src" / "order"
    sub.mkdir(parents=True)
    async with mcp_client(store_path) as client:
        answers = [await install(client, target="both", mode="append", cwd=str(sub)) for _ in range(3)]
        renamed = await install(client, target="project", mode="append", cwd=str(web), project_name="order-web-2")
    text = (web / "AGENTS.md").read_text()
    global_text = (home / ".codex" / "AGENTS.md").read_text()
    assert not (sub / "AGENTS.md").exists(), "the project file goes at the git root"
    assert text.startswith(HAND_WRITTEN) and text.count(BEGIN_MARKER) == text.count(END_MARKER) == 1
    assert global_text.startswith(BEGIN_MARKER) and global_text.count(END_MARKER) == 1
    assert "Project name: order-web-2" in text and "Project name: order-web\n" not in text
    assert [(f["target"], f["mode"]) for f in answers[0]["data"]["written_files"]] == [
        ("global", "append"),
        ("project", "append"),
    ]
    assert [a["data"]["written_files"] for a in answers[1:]] == [[], []]
    assert [f["reason"] for a in answers[1:] for f in a["data"]["skipped_files"]] == ["already up to date"] * 4
    assert renamed["data"]["written_files"][0]["path"] == str(web / "AGENTS.md")


async def test_an_agents_md_linked_to_a_file_of_the_repository_is_written_through_the_link(
    store_path: Path, web: Path, home: Path
) -> None:
    """``AGENTS.md -> CLAUDE.md`` (one text for two agents) and a dotfiles checkout's
    ``~/.codex/AGENTS.md``: the block goes into the file the link names, and the links stay."""
    (web / "CLAUDE.md").write_text(HAND_WRITTEN)
    (web / "AGENTS.md").symlink_to("CLAUDE.md")
    dotfiles = home / "dotfiles" / "codex"
    dotfiles.mkdir(parents=True)
    (dotfiles / "AGENTS.md").write_text("# Mine\n")
    (home / ".codex").mkdir()
    (home / ".codex" / "AGENTS.md").symlink_to(dotfiles / "AGENTS.md")
    async with mcp_client(store_path) as client:
        first = await install(client, target="both", mode="append", cwd=str(web))
        again = await install(client, target="both", mode="append", cwd=str(web))
    assert first["data"]["written_files"] == [
        {
            "path": str(home / ".codex" / "AGENTS.md"),
            "file": str(dotfiles / "AGENTS.md"),
            "target": "global",
            "mode": "append",
        },
        {"path": str(web / "AGENTS.md"), "file": str(web / "CLAUDE.md"), "target": "project", "mode": "append"},
    ]
    assert [f["reason"] for f in again["data"]["skipped_files"]] == ["already up to date"] * 2
    assert (web / "AGENTS.md").is_symlink() and (home / ".codex" / "AGENTS.md").is_symlink()
    text = (web / "CLAUDE.md").read_text()
    assert text.startswith(HAND_WRITTEN) and text.count(BEGIN_MARKER) == text.count(END_MARKER) == 1
    assert (dotfiles / "AGENTS.md").read_text().startswith("# Mine\n" + "\n" + BEGIN_MARKER)


async def test_a_link_out_of_the_repository_into_git_or_to_nothing_is_refused_naming_it(
    store_path: Path, web: Path, home: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere.md"
    outside.write_text("keep\n")
    cases = {
        outside: "that is outside",
        web / ".git" / "config": "it is inside a .git folder",
        web / "gone.md": "that does not exist",
    }
    for target, reason in cases.items():
        (web / "AGENTS.md").unlink(missing_ok=True)
        (web / "AGENTS.md").symlink_to(target)
        before = target.read_bytes() if target.exists() else None
        async with mcp_client(store_path) as client:
            answer = await install(client, target="both", mode="append", cwd=str(web))
        assert answer["error"]["code"] == "ERR_AGENTS_WRITE_DENIED", answer
        message = answer["error"]["message"]
        assert f"{web / 'AGENTS.md'} is a symbolic link to" in message and reason in message, message
        assert "point the link at one, or replace it by a file" in message
        assert (target.read_bytes() if target.exists() else None) == before
        assert not (home / ".codex").exists(), "nothing is written when one path is refused"


async def test_a_block_codex_would_not_read_is_written_and_said(store_path: Path, web: Path, home: Path) -> None:
    """Appended to a person's long AGENTS.md, the block lies past the 32 KiB Codex reads; beside an
    AGENTS.override.md, Codex reads the other file. Each is written as asked, with a warning."""
    (web / "AGENTS.md").write_text(HAND_WRITTEN + "Keep handlers small and tested.\n" * 1100)
    async with mcp_client(store_path) as client:
        long = await install(client, target="project", mode="append", cwd=str(web))
        (web / "AGENTS.md").write_text(HAND_WRITTEN)
        short = await install(client, target="project", mode="append", cwd=str(web))
        (web / "AGENTS.override.md").write_text("# Local rules\n")
        overridden = await install(client, target="project", mode="append", cwd=str(web))
    assert [f["target"] for f in long["data"]["written_files"]] == ["project"]
    [cut] = [w["message"] for w in long["warnings"] if w["code"] == "WARN_AGENTS_NOT_READ"]
    assert cut.startswith("the codexmem block ends ") and "past the 32,768 it reads (project_doc_max_bytes, " in cut
    assert "WARN_AGENTS_NOT_READ" not in codes(short)
    [other] = [w["message"] for w in overridden["warnings"] if w["code"] == "WARN_AGENTS_NOT_READ"]
    assert other.startswith(f"Codex reads {web / 'AGENTS.override.md'} instead of AGENTS.md")


@pytest.mark.parametrize("first", ["safe", "overwrite"])
async def test_an_append_after_a_safe_or_overwrite_install_replaces_its_block(
    store_path: Path, web: Path, home: Path, first: str
) -> None:
    """Safe and overwrite wrote the rendering without the markers: an append then added a second copy
    (41 lines, then 85), and `codexmem agents` refused such a file as having no codexmem block."""
    async with mcp_client(store_path) as client:
        written = await install(client, target="project", mode=first, cwd=str(web))
        once = (web / "AGENTS.md").read_text()
        again = await install(client, target="project", mode="append", cwd=str(web))
    text = (web / "AGENTS.md").read_text()
    assert written["data"]["written_files"] and again["data"]["written_files"] == []
    assert [f["reason"] for f in again["data"]["skipped_files"]] == ["already up to date"]
    assert text == once and text.count(BEGIN_MARKER) == text.count(END_MARKER) == 1


async def test_overwrite_replaces_the_file_with_the_rendering_and_overrides_apply(
    store_path: Path, web: Path, home: Path
) -> None:
    (web / "AGENTS.md").write_text(HAND_WRITTEN)
    async with mcp_client(store_path) as client:
        answer = await install(
            client,
            target="project",
            mode="overwrite",
            cwd=str(web),
            project_name="order-web",
            system_name="order-platform",
            related_repositories=["order-api", "order-worker", "order-api"],
            preferred_tags=["spec", "api", "go"],
            allow_related_project_memory=True,
        )
    text = (web / "AGENTS.md").read_text()
    assert answer["ok"] and answer["warnings"] == []
    assert HAND_WRITTEN not in text and text.startswith(BEGIN_MARKER) and text.endswith(END_MARKER + "\n")
    assert "- Project name: order-web" in text and "- System name: order-platform" in text
    assert "- order-api: related to\n- order-worker: related to" in text
    assert "`spec`, `api`, `go`" in text and "may be used for cross-repository work" in text


async def test_unknown_names_stay_visible_as_placeholders(tmp_path: Path, web: Path, home: Path) -> None:
    bare = tmp_path / "bare-store"
    init_store(bare, cwd=tmp_path, shared=True)  # no system declared
    async with mcp_client(bare) as client:
        answer = await install(client, target="project", mode="safe", cwd=str(web))
    assert codes(answer) == ["WARN_PLACEHOLDERS_UNRESOLVED"] and "<system-name>" in answer["warnings"][0]["message"]
    assert "- System name: <system-name>" in (web / "AGENTS.md").read_text()


async def test_a_declared_project_renders_from_the_store_config(web: Path, home: Path) -> None:
    store = web / ".codexmem"
    init_store(store, cwd=web, system_name="order-platform")
    async with mcp_client(store) as client:
        answer = await install(client, target="project", mode="safe", cwd=str(web), preferred_tags=["checkout"])
    text = (web / "AGENTS.md").read_text()
    assert answer["warnings"] == []
    assert "- Project name: order-web" in text and "- System name: order-platform" in text
    assert "`checkout`" in text


async def test_bad_targets_modes_and_paths_write_nothing(store_path: Path, tmp_path: Path, home: Path) -> None:
    outside = tmp_path / "not-a-repo"
    outside.mkdir()
    async with mcp_client(store_path) as client:
        answers = {
            "target": await install(client, target="everywhere", mode="safe"),
            "mode": await install(client, target="global", mode="replace"),
            "outside": await install(client, target="both", mode="overwrite", cwd=str(outside)),
            "etc": await install(client, target="project", mode="overwrite", cwd="/etc"),
            "no_cwd": await install(client, target="project", mode="safe"),
        }
    assert {k: v["error"]["code"] for k, v in answers.items()} == {
        "target": "ERR_INVALID_TARGET",
        "mode": "ERR_INVALID_TARGET",
        "outside": "ERR_INVALID_TARGET",
        "etc": "ERR_INVALID_TARGET",
        "no_cwd": "ERR_INVALID_INPUT",
    }
    assert [f["field"] for k in ("target", "mode", "outside", "no_cwd") for f in answers[k]["error"]["fields"]] == [
        "target",
        "mode",
        "cwd",
        "cwd",
    ]
    assert not (home / ".codex").exists(), "target both: nothing is written when the project path is refused"
    assert not (outside / "AGENTS.md").exists()


async def test_the_tool_is_announced_as_writing_and_possibly_destructive(store_path: Path) -> None:
    async with mcp_client(store_path) as client:
        tool = next(t for t in (await client.list_tools()).tools if t.name == "memory_install_agents")
    assert tool.annotations is not None
    assert (tool.annotations.read_only_hint, tool.annotations.destructive_hint) == (False, True)
    schema = tool.input_schema
    assert schema["required"] == ["target", "mode"] and schema["additionalProperties"] is False
    assert schema["properties"]["target"]["enum"] == ["global", "project", "both"]
    assert schema["properties"]["mode"]["enum"] == ["safe", "append", "overwrite"]
    assert schema["properties"]["allow_related_project_memory"] == {
        "type": "boolean",
        "description": "unset: as the store config says",
    }


@pytest.mark.parametrize(
    ("argument", "value", "field", "says"),
    [
        ("project_name", "P\u0000Q", "project_name", "NUL character"),
        ("system_name", "S\n# Hijack", "system_name", "one line"),
        ("system_name", "S <!-- codexmem:end --> tail", "system_name", "HTML comment"),
        ("preferred_tags", ["api", "x\n# injected heading"], "preferred_tags[1]", "one line"),
        ("related_repositories", ["<!-- codexmem:begin -->"], "related_repositories[0]", "HTML comment"),
    ],
)
async def test_a_name_that_would_write_more_than_itself_is_refused_and_nothing_written(
    store_path: Path, web: Path, home: Path, argument: str, value: Any, field: str, says: str
) -> None:
    """Before, each was written into AGENTS.md as sent: a NUL byte, a heading of its own, or a
    marker that cut codexmem's block short, so later installs left its old tail in the file."""
    (web / "AGENTS.md").write_text(HAND_WRITTEN)
    async with mcp_client(store_path) as client:
        refused = await install(client, target="project", mode="append", cwd=str(web), **{argument: value})
    assert refused["error"]["code"] == "ERR_INVALID_INPUT", refused
    assert refused["error"]["fields"] == [{"field": field, "message": refused["error"]["fields"][0]["message"]}]
    assert says in refused["error"]["message"]
    assert (web / "AGENTS.md").read_text() == HAND_WRITTEN


async def test_a_repositorys_own_store_writes_no_block_for_another_repository(tmp_path: Path, home: Path) -> None:
    """It wrote another repository's block naming that project with this store's system, which the
    other repository's own `agents --check` then failed."""
    from memory_fixtures import make_repo, project_with_store

    mine = project_with_store(tmp_path / "shop", {"a.txt": "a\n"})
    other = make_repo(tmp_path / "billing", remote="git@github.com:example/billing.git")
    async with mcp_client(mine / ".codexmem") as client:
        refused = await install(client, target="project", mode="append", cwd=str(other))
        own = await install(client, target="project", mode="append", cwd=str(mine))
    assert refused["error"]["code"] == "ERR_INVALID_TARGET" and [f["field"] for f in refused["error"]["fields"]] == [
        "cwd"
    ]
    assert "another repository than this store's" in refused["error"]["message"]
    assert not (other / "AGENTS.md").exists() and own["ok"] and (mine / "AGENTS.md").is_file()
