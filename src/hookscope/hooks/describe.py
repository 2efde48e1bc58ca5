"""Naming hook callables: qualified name and source ``file:line``."""

from __future__ import annotations

import functools
import inspect
from typing import Any

#: Attribute hookscope sets on every wrapper it registers; holds the user's callable.
WRAPPED_ATTR = "__hookscope_hook__"
#: On a hook that FSDP1 runs on a flat parameter for one original parameter: its names.
SLOT_ATTR = "__hookscope_slot_names__"


def unwrap(fn: Any) -> Any:
    """The user's callable behind a hookscope wrapper (or ``fn`` itself)."""
    return getattr(fn, WRAPPED_ATTR, fn)


def is_hookscope_hook(fn: Any) -> bool:
    """True when ``fn`` is a wrapper that a hookscope session registered."""
    return hasattr(fn, WRAPPED_ATTR)


def callable_name(fn: Any) -> str:
    """A readable qualified name: ``module.Class.method``, ``partial(f)``, ``Obj.__call__``."""
    fn = unwrap(fn)
    if isinstance(fn, functools.partial):
        return f"partial({callable_name(fn.func)})"
    qualname = getattr(fn, "__qualname__", None)
    if qualname is None:
        qualname = f"{type(fn).__qualname__}.__call__"
    module = getattr(fn, "__module__", None) or type(fn).__module__
    return f"{module}.{qualname}" if module and module != "builtins" else str(qualname)


def callable_source(fn: Any) -> str | None:
    """``file:line`` where the callable is defined, or None when Python cannot tell."""
    fn = unwrap(fn)
    while isinstance(fn, functools.partial):
        fn = fn.func
    target = inspect.unwrap(getattr(fn, "__func__", fn))
    if not (inspect.isfunction(target) or inspect.ismethod(target)):
        call = type(target).__call__ if callable(target) else None
        if not inspect.isfunction(call):
            return None
        target = call
    code = getattr(target, "__code__", None)
    if code is None:
        return None
    return f"{code.co_filename}:{code.co_firstlineno}"
