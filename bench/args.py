"""Arguments the benchmarks share."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def counts(what: str, example: str) -> Callable[[str], list[int]]:
    """An argparse type for ``--sizes 1000,10000``: ``what`` names the counts in its errors."""

    def parse(text: str) -> list[int]:
        sizes = []
        for part in (p.strip() for p in text.split(",")):
            if not part:
                continue
            if not part.isdigit() or int(part) < 1:
                raise argparse.ArgumentTypeError(
                    f"{what} are whole numbers of 1 or more, comma-separated: got {part!r}"
                )
            sizes.append(int(part))
        if not sizes:
            raise argparse.ArgumentTypeError(f"give at least one of the {what}, such as {example}")
        return sizes

    return parse


def count(example: str) -> Callable[[str], int]:
    """An argparse type for one whole number of 1 or more (``--calls 5000``)."""

    def parse(text: str) -> int:
        part = text.strip()
        if not part.isdigit() or int(part) < 1:
            raise argparse.ArgumentTypeError(f"give one whole number of 1 or more, such as {example}: got {text!r}")
        return int(part)

    return parse


note_sizes = counts("note counts", "1000 or 1000,10000")
