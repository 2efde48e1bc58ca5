"""Device-typed context managers that would stop a meta-device run for nothing.

Model code often writes ``torch.autocast(device_type=x.device.type,
enabled=False)`` to keep a block in full precision (timm's EfficientViT
does). On the meta device that raises ("unsupported scalarType") before the
block runs, and the summary would fall back to a real forward. While the
summary's meta forward runs, `meta_autocast` makes ``autocast`` with
``device_type="meta"`` a no-op: there is no arithmetic to cast on meta, and
shapes do not depend on it. Autocast for other device types is untouched.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
from torch.amp import autocast_mode

from hookscope._interrupts import critical_contextmanager

_autocast = autocast_mode.autocast


@critical_contextmanager
def meta_autocast() -> Iterator[None]:
    """Within the block, ``torch.autocast("meta", ...)`` enters and exits as a no-op.

    The patch is process-wide for the block's duration (a summary's forward)
    and is undone on exit, also when the forward raises.
    """
    init, enter, leave = _autocast.__init__, _autocast.__enter__, _autocast.__exit__

    def __init__(self: Any, device_type: str, *args: Any, **kwargs: Any) -> None:
        self._hookscope_meta = device_type == "meta"
        if self._hookscope_meta:
            self.device, self.fast_dtype, self._enabled = "meta", torch.float32, False
            return
        init(self, device_type, *args, **kwargs)

    def __enter__(self: Any) -> Any:
        return self if getattr(self, "_hookscope_meta", False) else enter(self)

    def __exit__(self: Any, *exc: Any) -> Any:
        return None if getattr(self, "_hookscope_meta", False) else leave(self, *exc)

    _autocast.__init__ = __init__  # type: ignore[method-assign]
    _autocast.__enter__ = __enter__  # type: ignore[method-assign]
    _autocast.__exit__ = __exit__  # type: ignore[method-assign]
    try:
        yield
    finally:
        _autocast.__init__ = init  # type: ignore[method-assign]
        _autocast.__enter__ = enter  # type: ignore[method-assign]
        _autocast.__exit__ = leave  # type: ignore[method-assign]
