"""Progress on long commands: what a rebuild reports, and how a bar or a log shows it."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

from store_fixtures import new_store, start_session, write_note

from codexmem.cli.reindex import StageBars
from codexmem.progress import Progress


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_rebuild_reports_events_then_histories_then_files(tmp_path: Path) -> None:
    store = new_store(tmp_path / "store")
    session = start_session(store)
    for i in range(12):
        write_note(store, session, title=f"note {i}")
    told: list[tuple[str, int, int]] = []
    store.index.on_progress = lambda stage, done, total: told.append((stage, done, total))
    report = store.index.rebuild()
    stages = list(dict.fromkeys(stage for stage, _, _ in told))
    assert stages == ["events", "histories", "files"]
    files = [(done, total) for stage, done, total in told if stage == "files"]
    assert files[-1] == (report.parsed, report.parsed) == (13, 13)  # 12 notes and the session
    assert [done for done, _ in files] == sorted(done for done, _ in files)
    histories = [total for stage, _, total in told if stage == "histories"]
    assert set(histories) == {13}
    kib = [(done, total) for stage, done, total in told if stage == "events"]
    assert all(0 <= done <= total for done, total in kib)


def test_a_piped_log_gets_a_line_a_quarter_and_a_terminal_one_redrawn_bar() -> None:
    log = io.StringIO()
    bar = Progress(0, log, doing="indexing", did="indexed", unit="files", bar_from=10, lines_from=100)
    for done in range(401):
        bar.update(done, 400)
    bar.done()
    assert log.getvalue().splitlines() == ["indexed 100/400 files", "indexed 200/400 files", "indexed 300/400 files"]

    tty = Tty()
    bar = Progress(0, tty, doing="indexing", did="indexed", unit="files", bar_from=10, lines_from=100)
    for done in (0, 0, 50, 50, 60):  # the same count twice draws once
        bar.update(done, 60)
    bar.done()
    frames = tty.getvalue().split("\r")[1:]
    assert frames == [
        "indexing [..............................] 0/60 files",
        "indexing [#########################.....] 50/60 files",
        "indexing [##############################] 60/60 files\n",
    ]


def test_small_runs_print_nothing_and_stages_close_their_bars() -> None:
    quiet = io.StringIO()
    bar = Progress(0, quiet, bar_from=10, lines_from=100)
    for done in range(6):
        bar.update(done, 5)
    bar.done()
    assert quiet.getvalue() == ""

    tty = Tty()
    bars = StageBars(tty)
    for done in range(0, 1001, 500):
        bars.update("events", done, 1000)
    bars.update("files", 0, 2000)
    bars.update("files", 2000, 2000)
    bars.close()
    lines = tty.getvalue().split("\n")
    assert lines[0].endswith("reading events [##############################] 1,000/1,000 KiB")
    assert lines[1].endswith("indexing [##############################] 2,000/2,000 files")
    assert lines[2] == ""


def test_reindex_shows_no_bar_on_a_small_store_and_says_what_it_did(tmp_path: Path) -> None:
    store = new_store(tmp_path / "store")
    write_note(store, start_session(store), title="one")
    done = subprocess.run(
        [sys.executable, "-m", "codexmem", "reindex", "--store", str(store.root)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.startswith("reindexed 2 records and 2 events in ")
