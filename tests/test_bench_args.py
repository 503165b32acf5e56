"""The benchmarks' shared arguments: a wrong --sizes is a one-line argparse error, never a traceback."""

from __future__ import annotations

import argparse

import pytest

from bench.args import note_sizes


def test_note_sizes_reads_comma_separated_counts() -> None:
    assert note_sizes("1000, 10000,,50000") == [1000, 10000, 50000]


@pytest.mark.parametrize(
    ("text", "says"), [("x", "got 'x'"), ("1000,0", "got '0'"), ("-5", "got '-5'"), (",", "at least one")]
)
def test_note_sizes_names_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=says):
        note_sizes(text)
