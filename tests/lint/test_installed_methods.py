"""Functions installed as a class's method (#15): ``super(Conv, self).forward(x)`` in a
module-level ``def new_forward(self, x)`` that the file assigns as ``Conv.forward`` runs
the base ``forward`` on the module itself (no HS103); the same call in a function installed
on another class, or installed nowhere, still runs a parent ``forward`` on some other
object."""

from __future__ import annotations

from pathlib import Path

from tests.lint.conftest import expected_codes, found, write_source

_PATCHED = """\
    import torch
    from diffusers.models.lora import LoRACompatibleConv


    class Patched(torch.nn.Conv2d):
        pass


    def new_forward(self, hidden_states, scale=1.0):
        if self.lora_layer is None:
            return super(LoRACompatibleConv, self).forward(hidden_states)
        return super(LoRACompatibleConv, self).forward(hidden_states) + self.lora_layer(hidden_states)


    def elsewhere(self, hidden_states):
        return super(LoRACompatibleConv, self).forward(hidden_states)  # HS103


    def stray(layer, hidden_states):
        return super(Patched, layer).forward(hidden_states)  # HS103


    LoRACompatibleConv.forward = new_forward
    Patched.forward = elsewhere
    """


def test_functions_installed_as_a_method_of_the_super_class(tmp_path: Path) -> None:
    path = write_source(tmp_path, "hotfixes.py", _PATCHED)
    assert found(tmp_path, path, ("HS103",)) == expected_codes(path)
    assert len(expected_codes(path)) == 2
