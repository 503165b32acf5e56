"""The word diff shared by the site's history and ``codexmem diff``: whole, minimal at the ends,
and readable where only the space after a word stays the same."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codexmem.render.textdiff import KEPT_EQUAL_WORDS, word_diff, word_ops

WORDS = st.sampled_from(["retry", "retries", "the", "key", "ledger", "ä", "x1", "—", "`code`"])
SPACES = st.sampled_from([" ", "  ", "\n", "\n\n", "\t"])
TEXTS = st.lists(st.tuples(WORDS, SPACES), max_size=30).map(lambda pairs: "".join(w + s for w, s in pairs))
EDGES = st.sampled_from(["", " ", "\n"])


@settings(max_examples=400, deadline=None)
@given(old=TEXTS, new=TEXTS, lead=EDGES, trail=EDGES)
def test_the_runs_join_to_both_texts_and_alternate(old: str, new: str, lead: str, trail: str) -> None:
    old, new = lead + old, new + trail
    runs = word_ops(old, new)
    assert "".join(text for op, text in runs if op != "ins") == old
    assert "".join(text for op, text in runs if op != "del") == new
    assert all(text for _op, text in runs)
    assert all(a[0] != b[0] for a, b in itertools.pairwise(runs))
    if old == new:
        assert runs == ([("eq", old)] if old else [])


@settings(max_examples=200, deadline=None)
@given(prefix=TEXTS, suffix=TEXTS, word=WORDS)
def test_one_inserted_word_is_the_only_change(prefix: str, suffix: str, word: str) -> None:
    old = prefix + suffix
    new = prefix + word + " " + suffix
    assert [(op, text) for op, text in word_ops(old, new) if op != "eq"] == [("ins", word + " ")]


def test_a_changed_word_keeps_the_space_after_it_out_of_the_change() -> None:
    assert word_ops("keep retry now", "keep retries now") == [
        ("eq", "keep "),
        ("del", "retry"),
        ("ins", "retries"),
        ("eq", " now"),
    ]


def test_long_unchanged_runs_show_their_ends_only() -> None:
    words = [f"w{i}" for i in range(4 * KEPT_EQUAL_WORDS)]
    old = "start " + " ".join(words) + " end"
    new = "START " + " ".join(words) + " END"
    parts = word_diff(old, new)
    assert [p["op"] for p in parts] == ["del", "ins", "eq", "del", "ins"]
    middle = parts[2]["text"]
    assert middle.startswith(" w0 w1") and "…" in middle and middle.rstrip().endswith(words[-1])
    assert words[KEPT_EQUAL_WORDS + 2] not in middle
    # At the start or the end of the text, a run keeps only the side next to the change.
    assert word_diff(" ".join(words) + " tail", " ".join(words) + " TAIL")[0]["text"].startswith("…")


def test_a_long_block_sharing_few_words_reads_as_rewritten_and_a_long_edited_one_as_edited() -> None:
    old = " ".join("the" if i % 4 == 0 else f"old{i}" for i in range(600))
    new = " ".join("the" if i % 4 == 0 else f"new{i}" for i in range(600))
    # A word diff would keep every fourth word ("the") and mark the rest: noise, not an edit.
    assert word_ops(old, new) == [("eq", "the "), ("del", old[4:]), ("ins", new[4:])]
    # As long, but one word changed in the middle and one at each end: a word diff.
    words = [f"w{i}" for i in range(600)]
    edited = ["W0", *words[1:300], "changed", *words[301:-1], "LAST"]
    runs = word_ops(" ".join(words), " ".join(edited))
    assert [(op, text) for op, text in runs if op != "eq"] == [
        ("del", "w0"),
        ("ins", "W0"),
        ("del", "w300"),
        ("ins", "changed"),
        ("del", "w599"),
        ("ins", "LAST"),
    ]


@pytest.mark.parametrize(
    ("old", "new", "ops"),
    [
        # Text added after the last word: the word is kept, not removed and added again ("hand." was
        # shown struck through and then inserted, since the tokens "hand." and "hand.\n\n" differ).
        (
            "Found the difference by hand.",
            "Found the difference by hand.\n\nThen wrote a test.",
            [("eq", "Found the difference by hand."), ("ins", "\n\nThen wrote a test.")],
        ),
        ("They fix themselves.", "They fix themselves. Mostly.", [("eq", "They fix themselves."), ("ins", " Mostly.")]),
        ("They fix themselves. Mostly.", "They fix themselves.", [("eq", "They fix themselves."), ("del", " Mostly.")]),
    ],
)
def test_text_added_or_removed_after_the_last_word_keeps_that_word(
    old: str, new: str, ops: list[tuple[str, str]]
) -> None:
    assert word_ops(old, new) == ops
