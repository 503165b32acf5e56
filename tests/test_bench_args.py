"""The benchmarks' shared arguments: a wrong --sizes is a one-line argparse error, never a traceback."""

from __future__ import annotations

import argparse

import pytest

from bench.args import count, note_sizes


def test_note_sizes_reads_comma_separated_counts() -> None:
    assert note_sizes("1000, 10000,,50000") == [1000, 10000, 50000]


@pytest.mark.parametrize(
    ("text", "says"), [("x", "got 'x'"), ("1000,0", "got '0'"), ("-5", "got '-5'"), (",", "at least one")]
)
def test_note_sizes_names_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=says):
        note_sizes(text)


def test_count_reads_one_whole_number() -> None:
    assert count("5000")(" 42 ") == 42


@pytest.mark.parametrize("text", ["0", "x", "5,6", ",", "-1", ""])
def test_count_names_what_is_wrong(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=f"one whole number of 1 or more, such as 5000: got {text!r}"):
        count("5000")(text)
