"""Writing an output file whole or not at all, with a one-line error.

The text goes to a temporary file beside the target, which then replaces it:
a failure (bad folder, no permission, disk full) leaves the previous file as
it was and never a half-written one. A target that exists and is not a
regular file (``/dev/stdout``, a FIFO) is written in place, never replaced.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hookscope.errors import UsageError


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def check_writable(path: str | Path, what: str) -> Path:
    """Refuse, before any work, a ``path`` that can never be written as a file.

    Raises:
        UsageError: ``path`` is a directory, or lies under an existing file.
    """
    target = Path(path)
    if target.is_dir():
        raise UsageError(f"cannot write {what} {str(target)!r}: it is a directory")
    blocked = next((p for p in target.parents if p.exists() and not p.is_dir()), None)
    if blocked is not None:
        raise UsageError(f"cannot write {what} {str(target)!r}: {str(blocked)!r} is a file")
    return target


def write_text(path: str | Path, text: str, what: str) -> Path:
    """Write ``text`` (UTF-8) to ``path``, creating its folder.

    Args:
        path: the file to write.
        text: its whole content.
        what: how the user named it (``"-o"``, ``"--out"``), for the error message.

    Raises:
        UsageError: the file cannot be written; names ``what``, the path and why.
    """
    target = check_writable(path, what)
    temp: str | None = None
    try:
        if target.exists() and not target.is_file():  # /dev/stdout, a FIFO: never replace it
            with target.open("w", encoding="utf-8") as handle:
                handle.write(text)
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(temp, 0o666 & ~_umask())  # mkstemp makes 0600; a plain open would not
        os.replace(temp, target)
        temp = None
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise UsageError(f"cannot write {what} {str(target)!r}: {reason}") from None
    finally:
        if temp is not None:
            Path(temp).unlink(missing_ok=True)
    return target
