"""Read a source file safely; `Source` keeps what is needed to write it back unchanged.

Only regular files are read (a FIFO would block, ``/dev/zero`` never ends), never more
than ``max_bytes``. Each front end decodes the bytes its own way; `Source.encode` turns a
fixed text back into bytes of the same encoding, mark and line endings.
"""

from __future__ import annotations

import codecs
import os
import stat
from dataclasses import dataclass

DEFAULT_MAX_FILE_SIZE = 10_000_000  # bytes; the biggest real Python sources are a few MB


class Unreadable(Exception):
    """A file that is not linted; ``str(exc)`` says why (it becomes an HS000 finding)."""


def read_bytes(path: str, max_bytes: int = DEFAULT_MAX_FILE_SIZE) -> bytes:
    """The bytes of the regular file ``path``.

    Raises:
        Unreadable: not a regular file (FIFO, device, folder), larger than
            ``max_bytes``, or an operating-system error.
    """
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise Unreadable("not a regular file (a FIFO, device or socket is never read)")
        if info.st_size > max_bytes:
            raise Unreadable(_too_large(info.st_size, max_bytes))
        data = _read(path, min(info.st_size + 1, max_bytes + 1), max_bytes + 1)
    except OSError as exc:
        raise Unreadable(exc.strerror or str(exc)) from exc
    if len(data) > max_bytes:
        raise Unreadable(_too_large(len(data), max_bytes))
    return data


def binary(data: bytes) -> str:
    """Why ``data`` cannot be source text ("" when it can): a NUL byte, which no Python
    or C# source holds (compiled output, an image, random bytes named ``.py``/``.cs``)."""
    return "not a source file: it holds NUL bytes (binary data)" if b"\0" in data else ""


def _read(path: str, first: int, limit: int) -> bytes:
    """Up to ``limit`` bytes of ``path``, asking for ``first`` bytes at first.

    Plain ``os.read``: ``open(...).read(limit)`` allocates ``limit`` bytes for every file
    and costs more than the reading itself over a tree of small files. ``first`` is the
    ``stat`` size plus one, so a shorter first read has met the end of the file.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        data = os.read(fd, min(first, limit))
        if len(data) < min(first, limit) or len(data) == limit:
            return data
        chunks = [data]
        left = limit - len(data)
        while left > 0:  # the file grew since stat(): read on, up to the limit
            chunk = os.read(fd, min(1 << 16, left))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


def _too_large(size: int, limit: int) -> str:
    return (
        f"file too large ({size} bytes, the limit is {limit}; "
        "raise it with --max-file-size or max-file-size in [tool.hookscope.lint])"
    )


@dataclass(frozen=True)
class Source:
    """Decoded source and what is needed to write it back unchanged.

    Attributes:
        text: the text, without byte-order mark, lone ``\\r`` line ends read as ``\\n``.
        encoding: the codec it was decoded with.
        bom: whether the file starts with a UTF-8 byte-order mark.
        cr_only: whether its lines end in ``\\r`` alone (classic Mac OS).
    """

    text: str
    encoding: str = "utf-8"
    bom: bool = False
    cr_only: bool = False

    def encode(self, text: str) -> bytes:
        """``text`` (e.g. fixed) as bytes in this file's encoding, mark and line endings."""
        if self.cr_only:
            text = text.replace("\n", "\r")
        data = text.encode(self.encoding)
        return codecs.BOM_UTF8 + data if self.bom else data
