"""The shipped pre-commit hooks (.pre-commit-hooks.yaml), run by pre-commit itself on a temporary repository.

``pre-commit try-repo`` clones a repository of hooks at a commit and pip-installs it into a fresh
environment (``language: python``), as a user's ``pre-commit install`` does. The hooks' repository
here is a snapshot of this source tree (committed files and uncommitted changes alike), so the test
checks the code under test, from a clean clone or a work tree. Its environment is installed from a
folder of wheels built once (``pip wheel``: codexmem, its dependencies and its build backend) with
``PIP_NO_INDEX``: no index is asked during the hooks' install, which takes about 20 s instead of 40.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from review_fixtures import project_with_memory
from store_fixtures import GIT_ENV, REPO_ROOT, git

pytestmark = pytest.mark.slow
HOOKS = REPO_ROOT / ".pre-commit-hooks.yaml"


def source_snapshot(dest: Path) -> Path:
    """A git repository holding this source tree as it is now, committed (what ``try-repo`` clones)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO_ROOT,
        env=GIT_ENV,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for rel in filter(None, (name.decode() for name in listed)):
        source = REPO_ROOT / rel
        if source.is_file() and not source.is_symlink():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / rel)
    git(dest, "init", "-q", "-b", "main")
    commit_all_as(dest, "snapshot")
    return dest


def commit_all_as(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=Test", "-c", "user.email=test@example.com", "commit", "-q", "-m", message)


@pytest.fixture(scope="module")
def hooks_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, dict[str, str]]:
    """The snapshot, its commit, and the environment that installs it from prebuilt wheels only."""
    snapshot = source_snapshot(tmp_path_factory.mktemp("hooks-repo"))
    wheels = tmp_path_factory.mktemp("wheels")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--wheel-dir", str(wheels), str(snapshot), "hatchling"],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert built.returncode == 0, f"could not build the wheels pre-commit installs from: {built.stderr[-2000:]}"
    find_links = " ".join(filter(None, (str(wheels), os.environ.get("PIP_FIND_LINKS", ""))))
    env = {
        **GIT_ENV,
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": find_links,
        "PRE_COMMIT_HOME": str(tmp_path_factory.mktemp("pre-commit-home")),
        "PRE_COMMIT_COLOR": "never",
    }
    env.pop("CODEXMEM_STORE", None)
    env.pop("VIRTUAL_ENV", None)
    head = git(snapshot, "rev-parse", "HEAD").stdout.strip()
    return snapshot, head, env


def try_repo(hooks: tuple[Path, str, dict[str, str]], project: Path, *hook: str) -> subprocess.CompletedProcess[str]:
    """``pre-commit try-repo`` of the snapshot at its commit, on every file of ``project``."""
    snapshot, head, env = hooks
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(snapshot), *hook, "--ref", head, "--all-files"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )


def test_the_hooks_file_declares_both_hooks_installed_from_the_repository() -> None:
    hooks = {h["id"]: h for h in yaml.safe_load(HOOKS.read_text("utf-8"))}
    assert set(hooks) == {"codexmem-check", "codexmem-agents"}
    for hook in hooks.values():
        assert hook["language"] == "python" and hook["pass_filenames"] is False
    assert hooks["codexmem-check"]["entry"] == "codexmem check"
    assert hooks["codexmem-agents"]["entry"].startswith("codexmem agents --check --out AGENTS.md")


def test_both_hooks_pass_on_a_valid_store(hooks_repo: tuple[Path, str, dict[str, str]], tmp_path: Path) -> None:
    project = project_with_memory(tmp_path / "shop")
    done = try_repo(hooks_repo, project)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("codexmem check...") and line.endswith("Passed") for line in lines), done.stdout
    assert any(line.startswith("codexmem agents --check...") and line.endswith("Passed") for line in lines)


def test_a_broken_record_and_a_stale_agents_md_fail_with_codexmem_messages(
    hooks_repo: tuple[Path, str, dict[str, str]], tmp_path: Path
) -> None:
    project = project_with_memory(tmp_path / "shop")
    note = next((project / ".codexmem" / "notes").glob("note_*.md"))
    note.write_text(note.read_text("utf-8").replace("importance:\n  4\n", "importance:\n  99\n"), "utf-8")
    agents = project / "AGENTS.md"
    agents.write_text(
        agents.read_text("utf-8").replace("# Project memory", "# Project memory, edited by hand"), "utf-8"
    )
    git(project, "add", "-A")
    done = try_repo(hooks_repo, project)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("codexmem check...") and line.endswith("Failed") for line in lines), done.stdout
    assert any(line.startswith("codexmem agents --check...") and line.endswith("Failed") for line in lines)
    rel = f".codexmem/notes/{note.name}"
    assert f"{rel}: error: importance" in done.stdout or f"{note.name}: error: importance" in done.stdout, done.stdout
    assert "check FAILED" in done.stdout
    assert "AGENTS.md: the codexmem block differs from the rendering; run `codexmem agents --out AGENTS.md`" in (
        done.stdout
    )
