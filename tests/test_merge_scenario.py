"""The seeded random merge scenario (bench/merge_scenario.py) at a few seeds.

Six branches of agent sessions and person edits over the same 20 records, merged into main in a
random order, under the merge-button simulation and with the merge driver: every conflict is a
same-field disagreement or a version line, careful resolutions lose nothing and make ``check``
report no error, and every edit a careless resolution drops on purpose is reported as lost.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.merge_scenario import Tally, run_trial


def _sound(tally: Tally) -> None:
    assert tally.failures == []
    assert tally.lost_by_merge == 0 and tally.lost_unreported == 0 and tally.false_errors == 0
    assert all(kind != "other" for _, kind in tally.conflicts)


@pytest.mark.parametrize("seed", [1, 2])
def test_merge_button_conflicts_are_only_disagreements_and_versions(tmp_path: Path, seed: int) -> None:
    tally = run_trial(tmp_path / "repo", seed, driver=False, careless=seed == 2)
    _sound(tally)
    assert tally.merges == 6
    assert tally.conflicts[("button", "field")] > 0 and tally.conflicts[("button", "version")] > 0
    if seed == 2:
        assert tally.injected > 0 and tally.detected == tally.injected


def test_with_the_driver_only_same_field_disagreements_stop_a_merge(tmp_path: Path) -> None:
    tally = run_trial(tmp_path / "repo", 3, driver=True, careless=True)
    _sound(tally)
    assert tally.conflicts[("driver", "field")] > 0 and tally.conflicts[("driver", "version")] == 0
    assert tally.injected > 0 and tally.detected == tally.injected


def test_landed_by_the_squash_button_nothing_is_lost_and_check_names_every_dropped_edit(tmp_path: Path) -> None:
    """The squash button lands a branch as one commit with no merge recorded: the same soundness."""
    tally = run_trial(tmp_path / "repo", 4, driver=False, careless=True, land="squash")
    _sound(tally)
    assert tally.merges == 6 and tally.conflicts[("button", "field")] > 0
    assert tally.injected > 0 and tally.detected == tally.injected
