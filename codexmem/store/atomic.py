"""Durable file operations: a crash leaves the old file or the new one, never a torn one."""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

TMP_PREFIX = ".tmp-"


def fsync_dir(path: Path) -> None:
    """Make a rename or a new directory entry durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_temp(path: Path, data: bytes) -> Path:
    """Write ``data`` to a fresh temporary file beside ``path`` and fsync it; return its path.

    Temporary names start with ``.tmp-`` so readers and ``check`` know them for what they are.
    """
    tmp = path.parent / f"{TMP_PREFIX}{path.name}.{os.getpid()}.{secrets.token_hex(4)}"
    # O_EXCL: never follow or clobber something planted under that name; 0o644 like git's files.
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(tmp, flags, 0o644)
    except FileNotFoundError:  # the record's folder does not exist yet
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, flags, 0o644)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    os.close(fd)
    return tmp


def atomic_write(path: Path, data: bytes) -> None:
    """Temporary file, fsync, rename over ``path``, fsync the directory."""
    tmp = write_temp(path, data)
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


def append_line(path: Path, line: bytes) -> int:
    """Append one line durably with O_APPEND; return the file size after the append."""
    flags = os.O_RDWR | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
    created = False
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:  # a new shard (a new month, a new writer)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, flags | os.O_CREAT, 0o644)
        created = True
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            # A writer killed mid-line left a fragment. Its change was never acknowledged (the
            # event is the last step), so drop the fragment rather than leave a malformed line.
            size = _last_line_end(fd, size)
            os.ftruncate(fd, size)
        view = memoryview(line)
        try:
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        except OSError:
            # A full disk can take part of the line: cut it off at once, leaving the shard as it was.
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
            raise
        size = os.fstat(fd).st_size
    finally:
        os.close(fd)
    if created:
        fsync_dir(path.parent)
    return size


def _last_line_end(fd: int, size: int) -> int:
    """Offset just past the last newline of the file (0 when there is none)."""
    pos = size
    while pos > 0:
        start = max(0, pos - 65536)
        chunk = os.pread(fd, pos - start, start)
        cut = chunk.rfind(b"\n")
        if cut >= 0:
            return start + cut + 1
        pos = start
    return 0


def read_bytes_nofollow(path: Path, limit: int) -> bytes:
    """Read a store file without following a symlink planted in its place, up to ``limit`` bytes."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    try:
        chunks: list[bytes] = []
        remaining = limit + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:
        raise ValueError(f"file is larger than {limit} bytes")
    return data
