"""The ``from ... import`` lists of a file, read from its bytes in the first pass.

`callers` asks which project files import a name or a module; the class index carries
every file's lists (`index.ClassIndex.import_lists`). An index built without them (one
file's, the flake8 plugin's) leaves `callers` to read the files again, once.
"""

from __future__ import annotations

import re

from hookscope.lint.engine.index import ImportLists
from hookscope.lint.engine.source import DEFAULT_MAX_FILE_SIZE

# ``from pkg.mod import a, b as c`` or ``from .mod import (\n a,\n b,\n)``.
# (A literal start lets the regex engine skip to each "from"; one in a string or comment
# only adds a file to look at.)
_FROM_IMPORT = re.compile(rb"from[ \t]+([\w.]+)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)")
_COMMENT = re.compile(rb"#[^\n]*")


def import_lists(data: bytes, where: str) -> ImportLists | None:
    """The from-import lists of the file ``where``, whose bytes are ``data``; ``None`` without
    the word ``import`` or above the default size limit (which `callers` would not read)."""
    if len(data) > DEFAULT_MAX_FILE_SIZE or b"import" not in data:
        return None
    found = list(_FROM_IMPORT.finditer(data))
    # (one list a line: a comment ends at its line's end, not at the last list's)
    listed = b"\n".join(m.group(2) for m in found)
    modules = b"\n".join(m.group(1) for m in found)
    return where, _COMMENT.sub(b"", listed), modules
