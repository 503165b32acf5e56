"""Durable file operations: a crash leaves the old file or the new one, never a torn one."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path

TMP_PREFIX = ".tmp-"


def fsync_dir(path: Path) -> None:
    """Make a rename or a new directory entry durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes) -> None:
    """``os.write`` until every byte is written (one call may write only part)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def name_failure(exc: BaseException, path: Path) -> None:
    """A write or fsync on a descriptor fails naming no file: name the one it was writing, so the
    error a person reads says where (``Store._where``)."""
    if isinstance(exc, OSError) and exc.filename is None:
        exc.filename = str(path)


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
        write_all(fd, data)
        os.fsync(fd)
    except BaseException as exc:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        name_failure(exc, tmp)
        raise
    os.close(fd)
    return tmp


def write_spare(spare: Path, data: bytes) -> bool:
    """Write ``data`` over the spare file and fsync it; False (nothing written) when there is none
    or it is not safe to write through.

    Each write would otherwise create a file and free the one it replaced. On this machine's
    ext4, which has no journal (and so passes over recently freed inodes), a create in a folder
    just churned by a burst of edits took 100-300 µs instead of 15; recycling the replaced file
    as the next write's temporary file creates and frees nothing.
    """
    try:
        fd = os.open(spare, os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:  # none yet (or a symlink planted in its place: left alone, never followed)
        return False
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            # Another name shares it (a user's hard link; after a power cut, a rename half on disk):
            # writing through it would change that file too, so drop our name for it instead.
            with contextlib.suppress(OSError):
                os.unlink(spare)
            return False
        write_all(fd, data)  # from offset 0: just opened, without O_APPEND
        os.ftruncate(fd, len(data))
        os.fsync(fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(spare)  # half-written: never reused
        raise
    finally:
        os.close(fd)
    return True


def replace_own_file(path: Path, data: bytes) -> None:
    """:func:`atomic_write` for a person's file (AGENTS.md, .gitignore): its permissions are kept
    (a rename would leave the new file 644), and one its owner made read-only is refused."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        atomic_write(path, data)
        return
    if stat.S_ISREG(st.st_mode) and not st.st_mode & stat.S_IWUSR:
        raise PermissionError(errno.EACCES, "it is read-only (`chmod u+w` lets codexmem update it)", str(path))
    atomic_write(path, data, mode=stat.S_IMODE(st.st_mode))


def atomic_write(path: Path, data: bytes, *, spare: Path | None = None, mode: int | None = None) -> None:
    """Temporary file (the ``spare`` when there is one), fsync, rename over ``path``, fsync the
    directory; ``mode``: the new file's permissions (else 644)."""
    if spare is not None and _spared(spare, path, data):
        try:
            os.replace(spare, path)
        except OSError:
            # The record's folder is new, or the cache is a mount of its own (a rename cannot
            # cross one): drop the spare and write beside the record as below.
            with contextlib.suppress(OSError):
                os.unlink(spare)
        else:
            fsync_dir(path.parent)
            return
    tmp = write_temp(path, data)
    try:
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


def _spared(spare: Path, path: Path, data: bytes) -> bool:
    """:func:`write_spare`, its failure named after ``path``: the spare lives in ``.cache``, and the
    record is what could not be written."""
    try:
        return write_spare(spare, data)
    except OSError as exc:
        name_failure(exc, path)
        raise


def set_aside(replaced: Path, spare: Path | None) -> None:
    """Done with ``replaced`` (the link kept to a file a write replaced): make it the spare when
    nothing else links to it, else just drop the link. Best effort: a leftover is a ``.tmp-`` file."""
    with contextlib.suppress(OSError):
        if spare is not None and os.lstat(replaced).st_nlink == 1:
            os.replace(replaced, spare)
        else:
            os.unlink(replaced)


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
        try:
            write_all(fd, line)
            os.fsync(fd)
        except OSError as exc:
            # A full disk can take part of the line: cut it off at once, leaving the shard as it was.
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
            name_failure(exc, path)
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
