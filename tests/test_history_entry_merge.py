"""The history's merge of a list of entries (a schema's options) against git's own text merge.

``check`` expects a file to hold the three-way merge of each field's last changes. For a list
of entries with a ``value`` (or ``key``, ``id``), two branches' hand edits of the schema file are
merged by git's plain text merge; wherever git merges them cleanly, the history must reach the
same list, or ``check`` would fail a merge nobody got wrong. Real ``git merge-file`` on the YAML
the store writes, for lists drawn by hypothesis.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from codexmem.store.history import merge_values, value_key
from codexmem.store.yamlio import dump_yaml, load_yaml

BASE_VALUES = "abcdefg"
NEW_VALUES = "tuvwxyz"
LABELS = st.sampled_from(["One", "Two", "Three", "Four"])


@st.composite
def edited(draw: st.DrawFn, base: list[dict[str, str]]) -> list[dict[str, str]]:
    """``base`` with some options removed, some relabelled and some new ones put in."""
    out = [dict(o) for o in base if draw(st.integers(0, 4)) != 0]
    for option in out:
        if draw(st.integers(0, 3)) == 0:
            option["label"] = draw(LABELS) + "!"
    for value in draw(st.lists(st.sampled_from(NEW_VALUES), max_size=2, unique=True)):
        at = draw(st.integers(0, len(out)))
        out.insert(at, {"value": value, "label": draw(LABELS)})
    return out


@st.composite
def three_sides(draw: st.DrawFn) -> tuple[list[dict[str, str]], ...]:
    values = draw(st.lists(st.sampled_from(BASE_VALUES), min_size=1, max_size=6, unique=True))
    base = [{"value": v, "label": draw(LABELS)} for v in values]
    return base, draw(edited(base)), draw(edited(base))


def _git_merge(tmp: Path, base: Any, ours: Any, theirs: Any) -> Any | None:
    """The options git's text merge makes of the three files; None on a conflict."""
    for name, options in (("base", base), ("ours", ours), ("theirs", theirs)):
        (tmp / name).write_text(dump_yaml({"options": options}), encoding="utf-8")
    done = subprocess.run(
        ["git", "merge-file", "-p", str(tmp / "ours"), str(tmp / "base"), str(tmp / "theirs")],
        capture_output=True,
        text=True,
        check=False,
    )
    return load_yaml(done.stdout)["options"] if done.returncode == 0 else None


ONE = [{"value": v, "label": "One"} for v in "acde"]
REMOVED_AGAINST_REPLACED = (
    [ONE[0], {"value": "b", "label": "Three"}, *ONE[1:]],
    [ONE[0], {"value": "b", "label": "Three"}, ONE[2]],
    [{"value": "a", "label": "One!"}, {"value": "b", "label": "One!"}, {"value": "t", "label": "Three"}, ONE[2]],
)
"""Found by this test at random: one side removed c and e, the other removed them too and put t
where c was (and relabelled a and b); git merged it, the history called it a conflict."""


@settings(max_examples=200, deadline=None)
@given(sides=three_sides())
@example(sides=REMOVED_AGAINST_REPLACED)
def test_where_git_merges_the_options_cleanly_the_history_reaches_the_same_list(
    tmp_path_factory: Any, sides: tuple[list[dict[str, str]], ...]
) -> None:
    base, ours, theirs = sides
    by_git = _git_merge(tmp_path_factory.mktemp("m"), base, ours, theirs)
    merged, clean = merge_values(base, ours, theirs)
    if by_git is not None and len({o["value"] for o in by_git}) == len(by_git):
        # (a text merge can also write one value twice: both sides added it in different places;
        # the schema check refuses that file, whatever the history says)
        assert clean, (base, ours, theirs, by_git)
        assert sorted(map(value_key, merged)) == sorted(map(value_key, by_git)), (base, ours, theirs, by_git, merged)
        if not (_adds(base, ours) and _adds(base, theirs)):
            # Both sides adding entries at one place conflicts in git, unless lines line up by
            # chance; the order is then git's accident (check warns). Otherwise it is the same.
            assert value_key(merged) == value_key(by_git), (base, ours, theirs, by_git, merged)
    if clean:  # what the history merged holds every change of both sides
        for side in (ours, theirs):
            for option in side:
                if option not in base:
                    assert option in merged


def _adds(base: list[dict[str, str]], side: list[dict[str, str]]) -> bool:
    return any(o["value"] not in {b["value"] for b in base} for o in side)


def test_one_option_relabelled_two_ways_is_a_disagreement() -> None:
    base = [{"value": "a", "label": "A"}, {"value": "b", "label": "B"}]
    ours = [{"value": "a", "label": "A1"}, {"value": "b", "label": "B"}]
    theirs = [{"value": "a", "label": "A2"}, {"value": "b", "label": "B"}]
    assert merge_values(base, ours, theirs) == (ours, False)
    removed = [{"value": "b", "label": "B"}]
    assert merge_values(base, ours, removed) == (ours, False)  # relabelled on one side, removed on the other
