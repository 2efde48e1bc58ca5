"""An own ``__call__`` that runs ``super().__call__`` on one path and ``self.forward`` on
another (#15): the ``self.forward`` path skips ``Module.__call__`` and its hooks (HS102,
never fixed: ``self(...)`` there would recurse); the same ``__call__`` in a plain class
has no hooks to skip."""

from __future__ import annotations

from pathlib import Path

import torch

from tests.lint.conftest import expected_codes, findings_of, found, write_source

_INFER = """\
    import torch
    from torch import nn


    class Infer({base}):
        def forward(self, x, onyx=False):
            return x

        def __call__(self, *args, onyx=False, **kwargs):
            if onyx:
                return self.forward(*args, onyx=onyx, **kwargs){mark}
            return super().__call__(*args, **kwargs)
    """


def test_a_call_path_without_super_call(tmp_path: Path) -> None:
    path = write_source(tmp_path, "infer.py", _INFER.format(base="nn.Module", mark="  # HS102"))
    assert found(tmp_path, path) == expected_codes(path) == {(11, "HS102")}
    finding = findings_of(tmp_path, path)[0]
    assert not finding.fixable
    assert "does not run `super().__call__`" in finding.message


def test_the_same_call_in_a_plain_class(tmp_path: Path) -> None:
    path = write_source(tmp_path, "plain_infer.py", _INFER.format(base="object", mark=""))
    assert found(tmp_path, path) == set()


def test_that_path_really_skips_hooks() -> None:
    class Infer(torch.nn.Module):
        def forward(self, x: torch.Tensor, onyx: bool = False) -> torch.Tensor:
            return x + 1

        def __call__(self, *args: torch.Tensor, onyx: bool = False) -> torch.Tensor:
            if onyx:
                return self.forward(*args, onyx=onyx)
            return super().__call__(*args)

    seen: list[int] = []
    module = Infer()
    module.register_forward_hook(lambda m, i, o: seen.append(1))
    module(torch.zeros(1))
    module(torch.zeros(1), onyx=True)
    assert seen == [1]
