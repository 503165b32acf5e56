"""fd 0 and fd 1 taken for the protocol, before anything else runs in ``codexmem serve``.

The wire moves to private descriptors, and fd 0 reads the null device while fd 1 writes to
stderr, as the SDK does for its own streams: a library's stray print, or a child process, can
then neither read requests nor write into the protocol. Taken before the handshake (so nothing
imported afterwards can write onto the wire) and given back on exit. Standard library only,
since it runs before the first answer.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Iterator

if sys.platform != "win32":  # the SDK's own streams serve on Windows; this module is imported there all the same
    import fcntl


def not_pipes() -> str | None:
    """Why fd 0 and fd 1 cannot be served as pipes (then the SDK's own streams serve), or None."""
    for fd in (0, 1):
        try:
            mode = os.fstat(fd).st_mode
        except OSError as exc:
            return f"fd {fd}: {exc}"
        if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
            return f"fd {fd} is not a pipe or socket"
    return None


class Wire:
    """The protocol's private descriptors: requests are read from ``fd_in``, answers written to ``fd_out``.

    Whoever takes them over (the asyncio pipes) calls :meth:`take`; until then the claim closes them.
    """

    __slots__ = ("fd_in", "fd_out")

    def __init__(self, fd_in: int, fd_out: int) -> None:
        self.fd_in = fd_in
        self.fd_out = fd_out

    def take(self) -> tuple[int, int]:
        """The two descriptors, now the caller's to close."""
        taken = (self.fd_in, self.fd_out)
        self.fd_in = self.fd_out = -1
        return taken


@contextlib.contextmanager
def claimed_stdio() -> Iterator[Wire]:
    """The wire, with fd 0 and fd 1 diverted while inside (POSIX; check :func:`not_pipes` first)."""
    if sys.platform == "win32":
        raise OSError("stdio is claimed as pipes on POSIX only")
    saved = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3) for fd in (0, 1)]
    wire = Wire(fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3), fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3))
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    try:
        yield wire
    finally:
        for fd, original in zip((0, 1), saved, strict=True):
            with contextlib.suppress(OSError):
                os.dup2(original, fd)
            os.close(original)
        for fd in wire.take():
            if fd >= 0:
                os.close(fd)
