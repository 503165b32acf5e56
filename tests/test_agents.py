"""AGENTS.md: golden renderings, --check for CI, and installation modes that never clobber."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from codexmem.errors import CodexmemError, Warnings
from codexmem.render.agents import (
    BEGIN_MARKER,
    END_MARKER,
    MAX_AGENTS_BYTES,
    Plan,
    apply_overrides,
    install,
    project_agents_path,
    project_context,
    render_global,
    render_project,
    unresolved_placeholders,
)
from codexmem.store.store import Store

GOLDEN = Path(__file__).parent / "golden"
CONFIG = """\
format: 2
system: {id: sys_order_platform, name: order-platform}
projects:
  - id: proj_order_web
    name: order-web
    system: sys_order_platform
    remotes: ["git@github.com:example/order-web.git"]
    relations: [{project: proj_order_api, relation_type: calls_api_of}]
    preferred_tags: [validation, api]
  - id: proj_order_api
    name: order-api
    system: sys_order_platform
"""


@pytest.fixture
def store(tmp_path: Path) -> Store:
    root = tmp_path / "store"
    root.mkdir()
    (root / "codexmem.yaml").write_text(CONFIG)
    return Store(root)


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "codexmem", *args], capture_output=True, text=True, check=False)


def test_project_rendering_matches_golden(store: Store) -> None:
    text = render_project(project_context(store, "proj_order_web"))
    assert text == (GOLDEN / "agents_order_web.md").read_text("utf-8")
    assert len(text.encode()) < MAX_AGENTS_BYTES // 4
    assert unresolved_placeholders(text) == []


def test_related_free_project_and_global_match_golden(store: Store) -> None:
    text = render_project(project_context(store, "proj_order_api"))
    assert text == (GOLDEN / "agents_order_api.md").read_text("utf-8")
    assert "No related projects are declared" in text
    assert render_global() == (GOLDEN / "agents_global.md").read_text("utf-8")


def test_rendering_is_stable_instruction_text(store: Store) -> None:
    first = render_project(project_context(store, "proj_order_web"))
    # Writing memory must not change AGENTS.md: it carries no session state or handoff contents.
    from store_fixtures import session_model

    from codexmem.models.records import ScopeRef
    from codexmem.store.layout import SESSION

    scope = ScopeRef(system_id="sys_order_platform", project_id="proj_order_web", workspace_id="ws_order_web_main")
    with store.transaction("cli:test") as txn:
        txn.put(SESSION, session_model(scope=scope), event_type="created", changed=[])
    assert render_project(project_context(store, "proj_order_web")) == first


def test_unknown_values_stay_visible_as_placeholders(store: Store) -> None:
    ctx = project_context(store, "proj_order_api")
    ctx.system_name = "<system-name>"
    assert unresolved_placeholders(render_project(ctx)) == ["<system-name>"]


def test_overrides_apply_for_one_render(store: Store) -> None:
    ctx = apply_overrides(
        project_context(store, "proj_order_web"),
        project_name="web",
        related_repositories=["order-api", "order-worker", "order-api"],
        preferred_tags=[" go ", "go", "mcp"],
        allow_related_project_memory=False,
    )
    text = render_project(ctx)
    assert "- Project name: web" in text
    assert "order-worker" in text and text.count("- order-api") == 1
    assert "`go`, `mcp`." in text
    assert "off by default" in text
    assert "- Project name: order-web" in render_project(project_context(store, "proj_order_web"))


def test_cli_check_detects_drift(store: Store, tmp_path: Path) -> None:
    out = tmp_path / "AGENTS.md"
    args = ["agents", "--store", str(store.root), "--project", "proj_order_web", "--out", str(out)]
    assert run_cli(*args).returncode == 0
    assert run_cli(*args, "--check").returncode == 0
    out.write_text("# Ours\n\n" + out.read_text() + "hand edit\n")  # outside the block: people's text
    assert run_cli(*args, "--check").returncode == 0
    out.write_text(out.read_text().replace("order-web", "order-wbe", 1))  # inside the block: drift
    result = run_cli(*args, "--check")
    assert result.returncode == 1
    assert "the codexmem block differs" in result.stderr


def test_cli_says_when_codex_would_not_read_the_block(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Codex reads the first 32 KiB of the AGENTS.md files from the repository root down, and an
    AGENTS.override.md instead of the AGENTS.md beside it: a block past either was written, and
    checked, as if Codex read it."""
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    repo = tmp_path / "repo"
    (repo / "services" / "api").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    agents = repo / "AGENTS.md"
    args = ["agents", "--store", str(store.root), "--project", "proj_order_web"]
    agents.write_text("# Our rules\n\n" + "Keep handlers small and tested.\n" * 30)
    short = run_cli(*args, "--out", str(agents), "--mode", "append")
    assert short.returncode == 0 and short.stderr == ""  # read whole: nothing to say

    agents.write_text("# Our rules\n\n" + "Keep handlers small and tested.\n" * 1100)  # 35 KB of a person's text
    long = run_cli(*args, "--out", str(agents), "--mode", "append")
    check = run_cli(*args, "--out", str(agents), "--check")
    reach = agents.read_text().index(END_MARKER) + len(END_MARKER)
    expected = f"the codexmem block ends {reach:,} bytes into the AGENTS.md files Codex reads, past the 32,768"
    assert long.returncode == 0 and f"codexmem agents: note: {expected}" in long.stderr
    assert check.returncode == 0 and check.stdout.endswith("up to date\n") and expected in check.stderr
    assert "(project_doc_max_bytes, Codex's default)" in check.stderr
    (codex_home / "config.toml").write_text("project_doc_max_bytes = 65536\n")  # raised, as the note advises
    assert run_cli(*args, "--out", str(agents), "--check").stderr == ""
    (codex_home / "config.toml").write_text("project_doc_max_bytes = 20000\n")
    lowered = run_cli(*args, "--out", str(agents), "--check")
    assert f"past the 20,000 it reads (project_doc_max_bytes, set in {codex_home / 'config.toml'})" in lowered.stderr
    (codex_home / "config.toml").unlink()

    nested = repo / "services" / "api" / "AGENTS.md"  # read after the root's file, in the same budget
    agents.write_text("# Our rules\n\n" + "Keep handlers small and tested.\n" * 1000)
    above = agents.stat().st_size
    below = run_cli(*args, "--out", str(nested))
    assert below.returncode == 0 and f"({above:,} of them in the AGENTS.md files of the folders above)" in below.stderr

    agents.write_text("# Our rules\n")
    assert run_cli(*args, "--out", str(agents), "--mode", "append").stderr == ""
    (repo / "AGENTS.override.md").write_text("# Local rules\n")
    overridden = run_cli(*args, "--out", str(agents), "--check")
    assert overridden.returncode == 0
    assert f"Codex reads {repo / 'AGENTS.override.md'} instead of AGENTS.md in that folder" in overridden.stderr
    assert run_cli(*args, "--out", str(repo / "AGENTS.override.md"), "--mode", "append").stderr == ""


def test_cli_needs_a_project_when_several_are_declared(store: Store) -> None:
    result = run_cli("agents", "--store", str(store.root))
    assert result.returncode == 2
    assert "proj_order_web" in result.stderr
    mistyped = run_cli("agents", "--store", str(store.root), "--project", "proj_order_wbe")
    assert mistyped.returncode == 2
    assert "project proj_order_wbe is not declared in codexmem.yaml (declared projects: " in mistyped.stderr
    assert "proj_order_web" in mistyped.stderr


def test_safe_mode_never_touches_an_existing_file(tmp_path: Path) -> None:
    target = tmp_path / "AGENTS.md"
    target.write_bytes(b"# Ours\r\nkeep me\r\n")
    warnings = Warnings()
    result = install([Plan("project", target, "# codexmem\n")], "safe", warnings)
    assert result["written_files"] == []
    assert result["skipped_files"][0]["path"] == str(target)
    assert warnings.codes() == ["WARN_EXISTING_AGENTS_SKIPPED"]
    assert target.read_bytes() == b"# Ours\r\nkeep me\r\n"


def test_append_three_times_leaves_one_block_and_keeps_the_rest(tmp_path: Path) -> None:
    target = tmp_path / "AGENTS.md"
    original = "# Team rules\n\nBe kind.  \n"
    target.write_text(original)
    for content in ("# v1\n", "# v2\n", "# v3\n"):
        install([Plan("project", target, content)], "append", Warnings())
    text = target.read_text()
    assert text.count(BEGIN_MARKER) == 1 and text.count(END_MARKER) == 1
    assert text.startswith(original)
    assert "# v3" in text and "# v1" not in text and "# v2" not in text
    # Text after the block is kept byte for byte too.
    target.write_text(text + "trailing notes\n")
    install([Plan("project", target, "# v4\n")], "append", Warnings())
    assert target.read_text().endswith(END_MARKER + "\ntrailing notes\n")


@pytest.mark.parametrize(
    "mention",
    [
        f"The memory sits between `{BEGIN_MARKER}` and `{END_MARKER}`; do not edit it.\n",
        f"x {BEGIN_MARKER} y\n",
        f"```\nx {BEGIN_MARKER}\n{END_MARKER} y\n```\n",
        f"The block looks like this:\n\n```markdown\n{BEGIN_MARKER}\n# Memory\n{END_MARKER}\n```\n",
        f"~~~~\n{BEGIN_MARKER}\n```\n{END_MARKER}\n~~~~\n",  # a ``` inside a ~~~~ fence closes nothing
    ],
)
def test_markers_named_in_a_persons_text_are_text_not_a_block(tmp_path: Path, mention: str) -> None:
    """The markers count alone on their lines only: a sentence naming them got the block put in
    its middle, and the words after a marker on its line were deleted."""
    target = tmp_path / "AGENTS.md"
    original = "# Team rules\n\n" + mention
    target.write_text(original)
    for content in ("# v1\n", "# v2\n"):
        install([Plan("project", target, content)], "append", Warnings())
    text = target.read_text()
    assert text.startswith(original) and text.endswith(f"{BEGIN_MARKER}\n# v2\n{END_MARKER}\n")
    assert "# v1" not in text


def test_a_block_at_the_top_of_a_file_with_a_byte_order_mark_is_found(tmp_path: Path) -> None:
    target = tmp_path / "AGENTS.md"
    target.write_bytes(f"\ufeff{BEGIN_MARKER}\n# v1\n{END_MARKER}\n\nmine\n".encode())
    install([Plan("project", target, "# v2\n")], "append", Warnings())
    assert target.read_bytes() == f"\ufeff{BEGIN_MARKER}\n# v2\n{END_MARKER}\n\nmine\n".encode()


def test_a_long_file_is_written_back_whole(tmp_path: Path) -> None:
    """The file was read up to 256 KiB and written back so: a team's long AGENTS.md lost its end."""
    target = tmp_path / "AGENTS.md"
    rest = "".join(f"Rule {n}: keep the build green, always and everywhere.\n" for n in range(8000))
    target.write_text(f"{BEGIN_MARKER}\n# v1\n{END_MARKER}\n{rest}")
    assert len(target.read_bytes()) > 8 * MAX_AGENTS_BYTES
    install([Plan("project", target, "# v2\n")], "append", Warnings())
    assert target.read_text() == f"{BEGIN_MARKER}\n# v2\n{END_MARKER}\n{rest}"


def test_overwrite_and_placeholder_warning(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "AGENTS.md"
    warnings = Warnings()
    result = install([Plan("project", target, "- System name: <system-name>\n")], "overwrite", warnings)
    assert result["written_files"] == [{"path": str(target), "target": "project", "mode": "overwrite"}]
    assert "WARN_PLACEHOLDERS_UNRESOLVED" in warnings.codes()


def test_symlinked_agents_file_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.md"
    elsewhere.write_text("secret\n")
    target = tmp_path / "AGENTS.md"
    os.symlink(elsewhere, target)
    with pytest.raises(CodexmemError) as info:
        install([Plan("project", target, "x\n")], "overwrite", Warnings())
    assert info.value.code == "ERR_AGENTS_WRITE_DENIED"
    assert elsewhere.read_text() == "secret\n"


def test_cli_writes_and_checks_an_agents_md_linked_to_a_file_of_the_repository(store: Store, tmp_path: Path) -> None:
    """``AGENTS.md -> CLAUDE.md``, one text for two agents: the block goes into CLAUDE.md, the link stays."""
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "CLAUDE.md").write_text("# Rules\n")
    link = repo / "AGENTS.md"
    link.symlink_to("CLAUDE.md")
    args = ["agents", "--store", str(store.root), "--project", "proj_order_web", "--out", str(link)]
    done = run_cli(*args, "--mode", "append")
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert done.stdout == f"appended the codexmem block to {repo / 'CLAUDE.md'} ({link} links to it)\n"
    assert link.is_symlink() and (repo / "CLAUDE.md").read_text().startswith("# Rules\n\n" + BEGIN_MARKER)
    checked = run_cli(*args, "--check")
    assert (checked.returncode, checked.stderr) == (0, "") and "up to date" in checked.stdout, checked.stderr
    (repo / "inner").mkdir()
    (repo / "inner" / "AGENTS.md").symlink_to(repo / ".git" / "config")
    config = (repo / ".git" / "config").read_bytes()
    refused = run_cli(*args[:-1], str(repo / "inner" / "AGENTS.md"), "--mode", "append")
    assert refused.returncode == 2 and "inside a .git folder" in refused.stderr, refused.stderr
    assert (repo / ".git" / "config").read_bytes() == config


def test_project_target_needs_a_git_work_tree(tmp_path: Path) -> None:
    (tmp_path / "not-a-repo").mkdir()
    with pytest.raises(CodexmemError) as info:
        project_agents_path(str(tmp_path / "not-a-repo"))
    assert info.value.code == "ERR_INVALID_TARGET"
    with pytest.raises(CodexmemError) as info:
        project_agents_path(str(tmp_path / "not-there"))
    assert info.value.code == "ERR_INVALID_INPUT" and info.value.fields == [
        {
            "field": "cwd",
            "message": f"{tmp_path / 'not-there'} is not a folder on this machine: send the folder the agent works in",
        }
    ]
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    assert project_agents_path(str(repo / "src")) == repo / "AGENTS.md"


@pytest.mark.parametrize(
    "stray",
    [
        f"{BEGIN_MARKER}\nMY OWN NOTES: never force-push\n",  # its end line deleted by hand
        f"MY OWN NOTES: never force-push\n{END_MARKER}\n",
        f"{END_MARKER}\nMY OWN NOTES: never force-push\n{BEGIN_MARKER}\n",
    ],
)
def test_a_file_whose_markers_make_no_block_is_refused_and_its_text_kept(
    store: Store, tmp_path: Path, stray: str
) -> None:
    """A begin marker whose end was deleted: `agents --out` advised --mode append, which added a
    block after it, and the next plain run replaced everything from the stray marker on."""
    target = tmp_path / "AGENTS.md"
    original = "# Team rules\n" + stray
    target.write_text(original)
    runs = [
        run_cli("--store", str(store.root), "agents", "--project", "proj_order_web", "--out", str(target), *mode)
        for mode in ((), ("--mode", "append"), ())
    ]
    for done in runs:
        assert done.returncode == 2, done.stdout + done.stderr
        assert "not one of each in that order" in done.stderr and "delete the stray marker by hand" in done.stderr
    with pytest.raises(CodexmemError) as refused:
        install([Plan("project", target, "# codexmem\n")], "append", Warnings())
    assert refused.value.code == "ERR_AGENTS_WRITE_DENIED"
    assert target.read_text() == original
    overwritten = run_cli(
        "--store", str(store.root), "agents", "--project", "proj_order_web", "--out", str(target), "--mode", "overwrite"
    )
    assert overwritten.returncode == 0, "overwrite replaces the whole file, as asked"


def test_agents_of_a_store_of_no_project_names_both_ways_out(tmp_path: Path) -> None:
    """A shared store declares no project: the refusal named --project only, not --global."""
    root = tmp_path / "shared"
    root.mkdir()
    (root / "codexmem.yaml").write_text("format: 2\n")
    done = run_cli("--store", str(root), "agents")
    assert done.returncode == 2
    assert "name the project with --project (declared projects: none), or write the global" in done.stderr
    assert "~/.codex/AGENTS.md with --global" in done.stderr
    assert run_cli("--store", str(root), "agents", "--global").returncode == 0
