"""A progress bar for long commands (a site build, a reindex), drawn on stderr by hand.

On a terminal the bar is redrawn in place; piped (CI logs), a large run writes a line at each
quarter instead, so a log shows it moving without a line per step. Small runs print nothing.
"""

from __future__ import annotations

from typing import TextIO


class Progress:
    """``step()`` or ``update(done, total)`` as work goes on, then ``done()``."""

    WIDTH = 30

    def __init__(
        self,
        total: int,
        stream: TextIO | None,
        *,
        doing: str = "rendering",
        did: str = "rendered",
        unit: str = "pages",
        bar_from: int = 200,
        lines_from: int = 2_000,
    ) -> None:
        self.stream = stream
        self.doing, self.did, self.unit = doing, did, unit
        self.bar_from, self.lines_from = bar_from, lines_from
        self._start(total)

    def _start(self, total: int) -> None:
        self.total = total
        self.count = -1  # nothing told yet
        tty = bool(self.stream is not None and self.stream.isatty())
        self.mode = "bar" if tty and total >= self.bar_from else "lines" if total >= self.lines_from else ""
        if self.stream is None:
            self.mode = ""
        self._next_line = total // 4

    def step(self) -> None:
        self.update(max(self.count, 0) + 1, self.total)

    def update(self, done: int, total: int) -> None:
        """``done`` of ``total`` finished (a new total starts the count again)."""
        if total != self.total:
            self._start(total)
        elif done == self.count:
            return  # told again (a stage counted in larger units): nothing moved
        self.count = done
        if self.mode == "bar" and (done % 50 == 0 or done == total):
            filled = self.WIDTH * done // max(total, 1)
            bar = "#" * filled + "." * (self.WIDTH - filled)
            self._emit(f"\r{self.doing} [{bar}] {done:,}/{total:,} {self.unit}")
        elif self.mode == "lines" and self._next_line <= done and self._next_line <= 3 * total // 4:
            self._emit(f"{self.did} {done:,}/{total:,} {self.unit}\n")
            self._next_line += total // 4

    def done(self) -> None:
        if self.mode == "bar" and self.count > 0:
            self._emit("\n")

    def _emit(self, text: str) -> None:
        assert self.stream is not None
        self.stream.write(text)
        self.stream.flush()
