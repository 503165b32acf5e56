"""The record-channel bench in its quick mode: the write-up's invariants hold against codexmem."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from bench import record_channels as bench


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> object:
    workdir: Path = tmp_path_factory.mktemp("bench")
    return anyio.run(bench.run, bench.QUICK, workdir)


pytestmark = pytest.mark.slow


def test_the_ceiling_is_set_only_by_requests_that_should_be_refused(results: object) -> None:
    rows = results.triage  # type: ignore[attr-defined]
    assert all(row.wrong == 0 for row in rows)
    best = max(row.saved for row in rows)
    at_ceiling = [row for row in rows if row.saved == best]
    assert {(row.read_schema, row.level) for row in at_ceiling} >= {(True, "terse"), (False, "labels")}
    for row in at_ceiling:
        assert row.lost == {"points": row.refusable} and row.refusable > 0
    no_schema = {row.level: row for row in rows if not row.read_schema}
    assert no_schema["terse"].saved == no_schema["field"].saved < no_schema["values"].saved < best
    assert no_schema["terse"].calls == 7 * no_schema["terse"].items


def test_cursor_paging_reads_nothing_twice_and_misses_nothing(results: object) -> None:
    rows = {(row.change, row.paging): row for row in results.paging}  # type: ignore[attr-defined]
    for change in ("insert", "delete"):
        cursor = rows[(change, "before_id")]
        assert (cursor.twice, cursor.never_seen) == (0, 0)
        assert cursor.reads == bench.QUICK.paging_items
    assert rows[("insert", "offset")].twice > 0
    assert rows[("delete", "offset")].never_seen > 0


def test_one_poll_finds_exactly_the_changes(results: object) -> None:
    relist, poll = results.polling  # type: ignore[attr-defined]
    assert relist.found == poll.found == poll.expected == sum(bench.QUICK.poll_changes)
    assert poll.calls == 1 and poll.bytes < relist.bytes / 5


def test_no_persons_change_is_overwritten(results: object) -> None:
    read, reread = results.versions  # type: ignore[attr-defined]
    assert read.moved > 0 and read.conflicts == read.moved and read.overwritten == 0
    assert reread.conflicts == 0 and reread.overwritten == reread.moved


def test_the_report_prints_every_table(results: object) -> None:
    text = bench.report(results)
    assert text.count("\n|---|") == 4 and "Median accepted six-field edit" in text
    assert results.cost.tool_ms > 0  # type: ignore[attr-defined]
