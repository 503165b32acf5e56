"""Reading a repository's history with git itself: one command, and many objects through one process.

What is committed (a revision's tree, a file as it was) lives in git's object database, packed
and compressed, so it is read with ``git``, never parsed here. Whoever reads many files reads
them through one ``git cat-file --batch`` process (:class:`BlobReader`), never a process per file.
Every call runs with ``core.quotepath=off`` (paths come back as they are) and literal pathspecs
(a folder name is never a pattern).
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO

GIT_TIMEOUT_S = 120


def run_git(
    root: str | Path, args: Sequence[str], stdin: bytes | None = None, *, literal_paths: bool = True
) -> bytes | None:
    """The output of ``git <args>`` run in ``root``, or None when git fails (or is not installed).

    Paths are literal (never patterns) unless ``literal_paths`` is off, for the commands that
    refuse the option (``check-ignore``; give those their paths on stdin).
    """
    try:
        done = subprocess.run(
            ["git", "-c", "core.quotepath=off", *(["--literal-pathspecs"] if literal_paths else []), *args],
            cwd=root,
            input=stdin,
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


class BlobReader:
    """One ``git cat-file --batch`` process that answers object names (``<commit>:<path>``, a blob
    id) one at a time, so a reader can ask for what the previous answer told it it needs.

    Use it as a context manager; the process ends when the block does.
    """

    def __init__(self, root: str | Path) -> None:
        self._proc = subprocess.Popen(
            ["git", "-c", "core.quotepath=off", "cat-file", "--batch"],
            cwd=root,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self._in: IO[bytes] = self._proc.stdin  # type: ignore[assignment]
        self._out: IO[bytes] = self._proc.stdout  # type: ignore[assignment]

    def read(self, name: str) -> bytes | None:
        """The content of the blob ``name`` names, or None when there is none (or it is no blob)."""
        if not name or "\n" in name or "\0" in name:
            return None
        self._in.write(name.encode("utf-8", "surrogateescape") + b"\n")
        self._in.flush()
        return self._answer()

    def read_many(self, names: Iterable[str]) -> dict[str, bytes]:
        """Each name that names a blob, with its content: all asked at once (a thread writes the
        names while this one reads the answers, so neither pipe fills up and blocks the other)."""
        wanted = [n for n in dict.fromkeys(names) if n and "\n" not in n and "\0" not in n]
        if not wanted:
            return {}
        request = b"".join(n.encode("utf-8", "surrogateescape") + b"\n" for n in wanted)
        writer = threading.Thread(target=self._send, args=(request,), daemon=True)
        writer.start()
        found: dict[str, bytes] = {}
        try:
            for name in wanted:
                data = self._answer()
                if data is not None:
                    found[name] = data
        finally:
            writer.join()
        return found

    def _send(self, request: bytes) -> None:
        try:
            self._in.write(request)
            self._in.flush()
        except (BrokenPipeError, ValueError):
            pass  # git ended: the reader sees the end of its answers

    def _answer(self) -> bytes | None:
        header = self._out.readline().split()
        if len(header) != 3:
            return None  # "<name> missing" or "<name> ambiguous"
        size = int(header[2])
        data = self._out.read(size)
        self._out.read(1)  # the newline after every object
        return data if header[1] == b"blob" else None

    def close(self) -> None:
        if self._proc.poll() is None:
            self._in.close()
            try:
                self._proc.wait(timeout=GIT_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._out.close()

    def __enter__(self) -> BlobReader:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
