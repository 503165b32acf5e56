"""Word stems without a second full-text index: the store's words, by their porter stem.

Up to schema 20 every note and handoff text was indexed twice: as written (word prefixes: "pay"*
finds payment) and by porter stems (validate finds validation). At 50,000 notes the stem tables
took 26.2 MB of a 192 MB index, for what a small table says: which words of the store have a stem
other than themselves (``stems``: 286 rows there). A query word now matches, in the one plain
table, as a prefix or as any stored word with its stem.

Words are cut and stemmed by SQLite itself, in a private in-memory database: FTS5's unicode61
tokenizer (the text tables' own) and its porter tokenizer over it. So a word here is exactly the
term the text tables hold, and its stem exactly the one the stem tables held.
"""

from __future__ import annotations

import functools
import re
import sqlite3
import threading
from collections.abc import Iterable
from typing import Any

TOKENIZER = "unicode61 remove_diacritics 2"
"""How the text tables cut and fold words (schema.SCHEMA's full-text tables use it too)."""

_ASCII_WORD = re.compile(r"[a-z0-9]+")

_UNSPACED = re.compile(
    "([\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f])"
)
"""Kana and Han characters: scripts written without spaces between words."""


def spaced(text: str) -> str:
    """The text with each kana or Han character a word of its own, for the text tables and queries.

    unicode61 cuts words at spaces and punctuation only, so a run of Japanese or Chinese was one
    word and a search matched it at the run's start only (「検索」 missed 全文検索のテスト).
    Indexed one character a word, a query's run becomes a phrase of its characters (see
    ``TextQuery``), which matches the run anywhere, in order and side by side.
    """
    return _UNSPACED.sub(r" \1 ", text) if not text.isascii() else text


QUERY_CACHE = 4096
"""Query words whose terms and stems are kept (a search's words are stemmed once per process)."""

WORD_CACHE = 200_000
"""Stems of the texts' words kept between records (a rebuild stems each distinct word once); past
this many the cache starts again, so memory stays bounded whatever the vocabulary."""


class Stemmer:
    """SQLite's word cutting and porter stemming, for any text (thread-safe)."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        # Two contentless tables over the same text: the porter tokenizer wraps unicode61, so the
        # n-th word of one is the n-th of the other (fts5vocab's offset).
        conn.executescript(
            f"""
            CREATE VIRTUAL TABLE plain USING fts5(t, tokenize='{TOKENIZER}', content='');
            CREATE VIRTUAL TABLE stemmed USING fts5(t, tokenize='porter {TOKENIZER}', content='');
            CREATE VIRTUAL TABLE plain_words USING fts5vocab(plain, row);
            CREATE VIRTUAL TABLE plain_at USING fts5vocab(plain, instance);
            CREATE VIRTUAL TABLE stemmed_at USING fts5vocab(stemmed, instance);
            """
        )
        self._conn = conn
        self._stem_of: dict[str, str] = {}
        self._query_words = functools.lru_cache(maxsize=QUERY_CACHE)(self.words)

    def words(self, text: str) -> tuple[tuple[str, str], ...]:
        """``(word, stem)`` of every word of the text, in order, each word as the text tables hold it."""
        with self._mutex:
            plain = dict(self._read(text, "plain", "SELECT offset, term FROM plain_at"))
            stemmed = dict(self._read(text, "stemmed", "SELECT offset, term FROM stemmed_at"))
        return tuple((word, stemmed[at]) for at, word in sorted(plain.items()))

    def pairs(self, texts: Iterable[str]) -> set[tuple[str, str]]:
        """``(word, stem)`` of the texts' words whose stem is not the word itself: the rows of ``stems``."""
        with self._mutex:
            words = self._distinct_words("\n".join(texts))
            unknown = [word for word in words if word not in self._stem_of]
            if unknown:
                if len(self._stem_of) + len(unknown) > WORD_CACHE:
                    self._stem_of.clear()
                stems = dict(self._read(" ".join(unknown), "stemmed", "SELECT offset, term FROM stemmed_at"))
                self._stem_of.update((word, stems[at]) for at, word in enumerate(unknown))
            stem_of = self._stem_of
            return {(word, stem_of[word]) for word in words if stem_of[word] != word}

    def _distinct_words(self, text: str) -> set[str]:
        """The text's words, each once. ASCII text is cut here: to unicode61 an ASCII letter or digit
        is a word's and every other ASCII character a separator, and folding is lower case, so
        this regex finds exactly its words, without a round trip through SQLite per record."""
        if text.isascii():
            return set(_ASCII_WORD.findall(text.lower()))
        return {word for (word,) in self._read(text, "plain", "SELECT term FROM plain_words")}

    def _read(self, text: str, table: str, query: str) -> list[Any]:
        """The words of ``text`` as one of the tables cuts them, as ``query`` reads them from its vocabulary."""
        conn = self._conn
        conn.execute(f"INSERT INTO {table}(rowid, t) VALUES (1, ?)", (text,))
        try:
            return conn.execute(query).fetchall()
        finally:
            conn.execute(f"INSERT INTO {table}({table}) VALUES ('delete-all')")

    def query_word(self, word: str) -> tuple[str, str] | None:
        """``(word, stem)`` of a query word that is one word to the text tables, else None
        (``tenant_id`` is two: it is matched as a phrase of word prefixes only)."""
        found = self._query_words(word)
        return found[0] if len(found) == 1 else None
