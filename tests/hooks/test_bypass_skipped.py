"""The doctor's "hooks skipped" names the user's hooks, never hookscope's own."""

from __future__ import annotations

from torch import nn

import hookscope
from hookscope.hooks.bypass import skipped_hooks


def _mine(module: nn.Module, args: tuple[object, ...], output: object) -> None:
    return None


def test_hooks_skipped_leaves_out_hookscopes_own_hooks() -> None:
    model = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    handle = model[0].register_forward_hook(_mine)
    try:
        with hookscope.Monitor(model):
            assert model[0]._forward_hooks and len(model[0]._forward_hooks) > 1  # the Monitor's too
            names = skipped_hooks(model[0])
    finally:
        handle.remove()
    assert names == (f"forward:{__name__}._mine",)
