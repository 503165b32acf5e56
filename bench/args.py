"""Arguments the benchmarks share."""

from __future__ import annotations

import argparse


def note_sizes(text: str) -> list[int]:
    """``--sizes 1000,10000``: note counts, each a whole number of 1 or more (argparse type)."""
    sizes = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        if not part.isdigit() or int(part) < 1:
            raise argparse.ArgumentTypeError(
                f"note counts are whole numbers of 1 or more, comma-separated: got {part!r}"
            )
        sizes.append(int(part))
    if not sizes:
        raise argparse.ArgumentTypeError("give at least one note count, such as 1000 or 1000,10000")
    return sizes
