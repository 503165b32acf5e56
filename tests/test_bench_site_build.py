"""The site bench run again into the folder it kept: it reuses the finished store, remakes a half one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _bench(keep: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bench.site_build", "--sizes", "12", "--no-browser", "--keep", str(keep)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_second_run_with_the_same_keep_reuses_the_store(tmp_path: Path) -> None:
    first = _bench(tmp_path)
    assert first.returncode == 0, first.stderr
    assert "generated 12 notes and items" in first.stderr
    second = _bench(tmp_path)
    assert second.returncode == 0, second.stderr
    assert "generated" not in second.stderr
    assert "| 12 | cold |" in second.stdout
    assert not list(tmp_path.glob("probe-*/*")), "the disk probe's files are left after the builds"


def test_a_store_left_half_made_is_made_again(tmp_path: Path) -> None:
    half = tmp_path / "store-12"
    (half / "notes").mkdir(parents=True)  # as a run stopped before the store's config was written
    run = _bench(tmp_path)
    assert run.returncode == 0, run.stderr
    assert "generated 12 notes and items" in run.stderr
    assert (half / "codexmem.yaml").is_file()
    assert not list(tmp_path.glob(".store-*")), "the store being made is left beside the finished one"


def test_keep_naming_a_file_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("x")
    run = _bench(tmp_path / "a-file")
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert "argument --keep:" in run.stderr and "is a file; give a folder" in run.stderr
