"""Wrapper prefixes are stripped from names, on real wrapped models."""

from __future__ import annotations

import torch
from torch import nn

from hookscope.names import clean_names, clean_param_name, is_wrapper, strip_wrappers


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.module = nn.Linear(4, 4)  # a user's own child called "module" keeps its name
        self.fc = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.module(x))


def test_strip_wrappers_on_strings() -> None:
    assert strip_wrappers("_orig_mod.layer.0._fsdp_wrapped_module.fc") == "layer.0.fc"
    assert strip_wrappers("module.fc") == "fc"
    assert strip_wrappers("module.fc", leading_module=False) == "module.fc"
    assert strip_wrappers("") == ""


def test_clean_names_of_compiled_and_data_parallel() -> None:
    net = Net()
    compiled = torch.compile(net)
    names = clean_names(compiled)
    assert names["_orig_mod.module"] == "module"
    assert names["_orig_mod.fc"] == "fc"
    assert names[""] == names["_orig_mod"] == ""
    assert is_wrapper(compiled)
    assert not is_wrapper(net)

    wrapped = nn.DataParallel(net)
    names = clean_names(wrapped)
    assert names["module.module"] == "module"
    assert names["module.fc"] == "fc"
    assert clean_param_name("module.fc.weight", names) == "fc.weight"
    assert clean_names(wrapped, keep_wrappers=True)["module.fc"] == "module.fc"
    # no wrapper: a child called "module" is the user's own
    assert clean_names(net)["module"] == "module"
