"""The stemmer behind search's stem matches: SQLite's own word cutting and porter stems."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codexmem.store.index import stems
from codexmem.store.index.stems import Stemmer

TEXTS = [
    "Validation of payment methods; the validator validates every payment.",
    "Café naïve ÜBER retries: tenant_id and cache-hit",
    "",
]


def test_words_are_cut_folded_and_stemmed_as_the_text_tables_do() -> None:
    assert Stemmer().words("Café RETRIES tenant_id") == (
        ("cafe", "cafe"),
        ("retries", "retri"),
        ("tenant", "tenant"),
        ("id", "id"),
    )


def test_pairs_are_the_words_whose_stem_is_another_word() -> None:
    expected = {(word, stem) for text in TEXTS for word, stem in Stemmer().words(text) if word != stem}
    assert ("validation", "valid") in expected and ("retries", "retri") in expected
    assert Stemmer().pairs(TEXTS) == expected
    # Stems already known (cached from an earlier record) give the same rows.
    stemmer = Stemmer()
    assert [stemmer.pairs([text]) for text in TEXTS] == [Stemmer().pairs([text]) for text in TEXTS]


def test_the_word_cache_starts_again_past_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stems, "WORD_CACHE", 5)
    stemmer = Stemmer()
    largest = max(len({word for word, _ in stemmer.words(text)}) for text in TEXTS)
    for text in TEXTS * 2:
        assert stemmer.pairs([text]) == Stemmer().pairs([text])
        # Never more than the bound, or one record's own words when they alone pass it.
        assert len(stemmer._stem_of) <= max(5, largest)


@pytest.mark.parametrize(
    ("word", "expected"),
    [("validates", ("validates", "valid")), ("CAFÉ", ("cafe", "cafe")), ("tenant_id", None), ("_", None)],
)
def test_a_query_word_is_one_word_or_none(word: str, expected: tuple[str, str] | None) -> None:
    assert Stemmer().query_word(word) == expected


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=80))
def test_ascii_text_is_cut_into_the_words_sqlite_finds(text: str) -> None:
    stemmer = Stemmer()
    assert stemmer._distinct_words(text) == {word for word, _ in stemmer.words(text)}
