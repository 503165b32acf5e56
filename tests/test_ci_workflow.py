"""docs/ci.md's pull request workflow: its structure, and its codexmem steps run on a real repository.

The steps that run ``codexmem`` are taken from the document as written and run with bash in a clone
of a repository with two branches (``main`` and a feature branch that saved notes), the GitHub
expression ``${{ github.base_ref }}`` replaced by ``main``. Posting the comment needs GitHub and a
token: its structure is checked, it is not run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from review_fixtures import NOW, project_with_memory, save_notes
from store_fixtures import GIT_ENV, REPO_ROOT, commit_all, git

CI_DOC = REPO_ROOT / "docs" / "ci.md"
HOOKS = REPO_ROOT / ".pre-commit-hooks.yaml"
MARKER = "<!-- codexmem-diff -->"
FEATURE_TITLES = ["Refunds round half-cents to even", "The ledger export skips voided invoices"]


def workflows() -> list[dict[str, Any]]:
    """Every YAML block of docs/ci.md, parsed safely."""
    blocks = re.findall(r"^```yaml\n(.*?)^```", CI_DOC.read_text("utf-8"), flags=re.S | re.M)
    return [yaml.safe_load(block) for block in blocks]


def triggers(workflow: dict[str, Any]) -> Any:
    return workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` key as true


def review_workflow() -> dict[str, Any]:
    found = [w for w in workflows() if "pull_request" in (triggers(w) or {})]
    assert len(found) == 1, "docs/ci.md should hold exactly one pull request workflow"
    return found[0]


def steps() -> list[dict[str, Any]]:
    jobs = review_workflow()["jobs"]
    assert len(jobs) == 1
    return list(next(iter(jobs.values()))["steps"])


def codexmem_steps() -> list[dict[str, Any]]:
    """The steps that run codexmem (not its install, not the comment): what the test runs."""
    return [s for s in steps() if re.search(r"^codexmem ", s.get("run", ""), flags=re.M)]


def codexmem_commands(text: str) -> list[str]:
    """The codexmem command lines of a script."""
    return [line.strip() for line in text.splitlines() if line.strip().startswith("codexmem ")]


def test_the_workflow_checks_out_everything_and_installs_from_the_repository() -> None:
    workflow = review_workflow()
    assert triggers(workflow) == {"pull_request": None}
    assert workflow["permissions"] == {"contents": "read", "pull-requests": "write"}
    checkout = [s for s in steps() if s.get("uses", "").startswith("actions/checkout@")]
    assert len(checkout) == 1 and checkout[0]["with"]["fetch-depth"] == 0
    installs = [s["run"] for s in steps() if "pip install" in s.get("run", "")]
    assert installs == ['python -m pip install "git+https://github.com/OWNER/codexmem"']


def test_the_workflow_runs_check_agents_and_diff_against_the_base_branch() -> None:
    commands = [c for s in codexmem_steps() for c in codexmem_commands(s["run"])]
    assert commands == [
        "codexmem check",
        "codexmem agents --check --out AGENTS.md",
        'codexmem diff "origin/${{ github.base_ref }}...HEAD" > diff.md',
    ]


def test_the_comment_is_updated_by_its_marker_and_skipped_for_forks() -> None:
    post = [s for s in steps() if "gh api" in s.get("run", "")]
    assert len(post) == 1
    step = post[0]
    assert step["if"] == "github.event.pull_request.head.repo.full_name == github.repository"
    assert step["env"]["GH_TOKEN"] == "${{ github.token }}"
    script = step["run"]
    assert f'echo "{MARKER}"; cat diff.md' in script and f'startswith("{MARKER}")' in script
    assert '--method PATCH "$EDIT/$id"' in script and '--method POST "$COMMENTS"' in script
    assert script.index("PATCH") < script.index("POST")  # an existing comment is edited, never duplicated
    doc = CI_DOC.read_text("utf-8")
    assert "read-only\n  `GITHUB_TOKEN`" in doc and "pull_request_target" in doc


def test_the_hooks_run_commands_the_workflow_runs() -> None:
    entries = [hook["entry"] for hook in yaml.safe_load(HOOKS.read_text("utf-8"))]
    workflow = [c for s in codexmem_steps() for c in codexmem_commands(s["run"])]
    assert entries and all(entry in workflow for entry in entries), (entries, workflow)


# ------------------------------------------------------------------ the steps, run


@pytest.fixture(scope="module")
def pull_request(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clone (all branches fetched) of a repository whose feature branch saved two notes, on that branch."""
    root = tmp_path_factory.mktemp("pr")
    project = project_with_memory(root / "shop")
    git(project, "switch", "-q", "-c", "feature")
    save_notes(project, FEATURE_TITLES, task="Refund rounding", at=NOW.replace(day=2))
    commit_all(project, "memory of the feature")
    origin = root / "origin.git"
    git(root, "clone", "-q", "--bare", str(project), str(origin))
    checkout = root / "checkout"
    git(root, "clone", "-q", "--no-single-branch", str(origin), str(checkout))
    git(checkout, "switch", "-q", "feature")
    return checkout


def run_step(step: dict[str, Any], cwd: Path, summary: Path) -> subprocess.CompletedProcess[str]:
    """A step's script as GitHub runs it (``bash -e``), the base ref filled in, codexmem on PATH."""
    script = step["run"].replace("${{ github.base_ref }}", "main")
    assert "${{" not in script, script
    env = {
        **GIT_ENV,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "GITHUB_STEP_SUMMARY": str(summary),
    }
    env.pop("CODEXMEM_STORE", None)
    return subprocess.run(
        ["bash", "-e", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def has_diff_command(cwd: Path) -> bool:
    """Whether the ``codexmem`` the steps run (this environment's console script) has ``diff``."""
    command = [str(Path(sys.executable).parent / "codexmem"), "diff", "--help"]
    return subprocess.run(command, cwd=cwd, capture_output=True, check=False).returncode == 0


def test_the_check_steps_pass_on_the_pull_request(pull_request: Path, tmp_path: Path) -> None:
    for step in codexmem_steps():
        if "codexmem diff" in step["run"]:
            continue
        done = run_step(step, pull_request, tmp_path / "summary.md")
        assert done.returncode == 0, (step["name"], done.stdout, done.stderr)
    assert (pull_request / "AGENTS.md").is_file()


def test_the_check_steps_fail_on_a_broken_pull_request(pull_request: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    git(tmp_path, "clone", "-q", str(pull_request), str(broken))
    note = next((broken / ".codexmem" / "notes").glob("note_*.md"))
    note.write_text(note.read_text("utf-8").replace("type:\n  discovery\n", "type:\n  rumour\n"), "utf-8")
    (broken / "AGENTS.md").write_text("# Our agents\n", "utf-8")
    results = {s["name"]: run_step(s, broken, tmp_path / "summary.md") for s in codexmem_steps()[:2]}
    check, agents = results["Check the store"], results["Check AGENTS.md"]
    assert check.returncode == 1 and f"{note.name}: error: type" in check.stdout, check.stdout
    assert agents.returncode == 1 and "AGENTS.md: has no codexmem block" in agents.stderr, agents.stderr


def test_the_diff_step_writes_the_memory_change(pull_request: Path, tmp_path: Path) -> None:
    if not has_diff_command(tmp_path):
        pytest.skip("`codexmem diff` is not on this branch yet (issue 15, item 1); this runs once it is merged")
    [step] = [s for s in codexmem_steps() if "codexmem diff" in s["run"]]
    summary = tmp_path / "summary.md"
    done = run_step(step, pull_request, summary)
    assert done.returncode == 0, (done.stdout, done.stderr)
    written = (pull_request / "diff.md").read_text("utf-8")
    assert all(title in written for title in FEATURE_TITLES), written
    assert "A retried capture charges twice" not in written  # on main already: not this pull request's change
    assert summary.read_text("utf-8") == written
    assert len(written) < 65_536 - len(MARKER) - 1  # fits one comment with its marker line
