"""Full-text search in the index: word prefixes and stems both match; query text is never syntax."""

from __future__ import annotations

from pathlib import Path

import pytest

from codexmem.models.records import Note, ScopeRef, Session
from codexmem.store.ids import new_id
from codexmem.store.index import TextQuery
from codexmem.store.init import init_store
from codexmem.store.layout import NOTE, SESSION
from codexmem.store.store import Store
from codexmem.timeutil import now_ts

SCOPE = ScopeRef(system_id="sys_demo_1a2b3c4d", project_id="proj_app_1a2b3c4d", workspace_id="ws_app_1a2b3c4d")


def store_with_notes(root: Path, notes: list[tuple[str, str, list[str]]]) -> Store:
    """A new store holding one session and these (title, content, tags) notes, oldest first."""
    init_store(root, cwd=root.parent, system_name="demo")
    store = Store(root)
    at = now_ts()
    session_id = new_id("sess")
    with store.transaction("cli:test") as txn:
        txn.put(
            SESSION,
            Session(session_id=session_id, version=1, scope=SCOPE, status="active", started_at=at, updated_at=at),
            event_type="created",
            changed=[],
        )
        for title, content, tags in notes:
            note = Note(
                note_id=new_id("note"),
                version=1,
                scope=SCOPE,
                session_id=session_id,
                type="decision",
                title=title,
                importance=3,
                content=content,
                tags=tags,
                created_at=at,
                updated_at=at,
            )
            txn.put(NOTE, note, event_type="created", changed=[])
    return store


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return store_with_notes(
        tmp_path / "store",
        [
            ("Payment enum validation", "Client validation reads generated enums.", []),
            ("Retry policy", 'Workers retry "idempotent" jobs three times; see NEAR(x) AND title:foo.', []),
            ("Café ordering", "Diacritics should not matter.", []),
        ],
    )


def titles(store: Store, *words: str, any_word: bool = False) -> list[str]:
    hits, _ = store.fresh_index().hits([NOTE], TextQuery(words, any_word=any_word))
    return sorted(hit.record["title"] for hit in hits)


def test_word_prefix_matches(store: Store) -> None:
    assert titles(store, "pay") == ["Payment enum validation"]
    assert titles(store, "valid") == ["Payment enum validation"]


def test_stems_match(store: Store) -> None:
    # "validate" is no prefix of "validation": only the porter table finds it.
    assert titles(store, "validate") == ["Payment enum validation"]
    assert titles(store, "retrying") == ["Retry policy"]


def test_all_words_by_default_any_word_on_request(store: Store) -> None:
    assert titles(store, "payment", "retry") == []
    assert titles(store, "payment", "retry", any_word=True) == ["Payment enum validation", "Retry policy"]


def test_diacritics_and_case_fold(store: Store) -> None:
    assert titles(store, "cafe") == ["Café ordering"]
    assert titles(store, "CAFÉ") == ["Café ordering"]
    # A title match is recognized however the title spells it.
    assert [hit.relevance for hit in store.fresh_index().hits([NOTE], TextQuery(("cafe",)))[0]] == [2.0]
    assert [hit.relevance for hit in store.fresh_index().hits([NOTE], TextQuery(("diacritic",)))[0]] == [1.0]


@pytest.mark.parametrize("word", ['"', "NEAR(x)", "title:foo", "AND", "*", "-", 'a"b', "(", "^x"])
def test_query_text_is_never_fts_syntax(store: Store, word: str) -> None:
    # Must not raise, and operators are plain words.
    titles(store, word)
    assert titles(store, "near") == ["Retry policy"]


def test_deleted_and_rebuilt_index_answers_the_same(store: Store) -> None:
    before = titles(store, "valid")
    store.index.rebuild()
    assert titles(store, "valid") == before


def test_words_in_the_title_or_tags_rank_first(tmp_path: Path) -> None:
    # Written oldest to newest: ranking by where the words are must beat recency.
    store = store_with_notes(
        tmp_path / "store",
        [
            ("ledger export", "ledger export in the title", []),
            ("nightly job", "the body names the ledger and its export", []),
            ("ledger cleanup", "split across title and tags", ["export"]),
            ("another job", "only in the body: ledger export, twice: ledger export", []),
            ("unrelated", "no match here", ["ledger"]),
        ],
    )
    hits = store.fresh_index().hits([NOTE], TextQuery(("ledger", "export")))[0]
    assert [(hit.record["title"], hit.relevance) for hit in hits] == [
        ("ledger cleanup", 2.0),  # newest first within a tier
        ("ledger export", 2.0),
        ("another job", 1.0),  # the newer of the two body-only matches first
        ("nightly job", 1.0),
    ]


def test_stems_are_listed_once_not_indexed_twice(store: Store) -> None:
    index = store.fresh_index()
    tables = {name for (name,) in index.conn.execute("SELECT name FROM sqlite_schema WHERE type='table'")}
    assert {"fts", "fts_handoffs", "stems"} <= tables
    assert not {"fts_stem", "fts_handoffs_stem"} & tables
    stems = dict(index.conn.execute("SELECT word, stem FROM stems"))
    # Words whose stem is another word, as SQLite's porter tokenizer stems them; not those that are
    # their own stem ("enum"), and every word folded as the text table holds it ("café" -> cafe).
    assert stems["validation"] == "valid"
    assert stems["workers"] == "worker"
    assert stems["diacritics"] == "diacrit"
    assert "enum" not in stems
    assert "cafe" not in stems and "café" not in stems


def test_a_word_the_store_never_held_matches_by_its_stem(store: Store) -> None:
    # Neither word is in any note: "validates" and "validation" share the stem valid, "retries"
    # and "retry" the stem retri.
    assert titles(store, "validates") == ["Payment enum validation"]
    assert titles(store, "retries") == ["Retry policy"]
    assert titles(store, "validates", "retries") == []
    assert titles(store, "validates", "retries", any_word=True) == ["Payment enum validation", "Retry policy"]
    # One word by its prefix, the other by its stem, in one note.
    assert titles(store, "pay", "validates") == ["Payment enum validation"]


def test_a_stem_that_is_no_word_of_its_own_stem_does_not_match(tmp_path: Path) -> None:
    # "agreed" stems to "agre", and "agre" itself to "agr": a note holding the word "agre" never
    # shared a stem with "agreed", so a search for "agreed" must not find it.
    store = store_with_notes(tmp_path / "store", [("agre", "a word on its own", []), ("Agreed plan", "text", [])])
    index = store.fresh_index()
    assert index.stemmer.words("agreed agre") == (("agreed", "agre"), ("agre", "agr"))
    assert titles(store, "agreed") == ["Agreed plan"]
    assert titles(store, "agree") == ["Agreed plan"]


def test_words_of_removed_texts_stay_listed_and_match_nothing(store: Store) -> None:
    index = store.fresh_index()
    (note,) = [hit.record for hit in index.hits([NOTE], TextQuery(("validation",)))[0]]
    with store.transaction("cli:test") as txn:
        txn.delete(NOTE, note["note_id"])
    index = store.fresh_index()
    assert index.conn.execute("SELECT stem FROM stems WHERE word='validation'").fetchone() == ("valid",)
    assert titles(store, "validates") == []
    assert titles(store, "valid") == []


def test_a_word_of_several_terms_matches_as_a_phrase(tmp_path: Path) -> None:
    store = store_with_notes(
        tmp_path / "store",
        [("Partition by tenant_id", "keys", []), ("tenant list", "an id of each", [])],
    )
    assert store.fresh_index().stemmer.query_word("tenant_id") is None
    assert titles(store, "tenant_id") == ["Partition by tenant_id"]
    assert titles(store, "tenant_i") == ["Partition by tenant_id"]
