"""Running a script file as ``__main__`` the way ``python script.py`` does.

``runpy.run_path`` sets ``sys.argv[0]`` to the path it is given while the
script runs, so a script run from an absolute path (for an absolute
``__file__``, as Python 3.9+ gives) would see an absolute ``sys.argv[0]``
where plain python keeps the path as typed. `run_path` here leaves
``sys.argv`` to the caller; zip files and folders go to ``runpy``.
"""

from __future__ import annotations

import builtins
import io
import runpy
import sys
import types
import zipfile
from pathlib import Path


def run_path(script: str) -> None:
    """Execute the file ``script`` (an absolute path) as ``__main__``; ``sys.argv`` is left as is."""
    if Path(script).is_dir() or zipfile.is_zipfile(script):
        argv0 = sys.argv[0]
        try:
            runpy.run_path(script, run_name="__main__")
        finally:
            sys.argv[0] = argv0
        return
    with io.open_code(script) as handle:
        code = compile(handle.read(), script, "exec", dont_inherit=True)
    main = types.ModuleType("__main__")
    main.__dict__.update(
        __file__=script, __builtins__=builtins, __loader__=None, __spec__=None, __cached__=None
    )
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = main
    try:
        exec(code, main.__dict__)
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved
