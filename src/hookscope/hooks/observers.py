"""Observers of module calls, run by the bypass probe instead of global hooks.

Any global forward hook sends every module call in the process through
PyTorch's slow call path (about 1.7 µs a call on top of the hook itself).
While a `hookscope.hooks.probe` sits on a module's class anyway, the probe
sees each call of that module through ``__call__`` and can run the
observers itself: the call keeps the fast path. `observe_pre` and
`observe_post` register them; the probe calls ``pre(module, args)`` right
before the original ``forward`` and ``post(module, args, kwargs, output)``
right after it, or ``post(module, args, None)`` inside the ``except`` when
the forward (or a ``pre``) raised — the argument shapes of PyTorch's global
hooks with ``with_kwargs=True, always_call=True``.

Only modules whose class carries a probe are seen: a caller uses this only
when a bypass detector watches every module it cares about.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from torch.utils.hooks import RemovableHandle

#: ``pre(module, args) -> None``
Pre = Callable[[Any, tuple[Any, ...]], None]
#: ``post(module, args, kwargs, output) -> None``; ``post(module, args, None)`` on an error
Post = Callable[..., None]

#: handle id -> hook; read by every probe on every call while either is non-empty
#: (OrderedDicts, as PyTorch's own hook dicts: a `RemovableHandle` holds a weak reference)
PRE: OrderedDict[int, Pre] = OrderedDict()
POST: OrderedDict[int, Post] = OrderedDict()


def observe_pre(pre: Pre) -> RemovableHandle:
    """Run ``pre`` before every probed module call; ``handle.remove()`` stops it."""
    handle = RemovableHandle(PRE)
    PRE[handle.id] = pre
    return handle


def observe_post(post: Post) -> RemovableHandle:
    """Run ``post`` after every probed module call, also when it raised."""
    handle = RemovableHandle(POST)
    POST[handle.id] = post
    return handle


def observed_call(orig: Callable[..., Any], module: Any, args: Any, kwargs: Any) -> Any:
    """``orig(module, *args, **kwargs)`` with every observer around it."""
    posts = tuple(POST.values())  # a hook may remove observers while we run
    try:
        for pre in tuple(PRE.values()):
            pre(module, args)
        output = orig(module, *args, **kwargs)
    except BaseException:
        for post in posts:
            post(module, args, None)
        raise
    for post in posts:
        post(module, args, kwargs, output)
    return output
