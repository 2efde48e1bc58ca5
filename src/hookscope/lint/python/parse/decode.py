"""Decode Python source bytes the way the interpreter does, reversibly.

A UTF-8 byte-order mark, or the encoding a coding cookie declares; lines ending in a
lone ``\\r`` are read as lines.
"""

from __future__ import annotations

import codecs
import io
import tokenize

from hookscope.lint.engine.source import Source


def decode_python(data: bytes) -> Source:
    """Decode Python source bytes as the interpreter does.

    Raises:
        UnicodeDecodeError: the bytes are not valid in the declared encoding.
        SyntaxError: a byte-order mark contradicts the coding cookie.
        LookupError: the cookie names an unknown encoding.
    """
    bom = data.startswith(codecs.BOM_UTF8)
    if bom:
        data = data[len(codecs.BOM_UTF8) :]
    try:
        encoding, text = "utf-8", data.decode("utf-8")
    except UnicodeDecodeError:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        if bom and encoding != "utf-8":
            raise SyntaxError(f"a UTF-8 byte-order mark with a {encoding!r} cookie") from None
        text = data.decode(encoding)
    cr_only = "\r" in text and "\n" not in text
    if cr_only:
        text = text.replace("\r", "\n")
    return Source(text, encoding, bom, cr_only)
