"""``codexmem migrate`` on a real format 1 store (tests/fixtures/format1, written by the format 1
code itself), committed in a real repository one step at a time: the store is refused until
migrated, migration is clean and idempotent, and the site's history completes the events from
before values were recorded from git, in one pass, or says it cannot."""

from __future__ import annotations

import contextlib
import html
import io
import re
import shutil
from pathlib import Path

import pytest
from store_fixtures import git

from codexmem.check import check_store
from codexmem.cli.main import EXIT_USAGE, main
from codexmem.errors import CodexmemError
from codexmem.render.site import build_site
from codexmem.store.store import Store
from codexmem.store.yamlio import load_yaml

FIXTURE = Path(__file__).parent / "fixtures" / "format1"
NOTE_ID = "note_01KJPWF1700PK27611J93PDAV1"
ITEM_ID = "item_01KJPWJPD0PWKAKMEFR65HAQS1"


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def legacy_repo(tmp_path: Path, steps: tuple[int, ...] = (1, 2, 3)) -> Path:
    """A repository whose ``memory/`` store went through ``steps``, one commit each."""
    repo = tmp_path / "team"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "Pat Doe")
    git(repo, "config", "user.email", "pat@example.com")
    for step in steps:
        shutil.rmtree(repo / "memory", ignore_errors=True)
        shutil.copytree(FIXTURE / f"step{step}", repo / "memory")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"memory, step {step}")
    return repo / "memory"


def history_text(page: Path) -> str:
    """The history section of a page as a person reads it."""
    text = page.read_text()
    start = text.index('<section class="history"')
    section = text[start : text.index("</section>", start)]
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", section)))


def test_a_format_1_store_is_refused_until_migrated_then_checks_clean(tmp_path: Path) -> None:
    store = legacy_repo(tmp_path)
    declared = f"projects:\n- id: proj_shop\n  name: shop\n  roots:\n  - {tmp_path}/team/shop\n"
    (store / "codexmem.yaml").write_text((store / "codexmem.yaml").read_text() + declared)
    with pytest.raises(CodexmemError, match="has format 1: run `codexmem migrate"):
        Store(store)
    code, _, err = cli("summary", "--store", str(store))
    assert code == EXIT_USAGE and "codexmem migrate" in err

    code, out, err = cli("migrate", "--store", str(store))
    assert (code, err) == (0, ""), err
    assert "4 records rewritten and recorded" in out
    assert f"codexmem.yaml: {tmp_path}/team/shop is now relative to the store" in out
    migrated = load_yaml((store / "codexmem.yaml").read_text())
    assert migrated["format"] == 2 and migrated["projects"][0]["roots"] == ["../shop"]
    note = (store / "notes" / f"{NOTE_ID}.md").read_text()
    assert "updated_at" not in note and "note_id" not in note and "status:\n  resolved" in note
    result = check_store(store)
    assert result.errors == [], result.errors
    assert "merge=codexmem" in (store / ".gitattributes").read_text()

    code, out, _ = cli("migrate", "--store", str(store))
    assert code == 0 and "already in the current format" in out

    git(store.parent, "add", "-A")
    git(store.parent, "commit", "-q", "-m", "codexmem migrate")
    code, out, err = cli("items", "edit", "bugs", ITEM_ID, "--json", '{"points": 5}', "--store", str(store))
    assert (code, err) == (0, ""), err
    assert "version:\n  4" in (store / "channels" / "bugs" / "items" / f"{ITEM_ID}.yaml").read_text()
    assert check_store(store).errors == []


def test_history_before_migration_comes_from_git_in_one_pass(tmp_path: Path) -> None:
    store = legacy_repo(tmp_path)
    assert cli("migrate", "--store", str(store))[0] == 0
    site = tmp_path / "site"
    build_site(Store(store), site, search=False)
    item = history_text(site / "channels" / "bugs" / ITEM_ID / "index.html")
    assert "Status : New → Triaged" in item.replace("  ", " ")
    assert "Status : Triaged → Fixed" in item.replace("  ", " ")
    assert "Points : — → 3" in item.replace("  ", " ")
    note = history_text(site / "notes" / NOTE_ID / "index.html")
    assert "Status : active → resolved" in note.replace("  ", " ")
    assert "not recorded" not in item + note


def test_history_says_so_where_neither_the_events_nor_git_know(tmp_path: Path) -> None:
    """Step 2 was never committed: version 2's values are known to nobody; version 3's new
    values are (git has step 3), its old ones are not."""
    store = legacy_repo(tmp_path, steps=(1, 3))
    assert cli("migrate", "--store", str(store))[0] == 0
    site = tmp_path / "site"
    build_site(Store(store), site, search=False)
    item = " ".join(history_text(site / "channels" / "bugs" / ITEM_ID / "index.html").split())
    assert "Status : changed; neither the events nor git hold the values" in item
    assert "Status : not recorded → Fixed" in item
    assert "Points : — → 3" in item  # version 1 (in git) had no points, and version 2 did not set them
    assert "parallel" not in item  # the migration's record of version 3 is no second version 3


def test_a_shallow_clone_says_its_history_stops_short_until_fetched(tmp_path: Path) -> None:
    """A CI checkout fetches one commit by default: the values before the migration are in the
    history it lacks, which the page and the build say (not "neither ... hold"), until fetched."""
    store = legacy_repo(tmp_path)
    assert cli("migrate", "--store", str(store))[0] == 0
    git(store.parent, "add", "-A")
    git(store.parent, "commit", "-q", "-m", "codexmem migrate")
    clone = tmp_path / "ci"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{store.parent}", str(clone))
    site = tmp_path / "site"
    report = build_site(Store(clone / "memory"), site, search=False)
    item = " ".join(history_text(site / "channels" / "bugs" / ITEM_ID / "index.html").split())
    assert "Status : changed; the values are older than this shallow clone's history" in item
    assert "Status : not in this shallow clone's history → Fixed" in item
    assert "neither the events nor git" not in item
    assert len(report.warnings) == 1 and "this clone is shallow" in report.warnings[0], report.warnings
    assert "2 changes from before `codexmem migrate`" in report.warnings[0] and "--unshallow" in report.warnings[0]

    git(clone, "fetch", "-q", "--unshallow")
    report = build_site(Store(clone / "memory"), site, search=False)
    item = " ".join(history_text(site / "channels" / "bugs" / ITEM_ID / "index.html").split())
    assert "Status : New → Triaged" in item and "Status : Triaged → Fixed" in item
    assert "shallow" not in item and report.warnings == []


EXAMPLE = Path(__file__).resolve().parent.parent / "store-example"


def tree_state(root: Path) -> dict[str, tuple[bytes, int, int]]:
    """Every file under ``root`` (the cache aside): its bytes, inode and modification time."""
    state: dict[str, tuple[bytes, int, int]] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and not rel.startswith(".cache/") and rel != ".lock":
            info = path.stat()
            state[rel] = (path.read_bytes(), info.st_ino, info.st_mtime_ns)
    return state


def test_store_example_is_at_the_current_format_in_the_writers_form(tmp_path: Path) -> None:
    """store-example/ declares the current format, and every record file is byte for byte what
    the writer makes of its values today (so it needs no migration)."""
    from codexmem.models.config import STORE_FORMAT
    from codexmem.store.layout import identify_relpath
    from codexmem.store.recordfile import parse, validate_record

    example = tmp_path / "example"  # a copy: opening a store builds its index in .cache/
    shutil.copytree(EXAMPLE, example)
    assert load_yaml((example / "codexmem.yaml").read_text())["format"] == STORE_FORMAT
    store = Store(example)
    checked = 0
    for path in sorted(example.rglob("*")):
        rel = path.relative_to(example).as_posix()
        ident = identify_relpath(rel)
        if ident is None or ident[0].name == "channel" or not path.is_file():
            continue
        kind, rid, channel = ident
        raw = path.read_bytes()
        data = validate_record(kind, parse(kind, raw, source=rel), rid, channel)
        assert store.serialize(kind, data) == raw, rel
        checked += 1
    store.index.close()
    assert checked > 100


def test_migrate_on_a_store_at_the_current_format_changes_nothing(tmp_path: Path) -> None:
    repo = tmp_path / "team"
    shutil.copytree(EXAMPLE, repo / "memory")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=Pat Doe", "-c", "user.email=pat@example.com", "commit", "-q", "-m", "memory")
    store = repo / "memory"
    before = tree_state(store)
    git_config = (repo / ".git" / "config").read_bytes()

    code, out, err = cli("migrate", "--store", str(store))

    assert (code, err) == (0, "")
    assert out == f"migrate: {store} is already in the current format (format 2): nothing was changed\n"
    assert tree_state(store) == before  # no file written, not even with the same bytes
    assert (repo / ".git" / "config").read_bytes() == git_config
    assert git(repo, "status", "--porcelain").stdout == ""


def test_migrate_on_a_current_store_only_makes_a_hand_typed_absolute_path_relative(tmp_path: Path) -> None:
    """``check`` names ``codexmem migrate`` as the fix for an absolute path in the config: on a store
    at the current format that is all it changes (no record, no event)."""
    store = tmp_path / "team" / "memory"
    shutil.copytree(EXAMPLE, store)
    config = (store / "codexmem.yaml").read_text()
    typed = config.replace("  preferred_tags:\n", f"  roots:\n  - {tmp_path}/team\n  preferred_tags:\n", 1)
    assert typed != config
    (store / "codexmem.yaml").write_text(typed)
    assert any("absolute path" in f.message for f in check_store(store).errors)
    before = {rel: state for rel, state in tree_state(store).items() if rel != "codexmem.yaml"}

    code, out, err = cli("migrate", "--store", str(store))

    assert (code, err) == (0, "")
    assert "only its config changed" in out and f"codexmem.yaml: {tmp_path}/team is now relative to the store" in out
    assert load_yaml((store / "codexmem.yaml").read_text())["projects"][0]["roots"] == [".."]
    assert {rel: state for rel, state in tree_state(store).items() if rel != "codexmem.yaml"} == before
    assert check_store(store).errors == []


@pytest.mark.parametrize(
    ("config", "says"),
    [
        ("format: 2\nprojects: 5\n", "codexmem.yaml: projects: Input should be a valid list"),
        ("format: 2\nprivacy: {secrets: maybe}\n", "codexmem.yaml: privacy.secrets: Input should be 'refuse' or"),
        ("format: 1\nprojects: 5\n", "codexmem.yaml: projects: Input should be a valid list"),
    ],
)
def test_a_config_that_is_not_valid_is_said_as_such_not_called_current(tmp_path: Path, config: str, says: str) -> None:
    """Before: an internal error (TypeError) for a projects that is no list, and "already in the
    current format: nothing was changed" (exit 0) for a config every other command refuses."""
    store = tmp_path / "store"
    store.mkdir()
    (store / "codexmem.yaml").write_text(config)
    code, out, err = cli("migrate", "--store", str(store))
    assert (code, out) == (EXIT_USAGE, "") and err.startswith(f"codexmem: error: {says}"), err
    assert (store / "codexmem.yaml").read_text() == config
